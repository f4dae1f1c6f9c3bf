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

use libc::{c_int, c_void, off_t, size_t};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tiermem_linux::runtime::{self, Pin, Runtime};
use tiermem_linux::sys::{self, PAGE};

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

unsafe fn next_malloc(n: size_t) -> *mut c_void {
    match next(&NEXT.malloc) {
        0 => unsafe { __libc_malloc(n) },
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(size_t) -> *mut c_void>(f)(n)
        },
    }
}
unsafe fn next_free(p: *mut c_void) {
    match next(&NEXT.free) {
        0 => unsafe { __libc_free(p) },
        f => unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(f)(p) },
    }
}
unsafe fn next_calloc(n: size_t, m: size_t) -> *mut c_void {
    match next(&NEXT.calloc) {
        0 => unsafe { next_calloc(n, m) },
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(size_t, size_t) -> *mut c_void>(f)(
                n, m,
            )
        },
    }
}
unsafe fn next_realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    match next(&NEXT.realloc) {
        0 => unsafe { next_realloc(p, n) },
        f => unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, size_t) -> *mut c_void>(
                f,
            )(p, n)
        },
    }
}
unsafe fn next_memalign(al: size_t, n: size_t) -> *mut c_void {
    match next(&NEXT.memalign) {
        0 => unsafe { next_memalign(al, n) },
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
    let cfg: tiermem_linux::config::RuntimeConfig = match std::env::var("TIERMEM_CONFIG_JSON") {
        Ok(j) => match serde_json::from_str(&j) {
            Ok(c) => c,
            Err(e) => {
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
    // Manage malloc only when the program's malloc is glibc's (a program linked with
    // jemalloc or tcmalloc gets its memory through mmap, which we see anyway).
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, c"malloc".as_ptr()) };
    let glibc = next.is_null() || next as usize == __libc_malloc as *const () as usize;
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
            }
            SMALL_MI.store(glibc && !small_glibc, Ordering::SeqCst);
            READY.store(true, Ordering::SeqCst);
            unsafe { libc::atexit(at_exit) };
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

extern "C" fn at_exit() {
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
unsafe fn real_usable_size(p: *mut c_void) -> size_t {
    match next(&NEXT.usable) {
        0 => 0,
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

fn set_errno(e: i32) {
    unsafe { *libc::__errno_location() = e };
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
    ret_raw(unsafe { sys::mmap(addr as usize, len, prot, flags, fd, off) })
}

#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    unsafe { mmap(addr, len, prot, flags, fd, off) }
}

#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        if (addr as usize) % PAGE != 0 || len == 0 {
            set_errno(libc::EINVAL);
            return -1;
        }
        let _g = enter();
        return rt.release(addr as usize, len);
    }
    if unsafe { sys::munmap(addr as usize, len) } < 0 {
        return -1;
    }
    0
}

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
    ret_raw(unsafe { sys::mremap(old as usize, old_len, new_len, flags, new_addr as usize) })
}

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

#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        if prot == libc::PROT_READ | libc::PROT_WRITE {
            // Unpin only once the range is writable again: the kernel refuses to move a
            // page out of a read-only mapping, so an eviction in between would fail.
            let r = unsafe { sys::mprotect(addr as usize, len, prot) };
            if r == 0 {
                rt.unpin(addr as usize, len, Pin::Protect);
            }
            return neg_errno(r);
        }
        rt.untier(addr as usize, len, Some(Pin::Protect));
    }
    neg_errno(unsafe { sys::mprotect(addr as usize, len, prot) })
}

#[no_mangle]
pub unsafe extern "C" fn mlock(addr: *const c_void, len: size_t) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        rt.untier(addr as usize, len, Some(Pin::Lock));
    }
    neg_errno(unsafe { libc::syscall(libc::SYS_mlock, addr, len) } as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn mlock2(addr: *const c_void, len: size_t, flags: libc::c_uint) -> c_int {
    if let (Some(rt), true) = arena_of(addr as usize) {
        let _g = enter();
        rt.untier(addr as usize, len, Some(Pin::Lock));
    }
    neg_errno(unsafe { libc::syscall(libc::SYS_mlock2, addr, len, flags) } as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn munlock(addr: *const c_void, len: size_t) -> c_int {
    let r = unsafe { libc::syscall(libc::SYS_munlock, addr, len) } as c_int;
    // After the syscall: an mlocked page cannot be moved, so unpinning first would let an
    // eviction fail in between.
    if let (0, (Some(rt), true)) = (r, arena_of(addr as usize)) {
        let _g = enter();
        rt.unpin(addr as usize, len, Pin::Lock);
    }
    neg_errno(r)
}

#[no_mangle]
pub unsafe extern "C" fn mlockall(flags: c_int) -> c_int {
    if let Some(rt) = rt() {
        let _g = enter();
        // Everything becomes resident and pinned; new regions stop being created.
        MIN_REGION.store(usize::MAX, Ordering::SeqCst);
        rt.untier(rt.arena, rt.arena_pages as usize * PAGE, Some(Pin::Lock));
    }
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
    if n >= MIN_REGION.load(Ordering::Relaxed) && MANAGE_MALLOC.load(Ordering::Relaxed) {
        rt()
    } else {
        None
    }
}

/// A managed block: region = [header page][user bytes...].
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
unsafe fn header(p: *mut c_void) -> Option<(usize, usize, usize)> {
    let a = p as usize;
    if a % PAGE != 0 {
        return None;
    }
    let h = (a - PAGE) as *const u64;
    unsafe {
        if h.read() != MAGIC {
            return None;
        }
        Some((a - PAGE, h.add(1).read() as usize, h.add(2).read() as usize))
    }
}

unsafe fn big_free(rt: Option<&Runtime>, p: *mut c_void) {
    match unsafe { header(p) } {
        Some((r, total, _)) => {
            unsafe { (r as *mut u64).write(0) };
            match rt {
                Some(rt) => {
                    let _g = enter();
                    rt.release(r, total);
                }
                // Forked child: plain memory now.
                None => unsafe {
                    sys::munmap(r, total);
                },
            }
        }
        None => runtime::report(&format!(
            "free({p:p}): not a block tiermem handed out; ignored"
        )),
    }
}

/// Usable bytes of a block of any owner.
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

#[no_mangle]
pub unsafe extern "C" fn malloc(n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        // tiermem's own allocations always come from glibc, never from the program's
        // allocator: jemalloc may hold its locks while calling mmap, which waits for
        // tiermem's state lock; tiermem must never wait for jemalloc's locks in turn.
        return unsafe { __libc_malloc(n) };
    }
    if let Some(rt) = big(n) {
        return unsafe { big_alloc(rt, n) };
    }
    // SAFETY: a plain allocation of `n` bytes.
    unsafe { small_alloc(n) }
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if tiermem_linux::in_internal() {
        return unsafe { __libc_free(p) };
    }
    if is_mi(p) {
        // SAFETY: p is a mimalloc block.
        return unsafe { mi::mi_free(p) };
    }
    if let (rt, true) = block_of(p) {
        return unsafe { big_free(rt, p) };
    }
    unsafe { next_free(p) }
}

#[no_mangle]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    unsafe { free(p) }
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, m: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        return unsafe { __libc_calloc(n, m) };
    }
    let Some(t) = n.checked_mul(m) else {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    if let Some(rt) = big(t) {
        // Fresh managed pages read as zero.
        return unsafe { big_alloc(rt, t) };
    }
    if small_mi() {
        // SAFETY: plain allocation call.
        return unsafe { mi::mi_calloc(n, m) };
    }
    unsafe { next_calloc(n, m) }
}

/// Move a block to a new owner: allocate `n` bytes with `malloc`, copy, free the old.
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

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        return unsafe { __libc_realloc(p, n) };
    }
    if p.is_null() {
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
        let Some((r, total, used)) = (unsafe { header(p) }) else {
            runtime::report(&format!("realloc({p:p}): not a block tiermem handed out"));
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        };
        if n == 0 {
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
                unsafe {
                    h.add(1).write(new_total as u64);
                    h.add(2).write(n as u64);
                }
                return (moved as usize + PAGE) as *mut c_void;
            }
        }
        // SAFETY: `p` is a live managed block with `used` bytes of user data.
        return unsafe { realloc_by_copy(p, used, n) };
    }
    // A block of the next allocator (from before the runtime was up, or the program's
    // own allocator's).
    if big(n).is_some() || (small_mi() && n > 0) {
        // Moves to one of ours (its `free` goes back to the next allocator).
        // SAFETY: `p` is a live block of the next allocator with that many usable bytes.
        return unsafe { realloc_by_copy(p, real_usable_size(p), n) };
    }
    unsafe { next_realloc(p, n) }
}

#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: size_t, m: size_t) -> *mut c_void {
    match n.checked_mul(m) {
        Some(t) => unsafe { realloc(p, t) },
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn memalign(al: size_t, n: size_t) -> *mut c_void {
    if tiermem_linux::in_internal() {
        return unsafe { __libc_memalign(al, n) };
    }
    if al <= PAGE {
        if let Some(rt) = big(n) {
            return unsafe { big_alloc(rt, n) };
        }
    }
    if small_mi() {
        // SAFETY: plain allocation call (mimalloc accepts any power-of-two alignment).
        return unsafe { mi::mi_malloc_aligned(n, al.max(1)) };
    }
    unsafe { next_memalign(al, n) }
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(al: size_t, n: size_t) -> *mut c_void {
    unsafe { memalign(al, n) }
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, al: size_t, n: size_t) -> c_int {
    if al == 0 || !al.is_power_of_two() || al % std::mem::size_of::<usize>() != 0 {
        return libc::EINVAL;
    }
    let p = unsafe { memalign(al, n) };
    if p.is_null() && n != 0 {
        return libc::ENOMEM;
    }
    unsafe { *out = p };
    0
}

#[no_mangle]
pub unsafe extern "C" fn valloc(n: size_t) -> *mut c_void {
    unsafe { memalign(PAGE, n) }
}

#[no_mangle]
pub unsafe extern "C" fn pvalloc(n: size_t) -> *mut c_void {
    unsafe { memalign(PAGE, sys::page_up(n.max(1))) }
}

#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> size_t {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `p` is a non-null block the program owns.
    unsafe { usable(p) }
}
