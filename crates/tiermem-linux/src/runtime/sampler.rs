//! Hint-fault sampling: resident pages are moved to hint staging slots; the next access
//! faults and reports how long the page went untouched. Also the staging slots' bookkeeping.

use super::page::{Page, PageState, F_PINNED, F_SHARED};
use super::mover::RangeBufs;
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

/// The sampler visits one page per block of this many pages (64 KiB) per pass, a different
/// page of each block on every pass, and the guard takes a hint fault for its block
/// (`BudgetGuard::with_heat_block`): programs touch memory in runs (objects, arrays, arenas),
/// so one sample per block finds a hot block 16x sooner than a page-by-page round robin. At
/// the default 2 560 samples/s a page-by-page pass over 1 GiB took 100 s, longer than most
/// programs run, and the SLO controller's probes met hot pages it had never sampled
/// (hot10: 22 % of its cold memory saved); by blocks the pass takes 6.4 s.
pub const SAMPLE_BLOCK_PAGES: usize = 16;

/// Idle samples offloaded per sampler pass at most (with their blocks, 64 MiB: ~0.1 s of
/// the manager's time), so a pass never holds the manager long; the rest stay stale for
/// the next one.
const IDLE_OFFLOAD_MAX: usize = 1024;

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

    /// Hint-fault sampling: move up to `n` resident pages (one per block, round robin) to
    /// hint slots; their next access faults and reports the time since. Also puts back
    /// pages staged too long.
    pub fn sample(&self, n: usize) {
        let now = sys::now_ns();
        let mut st = lock(self);
        if st.frozen || st.hwm == 0 {
            return;
        }
        // A slot is reused only once its old page is dropped.
        self.flush_hint_dirty(&mut st);
        // Stale samples: untouched for STAGE_MAX_NS. Under the SLO controller, while the
        // stall is well under its target, they are offloaded where they are (already out of
        // the program's address space: no second move); otherwise put back.
        let offload_idle = !st.tiers.is_empty()
            && st.tiers[0].node.is_none()
            && st
                .slo
                .as_ref()
                .is_some_and(|s| s.stall_share < s.target_stall / 2.0);
        let mut idle = Vec::new();
        for slot in 0..HINT_SLOTS {
            let (pi, t) = st.hint_owner[slot];
            if t != 0 && now - t > STAGE_MAX_NS {
                let pi = pi as usize;
                if pi < st.hwm as usize
                    && matches!(st.pages[pi].state, PageState::Staged { slot: s, .. } if s == slot as u32)
                {
                    if offload_idle
                        && idle.len() < IDLE_OFFLOAD_MAX
                        && matches!(st.pages[pi].state, PageState::Staged { home: 0, .. })
                    {
                        idle.push((pi, slot as u32));
                        continue; // keeps its owner time: still stale at the next pass
                    }
                    self.promote(&mut st, pi, None);
                }
                st.hint_owner[slot].1 = 0;
            }
        }
        if !idle.is_empty() {
            drop(st);
            self.offload_idle(&idle);
            st = lock(self);
            if st.frozen {
                return;
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
            // Next block; at the end of the heap, the next offset inside each block (so
            // `i % SAMPLE_BLOCK_PAGES` is the pass's offset and the cursor needs no more state).
            i += SAMPLE_BLOCK_PAGES;
            if i >= hwm {
                i = (i % SAMPLE_BLOCK_PAGES + 1) % SAMPLE_BLOCK_PAGES.min(hwm);
            }
        }
        st.scan_cursor = i as u32;
    }
}

impl Runtime {
    /// Compress sampled pages that stayed untouched for `STAGE_MAX_NS` into the first tier,
    /// with the resident pages of their block (SDFM's cold-age rule: what has not been
    /// touched for a while is offloaded, without a probe's guess; the sample stands for its
    /// block as a hint fault does for the guard). A page touched since its check is moved
    /// home by its fault as any staged page; one its tier refuses (incompressible) goes home
    /// with the commit. A hot page in a block found idle costs one tier fault, and the stall
    /// it adds closes the gate (`sample`) until the controller's interval is quiet again.
    ///
    /// The block goes as one range (`move_range`): each run of its resident pages leaves
    /// the address space with one UFFDIO_MOVE, and the kernel flushes the other CPUs' TLBs
    /// once per call, not once per page (Linux 6.18: 4 096 pages moved page by page sent
    /// 4 073 TLB-shootdown IPIs while another thread of the process ran on the other CPU,
    /// in 16-page runs 2). Each IPI is a VM exit on a guest's vCPU; hot10's page-by-page
    /// offload sent ~98 000 of them.
    fn offload_idle(&self, idle: &[(usize, u32)]) {
        let mut bufs = RangeBufs::default();
        let mut applied = 0u64;
        for &(pi, slot) in idle {
            let (start, n) = {
                let st = lock(self);
                if st.frozen
                    || !matches!(st.pages[pi].state, PageState::Staged { slot: s, home: 0 } if s == slot)
                {
                    continue;
                }
                let start = pi / SAMPLE_BLOCK_PAGES * SAMPLE_BLOCK_PAGES;
                (start, (start + SAMPLE_BLOCK_PAGES).min(st.hwm as usize) - start)
            };
            // The staged sample moves alone (its data is in its hint slot), the block's
            // resident runs each with one call; pinned, shared and absent pages are skipped.
            applied += self.move_range(start, n, 1, &mut bufs).applied;
        }
        lock(self).idle_offloaded += applied;
    }
}

impl State {
    /// Pages the sampler has staged and not yet seen touched.
    pub fn hint_staged(&self) -> u64 {
        (HINT_SLOTS - self.hint_free.len()) as u64
    }
}
