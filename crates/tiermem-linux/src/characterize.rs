//! `tiermem tiers characterize`: TierScape §4.1 (Figure 3) on this machine. For every
//! candidate compressed tier (codec × pool allocator × backing medium) it measures, on real
//! 4 KiB pages, with the runtime's own codecs and pools:
//!
//! * compression time per page;
//! * the effective compression ratio *including the allocator's packing*: the pages'
//!   bytes over the pool bytes their objects take (a page that does not compress below
//!   `max_compressed` stays uncompressed and counts as a full page, as in the runtime);
//! * fault latency per page: reading the object from the pool on its medium and
//!   decompressing it into a fresh page, including that page's first-touch fault (the
//!   kernel's allocation and zeroing of the destination). The userfaultfd round trip of a
//!   real fault (message, wake-up) is not in it: `tiermem stat`'s fault p50 is the whole
//!   path under a program;
//! * the TCO saving of a page in the tier, `1 − cost / (ratio · DRAM's cost)` (Eq. 12 for
//!   one tier).
//!
//! Media costs per GB are configurable; the defaults are DRAM 1 and any other memory node
//! 1/3 (TierScape §7.2: "the per-GB cost of Optane as 1/3 of DRAM").

use crate::codec::Codec;
use crate::pool::{AllocatorKind, Backing, Pool};
use crate::sys;
use serde::Serialize;
use std::time::Instant;

pub const PAGE: usize = 4096;

/// The codecs a characterization tries (the runtime's: `codec::Codec`).
pub const CODECS: &[&str] = &["lz4", "lzo", "zstd:1", "zstd:3", "deflate:1", "deflate:6"];
/// The pool allocators (`pool::AllocatorKind`).
pub const ALLOCATORS: &[&str] = &["zbud", "z3fold", "zsmalloc"];

/// One candidate tier's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct TierRow {
    /// `ALLOC-CODEC-BACKING`, e.g. "zsmalloc-lz4-dram" (TierScape's ZS-L4-DR).
    pub name: String,
    pub codec: String,
    pub allocator: String,
    /// "dram" or "node:N".
    pub backing: String,
    pub cost_per_gb: f64,
    pub pages: usize,
    /// Pages that compressed below `max_compressed` (the others stay in DRAM).
    pub compressible_pages: usize,
    pub compress_ns: f64,
    pub fault_ns: f64,
    /// Pages' bytes over the bytes they take in the tier (pool bytes, plus a whole page for
    /// each page that did not compress).
    pub ratio: f64,
    /// `1 − cost_per_gb / (ratio · dram_cost_per_gb)`.
    pub tco_saving: f64,
}

/// Where a tier's pool can live here: DRAM (this process's memory), and every other memory
/// node (CXL expanders, remote sockets: TierScape's Optane-backed tiers).
pub fn backings() -> Vec<(String, Backing)> {
    let dram = crate::numa::dram_node();
    let mut out = vec![("dram".to_string(), Backing::Memory)];
    for n in crate::numa::memory_nodes() {
        if n != dram {
            out.push((format!("node:{n}"), Backing::Node(n)));
        }
    }
    out
}

/// Measure one candidate on `pages` (each exactly [`PAGE`] bytes). `rounds`: timings are
/// the fastest of that many passes (the machine is shared: other load only adds time).
pub fn measure(
    pages: &[&[u8]],
    codec: &Codec,
    allocator: AllocatorKind,
    backing: Backing,
    max_compressed: usize,
    rounds: usize,
) -> Option<(usize, f64, f64, f64)> {
    let mut pool = Pool::new(allocator, backing);
    let mut out = Vec::with_capacity(2 * PAGE);
    let mut handles = Vec::with_capacity(pages.len());
    let mut compress_ns = f64::MAX;
    // A page's way into the tier: compression and the allocator's store (its packing work
    // is part of the cost). Each round fills an empty pool; the last one is kept.
    for round in 0..rounds.max(1) {
        if round > 0 {
            for &(_, h) in &handles {
                pool.free(h);
            }
            handles.clear();
        }
        let t = Instant::now();
        for p in pages {
            if let Some(n) = codec.compress(p, &mut out, max_compressed) {
                handles.push((*p, pool.store(&out[..n])?));
            }
        }
        compress_ns = compress_ns.min(t.elapsed().as_nanos() as f64 / pages.len().max(1) as f64);
    }
    let stored = handles.len();
    let bytes_in_tier = pool.pool_bytes as f64 + ((pages.len() - stored) * PAGE) as f64;
    let ratio = (pages.len() * PAGE) as f64 / bytes_in_tier.max(1.0);
    // Destination pages: fresh (MADV_DONTNEED before each round), so each decompression
    // takes the first-touch fault a real install takes.
    let len = stored.max(1) * PAGE;
    let dst = sys::map_anon(len).ok()?;
    let mut fault_ns = f64::MAX;
    for _ in 0..rounds.max(1) {
        // Dropping the pages makes the next writes fault in fresh zeroed ones.
        // SAFETY: `dst` is our own anonymous mapping of `len` bytes.
        unsafe { sys::madvise(dst, len, libc::MADV_DONTNEED) };
        let t = Instant::now();
        let mut ok = true;
        for (i, &(_, h)) in handles.iter().enumerate() {
            // SAFETY: page `i` of the mapping above: PAGE bytes, ours, not aliased.
            let page = unsafe { std::slice::from_raw_parts_mut((dst + i * PAGE) as *mut u8, PAGE) };
            ok &= codec.decompress(pool.get(h), page);
        }
        if !ok {
            // SAFETY: unmaps the mapping made above; nothing refers to it any more.
            unsafe { sys::munmap(dst, len) };
            return None;
        }
        fault_ns = fault_ns.min(t.elapsed().as_nanos() as f64 / stored.max(1) as f64);
    }
    // Every page came back intact: the measurement is of correct decompressions.
    let intact = handles.iter().enumerate().all(|(i, &(p, _))| {
        // SAFETY: page `i` of the mapping, written above.
        let got = unsafe { std::slice::from_raw_parts((dst + i * PAGE) as *const u8, PAGE) };
        got == p
    });
    // SAFETY: unmaps the mapping made above; the slices into it are gone.
    unsafe { sys::munmap(dst, len) };
    if !intact {
        return None;
    }
    Some((stored, compress_ns, if stored > 0 { fault_ns } else { 0.0 }, ratio))
}

/// Pages a runtime's start-up characterization of one tier uses ([`tier_fault_ns`]).
const STARTUP_PAGES: usize = 64;

/// A compressed tier's fault latency on this machine, measured as `tiers characterize`
/// measures it (read from the pool, decompress into a fresh page; the fastest of 3
/// passes) on [`STARTUP_PAGES`] pages of the built-in English-like corpus. `None` when no
/// page compresses below `max_compressed`. TierScape knows its
/// tiers' latencies from characterization before it places anything (§4.1, §6.3); the
/// runtime measures its own tiers at start so that its policies see what each codec and
/// allocator costs here, not one default for all.
pub fn tier_fault_ns(
    codec: &Codec,
    allocator: AllocatorKind,
    backing: Backing,
    max_compressed: usize,
) -> Option<f64> {
    let data = corpus(STARTUP_PAGES, 0.0, 1);
    let pages: Vec<&[u8]> = data.chunks(PAGE).collect();
    let (stored, _, fault_ns, _) = measure(&pages, codec, allocator, backing, max_compressed, 3)?;
    (stored > 0).then_some(fault_ns)
}

/// A built-in corpus of `n` pages whose compressibility is controlled by `random_fraction`:
/// each page is words of a small English vocabulary with that fraction of its bytes
/// replaced by random ones (0: text that lz4 halves; 1: incompressible). Deterministic.
pub fn corpus(n: usize, random_fraction: f64, seed: u64) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "memory", "tier", "page", "the", "of", "and", "a", "to", "in", "is", "compressed",
        "latency", "bandwidth", "data", "cold", "hot", "region", "value", "key", "server",
        "request", "cache", "node", "with", "for", "that", "on", "as", "by", "cost",
    ];
    let mut state = seed | 1;
    let mut next = || {
        // xorshift64*: a fixed, dependency-free stream (the corpus must not change).
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut data = Vec::with_capacity(n * PAGE);
    while data.len() < n * PAGE {
        let w = WORDS[(next() % WORDS.len() as u64) as usize];
        data.extend_from_slice(w.as_bytes());
        data.push(if next() % 12 == 0 { b'\n' } else { b' ' });
    }
    data.truncate(n * PAGE);
    let threshold = (random_fraction.clamp(0.0, 1.0) * u32::MAX as f64) as u64;
    for b in data.iter_mut() {
        if (next() >> 32) < threshold {
            *b = next() as u8;
        }
    }
    data
}

/// Up to `max` non-zero pages of `pid`'s private anonymous memory (heap, stack, anonymous
/// mmaps: what `tiermem run` and `attach` tier), read through `/proc/PID/mem`. Zero pages
/// are skipped: the kernel keeps them as the shared zero page, not as data. Reading another
/// user's process needs the ptrace permission; the error says so.
pub fn read_process_pages(pid: i32, max: usize) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::FileExt;
    let maps = crate::attach::read_maps(pid).map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).map_err(|e| match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "process {pid} is not ours: reading its memory (/proc/{pid}/mem) was refused; characterize your own processes, or run as root"
        ),
        _ => format!("/proc/{pid}/mem: {e}"),
    })?;
    let mut out = Vec::new();
    let mut page = vec![0u8; PAGE];
    'maps: for (start, end) in maps {
        let mut a = start;
        while a + PAGE <= end {
            if mem.read_exact_at(&mut page, a as u64).is_ok() && page.iter().any(|&b| b != 0) {
                out.extend_from_slice(&page);
                if out.len() >= max * PAGE {
                    break 'maps;
                }
            }
            a += PAGE;
        }
    }
    Ok(out)
}

/// Every candidate (codec × allocator × backing) on `pages`; `backings` are (name,
/// backing, its medium's cost per GB) and `dram_cost` is DRAM's.
pub fn characterize(
    pages: &[&[u8]],
    backings: &[(String, Backing, f64)],
    dram_cost: f64,
    max_compressed: usize,
    rounds: usize,
) -> Vec<TierRow> {
    let mut rows = Vec::new();
    for (bname, backing, cost) in backings {
        for &a in ALLOCATORS {
            let alloc = AllocatorKind::parse(a).expect("a known allocator");
            for &c in CODECS {
                let Ok(codec) = Codec::parse(c) else { continue };
                if !codec.available() {
                    continue;
                }
                let Some((stored, compress_ns, fault_ns, ratio)) =
                    measure(pages, &codec, alloc, *backing, max_compressed, rounds)
                else {
                    continue;
                };
                rows.push(TierRow {
                    name: format!("{a}-{c}-{bname}"),
                    codec: c.to_string(),
                    allocator: a.to_string(),
                    backing: bname.clone(),
                    cost_per_gb: *cost,
                    pages: pages.len(),
                    compressible_pages: stored,
                    compress_ns,
                    fault_ns,
                    ratio,
                    tco_saving: 1.0 - cost / (ratio * dram_cost),
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(data: &[u8]) -> Vec<&[u8]> {
        data.chunks_exact(PAGE).collect()
    }

    #[test]
    fn the_corpus_is_deterministic_and_its_random_fraction_sets_compressibility() {
        assert_eq!(corpus(4, 0.2, 7), corpus(4, 0.2, 7));
        let lz4 = Codec::parse("lz4").unwrap();
        let mut out = Vec::new();
        let mut size = |f: f64| {
            let d = corpus(64, f, 1);
            pages(&d)
                .iter()
                .map(|p| lz4.compress(p, &mut out, PAGE + 1024).unwrap_or(PAGE))
                .sum::<usize>()
        };
        let (text, some, noise) = (size(0.0), size(0.3), size(1.0));
        assert!(text < some && some < noise, "{text} {some} {noise}");
        assert!(noise >= 64 * PAGE, "random bytes do not compress: {noise}");
    }

    #[test]
    fn zbud_caps_the_ratio_at_two_and_zsmalloc_packs_tighter() {
        let d = corpus(256, 0.0, 3);
        let p = pages(&d);
        // deflate compresses the text to about a third of a page: two fit a zbud page.
        let deflate = Codec::parse("deflate:6").unwrap();
        let zbud = measure(&p, &deflate, AllocatorKind::Zbud, Backing::Memory, 3072, 1).unwrap();
        let zs = measure(&p, &deflate, AllocatorKind::Zsmalloc, Backing::Memory, 3072, 1).unwrap();
        assert_eq!(zbud.0, 256, "text compresses below 3 KiB");
        // zbud: at most 2 objects per 4 KiB; the pool's 16 KiB slabs round up a little.
        assert!(zbud.3 <= 2.0 && zbud.3 > 1.0, "zbud ratio {}", zbud.3);
        assert!(zs.3 > zbud.3, "zsmalloc {} vs zbud {}", zs.3, zbud.3);
        assert!(zbud.2 > 0.0 && zbud.1 > 0.0);
    }

    #[test]
    fn incompressible_pages_stay_whole_and_save_nothing() {
        let d = corpus(32, 1.0, 5);
        let rows = characterize(&pages(&d), &[("dram".into(), Backing::Memory, 1.0)], 1.0, 3072, 1);
        assert!(!rows.is_empty());
        for r in rows {
            assert_eq!(r.compressible_pages, 0, "{}", r.name);
            assert!((r.ratio - 1.0).abs() < 1e-9 && r.tco_saving.abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn a_runtime_tier_is_characterized_at_start_unless_nothing_would_be_stored() {
        for c in CODECS {
            for a in ALLOCATORS {
                let codec = Codec::parse(c).unwrap();
                let allocator = AllocatorKind::parse(a).unwrap();
                let ns = tier_fault_ns(&codec, allocator, Backing::Memory, 3072);
                assert!(ns.is_some_and(|ns| ns > 0.0 && ns.is_finite()), "{c} {a}: {ns:?}");
            }
        }
        // No text page compresses below 64 bytes: nothing is stored, nothing measured.
        assert_eq!(
            tier_fault_ns(&Codec::Lz4, AllocatorKind::Zsmalloc, Backing::Memory, 64),
            None
        );
    }
}
