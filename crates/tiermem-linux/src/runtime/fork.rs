//! fork(2): every page is brought home before the fork (the child's copy of the regions is
//! not registered with our userfaultfd), and the child never uses the runtime.

use super::{get, lock, CHILD};
use crate::sys::PAGE;
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
