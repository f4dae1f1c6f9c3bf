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

/// Every reproduction `tiermem reproduce` (and `reproduce all`) runs. Memstrata's allocator
/// figures need the estimator's ONNX inference, so they exist only in builds with the `onnx`
/// feature (a plain build would fail them every time in `reproduce all`).
pub const EXPERIMENTS: &[&str] = &[
    "colloid-fig1",
    "colloid-fig5",
    "colloid-fig7",
    "colloid-fig8",
    "colloid-fig9",
    "mercury-fig13",
    "mercury-fig14",
    "mercury-fig16",
    "granularity-fig8",
    "memstrata-fig5",
    "memstrata-fig6",
    "tierscape-fig8",
    #[cfg(feature = "onnx")]
    "memstrata-fig10",
    #[cfg(feature = "onnx")]
    "memstrata-fig12",
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
        "colloid-fig5" => colloid_fig5(quick)?,
        "colloid-fig7" => colloid_heatmap(quick, Axis::AltLatency)?,
        "colloid-fig8" => colloid_heatmap(quick, Axis::ObjectSize)?,
        "colloid-fig9" => colloid_fig9(quick, out)?,
        "mercury-fig13" => crate::reproduce_mercury::fig13(quick, out)?,
        "tierscape-fig8" => crate::reproduce_tierscape::fig8_with_tiers(quick, out, tiers)?,
        "mercury-fig14" => crate::reproduce_mercury::fig14(quick, out)?,
        "mercury-fig16" => crate::reproduce_mercury::fig16(quick, out)?,
        "granularity-fig8" => crate::ics18::run(quick)?,
        "memstrata-fig5" => crate::reproduce_memstrata::fig5(quick)?,
        "memstrata-fig6" => crate::reproduce_memstrata::fig6(quick)?,
        "memstrata-fig10" => crate::reproduce_memstrata::fig10(quick)?,
        "memstrata-fig12" => crate::reproduce_memstrata::fig12(quick)?,
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
/// breadth"). For a stationary workload on two memory tiers, throughput depends on the
/// placement only through the fraction `m` of accesses the default tier serves. Every `m`
/// between two bounds is reachable: at most the hottest pages that fit the default tier
/// (`m_max`), at least the coldest pages the alternate tier cannot hold (`m_min`; the default
/// tier may be left partly or wholly empty). The oracle maximises throughput over that
/// interval: a 400-point grid, then golden-section refinement around the best point (the
/// throughput is unimodal in `m` under this model: more default-tier mass means less
/// alternate-tier load and more default-tier load). Colloid §2.1's search (0, 10, ..., 100 %
/// of the hot set in the default tier, the rest filled with cold pages) is a subset of it,
/// so no policy should beat it beyond the solver's tolerance.
pub struct BestCase {
    /// The fraction of accesses the default tier serves in the best placement.
    pub default_mass: f64,
    pub eq: Equilibrium,
}

pub fn best_case(cfg: &SimConfig) -> Result<BestCase> {
    let backend = SimBackend::new(cfg)?;
    let probs = backend.workload().probabilities().ok_or_else(|| {
        Error::config(
            "best-case needs a stationary workload (per-page access probabilities), not a trace",
        )
    })?;
    let specs = backend.tier_specs();
    if specs.len() != 2
        || specs
            .iter()
            .any(|t| matches!(t.kind, tiermem_core::TierKind::Compressed { .. }))
    {
        return Err(Error::config(format!(
            "best-case is solved for two memory tiers; this machine has {} tiers (machine.tiers)",
            specs.len()
        )));
    }
    let caps = backend.capacity_pages();
    let mut sorted: Vec<f64> = probs.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let n = sorted.len();
    let total: f64 = sorted.iter().sum();
    let prefix = |k: usize| -> f64 { sorted[..k.min(n)].iter().sum::<f64>() / total };
    let m_max = prefix(caps[0] as usize);
    let must_default = n.saturating_sub(caps[1] as usize);
    let m_min = 1.0 - prefix(n - must_default.min(n));
    let ops = |m: f64| backend.solve_for_mass(&[m, 1.0 - m]).app_ops_per_s;
    const GRID: usize = 400;
    let at = |k: usize| m_min + (m_max - m_min) * k as f64 / GRID as f64;
    let best_k = (0..=GRID)
        .map(|k| (k, ops(at(k))))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(0, |(k, _)| k);
    // Golden-section search on the bracket around the best grid point.
    let (mut lo, mut hi) = (at(best_k.saturating_sub(1)), at((best_k + 1).min(GRID)));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (a, b) = (hi - g * (hi - lo), lo + g * (hi - lo));
        if ops(a) >= ops(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    let mut m = (lo + hi) / 2.0;
    if ops(at(best_k)) > ops(m) {
        m = at(best_k);
    }
    Ok(BestCase {
        default_mass: m,
        eq: backend.solve_for_mass(&[m, 1.0 - m]),
    })
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

fn colloid_fig1(quick: bool) -> Result<Value> {
    // Steady-state throughput of the hot-first baselines at each contention level, and the
    // best static placement (Colloid Figs. 1–2).
    let origin = "experiments/colloid/gups-base.toml";
    let mut jobs = Vec::new();
    for &system in BASELINES {
        for level in 0..=3u32 {
            jobs.push((system, level));
        }
    }
    let runs = parallel_map(
        jobs,
        |(system, level)| -> Result<(String, u32, runner::Steady)> {
            let cfg = config_with(
                COLLOID_GUPS_BASE,
                origin,
                &[
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
    let mut best = Vec::new();
    for level in 0..=3u32 {
        let cfg = config_with(
            COLLOID_GUPS_BASE,
            origin,
            &[("antagonist", antagonist_at(level))],
        )?;
        best.push(best_case(&cfg)?);
    }
    let share = |app: &[f64]| app.first().copied().unwrap_or(0.0);
    let mut rows = Vec::new();
    for r in runs {
        let (system, level, s) = r?;
        let b = &best[level as usize];
        rows.push(json!({
            "system": system,
            "contention": level,
            "throughput": s.throughput_ops_per_s,
            "best_case_throughput": b.eq.app_ops_per_s,
            "default_tier_latency_ns": s.latency_ns[0],
            "alternate_tier_latency_ns": s.latency_ns[1],
            "default_tier_share": share(&s.app_share),
        }));
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
    Ok(json!({
        "experiment": "colloid-fig1",
        "quick": quick,
        "throughput_unit": "GUPS operations per second",
        "rows": rows,
    }))
}

fn colloid_on() -> toml::Value {
    toml::Value::Table(Default::default())
}

/// One steady-state GUPS run of the Colloid setup.
fn steady_run(
    system: &str,
    colloid: bool,
    level: u32,
    quick: bool,
    extra: &[(&str, toml::Value)],
) -> Result<(runner::Steady, SimConfig)> {
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
    let out = runner::run(&cfg)?;
    Ok((out.steady(cfg.steady_state_fraction), cfg))
}

fn colloid_fig5(quick: bool) -> Result<Value> {
    let mut jobs = Vec::new();
    for &system in BASELINES {
        for colloid in [false, true] {
            for level in 0..=3u32 {
                jobs.push((system, colloid, level));
            }
        }
    }
    let runs = parallel_map(jobs, |(system, colloid, level)| {
        steady_run(system, colloid, level, quick, &[]).map(|(s, _)| (system, colloid, level, s))
    });
    let mut best = Vec::new();
    for level in 0..=3u32 {
        let cfg = config_with(
            COLLOID_GUPS_BASE,
            "gups-base",
            &[("antagonist", antagonist_at(level))],
        )?;
        best.push(best_case(&cfg)?);
    }
    let mut rows = Vec::new();
    for r in runs {
        let (system, colloid, level, s) = r?;
        rows.push(json!({
            "system": system,
            "colloid": colloid,
            "contention": level,
            "throughput": s.throughput_ops_per_s,
            "best_case_throughput": best[level as usize].eq.app_ops_per_s,
            "default_tier_latency_ns": s.latency_ns[0],
            "alternate_tier_latency_ns": s.latency_ns[1],
            "default_tier_share": s.app_share[0],
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
        }));
    }
    Ok(
        json!({"experiment": "colloid-fig5", "quick": quick, "throughput_unit": "GUPS operations per second", "rows": rows}),
    )
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
    // Quick runs sweep the systems with fast convergence; the full run includes TPP.
    let systems: &[&str] = if quick {
        &["hemem", "memtis"]
    } else {
        BASELINES
    };
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
            .map(|(s, _)| (system, v, level, colloid, s))
    });
    let runs: Vec<_> = runs.into_iter().collect::<Result<_>>()?;
    let key = match axis {
        Axis::AltLatency => "alt_latency_ratio",
        Axis::ObjectSize => "object_size",
    };
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
        rows.push(json!({
            "system": system,
            "contention": level,
            key: v,
            "throughput": s.throughput_ops_per_s,
            "colloid_throughput": with,
            "gain": with / s.throughput_ops_per_s,
        }));
    }
    Ok(json!({"experiment": name, "quick": quick, "rows": rows}))
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

fn colloid_fig9(quick: bool, out: &Path) -> Result<Value> {
    let change_s: f64 = if quick { 30.0 } else { 100.0 };
    let scenarios = ["hot-set-move-0x", "hot-set-move-3x", "contention-0x-to-3x"];
    let systems: &[&str] = if quick {
        &["hemem", "memtis"]
    } else {
        BASELINES
    };
    let mut jobs = Vec::new();
    for sc in scenarios {
        for &system in systems {
            for colloid in [false, true] {
                jobs.push((sc, system, colloid));
            }
        }
    }
    // The paper changes the workload once every system has reached steady state; TPP needs
    // ~250 s for that (Colloid §5.3), so its change comes later.
    let change_for = |system: &str| {
        if system == "tpp" && !quick {
            300.0
        } else {
            change_s
        }
    };
    let results = parallel_map(jobs, |(sc, system, colloid)| -> Result<_> {
        let change_s = change_for(system);
        let total = if system == "tpp" {
            change_s + 300.0
        } else {
            change_s * 2.0
        };
        let mut ov: Vec<(&str, toml::Value)> = vec![
            ("policy.policy", toml::Value::String(system.into())),
            ("duration_s", toml::Value::Float(total)),
        ];
        match sc {
            "hot-set-move-0x" => {
                ov.push(("workload.hot_set_move_at_s", toml::Value::Float(change_s)))
            }
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
        // Per-second series.
        let recs = &run.backend.records;
        let mut t = Vec::new();
        let mut thr = Vec::new();
        let mut mig = Vec::new();
        let mut app_bytes = Vec::new();
        let shape = run.backend.workload().op_shape();
        let bytes_per_op = (shape.lines_per_op as f64 + shape.written_lines_per_op)
            * tiermem_core::CACHELINE_BYTES as f64;
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
        Ok((
            sc,
            system,
            colloid,
            t.clone(),
            thr.clone(),
            mig,
            converge_s(&t, &thr, change_s),
            tail_mig / tail_app,
        ))
    });
    let mut rows = Vec::new();
    let mut csv =
        String::from("scenario,system,colloid,t_s,throughput_ops_per_s,migrated_bytes_per_s\n");
    for r in results {
        let (sc, system, colloid, t, thr, mig, conv, tail) = r?;
        for i in 0..t.len() {
            csv.push_str(&format!(
                "{sc},{system},{colloid},{},{},{}\n",
                t[i], thr[i], mig[i]
            ));
        }
        let n = thr.len();
        let tail_n = (n / 10).max(1);
        rows.push(json!({
            "scenario": sc,
            "system": system,
            "colloid": colloid,
            "change_at_s": change_for(system),
            "converge_s": conv,
            "tail_migration_share": tail,
            "final_throughput": thr[n - tail_n..].iter().sum::<f64>() / tail_n as f64,
        }));
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let p = out.join("fig9_timeseries.csv");
    std::fs::write(&p, csv).map_err(|e| Error::io(p.display(), e))?;
    Ok(json!({"experiment": "colloid-fig9", "quick": quick, "change_at_s": change_s, "rows": rows}))
}
