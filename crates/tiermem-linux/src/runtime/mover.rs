//! Page moves between DRAM and the compressed tiers: the manager's interface to the pages.
//!
//! The interface (what `backend.rs` calls, and what another mover, e.g. one that moves
//! pages between NUMA nodes with move_pages(2), would offer beside this one):
//!
//! ```text
//!   evict(i, to, slot, out)       page i to lower tier `to` (>= 1), through staging slot
//!                                 `slot` of the current batch; takes the state lock itself
//!   move_page(st, i, to, slot)    every other move (to DRAM, tier to tier), under the lock
//!   end_batch(st)                 after each batch of at most EVICT_BATCH pages
//! ```
//!
//! Each answers a `MoveResult`. This mover keeps evicted pages compressed in pools.

use super::page::{Page, PageState, PoolHandle, F_INCOMPRESSIBLE, F_PINNED, F_SHARED};
use super::{lock, report, Runtime, State, EVICT_BATCH, HINT_SLOTS};
use crate::sys::{self, PAGE};
use crate::uffd::Op;

impl Runtime {
    /// Move page `i` to `to` (0 = DRAM, k = compressed tier k) when that needs no
    /// eviction: promotion to DRAM, or tier to tier. A page in DRAM is never evicted here
    /// (`evict` does that, and hands over only the pages it refuses to stage: pinned ones,
    /// or any while frozen, which are refused below before the state is looked at): the
    /// request is refused.
    pub fn move_page(&self, st: &mut State, i: usize, to: u8, _slot: usize) -> MoveResult {
        if i >= st.hwm as usize {
            return MoveResult::Refused;
        }
        let p = st.pages[i];
        if p.flags & F_PINNED != 0 || st.frozen {
            return MoveResult::Refused;
        }
        match (p.state, to) {
            (PageState::Resident | PageState::Staged { .. }, 0) => MoveResult::AlreadyThere,
            // Eviction is `evict`'s (see above).
            (PageState::Resident | PageState::Staged { .. }, _) => MoveResult::Refused,
            (PageState::Compressed { tier, .. }, t) if t == tier => MoveResult::AlreadyThere,
            (PageState::Compressed { .. }, 0) => {
                if self.promote(st, i, None) {
                    MoveResult::Applied
                } else {
                    MoveResult::Refused
                }
            }
            (PageState::Compressed { tier, handle }, t) if (t as usize) <= st.tiers.len() => {
                // Tier to tier: decompress into a private buffer, recompress; the program's
                // address space is not involved.
                let (from, h) = (tier as usize - 1, handle.get());
                let mut buf = std::mem::take(&mut st.pbuf);
                let ok = st.tiers[from]
                    .codec
                    .decompress(st.tiers[from].pool.get(h), &mut buf);
                let r = if ok {
                    self.store(st, &buf, t as usize - 1)
                } else {
                    None
                };
                st.pbuf = buf;
                match r {
                    Some(nh) => {
                        let f = &mut st.tiers[from];
                        f.pool.free(h);
                        f.pages -= 1;
                        f.migr_out += 1;
                        st.tiers[t as usize - 1].pages += 1;
                        let state = PageState::Compressed {
                            tier: t,
                            handle: PoolHandle::new(nh),
                        };
                        st.set(i, Page::new(state, p.flags));
                        MoveResult::Applied
                    }
                    None => MoveResult::NoCapacity,
                }
            }
            (PageState::Compressed { .. } | PageState::Hole | PageState::Absent, _) => {
                MoveResult::Refused
            }
        }
    }

    /// Evict page `i` to compressed tier `to` without holding the state lock while it is
    /// compressed, so a fault never waits for a compression:
    ///
    /// ```text
    ///   lock:    move the page out of the address space into eviction slot `slot`
    ///            (state STAGED: an access now is a hint fault that moves it back home)
    ///   no lock: read the slot and compress into `out`
    ///   lock:    still STAGED in that slot? -> store, COMPRESSED; else discard the result
    /// ```
    /// Only the manager thread stages pages, so a slot still holding the page at commit
    /// time was not touched in between (every move back happens under the lock and changes
    /// the state). A read racing with a move back faults on the empty slot and gets zeros
    /// (`serve`); that result is discarded. Other moves (promotion, tier to tier) go through
    /// `move_page`.
    pub fn evict(&self, i: usize, to: u8, slot: usize, out: &mut Vec<u8>) -> MoveResult {
        let (hs, codec, max, was_resident) = {
            let mut st = lock(self);
            if i >= st.hwm as usize || to == 0 || to as usize > st.tiers.len() {
                return self.move_page(&mut st, i, to, slot);
            }
            let p = st.pages[i];
            if !p.state.in_dram() || p.flags & F_PINNED != 0 || st.frozen {
                return self.move_page(&mut st, i, to, slot);
            }
            if p.flags & F_INCOMPRESSIBLE != 0 {
                return MoveResult::NoCapacity;
            }
            if p.flags & F_SHARED != 0 && p.state == PageState::Resident {
                st.evict_busy += 1;
                return MoveResult::Refused;
            }
            let hs = if let PageState::Staged { slot } = p.state {
                slot as usize
            } else {
                let es = HINT_SLOTS + slot;
                let s = self.hint_base + es * PAGE;
                match self.uffd.mv(s, self.addr(i), PAGE, false) {
                    Op::Done => {
                        st.hint_owner[es] = (i as u32, sys::now_ns());
                        st.set(i, Page::new(PageState::Staged { slot: es as u32 }, p.flags));
                        es
                    }
                    Op::NoEnt => {
                        st.set(i, Page::new(PageState::Absent, p.flags));
                        return MoveResult::Applied;
                    }
                    Op::Busy => {
                        st.evict_busy += 1;
                        st.pages[i].flags |= F_SHARED;
                        return MoveResult::Refused;
                    }
                    other => {
                        report(&format!(
                            "evict move of {:#x} failed: {other:?}",
                            self.addr(i)
                        ));
                        // SAFETY: drops whatever the failed move left in our own eviction slot `s`.
                        unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                        return MoveResult::Refused;
                    }
                }
            };
            let t = &st.tiers[to as usize - 1];
            (hs, t.codec, t.max_bytes, p.state == PageState::Resident)
        };
        let data =
            // SAFETY: slot `hs` of our staging mapping holds this page (moved there under the
            // lock); it is only read, and a racing move back leaves a zero page (see above).
            unsafe { std::slice::from_raw_parts((self.hint_base + hs * PAGE) as *const u8, PAGE) };
        let zero = is_zero(data);
        let packed = !zero && codec.compress(data, out, max).is_some();
        let mut st = lock(self);
        let j = st.hint_owner[hs].0 as usize;
        let p = if j < st.hwm as usize {
            st.pages[j]
        } else {
            Page::default()
        };
        if p.state != (PageState::Staged { slot: hs as u32 }) {
            // Moved back home (or unmapped, or brought home for a fork) meanwhile.
            if hs < HINT_SLOTS {
                st.hint_dirty.push(hs as u32); // our read may have left a zero page there
            }
            return MoveResult::Refused;
        }
        let ti = to as usize - 1;
        if zero {
            Self::free_slot(&mut st, hs as u32, true);
            st.set(j, Page::new(PageState::Absent, p.flags));
            return MoveResult::Applied;
        }
        match if packed {
            st.tiers[ti].pool.store(out)
        } else {
            None
        } {
            Some(h) => {
                Self::free_slot(&mut st, hs as u32, true);
                let t = &mut st.tiers[ti];
                t.pages += 1;
                t.migr_in += 1;
                let state = PageState::Compressed {
                    tier: to,
                    handle: PoolHandle::new(h),
                };
                st.set(j, Page::new(state, p.flags));
                MoveResult::Applied
            }
            None => {
                st.tiers[ti].rejected += 1;
                if was_resident {
                    self.promote(&mut st, j, None);
                }
                st.pages[j].flags |= F_INCOMPRESSIBLE;
                MoveResult::NoCapacity
            }
        }
    }

    fn store(&self, st: &mut State, data: &[u8], ti: usize) -> Option<u64> {
        let mut out = std::mem::take(&mut st.cbuf);
        let t = &mut st.tiers[ti];
        let r = t
            .codec
            .compress(data, &mut out, t.max_bytes)
            .and_then(|_| t.pool.store(&out));
        st.cbuf = out;
        r
    }

    /// Release the eviction staging slots (one system call per batch).
    pub fn end_batch(&self, st: &mut State) {
        // SAFETY: drops the batch's eviction slots of our staging mapping; every page there was
        // stored or moved back.
        unsafe { sys::madvise(self.evict_base, EVICT_BATCH * PAGE, libc::MADV_DONTNEED) };
        self.flush_hint_dirty(st);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveResult {
    Applied,
    AlreadyThere,
    NoCapacity,
    Refused,
}

fn is_zero(d: &[u8]) -> bool {
    // SAFETY: every bit pattern is a valid u64; align_to only splits the slice.
    let (pre, mid, post) = unsafe { d.align_to::<u64>() };
    pre.iter().all(|&b| b == 0) && mid.iter().all(|&w| w == 0) && post.iter().all(|&b| b == 0)
}
