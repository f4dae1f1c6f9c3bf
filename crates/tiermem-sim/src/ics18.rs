//! `tiermem reproduce granularity-fig8`: ICS'18 (Ryoo, John, Basu, "A Case for Granularity
//! Aware Page Migration") Figs. 8–13 on the simulator.
//!
//! The testbed is `experiments/ics18/base.toml` (fast tier 400 MB, slow tier 3× its
//! latency, two TLB shootdowns of 13.2 µs per migration), the 13 applications are
//! `experiments/ics18/workloads.toml` (Table 2's footprints; the shapes the paper describes),
//! and the systems are the `ics18` policy's schemes: the paper's baseline (physically ordered
//! scans, 4 KiB), static 4 KiB / 64 KiB / 2 MiB (virtual scans, granularity fixed) and the
//! dynamic scheme of §4.
//!
//! **Runtime for a fixed amount of work.** The paper normalises each run's execution time to
//! the time the same program takes when the fast tier holds its whole footprint (no
//! migration). Here each application first runs `T_ref` virtual seconds with a fast tier
//! larger than its footprint and no migration, which fixes its work `W` (the operations it
//! completed); every scheme then runs until it has completed `W` operations
//! (`stop_after_ops`), and `runtime_norm` is that completion time over `T_ref`. (Stage and
//! hot-set changes of the `regions` shapes follow the operation count, so every run does the
//! same work in the same order.)
//!
//! Rows (`summary.json`): `{"setting", "fast_mib", "latency_ratio", "workload", "label",
//! "scheme", "runtime_norm", "shootdowns", "fast_hit_ratio", "migrations_4k",
//! "migrations_64k", "migrations_2m", "completed"}`; `shootdowns` counts two per migration
//! operation (the backend's applied operations; footnote 3), `fast_hit_ratio` is the share of the
//! application's memory reads the fast tier served over the whole run. Settings: the main
//! one (400 MiB, 1:3; all five schemes: Figs. 8–11) and the sensitivity ones (200 and
//! 800 MiB at 1:3, 1:2 and 1:8 at 400 MiB: Figs. 12–13; the three static schemes and the
//! dynamic one, so that the best static is known). The summary's `checks` evaluate the
//! issue's criteria on the rows.
//!
//! **Two ways to get a runtime** ([`Mode`]). `granularity-fig8` simulates every setting
//! (the slow tier at its latency; the migration threads' time taken from the application's
//! cores). `granularity-fig8-projection` is the paper's method (§5, Fig. 7): every scheme
//! runs once per capacity at 1:1 latency, and [`Projection`] gives the runtime at each
//! ratio from the run's compute, per-tier memory time, migrations (two shootdowns each,
//! footnote 3) and bytes copied. Its rows add those terms.

use crate::reproduce::{config_with, parallel_map};
use crate::runner;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use tiermem_core::{Backend, Error, Result};

pub const BASE: &str = include_str!("../../../experiments/ics18/base.toml");
pub const APPS: &str = include_str!("../../../experiments/ics18/workloads.toml");
const BASE_ORIGIN: &str = "experiments/ics18/base.toml";

/// One application of `workloads.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    pub name: String,
    pub label: String,
    pub rss: String,
    pub paper_best: String,
    #[serde(default)]
    pub control: bool,
    pub scale: f64,
    pub ops_in_flight: f64,
    pub mlp_lines: f64,
    pub compute_ns_per_op: f64,
    pub workload: toml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Apps {
    app: Vec<App>,
}

/// The applications (the suite and the uniform control).
pub fn apps() -> Result<Vec<App>> {
    let a: Apps = toml::from_str(APPS)
        .map_err(|e| Error::config(format!("experiments/ics18/workloads.toml: {e}")))?;
    Ok(a.app)
}

/// Fast-tier capacity and slow/fast latency ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    pub fast_mib: f64,
    pub latency_ratio: f64,
}

impl Setting {
    pub fn label(&self) -> String {
        format!("{}MiB 1:{}", self.fast_mib, self.latency_ratio)
    }
}

/// §5's configuration: 400 MB of fast memory, slow memory 3× slower.
pub const MAIN: Setting = Setting {
    fast_mib: 400.0,
    latency_ratio: 3.0,
};
/// §6.1: 200 and 800 MB (Fig. 12), 1:2 and 1:8 (Fig. 13).
pub const SENSITIVITY: [Setting; 4] = [
    Setting {
        fast_mib: 200.0,
        latency_ratio: 3.0,
    },
    Setting {
        fast_mib: 800.0,
        latency_ratio: 3.0,
    },
    Setting {
        fast_mib: 400.0,
        latency_ratio: 2.0,
    },
    Setting {
        fast_mib: 400.0,
        latency_ratio: 8.0,
    },
];

pub const SCHEMES: [&str; 5] = tiermem_policies::ics18::SCHEMES;
pub const STATICS: [&str; 3] = ["static-4k", "static-64k", "static-2m"];

/// Virtual seconds of the no-migration reference run, which fixes each application's work.
pub fn reference_seconds(quick: bool) -> f64 {
    if quick {
        0.3
    } else {
        1.2
    }
}

fn fast_latency_ns() -> f64 {
    let doc: toml::Value = toml::from_str(BASE).expect("base parses");
    let l = &doc["machine"]["tiers"][0]["unloaded_latency_ns"];
    l.as_float()
        .or_else(|| l.as_integer().map(|i| i as f64))
        .expect("fast tier latency")
}

/// The config of one run: `scheme` = None is the no-migration reference (a fast tier that
/// holds the whole footprint, policy `static`).
pub fn config(
    app: &App,
    setting: Setting,
    scheme: Option<&str>,
) -> Result<crate::config::SimConfig> {
    let mut policy = toml::map::Map::new();
    let fast = match scheme {
        Some(s) => {
            // The testbed's [policy] settings (thresholds, density) hold for every scheme.
            if let Ok(base) = BASE.parse::<toml::Table>() {
                if let Some(toml::Value::Table(t)) = base.get("policy") {
                    policy.extend(t.clone());
                }
            }
            policy.insert("policy".into(), "ics18".into());
            policy.insert("scheme".into(), s.into());
            format!("{}MiB", setting.fast_mib)
        }
        None => {
            policy.insert("policy".into(), "static".into());
            "16GiB".to_string()
        }
    };
    let ov: Vec<(&str, toml::Value)> = vec![
        ("scale", toml::Value::Float(app.scale)),
        (
            "machine.ops_in_flight",
            toml::Value::Float(app.ops_in_flight),
        ),
        ("machine.mlp_lines", toml::Value::Float(app.mlp_lines)),
        (
            "machine.compute_ns_per_op",
            toml::Value::Float(app.compute_ns_per_op),
        ),
        ("machine.tiers[0].capacity", toml::Value::String(fast)),
        (
            "machine.tiers[1].unloaded_latency_ns",
            toml::Value::Float(fast_latency_ns() * setting.latency_ratio),
        ),
        ("workload", app.workload.clone()),
        ("policy", toml::Value::Table(policy)),
    ];
    config_with(BASE, BASE_ORIGIN, &ov)
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Virtual seconds to complete the work (or the run's end if it did not).
    pub time_s: f64,
    pub completed: bool,
    pub ops: f64,
    /// Migration operations the backend applied (one per move, whatever its size).
    pub migration_ops: u64,
    /// TLB shootdowns: `shootdowns_per_operation` per applied move (2 on the testbed,
    /// footnote 3).
    pub shootdowns: u64,
    pub fast_hit_ratio: f64,
    pub migrations: [u64; 3],
    pub raises: u64,
    pub lowers: u64,
    /// Bytes the migrations moved.
    pub bytes_moved: u64,
    /// Per application core, seconds spent computing, waiting on each tier's memory and
    /// stalled (shootdown interrupts, the migration threads' share of the cores), to the
    /// end of the work (`backend::CoreTime` over the cores).
    pub compute_s: f64,
    pub memory_s: Vec<f64>,
    pub stalled_s: f64,
}

/// Run a config to its end and measure it.
pub fn measure(cfg: &crate::config::SimConfig) -> Result<Measured> {
    let out = runner::run(cfg)?;
    let b = &out.backend;
    let (mut served, mut total) = (0.0, 0.0);
    for r in &b.records {
        let w = r.ops_per_s;
        served += w * r.app_share.first().copied().unwrap_or(0.0);
        total += w;
    }
    let pc: BTreeMap<&str, u64> = out.policy_counters.iter().copied().collect();
    let get = |k: &str| pc.get(k).copied().unwrap_or(0);
    let completed = b.completed_at_ns().is_some();
    let ct = b.core_time();
    let cores = cfg.machine.app_cores.max(1e-9);
    let core_s = |ns: f64| ns / cores / 1e9;
    Ok(Measured {
        time_s: b.completed_at_ns().unwrap_or(b.now_ns() as f64) / 1e9,
        completed,
        ops: b.ops_done(),
        migration_ops: out.counters.applied.ops_applied,
        shootdowns: (out.counters.applied.ops_applied as f64
            * cfg.machine.migration.shootdowns_per_operation)
            .round() as u64,
        fast_hit_ratio: if total > 0.0 { served / total } else { 0.0 },
        migrations: [
            get("migrations_4k"),
            get("migrations_64k"),
            get("migrations_2m"),
        ],
        raises: get("raises"),
        lowers: get("lowers"),
        bytes_moved: out.counters.applied.bytes_moved,
        compute_s: core_s(ct.compute_ns + ct.fault_ns),
        memory_s: ct.memory_ns.iter().map(|&x| core_s(x)).collect(),
        stalled_s: core_s(ct.stalled_ns),
    })
}

/// The no-migration reference of an application: its work (operations in `T_ref`).
pub fn reference(app: &App, quick: bool) -> Result<f64> {
    let mut cfg = config(app, MAIN, None)?;
    cfg.duration_s = reference_seconds(quick);
    let m = measure(&cfg)?;
    Ok(m.ops)
}

/// One scheme on one application in one setting, doing `work` operations.
pub fn run_scheme(
    app: &App,
    setting: Setting,
    scheme: &str,
    work: f64,
    quick: bool,
) -> Result<Measured> {
    let mut cfg = config(app, setting, Some(scheme))?;
    cfg.stop_after_ops = Some(work);
    cfg.duration_s = reference_seconds(quick) * 40.0;
    measure(&cfg)
}

/// The applications a run covers (the sensitivity settings of a quick run take a subset:
/// one per granularity class plus the phase-alternating one).
fn sensitivity_apps(quick: bool) -> Option<&'static [&'static str]> {
    quick.then_some(&["gups", "g500", "str", "lul", "cg", "can"][..])
}

/// How a reproduction gets each setting's runtimes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// §5's method, the paper's own (`granularity-fig8-projection`): every scheme runs
    /// once at 1:1 latency on the testbed's cores (the testbed is all DRAM), recording
    /// compute, stall per tier, migrations and bytes; the runtime at each latency ratio
    /// comes from Fig. 7's formula ([`Projection`]).
    Projection,
    /// `granularity-fig8`, the one the claims read: every setting simulated, the slow tier
    /// at its latency and the migration threads beside the application on its cores, so
    /// slower memory also slows the run the policy sees and migration is paid as the
    /// threads' time, not added in full (docs/simulator.md, "Granularity").
    Simulated,
}

/// Footnote 3: "the number of TLB shootdowns are exactly twice the number of migrations"
/// (the testbed's `shootdowns_per_operation`, which the projection reads).
pub const SHOOTDOWNS_PER_MIGRATION: f64 = 2.0;

/// The ratios the main capacity's runs are projected to: §5's 1:3 and §6.1's 1:2 and 1:8
/// (Fig. 13).
pub const PROJECTED_RATIOS: [f64; 3] = [3.0, 2.0, 8.0];

/// Fig. 7 (§5): the leading-load model extended to two tiers and migration. A run
/// measured at DRAM speed splits each core's time into compute, memory cycles on the fast
/// tier and memory cycles on the slow tier (the paper partitions measured memory cycles by
/// the IBS fast-hit ratio; the simulator counts them per tier); at slow/fast latency ratio
/// `r` the slow cycles are scaled by `r`, and the migration overheads are added: the TLB
/// shootdowns, unaltered (footnote 5: kernel memory is in the fast tier), two per migration
/// (footnote 3), each `shootdown_wait_ns` (13.2 µs, §2.2), and the data copy, scaled by `r`.
/// A 2 MiB migration's shootdowns flush the whole TLB (§5: a cr3 write), whose refill a
/// run on the real machine spends in its measured cycles; the simulator has no TLB, so
/// the refill is a term of its own (`refill_s`: `full_flush_refill_ns` per core per
/// shootdown of a move of at least `full_flush_from`), unscaled (page walks hit the
/// caches and the fast tier, where the page tables are: footnote 5).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Projection {
    pub compute_s: f64,
    pub fast_s: f64,
    pub slow_s: f64,
    pub shootdowns: f64,
    pub shootdown_s: f64,
    pub refill_s: f64,
    pub copy_s: f64,
}

impl Projection {
    /// The terms of a run measured at 1:1 (`m`), with the testbed's migration costs.
    pub fn of(m: &Measured, migration: &crate::config::MigrationConfig) -> Projection {
        let per_migration = migration.shootdowns_per_operation;
        let shootdowns = per_migration * m.migration_ops as f64;
        // The testbed flushes whole TLBs for its 2 MiB moves only.
        let full_flushes = if migration.full_flush_from.is_some() {
            per_migration * m.migrations[2] as f64
        } else {
            0.0
        };
        Projection {
            compute_s: m.compute_s,
            fast_s: m.memory_s.first().copied().unwrap_or(0.0),
            slow_s: m.memory_s.iter().skip(1).sum(),
            shootdowns,
            shootdown_s: shootdowns * migration.shootdown_wait_ns / 1e9,
            refill_s: full_flushes * migration.full_flush_refill_ns / 1e9,
            copy_s: m.bytes_moved as f64 / (migration.copy_gbps * 1e9),
        }
    }
    /// Projected runtime (s) at slow/fast latency ratio `ratio`.
    pub fn runtime_s(&self, ratio: f64) -> f64 {
        self.compute_s
            + self.fast_s
            + ratio * self.slow_s
            + self.shootdown_s
            + self.refill_s
            + ratio * self.copy_s
    }
}

/// The testbed's migration costs (`experiments/ics18/base.toml`).
pub fn testbed_migration() -> Result<crate::config::MigrationConfig> {
    let apps = apps()?;
    let app = apps
        .first()
        .ok_or_else(|| Error::config("experiments/ics18/workloads.toml: no [[app]]"))?;
    Ok(config(app, MAIN, Some("static-4k"))?.machine.migration)
}

/// `tiermem reproduce granularity-fig8`: every setting simulated.
pub fn run(quick: bool) -> Result<Value> {
    run_mode(quick, Mode::Simulated)
}

/// `tiermem reproduce granularity-fig8-projection` (or `granularity-fig8 --projection`):
/// the paper's projection from runs at 1:1.
pub fn run_projection(quick: bool) -> Result<Value> {
    run_mode(quick, Mode::Projection)
}

/// The row of one measured run (`setting` is the one reported: for a projection, the
/// ratio projected to).
fn row(
    a: &App,
    setting: Setting,
    scheme: &str,
    m: &Measured,
    runtime_norm: f64,
    shootdowns: Value,
) -> Value {
    json!({
        "setting": setting.label(),
        "fast_mib": setting.fast_mib,
        "latency_ratio": setting.latency_ratio,
        "workload": a.name,
        "label": a.label,
        "control": a.control,
        "scheme": scheme,
        "runtime_norm": runtime_norm,
        "shootdowns": shootdowns,
        "fast_hit_ratio": m.fast_hit_ratio,
        "migrations_4k": m.migrations[0],
        "migrations_64k": m.migrations[1],
        "migrations_2m": m.migrations[2],
        "completed": m.completed,
        "raises": m.raises,
        "lowers": m.lowers,
        "bytes_moved": m.bytes_moved,
    })
}

pub fn run_mode(quick: bool, mode: Mode) -> Result<Value> {
    let apps = apps()?;
    let refs = parallel_map(apps.clone(), |a| {
        reference(&a, quick).map(|w| (a.name.clone(), w))
    });
    let mut work = BTreeMap::new();
    for r in refs {
        let (n, w) = r?;
        work.insert(n, w);
    }
    // What runs: (application, the setting it runs in, scheme). A projection measures
    // each capacity once at 1:1 (the ratios are projected from it); a simulation runs
    // every setting.
    let measured_in = |s: Setting| match mode {
        Mode::Projection => Setting {
            fast_mib: s.fast_mib,
            latency_ratio: 1.0,
        },
        Mode::Simulated => s,
    };
    let mut jobs: Vec<(App, Setting, &'static str)> = Vec::new();
    for a in &apps {
        for s in SCHEMES {
            jobs.push((a.clone(), measured_in(MAIN), s));
        }
    }
    let subset = sensitivity_apps(quick);
    for setting in SENSITIVITY {
        let run_in = measured_in(setting);
        if mode == Mode::Projection && run_in.fast_mib == MAIN.fast_mib {
            continue; // projected from the main capacity's runs
        }
        for a in &apps {
            if a.control || subset.is_some_and(|s| !s.contains(&a.name.as_str())) {
                continue;
            }
            for s in STATICS.iter().chain(["dynamic"].iter()) {
                jobs.push((a.clone(), run_in, s));
            }
        }
    }
    // Longest first (the big footprints), for an even spread over the threads.
    jobs.sort_by(|a, b| {
        let w = |j: &(App, Setting, &str)| j.0.scale * work[&j.0.name];
        w(b).total_cmp(&w(a))
    });
    let t_ref = reference_seconds(quick);
    let results = parallel_map(jobs, |(a, setting, scheme)| {
        let w = work[&a.name];
        run_scheme(&a, setting, scheme, w, quick).map(|m| (a, setting, scheme, m))
    });
    let migration = testbed_migration()?;
    let mut rows = Vec::new();
    for r in results {
        let (a, setting, scheme, m) = r?;
        match mode {
            Mode::Simulated => {
                rows.push(row(
                    &a,
                    setting,
                    scheme,
                    &m,
                    m.time_s / t_ref,
                    json!(m.shootdowns),
                ));
            }
            Mode::Projection => {
                let p = Projection::of(&m, &migration);
                let ratios: Vec<f64> = if setting.fast_mib == MAIN.fast_mib {
                    PROJECTED_RATIOS.to_vec()
                } else {
                    vec![MAIN.latency_ratio]
                };
                for ratio in ratios {
                    let reported = Setting {
                        fast_mib: setting.fast_mib,
                        latency_ratio: ratio,
                    };
                    let mut v = row(
                        &a,
                        reported,
                        scheme,
                        &m,
                        p.runtime_s(ratio) / t_ref,
                        json!(p.shootdowns),
                    );
                    let o = v.as_object_mut().expect("a row is an object");
                    for (k, x) in [
                        ("compute_s", p.compute_s),
                        ("fast_stall_s", p.fast_s),
                        ("slow_stall_s", p.slow_s),
                        ("shootdown_s", p.shootdown_s),
                        ("tlb_refill_s", p.refill_s),
                        ("copy_s", p.copy_s),
                        ("measured_s", m.time_s),
                        ("measured_stalled_s", m.stalled_s),
                        ("ops", m.ops),
                    ] {
                        o.insert(k.into(), json!(x));
                    }
                    rows.push(v);
                }
            }
        }
    }
    // Rows in a fixed order: setting (main first), workload (file order), scheme.
    let order = |v: &Value| -> (usize, usize, usize) {
        let s = std::iter::once(MAIN)
            .chain(SENSITIVITY)
            .position(|x| x.label() == v["setting"].as_str().unwrap_or(""))
            .unwrap_or(99);
        let w = apps
            .iter()
            .position(|a| a.name == v["workload"].as_str().unwrap_or(""))
            .unwrap_or(99);
        let k = SCHEMES
            .iter()
            .position(|x| *x == v["scheme"].as_str().unwrap_or(""))
            .unwrap_or(99);
        (s, w, k)
    };
    rows.sort_by_key(order);
    let apps_meta: Vec<Value> = apps
        .iter()
        .map(|a| {
            json!({"workload": a.name, "label": a.label, "rss": a.rss, "paper_best": a.paper_best,
                   "control": a.control, "scale": a.scale, "work_ops": work[&a.name]})
        })
        .collect();
    let checks = checks(&rows, &apps);
    let (experiment, method) = match mode {
        Mode::Projection => (
            "granularity-fig8-projection",
            "projection (§5, Fig. 7): each scheme measured once per capacity at 1:1 latency; runtime = compute + fast stall + r x slow stall + 2 shootdowns per migration x 13.2 us + a 2 MiB migration's full-flush TLB refills + r x copy",
        ),
        Mode::Simulated => (
            "granularity-fig8",
            "simulation: each setting simulated with the slow tier at its latency; the migration threads share the application's cores",
        ),
    };
    Ok(json!({
        "experiment": experiment,
        "quick": quick,
        "method": method,
        "reference_s": t_ref,
        "keys": ["setting", "workload", "scheme"],
        "comparison": comparison(&checks),
        "applications": apps_meta,
        "checks": checks,
        "rows": rows,
    }))
}

/// The criteria beside the paper's numbers and the measured ones (rows of the
/// results page's "paper vs measured" table).
pub fn comparison(checks: &Value) -> Vec<Value> {
    let per: Vec<&Value> = checks["per_workload"]
        .as_array()
        .map(|v| v.iter().filter(|p| p["control"] != true).collect())
        .unwrap_or_default();
    let get = |w: &str, k: &str| -> f64 {
        per.iter()
            .find(|p| p["workload"] == w)
            .map_or(f64::NAN, |p| num(&p[k]))
    };
    let pct = |x: f64| format!("{:+.1} %", 100.0 * x);
    let mut out = Vec::new();
    let matches: Vec<String> = per
        .iter()
        .map(|p| {
            format!(
                "{} {}{}",
                p["workload"].as_str().unwrap_or("?"),
                p["best_static"].as_str().unwrap_or("?"),
                if p["matches_paper"] == true {
                    ""
                } else {
                    " (paper: other)"
                }
            )
        })
        .collect();
    let n_match = per.iter().filter(|p| p["matches_paper"] == true).count();
    out.push(
        json!({"criterion": "best static granularity = the paper's (Fig. 8)",
        "paper": "4K: gups cg ft is xs; 64K: g500 mg ua mini; 2M: str can freq lul",
        "target": "4K uniform-random, 64K clustered, 2M streaming",
        "measured": format!("{n_match} of {}: {}", per.len(), matches.join(", ")),
        "holds": n_match == per.len()}),
    );
    let lw = get("lul", "worst_over_best");
    out.push(
        json!({"criterion": "lulesh: worst static over best", "paper": "+23 %",
        "target": ">= +15 %", "measured": pct(lw), "holds": lw >= 0.15}),
    );
    let worst = per
        .iter()
        .map(|p| num(&p["dynamic_over_best"]))
        .fold(f64::NEG_INFINITY, f64::max);
    out.push(
        json!({"criterion": "dynamic over the best static, worst workload (Fig. 8)",
        "paper": "close to or better than the best", "target": "<= +5 %", "measured": pct(worst),
        "holds": worst <= 0.05}),
    );
    let g = get("g500", "dynamic_share_64k");
    out.push(
        json!({"criterion": "graph500: dynamic's migrations at 64 KiB (Fig. 11)", "paper": "> 95 %",
        "target": ">= 90 %", "measured": format!("{:.1} %", 100.0 * g), "holds": g >= 0.9}),
    );
    let c = get("cg", "dynamic_share_4k");
    out.push(
        json!({"criterion": "cg: dynamic's migrations at 4 KiB (Fig. 11)", "paper": "~85 %",
        "target": "-", "measured": format!("{:.1} %", 100.0 * c), "holds": Value::Null}),
    );
    let mean = num(&checks["speedup_vs_baseline_mean"]);
    let max = num(&checks["speedup_vs_baseline_max"]);
    out.push(
        json!({"criterion": "dynamic's speedup over the baseline, mean (Fig. 8)", "paper": "11 %",
        "target": "11 ± 5 %", "measured": pct(mean), "holds": (mean - 0.11).abs() <= 0.05}),
    );
    out.push(json!({"criterion": "dynamic's speedup over the baseline, largest (Fig. 8)", "paper": "36 %",
        "target": ">= 25 %", "measured": pct(max), "holds": max >= 0.25}));
    if let Some(sens) = checks["sensitivity"].as_array() {
        for s in sens {
            let x = num(&s["max_dynamic_over_best"]);
            out.push(json!({
                "criterion": format!("{}: dynamic over the best static, worst of {} workloads (Figs. 12-13)",
                    s["setting"].as_str().unwrap_or("?"), s["workloads"]),
                "paper": "close to or better than the best", "target": "<= +5 %",
                "measured": pct(x), "holds": x <= 0.05}));
        }
    }
    out
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The criteria evaluated on the rows (each with its measured value).
pub fn checks(rows: &[Value], apps: &[App]) -> Value {
    let find = |setting: &str, w: &str, s: &str| -> Option<&Value> {
        rows.iter().find(|r| {
            r["setting"].as_str() == Some(setting)
                && r["workload"].as_str() == Some(w)
                && r["scheme"].as_str() == Some(s)
        })
    };
    let rt = |setting: &str, w: &str, s: &str| find(setting, w, s).map(|r| num(&r["runtime_norm"]));
    let best_static = |setting: &str, w: &str| -> Option<(&'static str, f64, f64)> {
        let v: Vec<(&'static str, f64)> = STATICS
            .iter()
            .filter_map(|s| rt(setting, w, s).map(|t| (*s, t)))
            .collect();
        let best = v.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let worst = v.iter().map(|x| x.1).fold(f64::NAN, f64::max);
        Some((best.0, best.1, worst))
    };
    let main = MAIN.label();
    let mut per = Vec::new();
    let mut speedups = Vec::new();
    for a in apps {
        let Some((best, best_t, worst_t)) = best_static(&main, &a.name) else {
            continue;
        };
        let dynamic = rt(&main, &a.name, "dynamic").unwrap_or(f64::NAN);
        let baseline = rt(&main, &a.name, "baseline").unwrap_or(f64::NAN);
        let speedup = baseline / dynamic - 1.0;
        if !a.control {
            speedups.push(speedup);
        }
        let d = find(&main, &a.name, "dynamic");
        let m = |k: &str| d.map_or(0.0, |r| num(&r[k]));
        let total = m("migrations_4k") + m("migrations_64k") + m("migrations_2m");
        per.push(json!({
            "workload": a.name,
            "control": a.control,
            "paper_best": a.paper_best,
            "best_static": best.trim_start_matches("static-"),
            "matches_paper": best.trim_start_matches("static-") == a.paper_best,
            "worst_over_best": worst_t / best_t - 1.0,
            "dynamic_over_best": dynamic / best_t - 1.0,
            "speedup_vs_baseline": speedup,
            "dynamic_share_4k": m("migrations_4k") / total.max(1.0),
            "dynamic_share_64k": m("migrations_64k") / total.max(1.0),
            "dynamic_share_2m": m("migrations_2m") / total.max(1.0),
        }));
    }
    let mut sens = Vec::new();
    for s in SENSITIVITY {
        let label = s.label();
        let mut worst: f64 = f64::NEG_INFINITY;
        let mut n = 0;
        for a in apps.iter().filter(|a| !a.control) {
            if let (Some((_, b, _)), Some(d)) =
                (best_static(&label, &a.name), rt(&label, &a.name, "dynamic"))
            {
                worst = worst.max(d / b - 1.0);
                n += 1;
            }
        }
        sens.push(json!({"setting": label, "workloads": n, "max_dynamic_over_best": worst}));
    }
    let mean = speedups.iter().sum::<f64>() / speedups.len().max(1) as f64;
    let max = speedups.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "per_workload": per,
        "speedup_vs_baseline_mean": mean,
        "speedup_vs_baseline_max": max,
        "sensitivity": sens,
        "paper": {"speedup_max": 0.36, "speedup_mean": 0.11, "g500_dynamic_share_64k": 0.95,
                  "cg_dynamic_share_4k": 0.85, "lulesh_worst_over_best": 0.23},
    })
}
