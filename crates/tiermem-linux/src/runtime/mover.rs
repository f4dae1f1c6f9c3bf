//! Page moves between DRAM and the compressed tiers: the manager's interface to the pages
//! (`move_page`, `evict`, `end_batch`, each answering a `MoveResult`).

use super::page::{Page, F_INCOMPRESSIBLE, F_PINNED, K_ABSENT, K_COMPRESSED, K_RESIDENT, K_STAGED};
use super::{lock, report, Runtime, State, HINT_SLOTS};
use crate::sys::{self, PAGE};
use crate::uffd::Op;

/// Eviction batch: pages moved to the eviction staging area before one DONTNEED frees them.
pub const EVICT_BATCH: usize = 32;

impl Runtime {
    /// Move page `i` to `to` (0 = DRAM, k = compressed tier k). `slot` is the eviction
    /// staging slot to use. Returns (applied, already_there, no_capacity).
    pub fn move_page(&self, st: &mut State, i: usize, to: u8, slot: usize) -> MoveResult {
        if i >= st.hwm as usize {
            return MoveResult::Refused;
        }
        let p = st.pages[i];
        if p.flags & F_PINNED != 0 || st.frozen {
            return MoveResult::Refused;
        }
        match (p.kind, to) {
            (K_RESIDENT, 0) | (K_STAGED, 0) => MoveResult::AlreadyThere,
            (K_COMPRESSED, t) if t == p.tier => MoveResult::AlreadyThere,
            (K_COMPRESSED, 0) => {
                if self.promote(st, i, None) {
                    MoveResult::Applied
                } else {
                    MoveResult::Refused
                }
            }
            (K_COMPRESSED, t) if (t as usize) <= st.tiers.len() => {
                // Tier to tier: decompress into a private buffer, recompress; the program's
                // address space is not involved.
                let (from, h) = (p.tier as usize - 1, p.handle);
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
                        st.set(
                            i,
                            Page {
                                kind: K_COMPRESSED,
                                tier: t,
                                flags: p.flags,
                                handle: nh,
                            },
                        );
                        MoveResult::Applied
                    }
                    None => MoveResult::NoCapacity,
                }
            }
            (K_RESIDENT, t) | (K_STAGED, t) if t >= 1 && (t as usize) <= st.tiers.len() => {
                if p.flags & F_INCOMPRESSIBLE != 0 {
                    return MoveResult::NoCapacity;
                }
                let a = self.addr(i);
                let src = if p.kind == K_STAGED {
                    self.hint_base + p.handle as usize * PAGE
                } else {
                    let s = self.evict_base + slot * PAGE;
                    match self.uffd.mv(s, a, PAGE, false) {
                        Op::Done => s,
                        Op::NoEnt => {
                            // No PTE: the kernel dropped it (zero semantics).
                            st.set(
                                i,
                                Page {
                                    kind: K_ABSENT,
                                    flags: p.flags,
                                    ..Page::default()
                                },
                            );
                            return MoveResult::Applied;
                        }
                        Op::Busy => {
                            st.evict_busy += 1;
                            return MoveResult::Refused;
                        }
                        other => {
                            report(&format!("evict move of {a:#x} failed: {other:?}"));
                            unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                            return MoveResult::Refused;
                        }
                    }
                };
                // The page is out of the program's address space: read it at leisure.
                let data = unsafe { std::slice::from_raw_parts(src as *const u8, PAGE) };
                if is_zero(data) {
                    self.release_src(st, &p, src);
                    st.set(
                        i,
                        Page {
                            kind: K_ABSENT,
                            flags: p.flags,
                            ..Page::default()
                        },
                    );
                    return MoveResult::Applied;
                }
                let ti = t as usize - 1;
                match self.store(st, data, ti) {
                    Some(h) => {
                        self.release_src(st, &p, src);
                        let tt = &mut st.tiers[ti];
                        tt.pages += 1;
                        tt.migr_in += 1;
                        st.set(
                            i,
                            Page {
                                kind: K_COMPRESSED,
                                tier: t,
                                flags: p.flags,
                                handle: h,
                            },
                        );
                        MoveResult::Applied
                    }
                    None => {
                        st.tiers[ti].rejected += 1;
                        // Put it back where it was.
                        if p.kind == K_RESIDENT {
                            let op = self.uffd.mv(a, src, PAGE, true);
                            if op != Op::Done {
                                report(&format!("restore of incompressible {a:#x} failed: {op:?}"));
                            }
                        }
                        st.pages[i].flags |= F_INCOMPRESSIBLE;
                        MoveResult::NoCapacity
                    }
                }
            }
            _ => MoveResult::Refused,
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
            if p.kind != K_RESIDENT && p.kind != K_STAGED || p.flags & F_PINNED != 0 || st.frozen {
                return self.move_page(&mut st, i, to, slot);
            }
            if p.flags & F_INCOMPRESSIBLE != 0 {
                return MoveResult::NoCapacity;
            }
            let hs = if p.kind == K_STAGED {
                p.handle as usize
            } else {
                let es = HINT_SLOTS + slot;
                let s = self.hint_base + es * PAGE;
                match self.uffd.mv(s, self.addr(i), PAGE, false) {
                    Op::Done => {
                        st.hint_owner[es] = (i as u32, sys::now_ns());
                        st.set(
                            i,
                            Page {
                                kind: K_STAGED,
                                flags: p.flags,
                                tier: 0,
                                handle: es as u64,
                            },
                        );
                        es
                    }
                    Op::NoEnt => {
                        st.set(
                            i,
                            Page {
                                kind: K_ABSENT,
                                flags: p.flags,
                                ..Page::default()
                            },
                        );
                        return MoveResult::Applied;
                    }
                    Op::Busy => {
                        st.evict_busy += 1;
                        return MoveResult::Refused;
                    }
                    other => {
                        report(&format!(
                            "evict move of {:#x} failed: {other:?}",
                            self.addr(i)
                        ));
                        unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                        return MoveResult::Refused;
                    }
                }
            };
            let t = &st.tiers[to as usize - 1];
            (hs, t.codec, t.max_bytes, p.kind == K_RESIDENT)
        };
        let data =
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
        if p.kind != K_STAGED || p.handle != hs as u64 {
            // Moved back home (or unmapped, or brought home for a fork) meanwhile.
            if hs < HINT_SLOTS {
                st.hint_dirty.push(hs as u32); // our read may have left a zero page there
            }
            return MoveResult::Refused;
        }
        let ti = to as usize - 1;
        if zero {
            Self::free_slot(&mut st, hs as u32, true);
            st.set(
                j,
                Page {
                    kind: K_ABSENT,
                    flags: p.flags,
                    ..Page::default()
                },
            );
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
                st.set(
                    j,
                    Page {
                        kind: K_COMPRESSED,
                        tier: to,
                        flags: p.flags,
                        handle: h,
                    },
                );
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

    fn release_src(&self, st: &mut State, p: &Page, src: usize) {
        if p.kind == K_STAGED {
            Self::free_slot(st, p.handle as u32, true);
        } else {
            let _ = src; // eviction slots are released in one DONTNEED per batch
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
    let (pre, mid, post) = unsafe { d.align_to::<u64>() };
    pre.iter().all(|&b| b == 0) && mid.iter().all(|&w| w == 0) && post.iter().all(|&b| b == 0)
}
