//! Reproductions of paper figures. Each experiment is a base config shipped under
//! `experiments/` (compiled in, so the binary works from anywhere) plus the sweep the
//! figure needs. Every run is an ordinary simulation of that config.

use crate::backend::SimBackend;
use crate::config::SimConfig;
use crate::machine::Equilibrium;
use crate::runner;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::path::Path;
use tiermem_core::{Error, Result, TierId};

pub const EXPERIMENTS: &[&str] = &["colloid-fig1"];

/// The GUPS setup of Colloid §2.1 (base for every Colloid figure).
pub const COLLOID_GUPS_BASE: &str = include_str!("../../../experiments/colloid/gups-base.toml");

/// Run a named experiment, write its outputs into `out`, and return its summary.
pub fn run(name: &str, out: &Path, quick: bool) -> Result<Value> {
    let summary = match name {
        "colloid-fig1" => colloid_fig1(quick)?,
        other => {
            return Err(Error::usage(format!("unknown experiment `{other}`; available: {}", EXPERIMENTS.join(", "))));
        }
    };
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let p = out.join("summary.json");
    std::fs::write(&p, serde_json::to_string_pretty(&summary).expect("json") + "\n").map_err(|e| Error::io(p.display(), e))?;
    Ok(summary)
}

/// Set a dotted path (`policy.policy`, `antagonist`) in a TOML document.
pub fn set_path(doc: &mut toml::Value, path: &str, value: toml::Value) {
    let mut cur = doc;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let table = cur.as_table_mut().expect("TOML table");
        if i == parts.len() - 1 {
            table.insert(part.to_string(), value);
            return;
        }
        cur = table.entry(part.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
    }
}

/// Parse a base config, apply overrides, and validate the result as a `SimConfig`.
pub fn config_with(base: &str, origin: &str, overrides: &[(&str, toml::Value)]) -> Result<SimConfig> {
    let mut doc: toml::Value = toml::from_str(base).map_err(|e| Error::config(format!("{origin}: {e}")))?;
    for (path, v) in overrides {
        set_path(&mut doc, path, v.clone());
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

/// The best static placement (Colloid §2.1): put 0, 10, …, 100 % of the hot set in the
/// default tier, fill the rest of the default tier with random cold pages, and keep the
/// placement with the highest throughput.
pub struct BestCase {
    pub hot_fraction: f64,
    pub eq: Equilibrium,
}

pub fn best_case(cfg: &SimConfig) -> Result<BestCase> {
    let mut backend = SimBackend::new(cfg)?;
    let hot = backend
        .workload()
        .hot_pages()
        .ok_or_else(|| Error::config("best-case needs a workload with a hot set (e.g. gups)"))?;
    let pages = backend.placement().len();
    let caps = backend.capacity_pages().to_vec();
    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0xbe57);
    let mut hot_shuffled = hot.clone();
    hot_shuffled.shuffle(&mut rng);
    let mut is_hot = vec![false; pages];
    for &p in &hot {
        is_hot[p as usize] = true;
    }
    let mut cold: Vec<u32> = (0..pages as u32).filter(|&p| !is_hot[p as usize]).collect();
    cold.shuffle(&mut rng);
    let mut best: Option<BestCase> = None;
    for step in 0..=10 {
        let f = step as f64 / 10.0;
        let n_hot_default = ((hot.len() as f64 * f).round() as usize).min(caps[0] as usize);
        let mut placement = vec![TierId(u8::MAX); pages];
        let mut used = vec![0u64; caps.len()];
        let put = |p: u32, t: usize, placement: &mut Vec<TierId>, used: &mut Vec<u64>| -> bool {
            if used[t] < caps[t] {
                placement[p as usize] = TierId(t as u8);
                used[t] += 1;
                true
            } else {
                false
            }
        };
        for &p in &hot_shuffled[..n_hot_default] {
            put(p, 0, &mut placement, &mut used);
        }
        // Remaining hot pages go to the alternate tiers first; cold pages fill the default tier.
        for &p in &hot_shuffled[n_hot_default..] {
            let ok = (1..caps.len()).any(|t| put(p, t, &mut placement, &mut used)) || put(p, 0, &mut placement, &mut used);
            assert!(ok, "capacity checked at construction");
        }
        for &p in &cold {
            let ok = (0..caps.len()).any(|t| put(p, t, &mut placement, &mut used));
            assert!(ok, "capacity checked at construction");
        }
        backend.set_placement(placement)?;
        let eq = backend.solve_now();
        if best.as_ref().is_none_or(|b| eq.app_ops_per_s > b.eq.app_ops_per_s) {
            best = Some(BestCase { hot_fraction: f, eq });
        }
    }
    Ok(best.expect("eleven placements evaluated"))
}

/// Run jobs on all cores (the machine here has 2), keeping result order.
pub fn parallel_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
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
fn duration_for(system: &str, quick: bool) -> f64 {
    match (system, quick) {
        ("tpp", false) => 300.0,
        ("tpp", true) => 120.0,
        (_, false) => 60.0,
        (_, true) => 30.0,
    }
}

fn colloid_fig1(quick: bool) -> Result<Value> {
    let origin = "experiments/colloid/gups-base.toml";
    let mut jobs = Vec::new();
    for &system in BASELINES {
        for level in 0..=3u32 {
            jobs.push((system, level));
        }
    }
    let runs = parallel_map(jobs, |(system, level)| -> Result<(String, u32, runner::Steady)> {
        let cfg = config_with(
            COLLOID_GUPS_BASE,
            origin,
            &[
                ("policy.policy", toml::Value::String(system.into())),
                ("antagonist", antagonist_at(level)),
                ("duration_s", toml::Value::Float(duration_for(system, quick))),
            ],
        )?;
        let out = runner::run(&cfg)?;
        Ok((system.to_string(), level, out.steady(cfg.steady_state_fraction)))
    });
    let mut best = Vec::new();
    for level in 0..=3u32 {
        let cfg = config_with(COLLOID_GUPS_BASE, origin, &[("antagonist", antagonist_at(level))])?;
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
            "hot_fraction_in_default": b.hot_fraction,
        }));
    }
    Ok(json!({
        "experiment": "colloid-fig1",
        "quick": quick,
        "throughput_unit": "GUPS operations per second",
        "rows": rows,
    }))
}
