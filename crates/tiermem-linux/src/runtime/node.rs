//! Node tiers: pages moved between DRAM (the node the program started on) and the NUMA
//! nodes of `kind = "node"` tiers with move_pages(2), one call for a whole batch or range.
//!
//! A page on a node tier stays mapped (state NODE): the program reaches it with no fault,
//! at the node's latency. Pages shared with a fork child (move_pages answers -EACCES:
//! MPOL_MF_MOVE moves only pages mapped by this process alone) and pinned pages (mlock,
//! mprotect) are left where they are. A compressed page headed for a node is first
//! installed in DRAM (it has no page to move); a staged page is first mapped back.

use super::page::{Page, PageState, F_PINNED, F_SHARED};
use super::{MoveResult, Runtime, State};
use crate::numa::{self, MOVE_BATCH, MPOL_MF_MOVE};

/// The manager's buffers for one move_pages call, kept between calls.
#[derive(Default)]
pub struct NodeBufs {
    idx: Vec<usize>,
    addrs: Vec<usize>,
    nodes: Vec<i32>,
    status: Vec<i32>,
}

impl Runtime {
    /// The NUMA node of tier `to` (0: DRAM's), or None when `to` is a compressed tier.
    pub(super) fn tier_node(&self, st: &State, to: u8) -> Option<u32> {
        if to == 0 {
            return Some(self.dram_node);
        }
        st.tiers.get(to as usize - 1).and_then(|t| t.node)
    }

    /// Does moving a page in state `s` to tier `to` take move_pages? (To a node tier, or
    /// from one to DRAM.)
    pub(super) fn is_node_move(&self, st: &State, s: PageState, to: u8) -> bool {
        let from_node = matches!(
            s,
            PageState::Node { .. } | PageState::Staged { home: 1.., .. }
        );
        (to != 0 && self.tier_node(st, to).is_some()) || (to == 0 && from_node)
    }

    /// Move the pages `pages` to tier `to` (DRAM or a node tier) with one move_pages call per
    /// MOVE_BATCH pages, under the state lock (no fault waits for these pages: they stay
    /// mapped while the kernel migrates them). `results[k]` is page k's outcome.
    pub(super) fn node_move(
        &self,
        st: &mut State,
        pages: &[usize],
        to: u8,
        b: &mut NodeBufs,
        results: &mut Vec<MoveResult>,
    ) {
        results.clear();
        results.resize(pages.len(), MoveResult::Refused);
        let Some(target) = self.tier_node(st, to) else {
            return;
        };
        let home = PageState::mapped_in(to);
        b.idx.clear();
        b.addrs.clear();
        for (k, &i) in pages.iter().enumerate() {
            if i >= st.hwm as usize || st.frozen {
                continue;
            }
            let p = st.pages[i];
            if p.flags & F_PINNED != 0 {
                continue;
            }
            if p.state == home {
                results[k] = MoveResult::AlreadyThere;
                continue;
            }
            // Bring staged and compressed pages back to their address first.
            let s = match p.state {
                PageState::Staged { .. } | PageState::Compressed { .. } => {
                    if !self.promote(st, i, None) {
                        continue;
                    }
                    st.pages[i].state
                }
                s => s,
            };
            if s == home {
                results[k] = MoveResult::Applied;
                continue;
            }
            match s {
                PageState::Resident | PageState::Node { .. } => {
                    if st.pages[i].flags & F_SHARED != 0 {
                        st.evict_busy += 1;
                        continue;
                    }
                    b.idx.push(k);
                    b.addrs.push(self.addr(i));
                }
                PageState::Absent | PageState::Hole | PageState::Unregistered => {}
                PageState::Staged { .. } | PageState::Compressed { .. } => {}
            }
        }
        for c in (0..b.addrs.len()).step_by(MOVE_BATCH) {
            let e = (c + MOVE_BATCH).min(b.addrs.len());
            let n = e - c;
            b.nodes.clear();
            b.nodes.resize(n, target as i32);
            b.status.clear();
            b.status.resize(n, i32::MIN);
            let r = numa::move_pages(0, &b.addrs[c..e], &b.nodes, &mut b.status, MPOL_MF_MOVE);
            st.move_ops += 1;
            st.node_move_calls += 1;
            if r < 0 {
                super::report(&format!(
                    "move_pages of {n} pages to node {target} failed: errno {}",
                    -r
                ));
                continue;
            }
            for j in 0..n {
                let k = b.idx[c + j];
                let i = pages[k];
                let f = st.pages[i].flags;
                let from = st.pages[i].state;
                let s = b.status[j];
                results[k] = if s == target as i32 {
                    st.set(i, Page::new(home, f));
                    st.moved_pages += 1;
                    st.node_moved_pages += 1;
                    if let PageState::Node { tier } = from {
                        st.tiers[tier as usize - 1].migr_out += 1;
                    }
                    if to > 0 {
                        st.tiers[to as usize - 1].migr_in += 1;
                    }
                    MoveResult::Applied
                } else if s == -libc::ENOENT {
                    // No page there (reclaimed, never written): it reads as zeros.
                    st.set(i, Page::new(PageState::Absent, f));
                    MoveResult::Applied
                } else if s == -libc::EACCES || s == -libc::EBUSY {
                    // Mapped by a fork child too (or pinned by the kernel): left alone.
                    st.evict_busy += 1;
                    if from == PageState::Resident {
                        st.mark_shared(i);
                    }
                    MoveResult::Refused
                } else if s == -libc::ENOMEM {
                    MoveResult::NoCapacity
                } else {
                    MoveResult::Refused
                };
            }
        }
    }
}
