//! C++ `operator new` / `operator delete`, every variant of the Itanium ABI.
//!
//! tiermem's own C++ code (HiGHS, the solver of `tierscape_analytical`, runs on the manager
//! thread inside the program) must allocate from glibc like the rest of tiermem: a program
//! linked with jemalloc exports jemalloc's `operator new`, which the preload's references
//! bound to, so HiGHS's vectors came from jemalloc and went back through paths that ended in
//! glibc's free (Redis aborted: "free(): invalid pointer"), and jemalloc's locks could be
//! held across a call into tiermem. Here, on a tiermem thread each operator is libstdc++'s
//! (which allocates with `malloc`/`free`, i.e. the preload's, i.e. glibc for tiermem's
//! threads); on a program thread each is the one the program had without the preload (the
//! next definition: jemalloc's, tcmalloc's or libstdc++'s), so the program is unchanged.
//! "C-unwind": `std::bad_alloc` thrown by the operator forwarded to passes through.

#![allow(non_snake_case)]

use libc::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Address of `name` for tiermem's threads (libstdc++'s) or the program's (RTLD_NEXT).
fn lookup(name: &std::ffi::CStr, internal: bool) -> usize {
    let handle = if internal {
        // RTLD_NOLOAD: a handle only when libstdc++ is loaded already (the preload links
        // it); never closed, as the library stays loaded.
        // SAFETY: dlopen of a NUL-terminated name with RTLD_NOLOAD loads nothing.
        let h = unsafe {
            libc::dlopen(
                c"libstdc++.so.6".as_ptr(),
                libc::RTLD_NOLOAD | libc::RTLD_LAZY,
            )
        };
        if h.is_null() {
            libc::RTLD_NEXT
        } else {
            h
        }
    } else {
        libc::RTLD_NEXT
    };
    // SAFETY: dlsym with a valid handle and a NUL-terminated name only looks a symbol up.
    unsafe { libc::dlsym(handle, name.as_ptr()) as usize }
}

/// [`lookup`], cached in `slot` (0: not found, looked up again next time).
fn cached(slot: &AtomicUsize, name: &std::ffi::CStr, internal: bool) -> usize {
    let mut f = slot.load(Ordering::Acquire);
    if f == 0 {
        f = lookup(name, internal);
        slot.store(f, Ordering::Release);
    }
    f
}

/// A resolved operator, cached per (operator, kind of thread).
fn target(slot: &[AtomicUsize; 2], name: &std::ffi::CStr) -> usize {
    let internal = tiermem_linux::in_internal();
    let f = cached(&slot[internal as usize], name, internal);
    if f == 0 {
        // No C++ runtime at all: nothing can call these then.
        tiermem_linux::runtime::report_fatal("no C++ operator new/delete to forward to; aborting");
        std::process::abort();
    }
    f
}

macro_rules! forward {
    ($( $name:ident ( $($arg:ident : $ty:ty),* ) $(-> $ret:ty)? ; )*) => {$(
        /// # Safety
        /// Exported as the C++ operator of this mangled name: callers follow its contract.
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) $(-> $ret)? {
            static SLOT: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
            let f = target(&SLOT, &{
                const N: &str = concat!(stringify!($name), "\0");
                // SAFETY: N ends with its only NUL.
                unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(N.as_bytes()) }
            });
            // `f` is this operator's definition in libstdc++ or the next object.
            // SAFETY: `f` has exactly this signature (dlsym by its mangled name).
            unsafe {
                std::mem::transmute::<usize, unsafe extern "C-unwind" fn($($ty),*) $(-> $ret)?>(f)($($arg),*)
            }
        }
    )*};
}

forward! {
    _Znwm(n: usize) -> *mut c_void;
    _Znam(n: usize) -> *mut c_void;
    _ZnwmRKSt9nothrow_t(n: usize, nt: *const c_void) -> *mut c_void;
    _ZnamRKSt9nothrow_t(n: usize, nt: *const c_void) -> *mut c_void;
    _ZnwmSt11align_val_t(n: usize, al: usize) -> *mut c_void;
    _ZnamSt11align_val_t(n: usize, al: usize) -> *mut c_void;
    _ZnwmSt11align_val_tRKSt9nothrow_t(n: usize, al: usize, nt: *const c_void) -> *mut c_void;
    _ZnamSt11align_val_tRKSt9nothrow_t(n: usize, al: usize, nt: *const c_void) -> *mut c_void;
    _ZdlPv(p: *mut c_void);
    _ZdaPv(p: *mut c_void);
    _ZdlPvm(p: *mut c_void, n: usize);
    _ZdaPvm(p: *mut c_void, n: usize);
    _ZdlPvRKSt9nothrow_t(p: *mut c_void, nt: *const c_void);
    _ZdaPvRKSt9nothrow_t(p: *mut c_void, nt: *const c_void);
    _ZdlPvSt11align_val_t(p: *mut c_void, al: usize);
    _ZdaPvSt11align_val_t(p: *mut c_void, al: usize);
    _ZdlPvmSt11align_val_t(p: *mut c_void, n: usize, al: usize);
    _ZdaPvmSt11align_val_t(p: *mut c_void, n: usize, al: usize);
    _ZdlPvSt11align_val_tRKSt9nothrow_t(p: *mut c_void, al: usize, nt: *const c_void);
    _ZdaPvSt11align_val_tRKSt9nothrow_t(p: *mut c_void, al: usize, nt: *const c_void);
}

/// Static objects that tiermem's threads construct (HiGHS's function-local statics, built
/// on the manager thread at the first solve) are never destroyed at exit: their memory came
/// from tiermem's allocator, while exit handlers run on a program thread, whose `operator
/// delete` is the program's (Redis: jemalloc's, which crashed freeing them). The process is
/// ending; the kernel takes the memory back. Every other registration is glibc's.
///
/// # Safety
/// Exported as `__cxa_atexit`: callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn __cxa_atexit(
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    dso: *mut c_void,
) -> libc::c_int {
    if tiermem_linux::in_internal() {
        return 0;
    }
    // SAFETY: the caller's registration, passed on unchanged.
    unsafe { glibc_cxa_atexit(f, arg, dso) }
}

/// Register tiermem's own exit handler with glibc (`atexit` would come back through
/// `__cxa_atexit` above, from a thread marked internal, and be dropped).
pub fn register_at_exit(f: unsafe extern "C" fn(*mut c_void)) -> bool {
    // SAFETY: `f` is a function of this library, which is never unloaded; no argument.
    unsafe { glibc_cxa_atexit(Some(f), std::ptr::null_mut(), std::ptr::null_mut()) == 0 }
}

/// glibc's `__cxa_atexit` (the next definition after ours).
// SAFETY: unsafe to call: the arguments follow `__cxa_atexit`'s contract.
unsafe fn glibc_cxa_atexit(
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    dso: *mut c_void,
) -> libc::c_int {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let next = cached(&NEXT, c"__cxa_atexit", false);
    if next == 0 {
        return -1;
    }
    type CxaAtexit = unsafe extern "C" fn(
        Option<unsafe extern "C" fn(*mut c_void)>,
        *mut c_void,
        *mut c_void,
    ) -> libc::c_int;
    // SAFETY: `next` is glibc's __cxa_atexit (dlsym), which has this signature.
    unsafe { std::mem::transmute::<usize, CxaAtexit>(next)(f, arg, dso) }
}
