//! tiermem's Linux runtime: tier the real memory of an unmodified program from user space.
//!
//! ```text
//!   tiermem run -- PROGRAM            (launch.rs: checks userfaultfd, sets LD_PRELOAD)
//!        |
//!   PROGRAM + libtiermem_preload.so   (crates/tiermem-preload: mmap/munmap/mremap/madvise/
//!        |                             mprotect/mlock + malloc family for large sizes)
//!        v
//!   Runtime (runtime/)    one arena of managed regions registered with one userfaultfd
//!     fault thread        MISSING faults: zero-fill, un-stage (hint fault), decompress
//!     manager thread      Engine<BudgetGuard<policy>> over RuntimeBackend (backend.rs):
//!                         hint-fault sampler -> HeatEvents -> policy (hemem, tpp, memtis,
//!                         static, +colloid; tiermem_policies) -> budget guard -> apply
//!   pools (pool.rs) x codecs (codec.rs) = compressed tiers
//! ```
//!
//! Data safety rests on three rules (see docs/runtime.md):
//! 1. every page of the arena is in exactly one state (absent, resident, staged,
//!    compressed, hole), changed only under the state lock;
//! 2. eviction takes a page out of the address space atomically (UFFDIO_MOVE), so a
//!    concurrent write either lands before the move (and is compressed) or faults after it;
//! 3. no thread touches managed memory while holding the state lock.

pub mod attach;
pub mod backend;
pub mod characterize;
pub mod codec;
pub mod inject;
mod codec_ext;
pub mod config;
pub mod control;
pub mod launch;
pub mod metrics;
pub mod numa;
pub mod pool;
pub mod probe;
pub mod qos;
pub mod runtime;
pub mod stats;
pub mod sys;
pub mod uffd;

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

thread_local! {
    static INTERNAL: Cell<u32> = const { Cell::new(0) };
}

/// The pthread key holding this thread's internal-nesting count, or `NO_KEY` (then the
/// `thread_local!` above). Why not only `thread_local!`: in a preloaded library it is
/// reached through `__tls_get_addr`, which reads the thread's DTV, and glibc allocates a
/// program thread's DTV with the program's `calloc` — managed memory once small blocks are
/// managed. A program thread holding the state lock that touched an evicted DTV would
/// fault and wait for the fault thread, which waits for the lock: a deadlock (seen with
/// 8 threads at a 10 % budget). A pthread key's value lives in the thread descriptor
/// (keys below 32: `specific_1stblock`), which is never managed.
static KEY: AtomicU32 = AtomicU32::new(NO_KEY);
const NO_KEY: u32 = u32::MAX;
/// glibc stores keys below this in the thread descriptor itself (PTHREAD_KEY_2NDLEVEL_SIZE);
/// higher keys allocate (calloc) on first use, which must not happen here.
const FIRST_LEVEL_KEYS: u32 = 32;

/// Create the key (once, before the program's threads can be in the runtime: the preload's
/// constructor calls this). Keeps `thread_local!` if no small key is free.
pub fn init_internal_key() {
    if KEY.load(Ordering::Acquire) != NO_KEY {
        return;
    }
    let mut k: libc::pthread_key_t = 0;
    // SAFETY: plain key creation, no destructor.
    if unsafe { libc::pthread_key_create(&mut k, None) } == 0 {
        if k < FIRST_LEVEL_KEYS {
            // Carry this thread's current count over (init runs inside an InternalGuard).
            let n = INTERNAL.with(|c| c.get());
            // SAFETY: k is a valid key; the value is a count, never dereferenced.
            unsafe { libc::pthread_setspecific(k, n as usize as *const libc::c_void) };
            if KEY
                .compare_exchange(NO_KEY, k, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: k is ours and unused.
                unsafe { libc::pthread_key_delete(k) };
            }
        } else {
            // SAFETY: k is ours and unused.
            unsafe { libc::pthread_key_delete(k) };
        }
    }
}

#[inline]
fn internal_count() -> u32 {
    match KEY.load(Ordering::Relaxed) {
        NO_KEY => INTERNAL.with(|c| c.get()),
        // SAFETY: a valid first-level key: a read of the thread descriptor.
        k => unsafe { libc::pthread_getspecific(k) as usize as u32 },
    }
}

#[inline]
fn set_internal_count(n: u32) {
    match KEY.load(Ordering::Relaxed) {
        NO_KEY => INTERNAL.with(|c| c.set(n)),
        // SAFETY: a valid first-level key: a write to the thread descriptor, no allocation.
        k => unsafe {
            libc::pthread_setspecific(k, n as usize as *const libc::c_void);
        },
    }
}

/// Marks tiermem's own threads (fault, manager) for good: the count's high bit.
const RUNTIME_THREAD: u32 = 1 << 30;

/// Called first thing on each of tiermem's threads.
pub fn mark_runtime_thread() {
    set_internal_count(internal_count() | RUNTIME_THREAD);
}

/// One of tiermem's own threads (their DTV was allocated by glibc's malloc, never managed,
/// so their `thread_local!`s are safe to use under the state lock).
#[inline]
pub fn on_runtime_thread() -> bool {
    internal_count() & RUNTIME_THREAD != 0
}

/// True while this thread runs tiermem's own code: the preload shim then hands every
/// allocation to the real allocator, so tiermem never manages its own memory.
#[inline]
pub fn in_internal() -> bool {
    internal_count() > 0
}

/// Marks the current thread as running tiermem code until the guard drops.
pub struct InternalGuard(());

impl InternalGuard {
    #[inline]
    #[allow(clippy::new_without_default)]
    pub fn new() -> InternalGuard {
        set_internal_count(internal_count() + 1);
        InternalGuard(())
    }
}

impl Drop for InternalGuard {
    #[inline]
    fn drop(&mut self) {
        let n = internal_count();
        set_internal_count((n & RUNTIME_THREAD) | (n & !RUNTIME_THREAD).saturating_sub(1));
    }
}
