//! Page moves between DRAM and the compressed tiers: the manager's interface to the pages.
//!
//! The interface (what `backend.rs` calls, and what another mover, e.g. one that moves
//! pages between NUMA nodes with move_pages(2), would offer beside this one):
//!
//! ```text
//!   evict(i, to, slot, out)       page i to lower tier `to` (>= 1), through staging slot
//!                                 `slot` of the current batch; takes the state lock itself
//!   move_page(st, i, to, slot)    every other move (to DRAM, to a node), under the lock
//!   end_batch(st)                 after each batch of at most EVICT_BATCH pages
//!   move_range(i0, n, to, bufs)   the n pages from i0 (n <= EVICT_SLOTS) as one operation:
//!                                 one UFFDIO_MOVE / UFFDIO_COPY per run of pages in the
//!                                 same state (one for a range moved whole)
//! ```
//!
//! Each answers a `MoveResult`. This mover keeps evicted pages compressed in pools.

use super::page::{Page, PageState, PoolHandle, F_INCOMPRESSIBLE, F_PINNED, F_SHARED};
use super::{lock, report, NodeBufs, Runtime, State, EVICT_BATCH, EVICT_SLOTS, HINT_SLOTS};
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
        if self.is_node_move(st, p.state, to) {
            let mut r = Vec::with_capacity(1);
            self.node_move(st, &[i], to, &mut NodeBufs::default(), &mut r);
            return r[0];
        }
        match (p.state, to) {
            (PageState::Resident | PageState::Staged { .. }, 0) => MoveResult::AlreadyThere,
            // Eviction is `evict`'s (see above).
            (PageState::Resident | PageState::Staged { .. }, _) => MoveResult::Refused,
            (PageState::Compressed { tier, .. }, t) if t == tier => MoveResult::AlreadyThere,
            (PageState::Compressed { .. }, 0) => {
                st.move_ops += 1;
                if self.promote(st, i, None) {
                    st.moved_pages += 1;
                    MoveResult::Applied
                } else {
                    MoveResult::Refused
                }
            }
            // A node page to a compressed tier, and tier to tier (`retier`), go through
            // `evict`.
            (
                PageState::Compressed { .. }
                | PageState::Hole
                | PageState::Absent
                | PageState::Unregistered
                | PageState::Node { .. },
                _,
            ) => MoveResult::Refused,
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
    /// (`serve`); that result is discarded. A compressed page to another compressed tier
    /// goes through `retier` (the codecs without the lock too); promotions through
    /// `move_page`.
    pub fn evict(&self, i: usize, to: u8, slot: usize, out: &mut Vec<u8>) -> MoveResult {
        let (hs, codec, max, was_resident) = {
            let mut st = lock(self);
            if i >= st.hwm as usize || to == 0 || to as usize > st.tiers.len() {
                return self.move_page(&mut st, i, to, slot);
            }
            if self.tier_node(&st, to).is_some() {
                return self.move_page(&mut st, i, to, slot);
            }
            // A page on a node comes back to DRAM before it is compressed (a UFFDIO_MOVE
            // to the staging slot would keep it on its node).
            if matches!(
                st.pages[i].state,
                PageState::Node { .. } | PageState::Staged { home: 1.., .. }
            ) {
                let r = self.move_page(&mut st, i, 0, slot);
                if r != MoveResult::Applied {
                    return r;
                }
            }
            let p = st.pages[i];
            if let PageState::Compressed { tier, handle } = p.state {
                if tier != to && p.flags & F_PINNED == 0 && !st.frozen {
                    // Tier to tier: the object is copied out under the lock (a fault may
                    // free it), the codecs run without it.
                    let from = tier as usize - 1;
                    let object = st.tiers[from].pool.get(handle.get()).to_vec();
                    let (src, dst) = (&st.tiers[from], &st.tiers[to as usize - 1]);
                    let codecs = (src.codec, dst.codec, dst.max_bytes);
                    drop(st);
                    return self.retier(i, p.state, to, &object, codecs, out);
                }
            }
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
            let hs = if let PageState::Staged { slot, .. } = p.state {
                slot as usize
            } else {
                let es = HINT_SLOTS + slot;
                let s = self.hint_base + es * PAGE;
                st.move_ops += 1;
                let mut op = self.uffd.mv(s, self.addr(i), PAGE, false);
                if op == Op::Exists {
                    // The slot has an entry and the page is still home (`mv` checks that a
                    // misreported move is taken as done): a stale fault message for this
                    // slot (a read that raced a move back, retried by the kernel) was served
                    // with a zeroed page after the last batch released it. Drop it, move again.
                    // SAFETY: drops the page in our own eviction slot `s`, which holds no
                    // staged page (the move into it just failed).
                    unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                    st.move_ops += 1;
                    op = self.uffd.mv(s, self.addr(i), PAGE, false);
                }
                match op {
                    Op::Done => {
                        st.moved_pages += 1;
                        st.hint_owner[es] = (i as u32, sys::now_ns());
                        let staged = PageState::Staged {
                            slot: es as u32,
                            home: 0,
                        };
                        st.set(i, Page::new(staged, p.flags));
                        es
                    }
                    // No page at a page we hold as resident: see `State::no_page`.
                    Op::NoEnt => {
                        st.no_page();
                        return MoveResult::Refused;
                    }
                    Op::Busy => {
                        st.evict_busy += 1;
                        st.mark_shared(i);
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
        crate::inject::panic_at(crate::inject::Kind::ManagerPanic);
        let data =
            // SAFETY: slot `hs` of our staging mapping holds this page (moved there under the
            // lock); it is only read, and a racing move back leaves a zero page (see above).
            unsafe { std::slice::from_raw_parts((self.hint_base + hs * PAGE) as *const u8, PAGE) };
        let zero = is_zero(data);
        let packed = !zero && codec.compress(data, out, max).is_some();
        let mut st = lock(self);
        self.commit_staged(
            &mut st,
            hs,
            to,
            zero,
            packed.then_some(&out[..]),
            was_resident,
        )
    }

    /// A compressed page from its tier to compressed tier `to` (decompressed with `src`,
    /// recompressed with `dst` below `max` bytes; copied as it is when both are the same
    /// codec), the codecs run without the lock
    /// (deflate takes ~60 µs a page: under the lock, every fault of a waterfall's window
    /// waited behind tier-to-tier moves). `object` is the page's compressed bytes,
    /// copied out of its pool under the lock while the page was in state `before`. The
    /// result is committed only if the page is still in `before` (same tier, same handle):
    /// only the manager thread, which runs this, puts pages into compressed tiers, so a
    /// page that left its tier meanwhile (a fault, a promotion of a fork) cannot be back
    /// under the same handle; its new copy wins and this one is discarded.
    fn retier(
        &self,
        i: usize,
        before: PageState,
        to: u8,
        object: &[u8],
        (src, dst, max): (crate::codec::Codec, crate::codec::Codec, usize),
        out: &mut Vec<u8>,
    ) -> MoveResult {
        let packed = if src == dst {
            // Same codec (tiers that differ in allocator or backing, as TierScape's three lz4
            // tiers): the object already is the destination codec's output; only the
            // allocator's packing changes, so no codec runs.
            out.clear();
            out.extend_from_slice(object);
            object.len() < max
        } else {
            // A buffer of its own: the state's `pbuf` is the fault thread's while the lock
            // is free.
            let mut page = vec![0u8; PAGE];
            src.decompress(object, &mut page) && dst.compress(&page, out, max).is_some()
        };
        let mut st = lock(self);
        let PageState::Compressed { tier, handle } = before else {
            return MoveResult::Refused;
        };
        // Frozen meanwhile: a fork is bringing every page home; no move lands now.
        if i >= st.hwm as usize || st.pages[i].state != before || st.frozen {
            return MoveResult::Refused;
        }
        let stored = if packed {
            st.tiers[to as usize - 1].pool.store(&out[..])
        } else {
            None
        };
        let Some(nh) = stored else {
            return MoveResult::NoCapacity;
        };
        let f = &mut st.tiers[tier as usize - 1];
        f.pool.free(handle.get());
        f.pages -= 1;
        f.migr_out += 1;
        let t = &mut st.tiers[to as usize - 1];
        t.pages += 1;
        t.migr_in += 1;
        let flags = st.pages[i].flags;
        let state = PageState::Compressed {
            tier: to,
            handle: PoolHandle::new(nh),
        };
        st.set(i, Page::new(state, flags));
        MoveResult::Applied
    }

    /// The second half of an eviction, under the lock: the page compressed (or found all
    /// zero) from staging slot `hs` is stored in tier `to`, if it is still staged there.
    fn commit_staged(
        &self,
        st: &mut State,
        hs: usize,
        to: u8,
        zero: bool,
        packed: Option<&[u8]>,
        was_resident: bool,
    ) -> MoveResult {
        let j = st.hint_owner[hs].0 as usize;
        let p = if j < st.hwm as usize {
            st.pages[j]
        } else {
            Page::default()
        };
        if !matches!(p.state, PageState::Staged { slot, .. } if slot == hs as u32) {
            // Moved back home (or unmapped, or brought home for a fork) meanwhile.
            if hs < HINT_SLOTS {
                st.hint_dirty.push(hs as u32); // our read may have left a zero page there
            }
            return MoveResult::Refused;
        }
        let ti = to as usize - 1;
        if zero {
            Self::free_slot(st, hs as u32, true);
            st.set(j, Page::new(PageState::Absent, p.flags));
            return MoveResult::Applied;
        }
        match packed.and_then(|c| st.tiers[ti].pool.store(c)) {
            Some(h) => {
                Self::free_slot(st, hs as u32, true);
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
                    self.promote(st, j, None);
                }
                st.mark_incompressible(j);
                MoveResult::NoCapacity
            }
        }
    }

    /// Release the eviction staging slots (one system call per batch).
    pub fn end_batch(&self, st: &mut State) {
        // SAFETY: drops the batch's eviction slots of our staging mapping; every page there was
        // stored or moved back.
        unsafe { sys::madvise(self.evict_base, EVICT_BATCH * PAGE, libc::MADV_DONTNEED) };
        self.flush_hint_dirty(st);
    }
}

/// What happened to the pages of one range move, counted as `MoveResult`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeOutcome {
    pub applied: u64,
    pub already_there: u64,
    pub no_capacity: u64,
    pub refused: u64,
}

impl RangeOutcome {
    fn count(&mut self, r: MoveResult) {
        match r {
            MoveResult::Applied => self.applied += 1,
            MoveResult::AlreadyThere => self.already_there += 1,
            MoveResult::NoCapacity => self.no_capacity += 1,
            MoveResult::Refused => self.refused += 1,
        }
    }
}

/// The manager's buffers for range moves, kept between moves.
#[derive(Default)]
pub struct RangeBufs {
    /// (page, eviction slot) of each page staged by the range's UFFDIO_MOVE.
    staged: Vec<(usize, usize)>,
    /// Pages of the range that move one by one (staged for sampling, or in another
    /// compressed tier): no page-table operation is saved on them.
    single: Vec<usize>,
    /// One compressed output per staged page (None: all zero / did not compress).
    outs: Vec<Vec<u8>>,
    /// The decompressed run a range promotion installs with one UFFDIO_COPY.
    run: Vec<u8>,
    /// Pages of a range or batch that move with move_pages, and their outcomes.
    node: NodeBufs,
    node_pages: Vec<usize>,
    node_results: Vec<MoveResult>,
}

impl Runtime {
    /// Move the `n` pages from page `i0` (`n` <= EVICT_SLOTS; the engine checks alignment)
    /// to tier `to` as one operation where the kernel allows it:
    ///
    /// * to a compressed tier: one UFFDIO_MOVE stages each run of resident pages in the
    ///   eviction slots side by side (under the lock); they are compressed without it, and
    ///   committed under it as `evict` does page by page;
    /// * to DRAM: each run of compressed pages is decompressed into one buffer and installed
    ///   with one UFFDIO_COPY (under the lock: a fault on the range waits for the whole run).
    ///
    /// A page the kernel refuses ends its run there (the rest goes on in a new call), as do
    /// pages in another state; those that move alone (staged for sampling, in another
    /// compressed tier) go through `evict` / `move_page`.
    pub fn move_range(&self, i0: usize, n: usize, to: u8, bufs: &mut RangeBufs) -> RangeOutcome {
        debug_assert!(n <= EVICT_SLOTS);
        let n = n.min(EVICT_SLOTS);
        let mut out = RangeOutcome::default();
        {
            let st = lock(self);
            if i0 + n > st.hwm as usize || to as usize > st.tiers.len() || st.frozen {
                out.refused = n as u64;
                return out;
            }
        }
        // Node tiers: the range's pages in one move_pages call (to a node tier: all of
        // them; to DRAM: those on a node, before the compressed ones are installed).
        let mut from_nodes = 0;
        {
            let mut st = lock(self);
            let to_node = to != 0 && self.tier_node(&st, to).is_some();
            bufs.node_pages.clear();
            bufs.node_pages.extend(
                (i0..i0 + n).filter(|&i| to_node || self.is_node_move(&st, st.pages[i].state, to)),
            );
            if !bufs.node_pages.is_empty() {
                let pages = std::mem::take(&mut bufs.node_pages);
                self.node_move(&mut st, &pages, to, &mut bufs.node, &mut bufs.node_results);
                for &r in &bufs.node_results {
                    out.count(r);
                    from_nodes += (r == MoveResult::Applied) as u64;
                }
                bufs.node_pages = pages;
            }
            if to_node {
                return out;
            }
        }
        if to == 0 {
            let mut st = lock(self);
            self.promote_range(&mut st, i0, n, bufs, &mut out);
            // The pages just brought from their nodes were counted once already.
            out.already_there = out.already_there.saturating_sub(from_nodes);
        } else {
            self.evict_range(i0, n, to, bufs, &mut out);
        }
        {
            let mut st = lock(self);
            // SAFETY: drops the range's eviction slots of our staging mapping; every page
            // there was stored or moved back (the single moves below reuse slot 0).
            unsafe { sys::madvise(self.evict_base, n * PAGE, libc::MADV_DONTNEED) };
            self.flush_hint_dirty(&mut st);
        }
        if bufs.single.is_empty() {
            return out;
        }
        let mut cbuf = std::mem::take(&mut bufs.run);
        for k in 0..bufs.single.len() {
            let i = bufs.single[k];
            let r = if to == 0 {
                let mut st = lock(self);
                self.move_page(&mut st, i, to, 0)
            } else {
                self.evict(i, to, 0, &mut cbuf)
            };
            out.count(r);
            let mut st = lock(self);
            self.end_batch(&mut st);
        }
        bufs.run = cbuf;
        out
    }

    /// The moves of `batch` that take move_pages (to a node tier, or from one to DRAM):
    /// one call per target tier. The other moves are left in `rest`, in order.
    pub fn node_batch(
        &self,
        batch: &[(usize, u8)],
        bufs: &mut RangeBufs,
        rest: &mut Vec<(usize, u8)>,
    ) -> RangeOutcome {
        let mut out = RangeOutcome::default();
        rest.clear();
        let mut st = lock(self);
        if !self.has_node_tiers {
            rest.extend_from_slice(batch);
            return out;
        }
        let mut targets: Vec<u8> = Vec::new();
        for &(i, to) in batch {
            let s = st.pages.get(i).map(|p| p.state).unwrap_or_default();
            if self.is_node_move(&st, s, to) {
                if !targets.contains(&to) {
                    targets.push(to);
                }
            } else {
                rest.push((i, to));
            }
        }
        for to in targets {
            bufs.node_pages.clear();
            bufs.node_pages.extend(
                batch
                    .iter()
                    .filter(|&&(i, t)| {
                        t == to
                            && self.is_node_move(
                                &st,
                                st.pages.get(i).map(|p| p.state).unwrap_or_default(),
                                t,
                            )
                    })
                    .map(|&(i, _)| i),
            );
            let pages = std::mem::take(&mut bufs.node_pages);
            self.node_move(&mut st, &pages, to, &mut bufs.node, &mut bufs.node_results);
            for &r in &bufs.node_results {
                out.count(r);
            }
            bufs.node_pages = pages;
        }
        out
    }

    fn evict_range(&self, i0: usize, n: usize, to: u8, b: &mut RangeBufs, out: &mut RangeOutcome) {
        b.staged.clear();
        b.single.clear();
        let (codec, max) = {
            let mut st = lock(self);
            let now = sys::now_ns();
            let movable = |p: Page| {
                p.state == PageState::Resident
                    && p.flags & (F_PINNED | F_SHARED | F_INCOMPRESSIBLE) == 0
            };
            // Release the range's slots first: a stale fault message may have left a zero
            // page in one (see `evict`), and UFFDIO_MOVE refuses an occupied destination.
            // SAFETY: drops pages of our own eviction slots; none holds a staged page
            // between moves (each move ends by committing or moving its pages back).
            unsafe { sys::madvise(self.evict_base, n * PAGE, libc::MADV_DONTNEED) };
            let mut j = i0;
            while j < i0 + n {
                let p = st.pages[j];
                if !movable(p) {
                    match p.state {
                        PageState::Staged { .. } | PageState::Node { .. } => b.single.push(j),
                        PageState::Compressed { tier, .. } if tier == to => out.already_there += 1,
                        PageState::Compressed { .. } => b.single.push(j),
                        PageState::Resident if p.flags & F_PINNED != 0 => out.refused += 1,
                        PageState::Resident if p.flags & F_SHARED != 0 => {
                            st.evict_busy += 1;
                            out.refused += 1
                        }
                        PageState::Resident => out.no_capacity += 1, // incompressible
                        PageState::Absent | PageState::Hole | PageState::Unregistered => {
                            out.refused += 1
                        }
                    }
                    j += 1;
                    continue;
                }
                let mut k = j + 1;
                while k < i0 + n && movable(st.pages[k]) {
                    k += 1;
                }
                // The run [j, k): one UFFDIO_MOVE into eviction slots j-i0.., unless the
                // kernel stops at a page (then that page is dealt with and the rest goes on).
                // A run refused before any page may span two VMAs (EINVAL; regions side by
                // side that did not merge): its first page is tried alone first.
                let mut a = j;
                let mut alone = false;
                while a < k {
                    let dst = self.evict_base + (a - i0) * PAGE;
                    let len = if alone { PAGE } else { (k - a) * PAGE };
                    let (bytes, op, calls) = self.uffd.mv_run(dst, self.addr(a), len, false);
                    st.move_ops += calls;
                    let moved = bytes / PAGE;
                    st.moved_pages += moved as u64;
                    for q in a..a + moved {
                        let es = HINT_SLOTS + (q - i0);
                        st.hint_owner[es] = (q as u32, now);
                        let f = st.pages[q].flags;
                        let staged = PageState::Staged {
                            slot: es as u32,
                            home: 0,
                        };
                        st.set(q, Page::new(staged, f));
                        b.staged.push((q, es));
                    }
                    a += moved;
                    if run_again(moved, k - a, &mut alone) {
                        continue;
                    }
                    match op {
                        // No page at a page we hold as resident: see `State::no_page`.
                        Op::NoEnt => {
                            st.no_page();
                            out.refused += 1;
                        }
                        Op::Busy => {
                            st.evict_busy += 1;
                            st.mark_shared(a);
                            out.refused += 1;
                        }
                        other => {
                            report(&format!(
                                "range evict move of {:#x} failed: {other:?}",
                                self.addr(a)
                            ));
                            let s = self.evict_base + (a - i0) * PAGE;
                            // SAFETY: drops whatever the failed move left in our own eviction slot `s`.
                            unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                            out.refused += 1;
                        }
                    }
                    a += 1;
                }
                j = k;
            }
            let t = &st.tiers[to as usize - 1];
            (t.codec, t.max_bytes)
        };
        // Compress without the lock (a racing move back leaves a zero page: see `evict`).
        if b.outs.len() < b.staged.len() {
            b.outs
                .resize_with(b.staged.len(), || Vec::with_capacity(PAGE));
        }
        let mut kinds = Vec::with_capacity(b.staged.len());
        for (k, &(_, es)) in b.staged.iter().enumerate() {
            let data =
                // SAFETY: slot `es` of our staging mapping holds this page (moved there under
                // the lock); it is only read.
                unsafe { std::slice::from_raw_parts((self.hint_base + es * PAGE) as *const u8, PAGE) };
            let zero = is_zero(data);
            let packed = !zero && codec.compress(data, &mut b.outs[k], max).is_some();
            kinds.push((zero, packed));
        }
        let mut st = lock(self);
        for (k, &(_, es)) in b.staged.iter().enumerate() {
            let (zero, packed) = kinds[k];
            let r = self.commit_staged(
                &mut st,
                es,
                to,
                zero,
                packed.then_some(&b.outs[k][..]),
                true,
            );
            out.count(r);
        }
    }

    /// The pages of [i0, i0 + n) held compressed back to DRAM, one UFFDIO_COPY per run,
    /// under the lock (`move_range` to DRAM, and fault-around from the fault thread).
    pub(super) fn promote_range(
        &self,
        st: &mut State,
        i0: usize,
        n: usize,
        b: &mut RangeBufs,
        out: &mut RangeOutcome,
    ) {
        b.staged.clear();
        b.single.clear();
        b.run.resize(EVICT_SLOTS * PAGE, 0);
        let mut j = i0;
        while j < i0 + n {
            match st.pages[j].state {
                PageState::Compressed { .. } if st.pages[j].flags & F_PINNED == 0 => {}
                PageState::Resident | PageState::Staged { .. } => {
                    out.already_there += 1;
                    j += 1;
                    continue;
                }
                // Moved (and counted) by `move_range`'s move_pages call.
                PageState::Node { .. } => {
                    j += 1;
                    continue;
                }
                _ => {
                    out.refused += 1;
                    j += 1;
                    continue;
                }
            }
            // Decompress the run of compressed pages from j into one buffer.
            let (mut k, mut corrupt) = (j, false);
            while k < i0 + n {
                let p = st.pages[k];
                let PageState::Compressed { tier, handle } = p.state else {
                    break;
                };
                if p.flags & F_PINNED != 0 {
                    break;
                }
                let t = &st.tiers[tier as usize - 1];
                let dst = &mut b.run[(k - j) * PAGE..(k - j + 1) * PAGE];
                if !t.codec.decompress(t.pool.get(handle.get()), dst) {
                    super::degrade::page_lost(self.addr(k));
                    corrupt = true;
                    break;
                }
                k += 1;
            }
            // Install it: one UFFDIO_COPY unless the kernel stops at a page. A run refused
            // whole may span two VMAs (regions side by side that did not merge, e.g. one
            // moved by mremap: ENOENT before any page), so a refused page is tried alone
            // before it is given up.
            let mut a = j;
            let mut alone = false;
            while a < k {
                let src = b.run[(a - j) * PAGE..].as_ptr();
                let len = if alone { PAGE } else { (k - a) * PAGE };
                let (bytes, op, calls) = self.uffd.copy_run(self.addr(a), src, len);
                st.move_ops += calls;
                let done = bytes / PAGE;
                st.moved_pages += done as u64;
                for q in a..a + done {
                    let p = st.pages[q];
                    if let PageState::Compressed { tier, handle } = p.state {
                        let t = &mut st.tiers[tier as usize - 1];
                        t.pool.free(handle.get());
                        t.pages -= 1;
                        t.migr_out += 1;
                    }
                    st.set(
                        q,
                        Page::new(PageState::Resident, p.flags & !F_INCOMPRESSIBLE),
                    );
                    out.applied += 1;
                }
                a += done;
                if run_again(done, k - a, &mut alone) {
                    continue;
                }
                report(&format!(
                    "install of {:#x} failed: {op:?}; page kept compressed",
                    self.addr(a)
                ));
                out.refused += 1;
                a += 1;
            }
            if corrupt {
                // The page that would not decompress stays where it is.
                out.refused += 1;
                k += 1;
            }
            j = k;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveResult {
    Applied,
    AlreadyThere,
    NoCapacity,
    Refused,
}

/// After one call of a run move or install that did `done` pages with `left` still to go:
/// whether to call again. On progress, with the rest of the run; after the kernel refused
/// the whole run, once with its first page alone (`*alone` is set for that call): a run
/// refused before any page may span two VMAs, regions side by side that did not merge.
/// False: the first page failed on its own, and the caller deals with it.
fn run_again(done: usize, left: usize, alone: &mut bool) -> bool {
    let try_alone = done == 0 && left > 1 && !*alone;
    *alone = try_alone;
    done > 0 || left == 0 || try_alone
}

fn is_zero(d: &[u8]) -> bool {
    // SAFETY: every bit pattern is a valid u64; align_to only splits the slice.
    let (pre, mid, post) = unsafe { d.align_to::<u64>() };
    pre.iter().all(|&b| b == 0) && mid.iter().all(|&w| w == 0) && post.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::run_again;

    #[test]
    fn a_refused_run_tries_its_first_page_alone_once() {
        let mut alone = false;
        // Progress: the rest of the run, as a run.
        assert!(run_again(3, 5, &mut alone) && !alone);
        // Done: nothing left (the loop ends on its own).
        assert!(run_again(2, 0, &mut alone) && !alone);
        // Refused whole: the first page alone, once.
        assert!(run_again(0, 5, &mut alone) && alone);
        // Refused alone too: given up, the next call is a run again.
        assert!(!run_again(0, 5, &mut alone) && !alone);
        // Alone and moved: back to runs.
        alone = true;
        assert!(run_again(1, 4, &mut alone) && !alone);
        // A one-page run refused: nothing to split.
        assert!(!run_again(0, 1, &mut alone) && !alone);
    }
}
