//! Reproductions of paper figures. Each experiment is a base config shipped under
//! `experiments/` (compiled in, so the binary works from anywhere) plus the sweep the
//! figure needs. Every run is an ordinary simulation of that config.

use crate::backend::SimBackend;
use crate::config::SimConfig;
use crate::machine::Equilibrium;
use crate::runner;
use serde_json::{json, Value};
use std::path::Path;
use tiermem_core::{Backend, Error, Result};

/// Every reproduction `tiermem reproduce` (and `reproduce all`) runs.
pub const EXPERIMENTS: &[&str] = &[
    "colloid-fig1",
    "colloid-fig5",
    "colloid-fig6",
    "colloid-fig7",
    "colloid-fig8",
    "colloid-fig9",
    "colloid-fig10",
    "colloid-fig11",
    "colloid-3tier",
    "mercury-fig11",
    "mercury-fig13",
    "mercury-fig14",
    "mercury-fig16",
    "granularity-fig8",
    "granularity-fig8-projection",
    "memstrata-fig5",
    "memstrata-fig6",
    "memstrata-fig11",
    "tierscape-fig8",
    "memstrata-fig10",
    "memstrata-fig12",
    "memstrata-estimator",
];

/// The GUPS setup of Colloid §2.1 (base for every Colloid figure).
pub const COLLOID_GUPS_BASE: &str = include_str!("../../../experiments/colloid/gups-base.toml");

/// Mercury §5.5 Fig. 13's machine and tenants (base of every Mercury reproduction).
pub const MERCURY_FIG13_BASE: &str = include_str!("../../../experiments/mercury/fig13.toml");

/// Run a named experiment, write its outputs into `out`, and return its summary.
pub fn run(name: &str, out: &Path, quick: bool) -> Result<Value> {
    run_with_tiers(name, out, quick, None)
}

/// [`run`]; `tiers`: for tierscape-fig8, a `tiermem tiers characterize` tiers.json or
/// tiers.csv whose measured times the compressed tiers take (no other experiment takes one).
pub fn run_with_tiers(name: &str, out: &Path, quick: bool, tiers: Option<&Path>) -> Result<Value> {
    if tiers.is_some() && name != "tierscape-fig8" {
        return Err(Error::usage(format!(
            "--tiers applies to tierscape-fig8 only, not to `{name}`; drop it"
        )));
    }
    let summary = match name {
        "colloid-fig1" => colloid_fig1(quick)?,
        "colloid-fig5" => colloid_grid(quick, "colloid-fig5")?,
        "colloid-fig6" => colloid_grid(quick, "colloid-fig6")?,
        "colloid-fig7" => colloid_heatmap(quick, Axis::AltLatency)?,
        "colloid-fig8" => colloid_heatmap(quick, Axis::ObjectSize)?,
        "colloid-fig9" => colloid_fig9(quick, out)?,
        "colloid-fig10" => colloid_fig10(quick, out)?,
        "colloid-fig11" => colloid_fig11(quick)?,
        "colloid-3tier" => colloid_three_tiers(quick)?,
        "mercury-fig11" => crate::reproduce_mercury::fig11(quick, out)?,
        "mercury-fig13" => crate::reproduce_mercury::fig13(quick, out)?,
        "tierscape-fig8" => crate::reproduce_tierscape::fig8_with_tiers(quick, out, tiers)?,
        "mercury-fig14" => crate::reproduce_mercury::fig14(quick, out)?,
        "mercury-fig16" => crate::reproduce_mercury::fig16(quick, out)?,
        "granularity-fig8" => crate::ics18::run(quick)?,
        "granularity-fig8-projection" => crate::ics18::run_projection(quick)?,
        "memstrata-fig5" => crate::reproduce_memstrata::fig5(quick)?,
        "memstrata-fig6" => crate::reproduce_memstrata::fig6(quick)?,
        "memstrata-fig11" => crate::reproduce_memstrata::fig11(quick)?,
        "memstrata-fig10" => crate::reproduce_memstrata::fig10(quick)?,
        "memstrata-fig12" => crate::reproduce_memstrata::fig12(quick)?,
        "memstrata-estimator" => crate::reproduce_memstrata::estimator_validation(quick, out)?,
        other => {
            return Err(Error::usage(format!(
                "unknown experiment `{other}`; available: {}",
                EXPERIMENTS.join(", ")
            )));
        }
    };
    let summary = with_systems(summary);
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let p = out.join("summary.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&summary).expect("json") + "\n",
    )
    .map_err(|e| Error::io(p.display(), e))?;
    Ok(summary)
}

/// The run's metadata for plots: `systems`, every row's system in first-seen order, and
/// `labels`, each system's name from the policy registry (the best case is the reference
/// computed here, not a policy).
fn with_systems(mut summary: Value) -> Value {
    let mut systems: Vec<String> = Vec::new();
    if let Some(rows) = summary["rows"].as_array() {
        for r in rows {
            if let Some(s) = r["system"].as_str() {
                if !systems.iter().any(|x| x == s) {
                    systems.push(s.to_string());
                }
            }
        }
    }
    let labels: serde_json::Map<String, Value> = systems
        .iter()
        .map(|s| {
            let label = match s.as_str() {
                "best-case" => "Best case".to_string(),
                "mercury" => "Mercury (over TPP)".to_string(),
                other => tiermem_policies::registry::system_label(other),
            };
            (s.clone(), Value::String(label))
        })
        .collect();
    summary["systems"] = json!(systems);
    summary["labels"] = Value::Object(labels);
    summary
}

pub use crate::overrides::set_path;

/// Parse a base config, apply overrides, and validate the result as a `SimConfig`.
pub fn config_with(
    base: &str,
    origin: &str,
    overrides: &[(&str, toml::Value)],
) -> Result<SimConfig> {
    let mut doc: toml::Value =
        toml::from_str(base).map_err(|e| Error::config(format!("{origin}: {e}")))?;
    for (path, v) in overrides {
        set_path(&mut doc, path, v.clone()).map_err(|e| e.context(origin.to_string()))?;
    }
    let text = toml::to_string(&doc).expect("serialize TOML");
    SimConfig::from_toml(&text, origin)
}

/// Antagonist cores pinned to the default tier for a Colloid contention level
/// (0×/1×/2×/3× = 0/5/10/15 cores, Colloid §2.1).
pub fn antagonist_at(level: u32) -> toml::Value {
    let mut t = toml::map::Map::new();
    t.insert("tier".into(), toml::Value::Integer(0));
    t.insert("cores".into(), toml::Value::Float(5.0 * level as f64));
    toml::Value::Array(vec![toml::Value::Table(t)])
}

/// The best static placement: an oracle over the machine model (issue "Colloid at full
/// breadth"). For a stationary workload on memory tiers, throughput depends on the placement
/// only through the share of accesses each tier serves (its mass), and every mass vector in
/// [`Reachable`] can be placed (any tier may be left partly or wholly empty). The oracle
/// maximises throughput over that set ([`maximize_over`]). Colloid §2.1's search (0, 10, ...,
/// 100 % of the hot set in the default tier, the rest filled with cold pages) is a subset of
/// it, so no policy should beat it beyond the solver's tolerance.
pub struct BestCase {
    /// The fraction of accesses the default tier serves in the best placement.
    pub default_mass: f64,
    /// The share of the workload's hot set in the default tier, for a workload with one:
    /// the placement that serves `default_mass` with the hottest pages (every placement with
    /// the same mass has the same throughput in the model, so the oracle names the one that
    /// moves no cold page into the default tier; Colloid §2.1 instead fills the rest of the
    /// default tier with cold pages, which needs fewer hot pages there for the same mass).
    pub hot_set_default_share: Option<f64>,
    /// The share of the accesses each tier serves in the best placement.
    pub mass: Vec<f64>,
    pub eq: Equilibrium,
}

/// The oracle of the GUPS setup (with `extra` overrides) at each contention level 0-3x.
fn best_per_contention(extra: &[(&str, toml::Value)]) -> Result<Vec<BestCase>> {
    (0..=3u32)
        .map(|level| {
            let mut ov = vec![("antagonist", antagonist_at(level))];
            ov.extend(extra.iter().cloned());
            best_case(&config_with(
                COLLOID_GUPS_BASE,
                "experiments/colloid/gups-base.toml",
                &ov,
            )?)
        })
        .collect()
}

pub fn best_case(cfg: &SimConfig) -> Result<BestCase> {
    let backend = SimBackend::new(cfg)?;
    let probs = backend.workload().probabilities().ok_or_else(|| {
        Error::config(
            "best-case needs a stationary workload (per-page access probabilities), not a trace",
        )
    })?;
    let specs = backend.tier_specs();
    if specs
        .iter()
        .any(|t| matches!(t.kind, tiermem_core::TierKind::Compressed { .. }))
    {
        return Err(Error::config(
            "best-case is solved for memory tiers only; a compressed tier's cost is per fault, \
             not per access (machine.tiers)",
        ));
    }
    let caps: Vec<f64> = backend.capacity_pages().iter().map(|&c| c as f64).collect();
    let reach = Reachable::new(probs, &caps)?;
    let ops = |m: &[f64]| backend.solve_for_mass(m).app_ops_per_s;
    let m = maximize_over(&reach, &ops);
    let total: f64 = probs.iter().sum();
    let hot_set_default_share = backend.workload().hot_pages().map(|hot| {
        let hot_mass: f64 = hot.iter().map(|&p| probs[p as usize]).sum::<f64>() / total;
        if hot_mass > 0.0 {
            (m[0] / hot_mass).min(1.0)
        } else {
            0.0
        }
    });
    Ok(BestCase {
        default_mass: m[0],
        hot_set_default_share,
        eq: backend.solve_for_mass(&m),
        mass: m,
    })
}

/// The access masses a placement can give the tiers: a mass vector `m` (one share of the
/// accesses per tier, summing to 1) is reachable, with pages split fractionally, exactly when
/// every set of tiers `S` serves no more than the hottest `cap(S)` pages do:
/// `m(S) <= P(cap(S))`, `P(k)` the mass of the `k` hottest pages (the base polytope of a
/// polymatroid: `P` is concave, capacities add). With whole pages the reachable masses are
/// a subset, so the oracle is an upper bound.
struct Reachable {
    /// Mass of the hottest `k` pages, `prefix[k]`, normalized to 1.
    prefix: Vec<f64>,
    caps: Vec<f64>,
}

impl Reachable {
    fn new(probs: &[f64], caps: &[f64]) -> Result<Reachable> {
        let mut sorted = probs.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let total: f64 = sorted.iter().sum();
        if total.is_nan() || total <= 0.0 {
            return Err(Error::config("best-case: the workload accesses no page"));
        }
        let mut prefix = Vec::with_capacity(sorted.len() + 1);
        let mut acc = 0.0;
        prefix.push(0.0);
        for p in &sorted {
            acc += p / total;
            prefix.push(acc);
        }
        if caps.iter().sum::<f64>() < sorted.len() as f64 {
            return Err(Error::config(format!(
                "best-case: the tiers hold {} pages, the workload has {} (machine.tiers capacities)",
                caps.iter().sum::<f64>(),
                sorted.len()
            )));
        }
        Ok(Reachable {
            prefix,
            caps: caps.to_vec(),
        })
    }

    fn tiers(&self) -> usize {
        self.caps.len()
    }

    /// `P(k)` for a fractional `k` (linear between pages).
    fn prefix_mass(&self, k: f64) -> f64 {
        let n = self.prefix.len() - 1;
        if k >= n as f64 {
            return 1.0;
        }
        let i = k.floor() as usize;
        self.prefix[i] + (k - i as f64) * (self.prefix[i + 1] - self.prefix[i])
    }

    fn contains(&self, m: &[f64]) -> bool {
        const EPS: f64 = 1e-12;
        let n = self.tiers();
        if m.iter().any(|&x| x < -EPS) || (m.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
            return false;
        }
        (1..(1u32 << n) - 1).all(|set| {
            let (mut mass, mut cap) = (0.0, 0.0);
            for i in (0..n).filter(|i| set & (1 << i) != 0) {
                mass += m[i];
                cap += self.caps[i];
            }
            mass <= self.prefix_mass(cap) + EPS
        })
    }

    /// Always reachable: the tiers filled with the hottest pages in order.
    fn hottest_first(&self) -> Vec<f64> {
        let mut used = 0.0;
        self.caps
            .iter()
            .map(|&c| {
                let m = self.prefix_mass(used + c) - self.prefix_mass(used);
                used += c;
                m
            })
            .collect()
    }
}

/// The reachable mass vector with the highest `ops`: a grid over the simplex (401 points on
/// two tiers, about 5 000 on three), then a compass search from the best point that moves
/// mass between each pair of tiers with halving steps down to 1e-10. Throughput is unimodal
/// in the masses under this model (more mass on a tier loads it more), so the search finds
/// the optimum; on two tiers it equals the golden-section search it replaced.
fn maximize_over(reach: &Reachable, ops: &dyn Fn(&[f64]) -> f64) -> Vec<f64> {
    let n = reach.tiers();
    let grid: usize = match n {
        1 => 1,
        2 => 400,
        3 => 100,
        4 => 30,
        _ => 12,
    };
    let mut best = reach.hottest_first();
    let mut best_ops = ops(&best);
    let mut point = vec![0usize; n];
    // Every composition of `grid` into `n` parts.
    fn visit(i: usize, left: usize, point: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if i + 1 == point.len() {
            point[i] = left;
            f(point);
            return;
        }
        for k in 0..=left {
            point[i] = k;
            visit(i + 1, left - k, point, f);
        }
    }
    visit(0, grid, &mut point, &mut |p: &[usize]| {
        let m: Vec<f64> = p.iter().map(|&k| k as f64 / grid as f64).collect();
        if reach.contains(&m) {
            let v = ops(&m);
            if v > best_ops {
                best_ops = v;
                best = m;
            }
        }
    });
    let mut step = 1.0 / grid as f64;
    while step > 1e-10 {
        let mut moved = false;
        for from in 0..n {
            for to in 0..n {
                if from == to {
                    continue;
                }
                let mut m = best.clone();
                let d = step.min(m[from]);
                m[from] -= d;
                m[to] += d;
                if d > 0.0 && reach.contains(&m) {
                    let v = ops(&m);
                    if v > best_ops {
                        best_ops = v;
                        best = m;
                        moved = true;
                    }
                }
            }
        }
        if !moved {
            step /= 2.0;
        }
    }
    best
}

/// Run jobs on all cores (the machine here has 2), keeping result order.
pub fn parallel_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let queue = std::sync::Mutex::new(items.into_iter().enumerate().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let job = queue.lock().expect("queue").pop();
                let Some((i, item)) = job else { break };
                let r = f(item);
                results.lock().expect("results").push((i, r));
            });
        }
    });
    let mut r = results.into_inner().expect("results");
    r.sort_by_key(|(i, _)| *i);
    r.into_iter().map(|(_, r)| r).collect()
}

pub const BASELINES: &[&str] = &["hemem", "tpp", "memtis"];

/// The base systems a sweep runs: quick runs take the ones that converge fast; the full run
/// adds TPP (minutes of simulated time to find a hot set, `duration_for`).
fn systems_for(quick: bool) -> &'static [&'static str] {
    if quick {
        &["hemem", "memtis"]
    } else {
        BASELINES
    }
}

/// Run durations (virtual seconds) long enough for each system to reach steady state.
/// TPP scans 256 MB of the alternate tier per second (Linux defaults), so finding a 24 GB
/// hot set takes minutes, as in the paper (§5.2: "100s of seconds"); MEMTIS decides every
/// 500 ms; HeMem every 10 ms.
fn duration_for(system: &str, quick: bool) -> f64 {
    match (system, quick) {
        ("tpp", false) => 400.0,
        ("tpp", true) => 300.0,
        ("memtis", false) => 90.0,
        ("memtis", true) => 60.0,
        (_, false) => 60.0,
        (_, true) => 30.0,
    }
}

/// Fig. 1's runs per bar: "GUPS throughput averaged across 3 runs, with error bars showing
/// the minimum and maximum values across the runs" (Colloid Fig. 1). Runs differ by seed:
/// PEBS sampling, hint-fault draws and the migration order it leads to (the model's noise
/// sources; nothing is added). Quick runs one.
fn fig1_seeds(quick: bool) -> &'static [i64] {
    if quick {
        &[1]
    } else {
        &[1, 2, 3]
    }
}

fn colloid_fig1(quick: bool) -> Result<Value> {
    // Steady-state throughput of the hot-first baselines at each contention level, and the
    // best static placement (Colloid Figs. 1–2).
    let origin = "experiments/colloid/gups-base.toml";
    let seeds = fig1_seeds(quick);
    let mut jobs = Vec::new();
    for &system in BASELINES {
        for level in 0..=3u32 {
            for &seed in seeds {
                jobs.push((system, level, seed));
            }
        }
    }
    let runs = parallel_map(
        jobs,
        |(system, level, seed)| -> Result<(String, u32, runner::Steady)> {
            let cfg = config_with(
                COLLOID_GUPS_BASE,
                origin,
                &[
                    ("seed", toml::Value::Integer(seed)),
                    ("policy.policy", toml::Value::String(system.into())),
                    ("antagonist", antagonist_at(level)),
                    (
                        "duration_s",
                        toml::Value::Float(duration_for(system, quick)),
                    ),
                ],
            )?;
            let out = runner::run(&cfg)?;
            Ok((
                system.to_string(),
                level,
                out.steady(cfg.steady_state_fraction),
            ))
        },
    );
    let runs: Vec<(String, u32, runner::Steady)> = runs.into_iter().collect::<Result<_>>()?;
    let best = best_per_contention(&[])?;
    let share = |app: &[f64]| app.first().copied().unwrap_or(0.0);
    let mut rows = Vec::new();
    for &system in BASELINES {
        for level in 0..=3u32 {
            let group: Vec<&runner::Steady> = runs
                .iter()
                .filter(|r| r.0 == system && r.1 == level)
                .map(|r| &r.2)
                .collect();
            let n = group.len() as f64;
            let mean =
                |f: &dyn Fn(&runner::Steady) -> f64| group.iter().map(|s| f(s)).sum::<f64>() / n;
            let tput: Vec<f64> = group.iter().map(|s| s.throughput_ops_per_s).collect();
            let b = &best[level as usize];
            rows.push(json!({
                "system": system,
                "contention": level,
                "throughput": mean(&|s| s.throughput_ops_per_s),
                "throughput_min": tput.iter().copied().fold(f64::INFINITY, f64::min),
                "throughput_max": tput.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                "runs": group.len(),
                "best_case_throughput": b.eq.app_ops_per_s,
                "default_tier_latency_ns": mean(&|s| s.latency_ns[0]),
                "alternate_tier_latency_ns": mean(&|s| s.latency_ns[1]),
                "default_tier_share": mean(&|s| share(&s.app_share)),
            }));
        }
    }
    for (level, b) in best.iter().enumerate() {
        let total: f64 = b.eq.app_read_lines_per_s.iter().sum();
        rows.push(json!({
            "system": "best-case",
            "contention": level,
            "throughput": b.eq.app_ops_per_s,
            "best_case_throughput": b.eq.app_ops_per_s,
            "default_tier_latency_ns": b.eq.latency_ns[0],
            "alternate_tier_latency_ns": b.eq.latency_ns[1],
            "default_tier_share": b.eq.app_read_lines_per_s[0] / total,
            "default_tier_mass": b.default_mass,
        }));
    }
    Ok(with_oracle_gap(json!({
        "experiment": "colloid-fig1",
        "quick": quick,
        "seeds": seeds,
        "throughput_unit": "GUPS operations per second",
        "rows": rows,
    })))
}

fn colloid_on() -> toml::Value {
    toml::Value::Table(Default::default())
}

/// The share of the workload's hot set each tier holds at the end of a run; `None` for a
/// workload without a hot set.
pub fn hot_set_tier_shares(backend: &SimBackend) -> Option<Vec<f64>> {
    let hot = backend.workload().hot_pages()?;
    if hot.is_empty() {
        return None;
    }
    let placement = backend.placement();
    let mut count = vec![0usize; backend.tier_specs().len()];
    for &p in &hot {
        count[placement[p as usize].0 as usize] += 1;
    }
    Some(count.iter().map(|&c| c as f64 / hot.len() as f64).collect())
}

/// A steady-state GUPS run: its steady state, the share of its hot set in each tier at the
/// end, and how many pages each tier holds at the end that started elsewhere.
struct GridRun {
    steady: runner::Steady,
    hot_set_shares: Option<Vec<f64>>,
    pages_moved_into: Vec<u64>,
    /// The run from its start: each record's end time (s) and throughput (ops/s).
    series: Vec<(f64, f64)>,
}

impl GridRun {
    fn hot_set_default_share(&self) -> Option<f64> {
        self.hot_set_shares.as_ref().map(|h| h[0])
    }
}

/// One steady-state GUPS run of the Colloid setup.
fn steady_run(
    system: &str,
    colloid: bool,
    level: u32,
    quick: bool,
    extra: &[(&str, toml::Value)],
) -> Result<GridRun> {
    let mut ov: Vec<(&str, toml::Value)> = vec![
        ("policy.policy", toml::Value::String(system.into())),
        ("antagonist", antagonist_at(level)),
        (
            "duration_s",
            toml::Value::Float(duration_for(system, quick)),
        ),
    ];
    if colloid {
        ov.push(("colloid", colloid_on()));
    }
    ov.extend(extra.iter().cloned());
    let cfg = config_with(COLLOID_GUPS_BASE, "experiments/colloid/gups-base.toml", &ov)?;
    let start = SimBackend::new(&cfg)?.placement().to_vec();
    let out = runner::run(&cfg)?;
    let mut pages_moved_into = vec![0u64; out.backend.tier_specs().len()];
    for (now, then) in out.backend.placement().iter().zip(&start) {
        if now != then {
            pages_moved_into[now.0 as usize] += 1;
        }
    }
    Ok(GridRun {
        steady: out.steady(cfg.steady_state_fraction),
        hot_set_shares: hot_set_tier_shares(&out.backend),
        pages_moved_into,
        series: out
            .backend
            .records
            .iter()
            .map(|r| (r.t_s, r.ops_per_s))
            .collect(),
    })
}

/// Throughput of a run that does `work` operations from its start, warm-up included: `work`
/// over the time the run takes to do it. `series` is the simulated run (record end times and
/// throughputs from t = 0); if it ends before `work` is done, the rest runs at
/// `steady_ops_per_s` (the run's steady state, which it has reached by then).
pub fn fixed_work_throughput(series: &[(f64, f64)], steady_ops_per_s: f64, work: f64) -> f64 {
    let (mut done, mut t) = (0.0f64, 0.0f64);
    for &(end, ops_per_s) in series {
        let dt = end - t;
        if dt <= 0.0 {
            continue;
        }
        let here = ops_per_s * dt;
        if done + here >= work && ops_per_s > 0.0 {
            return work / (t + (work - done) / ops_per_s);
        }
        done += here;
        t = end;
    }
    work / (t + (work - done) / steady_ops_per_s)
}

/// Colloid Figs. 5 and 6: every base system with and without Colloid at 0-3x contention,
/// and the best case. Fig. 5 plots the throughput; Fig. 6 the share of the hot set each
/// places in the default tier (a) and the two tiers' latencies (b), from the same runs.
fn colloid_grid(quick: bool, experiment: &str) -> Result<Value> {
    let mut jobs = Vec::new();
    for &system in BASELINES {
        for colloid in [false, true] {
            for level in 0..=3u32 {
                jobs.push((system, colloid, level));
            }
        }
    }
    let runs = parallel_map(jobs, |(system, colloid, level)| {
        steady_run(system, colloid, level, quick, &[])
            .map(|r| (system, colloid, level, r.hot_set_default_share(), r.steady))
    });
    let best = best_per_contention(&[])?;
    let mut rows = Vec::new();
    for r in runs {
        let (system, colloid, level, hot, s) = r?;
        rows.push(json!({
            "system": system,
            "colloid": colloid,
            "contention": level,
            "throughput": s.throughput_ops_per_s,
            "best_case_throughput": best[level as usize].eq.app_ops_per_s,
            "default_tier_latency_ns": s.latency_ns[0],
            "alternate_tier_latency_ns": s.latency_ns[1],
            "default_tier_share": s.app_share[0],
            "hot_set_default_share": hot,
        }));
    }
    for (level, b) in best.iter().enumerate() {
        let total: f64 = b.eq.app_read_lines_per_s.iter().sum();
        rows.push(json!({
            "system": "best-case",
            "colloid": false,
            "contention": level,
            "throughput": b.eq.app_ops_per_s,
            "best_case_throughput": b.eq.app_ops_per_s,
            "default_tier_latency_ns": b.eq.latency_ns[0],
            "alternate_tier_latency_ns": b.eq.latency_ns[1],
            "default_tier_share": b.eq.app_read_lines_per_s[0] / total,
            "hot_set_default_share": b.hot_set_default_share,
        }));
    }
    Ok(with_oracle_gap(
        json!({"experiment": experiment, "quick": quick, "throughput_unit": "GUPS operations per second", "rows": rows}),
    ))
}

#[derive(Clone, Copy)]
enum Axis {
    /// Figure 7: alternate-tier unloaded latency as a multiple of the default tier's.
    AltLatency,
    /// Figure 8: GUPS object size in bytes.
    ObjectSize,
}

fn colloid_heatmap(quick: bool, axis: Axis) -> Result<Value> {
    let (name, values): (&str, Vec<f64>) = match (axis, quick) {
        (Axis::AltLatency, false) => ("colloid-fig7", vec![1.9, 2.1, 2.3, 2.5, 2.7]),
        (Axis::AltLatency, true) => ("colloid-fig7", vec![1.9, 2.3, 2.7]),
        (Axis::ObjectSize, false) => ("colloid-fig8", vec![64.0, 256.0, 1024.0, 4096.0]),
        (Axis::ObjectSize, true) => ("colloid-fig8", vec![64.0, 4096.0]),
    };
    let systems = systems_for(quick);
    let mut jobs = Vec::new();
    for &system in systems {
        for &v in &values {
            for level in 0..=3u32 {
                for colloid in [false, true] {
                    jobs.push((system, v, level, colloid));
                }
            }
        }
    }
    let runs = parallel_map(jobs, |(system, v, level, colloid)| {
        let extra = match axis {
            Axis::AltLatency => vec![("machine.tiers", alt_latency_tiers(v))],
            Axis::ObjectSize => vec![("workload.object_size", toml::Value::Integer(v as i64))],
        };
        steady_run(system, colloid, level, quick, &extra)
            .map(|r| (system, v, level, colloid, r.steady))
    });
    let runs: Vec<_> = runs.into_iter().collect::<Result<_>>()?;
    let key = match axis {
        Axis::AltLatency => "alt_latency_ratio",
        Axis::ObjectSize => "object_size",
    };
    // The oracle per cell (issue 17: every reproduction reports each system against it).
    let best: Vec<Vec<BestCase>> = parallel_map(values.clone(), |v| match axis {
        Axis::AltLatency => best_per_contention(&[("machine.tiers", alt_latency_tiers(v))]),
        Axis::ObjectSize => {
            best_per_contention(&[("workload.object_size", toml::Value::Integer(v as i64))])
        }
    })
    .into_iter()
    .collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for (system, v, level, colloid, s) in &runs {
        if *colloid {
            continue;
        }
        let with = runs
            .iter()
            .find(|(s2, v2, l2, c2, _)| s2 == system && v2 == v && l2 == level && *c2)
            .map(|r| r.4.throughput_ops_per_s)
            .unwrap_or(f64::NAN);
        let vi = values.iter().position(|x| x == v).expect("a swept value");
        rows.push(json!({
            "system": system,
            "contention": level,
            key: v,
            "throughput": s.throughput_ops_per_s,
            "colloid_throughput": with,
            "gain": with / s.throughput_ops_per_s,
            "best_case_throughput": best[vi][*level as usize].eq.app_ops_per_s,
        }));
    }
    Ok(with_oracle_gap(
        json!({"experiment": name, "quick": quick, "rows": rows}),
    ))
}

/// Adds `max_ratio_to_best_case`: the largest throughput (with or without Colloid) over the
/// oracle's in any row that has one. Above 1 by more than the solver's tolerance, a policy
/// beat the best placement the model allows: a bug (tests assert it never happens).
fn with_oracle_gap(mut summary: Value) -> Value {
    let mut most = f64::NEG_INFINITY;
    if let Some(rows) = summary["rows"].as_array() {
        for r in rows {
            let Some(best) = r["best_case_throughput"].as_f64() else {
                continue;
            };
            for k in ["throughput", "colloid_throughput"] {
                if let Some(t) = r[k].as_f64() {
                    most = most.max(t / best);
                }
            }
        }
    }
    if most.is_finite() {
        summary["max_ratio_to_best_case"] = json!(most);
    }
    summary
}

/// Colloid Fig. 11's application workloads (experiments/colloid/fig11-apps.toml).
pub const COLLOID_FIG11_APPS: &str = include_str!("../../../experiments/colloid/fig11-apps.toml");

/// Colloid Fig. 11: GAPBS, Silo and CacheLib-like workloads under each base system with and
/// without Colloid at 0-3x contention, the default tier a third of each footprint. Rows per
/// (app, system, contention): throughput without and with Colloid and the gain, read as §5.3
/// measured them (`FIG11_READING`), and the steady states' (`steady_*`).
fn colloid_fig11(quick: bool) -> Result<Value> {
    // Quick: no contention and the most (the gains are largest at 3x), within the quick
    // suite's budget (all four levels took 286 s here).
    let levels: &[u32] = if quick { &[0, 3] } else { &[0, 1, 2, 3] };
    let apps = fig11_apps()?;
    let mut jobs = Vec::new();
    for app in &apps {
        for &system in systems_for(quick) {
            for &level in levels {
                for colloid in [false, true] {
                    jobs.push((app, system, level, colloid));
                }
            }
        }
    }
    let runs = parallel_map(jobs, |(app, system, level, colloid)| {
        let extra = app.overrides();
        let extra: Vec<(&str, toml::Value)> =
            extra.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        steady_run(system, colloid, level, quick, &extra).map(|r| {
            let steady = r.steady.throughput_ops_per_s;
            let whole = fixed_work_throughput(&r.series, steady, app.paper_ops);
            (app.name.as_str(), system, level, colloid, steady, whole)
        })
    });
    let runs: Vec<_> = runs.into_iter().collect::<Result<_>>()?;
    // The oracle per app and contention level (every app here is stationary).
    let best: Vec<(&str, Vec<BestCase>)> = parallel_map(apps.iter().collect(), |app| {
        let extra = app.overrides();
        let extra: Vec<(&str, toml::Value)> =
            extra.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        best_per_contention(&extra).map(|b| (app.name.as_str(), b))
    })
    .into_iter()
    .collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for &(app, system, level, colloid, steady, whole) in &runs {
        if colloid {
            continue;
        }
        let with = runs
            .iter()
            .find(|r| r.0 == app && r.1 == system && r.2 == level && r.3)
            .map_or((f64::NAN, f64::NAN), |r| (r.4, r.5));
        let oracle = best
            .iter()
            .find(|(name, _)| *name == app)
            .map_or(f64::NAN, |(_, b)| b[level as usize].eq.app_ops_per_s);
        rows.push(json!({
            "app": app,
            "system": system,
            "contention": level,
            "throughput": whole,
            "colloid_throughput": with.1,
            "gain": with.1 / whole,
            "steady_throughput": steady,
            "steady_colloid_throughput": with.0,
            "steady_gain": with.0 / steady,
            "best_case_throughput": oracle,
        }));
    }
    let mut summary = with_oracle_gap(json!({
        "experiment": "colloid-fig11",
        "quick": quick,
        "reading": FIG11_READING,
        "rows": rows,
    }));
    summary["paper_ops"] = json!(apps
        .iter()
        .map(|a| (a.name.clone(), json!(a.paper_ops)))
        .collect::<serde_json::Map<_, _>>());
    Ok(summary)
}

/// How `colloid-fig11` reads a run, as §5.3 measured it.
pub const FIG11_READING: &str = "throughput and gain: the paper's work for the app (paper_ops) from a cold start over the time it takes, warm-up included, as §5.3 reports whole runs; steady_*: the last quarter of the simulated run";

/// One application of Fig. 11 (experiments/colloid/fig11-apps.toml).
struct Fig11App {
    name: String,
    workload: toml::Value,
    /// The default tier's bytes: a third of the footprint, in whole pages.
    third: u64,
    /// `[app.machine]`: the program's cores where they are not GUPS's.
    machine: Vec<(String, toml::Value)>,
    /// One run's work in the model's operations (§5.3).
    paper_ops: f64,
}

impl Fig11App {
    /// The overrides of gups-base.toml that make it this app's run.
    fn overrides(&self) -> Vec<(String, toml::Value)> {
        let mut ov = vec![
            ("workload".to_string(), self.workload.clone()),
            (
                "machine.tiers[0].capacity".to_string(),
                toml::Value::String(format!("{}B", self.third)),
            ),
        ];
        ov.extend(self.machine.iter().cloned());
        ov
    }
}

/// Fig. 11's applications: name, workload, the default tier's bytes (a third of the
/// footprint, in whole pages), their cores' shape and one run's work.
fn fig11_apps() -> Result<Vec<Fig11App>> {
    let origin = "experiments/colloid/fig11-apps.toml";
    let doc: toml::Value =
        toml::from_str(COLLOID_FIG11_APPS).map_err(|e| Error::config(format!("{origin}: {e}")))?;
    let apps = doc["app"]
        .as_array()
        .ok_or_else(|| Error::config(format!("{origin}: no [[app]]")))?;
    apps.iter()
        .map(|app| {
            let name = app["name"].as_str().unwrap_or("?").to_string();
            let workload = app["workload"].clone();
            let paper_ops = match app.get("paper_ops") {
                Some(toml::Value::Float(x)) => *x,
                Some(toml::Value::Integer(x)) => *x as f64,
                _ => return Err(Error::config(format!("{origin}: {name}: no paper_ops"))),
            };
            let machine: Vec<(String, toml::Value)> = match app.get("machine") {
                Some(toml::Value::Table(t)) => t
                    .iter()
                    .map(|(k, v)| (format!("machine.{k}"), v.clone()))
                    .collect(),
                _ => Vec::new(),
            };
            let cfg = config_with(COLLOID_GUPS_BASE, origin, &[("workload", workload.clone())])?;
            let probe = SimBackend::new(&cfg)?;
            let pages = probe.workload().page_count() as u64;
            Ok(Fig11App {
                name,
                workload,
                third: pages.div_ceil(3) * probe.page_bytes(),
                machine,
                paper_ops,
            })
        })
        .collect()
}

/// Three memory tiers for the GUPS setup (experiments/colloid/three-tiers.toml).
pub const COLLOID_THREE_TIERS: &str = include_str!("../../../experiments/colloid/three-tiers.toml");

/// The GUPS setup on three tiers: each base system with and without Colloid at 0-3x
/// contention on the default tier, against the oracle over three tiers. Rows per tier
/// (`tierI_...`): loaded latency, share of the accesses, share of the hot set, and pages
/// that end there having started elsewhere (first touch fills the tiers in order).
fn colloid_three_tiers(quick: bool) -> Result<Value> {
    let doc: toml::Value = toml::from_str(COLLOID_THREE_TIERS)
        .map_err(|e| Error::config(format!("experiments/colloid/three-tiers.toml: {e}")))?;
    let tiers = doc["machine"]["tiers"].clone();
    let systems = systems_for(quick);
    let mut jobs = Vec::new();
    for &system in systems {
        for colloid in [false, true] {
            for level in 0..=3u32 {
                jobs.push((system, colloid, level));
            }
        }
    }
    let extra = [("machine.tiers", tiers.clone())];
    let runs = parallel_map(jobs, |(system, colloid, level)| {
        steady_run(system, colloid, level, quick, &extra).map(|r| (system, colloid, level, r))
    });
    let best = best_per_contention(&[("machine.tiers", tiers.clone())])?;
    let per_tier = |row: &mut serde_json::Map<String, Value>, field: &str, v: &[f64]| {
        for (i, x) in v.iter().enumerate() {
            row.insert(format!("tier{i}_{field}"), json!(x));
        }
    };
    let mut rows = Vec::new();
    for r in runs {
        let (system, colloid, level, run) = r?;
        let s = &run.steady;
        let mut row = serde_json::Map::new();
        row.insert("system".into(), json!(system));
        row.insert("colloid".into(), json!(colloid));
        row.insert("contention".into(), json!(level));
        row.insert("throughput".into(), json!(s.throughput_ops_per_s));
        row.insert(
            "best_case_throughput".into(),
            json!(best[level as usize].eq.app_ops_per_s),
        );
        per_tier(&mut row, "latency_ns", &s.latency_ns);
        per_tier(&mut row, "share", &s.app_share);
        if let Some(h) = &run.hot_set_shares {
            per_tier(&mut row, "hot_set_share", h);
        }
        let moved: Vec<f64> = run.pages_moved_into.iter().map(|&p| p as f64).collect();
        per_tier(&mut row, "pages_moved_in", &moved);
        rows.push(Value::Object(row));
    }
    for (level, b) in best.iter().enumerate() {
        let mut row = serde_json::Map::new();
        row.insert("system".into(), json!("best-case"));
        row.insert("colloid".into(), json!(false));
        row.insert("contention".into(), json!(level));
        row.insert("throughput".into(), json!(b.eq.app_ops_per_s));
        row.insert("best_case_throughput".into(), json!(b.eq.app_ops_per_s));
        per_tier(&mut row, "latency_ns", &b.eq.latency_ns);
        per_tier(&mut row, "share", &b.mass);
        rows.push(Value::Object(row));
    }
    Ok(json!({
        "experiment": "colloid-3tier",
        "quick": quick,
        "throughput_unit": "GUPS operations per second",
        "tiers": tiers
            .as_array()
            .map(|a| a.iter().map(|t| json!({"name": t["name"].as_str()})).collect::<Vec<_>>()),
        "rows": rows,
    }))
}

/// The base config's tiers with the alternate tier's unloaded latency set to `ratio` × the
/// default tier's (Colloid §5.1 lowered the remote uncore frequency for this).
fn alt_latency_tiers(ratio: f64) -> toml::Value {
    let doc: toml::Value = toml::from_str(COLLOID_GUPS_BASE).expect("base config parses");
    let mut tiers = doc["machine"]["tiers"].clone();
    let arr = tiers.as_array_mut().expect("tiers array");
    let l0 = arr[0]["unloaded_latency_ns"]
        .as_float()
        .or(arr[0]["unloaded_latency_ns"].as_integer().map(|i| i as f64))
        .expect("latency");
    arr[1]
        .as_table_mut()
        .expect("tier table")
        .insert("unloaded_latency_ns".into(), toml::Value::Float(l0 * ratio));
    tiers
}

/// Seconds after `change_s` until the per-second throughput stays within 5 % of its final
/// level (the mean of the last 10 % of the run).
pub fn converge_s(t: &[f64], thr: &[f64], change_s: f64) -> f64 {
    let n = thr.len();
    let tail = (n / 10).max(1);
    let fin = thr[n - tail..].iter().sum::<f64>() / tail as f64;
    let mut last_out = change_s;
    for i in 0..n {
        if t[i] > change_s && (thr[i] - fin).abs() > 0.05 * fin {
            last_out = t[i];
        }
    }
    last_out - change_s
}

/// Colloid §5.3's dynamic scenarios (Figs. 9 and 10).
const SCENARIOS: [&str; 3] = ["hot-set-move-0x", "hot-set-move-3x", "contention-0x-to-3x"];

/// When a dynamic scenario changes: once every system has reached steady state. TPP needs
/// ~250 s for that (Colloid §5.3), so its change comes later in the full run.
fn change_at_s(system: &str, quick: bool) -> f64 {
    match (system, quick) {
        ("tpp", false) => 300.0,
        (_, false) => 100.0,
        (_, true) => 30.0,
    }
}

/// One run of a dynamic scenario, as per-second series.
struct DynamicRun {
    change_s: f64,
    t: Vec<f64>,
    throughput: Vec<f64>,
    migrated_bytes_per_s: Vec<f64>,
    /// Seconds after the change until throughput stays within 5 % of its final level.
    converge_s: f64,
    /// Migrated bytes over the application's bytes in the last fifth of the run.
    tail_migration_share: f64,
}

fn dynamic_run(scenario: &str, system: &str, colloid: bool, quick: bool) -> Result<DynamicRun> {
    let change_s = change_at_s(system, quick);
    let total = if system == "tpp" {
        change_s + 300.0
    } else {
        change_s * 2.0
    };
    let mut ov: Vec<(&str, toml::Value)> = vec![
        ("policy.policy", toml::Value::String(system.into())),
        ("duration_s", toml::Value::Float(total)),
    ];
    match scenario {
        "hot-set-move-0x" => ov.push(("workload.hot_set_move_at_s", toml::Value::Float(change_s))),
        "hot-set-move-3x" => {
            ov.push(("workload.hot_set_move_at_s", toml::Value::Float(change_s)));
            ov.push(("antagonist", antagonist_at(3)));
        }
        _ => {
            let mut t = toml::map::Map::new();
            t.insert("tier".into(), toml::Value::Integer(0));
            t.insert("cores".into(), toml::Value::Float(15.0));
            t.insert("start_s".into(), toml::Value::Float(change_s));
            ov.push((
                "antagonist",
                toml::Value::Array(vec![toml::Value::Table(t)]),
            ));
        }
    }
    if colloid {
        ov.push(("colloid", colloid_on()));
    }
    let cfg = config_with(COLLOID_GUPS_BASE, "gups-base", &ov)?;
    let run = runner::run(&cfg)?;
    let recs = &run.backend.records;
    let shape = run.backend.workload().op_shape();
    let bytes_per_op = (shape.lines_per_op as f64 + shape.written_lines_per_op)
        * tiermem_core::CACHELINE_BYTES as f64;
    let (mut t, mut thr, mut mig, mut app_bytes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for chunk in recs.chunks((1000.0 / cfg.record_interval_ms).round().max(1.0) as usize) {
        let k = chunk.len() as f64;
        t.push(chunk.last().map_or(0.0, |r| r.t_s));
        thr.push(chunk.iter().map(|r| r.ops_per_s).sum::<f64>() / k);
        mig.push(chunk.iter().map(|r| r.migrated_bytes_per_s).sum::<f64>() / k);
        app_bytes.push(
            chunk
                .iter()
                .map(|r| r.ops_per_s * bytes_per_op)
                .sum::<f64>()
                / k,
        );
    }
    let n = t.len();
    let tail_from = n - (n / 5).max(1);
    let tail_mig: f64 = mig[tail_from..].iter().sum();
    let tail_app: f64 = app_bytes[tail_from..].iter().sum();
    Ok(DynamicRun {
        change_s,
        converge_s: converge_s(&t, &thr, change_s),
        tail_migration_share: tail_mig / tail_app,
        t,
        throughput: thr,
        migrated_bytes_per_s: mig,
    })
}

/// A dynamic run's key: scenario, system, with Colloid.
type ScenarioKey<'a> = (&'a str, &'a str, bool);

/// Write a dynamic scenario's per-second series (one row per second of every run).
fn write_series(out: &Path, file: &str, runs: &[((&str, &str, bool), DynamicRun)]) -> Result<()> {
    let mut csv =
        String::from("scenario,system,colloid,t_s,throughput_ops_per_s,migrated_bytes_per_s\n");
    for ((sc, system, colloid), r) in runs {
        for i in 0..r.t.len() {
            csv.push_str(&format!(
                "{sc},{system},{colloid},{},{},{}\n",
                r.t[i], r.throughput[i], r.migrated_bytes_per_s[i]
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let p = out.join(file);
    std::fs::write(&p, csv).map_err(|e| Error::io(p.display(), e))
}

fn dynamic_runs<'a>(
    jobs: Vec<ScenarioKey<'a>>,
    quick: bool,
) -> Result<Vec<(ScenarioKey<'a>, DynamicRun)>> {
    parallel_map(jobs, |job| {
        dynamic_run(job.0, job.1, job.2, quick).map(|r| (job, r))
    })
    .into_iter()
    .collect()
}

fn colloid_fig9(quick: bool, out: &Path) -> Result<Value> {
    let systems = systems_for(quick);
    let mut jobs = Vec::new();
    for sc in SCENARIOS {
        for &system in systems {
            for colloid in [false, true] {
                jobs.push((sc, system, colloid));
            }
        }
    }
    let runs = dynamic_runs(jobs, quick)?;
    let mut rows = Vec::new();
    for ((sc, system, colloid), r) in &runs {
        let n = r.throughput.len();
        let tail_n = (n / 10).max(1);
        rows.push(json!({
            "scenario": sc,
            "system": system,
            "colloid": colloid,
            "change_at_s": r.change_s,
            "converge_s": r.converge_s,
            "tail_migration_share": r.tail_migration_share,
            "final_throughput": r.throughput[n - tail_n..].iter().sum::<f64>() / tail_n as f64,
        }));
    }
    write_series(out, "fig9_timeseries.csv", &runs)?;
    Ok(
        json!({"experiment": "colloid-fig9", "quick": quick, "change_at_s": change_at_s("hemem", quick), "rows": rows}),
    )
}

/// Colloid Fig. 10: HeMem's and HeMem+Colloid's migration rate over time when the hot set
/// moves (Fig. 9's first two scenarios): the peak after the change, the time to converge,
/// and the steady migration rate against the application's traffic.
fn colloid_fig10(quick: bool, out: &Path) -> Result<Value> {
    let mut jobs = Vec::new();
    for sc in &SCENARIOS[..2] {
        for colloid in [false, true] {
            jobs.push((*sc, "hemem", colloid));
        }
    }
    let runs = dynamic_runs(jobs, quick)?;
    let mut rows = Vec::new();
    for ((sc, system, colloid), r) in &runs {
        let after =
            r.t.iter()
                .position(|&t| t > r.change_s)
                .unwrap_or(r.t.len());
        let peak = r.migrated_bytes_per_s[after..]
            .iter()
            .cloned()
            .fold(0.0, f64::max);
        rows.push(json!({
            "scenario": sc,
            "system": system,
            "colloid": colloid,
            "change_at_s": r.change_s,
            "peak_migrated_bytes_per_s": peak,
            "converge_s": r.converge_s,
            "tail_migration_share": r.tail_migration_share,
        }));
    }
    write_series(out, "fig10_migration_rate.csv", &runs)?;
    Ok(
        json!({"experiment": "colloid-fig10", "quick": quick, "change_at_s": change_at_s("hemem", quick), "rows": rows}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gups_config(level: u32, three_tiers: bool) -> SimConfig {
        let mut ov = vec![("antagonist", antagonist_at(level))];
        if three_tiers {
            let doc: toml::Value = toml::from_str(COLLOID_THREE_TIERS).unwrap();
            ov.push(("machine.tiers", doc["machine"]["tiers"].clone()));
        }
        config_with(COLLOID_GUPS_BASE, "gups-base", &ov).unwrap()
    }

    /// Fig. 11's footprints as modelled (GAPBS's Twitter-sized graph ~14.6 GB, Silo at 1/10
    /// ~6.6 GB, CacheLib's 15 M 4 KiB records ~62 GB) and a default tier of a third of each.
    #[test]
    fn fig11_apps_get_a_default_tier_of_a_third_of_their_footprint() {
        let apps = fig11_apps().unwrap();
        let names: Vec<&str> = apps.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["gapbs", "silo", "cachelib"]);
        let gib = |b: u64| b as f64 * 3.0 / (1u64 << 30) as f64;
        let footprints: Vec<f64> = apps.iter().map(|a| gib(a.third)).collect();
        for (f, (lo, hi)) in footprints
            .iter()
            .zip([(12.0, 16.0), (5.5, 8.0), (55.0, 66.0)])
        {
            assert!(*f > lo && *f < hi, "{footprints:?} GiB");
        }
    }

    /// A run of 10 s at 1 op/s then 3 op/s (records every 5 s), steady 3 op/s.
    #[test]
    fn fixed_work_throughput_counts_the_warm_up_and_extends_at_steady_state() {
        let series = [(5.0, 1.0), (10.0, 1.0), (15.0, 3.0), (20.0, 3.0)];
        // 5 ops: done at 5 s.
        assert!((fixed_work_throughput(&series, 3.0, 5.0) - 1.0).abs() < 1e-12);
        // 16 ops: 10 in the first 10 s, 6 more at 3 op/s: 12 s.
        assert!((fixed_work_throughput(&series, 3.0, 16.0) - 16.0 / 12.0).abs() < 1e-12);
        // 70 ops: 40 by 20 s, 30 more at the steady 3 op/s: 30 s.
        assert!((fixed_work_throughput(&series, 3.0, 70.0) - 70.0 / 30.0).abs() < 1e-12);
        // A long run tends to the steady state.
        assert!((fixed_work_throughput(&series, 3.0, 1e9) - 3.0).abs() < 1e-6);
    }

    /// Fig. 11's Silo runs with compute per operation and 3 dependent rounds; the others
    /// on GUPS's cores; every app has the paper's work.
    #[test]
    fn fig11_apps_carry_their_cores_and_work() {
        let apps = fig11_apps().unwrap();
        let silo = apps.iter().find(|a| a.name == "silo").unwrap();
        let keys: Vec<&str> = silo.machine.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"machine.compute_ns_per_op"), "{keys:?}");
        let ov = silo.overrides();
        let ov: Vec<(&str, toml::Value)> =
            ov.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let cfg = config_with(COLLOID_GUPS_BASE, "fig11", &ov).unwrap();
        assert_eq!(cfg.machine.compute_ns_per_op, 1207.0);
        assert!((cfg.machine.ops_in_flight - 1.0 / 3.0).abs() < 1e-6);
        for a in &apps {
            assert!(a.paper_ops >= 1e9, "{}", a.name);
        }
        assert!(apps
            .iter()
            .find(|a| a.name == "gapbs")
            .unwrap()
            .machine
            .is_empty());
    }

    /// Pages of mass 0.4, 0.3, 0.2, 0.1; tiers of 1, 1 and 2 pages.
    #[test]
    fn reachable_masses_are_bounded_by_the_hottest_pages_each_set_of_tiers_holds() {
        let r = Reachable::new(&[3.0, 1.0, 4.0, 2.0], &[1.0, 1.0, 2.0]).unwrap();
        assert!(r.contains(&[0.4, 0.3, 0.3]));
        assert!(
            r.contains(&[0.1, 0.2, 0.7]),
            "DRAM keeps only the coldest page"
        );
        assert!(
            !r.contains(&[0.0, 0.3, 0.7]),
            "three pages hold at most 0.9"
        );
        assert!(!r.contains(&[0.5, 0.2, 0.3]), "one page holds at most 0.4");
        assert!(!r.contains(&[0.1, 0.1, 0.8]), "two pages hold at most 0.7");
        assert!(!r.contains(&[0.4, 0.3, 0.2]), "masses sum to 1");
        let h = r.hottest_first();
        assert!(
            (h[0] - 0.4).abs() < 1e-12 && (h[1] - 0.3).abs() < 1e-12,
            "{h:?}"
        );
        assert!(
            Reachable::new(&[1.0; 5], &[1.0, 1.0, 2.0]).is_err(),
            "5 pages, room for 4"
        );
    }

    /// Two tiers: the search equals a scan of 20 001 default-tier masses.
    #[test]
    fn oracle_on_two_tiers_is_the_best_of_a_fine_scan() {
        let cfg = gups_config(2, false);
        let best = best_case(&cfg).unwrap();
        let backend = SimBackend::new(&cfg).unwrap();
        let caps: Vec<f64> = backend.capacity_pages().iter().map(|&c| c as f64).collect();
        let reach = Reachable::new(backend.workload().probabilities().unwrap(), &caps).unwrap();
        let scan = (0..=20_000)
            .map(|k| k as f64 / 20_000.0)
            .filter(|&m| reach.contains(&[m, 1.0 - m]))
            .map(|m| backend.solve_for_mass(&[m, 1.0 - m]).app_ops_per_s)
            .fold(0.0, f64::max);
        assert!(scan > 0.0);
        assert!(
            best.eq.app_ops_per_s >= scan * (1.0 - 1e-9),
            "oracle {} < scan {scan}",
            best.eq.app_ops_per_s
        );
    }

    /// Three tiers: no sampled reachable placement beats the oracle, which leaves DRAM
    /// empty under 3x contention (as on two tiers).
    #[test]
    fn oracle_on_three_tiers_beats_every_sampled_placement() {
        let cfg = gups_config(3, true);
        let best = best_case(&cfg).unwrap();
        assert!(best.mass[0] < 0.01, "{:?}", best.mass);
        let backend = SimBackend::new(&cfg).unwrap();
        let caps: Vec<f64> = backend.capacity_pages().iter().map(|&c| c as f64).collect();
        let reach = Reachable::new(backend.workload().probabilities().unwrap(), &caps).unwrap();
        assert!(reach.contains(&best.mass));
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut tried = 0;
        for _ in 0..4000 {
            let (a, b) = (next(), next());
            let (lo, hi) = (a.min(b), a.max(b));
            let m = [lo, hi - lo, 1.0 - hi];
            if !reach.contains(&m) {
                continue;
            }
            tried += 1;
            let v = backend.solve_for_mass(&m).app_ops_per_s;
            assert!(
                v <= best.eq.app_ops_per_s * (1.0 + 1e-9),
                "{m:?} gives {v}, oracle {} at {:?}",
                best.eq.app_ops_per_s,
                best.mass
            );
        }
        assert!(tried > 500, "{tried} reachable samples");
    }
}
