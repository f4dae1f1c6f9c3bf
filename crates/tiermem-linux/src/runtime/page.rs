//! Per-page state: the page-state table's row, its flags, and the one place that changes
//! a row (`State::set`, which keeps the resident/mapped counts and the placement in step).

use super::{Runtime, State};
use crate::pool::Handle;
use crate::sys::PAGE;
use tiermem_core::TierId;

/// Placement of pages that hold no data (absent or holes): they are in no tier.
pub const NO_TIER: TierId = TierId::NONE;

/// Where the data of one page of the arena is (see the state diagram in `runtime/mod.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageState {
    /// Not handed out (PROT_NONE reservation); the kernel never faults to us.
    #[default]
    Hole,
    /// Mapped, no data: no PTE; a fault installs zeros.
    Absent,
    /// Mapped and not (yet) registered with the userfaultfd: the kernel serves its faults
    /// at its own cost, and its data, if any, is in DRAM. Nothing of it is tracked until the
    /// manager adopts it (`Runtime::adopt`: registered, then RESIDENT or ABSENT from
    /// /proc/self/pagemap), which it does only once it may evict (docs/runtime.md "Lazy
    /// registration").
    Unregistered,
    /// Mapped, data in DRAM (the kernel's PTE).
    Resident,
    /// Moved (UFFDIO_MOVE) to staging slot `slot` (a hint slot, or an eviction slot while
    /// the manager compresses it); an access faults and moves it back. `home` is the tier
    /// it returns to: 0 (DRAM), or the node tier it was sampled from (UFFDIO_MOVE moves
    /// the page-table entry, not the data: the page stays on its node).
    Staged { slot: u32, home: u8 },
    /// In compressed tier `tier` (1-based: tier 0 is DRAM), pool object `handle`.
    Compressed { tier: u8, handle: PoolHandle },
    /// Mapped, data on the NUMA node of node tier `tier` (the kernel's PTE; moved there
    /// with move_pages(2), runtime/node.rs).
    Node { tier: u8 },
}

/// A pool handle kept as two 32-bit halves: 4-byte alignment lets `PageState` fit in 12
/// bytes and a `Page` (state + flags) in 16, the size of the former struct of separate
/// kind/tier/flags/handle fields (`size_of::<Page>()` 16 before and after, checked below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolHandle([u32; 2]);

impl PoolHandle {
    pub fn new(h: Handle) -> Self {
        PoolHandle([h as u32, (h >> 32) as u32])
    }
    pub fn get(self) -> Handle {
        self.0[0] as u64 | (self.0[1] as u64) << 32
    }
}

impl PageState {
    /// Counted as resident DRAM: in the address space, or staged (still a DRAM page, in a
    /// staging slot).
    pub fn in_dram(self) -> bool {
        matches!(
            self,
            PageState::Resident | PageState::Staged { home: 0, .. }
        )
    }

    /// The node tier whose node holds the page's data (staged for sampling included).
    pub fn node_tier(self) -> Option<u8> {
        match self {
            PageState::Node { tier }
            | PageState::Staged {
                home: tier @ 1.., ..
            } => Some(tier),
            _ => None,
        }
    }

    /// The state of a page mapped back at its address in tier `home` (0: DRAM).
    pub fn mapped_in(home: u8) -> PageState {
        if home == 0 {
            PageState::Resident
        } else {
            PageState::Node { tier: home }
        }
    }

    /// The tier the page's data is in, as the policy sees it.
    pub fn placement(self) -> TierId {
        match self {
            PageState::Resident => TierId(0),
            PageState::Staged { home, .. } => TierId(home),
            PageState::Compressed { tier, .. } | PageState::Node { tier } => TierId(tier),
            PageState::Hole | PageState::Absent | PageState::Unregistered => NO_TIER,
        }
    }
}

/// Pinned by mlock (the kernel refuses to move an mlocked page).
pub(super) const F_PIN_LOCK: u8 = 1;
pub(super) const F_INCOMPRESSIBLE: u8 = 2;
/// Pinned by mprotect to anything but read-write (a protection change needs the page home).
pub(super) const F_PIN_PROT: u8 = 4;
/// Shared with a fork child: the kernel refuses to move it (UFFDIO_MOVE: EBUSY), so moves
/// skip it without asking again until `Runtime::recheck_shared` finds it movable.
pub(super) const F_SHARED: u8 = 8;
/// Either reason keeps the page in DRAM; each is cleared by its own undo (munlock,
/// mprotect back to read-write).
pub(super) const F_PINNED: u8 = F_PIN_LOCK | F_PIN_PROT;

/// Why a range is pinned in DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pin {
    Lock,
    Protect,
}

impl Pin {
    pub(super) fn flag(self) -> u8 {
        match self {
            Pin::Lock => F_PIN_LOCK,
            Pin::Protect => F_PIN_PROT,
        }
    }
}

/// One row of the page-state table: the state, and flags that outlive state changes (a pin
/// stays while the page moves; holes carry none).
#[derive(Clone, Copy, Default, Debug)]
pub struct Page {
    pub state: PageState,
    pub flags: u8,
}

const _: () = assert!(std::mem::size_of::<Page>() <= 16);

impl Page {
    pub fn new(state: PageState, flags: u8) -> Self {
        Page { state, flags }
    }

    /// In DRAM and refused by a compressed tier (`State::incompressible` counts these).
    pub fn incompressible_in_dram(&self) -> bool {
        self.state.in_dram() && self.flags & F_INCOMPRESSIBLE != 0
    }
}

impl State {
    pub(super) fn set(&mut self, i: usize, p: Page) {
        let old = self.pages[i].state;
        let new = p.state;
        if self.pages[i].incompressible_in_dram() {
            self.incompressible = self.incompressible.saturating_sub(1);
        }
        if old.in_dram() {
            self.resident -= 1;
        }
        if new.in_dram() {
            self.resident += 1;
            self.max_resident = self.max_resident.max(self.resident);
            // A few arithmetic operations per installed page (a fault costs microseconds).
            let budget = self.budget_bytes() / PAGE as u64;
            self.max_excess = self.max_excess.max(self.resident.saturating_sub(budget));
        }
        // Node tiers' page counts live here (a compressed tier's move with its pool object).
        if let Some(t) = old.node_tier() {
            self.tiers[t as usize - 1].pages -= 1;
        }
        if let Some(t) = new.node_tier() {
            self.tiers[t as usize - 1].pages += 1;
        }
        if old == PageState::Unregistered {
            self.unregistered_pages -= 1;
        }
        if new == PageState::Unregistered {
            self.unregistered_pages += 1;
        }
        let (was_hole, is_hole) = (old == PageState::Hole, new == PageState::Hole);
        if !was_hole && is_hole {
            self.mapped -= 1;
        }
        if was_hole && !is_hole {
            self.mapped += 1;
            self.max_mapped = self.max_mapped.max(self.mapped);
        }
        // Sharing is a property of the PTE a fork copied: any other state means the page
        // left it (a page installed later is the process's own).
        let flags = if matches!(new, PageState::Resident | PageState::Node { .. }) {
            p.flags
        } else {
            p.flags & !F_SHARED
        };
        self.pages[i] = Page::new(new, flags);
        if self.pages[i].incompressible_in_dram() {
            self.incompressible += 1;
        }
        if old.placement() != new.placement() {
            self.log_placement(i);
            let below = |t: TierId| t != TierId(0) && t != NO_TIER;
            if below(old.placement()) && !below(new.placement()) {
                self.left_tiers += 1;
            }
        }
    }

    /// The kernel answered "no page" (ENOENT) when asked to move a page held resident, and
    /// the check of the answer (`uffd::moved_anyway`) found it right. The page is left as it
    /// is and the move refused: a page that truly has no entry reads as zeros through the
    /// fault path (`serve`, which reports it). Under tests/c/alloc_race.c that answer came
    /// for pages the program had filled: an earlier move had taken their data to a slot and
    /// been answered EEXIST (a Linux 6.18 misreport), and the slot was dropped as stale;
    /// declaring the page empty (ABSENT) here, as before, only hid the loss.
    pub(super) fn no_page(&mut self) {
        self.evict_no_page += 1;
    }

    /// Flag page `i`, in DRAM, as refused by a compressed tier: moves to a compressed tier
    /// skip it until it is installed again (its data may change).
    pub(super) fn mark_incompressible(&mut self, i: usize) {
        let p = &mut self.pages[i];
        if p.state.in_dram() && p.flags & F_INCOMPRESSIBLE == 0 {
            self.incompressible += 1;
        }
        p.flags |= F_INCOMPRESSIBLE;
    }

    /// Flag page `i` shared with a fork child (the kernel refused to move it): moves skip it
    /// until `Runtime::recheck_shared` finds it mapped once again. The only way the flag is
    /// set, so `maybe_shared` tells the recheck whether any page can carry it.
    pub(super) fn mark_shared(&mut self, i: usize) {
        self.pages[i].flags |= F_SHARED;
        self.maybe_shared = true;
    }

    /// Note that page `i` changed tier (see `placement_log`).
    pub(super) fn log_placement(&mut self, i: usize) {
        if self.placement_log_full {
            return;
        }
        // Past an eighth of the table a rebuild costs less than the log.
        if self.placement_log.len() >= (self.pages.len() / 8).max(4096) {
            self.placement_log.clear();
            self.placement_log_full = true;
            return;
        }
        self.placement_log.push(i as u32);
    }

    /// Bring a placement mirror (one tier per page, as policies see it) up to date with the
    /// changes since the last call: O(changes), not O(pages), under the state lock.
    pub fn take_placement_changes(&mut self, mirror: &mut Vec<TierId>) {
        if mirror.len() < self.pages.len() {
            mirror.resize(self.pages.len(), NO_TIER);
        }
        if std::mem::take(&mut self.placement_log_full) {
            for (m, p) in mirror.iter_mut().zip(&self.pages) {
                *m = p.state.placement();
            }
        } else {
            for &i in &self.placement_log {
                mirror[i as usize] = self.pages[i as usize].state.placement();
            }
        }
        self.placement_log.clear();
    }
}

impl Runtime {
    /// Drop whatever data page `i` holds (pool object, hint slot); does not touch its PTE.
    pub(super) fn drop_data(&self, st: &mut State, i: usize) {
        match st.pages[i].state {
            PageState::Compressed { tier, handle } => {
                let t = &mut st.tiers[tier as usize - 1];
                t.pool.free(handle.get());
                t.pages -= 1;
            }
            PageState::Staged { slot, .. } => Self::free_slot(st, slot, true),
            PageState::Hole
            | PageState::Absent
            | PageState::Unregistered
            | PageState::Resident
            | PageState::Node { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_handle_round_trips() {
        for h in [
            0,
            1,
            u32::MAX as u64,
            1 << 32,
            0x1234_5678_9abc_def0,
            u64::MAX,
        ] {
            assert_eq!(PoolHandle::new(h).get(), h);
        }
    }

    #[test]
    fn page_row_is_16_bytes() {
        // The former struct (kind, tier, flags: u8; handle: u64) was 16 bytes.
        assert_eq!(std::mem::size_of::<Page>(), 16);
        assert_eq!(Page::default().state, PageState::Hole);
        assert_eq!(Page::default().flags, 0);
    }
}
