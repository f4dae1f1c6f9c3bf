//! `policy = "tierscape_waterfall"`: TierScape's waterfall model (Kumar et al., "Taming
//! Server Memory TCO with Multiple Software-Defined Compressed Tiers", §5.1 and §6.3).
//!
//! * Regions of `region_size` (2 MiB, §6.2 "Regions"); a region's hotness is the sum of the
//!   PEBS samples of its pages in the last profile window (§6.2: the daemon samples
//!   `MEM_INST_RETIRED.ALL_LOADS/ALL_STORES` with PEBS; §7.1 "Hotness profile").
//! * At the end of each profile window (§5.1, Figure 4):
//!   1. a region any of whose pages faulted out of a compressed tier in the window was
//!      accessed: the whole region goes back to DRAM (tier 0) and restarts its journey
//!      (§6.3: "A region restarts its journey from DRAM when it has been faulted back");
//!   2. every other region in a compressed tier `T_y` drops one tier to `T_{y+1}` (the last
//!      tier keeps it);
//!   3. DRAM regions below the hotness threshold `H_th` go to the first compressed tier
//!      `T_1`.
//! * `H_th` is absolute (`threshold = 100`: regions with fewer samples in the window go) or
//!   a preset, a percentile of the non-zero region hotness of the window as TierScape's
//!   daemon computes it (IntelLabs/tierscape `sk_daemon/convolve.py`: `np.percentile` over
//!   the regions with samples; `mapping_waterfall.cpp`: regions below it are cold). The
//!   percentiles are the shares of §7.1 ("around 15-20% (conservative), 40-50% (moderate),
//!   and 70-80% (aggressive) of the application's data pages"): 17.5, 45 and 75. Regions
//!   without a sample are below any of them. Compressed regions take no samples (their
//!   pages are not mapped), so each window the percentile is of what is left in DRAM: the
//!   coldest of it keeps going until faults bring regions back, as in TierScape's code.
//!   A window without any sample moves nothing (no profile, no decision).
//! * Tiers are the snapshot's order: tier 0 is DRAM, tiers 1..N the compressed tiers from
//!   fastest to best TCO saving (§5: "the tiers are ordered from low latency to high
//!   latency").
//!
//! Region helpers shared with `tierscape_analytical` live here too.

use crate::heat::ms_to_ns;
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{
    HeatEvent, Move, Needs, PageRange, Plan, Policy, Result, Size, Snapshot, TierId, TrackerSpec,
};

/// The smallest page any backend has.
const MIN_PAGE_BYTES: u64 = 4096;

/// A hotness threshold: an absolute sample count or a preset percentile of the sampled
/// regions' hotness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    /// Regions with fewer PEBS samples than this in a window are cold.
    Absolute(f64),
    /// "conservative", "moderate" or "aggressive" (§7.1).
    Preset(String),
}

/// The presets of §7.1 and the percentile of non-zero region hotness each stands for (the
/// middle of the paper's ranges of pages covered: 15–20 %, 40–50 %, 70–80 %).
pub const PRESETS: &[(&str, f64)] = &[
    ("conservative", 0.175),
    ("moderate", 0.45),
    ("aggressive", 0.75),
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierscapeWaterfallConfig {
    /// Profile window (§7.1: 120 s, as in the 2-Tier system it compares with).
    #[serde(default = "d_window_ms")]
    pub profile_window_ms: f64,
    /// Region size (§6.2: 2 MB regions): a power of two, at least one page.
    #[serde(default = "d_region")]
    pub region_size: Size,
    /// `H_th`: a preset ("conservative", "moderate", "aggressive") or a sample count.
    #[serde(default = "d_threshold")]
    pub threshold: Threshold,
    /// PEBS sample period. The paper does not give one (§6.2); HeMem's `SAMPLE_PERIOD
    /// 19997` (hemem src/pebs.h), the period of this project's other PEBS system.
    #[serde(default = "d_sample_period")]
    pub sample_period: u64,
}

pub(crate) fn d_window_ms() -> f64 {
    120_000.0
}
pub(crate) fn d_region() -> Size {
    Size::text("2MiB")
}
fn d_threshold() -> Threshold {
    Threshold::Preset("moderate".into())
}
pub(crate) fn d_sample_period() -> u64 {
    19997
}

impl Default for TierscapeWaterfallConfig {
    fn default() -> Self {
        TierscapeWaterfallConfig {
            profile_window_ms: d_window_ms(),
            region_size: d_region(),
            threshold: d_threshold(),
            sample_period: d_sample_period(),
        }
    }
}

/// Checks shared by both TierScape policies.
pub(crate) fn validate_common(
    p: &str,
    window_ms: f64,
    region: &Size,
    sample_period: u64,
) -> Result<()> {
    check_range(
        &join(p, "profile_window_ms"),
        window_ms,
        0.001,
        86_400_000.0,
    )?;
    let path = join(p, "region_size");
    let b = region.bytes(&path)?;
    if Move::granularity_pages(b, MIN_PAGE_BYTES).is_none() || b > 1 << 30 {
        return Err(invalid(
            &path,
            format!("{b} bytes is not a power of two from 4KiB to 1GiB; write e.g. \"2MiB\""),
        ));
    }
    if sample_period == 0 || sample_period > 1 << 40 {
        return Err(invalid(
            &join(p, "sample_period"),
            format!("{sample_period}: give 1 to 2^40 accesses per sample"),
        ));
    }
    Ok(())
}

impl Validate for TierscapeWaterfallConfig {
    fn validate(&self, p: &str) -> Result<()> {
        validate_common(
            p,
            self.profile_window_ms,
            &self.region_size,
            self.sample_period,
        )?;
        let path = join(p, "threshold");
        match &self.threshold {
            Threshold::Absolute(h) => check_range(&path, *h, 0.0, 1e15),
            Threshold::Preset(name) => {
                if PRESETS.iter().any(|(n, _)| n == name) {
                    Ok(())
                } else {
                    Err(invalid(
                        &path,
                        format!("`{name}` is not a preset; use \"conservative\", \"moderate\", \"aggressive\" or a sample count"),
                    ))
                }
            }
        }
    }
}

pub static ENTRY: PolicyEntry = PolicyEntry::new::<TierscapeWaterfallConfig>(
    "tierscape_waterfall",
    "TierScape waterfall (Kumar et al., Intel Labs, §5.1): PEBS samples per 2 MiB region; cold DRAM regions go to the first compressed tier, untouched ones drop a tier each window, faulted ones return to DRAM",
    r#"[policy]
policy = "tierscape_waterfall"
profile_window_ms = 120000.0          # profile window (TierScape §7.1: 120 s)
region_size = "2MiB"                  # regions (§6.2: 2 MB)
threshold = "moderate"                # H_th: "conservative"/"moderate"/"aggressive" (the 17.5/45/75th percentile of the sampled regions' hotness, §7.1's ~15-20/40-50/70-80 % of pages) or a sample count
sample_period = 19997                 # PEBS period; the paper gives none, HeMem's SAMPLE_PERIOD (hemem src/pebs.h)
"#,
);

impl PolicyParams for TierscapeWaterfallConfig {
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(TierscapeWaterfall::new(self.clone(), ctx))
    }
}

/// Pages per region for a region size and the backend's page size (at least one page).
pub(crate) fn pages_per_region(region: &Size, ctx: BuildContext) -> u32 {
    let page = ctx.page_bytes.unwrap_or(MIN_PAGE_BYTES).max(1);
    let bytes = region.bytes("policy.region_size").unwrap_or(2 << 20);
    Move::granularity_pages(bytes.max(page), page).unwrap_or(1)
}

/// The regions of a page space: region `r` is pages `[r·n, min((r+1)·n, pages))`. Pages
/// that hold no data ([`TierId::NONE`] in the placement: the runtime's holes and untouched
/// pages) belong to no tier: they are not counted in a region's size, in the share of pages
/// a threshold covers, or in the TCO.
#[derive(Clone, Debug)]
pub struct Regions {
    pub pages_per_region: u32,
    pub pages: usize,
    /// Pages holding data, per region.
    present: Vec<u32>,
}

impl Regions {
    pub fn new(pages_per_region: u32, placement: &[TierId]) -> Regions {
        let n = pages_per_region.max(1) as usize;
        Regions {
            pages_per_region: n as u32,
            pages: placement.len(),
            present: placement
                .chunks(n)
                .map(|c| c.iter().filter(|&&t| t != TierId::NONE).count() as u32)
                .collect(),
        }
    }
    pub fn count(&self) -> usize {
        self.pages.div_ceil(self.pages_per_region as usize)
    }
    pub fn region_of(&self, page: u32) -> usize {
        (page / self.pages_per_region) as usize
    }
    /// Pages of region `r` (the last one may be short).
    pub fn range(&self, r: usize) -> std::ops::Range<usize> {
        let n = self.pages_per_region as usize;
        r * n..((r + 1) * n).min(self.pages)
    }
    /// Pages of region `r` that hold data.
    pub fn len(&self, r: usize) -> u64 {
        self.present[r] as u64
    }
    /// Pages that hold data, in all regions.
    pub fn present_pages(&self) -> u64 {
        self.present.iter().map(|&n| n as u64).sum()
    }
    /// Sum of PEBS samples per region (and, with `faults`, of compressed-tier faults, each an
    /// observed access).
    pub fn heat(&self, events: &[HeatEvent], faults: bool) -> Vec<f64> {
        let mut h = vec![0.0; self.count()];
        for e in events {
            match *e {
                HeatEvent::Sample { page, count, .. } if (page as usize) < self.pages => {
                    h[self.region_of(page)] += count as f64
                }
                HeatEvent::TierFault { page } if faults && (page as usize) < self.pages => {
                    h[self.region_of(page)] += 1.0
                }
                _ => {}
            }
        }
        h
    }
    /// Regions with a compressed-tier fault among `events`.
    pub fn faulted(&self, events: &[HeatEvent]) -> Vec<bool> {
        let mut f = vec![false; self.count()];
        for e in events {
            if let HeatEvent::TierFault { page } = *e {
                if (page as usize) < self.pages {
                    f[self.region_of(page)] = true;
                }
            }
        }
        f
    }
    /// The deepest tier holding a page of region `r` (where the policy last sent it: pages
    /// that faulted back or did not compress stay in tier 0).
    pub fn deepest(&self, placement: &[TierId], r: usize) -> TierId {
        placement[self.range(r)]
            .iter()
            .copied()
            .filter(|&t| t != TierId::NONE)
            .max()
            .unwrap_or(TierId::DEFAULT)
    }
    /// Whether every page of region `r` that holds data is in `tier`.
    pub fn all_in(&self, placement: &[TierId], r: usize, tier: TierId) -> bool {
        placement[self.range(r)]
            .iter()
            .all(|&t| t == tier || t == TierId::NONE)
    }
    /// Move region `r` to `to`: one aligned move for a whole region, naturally aligned
    /// power-of-two pieces for a short last region.
    pub fn push(&self, plan: &mut Plan, r: usize, to: TierId) {
        let range = self.range(r);
        let (mut start, end) = (range.start as u32, range.end as u32);
        while start < end {
            let align = if start == 0 {
                u32::MAX
            } else {
                1 << start.trailing_zeros()
            };
            let mut len = align.min(self.pages_per_region);
            while len > end - start {
                len /= 2;
            }
            plan.push_range(PageRange { start, len }, to);
            start += len;
        }
    }
}

pub struct TierscapeWaterfall {
    cfg: TierscapeWaterfallConfig,
    pages_per_region: u32,
    /// `H_th` of the last window, in samples (a preset's is the hotness of the warmest region
    /// it sent to `T_1`); for inspection.
    pub last_threshold: f64,
}

impl TierscapeWaterfall {
    pub fn new(cfg: TierscapeWaterfallConfig, ctx: BuildContext) -> Self {
        TierscapeWaterfall {
            pages_per_region: pages_per_region(&cfg.region_size, ctx),
            cfg,
            last_threshold: 0.0,
        }
    }
}

impl Policy for TierscapeWaterfall {
    fn name(&self) -> String {
        ENTRY.name.into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::Pebs {
            sample_period: self.cfg.sample_period,
        }
    }
    fn needs(&self) -> Needs {
        Needs {
            granularity_bytes: self.pages_per_region as u64 * MIN_PAGE_BYTES,
            ..Needs::tracking(&self.tracker())
        }
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.profile_window_ms)
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let n_tiers = snap.tiers.len().min(snap.tier_specs.len());
        if n_tiers < 2 {
            return plan;
        }
        let last = TierId((n_tiers - 1) as u8);
        let regions = Regions::new(self.pages_per_region, snap.placement);
        let heat = regions.heat(snap.events, false);
        let faulted = regions.faulted(snap.events);
        let (mut back, mut down, mut dram) = (Vec::new(), Vec::new(), Vec::new());
        for (r, &was_faulted) in faulted.iter().enumerate() {
            if regions.len(r) == 0 {
                continue;
            }
            let deepest = regions.deepest(snap.placement, r);
            if deepest == TierId::DEFAULT {
                dram.push(r);
            } else if was_faulted {
                back.push(r);
            } else {
                if deepest < last {
                    down.push((r, TierId(deepest.0 + 1)));
                } else if !regions.all_in(snap.placement, r, deepest) {
                    // Pages left behind (did not fit or compress) follow the region.
                    down.push((r, deepest));
                }
            }
        }
        // Faulted regions first (their faults cost the application), then the waterfall.
        for &r in &back {
            regions.push(&mut plan, r, TierId::DEFAULT);
        }
        for &(r, to) in &down {
            regions.push(&mut plan, r, to);
        }
        let first = TierId(1);
        match &self.cfg.threshold {
            Threshold::Absolute(h_th) => {
                self.last_threshold = *h_th;
                for &r in &dram {
                    if heat[r] < *h_th {
                        regions.push(&mut plan, r, first);
                    }
                }
            }
            Threshold::Preset(name) => {
                let share = PRESETS
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0.45, |(_, s)| *s);
                let mut sampled: Vec<f64> = (0..heat.len())
                    .filter(|&r| regions.len(r) > 0 && heat[r] > 0.0)
                    .map(|r| heat[r])
                    .collect();
                sampled.sort_by(f64::total_cmp);
                if let Some(h_th) = percentile(&sampled, share) {
                    self.last_threshold = h_th;
                    for &r in &dram {
                        if heat[r] < h_th {
                            regions.push(&mut plan, r, first);
                        }
                    }
                }
            }
        }
        plan
    }
}

/// The `q` quantile (0..=1) of ascending `sorted`, interpolated linearly between the two
/// nearest ranks (numpy's default `np.percentile`, which TierScape's daemon uses); `None`
/// when empty.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = q.clamp(0.0, 1.0) * last as f64;
    let (lo, frac) = (rank.floor() as usize, rank.fract());
    let hi = (lo + 1).min(last);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::World;
    use tiermem_core::{TierKind, TierTelemetry};

    /// `regions` regions of 4 pages (4 KiB pages, 16 KiB regions), all in DRAM, and
    /// `compressed` compressed tiers after it.
    fn world(regions: usize, compressed: usize) -> World {
        let pages = regions * 4;
        let mut w = World::new(pages, pages, pages as u64, pages as u64);
        let mut z = w.specs[1].clone();
        z.kind = TierKind::Compressed {
            codec: "lz4".into(),
            allocator: "zsmalloc".into(),
            backing: "dram".into(),
        };
        w.specs.truncate(1);
        w.tiers.truncate(1);
        for i in 0..compressed {
            let mut s = z.clone();
            s.name = format!("z{i}");
            w.specs.push(s);
            w.tiers.push(TierTelemetry {
                capacity_bytes: w.tiers[0].capacity_bytes,
                ..Default::default()
            });
        }
        w.recount();
        w
    }

    fn policy(threshold: toml::Value) -> Box<dyn Policy> {
        let mut t = toml::Table::new();
        t.insert("region_size".into(), "16KiB".into());
        t.insert("threshold".into(), threshold);
        let cfg = crate::PolicyConfig::from_name("tierscape_waterfall", t).unwrap();
        crate::build_with(
            &cfg,
            None,
            BuildContext {
                page_bytes: Some(4096),
            },
        )
        .unwrap()
    }

    fn region_tiers(w: &World) -> Vec<u8> {
        w.placement.chunks(4).map(|c| c[0].0).collect()
    }

    #[test]
    fn cold_regions_waterfall_one_tier_per_window_and_faulted_ones_return() {
        let mut w = world(4, 3);
        let mut p = policy(toml::Value::Integer(2));
        assert_eq!(
            p.tracker(),
            TrackerSpec::Pebs {
                sample_period: 19997
            }
        );
        // Region 0 is hot (3 samples), the others cold.
        w.reads(0, 2);
        w.reads(1, 1);
        w.reads(4, 1);
        let plan = p.decide(&w.snap());
        assert!(plan
            .moves
            .iter()
            .all(|m| m.range.len == 4 && m.is_aligned()));
        w.apply(&plan);
        assert_eq!(region_tiers(&w), [0, 1, 1, 1]);
        // Next window: no accesses; the compressed regions drop one tier each window.
        w.reads(0, 5);
        w.apply(&p.decide(&w.snap()));
        assert_eq!(region_tiers(&w), [0, 2, 2, 2]);
        // Region 2 is accessed: one of its pages faults back to DRAM (the backend does that),
        // and the policy brings the whole region back.
        w.placement[9] = TierId(0);
        w.recount();
        w.events.push(HeatEvent::TierFault { page: 9 });
        w.reads(0, 5);
        w.apply(&p.decide(&w.snap()));
        assert_eq!(region_tiers(&w), [0, 3, 0, 3]);
        // The last tier keeps its regions; region 2 starts again from T1 when cold.
        w.reads(0, 5);
        w.apply(&p.decide(&w.snap()));
        assert_eq!(region_tiers(&w), [0, 3, 1, 3]);
    }

    #[test]
    fn presets_are_percentiles_of_the_sampled_regions_hotness() {
        // Region r has r samples: region 0 none, regions 1..19 one to 19. The percentile of
        // [1..19] (numpy's linear interpolation) is 1 + q·18: 4.15, 9.1, 14.5.
        for (name, expect) in [
            ("conservative", 5usize),
            ("moderate", 10),
            ("aggressive", 15),
        ] {
            let mut w = world(20, 2);
            for r in 0..20u32 {
                w.reads(r * 4, r as usize);
            }
            let mut p = policy(toml::Value::String(name.into()));
            w.apply(&p.decide(&w.snap()));
            let t = region_tiers(&w);
            let n = t.iter().filter(|&&x| x == 1).count();
            assert_eq!(n, expect, "{name}: {t:?}");
            assert!(t[..n].iter().all(|&x| x == 1), "the coldest go: {t:?}");
        }
        // Next window the compressed regions take no samples (their pages are not mapped):
        // the percentile is of what is left in DRAM, 5..19 for "conservative": 5 + 0.175·14
        // = 7.45, so regions 5, 6 and 7 go too (TierScape's daemon behaves so).
        let mut w = world(20, 2);
        for r in 0..20u32 {
            w.reads(r * 4, r as usize);
        }
        let mut p = policy(toml::Value::String("conservative".into()));
        w.apply(&p.decide(&w.snap()));
        for r in 5..20u32 {
            w.reads(r * 4, r as usize);
        }
        w.apply(&p.decide(&w.snap()));
        let t = region_tiers(&w);
        assert_eq!(t[..9], [2, 2, 2, 2, 2, 1, 1, 1, 0], "{t:?}");
        assert!(t[8..].iter().all(|&x| x == 0), "{t:?}");
    }

    #[test]
    fn unsampled_regions_go_whatever_the_preset_and_no_samples_move_nothing() {
        // Half the regions are never sampled: all of them go even at "conservative"
        // (they are below every percentile), with the coldest sampled ones.
        let mut w = world(20, 1);
        for r in 10..20u32 {
            w.reads(r * 4, r as usize);
        }
        let mut p = policy(toml::Value::String("conservative".into()));
        w.apply(&p.decide(&w.snap()));
        let t = region_tiers(&w);
        // Samples 10..19: 10 + 0.175·9 = 11.575: regions 10 and 11 go.
        assert!(t[..12].iter().all(|&x| x == 1), "{t:?}");
        assert!(t[12..].iter().all(|&x| x == 0), "{t:?}");
        // A window without a single sample: no profile, no move.
        let mut w = world(20, 1);
        let mut p = policy(toml::Value::String("aggressive".into()));
        assert!(p.decide(&w.snap()).moves.is_empty());
        w.apply(&p.decide(&w.snap()));
        assert!(region_tiers(&w).iter().all(|&x| x == 0));
    }

    #[test]
    fn pages_without_data_count_for_no_tier() {
        // The runtime's placement: half of region 1 and all of regions 4..8 hold no data.
        let mut w = world(8, 1);
        for p in (6..8).chain(16..32) {
            w.placement[p] = TierId::NONE;
        }
        w.recount();
        // Regions 1, 2, 3 have 1, 2, 3 samples: H_th = 1 + 0.75·2 = 2.5 (the empty regions
        // take no part); regions 0, 1, 2 go, and only their pages with data move.
        for r in 1..4u32 {
            w.reads(r * 4, r as usize);
        }
        let mut p = policy(toml::Value::String("aggressive".into()));
        w.apply(&p.decide(&w.snap()));
        assert_eq!(region_tiers(&w)[..4], [1, 1, 1, 0]);
        assert!(w.placement[6..8].iter().all(|&t| t == TierId::NONE));
        assert!(w.placement[16..].iter().all(|&t| t == TierId::NONE));
    }

    #[test]
    fn a_short_last_region_moves_in_aligned_pieces() {
        let r = Regions::new(8, &[TierId(0); 15]);
        let mut plan = Plan::default();
        r.push(&mut plan, 1, TierId(1));
        let got: Vec<(u32, u32)> = plan
            .moves
            .iter()
            .map(|m| (m.range.start, m.range.len))
            .collect();
        assert_eq!(got, [(8, 4), (12, 2), (14, 1)]);
        assert!(plan.moves.iter().all(|m| m.is_aligned()));
    }

    #[test]
    fn bad_fields_are_named() {
        for (field, value) in [
            ("threshold", toml::Value::String("lukewarm".into())),
            ("threshold", toml::Value::Float(-1.0)),
            ("region_size", toml::Value::String("3MiB".into())),
            ("profile_window_ms", toml::Value::Float(0.0)),
            ("sample_period", toml::Value::Integer(0)),
        ] {
            let mut t = toml::Table::new();
            t.insert(field.into(), value);
            let e = crate::PolicyConfig::from_name("tierscape_waterfall", t)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
