//! fork(2): every page is brought home before the fork (the child's copy of the regions is
//! not registered with our userfaultfd), and the child never uses the runtime. Pages the child
//! still shares cannot move; `recheck_shared` makes them movable once it is gone.

use super::page::{PageState, F_PINNED, F_SHARED};
use super::{get, lock, Runtime, CHILD};
use crate::sys::{self, PAGE};
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------- fork

/// Run `f` with every signal blocked (a program's handler must not run while this thread
/// holds the state lock).
fn signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: the sigsets are locals, and the old mask is restored before returning.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let r = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

pub(super) extern "C" fn atfork_prepare() {
    signals_blocked(atfork_prepare_inner)
}

fn atfork_prepare_inner() {
    let Some(rt) = get() else { return };
    let _g = crate::InternalGuard::new();
    // Stop eviction and sampling, then bring every page home: the child's copy of the
    // regions is not registered with our userfaultfd, so it must hold all the data itself.
    {
        let mut st = lock(rt);
        st.frozen = true;
        st.forks += 1;
    }
    rt.untier(rt.arena, rt.arena_pages as usize * PAGE, None);
}

pub(super) extern "C" fn atfork_parent() {
    let Some(rt) = get() else { return };
    let _g = crate::InternalGuard::new();
    signals_blocked(|| lock(rt).frozen = false);
}

pub(super) extern "C" fn atfork_child() {
    CHILD.store(true, Ordering::SeqCst);
}

// ------------------------------------------------------- pages shared with a child

/// How often pages found shared with a fork child are looked at again.
pub const SHARED_RECHECK_NS: u64 = 1_000_000_000;

/// /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const PM_PRESENT: u64 = 1 << 63;
const PM_MMAP_EXCLUSIVE: u64 = 1 << 56;

impl Runtime {
    /// Make pages movable again once no fork child maps them. While a child lives its copy
    /// is the same physical page, so evicting the parent's mapping would save nothing and the
    /// kernel refuses to move it; those pages carry `F_SHARED` and moves skip them. When the
    /// child is gone the kernel still treats the parent's page as possibly shared until a
    /// write fault reuses it, so every move would keep failing. A flagged page that
    /// /proc/self/pagemap reports mapped once is write-faulted in place with
    /// MADV_POPULATE_WRITE (no copy, the data unchanged) and loses the flag.
    pub fn recheck_shared(&self) {
        let runs = self.shared_runs();
        if runs.is_empty() {
            return;
        }
        let Ok(pagemap) = std::fs::File::open("/proc/self/pagemap") else {
            return;
        };
        let mut entries: Vec<u8> = Vec::new();
        let mut movable: Vec<(usize, usize)> = Vec::new();
        for (start, len) in runs {
            entries.resize(len * 8, 0);
            let off = (self.addr(start) / PAGE * 8) as u64;
            if pagemap.read_exact_at(&mut entries, off).is_err() {
                continue;
            }
            let mut run_start = None;
            for k in 0..=len {
                let exclusive = k < len && {
                    let e = u64::from_ne_bytes(entries[k * 8..k * 8 + 8].try_into().unwrap());
                    e & PM_PRESENT != 0 && e & PM_MMAP_EXCLUSIVE != 0
                };
                match (exclusive, run_start) {
                    (true, None) => run_start = Some(k),
                    (false, Some(s)) => {
                        movable.push((start + s, k - s));
                        run_start = None;
                    }
                    _ => {}
                }
            }
        }
        for (start, len) in movable {
            let (addr, bytes) = (self.addr(start), len * PAGE);
            // SAFETY: the range is our own arena, mapped read-write and holding data (pinned
            // pages are never flagged); MADV_POPULATE_WRITE only write-faults present pages
            // in place, so no byte changes. Called without the state lock: a page the program
            // dropped meanwhile faults to our handler, which needs that lock.
            let r = unsafe { sys::madvise(addr, bytes, libc::MADV_POPULATE_WRITE) };
            if r == 0 {
                let mut st = lock(self);
                for i in start..start + len {
                    st.pages[i].flags &= !F_SHARED;
                }
            }
        }
    }

    /// Runs (first page, pages) of resident pages flagged shared, not pinned.
    fn shared_runs(&self) -> Vec<(usize, usize)> {
        let mut st = lock(self);
        let mut runs: Vec<(usize, usize)> = Vec::new();
        if !st.maybe_shared {
            return runs;
        }
        let mut any = false;
        for (i, p) in st.pages[..st.hwm as usize].iter().enumerate() {
            any |= p.flags & F_SHARED != 0;
            let flagged = p.flags & F_SHARED != 0
                && p.flags & F_PINNED == 0
                && p.state == PageState::Resident;
            if !flagged {
                continue;
            }
            match runs.last_mut() {
                Some((s, l)) if *s + *l == i => *l += 1,
                _ => runs.push((i, 1)),
            }
        }
        // No flag left (pinned ones count: unpinned, they need the recheck): a flag set
        // later sets the hint again, under this same lock.
        st.maybe_shared = any;
        runs
    }
}
