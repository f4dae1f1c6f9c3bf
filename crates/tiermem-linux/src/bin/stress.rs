//! tiermem-stress: threads + fork + mremap + madvise + random reads/writes with checksums.
//!
//! Run it under `tiermem run --dram-budget 10% -- tiermem-stress ...`. Every 4 KiB page of
//! every region carries (tag, version) and a body derived from both; a reader checks all
//! 512 words. Pages are owned by one thread each (page % threads), so expected versions are
//! exact; the expected-version table is itself in managed memory. Periodically the main
//! thread stops the world and:
//!   fork   : the child checks every page, writes its own versions (copy-on-write: the
//!            parent must not see them), re-checks, exits with the number of mismatches;
//!            it also writes every page of a MAP_SHARED region, and the parent must see
//!            those writes (shared memory is left alone by tiermem);
//!   mremap : grows a region (maybe moving it), checks the new tail is zero, shrinks back;
//!   madvise: MADV_DONTNEED on a page run, which must then read as zero (version 0);
//!   mlock  : a page run locked for one round must stay in DRAM (mincore) meanwhile.
//! Workers also move pages through a pipe: write(2) from a managed page and read(2) into
//! one, so the kernel itself faults on evicted pages (copy_from_user / copy_to_user).
//! Exit status 0 only with zero mismatches; prints a summary line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

const PAGE: usize = 4096;
const WORDS: usize = PAGE / 8;
const CONST_TAG: u64 = 0xC0 << 56;
const SHARED_TAG: u64 = 0x5A << 56;
const SHARED_PAGES: usize = 512;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// Expected word `i` of a page with `tag` at `version` (version 0 = never written = zeros).
#[inline]
fn word(tag: u64, version: u64, i: usize) -> u64 {
    if version == 0 {
        return 0;
    }
    match i {
        0 => tag,
        1 => version,
        // A 16-word repeating body: compressible (so the page really goes to a compressed
        // tier), yet every word depends on (tag, version).
        _ => mix(tag ^ (version << 20)) ^ (i % 16) as u64,
    }
}

struct Region {
    ptr: usize,
    pages: usize,
}

struct Shared {
    regions: Vec<RwLock<Region>>,
    /// Pages written once (version 1) and then only read, by every thread: under a tiny
    /// budget several threads fault on the same evicted page at once.
    constant: usize,
    /// A MAP_SHARED anonymous region (large enough to be managed if it were private).
    shared: usize,
    constant_pages: usize,
    /// Expected versions, one per page of all regions (in managed memory: a Vec of u64).
    expect: Vec<AtomicU64>,
    base: Vec<usize>,
    threads: usize,
    world: RwLock<()>,
    stop: AtomicBool,
    mismatches: AtomicU64,
    ops: AtomicU64,
    syscall_copies: AtomicU64,
}

fn check_page(p: *const u64, tag: u64, v: u64) -> bool {
    for i in 0..WORDS {
        // SAFETY: every caller passes the start of a live, mapped page of this program's regions
        // (WORDS words).
        let w = unsafe { p.add(i).read_volatile() };
        if w != word(tag, v, i) {
            eprintln!(
                "MISMATCH tag={tag:#x} version={v} word {i}: got {w:#x} want {:#x}",
                word(tag, v, i)
            );
            return false;
        }
    }
    true
}

fn write_page(p: *mut u64, tag: u64, v: u64) {
    for i in 0..WORDS {
        // SAFETY: every caller passes the start of a live, writable page of this program's regions
        // (WORDS words).
        unsafe { p.add(i).write_volatile(word(tag, v, i)) };
    }
}

// Signals during faults: a 2 kHz SIGALRM whose handler reads a constant page (which may be
// evicted: the handler itself faults, possibly while the interrupted thread was faulting).
static SIG_BASE: AtomicU64 = AtomicU64::new(0);
static SIG_PAGES: AtomicU64 = AtomicU64::new(0);
static SIG_COUNT: AtomicU64 = AtomicU64::new(0);
static SIG_BAD: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_alarm(_sig: libc::c_int) {
    let n = SIG_COUNT.fetch_add(1, Ordering::Relaxed);
    let pages = SIG_PAGES.load(Ordering::Relaxed);
    if pages == 0 {
        return;
    }
    let k = mix(n) % pages;
    let p = (SIG_BASE.load(Ordering::Relaxed) + k * PAGE as u64) as *const u64;
    // SAFETY: `p` is page `k < SIG_PAGES` of the constant mapping, which stays mapped (read-only
    // use) until exit.
    let w = unsafe { p.add(7).read_volatile() };
    if w != word(CONST_TAG | k, 1, 7) {
        SIG_BAD.fetch_add(1, Ordering::Relaxed);
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        mix(self.0)
    }
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb = arg(&args, "--mb", 64) as usize;
    let threads = arg(&args, "--threads", 4) as usize;
    let seconds = arg(&args, "--seconds", 10);
    let nregions = arg(&args, "--regions", 4) as usize;
    let forks = arg(&args, "--forks", 3);
    let target_faults = arg(&args, "--target-faults", 0);
    let write_pct = arg(&args, "--write-pct", 30);
    let seed = arg(&args, "--seed", 1);

    let total_pages = mb * 256;
    let per = (total_pages / nregions).max(1);
    let mut regions = Vec::new();
    let mut base = Vec::new();
    for r in 0..nregions {
        let len = per * PAGE;
        let ptr = if r % 2 == 0 {
            // mmap'd region
            // SAFETY: a fresh anonymous mapping; no existing memory is touched.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED, "mmap failed");
            p as usize
        } else {
            // malloc'd region (page aligned for the page model)
            // SAFETY: a plain allocation; checked for null below.
            let p = unsafe { libc::aligned_alloc(PAGE, len) };
            assert!(!p.is_null());
            // SAFETY: `p` is a live block of `len` bytes (aligned_alloc above, not null).
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, len) };
            p as usize
        };
        base.push(r * per);
        regions.push(RwLock::new(Region { ptr, pages: per }));
    }
    let constant_pages = (total_pages / 8).max(16);
    // SAFETY: a fresh anonymous mapping; no existing memory is touched.
    let constant = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            constant_pages * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(constant, libc::MAP_FAILED);
    for k in 0..constant_pages {
        write_page(
            (constant as usize + k * PAGE) as *mut u64,
            CONST_TAG | k as u64,
            1,
        );
    }
    SIG_BASE.store(constant as u64, Ordering::SeqCst);
    SIG_PAGES.store(constant_pages as u64, Ordering::SeqCst);
    // SAFETY: zeroed sigaction/itimerval are valid; the handler only reads the constant mapping and
    // bumps atomics (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        let it = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 500,
            },
            it_value: libc::timeval {
                tv_sec: 0,
                tv_usec: 500,
            },
        };
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
    let expect: Vec<AtomicU64> = (0..nregions * per).map(|_| AtomicU64::new(0)).collect();
    let sh = Arc::new(Shared {
        regions,
        constant: constant as usize,
        // SAFETY: a fresh shared anonymous mapping, checked below; it lives until exit.
        shared: unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                SHARED_PAGES * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED, "mmap shared failed");
            p as usize
        },
        constant_pages,
        expect,
        base,
        threads,
        world: RwLock::new(()),
        stop: AtomicBool::new(false),
        mismatches: AtomicU64::new(0),
        ops: AtomicU64::new(0),
        syscall_copies: AtomicU64::new(0),
    });

    let mut hs = Vec::new();
    for t in 0..threads {
        let sh = sh.clone();
        hs.push(std::thread::spawn(move || {
            worker(sh, t, seed, write_pct, per)
        }));
    }
    let start = Instant::now();
    let deadline = Duration::from_secs(seconds);
    let fork_every = if forks > 0 {
        deadline / (forks as u32 + 1)
    } else {
        Duration::MAX
    };
    let mut next_fork = fork_every;
    let mut forks_done = 0;
    let mut remaps = 0;
    let mut dontneeds = 0;
    let mut mprotects = 0;
    let mut mlocks = 0;
    let mut locked: Option<(usize, usize)> = None;
    let mut rng = Rng(seed ^ 0xabcdef);
    let mut last_faults = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        // The run locked at the end of the last round stayed in DRAM through the workers'
        // accesses and the budget's evictions; unlock it.
        if let Some((a, n)) = locked.take() {
            let _w = sh.world.write().unwrap();
            let mut vec = vec![0u8; n];
            assert_eq!(
                // SAFETY: [a, a + n pages) lies in a live region (held under its lock) and `vec`
                // has one byte per page.
                unsafe { libc::mincore(a as *mut _, n * PAGE, vec.as_mut_ptr()) },
                0
            );
            let out = vec.iter().filter(|&&b| b & 1 == 0).count();
            if out > 0 {
                eprintln!("MISMATCH: {out} of {n} mlocked pages left DRAM");
                sh.mismatches.fetch_add(1, Ordering::Relaxed);
            }
            // SAFETY: unlocks the range this thread locked above; no memory changes.
            assert_eq!(unsafe { libc::munlock(a as *const _, n * PAGE) }, 0);
        }
        let el = start.elapsed();
        if target_faults > 0 {
            last_faults = tier_faults().unwrap_or(last_faults);
            if last_faults >= target_faults || el > deadline * 4 {
                break;
            }
        } else if el > deadline {
            break;
        }
        if forks_done < forks && el >= next_fork {
            next_fork += fork_every;
            forks_done += 1;
            let _w = sh.world.write().unwrap();
            fork_check(&sh, forks_done);
        }
        // mremap: grow (possibly moving) then shrink back.
        {
            let r = (rng.next() as usize) % nregions;
            if r.is_multiple_of(2) {
                let _w = sh.world.write().unwrap();
                let mut g = sh.regions[r].write().unwrap();
                let old = g.ptr;
                let extra = 1 + (rng.next() as usize % 64);
                let len = g.pages * PAGE;
                // SAFETY: the region's own mapping, held exclusively (write lock); MAYMOVE lets the
                // kernel place it.
                let np = unsafe {
                    libc::mremap(old as *mut _, len, len + extra * PAGE, libc::MREMAP_MAYMOVE)
                };
                assert_ne!(
                    np,
                    libc::MAP_FAILED,
                    "mremap grow failed: {}",
                    std::io::Error::last_os_error()
                );
                for k in 0..extra {
                    if !check_page((np as usize + len + k * PAGE) as *const u64, 0, 0) {
                        sh.mismatches.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Dirty the tail, then shrink it away.
                // SAFETY: [np + len, + extra pages) is the tail the mremap above just added to this
                // region.
                unsafe {
                    std::ptr::write_bytes((np as usize + len) as *mut u8, 0xAB, extra * PAGE)
                };
                // SAFETY: shrinks the region back to `len` bytes; it stays held exclusively.
                let np2 = unsafe { libc::mremap(np, len + extra * PAGE, len, 0) };
                assert_eq!(np2, np, "mremap shrink moved");
                g.ptr = np as usize;
                remaps += 1;
            }
        }
        // mprotect read-only (tiermem brings the range home and pins it), check, back to RW.
        {
            let _w = sh.world.write().unwrap();
            let r = (rng.next() as usize) % nregions;
            let g = sh.regions[r].read().unwrap();
            let first = rng.next() as usize % g.pages;
            let n = (1 + rng.next() as usize % 32).min(g.pages - first);
            let a = (g.ptr + first * PAGE) as *mut libc::c_void;
            // SAFETY: a protection change of pages inside a live region held under its lock;
            // restored below.
            assert_eq!(unsafe { libc::mprotect(a, n * PAGE, libc::PROT_READ) }, 0);
            for k in first..first + n {
                let tag = ((r as u64) << 32) | k as u64;
                if !check_page(
                    (g.ptr + k * PAGE) as *const u64,
                    tag,
                    sh.expect[sh.base[r] + k].load(Ordering::Relaxed),
                ) {
                    sh.mismatches.fetch_add(1, Ordering::Relaxed);
                }
            }
            assert_eq!(
                // SAFETY: restores read-write on the range made read-only above.
                unsafe { libc::mprotect(a, n * PAGE, libc::PROT_READ | libc::PROT_WRITE) },
                0
            );
            mprotects += 1;
        }
        // MADV_DONTNEED on a run of pages: they read as zeros (version 0) afterwards.
        {
            let _w = sh.world.write().unwrap();
            let r = (rng.next() as usize) % nregions;
            let g = sh.regions[r].read().unwrap();
            let first = rng.next() as usize % g.pages;
            let n = (1 + rng.next() as usize % 8).min(g.pages - first);
            // SAFETY: an advice on pages inside a live region held exclusively; the expected
            // contents are reset to zero with it.
            let rc = unsafe {
                libc::madvise(
                    (g.ptr + first * PAGE) as *mut _,
                    n * PAGE,
                    libc::MADV_DONTNEED,
                )
            };
            assert_eq!(rc, 0);
            for k in first..first + n {
                sh.expect[sh.base[r] + k].store(0, Ordering::Relaxed);
            }
            dontneeds += 1;
        }
        {
            let _w = sh.world.write().unwrap();
            let r = (rng.next() as usize) % nregions;
            let g = sh.regions[r].read().unwrap();
            let first = rng.next() as usize % g.pages;
            let n = (1 + rng.next() as usize % 16).min(g.pages - first);
            let a = g.ptr + first * PAGE;
            // SAFETY: locks pages inside a live region; no memory changes.
            let rc = unsafe { libc::mlock(a as *const _, n * PAGE) };
            assert_eq!(rc, 0, "mlock failed: {}", std::io::Error::last_os_error());
            locked = Some((a, n));
            mlocks += 1;
        }
    }
    sh.stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    // Final full check.
    for (r, reg) in sh.regions.iter().enumerate() {
        let g = reg.read().unwrap();
        for k in 0..g.pages {
            let tag = ((r as u64) << 32) | k as u64;
            let v = sh.expect[sh.base[r] + k].load(Ordering::Relaxed);
            if !check_page((g.ptr + k * PAGE) as *const u64, tag, v) {
                sh.mismatches.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    for k in 0..sh.constant_pages {
        if !check_page(
            (sh.constant + k * PAGE) as *const u64,
            CONST_TAG | k as u64,
            1,
        ) {
            sh.mismatches.fetch_add(1, Ordering::Relaxed);
        }
    }
    // SAFETY: a zeroed itimerval disarms the timer.
    unsafe {
        let off: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_REAL, &off, std::ptr::null_mut());
    }
    sh.mismatches
        .fetch_add(SIG_BAD.load(Ordering::Relaxed), Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(300));
    let faults = tier_faults().unwrap_or(0);
    let mm = sh.mismatches.load(Ordering::Relaxed);
    println!(
        "stress: {} MiB, {threads} threads, {} ops, {forks_done} forks, {remaps} remaps, {dontneeds} dontneeds, {mprotects} mprotects, {mlocks} mlocks, {} signals, {} pipe copies, tier_faults={faults}, mismatches={mm}, {:.1}s",
        mb,
        sh.ops.load(Ordering::Relaxed),
        SIG_COUNT.load(Ordering::Relaxed),
        sh.syscall_copies.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    std::process::exit(if mm == 0 { 0 } else { 1 });
}

/// Faults served from compressed tiers so far, from our own stats file (if tiered).
fn tier_faults() -> Option<u64> {
    let dir = tiermem_linux::config::default_run_dir();
    let text = std::fs::read_to_string(format!("{dir}/{}/stats.json", std::process::id())).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(
        v["tiers"]
            .as_array()?
            .iter()
            .filter_map(|t| t["faults"].as_u64())
            .sum(),
    )
}

/// The kernel reads page `p` (write(2) into a pipe; it faults if `p` is evicted); the
/// copy must hold version `v`.
fn pipe_out(fds: [i32; 2], p: *const u64, buf: &mut [u64; WORDS], tag: u64, v: u64) -> bool {
    // SAFETY: `p` is a live page of PAGE bytes (caller's contract) written into our own pipe.
    let ok = unsafe { libc::write(fds[1], p as *const _, PAGE) } == PAGE as isize
        // SAFETY: `buf` is PAGE bytes (WORDS u64s) owned by this thread.
        && unsafe { libc::read(fds[0], buf.as_mut_ptr() as *mut _, PAGE) } == PAGE as isize;
    if !ok {
        eprintln!(
            "MISMATCH: pipe copy out of tag={tag:#x}: {}",
            std::io::Error::last_os_error()
        );
    }
    ok && check_page(buf.as_ptr(), tag, v)
}

/// The kernel writes version `v` into page `p` (read(2) from a pipe; it faults if `p` is
/// evicted).
fn pipe_in(fds: [i32; 2], p: *mut u64, buf: &mut [u64; WORDS], tag: u64, v: u64) -> bool {
    for (i, w) in buf.iter_mut().enumerate() {
        *w = word(tag, v, i);
    }
    // SAFETY: `buf` is PAGE bytes owned by this thread, written into our own pipe.
    let ok = unsafe { libc::write(fds[1], buf.as_ptr() as *const _, PAGE) } == PAGE as isize
        // SAFETY: `p` is a live writable page of PAGE bytes, held under its region's write lock by
        // the caller.
        && unsafe { libc::read(fds[0], p as *mut _, PAGE) } == PAGE as isize;
    if !ok {
        eprintln!(
            "MISMATCH: pipe copy into tag={tag:#x}: {}",
            std::io::Error::last_os_error()
        );
    }
    ok
}

fn worker(sh: Arc<Shared>, t: usize, seed: u64, write_pct: u64, per: usize) {
    let mut rng = Rng(seed.wrapping_mul(1000 + t as u64));
    let nreg = sh.regions.len();
    let mine = per / sh.threads;
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
    let mut buf = Box::new([0u64; WORDS]);
    while !sh.stop.load(Ordering::Relaxed) {
        let _w = sh.world.read().unwrap();
        for _ in 0..8 {
            // Everyone reads the same few constant pages: concurrent faults on one page.
            let k = rng.next() as usize % (sh.constant_pages / 8).max(1);
            if !check_page(
                (sh.constant + k * PAGE) as *const u64,
                CONST_TAG | k as u64,
                1,
            ) {
                sh.mismatches.fetch_add(1, Ordering::Relaxed);
            }
        }
        for _ in 0..64 {
            let r = rng.next() as usize % nreg;
            let g = sh.regions[r].read().unwrap();
            // 70 % of accesses to a hot 10 % of my pages, the rest uniform.
            let j = if rng.next() % 100 < 70 {
                rng.next() as usize % (mine / 10).max(1)
            } else {
                rng.next() as usize % mine.max(1)
            };
            let k = j * sh.threads + t;
            if k >= g.pages {
                continue;
            }
            let tag = ((r as u64) << 32) | k as u64;
            let e = &sh.expect[sh.base[r] + k];
            let v = e.load(Ordering::Relaxed);
            let p = (g.ptr + k * PAGE) as *mut u64;
            // 1 access in 16 goes through the kernel instead of a load/store, so the
            // first touch of an evicted page happens inside a system call.
            let via = rng.next() % 32;
            let (ok, next) = match via {
                0 => (pipe_out(fds, p, &mut buf, tag, v), v),
                1 => (
                    pipe_in(fds, p, &mut buf, tag, v + 1) && check_page(p, tag, v + 1),
                    v + 1,
                ),
                _ => (check_page(p, tag, v), v),
            };
            if !ok {
                sh.mismatches.fetch_add(1, Ordering::Relaxed);
            }
            if via < 2 {
                sh.syscall_copies.fetch_add(1, Ordering::Relaxed);
            }
            if next != v {
                e.store(next, Ordering::Relaxed);
            } else if rng.next() % 100 < write_pct {
                write_page(p, tag, v + 1);
                e.store(v + 1, Ordering::Relaxed);
            }
            sh.ops.fetch_add(1, Ordering::Relaxed);
        }
    }
    // SAFETY: closes the two descriptors this thread opened above.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

fn fork_check(sh: &Shared, round: u64) {
    // SAFETY: the child only reads memory and exits with _exit (no locks are taken in it).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // Child: everything must be there, and our writes must stay ours.
        let mut bad = 0u64;
        for (r, reg) in sh.regions.iter().enumerate() {
            let g = reg.read().unwrap();
            for k in 0..g.pages {
                let tag = ((r as u64) << 32) | k as u64;
                let v = sh.expect[sh.base[r] + k].load(Ordering::Relaxed);
                let p = (g.ptr + k * PAGE) as *mut u64;
                if !check_page(p, tag, v) {
                    bad += 1;
                }
                if k % 3 == 0 {
                    write_page(p, tag ^ 0xdead, 1000 + round);
                    if !check_page(p, tag ^ 0xdead, 1000 + round) {
                        bad += 1;
                    }
                }
            }
        }
        for k in 0..sh.constant_pages {
            if !check_page(
                (sh.constant + k * PAGE) as *const u64,
                CONST_TAG | k as u64,
                1,
            ) {
                bad += 1;
            }
        }
        for k in 0..SHARED_PAGES {
            write_page(
                (sh.shared + k * PAGE) as *mut u64,
                SHARED_TAG | k as u64,
                round,
            );
        }
        // SAFETY: ends the forked child without running the parent's atexit handlers.
        unsafe { libc::_exit(if bad == 0 { 0 } else { 1 }) };
    }
    let mut status = 0;
    let t0 = Instant::now();
    loop {
        // SAFETY: waits for our own child; `status` is a local.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            // SAFETY: our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            // SAFETY: reaps our own child; `status` is a local.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            eprintln!("fork child timed out");
            sh.mismatches.fetch_add(1, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        eprintln!("fork child reported mismatches (status {status:#x})");
        sh.mismatches.fetch_add(1, Ordering::Relaxed);
    }
    for k in 0..SHARED_PAGES {
        if !check_page(
            (sh.shared + k * PAGE) as *const u64,
            SHARED_TAG | k as u64,
            round,
        ) {
            eprintln!("MISMATCH: the fork child's write to shared page {k} is not visible");
            sh.mismatches.fetch_add(1, Ordering::Relaxed);
            break;
        }
    }
}
