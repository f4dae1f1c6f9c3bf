//! `policy = "tierscape_analytical"`: TierScape's analytical model (Kumar et al., "Taming
//! Server Memory TCO with Multiple Software-Defined Compressed Tiers", §5.2 and §6.3).
//!
//! At the end of each profile window it places every region (2 MiB, §6.2) in one tier by
//! solving Eq. 2 with Eq. 8 and Eq. 12:
//!
//! ```text
//! minimize    Σ_y (Σ_{r in y} Hot_r) · Lat_y                       (Eq. 8, k_y = 1)
//! subject to  TCO = Σ_y Σ_{r in y} pages_r · USD_y / C_y  ≤  TCO_min + α · MTS   (Eq. 2, 12)
//! ```
//!
//! * `Hot_r`: the mean of the region's PEBS samples (plus its compressed-tier faults, each
//!   an observed access) over the last `history_windows` = 4 windows (§7.1: "the average
//!   hotness value of the region for the past 4 profiling windows is directly fed into the
//!   model").
//! * `Lat_y`: the tier's fault cost, `unloaded_latency_ns` of its spec (the simulator sets a
//!   compressed tier's to fault + decompression); DRAM's is 0 (Eq. 6 counts only faults
//!   from compressed tiers).
//! * `USD_y`: `cost_per_gb` of the tier (for a compressed tier, of the media backing its
//!   pool); `C_y`: the tier's compression ratio as measured now (logical bytes placed there
//!   over its pool's bytes); while it holds less than a region, the ratio it last measured,
//!   or `assumed_compression_ratio` if it never held one ([`tiermem_core::tco`]). (Falling
//!   back to the assumed ratio whenever a tier empties made placements flip between two
//!   tiers every window: the emptied tier looked better than the measured full one.)
//! * Probing: one assumed ratio for every unmeasured tier cannot tell a dense codec from a
//!   fast one, so the solution, once some tier is measured, never tries the others (on the
//!   runtime α = 0.1 put every cold region in zsmalloc-lz4 and none in zsmalloc-deflate).
//!   So each window the coldest full region the solution compresses goes instead to each
//!   compressed tier that never held a region, one region per tier: the next window
//!   measures that tier's ratio on the program's own pages. The TierScape daemon knows its
//!   tiers' ratios from characterization (§4.2, §6.3); here the program's pages tell.
//! * α ∈ [0, 1] (§5.2.1): 1 keeps everything in DRAM (no saving, no slowdown), 0 asks for the
//!   maximum saving.
//!
//! The paper solves it as an ILP with OR-Tools (§6.3). Here HiGHS does: the exact MIP
//! (binary x_{r,y}) up to `exact_mip_max_regions` regions; above that, the LP relaxation
//! over groups of regions of equal hotness (hotness quantiles past [`MAX_GROUPS`] distinct
//! values), rounded. With one knapsack row besides the per-group assignment rows, a basic
//! optimal solution splits at most one group between tiers; rounding moves regions only to
//! cheaper tiers (the feasible side of the TCO bound). A tiebreak of 1e-6 of the hottest
//! region's hotness is added to every region's weight, so that among placements of equal
//! modelled overhead the one keeping more in DRAM wins (α = 1 then keeps every region in DRAM, as
//! §5.2.1 says, instead of scattering cold regions at random). If the solver fails or runs
//! out of time the placement stays as it is and `solver_failures` counts it.

use crate::heat::ms_to_ns;
use crate::registry::{PolicyEntry, PolicyParams};
use crate::tierscape_waterfall::{
    d_region, d_sample_period, d_window_ms, pages_per_region, validate_common, Regions,
};
use crate::BuildContext;
use highs::{ColProblem, HighsModelStatus, HighsSolutionStatus, Sense};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use tiermem_core::config::{check_range, join, Validate};
use tiermem_core::tco::TcoModel;
use tiermem_core::{Needs, Plan, Policy, Result, Size, Snapshot, TierId, TierKind, TrackerSpec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierscapeAnalyticalConfig {
    /// The knob α of Eq. 2 (§5.2.1), in [0, 1]. §7.1 evaluates 0.9, 0.5 and 0.1.
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Profile window (§7.1: 120 s).
    #[serde(default = "d_window_ms")]
    pub profile_window_ms: f64,
    /// Region size (§6.2: 2 MB).
    #[serde(default = "d_region")]
    pub region_size: Size,
    /// Windows averaged into a region's hotness (§7.1: the past 4).
    #[serde(default = "d_history")]
    pub history_windows: u32,
    /// PEBS sample period; the paper gives none (§6.2), HeMem's `SAMPLE_PERIOD 19997`.
    #[serde(default = "d_sample_period")]
    pub sample_period: u64,
    /// `C_y` of a compressed tier that holds less than a region, before it can be measured.
    /// §4.2: zbud with lz4 restricts the ratio to 2.
    #[serde(default = "d_ratio")]
    pub assumed_compression_ratio: f64,
    /// Up to this many regions the exact MIP is solved; above, the LP relaxation is
    /// rounded (the 50 000 × 6 instance must be decided within 1 s: issue 13).
    #[serde(default = "d_exact")]
    pub exact_mip_max_regions: u64,
    /// HiGHS's time limit per window, seconds (issue 13: decide within 1 s).
    #[serde(default = "d_time_limit")]
    pub solver_time_limit_s: f64,
}

fn d_alpha() -> f64 {
    0.5
}
fn d_history() -> u32 {
    4
}
fn d_ratio() -> f64 {
    2.0
}
fn d_exact() -> u64 {
    256
}
fn d_time_limit() -> f64 {
    1.0
}

impl Default for TierscapeAnalyticalConfig {
    fn default() -> Self {
        TierscapeAnalyticalConfig {
            alpha: d_alpha(),
            profile_window_ms: d_window_ms(),
            region_size: d_region(),
            history_windows: d_history(),
            sample_period: d_sample_period(),
            assumed_compression_ratio: d_ratio(),
            exact_mip_max_regions: d_exact(),
            solver_time_limit_s: d_time_limit(),
        }
    }
}

impl Validate for TierscapeAnalyticalConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(&join(p, "alpha"), self.alpha, 0.0, 1.0)?;
        validate_common(
            p,
            self.profile_window_ms,
            &self.region_size,
            self.sample_period,
        )?;
        check_range(
            &join(p, "history_windows"),
            self.history_windows as f64,
            1.0,
            1000.0,
        )?;
        check_range(
            &join(p, "assumed_compression_ratio"),
            self.assumed_compression_ratio,
            1.0,
            1000.0,
        )?;
        check_range(
            &join(p, "exact_mip_max_regions"),
            self.exact_mip_max_regions as f64,
            0.0,
            1e6,
        )?;
        check_range(
            &join(p, "solver_time_limit_s"),
            self.solver_time_limit_s,
            0.001,
            3600.0,
        )
    }
}

pub static ENTRY: PolicyEntry = PolicyEntry::new::<TierscapeAnalyticalConfig>(
    "tierscape_analytical",
    "TierScape analytical (Kumar et al., Intel Labs, §5.2): PEBS samples per 2 MiB region; each window HiGHS places regions to minimise modelled fault time under TCO <= TCO_min + alpha*MTS",
    r#"[policy]
policy = "tierscape_analytical"
alpha = 0.5                           # knob of Eq. 2 (TierScape §5.2.1; §7.1 evaluates 0.9, 0.5, 0.1)
profile_window_ms = 120000.0          # profile window (§7.1: 120 s)
region_size = "2MiB"                  # regions (§6.2: 2 MB)
history_windows = 4                   # hotness = mean of the past 4 windows (§7.1)
sample_period = 19997                 # PEBS period; the paper gives none, HeMem's SAMPLE_PERIOD (hemem src/pebs.h)
assumed_compression_ratio = 2.0       # C_y until measurable (§4.2: zbud + lz4 restrict the ratio to 2)
exact_mip_max_regions = 256           # exact MIP up to this many regions, LP relaxation + rounding above
solver_time_limit_s = 1.0             # HiGHS time limit per window (issue 13: decide within 1 s)
"#,
);

impl PolicyParams for TierscapeAnalyticalConfig {
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(TierscapeAnalytical::new(self.clone(), ctx))
    }
}

/// Most groups the LP relaxation keeps (issue 13: 50 000 regions × 6 tiers decided within
/// 1 s). Regions of equal hotness share a group exactly; beyond this many distinct values,
/// groups are hotness quantiles.
pub const MAX_GROUPS: usize = 4096;

/// One placement problem: regions with a weight (hotness) and a size, tiers with a cost per
/// unit of size and a latency per unit of weight, and a bound on the total cost.
#[derive(Clone, Debug)]
pub struct Instance {
    /// `Hot_r`.
    pub hot: Vec<f64>,
    /// Pages of each region.
    pub pages: Vec<f64>,
    /// Effective cost of a page in each tier (`USD_y / C_y`, any unit).
    pub cost: Vec<f64>,
    /// `Lat_y` (tier 0, DRAM, is 0).
    pub lat: Vec<f64>,
    /// Bound on `Σ_r pages_r · cost_{tier(r)}`.
    pub budget: f64,
}

/// How to solve an [`Instance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Binary x_{r,y}: the exact ILP.
    ExactMip,
    /// The LP relaxation; the split region goes to its cheaper tier.
    LpRounded,
}

impl Instance {
    /// `Σ_r Hot_r · Lat_{tier(r)}` (Eq. 8).
    pub fn overhead(&self, tiers: &[usize]) -> f64 {
        tiers
            .iter()
            .enumerate()
            .map(|(r, &y)| self.hot[r] * self.lat[y])
            .sum()
    }
    /// `Σ_r pages_r · cost_{tier(r)}` (Eq. 12).
    pub fn tco(&self, tiers: &[usize]) -> f64 {
        tiers
            .iter()
            .enumerate()
            .map(|(r, &y)| self.pages[r] * self.cost[y])
            .sum()
    }
    fn feasible(&self, tiers: &[usize]) -> bool {
        self.tco(tiers) <= self.budget * (1.0 + 1e-9) + 1e-9
    }

    /// Tiers no other tier beats: a tier at least as costly and as slow as another (and no
    /// better in either) is never needed, in the ILP or its relaxation, since every region's
    /// cost and overhead scale with the tier's by the same region factors.
    fn useful_tiers(&self) -> Vec<usize> {
        let n = self.cost.len();
        (0..n)
            .filter(|&y| {
                !(0..n).any(|z| {
                    z != y
                        && self.cost[z] <= self.cost[y]
                        && self.lat[z] <= self.lat[y]
                        && (self.cost[z] < self.cost[y] || self.lat[z] < self.lat[y] || z < y)
                })
            })
            .collect()
    }

    /// The LP relaxation over hotness groups, and its rounding.
    ///
    /// Regions are sorted by hotness (hottest first) and grouped: regions of equal hotness
    /// and size form one group (an exact reformulation: they are interchangeable). If that
    /// leaves more than [`MAX_GROUPS`] groups, consecutive regions are bucketed into
    /// [`MAX_GROUPS`] groups of equal count, each modelled at its mean hotness (the only
    /// approximation; it cannot make the result infeasible, see below). Columns `x_{g,y} ∈
    /// [0, 1]`: the share of group `g` in tier `y`; rows: `Σ_y x_{g,y} = 1` per group and the
    /// TCO bound. With that one knapsack row a basic optimum splits at most one group
    /// between tiers. Rounding: in every group, `floor(x_{g,y} · n_g)` regions go to each
    /// tier but the cheapest of its support, which takes the rest, hottest regions to the
    /// fastest tiers. Rounding only moves regions to a cheaper tier (the feasible side of the
    /// bound), and hottest-first gives no more overhead than the group's mean models.
    fn solve_grouped_lp(&self, time_limit_s: f64) -> std::result::Result<Vec<usize>, String> {
        let r_n = self.hot.len();
        let tiers = self.useful_tiers();
        let k_n = tiers.len();
        let mut order: Vec<usize> = (0..r_n).collect();
        order.sort_by(|&a, &b| {
            self.hot[b]
                .total_cmp(&self.hot[a])
                .then(self.pages[b].total_cmp(&self.pages[a]))
                .then(a.cmp(&b))
        });
        // Group boundaries in `order`.
        let mut starts: Vec<usize> = (0..r_n)
            .filter(|&j| {
                j == 0
                    || self.hot[order[j]] != self.hot[order[j - 1]]
                    || self.pages[order[j]] != self.pages[order[j - 1]]
            })
            .collect();
        if starts.len() > MAX_GROUPS {
            let per = r_n.div_ceil(MAX_GROUPS);
            starts = (0..r_n).step_by(per).collect();
        }
        starts.push(r_n);
        let groups: Vec<&[usize]> = starts.windows(2).map(|w| &order[w[0]..w[1]]).collect();
        let hmax = self.hot.iter().cloned().fold(0.0, f64::max).max(1e-12);
        let lmax = self.lat.iter().cloned().fold(0.0, f64::max).max(1e-12);
        let cref = self.cost[0].max(1e-12);
        let mut pb = ColProblem::default();
        let rows: Vec<_> = groups.iter().map(|_| pb.add_row(1.0..=1.0)).collect();
        let budget_row = pb.add_row(..=self.budget / cref);
        for (g, &row) in groups.iter().zip(&rows) {
            let weight: f64 = g.iter().map(|&r| self.hot[r] / hmax + 1e-6).sum();
            let pages: f64 = g.iter().map(|&r| self.pages[r]).sum();
            for &y in &tiers {
                let factors = [(row, 1.0), (budget_row, pages * self.cost[y] / cref)];
                pb.add_column(weight * self.lat[y] / lmax, 0.0..=1.0, factors);
            }
        }
        let mut model = quiet_single_threaded(pb.optimise(Sense::Minimise));
        let _ = model.try_set_option("time_limit", time_limit_s);
        let _ = model.try_set_option("solver", "simplex");
        let solved = model
            .try_solve()
            .map_err(|s| format!("HiGHS failed: {s:?}"))?;
        if solved.status() != HighsModelStatus::Optimal {
            return Err(format!("HiGHS: {:?}", solved.status()));
        }
        let x = solved.get_solution();
        let x = x.columns();
        let mut out = vec![0usize; r_n];
        let mut by_lat: Vec<usize> = (0..k_n).collect();
        by_lat.sort_by(|&a, &b| self.lat[tiers[a]].total_cmp(&self.lat[tiers[b]]));
        for (gi, g) in groups.iter().enumerate() {
            let xs = &x[gi * k_n..(gi + 1) * k_n];
            let n = g.len();
            let cheapest = (0..k_n)
                .filter(|&j| xs[j] > 1e-9)
                .min_by(|&a, &b| self.cost[tiers[a]].total_cmp(&self.cost[tiers[b]]))
                .unwrap_or(by_lat[k_n - 1]);
            let mut next = 0usize;
            for &j in &by_lat {
                if j == cheapest {
                    continue;
                }
                let take = ((xs[j] * n as f64 + 1e-6).floor() as usize).min(n - next);
                for &r in &g[next..next + take] {
                    out[r] = tiers[j];
                }
                next += take;
            }
            for &r in &g[next..] {
                out[r] = tiers[cheapest];
            }
        }
        if !self.feasible(&out) {
            return Err(format!(
                "rounded placement over the TCO bound ({} > {})",
                self.tco(&out),
                self.budget
            ));
        }
        Ok(out)
    }

    /// The tier of each region, or why there is none.
    pub fn solve(
        &self,
        method: Method,
        time_limit_s: f64,
    ) -> std::result::Result<Vec<usize>, String> {
        let r_n = self.hot.len();
        if r_n == 0 {
            return Ok(Vec::new());
        }
        if method == Method::LpRounded {
            return self.solve_grouped_lp(time_limit_s);
        }
        let tiers = self.useful_tiers();
        // Scale: weights to the hottest region (plus the DRAM tiebreak), costs to DRAM's.
        let hmax = self.hot.iter().cloned().fold(0.0, f64::max).max(1e-12);
        let lmax = self.lat.iter().cloned().fold(0.0, f64::max).max(1e-12);
        let cref = self.cost[0].max(1e-12);
        let mut pb = ColProblem::default();
        let rows: Vec<_> = (0..r_n).map(|_| pb.add_row(1.0..=1.0)).collect();
        let budget_row = pb.add_row(..=self.budget / cref);
        for (r, &row) in rows.iter().enumerate() {
            let w = self.hot[r] / hmax + 1e-6;
            for &y in &tiers {
                let obj = w * self.lat[y] / lmax;
                let factors = [
                    (row, 1.0),
                    (budget_row, self.pages[r] * self.cost[y] / cref),
                ];
                pb.add_column_with_integrality(obj, 0.0..=1.0, factors, method == Method::ExactMip);
            }
        }
        let mut model = quiet_single_threaded(pb.optimise(Sense::Minimise));
        let _ = model.try_set_option("time_limit", time_limit_s);
        if method == Method::LpRounded {
            // A basic (vertex) solution: at most one split region.
            let _ = model.try_set_option("solver", "simplex");
        } else {
            let _ = model.try_set_option("mip_rel_gap", 1e-6);
        }
        let solved = model
            .try_solve()
            .map_err(|s| format!("HiGHS failed: {s:?}"))?;
        let status = solved.status();
        let usable = match status {
            HighsModelStatus::Optimal => true,
            HighsModelStatus::ReachedTimeLimit | HighsModelStatus::ReachedIterationLimit => {
                method == Method::ExactMip
                    && solved.primal_solution_status() == HighsSolutionStatus::Feasible
            }
            _ => false,
        };
        if !usable {
            return Err(format!("HiGHS: {status:?}"));
        }
        let x = solved.get_solution();
        let x = x.columns();
        let k = tiers.len();
        let mut out = Vec::with_capacity(r_n);
        for r in 0..r_n {
            let xs = &x[r * k..(r + 1) * k];
            let (best, &v) = xs
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
                .unwrap_or((0, &1.0));
            let y = if v >= 1.0 - 1e-6 {
                tiers[best]
            } else {
                // Split: the cheapest tier it is partly in (the feasible side of the bound).
                (0..k)
                    .filter(|&j| xs[j] > 1e-9)
                    .map(|j| tiers[j])
                    .min_by(|&a, &b| self.cost[a].total_cmp(&self.cost[b]))
                    .unwrap_or(tiers[best])
            };
            out.push(y);
        }
        if !self.feasible(&out) {
            return Err(format!(
                "rounded placement over the TCO bound ({} > {})",
                self.tco(&out),
                self.budget
            ));
        }
        Ok(out)
    }
}

pub struct TierscapeAnalytical {
    cfg: TierscapeAnalyticalConfig,
    pages_per_region: u32,
    history: VecDeque<Vec<f64>>,
    /// Windows whose solve failed or timed out (the placement was kept).
    pub solver_failures: u64,
    /// Windows solved.
    pub solves: u64,
    /// The modelled overhead (Eq. 8, ns) and TCO bound of the last solved window.
    pub last_overhead_ns: f64,
    /// Per tier, the compression ratio it last measured holding at least a region.
    measured_ratio: Vec<Option<f64>>,
}

impl TierscapeAnalytical {
    /// Sends, for each compressed tier whose ratio was never measured, the coldest full
    /// region `target` puts in a compressed tier there instead (see "Probing").
    fn probe_unmeasured(&self, target: &mut [usize], inst: &Instance, regions: &Regions) {
        let unmeasured: Vec<usize> = (1..self.measured_ratio.len())
            .filter(|&y| self.measured_ratio[y].is_none())
            .collect();
        if unmeasured.is_empty() {
            return;
        }
        let mut cold: Vec<usize> = (0..target.len())
            .filter(|&r| target[r] >= 1 && regions.len(r) == self.pages_per_region as u64)
            .collect();
        cold.sort_by(|&a, &b| inst.hot[a].total_cmp(&inst.hot[b]).then(a.cmp(&b)));
        for (y, r) in unmeasured.into_iter().zip(cold) {
            target[r] = y;
        }
    }

    pub fn new(cfg: TierscapeAnalyticalConfig, ctx: BuildContext) -> Self {
        TierscapeAnalytical {
            pages_per_region: pages_per_region(&cfg.region_size, ctx),
            cfg,
            history: VecDeque::new(),
            solver_failures: 0,
            solves: 0,
            last_overhead_ns: 0.0,
            measured_ratio: Vec::new(),
        }
    }

    /// This window's instance: mean hotness, measured or assumed ratios, the α bound.
    fn instance(&mut self, snap: &Snapshot<'_>, regions: &Regions) -> Option<Instance> {
        let n = snap.tiers.len().min(snap.tier_specs.len());
        let mut logical = vec![0u64; n];
        for t in snap.placement {
            if t.index() < n {
                logical[t.index()] += 1;
            }
        }
        let region_bytes = self.pages_per_region as u64 * snap.page_bytes;
        self.measured_ratio.resize(n, None);
        for ((pages, tier), measured) in logical
            .iter()
            .zip(snap.tiers)
            .zip(self.measured_ratio.iter_mut())
        {
            let bytes = pages * snap.page_bytes;
            if bytes >= region_bytes && tier.used_bytes > 0 {
                *measured = Some((bytes as f64 / tier.used_bytes as f64).clamp(1.0, 1000.0));
            }
        }
        let ratio = |y: usize| self.measured_ratio[y].unwrap_or(self.cfg.assumed_compression_ratio);
        let model = TcoModel::from_specs(&snap.tier_specs[..n], ratio).ok()?;
        let total_pages = regions.present_pages();
        let cost = model.effective_costs();
        let min = cost[model.cheapest_tier()];
        // Eq. 2's bound, TCO_min + α·MTS (Eq. 1, 9, 10), in pages × effective cost.
        let budget = total_pages as f64 * (min + self.cfg.alpha * (cost[0] - min));
        let hot: Vec<f64> = (0..regions.count())
            .map(|r| {
                self.history
                    .iter()
                    .map(|h| h.get(r).copied().unwrap_or(0.0))
                    .sum::<f64>()
                    / self.history.len().max(1) as f64
            })
            .collect();
        Some(Instance {
            hot,
            pages: (0..regions.count())
                .map(|r| regions.len(r) as f64)
                .collect(),
            cost,
            lat: (0..n)
                .map(|y| {
                    if y == 0 {
                        0.0
                    } else {
                        snap.tier_specs[y].unloaded_latency_ns
                    }
                })
                .collect(),
            budget,
        })
    }
}

impl Policy for TierscapeAnalytical {
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
            granularity_bytes: self.pages_per_region as u64 * 4096,
            ..Needs::tracking(&self.tracker())
        }
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.profile_window_ms)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("solves", self.solves),
            ("solver_failures", self.solver_failures),
        ]
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let regions = Regions::new(self.pages_per_region, snap.placement);
        self.history.push_back(regions.heat(snap.events, true));
        while self.history.len() > self.cfg.history_windows as usize {
            self.history.pop_front();
        }
        if snap.tiers.len().min(snap.tier_specs.len()) < 2 || regions.count() == 0 {
            return plan;
        }
        let Some(inst) = self.instance(snap, &regions) else {
            self.solver_failures += 1;
            return plan;
        };
        let method = if regions.count() as u64 <= self.cfg.exact_mip_max_regions {
            Method::ExactMip
        } else {
            Method::LpRounded
        };
        let target = match inst.solve(method, self.cfg.solver_time_limit_s) {
            Ok(t) => t,
            Err(_) => {
                self.solver_failures += 1;
                return plan;
            }
        };
        self.solves += 1;
        let mut target = target;
        self.probe_unmeasured(&mut target, &inst, &regions);
        self.last_overhead_ns = inst.overhead(&target);
        // Promotions first (they cut faults), then the moves to cheaper tiers.
        let mut down = Vec::new();
        for (r, &y) in target.iter().enumerate() {
            let to = TierId(y as u8);
            if regions.all_in(snap.placement, r, to) {
                continue;
            }
            if to < regions.deepest(snap.placement, r) {
                regions.push(&mut plan, r, to);
            } else {
                down.push((r, to));
            }
        }
        for (r, to) in down {
            regions.push(&mut plan, r, to);
        }
        plan
    }
}

/// A model that prints nothing and solves on the calling thread alone. On the runtime the
/// solver runs on tiermem's manager thread inside the program: HiGHS's worker threads
/// (created on the first solve, `threads` = the core count by default) would be program
/// threads to the preload, allocating from the program's allocator what the manager thread
/// frees into tiermem's own ("free(): invalid pointer": memcached aborted under
/// `tierscape_analytical`). One thread also keeps the simulator's solves deterministic.
fn quiet_single_threaded(mut model: highs::Model) -> highs::Model {
    model.make_quiet();
    let _ = model.try_set_option("threads", 1);
    model
}

/// Whether a tier is compressed (for callers building instances from specs).
pub fn is_compressed(kind: &TierKind) -> bool {
    matches!(kind, TierKind::Compressed { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DRAM + 5 compressed tiers shaped like TierScape's Table 2 / Figure 3: latency rising,
    /// effective cost falling (cost per GB of the media over the compression ratio).
    fn tiers() -> (Vec<f64>, Vec<f64>) {
        // T1 zbud/lz4/DRAM (ratio 2), T2 zbud/lz4/Optane (2, 1/3 the cost), T3
        // zsmalloc/lz4/Optane (3), T4 zsmalloc/lzo/DRAM (3.2; dearer and slower than T2 and
        // T3: dominated), T5 zsmalloc/deflate/Optane (4).
        let cost = vec![1.0, 0.5, 1.0 / 6.0, 1.0 / 9.0, 1.0 / 3.2, 1.0 / 12.0];
        let lat = vec![0.0, 4_700.0, 6_000.0, 8_000.0, 13_000.0, 30_000.0];
        (cost, lat)
    }

    fn instance(hot: Vec<f64>, alpha: f64) -> Instance {
        let (cost, lat) = tiers();
        let pages = vec![512.0; hot.len()];
        let total: f64 = pages.iter().sum();
        let min = cost.iter().cloned().fold(f64::INFINITY, f64::min);
        let budget = total * min + alpha * total * (cost[0] - min);
        Instance {
            hot,
            pages,
            cost,
            lat,
            budget,
        }
    }

    fn hotness(n: usize, seed: u64) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                if rng.gen_bool(0.3) {
                    0.0
                } else {
                    rng.gen_range(0.0..100.0f64).powi(2)
                }
            })
            .collect()
    }

    fn brute_force(inst: &Instance) -> f64 {
        let (r, k) = (inst.hot.len(), inst.cost.len());
        let mut best = f64::INFINITY;
        let mut tiers = vec![0usize; r];
        let combos = k.pow(r as u32);
        for mut c in 0..combos {
            for t in tiers.iter_mut() {
                *t = c % k;
                c /= k;
            }
            if inst.feasible(&tiers) {
                best = best.min(inst.overhead(&tiers));
            }
        }
        best
    }

    const ALPHAS: [f64; 5] = [0.0, 0.1, 0.5, 0.9, 1.0];

    #[test]
    fn respects_the_tco_bound_for_every_alpha() {
        for method in [Method::ExactMip, Method::LpRounded] {
            let n = if method == Method::ExactMip { 40 } else { 2000 };
            for alpha in ALPHAS {
                let inst = instance(hotness(n, 7), alpha);
                let t = inst.solve(method, 10.0).unwrap();
                assert!(
                    inst.tco(&t) <= inst.budget * (1.0 + 1e-9),
                    "{method:?} α={alpha}: {} > {}",
                    inst.tco(&t),
                    inst.budget
                );
            }
        }
    }

    #[test]
    fn within_one_percent_of_brute_force_on_eight_regions_and_six_tiers() {
        for seed in 0..4 {
            for alpha in ALPHAS {
                let inst = instance(hotness(8, seed), alpha);
                let best = brute_force(&inst);
                for method in [Method::ExactMip, Method::LpRounded] {
                    let got = inst.overhead(&inst.solve(method, 10.0).unwrap());
                    if method == Method::ExactMip {
                        assert!(
                            got <= best * 1.01 + 1e-6,
                            "seed {seed} α={alpha}: {got} vs brute force {best}"
                        );
                    }
                    assert!(
                        got + 1e-6 >= best,
                        "{method:?} beat brute force: {got} < {best}"
                    );
                }
            }
        }
    }

    #[test]
    fn alpha_one_keeps_everything_in_dram() {
        for method in [Method::ExactMip, Method::LpRounded] {
            let inst = instance(hotness(50, 3), 1.0);
            let t = inst.solve(method, 10.0).unwrap();
            assert!(t.iter().all(|&y| y == 0), "{method:?}: {t:?}");
            assert_eq!(inst.overhead(&t), 0.0);
            assert!((inst.tco(&t) - inst.budget).abs() < 1e-9 * inst.budget);
        }
    }

    #[test]
    fn objective_and_saving_are_monotone_in_alpha() {
        for (method, n) in [(Method::ExactMip, 60), (Method::LpRounded, 3000)] {
            let mut last: Option<(f64, f64)> = None;
            for alpha in [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0] {
                let inst = instance(hotness(n, 11), alpha);
                let t = inst.solve(method, 10.0).unwrap();
                let (ovh, tco) = (inst.overhead(&t), inst.tco(&t));
                if let Some((o, c)) = last {
                    // More α: no more overhead, no less TCO (so no more saving).
                    assert!(
                        ovh <= o * (1.0 + 1e-9) + 1e-9,
                        "{method:?} α={alpha}: {ovh} > {o}"
                    );
                    assert!(
                        tco + 1e-9 >= c * (1.0 - 1e-9),
                        "{method:?} α={alpha}: {tco} < {c}"
                    );
                }
                last = Some((ovh, tco));
            }
        }
    }

    #[test]
    fn a_window_without_a_model_keeps_the_placement_and_counts_it() {
        use crate::heat::testutil::World;
        // DRAM of cost 0: no TCO model (every saving is relative to it).
        let mut w = World::new(8, 8, 8, 8);
        w.specs[0].cost_per_gb = 0.0;
        let cfg =
            crate::PolicyConfig::from_name("tierscape_analytical", toml::Table::new()).unwrap();
        let mut p = crate::build(&cfg).unwrap();
        assert!(p.decide(&w.snap()).moves.is_empty());
        assert_eq!(p.counters(), [("solves", 0), ("solver_failures", 1)]);
        w.specs[0].cost_per_gb = 1.0;
        w.apply(&Plan::default());
        p.decide(&w.snap());
        assert_eq!(p.counters(), [("solves", 1), ("solver_failures", 1)]);
    }

    #[test]
    fn alpha_out_of_range_is_named() {
        for a in [-0.1, 1.5, f64::NAN] {
            let mut t = toml::Table::new();
            t.insert("alpha".into(), toml::Value::Float(a));
            let e = crate::PolicyConfig::from_name("tierscape_analytical", t)
                .unwrap_err()
                .to_string();
            assert!(e.contains("policy.alpha"), "{e}");
        }
    }

    /// 8 regions of 4 pages (16 KiB), all in DRAM, and one compressed tier (zsmalloc-lz4,
    /// cost 0.3, fault 5 µs, empty: its ratio unmeasured).
    fn world_of_eight_regions() -> crate::heat::testutil::World {
        let mut w = crate::heat::testutil::World::new(32, 32, 32, 32);
        w.specs[1].kind = TierKind::Compressed {
            codec: "lz4".into(),
            allocator: "zsmalloc".into(),
            backing: "dram".into(),
        };
        w.specs[1].cost_per_gb = 0.3;
        w.specs[1].unloaded_latency_ns = 5000.0;
        w.tiers[1] = tiermem_core::TierTelemetry {
            capacity_bytes: w.tiers[1].capacity_bytes,
            ..Default::default()
        };
        w
    }

    /// The analytical policy at `alpha` over 16 KiB regions of 4 KiB pages.
    fn policy_of_16k_regions(alpha: f64) -> Box<dyn Policy> {
        let mut t = toml::Table::new();
        t.insert("region_size".into(), "16KiB".into());
        t.insert("alpha".into(), toml::Value::Float(alpha));
        let cfg = crate::PolicyConfig::from_name("tierscape_analytical", t).unwrap();
        crate::build_with(
            &cfg,
            None,
            BuildContext {
                page_bytes: Some(4096),
            },
        )
        .unwrap()
    }

    #[test]
    fn a_policy_window_places_cold_regions_in_compressed_tiers() {
        // 8 regions of 4 pages in DRAM, one compressed tier of cost 0.3, ratio 2 assumed.
        let mut w = world_of_eight_regions();
        let mut p = policy_of_16k_regions(0.5);
        // Regions 0..4 hot, 4..8 cold. The compressed tier's effective cost is 0.3 / 2 = 0.15,
        // so α = 0.5 bounds the TCO by 0.15 + 0.5·0.85 = 0.575 of DRAM's: with k of 8
        // regions out, 1 − 0.85·k/8 ≤ 0.575 → k ≥ 4. The 4 cold ones go, the hot stay.
        for r in 0..4u32 {
            w.reads(r * 4, 10 + r as usize);
        }
        let plan = p.decide(&w.snap());
        w.apply(&plan);
        let tiers: Vec<u8> = w.placement.chunks(4).map(|c| c[0].0).collect();
        assert_eq!(tiers, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert!(plan
            .moves
            .iter()
            .all(|m| m.range.len == 4 && m.is_aligned()));
    }

    #[test]
    fn a_tier_never_used_is_probed_with_one_cold_region_then_measured() {
        use crate::heat::testutil::World;
        // DRAM + two compressed tiers of equal cost, the second slower: at the one assumed
        // ratio the solution puts every cold region in the first, and would never learn the
        // second's ratio.
        let mut w = world_of_eight_regions();
        let mut slow = w.specs[1].clone();
        slow.name = "dense".into();
        slow.unloaded_latency_ns = 20_000.0;
        w.specs.push(slow);
        w.tiers.push(w.tiers[1].clone());
        let mut p = policy_of_16k_regions(0.5);
        let window = |w: &mut World, p: &mut Box<dyn Policy>| {
            for r in 0..4u32 {
                w.reads(r * 4, 10 + r as usize);
            }
            let plan = p.decide(&w.snap());
            w.apply(&plan);
            w.placement.chunks(4).map(|c| c[0].0).collect::<Vec<u8>>()
        };
        // Window 1: regions 4..8 are cold; the coldest (4, lowest address on a tie) stays in
        // tier 1, which the solution chose, the next (5) probes tier 2.
        assert_eq!(window(&mut w, &mut p), [0, 0, 0, 0, 1, 2, 1, 1]);
        // Window 2: both ratios are measured (this world stores pages uncompressed: 1), no
        // probe; the faster tier of equal cost takes region 5 back.
        assert_eq!(window(&mut w, &mut p), [0, 0, 0, 0, 1, 1, 1, 1]);
    }
}
