//! TPP (Maruf et al., ASPLOS'23) as upstreamed: Linux NUMA balancing in memory-tiering mode
//! (`kernel.numa_balancing = 2`, v6.3 as in Colloid §2) plus demotion in reclaim.
//!
//! * Tracker: NUMA-balancing hint faults. Every scan interval the task scanner unmaps
//!   `scan_size_mb` of the address space; in tiering mode it skips pages already on a top-tier
//!   node, so only alternate-tier pages fault. A fault carries the time since the unmap
//!   (the "hint-fault latency").
//! * Promotion, synchronously on the fault (`should_numa_migrate_memory` →
//!   `numa_promotion_rate_limit`, kernel/sched/fair.c): the page is a candidate if its fault
//!   latency is below the hot threshold; candidates are counted; promotion is refused once
//!   the candidates of the current 1-second window exceed the promote rate limit; and it
//!   fails if the default tier has no free memory above its high watermark
//!   (`migrate_balanced_pgdat`), which wakes kswapd.
//! * While the default tier has plenty of free memory (`pgdat_free_space_enough`: free
//!   above the promotion watermark plus max(1 GiB, 1/16 of the tier)), every alternate-tier
//!   fault promotes, without threshold or rate limit, and the threshold resets to its default.
//! * Threshold adaptation (`numa_promotion_adjust_threshold`): once per threshold period
//!   (= `scan_period_min_ms`), compare the candidates of the period with the rate limit's worth:
//!   more than 110 % → lower the threshold by one step, less than 90 % → raise it by one step;
//!   step = 2·hot_threshold/16, within [step, 2·hot_threshold].
//! * Demotion (kswapd + demotion in `shrink_folio_list`): when free memory in the default
//!   tier falls below the low watermark, or a promotion failed for lack of room, kswapd
//!   demotes pages from the tail of the inactive LRU until free memory reaches the promotion
//!   watermark (`WMARK_PROMO`, tiering mode). The kernel's LRU is ordered by access bits
//!   (a referenced inactive page is re-activated instead of reclaimed), which a hint-fault
//!   tracker does not see. We approximate "not referenced recently" by the access rate the
//!   last hint fault implies (1 / time-to-fault; a page that is rarely accessed is the one
//!   whose access bit is likely clear when kswapd looks), then by recency (last fault,
//!   sample or promotion), then by page index (first-touch order). To have that signal for
//!   default-tier pages, the scanner marks them too (`lru = "fault-rate"`, the default): the
//!   kernel's scan also walks top-tier memory — it only skips marking it — so every page is
//!   revisited at the kernel's pace; faults on default-tier pages never promote.
//!   Alternatives: `lru = "access-bit"` keeps the upstream scanner (alternate tier only) and
//!   adds an access-bit scan every `lru_scan_ms` (a combined tracker): victims are the pages
//!   least recently seen accessed — the kernel's mechanism, blind where every page is
//!   touched within a scan (e.g. GUPS on 2 MB pages); `lru = "recency"` is the upstream
//!   scanner alone, victims least recently faulted or promoted.
//! * Quantum: 10 ms, to approximate synchronous promotion and asynchronous kswapd.
//!
//! Defaults (Linux v6.3): `numa_balancing_scan_size_mb = 256`,
//! `numa_balancing_scan_period_min_ms = 1000` (kernel/sched/fair.c,
//! `sysctl_numa_balancing_scan_size`, `sysctl_numa_balancing_scan_period_min`);
//! `numa_balancing_hot_threshold_ms = 1000` (`MSEC_PER_SEC`,
//! `sysctl_numa_balancing_hot_threshold`); `numa_balancing_promote_rate_limit_MBps = 65536`
//! (`sysctl_numa_balancing_promote_rate_limit`); `vm.watermark_scale_factor = 10`
//! (mm/page_alloc.c); `min_free_kbytes = clamp(sqrt(16·lowmem_kB), 128, 262144)`
//! (`calculate_min_free_kbytes`); the 16 adjust steps are `NUMA_MIGRATION_ADJUST_STEPS`.
//! The scan interval: `numa_balancing_scan_period_min_ms` is the time to scan a task's
//! *whole* address space; the kernel scans one 256 MB window every
//! `task_scan_min() = max(1000 ms / (MAX_SCAN_WINDOW / scan_size), scan_period_min / windows)`
//! with `MAX_SCAN_WINDOW = 2560` MB and `windows = RSS / scan_size`: for any task above
//! 2.5 GB (every Colloid workload) that is the 100 ms floor (`scan_interval_ms`); the
//! simulator applies `task_scan_min()` to each task (tenant) on its own footprint, with
//! its own scan offset, paced by its CPU share (`tiermem_sim::tracker`), unless
//! `scan_interval_ms` fixes the interval. The kernel may stretch it towards `scan_period_max / windows`
//! (60 s / 288 = 208 ms at 72 GB) depending on the task's fault locality; we keep the minimum.
//! With THP, a scan counts a huge page as its 512 base pages, so the scan always covers
//! `scan_size_mb` of memory: `scan_pages = scan_size / page_bytes`.

use crate::heat::{
    capacity_pages, free_pages, in_default_tier, ms_to_ns, HeatModel, SideCursors, FAST, SLOW,
};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{HeatEvent, PageIdx, Plan, Policy, Result, Snapshot, TierId, TrackerSpec, MIB};

/// `policy = "tpp"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TppConfig {
    /// How often promotion/kswapd decisions are taken (TPP promotes synchronously on the
    /// fault; a short quantum approximates that).
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
    /// `numa_balancing_scan_size_mb`: memory unmapped per scan.
    #[serde(default = "d_scan_size_mb")]
    pub scan_size_mb: u64,
    /// `numa_balancing_scan_period_min_ms`: the period of the threshold adaptation (and, in
    /// the kernel, the minimum time to scan the whole address space).
    #[serde(default = "d_scan_period_ms")]
    pub scan_period_min_ms: f64,
    /// Time between two `scan_size_mb` windows; absent = the kernel's `task_scan_min()` floor
    /// for large tasks, `1000 ms · scan_size_mb / 2560` = 100 ms.
    #[serde(default)]
    pub scan_interval_ms: Option<f64>,
    /// `numa_balancing_hot_threshold_ms`: a fault latency below this makes a candidate.
    #[serde(default = "d_hot_threshold_ms")]
    pub hot_threshold_ms: f64,
    /// Promotion rate limit in GB/s (1e9 bytes/s): `numa_balancing_promote_rate_limit_MBps`
    /// is 65536 MiB/s (the kernel shifts by 20) = 65536 × 1 048 576 B/s = 68.719476736 GB/s.
    #[serde(default = "d_rate_limit")]
    pub promote_rate_limit_gbps: f64,
    /// Adapt the hot threshold to the rate limit (the kernel always does in tiering mode).
    #[serde(default = "d_true")]
    pub adjust_threshold: bool,
    /// `vm.watermark_scale_factor`, in units of 0.01 %: the gap between watermarks.
    #[serde(default = "d_wsf")]
    pub watermark_scale_factor: u32,
    /// `vm.min_free_kbytes` of the default tier; absent = the kernel's formula for its size.
    #[serde(default)]
    pub min_free_kbytes: Option<u64>,
    /// What orders kswapd's victims (see the module docs): "fault-rate" (default),
    /// "access-bit" or "recency".
    #[serde(default)]
    pub lru: TppLru,
    /// Access-bit scan period for `lru = "access-bit"` (a modelling choice: the kernel ages
    /// its LRU on demand, not on a clock).
    #[serde(default = "d_lru_scan_ms")]
    pub lru_scan_ms: f64,
    /// Page size the scan size is divided by (the tracker is declared before the backend
    /// reports its page size); `build_for` fills it from the backend. Absent = 2 MiB (THP).
    #[serde(default)]
    pub scan_page_bytes: Option<u64>,
}

fn d_quantum_ms() -> f64 {
    10.0
}
fn d_scan_size_mb() -> u64 {
    256
}
fn d_scan_period_ms() -> f64 {
    1000.0
}
fn d_hot_threshold_ms() -> f64 {
    1000.0
}
fn d_rate_limit() -> f64 {
    crate::heat::mib_per_s_to_gbps(65536.0) // 68.719476736 GB/s
}
fn d_true() -> bool {
    true
}
fn d_lru_scan_ms() -> f64 {
    1000.0
}

/// How TPP's kswapd orders demotion victims (the kernel: its access-bit LRU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TppLru {
    /// Hint faults on every tier; lowest fault-implied access rate first.
    #[default]
    FaultRate,
    /// Upstream hint faults plus an access-bit scan; least recently accessed first.
    AccessBit,
    /// Upstream hint faults only; least recently faulted/promoted first.
    Recency,
}

fn d_wsf() -> u32 {
    10
}

/// The page size assumed for the scan when none is known: 2 MiB (TPP runs with THP, §2).
pub const DEFAULT_SCAN_PAGE_BYTES: u64 = 2 * MIB;

impl Default for TppConfig {
    fn default() -> Self {
        TppConfig {
            quantum_ms: d_quantum_ms(),
            scan_size_mb: d_scan_size_mb(),
            scan_period_min_ms: d_scan_period_ms(),
            scan_interval_ms: None,
            hot_threshold_ms: d_hot_threshold_ms(),
            promote_rate_limit_gbps: d_rate_limit(),
            adjust_threshold: true,
            watermark_scale_factor: d_wsf(),
            min_free_kbytes: None,
            lru: TppLru::default(),
            lru_scan_ms: d_lru_scan_ms(),
            scan_page_bytes: None,
        }
    }
}

impl Validate for TppConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 60_000.0)?;
        if self.scan_size_mb == 0 {
            return Err(invalid(&join(p, "scan_size_mb"), "must be at least 1"));
        }
        check_range(
            &join(p, "scan_period_min_ms"),
            self.scan_period_min_ms,
            1.0,
            3_600_000.0,
        )?;
        if let Some(i) = self.scan_interval_ms {
            check_range(&join(p, "scan_interval_ms"), i, 0.001, 3_600_000.0)?;
        }
        check_range(
            &join(p, "hot_threshold_ms"),
            self.hot_threshold_ms,
            0.001,
            3_600_000.0,
        )?;
        check_range(
            &join(p, "promote_rate_limit_gbps"),
            self.promote_rate_limit_gbps,
            0.0,
            1e6,
        )?;
        // The kernel bounds watermark_scale_factor to [1, 3000].
        check_range(
            &join(p, "watermark_scale_factor"),
            self.watermark_scale_factor as f64,
            1.0,
            3000.0,
        )?;
        if let Some(b) = self.scan_page_bytes {
            if b == 0 || !b.is_power_of_two() {
                return Err(invalid(
                    &join(p, "scan_page_bytes"),
                    format!("{b} is not a power of two"),
                ));
            }
        }
        Ok(())
    }
}

/// `policy = "tpp"` in the registry ([`crate::REGISTRY`]).
pub static ENTRY: PolicyEntry = PolicyEntry::new::<TppConfig>(
    "tpp",
    "TPP (ASPLOS'23) as upstreamed in Linux: NUMA-balancing hint faults promote, with an adaptive hot threshold and a rate limit; kswapd demotes by LRU",
    r#"[policy]
policy = "tpp"
quantum_ms = 10.0                     # promotion is synchronous: short quantum
scan_size_mb = 256                    # numa_balancing_scan_size_mb
scan_period_min_ms = 1000.0           # numa_balancing_scan_period_min_ms (threshold period)
# scan_interval_ms = 100.0            # default: task_scan_min() = 1000 * scan_size_mb / 2560
hot_threshold_ms = 1000.0             # numa_balancing_hot_threshold_ms
promote_rate_limit_gbps = 68.719476736 # numa_balancing_promote_rate_limit_MBps: 65536 MiB/s x 1048576 B/MiB
adjust_threshold = true               # numa_promotion_adjust_threshold
watermark_scale_factor = 10           # vm.watermark_scale_factor
# min_free_kbytes = 23170             # default: clamp(sqrt(16 * capacity_kB), 128, 262144)
lru = "fault-rate"                    # kswapd victim order: fault-rate | access-bit | recency
lru_scan_ms = 1000.0                  # access-bit scan period (lru = "access-bit")
# scan_page_bytes = 2097152           # default: the backend's page size, else 2 MiB
"#,
);

impl TppConfig {
    /// The scan is sized in the backend's pages unless the config fixes the page size.
    fn for_backend(&self, ctx: BuildContext) -> TppConfig {
        let mut c = self.clone();
        if c.scan_page_bytes.is_none() {
            c.scan_page_bytes = ctx.page_bytes;
        }
        c
    }
}

impl PolicyParams for TppConfig {
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(Tpp::new(self.for_backend(ctx)))
    }
    fn heat_model(&self, ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        Some(Box::new(Tpp::new(self.for_backend(ctx))))
    }
}

/// Default-tier watermarks in pages (mm/page_alloc.c `__setup_per_zone_wmarks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
    pub promo: u64,
}

impl Watermarks {
    pub fn for_tier(
        capacity_bytes: u64,
        page_bytes: u64,
        scale_factor: u32,
        min_free_kbytes: Option<u64>,
    ) -> Self {
        let kb = capacity_bytes / 1024;
        let min_kb = min_free_kbytes
            .unwrap_or_else(|| (((kb as f64) * 16.0).sqrt() as u64).clamp(128, 262_144));
        let min_b = min_kb * 1024;
        let gap_b = (min_b / 4).max(capacity_bytes / 10_000 * scale_factor as u64);
        let pages = |b: u64| b.div_ceil(page_bytes.max(1));
        Watermarks {
            min: pages(min_b),
            low: pages(min_b + gap_b),
            high: pages(min_b + 2 * gap_b),
            promo: pages(min_b + 3 * gap_b),
        }
    }
}

const NEVER: u64 = 0;

/// TPP's tracker state and page finder.
#[derive(Clone, Debug)]
pub struct Tpp {
    pub cfg: TppConfig,
    /// Last time (ns) we saw the page accessed, faulted or promoted; NEVER = not yet.
    last_seen_ns: Vec<u64>,
    /// Access-rate estimate from the last hint fault (1/s): 1 / time-to-fault.
    rate: Vec<f32>,
    total_rate: f64,
    /// The adapted hot threshold (ns).
    pub threshold_ns: f64,
    /// Promotion candidates so far, in bytes (`PGPROMOTE_CANDIDATE`).
    cand_bytes: u64,
    th_window_start_ns: u64,
    th_window_cand_bytes: u64,
    rl_window_start_ns: u64,
    rl_window_cand_bytes: u64,
    /// A promotion failed for lack of room: kswapd is awake.
    kswapd_awake: bool,
    /// Counters for inspection.
    pub promotions_refused_rate: u64,
    pub promotions_failed_room: u64,
    /// Candidates of this quantum that passed the checks (filled by `ingest`).
    pending: Vec<PageIdx>,
    /// The inactive list kept incrementally, so kswapd costs what the quantum's events
    /// cost rather than a sort of the default tier: every page seen so far, by its
    /// `lru_key`, on the side (default tier or below) it was last seen on; the snapshot's
    /// `moved` log keeps the sides true (without one both sides are read).
    /// Never-seen pages come first (rate 0, `NEVER`) in page order; they are scanned from
    /// `unseen`.
    seen: [BTreeSet<LruKey>; 2],
    unseen: SideCursors,
    synced: bool,
}

/// (rate bits, or 0 when the list ignores rates; last seen; page): the order kswapd
/// demotes in, lowest first.
type LruKey = (u32, u64, PageIdx);

impl Tpp {
    pub fn new(cfg: TppConfig) -> Self {
        let th = cfg.hot_threshold_ms * 1e6;
        Tpp {
            cfg,
            last_seen_ns: Vec::new(),
            rate: Vec::new(),
            total_rate: 0.0,
            threshold_ns: th,
            cand_bytes: 0,
            th_window_start_ns: 0,
            th_window_cand_bytes: 0,
            rl_window_start_ns: 0,
            rl_window_cand_bytes: 0,
            kswapd_awake: false,
            promotions_refused_rate: 0,
            promotions_failed_room: 0,
            pending: Vec::new(),
            seen: Default::default(),
            unseen: SideCursors::default(),
            synced: false,
        }
    }

    fn lru_key(&self, page: PageIdx) -> LruKey {
        let i = page as usize;
        // Rates are finite and ≥ 0, so their bit patterns order like the values.
        let rate = if self.cfg.lru == TppLru::FaultRate {
            self.rate.get(i).copied().unwrap_or(0.0).to_bits()
        } else {
            0
        };
        (
            rate,
            self.last_seen_ns.get(i).copied().unwrap_or(NEVER),
            page,
        )
    }

    /// Take a seen page off the list before its key changes. Synced, the key is on the
    /// side `placement` says (`sync` and `relist` keep it there); else on either.
    fn unlist(&mut self, page: usize, placement: &[TierId]) {
        if self.last_seen_ns[page] != NEVER {
            let key = self.lru_key(page as PageIdx);
            if self.synced {
                let side = in_default_tier(placement, page as PageIdx) as usize;
                let found = self.seen[side].remove(&key);
                debug_assert!(found, "page {page} not on its side");
            } else if !self.seen[0].remove(&key) {
                self.seen[1].remove(&key);
            }
        }
    }

    /// Put a seen page back on the list, on the side `placement` says.
    fn relist(&mut self, page: usize, placement: &[TierId]) {
        let key = self.lru_key(page as PageIdx);
        self.seen[in_default_tier(placement, page as PageIdx) as usize].insert(key);
    }

    /// Bring the sides and the never-seen cursors up to the snapshot's placement. With a
    /// log, the pages it names change sides; at the first log after none, every side is
    /// rebuilt. Without a log (the runtime), the sides go stale: `coldest_pages` then
    /// reads both sides and checks the placement, and the cursors restart each quantum.
    fn sync(&mut self, snap: &Snapshot<'_>) {
        let placement = snap.placement;
        match snap.moved {
            Some(moved) if self.synced => {
                for &p in moved {
                    let i = p as usize;
                    if i >= self.last_seen_ns.len() {
                        continue;
                    }
                    let fast = in_default_tier(placement, p) as usize;
                    if self.last_seen_ns[i] == NEVER {
                        self.unseen.lower(fast == 1, p);
                    } else {
                        let key = self.lru_key(p);
                        if self.seen[1 - fast].remove(&key) {
                            self.seen[fast].insert(key);
                        }
                    }
                }
            }
            Some(_) => {
                let [below, fast] = &mut self.seen;
                let (stay, go): (Vec<LruKey>, Vec<LruKey>) = below
                    .iter()
                    .chain(fast.iter())
                    .partition(|k| !in_default_tier(placement, k.2));
                *below = stay.into_iter().collect();
                *fast = go.into_iter().collect();
                self.unseen.reset(0);
            }
            None => self.unseen.reset(0),
        }
        self.synced = snap.moved.is_some();
    }

    fn scan_page_bytes(&self) -> u64 {
        self.cfg.scan_page_bytes.unwrap_or(DEFAULT_SCAN_PAGE_BYTES)
    }

    /// `task_scan_min()` for a task larger than `MAX_SCAN_WINDOW` (2560 MB).
    pub fn scan_interval_ms(&self) -> f64 {
        self.cfg
            .scan_interval_ms
            .unwrap_or(1000.0 * self.cfg.scan_size_mb as f64 / 2560.0)
    }

    fn rate_limit_bytes(&self) -> u64 {
        // Whole bytes/s (rounded): the same bytes as the MiB/s form gave.
        crate::heat::gbps_to_bytes_per_s(self.cfg.promote_rate_limit_gbps) as u64
    }

    fn ensure(&mut self, n: usize) {
        if self.last_seen_ns.len() < n {
            self.last_seen_ns.resize(n, NEVER);
            self.rate.resize(n, 0.0);
        }
    }

    fn touch(&mut self, page: usize, now_ns: u64, placement: &[TierId]) {
        self.unlist(page, placement);
        self.touch_unlisted(page, now_ns, placement);
    }

    /// `touch` of a page already taken off the list (its key changed since).
    fn touch_unlisted(&mut self, page: usize, now_ns: u64, placement: &[TierId]) {
        // +1 so that a page seen at t = 0 is more recent than one never seen.
        self.last_seen_ns[page] = now_ns + 1;
        self.relist(page, placement);
    }

    /// `numa_promotion_adjust_threshold`.
    fn adjust_threshold(&mut self, now_ns: u64) {
        if !self.cfg.adjust_threshold || self.cfg.promote_rate_limit_gbps <= 0.0 {
            return;
        }
        let period_ns = ms_to_ns(self.cfg.scan_period_min_ms);
        if now_ns.saturating_sub(self.th_window_start_ns) <= period_ns {
            return;
        }
        self.th_window_start_ns = now_ns;
        let ref_th = self.cfg.hot_threshold_ms * 1e6;
        let ref_cand = self.rate_limit_bytes() as f64 * self.cfg.scan_period_min_ms / 1000.0;
        let diff = (self.cand_bytes - self.th_window_cand_bytes) as f64;
        let unit = ref_th * 2.0 / 16.0;
        let mut th = self.threshold_ns;
        if diff > ref_cand * 11.0 / 10.0 {
            th = (th - unit).max(unit);
        } else if diff < ref_cand * 9.0 / 10.0 {
            th = (th + unit).min(ref_th * 2.0);
        }
        self.th_window_cand_bytes = self.cand_bytes;
        self.threshold_ns = th;
    }

    /// `numa_promotion_rate_limit`: count the candidate, then refuse once the window's
    /// candidates reach the limit.
    fn rate_limited(&mut self, now_ns: u64, bytes: u64) -> bool {
        self.cand_bytes += bytes;
        if now_ns.saturating_sub(self.rl_window_start_ns) > 1_000_000_000 {
            self.rl_window_start_ns = now_ns;
            self.rl_window_cand_bytes = self.cand_bytes;
        }
        self.cand_bytes - self.rl_window_cand_bytes >= self.rate_limit_bytes()
    }

    /// Default-tier watermarks for this snapshot.
    pub fn watermarks(&self, snap: &Snapshot<'_>) -> Watermarks {
        Watermarks::for_tier(
            capacity_pages(snap, FAST) * snap.page_bytes,
            snap.page_bytes,
            self.cfg.watermark_scale_factor,
            self.cfg.min_free_kbytes,
        )
    }

    /// kswapd: demote the least recently seen default-tier pages until `free` reaches the
    /// promotion watermark.
    fn kswapd(
        &mut self,
        snap: &Snapshot<'_>,
        free: &mut u64,
        exclude: &[PageIdx],
        plan: &mut Plan,
    ) {
        let target = self.watermarks(snap).promo;
        if *free >= target {
            return;
        }
        let need = (target - *free) as usize;
        let mut excluded = exclude.to_vec();
        excluded.sort_unstable();
        let mut victims: Vec<PageIdx> = self
            .coldest_pages(snap, FAST, need + excluded.len())
            .into_iter()
            .filter(|p| excluded.binary_search(p).is_err())
            .collect();
        victims.truncate(need);
        for p in victims {
            plan.push(p, SLOW);
            *free += 1;
        }
    }
}

impl HeatModel for Tpp {
    fn system(&self) -> &'static str {
        "tpp"
    }
    fn tracker(&self) -> TrackerSpec {
        let scan_pages = (self.cfg.scan_size_mb * MIB / self.scan_page_bytes()).max(1);
        // Tiering mode skips top-tier pages; with `lru = "fault-rate"` we mark them as well.
        let first = if self.cfg.lru == TppLru::FaultRate {
            0
        } else {
            1
        };
        // Without a fixed interval, each task's is `task_scan_min()` of its own footprint.
        let faults = TrackerSpec::HintFault {
            scan_period_ns: ms_to_ns(self.scan_interval_ms()),
            scan_pages,
            tiers: (first..8).map(TierId).collect(),
            scan_period_min_ns: self
                .cfg
                .scan_interval_ms
                .is_none()
                .then(|| ms_to_ns(self.cfg.scan_period_min_ms)),
        };
        match self.cfg.lru {
            TppLru::AccessBit => TrackerSpec::Combined(vec![
                faults,
                TrackerSpec::AccessBit {
                    scan_period_ns: ms_to_ns(self.cfg.lru_scan_ms),
                },
            ]),
            _ => faults,
        }
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.quantum_ms)
    }
    /// TPP has no per-quantum limit on migrated bytes; promotion is bounded by the promote
    /// rate limit on candidates, demotion by the watermarks.
    fn migration_limit_bytes(&self) -> Option<u64> {
        None
    }
    /// Records recency and rate estimates, adapts the threshold, and queues this quantum's
    /// promotion candidates (alternate-tier faults that pass threshold and rate limit).
    fn ingest(&mut self, snap: &Snapshot<'_>) {
        self.ensure(snap.page_count());
        self.sync(snap);
        self.pending.clear();
        let now = snap.now_ns;
        let two_tiers = snap.tiers.len() >= 2;
        let (free0, enough) = if two_tiers {
            let gib_pages = (1u64 << 30).div_ceil(snap.page_bytes.max(1));
            (
                free_pages(snap, FAST),
                self.watermarks(snap).promo + gib_pages.max(capacity_pages(snap, FAST) / 16),
            )
        } else {
            (0, u64::MAX)
        };
        for e in snap.events {
            match *e {
                HeatEvent::HintFault {
                    page,
                    time_to_fault_ns,
                } => {
                    let i = page as usize;
                    if i >= self.last_seen_ns.len() {
                        continue;
                    }
                    let r = (1e9 / time_to_fault_ns.max(1.0)) as f32;
                    self.unlist(i, snap.placement);
                    self.total_rate += r as f64 - self.rate[i] as f64;
                    self.rate[i] = r;
                    // Off the list already: `touch` would look for it twice more in vain
                    // (two failed searches per fault were a third of a TPP run).
                    self.touch_unlisted(i, now, snap.placement);
                    if snap.placement[i] == FAST {
                        continue; // only seen when a layer also scans the default tier
                    }
                    // `pgdat_free_space_enough`: promote regardless, reset the threshold.
                    if free0.saturating_sub(self.pending.len() as u64) > enough {
                        self.threshold_ns = self.cfg.hot_threshold_ms * 1e6;
                        self.pending.push(page);
                        continue;
                    }
                    self.adjust_threshold(now);
                    if time_to_fault_ns >= self.threshold_ns {
                        continue;
                    }
                    if self.rate_limited(now, snap.page_bytes) {
                        self.promotions_refused_rate += 1;
                        continue;
                    }
                    self.pending.push(page);
                }
                // A page fault-around brought in is as recent on the LRU as a faulted one
                // (Linux puts readahead pages on the LRU when they arrive), with no rate.
                HeatEvent::Sample { page, .. }
                | HeatEvent::Accessed { page }
                | HeatEvent::TierFault { page }
                | HeatEvent::Prefetched { page } => {
                    if (page as usize) < self.last_seen_ns.len() {
                        self.touch(page as usize, now, snap.placement);
                    }
                }
            }
        }
    }
    fn heat(&self, page: PageIdx) -> f64 {
        self.rate.get(page as usize).map_or(0.0, |&r| r as f64)
    }
    fn total_heat(&self) -> f64 {
        self.total_rate
    }
    /// Hot means "faulted faster than the current threshold" (rate above 1/threshold).
    fn heat_ceiling(&self) -> f64 {
        1e9 / self.threshold_ns
    }
    fn is_hot(&self, page: PageIdx) -> bool {
        self.heat(page) > 1e9 / self.threshold_ns
    }
    /// The inactive-list approximation: lowest fault-implied access rate first, then least
    /// recently seen, then page index.
    fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx> {
        let placement = snap.placement;
        let fast = tier == FAST;
        // Both sides' lists read tier 1 as every tier below the default one; a layer asks
        // for one tier.
        let exactly = |p: PageIdx| placement[p as usize] == tier;
        let mut out = Vec::new();
        // Never-seen pages first, in page order.
        let end = self.last_seen_ns.len().min(placement.len()) as PageIdx;
        if n > 0 {
            let never_seen = |p: PageIdx| self.last_seen_ns[p as usize] == NEVER;
            self.unseen.scan(fast, end, placement, never_seen, |p| {
                if exactly(p) {
                    out.push(p);
                }
                out.len() < n
            });
        }
        let wanted = |k: &&LruKey| in_default_tier(placement, k.2) == fast && exactly(k.2);
        let left = n.saturating_sub(out.len());
        if self.synced {
            out.extend(
                self.seen[fast as usize]
                    .iter()
                    .filter(wanted)
                    .take(left)
                    .map(|k| k.2),
            );
        } else {
            // Stale sides (no log): both sets, in key order.
            let mut v: Vec<LruKey> = self.seen.iter().flatten().filter(wanted).copied().collect();
            if left < v.len() {
                v.select_nth_unstable(left);
                v.truncate(left);
            }
            v.sort_unstable();
            out.extend(v.into_iter().map(|k| k.2));
        }
        out
    }
    /// kswapd alone (no promotions): demote to the promotion watermark if free memory is
    /// below the low watermark or a promotion failed.
    fn capacity_moves(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let mut free = free_pages(snap, FAST);
        if free < self.watermarks(snap).low || self.kswapd_awake {
            self.kswapd(snap, &mut free, &[], &mut plan);
            self.kswapd_awake = false;
        }
        plan
    }
}

impl Policy for Tpp {
    fn name(&self) -> String {
        "tpp".into()
    }
    fn tracker(&self) -> TrackerSpec {
        HeatModel::tracker(self)
    }
    fn quantum_ns(&self) -> u64 {
        HeatModel::quantum_ns(self)
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        None
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.ingest(snap);
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let wm = self.watermarks(snap);
        let mut free = free_pages(snap, FAST);
        // kswapd left awake by the previous quantum, or woken by an allocation below `low`.
        if free < wm.low || self.kswapd_awake {
            self.kswapd(snap, &mut free, &[], &mut plan);
            self.kswapd_awake = false;
        }
        // Synchronous promotions, in fault order.
        let pending = std::mem::take(&mut self.pending);
        let mut done = std::collections::HashSet::new(); // membership only: order-free
        for &p in &pending {
            if snap.placement[p as usize] == FAST || !done.insert(p) {
                continue;
            }
            if free > wm.high {
                plan.push(p, FAST);
                self.touch(p as usize, snap.now_ns, snap.placement);
                free -= 1;
            } else {
                self.promotions_failed_room += 1;
                self.kswapd_awake = true;
            }
        }
        // A failed promotion woke kswapd, which runs while the quantum's faults continue.
        if self.kswapd_awake {
            // Not the pages this quantum already moves (promoted, or demoted above).
            let moved: Vec<PageIdx> = plan.moves.iter().flat_map(|m| m.range.pages()).collect();
            self.kswapd(snap, &mut free, &moved, &mut plan);
            self.kswapd_awake = false;
        }
        self.pending = pending;
        crate::cascade::cascade(plan, snap, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::{moved_to, Lcg, World, LOG_MODES, LOG_TOGGLE_ROUNDS, PAGE};

    fn fault(w: &mut World, page: u32, ms: f64) {
        w.events.push(HeatEvent::HintFault {
            page,
            time_to_fault_ns: ms * 1e6,
        });
    }

    #[test]
    fn defaults_match_the_kernel() {
        let t = Tpp::new(TppConfig::default());
        match Policy::tracker(&t) {
            TrackerSpec::HintFault {
                scan_period_ns,
                scan_pages,
                tiers,
                scan_period_min_ns,
            } => {
                assert_eq!(scan_period_ns, 100_000_000, "task_scan_min() floor");
                assert_eq!(scan_period_min_ns, Some(1_000_000_000), "scan_period_min");
                assert_eq!(scan_pages, 128, "256 MiB of 2 MiB pages");
                assert!(tiers.contains(&FAST) && tiers.contains(&SLOW));
            }
            other => panic!("{other:?}"),
        }
        let strict = Tpp::new(TppConfig {
            lru: TppLru::Recency,
            ..TppConfig::default()
        });
        match Policy::tracker(&strict) {
            TrackerSpec::HintFault { tiers, .. } => assert!(
                !tiers.contains(&FAST),
                "tiering mode does not mark the top tier"
            ),
            other => panic!("{other:?}"),
        }
        let ab = Tpp::new(TppConfig {
            lru: TppLru::AccessBit,
            ..TppConfig::default()
        });
        match Policy::tracker(&ab) {
            TrackerSpec::Combined(ts) => {
                assert!(
                    matches!(&ts[0], TrackerSpec::HintFault { tiers, .. } if !tiers.contains(&FAST))
                );
                assert_eq!(
                    ts[1],
                    TrackerSpec::AccessBit {
                        scan_period_ns: 1_000_000_000
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        let t4k = Tpp::new(TppConfig {
            scan_page_bytes: Some(4096),
            ..TppConfig::default()
        });
        assert!(matches!(
            Policy::tracker(&t4k),
            TrackerSpec::HintFault {
                scan_pages: 65536,
                ..
            }
        ));
        assert_eq!(t.threshold_ns, 1e9);
        assert_eq!(Policy::quantum_ns(&t), 10_000_000);
    }

    #[test]
    fn watermarks_follow_the_kernel_formula() {
        // 32 GiB: min_free_kbytes = sqrt(32 Mi kB · 16) = 23170 kB; gap = max(min/4, 0.1 %).
        let wm = Watermarks::for_tier(32 << 30, 4096, 10, None);
        let min_b = 23170u64 * 1024;
        let gap_b = (32u64 << 30) / 10_000 * 10;
        assert_eq!(wm.min, min_b.div_ceil(4096));
        assert_eq!(wm.low, (min_b + gap_b).div_ceil(4096));
        assert_eq!(wm.promo, (min_b + 3 * gap_b).div_ceil(4096));
        assert!(wm.min < wm.low && wm.low < wm.high && wm.high < wm.promo);
    }

    #[test]
    fn promotes_anything_while_the_default_tier_is_roomy() {
        // 1000-page (2000 MiB) tier, 100 used: free 900 > promo + 1 GiB (512 pages).
        let mut w = World::new(200, 100, 1000, 1000);
        let mut t = Tpp::new(TppConfig::default());
        t.threshold_ns = 0.5e9;
        fault(&mut w, 150, 5000.0);
        let plan = t.decide(&w.snap());
        assert_eq!(moved_to(&plan, FAST), vec![150]);
        assert_eq!(t.threshold_ns, 1e9, "the threshold resets to the default");
    }

    #[test]
    fn promotes_only_on_fast_hint_faults() {
        // 1600-page tier with 100 free: room above the watermarks, but not "enough" (512).
        let mut w = World::new(2000, 1500, 1600, 2000);
        let mut t = Tpp::new(TppConfig::default());
        fault(&mut w, 1550, 50.0); // 50 ms < 1 s: hot
        fault(&mut w, 1551, 2500.0); // 2.5 s: not hot
        fault(&mut w, 1552, 999.0);
        let plan = t.decide(&w.snap());
        assert_eq!(moved_to(&plan, FAST), vec![1550, 1552]);
        assert!(moved_to(&plan, SLOW).is_empty());
        assert!(t.is_hot(1550) && !t.is_hot(1551));
    }

    #[test]
    fn demotes_least_recently_seen_under_watermark_pressure() {
        // Fast tier: 100 pages, all used (free 0 < low). Pages 0..100 in fast; 100.. in slow.
        let mut w = World::new(200, 100, 100, 200);
        let mut t = Tpp::new(TppConfig {
            min_free_kbytes: Some(2 * 1024 * 2),
            watermark_scale_factor: 200,
            ..TppConfig::default()
        });
        let wm = t.watermarks(&w.snap());
        // 100 pages · 2 MiB: min = 4 MiB = 2 pages, gap = 2 % = 4 MiB = 2 pages.
        assert_eq!(
            wm,
            Watermarks {
                min: 2,
                low: 4,
                high: 6,
                promo: 8
            }
        );
        // Pages 0..5 were seen recently (as if promoted earlier); the rest never.
        for p in 0..5u32 {
            w.events.push(HeatEvent::Accessed { page: p });
        }
        fault(&mut w, 120, 10.0);
        let plan = t.decide(&w.snap());
        // kswapd demotes 8 pages (to the promo watermark), skipping the recently seen ones;
        // then the fault's promotion fits (free 8 > high 6).
        let demoted = moved_to(&plan, SLOW);
        assert_eq!(demoted, (5..13).collect::<Vec<_>>());
        assert_eq!(moved_to(&plan, FAST), vec![120]);
        // Demotions come first in the plan, so the backend has room for the promotion.
        assert_eq!(plan.moves.last().unwrap().to, FAST);
        w.apply(&plan);
        assert_eq!(free_pages(&w.snap(), FAST), 7);
    }

    #[test]
    fn kswapd_prefers_pages_with_slow_faults() {
        // Full 100-page default tier. Pages 0..10 faulted fast (hot), 10..20 slowly (cold);
        // the others were never seen (rate 0) and go first.
        let mut w = World::new(200, 100, 100, 200);
        let mut t = Tpp::new(TppConfig {
            min_free_kbytes: Some(4096),
            watermark_scale_factor: 200,
            ..TppConfig::default()
        });
        for p in 0..10 {
            fault(&mut w, p, 0.01);
        }
        for p in 10..20 {
            fault(&mut w, p, 500.0);
        }
        t.ingest(&w.snap());
        let order = t.coldest_pages(&w.snap(), FAST, 100);
        assert_eq!(&order[..80], &(20..100).collect::<Vec<_>>()[..]);
        assert_eq!(&order[80..90], &(10..20).collect::<Vec<_>>()[..]);
        assert_eq!(&order[90..], &(0..10).collect::<Vec<_>>()[..]);
        // Faults on default-tier pages never promote (or move anything by themselves).
        let plan = t.decide(&w.snap());
        assert!(moved_to(&plan, FAST).is_empty());
        assert!(
            moved_to(&plan, SLOW).iter().all(|&p| p >= 20),
            "hot pages are not demoted: {plan:?}"
        );
    }

    #[test]
    fn access_bit_lru_demotes_least_recently_accessed() {
        let mut w = World::new(200, 100, 100, 200);
        let mut t = Tpp::new(TppConfig {
            lru: TppLru::AccessBit,
            min_free_kbytes: Some(4096),
            watermark_scale_factor: 200,
            ..TppConfig::default()
        });
        // Every default-tier page but 40..50 was seen accessed at t = 0; 40..50 never.
        for p in (0..100u32).filter(|p| !(40..50).contains(p)) {
            w.events.push(HeatEvent::Accessed { page: p });
        }
        // Any observation makes a page recently seen (here a fault on page 45).
        fault(&mut w, 45, 0.001);
        w.now_ns = 5;
        let plan = t.decide(&w.snap());
        // Free 0 < low: kswapd demotes 8 pages to the promo watermark: 40..50 minus 45 first,
        // then the earliest-seen others.
        assert_eq!(moved_to(&plan, SLOW), vec![40, 41, 42, 43, 44, 46, 47, 48]);
    }

    #[test]
    fn failed_promotion_wakes_kswapd() {
        // Free = 5: above low (4), not above high (6): promotions fail, kswapd wakes.
        let mut w = World::new(200, 95, 100, 200);
        let mut t = Tpp::new(TppConfig {
            min_free_kbytes: Some(4096),
            watermark_scale_factor: 200,
            ..TppConfig::default()
        });
        fault(&mut w, 150, 10.0);
        let plan = t.decide(&w.snap());
        assert!(
            moved_to(&plan, FAST).is_empty(),
            "no room above the high watermark"
        );
        assert_eq!(
            moved_to(&plan, SLOW).len(),
            3,
            "kswapd reclaims up to promo (8) from 5"
        );
        assert_eq!(t.promotions_failed_room, 1);
        w.apply(&plan);
        fault(&mut w, 150, 10.0);
        let plan = t.decide(&w.snap());
        assert_eq!(
            moved_to(&plan, FAST),
            vec![150],
            "the next fault finds room"
        );
    }

    #[test]
    fn rate_limit_caps_candidates_per_second() {
        // 100 free pages: below "enough" (512), so the rate limit applies.
        let mut w = World::new(2000, 1400, 1500, 2000);
        // 10 pages of 2 MiB per second.
        let mut t = Tpp::new(TppConfig {
            promote_rate_limit_gbps: crate::heat::mib_per_s_to_gbps(20.0),
            adjust_threshold: false,
            ..TppConfig::default()
        });
        for p in 1500..1530 {
            fault(&mut w, p, 1.0);
        }
        let plan = t.decide(&w.snap());
        // The 10th candidate reaches the limit (the kernel refuses at `>=`).
        assert_eq!(moved_to(&plan, FAST).len(), 9);
        assert_eq!(t.promotions_refused_rate, 21);
        // A new 1-second window admits more.
        w.apply(&plan);
        w.now_ns = 2_000_000_000;
        for p in 1600..1605 {
            fault(&mut w, p, 1.0);
        }
        assert_eq!(moved_to(&t.decide(&w.snap()), FAST).len(), 5);
    }

    #[test]
    fn threshold_adapts_to_the_rate_limit() {
        // 200 free pages of 10 000: below "enough" (625 + promo).
        let mut w = World::new(12_000, 9_800, 10_000, 12_000);
        // Limit: 100 MiB/s = 50 pages/s. Offer 200 candidates per period → the threshold
        // falls one step (2·1 s/16) per period after the first.
        let mut t = Tpp::new(TppConfig {
            promote_rate_limit_gbps: crate::heat::mib_per_s_to_gbps(100.0),
            ..TppConfig::default()
        });
        let mut page = 10_000u32;
        let mut ths = vec![t.threshold_ns];
        for k in 1..=4u64 {
            w.now_ns = k * 1_100_000_000;
            for _ in 0..200 {
                fault(&mut w, page, 1.0);
                page += 1;
            }
            let plan = t.decide(&w.snap());
            w.apply(&plan);
            ths.push(t.threshold_ns);
        }
        let unit = 2e9 / 16.0;
        // Period 1 has seen no candidates yet (< 90 % of the limit): one step up.
        assert_eq!(ths[1], 1e9 + unit);
        assert_eq!(ths[2], 1e9);
        assert_eq!(ths[3], 1e9 - unit);
        assert_eq!(ths[4], 1e9 - 2.0 * unit);
        // With no candidates at all it climbs back, to at most 2× the reference.
        let mut t2 = Tpp::new(TppConfig::default());
        let mut w2 = World::new(10, 0, 10, 10);
        for k in 1..=20u64 {
            w2.now_ns = k * 1_100_000_000;
            fault(&mut w2, 0, 5e9); // slow: not a candidate, but the adjustment runs
            t2.decide(&w2.snap());
            w2.events.clear();
        }
        assert_eq!(t2.threshold_ns, 2e9);
        // And it never falls below one step.
        let mut t3 = Tpp::new(TppConfig {
            promote_rate_limit_gbps: crate::heat::mib_per_s_to_gbps(2.0),
            ..TppConfig::default()
        });
        let mut w3 = World::new(103_000, 99_000, 100_000, 103_000);
        let mut page = 99_500u32;
        for k in 1..=30u64 {
            w3.now_ns = k * 1_100_000_000;
            for _ in 0..100 {
                fault(&mut w3, page, 0.001);
                page += 1;
            }
            t3.decide(&w3.snap());
            w3.events.clear();
        }
        assert_eq!(t3.threshold_ns, unit);
        let _ = PAGE;
    }

    #[test]
    fn deterministic() {
        fn run() -> Vec<Plan> {
            let mut w = World::new(300, 100, 120, 300);
            let mut t = Tpp::new(TppConfig {
                min_free_kbytes: Some(4096),
                watermark_scale_factor: 100,
                ..TppConfig::default()
            });
            let mut x: u64 = 7;
            let mut plans = Vec::new();
            for _ in 0..100 {
                for _ in 0..5 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let page = ((x >> 33) % 300) as u32;
                    if w.placement[page as usize] != FAST {
                        fault(&mut w, page, ((x >> 10) % 2000) as f64);
                    }
                }
                let plan = t.decide(&w.snap());
                w.apply(&plan);
                plans.push(plan);
            }
            plans
        }
        let a = run();
        assert_eq!(a, run());
        assert!(
            a.iter().any(|p| !moved_to(p, SLOW).is_empty())
                && a.iter().any(|p| !moved_to(p, FAST).is_empty())
        );
    }

    #[test]
    fn incremental_inactive_list_matches_a_sort_with_and_without_the_move_log() {
        for lru in [TppLru::FaultRate, TppLru::Recency] {
            for (log, toggled) in LOG_MODES {
                let mut w = World::new(200, 60, 80, 200);
                w.add_tier("far", 200, 300.0);
                w.log_moves(log);
                let mut t = Tpp::new(TppConfig {
                    lru,
                    min_free_kbytes: Some(4096),
                    watermark_scale_factor: 100,
                    ..TppConfig::default()
                });
                let mut rng = Lcg(3);
                let mut rand = |m: u64| rng.below(m);
                let mut demoted = 0;
                for round in 0..80 {
                    for _ in 0..6 {
                        let page = rand(200) as u32;
                        if rand(3) == 0 {
                            w.events.push(HeatEvent::Accessed { page });
                        } else {
                            fault(&mut w, page, rand(2000) as f64);
                        }
                    }
                    let mut plan = t.decide(&w.snap());
                    demoted += moved_to(&plan, SLOW).len();
                    // Moves TPP did not plan (reclaim, a layer, the cascade): never-seen
                    // pages back into the default tier behind the cursor, and others down.
                    for _ in 0..(round % 3) {
                        let p = rand(200) as PageIdx;
                        plan.push(p, TierId(rand(3) as u8));
                    }
                    // The third pass switches the log off and on (the rebuild at its return).
                    if toggled && round % LOG_TOGGLE_ROUNDS == 0 {
                        w.log_moves(w.moved.is_none());
                    }
                    w.apply(&plan);
                    w.now_ns += 1; // (apply advanced the clock one quantum)
                    let snap = w.snap();
                    t.sync(&snap);
                    for tier in [FAST, SLOW, TierId(2)] {
                        let mut want: Vec<LruKey> = (0..200)
                            .filter(|&p| w.placement[p as usize] == tier)
                            .map(|p| t.lru_key(p))
                            .collect();
                        want.sort_unstable();
                        let want: Vec<PageIdx> = want.into_iter().map(|k| k.2).collect();
                        for n in [1, 5, want.len(), usize::MAX] {
                            assert_eq!(
                                t.coldest_pages(&snap, tier, n),
                                want[..n.min(want.len())].to_vec(),
                                "{lru:?}, log {log}, round {round}, tier {tier:?}, n {n}"
                            );
                        }
                    }
                }
                assert!(demoted > 0, "kswapd must have demoted");
            }
        }
    }
}
