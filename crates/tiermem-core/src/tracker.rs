//! Trackers: how a backend lets a policy see page heat. A policy declares the tracker it
//! was designed for ([`TrackerSpec`]); the backend builds it, so the policy is exactly as
//! blind as it would be on that hardware.

use crate::snapshot::HeatEvent;
use crate::tier::TierId;
use crate::units::{PageIdx, PageRange};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TrackerSpec {
    /// PEBS-like sampling: one sample every `sample_period` memory accesses (loads and
    /// stores counted separately by the hardware; both reported here).
    Pebs { sample_period: u64 },
    /// TPP / NUMA-balancing hint faults, per task (tenant) as Linux scans each process:
    /// every interval a task's scanner unmaps up to `scan_pages` of its pages (round robin
    /// over its pages in `tiers`); the next access to an unmapped page raises a hint fault
    /// carrying the time since it was unmapped. The interval is `scan_period_ns`, or with
    /// `scan_period_min_ns` Linux's `task_scan_min()`: `max(scan_period_ns,
    /// scan_period_min_ns / windows)`, `windows` = the task's pages / `scan_pages` rounded
    /// up (the time to scan the whole task, at most one window per `scan_period_ns`).
    HintFault {
        scan_period_ns: u64,
        scan_pages: u64,
        tiers: Vec<TierId>,
        #[serde(default)]
        scan_period_min_ns: Option<u64>,
    },
    /// Access-bit scanning (ICS'18): every `scan_period_ns` each page reports whether it was
    /// touched since the previous scan, and the bit is cleared.
    AccessBit { scan_period_ns: u64 },
    /// Access-bit scanning driven by the policy (ICS'18 §4): no events; the snapshot lends
    /// the policy [`AccessBits`] (`Snapshot::access_bits`), through which it reads and clears
    /// the per-4 KiB accessed bits of the virtually contiguous ranges it chooses to scan, at
    /// its own pace. A page's bit is set by any access since it was last read.
    AccessBitScan,
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

/// Per-page accessed bits (the A bit of each 4 KiB page's PTE) read over virtually
/// contiguous ranges, as an OS scanner reads them (ICS'18 §4, Fig. 5): a bit says whether
/// the page was accessed since its bit was last read, and reading it clears it. A backend
/// lends one through `Snapshot::access_bits` when the policy's tracker is
/// [`TrackerSpec::AccessBitScan`]; the policy decides which ranges to scan and when.
///
/// Reads go through `&self` (the backend keeps the bits behind interior mutability), so a
/// snapshot stays a plain shared view; calls are deterministic in their order.
pub trait AccessBits: std::fmt::Debug {
    /// Read and clear the bits of the pages of `range` (page indices of the snapshot's page
    /// space, clipped to it) for which `read(page)` is true; the others are left as they are
    /// (ICS'18's move-in path reads only slow-resident pages, its move-out path only fast
    /// ones). `out` is cleared, then holds one entry per page of the range, in page order:
    /// the bit, or `false` for a page not read.
    fn read_and_clear_if(
        &self,
        range: PageRange,
        read: &mut dyn FnMut(PageIdx) -> bool,
        out: &mut Vec<bool>,
    );
    /// Read and clear every bit of `range`.
    fn read_and_clear(&self, range: PageRange, out: &mut Vec<bool>) {
        self.read_and_clear_if(range, &mut |_| true, out)
    }
}
