//! The runtime inside the program: one arena of managed regions on one userfaultfd, the
//! page-state table, the fault thread, eviction/promotion, and the hint-fault sampler.
//!
//! Page states (one per 4 KiB page of the arena):
//!
//! ```text
//!   HOLE        not handed out (PROT_NONE reservation); the kernel never faults to us
//!   ABSENT      mapped, no data: no PTE; a fault installs zeros
//!   RESIDENT    mapped, data in DRAM (the kernel's PTE; possibly swapped by the kernel)
//!   STAGED      hint-sampled: the page was moved (UFFDIO_MOVE) to a hint slot; the next
//!               access faults, we move it back and report the time to fault
//!   COMPRESSED  the page lives in a compressed tier's pool; a fault decompresses it
//! ```
//!
//! Invariants: ABSENT, STAGED and COMPRESSED pages have no PTE at their address; every
//! transition happens under `State`'s lock; no thread touches arena memory while holding
//! that lock (faults would need the lock to be served).

use crate::codec::Codec;
use crate::config::{Budget, RuntimeConfig};
use crate::pool::{AllocatorKind, Backing, Pool};
use crate::stats::{Histogram, Stats, TierStats};
use crate::sys::{self, PAGE};
use crate::uffd::{Msg, Op, Uffd, UFFD_EVENT_PAGEFAULT, UFFD_PAGEFAULT_FLAG_WRITE};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use tiermem_core::{HeatEvent, TierId};

/// Placement of pages that hold no data (absent or holes): they are in no tier.
pub const NO_TIER: TierId = TierId(u8::MAX);

pub const K_HOLE: u8 = 0;
pub const K_ABSENT: u8 = 1;
pub const K_RESIDENT: u8 = 2;
pub const K_STAGED: u8 = 3;
pub const K_COMPRESSED: u8 = 4;

/// Pinned by mlock (the kernel refuses to move an mlocked page).
const F_PIN_LOCK: u8 = 1;
const F_INCOMPRESSIBLE: u8 = 2;
/// Pinned by mprotect to anything but read-write (a protection change needs the page home).
const F_PIN_PROT: u8 = 4;
/// Either reason keeps the page in DRAM; each is cleared by its own undo (munlock,
/// mprotect back to read-write).
const F_PINNED: u8 = F_PIN_LOCK | F_PIN_PROT;

/// Why a range is pinned in DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pin {
    Lock,
    Protect,
}

impl Pin {
    fn flag(self) -> u8 {
        match self {
            Pin::Lock => F_PIN_LOCK,
            Pin::Protect => F_PIN_PROT,
        }
    }
}

/// Pages zero-filled around a first-touch fault (64 KiB): fewer faults for sequential fills.
const FILL_CHUNK_PAGES: usize = 16;
/// Eviction batch: pages moved to the eviction staging area before one DONTNEED frees them.
pub const EVICT_BATCH: usize = 32;
const HINT_SLOTS: usize = 4096;
/// After serving a fault, the fault thread polls (without sleeping) up to this long for the
/// next: a burst of faults (a scan) is answered without a wakeup.
const SPIN_NS: u64 = 30_000;
/// The spin shrinks (halves) each time it catches nothing, down to this, and is reset when
/// faults come closer together than SPIN_NS: sparse faults (memcached's) do not cost 30 us
/// of CPU each.
const SPIN_MIN_NS: u64 = 2_000;
/// Minimum slack of the budget (1 MiB), see `State::limit_pages`.
const SLACK_MIN_PAGES: u64 = 256;
/// How long the fault thread waits for room before serving the next faults anyway.
const ROOM_WAIT_NS: u64 = 5_000_000;
/// A staged page not touched for this long is put back (it stays a cold-page candidate).
const STAGE_MAX_NS: u64 = 5_000_000_000;
/// mremap(2) flag (Linux 5.7): move the pages, leave the source mapped and empty.
const MREMAP_DONTUNMAP: i32 = 4;

#[derive(Clone, Copy, Default, Debug)]
pub struct Page {
    pub kind: u8,
    pub tier: u8,
    pub flags: u8,
    pub handle: u64,
}

pub struct CTier {
    pub codec: Codec,
    pub pool: Pool,
    pub max_bytes: usize,
    pub pages: u64,
    pub faults: u64,
    pub hist: Histogram,
    pub migr_in: u64,
    pub migr_out: u64,
    pub rejected: u64,
}

pub struct State {
    pub pages: Vec<Page>,
    pub placement: Vec<TierId>,
    /// Free page ranges of the arena below `hwm` (start -> len).
    free: BTreeMap<u32, u32>,
    pub hwm: u32,
    /// malloc blocks handed out: user pointer -> (region start, region bytes, user bytes).
    pub blocks: HashMap<usize, (usize, usize, usize)>,
    pub tiers: Vec<CTier>,
    hint_free: Vec<u32>,
    /// Per hint slot: (page index, time staged).
    hint_owner: Vec<(u32, u64)>,
    hint_dirty: Vec<u32>,
    pub events: Vec<HeatEvent>,
    pub resident: u64,
    pub mapped: u64,
    pub max_mapped: u64,
    pub max_resident: u64,
    pub budget: Budget,
    pub frozen: bool,
    scan_cursor: u32,
    pub regions: u64,
    pub hint_sampled: u64,
    pub hint_faults: u64,
    pub first_touch: u64,
    /// Time the fault thread spent serving tier faults (decompress + install), ns.
    pub stall_ns: u64,
    /// Largest amount (pages) by which resident DRAM exceeded the budget.
    pub max_excess: u64,
    /// Times the fault thread waited for the manager to make room, and for how long.
    pub room_waits: u64,
    pub room_wait_ns: u64,
    pub thrash: Thrash,
    pub evict_busy: u64,
    pub forks: u64,
    pub quanta: u64,
    cbuf: Vec<u8>,
    pbuf: Vec<u8>,
}

pub struct Runtime {
    pub cfg: RuntimeConfig,
    pub uffd: Uffd,
    pub arena: usize,
    pub arena_pages: u32,
    pub min_region: usize,
    hint_base: usize,
    evict_base: usize,
    st: Mutex<State>,
    pub start_ns: u64,
    pub fault_tid: AtomicI32,
    pub manager_tid: AtomicI32,
    pub stop: AtomicBool,
    pub publish: AtomicBool,
    pub fault_msgs: AtomicU64,
    /// Bumped (and woken) by the fault thread when DRAM is over budget + slack: the
    /// manager runs its next quantum now instead of sleeping it out.
    pub kick: AtomicU32,
    /// Bumped (and woken) by the manager after each quantum's moves.
    pub room: AtomicU32,
    /// The manager's last quantum over budget freed DRAM: worth waiting for. False when
    /// nothing could be evicted (pinned, incompressible): faults then go on over budget.
    pub can_make_room: AtomicBool,
}

static RUNTIME: OnceLock<&'static Runtime> = OnceLock::new();
/// Set in a forked child: the child's copy of the regions is no longer registered, the
/// runtime's threads do not exist there, and every call passes straight to the kernel.
pub static CHILD: AtomicBool = AtomicBool::new(false);

/// The runtime of this process image, also in a forked child (where it must not be used
/// except to recognise arena addresses).
pub fn any() -> Option<&'static Runtime> {
    RUNTIME.get().copied()
}

pub fn get() -> Option<&'static Runtime> {
    if CHILD.load(Ordering::Relaxed) {
        return None;
    }
    RUNTIME.get().copied()
}

fn lock(rt: &Runtime) -> MutexGuard<'_, State> {
    rt.st.lock().unwrap_or_else(|p| p.into_inner())
}

/// The fault thread's way to take the state lock: poll it, yielding the CPU in between (the
/// other holders keep it for one page move or commit, a few us, but may be preempted on
/// this CPU), rather than sleep on the futex, whose wakeup costs tens of us here; sleeps
/// only if the lock stays taken for long (a munmap of a large region).
fn lock_spin(rt: &Runtime) -> MutexGuard<'_, State> {
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
                unsafe { libc::sched_yield() };
            }
        }
    }
}

impl State {
    fn set(&mut self, i: usize, p: Page) {
        let old = self.pages[i];
        if old.kind == K_RESIDENT || old.kind == K_STAGED {
            self.resident -= 1;
        }
        if p.kind == K_RESIDENT || p.kind == K_STAGED {
            self.resident += 1;
            self.max_resident = self.max_resident.max(self.resident);
            // A few arithmetic operations per installed page (a fault costs microseconds).
            let budget = self.budget_bytes() / PAGE as u64;
            self.max_excess = self.max_excess.max(self.resident.saturating_sub(budget));
        }
        if old.kind != K_HOLE && p.kind == K_HOLE {
            self.mapped -= 1;
        }
        if old.kind == K_HOLE && p.kind != K_HOLE {
            self.mapped += 1;
            self.max_mapped = self.max_mapped.max(self.mapped);
        }
        self.pages[i] = p;
        self.placement[i] = match p.kind {
            K_RESIDENT | K_STAGED => TierId(0),
            K_COMPRESSED => TierId(p.tier),
            _ => NO_TIER,
        };
    }

    pub fn footprint_pages(&self) -> u64 {
        self.resident + self.tiers.iter().map(|t| t.pages).sum::<u64>()
    }

    pub fn budget_bytes(&self) -> u64 {
        self.budget.bytes(self.footprint_pages() * PAGE as u64)
    }

    /// Resident pages above which faults wait for the manager to make room: the budget
    /// plus a slack of max(budget / 32, 1 MiB). One batch of faults (at most 32 messages,
    /// each zero-filling up to 64 KiB) can still land on top: docs/runtime.md.
    pub fn limit_pages(&self) -> u64 {
        let budget = self.budget_bytes() / PAGE as u64;
        budget.saturating_add((budget / 32).max(SLACK_MIN_PAGES))
    }

    fn take_range(&mut self, n: u32) -> Option<u32> {
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
    fn claim_exact(&mut self, s: u32, n: u32) -> bool {
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

    fn give_back(&mut self, mut s: u32, mut n: u32) {
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

    fn grow_table(&mut self, to: u32) {
        if (to as usize) > self.pages.len() {
            self.pages.resize(to as usize, Page::default());
            self.placement.resize(to as usize, NO_TIER);
        }
    }
}

impl Runtime {
    /// Create the runtime of this process and start its threads.
    pub fn init(cfg: RuntimeConfig) -> std::io::Result<&'static Runtime> {
        let _g = crate::InternalGuard::new();
        if let Some(rt) = RUNTIME.get() {
            return Ok(rt);
        }
        let uffd = Uffd::open()?;
        let arena_bytes = (cfg.arena_bytes() as usize).min(16 << 40) & !(PAGE - 1);
        let arena = unsafe {
            sys::mmap(
                0,
                arena_bytes,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if arena < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let arena = arena as usize;
        let staging_bytes = (HINT_SLOTS + EVICT_BATCH) * PAGE;
        let staging = sys::map_anon(staging_bytes)?;
        unsafe { sys::madvise(staging, staging_bytes, libc::MADV_NOHUGEPAGE) };
        uffd.register(staging, staging_bytes)?;
        let tiers = cfg
            .compressed_tiers()
            .iter()
            .map(|t| CTier {
                codec: Codec::parse(&t.codec).unwrap_or(Codec::Lz4),
                pool: Pool::new(
                    AllocatorKind::parse(&t.allocator).unwrap_or(AllocatorKind::Zsmalloc),
                    Backing::parse(&t.backing).unwrap_or(Backing::Memory),
                ),
                max_bytes: t.max_compressed_bytes as usize,
                pages: 0,
                faults: 0,
                hist: Histogram::default(),
                migr_in: 0,
                migr_out: 0,
                rejected: 0,
            })
            .collect();
        let st = State {
            pages: Vec::new(),
            placement: Vec::new(),
            free: BTreeMap::new(),
            hwm: 0,
            blocks: HashMap::new(),
            tiers,
            hint_free: (0..HINT_SLOTS as u32).rev().collect(),
            hint_owner: vec![(0, 0); HINT_SLOTS + EVICT_BATCH],
            hint_dirty: Vec::new(),
            events: Vec::new(),
            resident: 0,
            mapped: 0,
            max_mapped: 0,
            max_resident: 0,
            budget: cfg.budget(),
            frozen: false,
            scan_cursor: 0,
            regions: 0,
            hint_sampled: 0,
            hint_faults: 0,
            first_touch: 0,
            stall_ns: 0,
            max_excess: 0,
            room_waits: 0,
            room_wait_ns: 0,
            thrash: Thrash::default(),
            evict_busy: 0,
            forks: 0,
            quanta: 0,
            cbuf: Vec::with_capacity(8192),
            pbuf: vec![0u8; PAGE],
        };
        let rt: &'static Runtime = Box::leak(Box::new(Runtime {
            min_region: cfg.min_region_bytes() as usize,
            cfg,
            uffd,
            arena,
            arena_pages: (arena_bytes / PAGE) as u32,
            hint_base: staging,
            evict_base: staging + HINT_SLOTS * PAGE,
            st: Mutex::new(st),
            start_ns: sys::now_ns(),
            fault_tid: AtomicI32::new(0),
            manager_tid: AtomicI32::new(0),
            stop: AtomicBool::new(false),
            publish: AtomicBool::new(true),
            fault_msgs: AtomicU64::new(0),
            kick: AtomicU32::new(0),
            room: AtomicU32::new(0),
            can_make_room: AtomicBool::new(true),
        }));
        if RUNTIME.set(rt).is_err() {
            return Ok(RUNTIME.get().unwrap());
        }
        unsafe {
            libc::pthread_atfork(
                Some(atfork_prepare),
                Some(atfork_parent),
                Some(atfork_child),
            )
        };
        spawn_internal(rt, c"tiermem-fault", 256 << 10, |rt| {
            rt.fault_tid.store(sys::gettid(), Ordering::Relaxed);
            rt.fault_loop();
        })?;
        spawn_internal(rt, c"tiermem-mgr", 1 << 20, |rt| {
            rt.manager_tid.store(sys::gettid(), Ordering::Relaxed);
            crate::backend::manager_loop(rt);
        })?;
        Ok(rt)
    }

    #[inline]
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.arena && addr < self.arena + self.arena_pages as usize * PAGE
    }

    #[inline]
    fn idx(&self, addr: usize) -> usize {
        (addr - self.arena) / PAGE
    }
    #[inline]
    fn addr(&self, idx: usize) -> usize {
        self.arena + idx * PAGE
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        lock(self)
    }

    // ------------------------------------------------------------------ regions

    /// A new managed region of `len` bytes (page-rounded). `None` if the arena is full or
    /// the kernel refused; the caller then falls back to plain memory.
    pub fn alloc_region(&self, len: usize) -> Option<usize> {
        let n = (sys::page_up(len) / PAGE) as u32;
        if n == 0 {
            return None;
        }
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
        if self.map_pages(&mut st, start, n).is_err() {
            st.give_back(start, n);
            return None;
        }
        st.regions += 1;
        Some(self.addr(start as usize))
    }

    fn map_pages(&self, st: &mut State, start: u32, n: u32) -> std::io::Result<()> {
        let a = self.addr(start as usize);
        let len = n as usize * PAGE;
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
        unsafe { sys::madvise(a, len, libc::MADV_NOHUGEPAGE) };
        if let Err(e) = self.uffd.register(a, len) {
            self.reserve(a, len);
            return Err(e);
        }
        for i in start as usize..(start + n) as usize {
            st.set(
                i,
                Page {
                    kind: K_ABSENT,
                    ..Page::default()
                },
            );
        }
        Ok(())
    }

    /// Put a PROT_NONE reservation back over [a, a+len) (drops pages and registration).
    fn reserve(&self, a: usize, len: usize) {
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

    /// Give a staging slot back. Hint slots return to the free list (`dirty`: its page is
    /// still there and must be dropped before reuse); eviction slots (>= HINT_SLOTS) belong
    /// to the manager's current batch and are released by `end_batch`.
    fn free_slot(st: &mut State, slot: u32, dirty: bool) {
        if (slot as usize) < HINT_SLOTS {
            if dirty {
                st.hint_dirty.push(slot);
            }
            st.hint_free.push(slot);
        }
    }

    fn in_staging(&self, a: usize) -> bool {
        a >= self.hint_base && a < self.hint_base + (HINT_SLOTS + EVICT_BATCH) * PAGE
    }

    /// Drop whatever data page `i` holds (pool object, hint slot); does not touch its PTE.
    fn drop_data(&self, st: &mut State, i: usize) {
        let p = st.pages[i];
        match p.kind {
            K_COMPRESSED => {
                let t = &mut st.tiers[p.tier as usize - 1];
                t.pool.free(p.handle);
                t.pages -= 1;
            }
            K_STAGED => Self::free_slot(st, p.handle as u32, true),
            _ => {}
        }
    }

    /// munmap(2) of a managed range: every page becomes a hole, its data dropped.
    pub fn release(&self, a: usize, len: usize) -> i32 {
        let mut st = lock(self);
        self.release_locked(&mut st, a, len);
        0
    }

    fn release_locked(&self, st: &mut State, a: usize, len: usize) {
        let a0 = sys::page_down(a);
        let end = sys::page_up(a + len).min(self.arena + self.arena_pages as usize * PAGE);
        let (s, e) = (self.idx(a0), self.idx(end).min(st.hwm as usize));
        if s < e {
            self.reserve(self.addr(s), (e - s) * PAGE);
        }
        let mut run: Option<usize> = None;
        for i in s..e {
            if st.pages[i].kind != K_HOLE {
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
        let e = self.idx(sys::page_up(a + len).min(self.arena + self.arena_pages as usize * PAGE));
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

    /// At exit: stop publishing stats and remove the control directory.
    pub fn stop_publishing(&self) {
        self.publish.store(false, Ordering::SeqCst);
        crate::control::Control::new(&self.cfg.run_dir, std::process::id()).remove();
    }

    /// madvise(MADV_DONTNEED) on a managed range: pages read as zero afterwards.
    pub fn dontneed(&self, a: usize, len: usize, advice: i32) -> i32 {
        let mut st = lock(self);
        let (s, e) = (
            self.idx(sys::page_down(a)),
            self.idx(sys::page_up(a + len)).min(st.hwm as usize),
        );
        for i in s..e {
            let k = st.pages[i].kind;
            if k != K_HOLE && k != K_ABSENT {
                self.drop_data(&mut st, i);
                let flags = st.pages[i].flags;
                st.set(
                    i,
                    Page {
                        kind: K_ABSENT,
                        flags,
                        ..Page::default()
                    },
                );
            }
        }
        self.flush_hint_dirty(&mut st);
        unsafe { sys::madvise(a, len, advice) }
    }

    /// Bring every page of [a, a+len) back to DRAM, pinned for `pin` if given. Used before
    /// mprotect/mlock, and (all pages) before fork.
    pub fn untier(&self, a: usize, len: usize, pin: Option<Pin>) {
        let mut st = lock(self);
        self.untier_locked(&mut st, a, len, pin);
    }

    fn untier_locked(&self, st: &mut State, a: usize, len: usize, pin: Option<Pin>) {
        let s = self.idx(sys::page_down(a.max(self.arena)));
        let e =
            self.idx(sys::page_up(a.saturating_add(len)).min(self.arena + st.hwm as usize * PAGE));
        for i in s..e {
            let k = st.pages[i].kind;
            if k == K_STAGED || k == K_COMPRESSED {
                self.promote(st, i, None);
            }
            if let (Some(why), true) = (pin, k != K_HOLE) {
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
        if old % PAGE != 0 || new_len == 0 {
            return -(libc::EINVAL as isize);
        }
        let (old_len, new_len) = (sys::page_up(old_len), sys::page_up(new_len));
        let old_n = old_len / PAGE;
        let new_n = new_len / PAGE;
        let fixed = flags & libc::MREMAP_FIXED != 0;
        let maymove = flags & libc::MREMAP_MAYMOVE != 0;
        if flags & MREMAP_DONTUNMAP != 0 {
            // Not supported on managed memory.
            return -(libc::EINVAL as isize);
        }
        if fixed && (!maymove || new_addr % PAGE != 0) {
            return -(libc::EINVAL as isize);
        }
        if fixed && new_addr < old + old_len && old < new_addr.saturating_add(new_len) {
            return -(libc::EINVAL as isize); // overlapping source and destination
        }
        let mut st = lock(self);
        let s = self.idx(old);
        if old_n == 0
            || s + old_n > st.hwm as usize
            || st.pages[s..s + old_n].iter().any(|p| p.kind == K_HOLE)
        {
            return -(libc::EFAULT as isize);
        }
        if fixed && !self.contains(new_addr) {
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
        let r = move_keeping_source(old, keep_n * PAGE, dst_a);
        if r < 0 {
            let e = sys::errno();
            self.reserve(dst_a, new_len);
            st.give_back(dst as u32, new_n as u32);
            return -(e as isize);
        }
        // SAFETY: an advice on the range just moved to `dst_a`, which is ours; no memory is freed.
        unsafe { sys::madvise(dst_a, keep_n * PAGE, libc::MADV_NOHUGEPAGE) };
        // The moved VMA lost its registration (no UFFD_FEATURE_EVENT_REMAP): register it
        // again before any page of it can be absent to the kernel's eyes.
        if let Err(e) = self.uffd.register(dst_a, keep_n * PAGE) {
            report(&format!("re-register after mremap of {old:#x} failed: {e}"));
        }
        // Carry each page's state to its new index without counting it twice.
        for k in 0..keep_n {
            let src = st.pages[s + k];
            st.pages[s + k] = Page::default();
            st.placement[s + k] = NO_TIER;
            st.mapped -= 1;
            if src.kind == K_RESIDENT || src.kind == K_STAGED {
                st.resident -= 1;
            }
            if src.kind == K_STAGED {
                st.hint_owner[src.handle as usize].0 = (dst + k) as u32;
            }
            if src.kind == K_COMPRESSED {
                st.tiers[src.tier as usize - 1].pages -= 1;
            }
            st.set(dst + k, src);
            if src.kind == K_COMPRESSED {
                st.tiers[src.tier as usize - 1].pages += 1;
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
        let r = move_keeping_source(old, keep_n * PAGE, new_addr);
        if r < 0 {
            return -(sys::errno() as isize);
        }
        // The moved VMA lost its userfaultfd registration: it is plain memory now.
        self.retire_source(st, s, s + old_n, old, old_n);
        r
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

    // ------------------------------------------------------------------ faults

    fn fault_loop(&self) {
        let mut msgs = [Msg::default(); 32];
        let mut pfd = libc::pollfd {
            fd: self.uffd.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut spin_ns = SPIN_NS;
        let mut last_served = 0u64;
        while !self.stop.load(Ordering::Relaxed) {
            let r = unsafe { libc::poll(&mut pfd, 1, 200) };
            if r <= 0 {
                continue;
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
                    if !spinning {
                        break; // spurious wakeup
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
                        self.serve(
                            &mut st,
                            sys::page_down(m.address as usize),
                            m.flags & UFFD_PAGEFAULT_FLAG_WRITE != 0,
                            t0,
                        );
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

    fn serve(&self, st: &mut State, a: usize, write: bool, t0: u64) {
        if !self.contains(a) || self.idx(a) >= st.hwm as usize {
            // A staging slot read by the evictor after this thread moved its page back
            // home (see `evict`): it reads zeros and discards what it read.
            if !(self.in_staging(a) && self.uffd.zeropage(a, PAGE) == Op::Done) {
                self.uffd.wake(a, PAGE);
            }
            return;
        }
        let i = self.idx(a);
        match st.pages[i].kind {
            K_ABSENT => {
                // Zero-fill the run of absent pages in this 64 KiB block around the fault.
                let b0 = i / FILL_CHUNK_PAGES * FILL_CHUNK_PAGES;
                let b1 = (b0 + FILL_CHUNK_PAGES).min(st.hwm as usize);
                let mut lo = i;
                while lo > b0 && st.pages[lo - 1].kind == K_ABSENT {
                    lo -= 1;
                }
                let mut hi = i + 1;
                while hi < b1 && st.pages[hi].kind == K_ABSENT {
                    hi += 1;
                }
                let len = (hi - lo) * PAGE;
                let op = if write {
                    self.uffd.copy(self.addr(lo), zeros(len), len)
                } else {
                    self.uffd.zeropage(self.addr(lo), len)
                };
                let (lo, hi) = if op == Op::Done {
                    (lo, hi)
                } else {
                    // Fall back to the faulting page alone.
                    let op = if write {
                        self.uffd.copy(a, zeros(PAGE), PAGE)
                    } else {
                        self.uffd.zeropage(a, PAGE)
                    };
                    if op != Op::Done {
                        self.uffd.wake(a, PAGE);
                    }
                    if op != Op::Done && op != Op::Exists {
                        return;
                    }
                    (i, i + 1)
                };
                for j in lo..hi {
                    let f = st.pages[j].flags;
                    st.set(
                        j,
                        Page {
                            kind: K_RESIDENT,
                            flags: f,
                            ..Page::default()
                        },
                    );
                }
                st.first_touch += 1;
                st.events.push(HeatEvent::Accessed { page: i as u32 });
            }
            K_RESIDENT => {
                // A stale message (another thread's fault already served), or the kernel
                // dropped the page (MADV_FREE reclaimed it): zero is right in both cases.
                if self.uffd.zeropage(a, PAGE) != Op::Done {
                    self.uffd.wake(a, PAGE);
                }
            }
            K_STAGED => {
                let slot = st.pages[i].handle as usize;
                let staged_at = st.hint_owner[slot].1;
                match self.uffd.mv(a, self.hint_base + slot * PAGE, PAGE, true) {
                    Op::Done => {
                        Self::free_slot(st, slot as u32, false);
                        let f = st.pages[i].flags & !F_INCOMPRESSIBLE;
                        st.set(
                            i,
                            Page {
                                kind: K_RESIDENT,
                                flags: f,
                                ..Page::default()
                            },
                        );
                        st.hint_faults += 1;
                        st.events.push(HeatEvent::HintFault {
                            page: i as u32,
                            time_to_fault_ns: t0.saturating_sub(staged_at) as f64,
                        });
                    }
                    other => {
                        report(&format!("hint un-stage of {a:#x} failed: {other:?}"));
                        self.uffd.wake(a, PAGE);
                    }
                }
            }
            K_COMPRESSED => {
                let tier = st.pages[i].tier as usize;
                if self.promote(st, i, Some(t0)) {
                    st.events.push(HeatEvent::TierFault { page: i as u32 });
                    let t = &mut st.tiers[tier - 1];
                    t.faults += 1;
                    let dt = sys::now_ns() - t0;
                    t.hist.record(dt);
                    st.stall_ns += dt;
                } else {
                    self.uffd.wake(a, PAGE);
                }
            }
            _ => {
                self.uffd.wake(a, PAGE);
            }
        }
    }

    /// Install page `i` (staged or compressed) back at its address. Wakes waiters.
    fn promote(&self, st: &mut State, i: usize, _t0: Option<u64>) -> bool {
        let a = self.addr(i);
        let p = st.pages[i];
        match p.kind {
            K_STAGED => {
                let slot = p.handle as usize;
                let op = self.uffd.mv(a, self.hint_base + slot * PAGE, PAGE, true);
                if op != Op::Done {
                    report(&format!("un-stage of {a:#x} failed: {op:?}"));
                    return false;
                }
                Self::free_slot(st, slot as u32, false);
                st.set(
                    i,
                    Page {
                        kind: K_RESIDENT,
                        flags: p.flags,
                        ..Page::default()
                    },
                );
                true
            }
            K_COMPRESSED => {
                let ti = p.tier as usize - 1;
                let mut buf = std::mem::take(&mut st.pbuf);
                let ok = {
                    let t = &st.tiers[ti];
                    t.codec.decompress(t.pool.get(p.handle), &mut buf)
                };
                if !ok {
                    report(&format!(
                        "corrupt compressed page at {a:#x}: kept in its tier"
                    ));
                    st.pbuf = buf;
                    return false;
                }
                let op = self.uffd.copy(a, buf.as_ptr(), PAGE);
                st.pbuf = buf;
                match op {
                    Op::Done => {
                        let t = &mut st.tiers[ti];
                        t.pool.free(p.handle);
                        t.pages -= 1;
                        t.migr_out += 1;
                        st.set(
                            i,
                            Page {
                                kind: K_RESIDENT,
                                flags: p.flags & !F_INCOMPRESSIBLE,
                                ..Page::default()
                            },
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
            _ => true,
        }
    }

    fn flush_hint_dirty(&self, st: &mut State) {
        for slot in st.hint_dirty.drain(..) {
            unsafe {
                sys::madvise(
                    self.hint_base + slot as usize * PAGE,
                    PAGE,
                    libc::MADV_DONTNEED,
                )
            };
        }
    }

    // ------------------------------------------------------------------ moves

    /// Move page `i` to `to` (0 = DRAM, k = compressed tier k). `slot` is the eviction
    /// staging slot to use. Returns (applied, already_there, no_capacity).
    pub fn move_page(&self, st: &mut State, i: usize, to: u8, slot: usize) -> MoveResult {
        if i >= st.hwm as usize {
            return MoveResult::Refused;
        }
        let p = st.pages[i];
        if p.flags & F_PINNED != 0 || st.frozen {
            return MoveResult::Refused;
        }
        match (p.kind, to) {
            (K_RESIDENT, 0) | (K_STAGED, 0) => MoveResult::AlreadyThere,
            (K_COMPRESSED, t) if t == p.tier => MoveResult::AlreadyThere,
            (K_COMPRESSED, 0) => {
                if self.promote(st, i, None) {
                    MoveResult::Applied
                } else {
                    MoveResult::Refused
                }
            }
            (K_COMPRESSED, t) if (t as usize) <= st.tiers.len() => {
                // Tier to tier: decompress into a private buffer, recompress; the program's
                // address space is not involved.
                let (from, h) = (p.tier as usize - 1, p.handle);
                let mut buf = std::mem::take(&mut st.pbuf);
                let ok = st.tiers[from]
                    .codec
                    .decompress(st.tiers[from].pool.get(h), &mut buf);
                let r = if ok {
                    self.store(st, &buf, t as usize - 1)
                } else {
                    None
                };
                st.pbuf = buf;
                match r {
                    Some(nh) => {
                        let f = &mut st.tiers[from];
                        f.pool.free(h);
                        f.pages -= 1;
                        f.migr_out += 1;
                        st.tiers[t as usize - 1].pages += 1;
                        st.set(
                            i,
                            Page {
                                kind: K_COMPRESSED,
                                tier: t,
                                flags: p.flags,
                                handle: nh,
                            },
                        );
                        MoveResult::Applied
                    }
                    None => MoveResult::NoCapacity,
                }
            }
            (K_RESIDENT, t) | (K_STAGED, t) if t >= 1 && (t as usize) <= st.tiers.len() => {
                if p.flags & F_INCOMPRESSIBLE != 0 {
                    return MoveResult::NoCapacity;
                }
                let a = self.addr(i);
                let src = if p.kind == K_STAGED {
                    self.hint_base + p.handle as usize * PAGE
                } else {
                    let s = self.evict_base + slot * PAGE;
                    match self.uffd.mv(s, a, PAGE, false) {
                        Op::Done => s,
                        Op::NoEnt => {
                            // No PTE: the kernel dropped it (zero semantics).
                            st.set(
                                i,
                                Page {
                                    kind: K_ABSENT,
                                    flags: p.flags,
                                    ..Page::default()
                                },
                            );
                            return MoveResult::Applied;
                        }
                        Op::Busy => {
                            st.evict_busy += 1;
                            return MoveResult::Refused;
                        }
                        other => {
                            report(&format!("evict move of {a:#x} failed: {other:?}"));
                            unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                            return MoveResult::Refused;
                        }
                    }
                };
                // The page is out of the program's address space: read it at leisure.
                let data = unsafe { std::slice::from_raw_parts(src as *const u8, PAGE) };
                if is_zero(data) {
                    self.release_src(st, &p, src);
                    st.set(
                        i,
                        Page {
                            kind: K_ABSENT,
                            flags: p.flags,
                            ..Page::default()
                        },
                    );
                    return MoveResult::Applied;
                }
                let ti = t as usize - 1;
                match self.store(st, data, ti) {
                    Some(h) => {
                        self.release_src(st, &p, src);
                        let tt = &mut st.tiers[ti];
                        tt.pages += 1;
                        tt.migr_in += 1;
                        st.set(
                            i,
                            Page {
                                kind: K_COMPRESSED,
                                tier: t,
                                flags: p.flags,
                                handle: h,
                            },
                        );
                        MoveResult::Applied
                    }
                    None => {
                        st.tiers[ti].rejected += 1;
                        // Put it back where it was.
                        if p.kind == K_RESIDENT {
                            let op = self.uffd.mv(a, src, PAGE, true);
                            if op != Op::Done {
                                report(&format!("restore of incompressible {a:#x} failed: {op:?}"));
                            }
                        }
                        st.pages[i].flags |= F_INCOMPRESSIBLE;
                        MoveResult::NoCapacity
                    }
                }
            }
            _ => MoveResult::Refused,
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
    /// (`serve`); that result is discarded. Other moves (promotion, tier to tier) go through
    /// `move_page`.
    pub fn evict(&self, i: usize, to: u8, slot: usize, out: &mut Vec<u8>) -> MoveResult {
        let (hs, codec, max, was_resident) = {
            let mut st = lock(self);
            if i >= st.hwm as usize || to == 0 || to as usize > st.tiers.len() {
                return self.move_page(&mut st, i, to, slot);
            }
            let p = st.pages[i];
            if p.kind != K_RESIDENT && p.kind != K_STAGED || p.flags & F_PINNED != 0 || st.frozen {
                return self.move_page(&mut st, i, to, slot);
            }
            if p.flags & F_INCOMPRESSIBLE != 0 {
                return MoveResult::NoCapacity;
            }
            let hs = if p.kind == K_STAGED {
                p.handle as usize
            } else {
                let es = HINT_SLOTS + slot;
                let s = self.hint_base + es * PAGE;
                match self.uffd.mv(s, self.addr(i), PAGE, false) {
                    Op::Done => {
                        st.hint_owner[es] = (i as u32, sys::now_ns());
                        st.set(
                            i,
                            Page {
                                kind: K_STAGED,
                                flags: p.flags,
                                tier: 0,
                                handle: es as u64,
                            },
                        );
                        es
                    }
                    Op::NoEnt => {
                        st.set(
                            i,
                            Page {
                                kind: K_ABSENT,
                                flags: p.flags,
                                ..Page::default()
                            },
                        );
                        return MoveResult::Applied;
                    }
                    Op::Busy => {
                        st.evict_busy += 1;
                        return MoveResult::Refused;
                    }
                    other => {
                        report(&format!(
                            "evict move of {:#x} failed: {other:?}",
                            self.addr(i)
                        ));
                        unsafe { sys::madvise(s, PAGE, libc::MADV_DONTNEED) };
                        return MoveResult::Refused;
                    }
                }
            };
            let t = &st.tiers[to as usize - 1];
            (hs, t.codec, t.max_bytes, p.kind == K_RESIDENT)
        };
        let data =
            unsafe { std::slice::from_raw_parts((self.hint_base + hs * PAGE) as *const u8, PAGE) };
        let zero = is_zero(data);
        let packed = !zero && codec.compress(data, out, max).is_some();
        let mut st = lock(self);
        let j = st.hint_owner[hs].0 as usize;
        let p = if j < st.hwm as usize {
            st.pages[j]
        } else {
            Page::default()
        };
        if p.kind != K_STAGED || p.handle != hs as u64 {
            // Moved back home (or unmapped, or brought home for a fork) meanwhile.
            if hs < HINT_SLOTS {
                st.hint_dirty.push(hs as u32); // our read may have left a zero page there
            }
            return MoveResult::Refused;
        }
        let ti = to as usize - 1;
        if zero {
            Self::free_slot(&mut st, hs as u32, true);
            st.set(
                j,
                Page {
                    kind: K_ABSENT,
                    flags: p.flags,
                    ..Page::default()
                },
            );
            return MoveResult::Applied;
        }
        match if packed {
            st.tiers[ti].pool.store(out)
        } else {
            None
        } {
            Some(h) => {
                Self::free_slot(&mut st, hs as u32, true);
                let t = &mut st.tiers[ti];
                t.pages += 1;
                t.migr_in += 1;
                st.set(
                    j,
                    Page {
                        kind: K_COMPRESSED,
                        tier: to,
                        flags: p.flags,
                        handle: h,
                    },
                );
                MoveResult::Applied
            }
            None => {
                st.tiers[ti].rejected += 1;
                if was_resident {
                    self.promote(&mut st, j, None);
                }
                st.pages[j].flags |= F_INCOMPRESSIBLE;
                MoveResult::NoCapacity
            }
        }
    }

    fn release_src(&self, st: &mut State, p: &Page, src: usize) {
        if p.kind == K_STAGED {
            Self::free_slot(st, p.handle as u32, true);
        } else {
            let _ = src; // eviction slots are released in one DONTNEED per batch
        }
    }

    fn store(&self, st: &mut State, data: &[u8], ti: usize) -> Option<u64> {
        let mut out = std::mem::take(&mut st.cbuf);
        let t = &mut st.tiers[ti];
        let r = t
            .codec
            .compress(data, &mut out, t.max_bytes)
            .and_then(|_| t.pool.store(&out));
        st.cbuf = out;
        r
    }

    /// Release the eviction staging slots (one system call per batch).
    pub fn end_batch(&self, st: &mut State) {
        unsafe { sys::madvise(self.evict_base, EVICT_BATCH * PAGE, libc::MADV_DONTNEED) };
        self.flush_hint_dirty(st);
    }

    // ------------------------------------------------------------------ sampler

    /// Hint-fault sampling: move up to `n` resident pages (round robin) to hint slots; their
    /// next access faults and reports the time since. Also puts back pages staged too long.
    pub fn sample(&self, n: usize) {
        let now = sys::now_ns();
        let mut st = lock(self);
        if st.frozen || st.hwm == 0 {
            return;
        }
        self.flush_hint_dirty(&mut st); // a slot is reused only once its old page is dropped
                                        // Put back stale samples.
        for slot in 0..HINT_SLOTS {
            let (pi, t) = st.hint_owner[slot];
            if t != 0 && now - t > STAGE_MAX_NS {
                let pi = pi as usize;
                if pi < st.hwm as usize
                    && st.pages[pi].kind == K_STAGED
                    && st.pages[pi].handle as usize == slot
                {
                    self.promote(&mut st, pi, None);
                }
                st.hint_owner[slot].1 = 0;
            }
        }
        if st.footprint_pages() * PAGE as u64 <= st.budget_bytes() {
            // Everything fits in the budget (unlimited, 100 %): nothing will be demoted, so
            // sampling would only cost hint faults. It resumes when the budget shrinks.
            return;
        }
        let hwm = st.hwm as usize;
        let mut seen = 0;
        let mut done = 0;
        let mut i = st.scan_cursor as usize % hwm;
        while done < n && seen < hwm && !st.hint_free.is_empty() {
            let p = st.pages[i];
            if p.kind == K_RESIDENT && p.flags & F_PINNED == 0 {
                let slot = *st.hint_free.last().unwrap() as usize;
                match self
                    .uffd
                    .mv(self.hint_base + slot * PAGE, self.addr(i), PAGE, false)
                {
                    Op::Done => {
                        st.hint_free.pop();
                        st.hint_owner[slot] = (i as u32, now);
                        st.set(
                            i,
                            Page {
                                kind: K_STAGED,
                                flags: p.flags,
                                tier: 0,
                                handle: slot as u64,
                            },
                        );
                        st.hint_sampled += 1;
                        done += 1;
                    }
                    Op::NoEnt => st.set(
                        i,
                        Page {
                            kind: K_ABSENT,
                            flags: p.flags,
                            ..Page::default()
                        },
                    ),
                    _ => {}
                }
            }
            seen += 1;
            i = (i + 1) % hwm;
        }
        st.scan_cursor = i as u32;
    }

    // ------------------------------------------------------------------ stats

    pub fn stats(&self) -> Stats {
        // Read before taking the lock (a file read).
        let anon = process_anon_bytes();
        let st = lock(self);
        let pools: u64 = st.tiers.iter().map(|t| t.pool.pool_bytes).sum();
        let ft = self.fault_tid.load(Ordering::Relaxed);
        let mt = self.manager_tid.load(Ordering::Relaxed);
        let (cf, cm) = (
            sys::thread_cpu_ns(ft) as f64 / 1e9,
            sys::thread_cpu_ns(mt) as f64 / 1e9,
        );
        Stats {
            pid: std::process::id(),
            uptime_s: (sys::now_ns() - self.start_ns) as f64 / 1e9,
            budget: st.budget.describe(),
            budget_bytes: st.budget_bytes().min(i64::MAX as u64),
            managed_bytes: st.mapped * PAGE as u64,
            max_managed_bytes: st.max_mapped * PAGE as u64,
            resident_bytes: st.resident * PAGE as u64,
            max_resident_bytes: st.max_resident * PAGE as u64,
            footprint_bytes: st.footprint_pages() * PAGE as u64,
            regions: st.regions,
            hint_sampled: st.hint_sampled,
            hint_faults: st.hint_faults,
            first_touch_faults: st.first_touch,
            evict_busy: st.evict_busy,
            tiers: st
                .tiers
                .iter()
                .enumerate()
                .map(|(k, t)| TierStats {
                    name: format!("{}:{}", k + 1, t.codec.name()),
                    codec: t.codec.name(),
                    allocator: t.pool.kind.name().into(),
                    pages: t.pages,
                    stored_bytes: t.pages * PAGE as u64,
                    compressed_bytes: t.pool.stored_bytes,
                    pool_bytes: t.pool.pool_bytes,
                    faults: t.faults,
                    fault_p50_ns: t.hist.quantile(0.5),
                    fault_p99_ns: t.hist.quantile(0.99),
                    migrations_in: t.migr_in,
                    migrations_out: t.migr_out,
                    rejected_incompressible: t.rejected,
                })
                .collect(),
            cpu_s: cf + cm,
            cpu_fault_thread_s: cf,
            cpu_manager_thread_s: cm,
            forks: st.forks,
            tier_fault_service_s: st.stall_ns as f64 / 1e9,
            max_over_budget_bytes: st.max_excess * PAGE as u64,
            room_waits: st.room_waits,
            room_wait_s: st.room_wait_ns as f64 / 1e9,
            thrashing: st.thrash.flagged,
            suggested_budget: st.thrash.suggestion.clone(),
            process_anon_bytes: anon,
            unmanaged_anon_bytes: anon.saturating_sub(st.resident * PAGE as u64 + pools),
            quanta: st.quanta,
        }
    }
}

/// Thrashing: the share of wall time the fault thread spent serving tier faults over the
/// last window. A program's own wait per fault is longer still (the wakeup of the faulting
/// thread, 5-10 us on these VMs), so this share is a lower bound of its stall.
pub const THRASH_WINDOW_NS: u64 = 2_000_000_000;
/// Above this share of a window the program is told it thrashes (docs/runtime.md).
pub const THRASH_SHARE: f64 = 0.10;
/// At most one stderr line a minute (`tiermem stat` shows the state all the time).
const THRASH_REPORT_GAP_NS: u64 = 60_000_000_000;

#[derive(Clone, Debug, Default)]
pub struct Thrash {
    window_start_ns: u64,
    stall_at_start_ns: u64,
    faults_at_start: u64,
    pub flagged: bool,
    /// When the last stderr line was written (episodes start at most once a minute).
    reported_ns: u64,
    /// The budget (percent of the footprint) that would have held the window's faults.
    pub suggestion: Option<String>,
}

impl Runtime {
    /// Close the thrash window if it is over. Returns the stderr line to print when the
    /// program starts thrashing (once per episode).
    pub fn check_thrash(&self) -> Option<String> {
        let now = sys::now_ns();
        let mut st = lock(self);
        let faults: u64 = st.tiers.iter().map(|t| t.faults).sum();
        let stall = st.stall_ns;
        let th = &st.thrash;
        if th.window_start_ns == 0 {
            st.thrash = Thrash {
                window_start_ns: now,
                stall_at_start_ns: stall,
                faults_at_start: faults,
                ..Thrash::default()
            };
            return None;
        }
        let wall = now - th.window_start_ns;
        if wall < THRASH_WINDOW_NS {
            return None;
        }
        let share = (stall - th.stall_at_start_ns) as f64 / wall as f64;
        let refaulted = faults - th.faults_at_start;
        let was = th.flagged;
        let reported_ns = th.reported_ns;
        let footprint = st.footprint_pages().max(1);
        let budget_pages = st.budget_bytes() / PAGE as u64;
        // Every page faulted back in the window was needed: a budget that holds them too.
        let want = (budget_pages + refaulted).min(footprint);
        let pct = ((want * 100).div_ceil(footprint).div_ceil(5) * 5).min(100);
        let flagged = share > THRASH_SHARE;
        st.thrash = Thrash {
            window_start_ns: now,
            stall_at_start_ns: stall,
            faults_at_start: faults,
            flagged,
            reported_ns,
            suggestion: flagged.then(|| {
                if pct >= 100 {
                    "unlimited".to_string()
                } else {
                    format!("{pct}%")
                }
            }),
        };
        if flagged && !was && (reported_ns == 0 || now - reported_ns > THRASH_REPORT_GAP_NS) {
            st.thrash.reported_ns = now;
            let s = st.thrash.suggestion.clone().unwrap_or_default();
            return Some(format!(
                "thrashing: {:.0}% of the last {:.0} s went to serving {} tier faults \
                 (budget {}); try --dram-budget {s} (`tiermem budget {} {s}` while it runs)",
                share * 100.0,
                wall as f64 / 1e9,
                refaulted,
                st.budget.describe(),
                std::process::id()
            ));
        }
        None
    }
}

/// Resident anonymous memory of this process (RssAnon of /proc/self/status), bytes.
fn process_anon_bytes() -> u64 {
    let _g = crate::InternalGuard::new();
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveResult {
    Applied,
    AlreadyThere,
    NoCapacity,
    Refused,
}

fn is_zero(d: &[u8]) -> bool {
    let (pre, mid, post) = unsafe { d.align_to::<u64>() };
    pre.iter().all(|&b| b == 0) && mid.iter().all(|&w| w == 0) && post.iter().all(|&b| b == 0)
}

/// Move the page tables of [old, old+len) to `dst` (MREMAP_FIXED: whatever was mapped
/// there is replaced) and leave the source mapped and empty (MREMAP_DONTUNMAP), so no
/// address of the source is ever free for the kernel to hand to another thread's mmap.
/// Returns the new address or -1 with errno set.
fn move_keeping_source(old: usize, len: usize, dst: usize) -> isize {
    // SAFETY: the caller holds the state lock and owns both ranges: [old, old+len) is a
    // managed range of this process (its pages move, nothing is freed) and [dst, dst+len)
    // is a reservation of ours or the program's stated MREMAP_FIXED destination.
    unsafe {
        sys::mremap(
            old,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | MREMAP_DONTUNMAP,
            dst,
        )
    }
}

/// A page-aligned run of zeros at least `len` bytes long (for UFFDIO_COPY).
fn zeros(len: usize) -> *const u8 {
    static Z: OnceLock<usize> = OnceLock::new();
    let base = *Z.get_or_init(|| sys::map_anon(FILL_CHUNK_PAGES * PAGE).unwrap_or(0));
    debug_assert!(len <= FILL_CHUNK_PAGES * PAGE);
    base as *const u8
}

/// One line on stderr (never panics, never allocates through the program's allocator).
pub fn report(msg: &str) {
    let _g = crate::InternalGuard::new();
    let line = format!("tiermem[{}]: {msg}\n", std::process::id());
    unsafe { libc::write(2, line.as_ptr() as *const libc::c_void, line.len()) };
}

/// Start one of tiermem's threads with pthread_create directly, so the thread is marked
/// internal before any Rust code runs in it (std's thread start frees memory allocated by
/// the spawning thread; it must go back to the allocator it came from).
fn spawn_internal(
    rt: &'static Runtime,
    name: &'static std::ffi::CStr,
    stack: usize,
    f: fn(&'static Runtime),
) -> std::io::Result<()> {
    struct Start {
        rt: &'static Runtime,
        f: fn(&'static Runtime),
    }
    extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
        let _g = crate::InternalGuard::new();
        crate::mark_runtime_thread();
        let s = unsafe { Box::from_raw(arg as *mut Start) };
        (s.f)(s.rt);
        std::ptr::null_mut()
    }
    let arg = Box::into_raw(Box::new(Start { rt, f })) as *mut libc::c_void;
    unsafe {
        // The program's signal handlers must never run on our threads (a handler touching
        // managed memory on the fault thread would deadlock it): the new thread starts with
        // every signal blocked (inherited from this mask, restored right after).
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, stack);
        libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
        let mut th: libc::pthread_t = 0;
        let r = libc::pthread_create(&mut th, &attr, start, arg);
        libc::pthread_attr_destroy(&mut attr);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if r != 0 {
            drop(Box::from_raw(arg as *mut Start));
            return Err(std::io::Error::from_raw_os_error(r));
        }
        libc::pthread_setname_np(th, name.as_ptr());
    }
    Ok(())
}

// ---------------------------------------------------------------------- fork

/// Run `f` with every signal blocked (a program's handler must not run while this thread
/// holds the state lock).
fn signals_blocked<R>(f: impl FnOnce() -> R) -> R {
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

extern "C" fn atfork_prepare() {
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

extern "C" fn atfork_parent() {
    let Some(rt) = get() else { return };
    let _g = crate::InternalGuard::new();
    signals_blocked(|| lock(rt).frozen = false);
}

extern "C" fn atfork_child() {
    CHILD.store(true, Ordering::SeqCst);
}
