//! The fault thread: reads userfaultfd messages and serves them (zero-fill a first touch,
//! un-stage a hint-sampled page, decompress a tiered page), and waits for the manager to
//! make room when DRAM is over budget.

use super::fault_around::fit_unit;
use super::mover::{RangeBufs, RangeOutcome};
use super::page::{Page, PageState, F_INCOMPRESSIBLE};
use super::{lock, report, Runtime, State, EVICT_SLOTS};
use crate::sys::{self, PAGE};
use crate::uffd::{Msg, Op, UFFD_EVENT_PAGEFAULT};
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, OnceLock};
use tiermem_core::HeatEvent;

/// Pages zero-filled around a first-touch fault (64 KiB): fewer faults for sequential fills.
const FILL_CHUNK_PAGES: usize = 16;
/// After serving a fault, the fault thread polls (without sleeping) up to this long for the
/// next: a burst of faults (a scan) is answered without a wakeup.
const SPIN_NS: u64 = 30_000;
/// The spin shrinks (halves) each time it catches nothing, down to this, and is reset when
/// faults come closer together than SPIN_NS: sparse faults (memcached's) do not cost 30 us
/// of CPU each.
const SPIN_MIN_NS: u64 = 2_000;
/// At most this many fault threads (`fault_threads = "per-cpu"`): every fault wakes every
/// fault thread polling the userfaultfd (poll wakes all its waiters), so the wakeups wasted
/// on the other CPUs grow with their count.
pub const FAULT_THREADS_MAX: usize = 8;

/// The CPUs to pin one fault thread each to: every CPU the program may run on, for
/// "per-cpu" with 2..=FAULT_THREADS_MAX of them; none (one unpinned thread) otherwise.
///
/// Why: a userfaultfd fault sleeps the faulting thread until a handler installs the page.
/// With the handler on another CPU, its wakeup and the faulting thread's are both
/// cross-CPU (an IPI each; on a VM guest an exit each, and an idle vCPU that has halted is
/// slow to wake: 20 us p50 here, against 7.5 us with everything on one CPU). A handler
/// pinned to the faulting thread's CPU is woken locally as the faulting thread goes to
/// sleep, runs next, and wakes it locally: no IPI on the fault's path.
pub fn fault_cpus(mode: crate::config::FaultThreads) -> Vec<usize> {
    let cpus = sys::allowed_cpus();
    match mode {
        crate::config::FaultThreads::PerCpu if (2..=FAULT_THREADS_MAX).contains(&cpus.len()) => {
            cpus
        }
        _ => Vec::new(),
    }
}

/// How long the fault thread waits for room before serving the next faults anyway.
const ROOM_WAIT_NS: u64 = 5_000_000;

/// The fault thread's way to take the state lock: poll it, yielding the CPU in between (the
/// other holders keep it for one page move or commit, a few us, but may be preempted on
/// this CPU), rather than sleep on the futex, whose wakeup costs tens of us here; sleeps
/// only if the lock stays taken for long (a munmap of a large region).
pub(super) fn lock_spin(rt: &Runtime) -> MutexGuard<'_, State> {
    let t0 = sys::now_ns();
    loop {
        match rt.st.try_lock() {
            Ok(g) => return g,
            Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if sys::now_ns() - t0 > SPIN_NS {
                    return lock(rt);
                }
                // The holder may have been preempted on this CPU (2 CPUs, 3+ threads):
                // let it run rather than spin against it.
                // SAFETY: sched_yield has no memory effects.
                unsafe { libc::sched_yield() };
            }
        }
    }
}

impl Runtime {
    /// Serve faults until the runtime stops. `pinned`: this thread is one of the per-CPU
    /// fault threads; it never polls without sleeping (a spin would hold its CPU from the
    /// program thread whose fault it just served, and steal other CPUs' faults from their
    /// local thread).
    pub(super) fn fault_loop(&self, pinned: bool) {
        let mut msgs = [Msg::default(); 32];
        let mut pfd = libc::pollfd {
            fd: self.uffd.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut spin_ns = SPIN_NS;
        let mut last_served = 0u64;
        let mut fa = FaultAroundBufs::default();
        while !self.stop.load(Ordering::Relaxed) {
            // SAFETY: `pfd` is a local pollfd of our userfaultfd.
            let r = unsafe { libc::poll(&mut pfd, 1, 200) };
            if r <= 0 {
                continue;
            }
            if let Some(why) = super::degrade::uffd_broken(pfd.revents) {
                self.uffd_failed(&why);
                return;
            }
            // Serve, then keep reading without sleeping for a short while: faults come in
            // bursts, and a handler that is already awake answers the next one sooner. A
            // fault within SPIN_NS of the previous one (caught spinning, or just missed)
            // sets the spin back to SPIN_NS; a spin that catches nothing halves it.
            if sys::now_ns() - last_served < SPIN_NS {
                spin_ns = SPIN_NS;
            }
            let mut spinning = false;
            loop {
                let n = self.uffd.read_msgs(&mut msgs);
                if n == 0 {
                    if !spinning || pinned {
                        break; // spurious wakeup, or served: sleep in poll
                    }
                    if sys::now_ns() - last_served > spin_ns {
                        spin_ns = (spin_ns / 2).max(SPIN_MIN_NS);
                        break;
                    }
                    std::hint::spin_loop();
                    continue;
                }
                if spinning {
                    spin_ns = SPIN_NS;
                }
                spinning = true;
                let t0 = sys::now_ns();
                self.fault_msgs.fetch_add(n as u64, Ordering::Relaxed);
                let mut st = lock_spin(self);
                for m in &msgs[..n] {
                    if m.event == UFFD_EVENT_PAGEFAULT {
                        self.serve(&mut st, sys::page_down(m.address as usize), t0, &mut fa);
                    }
                }
                self.flush_hint_dirty(&mut st);
                let over = st.resident > st.limit_pages();
                drop(st);
                if over {
                    self.make_room();
                }
                last_served = sys::now_ns();
            }
        }
    }

    /// DRAM is over budget + slack: wake the manager and wait (up to ROOM_WAIT_NS, never
    /// holding the state lock) until it has evicted below the limit, so the faults that
    /// follow do not push DRAM further over. Skipped while the manager cannot evict.
    fn make_room(&self) {
        if !self.can_make_room.load(Ordering::Relaxed) {
            return;
        }
        let t0 = sys::now_ns();
        loop {
            let seen = self.room.load(Ordering::Acquire);
            self.kick.fetch_add(1, Ordering::Release);
            sys::futex_wake(&self.kick);
            sys::futex_wait(&self.room, seen, 1_000_000);
            let mut st = lock_spin(self);
            if st.resident <= st.limit_pages()
                || !self.can_make_room.load(Ordering::Relaxed)
                || sys::now_ns() - t0 > ROOM_WAIT_NS
                || self.stop.load(Ordering::Relaxed)
            {
                st.room_waits += 1;
                st.room_wait_ns += sys::now_ns() - t0;
                return;
            }
        }
    }

    fn serve(&self, st: &mut State, a: usize, t0: u64, fa: &mut FaultAroundBufs) {
        if !self.contains(a) || self.idx(a) >= st.hwm as usize {
            // A staging slot read by the evictor after this thread moved its page back
            // home (see `evict`): it reads zeros and discards what it read.
            if !(self.in_staging(a) && self.uffd.copy(a, zeros(PAGE), PAGE) == Op::Done) {
                self.uffd.wake(a, PAGE);
            }
            return;
        }
        let i = self.idx(a);
        if st.pages[i].state == PageState::Unregistered && super::degrade::active() {
            // A message read before tiering stopped (runtime/degrade.rs): the kernel serves
            // the page now.
            self.uffd.wake(a, PAGE);
            return;
        }
        if st.pages[i].state == PageState::Unregistered {
            // Registered since (`adopt` changes the state first, under this lock, so this
            // is a bookkeeping slip, never data): the kernel says no entry, so no data.
            let f = st.pages[i].flags;
            st.set(i, Page::new(PageState::Absent, f));
        }
        match st.pages[i].state {
            PageState::Absent => {
                // Zero-fill the run of absent pages in this 64 KiB block around the fault.
                let b0 = i / FILL_CHUNK_PAGES * FILL_CHUNK_PAGES;
                let b1 = (b0 + FILL_CHUNK_PAGES).min(st.hwm as usize);
                let mut lo = i;
                while lo > b0 && st.pages[lo - 1].state == PageState::Absent {
                    lo -= 1;
                }
                let mut hi = i + 1;
                while hi < b1 && st.pages[hi].state == PageState::Absent {
                    hi += 1;
                }
                // The whole run in one call. The kernel stops at a page that already has
                // an entry (EEXIST) and reports the pages installed before it: each of
                // those is counted, and the run goes on after the refused page. A run
                // that spans two VMAs (regions next to each other that did not merge) is
                // refused whole (ENOENT): then the faulting page goes alone.
                let mut from = lo;
                let mut alone = false;
                while from < hi {
                    // Zeroed pages, never the shared zero page (UFFDIO_ZEROPAGE), read
                    // faults included: Linux 6.18 misreports moves of a zero-page entry that
                    // a write replaces meanwhile (`uffd::moved_anyway`); an eviction of the
                    // page soon after its first read, as a program writes it, met exactly that.
                    let len = (hi - from) * PAGE;
                    let (bytes, op, _) = self.uffd.copy_run(self.addr(from), zeros(len), len);
                    let end = from + bytes / PAGE;
                    for j in from..end {
                        let f = st.pages[j].flags;
                        st.set(j, Page::new(PageState::Resident, f));
                    }
                    match op {
                        Op::Done => break,
                        Op::Exists => {
                            // Only we install pages here, and each install is counted, so
                            // an absent page with an entry is a bookkeeping fault: it holds
                            // data (written, or zeros); counting it resident keeps it.
                            st.absent_with_page += 1;
                            report(&format!(
                                "page {:#x} held as absent had a page table entry; counted as resident",
                                self.addr(end)
                            ));
                            let f = st.pages[end].flags;
                            st.set(end, Page::new(PageState::Resident, f));
                            self.uffd.wake(self.addr(end), PAGE);
                            from = end + 1;
                        }
                        _ if !alone && st.pages[i].state == PageState::Absent => {
                            (from, hi, alone) = (i, i + 1, true);
                        }
                        _ => break,
                    }
                }
                if st.pages[i].state != PageState::Resident {
                    // Not installed (the kernel refused it alone too): wake the thread, whose
                    // access faults again.
                    self.uffd.wake(a, PAGE);
                    return;
                }
                st.first_touch += 1;
                st.events.push(HeatEvent::Accessed { page: i as u32 });
            }
            PageState::Resident | PageState::Node { .. } => {
                // A stale message (another thread's fault already served): the page has
                // its entry (EEXIST) and the thread is only woken. A page held in DRAM
                // that has no entry lost its data outside our moves (MADV_FREE is served
                // as DONTNEED, so only a raw system call of the program's, or a fault of
                // ours, drops one): it reads as zeros, as the kernel says, and is reported.
                if self.uffd.copy(a, zeros(PAGE), PAGE) == Op::Done {
                    st.resident_refilled += 1;
                    super::report_fatal(&format!(
                        "page {a:#x} held as resident had no page: it reads as zeros now"
                    ));
                } else {
                    self.uffd.wake(a, PAGE);
                }
            }
            PageState::Staged { slot, home } => {
                let slot = slot as usize;
                let staged_at = st.hint_owner[slot].1;
                match self.uffd.mv(a, self.hint_base + slot * PAGE, PAGE, true) {
                    Op::Done => {
                        Self::free_slot(st, slot as u32, false);
                        let f = st.pages[i].flags & !F_INCOMPRESSIBLE;
                        st.set(i, Page::new(PageState::mapped_in(home), f));
                        st.hint_faults += 1;
                        st.events.push(HeatEvent::HintFault {
                            page: i as u32,
                            time_to_fault_ns: t0.saturating_sub(staged_at) as f64,
                        });
                    }
                    // Neither the slot nor the home has the page (the answer is checked):
                    // its data is gone. Zeros, as for a resident page without one, reported;
                    // waking the thread into the same fault again would spin forever.
                    Op::NoEnt if self.uffd.copy(a, zeros(PAGE), PAGE) == Op::Done => {
                        Self::free_slot(st, slot as u32, false);
                        let f = st.pages[i].flags & !F_INCOMPRESSIBLE;
                        st.set(i, Page::new(PageState::mapped_in(home), f));
                        st.resident_refilled += 1;
                        super::report_fatal(&format!(
                            "page {a:#x} staged in slot {slot} had no page: it reads as zeros now"
                        ));
                    }
                    other => {
                        report(&format!("hint un-stage of {a:#x} failed: {other:?}"));
                        self.uffd.wake(a, PAGE);
                    }
                }
            }
            PageState::Compressed { tier, .. } => {
                crate::inject::panic_at(crate::inject::Kind::FaultThreadPanic);
                let tier = tier as usize;
                let pages = &st.pages;
                let in_tier = |p: u32| {
                    pages
                        .get(p as usize)
                        .is_some_and(|x| matches!(x.state, PageState::Compressed { .. }))
                };
                let unit = st.granularity.unit_for_fault(i, in_tier);
                let unit = fit_unit(unit, st.limit_pages()).min(EVICT_SLOTS);
                let brought = if unit > 1 {
                    self.fault_around(st, i, unit, fa)
                } else {
                    self.promote(st, i, Some(t0)) as usize
                };
                if brought > 0 {
                    st.granularity.served(unit, brought);
                    st.events.push(HeatEvent::TierFault { page: i as u32 });
                    let t = &mut st.tiers[tier - 1];
                    t.faults += 1;
                    let dt = sys::now_ns() - t0;
                    t.hist.record(dt);
                    t.service_ns += dt;
                    st.stall_ns += dt;
                } else {
                    self.uffd.wake(a, PAGE);
                }
            }
            // Unregistered was made Absent above; a hole: the kernel raises SIGSEGV.
            PageState::Hole | PageState::Unregistered => {
                self.uffd.wake(a, PAGE);
            }
        }
    }

    /// Serve a tier fault on page `i` with the `unit`-page aligned block around it: its
    /// compressed pages come back with one UFFDIO_COPY per run (`promote_range`). Returns
    /// the pages brought back (0: the faulting page stayed where it was). The others are
    /// reported as `Prefetched`: brought in, not seen accessed.
    fn fault_around(
        &self,
        st: &mut State,
        i: usize,
        unit: usize,
        fa: &mut FaultAroundBufs,
    ) -> usize {
        let b0 = i / unit * unit;
        let b1 = (b0 + unit).min(st.hwm as usize);
        fa.was_compressed.clear();
        fa.was_compressed.extend(
            (b0..b1).filter(|&j| matches!(st.pages[j].state, PageState::Compressed { .. })),
        );
        let mut out = RangeOutcome::default();
        self.promote_range(st, b0, b1 - b0, &mut fa.range, &mut out);
        if !st.pages[i].state.in_dram() {
            return 0;
        }
        let mut brought = 0;
        for &j in &fa.was_compressed {
            if st.pages[j].state == PageState::Resident {
                brought += 1;
                if j != i {
                    st.events.push(HeatEvent::Prefetched { page: j as u32 });
                }
            }
        }
        brought
    }

    /// Install page `i` (staged or compressed) back at its address. Wakes waiters.
    pub(super) fn promote(&self, st: &mut State, i: usize, _t0: Option<u64>) -> bool {
        let a = self.addr(i);
        let p = st.pages[i];
        match p.state {
            PageState::Staged { slot, home } => {
                let slot = slot as usize;
                let op = self.uffd.mv(a, self.hint_base + slot * PAGE, PAGE, true);
                if op != Op::Done {
                    report(&format!("un-stage of {a:#x} failed: {op:?}"));
                    return false;
                }
                Self::free_slot(st, slot as u32, false);
                st.set(i, Page::new(PageState::mapped_in(home), p.flags));
                true
            }
            PageState::Compressed { tier, handle } => {
                let ti = tier as usize - 1;
                let handle = handle.get();
                let mut buf = std::mem::take(&mut st.pbuf);
                let ok = {
                    let t = &st.tiers[ti];
                    t.codec.decompress(t.pool.get(handle), &mut buf)
                };
                if !ok {
                    super::degrade::page_lost(a);
                    st.pbuf = buf;
                    return false;
                }
                let op = self.uffd.copy(a, buf.as_ptr(), PAGE);
                st.pbuf = buf;
                match op {
                    Op::Done => {
                        let t = &mut st.tiers[ti];
                        t.pool.free(handle);
                        t.pages -= 1;
                        t.migr_out += 1;
                        st.set(
                            i,
                            Page::new(PageState::Resident, p.flags & !F_INCOMPRESSIBLE),
                        );
                        true
                    }
                    other => {
                        report(&format!(
                            "install of {a:#x} failed: {other:?}; page kept compressed"
                        ));
                        false
                    }
                }
            }
            PageState::Hole
            | PageState::Absent
            | PageState::Unregistered
            | PageState::Resident
            | PageState::Node { .. } => true,
        }
    }

    pub(super) fn flush_hint_dirty(&self, st: &mut State) {
        for slot in st.hint_dirty.drain(..) {
            // SAFETY: drops the page of a hint slot of our staging mapping, whose owner has already
            // moved on (the slot is dirty).
            unsafe {
                sys::madvise(
                    self.hint_base + slot as usize * PAGE,
                    PAGE,
                    libc::MADV_DONTNEED,
                )
            };
        }
    }
}

/// The fault thread's buffers for fault-around, kept between faults.
#[derive(Default)]
struct FaultAroundBufs {
    range: RangeBufs,
    was_compressed: Vec<usize>,
}

/// A page-aligned run of zeros at least `len` bytes long (for UFFDIO_COPY).
fn zeros(len: usize) -> *const u8 {
    static Z: OnceLock<usize> = OnceLock::new();
    let base = *Z.get_or_init(|| sys::map_anon(FILL_CHUNK_PAGES * PAGE).unwrap_or(0));
    debug_assert!(len <= FILL_CHUNK_PAGES * PAGE);
    base as *const u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FaultThreads;

    #[test]
    fn per_cpu_fault_threads_cover_the_allowed_cpus_within_the_cap() {
        let cpus = sys::allowed_cpus();
        assert!(!cpus.is_empty(), "sched_getaffinity gave no CPU");
        let per_cpu = fault_cpus(FaultThreads::PerCpu);
        if (2..=FAULT_THREADS_MAX).contains(&cpus.len()) {
            assert_eq!(per_cpu, cpus);
        } else {
            assert!(per_cpu.is_empty(), "one CPU or more than the cap: one unpinned thread");
        }
        assert!(fault_cpus(FaultThreads::One).is_empty());
    }

    #[test]
    fn fault_threads_parse_both_spellings_and_refuse_others() {
        assert_eq!("per-cpu".parse::<FaultThreads>(), Ok(FaultThreads::PerCpu));
        assert_eq!("one".parse::<FaultThreads>(), Ok(FaultThreads::One));
        let e = "two".parse::<FaultThreads>().unwrap_err();
        assert!(e.contains("per-cpu") && e.contains("one"), "{e}");
    }
}
