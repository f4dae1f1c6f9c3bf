//! Thrashing detection: the share of wall time the fault thread spends serving tier faults
//! and waiting for room.

use super::{lock, Runtime};
use crate::sys::{self, PAGE};

/// Thrashing: the share of wall time the fault thread spent serving tier faults, or waiting
/// for the manager to make room before the next ones, over the last window (the same stall
/// the backend reports to the policy). A program's own wait per fault is longer still (the
/// wakeup of the faulting thread, 5-10 us on these VMs), so this share is a lower bound of
/// its stall.
pub const THRASH_WINDOW_NS: u64 = 2_000_000_000;
/// Above this share of a window the program is told it thrashes (docs/runtime.md).
pub const THRASH_SHARE: f64 = 0.10;
/// At most one stderr line a minute (`tiermem stat` shows the state all the time).
const THRASH_REPORT_GAP_NS: u64 = 60_000_000_000;

#[derive(Clone, Debug, Default)]
pub struct Thrash {
    window_start_ns: u64,
    stall_at_start_ns: u64,
    faults_at_start: u64,
    pub flagged: bool,
    /// When the last stderr line was written (episodes start at most once a minute).
    reported_ns: u64,
    /// The budget (percent of the footprint) that would have held the window's faults.
    pub suggestion: Option<String>,
}

impl Runtime {
    /// Close the thrash window if it is over. Returns the stderr line to print when the
    /// program starts thrashing (once per episode).
    pub fn check_thrash(&self) -> Option<String> {
        let now = sys::now_ns();
        let mut st = lock(self);
        let faults: u64 = st.tiers.iter().map(|t| t.faults).sum();
        // Waits for room count: while the fault thread waits, the next faults wait with it.
        // A loaded machine (a slow evictor) moves a thrashing program's stall from service
        // to these waits: one run spent 7.5 s of 8.5 s in them and 1.8 s serving, and its
        // last window read under the share.
        let stall = st.stall_ns + st.room_wait_ns;
        let th = &st.thrash;
        if th.window_start_ns == 0 {
            st.thrash = Thrash {
                window_start_ns: now,
                stall_at_start_ns: stall,
                faults_at_start: faults,
                ..Thrash::default()
            };
            return None;
        }
        let wall = now - th.window_start_ns;
        if wall < THRASH_WINDOW_NS {
            return None;
        }
        let share = (stall - th.stall_at_start_ns) as f64 / wall as f64;
        let refaulted = faults - th.faults_at_start;
        let was = th.flagged;
        let reported_ns = th.reported_ns;
        let footprint = st.footprint_pages().max(1);
        let budget_pages = st.budget_bytes() / PAGE as u64;
        // Every page faulted back in the window was needed: a budget that holds them too.
        let want = (budget_pages + refaulted).min(footprint);
        let pct = ((want * 100).div_ceil(footprint).div_ceil(5) * 5).min(100);
        let flagged = share > THRASH_SHARE;
        st.thrash = Thrash {
            window_start_ns: now,
            stall_at_start_ns: stall,
            faults_at_start: faults,
            flagged,
            reported_ns,
            suggestion: flagged.then(|| {
                if pct >= 100 {
                    "unlimited".to_string()
                } else {
                    format!("{pct}%")
                }
            }),
        };
        if flagged && !was && (reported_ns == 0 || now - reported_ns > THRASH_REPORT_GAP_NS) {
            st.thrash.reported_ns = now;
            if st.slo.is_some() {
                // The SLO controller backs off on its own (its stall allowance is far below
                // the thrash share): a program that still thrashes has no cold memory to give
                // at its ceiling, or a hot set above it.
                return Some(format!(
                    "thrashing: {:.0}% of the last {:.0} s went to serving {} tier faults \
                     under the SLO controller (ceiling {}); the budget is being raised",
                    share * 100.0,
                    wall as f64 / 1e9,
                    refaulted,
                    st.budget.describe()
                ));
            }
            if matches!(st.budget, crate::config::Budget::Unlimited) {
                // No budget to raise: the placement policy put these pages in the tiers.
                return Some(format!(
                    "thrashing: {:.0}% of the last {:.0} s went to serving {} tier faults \
                     (budget unlimited: the policy placed the pages there); give the policy a \
                     more conservative setting (TierScape: a larger alpha or threshold \
                     \"conservative\"; HeMem/MEMTIS: a lower hot threshold)",
                    share * 100.0,
                    wall as f64 / 1e9,
                    refaulted
                ));
            }
            let s = st.thrash.suggestion.clone().unwrap_or_default();
            return Some(format!(
                "thrashing: {:.0}% of the last {:.0} s went to serving {} tier faults \
                 (budget {}); try --dram-budget {s} (`tiermem budget {} {s}` while it runs)",
                share * 100.0,
                wall as f64 / 1e9,
                refaulted,
                st.budget.describe(),
                std::process::id()
            ));
        }
        None
    }
}
