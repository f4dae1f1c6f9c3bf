//! Hint-fault sampling: resident pages are moved to hint staging slots; the next access
//! faults and reports how long the page went untouched. Also the staging slots' bookkeeping.

use super::page::{Page, PageState, F_PINNED, F_SHARED};
use super::{lock, Runtime, State, EVICT_SLOTS, HINT_SLOTS};
use crate::sys::{self, PAGE};
use crate::uffd::Op;

/// A staged page not touched for this long is put back (it stays a cold-page candidate).
const STAGE_MAX_NS: u64 = 5_000_000_000;

/// A pass looks at no more than this many pages per page it means to sample. Pages that
/// cannot move (shared with a fork child: UFFDIO_MOVE says EBUSY; pinned) are skipped, and
/// after a fork nearly all are: an unbounded pass would walk the whole heap under the state
/// lock while the program's faults wait for it.
const VISITS_PER_SAMPLE: usize = 8;

impl Runtime {
    /// Give a staging slot back. Hint slots return to the free list (`dirty`: its page is
    /// still there and must be dropped before reuse); eviction slots (>= HINT_SLOTS) belong
    /// to the manager's current batch and are released by `end_batch`.
    pub(super) fn free_slot(st: &mut State, slot: u32, dirty: bool) {
        if (slot as usize) < HINT_SLOTS {
            if dirty {
                st.hint_dirty.push(slot);
            }
            st.hint_free.push(slot);
        }
    }

    pub(super) fn in_staging(&self, a: usize) -> bool {
        a >= self.hint_base && a < self.hint_base + (HINT_SLOTS + EVICT_SLOTS) * PAGE
    }

    /// Hint-fault sampling: move up to `n` resident pages (round robin) to hint slots; their
    /// next access faults and reports the time since. Also puts back pages staged too long.
    pub fn sample(&self, n: usize) {
        let now = sys::now_ns();
        let mut st = lock(self);
        if st.frozen || st.hwm == 0 {
            return;
        }
        self.flush_hint_dirty(&mut st); // a slot is reused only once its old page is dropped
                                        // Put back stale samples.
        for slot in 0..HINT_SLOTS {
            let (pi, t) = st.hint_owner[slot];
            if t != 0 && now - t > STAGE_MAX_NS {
                let pi = pi as usize;
                if pi < st.hwm as usize
                    && matches!(st.pages[pi].state, PageState::Staged { slot: s, .. } if s == slot as u32)
                {
                    self.promote(&mut st, pi, None);
                }
                st.hint_owner[slot].1 = 0;
            }
        }
        if !st.sample_always && st.footprint_pages() * PAGE as u64 <= st.budget_bytes() {
            // The budget guard alone, and everything fits (unlimited, 100 %): nothing will be
            // demoted, so sampling would only cost hint faults. It resumes when the budget
            // shrinks. Policies that place by heat keep sampling.
            return;
        }
        let hwm = st.hwm as usize;
        let mut seen = 0;
        let mut done = 0;
        let mut i = st.scan_cursor as usize % hwm;
        let max_seen = hwm.min(n.saturating_mul(VISITS_PER_SAMPLE));
        while done < n && seen < max_seen && !st.hint_free.is_empty() {
            let p = st.pages[i];
            // Pages on node tiers are sampled too (their heat decides promotions); the move
            // keeps the data on its node, and the page returns to its node tier.
            let home = match p.state {
                PageState::Resident => Some(0),
                PageState::Node { tier } => Some(tier),
                _ => None,
            };
            if let (Some(home), 0) = (home, p.flags & (F_PINNED | F_SHARED)) {
                let slot = *st.hint_free.last().unwrap() as usize;
                match self
                    .uffd
                    .mv(self.hint_base + slot * PAGE, self.addr(i), PAGE, false)
                {
                    Op::Done => {
                        st.hint_free.pop();
                        st.hint_owner[slot] = (i as u32, now);
                        st.set(
                            i,
                            Page::new(
                                PageState::Staged {
                                    slot: slot as u32,
                                    home,
                                },
                                p.flags,
                            ),
                        );
                        st.hint_sampled += 1;
                        done += 1;
                    }
                    Op::NoEnt => st.no_page(),
                    Op::Busy => st.mark_shared(i),
                    // A free slot holding a page: a late zero page from a stale fault message
                    // of the evictor's read (`serve`). Drop it, or every later sample would
                    // pick this slot (the top of the free list) and fail the same way.
                    // SAFETY: drops the page of a free hint slot of our staging mapping (no
                    // page's state refers to it).
                    Op::Exists => unsafe {
                        sys::madvise(self.hint_base + slot * PAGE, PAGE, libc::MADV_DONTNEED);
                    },
                    _ => {}
                }
            }
            seen += 1;
            i = (i + 1) % hwm;
        }
        st.scan_cursor = i as u32;
    }
}

impl State {
    /// Pages the sampler has staged and not yet seen touched.
    pub fn hint_staged(&self) -> u64 {
        (HINT_SLOTS - self.hint_free.len()) as u64
    }
}
