//! Workloads: what the application cores access.
//!
//! A workload owns a dense page space `0..page_count()` (page size is the machine's).
//! Stationary workloads (GUPS, key-value, random) expose exact per-page access
//! probabilities, which the machine uses for per-tier access mass and which trackers
//! use to draw time-to-fault exactly; ordered streams (traces, streaming) return `None`
//! and are simulated access by access.
//!
//! Kinds (`[workload] kind = ...`, see [`config`] for every field and an example of each):
//! `gups` ([`gups`], Colloid §2.1), `kv` ([`kv`], YCSB A–F with Zipf/Gaussian keys),
//! `stream` ([`stream`]), `random` ([`random`], XSBench-like), `regions` ([`regions`],
//! dense chunks at random places, redrawn and alternating by operation count: ICS'18's
//! graph500, CG, ...), `pagerank` ([`pagerank`], Ligra's PageRank on an rMat graph), `kernels` ([`kernels`], a
//! program's loop nests over its arrays, with per-step allocations: ICS'18's STREAM and
//! LULESH), `trace` ([`trace`], valgrind lackey or tiermem binary traces); any
//! kind takes a `phases` schedule.
//! Built in code only: [`weighted`] (a given distribution over groups of pages; Memstrata's
//! VMs under TPP).

use rand::rngs::SmallRng;
use rand::RngCore;
use tiermem_core::PageIdx;

pub mod config;
pub mod gups;
pub mod kernels;
pub mod kv;
pub mod pagerank;
mod phased;
pub mod random;
pub mod regions;
pub mod stream;
pub mod trace;
pub mod weighted;

pub use config::{build, WorkloadConfig};

/// One operation's memory footprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpShape {
    /// Cache lines read per operation (object size / 64, rounded up).
    pub lines_per_op: u32,
    /// Cache lines written back per operation (0 for read-only).
    pub written_lines_per_op: f64,
}

/// One simulated operation: the page it touches and whether it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub page: PageIdx,
    pub write: bool,
}

/// The program maps or unmaps some of its pages (`malloc`/`free` of an array large enough
/// to be its own mapping): an allocation's pages get frames at first touch, in the
/// fastest tier with room; a release returns their frames (the machine's side:
/// `backend`'s map events). Ranges are in the workload's page space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapEvent {
    Alloc(std::ops::Range<PageIdx>),
    Free(std::ops::Range<PageIdx>),
}

/// Contract: deterministic given the rng; `probabilities()`, when `Some`, sums to 1 and is
/// the distribution `next()` draws from until `advance_to` next returns true.
pub trait Workload: Send {
    /// Human-readable name for reports.
    fn name(&self) -> String;
    fn page_count(&self) -> u32;
    fn op_shape(&self) -> OpShape;
    /// Move the workload's clock to `now_ns` (phase changes, hot-set moves). Returns true if
    /// the access distribution changed (callers then re-read `probabilities` and, for phase
    /// schedules that change the object size, `op_shape`).
    fn advance_to(&mut self, now_ns: u64) -> bool;
    /// Exact per-operation access probability of every page, if stationary.
    fn probabilities(&self) -> Option<&[f64]>;
    /// The next operation.
    fn next(&mut self, rng: &mut SmallRng) -> Access;
    /// The next `n` operations, appended to `out` in order: the same draws as `n` calls of
    /// `next`. The backend's sampled access path takes them a batch at a time (a call per
    /// access through the trait object was a sixth of a MEMTIS run, whose every access is
    /// a PEBS sample); a workload whose `next` is cheap overrides it with a loop the
    /// compiler can inline.
    fn next_batch(&mut self, rng: &mut SmallRng, n: usize, out: &mut Vec<Access>) {
        out.reserve(n);
        for _ in 0..n {
            out.push(self.next(rng));
        }
    }
    /// A finite trace that has been fully replayed (and does not loop).
    /// Share of the time the program issues operations: below 1 it idles between
    /// requests, and its cores issue that share of what they could.
    fn busy_share(&self) -> f64 {
        1.0
    }
    fn finished(&self) -> bool {
        false
    }
    /// Pages of the hot set, if the workload has one (used by the best-case search).
    fn hot_pages(&self) -> Option<Vec<PageIdx>> {
        None
    }
    /// The next time (ns) at which `advance_to` will report a change, if one is scheduled:
    /// lets the caller end an epoch exactly there.
    fn next_change_ns(&self) -> Option<u64> {
        None
    }
    /// Each simulated access stands for `k` real ones (the machine's `accesses_per_sample`).
    /// Only ordered streams care (a sequential stream then advances `k` objects per
    /// `next()`, so a sweep takes the same virtual time as unsampled); stationary and trace
    /// workloads ignore it.
    fn set_accesses_per_sample(&mut self, _k: f64) {}
    /// Whether the workload allocates and frees memory as it runs ([`MapEvent`]s): the
    /// machine then asks for them after every access ([`Workload::take_map_event`]).
    fn maps_memory(&self) -> bool {
        false
    }
    /// The next allocation or release the program has made since the last access (before
    /// the next one), if any.
    fn take_map_event(&mut self) -> Option<MapEvent> {
        None
    }
    /// Pages the last `next()` covered, its own page first and the following ones (wrapping
    /// at the end of the page space): more than 1 when an ordered stream advances past
    /// several pages in one sampled access. Access-bit trackers set every one of them.
    fn span_pages(&self) -> u32 {
        1
    }
    /// Pass `n` operations whose pages nobody reads (the backend skips a stationary
    /// workload's draws between two PEBS samples: with exact probabilities the trackers
    /// need no other). A stationary workload's draws are independent, so passing them is
    /// drawing nothing; one that counts operations (stages, redraws) counts these. The
    /// default draws them, which is right for any workload.
    fn skip(&mut self, n: u64, rng: &mut SmallRng) {
        for _ in 0..n {
            self.next(rng);
        }
    }
    /// Whether `skip` changes nothing (no draw from the generator, no count): then skipping
    /// and drawing need not alternate, and the backend draws an epoch's samples at once.
    fn skip_is_nothing(&self) -> bool {
        false
    }
}

/// `floor(r * n / 2^64)`: a uniform index in `0..n` from one 64-bit draw (Lemire's
/// multiply-shift; bias ≤ n / 2^64, i.e. none at any page count we simulate).
#[inline(always)]
pub(crate) fn index_from(r: u64, n: u32) -> u32 {
    ((r as u128 * n as u128) >> 64) as u32
}

/// The 64-bit threshold `t` with `P(next_u64() < t) = p` (to within 2^-64).
pub(crate) fn threshold(p: f64) -> u64 {
    if p <= 0.0 {
        0
    } else if p >= 1.0 {
        u64::MAX
    } else {
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

/// Whether an operation writes: never, always, or with a probability (one draw).
#[derive(Clone, Copy, Debug)]
pub(crate) enum WriteDraw {
    Never,
    Always,
    Below(u64),
}

impl WriteDraw {
    pub(crate) fn new(write_fraction: f64) -> WriteDraw {
        if write_fraction <= 0.0 {
            WriteDraw::Never
        } else if write_fraction >= 1.0 {
            WriteDraw::Always
        } else {
            WriteDraw::Below(threshold(write_fraction))
        }
    }
    #[inline(always)]
    pub(crate) fn draw(self, rng: &mut SmallRng) -> bool {
        match self {
            WriteDraw::Never => false,
            WriteDraw::Always => true,
            WriteDraw::Below(t) => rng.next_u64() < t,
        }
    }
}

/// Cache lines an object of `bytes` covers: `ceil(bytes / 64)`.
pub(crate) fn lines_for(bytes: u64) -> u32 {
    bytes.div_ceil(tiermem_core::CACHELINE_BYTES).max(1) as u32
}

/// Walker's alias method (Vose's construction, Vose 1991): an exact O(1) sampler of a
/// fixed discrete distribution. One draw picks a column uniformly, a second keeps it or
/// takes its alias. Exact up to the f64 rounding of the probabilities and the 2^-64
/// resolution of the thresholds. Built once per distribution (never per draw).
pub(crate) struct AliasTable {
    cols: Vec<AliasCol>,
}

#[derive(Clone, Copy)]
struct AliasCol {
    keep_below: u64,
    alias: u32,
}

impl AliasTable {
    /// `weights` need not be normalised; all must be finite and ≥ 0 with a positive sum.
    pub(crate) fn new(weights: &[f64]) -> AliasTable {
        let n = weights.len();
        assert!(
            n > 0 && n < u32::MAX as usize,
            "alias table over {n} outcomes"
        );
        let sum: f64 = weights.iter().sum();
        assert!(
            sum > 0.0 && sum.is_finite(),
            "alias table weights sum to {sum}"
        );
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
        let mut cols = vec![
            AliasCol {
                keep_below: u64::MAX,
                alias: 0
            };
            n
        ];
        let (mut small, mut large): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for (i, &s) in scaled.iter().enumerate() {
            cols[i].alias = i as u32;
            if s < 1.0 {
                small.push(i as u32);
            } else {
                large.push(i as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            large.pop();
            cols[s as usize] = AliasCol {
                keep_below: threshold(scaled[s as usize]),
                alias: l,
            };
            scaled[l as usize] = (scaled[l as usize] + scaled[s as usize]) - 1.0;
            if scaled[l as usize] < 1.0 {
                small.push(l);
            } else {
                large.push(l);
            }
        }
        // Leftovers (exactly 1 up to rounding) keep their own column.
        AliasTable { cols }
    }

    #[inline(always)]
    pub(crate) fn sample(&self, rng: &mut SmallRng) -> u32 {
        let i = index_from(rng.next_u64(), self.cols.len() as u32);
        let c = self.cols[i as usize];
        if rng.next_u64() < c.keep_below {
            i
        } else {
            c.alias
        }
    }
}

#[cfg(test)]
mod alias_tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn alias_matches_weights() {
        let w = [0.5, 0.0, 3.0, 1.5, 5.0];
        let t = AliasTable::new(&w);
        let mut rng = SmallRng::seed_from_u64(1);
        let n = 1_000_000;
        let mut c = [0u32; 5];
        for _ in 0..n {
            c[t.sample(&mut rng) as usize] += 1;
        }
        assert_eq!(c[1], 0);
        for i in 0..5 {
            let p = w[i] / 10.0;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (c[i] as f64 / n as f64 - p).abs() <= 5.0 * sd + 1e-12,
                "{i}: {c:?}"
            );
        }
    }
}
