//! What a policy sees each quantum: per-tier telemetry, where each page lives, and the
//! heat events its tracker produced. A policy sees nothing else.

use crate::plan::Controls;
use crate::tenant::{TenantId, TenantSpec};
use crate::tier::{TierId, TierSpec};
use crate::tracker::AccessBits;
use crate::units::PageIdx;
use serde::{Deserialize, Serialize};

/// Per-tier measurements over the last quantum, as hardware counters would give them
/// (Colloid §3.1: CHA queue occupancy and arrival rate per tier).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierTelemetry {
    /// Memory the tier occupies: its pages, or a compressed tier's pool (compressed data
    /// and the allocator's overhead; the pages it holds are in the placement).
    pub used_bytes: u64,
    pub capacity_bytes: u64,
    /// Average number of read requests queued for this tier (O in Little's law).
    pub occupancy: f64,
    /// Read requests arriving per second (R in Little's law).
    pub arrival_rate_per_s: f64,
    /// Bytes read from / written to the tier per second, all sources.
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    /// Accesses to this tier that faulted (a compressed tier: every access is a fault that
    /// brings the page back), per second.
    pub faults_per_s: f64,
}

impl TierTelemetry {
    /// Loaded read latency by Little's law, L = O / R; `None` when the tier saw no requests.
    pub fn latency_ns(&self) -> Option<f64> {
        (self.arrival_rate_per_s > 0.0).then(|| self.occupancy / self.arrival_rate_per_s * 1e9)
    }
}

/// Per-tenant measurements over the last quantum, as Mercury's profiling counters give them
/// (§3.1: memory access latency per application from IBS/PEBS, memory bandwidth from
/// µProf/PQoS; §4.2: the rate of remote NUMA hint faults). Empty where a backend cannot
/// attribute traffic to tenants.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantTelemetry {
    pub ops_per_s: f64,
    /// Mean latency of the tenant's memory reads (its accesses' mix over the tiers).
    pub avg_latency_ns: f64,
    /// The tenant's memory traffic, reads and writes, all tiers.
    pub bandwidth_bytes_per_s: f64,
    /// NUMA-balancing hint faults per second on its pages outside the top tier.
    pub hint_faults_per_s: f64,
    /// Its pages' bytes in each tier.
    pub used_bytes: Vec<u64>,
    /// Its whole footprint in bytes.
    pub footprint_bytes: u64,
    /// Milliseconds stalled on tier faults per second it was active (the runtime: the
    /// fault thread's service time of its faults plus waits for room under its budget,
    /// over that plus its own CPU time; no PMU needed). NaN when it did nothing; 0 where a
    /// backend measures latency instead.
    #[serde(default)]
    pub fault_stall_ms_per_s: f64,
    /// CPU seconds per second its own threads ran (the runtime's progress rate of a
    /// throughput tenant: what CPU throttling and fault stalls take away). 0 where a
    /// backend measures bandwidth instead.
    #[serde(default)]
    pub cpu_per_s: f64,
    /// The tenant's core counters, where a backend reads them per tenant (a hypervisor
    /// summing a VM's pinned cores; Memstrata §4.2's estimator inputs); `None` elsewhere.
    #[serde(default)]
    pub core_counters: Option<CoreCounters>,
}

/// Per-tenant core performance counters (Memstrata §4.2: what a hypervisor can count per
/// VM on a Flat Memory Mode machine, whose local-miss rate is only system-wide).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreCounters {
    /// Mean latency of demand loads that miss the L3 (the VM's memory latency).
    pub l3_miss_latency_ns: f64,
    /// Mean latency of demand loads that miss the L2 (L3 hits and memory together).
    pub l2_miss_latency_ns: f64,
    /// Mean DTLB load-miss latency (page walks).
    pub dtlb_miss_latency_ns: f64,
    /// L2 and L3 demand misses per kilo-instruction.
    pub l2_mpki: f64,
    pub l3_mpki: f64,
}

impl CoreCounters {
    /// `self ← α·x + (1−α)·self` (an EWMA, Memstrata §4.3's smoothing).
    pub fn ewma(&mut self, x: &CoreCounters, alpha: f64) {
        let m = |a: &mut f64, b: f64| *a = alpha * b + (1.0 - alpha) * *a;
        m(&mut self.l3_miss_latency_ns, x.l3_miss_latency_ns);
        m(&mut self.l2_miss_latency_ns, x.l2_miss_latency_ns);
        m(&mut self.dtlb_miss_latency_ns, x.dtlb_miss_latency_ns);
        m(&mut self.l2_mpki, x.l2_mpki);
        m(&mut self.l3_mpki, x.l3_mpki);
    }
}

fn one_sample() -> u32 {
    1
}

/// One observation of page heat. Which kinds appear depends on the tracker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum HeatEvent {
    /// PEBS-like: `count` (≥ 1) samples of one access, each standing for `sample_period`
    /// real ones. More than one when a simulated access stands for more loads than a
    /// period (MEMTIS samples 1 in 199): the samples a policy would see one after another.
    Sample {
        page: PageIdx,
        write: bool,
        #[serde(default = "one_sample")]
        count: u32,
    },
    /// TPP-like: a page unmapped by the scanner was touched `time_to_fault_ns` later.
    HintFault {
        page: PageIdx,
        time_to_fault_ns: f64,
    },
    /// Access-bit scan: the page was accessed during the last scan period.
    Accessed { page: PageIdx },
    /// An access to a page held in a compressed tier faulted it back.
    TierFault { page: PageIdx },
    /// Brought back to DRAM beside a faulting page (fault-around): not an observed access,
    /// but as recent as one for the budget guard's coldness order, so it is not the first
    /// page evicted before the program reaches it.
    Prefetched { page: PageIdx },
}

/// The complete input of a policy for one quantum.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot<'a> {
    pub now_ns: u64,
    pub quantum_ns: u64,
    pub page_bytes: u64,
    pub tier_specs: &'a [TierSpec],
    pub tiers: &'a [TierTelemetry],
    /// `placement[page]` is the tier the page lives in (the OS knows this), or
    /// [`TierId::NONE`](crate::TierId::NONE) where no data lives (runtime only).
    pub placement: &'a [TierId],
    pub events: &'a [HeatEvent],
    /// The address spaces the backend manages, each a span of the page space, sorted.
    pub tenants: &'a [TenantSpec],
    /// The per-tenant limits and CPU shares in force: the controller's decisions of this
    /// quantum, which the policy places pages within (empty without a controller).
    pub controls: &'a Controls,
    /// Per tenant (same order as `tenants`), when the backend measures it; else empty.
    pub tenant_telemetry: &'a [TenantTelemetry],
    /// The per-page accessed bits, read and cleared over ranges the policy chooses, when its
    /// tracker is [`TrackerSpec::AccessBitScan`](crate::TrackerSpec::AccessBitScan); `None`
    /// otherwise.
    pub access_bits: Option<&'a dyn AccessBits>,
    /// Every page whose tier may have changed since the previous snapshot (applied moves,
    /// reclaim, compressed faults), when the backend keeps that log; `None` when it does not
    /// or the log overflowed. A policy that keeps per-tier lists updates them from it
    /// instead of re-reading every page's placement; `None` means re-read. A page may be
    /// listed without having moved.
    pub moved: Option<&'a [PageIdx]>,
}

impl Snapshot<'_> {
    pub fn page_count(&self) -> usize {
        self.placement.len()
    }
    /// The tenant that owns `page`.
    pub fn tenant_of(&self, page: PageIdx) -> Option<TenantId> {
        crate::tenant::tenant_of(self.tenants, page)
    }
    /// Free bytes in a tier.
    pub fn free_bytes(&self, tier: TierId) -> u64 {
        let t = &self.tiers[tier.index()];
        t.capacity_bytes.saturating_sub(t.used_bytes)
    }
}
