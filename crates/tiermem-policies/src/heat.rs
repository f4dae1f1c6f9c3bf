//! What the base tiering systems share: a [`HeatModel`] (the system's tracker state and its
//! page finder), so that a layer such as Colloid reuses a base system's notion of heat
//! instead of copying it, plus small helpers every policy uses.
//!
//! Tier convention (Colloid §2): tier 0 is the default ("fast") tier, tier 1 the alternate
//! tier. The baselines are two-tier systems; pages found in tiers ≥ 2 are treated as
//! alternate-tier pages (candidates for promotion), and demotions go to tier 1; with three
//! or more tiers, `crate::cascade` makes room in tier 1 by demoting its coldest pages down
//! the lower tiers (Linux's demotion path).

use tiermem_core::{PageIdx, Plan, Snapshot, TierId, TrackerSpec};

/// The default tier.
pub const FAST: TierId = TierId(0);
/// The alternate tier (demotion target).
pub const SLOW: TierId = TierId(1);

/// A base system's view of page heat, as its own tracker builds it. Contract: `ingest` is
/// called exactly once per quantum with that quantum's snapshot, before any query; queries
/// are pure and deterministic (ties are broken by page index, never by hash order).
pub trait HeatModel: Send {
    /// The system's config name ("hemem", "tpp", "memtis").
    fn system(&self) -> &'static str;
    fn tracker(&self) -> TrackerSpec;
    fn quantum_ns(&self) -> u64;
    /// The system's static migration limit M, in bytes per quantum.
    fn migration_limit_bytes(&self) -> Option<u64>;
    /// Fold this quantum's heat events into the state (counts, histograms, cooling).
    fn ingest(&mut self, snap: &Snapshot<'_>);
    /// The system's heat value for a page: HeMem's decayed read+write count, MEMTIS's
    /// decayed sample count, TPP's access-rate estimate from the last time-to-fault (1/s).
    fn heat(&self, page: PageIdx) -> f64;
    /// Sum of `heat` over all pages (maintained incrementally).
    fn total_heat(&self) -> f64;
    /// Heat at which the system cools (HeMem's COOLING_THRESHOLD): frequency bins for a
    /// Colloid layer divide `0..heat_ceiling` (Colloid §4.1).
    fn heat_ceiling(&self) -> f64;
    /// Whether the system classifies the page as hot right now.
    fn is_hot(&self, page: PageIdx) -> bool;
    /// Access probability of a page: its heat over the total (Colloid §4.1).
    fn access_probability(&self, page: PageIdx) -> f64 {
        let t = self.total_heat();
        if t > 0.0 {
            self.heat(page) / t
        } else {
            0.0
        }
    }
    /// Pages of `tier` with non-zero heat, hottest first (ties: lower page index first).
    fn pages_by_heat(&self, snap: &Snapshot<'_>, tier: TierId) -> Vec<PageIdx> {
        let mut v: Vec<(f64, PageIdx)> = pages_in(snap, tier)
            .map(|p| (self.heat(p), p))
            .filter(|(h, _)| *h > 0.0)
            .collect();
        v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, p)| p).collect()
    }
    /// Up to `n` pages exactly in `tier` (not every tier below the default one, as the
    /// two-tier systems' own lists read tier 1) in the order the system would evict them
    /// (coldest first).
    fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx>;
    /// Every page that may have heat or be hot, in page order, where the system keeps
    /// that set (so a layer can skip the rest instead of reading every page); `None`:
    /// any page may.
    fn warm_pages(&self) -> Option<&[PageIdx]> {
        None
    }
    /// A layer will read `warm_pages` after every ingest: keep them in page order.
    fn want_warm_pages(&mut self) {}
    /// Whether a Colloid layer may pick only pages the system calls hot (MEMTIS+Colloid
    /// scans the hot lists, Colloid §4.2) rather than any page of a frequency bin (§4.1).
    fn colloid_hot_list_only(&self) -> bool {
        false
    }
    /// Pages a layer may promote into the default tier this quantum when the system's own
    /// capacity moves make the room (MEMTIS: the space above its promotion watermark, which
    /// its default-tier thread frees for waiting hot pages). `None`: the layer makes room
    /// itself by swapping with the system's coldest pages (HeMem, TPP).
    fn promotion_room(&self, _snap: &Snapshot<'_>) -> Option<u64> {
        None
    }
    /// Moves the system makes for capacity reasons alone, which a layer keeps (TPP's kswapd
    /// demotions under the watermarks, MEMTIS's default-tier kmigraterd). Called after
    /// `ingest`, at most once per quantum.
    fn capacity_moves(&mut self, _snap: &Snapshot<'_>) -> Plan {
        Plan::default()
    }
}

/// A boxed model is a model (so layers can be generic over `B: HeatModel` and still take
/// the base chosen by config at run time).
impl HeatModel for Box<dyn HeatModel> {
    fn system(&self) -> &'static str {
        (**self).system()
    }
    fn tracker(&self) -> TrackerSpec {
        (**self).tracker()
    }
    fn quantum_ns(&self) -> u64 {
        (**self).quantum_ns()
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        (**self).migration_limit_bytes()
    }
    fn ingest(&mut self, snap: &Snapshot<'_>) {
        (**self).ingest(snap)
    }
    fn heat(&self, page: PageIdx) -> f64 {
        (**self).heat(page)
    }
    fn total_heat(&self) -> f64 {
        (**self).total_heat()
    }
    fn heat_ceiling(&self) -> f64 {
        (**self).heat_ceiling()
    }
    fn is_hot(&self, page: PageIdx) -> bool {
        (**self).is_hot(page)
    }
    fn access_probability(&self, page: PageIdx) -> f64 {
        (**self).access_probability(page)
    }
    fn pages_by_heat(&self, snap: &Snapshot<'_>, tier: TierId) -> Vec<PageIdx> {
        (**self).pages_by_heat(snap, tier)
    }
    fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx> {
        (**self).coldest_pages(snap, tier, n)
    }
    fn warm_pages(&self) -> Option<&[PageIdx]> {
        (**self).warm_pages()
    }
    fn want_warm_pages(&mut self) {
        (**self).want_warm_pages()
    }
    fn colloid_hot_list_only(&self) -> bool {
        (**self).colloid_hot_list_only()
    }
    fn promotion_room(&self, snap: &Snapshot<'_>) -> Option<u64> {
        (**self).promotion_room(snap)
    }
    fn capacity_moves(&mut self, snap: &Snapshot<'_>) -> Plan {
        (**self).capacity_moves(snap)
    }
}

/// Pages that live in `tier` (tier ≥ 1 all count as the alternate tier when `tier == SLOW`).
pub fn pages_in<'a>(snap: &'a Snapshot<'_>, tier: TierId) -> impl Iterator<Item = PageIdx> + 'a {
    let alt = tier != FAST;
    snap.placement
        .iter()
        .enumerate()
        .filter(move |(_, t)| if alt { **t != FAST } else { **t == FAST })
        .map(|(i, _)| i as PageIdx)
}

/// Whether `page` is in the default tier (the side of the two-sided lists that policies
/// keep; pages past the placement count as below it).
pub fn in_default_tier(placement: &[TierId], page: PageIdx) -> bool {
    placement.get(page as usize) == Some(&FAST)
}

/// The pages a system keeps counts for. Pages that became live since the last merge wait
/// unsorted in `fresh`; they are merged into page order at `settle` only when a reader
/// needs that order after every ingest (`keep_in_order`: a Colloid layer's
/// `warm_pages`), and at every `retain` (cooling walks pages in page order). Sorting the
/// whole set for each reader took 60 % of a HeMem+Colloid run; merging it each quantum
/// when no one reads it, 45 % of a HeMem run.
#[derive(Clone, Debug, Default)]
pub struct LivePages {
    sorted: Vec<PageIdx>,
    fresh: Vec<PageIdx>,
    in_order: bool,
}

impl LivePages {
    /// A page that is not in the set yet (the caller keeps a per-page flag or count).
    pub fn insert(&mut self, page: PageIdx) {
        self.fresh.push(page);
    }
    /// From now on `settle` puts the set in page order, for `pages`.
    pub fn keep_in_order(&mut self) {
        self.in_order = true;
    }
    /// The end of an ingest: merge the fresh pages if a reader wants page order.
    pub fn settle(&mut self) {
        if self.in_order {
            self.merge();
        }
    }
    /// Merge the fresh pages in from the back, moving each run of old pages once:
    /// O(fresh × log(pages) + pages after the first fresh one).
    fn merge(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        self.fresh.sort_unstable();
        let old = self.sorted.len();
        self.sorted.resize(old + self.fresh.len(), 0);
        let mut end = old; // sorted[..end] holds the old pages not yet moved
        for (j, &p) in self.fresh.iter().enumerate().rev() {
            let at = self.sorted[..end].partition_point(|&q| q < p);
            self.sorted.copy_within(at..end, at + j + 1);
            self.sorted[at + j] = p;
            end = at;
        }
        self.fresh.clear();
    }
    /// The set in page order (`keep_in_order`, then read after `settle`).
    pub fn pages(&self) -> &[PageIdx] {
        debug_assert!(
            self.in_order && self.fresh.is_empty(),
            "LivePages read in page order without keep_in_order and settle"
        );
        &self.sorted
    }
    /// The set in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = PageIdx> + '_ {
        self.sorted.iter().chain(&self.fresh).copied()
    }
    /// Keep the pages `keep` accepts, visited in page order.
    pub fn retain(&mut self, keep: impl FnMut(&PageIdx) -> bool) {
        self.merge();
        self.sorted.retain(keep);
    }
}

/// Where to resume scanning for the pages a policy keeps in no list (never sampled, never
/// seen: the coldest of all, in page order), one position per side of the default tier.
/// Invariant: below `cursor[side]` no such page is on that side. The policy lowers it when
/// one enters the side (a logged move, a count cooled to nothing) and resets it when it
/// cannot know (no move log). Cells, so the `&self` page finders can advance it.
#[derive(Clone, Debug, Default)]
pub struct SideCursors([std::cell::Cell<PageIdx>; 2]);

impl SideCursors {
    pub fn new(start: PageIdx) -> Self {
        SideCursors([std::cell::Cell::new(start), std::cell::Cell::new(start)])
    }
    /// A page of the set entered side `fast`.
    pub fn lower(&self, fast: bool, page: PageIdx) {
        let c = &self.0[fast as usize];
        c.set(c.get().min(page));
    }
    pub fn reset(&self, start: PageIdx) {
        self.0.iter().for_each(|c| c.set(start));
    }
    /// Visit the set's pages (`in_set`) on side `fast`, from the cursor up to `end` in
    /// page order, while `visit` returns true (wanting more); the cursor moves to the first
    /// one found.
    pub fn scan(
        &self,
        fast: bool,
        end: PageIdx,
        placement: &[TierId],
        in_set: impl Fn(PageIdx) -> bool,
        mut visit: impl FnMut(PageIdx) -> bool,
    ) {
        let cursor = &self.0[fast as usize];
        let (mut p, mut first) = (cursor.get(), None);
        while p < end {
            if in_default_tier(placement, p) == fast && in_set(p) {
                first.get_or_insert(p);
                if !visit(p) {
                    break;
                }
            }
            p += 1;
        }
        cursor.set(first.unwrap_or(p));
    }
}

/// Whole free pages in a tier.
pub fn free_pages(snap: &Snapshot<'_>, tier: TierId) -> u64 {
    if tier.index() >= snap.tiers.len() || snap.page_bytes == 0 {
        return 0;
    }
    snap.free_bytes(tier) / snap.page_bytes
}

/// Capacity of a tier in pages.
pub fn capacity_pages(snap: &Snapshot<'_>, tier: TierId) -> u64 {
    if tier.index() >= snap.tiers.len() || snap.page_bytes == 0 {
        return 0;
    }
    snap.tiers[tier.index()].capacity_bytes / snap.page_bytes
}

/// A rate in GB/s (1e9 bytes/s) as whole bytes per second. Rounded, so that a limit
/// written as a converted MiB/s constant (1 MiB/s = 1 048 576 B/s = 0.001048576 GB/s)
/// gives exactly the bytes the MiB/s form gave (`1073.741824 * 1e9` is not exact in f64).
pub fn gbps_to_bytes_per_s(gbps: f64) -> f64 {
    (gbps * 1e9).round()
}

/// A kernel/HeMem constant in MiB/s (2^20 bytes/s) in GB/s: for defaults that cite it.
pub fn mib_per_s_to_gbps(mib_per_s: f64) -> f64 {
    mib_per_s * (1u64 << 20) as f64 / 1e9
}

/// Convert a rate in GB/s and a quantum into bytes per quantum (rounded down).
pub fn gbps_to_bytes_per_quantum(gbps: f64, quantum_ns: u64) -> u64 {
    (gbps_to_bytes_per_s(gbps) * quantum_ns as f64 / 1e9).floor() as u64
}

/// Milliseconds (config) to nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// A per-quantum migration budget in pages. `None` = unlimited.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    left_pages: Option<u64>,
}

impl Budget {
    pub fn new(limit_bytes: Option<u64>, page_bytes: u64) -> Self {
        Budget {
            left_pages: limit_bytes.map(|b| b / page_bytes.max(1)),
        }
    }
    /// Take `n` pages from the budget if they all fit.
    pub fn take(&mut self, n: u64) -> bool {
        match &mut self.left_pages {
            None => true,
            Some(left) if *left >= n => {
                *left -= n;
                true
            }
            Some(_) => false,
        }
    }
    pub fn left_pages(&self) -> Option<u64> {
        self.left_pages
    }
}

/// Hand-made snapshots for unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use tiermem_core::{HeatEvent, Snapshot, TierId, TierKind, TierSpec, TierTelemetry};

    pub const PAGE: u64 = 2 << 20;

    /// Owns everything a `Snapshot` borrows.
    pub struct World {
        pub now_ns: u64,
        pub quantum_ns: u64,
        pub specs: Vec<TierSpec>,
        pub tiers: Vec<TierTelemetry>,
        pub placement: Vec<TierId>,
        pub events: Vec<HeatEvent>,
        /// With `Some`, `apply` logs the pages it moves and `snap` hands the log to the
        /// policy (as the simulator does); `None`, the default: no log (as the runtime).
        pub moved: Option<Vec<tiermem_core::PageIdx>>,
    }

    impl World {
        /// `pages` pages; the first `in_fast` in tier 0 and the rest in tier 1; the tiers hold
        /// `fast_cap` and `slow_cap` pages.
        pub fn new(pages: usize, in_fast: usize, fast_cap: u64, slow_cap: u64) -> World {
            let spec = |name: &str, cap: u64, lat: f64| TierSpec {
                name: name.into(),
                kind: TierKind::Dram,
                capacity_bytes: cap * PAGE,
                unloaded_latency_ns: lat,
                peak_bandwidth_bytes_per_s: 1e11,
                cost_per_gb: 1.0,
            };
            let placement: Vec<TierId> = (0..pages)
                .map(|i| if i < in_fast { TierId(0) } else { TierId(1) })
                .collect();
            let mut w = World {
                now_ns: 0,
                quantum_ns: 10_000_000,
                specs: vec![spec("fast", fast_cap, 70.0), spec("slow", slow_cap, 135.0)],
                tiers: vec![TierTelemetry::default(), TierTelemetry::default()],
                placement,
                events: Vec::new(),
                moved: None,
            };
            w.tiers[0].capacity_bytes = fast_cap * PAGE;
            w.tiers[1].capacity_bytes = slow_cap * PAGE;
            w.recount();
            w
        }

        /// Add a tier below the others (no pages in it yet).
        pub fn add_tier(&mut self, name: &str, cap: u64, latency_ns: f64) {
            self.specs.push(TierSpec {
                name: name.into(),
                kind: TierKind::Dram,
                capacity_bytes: cap * PAGE,
                unloaded_latency_ns: latency_ns,
                peak_bandwidth_bytes_per_s: 1e11,
                cost_per_gb: 1.0,
            });
            self.tiers.push(TierTelemetry {
                capacity_bytes: cap * PAGE,
                ..TierTelemetry::default()
            });
        }

        /// Recompute `used_bytes` from the placement.
        pub fn recount(&mut self) {
            for (i, t) in self.tiers.iter_mut().enumerate() {
                t.used_bytes =
                    self.placement.iter().filter(|p| p.index() == i).count() as u64 * PAGE;
            }
        }

        /// Keep a move log (`true`), as the simulator does, or none, as the runtime.
        pub fn log_moves(&mut self, on: bool) {
            self.moved = on.then(Vec::new);
        }

        pub fn snap(&self) -> Snapshot<'_> {
            Snapshot {
                now_ns: self.now_ns,
                quantum_ns: self.quantum_ns,
                page_bytes: PAGE,
                tier_specs: &self.specs,
                tiers: &self.tiers,
                placement: &self.placement,
                events: &self.events,
                tenants: &[],
                controls: &tiermem_core::NO_CONTROLS,
                tenant_telemetry: &[],
                access_bits: None,
                moved: self.moved.as_deref(),
            }
        }

        /// Apply a plan the way a backend would (capacity-checked, in order), clear the
        /// events and advance the clock by one quantum.
        pub fn apply(&mut self, plan: &tiermem_core::Plan) -> usize {
            let mut applied = 0;
            if let Some(log) = &mut self.moved {
                log.clear();
            }
            for m in &plan.moves {
                for p in m.range.pages() {
                    // No data there (the runtime's holes): nothing to move.
                    if self.placement[p as usize] == tiermem_core::TierId::NONE {
                        continue;
                    }
                    let to = m.to.index();
                    let cap = self.tiers[to].capacity_bytes;
                    if self.placement[p as usize] != m.to && self.tiers[to].used_bytes + PAGE <= cap
                    {
                        let from = self.placement[p as usize].index();
                        self.tiers[from].used_bytes -= PAGE;
                        self.tiers[to].used_bytes += PAGE;
                        self.placement[p as usize] = m.to;
                        if let Some(log) = &mut self.moved {
                            log.push(p);
                        }
                        applied += 1;
                    }
                }
            }
            self.events.clear();
            self.now_ns += self.quantum_ns;
            applied
        }

        pub fn reads(&mut self, page: u32, n: usize) {
            for _ in 0..n {
                self.events.push(HeatEvent::Sample {
                    page,
                    write: false,
                    count: 1,
                });
            }
        }
        pub fn writes(&mut self, page: u32, n: usize) {
            for _ in 0..n {
                self.events.push(HeatEvent::Sample {
                    page,
                    write: true,
                    count: 1,
                });
            }
        }
    }

    /// The pages a plan moves to `to`, in plan order.
    /// The move-log settings the incremental lists are tested under: (log from the
    /// start, switched off and on every `LOG_TOGGLE_ROUNDS` rounds).
    pub const LOG_MODES: [(bool, bool); 3] = [(true, false), (false, false), (true, true)];
    pub const LOG_TOGGLE_ROUNDS: usize = 10;

    /// A small deterministic generator for the tests' synthetic events (Knuth's MMIX LCG).
    pub struct Lcg(pub u64);

    impl Lcg {
        /// A number in `0..m`.
        pub fn below(&mut self, m: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % m
        }
    }

    pub fn moved_to(plan: &tiermem_core::Plan, to: TierId) -> Vec<u32> {
        plan.moves
            .iter()
            .filter(|m| m.to == to)
            .flat_map(|m| m.range.pages())
            .collect()
    }
}

#[cfg(test)]
mod rate_tests {
    use super::*;

    /// The GB/s limits give the same bytes per quantum as the MiB/s ones they replaced
    /// (`floor(mib × 2^20 × q / 1e9)`), for the shipped defaults and the tests' values.
    #[test]
    fn gbps_quota_matches_the_old_mib_per_s_quota() {
        let old = |mib: f64, q: u64| (mib * (1u64 << 20) as f64 * q as f64 / 1e9).floor() as u64;
        let cases = [
            (1024000.0, "1073.741824"),
            (65536.0, "68.719476736"),
            (2048.0, "2.147483648"),
            (4000.0, "4.194304"),
            (8000.0, "8.388608"),
        ];
        for (mib, written) in cases {
            let gbps: f64 = written.parse().unwrap();
            assert_eq!(gbps, mib_per_s_to_gbps(mib), "{written}");
            for q in [
                1_000_000u64,
                10_000_000,
                20_000_000,
                500_000_000,
                1_000_000_000,
                7_777_777,
            ] {
                assert_eq!(
                    gbps_to_bytes_per_quantum(gbps, q),
                    old(mib, q),
                    "{written} GB/s, {q} ns"
                );
            }
            assert_eq!(
                gbps_to_bytes_per_s(gbps) as u64,
                (mib * (1u64 << 20) as f64) as u64
            );
        }
        for mib in [600.0, 40.0, 8.0, 20.0, 100.0, 2.0, 1.0, 3.0, 0.5] {
            let g = mib_per_s_to_gbps(mib);
            for q in [10_000_000u64, 500_000_000, 1_000_000_000] {
                assert_eq!(gbps_to_bytes_per_quantum(g, q), old(mib, q), "{mib} MiB/s");
            }
        }
    }
}

#[cfg(test)]
mod live_pages_tests {
    use super::*;

    #[test]
    fn live_pages_stay_in_page_order_through_inserts_and_retains() {
        let mut rng = testutil::Lcg(7);
        let mut live = LivePages::default();
        live.keep_in_order();
        let mut want = std::collections::BTreeSet::new();
        for round in 0..200 {
            for _ in 0..rng.below(40) {
                let p = rng.below(500) as PageIdx;
                if want.insert(p) {
                    live.insert(p);
                }
            }
            if round % 7 == 3 {
                let cut = rng.below(500) as PageIdx;
                live.retain(|&p| p % 3 != cut % 3);
                want.retain(|&p| p % 3 != cut % 3);
            }
            live.settle();
            let mut any_order: Vec<_> = live.iter().collect();
            any_order.sort_unstable();
            assert_eq!(
                any_order,
                want.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
            assert_eq!(
                live.pages(),
                want.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
        }
        assert!(!want.is_empty());
    }
}
