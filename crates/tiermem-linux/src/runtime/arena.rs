//! The arena: managed regions carved out of one PROT_NONE reservation, the free map of
//! page ranges, and the calls that change a range's mapping (munmap, MAP_FIXED over it,
//! MADV_DONTNEED, mprotect/mlock pins, mremap).

use super::page::{Page, PageState, Pin, NO_TIER};
use super::{lock, report, Runtime, State, ADOPT_AGE_NS, MREMAP_DONTUNMAP};

/// Unregistered memory is adopted whole once this old, written or not (sparse memory that
/// turns cold is managed too).
const ADOPT_ALL_NS: u64 = 8 * ADOPT_AGE_NS;
/// Before that, it is adopted in chunks of this many pages (2 MiB) that hold data in every page.
const ADOPT_CHUNK_PAGES: usize = 512;
/// How often chunks left unadopted are looked at again.
const ADOPT_RECHECK_NS: u64 = 250_000_000;
use crate::sys::{self, PAGE};

impl State {
    pub(super) fn take_range(&mut self, n: u32) -> Option<u32> {
        let found = self
            .free
            .iter()
            .find(|(_, &len)| len >= n)
            .map(|(&s, &l)| (s, l));
        if let Some((s, l)) = found {
            self.free.remove(&s);
            if l > n {
                self.free.insert(s + n, l - n);
            }
            return Some(s);
        }
        None
    }

    /// Remove [s, s+n) from the free map if all of it is free.
    pub(super) fn claim_exact(&mut self, s: u32, n: u32) -> bool {
        let Some((&fs, &fl)) = self.free.range(..=s).next_back() else {
            return false;
        };
        if fs + fl < s + n {
            return false;
        }
        self.free.remove(&fs);
        if s > fs {
            self.free.insert(fs, s - fs);
        }
        if fs + fl > s + n {
            self.free.insert(s + n, fs + fl - (s + n));
        }
        true
    }

    pub(super) fn give_back(&mut self, mut s: u32, mut n: u32) {
        if let Some((&ps, &pl)) = self.free.range(..s).next_back() {
            if ps + pl == s {
                self.free.remove(&ps);
                s = ps;
                n += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(s + n)) {
            self.free.remove(&(s + n));
            n += nl;
        }
        self.free.insert(s, n);
    }

    pub(super) fn grow_table(&mut self, to: u32) {
        if (to as usize) > self.pages.len() {
            self.pages.resize(to as usize, Page::default());
        }
    }
}

impl Runtime {
    /// A new managed region of `len` bytes (page-rounded). `None` if the arena is full or
    /// the kernel refused; the caller then falls back to plain memory.
    pub fn alloc_region(&self, len: usize) -> Option<usize> {
        // More pages than the arena has (or than a usize holds once rounded) can never fit;
        // `as u32` would have truncated 2^62 bytes to 2 pages and handed them out.
        let n = match sys::checked_page_up(len).map(|b| b / PAGE) {
            Some(n) if n > 0 && n <= self.arena_pages as usize => n as u32,
            _ => return None,
        };
        let mut st = lock(self);
        let start = match st.take_range(n) {
            Some(s) => s,
            None => {
                if st.hwm as u64 + n as u64 > self.arena_pages as u64 {
                    return None;
                }
                st.hwm += n;
                let h = st.hwm;
                st.grow_table(h);
                h - n
            }
        };
        if !self.registers_eagerly(&st) {
            // Lazy registration: the mmap needs no state of ours, so it is made without the
            // lock (8 threads mapping and unmapping otherwise queue on it). The pages are
            // ours (taken from the free map) and still holes to everyone else, and no one
            // has their address before this returns.
            drop(st);
            let mapped = self.map_fresh(start, n).is_ok();
            let mut st = lock(self);
            if !mapped {
                st.give_back(start, n);
                return None;
            }
            self.mark_unregistered(&mut st, start, n);
            st.regions += 1;
            return Some(self.addr(start as usize));
        }
        if self.map_pages(&mut st, start, n).is_err() {
            st.give_back(start, n);
            return None;
        }
        st.regions += 1;
        Some(self.addr(start as usize))
    }

    pub(super) fn map_pages(&self, st: &mut State, start: u32, n: u32) -> std::io::Result<()> {
        self.map_fresh(start, n)?;
        if !self.registers_eagerly(st) {
            self.mark_unregistered(st, start, n);
            return Ok(());
        }
        let (a, len) = (self.addr(start as usize), n as usize * PAGE);
        if let Err(e) = self.uffd.register(a, len) {
            self.reserve(a, len);
            return Err(e);
        }
        for i in start as usize..(start + n) as usize {
            st.set(i, Page::new(PageState::Absent, 0));
        }
        Ok(())
    }

    /// Pages [start, start+n), just mapped, left to the kernel (lazy registration); under
    /// the SLO controller they wait for adoption (`adopt_due`).
    fn mark_unregistered(&self, st: &mut State, start: u32, n: u32) {
        for i in start as usize..(start + n) as usize {
            st.set(i, Page::new(PageState::Unregistered, 0));
        }
        if st.slo.is_some() {
            st.unregistered.push((start, n, sys::now_ns()));
        }
    }

    /// Map fresh anonymous memory over pages [start, start+n) of the arena (their
    /// reservation), with the placement new managed memory gets. Needs no state lock.
    fn map_fresh(&self, start: u32, n: u32) -> std::io::Result<()> {
        let a = self.addr(start as usize);
        let len = n as usize * PAGE;
        // SAFETY: MAP_FIXED over pages [start, start+n) of our own arena reservation, which the
        // caller took from the free map (no one else's memory there).
        let r = unsafe {
            sys::mmap(
                a,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: an advice on the range just mapped; no memory is freed.
        unsafe { sys::madvise(a, len, libc::MADV_NOHUGEPAGE) };
        if self.has_node_tiers {
            // New managed memory starts in DRAM (the node the program started on), falling
            // back to other nodes only when it is full; the policy moves it from there.
            // SAFETY: a placement policy on the range just mapped, which holds no page yet.
            if let Err(e) = unsafe {
                crate::numa::mbind_node(a, len, crate::numa::MPOL_PREFERRED, self.dram_node)
            } {
                report(&format!(
                    "mbind of a new region to node {} failed: {e}",
                    self.dram_node
                ));
            }
        }
        Ok(())
    }

    /// New regions are registered at once when the manager may evict from them right away:
    /// a finite fixed budget, or a placement policy (which samples and places every page).
    /// With an unlimited budget nothing is ever evicted, and under the SLO controller only
    /// memory that lives past `ADOPT_AGE_NS` can turn cold: both leave new memory to the
    /// kernel (docs/runtime.md "Lazy registration").
    fn registers_eagerly(&self, st: &State) -> bool {
        // Degraded (runtime/degrade.rs): nothing is registered any more.
        !super::degrade::active()
            && (self.cfg.policy.is_some()
                || (st.slo.is_none() && !matches!(st.budget, crate::config::Budget::Unlimited)))
    }

    /// Adopt the unregistered regions the manager may now evict from: all of them when new
    /// ones are registered at once (a budget set while the program runs), those older than
    /// `ADOPT_AGE_NS` under the SLO controller, none otherwise. Returns the pages adopted.
    pub fn adopt_due(&self, now_ns: u64) -> u64 {
        let mut st = lock(self);
        if st.unregistered_pages == 0 || super::degrade::active() {
            st.unregistered.clear();
            return 0;
        }
        if self.registers_eagerly(&st) {
            st.unregistered.clear();
            let hwm = st.hwm as usize;
            return self.adopt_locked(&mut st, 0, hwm);
        }
        if now_ns < st.adopt_next_ns {
            return 0;
        }
        // Due runs: adopted whole once ADOPT_ALL_NS old; younger ones only where the
        // program has written them already (2 MiB chunks all present), so the rest of a
        // buffer it is still filling keeps the kernel's first touches (hot10's fill of
        // 1 GiB: 2.3 s when adopted whole at 1 s, 0.6 s plain).
        let runs = std::mem::take(&mut st.unregistered);
        let mut due = Vec::new();
        for &(start, n, born) in &runs {
            let (s, e) = (start as usize, ((start + n) as usize).min(st.hwm as usize));
            if born.saturating_add(ADOPT_AGE_NS) > now_ns {
                st.unregistered.push((start, n, born));
            } else if born.saturating_add(ADOPT_ALL_NS) <= now_ns {
                due.push((s, e, born, true));
            } else if s < e {
                due.push((s, e, born, false));
            }
        }
        if due.iter().all(|&(.., whole)| whole) {
            return due.iter().map(|&(s, e, ..)| self.adopt_locked(&mut st, s, e)).sum();
        }
        // Which pages hold data: a hint only, read without the lock (a fault may add pages
        // meanwhile); `adopt_locked` reads the pagemap again after registering.
        drop(st);
        let hints: Vec<Option<Vec<bool>>> = due
            .iter()
            .map(|&(s, e, _, whole)| (!whole).then(|| sys::pagemap_has_data(self.addr(s), e - s)))
            .collect();
        let mut st = lock(self);
        let mut adopted = 0;
        let mut left = false;
        for (&(s, e, born, _), hint) in due.iter().zip(&hints) {
            let Some(hint) = hint else {
                adopted += self.adopt_locked(&mut st, s, e);
                continue;
            };
            let mut c0 = s;
            while c0 < e {
                let c1 = ((c0 / ADOPT_CHUNK_PAGES + 1) * ADOPT_CHUNK_PAGES).min(e);
                if hint[c0 - s..c1 - s].iter().all(|&h| h) {
                    adopted += self.adopt_locked(&mut st, c0, c1);
                } else {
                    st.unregistered.push((c0 as u32, (c1 - c0) as u32, born));
                    left = true;
                }
                c0 = c1;
            }
        }
        if left {
            st.adopt_next_ns = now_ns + ADOPT_RECHECK_NS;
        }
        adopted
    }

    /// Register every run of unregistered pages in [s, e) with the userfaultfd and learn
    /// from /proc/self/pagemap which hold data (present or swapped: RESIDENT) and which do
    /// not (ABSENT). Under the state lock, registration first: a fault from then on comes
    /// to the fault thread, which waits for this lock and finds the page's state set; a
    /// fault the kernel served before the registration shows in the pagemap (UFFDIO_REGISTER
    /// and the kernel's fault path exclude each other on the mmap lock).
    pub(super) fn adopt_locked(&self, st: &mut State, s: usize, e: usize) -> u64 {
        let mut adopted = 0;
        let mut i = s;
        while i < e {
            if st.pages[i].state != PageState::Unregistered {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < e && st.pages[j].state == PageState::Unregistered {
                j += 1;
            }
            let (a, len) = (self.addr(i), (j - i) * PAGE);
            if let Err(err) = self.uffd.register(a, len) {
                // Left to the kernel (never lost, never evicted); retried with the next
                // adoption of an overlapping range.
                report(&format!("registering {a:#x} (+{len}) failed: {err}; left untiered"));
                i = j;
                continue;
            }
            let present = sys::pagemap_has_data(a, j - i);
            for (k, has) in (i..j).zip(present) {
                let f = st.pages[k].flags;
                let state = if has {
                    PageState::Resident
                } else {
                    PageState::Absent
                };
                st.set(k, Page::new(state, f));
            }
            st.adopted_pages += (j - i) as u64;
            adopted += (j - i) as u64;
            i = j;
        }
        adopted
    }

    /// Put a PROT_NONE reservation back over [a, a+len) (drops pages and registration).
    pub(super) fn reserve(&self, a: usize, len: usize) {
        // SAFETY: MAP_FIXED PROT_NONE over a range of our own arena that the caller is giving up
        // (its pages are dropped on purpose).
        unsafe {
            sys::mmap(
                a,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
    }

    /// munmap(2) of a managed range: every page becomes a hole, its data dropped.
    pub fn release(&self, a: usize, len: usize) -> i32 {
        let mut st = lock(self);
        let (s, e) = self.released_span(&st, a, len);
        let lazy = s < e
            && st.pages[s..e]
                .iter()
                .all(|p| matches!(p.state, PageState::Unregistered | PageState::Hole));
        if !lazy {
            self.release_locked(&mut st, a, len);
            return 0;
        }
        // Memory the kernel alone serves (lazy registration): nothing of ours to drop, so
        // the reservation goes back without the lock. The pages are holes to everyone from
        // here, and return to the free map only once the reservation covers them.
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for i in s..e {
            if st.pages[i].state == PageState::Unregistered {
                st.set(i, Page::default());
                match runs.last_mut() {
                    Some((r, n)) if (*r + *n) as usize == i => *n += 1,
                    _ => runs.push((i as u32, 1)),
                }
            }
        }
        drop(st);
        for &(r, n) in &runs {
            self.reserve(self.addr(r as usize), n as usize * PAGE);
        }
        let mut st = lock(self);
        for (r, n) in runs {
            st.give_back(r, n);
        }
        0
    }

    /// The page indices munmap(a, len) covers in the arena (whole pages, up to the hwm).
    fn released_span(&self, st: &State, a: usize, len: usize) -> (usize, usize) {
        let a0 = sys::page_down(a);
        let end = sys::page_up(a.saturating_add(len)).min(self.arena + self.arena_pages as usize * PAGE);
        (self.idx(a0), self.idx(end).min(st.hwm as usize))
    }

    pub(super) fn release_locked(&self, st: &mut State, a: usize, len: usize) {
        let (s, e) = self.released_span(st, a, len);
        if s < e {
            self.reserve(self.addr(s), (e - s) * PAGE);
        }
        let mut run: Option<usize> = None;
        for i in s..e {
            if st.pages[i].state != PageState::Hole {
                self.drop_data(st, i);
                st.set(i, Page::default());
                run.get_or_insert(i);
            } else if let Some(r) = run.take() {
                st.give_back(r as u32, (i - r) as u32);
            }
        }
        if let Some(r) = run {
            st.give_back(r as u32, (e - r) as u32);
        }
        self.flush_hint_dirty(st);
    }

    /// The program maps something of its own (MAP_FIXED) over part of the arena: drop our
    /// pages there and never hand those addresses out again.
    pub fn foreign(&self, a: usize, len: usize) {
        self.release(a, len);
        let mut st = lock(self);
        let s = self.idx(sys::page_down(a));
        let e = self.idx(sys::page_up(a.saturating_add(len)).min(self.arena + self.arena_pages as usize * PAGE));
        if e as u32 > st.hwm {
            let h = st.hwm;
            st.give_back(h, e as u32 - h);
            st.hwm = e as u32;
            st.grow_table(e as u32);
        }
        for i in s..e {
            st.claim_exact(i as u32, 1);
        }
    }

    pub fn unpin(&self, a: usize, len: usize, why: Pin) {
        let mut st = lock(self);
        let s = self.idx(sys::page_down(a.max(self.arena)));
        let e =
            self.idx(sys::page_up(a.saturating_add(len)).min(self.arena + st.hwm as usize * PAGE));
        for i in s..e {
            st.pages[i].flags &= !why.flag();
        }
    }

    /// madvise(MADV_DONTNEED) on a managed range: pages read as zero afterwards.
    pub fn dontneed(&self, a: usize, len: usize, advice: i32) -> i32 {
        // What the kernel refuses (EINVAL) must change no state: pages dropped here from
        // their tier while the kernel kept the range would read as zeros.
        if !a.is_multiple_of(PAGE) || a.checked_add(len).is_none() {
            sys::set_errno(libc::EINVAL);
            return -1;
        }
        let mut st = lock(self);
        let (s, e) = (
            self.idx(sys::page_down(a)),
            self.idx(sys::page_up(a.saturating_add(len))).min(st.hwm as usize),
        );
        for i in s..e {
            let k = st.pages[i].state;
            // An unregistered page stays so: the kernel drops its data and serves its next
            // fault with zeros, as for any memory of its own.
            if !matches!(k, PageState::Hole | PageState::Absent | PageState::Unregistered) {
                self.drop_data(&mut st, i);
                let flags = st.pages[i].flags;
                st.set(i, Page::new(PageState::Absent, flags));
            }
        }
        self.flush_hint_dirty(&mut st);
        // SAFETY: the program's own madvise on its managed range, whose page states were updated
        // above under the lock.
        unsafe { sys::madvise(a, len, advice) }
    }

    /// Bring every page of [a, a+len) back to DRAM, pinned for `pin` if given. Used before
    /// mprotect/mlock, and (all pages) before fork.
    pub fn untier(&self, a: usize, len: usize, pin: Option<Pin>) {
        let mut st = lock(self);
        self.untier_locked(&mut st, a, len, pin);
    }

    pub(super) fn untier_locked(&self, st: &mut State, a: usize, len: usize, pin: Option<Pin>) {
        let s = self.idx(sys::page_down(a.max(self.arena)));
        let e =
            self.idx(sys::page_up(a.saturating_add(len)).min(self.arena + st.hwm as usize * PAGE));
        for i in s..e {
            let k = st.pages[i].state;
            if matches!(k, PageState::Staged { .. } | PageState::Compressed { .. }) {
                self.promote(st, i, None);
            }
            if let (Some(why), true) = (pin, k != PageState::Hole) {
                st.pages[i].flags |= why.flag();
            }
        }
        self.flush_hint_dirty(st);
    }

    /// mremap(2) of a managed range. Returns the new address or -errno.
    ///
    /// Never leaves any address of the arena unmapped, not even for a moment: the kernel
    /// may hand an unmapped range to another thread's mmap, and the PROT_NONE reservation
    /// we put back afterwards (MAP_FIXED) would then silently replace that thread's fresh
    /// memory (issue 10: map/unmap in one thread + realloc growth in another lost data).
    /// So a move uses MREMAP_DONTUNMAP (the source stays mapped, empty, until the
    /// reservation atomically replaces it), and the whole remap runs under the state lock
    /// so no eviction or sample changes a page between its state and its move.
    pub fn remap(
        &self,
        old: usize,
        old_len: usize,
        new_len: usize,
        flags: i32,
        new_addr: usize,
    ) -> isize {
        if !old.is_multiple_of(PAGE) || new_len == 0 {
            return -(libc::EINVAL as isize);
        }
        // A size the arena can never hold: ENOMEM before any page count is narrowed to u32.
        let arena_bytes = self.arena_pages as usize * PAGE;
        let (Some(old_len), Some(new_len)) = (
            sys::checked_page_up(old_len).filter(|&l| l <= arena_bytes),
            sys::checked_page_up(new_len).filter(|&l| l <= arena_bytes),
        ) else {
            return -(libc::ENOMEM as isize);
        };
        let old_n = old_len / PAGE;
        let new_n = new_len / PAGE;
        let fixed = flags & libc::MREMAP_FIXED != 0;
        let maymove = flags & libc::MREMAP_MAYMOVE != 0;
        if flags & MREMAP_DONTUNMAP != 0 {
            // Not supported on managed memory.
            return -(libc::EINVAL as isize);
        }
        if fixed && (!maymove || !new_addr.is_multiple_of(PAGE)) {
            return -(libc::EINVAL as isize);
        }
        if fixed && new_addr < old + old_len && old < new_addr.saturating_add(new_len) {
            return -(libc::EINVAL as isize); // overlapping source and destination
        }
        let mut st = lock(self);
        let s = self.idx(old);
        if old_n == 0
            || s + old_n > st.hwm as usize
            || st.pages[s..s + old_n]
                .iter()
                .any(|p| p.state == PageState::Hole)
        {
            return -(libc::EFAULT as isize);
        }
        if fixed && !self.contains(new_addr) {
            self.adopt_locked(&mut st, s, s + old_n);
            return self.remap_out(&mut st, old, old_n, new_n, new_addr);
        }
        if !fixed && new_n <= old_n {
            drop(st);
            if new_n < old_n {
                self.release(old + new_len, old_len - new_len);
            }
            return old as isize;
        }
        // Grow in place if the pages after the region are free.
        if !fixed && st.claim_exact((s + old_n) as u32, (new_n - old_n) as u32) {
            if self
                .map_pages(&mut st, (s + old_n) as u32, (new_n - old_n) as u32)
                .is_ok()
            {
                return old as isize;
            }
            st.give_back((s + old_n) as u32, (new_n - old_n) as u32);
            return -(libc::ENOMEM as isize);
        }
        if !fixed && !maymove {
            return -(libc::ENOMEM as isize);
        }
        // A move re-registers the destination and carries page states: a source with any
        // registered page is adopted whole first, so every page moved has a known state; a
        // source the kernel alone serves (lazy registration) moves as it is, unregistered
        // (realloc growth under an unlimited budget pays no user-space fault).
        let lazy = st.pages[s..s + old_n]
            .iter()
            .all(|p| p.state == PageState::Unregistered);
        if !lazy {
            self.adopt_locked(&mut st, s, s + old_n);
        }
        // Move: pick the destination inside the arena, let the kernel move the page tables,
        // then re-register and carry every page's state (pool handles move, no copy).
        let dst = if fixed {
            let d = self.idx(new_addr);
            if d + new_n > self.arena_pages as usize {
                return -(libc::ENOMEM as isize);
            }
            // The destination is replaced (MREMAP_FIXED unmaps it first).
            self.release_locked(&mut st, new_addr, new_len);
            if (d + new_n) as u32 > st.hwm {
                let h = st.hwm;
                st.give_back(h, (d + new_n) as u32 - h);
                st.hwm = (d + new_n) as u32;
                let h = st.hwm;
                st.grow_table(h);
            }
            if !st.claim_exact(d as u32, new_n as u32) {
                return -(libc::ENOMEM as isize);
            }
            d
        } else {
            match st.take_range(new_n as u32) {
                Some(d) => d as usize,
                None => {
                    if st.hwm as usize + new_n > self.arena_pages as usize {
                        return -(libc::ENOMEM as isize);
                    }
                    st.hwm += new_n as u32;
                    let h = st.hwm;
                    st.grow_table(h);
                    h as usize - new_n
                }
            }
        };
        let dst_a = self.addr(dst);
        let keep_n = old_n.min(new_n);
        if let Err(e) = move_vmas_keeping_source(old, keep_n * PAGE, dst_a) {
            // A part moved and brought back lost its registration: register it again.
            if lazy {
                // Nothing was registered.
            } else if let Err(r) = self.uffd.register(old, keep_n * PAGE) {
                super::report_fatal(&format!(
                    "re-register of {old:#x} after a failed mremap failed: {r}"
                ));
            }
            self.reserve(dst_a, new_len);
            st.give_back(dst as u32, new_n as u32);
            st.remap_refused += 1;
            return -(e as isize);
        }
        st.remap_moves += 1;
        // SAFETY: an advice on the range just moved to `dst_a`, which is ours; no memory is freed.
        unsafe { sys::madvise(dst_a, keep_n * PAGE, libc::MADV_NOHUGEPAGE) };
        // The moved VMA lost its registration (no UFFD_FEATURE_EVENT_REMAP): register it
        // again before any page of it can be absent to the kernel's eyes.
        if lazy {
            if st.slo.is_some() {
                st.unregistered.push((dst as u32, keep_n as u32, sys::now_ns()));
            }
        } else if let Err(e) = self.uffd.register(dst_a, keep_n * PAGE) {
            super::report_fatal(&format!("re-register after mremap of {old:#x} failed: {e}"));
        }
        // Carry each page's state to its new index without counting it twice.
        for k in 0..keep_n {
            let src = st.pages[s + k];
            st.pages[s + k] = Page::default();
            if src.state.placement() != NO_TIER {
                st.log_placement(s + k);
            }
            st.mapped -= 1;
            if src.state.in_dram() {
                st.resident -= 1;
            }
            if src.incompressible_in_dram() {
                st.incompressible -= 1; // `set` below counts it again
            }
            if src.state == PageState::Unregistered {
                st.unregistered_pages -= 1; // as well
            }
            if let PageState::Staged { slot, .. } = src.state {
                st.hint_owner[slot as usize].0 = (dst + k) as u32;
            }
            // `set` below counts the page in its tier again.
            if let PageState::Compressed { tier, .. } = src.state {
                st.tiers[tier as usize - 1].pages -= 1;
            }
            if let Some(tier) = src.state.node_tier() {
                st.tiers[tier as usize - 1].pages -= 1;
            }
            st.set(dst + k, src);
            if let PageState::Compressed { tier, .. } = src.state {
                st.tiers[tier as usize - 1].pages += 1;
            }
        }
        if new_n > keep_n {
            // The grown tail: fresh managed pages over the rest of the reservation.
            if let Err(e) = self.map_pages(&mut st, (dst + keep_n) as u32, (new_n - keep_n) as u32)
            {
                report(&format!("mapping the grown tail of {dst_a:#x} failed: {e}"));
            }
        }
        // Pages of the source beyond what moved (a shrinking fixed move) are dropped.
        self.retire_source(&mut st, s + keep_n, s + old_n, old, old_n);
        dst_a as isize
    }

    /// mremap with MREMAP_FIXED to an address outside the arena: the pages become the
    /// program's plain memory there. All of them are brought home first (under the lock,
    /// so nothing is evicted again before the move); the source stays mapped until the
    /// reservation replaces it (see `remap`).
    fn remap_out(
        &self,
        st: &mut State,
        old: usize,
        old_n: usize,
        new_n: usize,
        new_addr: usize,
    ) -> isize {
        let s = self.idx(old);
        let keep_n = old_n.min(new_n);
        self.untier_locked(st, old, keep_n * PAGE, None);
        if new_n > keep_n {
            // What MREMAP_FIXED would do to the destination's tail: replace it with zeros.
            // SAFETY: MAP_FIXED over the tail of the program's own MREMAP_FIXED destination, which the kernel would replace the same way.
            let r = unsafe {
                sys::mmap(
                    new_addr + keep_n * PAGE,
                    (new_n - keep_n) * PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r < 0 {
                return -(sys::errno() as isize);
            }
        }
        let r = match move_keeping_source(old, keep_n * PAGE, new_addr) {
            Ok(r) => r,
            Err(e) => return -(e as isize),
        };
        // The moved VMA lost its userfaultfd registration: it is plain memory now.
        self.retire_source(st, s, s + old_n, old, old_n);
        r as isize
    }

    /// The end of a move: pages [from, to) of the source still hold state (the moved ones
    /// were already carried over), dropped; then the emptied source range [old, old_n
    /// pages) is atomically replaced by the reservation and its pages go back to the free
    /// map.
    fn retire_source(&self, st: &mut State, from: usize, to: usize, old: usize, old_n: usize) {
        for i in from..to {
            self.drop_data(st, i);
            st.set(i, Page::default());
        }
        self.flush_hint_dirty(st);
        self.reserve(old, old_n * PAGE);
        st.give_back(self.idx(old) as u32, old_n as u32);
    }
}

/// `move_keeping_source` for a range that may span several VMAs. A region moved once is
/// two: the moved part keeps the page offset of its old address, so the tail mapped after
/// it at its new place cannot merge with it, and mremap refuses a range across VMAs
/// (EFAULT; realloc then fell back to malloc + copy + free for about a third of the
/// growths under tests/c/alloc_race.c). Each VMA's part then moves on its own, to the same
/// offset from `dst`. If one fails, the parts already moved go back and the error is
/// returned; the caller registers the source again (a moved VMA loses its registration).
fn move_vmas_keeping_source(old: usize, len: usize, dst: usize) -> Result<usize, i32> {
    match move_keeping_source(old, len, dst) {
        Err(libc::EFAULT) => {}
        r => return r,
    }
    let parts = vma_parts(old, len).ok_or(libc::EFAULT)?;
    for (moved, &(a, l)) in parts.iter().enumerate() {
        if let Err(e) = move_keeping_source(a, l, dst + (a - old)) {
            for &(a, l) in parts[..moved].iter().rev() {
                if let Err(b) = move_keeping_source(dst + (a - old), l, a) {
                    super::report_fatal(&format!(
                        "moving {a:#x} back after a failed mremap failed: {b}"
                    ));
                }
            }
            return Err(e);
        }
    }
    Ok(dst)
}

/// The VMAs that make up [start, start+len), clipped to it, from /proc/self/maps; `None`
/// unless they cover it without a gap (or the file cannot be read).
fn vma_parts(start: usize, len: usize) -> Option<Vec<(usize, usize)>> {
    let end = start + len;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut parts = Vec::new();
    let mut at = start;
    for line in maps.lines() {
        let range = line.split(' ').next()?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        );
        if b <= at || a >= end {
            continue;
        }
        if a > at {
            return None; // a gap
        }
        let to = b.min(end);
        parts.push((at, to - at));
        at = to;
        if at == end {
            return Some(parts);
        }
    }
    None
}

/// Move the page tables of [old, old+len) to `dst` (MREMAP_FIXED: whatever was mapped
/// there is replaced) and leave the source mapped and empty (MREMAP_DONTUNMAP), so no
/// address of the source is ever free for the kernel to hand to another thread's mmap.
/// Returns the new address, or the errno.
///
/// Without UFFD_FEATURE_EVENT_REMAP the kernel drops the userfaultfd registration of the
/// VMA that mremap creates at `dst`, and when that VMA merges with a neighbour (same
/// flags, same userfaultfd context, an anon_vma and page offset that line up: a source
/// never touched gets the offset of its new address), the registration of the whole
/// merged VMA goes, neighbour included: that other region's pages without a PTE (in a
/// compressed tier, staged, absent) would then read as fresh zeros, and its evictions
/// fail (EINVAL). So the source is marked MADV_DONTDUMP for the move (a VMA flag its
/// neighbours lack, so the new VMA merges with none) and the mark is taken off at `dst`
/// afterwards; the caller registers `dst` again, which merges it with its neighbours
/// keeping their registration. (A DONTDUMP the program set on the range itself is lost.)
fn move_keeping_source(old: usize, len: usize, dst: usize) -> Result<usize, i32> {
    // SAFETY: an advice on the caller's managed range [old, old+len) (it only changes
    // whether the range is in a core dump); no memory is freed.
    unsafe { sys::madvise(old, len, libc::MADV_DONTDUMP) };
    // SAFETY: the caller holds the state lock and owns both ranges: [old, old+len) is a
    // managed range of this process (its pages move, nothing is freed) and [dst, dst+len)
    // is a reservation of ours or the program's stated MREMAP_FIXED destination.
    let r = unsafe {
        sys::mremap(
            old,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | MREMAP_DONTUNMAP,
            dst,
        )
    };
    if r < 0 {
        let e = sys::errno();
        // SAFETY: as above: the range did not move, its dump flag goes back.
        unsafe { sys::madvise(old, len, libc::MADV_DODUMP) };
        return Err(e);
    }
    // SAFETY: an advice on the range just moved to `dst` (ours, or the program's stated
    // destination); it only puts the range back in a core dump.
    unsafe { sys::madvise(r as usize, len, libc::MADV_DODUMP) };
    Ok(r as usize)
}
