//! The loaded-latency probe (`[runtime] telemetry = "probe"`): Colloid's per-tier latency
//! on hardware without uncore (CHA) counters. One thread chases, for each node tier, a
//! random pointer ring of RING_BYTES on that node (bound there with mbind before it is
//! written): each hop is a dependent load that misses the caches, so the time per hop is
//! the node's current latency under whatever load the program puts on it. A few rounds per
//! quantum, HOPS hops each, then sleep: its CPU cost is bounded and shown by `tiermem stat`
//! (`probe_cpu_share`).
//!
//! Limits: one dependent chain measures latency, not bandwidth; the ring (4 MiB) must
//! exceed the last-level cache share it gets, or hops hit in cache and read low; the
//! probe's own traffic is small (one line per hop) but adds to the node's load.

use crate::numa;
use crate::sys::{self, PAGE};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Bytes of each node's ring: several times a core's share of a typical LLC.
pub const RING_BYTES: usize = 4 << 20;
/// Dependent loads per measurement: at ~100-400 ns each on hardware, 0.1-0.4 ms per node
/// per period (a few % of a core with three nodes at 20 ms).
const HOPS: usize = 1024;
/// Shortest period between measurements.
const MIN_PERIOD_NS: u64 = 20_000_000;
/// One slot per cache line.
const LINE: usize = 64;
/// mbind(2) mode: only this node.
const MPOL_BIND: i32 = 2;

/// The probe's results, shared with the manager thread.
pub struct Probe {
    /// Per runtime tier (index = tier): the smoothed ns per hop, as f64 bits (0: none).
    latency_bits: Vec<AtomicU64>,
    /// (tier, node) of the node tiers probed.
    targets: Vec<(usize, u32)>,
    pub tid: AtomicI32,
    pub period_ns: u64,
}

impl Probe {
    pub fn new(tier_nodes: &[Option<u32>], dram_node: u32, period_ns: u64) -> Probe {
        let mut targets: Vec<(usize, u32)> = vec![(0, dram_node)];
        targets.extend(
            tier_nodes
                .iter()
                .enumerate()
                .filter_map(|(k, n)| n.map(|n| (k, n))),
        );
        Probe {
            latency_bits: (0..tier_nodes.len()).map(|_| AtomicU64::new(0)).collect(),
            targets,
            tid: AtomicI32::new(0),
            period_ns: period_ns.max(MIN_PERIOD_NS),
        }
    }

    /// The latest loaded latency of runtime tier `tier` (0: DRAM), ns.
    pub fn latency_ns(&self, tier: usize) -> Option<f64> {
        let v = f64::from_bits(self.latency_bits.get(tier)?.load(Ordering::Relaxed));
        (v > 0.0).then_some(v)
    }

    /// CPU seconds the probe thread used.
    pub fn cpu_s(&self) -> f64 {
        match self.tid.load(Ordering::Relaxed) {
            0 => 0.0,
            t => sys::thread_cpu_ns(t) as f64 / 1e9,
        }
    }

    /// The probe thread's loop (until `stop`): one measurement per node per period.
    pub fn run(&self, stop: &std::sync::atomic::AtomicBool) {
        self.tid.store(sys::gettid(), Ordering::Relaxed);
        let rings: Vec<(usize, Option<usize>)> = self
            .targets
            .iter()
            .map(|&(tier, node)| (tier, build_ring(node)))
            .collect();
        while !stop.load(Ordering::Relaxed) {
            for &(tier, ring) in &rings {
                let Some(base) = ring else { continue };
                let ns = chase(base, HOPS);
                let cell = &self.latency_bits[tier];
                let old = f64::from_bits(cell.load(Ordering::Relaxed));
                // Smoothed over a few quanta, as Colloid smooths its CHA readings.
                let new = if old > 0.0 {
                    old + 0.25 * (ns - old)
                } else {
                    ns
                };
                cell.store(new.to_bits(), Ordering::Relaxed);
            }
            std::thread::sleep(std::time::Duration::from_nanos(self.period_ns));
        }
    }
}

/// A random cyclic permutation of the ring's cache lines, on `node`: each line holds the
/// address of the next. None when the ring cannot be placed there.
fn build_ring(node: u32) -> Option<usize> {
    let base = sys::map_anon(RING_BYTES).ok()?;
    // SAFETY: the ring was just mapped and holds no page yet; the policy only decides
    // where its pages are allocated.
    if unsafe { numa::mbind_node(base, RING_BYTES, MPOL_BIND, node) }.is_err() {
        // SAFETY: unmaps the ring just mapped; nothing refers to it.
        unsafe { sys::munmap(base, RING_BYTES) };
        return None;
    }
    let n = RING_BYTES / LINE;
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ node as u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for k in 0..n {
        let from = base + order[k] * LINE;
        let to = base + order[(k + 1) % n] * LINE;
        // SAFETY: `from` is a line inside the ring mapped above (order[k] < n).
        unsafe { (from as *mut usize).write(to) };
    }
    debug_assert!(RING_BYTES.is_multiple_of(PAGE));
    Some(base)
}

/// Follow `hops` pointers from `base`: ns per hop.
fn chase(base: usize, hops: usize) -> f64 {
    let t0 = sys::now_ns();
    let mut p = base;
    for _ in 0..hops {
        // SAFETY: every line of the ring holds the address of another line of the ring
        // (`build_ring`), so `p` always points inside it.
        p = unsafe { std::ptr::read_volatile(p as *const usize) };
    }
    std::hint::black_box(p);
    (sys::now_ns() - t0) as f64 / hops as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_one_cycle_and_chase_measures_time() {
        let base = build_ring(numa::dram_node()).expect("a ring on the DRAM node");
        let n = RING_BYTES / LINE;
        let (mut p, mut steps) = (base, 0);
        loop {
            // SAFETY: as in `chase`.
            p = unsafe { std::ptr::read_volatile(p as *const usize) };
            steps += 1;
            if p == base || steps > n {
                break;
            }
        }
        assert_eq!(steps, n, "the ring visits every line once");
        let ns = chase(base, 10_000);
        assert!(ns > 0.0 && ns < 100_000.0, "{ns} ns per hop");
    }
}
