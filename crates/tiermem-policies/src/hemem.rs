//! HeMem (Raybuck et al., SOSP'21), as configured by default in its public code.
//!
//! * Tracker: PEBS samples of loads and stores, one every `sample_period` accesses.
//! * Per page, a read count and a write count. A page is hot if
//!   `reads ≥ hot_read_threshold` or `writes ≥ hot_write_threshold`.
//! * Cooling: when a sampled page's count exceeds `cooling_threshold`, a global clock ticks;
//!   every page's counts are halved once per tick. HeMem does it lazily (each page keeps the
//!   clock it was last cooled at and shifts its counts by the difference when next touched);
//!   so do we — lazy and eager halving give the same counts. HeMem's cooling thread then walks
//!   the hot lists and moves pages that fell below the thresholds to the cold lists
//!   (`partial_cool_peek_and_move`, COOLING_PAGES per pass); we re-classify every hot page at
//!   the end of the quantum in which the clock ticked (i.e. the walk finishes within 10 ms).
//! * Hot and cold FIFO lists per tier: a page enters the tail of a list when its class
//!   changes or when it is migrated.
//! * Migration thread, every `quantum_ms`: take hot pages from the alternate tier's hot list
//!   (FIFO); put each in a free default-tier page, or, if there is none, first demote the
//!   head of the default tier's cold list; stop when the default tier holds only hot pages,
//!   when nothing is hot in the alternate tier, or at the migration limit.
//!
//! Source of the defaults: `cuhk-mass/hemem`, file `src/pebs.h` (commit 57fb561):
//! `SAMPLE_PERIOD 19997`, `HOT_READ_THRESHOLD 4`, `HOT_WRITE_THRESHOLD 4`,
//! `PEBS_COOLING_THRESHOLD 10`, `PEBS_KSWAPD_INTERVAL 10000` µs (10 ms),
//! `PEBS_KSWAPD_MIGRATE_RATE 10 GB` per migration-thread pass. The lazy cooling and the
//! strict `> PEBS_COOLING_THRESHOLD` test follow `pebs_scan_thread` in `src/pebs.c`.
//! Two differences from the C code, both deliberate: (1) HeMem shifts only the count of the
//! sampled event type when it catches up with the clock; we shift reads and writes together
//! (HeMem's quirk lets an old, uncooled count survive a tick); (2) HeMem's 10 GB limit counts
//! only promoted bytes; ours counts promotions and the demotions that make room, because the
//! backend enforces the quota on every move in the plan.
//!
//! HeMem manages 2 MB pages; nothing here assumes a page size (`snap.page_bytes`).

use crate::heat::{
    free_pages, gbps_to_bytes_per_quantum, in_default_tier, mib_per_s_to_gbps, ms_to_ns, Budget,
    HeatModel, LivePages, SideCursors, FAST, SLOW,
};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{HeatEvent, PageIdx, Plan, Policy, Result, Snapshot, TierId, TrackerSpec};

/// `policy = "hemem"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HememConfig {
    /// PEBS sample period: one sample every this many loads/stores (hemem src/pebs.h
    /// `SAMPLE_PERIOD 19997`).
    #[serde(default = "d_sample_period")]
    pub sample_period: u64,
    /// Hot if the sampled read count reaches this (`HOT_READ_THRESHOLD 4`).
    #[serde(default = "d_hot")]
    pub hot_read_threshold: u32,
    /// Hot if the sampled write count reaches this (`HOT_WRITE_THRESHOLD 4`).
    #[serde(default = "d_hot")]
    pub hot_write_threshold: u32,
    /// Halve all counts when a page's count exceeds this (`PEBS_COOLING_THRESHOLD 10`).
    #[serde(default = "d_cooling")]
    pub cooling_threshold: u32,
    /// Migration-thread period (`PEBS_KSWAPD_INTERVAL` 10 ms).
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
    /// Migration limit in GB/s (1e9 bytes/s): `PEBS_KSWAPD_MIGRATE_RATE` is 10 GiB per
    /// 10 ms pass = 1 024 000 MiB/s = 1 024 000 × 1 048 576 B/s = 1073.741824 GB/s (in
    /// practice the copy bandwidth binds first).
    #[serde(default = "d_limit")]
    pub migration_limit_gbps: f64,
}

fn d_sample_period() -> u64 {
    19997
}
fn d_hot() -> u32 {
    4
}
fn d_cooling() -> u32 {
    10
}
fn d_quantum_ms() -> f64 {
    10.0
}
fn d_limit() -> f64 {
    // 10 GiB per 10 ms in MiB/s, converted: 1073.741824 GB/s.
    mib_per_s_to_gbps(10.0 * 1024.0 / 0.010)
}

impl Default for HememConfig {
    fn default() -> Self {
        HememConfig {
            sample_period: d_sample_period(),
            hot_read_threshold: d_hot(),
            hot_write_threshold: d_hot(),
            cooling_threshold: d_cooling(),
            quantum_ms: d_quantum_ms(),
            migration_limit_gbps: d_limit(),
        }
    }
}

impl Validate for HememConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if self.sample_period == 0 {
            return Err(invalid(&join(p, "sample_period"), "must be at least 1"));
        }
        if self.hot_read_threshold == 0 {
            return Err(invalid(
                &join(p, "hot_read_threshold"),
                "must be at least 1",
            ));
        }
        if self.hot_write_threshold == 0 {
            return Err(invalid(
                &join(p, "hot_write_threshold"),
                "must be at least 1",
            ));
        }
        check_range(
            &join(p, "cooling_threshold"),
            self.cooling_threshold as f64,
            1.0,
            (MAX_COUNT - 1) as f64,
        )?;
        let hot_max = self.hot_read_threshold.max(self.hot_write_threshold);
        if self.cooling_threshold < hot_max {
            return Err(invalid(
                &join(p, "cooling_threshold"),
                format!("{} is below the hot thresholds ({hot_max}); pages would cool before they can be hot", self.cooling_threshold),
            ));
        }
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 60_000.0)?;
        check_range(
            &join(p, "migration_limit_gbps"),
            self.migration_limit_gbps,
            0.0,
            1e9,
        )
    }
}

/// `policy = "hemem"` in the registry ([`crate::REGISTRY`]).
pub static ENTRY: PolicyEntry = PolicyEntry::new::<HememConfig>(
    "hemem",
    "HeMem (SOSP'21): PEBS samples, hot/cold FIFO lists by sampled counts, periodic cooling; promotes hot pages, demoting cold ones to make room",
    r#"[policy]
policy = "hemem"
sample_period = 19997                 # PEBS period (hemem src/pebs.h SAMPLE_PERIOD)
hot_read_threshold = 4                # HOT_READ_THRESHOLD
hot_write_threshold = 4               # HOT_WRITE_THRESHOLD
cooling_threshold = 10                # PEBS_COOLING_THRESHOLD: halve all counts past this
quantum_ms = 10.0                     # PEBS_KSWAPD_INTERVAL
migration_limit_gbps = 1073.741824   # PEBS_KSWAPD_MIGRATE_RATE: 10 GiB per 10 ms pass = 1024000 MiB/s x 1048576 B/MiB
"#,
);

impl PolicyParams for HememConfig {
    fn build(&self, _ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(Hemem::new(self.clone()))
    }
    fn heat_model(&self, _ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        Some(Box::new(Hemem::new(self.clone())))
    }
}

/// Per-page state, 16 bytes (a terabyte of 4 KiB pages is 268 M of them): sampled counts
/// (at most `MAX_COUNT`: the thresholds are validated below it), the cooling clock they
/// were last brought up to, and `seq_flags`: when the page entered its current list
/// (larger = nearer the tail) with the page's class (`HOT`) and whether it is in
/// `Hemem::live` (`LIVE`) in the top bits.
#[derive(Clone, Copy, Debug, Default)]
struct PageState {
    reads: u16,
    writes: u16,
    clock: u32,
    seq_flags: u64,
}

const HOT: u64 = 1 << 63;
const LIVE: u64 = 1 << 62;
/// The side (default tier or below) the page's list entry is on, as last synced.
const FAST_SIDE: u64 = 1 << 61;
const SEQ: u64 = FAST_SIDE - 1;
/// Counts saturate here; `cooling_threshold` must stay below it so a tick can fire.
const MAX_COUNT: u32 = u16::MAX as u32;

impl PageState {
    fn hot(&self) -> bool {
        self.seq_flags & HOT != 0
    }
    fn live(&self) -> bool {
        self.seq_flags & LIVE != 0
    }
    fn seq(&self) -> u64 {
        self.seq_flags & SEQ
    }
    fn fast_side(&self) -> bool {
        self.seq_flags & FAST_SIDE != 0
    }
    fn set_flag(&mut self, flag: u64, on: bool) {
        if on {
            self.seq_flags |= flag;
        } else {
            self.seq_flags &= !flag;
        }
    }
    fn set_seq(&mut self, seq: u64) {
        self.seq_flags = (self.seq_flags & !SEQ) | (seq & SEQ);
    }
}

/// Pages that entered the cold list together on first touch (`ensure`): page
/// `start + i` got seq `base_seq + i`. Those still there ("pristine": never bumped) are
/// not stored in any list; they are found by scanning the batch from `cursor`.
#[derive(Clone, Debug)]
struct Batch {
    start: PageIdx,
    end: PageIdx,
    base_seq: u64,
    cursor: SideCursors,
}

/// One side of one class's FIFO list: `(seq, page)` entries in seq order, deleted lazily.
/// An entry is current while its page still has that seq (every listing takes a fresh one)
/// and that side (`Hemem::is_current`); leaving a list only makes the entry stale, so a
/// class change or a migration costs O(1) instead of a tree removal and insertion (half
/// of a fig1 run's time with trees). Stale entries are dropped from the head as soon as
/// they reach it and everywhere once they outnumber the current ones (`Hemem::compact`).
#[derive(Clone, Debug, Default)]
struct SeqList {
    /// Appended in increasing seq order (a new listing has the largest seq so far).
    entries: VecDeque<(u64, PageIdx)>,
    /// Entries that arrived behind the last one: a page that changed sides keeps its seq
    /// (`Hemem::sync`). Kept current: removed when their page leaves.
    late: BTreeMap<u64, PageIdx>,
    /// How many entries are current.
    current: usize,
}

impl SeqList {
    /// Every entry, current or not, in seq order.
    fn iter(&self) -> impl Iterator<Item = (u64, PageIdx)> + '_ {
        let mut entries = self.entries.iter().copied().peekable();
        let mut late = self.late.iter().map(|(&seq, &p)| (seq, p)).peekable();
        std::iter::from_fn(move || match (entries.peek(), late.peek()) {
            (Some(a), Some(b)) if b.0 < a.0 => late.next(),
            (Some(_), _) => entries.next(),
            (None, _) => late.next(),
        })
    }

    fn push(&mut self, seq: u64, page: PageIdx) {
        debug_assert!(self.entries.back().is_none_or(|&(s, _)| s < seq));
        self.entries.push_back((seq, page));
        self.current += 1;
    }

    /// The entry `seq` stops being current.
    fn forget(&mut self, seq: u64) {
        self.current -= 1;
        if !self.late.is_empty() {
            self.late.remove(&seq);
        }
    }
}

/// HeMem's tracker state and page finder.
///
/// The FIFO lists are kept incrementally, so a quantum costs what its samples and moves
/// cost, not a pass over every page: `lists[hot][fast]` holds `(seq, page)` of every page
/// that left its first-touch place in the cold list, by class and by side (default tier or
/// below) as last seen (`SeqList`); the snapshot's `moved` log keeps the sides true
/// (without a log, e.g. on the runtime, both sides are read). Pristine pages
/// are in `batches`. `live` holds the pages whose counts may be nonzero, so cooling and
/// the heat total walk only those.
#[derive(Clone, Debug)]
pub struct Hemem {
    pub cfg: HememConfig,
    pages: Vec<PageState>,
    global_clock: u32,
    next_seq: u64,
    total_heat: f64,
    /// `lists[hot][fast]`.
    lists: [[SeqList; 2]; 2],
    batches: Vec<Batch>,
    live: LivePages,
    /// Whether `lists` and the cursors follow the placement (a snapshot without a `moved`
    /// log clears it).
    synced: bool,
    /// Samples ingested and cooling ticks so far (for inspection and tests).
    pub samples: u64,
    pub cools: u64,
}

impl Hemem {
    pub fn new(cfg: HememConfig) -> Self {
        Hemem {
            cfg,
            pages: Vec::new(),
            global_clock: 0,
            next_seq: 0,
            total_heat: 0.0,
            lists: Default::default(),
            batches: Vec::new(),
            live: LivePages::default(),
            synced: false,
            samples: 0,
            cools: 0,
        }
    }

    fn ensure(&mut self, n: usize) {
        if self.pages.len() < n {
            // New pages enter the cold list in page order (first-touch order).
            let start = self.pages.len();
            self.pages.resize(n, PageState::default());
            for i in start..n {
                self.pages[i].clock = self.global_clock;
                self.pages[i].set_seq(self.next_seq + (i - start) as u64);
            }
            let (start, end) = (start as PageIdx, n as PageIdx);
            self.batches.push(Batch {
                start,
                end,
                base_seq: self.next_seq,
                cursor: SideCursors::new(start),
            });
            self.next_seq += (n - start as usize) as u64;
        }
    }

    fn batch_of(&self, page: PageIdx) -> Option<&Batch> {
        let i = self.batches.partition_point(|b| b.end <= page);
        self.batches.get(i).filter(|b| b.start <= page)
    }

    /// Still where first touch put it in the cold list.
    fn is_pristine_in(&self, b: &Batch, page: PageIdx) -> bool {
        self.pages[page as usize].seq() == b.base_seq + (page - b.start) as u64
    }

    fn is_pristine(&self, page: PageIdx) -> bool {
        self.batch_of(page)
            .is_some_and(|b| self.is_pristine_in(b, page))
    }

    /// Move a page to the tail of the list of class `hot` (its class changed, or it was
    /// migrated); `placement` says on which side it is now.
    fn relist(&mut self, page: usize, hot: bool, placement: &[TierId]) {
        let p = page as PageIdx;
        let s = self.pages[page];
        if !self.is_pristine(p) {
            self.lists[s.hot() as usize][s.fast_side() as usize].forget(s.seq());
        }
        let fast = in_default_tier(placement, p);
        let s = &mut self.pages[page];
        s.set_flag(HOT, hot);
        s.set_flag(FAST_SIDE, fast);
        s.set_seq(self.next_seq);
        self.lists[hot as usize][fast as usize].push(self.next_seq, p);
        self.next_seq += 1;
    }

    /// Whether a list entry is current: its page still has that seq and that side.
    fn is_current(&self, (seq, page): (u64, PageIdx), fast: bool) -> bool {
        let s = self.pages[page as usize];
        s.seq() == seq && s.fast_side() == fast
    }

    /// Drop stale entries from every list's head, and everywhere in a list where they
    /// outnumber the current ones (so a list walk costs at most twice its current entries).
    fn compact(&mut self) {
        let mut lists = std::mem::take(&mut self.lists);
        for (class, sides) in lists.iter_mut().enumerate() {
            for (fast, list) in sides.iter_mut().enumerate() {
                let fast = fast == 1;
                while list
                    .entries
                    .front()
                    .is_some_and(|&e| !self.is_current(e, fast))
                {
                    list.entries.pop_front();
                }
                if list.entries.len() > 2 * list.current + 64 {
                    list.entries.retain(|&e| self.is_current(e, fast));
                }
                debug_assert_eq!(
                    list.iter().filter(|&e| self.is_current(e, fast)).count(),
                    list.current,
                    "class {class}, fast {fast}"
                );
            }
        }
        self.lists = lists;
    }

    fn bump(&mut self, page: usize, placement: &[TierId]) {
        let hot = self.pages[page].hot();
        self.relist(page, hot, placement);
    }

    /// Bring the lists' sides and the scan cursors up to the snapshot's placement. With a
    /// log, the pages it names change sides; at the first log after none, every side is
    /// rebuilt. Without a log (the runtime), the sides go stale: `list_head` then reads
    /// both sides and checks the placement, and the cursors restart each quantum.
    fn sync(&mut self, snap: &Snapshot<'_>) {
        let placement = snap.placement;
        match snap.moved {
            Some(moved) if self.synced => {
                // First every listed page's side, then the entries in seq order: a side's
                // entries behind the newcomers are stale by then and leave from its tail,
                // so the newcomers (a quantum's promotions and demotions) append.
                let mut changed = Vec::new();
                for &p in moved {
                    if p as usize >= self.pages.len() {
                        continue;
                    }
                    let fast = in_default_tier(placement, p);
                    match self.batch_of(p) {
                        Some(b) if self.is_pristine_in(b, p) => {
                            b.cursor.lower(fast, p);
                        }
                        _ => {
                            let s = self.pages[p as usize];
                            if s.fast_side() != fast {
                                self.lists[s.hot() as usize][s.fast_side() as usize]
                                    .forget(s.seq());
                                self.pages[p as usize].set_flag(FAST_SIDE, fast);
                                changed.push((s.seq(), p));
                            }
                        }
                    }
                }
                changed.sort_unstable();
                for (seq, p) in changed {
                    let s = self.pages[p as usize];
                    let fast = s.fast_side();
                    let mut list = std::mem::take(&mut self.lists[s.hot() as usize][fast as usize]);
                    while list
                        .entries
                        .back()
                        .is_some_and(|&e| !self.is_current(e, fast))
                    {
                        list.entries.pop_back();
                    }
                    if list.entries.binary_search_by_key(&seq, |&(s, _)| s).is_ok() {
                        list.current += 1; // its old entry here is current again
                    } else if list.entries.back().is_none_or(|&(s, _)| s < seq) {
                        list.push(seq, p);
                    } else {
                        list.late.insert(seq, p);
                        list.current += 1;
                    }
                    self.lists[s.hot() as usize][fast as usize] = list;
                }
            }
            Some(_) => {
                // The first log after none: every listed page takes its side from the
                // placement, and each class's two sides are rebuilt.
                for hot in [false, true] {
                    let mut all: Vec<(u64, PageIdx)> = Vec::new();
                    for fast in [false, true] {
                        let list = std::mem::take(&mut self.lists[hot as usize][fast as usize]);
                        all.extend(list.iter().filter(|&e| self.is_current(e, fast)));
                    }
                    all.sort_unstable();
                    for (seq, p) in all {
                        let fast = in_default_tier(placement, p);
                        self.pages[p as usize].set_flag(FAST_SIDE, fast);
                        self.lists[hot as usize][fast as usize].push(seq, p);
                    }
                }
                self.reset_cursors();
            }
            None => self.reset_cursors(),
        }
        self.synced = snap.moved.is_some();
    }

    fn reset_cursors(&self) {
        for b in &self.batches {
            b.cursor.reset(b.start);
        }
    }

    /// Bring a page's counts up to the global clock (lazy halving).
    fn catch_up(&mut self, page: usize) {
        let g = self.global_clock;
        let s = &mut self.pages[page];
        let shift = g.wrapping_sub(s.clock);
        if shift > 0 {
            s.reads = if shift >= 16 { 0 } else { s.reads >> shift };
            s.writes = if shift >= 16 { 0 } else { s.writes >> shift };
            s.clock = g;
        }
    }

    fn classify(&self, s: &PageState) -> bool {
        s.reads as u32 >= self.cfg.hot_read_threshold
            || s.writes as u32 >= self.cfg.hot_write_threshold
    }

    /// Current (cooled) read and write counts of a page.
    pub fn counts(&self, page: PageIdx) -> (u32, u32) {
        match self.pages.get(page as usize) {
            None => (0, 0),
            Some(s) => {
                let shift = self.global_clock.wrapping_sub(s.clock);
                if shift >= 16 {
                    (0, 0)
                } else {
                    ((s.reads >> shift) as u32, (s.writes >> shift) as u32)
                }
            }
        }
    }

    fn on_sample(&mut self, page: usize, write: bool, placement: &[TierId]) {
        self.catch_up(page);
        let cooling = self.cfg.cooling_threshold;
        let s = &mut self.pages[page];
        let c = if write {
            s.writes = s.writes.saturating_add(1);
            s.writes
        } else {
            s.reads = s.reads.saturating_add(1);
            s.reads
        } as u32;
        if !s.live() {
            s.set_flag(LIVE, true);
            self.live.insert(page as PageIdx);
        }
        self.samples += 1;
        self.total_heat += 1.0;
        let hot = self.classify(&self.pages[page]);
        if hot != self.pages[page].hot() {
            self.relist(page, hot, placement);
        }
        if c > cooling {
            self.global_clock = self.global_clock.wrapping_add(1);
            self.cools += 1;
            // Every count halves (floor); the total follows approximately.
            self.total_heat /= 2.0;
        }
    }

    /// The cooling walk: hot pages whose cooled counts fell below the thresholds move to
    /// the tail of their tier's cold list, in page order.
    /// The same pass re-sums the cooled counts, so `total_heat` (which the sample path only
    /// halves approximately on a tick) is exact again at the end of every quantum. Only
    /// `live` pages can have counts; those cooled to nothing leave it.
    fn cool_hot_lists(&mut self, placement: &[TierId]) {
        let mut total = 0u64;
        let mut live = std::mem::take(&mut self.live);
        live.retain(|&p| {
            let i = p as usize;
            self.catch_up(i);
            let s = self.pages[i];
            total += (s.reads + s.writes) as u64;
            if s.hot() && !self.classify(&s) {
                self.relist(i, false, placement);
            }
            let keep = s.reads + s.writes > 0 || self.pages[i].hot();
            if !keep {
                self.pages[i].set_flag(LIVE, false);
            }
            keep
        });
        self.live = live;
        self.total_heat = total as f64;
    }

    /// A tier's hot or cold list in FIFO order (head first).
    fn list(&self, snap: &Snapshot<'_>, tier: TierId, hot: bool) -> Vec<PageIdx> {
        self.list_head(snap, tier, hot, usize::MAX, |_| true)
    }

    /// The first `n` pages of a tier's list that `want` accepts (every tier below the
    /// default one is its alternate side): the stored pages of that class and side in seq
    /// order, merged for the cold list with the pristine pages found from the cursors.
    fn list_head(
        &self,
        snap: &Snapshot<'_>,
        tier: TierId,
        hot: bool,
        n: usize,
        want: impl Fn(PageIdx) -> bool,
    ) -> Vec<PageIdx> {
        let fast = tier == FAST;
        let placement = snap.placement;
        let on_side = |p: PageIdx| in_default_tier(placement, p) == fast;
        // Synced, the side's set holds exactly the side's pages; else both sets are read.
        let class = &self.lists[hot as usize];
        let side = |fast: bool| {
            class[fast as usize]
                .iter()
                .filter(move |&e| self.is_current(e, fast))
        };
        let both: Vec<(u64, PageIdx)>;
        let listed: Box<dyn Iterator<Item = (u64, PageIdx)>> = if self.synced {
            Box::new(side(fast))
        } else {
            let mut v: Vec<_> = side(false).chain(side(true)).collect();
            v.sort_unstable();
            both = v;
            Box::new(both.into_iter())
        };
        let mut listed = listed.filter(|&(_, p)| on_side(p) && want(p)).peekable();
        let mut out = Vec::new();
        if !hot {
            for b in &self.batches {
                if out.len() >= n {
                    break;
                }
                let pristine = |p: PageIdx| self.is_pristine_in(b, p);
                b.cursor.scan(fast, b.end, placement, pristine, |p| {
                    if want(p) {
                        let seq = b.base_seq + (p - b.start) as u64;
                        while let Some(&(s, q)) = listed.peek() {
                            if s >= seq || out.len() >= n {
                                break;
                            }
                            out.push(q);
                            listed.next();
                        }
                        if out.len() < n {
                            out.push(p);
                        }
                    }
                    out.len() < n
                });
            }
        }
        out.extend(listed.take(n.saturating_sub(out.len())).map(|(_, p)| p));
        out
    }

    /// The migration thread's pass.
    fn migrate(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let mut budget = Budget::new(HeatModel::migration_limit_bytes(self), snap.page_bytes);
        let mut free = free_pages(snap, FAST);
        let hot_alt = self.list(snap, SLOW, true);
        if hot_alt.is_empty() {
            return plan;
        }
        // The cold list is only walked when the free pages do not suffice.
        let cold_fast = if (hot_alt.len() as u64) > free {
            self.list_head(snap, FAST, false, hot_alt.len(), |_| true)
        } else {
            Vec::new()
        };
        let mut victims = cold_fast.into_iter();
        for p in hot_alt {
            if free > 0 {
                if !budget.take(1) {
                    break;
                }
                free -= 1;
            } else {
                // No free default-tier page: demote the head of the cold list first.
                let Some(cp) = victims.next() else {
                    break; // every default-tier page is hot
                };
                if !budget.take(2) {
                    break;
                }
                plan.push(cp, SLOW);
                self.bump(cp as usize, snap.placement);
            }
            plan.push(p, FAST);
            self.bump(p as usize, snap.placement);
        }
        plan
    }
}

impl HeatModel for Hemem {
    fn system(&self) -> &'static str {
        "hemem"
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::Pebs {
            sample_period: self.cfg.sample_period,
        }
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.quantum_ms)
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        Some(gbps_to_bytes_per_quantum(
            self.cfg.migration_limit_gbps,
            HeatModel::quantum_ns(self),
        ))
    }
    fn ingest(&mut self, snap: &Snapshot<'_>) {
        self.ensure(snap.page_count());
        self.sync(snap);
        let before = self.global_clock;
        for e in snap.events {
            if let HeatEvent::Sample { page, write, count } = *e {
                if (page as usize) < self.pages.len() {
                    for _ in 0..count {
                        self.on_sample(page as usize, write, snap.placement);
                    }
                }
            }
        }
        if self.global_clock != before {
            self.cool_hot_lists(snap.placement);
        }
        self.compact();
        self.live.settle();
    }
    fn heat(&self, page: PageIdx) -> f64 {
        let (r, w) = self.counts(page);
        (r + w) as f64
    }
    fn total_heat(&self) -> f64 {
        self.total_heat
    }
    fn heat_ceiling(&self) -> f64 {
        self.cfg.cooling_threshold as f64
    }
    fn is_hot(&self, page: PageIdx) -> bool {
        self.pages.get(page as usize).is_some_and(|s| s.hot())
    }
    /// The cold list first (FIFO), then the hot list (FIFO).
    fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx> {
        // HeMem's lists are two-sided (every tier below DRAM is its alternate side); a layer
        // asks for one tier's pages.
        let exactly = |p: PageIdx| snap.placement[p as usize] == tier;
        let mut v = self.list_head(snap, tier, false, n, exactly);
        if v.len() < n {
            v.extend(self.list_head(snap, tier, true, n - v.len(), exactly));
        }
        v
    }
    fn warm_pages(&self) -> Option<&[PageIdx]> {
        Some(self.live.pages())
    }
    fn want_warm_pages(&mut self) {
        self.live.keep_in_order();
    }
}

impl Policy for Hemem {
    fn name(&self) -> String {
        "hemem".into()
    }
    fn tracker(&self) -> TrackerSpec {
        HeatModel::tracker(self)
    }
    fn quantum_ns(&self) -> u64 {
        HeatModel::quantum_ns(self)
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        HeatModel::migration_limit_bytes(self)
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.ingest(snap);
        let plan = self.migrate(snap);
        crate::cascade::cascade(plan, snap, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::{moved_to, Lcg, World, LOG_MODES, LOG_TOGGLE_ROUNDS, PAGE};

    fn hemem() -> Hemem {
        Hemem::new(HememConfig::default())
    }

    #[test]
    fn defaults_match_hemem_source() {
        let c = HememConfig::default();
        assert_eq!(
            (
                c.sample_period,
                c.hot_read_threshold,
                c.hot_write_threshold,
                c.cooling_threshold
            ),
            (19997, 4, 4, 10)
        );
        let h = Hemem::new(c);
        assert_eq!(Policy::quantum_ns(&h), 10_000_000);
        // 10 GiB per 10 ms pass.
        assert_eq!(Policy::migration_limit_bytes(&h), Some(10 << 30));
    }

    #[test]
    fn promotes_after_enough_reads_and_not_before() {
        // 4 pages: 0,1 in fast (cap 4), 2,3 in slow.
        let mut w = World::new(4, 2, 4, 4);
        let mut h = hemem();
        w.reads(2, 3);
        let plan = h.decide(&w.snap());
        assert!(
            plan.moves.is_empty(),
            "3 reads < HOT_READ_THRESHOLD: {plan:?}"
        );
        w.apply(&plan);
        w.reads(2, 1);
        let plan = h.decide(&w.snap());
        assert_eq!(moved_to(&plan, FAST), vec![2]);
        assert!(
            moved_to(&plan, SLOW).is_empty(),
            "free space: no demotion needed"
        );
    }

    #[test]
    fn writes_have_their_own_threshold() {
        let mut w = World::new(4, 0, 4, 4);
        let mut h = hemem();
        // 2 reads + 2 writes: neither count reaches 4.
        w.reads(1, 2);
        w.writes(1, 2);
        assert!(h.decide(&w.snap()).moves.is_empty());
        w.apply(&Plan::default());
        w.writes(1, 2);
        assert_eq!(moved_to(&h.decide(&w.snap()), FAST), vec![1]);
    }

    #[test]
    fn cooling_halves_all_counts_and_demotes_to_cold_list() {
        let mut w = World::new(4, 0, 0, 4); // no fast capacity: nothing can move
        let mut h = hemem();
        w.reads(1, 5);
        w.writes(2, 3);
        h.decide(&w.snap());
        assert!(h.is_hot(1) && !h.is_hot(2));
        assert_eq!(h.counts(1), (5, 0));
        assert_eq!(h.cools, 0);
        w.apply(&Plan::default());
        // Page 3 reaches 11 > COOLING_THRESHOLD: one tick, everyone halves.
        w.reads(3, 11);
        h.decide(&w.snap());
        assert_eq!(h.cools, 1);
        assert_eq!(h.counts(1), (2, 0), "5 >> 1");
        assert_eq!(h.counts(2), (0, 1), "3 >> 1");
        assert_eq!(h.counts(3), (5, 0), "11 >> 1");
        assert!(
            !h.is_hot(1),
            "page 1 cooled below the threshold and left the hot list"
        );
        assert!(h.is_hot(3));
        // Exactly at the threshold does not cool (HeMem tests `>`).
        let mut w = World::new(1, 0, 0, 1);
        let mut h = hemem();
        w.reads(0, 10);
        h.decide(&w.snap());
        assert_eq!(h.cools, 0);
    }

    #[test]
    fn cooled_page_is_no_longer_promoted() {
        let mut w = World::new(4, 0, 1, 4);
        let mut h = hemem();
        w.reads(0, 11); // hot, and triggers a tick → 5 (still hot)
        w.reads(1, 4); // hot before the tick... (sampled after page 0's tick: 4, hot)
        let plan = h.decide(&w.snap());
        // Fast has one free page: page 0 became hot first (FIFO) and goes first.
        assert_eq!(moved_to(&plan, FAST), vec![0]);
        w.apply(&plan);
        // Another tick from page 0 (in fast now): page 1's 4 reads halve to 2 → cold.
        w.reads(0, 7); // 5 + 7 = 12 > 10
        let plan = h.decide(&w.snap());
        assert_eq!(h.counts(1), (2, 0));
        assert!(!h.is_hot(1));
        assert!(plan.moves.is_empty(), "{plan:?}");
    }

    #[test]
    fn demotes_cold_to_make_room_and_never_hot() {
        // Fast (cap 3) is full: pages 0 (hot), 1, 2 (cold). Slow: 3, 4, 5 become hot.
        let mut w = World::new(6, 3, 3, 6);
        let mut h = hemem();
        w.reads(0, 4);
        for p in 3..6 {
            w.reads(p, 4);
        }
        let plan = h.decide(&w.snap());
        // Pairs (demote cold head, promote hot head) in FIFO order; page 0 stays.
        let order: Vec<(u32, u8)> = plan.moves.iter().map(|m| (m.range.start, m.to.0)).collect();
        assert_eq!(order, vec![(1, 1), (3, 0), (2, 1), (4, 0)]);
        assert_eq!(w.apply(&plan), 4);
        // Now fast holds 0, 3, 4, all hot: page 5 must wait.
        let plan = h.decide(&w.snap());
        assert!(
            plan.moves.is_empty(),
            "no cold page left in the default tier: {plan:?}"
        );
    }

    #[test]
    fn respects_migration_limit_per_quantum() {
        let mut w = World::new(20, 0, 20, 20);
        let mut h = Hemem::new(HememConfig {
            // 3 pages of 2 MiB per 10 ms quantum.
            migration_limit_gbps: mib_per_s_to_gbps(3.0 * 2.0 / 0.010),
            ..HememConfig::default()
        });
        assert_eq!(Policy::migration_limit_bytes(&h), Some(3 * PAGE));
        for p in 0..10 {
            w.reads(p, 4);
        }
        let plan = h.decide(&w.snap());
        assert_eq!(moved_to(&plan, FAST), vec![0, 1, 2]);
        w.apply(&plan);
        let plan = h.decide(&w.snap());
        assert_eq!(moved_to(&plan, FAST), vec![3, 4, 5]);
        // Pairs count twice: with a full fast tier, 3 pages of budget = one demote+promote.
        let mut w = World::new(4, 2, 2, 4);
        let mut h = Hemem::new(HememConfig {
            migration_limit_gbps: mib_per_s_to_gbps(3.0 * 2.0 / 0.010),
            ..HememConfig::default()
        });
        w.reads(2, 4);
        w.reads(3, 4);
        let plan = h.decide(&w.snap());
        assert_eq!(plan.pages(), 2);
    }

    #[test]
    fn deterministic() {
        fn run() -> Vec<Plan> {
            let mut w = World::new(64, 16, 16, 64);
            let mut h = hemem();
            let mut x: u64 = 12345;
            let mut plans = Vec::new();
            for _ in 0..50 {
                for _ in 0..40 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let page = ((x >> 33) % 64) as u32;
                    // Skew: low pages are hotter.
                    let page = page * page / 64;
                    w.events.push(HeatEvent::Sample {
                        page,
                        write: (x >> 20) & 1 == 1,
                        count: 1,
                    });
                }
                let plan = h.decide(&w.snap());
                w.apply(&plan);
                plans.push(plan);
            }
            plans
        }
        let a = run();
        assert_eq!(a, run());
        assert!(
            a.iter().any(|p| !p.moves.is_empty()),
            "the test must exercise migrations"
        );
    }

    #[test]
    fn total_heat_is_exact_after_cooling() {
        let mut w = World::new(8, 0, 0, 8);
        let mut h = hemem();
        for p in 0..7 {
            w.reads(p, 3); // odd counts: floor-halving loses 0.5 each
        }
        w.reads(7, 11); // tick
        h.ingest(&w.snap());
        let exact: f64 = (0..8).map(|p| h.heat(p)).sum();
        assert_eq!(exact, 7.0 * 1.0 + 5.0);
        assert_eq!(h.total_heat(), exact);
    }

    #[test]
    fn heat_model_orders_pages() {
        let mut w = World::new(4, 0, 4, 4);
        let mut h = hemem();
        w.reads(1, 3);
        w.reads(2, 1);
        w.writes(3, 2);
        h.ingest(&w.snap());
        assert_eq!(h.pages_by_heat(&w.snap(), SLOW), vec![1, 3, 2]);
        assert!((h.access_probability(1) - 0.5).abs() < 1e-9);
        assert_eq!(h.heat_ceiling(), 10.0);
    }

    /// The lists as the definition gives them: every page of the class on the side, by seq.
    fn lists_by_definition(h: &Hemem, w: &World, fast: bool, hot: bool) -> Vec<PageIdx> {
        let mut v: Vec<(u64, PageIdx)> = (0..w.placement.len() as PageIdx)
            .filter(|&p| in_default_tier(&w.placement, p) == fast && h.is_hot(p) == hot)
            .map(|p| (h.pages[p as usize].seq(), p))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn incremental_lists_match_the_definition_with_and_without_the_move_log() {
        for (log, toggled) in LOG_MODES {
            let mut w = World::new(96, 30, 40, 96);
            w.log_moves(log);
            let mut h = hemem();
            let mut rng = Lcg(99);
            let mut rand = |m: u64| rng.below(m);
            let mut checked = 0;
            for round in 0..120 {
                for _ in 0..30 {
                    let page = rand(96) as u32;
                    let page = page * page / 96; // low pages hotter
                    w.events.push(HeatEvent::Sample {
                        page,
                        write: rand(2) == 1,
                        count: 1,
                    });
                }
                let mut plan = h.decide(&w.snap());
                // Moves HeMem did not plan (a Colloid layer's, reclaim): pristine pages
                // into the default tier behind the cursor, others out of it.
                for _ in 0..(round % 4) {
                    let p = rand(96) as PageIdx;
                    let to = if rand(2) == 0 { FAST } else { SLOW };
                    plan.push(p, to);
                }
                // The third pass switches the log off and on (the rebuild at its return).
                if toggled && round % LOG_TOGGLE_ROUNDS == 0 {
                    w.log_moves(w.moved.is_none());
                }
                w.apply(&plan);
                let snap = w.snap();
                h.sync(&snap);
                for fast in [true, false] {
                    let tier = if fast { FAST } else { SLOW };
                    for hot in [true, false] {
                        let want = lists_by_definition(&h, &w, fast, hot);
                        for n in [1, 3, want.len(), usize::MAX] {
                            let got = h.list_head(&snap, tier, hot, n, |_| true);
                            assert_eq!(
                                got,
                                want[..n.min(want.len())].to_vec(),
                                "log {log}, round {round}, fast {fast}, hot {hot}, n {n}"
                            );
                            checked += 1;
                        }
                        let list = &h.lists[hot as usize][fast as usize];
                        let current = list.iter().filter(|&e| h.is_current(e, fast)).count();
                        assert_eq!(list.current, current, "round {round}");
                    }
                }
            }
            assert!(
                h.lists[1].iter().any(|l| l.current > 0),
                "some page must be hot"
            );
            assert!(checked > 1000);
        }
    }

    #[test]
    fn cooling_threshold_above_the_count_width_is_refused() {
        let c = HememConfig {
            cooling_threshold: 70_000,
            ..HememConfig::default()
        };
        let e = c.validate("policy").unwrap_err().to_string();
        assert!(e.contains("cooling_threshold"), "{e}");
    }
}
