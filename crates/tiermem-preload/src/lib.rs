//! LD_PRELOAD shim. Routes a program's large anonymous memory into tiermem managed
//! regions and keeps the runtime's page table right when the program changes that memory:
//!
//! | call                         | managed range                                           |
//! |------------------------------|---------------------------------------------------------|
//! | mmap anon private RW >= min  | a new managed region (no hint address, no MAP_FIXED,    |
//! |                              | not a stack, not locked/shared/huge)                    |
//! | munmap                       | pages become holes, their compressed copies freed       |
//! | mremap                       | page tables move, pool handles move with them           |
//! | madvise DONTNEED / FREE      | pages read as zero (FREE may: zero is one legal result) |
//! | mprotect (not RW), mlock     | pages brought back to DRAM and pinned                   |
//! | malloc/calloc/realloc/memalign >= min (glibc malloc only) | a region with a 4 KiB header |
//! | malloc family < min (glibc malloc only) | mimalloc, whose segments are managed regions   |
//!
//! Everything else goes to the kernel or the real allocator unchanged. While tiermem's own
//! code runs (`tiermem_linux::in_internal`) every call passes straight through.

#![allow(clippy::missing_safety_doc)]

mod cxx;

use libc::{c_int, c_void, off_t, size_t};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tiermem_linux::runtime::{self, Pin, Runtime};
use tiermem_linux::sys::{self, set_errno, PAGE};

extern "C" {
    fn __libc_malloc(n: size_t) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_calloc(n: size_t, m: size_t) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, n: size_t) -> *mut c_void;
    fn __libc_memalign(al: size_t, n: size_t) -> *mut c_void;
}

/// The allocator after us in the lookup order (glibc's, or jemalloc/tcmalloc when the
/// program links one): resolved lazily; glibc's entry points until then.
struct Next {
    malloc: AtomicUsize,
    free: AtomicUsize,
    calloc: AtomicUsize,
    realloc: AtomicUsize,
    memalign: AtomicUsize,
    usable: AtomicUsize,
}
static NEXT: Next = Next {
    malloc: AtomicUsize::new(0),
    free: AtomicUsize::new(0),
    calloc: AtomicUsize::new(0),
    realloc: AtomicUsize::new(0),
    memalign: AtomicUsize::new(0),
    usable: AtomicUsize::new(0),
};
static RESOLVED: AtomicBool = AtomicBool::new(false);
static RESOLVING: AtomicBool = AtomicBool::new(false);

fn resolve() {
    if RESOLVED.load(Ordering::Acquire) || RESOLVING.swap(true, Ordering::AcqRel) {
        return;
    }
    let sym = |n: &std::ffi::CStr, fallback: usize| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, n.as_ptr()) } as usize;
        if p == 0 {
            fallback
        } else {
            p
        }
    };
    NEXT.malloc.store(
        sym(c"malloc", __libc_malloc as *const () as usize),
        Ordering::Release,
    );
    NEXT.free.store(
        sym(c"free", __libc_free as *const () as usize),
        Ordering::Release,
    );
    NEXT.calloc.store(
        sym(c"calloc", __libc_calloc as *const () as usize),
        Ordering::Release,
    );
    NEXT.realloc.store(
        sym(c"realloc", __libc_realloc as *const () as usize),
        Ordering::Release,
    );
    NEXT.memalign.store(
        sym(c"memalign", __libc_memalign as *const () as usize),
        Ordering::Release,
    );
    NEXT.usable
        .store(sym(c"malloc_usable_size", 0), Ordering::Release);
    RESOLVED.store(true, Ordering::Release);
}

#[inline]
fn next(slot: &AtomicUsize) -> usize {
    if !RESOLVED.load(Ordering::Acquire) {
        resolve();
    }
    slot.load(Ordering::Acquire)
}

/// # Safety
/// `n` as malloc(3) takes it; the result is the next allocator's block.
unsafe fn next_malloc(n: size_t) -> *mut c_void {
    match next(&NEXT.malloc) {
        // SAFETY: glibc's own malloc, called as malloc(3).
        0 => unsafe { __libc_malloc(n) },
        // SAFETY: `f` is the next allocator's `malloc` (dlsym), which has this signature.
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(size_t) -> *mut c_void>(f)(n)
        },
    }
}
/// # Safety
/// `p` is null or a live block of the next allocator (or glibc's), not used afterwards.
unsafe fn next_free(p: *mut c_void) {
    match next(&NEXT.free) {
        // SAFETY: glibc's own free, for a block the caller says is glibc's (or the next
        // allocator's, which is glibc then).
        0 => unsafe { __libc_free(p) },
        // SAFETY: `f` is the next allocator's `free` (dlsym), which has this signature; `p` is its
        // block (caller's contract).
        f => unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(f)(p) },
    }
}
// The next allocator's calloc/realloc/memalign, or glibc's (like `next_malloc`) while the
// symbol is not resolved yet: during `resolve` itself (dlsym may allocate, which comes back
// here) or in another thread meanwhile. The slot is a parameter for the tests.
/// # Safety
/// The arguments of calloc(3).
unsafe fn next_calloc(n: size_t, m: size_t) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as calloc(3) takes them.
    unsafe { calloc_via(next(&NEXT.calloc), n, m) }
}
/// # Safety
/// `f` is 0 or the address of a function with calloc(3)'s signature; the arguments of calloc(3).
unsafe fn calloc_via(f: usize, n: size_t, m: size_t) -> *mut c_void {
    match f {
        // SAFETY: glibc's own calloc, called as calloc(3).
        0 => unsafe { __libc_calloc(n, m) },
        // SAFETY: `f` is a calloc with this signature (the caller's contract).
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(size_t, size_t) -> *mut c_void>(f)(
                n, m,
            )
        },
    }
}
/// # Safety
/// `p` is null or a live block of the next allocator (glibc's before resolution).
unsafe fn next_realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as realloc(3) takes them.
    unsafe { realloc_via(next(&NEXT.realloc), p, n) }
}
/// # Safety
/// `f` is 0 or the address of a function with realloc(3)'s signature; `p` is null or a live block
/// of that allocator (glibc's when `f` is 0).
unsafe fn realloc_via(f: usize, p: *mut c_void, n: size_t) -> *mut c_void {
    match f {
        // SAFETY: glibc's own realloc, for a block of glibc's (the caller's contract).
        0 => unsafe { __libc_realloc(p, n) },
        // SAFETY: `f` is a realloc with this signature and `p` its block (the caller's contract).
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void>(
                f,
            )(p, n)
        },
    }
}
/// # Safety
/// The arguments of memalign(3).
unsafe fn next_memalign(al: size_t, n: size_t) -> *mut c_void {
    // SAFETY: the caller's arguments, passed on as memalign(3) takes them.
    unsafe { memalign_via(next(&NEXT.memalign), al, n) }
}
/// # Safety
/// `f` is 0 or the address of a function with memalign(3)'s signature; the arguments of
/// memalign(3).
unsafe fn memalign_via(f: usize, al: size_t, n: size_t) -> *mut c_void {
    match f {
        // SAFETY: glibc's own memalign, called as memalign(3).
        0 => unsafe { __libc_memalign(al, n) },
        // SAFETY: `f` is a memalign with this signature (the caller's contract).
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(size_t, size_t) -> *mut c_void>(f)(
                al, n,
            )
        },
    }
}

static MIN_REGION: AtomicUsize = AtomicUsize::new(usize::MAX);
static MANAGE_MALLOC: AtomicBool = AtomicBool::new(false);
static READY: AtomicBool = AtomicBool::new(false);
const MAGIC: u64 = 0x7469_6572_6d65_6d21; // "tiermem!"

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

extern "C" fn init() {
    let _g = enter();
    tiermem_linux::init_internal_key();
    // Whether this process's lines also go to stderr (`tiermem run --verbose`): read before
    // any line (runtime/log.rs).
    runtime::log::from_env();
    let cfg: tiermem_linux::config::RuntimeConfig = match std::env::var("TIERMEM_CONFIG_JSON") {
        Ok(j) => match tiermem_linux::config::RuntimeConfig::from_wire_json(&j) {
            Ok(c) => c,
            Err(e) => {
                runtime::log::set_run_dir(&tiermem_linux::config::default_run_dir(), "0600");
                runtime::report(&format!(
                    "bad TIERMEM_CONFIG_JSON ({e}); not managing memory"
                ));
                return;
            }
        },
        Err(_) => Default::default(),
    };
    if std::env::var_os("TIERMEM_DISABLE").is_some() {
        return;
    }
    let min = cfg.min_region_bytes().max(PAGE as u64) as usize;
    // Nothing is ever evicted at an unlimited budget with no policy and no SLO controller
    // (unless `tiermem budget` sets one later): the program should run as it does plain.
    let unlimited = cfg.policy.is_none()
        && cfg.slo_config().is_none()
        && matches!(cfg.budget(), tiermem_linux::config::Budget::Unlimited);
    // Manage malloc only when the program's malloc is glibc's (a program linked with
    // jemalloc or tcmalloc gets its memory through mmap, which we see anyway).
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, c"malloc".as_ptr()) };
    let glibc = next.is_null() || std::ptr::eq(next as *const (), __libc_malloc as *const ());
    match Runtime::init(cfg) {
        Ok(_) => {
            MIN_REGION.store(min, Ordering::SeqCst);
            MANAGE_MALLOC.store(glibc, Ordering::SeqCst);
            // TIERMEM_SMALL_ALLOC=glibc keeps small blocks in glibc's heap (unmanaged).
            let small_glibc = std::env::var("TIERMEM_SMALL_ALLOC").is_ok_and(|v| v == "glibc");
            if glibc && !small_glibc {
                // mimalloc reserves its arenas 1 GiB at a time: all of it becomes a managed
                // region (untouched pages cost nothing but a row each in the page table and
                // show as "managed" in `tiermem stat`); 64 MiB steps are plenty (it scales
                // the step up by itself after 8 arenas).
                // SAFETY: an option store, before mimalloc's first allocation for us.
                unsafe { mi::mi_option_set(MI_OPTION_ARENA_RESERVE, 64 * 1024) };
                if unlimited {
                    // Reuse instead of give back, as glibc does (its heap is never purged
                    // below its top, and its mmap threshold grows with the blocks freed):
                    // every block size goes to mimalloc, whose segments are managed regions
                    // (adopted if a budget is set later), and freed pages are purged after
                    // 100 ms instead of 10 ms. Each purge and each per-block region cost a
                    // page fault per page reused and a TLB shootdown per unmap: 8 threads
                    // of mmap/calloc/realloc churn spent 3.1 s in the kernel against 0.8 s
                    // plain, 0.7-0.8 s with both (bench/kernel_baseline churn, 2026-12-02).
                    // The price: mimalloc holds more (churn's peak RSS 410 MiB, plain 250).
                    // SAFETY: an option store, before mimalloc's first allocation for us.
                    unsafe { mi::mi_option_set(MI_OPTION_PURGE_DELAY, 100) };
                    BIG_TO_MI.store(true, Ordering::SeqCst);
                }
            }
            SMALL_MI.store(glibc && !small_glibc, Ordering::SeqCst);
            READY.store(true, Ordering::SeqCst);
            cxx::register_at_exit(at_exit);
        }
        Err(e) => {
            if std::env::var_os("TIERMEM_QUIET").is_none() {
                let msg = if e.raw_os_error() == Some(libc::EPERM) {
                    tiermem_linux::uffd::permission_hint()
                } else {
                    e.to_string()
                };
                runtime::report(&format!("not managing memory: {msg}"));
            }
        }
    }
}

extern "C" fn at_exit(_: *mut c_void) {
    if let Some(rt) = runtime::get() {
        let _g = enter();
        // TIERMEM_STATS_OUT=FILE ("%p" = pid): final stats as JSON, for tests and scripts.
        if let Ok(path) = std::env::var("TIERMEM_STATS_OUT") {
            let path = path.replace("%p", &std::process::id().to_string());
            if let Ok(j) = serde_json::to_string_pretty(&rt.stats()) {
                let _ = std::fs::write(path, j);
            }
        }
        rt.stop_publishing();
    }
}

/// Entering the runtime from a program thread: mark the thread internal and block signals
/// until we leave. The runtime's lock may be held in between; a program signal handler
/// that touched managed memory there would wait for a fault that needs that lock.
struct Enter {
    _internal: tiermem_linux::InternalGuard,
    old: libc::sigset_t,
}

fn enter() -> Enter {
    // SAFETY: the sigsets are locals; the old mask is kept in the guard and restored when it drops.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        Enter {
            _internal: tiermem_linux::InternalGuard::new(),
            old,
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `enter` on this same thread.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

#[inline]
fn rt() -> Option<&'static Runtime> {
    if !READY.load(Ordering::Relaxed) || tiermem_linux::in_internal() {
        return None;
    }
    runtime::get()
}

/// The runtime if `addr` is in its arena (also in a forked child: then `None` and `true`).
#[inline]
fn arena_of(addr: usize) -> (Option<&'static Runtime>, bool) {
    if !READY.load(Ordering::Relaxed) {
        return (None, false);
    }
    match runtime::any() {
        Some(r) if r.contains(addr) => (
            if tiermem_linux::in_internal() {
                None
            } else {
                runtime::get()
            },
            true,
        ),
        _ => (None, false),
    }
}

/// The next allocator's malloc_usable_size (ours shadows it).
///
/// # Safety
/// `p` is a live block of the next allocator.
unsafe fn real_usable_size(p: *mut c_void) -> size_t {
    match next(&NEXT.usable) {
        0 => 0,
        // SAFETY: `f` is the next allocator's malloc_usable_size (dlsym) and `p` its block (the
        // caller's contract).
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void) -> size_t>(f)(p)
        },
    }
}

/// Is `p` a block our malloc handed out? Only when we manage malloc: a program with its own
/// allocator (jemalloc) has its small objects inside our regions too, and they are its own.
#[inline]
fn block_of(p: *mut c_void) -> (Option<&'static Runtime>, bool) {
    if !MANAGE_MALLOC.load(Ordering::Relaxed) {
        return (None, false);
    }
    arena_of(p as usize)
}

/// A runtime result: an address, or -errno.
fn ret_map(r: isize) -> *mut c_void {
    if r < 0 && r > -4096 {
        set_errno(-r as i32);
        libc::MAP_FAILED
    } else {
        r as *mut c_void
    }
}

/// A raw syscall(2) result: -1 with errno already set.
fn ret_raw(r: isize) -> *mut c_void {
    if r == -1 {
        libc::MAP_FAILED
    } else {
        r as *mut c_void
    }
}

// ---------------------------------------------------------------- mmap family

/// # Safety
/// Exported as mmap(2): callers follow its contract; managed ranges are changed under the runtime's
/// lock, the rest goes to the kernel unchanged.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    if let Some(rt) = rt() {
        let bad = libc::MAP_FIXED
            | libc::MAP_FIXED_NOREPLACE
            | libc::MAP_STACK
            | libc::MAP_GROWSDOWN
            | libc::MAP_HUGETLB
            | libc::MAP_LOCKED
            | libc::MAP_SHARED
            | libc::MAP_32BIT;
        if addr.is_null()
            && flags & libc::MAP_ANONYMOUS != 0
            && flags & libc::MAP_PRIVATE != 0
            && flags & bad == 0
            && prot == libc::PROT_READ | libc::PROT_WRITE
            && len >= MIN_REGION.load(Ordering::Relaxed)
        {
            let _g = enter();
            if let Some(a) = rt.alloc_region(len) {
                return a as *mut c_void;
            }
        }
        if flags & libc::MAP_ANONYMOUS != 0
            && flags & libc::MAP_PRIVATE != 0
            && !rt.contains(addr as usize)
        {
            use tiermem_linux::runtime::LeftToKernel;
            let why = if prot == libc::PROT_NONE {
                LeftToKernel::Reserved
            } else if !addr.is_null() {
                LeftToKernel::Placed
            } else {
                LeftToKernel::Other
            };
            rt.note_left_to_kernel(why, len);
        }
        if flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0 && rt.contains(addr as usize)
        {
            let _g = enter();
            if flags & libc::MAP_FIXED_NOREPLACE != 0 {
                set_errno(libc::EEXIST);
                return libc::MAP_FAILED;
            }
            rt.foreign(addr as usize, len);
        }
    }
    // SAFETY: the caller's mmap(2) arguments, unchanged, straight to the kernel.
    ret_raw(unsafe { sys::mmap(addr as usize, len, prot, flags, fd, off) })
}

/// # Safety
/// Exported as mmap64(2): the contract of mmap(2).
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments, unchanged (mmap's contract).
    unsafe { mmap(addr, len, prot, flags, fd, off) }
}

/// # Safety
/// Exported as munmap(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        if !(addr as usize).is_multiple_of(PAGE) || len == 0 {
            set_errno(libc::EINVAL);
            return -1;
        }
        let _g = enter();
        return rt.release(addr as usize, len);
    }
    // SAFETY: the caller's munmap(2) of memory outside our arena, unchanged.
    if unsafe { sys::munmap(addr as usize, len) } < 0 {
        return -1;
    }
    0
}

/// # Safety
/// Exported as mremap(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    if let (Some(rt), true) = arena_of(old as usize) {
        let _g = enter();
        return ret_map(rt.remap(old as usize, old_len, new_len, flags, new_addr as usize));
    }
    // SAFETY: the caller's mremap(2) of memory outside our arena, unchanged.
    ret_raw(unsafe { sys::mremap(old as usize, old_len, new_len, flags, new_addr as usize) })
}

/// # Safety
/// Exported as madvise(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        const MADV_DONTNEED_LOCKED: c_int = 24;
        match advice {
            libc::MADV_DONTNEED | MADV_DONTNEED_LOCKED => {
                let _g = enter();
                return neg_errno(rt.dontneed(addr as usize, len, advice));
            }
            // After MADV_FREE the contents are either kept or zero until the next write;
            // zero (like DONTNEED) frees the DRAM and the pool space, which is the point
            // of the call (mimalloc frees its unused pages this way).
            libc::MADV_FREE => {
                let _g = enter();
                return neg_errno(rt.dontneed(addr as usize, len, libc::MADV_DONTNEED));
            }
            _ => {}
        }
    }
    // SAFETY: the caller's madvise(2), unchanged (managed DONTNEED/FREE were handled above).
    neg_errno(unsafe { sys::madvise(addr as usize, len, advice) })
}

/// A raw syscall(2) result (-1 with errno set) as the libc function returns it.
fn neg_errno(r: c_int) -> c_int {
    if r < 0 {
        -1
    } else {
        r
    }
}

/// # Safety
/// Exported as mprotect(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        if prot == libc::PROT_READ | libc::PROT_WRITE {
            // Unpin only once the range is writable again: the kernel refuses to move a
            // page out of a read-only mapping, so an eviction in between would fail.
            // SAFETY: the caller's mprotect(2) on its own range (making it read-write again).
            let r = unsafe { sys::mprotect(addr as usize, len, prot) };
            if r == 0 {
                rt.unpin(addr as usize, len, Pin::Protect);
            }
            return neg_errno(r);
        }
        rt.untier(addr as usize, len, Some(Pin::Protect));
    }
    // SAFETY: the caller's mprotect(2), after its managed pages were brought home and pinned.
    neg_errno(unsafe { sys::mprotect(addr as usize, len, prot) })
}

/// # Safety
/// Exported as mlock(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn mlock(addr: *const c_void, len: size_t) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        rt.untier(addr as usize, len, Some(Pin::Lock));
    }
    // SAFETY: the caller's mlock(2), unchanged; it does not touch memory contents.
    neg_errno(unsafe { libc::syscall(libc::SYS_mlock, addr, len) } as c_int)
}

/// # Safety
/// Exported as mlock2(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn mlock2(addr: *const c_void, len: size_t, flags: libc::c_uint) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        rt.untier(addr as usize, len, Some(Pin::Lock));
    }
    // SAFETY: the caller's mlock2(2), unchanged; it does not touch memory contents.
    neg_errno(unsafe { libc::syscall(libc::SYS_mlock2, addr, len, flags) } as c_int)
}

/// # Safety
/// Exported as munlock(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn munlock(addr: *const c_void, len: size_t) -> c_int {
    // SAFETY: the caller's munlock(2), unchanged; it does not touch memory contents.
    let r = unsafe { libc::syscall(libc::SYS_munlock, addr, len) } as c_int;
    // After the syscall: an mlocked page cannot be moved, so unpinning first would let an
    // eviction fail in between.
    if let (0, (Some(rt), true)) = (r, arena_of(addr as usize)) {
        let _g = enter();
        rt.unpin(addr as usize, len, Pin::Lock);
    }
    neg_errno(r)
}

/// # Safety
/// Exported as mlockall(2): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn mlockall(flags: c_int) -> c_int {
    if let Some(rt) = rt() {
        let _g = enter();
        // Everything becomes resident and pinned; new regions stop being created.
        MIN_REGION.store(usize::MAX, Ordering::SeqCst);
        rt.untier(rt.arena, rt.arena_pages as usize * PAGE, Some(Pin::Lock));
    }
    // SAFETY: the caller's mlockall(2), unchanged; it does not touch memory contents.
    neg_errno(unsafe { libc::syscall(libc::SYS_mlockall, flags) } as c_int)
}

// ---------------------------------------------------------------- malloc family
//
// Who owns a block, checked in this order (the owner's free/realloc must get it back):
//   1. mimalloc (`mi_is_in_heap_region`): small blocks, allocated once the runtime is up
//      in a program whose malloc is glibc's. mimalloc's own mmap calls reach our `mmap`,
//      so its segments are managed regions and the budget covers the small-object heap.
//   2. a managed block of ours (in the arena, header page with MAGIC): blocks >= the
//      minimum region size, one region each (realloc moves page tables, no copy).
//   3. the next allocator (glibc): blocks from before the runtime was up, tiermem's own
//      allocations, and everything when the program brings its own allocator.

use libmimalloc_sys as mi;

/// `mi_option_arena_reserve` in mimalloc v2's `mi_option_t` (include/mimalloc.h: the 24th; the
/// crate's constants follow v3's numbering), in KiB.
const MI_OPTION_ARENA_RESERVE: mi::mi_option_t = 23;
/// `mi_option_purge_delay` (ms before freed memory is given back; mimalloc.h, v2: 15).
const MI_OPTION_PURGE_DELAY: mi::mi_option_t = 15;
/// Blocks of every size go to mimalloc (`--dram-budget unlimited`, no policy, no SLO).
static BIG_TO_MI: AtomicBool = AtomicBool::new(false);

/// Small blocks go to mimalloc (set at init when the program's malloc is glibc's and the
/// runtime runs; stays set in a forked child, where mimalloc keeps working on plain memory).
static SMALL_MI: AtomicBool = AtomicBool::new(false);

#[inline]
fn small_mi() -> bool {
    SMALL_MI.load(Ordering::Relaxed)
}

/// Is `p` a mimalloc block? Only when mimalloc is in use: its segment map is a lookup.
#[inline]
fn is_mi(p: *mut c_void) -> bool {
    // SAFETY: mi_is_in_heap_region only reads mimalloc's segment map for any address.
    small_mi() && unsafe { mi::mi_is_in_heap_region(p) }
}

#[inline]
fn big(n: usize) -> Option<&'static Runtime> {
    if n >= MIN_REGION.load(Ordering::Relaxed)
        && MANAGE_MALLOC.load(Ordering::Relaxed)
        && !BIG_TO_MI.load(Ordering::Relaxed)
    {
        rt()
    } else {
        None
    }
}

/// A managed block: region = [header page][user bytes...].
///
/// # Safety
/// `rt` is the live runtime; the result is a block for malloc's caller (free it with our free).
unsafe fn big_alloc(rt: &Runtime, n: usize) -> *mut c_void {
    let total = match n.checked_add(2 * PAGE) {
        Some(t) => sys::page_up(t - PAGE),
        None => return std::ptr::null_mut(),
    };
    let region = {
        let _g = enter();
        rt.alloc_region(total)
    };
    match region {
        Some(r) => {
            // Written outside the runtime's lock (a first-touch fault is served normally).
            let h = r as *mut u64;
            // SAFETY: `r` is the start of the region just allocated for us (at least two pages):
            // its header page is ours.
            unsafe {
                h.write(MAGIC);
                h.add(1).write(total as u64);
                h.add(2).write(n as u64);
            }
            (r + PAGE) as *mut c_void
        }
        // SAFETY: a plain allocation of `n` bytes.
        None => unsafe { small_alloc(n) },
    }
}

/// A block below the region size (or a big one the arena could not take).
///
/// # Safety
/// The contract of malloc(3).
unsafe fn small_alloc(n: usize) -> *mut c_void {
    if small_mi() {
        // SAFETY: plain allocation call.
        unsafe { mi::mi_malloc(n) }
    } else {
        // SAFETY: a plain allocation of `n` bytes from the next allocator.
        unsafe { next_malloc(n) }
    }
}

/// (region start, region bytes, user bytes) of a managed block, if `p` is one.
///
/// # Safety
/// `p` is a block this library's malloc handed out from the arena (callers check `block_of` first):
/// when it is page-aligned, the page before it is its header page.
unsafe fn header(p: *mut c_void) -> Option<(usize, usize, usize)> {
    let a = p as usize;
    if !a.is_multiple_of(PAGE) {
        return None;
    }
    let h = (a - PAGE) as *const u64;
    // SAFETY: `a` is a page-aligned block of ours (caller's contract), so [a - PAGE, a) is its
    // mapped header page.
    unsafe {
        if h.read() != MAGIC {
            return None;
        }
        Some((a - PAGE, h.add(1).read() as usize, h.add(2).read() as usize))
    }
}

/// # Safety
/// `p` is a managed block handed out by `big_alloc`, not used afterwards.
unsafe fn big_free(rt: Option<&Runtime>, p: *mut c_void) {
    // SAFETY: `p` is a managed block (caller's contract).
    match unsafe { header(p) } {
        Some((r, total, _)) => {
            // SAFETY: `r` is the block's header page, ours; clearing MAGIC makes a double free a
            // no-op.
            unsafe { (r as *mut u64).write(0) };
            match rt {
                Some(rt) => {
                    let _g = enter();
                    rt.release(r, total);
                }
                // Forked child: plain memory now.
                // SAFETY: in a forked child the region is plain memory of this process and this
                // block owns it.
                None => unsafe {
                    sys::munmap(r, total);
                },
            }
        }
        // A pointer into the arena that is no block: the program's heap is corrupt (glibc
        // would abort here with "free(): invalid pointer").
        None => runtime::report_fatal(&format!(
            "free({p:p}): not a block tiermem handed out; ignored"
        )),
    }
}

/// Usable bytes of a block of any owner.
///
/// # Safety
/// `p` is a live block of any owner.
unsafe fn usable(p: *mut c_void) -> usize {
    if is_mi(p) {
        // SAFETY: p is a live mimalloc block.
        return unsafe { mi::mi_usable_size(p) };
    }
    if let (_, true) = block_of(p) {
        // SAFETY: `p` lies in the arena and is page-aligned or refused by `header`, whose page before it is ours.
        return match unsafe { header(p) } {
            Some((_, total, _)) => total - PAGE,
            None => 0,
        };
    }
    // SAFETY: `p` is not ours or mimalloc's: a block of the next allocator.
    unsafe { real_usable_size(p) }
}

/// # Safety
/// Exported as malloc(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn malloc(n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        // tiermem's own allocations always come from glibc, never from the program's
        // allocator: jemalloc may hold its locks while calling mmap, which waits for
        // tiermem's state lock; tiermem must never wait for jemalloc's locks in turn.
        // SAFETY: glibc's own malloc, called as malloc(3), for tiermem's own allocations.
        return unsafe { __libc_malloc(n) };
    }
    if let Some(rt) = big(n) {
        // SAFETY: `rt` is the live runtime and `n` at least the region size.
        return unsafe { big_alloc(rt, n) };
    }
    // SAFETY: a plain allocation of `n` bytes.
    unsafe { small_alloc(n) }
}

/// # Safety
/// Exported as free(3): `p` is null or a live block from this library's malloc family.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if tiermem_linux::in_internal() {
        // A block a library's own worker thread (a program thread to us) allocated and
        // tiermem's thread frees: mimalloc's, which takes frees from any thread. Handing it
        // to glibc would corrupt glibc's heap.
        if is_mi(p) {
            // SAFETY: p is a mimalloc block.
            return unsafe { mi::mi_free(p) };
        }
        // SAFETY: tiermem's own blocks come from glibc (`malloc` above).
        return unsafe { __libc_free(p) };
    }
    if is_mi(p) {
        // SAFETY: p is a mimalloc block.
        return unsafe { mi::mi_free(p) };
    }
    if let (rt, true) = block_of(p) {
        // SAFETY: `p` is a managed block (block_of found it in the arena with our malloc active).
        return unsafe { big_free(rt, p) };
    }
    // SAFETY: `p` is not mimalloc's nor ours: the next allocator's.
    unsafe { next_free(p) }
}

/// # Safety
/// Exported as cfree: the contract of free(3).
#[no_mangle]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: the caller's block, as free(3) takes it.
    unsafe { free(p) }
}

/// # Safety
/// Exported as calloc(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, m: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        // SAFETY: glibc's own calloc, for tiermem's own allocations.
        return unsafe { __libc_calloc(n, m) };
    }
    let Some(t) = n.checked_mul(m) else {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    if let Some(rt) = big(t) {
        // Fresh managed pages read as zero.
        // SAFETY: `rt` is the live runtime and `t` at least the region size.
        return unsafe { big_alloc(rt, t) };
    }
    if small_mi() {
        // SAFETY: plain allocation call.
        return unsafe { mi::mi_calloc(n, m) };
    }
    // SAFETY: the caller's arguments, as calloc(3) takes them.
    unsafe { next_calloc(n, m) }
}

/// Move a block to a new owner: allocate `n` bytes with `malloc`, copy, free the old.
///
/// # Safety
/// `p` is a live block of `old_usable` usable bytes from this library's malloc family; it is freed.
unsafe fn realloc_by_copy(p: *mut c_void, old_usable: usize, n: usize) -> *mut c_void {
    // SAFETY: a plain allocation of `n` bytes.
    let q = unsafe { malloc(n) };
    if q.is_null() {
        return q;
    }
    // SAFETY: `p` holds at least `old_usable` bytes, `q` at least `n`, and they are different blocks.
    unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old_usable.min(n)) };
    // SAFETY: `p` is a live block the program handed to realloc; it is not used after this.
    unsafe { free(p) };
    q
}

/// # Safety
/// Exported as realloc(3): `p` is null or a live block from this library's malloc family.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        // SAFETY: tiermem's own blocks come from glibc (`malloc` above).
        return unsafe { __libc_realloc(p, n) };
    }
    if p.is_null() {
        // SAFETY: realloc(NULL, n) is malloc(n).
        return unsafe { malloc(n) };
    }
    if is_mi(p) {
        if n == 0 {
            // SAFETY: realloc(p, 0) frees `p`, a live mimalloc block.
            unsafe { free(p) };
            return std::ptr::null_mut();
        }
        if big(n).is_some() {
            // Growing past the region size: becomes a managed block of its own.
            // SAFETY: p is a live mimalloc block.
            let old = unsafe { mi::mi_usable_size(p) };
            // SAFETY: `p` is a live mimalloc block of `old` usable bytes.
            return unsafe { realloc_by_copy(p, old, n) };
        }
        // SAFETY: p is a live mimalloc block.
        return unsafe { mi::mi_realloc(p, n) };
    }
    if let (rt, true) = block_of(p) {
        // SAFETY: `p` lies in the arena with our malloc active (block_of).
        let Some((r, total, _)) = (unsafe { header(p) }) else {
            runtime::report_fatal(&format!("realloc({p:p}): not a block tiermem handed out"));
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        if n == 0 {
            // SAFETY: realloc(p, 0) frees `p`, a live managed block.
            unsafe { free(p) };
            return std::ptr::null_mut();
        }
        if let (Some(rt), true) = (rt, n >= MIN_REGION.load(Ordering::Relaxed)) {
            // Grow or shrink the region itself: page tables and compressed pages move, no copy.
            let new_total = sys::page_up(n + PAGE);
            let moved = {
                let _g = enter();
                rt.remap(r, total, new_total, libc::MREMAP_MAYMOVE, 0)
            };
            if moved >= 0 {
                let h = moved as usize as *mut u64;
                // SAFETY: `moved` is the start of the remapped region, whose header page moved with
                // it.
                unsafe {
                    h.add(1).write(new_total as u64);
                    h.add(2).write(n as u64);
                }
                return (moved as usize + PAGE) as *mut c_void;
            }
        }
        // Every usable byte moves, not only the `used` ones asked for: malloc_usable_size
        // promised the program the rest of the region (`usable`).
        // SAFETY: `p` is a live managed block of `total - PAGE` usable bytes.
        return unsafe { realloc_by_copy(p, total - PAGE, n) };
    }
    // A block of the next allocator (from before the runtime was up, or the program's
    // own allocator's).
    if big(n).is_some() || (small_mi() && n > 0) {
        // Moves to one of ours (its `free` goes back to the next allocator).
        // SAFETY: `p` is a live block of the next allocator with that many usable bytes.
        return unsafe { realloc_by_copy(p, real_usable_size(p), n) };
    }
    // SAFETY: `p` is the next allocator's block (neither mimalloc's nor ours).
    unsafe { next_realloc(p, n) }
}

/// # Safety
/// Exported as reallocarray(3): the contract of realloc(3).
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: size_t, m: size_t) -> *mut c_void {
    match n.checked_mul(m) {
        // SAFETY: the caller's block and a size that did not overflow.
        Some(t) => unsafe { realloc(p, t) },
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// Exported as memalign(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn memalign(al: size_t, n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        // SAFETY: glibc's own memalign, for tiermem's own allocations.
        return unsafe { __libc_memalign(al, n) };
    }
    if al <= PAGE {
        if let Some(rt) = big(n) {
            // SAFETY: `rt` is the live runtime; a managed block is page-aligned, which satisfies
            // `al <= PAGE`.
            return unsafe { big_alloc(rt, n) };
        }
    }
    if small_mi() {
        // SAFETY: plain allocation call (mimalloc accepts any power-of-two alignment).
        return unsafe { mi::mi_malloc_aligned(n, al.max(1)) };
    }
    // SAFETY: the caller's arguments, as memalign(3) takes them.
    unsafe { next_memalign(al, n) }
}

/// # Safety
/// Exported as aligned_alloc(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(al: size_t, n: size_t) -> *mut c_void {
    // SAFETY: the caller's arguments, as memalign(3) takes them.
    unsafe { memalign(al, n) }
}

/// # Safety
/// Exported as posix_memalign(3): `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, al: size_t, n: size_t) -> c_int {
    if al == 0 || !al.is_power_of_two() || !al.is_multiple_of(std::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    // SAFETY: the caller's arguments (alignment checked above).
    let p = unsafe { memalign(al, n) };
    if p.is_null() && n != 0 {
        return libc::ENOMEM;
    }
    // SAFETY: `out` is valid for a write (caller's contract).
    unsafe { *out = p };
    0
}

/// # Safety
/// Exported as valloc(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn valloc(n: size_t) -> *mut c_void {
    // SAFETY: a page alignment, as memalign(3) takes it.
    unsafe { memalign(PAGE, n) }
}

/// # Safety
/// Exported as pvalloc(3): callers follow its contract.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(n: size_t) -> *mut c_void {
    // SAFETY: a page alignment and a page-rounded size, as memalign(3) takes them.
    unsafe { memalign(PAGE, sys::page_up(n.max(1))) }
}

/// # Safety
/// Exported as malloc_usable_size(3): `p` is null or a live block of this library's malloc family.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> size_t {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `p` is a non-null block the program owns.
    unsafe { usable(p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unresolved slot (0) falls back to glibc's entry point, like `next_malloc`; these
    /// used to call themselves forever (a stack overflow when dlsym allocates in `resolve`;
    /// an endless loop once optimised), so the calls run on a thread with a deadline.
    #[test]
    fn unresolved_next_allocator_falls_back_to_glibc() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // SAFETY: plain allocation calls on glibc's allocator; every block is checked
            // before use, read within its size, and freed once with glibc's free.
            unsafe {
                let p = calloc_via(0, 100, 8) as *mut u8;
                assert!(!p.is_null());
                assert!(std::slice::from_raw_parts(p, 800).iter().all(|&b| b == 0));
                std::ptr::write_bytes(p, 7, 800);
                let q = realloc_via(0, p as *mut c_void, 4000) as *mut u8;
                assert!(!q.is_null());
                assert!(std::slice::from_raw_parts(q, 800).iter().all(|&b| b == 7));
                __libc_free(q as *mut c_void);
                let a = memalign_via(0, 4096, 100);
                assert!(!a.is_null());
                assert_eq!(a as usize % 4096, 0);
                __libc_free(a);
            }
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("the fallback did not return (or failed its checks)");
    }
}
