//! Trackers: how a backend lets a policy see page heat. A policy declares the tracker it
//! was designed for ([`TrackerSpec`]); the backend builds it, so the policy is exactly as
//! blind as it would be on that hardware.

use crate::snapshot::HeatEvent;
use crate::tier::TierId;
use crate::units::PageIdx;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TrackerSpec {
    /// PEBS-like sampling: one sample every `sample_period` memory accesses (loads and
    /// stores counted separately by the hardware; both reported here).
    Pebs { sample_period: u64 },
    /// TPP / NUMA-balancing hint faults: every `scan_period_ns` the scanner unmaps up to
    /// `scan_pages` pages (round robin over the pages of `tiers`); the next access to an
    /// unmapped page raises a hint fault carrying the time since it was unmapped.
    HintFault {
        scan_period_ns: u64,
        scan_pages: u64,
        tiers: Vec<TierId>,
    },
    /// Access-bit scanning (ICS'18): every `scan_period_ns` each page reports whether it was
    /// touched since the previous scan, and the bit is cleared.
    AccessBit { scan_period_ns: u64 },
    /// Several trackers at once, their events merged (e.g. TPP: hint faults for promotion
    /// plus the LRU's access-bit aging that orders kswapd's demotions).
    Combined(Vec<TrackerSpec>),
    /// No heat information (static placements).
    None,
}

/// What a tracker may consult at the end of a quantum.
pub struct TrackerView<'a> {
    pub now_ns: u64,
    pub quantum_ns: u64,
    pub placement: &'a [TierId],
}

/// Contract: a tracker receives every access the backend observes (`on_access`, possibly a
/// sampled stream) and, at quantum end, appends the events the emulated hardware would have
/// delivered since the last call. It must not reveal more than that hardware would.
pub trait Tracker: Send {
    fn on_access(&mut self, page: PageIdx, write: bool, now_ns: u64);
    fn end_quantum(&mut self, view: &TrackerView<'_>, out: &mut Vec<HeatEvent>);
}
