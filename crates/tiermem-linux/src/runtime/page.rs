//! Per-page state: the page-state table's row, its flags, and the one place that changes
//! a row (`State::set`, which keeps the resident/mapped counts and the placement in step).

use super::{Runtime, State};
use crate::sys::PAGE;
use tiermem_core::TierId;

/// Placement of pages that hold no data (absent or holes): they are in no tier.
pub const NO_TIER: TierId = TierId(u8::MAX);

pub const K_HOLE: u8 = 0;
pub const K_ABSENT: u8 = 1;
pub const K_RESIDENT: u8 = 2;
pub const K_STAGED: u8 = 3;
pub const K_COMPRESSED: u8 = 4;

/// Pinned by mlock (the kernel refuses to move an mlocked page).
pub(super) const F_PIN_LOCK: u8 = 1;
pub(super) const F_INCOMPRESSIBLE: u8 = 2;
/// Pinned by mprotect to anything but read-write (a protection change needs the page home).
pub(super) const F_PIN_PROT: u8 = 4;
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

#[derive(Clone, Copy, Default, Debug)]
pub struct Page {
    pub kind: u8,
    pub tier: u8,
    pub flags: u8,
    pub handle: u64,
}

impl State {
    pub(super) fn set(&mut self, i: usize, p: Page) {
        let old = self.pages[i];
        if old.kind == K_RESIDENT || old.kind == K_STAGED {
            self.resident -= 1;
        }
        if p.kind == K_RESIDENT || p.kind == K_STAGED {
            self.resident += 1;
            self.max_resident = self.max_resident.max(self.resident);
            // A few arithmetic operations per installed page (a fault costs microseconds).
            let budget = self.budget_bytes() / PAGE as u64;
            self.max_excess = self.max_excess.max(self.resident.saturating_sub(budget));
        }
        if old.kind != K_HOLE && p.kind == K_HOLE {
            self.mapped -= 1;
        }
        if old.kind == K_HOLE && p.kind != K_HOLE {
            self.mapped += 1;
            self.max_mapped = self.max_mapped.max(self.mapped);
        }
        self.pages[i] = p;
        self.placement[i] = match p.kind {
            K_RESIDENT | K_STAGED => TierId(0),
            K_COMPRESSED => TierId(p.tier),
            _ => NO_TIER,
        };
    }
}

impl Runtime {
    /// Drop whatever data page `i` holds (pool object, hint slot); does not touch its PTE.
    pub(super) fn drop_data(&self, st: &mut State, i: usize) {
        let p = st.pages[i];
        match p.kind {
            K_COMPRESSED => {
                let t = &mut st.tiers[p.tier as usize - 1];
                t.pool.free(p.handle);
                t.pages -= 1;
            }
            K_STAGED => Self::free_slot(st, p.handle as u32, true),
            _ => {}
        }
    }
}
