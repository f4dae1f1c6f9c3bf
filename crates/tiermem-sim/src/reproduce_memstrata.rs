//! Reproductions of Memstrata's figures (OSDI'24) on the simulated Flat Memory Mode node
//! (`flat_memory`, `memstrata`): Fig. 5 (the population under all-local, CXL-only,
//! hardware-only and mixed memory), Fig. 6 (a noisy neighbour with conflicting vs
//! colored allocation), Fig. 11 (the population under TPP on the same memory) and the
//! allocator's Fig. 10/12. `summary.json` rows: `{experiment, workload, category, config,
//! slowdown, miss_ratio, dedicated_share}`; `stats` holds the shares the paper reports.

use crate::flat_backend::FlatBackend;
use crate::flat_memory::{
    allocate, Allocation, Backing, FlatMachine, Frame, Pattern, Vm, VmMemory,
};
use crate::memstrata::{self, paper_machine, Workload, COLORS, OUTLIER};
use crate::reproduce::parallel_map;
use rand::SeedableRng;
use serde_json::{json, Value};
use tiermem_core::{Controller, Engine, Result};
use tiermem_policies::memstrata::{AllocatorConfig, MemstrataAllocator, OutlierEstimator};

/// The population's seed (fixed: every run reproduces the same 115 workloads).
const SEED: u64 = 15;
/// Mixed mode's dedicated share (§3.2: 33 % dedicated + 67 % hardware-tiered).
pub const MIXED_DEDICATED: f64 = 1.0 / 3.0;

/// The calibrated population on the paper's machine (128 GB local).
pub fn calibrated_population(m: &FlatMachine) -> Result<Vec<Workload>> {
    calibrated_draw(m, SEED)
}

/// The population drawn with `seed`, each workload calibrated to its CXL-only target.
fn calibrated_draw(m: &FlatMachine, seed: u64) -> Result<Vec<Workload>> {
    parallel_map(memstrata::population(seed), |mut w| {
        memstrata::calibrate(m, &mut w).map(|_| w)
    })
    .into_iter()
    .collect()
}

fn share(xs: &[f64], at_most: f64) -> f64 {
    xs.iter().filter(|&&x| x <= at_most).count() as f64 / xs.len().max(1) as f64
}

fn row(experiment: &str, w: &Workload, config: &str, slowdown: f64, miss: f64, ded: f64) -> Value {
    json!({
        "experiment": experiment,
        "workload": w.name,
        "category": w.category,
        "config": config,
        "slowdown": slowdown,
        "miss_ratio": miss,
        "dedicated_share": ded,
    })
}

/// Other draws of the population, for how much the Fig. 5 shares owe to one draw of 115.
const OTHER_SEEDS: [u64; 7] = [1, 2, 3, 4, 5, 6, 7];

/// Fig. 5's configurations: name, backing, dedicated share.
const FIG5_CONFIGS: [(&str, Backing, f64); 3] = [
    ("cxl-only", Backing::CxlOnly, 0.0),
    ("hw-tiered", Backing::Tiered, 0.0),
    ("mixed", Backing::Tiered, MIXED_DEDICATED),
];

/// Per workload, alone in its VM: (slowdown against all-local, miss ratio) under each of
/// [`FIG5_CONFIGS`].
fn fig5_runs(m: &FlatMachine, pop: &[Workload]) -> Result<Vec<[(f64, f64); 3]>> {
    parallel_map(pop.to_vec(), |w| -> Result<[(f64, f64); 3]> {
        let local = memstrata::alone(m, &w, Backing::AllLocal, 0.0, SEED)?.0;
        let mut out = [(0.0, 0.0); 3];
        for (o, &(_, backing, ded)) in out.iter_mut().zip(&FIG5_CONFIGS) {
            let (ops, miss) = memstrata::alone(m, &w, backing, ded, SEED)?;
            *o = (local / ops - 1.0, miss);
        }
        Ok(out)
    })
    .into_iter()
    .collect()
}

/// Fig. 5's shares (≤ 5 % and ≤ 10 %) of one configuration's slowdowns.
fn fig5_shares(slowdowns: &[f64]) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    out.insert(
        "share_at_most_5pct".into(),
        json!(share(slowdowns, OUTLIER)),
    );
    out.insert("share_at_most_10pct".into(), json!(share(slowdowns, 0.10)));
    out
}

/// Per configuration, [`fig5_shares`] of each run's slowdown (and the largest, when
/// `with_max`).
fn fig5_stats(runs: &[[(f64, f64); 3]], with_max: bool) -> Value {
    let mut stats = serde_json::Map::new();
    for (i, (name, _, _)) in FIG5_CONFIGS.iter().enumerate() {
        let s: Vec<f64> = runs.iter().map(|r| r[i].0).collect();
        let mut v = fig5_shares(&s);
        if with_max {
            v.insert(
                "max_slowdown".into(),
                json!(s.iter().copied().fold(0.0, f64::max)),
            );
        }
        stats.insert((*name).into(), Value::Object(v));
    }
    Value::Object(stats)
}

/// Fig. 5: each workload alone in a VM; slowdown against all-local for CXL-only,
/// hardware-tiered only, and mixed (33 % dedicated). Quick mode is the same population
/// (the page-level model is fast enough for all of it); the full run also draws the
/// population with [`OTHER_SEEDS`] and reports each draw's shares and their mean
/// (`over_seeds`), since one draw of 115 pins a share only to several points.
pub fn fig5(quick: bool) -> Result<Value> {
    let m = paper_machine(128);
    let pop = calibrated_population(&m)?;
    let runs = fig5_runs(&m, &pop)?;
    let mut rows = Vec::new();
    for (w, r) in pop.iter().zip(&runs) {
        for (&(name, _, ded), &(slowdown, miss)) in FIG5_CONFIGS.iter().zip(r) {
            rows.push(row("memstrata-fig5", w, name, slowdown, miss, ded));
        }
    }
    let stats = fig5_stats(&runs, true);
    let mut over_seeds = Value::Null;
    if !quick {
        // The figure's own draw is the stats above; only the other seeds are solved again.
        let mut draws = vec![json!({"seed": SEED, "stats": stats.clone()})];
        for seed in OTHER_SEEDS {
            let runs = fig5_runs(&m, &calibrated_draw(&m, seed)?)?;
            draws.push(json!({"seed": seed, "stats": fig5_stats(&runs, false)}));
        }
        let mut mean = serde_json::Map::new();
        for (name, _, _) in FIG5_CONFIGS {
            let avg = |k: &str| {
                draws
                    .iter()
                    .map(|d| d["stats"][name][k].as_f64().unwrap_or(f64::NAN))
                    .sum::<f64>()
                    / draws.len() as f64
            };
            mean.insert(
                name.into(),
                json!({"share_at_most_5pct": avg("share_at_most_5pct"),
                       "share_at_most_10pct": avg("share_at_most_10pct")}),
            );
        }
        over_seeds = json!({"draws": draws, "mean": mean});
    }
    Ok(json!({
        "experiment": "memstrata-fig5",
        "over_seeds": over_seeds,
        "workloads": pop,
        "paper": {"hw-tiered": {"share_at_most_5pct": 0.73, "share_at_most_10pct": 0.86},
                  "mixed": {"share_at_most_5pct": 0.82, "share_at_most_10pct": 0.95}},
        "stats": stats,
        "rows": rows,
    }))
}

/// The noisy neighbour (§3.3): a 6-thread MLC-like VM sweeping memory of the victim's size
/// in a busy loop.
fn mlc(pages: usize, frames: Vec<crate::flat_memory::Frame>) -> Vm {
    Vm {
        name: "mlc".into(),
        cores: crate::machine::CoreModel {
            cores: 6.0,
            ops_in_flight: 10.0,
            mlp_lines: 16.0,
            compute_ns_per_op: 0.0,
        },
        lines_per_op: 1.0,
        written_lines_per_op: 0.0,
        memory: VmMemory {
            probability: vec![1.0 / pages as f64; pages],
            pattern: vec![Pattern::Scan; pages],
            frames,
            random_line_share: 1.0,
        },
    }
}

/// A victim's ops and miss ratio on hardware-tiered memory, alone or beside the
/// neighbour, under an allocation.
fn victim(m: &FlatMachine, w: &Workload, neighbour: bool, alloc: Allocation) -> Result<(f64, f64)> {
    let n = w.pages();
    let pages: Vec<usize> = if neighbour { vec![n, n] } else { vec![n] };
    let frames = allocate(m.slots, &pages, &vec![0; pages.len()], alloc, SEED)?;
    let mut it = frames.into_iter();
    let mut vms = vec![w.vm(it.next().expect("victim frames"))];
    if neighbour {
        vms.push(mlc(n, it.next().expect("neighbour frames")));
    }
    let eq = m.solve(&vms, Backing::Tiered);
    Ok((eq.ops_per_s[0], eq.miss_ratio[0]))
}

/// Fig. 6: every workload beside the noisy neighbour, colored ("isolated") vs conflicting
/// allocation; slowdown of conflicting against isolated (the paper's metric), and of
/// isolated against the victim alone (what coloring leaves: bandwidth only).
pub fn fig6(quick: bool) -> Result<Value> {
    let m = paper_machine(128);
    let mut pop = calibrated_population(&m)?;
    if quick {
        // Every third workload: each category still represented.
        pop = pop.into_iter().step_by(3).collect();
    }
    let colored = Allocation::Colored { colors: COLORS };
    let results = parallel_map(pop.clone(), |w| -> Result<Vec<Value>> {
        let alone = victim(&m, &w, false, colored)?;
        let isolated = victim(&m, &w, true, colored)?;
        let conflicting = victim(&m, &w, true, Allocation::Conflicting)?;
        Ok(vec![
            row(
                "memstrata-fig6",
                &w,
                "isolated-vs-alone",
                alone.0 / isolated.0 - 1.0,
                isolated.1,
                0.0,
            ),
            row(
                "memstrata-fig6",
                &w,
                "conflicting-vs-isolated",
                isolated.0 / conflicting.0 - 1.0,
                conflicting.1,
                0.0,
            ),
        ])
    });
    let mut rows = Vec::new();
    for r in results {
        rows.extend(r?);
    }
    // Memory-sensitive: more than the outlier threshold slower on CXL alone.
    let sensitive: Vec<&str> = pop
        .iter()
        .filter(|w| w.cxl_slowdown_target > OUTLIER)
        .map(|w| w.name.as_str())
        .collect();
    let of = |config: &str, only_sensitive: bool| -> Vec<f64> {
        rows.iter()
            .filter(|r| r["config"] == config)
            .filter(|r| !only_sensitive || sensitive.iter().any(|s| r["workload"] == *s))
            .map(|r| r["slowdown"].as_f64().unwrap_or(f64::NAN))
            .collect()
    };
    let conflicting_all = of("conflicting-vs-isolated", false);
    let conflicting_sensitive = of("conflicting-vs-isolated", true);
    let isolated = of("isolated-vs-alone", false);
    Ok(json!({
        "experiment": "memstrata-fig6",
        "paper": {"share_over_10pct_conflicting": 0.73},
        "stats": {
            "workloads": pop.len(),
            "memory_sensitive": sensitive.len(),
            "share_over_10pct_conflicting": 1.0 - share(&conflicting_all, 0.10),
            "share_over_10pct_conflicting_sensitive": 1.0 - share(&conflicting_sensitive, 0.10),
            "max_isolated_vs_alone": isolated.iter().copied().fold(0.0, f64::max),
        },
        "rows": rows,
    }))
}

/// Slowdown above which §6.1 counts a workload as thrashing under TPP (Fig. 11).
const THRASHING: f64 = 0.50;

/// Fig. 11: the single-workload study (Fig. 5's population) under TPP on the same memory as
/// hardware tiering: half of each VM's memory in local DRAM, half on CXL
/// ([`memstrata::under_tpp`]). Slowdown against all-local, beside the hardware-tiered one;
/// each row also carries the simulator's CXL-only slowdown, which must equal the target
/// the workload was calibrated to on the Flat Memory Mode model (one machine, two models).
/// Quick mode: every third workload, 4 simulated seconds instead of 6 (TPP scans 2.5 GB/s:
/// a 16 GB VM once in 6.4 s, a 32 GB one not entirely; the steady state is the last half;
/// 10 s, enough for every VM, did not finish in 39 minutes on 2 busy cores: the hint-fault
/// queue grows with the pages scanned).
pub fn fig11(quick: bool) -> Result<Value> {
    let m = paper_machine(128);
    let mut pop = calibrated_population(&m)?;
    let duration_s = if quick { 4.0 } else { 6.0 };
    if quick {
        pop = pop.into_iter().step_by(3).collect();
    }
    let results = parallel_map(pop.clone(), |w| -> Result<(Vec<Value>, f64)> {
        let local = memstrata::alone(&m, &w, Backing::AllLocal, 0.0, SEED)?.0;
        let (hw_ops, hw_miss) = memstrata::alone(&m, &w, Backing::Tiered, 0.0, SEED)?;
        let t = memstrata::under_tpp(&w, 0.5, duration_s, SEED)?;
        let cxl_only = t.all_local_ops / t.cxl_only_ops - 1.0;
        let mut tpp = row(
            "memstrata-fig11",
            &w,
            "tpp",
            t.all_local_ops / t.tpp_ops - 1.0,
            1.0 - t.local_share_of_accesses,
            0.0,
        );
        tpp["cxl_only_slowdown"] = json!(cxl_only);
        tpp["cxl_slowdown_target"] = json!(w.cxl_slowdown_target);
        tpp["migrated_bytes_per_s"] = json!(t.migrated_bytes_per_s);
        tpp["pages_migrated"] = json!(t.pages_migrated);
        tpp["vm_gib"] = json!(w.vm_gib);
        let hw = row(
            "memstrata-fig11",
            &w,
            "hw-tiered",
            local / hw_ops - 1.0,
            hw_miss,
            0.0,
        );
        Ok((vec![tpp, hw], (cxl_only - w.cxl_slowdown_target).abs()))
    });
    let (mut rows, mut calibration_gap) = (Vec::new(), 0.0f64);
    for r in results {
        let (r, gap) = r?;
        rows.extend(r);
        // NaN must not vanish in a max: it would read as a perfect calibration.
        calibration_gap = if gap.is_nan() || gap > calibration_gap {
            gap
        } else {
            calibration_gap
        };
    }
    let of = |config: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r["config"] == config)
            .map(|r| r["slowdown"].as_f64().unwrap_or(f64::NAN))
            .collect()
    };
    let mut stats = serde_json::Map::new();
    for config in ["tpp", "hw-tiered"] {
        let s = of(config);
        stats.insert(
            config.into(),
            json!({
                "share_over_50pct": 1.0 - share(&s, THRASHING),
                "share_at_most_5pct": share(&s, OUTLIER),
                "max_slowdown": s.iter().copied().fold(0.0, f64::max),
            }),
        );
    }
    stats.insert("workloads".into(), json!(pop.len()));
    stats.insert(
        "max_cxl_only_calibration_gap".into(),
        json!(calibration_gap),
    );
    Ok(json!({
        "experiment": "memstrata-fig11",
        "quick": quick,
        "local_share": 0.5,
        "duration_s": duration_s,
        "paper": {"tpp": {"share_over_50pct": 0.17}},
        "stats": stats,
        "rows": rows,
    }))
}

/// Where the shipped estimator lives in a checkout (written by `tiermem memstrata train`).
pub fn default_model_path() -> std::path::PathBuf {
    match std::env::var_os("TIERMEM_MEMSTRATA_MODEL") {
        Some(p) => p.into(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../experiments/memstrata/estimator.onnx"),
    }
}

/// The allocator's knobs (§4.3 defaults).
#[derive(Clone, Copy, Debug)]
pub struct AllocatorParams {
    pub step_ratio: f64,
    pub ewma_alpha: f64,
    /// Intervals (of 10 s) simulated.
    pub intervals: usize,
}

impl Default for AllocatorParams {
    fn default() -> Self {
        AllocatorParams {
            step_ratio: tiermem_policies::memstrata::DEFAULT_STEP_RATIO,
            ewma_alpha: tiermem_policies::memstrata::DEFAULT_EWMA_ALPHA,
            intervals: 40,
        }
    }
}

/// What a multi-VM run measured.
#[derive(Clone, Debug, Default)]
pub struct MixRun {
    /// Per VM: mean slowdown over the run's intervals and over its last quarter, the
    /// final dedicated share and miss ratio.
    pub mean_slowdown: Vec<f64>,
    pub final_slowdown: Vec<f64>,
    pub dedicated_share: Vec<f64>,
    pub miss_ratio: Vec<f64>,
    /// Pages each VM moved in each round (for the step-cap check).
    pub moved_per_round: Vec<Vec<u64>>,
    pub rounds: usize,
}

/// VMs on one Flat Memory Mode machine, each starting with `dedicated_share` of its pages
/// dedicated (colored allocation, §6: "All settings use page coloring"), either static or
/// under Memstrata's allocator with `estimator`, run by the engine: the machine is a
/// [`FlatBackend`], the policy `static` (the hardware places lines), the allocator a
/// [`MemstrataAllocator`] controller. Slowdowns are against the same VMs all in local DRAM
/// (the same bandwidth sharing). The machine holds exactly the VMs' memory: the dedicated
/// node their dedicated pages, the hardware-tiered node the rest in pairs.
pub fn run_mix(
    vms: &[Workload],
    dedicated_share: f64,
    estimator: Option<Box<dyn OutlierEstimator>>,
    p: AllocatorParams,
) -> Result<MixRun> {
    use tiermem_policies::static_placement::{StaticConfig, StaticPlacement};
    let pages: Vec<usize> = vms.iter().map(|w| w.pages()).collect();
    let dedicated: Vec<usize> = pages
        .iter()
        .map(|&n| ((n as f64 * dedicated_share).round() as usize) & !1)
        .collect();
    // Whole colors per VM (each wastes less than one) on a node of 768 × k slots.
    let pairs: usize = pages
        .iter()
        .zip(&dedicated)
        .map(|(n, d)| (n - d).div_ceil(2))
        .sum();
    let slots = COLORS * (pairs.div_ceil(COLORS) + vms.len());
    let base = paper_machine(128);
    let m = FlatMachine::new(base.local.clone(), base.cxl.clone(), slots)?;
    let frames = allocate(
        slots,
        &pages,
        &dedicated,
        Allocation::Colored { colors: COLORS },
        SEED,
    )?;
    let mut backend = FlatBackend::new(
        m,
        vms.to_vec(),
        frames,
        rand::rngs::SmallRng::seed_from_u64(SEED),
    )?;
    let interval_s = tiermem_policies::memstrata::DEFAULT_INTERVAL_S;
    let controller = estimator.map(|e| {
        Box::new(MemstrataAllocator::new(
            AllocatorConfig {
                interval_s,
                ewma_alpha: p.ewma_alpha,
                step_ratio: p.step_ratio,
                dedicated_tier: crate::flat_backend::DEDICATED,
            },
            e,
        )) as Box<dyn Controller>
    });
    let policy = StaticPlacement::new(StaticConfig {
        quantum_ms: interval_s * 1e3,
    });
    let mut engine = Engine::with_controller(policy, controller, &mut backend)?;
    for _ in 0..p.intervals {
        engine.step(&mut backend)?;
    }
    let mut out = MixRun {
        rounds: engine
            .controller
            .as_ref()
            .and_then(|c| c.counters().into_iter().find(|(k, _)| *k == "rounds"))
            .map_or(0, |(_, v)| v as usize),
        moved_per_round: backend.moved_per_apply.clone(),
        ..MixRun::default()
    };
    let per_interval = &backend.slowdowns;
    let n = per_interval.len().max(1) as f64;
    let tail = &per_interval[per_interval.len() * 3 / 4..];
    let eq = backend.equilibrium();
    for (i, vm) in backend.vms().iter().enumerate() {
        out.mean_slowdown
            .push(per_interval.iter().map(|r| r[i]).sum::<f64>() / n);
        out.final_slowdown
            .push(tail.iter().map(|r| r[i]).sum::<f64>() / tail.len().max(1) as f64);
        let ded = vm
            .memory
            .frames
            .iter()
            .filter(|f| **f == Frame::Dedicated)
            .count();
        out.dedicated_share.push(ded as f64 / pages[i] as f64);
        out.miss_ratio.push(eq.miss_ratio[i]);
    }
    Ok(out)
}

/// The population with each workload's slowdown alone in mixed mode (33 % dedicated).
fn with_mixed_slowdown(m: &FlatMachine, pop: Vec<Workload>) -> Result<Vec<(Workload, f64)>> {
    parallel_map(pop, |w| -> Result<(Workload, f64)> {
        let l = memstrata::alone(m, &w, Backing::AllLocal, 0.0, SEED)?.0;
        let t = memstrata::alone(m, &w, Backing::Tiered, MIXED_DEDICATED, SEED)?.0;
        Ok((w, l / t - 1.0))
    })
    .into_iter()
    .collect()
}

/// Fig. 10/12's VM pools: web, data (databases and Spark), others, all non-outliers alone
/// in mixed mode (≤ 5 %), and outliers (> 5 % alone in mixed mode, most severe first; Fig.
/// 10 takes those above 30 %, §6.1's outliers are at 30–35 %), at most 32 GB each (§6
/// excludes larger VMs).
struct Pools {
    web: Vec<Workload>,
    data: Vec<Workload>,
    other: Vec<Workload>,
    outliers: Vec<Workload>,
    severe: Vec<Workload>,
}

fn pools(m: &FlatMachine) -> Result<Pools> {
    let mut all = with_mixed_slowdown(m, calibrated_population(m)?)?;
    all.retain(|(w, _)| w.vm_gib <= 32);
    let pick = |f: &dyn Fn(&Workload) -> bool| -> Vec<Workload> {
        all.iter()
            .filter(|(w, s)| *s <= OUTLIER && f(w))
            .map(|(w, _)| w.clone())
            .collect()
    };
    let mut outliers: Vec<(Workload, f64)> =
        all.iter().filter(|(_, s)| *s > OUTLIER).cloned().collect();
    outliers.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(Pools {
        severe: outliers
            .iter()
            .filter(|(_, s)| *s > 0.30)
            .map(|(w, _)| w.clone())
            .collect(),
        web: pick(&|w| w.category == "web"),
        data: pick(&|w| w.category == "database" || w.category == "spark"),
        other: pick(&|w| !matches!(w.category, "web" | "database" | "spark")),
        outliers: outliers.into_iter().map(|(w, _)| w).collect(),
    })
}

fn take(pool: &[Workload], from: usize, n: usize) -> Result<Vec<Workload>> {
    if pool.len() < from + n {
        return Err(tiermem_core::Error::config(format!(
            "the population has too few workloads for this mix ({} < {})",
            pool.len(),
            from + n
        )));
    }
    Ok(pool[from..from + n].to_vec())
}

fn mix_rows(experiment: &str, mix: &str, vms: &[Workload], config: &str, r: &MixRun) -> Vec<Value> {
    vms.iter()
        .enumerate()
        .map(|(i, w)| {
            json!({
                "experiment": experiment,
                "mix": mix,
                "workload": w.name,
                "category": w.category,
                "vm_gib": w.vm_gib,
                "config": config,
                "slowdown": r.final_slowdown[i],
                "mean_slowdown": r.mean_slowdown[i],
                "miss_ratio": r.miss_ratio[i],
                "dedicated_share": r.dedicated_share[i],
            })
        })
        .collect()
}

/// Load the estimator for the allocator: a missing or malformed file is a one-line error
/// naming it and `tiermem memstrata train` (exit 2).
pub fn estimator() -> Result<Box<dyn OutlierEstimator>> {
    Ok(Box::new(tiermem_estimator::Estimator::load(
        &default_model_path(),
    )?))
}

/// Fig. 10: six-VM mixes (§6.1: web-heavy 4 web + 1 data + 1 outlier, data-heavy 1 + 4 + 1,
/// balanced 2 web + 2 data + 1 other + 1 outlier; two combinations each), 33 % dedicated,
/// static ("HW-Tiered") vs Memstrata. Quick: one combination per mix.
pub fn fig10(quick: bool) -> Result<Value> {
    // Fail at once on a missing or malformed model, before any mix runs.
    estimator()?;
    let m = paper_machine(128);
    let p = pools(&m)?;
    let combos = if quick { 1 } else { 2 };
    let mut mixes = Vec::new();
    for c in 0..combos {
        let outlier = |k: usize| take(&p.severe, (3 * c + k) % p.severe.len().max(1), 1);
        let mut web_heavy = take(&p.web, 4 * c, 4)?;
        web_heavy.extend(take(&p.data, c, 1)?);
        web_heavy.extend(outlier(0)?);
        let mut data_heavy = take(&p.web, 4 * combos + c, 1)?;
        data_heavy.extend(take(&p.data, 2 + 4 * c, 4)?);
        data_heavy.extend(outlier(1)?);
        let mut balanced = take(&p.web, 6 + 2 * c, 2)?;
        balanced.extend(take(&p.data, 2 + 4 * combos + 2 * c, 2)?);
        balanced.extend(take(&p.other, c, 1)?);
        balanced.extend(outlier(2)?);
        mixes.push((format!("web-heavy-{}", c + 1), web_heavy));
        mixes.push((format!("data-heavy-{}", c + 1), data_heavy));
        mixes.push((format!("balanced-{}", c + 1), balanced));
    }
    let results = mixes
        .iter()
        .map(|(name, vms)| -> Result<(Vec<Value>, Value)> {
            let stat = run_mix(vms, MIXED_DEDICATED, None, AllocatorParams::default())?;
            let dyn_ = run_mix(
                vms,
                MIXED_DEDICATED,
                Some(estimator()?),
                AllocatorParams::default(),
            )?;
            let mut rows = mix_rows("memstrata-fig10", name, vms, "hw-tiered", &stat);
            rows.extend(mix_rows("memstrata-fig10", name, vms, "memstrata", &dyn_));
            let o = vms.len() - 1;
            let worst_other = (0..o)
                .map(|i| dyn_.final_slowdown[i] - stat.final_slowdown[i])
                .fold(f64::MIN, f64::max);
            let step_ok = dyn_.moved_per_round.iter().all(|r| {
                r.iter().zip(vms).all(|(&mv, w)| {
                    mv as f64 <= w.pages() as f64 * AllocatorParams::default().step_ratio
                })
            });
            Ok((
                rows,
                json!({
                    "mix": name,
                    "outlier": vms[o].name,
                    "outlier_static": stat.final_slowdown[o],
                    "outlier_memstrata": dyn_.final_slowdown[o],
                    "worst_other_change": worst_other,
                    "rounds": dyn_.rounds,
                    "step_caps_held": step_ok,
                }),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    let mut mixes_out = Vec::new();
    for (r, s) in results {
        rows.extend(r);
        mixes_out.push(s);
    }
    Ok(json!({"experiment": "memstrata-fig10", "mixes": mixes_out, "rows": rows}))
}

/// The first `n` workloads of `pool` (first in the pool's order: lexicographic over their
/// positions) whose VM sizes add up to `total_gib`.
fn with_sizes(pool: &[Workload], n: usize, total_gib: u64) -> Result<Vec<Workload>> {
    fn search(pool: &[Workload], from: usize, n: usize, left: u64, at: &mut Vec<usize>) -> bool {
        if n == 0 {
            return left == 0;
        }
        for i in from..pool.len() {
            if pool[i].vm_gib <= left {
                at.push(i);
                if search(pool, i + 1, n - 1, left - pool[i].vm_gib, at) {
                    return true;
                }
                at.pop();
            }
        }
        false
    }
    let mut at = Vec::new();
    if !search(pool, 0, n, total_gib, &mut at) {
        return Err(tiermem_core::Error::config(format!(
            "the population has no {n} workloads of {total_gib} GB together for this mix"
        )));
    }
    Ok(at.into_iter().map(|i| pool[i].clone()).collect())
}

/// §6.1 "Higher outlier ratio": six VMs of 80 GB in all (33 % dedicated is 26.4 GB), the
/// four outliers 56 GB of it.
const FIG12_TOTAL_GIB: u64 = 80;
const FIG12_FOUR_OUTLIERS_GIB: u64 = 56;

/// Fig. 12: 2 and 4 outliers among six VMs at 33 % dedicated, and 4 at 67 %, with
/// Memstrata (§6.1 "Higher outlier ratio"). The sizes are the paper's: the four outliers
/// are the most severe whose VMs add up to 56 GB, the two-outlier case keeps the first two
/// of them, and non-outliers (web, then data) fill the six VMs to 80 GB.
pub fn fig12(quick: bool) -> Result<Value> {
    // Fail at once on a missing or malformed model, before any mix runs.
    estimator()?;
    let m = paper_machine(128);
    let p = pools(&m)?;
    let params = AllocatorParams {
        intervals: if quick { 30 } else { 60 },
        ..AllocatorParams::default()
    };
    let four = with_sizes(&p.outliers, 4, FIG12_FOUR_OUTLIERS_GIB)?;
    let quiet: Vec<Workload> = p.web.iter().chain(&p.data).cloned().collect();
    let cases: [(&str, usize, f64); 3] = [
        ("2-outliers-33pct", 2, 1.0 / 3.0),
        ("4-outliers-33pct", 4, 1.0 / 3.0),
        ("4-outliers-67pct", 4, 2.0 / 3.0),
    ];
    let mut rows = Vec::new();
    let mut cases_out = Vec::new();
    for (name, k, ded) in cases {
        let outliers = &four[..k];
        let outlier_gib: u64 = outliers.iter().map(|w| w.vm_gib).sum();
        let mut vms = with_sizes(&quiet, 6 - k, FIG12_TOTAL_GIB - outlier_gib)?;
        vms.extend_from_slice(outliers);
        let stat = run_mix(&vms, ded, None, params)?;
        let dyn_ = run_mix(&vms, ded, Some(estimator()?), params)?;
        rows.extend(mix_rows("memstrata-fig12", name, &vms, "hw-tiered", &stat));
        rows.extend(mix_rows("memstrata-fig12", name, &vms, "memstrata", &dyn_));
        let outl: Vec<f64> = dyn_.final_slowdown[6 - k..].to_vec();
        cases_out.push(json!({
            "case": name,
            "outliers_memstrata": outl,
            "outliers_static": stat.final_slowdown[6 - k..].to_vec(),
            "outliers_above_5pct": outl.iter().filter(|&&s| s > OUTLIER).count(),
        }));
    }
    Ok(json!({"experiment": "memstrata-fig12", "cases": cases_out, "rows": rows}))
}

/// The Python that runs the trainer: `$TIERMEM_PYTHON`, else the checkout's venv, else
/// `python3` (the CLI's lookup; the library cannot ask the binary where it lives).
fn trainer_python() -> String {
    if let Some(p) = std::env::var_os("TIERMEM_PYTHON") {
        return p.to_string_lossy().into_owned();
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

/// `tiermem reproduce memstrata-estimator`: §4.2's slowdown estimator validated on the
/// samples `tiermem memstrata train` trains the shipped model on (the same population,
/// seed and draws; `quick`: one noisy reading instead of three). The trainer
/// (`python -m tiermem.memstrata_train`, scikit-learn) validates it twice — over every
/// sample, and under the paper's protocol (one sample per workload, split 50/50) — and
/// writes `features.csv`, `estimator.onnx` (the shipped model is not touched) and
/// `report.json` into `out`; the summary's `stats` is that report.
pub fn estimator_validation(quick: bool, out: &std::path::Path) -> Result<Value> {
    use tiermem_core::{Error, ErrorKind};
    let m = paper_machine(128);
    let pop = calibrated_population(&m)?;
    let draws = if quick { 1 } else { 3 };
    let samples = memstrata::samples(&m, &pop, draws, SEED)?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let csv = out.join("features.csv");
    std::fs::write(&csv, memstrata::samples_csv(&samples))
        .map_err(|e| Error::io(csv.display(), e))?;
    let report = out.join("report.json");
    let python = trainer_python();
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "tiermem.memstrata_train"])
        .arg(&csv)
        .arg(out.join("estimator.onnx"))
        .arg(&report);
    let pydir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python");
    if pydir.join("tiermem").is_dir() {
        cmd.env("PYTHONPATH", pydir);
    }
    let run = cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::Unsupported,
            format!("memstrata-estimator: cannot run {python}: {e}; set TIERMEM_PYTHON to a Python with scikit-learn and skl2onnx (make setup)"),
        )
    })?;
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "memstrata-estimator: `{python} -m tiermem.memstrata_train` failed ({}); set TIERMEM_PYTHON to a Python with scikit-learn and skl2onnx (make setup)",
                err.trim().lines().last().unwrap_or("no message")
            ),
        ));
    }
    let text = std::fs::read_to_string(&report).map_err(|e| Error::io(report.display(), e))?;
    let stats: Value = serde_json::from_str(&text)
        .map_err(|e| Error::config(format!("{}: {e}", report.display())))?;
    Ok(json!({
        "experiment": "memstrata-estimator",
        "quick": quick,
        "draws": draws,
        "seed": SEED,
        "stats": stats,
    }))
}
