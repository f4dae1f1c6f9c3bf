//! Memory tiers: what a tier is, independent of how a backend realises it.

use serde::{Deserialize, Serialize};

/// Index of a tier in the backend's tier list. Tier 0 is the default (fastest) tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TierId(pub u8);

impl TierId {
    pub const DEFAULT: TierId = TierId(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What backs a tier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TierKind {
    /// Locally attached DRAM.
    Dram,
    /// Byte-addressable memory behind an interconnect: remote socket or CXL expander.
    Cxl,
    /// Software-defined compressed tier: pages are compressed into a pool and faulted back.
    Compressed { codec: String, allocator: String },
}

/// Static description of one tier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierSpec {
    pub name: String,
    pub kind: TierKind,
    pub capacity_bytes: u64,
    /// Latency of a single request with nothing else in flight.
    pub unloaded_latency_ns: f64,
    /// Theoretical peak bandwidth (reads + writes) of the tier's interconnect.
    pub peak_bandwidth_bytes_per_s: f64,
    /// Cost of a GB of this tier, for TCO models (TierScape §TCO). Relative units.
    pub cost_per_gb: f64,
}
