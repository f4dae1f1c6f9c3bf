//! Workloads: what the application cores access.
//!
//! A workload owns a dense page space `0..page_count()` (page size is the machine's).
//! Stationary workloads (GUPS, key-value, random) expose exact per-page access
//! probabilities, which the machine uses for per-tier access mass and which trackers
//! use to draw time-to-fault exactly; ordered streams (traces, streaming) return `None`
//! and are simulated access by access.

use rand::rngs::SmallRng;
use tiermem_core::PageIdx;

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

/// Contract: deterministic given the rng; `probabilities()`, when `Some`, sums to 1 and is
/// the distribution `next()` draws from until `advance_to` next returns true.
pub trait Workload: Send {
    /// Human-readable name for reports.
    fn name(&self) -> String;
    fn page_count(&self) -> u32;
    fn op_shape(&self) -> OpShape;
    /// Move the workload's clock to `now_ns` (phase changes, hot-set moves). Returns true if
    /// the access distribution changed (callers then re-read `probabilities`).
    fn advance_to(&mut self, now_ns: u64) -> bool;
    /// Exact per-operation access probability of every page, if stationary.
    fn probabilities(&self) -> Option<&[f64]>;
    /// The next operation.
    fn next(&mut self, rng: &mut SmallRng) -> Access;
    /// A finite trace that has been fully replayed (and does not loop).
    fn finished(&self) -> bool {
        false
    }
    /// Pages of the hot set, if the workload has one (used by the best-case search).
    fn hot_pages(&self) -> Option<Vec<PageIdx>> {
        None
    }
}
