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

/// One observation of page heat. Which kinds appear depends on the tracker.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum HeatEvent {
    /// PEBS-like: one sampled access (each stands for `sample_period` real ones).
    Sample { page: PageIdx, write: bool },
    /// TPP-like: a page unmapped by the scanner was touched `time_to_fault_ns` later.
    HintFault {
        page: PageIdx,
        time_to_fault_ns: f64,
    },
    /// Access-bit scan: the page was accessed during the last scan period.
    Accessed { page: PageIdx },
    /// An access to a page held in a compressed tier faulted it back.
    TierFault { page: PageIdx },
}

/// The complete input of a policy for one quantum.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot<'a> {
    pub now_ns: u64,
    pub quantum_ns: u64,
    pub page_bytes: u64,
    pub tier_specs: &'a [TierSpec],
    pub tiers: &'a [TierTelemetry],
    /// `placement[page]` is the tier the page lives in (the OS knows this).
    pub placement: &'a [TierId],
    pub events: &'a [HeatEvent],
    /// The address spaces the backend manages, each a span of the page space, sorted.
    pub tenants: &'a [TenantSpec],
    /// The per-tenant limits and CPU shares in force: the controller's decisions of this
    /// quantum, which the policy places pages within (empty without a controller).
    pub controls: &'a Controls,
    /// The per-page accessed bits, read and cleared over ranges the policy chooses, when its
    /// tracker is [`TrackerSpec::AccessBitScan`](crate::TrackerSpec::AccessBitScan); `None`
    /// otherwise.
    pub access_bits: Option<&'a dyn AccessBits>,
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
