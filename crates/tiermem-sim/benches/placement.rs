//! The simulator's placement state at 1 GiB, 64 GiB and 1 TiB simulated footprints
//! (4 KiB pages: 262 144, 16.8 M and 268 M pages): bytes per page of the placement state
//! and of the whole backend, and the cost of one quantum. `bench/sim/run.sh` (`make
//! bench`) runs it and writes the table to `bench/sim/results.md`.
//!
//! Bytes are real allocations: a counting global allocator records the live heap bytes
//! (`SimBackend::placement_bytes` separates the placement table and counts from the rest:
//! the workload's page probabilities, the tracker).
//!
//! One quantum is `advance` (10 ms of simulated time: the epochs' fixed points and the
//! sampled accesses) and then observe + decide + apply, timed apart. The policy is a
//! minimal sample-driven one defined here (so that what is timed is the simulator, not a
//! policy's own per-page bookkeeping): every PEBS-sampled page in the slow tier is
//! promoted, and as many fast-tier pages as needed to make room are demoted, found by a
//! cursor that walks the placement (amortised O(moves), never a scan of all pages). The
//! plan holds every move the samples ask for; the simulator's migration-thread time (6 µs
//! per operation + copy at 8 GB/s, one thread) bounds how many apply, as in any run.
//!
//!     cargo bench -p tiermem-sim --bench placement [-- 1GiB 64GiB]   (default: all three)

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tiermem_core::{parse_size, Backend, HeatEvent, Plan, Policy, Snapshot, TierId, TrackerSpec};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::config::SimConfig;

/// Counts live heap bytes; forwards every call to the system allocator.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so it
// upholds `GlobalAlloc`'s contract exactly as `System` does; the counter is only arithmetic.
unsafe impl GlobalAlloc for Counting {
    // SAFETY: GlobalAlloc's contract is the caller's; this forwards it to System unchanged.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    // SAFETY: GlobalAlloc's contract is the caller's; this forwards it to System unchanged.
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    // SAFETY: GlobalAlloc's contract is the caller's; this forwards it to System unchanged.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    // SAFETY: GlobalAlloc's contract is the caller's; this forwards it to System unchanged.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr`/`layout` come from this allocator; `new_size` is the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const FAST: TierId = TierId(0);
const SLOW: TierId = TierId(1);
const QUANTUM_NS: u64 = 10_000_000;

/// Promote every sampled slow-tier page; demote fast-tier pages from a cursor for room.
struct SampleHot {
    cursor: usize,
}

impl Policy for SampleHot {
    fn name(&self) -> String {
        "bench-sample-hot".into()
    }
    fn tracker(&self) -> TrackerSpec {
        // HeMem's PEBS sample period.
        TrackerSpec::Pebs {
            sample_period: 19997,
        }
    }
    fn quantum_ns(&self) -> u64 {
        QUANTUM_NS
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let mut seen = HashSet::new();
        let mut promote = Vec::new();
        for e in snap.events {
            if let HeatEvent::Sample { page, .. } = *e {
                if snap.placement[page as usize] == SLOW && seen.insert(page) {
                    promote.push(page);
                }
            }
        }
        let free = snap.free_bytes(FAST) / snap.page_bytes;
        let need = (promote.len() as u64).saturating_sub(free);
        let n = snap.placement.len();
        let mut found = 0;
        let mut walked = 0;
        while found < need && walked < n {
            let p = self.cursor;
            self.cursor = (self.cursor + 1) % n;
            walked += 1;
            if snap.placement[p] == FAST && !seen.contains(&(p as u32)) {
                plan.push(p as u32, SLOW);
                found += 1;
            }
        }
        for p in promote {
            plan.push(p, FAST);
        }
        plan
    }
}

fn config(footprint: &str) -> SimConfig {
    let bytes = parse_size(footprint).expect("a size such as 64GiB");
    let text = format!(
        r#"
duration_s = 1000
[machine]
page_size = "4KiB"
app_cores = 15
ops_in_flight = 5
mlp_lines = 14
[[machine.tiers]]
name = "local"
kind = "dram"
capacity = {fast}
unloaded_latency_ns = 70
peak_bandwidth_gbps = 205
write_cost = 1.75
curve = "colloid-local"
[[machine.tiers]]
name = "remote"
kind = "node"
capacity = {bytes}
unloaded_latency_ns = 135
peak_bandwidth_gbps = 150
curve = "colloid-remote"
[workload]
kind = "gups"
working_set = {bytes}
hot_set = {hot}
hot_probability = 0.9
object_size = 64
write_fraction = 1.0
[policy]
policy = "hemem"
"#,
        fast = bytes / 4,
        hot = bytes / 8,
    );
    SimConfig::from_toml(&text, "placement bench").expect("bench config")
}

struct Row {
    footprint: String,
    pages: usize,
    placement_b: f64,
    backend_b: f64,
    build_s: f64,
    quanta: u32,
    advance_ms: f64,
    decide_ms: f64,
    max_decide_ms: f64,
    moves: f64,
    applied: f64,
}

fn measure(footprint: &str) -> Row {
    let cfg = config(footprint);
    let before = LIVE.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let mut backend = SimBackend::new(&cfg).expect("backend");
    let mut policy = SampleHot { cursor: 0 };
    backend.install_tracker(&policy.tracker()).expect("tracker");
    let build_s = t0.elapsed().as_secs_f64();
    let backend_bytes = LIVE.load(Ordering::Relaxed) - before;
    let pages = backend.placement().len();
    let placement_bytes = backend.placement_bytes();
    // Enough quanta to include one O(pages) recompute of the per-tier access mass (its
    // cost is in the mean and is the max).
    let quanta = backend.mass_recompute_every() + 44;

    let (mut adv, mut dec, mut max_dec, mut moves, mut applied) = (0.0, 0.0, 0.0f64, 0.0, 0.0);
    for q in 0..quanta + 3 {
        let t = Instant::now();
        backend.advance(QUANTUM_NS).expect("advance");
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let plan = policy.decide(&backend.observe());
        let done = backend.apply(&plan, None);
        let d = t.elapsed().as_secs_f64();
        if q >= 3 {
            adv += a;
            dec += d;
            max_dec = max_dec.max(d);
            moves += plan.moves.len() as f64;
            applied += done.ops_applied as f64;
        }
    }
    let k = quanta as f64;
    Row {
        footprint: footprint.into(),
        pages,
        placement_b: placement_bytes as f64 / pages as f64,
        backend_b: backend_bytes as f64 / pages as f64,
        build_s,
        quanta,
        advance_ms: adv / k * 1e3,
        decide_ms: dec / k * 1e3,
        max_decide_ms: max_dec * 1e3,
        moves: moves / k,
        applied: applied / k,
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sizes: Vec<String> = if args.is_empty() {
        ["1GiB", "64GiB", "1TiB"].map(String::from).to_vec()
    } else {
        args
    };
    println!("| footprint | pages (4 KiB) | placement B/page | backend B/page | build s | quanta | advance ms/quantum | observe+decide+apply ms/quantum (max) | moves planned/quantum | moves applied/quantum |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for s in &sizes {
        let r = measure(s);
        println!(
            "| {} | {} | {:.3} | {:.2} | {:.2} | {} | {:.3} | {:.3} ({:.1}) | {:.0} | {:.0} |",
            r.footprint,
            r.pages,
            r.placement_b,
            r.backend_b,
            r.build_s,
            r.quanta,
            r.advance_ms,
            r.decide_ms,
            r.max_decide_ms,
            r.moves,
            r.applied
        );
    }
    println!();
    println!(
        "(quanta of {} ms after 3 warm-up quanta, enough to include one O(pages) recompute of the per-tier access mass: it is the max; GUPS hot set 1/8 of the footprint, fast tier 1/4; B/page = live heap bytes / pages)",
        QUANTUM_NS / 1_000_000
    );
}
