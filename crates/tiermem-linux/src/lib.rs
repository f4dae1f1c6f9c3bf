//! tiermem's Linux runtime: tier the real memory of an unmodified program from user space.
//!
//! ```text
//!   tiermem run -- PROGRAM            (launch.rs: checks userfaultfd, sets LD_PRELOAD)
//!        |
//!   PROGRAM + libtiermem_preload.so   (crates/tiermem-preload: mmap/munmap/mremap/madvise/
//!        |                             mprotect/mlock + malloc family for large sizes)
//!        v
//!   Runtime (runtime.rs)  one arena of managed regions registered with one userfaultfd
//!     fault thread        MISSING faults: zero-fill, un-stage (hint fault), decompress
//!     manager thread      Engine<BudgetPolicy> over RuntimeBackend (backend.rs):
//!                         hint-fault sampler -> HeatEvents -> policy -> apply (evict)
//!   pools (pool.rs) x codecs (codec.rs) = compressed tiers
//! ```
//!
//! Data safety rests on three rules (see docs/runtime.md):
//! 1. every page of the arena is in exactly one state (absent, resident, staged,
//!    compressed, hole), changed only under the state lock;
//! 2. eviction takes a page out of the address space atomically (UFFDIO_MOVE), so a
//!    concurrent write either lands before the move (and is compressed) or faults after it;
//! 3. no thread touches managed memory while holding the state lock.

pub mod backend;
pub mod budget_policy;
pub mod codec;
mod codec_ext;
pub mod config;
pub mod control;
pub mod launch;
pub mod pool;
pub mod runtime;
pub mod stats;
pub mod sys;
pub mod uffd;

use std::cell::Cell;

thread_local! {
    static INTERNAL: Cell<u32> = const { Cell::new(0) };
}

/// True while this thread runs tiermem's own code: the preload shim then hands every
/// allocation to the real allocator, so tiermem never manages its own memory.
#[inline]
pub fn in_internal() -> bool {
    INTERNAL.with(|c| c.get() > 0)
}

/// Marks the current thread as running tiermem code until the guard drops.
pub struct InternalGuard(());

impl InternalGuard {
    #[inline]
    #[allow(clippy::new_without_default)]
    pub fn new() -> InternalGuard {
        INTERNAL.with(|c| c.set(c.get() + 1));
        InternalGuard(())
    }
}

impl Drop for InternalGuard {
    #[inline]
    fn drop(&mut self) {
        INTERNAL.with(|c| c.set(c.get() - 1));
    }
}
