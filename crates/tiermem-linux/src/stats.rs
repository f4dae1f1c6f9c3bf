//! Counters and latency histograms the runtime publishes for `tiermem stat`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Log-linear histogram of nanoseconds: 16 sub-buckets per power of two (≤ 6 % error).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Histogram {
    pub counts: Vec<u64>,
    pub total: u64,
}

const SUB: u32 = 16;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; 64 * SUB as usize],
            total: 0,
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let sub = (v >> (e - 4)) & (SUB as u64 - 1);
        ((e - 3) * SUB) as usize + sub as usize
    }
    fn lower(i: usize) -> u64 {
        if i < SUB as usize {
            return i as u64;
        }
        let e = (i as u32 / SUB) + 3;
        let sub = i as u64 % SUB as u64;
        (1u64 << e) + (sub << (e - 4))
    }
    pub fn record(&mut self, v: u64) {
        let i = Self::index(v).min(self.counts.len() - 1);
        self.counts[i] += 1;
        self.total += 1;
    }
    /// Value at quantile `q` in [0, 1] (bucket midpoint), 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let target = ((self.total as f64 * q).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= target {
                let lo = Self::lower(i);
                let hi = Self::lower(i + 1);
                return (lo + hi) / 2;
            }
        }
        0
    }
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TierStats {
    pub name: String,
    pub codec: String,
    pub allocator: String,
    pub pages: u64,
    /// Uncompressed bytes of the pages held.
    pub stored_bytes: u64,
    /// Compressed bytes (sum of object sizes).
    pub compressed_bytes: u64,
    /// Bytes of pool memory taken from the kernel.
    pub pool_bytes: u64,
    pub faults: u64,
    pub fault_p50_ns: u64,
    pub fault_p99_ns: u64,
    /// Loaded latency of the tier as the policy sees it (Little's law over the last
    /// quantum's faults and their service times), ns; 0 = no faults measured.
    #[serde(default)]
    pub latency_ns: f64,
    /// Pages moved into this tier.
    pub migrations_in: u64,
    /// Pages moved out of this tier (faults and explicit moves).
    pub migrations_out: u64,
    /// Pages that did not compress below the bound and stayed resident.
    pub rejected_incompressible: u64,
    /// Relative cost of a GB of the tier's medium (`cost_per_gb`), for TCO.
    #[serde(default)]
    pub cost_per_gb: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub pid: u32,
    pub uptime_s: f64,
    pub budget: String,
    pub budget_bytes: u64,
    pub managed_bytes: u64,
    #[serde(default)]
    pub max_managed_bytes: u64,
    pub resident_bytes: u64,
    pub max_resident_bytes: u64,
    pub footprint_bytes: u64,
    pub regions: u64,
    /// Pages unmapped by the hint-fault sampler, and the hint faults they raised.
    pub hint_sampled: u64,
    pub hint_faults: u64,
    pub first_touch_faults: u64,
    /// Managed bytes left to the kernel (lazy registration: not registered with the
    /// userfaultfd yet, first touches served by the kernel), and bytes adopted since.
    #[serde(default)]
    pub unregistered_bytes: u64,
    #[serde(default)]
    pub adopted_bytes: u64,
    pub evict_busy: u64,
    /// Moves of a resident page the kernel answered "no page here" (ENOENT) for: refused,
    /// the page kept as it is (see `Runtime::evict`). Never seen but on a racing kernel.
    #[serde(default)]
    pub evict_no_page: u64,
    /// Faults on pages held resident that had no page (data dropped outside tiermem's
    /// moves: zeros installed, reported as fatal: RUN_DIR/log and stderr), and absent
    /// pages found holding one (counted resident). Zero unless something is wrong.
    #[serde(default)]
    pub resident_refilled: u64,
    #[serde(default)]
    pub absent_with_page: u64,
    /// UFFDIO_MOVE answers the kernel got wrong (an error for pages it did move; Linux 6.18,
    /// see `uffd::moved_anyway`), found by checking and taken as moves.
    #[serde(default)]
    pub misreported_moves: u64,
    /// mremap moves of managed regions (realloc growth included) that moved page tables,
    /// and those the kernel refused (realloc then copied the block).
    #[serde(default)]
    pub remap_moves: u64,
    #[serde(default)]
    pub remap_refused: u64,
    /// Page-table operations (UFFDIO_MOVE / UFFDIO_COPY calls) the manager made to move
    /// pages between tiers, and the pages they moved (a 2 MiB range move: one, 512).
    #[serde(default)]
    pub move_ops: u64,
    #[serde(default)]
    pub moved_pages: u64,
    /// Fault-around (`[runtime] fault_around`): the unit in force, tier faults per unit,
    /// pages brought back beside faulting ones.
    #[serde(default)]
    pub fault_around: crate::runtime::fault_around::FaultAroundStats,
    pub tiers: Vec<TierStats>,
    /// CPU seconds used by tiermem's own threads.
    pub cpu_s: f64,
    pub cpu_fault_thread_s: f64,
    pub cpu_manager_thread_s: f64,
    pub forks: u64,
    pub quanta: u64,
    /// Time the fault thread spent serving tier faults (a lower bound of the program's
    /// stall on them).
    #[serde(default)]
    pub tier_fault_service_s: f64,
    /// Largest excess of resident DRAM over the budget seen (docs/runtime.md: at most the
    /// slack plus one batch of faults, unless pages are pinned or incompressible).
    #[serde(default)]
    pub max_over_budget_bytes: u64,
    /// DRAM held by pages a compressed tier refused as incompressible: they stay in DRAM
    /// over the budget, and faults do not wait for room they fill.
    #[serde(default)]
    pub incompressible_resident_bytes: u64,
    /// Times faults waited for the manager to bring DRAM back under budget + slack, and
    /// the total time they waited.
    #[serde(default)]
    pub room_waits: u64,
    #[serde(default)]
    pub room_wait_s: f64,
    /// Tier faults took more than `runtime::THRASH_SHARE` of the last window.
    #[serde(default)]
    pub thrashing: bool,
    /// A budget that would have held the last window's faults, when thrashing.
    #[serde(default)]
    pub suggested_budget: Option<String>,
    /// Resident anonymous memory of the whole process (RssAnon).
    #[serde(default)]
    pub process_anon_bytes: u64,
    /// RssAnon not in managed DRAM nor in compressed pools: stacks, memory allocated before
    /// the runtime started, locked or shared memory, tiermem's own tables.
    #[serde(default)]
    pub unmanaged_anon_bytes: u64,
    /// Anonymous private mmaps the preload left to the kernel since start, by why.
    #[serde(default)]
    pub left_to_kernel: LeftToKernelStats,
    /// The placement policy ("budget" = the DRAM budget guard alone) and how its tracker is
    /// provided here ("PEBS sampling (emulated: ...)").
    #[serde(default)]
    pub policy: String,
    #[serde(default)]
    pub tracker: String,
    /// DRAM's latency as the policy sees it, ns (its unloaded latency: no PMU here).
    #[serde(default)]
    pub dram_latency_ns: f64,
    /// The loaded-latency probe's CPU time over the run's wall time (0: no probe).
    #[serde(default)]
    pub probe_cpu_share: f64,
    /// Memory TCO saving against every managed page in DRAM, `1 − TCO / TCO_max`
    /// (TierScape Eq. 9 and 12): DRAM's resident bytes, each pool's bytes and each node
    /// tier's pages at their tier's `cost_per_gb`.
    #[serde(default)]
    pub tco_savings: f64,
    /// DRAM's `cost_per_gb` (the reference of the saving).
    #[serde(default)]
    pub dram_cost_per_gb: f64,
    /// The policy's own counters (`Policy::counters`: e.g. the ICS'18 policy's moves per
    /// granularity, the analytical TierScape's solves), as of the last engine step.
    #[serde(default)]
    pub policy_counters: BTreeMap<String, u64>,
    /// The runtime's lines so far by level (runtime/log.rs: info = advice such as
    /// thrashing, warn = something tiermem could not do, fatal = the program's data at
    /// stake), the last few of them (`TIME LEVEL: message`, oldest first), and the log file
    /// they went to ("" when none: RUN_DIR unusable, or not created yet).
    #[serde(default)]
    pub messages_info: u64,
    #[serde(default)]
    pub messages_warn: u64,
    #[serde(default)]
    pub messages_fatal: u64,
    #[serde(default)]
    pub recent_messages: Vec<String>,
    #[serde(default)]
    pub log_file: String,
    /// The SLO controller, when it picks the budget (`budget_bytes` is its choice).
    #[serde(default)]
    pub slo: Option<SloStats>,
    /// The policy's planned moves, tried vs applied (the engine's cumulative `Applied`).
    #[serde(default)]
    pub plan: tiermem_core::plan::Applied,
}

/// Anonymous private mmaps left to the kernel, bytes since start (docs/runtime.md "Limits").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeftToKernelStats {
    /// `PROT_NONE` reservations (JVM and V8 heaps reserve their address space so).
    pub reserved_bytes: u64,
    /// Maps at an address the program chose (`MAP_FIXED`, a hint): commits inside such
    /// reservations, where a JVM's or V8's heap pages live.
    pub placed_bytes: u64,
    /// Below `min_region`, or other flags (stacks, locked, huge pages).
    pub other_bytes: u64,
}

/// What the SLO controller chose and saw (`tiermem_policies::slo`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SloStats {
    /// The stall target, a share of wall time.
    pub target_stall: f64,
    /// Tier-fault stall (service + waits for room) over its last interval.
    pub stall_share: f64,
    /// Probes (the budget tightened) and back-offs (loosened after a stall over target).
    pub probes: u64,
    pub backoffs: u64,
    /// Managed bytes it found cold: held in the tiers (uncompressed size), and the memory
    /// that saves (those bytes less the pools that hold them).
    pub cold_bytes: u64,
    pub saved_bytes: u64,
    /// Of what it offloaded: sampled pages that stayed untouched for the sampler's 5 s
    /// (`Runtime::offload_idle`), the rest by probes.
    #[serde(default)]
    pub idle_offloaded_bytes: u64,
}

impl Stats {
    /// Prometheus text exposition (crate::metrics: every value, HELP and TYPE for each).
    pub fn prometheus(&self) -> String {
        let mut e = crate::metrics::Exposition::default();
        self.write_metrics(&mut e);
        e.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn quantiles_within_bucket_error() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 100);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 500_000.0 - 1.0).abs() < 0.07, "{p50}");
        assert!((p99 / 990_000.0 - 1.0).abs() < 0.07, "{p99}");
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }
}
