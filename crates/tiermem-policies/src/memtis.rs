//! MEMTIS (Lee et al., SOSP'23).
//!
//! * Tracker: PEBS (`ksampled`) with sample period `sample_period`. MEMTIS adapts the
//!   period to keep ksampled under a CPU quota (`ksampled_soft_cpu_quota`); a pure policy
//!   cannot see CPU time and the tracker is declared once, so the period is fixed here.
//! * Per page, a sampled access count; a 16-bin histogram of pages by `log2(count)`
//!   (bin 0 holds counts 0–1, bin 15 counts ≥ 2^15).
//! * Every `adaptation_period_samples` samples the hot threshold is recomputed
//!   (`__adjust_active_threshold`, mm/htmm_core.c): walk the histogram from bin 15 down,
//!   adding pages while they fit in the default tier's capacity minus the promotion
//!   watermark; the hot threshold is the lowest bin that fitted entirely (never below
//!   `thres_hot`). Outside cooling the threshold only rises. If the hot set fills less than
//!   75 % of that capacity, a warm band one bin below the threshold is kept in the default
//!   tier (`warm_threshold = active_threshold - 1`), else warm = hot.
//! * Every `cooling_period_samples` samples all counts halve (`__cooling`); MEMTIS walks the
//!   LRU lists to do it, we halve at once. At the first adaptation after a cooling the
//!   threshold falls by one if the histogram no longer supports it.
//! * kmigraterd, every `quantum_ms` (500 ms), as `need_toptier_demotion` and
//!   `promotion_available` in mm/htmm_migrater.c: hot pages waiting in the alternate tier
//!   (its active list) make the default tier's thread demote cold pages (bin below the warm
//!   threshold, coldest first) until `used + waiting + promotion watermark` fits the tier —
//!   so MEMTIS moves cold pages out even when the tier still has room (Colloid §5.2: "MEMTIS
//!   proactively places cold pages in the alternate tier even when there is capacity
//!   available in the default tier"); with nothing waiting it demotes only below the
//!   demotion watermark. The alternate tier's thread then promotes waiting hot pages,
//!   hottest first, into the space above the promotion watermark. If the demotion falls
//!   short of what waits, the warm band is dropped (`warm_threshold = active_threshold`).
//! * Not modelled: huge-page splitting and coalescing (MEMTIS's page-size determination);
//!   the simulated page size is fixed by the backend.
//!
//! Defaults: `cosmoss-jigu/memtis`, linux/mm/htmm_sysfs.c: `htmm_sample_period = 199`,
//! `htmm_thres_hot = 1`, `htmm_cooling_period = 2000000`, `htmm_adaptation_period = 100000`,
//! `htmm_promotion_period_in_ms = 500`, `htmm_demotion_period_in_ms = 500`,
//! `htmm_nowarm = 0`; include/linux/htmm.h: `MAX_MIGRATION_RATE_IN_MBPS 2048`;
//! mm/htmm_migrater.c: promotion watermark 3 % and demotion watermark 2 % of the default
//! tier (`get_memcg_promotion_watermark`, `get_memcg_demotion_watermark`; the kernel also
//! clamps them to fixed page counts, which we omit to stay page-size agnostic).

use crate::heat::{
    capacity_pages, free_pages, gbps_to_bytes_per_quantum, in_default_tier, mib_per_s_to_gbps,
    ms_to_ns, Budget, HeatModel, LivePages, SideCursors, FAST, SLOW,
};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{HeatEvent, PageIdx, Plan, Policy, Result, Snapshot, TierId, TrackerSpec};

/// Histogram bins (MEMTIS: 16).
pub const BINS: usize = 16;

/// `policy = "memtis"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemtisConfig {
    /// PEBS sample period (`htmm_sample_period = 199`).
    #[serde(default = "d_sample_period")]
    pub sample_period: u64,
    /// kmigraterd period (`htmm_promotion_period_in_ms = htmm_demotion_period_in_ms = 500`).
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
    /// Halve all counts every this many samples (`htmm_cooling_period = 2000000`).
    #[serde(default = "d_cooling")]
    pub cooling_period_samples: u64,
    /// Recompute the hot threshold every this many samples (`htmm_adaptation_period`).
    #[serde(default = "d_adapt")]
    pub adaptation_period_samples: u64,
    /// Lowest allowed hot bin (`htmm_thres_hot = 1`).
    #[serde(default = "d_thres_hot")]
    pub thres_hot: u32,
    /// Keep a warm band below the hot threshold (`htmm_nowarm = 0`).
    #[serde(default = "d_true")]
    pub warm: bool,
    /// Promotion watermark, as a fraction of the default tier (3 %).
    #[serde(default = "d_promo_wm")]
    pub promotion_watermark: f64,
    /// Demotion watermark, as a fraction of the default tier (2 %).
    #[serde(default = "d_demo_wm")]
    pub demotion_watermark: f64,
    /// Migration limit in GB/s (1e9 bytes/s): `MAX_MIGRATION_RATE_IN_MBPS = 2048` (MiB/s)
    /// = 2048 × 1 048 576 B/s = 2.147483648 GB/s.
    #[serde(default = "d_limit")]
    pub migration_limit_gbps: f64,
}

fn d_sample_period() -> u64 {
    199
}
fn d_quantum_ms() -> f64 {
    500.0
}
fn d_cooling() -> u64 {
    2_000_000
}
fn d_adapt() -> u64 {
    100_000
}
fn d_thres_hot() -> u32 {
    1
}
fn d_true() -> bool {
    true
}
fn d_promo_wm() -> f64 {
    0.03
}
fn d_demo_wm() -> f64 {
    0.02
}
fn d_limit() -> f64 {
    mib_per_s_to_gbps(2048.0) // 2.147483648 GB/s
}

impl Default for MemtisConfig {
    fn default() -> Self {
        MemtisConfig {
            sample_period: d_sample_period(),
            quantum_ms: d_quantum_ms(),
            cooling_period_samples: d_cooling(),
            adaptation_period_samples: d_adapt(),
            thres_hot: d_thres_hot(),
            warm: true,
            promotion_watermark: d_promo_wm(),
            demotion_watermark: d_demo_wm(),
            migration_limit_gbps: d_limit(),
        }
    }
}

impl Validate for MemtisConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if self.sample_period == 0 {
            return Err(invalid(&join(p, "sample_period"), "must be at least 1"));
        }
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 60_000.0)?;
        if self.cooling_period_samples == 0 {
            return Err(invalid(
                &join(p, "cooling_period_samples"),
                "must be at least 1",
            ));
        }
        if self.adaptation_period_samples == 0 {
            return Err(invalid(
                &join(p, "adaptation_period_samples"),
                "must be at least 1",
            ));
        }
        check_range(
            &join(p, "thres_hot"),
            self.thres_hot as f64,
            0.0,
            (BINS - 1) as f64,
        )?;
        check_range(
            &join(p, "promotion_watermark"),
            self.promotion_watermark,
            0.0,
            0.5,
        )?;
        check_range(
            &join(p, "demotion_watermark"),
            self.demotion_watermark,
            0.0,
            0.5,
        )?;
        if self.demotion_watermark > self.promotion_watermark {
            return Err(invalid(
                &join(p, "demotion_watermark"),
                format!(
                    "{} is above promotion_watermark ({}); MEMTIS demotes below the lower mark and refills up to the higher",
                    self.demotion_watermark, self.promotion_watermark
                ),
            ));
        }
        check_range(
            &join(p, "migration_limit_gbps"),
            self.migration_limit_gbps,
            0.0,
            1e9,
        )
    }
}

/// `policy = "memtis"` in the registry ([`crate::REGISTRY`]).
pub static ENTRY: PolicyEntry = PolicyEntry::new::<MemtisConfig>(
    "memtis",
    "MEMTIS (SOSP'23): PEBS samples, a log2 histogram of access counts sets the hot threshold to fit the default tier; cooling halves counts",
    r#"[policy]
policy = "memtis"
sample_period = 199                   # htmm_sample_period
quantum_ms = 500.0                    # htmm_{promotion,demotion}_period_in_ms
cooling_period_samples = 2000000      # htmm_cooling_period
adaptation_period_samples = 100000    # htmm_adaptation_period
thres_hot = 1                         # htmm_thres_hot: lowest hot bin
warm = true                           # !htmm_nowarm
promotion_watermark = 0.03            # get_memcg_promotion_watermark: 3 % of the tier
demotion_watermark = 0.02             # get_memcg_demotion_watermark: 2 %
migration_limit_gbps = 2.147483648   # MAX_MIGRATION_RATE_IN_MBPS: 2048 MiB/s x 1048576 B/MiB
"#,
);

impl PolicyParams for MemtisConfig {
    fn build(&self, _ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(Memtis::new(self.clone()))
    }
    fn heat_model(&self, _ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        Some(Box::new(Memtis::new(self.clone())))
    }
}

/// Histogram bin of a count: floor(log2(count)), 0 for 0 and 1, capped at 15.
pub fn bin_of(count: u32) -> usize {
    // floor(log2(max(count, 1))) without a branch: `count | 1` has the same top bit for
    // count ≥ 2 and is 1 for counts 0 and 1 (a branch here mispredicted on cold pages).
    ((31 - (count | 1).leading_zeros()) as usize).min(BINS - 1)
}

/// Count `n` samples down (no more than are left); true (and restart at `period`) when
/// the count reaches 0.
fn countdown(left: &mut u64, n: u64, period: u64) -> bool {
    *left -= n;
    if *left == 0 {
        *left = period;
        true
    } else {
        false
    }
}

/// False only if counts `old` ≤ `new` share a bin (a test on the sample path, cheaper
/// than two bins): below the last bin, `old | 1` and `new | 1` share their top bit
/// exactly when their xor is below the smaller one.
#[inline]
fn bin_may_change(old: u32, new: u32) -> bool {
    let (o, n) = (old | 1, new | 1);
    o < 1 << (BINS - 1) && (o ^ n) >= o
}

/// MEMTIS's tracker state and page finder.
///
/// A quantum costs what its samples cost, not a pass over every page: `live` holds the
/// pages with a count (cooling and the hot and warm lists read only those), and the
/// default tier's never-counted pages, the coldest of all, are found from a cursor per
/// side (`zero`), lowered by the snapshot's `moved` log and by cooling (reset each
/// quantum without a log).
#[derive(Clone, Debug)]
pub struct Memtis {
    pub cfg: MemtisConfig,
    counts: Vec<u32>,
    live: LivePages,
    /// Samples left until the next cooling and adaptation (the periods of `cfg` at
    /// construction).
    to_cooling: u64,
    to_adaptation: u64,
    zero: SideCursors,
    synced: bool,
    /// Pages per bin (pages never sampled since the last cooling are not counted).
    hist: [u64; BINS],
    total: f64,
    samples: u64,
    /// Hot if bin ≥ `active_threshold`; warm if bin ≥ `warm_threshold`.
    pub active_threshold: u32,
    pub warm_threshold: u32,
    pub coolings: u64,
    /// A cooling happened since the last adaptation.
    cooled: bool,
    /// Default-tier pages usable by hot pages at the last adaptation.
    max_hot_pages: u64,
}

impl Memtis {
    pub fn new(cfg: MemtisConfig) -> Self {
        let t = cfg.thres_hot;
        let (to_cooling, to_adaptation) =
            (cfg.cooling_period_samples, cfg.adaptation_period_samples);
        Memtis {
            cfg,
            counts: Vec::new(),
            live: LivePages::default(),
            to_cooling,
            to_adaptation,
            zero: SideCursors::default(),
            synced: false,
            hist: [0; BINS],
            total: 0.0,
            samples: 0,
            active_threshold: t,
            warm_threshold: t,
            coolings: 0,
            cooled: false,
            max_hot_pages: 0,
        }
    }

    pub fn count(&self, page: PageIdx) -> u32 {
        self.counts.get(page as usize).copied().unwrap_or(0)
    }

    pub fn histogram(&self) -> [u64; BINS] {
        self.hist
    }

    fn bin(&self, page: PageIdx) -> usize {
        bin_of(self.count(page))
    }

    pub fn is_warm(&self, page: PageIdx) -> bool {
        self.bin(page) >= self.warm_threshold as usize
    }

    // `u64::is_multiple_of` needs Rust 1.87; the workspace supports 1.80.
    #[allow(unknown_lints, clippy::manual_is_multiple_of)]
    /// `count` samples of `page`, exactly as that many one after another: the count and
    /// histogram move in one step between the samples that end a cooling or adaptation
    /// period (a bin's loss and gain telescope; the total is a sum of integers).
    fn on_samples(&mut self, page: usize, count: u32, max_hot: u64, placement: &[TierId]) {
        let mut left = count as u64;
        while left > 0 {
            let n = left.min(self.to_cooling).min(self.to_adaptation);
            let c = self.counts[page];
            if c > 0 {
                self.hist[bin_of(c)] -= 1;
            } else {
                self.live.insert(page as PageIdx);
            }
            let c = c.saturating_add(n as u32);
            self.counts[page] = c;
            self.hist[bin_of(c)] += 1;
            self.total += n as u32 as f64; // n ≤ count: a one-instruction conversion
            self.samples += n;
            left -= n;
            // Countdowns to the next multiple of each period (a division per sample cost a
            // tenth of a MEMTIS run).
            let cooling_due = countdown(&mut self.to_cooling, n, self.cfg.cooling_period_samples);
            let adaptation_due = countdown(
                &mut self.to_adaptation,
                n,
                self.cfg.adaptation_period_samples,
            );
            if cooling_due {
                self.cool(placement);
            } else if adaptation_due {
                // The first adaptation after a cooling applies the cooled rule (htmm_core.c:
                // `__cooling` sets `cooled`, `__adjust_active_threshold` consumes it).
                let cooled = std::mem::take(&mut self.cooled);
                self.adjust(max_hot, cooled);
            }
        }
    }

    /// The samples at the head of `events` that end no cooling or adaptation period,
    /// counted as `on_samples` would count them; returns how many events it took (it stops
    /// before the first sample that would end a period, which `on_samples` must take).
    fn count_samples(&mut self, events: &[HeatEvent]) -> usize {
        // Samples taken before the next period end: all but the last of the shorter period.
        let room = self.to_cooling.min(self.to_adaptation) - 1;
        let mut taken = 0u64;
        let mut done = 0;
        for e in events {
            // Not a sample, no sample (`on_samples` of 0 does nothing) or past the pages.
            let (page, count) = match *e {
                HeatEvent::Sample { page, count, .. } if count > 0 => (page, count),
                _ => {
                    done += 1;
                    continue;
                }
            };
            let Some(c) = self.counts.get_mut(page as usize) else {
                done += 1;
                continue;
            };
            if taken + count as u64 > room {
                break;
            }
            let old = *c;
            let new = old.saturating_add(count);
            *c = new;
            if old == 0 || bin_may_change(old, new) {
                if old == 0 {
                    self.live.insert(page);
                } else {
                    self.hist[bin_of(old)] -= 1;
                }
                self.hist[bin_of(new)] += 1;
            }
            taken += count as u64;
            done += 1;
        }
        // Integer sums below 2^53 are exact in f64: one add is the many `on_samples` makes.
        self.total += taken as f64;
        self.samples += taken;
        self.to_cooling -= taken;
        self.to_adaptation -= taken;
        done
    }

    fn cool(&mut self, placement: &[TierId]) {
        self.hist = [0; BINS];
        self.total = 0.0;
        let (counts, hist, total) = (&mut self.counts, &mut self.hist, &mut self.total);
        let zero = &self.zero;
        self.live.retain(|&p| {
            let c = &mut counts[p as usize];
            *c >>= 1;
            if *c > 0 {
                hist[bin_of(*c)] += 1;
                *total += *c as f64;
                true
            } else {
                // Back among the pages without a count: the cursor must not be past it.
                zero.lower(in_default_tier(placement, p), p);
                false
            }
        });
        self.coolings += 1;
        self.cooled = true;
    }

    /// `__adjust_active_threshold`.
    fn adjust(&mut self, max_hot: u64, cooled: bool) {
        let mut nr_active = 0u64;
        let mut idx: i64 = BINS as i64 - 1;
        while idx >= 0 {
            let n = self.hist[idx as usize];
            if nr_active + n > max_hot {
                break;
            }
            nr_active += n;
            idx -= 1;
        }
        if idx != BINS as i64 - 1 {
            idx += 1;
        }
        let idx_hot = (idx.max(0) as u32).max(self.cfg.thres_hot);
        if cooled {
            if idx_hot < self.active_threshold && self.active_threshold > 1 {
                self.active_threshold -= 1;
            }
        } else if idx_hot > self.active_threshold {
            self.active_threshold = idx_hot;
        }
        let need_warm = (nr_active as f64) < max_hot as f64 * 0.75;
        self.warm_threshold = if self.cfg.warm && need_warm {
            self.active_threshold.saturating_sub(1)
        } else {
            self.active_threshold
        };
        self.max_hot_pages = max_hot;
    }

    /// Bring the never-counted cursors up to the snapshot's placement.
    fn sync(&mut self, snap: &Snapshot<'_>) {
        match snap.moved {
            Some(moved) if self.synced => {
                for &p in moved {
                    if self.count(p) == 0 && (p as usize) < self.counts.len() {
                        self.zero.lower(in_default_tier(snap.placement, p), p);
                    }
                }
            }
            _ => self.zero.reset(0),
        }
        self.synced = snap.moved.is_some();
    }

    /// The pages that can have bin `min_bin` or above: the live ones (in no particular
    /// order), or every page when `min_bin` is 0.
    fn pages_from_bin(&self, snap: &Snapshot<'_>, min_bin: usize) -> Vec<PageIdx> {
        if min_bin == 0 {
            return (0..snap.placement.len() as PageIdx).collect();
        }
        self.live.iter().collect()
    }

    fn promo_wm(&self, snap: &Snapshot<'_>) -> u64 {
        (capacity_pages(snap, FAST) as f64 * self.cfg.promotion_watermark).ceil() as u64
    }
    fn demo_wm(&self, snap: &Snapshot<'_>) -> u64 {
        (capacity_pages(snap, FAST) as f64 * self.cfg.demotion_watermark).ceil() as u64
    }

    /// Pages of a tier in bin `min_bin` or above, hottest first (ties: page index).
    fn hottest(&self, snap: &Snapshot<'_>, tier: TierId, min_bin: usize) -> Vec<PageIdx> {
        let fast = tier == FAST;
        let mut v: Vec<(u32, PageIdx)> = self
            .pages_from_bin(snap, min_bin)
            .into_iter()
            .filter(|&p| in_default_tier(snap.placement, p) == fast && self.bin(p) >= min_bin)
            .map(|p| (self.count(p), p))
            .collect();
        v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// The first `n` pages of a tier matching `keep`, coldest first (ties: page index):
    /// the pages without a count in page order (from the side's cursor), then the live
    /// ones by count.
    fn coldest(
        &self,
        snap: &Snapshot<'_>,
        tier: TierId,
        n: usize,
        keep: impl Fn(PageIdx) -> bool,
    ) -> Vec<PageIdx> {
        let fast = tier == FAST;
        let on_side = |p: PageIdx| in_default_tier(snap.placement, p) == fast;
        let mut out = Vec::new();
        let end = self.counts.len().min(snap.placement.len()) as PageIdx;
        if n > 0 {
            let uncounted = |p: PageIdx| self.counts[p as usize] == 0;
            self.zero.scan(fast, end, snap.placement, uncounted, |p| {
                if keep(p) {
                    out.push(p);
                }
                out.len() < n
            });
        }
        if out.len() < n {
            let mut v: Vec<(u32, PageIdx)> = self
                .live
                .iter()
                .filter(|&p| on_side(p) && keep(p))
                .map(|p| (self.count(p), p))
                .collect();
            let k = n - out.len();
            if k < v.len() {
                v.select_nth_unstable(k);
                v.truncate(k);
            }
            v.sort_unstable();
            out.extend(v.into_iter().map(|(_, p)| p));
        }
        out
    }

    /// The default tier's kmigraterd (`need_toptier_demotion` + `demote_node`): the cold
    /// pages (bin below the warm threshold, coldest first) it would demote this quantum —
    /// enough for the hot pages waiting in the alternate tier plus the promotion watermark,
    /// or, with nothing waiting, enough to climb back above the demotion watermark.
    fn demotion_candidates(&mut self, snap: &Snapshot<'_>) -> Vec<PageIdx> {
        let cap = capacity_pages(snap, FAST);
        let used = cap.saturating_sub(free_pages(snap, FAST));
        let active = self.active_threshold as usize;
        let waiting = self
            .pages_from_bin(snap, active)
            .into_iter()
            .filter(|&p| !in_default_tier(snap.placement, p) && self.bin(p) >= active)
            .count() as u64;
        let (demo_wm, promo_wm) = (self.demo_wm(snap), self.promo_wm(snap));
        let fits = if waiting > 0 {
            used + waiting + promo_wm <= cap
        } else {
            used + demo_wm <= cap
        };
        if fits {
            return Vec::new();
        }
        let exceeded = (used + waiting + promo_wm).saturating_sub(cap) as usize;
        let warm = self.warm_threshold as usize;
        let out = self.coldest(snap, FAST, exceeded, |p| self.bin(p) < warm);
        // `demote_node`: demoting less than what waits drops the warm band.
        if self.cfg.warm && waiting.min(exceeded as u64) > out.len() as u64 {
            self.warm_threshold = self.active_threshold;
        }
        out
    }

    /// Both kmigraterd threads in one quantum, sharing the migration limit: each promotion of
    /// a waiting hot page (hottest first) into room above the promotion watermark — room a
    /// demotion makes when the tier is full — then the remaining demotions.
    fn migrate(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let mut budget = Budget::new(HeatModel::migration_limit_bytes(self), snap.page_bytes);
        let victims = self.demotion_candidates(snap);
        let cap = capacity_pages(snap, FAST);
        let used = cap.saturating_sub(free_pages(snap, FAST));
        let mut room = cap.saturating_sub(self.promo_wm(snap)).saturating_sub(used);
        let mut victims = victims.into_iter().peekable();
        let active = self.active_threshold as usize;
        for p in self.hottest(snap, SLOW, active) {
            if room > 0 {
                if !budget.take(1) {
                    break;
                }
                room -= 1;
            } else {
                let Some(&v) = victims.peek() else { break };
                if !budget.take(2) {
                    break;
                }
                victims.next();
                plan.push(v, SLOW);
            }
            plan.push(p, FAST);
        }
        for v in victims {
            if !budget.take(1) {
                break;
            }
            plan.push(v, SLOW);
        }
        plan
    }
}

impl HeatModel for Memtis {
    fn system(&self) -> &'static str {
        "memtis"
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
        if self.counts.len() < snap.page_count() {
            self.counts.resize(snap.page_count(), 0);
        }
        self.sync(snap);
        let max_hot = capacity_pages(snap, FAST).saturating_sub(self.promo_wm(snap));
        // Between two period ends a sample only moves its page's count and bin, so the
        // stretch before the next one is counted in a tight loop (`count_samples`) and
        // `on_samples` takes the sample that ends a period: per sample, the same steps.
        let mut events = snap.events;
        while !events.is_empty() {
            let counted = self.count_samples(events);
            events = &events[counted..];
            if let Some((e, rest)) = events.split_first() {
                if let HeatEvent::Sample { page, count, .. } = *e {
                    if (page as usize) < self.counts.len() {
                        self.on_samples(page as usize, count, max_hot, snap.placement);
                    }
                }
                events = rest;
            }
        }
        self.live.settle();
    }
    fn heat(&self, page: PageIdx) -> f64 {
        self.count(page) as f64
    }
    fn total_heat(&self) -> f64 {
        self.total
    }
    /// 5/4 of the hot count 2^active_threshold: with a Colloid layer's 5 equal bins over
    /// `0..ceiling`, the top bin (≥ 4/5 of the ceiling) is exactly the hot list, which
    /// MEMTIS+Colloid scans (Colloid §4.2).
    fn heat_ceiling(&self) -> f64 {
        (1u64 << self.active_threshold.min(31)) as f64 * 1.25
    }
    fn is_hot(&self, page: PageIdx) -> bool {
        self.bin(page) >= self.active_threshold as usize
    }
    fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx> {
        // `coldest` reads tier 1 as every tier below the default one; a layer asks for one.
        self.coldest(snap, tier, n, |p| snap.placement[p as usize] == tier)
    }
    fn warm_pages(&self) -> Option<&[PageIdx]> {
        // Pages without a count have no heat and are hot only with a bin-0 threshold.
        (self.active_threshold > 0).then(|| self.live.pages())
    }
    fn want_warm_pages(&mut self) {
        self.live.keep_in_order();
    }
    /// MEMTIS+Colloid scans the tiers' hot lists only (Colloid §4.2).
    fn colloid_hot_list_only(&self) -> bool {
        true
    }
    /// Colloid runs on the alternate tier's kmigraterd (§4.2): it promotes into the space
    /// above the promotion watermark, which the default tier's thread keeps free.
    fn promotion_room(&self, snap: &Snapshot<'_>) -> Option<u64> {
        let cap = capacity_pages(snap, FAST);
        let used = cap.saturating_sub(free_pages(snap, FAST));
        Some(cap.saturating_sub(self.promo_wm(snap)).saturating_sub(used))
    }
    /// The default tier's kmigraterd alone, unmodified under a layer (Colloid §4.2): hot
    /// pages the layer leaves in the alternate tier still count as waiting, which is why
    /// MEMTIS+Colloid ends with the whole working set there at 3× (§5.3).
    fn capacity_moves(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let mut budget = Budget::new(HeatModel::migration_limit_bytes(self), snap.page_bytes);
        for v in self.demotion_candidates(snap) {
            if !budget.take(1) {
                break;
            }
            plan.push(v, SLOW);
        }
        plan
    }
}

impl Policy for Memtis {
    fn name(&self) -> String {
        "memtis".into()
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
    use crate::heat::testutil::{moved_to, Lcg, World, LOG_MODES, LOG_TOGGLE_ROUNDS};

    fn small(adapt: u64) -> MemtisConfig {
        MemtisConfig {
            adaptation_period_samples: adapt,
            ..MemtisConfig::default()
        }
    }

    #[test]
    fn a_bin_said_unchanged_is_unchanged() {
        let olds = (0..5000u32)
            .chain((1 << 14) - 40..(1 << 15) + 40)
            .chain([u32::MAX - 3]);
        let mut said_unchanged = 0;
        for old in olds {
            for step in (0..300u32).chain([1000, 1 << 15, 1 << 20, u32::MAX]) {
                let new = old.saturating_add(step);
                if !bin_may_change(old, new) {
                    said_unchanged += 1;
                    assert_eq!(bin_of(old), bin_of(new), "{old} -> {new}");
                }
            }
        }
        assert!(
            said_unchanged > 1_000_000,
            "the test is cheap for most samples"
        );
    }

    #[test]
    fn ingesting_a_quantum_counts_as_sample_by_sample() {
        // Short periods so the stream crosses many cooling and adaptation ends; counts of
        // 1-3 and a few events past the page space and of no sample.
        let cfg = MemtisConfig {
            adaptation_period_samples: 37,
            cooling_period_samples: 101,
            ..MemtisConfig::default()
        };
        let mut w = World::new(200, 50, 60, 400);
        let mut rng = Lcg(9);
        for i in 0..5000u64 {
            let page = if i % 97 == 0 {
                10_000
            } else if rng.below(10) < 9 {
                rng.below(40) as PageIdx
            } else {
                rng.below(200) as PageIdx
            };
            let count = if i % 211 == 0 {
                0
            } else {
                1 + rng.below(3) as u32
            };
            w.events.push(HeatEvent::Sample {
                page,
                write: false,
                count,
            });
        }
        let mut whole = Memtis::new(cfg.clone());
        whole.ingest(&w.snap());
        // The reference: every event through `on_samples`, one at a time.
        let mut single = Memtis::new(cfg);
        let snap = w.snap();
        single.counts.resize(snap.page_count(), 0);
        single.sync(&snap);
        let max_hot = capacity_pages(&snap, FAST).saturating_sub(single.promo_wm(&snap));
        for e in snap.events {
            if let HeatEvent::Sample { page, count, .. } = *e {
                if (page as usize) < single.counts.len() {
                    single.on_samples(page as usize, count, max_hot, snap.placement);
                }
            }
        }
        single.live.settle();
        assert!(whole.coolings > 10, "the stream crosses coolings");
        assert_eq!(whole.counts, single.counts);
        assert_eq!(whole.hist, single.hist);
        assert_eq!(whole.total, single.total);
        assert_eq!(whole.samples, single.samples);
        assert_eq!(whole.coolings, single.coolings);
        assert_eq!(whole.active_threshold, single.active_threshold);
        assert_eq!(whole.warm_threshold, single.warm_threshold);
        assert_eq!(
            (whole.to_cooling, whole.to_adaptation),
            (single.to_cooling, single.to_adaptation)
        );
        let mut a: Vec<PageIdx> = whole.live.iter().collect();
        let mut b: Vec<PageIdx> = single.live.iter().collect();
        assert_eq!(a, b, "live pages in the same order");
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a.len(), whole.counts.iter().filter(|&&c| c > 0).count());
    }

    #[test]
    fn defaults_match_memtis_source() {
        let m = Memtis::new(MemtisConfig::default());
        assert_eq!(
            Policy::tracker(&m),
            TrackerSpec::Pebs { sample_period: 199 }
        );
        assert_eq!(Policy::quantum_ns(&m), 500_000_000);
        assert_eq!(
            Policy::migration_limit_bytes(&m),
            Some(1 << 30),
            "2048 MiB/s for 0.5 s"
        );
        assert_eq!((m.active_threshold, m.warm_threshold), (1, 1));
    }

    #[test]
    fn watermarks_must_be_ordered() {
        let bad = MemtisConfig {
            demotion_watermark: 0.05,
            ..MemtisConfig::default()
        };
        let e = bad.validate("policy").unwrap_err().to_string();
        assert!(
            e.contains("policy.demotion_watermark") && e.contains("promotion_watermark"),
            "{e}"
        );
        assert!(MemtisConfig::default().validate("policy").is_ok());
    }

    #[test]
    fn bins_are_log2() {
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 1 << 15, u32::MAX].map(bin_of),
            [0, 0, 1, 1, 2, 2, 3, 15, 15]
        );
    }

    /// Pages 0..50 get 64 samples, 50..150 get 8, 150..400 get 1; fast tier 100 pages.
    fn skewed_world() -> (World, Vec<u32>) {
        let mut w = World::new(400, 0, 100, 400);
        let mut order = Vec::new();
        for round in 0..64 {
            for p in 0..50u32 {
                order.push(p);
            }
            if round < 8 {
                order.extend(50..150u32);
            }
            if round < 1 {
                order.extend(150..400u32);
            }
        }
        for &p in &order {
            w.events.push(HeatEvent::Sample {
                page: p,
                write: false,
                count: 1,
            });
        }
        (w, order)
    }

    #[test]
    fn threshold_makes_the_hot_set_fit_the_default_tier() {
        let (w, order) = skewed_world();
        // Adapt once, after all samples.
        let mut m = Memtis::new(small(order.len() as u64));
        let plan = m.decide(&w.snap());
        // max hot = 100 − 3 % = 97 pages. Bin 6 (50 pages) fits; bin 3 (100 more) does not:
        // the threshold is bin 4, so the hot set is exactly pages 0..50.
        assert_eq!(m.active_threshold, 4);
        assert_eq!(m.warm_threshold, 3, "50 < 75 % of 97: keep a warm band");
        assert_eq!(moved_to(&plan, FAST), (0..50).collect::<Vec<_>>());
        let hot: Vec<u32> = (0..400).filter(|&p| m.is_hot(p)).collect();
        assert_eq!(hot, (0..50).collect::<Vec<_>>());
        // A smaller default tier (40 pages, 38 usable) cannot hold bin 6: threshold above it.
        let mut w2 = World::new(400, 0, 40, 400);
        w2.events = w.events.clone();
        let mut m2 = Memtis::new(small(order.len() as u64));
        let plan = m2.decide(&w2.snap());
        assert_eq!(m2.active_threshold, 7);
        assert!(moved_to(&plan, FAST).is_empty());
    }

    #[test]
    fn hot_set_never_exceeds_the_default_tier() {
        let mut x: u64 = 99;
        for fast in [10u64, 50, 200] {
            let mut w = World::new(500, 0, fast, 500);
            let mut m = Memtis::new(small(1000));
            for _ in 0..20 {
                for _ in 0..1000 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Zipf-ish: square a uniform draw.
                    let u = (x >> 33) % 500;
                    w.events.push(HeatEvent::Sample {
                        page: (u * u / 500) as u32,
                        write: false,
                        count: 1,
                    });
                }
                let plan = m.decide(&w.snap());
                w.apply(&plan);
                let hot = (0..500).filter(|&p| m.is_hot(p)).count() as u64;
                let max_hot = fast - (fast as f64 * 0.03).ceil() as u64;
                assert!(hot <= max_hot, "fast {fast}: {hot} hot pages > {max_hot}");
            }
            // The hottest pages ended up in the default tier.
            assert_eq!(w.placement[0], FAST, "fast {fast}");
        }
    }

    #[test]
    fn cooling_halves_counts_and_lowers_threshold() {
        let mut w = World::new(10, 0, 100, 100);
        let mut m = Memtis::new(MemtisConfig {
            adaptation_period_samples: 64,
            cooling_period_samples: 1_000_000,
            ..MemtisConfig::default()
        });
        for _ in 0..64 {
            w.events.push(HeatEvent::Sample {
                page: 0,
                write: false,
                count: 1,
            });
        }
        m.decide(&w.snap());
        assert_eq!(m.count(0), 64);
        assert_eq!(
            m.active_threshold, 1,
            "everything fits: the threshold stays at thres_hot"
        );
        // Force a cooling after 64 samples; the next adaptation (sample 96) applies it.
        let mut m = Memtis::new(MemtisConfig {
            adaptation_period_samples: 96,
            cooling_period_samples: 64,
            ..MemtisConfig::default()
        });
        m.active_threshold = 5;
        m.decide(&w.snap());
        assert_eq!(m.coolings, 1);
        assert_eq!(m.count(0), 32);
        assert_eq!(m.histogram()[5], 1);
        assert_eq!(
            m.active_threshold, 5,
            "the threshold waits for the next adaptation"
        );
        w.events.truncate(32);
        m.decide(&w.snap());
        assert_eq!(m.count(0), 64);
        assert_eq!(
            m.active_threshold, 4,
            "after a cooling the threshold steps down by one"
        );
    }

    #[test]
    fn demotes_for_waiting_hot_pages_then_promotes_them() {
        // Fast (10 pages, watermarks 1 page each) holds pages 0..10; page 0 is hot, the rest
        // cold. Slow page 20 is hot: it waits.
        let mut w = World::new(30, 10, 10, 30);
        let mut m = Memtis::new(small(1_000_000));
        m.warm_threshold = 1;
        for _ in 0..4 {
            w.events.push(HeatEvent::Sample {
                page: 0,
                write: false,
                count: 1,
            });
            w.events.push(HeatEvent::Sample {
                page: 20,
                write: false,
                count: 1,
            });
        }
        let plan = m.decide(&w.snap());
        // used 10 + waiting 1 + promotion watermark 1 exceeds 10 by 2: the two coldest pages
        // leave (not the hot page 0), then page 20 fills the room above the watermark.
        let moves: Vec<(u32, TierId)> = plan
            .moves
            .iter()
            .map(|mv| (mv.range.start, mv.to))
            .collect();
        assert_eq!(moves, vec![(1, SLOW), (20, FAST), (2, SLOW)]);
        w.apply(&plan);
        // Nothing waits and the tier is above its demotion watermark: the remaining cold
        // pages stay although MEMTIS calls them cold.
        let plan = m.decide(&w.snap());
        assert!(plan.moves.is_empty(), "{plan:?}");
        // A full tier with nothing waiting demotes down to the promotion watermark only.
        let w = World::new(30, 10, 10, 30);
        let mut m = Memtis::new(small(1_000_000));
        let plan = m.decide(&w.snap());
        assert_eq!(moved_to(&plan, SLOW), vec![0]);
    }

    #[test]
    fn waiting_hot_pages_demote_cold_pages_even_with_room() {
        // 100-page default tier, half full of never-sampled pages; 60 hot pages wait in the
        // alternate tier. used 50 + waiting 60 + watermark 3 exceeds 100 by 13 (Colloid §5.2:
        // "even when there is capacity available in the default tier").
        let mut w = World::new(300, 50, 100, 300);
        for p in 100..160u32 {
            for _ in 0..4 {
                w.events.push(HeatEvent::Sample {
                    page: p,
                    write: false,
                    count: 1,
                });
            }
        }
        let mut m = Memtis::new(small(1_000_000));
        m.warm_threshold = 1;
        m.ingest(&w.snap());
        let plan = m.capacity_moves(&w.snap());
        assert_eq!(moved_to(&plan, SLOW), (0..13).collect::<Vec<_>>());
        assert!(
            moved_to(&plan, FAST).is_empty(),
            "capacity moves never promote"
        );
        // Within the migration limit (40 MiB/s · 0.5 s = 10 pages of 2 MiB).
        let mut m = Memtis::new(MemtisConfig {
            migration_limit_gbps: mib_per_s_to_gbps(40.0),
            ..small(1_000_000)
        });
        m.warm_threshold = 1;
        m.ingest(&w.snap());
        assert_eq!(m.capacity_moves(&w.snap()).pages(), 10);
    }

    #[test]
    fn warm_band_dropped_when_demotion_falls_short() {
        // The default tier is full of warm pages (bin 1 = warm, hot is bin 2): nothing can be
        // demoted for the waiting hot page, so the warm band goes.
        let mut w = World::new(20, 10, 10, 20);
        for p in 0..10u32 {
            for _ in 0..2 {
                w.events.push(HeatEvent::Sample {
                    page: p,
                    write: false,
                    count: 1,
                });
            }
        }
        for _ in 0..4 {
            w.events.push(HeatEvent::Sample {
                page: 15,
                write: false,
                count: 1,
            });
        }
        let mut m = Memtis::new(small(1_000_000));
        m.active_threshold = 2;
        m.warm_threshold = 1;
        let plan = m.decide(&w.snap());
        assert!(plan.moves.is_empty(), "{plan:?}");
        assert_eq!(m.warm_threshold, 2);
        w.events.clear();
        let plan = m.decide(&w.snap());
        assert_eq!(
            moved_to(&plan, SLOW).len(),
            2,
            "warm pages are now demotable"
        );
    }

    #[test]
    fn respects_migration_limit() {
        let mut w = World::new(100, 0, 100, 100);
        // 8 MiB/s · 0.5 s = 4 MiB = 2 pages of 2 MiB.
        let mut m = Memtis::new(MemtisConfig {
            migration_limit_gbps: mib_per_s_to_gbps(8.0),
            ..small(1_000_000)
        });
        for p in 0..10 {
            for _ in 0..2 {
                w.events.push(HeatEvent::Sample {
                    page: p,
                    write: false,
                    count: 1,
                });
            }
        }
        let plan = m.decide(&w.snap());
        assert_eq!(plan.pages(), 2);
    }

    #[test]
    fn deterministic() {
        fn run() -> Vec<Plan> {
            let mut w = World::new(200, 50, 60, 200);
            let mut m = Memtis::new(small(500));
            let mut x: u64 = 3;
            let mut out = Vec::new();
            for _ in 0..30 {
                for _ in 0..300 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let u = (x >> 33) % 200;
                    w.events.push(HeatEvent::Sample {
                        page: (u * u / 200) as u32,
                        write: false,
                        count: 1,
                    });
                }
                let plan = m.decide(&w.snap());
                w.apply(&plan);
                out.push(plan);
            }
            out
        }
        let a = run();
        assert_eq!(a, run());
        assert!(a.iter().any(|p| !p.moves.is_empty()));
    }

    /// A sample event with a count is that many single samples: the same counts,
    /// histogram, thresholds, coolings and plans, with counts crossing the cooling and
    /// adaptation periods (short ones here) inside one event.
    #[test]
    fn a_counted_sample_is_that_many_single_samples() {
        let cfg = MemtisConfig {
            cooling_period_samples: 31,
            adaptation_period_samples: 7,
            ..MemtisConfig::default()
        };
        let (mut counted, mut single) = (Memtis::new(cfg.clone()), Memtis::new(cfg));
        let (mut wc, mut ws) = (World::new(150, 50, 60, 150), World::new(150, 50, 60, 150));
        let mut rng = Lcg(9);
        let mut rand = |m: u64| rng.below(m);
        let mut moved = 0;
        for round in 0..120 {
            for _ in 0..12 {
                let page = rand(150) as u32;
                let page = page * page / 150;
                let count = 1 + rand(12) as u32;
                wc.events.push(HeatEvent::Sample {
                    page,
                    write: false,
                    count,
                });
                for _ in 0..count {
                    ws.events.push(HeatEvent::Sample {
                        page,
                        write: false,
                        count: 1,
                    });
                }
            }
            let (pc, ps) = (counted.decide(&wc.snap()), single.decide(&ws.snap()));
            assert_eq!(pc, ps, "round {round}");
            assert_eq!(counted.counts, single.counts, "round {round}");
            assert_eq!(counted.hist, single.hist, "round {round}");
            assert_eq!(
                (counted.active_threshold, counted.coolings, counted.samples),
                (single.active_threshold, single.coolings, single.samples)
            );
            moved += pc.pages();
            wc.apply(&pc);
            ws.apply(&ps);
        }
        assert!(
            counted.coolings > 10 && moved > 0,
            "{} coolings",
            counted.coolings
        );
    }

    #[test]
    fn incremental_lists_match_a_sort_with_and_without_the_move_log() {
        for (log, toggled) in LOG_MODES {
            let mut w = World::new(150, 50, 60, 150);
            w.log_moves(log);
            let mut m = Memtis::new(MemtisConfig {
                cooling_period_samples: 97,
                adaptation_period_samples: 23,
                ..MemtisConfig::default()
            });
            let mut rng = Lcg(5);
            let mut rand = |m: u64| rng.below(m);
            let mut moves = 0;
            for round in 0..150 {
                for _ in 0..20 {
                    let page = rand(150) as u32;
                    let page = page * page / 150; // low pages hotter
                    w.events.push(HeatEvent::Sample {
                        page,
                        write: false,
                        count: 1,
                    });
                }
                let mut plan = m.decide(&w.snap());
                moves += plan.pages();
                for _ in 0..(round % 3) {
                    let p = rand(150) as PageIdx;
                    plan.push(p, if rand(2) == 0 { FAST } else { SLOW });
                }
                // The third pass switches the log off and on (the rebuild at its return).
                if toggled && round % LOG_TOGGLE_ROUNDS == 0 {
                    w.log_moves(w.moved.is_none());
                }
                w.apply(&plan);
                let snap = w.snap();
                m.sync(&snap);
                let by_count = |fast: bool, hottest: bool| {
                    let mut v: Vec<(u32, PageIdx)> = (0..150)
                        .filter(|&p| (w.placement[p as usize] == FAST) == fast)
                        .map(|p| (m.count(p), p))
                        .collect();
                    if hottest {
                        v.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                    } else {
                        v.sort_unstable();
                    }
                    v.into_iter().map(|(_, p)| p).collect::<Vec<PageIdx>>()
                };
                for fast in [true, false] {
                    let tier = if fast { FAST } else { SLOW };
                    let cold = by_count(fast, false);
                    for n in [1, 7, cold.len(), usize::MAX] {
                        assert_eq!(
                            m.coldest(&snap, tier, n, |_| true),
                            cold[..n.min(cold.len())].to_vec(),
                            "coldest: log {log}, round {round}, fast {fast}, n {n}"
                        );
                    }
                    for min_bin in [1, 2] {
                        let hot: Vec<PageIdx> = by_count(fast, true)
                            .into_iter()
                            .filter(|&p| m.bin(p) >= min_bin)
                            .collect();
                        assert_eq!(
                            m.hottest(&snap, tier, min_bin),
                            hot,
                            "hottest: log {log}, round {round}"
                        );
                    }
                }
            }
            assert!(
                m.coolings > 5 && moves > 0,
                "coolings {} moves {moves}",
                m.coolings
            );
        }
    }
}
