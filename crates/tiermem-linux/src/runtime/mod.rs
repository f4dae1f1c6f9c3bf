//! The runtime inside the program: one arena of managed regions on one userfaultfd, the
//! page-state table, the fault thread, eviction/promotion, and the hint-fault sampler.
//!
//! Page states (`PageState`, one per 4 KiB page of the arena):
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
//!
//! The code, by seam:
//!
//! ```text
//!   mod.rs      Runtime, State, init, the state lock, stats, thread start
//!   page.rs     per-page state (Page, PageState, flags, Pin) and State::set
//!   arena.rs    region reservation and the free map; release, untier, dontneed, remap
//!   fault.rs    the fault thread: serve, promote, make_room
//!   mover.rs    page moves between tiers: move_page, evict, end_batch, move_range
//!   sampler.rs  hint-fault sampling and the hint staging slots
//!   thrash.rs   thrashing detection
//!   fork.rs     atfork handling
//!   log.rs      where report()'s lines go: RUN_DIR/log, the stats, stderr (levels)
//! ```

mod arena;
mod degrade;
mod fault;
pub mod fault_around;
mod fork;
pub mod log;
mod mover;
mod node;
mod page;
mod sampler;
mod thrash;

pub use fork::SHARED_RECHECK_NS;
pub use mover::{MoveResult, RangeBufs, RangeOutcome};
pub use node::NodeBufs;
pub use page::{Page, PageState, Pin, PoolHandle, NO_TIER};
pub use sampler::SAMPLE_BLOCK_PAGES;
pub use thrash::{Thrash, THRASH_SHARE, THRASH_WINDOW_NS};

use crate::codec::Codec;
use crate::config::{Budget, RuntimeConfig};
use crate::pool::{AllocatorKind, Backing, Pool};
use crate::stats::{Histogram, Stats, TierStats};
use crate::sys::{self, PAGE};
use crate::uffd::Uffd;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use tiermem_core::HeatEvent;

/// Eviction batch: pages moved to the eviction staging area before one DONTNEED frees them.
pub const EVICT_BATCH: usize = 32;
/// Eviction staging slots: room for the largest range moved as one operation (2 MiB), whose
/// pages one UFFDIO_MOVE stages side by side (`Runtime::move_range`).
pub const EVICT_SLOTS: usize = 512;
/// Huge page size: the arena starts on a multiple of it.
const HUGE_BYTES: usize = 2 << 20;
/// Hint staging slots (the eviction slots follow them in the same staging mapping). A cold
/// page holds its slot until it is put back (`STAGE_MAX_NS`, 5 s), so the slots bound the
/// sampling rate to HINT_SLOTS / 5 s: 4 096 slots held hot10's sampler (1 GiB, 90 % cold) to
/// 820 pages/s of its 2 560; 16 384 (64 MiB of address space, 256 KiB of bookkeeping) let
/// it run at its rate.
const HINT_SLOTS: usize = 16384;
/// Under the SLO controller, a region is registered with the userfaultfd once it has lived
/// this long (`Runtime::adopt_due`): memory freed sooner (allocation churn, temporaries)
/// never pays a user-space fault, and memory that can turn cold lives longer.
pub const ADOPT_AGE_NS: u64 = 1_000_000_000;
/// Minimum slack of the budget (1 MiB), see `State::limit_pages`.
const SLACK_MIN_PAGES: u64 = 256;
/// mremap(2) flag (Linux 5.7): move the pages, leave the source mapped and empty.
const MREMAP_DONTUNMAP: i32 = 4;

/// A lower tier: compressed (codec + pool), or a node tier (`node`: its pages are mapped,
/// on that NUMA node; codec and pool unused).
pub struct CTier {
    pub node: Option<u32>,
    pub codec: Codec,
    pub pool: Pool,
    pub max_bytes: usize,
    pub pages: u64,
    pub faults: u64,
    pub hist: Histogram,
    /// Sum of this tier's fault service times (decompress + install), ns: with the fault
    /// count, Little's law gives the tier's occupancy and loaded latency (backend.rs).
    pub service_ns: u64,
    pub migr_in: u64,
    pub migr_out: u64,
    pub rejected: u64,
}

pub struct State {
    pub pages: Vec<Page>,
    /// Pages whose tier changed since the manager last looked (`take_placement_changes`):
    /// its placement mirror is updated from these, never copied whole under the lock.
    placement_log: Vec<u32>,
    /// The log outgrew `placement_log_cap`: the next look rebuilds the whole mirror.
    placement_log_full: bool,
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
    /// Pages left to the kernel (`PageState::Unregistered`), the runs of them waiting for
    /// adoption under the SLO controller (start, pages, birth ns), and the pages adopted.
    pub unregistered_pages: u64,
    pub unregistered: Vec<(u32, u32, u64)>,
    /// `adopt_due` looks at partly written runs again from this time (ns).
    pub adopt_next_ns: u64,
    pub adopted_pages: u64,
    pub max_mapped: u64,
    pub max_resident: u64,
    pub budget: Budget,
    /// Pages the SLO controller keeps out of DRAM, when it runs (`set_slo_limit`): the
    /// budget in force is the footprint less those of them still out, and at most `budget`
    /// (which stays the user's hard ceiling).
    pub slo_offload: Option<u64>,
    /// `left_tiers` when `slo_offload` was set: the pages that left a tier since then have
    /// come back (or been freed), and the offload follows them down.
    slo_left_at_set: u64,
    /// Pages that left a lower tier for DRAM or for nowhere (tier faults, promotions,
    /// frees), ever (kept by `State::set`).
    pub left_tiers: u64,
    /// The SLO controller's target and its counters as of its last decision (stats).
    pub slo: Option<crate::stats::SloStats>,
    pub frozen: bool,
    scan_cursor: u32,
    pub regions: u64,
    /// Sampled pages offloaded because they stayed untouched (`Runtime::offload_idle`).
    pub idle_offloaded: u64,
    pub hint_sampled: u64,
    pub hint_faults: u64,
    pub first_touch: u64,
    /// Time the fault thread spent serving tier faults (decompress + install), ns.
    pub stall_ns: u64,
    /// Largest amount (pages) by which resident DRAM exceeded the budget.
    pub max_excess: u64,
    /// Resident pages a compressed tier refused as incompressible (`F_INCOMPRESSIBLE`):
    /// they cannot leave DRAM, so faults do not wait for them (`limit_pages`).
    pub incompressible: u64,
    /// Times the fault thread waited for the manager to make room, and for how long.
    pub room_waits: u64,
    pub room_wait_ns: u64,
    pub thrash: Thrash,
    /// Fault-around: the unit tier faults are served at (fault_around.rs).
    pub granularity: fault_around::Granularity,
    pub evict_busy: u64,
    /// Moves of a resident page the kernel answered ENOENT for (refused, page kept).
    pub evict_no_page: u64,
    /// Faults on a page held resident that had no page table entry (its data was dropped
    /// outside our moves; zeros installed and reported), and absent pages found with an
    /// entry (counted resident). Both are zero unless something is wrong.
    pub resident_refilled: u64,
    pub absent_with_page: u64,
    /// mremap moves of managed regions (realloc growth included) done with the page
    /// tables, and those the kernel refused (realloc then copies).
    pub remap_moves: u64,
    pub remap_refused: u64,
    /// Some page may carry `F_SHARED` (set by `mark_shared`; cleared by a recheck that
    /// finds none): without it the once-a-second recheck skips its walk of the page table.
    maybe_shared: bool,
    /// Page-table operations (UFFDIO_MOVE / UFFDIO_COPY calls) the manager made to move
    /// pages between tiers, and the pages they moved: a 2 MiB range move is one operation.
    pub move_ops: u64,
    pub moved_pages: u64,
    /// move_pages(2) calls made for node tiers, and the pages they moved.
    pub node_move_calls: u64,
    pub node_moved_pages: u64,
    pub forks: u64,
    pub quanta: u64,
    /// The policy's tracker needs hint-fault samples even while the footprint fits the
    /// budget (every policy but the budget guard alone).
    pub sample_always: bool,
    /// What `tiermem stat` shows of the policy: its name, how its tracker is provided
    /// here, and each tier's loaded latency (0 = DRAM) as last measured, ns.
    pub policy: String,
    pub tracker: String,
    pub latency_ns: Vec<f64>,
    /// The policy's `counters()` after its last step (the manager copies them on change).
    pub policy_counters: Vec<(&'static str, u64)>,
    /// The engine's planned moves, tried vs applied (cumulative; stats `plan`).
    pub plan: tiermem_core::Applied,
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
    /// The node DRAM pages live on: the node the program started on (node tiers' pages go
    /// back there; new managed memory is bound there when node tiers are configured).
    pub dram_node: u32,
    /// Some tier is a node tier.
    pub has_node_tiers: bool,
    /// The loaded-latency probe (`telemetry = "probe"`).
    pub probe: Option<crate::probe::Probe>,
    st: Mutex<State>,
    pub start_ns: u64,
    /// The fault threads' thread ids (for their CPU time), `fault_threads` of them.
    pub fault_tids: [AtomicI32; fault::FAULT_THREADS_MAX],
    /// The CPUs the fault threads are pinned to, one each (`fault::fault_cpus`); empty:
    /// one unpinned fault thread.
    fault_cpus: Vec<usize>,
    /// Fault threads started so far (each takes the next CPU of `fault_cpus`).
    fault_threads: AtomicUsize,
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
    /// Bytes of anonymous private mmaps left to the kernel, by why (`LeftToKernel`).
    pub left_to_kernel: [AtomicU64; 3],
}

/// Why the preload left an anonymous private mmap to the kernel (counted in
/// `Runtime::left_to_kernel`, shown by `tiermem stat`): what a managed runtime's heap is
/// made of (docs/runtime.md "Limits").
#[derive(Clone, Copy, Debug)]
pub enum LeftToKernel {
    /// `PROT_NONE`: an address-space reservation (JVM and V8 heaps, thread stacks' guards).
    Reserved = 0,
    /// At an address the program chose (`MAP_FIXED` or a hint): the commits inside such
    /// reservations, which is where a JVM's or V8's heap pages live.
    Placed = 1,
    /// Smaller than `min_region`, or other flags (stacks, locked, huge pages).
    Other = 2,
}

impl Runtime {
    pub fn note_left_to_kernel(&self, why: LeftToKernel, len: usize) {
        self.left_to_kernel[why as usize].fetch_add(len as u64, Ordering::Relaxed);
    }
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

impl State {
    pub fn footprint_pages(&self) -> u64 {
        self.resident + self.tiers.iter().map(|t| t.pages).sum::<u64>()
    }

    pub fn budget_bytes(&self) -> u64 {
        let footprint = self.footprint_pages();
        let user = self.budget.bytes(footprint * PAGE as u64);
        match self.slo_offload {
            // A page that faults back, or a fresh one, raises the budget at once: the
            // controller's offload is of pages that stay out, so a fault never waits for
            // room it made itself, and no page is evicted to make room for a refault.
            Some(off) => {
                let back = self.left_tiers - self.slo_left_at_set;
                (footprint.saturating_sub(off.saturating_sub(back)) * PAGE as u64).min(user)
            }
            None => user,
        }
    }

    /// The SLO controller's limit on DRAM, kept as the pages it leaves out (see
    /// `slo_offload`).
    pub fn set_slo_limit(&mut self, limit_bytes: u64) {
        let keep = limit_bytes / PAGE as u64;
        self.slo_offload = Some(self.footprint_pages().saturating_sub(keep));
        self.slo_left_at_set = self.left_tiers;
    }

    /// Resident pages above which faults wait for the manager to make room: the budget
    /// plus a slack of max(budget / 32, 1 MiB), plus the resident pages known to be
    /// incompressible (no eviction can take them out of DRAM: a fault waiting for them
    /// would wait its full time on every batch). One batch of faults (at most 32 messages,
    /// each zero-filling up to 64 KiB) can still land on top: docs/runtime.md.
    pub fn limit_pages(&self) -> u64 {
        let budget = self.budget_bytes() / PAGE as u64;
        budget
            .saturating_add((budget / 32).max(SLACK_MIN_PAGES))
            .saturating_add(self.incompressible)
    }
}

impl Runtime {
    /// Create the runtime of this process and start its threads.
    pub fn init(cfg: RuntimeConfig) -> std::io::Result<&'static Runtime> {
        let _g = crate::InternalGuard::new();
        if let Some(rt) = RUNTIME.get() {
            return Ok(rt);
        }
        log::set_run_dir(&cfg.run_dir, &cfg.stats_mode);
        crate::inject::init_from_env().map_err(std::io::Error::other)?;
        // The tiers' names and fault-around as types, before anything is mapped: a config
        // that skipped `validate` is refused, never run on stand-in codecs or pools.
        let bad_config = |e: tiermem_core::Error| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
        };
        let compressed = cfg.compressed_tiers().map_err(bad_config)?;
        let fault_around = cfg.fault_around().map_err(bad_config)?;
        let uffd = Uffd::open()?;
        let arena_bytes = (cfg.arena_bytes() as usize).min(16 << 40) & !(PAGE - 1);
        // Reserve 2 MiB more and trim, so the arena starts 2 MiB-aligned: a range move of
        // 2^k pages at a page index aligned to 2^k is then aligned in virtual memory too.
        let reserve = arena_bytes + HUGE_BYTES;
        // SAFETY: a fresh PROT_NONE reservation at an address the kernel picks; no existing memory
        // is touched.
        let base = unsafe {
            sys::mmap(
                0,
                reserve,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let base = base as usize;
        let arena = base.next_multiple_of(HUGE_BYTES);
        // SAFETY: both pieces are parts of the reservation just made that the arena does
        // not use (either may be empty); nothing else maps them.
        unsafe {
            if arena > base {
                sys::munmap(base, arena - base);
            }
            let end = arena + arena_bytes;
            if base + reserve > end {
                sys::munmap(end, base + reserve - end);
            }
        }
        let staging_bytes = (HINT_SLOTS + EVICT_SLOTS) * PAGE;
        let staging = sys::map_anon(staging_bytes)?;
        // SAFETY: an advice on the staging mapping just created; no memory is freed.
        unsafe { sys::madvise(staging, staging_bytes, libc::MADV_NOHUGEPAGE) };
        uffd.register(staging, staging_bytes)?;
        // Runtime tiers 1.. in config order: node tiers and compressed tiers.
        let nodes = cfg.tier_nodes();
        let tiers = cfg
            .tiers
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, t)| (compressed.iter().find(|c| c.name == t.name), nodes[k]))
            // A node tier (no compressed tier of its name) has an empty pool it never uses.
            .map(|(c, node)| CTier {
                node,
                codec: c.map_or(Codec::Lz4, |c| c.codec),
                pool: Pool::new(
                    c.map_or(AllocatorKind::Zsmalloc, |c| c.allocator),
                    c.map_or(Backing::Memory, |c| c.backing),
                ),
                max_bytes: c.map(|c| c.max_compressed_bytes as usize).unwrap_or(0),
                pages: 0,
                faults: 0,
                hist: Histogram::default(),
                service_ns: 0,
                migr_in: 0,
                migr_out: 0,
                rejected: 0,
            })
            .collect();
        let st = State {
            pages: Vec::new(),
            placement_log: Vec::new(),
            placement_log_full: false,
            free: BTreeMap::new(),
            hwm: 0,
            blocks: HashMap::new(),
            tiers,
            hint_free: (0..HINT_SLOTS as u32).rev().collect(),
            hint_owner: vec![(0, 0); HINT_SLOTS + EVICT_SLOTS],
            hint_dirty: Vec::new(),
            events: Vec::new(),
            resident: 0,
            mapped: 0,
            unregistered_pages: 0,
            unregistered: Vec::new(),
            adopt_next_ns: 0,
            adopted_pages: 0,
            max_mapped: 0,
            max_resident: 0,
            budget: cfg.budget(),
            slo_offload: None,
            slo_left_at_set: 0,
            left_tiers: 0,
            slo: cfg.slo_config().map(|c| crate::stats::SloStats {
                target_stall: c.stall,
                ..Default::default()
            }),
            frozen: false,
            scan_cursor: 0,
            regions: 0,
            idle_offloaded: 0,
            hint_sampled: 0,
            hint_faults: 0,
            first_touch: 0,
            stall_ns: 0,
            max_excess: 0,
            incompressible: 0,
            room_waits: 0,
            room_wait_ns: 0,
            thrash: Thrash::default(),
            granularity: fault_around::Granularity::new(
                fault_around,
                &cfg.fault_around,
            ),
            evict_busy: 0,
            evict_no_page: 0,
            resident_refilled: 0,
            absent_with_page: 0,
            remap_moves: 0,
            remap_refused: 0,
            maybe_shared: false,
            move_ops: 0,
            moved_pages: 0,
            node_move_calls: 0,
            node_moved_pages: 0,
            forks: 0,
            quanta: 0,
            sample_always: false,
            policy: String::new(),
            policy_counters: Vec::new(),
            plan: tiermem_core::Applied::default(),
            tracker: String::new(),
            latency_ns: Vec::new(),
            pbuf: vec![0u8; PAGE],
        };
        let probe = (cfg.telemetry == "probe")
            .then(|| crate::probe::Probe::new(&nodes, crate::numa::dram_node(), cfg.quantum_ns()));
        let fault_cpus = fault::fault_cpus(cfg.fault_threads);
        let rt: &'static Runtime = Box::leak(Box::new(Runtime {
            min_region: cfg.min_region_bytes() as usize,
            cfg,
            uffd,
            arena,
            arena_pages: (arena_bytes / PAGE) as u32,
            hint_base: staging,
            evict_base: staging + HINT_SLOTS * PAGE,
            dram_node: crate::numa::dram_node(),
            has_node_tiers: nodes.iter().any(|n| n.is_some()),
            probe,
            st: Mutex::new(st),
            start_ns: sys::now_ns(),
            fault_tids: Default::default(),
            fault_cpus,
            fault_threads: AtomicUsize::new(0),
            manager_tid: AtomicI32::new(0),
            stop: AtomicBool::new(false),
            publish: AtomicBool::new(true),
            fault_msgs: AtomicU64::new(0),
            kick: AtomicU32::new(0),
            room: AtomicU32::new(0),
            can_make_room: AtomicBool::new(true),
            left_to_kernel: Default::default(),
        }));
        if RUNTIME.set(rt).is_err() {
            return Ok(RUNTIME.get().unwrap());
        }
        degrade::install_panic_hook();
        // SAFETY: the handlers are `extern "C"` fns of this module, valid for the life of the
        // process.
        unsafe {
            libc::pthread_atfork(
                Some(fork::atfork_prepare),
                Some(fork::atfork_parent),
                Some(fork::atfork_child),
            )
        };
        for _ in 0..rt.fault_cpus.len().max(1) {
            spawn_internal(rt, c"tiermem-fault", 256 << 10, |rt| {
                let k = rt.fault_threads.fetch_add(1, Ordering::Relaxed);
                rt.fault_tids[k].store(sys::gettid(), Ordering::Relaxed);
                let pinned = rt.fault_cpus.get(k).is_some_and(|&cpu| sys::pin_to_cpu(cpu));
                rt.fault_loop(pinned);
            })?;
        }
        if rt.probe.is_some() {
            spawn_internal(rt, c"tiermem-probe", 256 << 10, |rt| {
                if let Some(p) = &rt.probe {
                    p.run(&rt.stop);
                }
            })?;
        }
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

    /// At exit: stop publishing stats and remove the control directory; the lines still
    /// waiting for the log go now if they can.
    pub fn stop_publishing(&self) {
        log::flush();
        self.publish.store(false, Ordering::SeqCst);
        crate::control::Control::new(&self.cfg.run_dir, std::process::id()).remove();
    }

    // ------------------------------------------------------------------ stats

    pub fn stats(&self) -> Stats {
        // Read before taking the lock (a file read; the log's lock is taken after the
        // state lock when both are, never before).
        let anon = process_anon_bytes();
        let (messages, recent_messages) = log::snapshot();
        let log_file = log::path().unwrap_or_default();
        let st = lock(self);
        let pools: u64 = st.tiers.iter().map(|t| t.pool.pool_bytes).sum();
        let mt = self.manager_tid.load(Ordering::Relaxed);
        let fault_ns: u64 = self.fault_tids[..self.fault_threads.load(Ordering::Relaxed)]
            .iter()
            .map(|t| sys::thread_cpu_ns(t.load(Ordering::Relaxed)))
            .sum();
        let (cf, cm) = (fault_ns as f64 / 1e9, sys::thread_cpu_ns(mt) as f64 / 1e9);
        Stats {
            pid: std::process::id(),
            uptime_s: (sys::now_ns() - self.start_ns) as f64 / 1e9,
            budget: match st.slo {
                Some(_) => format!("SLO-chosen, ceiling {}", st.budget.describe()),
                None => st.budget.describe(),
            },
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
            unregistered_bytes: st.unregistered_pages * PAGE as u64,
            adopted_bytes: st.adopted_pages * PAGE as u64,
            evict_busy: st.evict_busy,
            evict_no_page: st.evict_no_page,
            resident_refilled: st.resident_refilled,
            absent_with_page: st.absent_with_page,
            misreported_moves: self.uffd.misreported_moves.load(Ordering::Relaxed),
            remap_moves: st.remap_moves,
            remap_refused: st.remap_refused,
            move_ops: st.move_ops,
            moved_pages: st.moved_pages,
            fault_around: st.granularity.stats.clone(),
            tiers: st
                .tiers
                .iter()
                .enumerate()
                .map(|(k, t)| TierStats {
                    // "K:NAME" with the config's name: five compressed tiers of which three
                    // are lz4 (zbud, z3fold, zsmalloc) were three "K:lz4" before.
                    name: match (t.node, self.cfg.tiers.get(k + 1)) {
                        (Some(n), _) => format!("{}:node{n}", k + 1),
                        (None, Some(c)) => format!("{}:{}", k + 1, c.name),
                        (None, None) => format!("{}:{}", k + 1, t.codec.name()),
                    },
                    codec: if t.node.is_some() {
                        "-".into()
                    } else {
                        t.codec.name()
                    },
                    allocator: if t.node.is_some() {
                        "-".into()
                    } else {
                        t.pool.kind.name().into()
                    },
                    pages: t.pages,
                    stored_bytes: t.pages * PAGE as u64,
                    compressed_bytes: t.pool.stored_bytes,
                    pool_bytes: t.pool.pool_bytes,
                    faults: t.faults,
                    fault_p50_ns: t.hist.quantile(0.5),
                    fault_p99_ns: t.hist.quantile(0.99),
                    latency_ns: st.latency_ns.get(k + 1).copied().unwrap_or(0.0),
                    migrations_in: t.migr_in,
                    migrations_out: t.migr_out,
                    rejected_incompressible: t.rejected,
                    cost_per_gb: self
                        .cfg
                        .tiers
                        .get(k + 1)
                        .map_or(1.0, |c| c.spec(0).cost_per_gb),
                })
                .collect(),
            cpu_s: cf + cm,
            cpu_fault_thread_s: cf,
            cpu_manager_thread_s: cm,
            forks: st.forks,
            tier_fault_service_s: st.stall_ns as f64 / 1e9,
            max_over_budget_bytes: st.max_excess * PAGE as u64,
            incompressible_resident_bytes: st.incompressible * PAGE as u64,
            room_waits: st.room_waits,
            room_wait_s: st.room_wait_ns as f64 / 1e9,
            thrashing: st.thrash.flagged,
            suggested_budget: st.thrash.suggestion.clone(),
            process_anon_bytes: anon,
            unmanaged_anon_bytes: anon.saturating_sub(st.resident * PAGE as u64 + pools),
            left_to_kernel: {
                let b = |w: LeftToKernel| self.left_to_kernel[w as usize].load(Ordering::Relaxed);
                crate::stats::LeftToKernelStats {
                    reserved_bytes: b(LeftToKernel::Reserved),
                    placed_bytes: b(LeftToKernel::Placed),
                    other_bytes: b(LeftToKernel::Other),
                }
            },
            quanta: st.quanta,
            policy: st.policy.clone(),
            plan: st.plan,
            policy_counters: st
                .policy_counters
                .iter()
                .map(|&(k, v)| (k.to_string(), v))
                .collect(),
            tracker: st.tracker.clone(),
            slo: st.slo.clone().map(|slo| {
                // What it found cold: the managed bytes held in the compressed tiers.
                let cold: u64 = st.tiers.iter().filter(|t| t.node.is_none()).map(|t| t.pages).sum();
                let cold_bytes = cold * PAGE as u64;
                crate::stats::SloStats {
                    cold_bytes,
                    saved_bytes: cold_bytes.saturating_sub(pools),
                    idle_offloaded_bytes: st.idle_offloaded * PAGE as u64,
                    ..slo
                }
            }),
            dram_latency_ns: st.latency_ns.first().copied().unwrap_or(0.0),
            probe_cpu_share: self.probe.as_ref().map_or(0.0, |p| {
                p.cpu_s() / ((sys::now_ns() - self.start_ns) as f64 / 1e9).max(1e-9)
            }),
            tco_savings: {
                let specs: Vec<_> = self.cfg.tiers.iter().map(|c| c.spec(0)).collect();
                let resident = st.resident * PAGE as u64;
                let mut logical = vec![resident];
                let mut physical = vec![resident];
                for t in &st.tiers {
                    logical.push(t.pages * PAGE as u64);
                    physical.push(if t.node.is_some() {
                        t.pages * PAGE as u64
                    } else {
                        t.pool.pool_bytes
                    });
                }
                tiermem_core::tco::measured_savings(&specs, &logical, &physical)
            },
            dram_cost_per_gb: self.cfg.tiers.first().map_or(1.0, |c| c.spec(0).cost_per_gb),
            messages_info: messages[0],
            messages_warn: messages[1],
            messages_fatal: messages[2],
            recent_messages,
            log_file,
        }
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

/// A line from the runtime about something it could not do (`log::Level::Warn`): to
/// RUN_DIR/log and the stats, on stderr only under `tiermem run --verbose` (runtime/log.rs).
/// Never panics, never allocates through the program's allocator.
pub fn report(msg: &str) {
    log::report(log::Level::Warn, msg)
}

/// Advice for the user (thrashing and the budget to try): as [`report`], level info.
pub fn report_info(msg: &str) {
    log::report(log::Level::Info, msg)
}

/// A line for a condition where the program's data is at stake (a page that reads as zeros
/// or cannot be decompressed, a region that lost its registration, a free of a pointer
/// tiermem never handed out) or the runtime aborts it: as [`report`], and always on stderr.
pub fn report_fatal(msg: &str) {
    log::report(log::Level::Fatal, msg)
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
        name: &'static std::ffi::CStr,
        f: fn(&'static Runtime),
    }
    extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
        let _g = crate::InternalGuard::new();
        crate::mark_runtime_thread();
        // SAFETY: `arg` is the Box leaked by `spawn_internal` for this thread only, taken back
        // exactly once.
        let s = unsafe { Box::from_raw(arg as *mut Start) };
        // A panic of tiermem's own ends its tiering, not the program (runtime/degrade.rs).
        // A fault thread runs again while tiering drains (the pools still need serving).
        let (rt, f) = (s.rt, s.f);
        while std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || f(rt))).is_err() {
            if !degrade::thread_panicked(s.rt, &s.name.to_string_lossy()) {
                break;
            }
        }
        std::ptr::null_mut()
    }
    let arg = Box::into_raw(Box::new(Start { rt, name, f })) as *mut libc::c_void;
    // SAFETY: the sigsets and attr are locals initialised before use; `arg` is freed here only if
    // the thread was not created.
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
