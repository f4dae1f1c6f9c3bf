//! Running one config to the end, and turning the run into a summary and a time series.

use crate::backend::{Record, SimBackend};
use crate::config::SimConfig;
use crate::output::{Column, SimOutput};
use serde_json::json;
use tiermem_core::{Backend, Engine, EngineCounters, Policy, Result, TierKind, TierSpec};

fn is_compressed(t: &TierSpec) -> bool {
    matches!(t.kind, TierKind::Compressed { .. })
}

/// A finished run.
pub struct RunOutcome {
    pub backend: SimBackend,
    pub counters: EngineCounters,
    pub policy: String,
    /// The policy's migration limit is zero (`static`): it never moves a page.
    pub never_migrates: bool,
    /// The policy's own counters at the end of the run ([`Policy::counters`]).
    pub policy_counters: Vec<(&'static str, u64)>,
    /// With a `[controller]`: its profiles and thresholds.
    pub controller_setup: Option<crate::mercury::Setup>,
    pub wall_time_s: f64,
}

/// Averages over the steady-state window (the last `fraction` of the run).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Steady {
    pub throughput_ops_per_s: f64,
    pub avg_latency_ns: f64,
    pub latency_ns: Vec<f64>,
    pub app_share: Vec<f64>,
    pub read_bytes_per_s: Vec<f64>,
    pub write_bytes_per_s: Vec<f64>,
    pub migrated_bytes_per_s: f64,
    /// Per tenant: operations per second and the share of its reads each tier served.
    pub tenant_ops_per_s: Vec<f64>,
    pub tenant_app_share: Vec<Vec<f64>>,
}

/// Build the policy a config names and run it.
pub fn run(cfg: &SimConfig) -> Result<RunOutcome> {
    let backend = SimBackend::new(cfg)?;
    let ctx = tiermem_policies::BuildContext {
        page_bytes: Some(backend.page_bytes()),
    };
    let policy = tiermem_policies::build_with(&cfg.policy, cfg.colloid.as_ref(), ctx)?;
    run_with(cfg, backend, policy)
}

/// Run a given policy over a given backend for `cfg.duration_s`.
pub fn run_with(
    cfg: &SimConfig,
    backend: SimBackend,
    policy: Box<dyn Policy>,
) -> Result<RunOutcome> {
    let (controller, controller_setup) = match &cfg.controller {
        Some(c) => {
            let (ctl, setup) = crate::mercury::build(cfg, c)?;
            (Some(ctl), Some(setup))
        }
        None => (None, None),
    };
    run_with_controller(cfg, backend, policy, controller, controller_setup)
}

/// `run_with` under a given controller (the runtime's SLO controller, in its tests).
pub fn run_with_controller(
    cfg: &SimConfig,
    mut backend: SimBackend,
    policy: Box<dyn Policy>,
    controller: Option<Box<dyn tiermem_core::Controller>>,
    controller_setup: Option<crate::mercury::Setup>,
) -> Result<RunOutcome> {
    let start = std::time::Instant::now();
    let mut engine = Engine::with_controller(policy, controller, &mut backend)?;
    engine.global_limit_bytes_per_s = cfg.engine.migration_limit_gbps.map(|g| g * 1e9);
    let end_ns = (cfg.duration_s * 1e9) as u64;
    while backend.now_ns() < end_ns && !backend.finished() {
        let remaining_ns = end_ns - backend.now_ns();
        engine.step_within(&mut backend, remaining_ns)?;
    }
    Ok(RunOutcome {
        policy: engine.policy.name(),
        never_migrates: engine.policy.migration_limit_bytes() == Some(0),
        policy_counters: engine.policy.counters(),
        counters: engine.counters.clone(),
        controller_setup,
        backend,
        wall_time_s: start.elapsed().as_secs_f64(),
    })
}

/// Time-weighted mean of the records in the last `fraction` of the run.
pub fn steady(records: &[Record], fraction: f64) -> Steady {
    let Some(last) = records.last() else {
        return Steady::default();
    };
    let from = last.t_s * (1.0 - fraction);
    let window: Vec<&Record> = records.iter().filter(|r| r.t_s > from + 1e-12).collect();
    let k = window.len().max(1) as f64;
    let n = last.latency_ns.len();
    let mean = |f: &dyn Fn(&Record) -> f64| window.iter().map(|r| f(r)).sum::<f64>() / k;
    Steady {
        throughput_ops_per_s: mean(&|r| r.ops_per_s),
        avg_latency_ns: mean(&|r| r.avg_latency_ns),
        latency_ns: (0..n).map(|i| mean(&|r| r.latency_ns[i])).collect(),
        app_share: (0..n).map(|i| mean(&|r| r.app_share[i])).collect(),
        read_bytes_per_s: (0..n).map(|i| mean(&|r| r.read_bytes_per_s[i])).collect(),
        write_bytes_per_s: (0..n).map(|i| mean(&|r| r.write_bytes_per_s[i])).collect(),
        migrated_bytes_per_s: mean(&|r| r.migrated_bytes_per_s),
        tenant_ops_per_s: (0..last.tenant_ops_per_s.len())
            .map(|t| mean(&|r| r.tenant_ops_per_s.get(t).copied().unwrap_or(0.0)))
            .collect(),
        tenant_app_share: (0..last.tenant_app_share.len())
            .map(|t| {
                (0..n)
                    .map(|i| mean(&|r| r.tenant_app_share.get(t).map_or(0.0, |s| s[i])))
                    .collect()
            })
            .collect(),
    }
}

impl RunOutcome {
    pub fn steady(&self, fraction: f64) -> Steady {
        steady(&self.backend.records, fraction)
    }

    /// The per-quantum time series as named columns.
    pub fn timeseries(&self) -> Vec<Column> {
        let recs = &self.backend.records;
        let n = self.backend.tier_specs().len();
        let col = |name: String, f: &dyn Fn(&Record) -> f64| Column {
            name,
            values: recs.iter().map(f).collect(),
        };
        let mut cols = vec![
            col("t_s".into(), &|r| r.t_s),
            col("throughput_ops_per_s".into(), &|r| r.ops_per_s),
            col("avg_latency_ns".into(), &|r| r.avg_latency_ns),
        ];
        for i in 0..n {
            cols.push(col(format!("tier{i}_latency_ns"), &|r| r.latency_ns[i]));
            cols.push(col(format!("tier{i}_read_bytes_per_s"), &|r| {
                r.read_bytes_per_s[i]
            }));
            cols.push(col(format!("tier{i}_write_bytes_per_s"), &|r| {
                r.write_bytes_per_s[i]
            }));
            cols.push(col(format!("tier{i}_used_bytes"), &|r| r.used_bytes[i]));
            cols.push(col(format!("app_share_tier{i}"), &|r| r.app_share[i]));
            if is_compressed(&self.backend.tier_specs()[i]) {
                cols.push(col(format!("tier{i}_faults_per_s"), &|r| r.faults_per_s[i]));
            }
        }
        let names: Vec<String> = self
            .backend
            .tenant_specs()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        if names.len() > 1 {
            for (t, name) in names.iter().enumerate() {
                let get = |v: &Vec<f64>| v.get(t).copied().unwrap_or(f64::NAN);
                cols.push(col(format!("{name}_ops_per_s"), &|r| {
                    get(&r.tenant_ops_per_s)
                }));
                cols.push(col(format!("{name}_latency_ns"), &|r| {
                    get(&r.tenant_latency_ns)
                }));
                cols.push(col(format!("{name}_bandwidth_bytes_per_s"), &|r| {
                    get(&r.tenant_bandwidth_bytes_per_s)
                }));
                cols.push(col(format!("{name}_local_bytes"), &|r| {
                    get(&r.tenant_local_bytes)
                }));
                cols.push(col(format!("{name}_local_limit_bytes"), &|r| {
                    get(&r.tenant_local_limit_bytes)
                }));
                cols.push(col(format!("{name}_cpu_share"), &|r| {
                    get(&r.tenant_cpu_share)
                }));
                cols.push(col(format!("{name}_hint_faults_per_s"), &|r| {
                    get(&r.tenant_hint_faults_per_s)
                }));
            }
        }
        cols.push(col("migrated_bytes_per_s".into(), &|r| {
            r.migrated_bytes_per_s
        }));
        cols.push(col("pages_tried".into(), &|r| r.pages_tried));
        cols.push(col("pages_applied".into(), &|r| r.pages_applied));
        cols
    }

    /// What the user should know about a run that its numbers do not say: tiers so full
    /// that the policy's moves were refused, or a run in which nothing could move at all.
    pub fn warnings(&self, cfg: &SimConfig) -> Vec<String> {
        let a = &self.counters.applied;
        let mut out = Vec::new();
        let real = a.pages_tried.saturating_sub(a.pages_already_there);
        if a.pages_no_capacity > 0 && a.pages_no_capacity * 2 >= real {
            out.push(format!(
                "tiers full: {} of {} page moves the policy asked for ({:.0}%) were refused because the destination tier was full ({} applied); placement is stuck where capacity left it: raise machine.tiers[].capacity or shrink the workload",
                a.pages_no_capacity,
                real,
                100.0 * a.pages_no_capacity as f64 / real.max(1) as f64,
                a.pages_applied
            ));
        }
        if real == 0 {
            let pages = self.backend.placement().len() as u64;
            let used = self.backend.used_pages();
            let specs = self.backend.tier_specs();
            if self.never_migrates {
                out.push(format!("nothing can move: policy \"{}\" never migrates, so every page stays where initial_placement put it", self.policy));
            } else if cfg.engine.migration_limit_gbps == Some(0.0) {
                out.push(
                    "nothing can move: engine.migration_limit_gbps = 0 allows no migration"
                        .to_string(),
                );
            } else if used.first() == Some(&pages) && cfg.colloid.is_none() {
                // (Colloid may demote from a full-fit tier 0 to balance latency: not "nothing".)
                out.push(format!(
                    "nothing can move: all {pages} pages fit in tier 0 (`{}`) and stay there, so the policy has no placement to decide; the run measures that tier alone (grow the workload or shrink machine.tiers[0].capacity to exercise the policy)",
                    specs.first().map_or("?", |t| t.name.as_str())
                ));
            }
        }
        out
    }

    /// Memory TCO saving of the placement at the end of the run, `1 − TCO / TCO_max`
    /// (TierScape §5.2.3, Eq. 9 and 12): each tier's physical bytes (a compressed tier's
    /// pool frames) at its `cost_per_gb`, against every page in tier 0.
    pub fn tco_savings(&self) -> f64 {
        let b = &self.backend;
        let page = b.page_bytes();
        let logical: Vec<u64> = b.used_pages().iter().map(|&p| p * page).collect();
        let physical: Vec<u64> = (0..logical.len()).map(|i| b.used_bytes(i)).collect();
        tiermem_core::tco::measured_savings(b.tier_specs(), &logical, &physical)
    }

    pub fn output(&self, cfg: &SimConfig) -> SimOutput {
        let s = self.steady(cfg.steady_state_fraction);
        let specs = self.backend.tier_specs();
        let tiers: Vec<_> = specs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut v = json!({
                    "name": t.name,
                    "latency_ns": s.latency_ns.get(i),
                    "app_share": s.app_share.get(i),
                    "read_bytes_per_s": s.read_bytes_per_s.get(i),
                    "write_bytes_per_s": s.write_bytes_per_s.get(i),
                    "capacity_bytes": t.capacity_bytes,
                });
                if is_compressed(t) {
                    // Steady-state faults/s and the pool's physical bytes at the end.
                    let recs = &self.backend.records;
                    let from =
                        recs.last().map_or(0.0, |r| r.t_s) * (1.0 - cfg.steady_state_fraction);
                    let w: Vec<f64> = recs
                        .iter()
                        .filter(|r| r.t_s > from + 1e-12)
                        .map(|r| r.faults_per_s[i])
                        .collect();
                    v["faults_per_s"] = json!(w.iter().sum::<f64>() / w.len().max(1) as f64);
                    v["used_bytes"] = json!(recs.last().map_or(0.0, |r| r.used_bytes[i]));
                    v["pages"] = json!(self.backend.used_pages()[i]);
                }
                v
            })
            .collect();
        let mut summary = json!({
            "experiment": "sim",
            "policy": self.policy,
            "workload": self.backend.workload().name(),
            "seed": cfg.seed,
            "duration_s": cfg.duration_s,
            "steady_state": {
                "fraction": cfg.steady_state_fraction,
                "throughput_ops_per_s": s.throughput_ops_per_s,
                "avg_latency_ns": s.avg_latency_ns,
                "migrated_bytes_per_s": s.migrated_bytes_per_s,
                "tiers": tiers,
            },
            "counters": self.counters,
            "tco_savings": self.tco_savings(),
            "policy_counters": self
                .policy_counters
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "warnings": self.warnings(cfg),
            "wall_time_s": self.wall_time_s,
        });
        if let Some(setup) = &self.controller_setup {
            summary["controller"] = json!(setup);
        }
        if cfg.stop_after_ops.is_some() {
            // A fixed amount of work: when it was done (null if `duration_s` ran out first).
            summary["ops_completed"] = json!(self.backend.ops_done());
            summary["completion_time_s"] = json!(self.backend.completed_at_ns().map(|t| t / 1e9));
        }
        if !cfg.tenants.is_empty() {
            // Only with `[[tenants]]` (a top-level `workload` keeps the summary as it was):
            // each tenant's steady-state throughput and the share of its reads per tier.
            summary["tenants"] = json!(cfg
                .tenants
                .iter()
                .enumerate()
                .map(|(t, tc)| {
                    let shares: Vec<_> = specs
                        .iter()
                        .enumerate()
                        .map(|(i, spec)| {
                            json!({
                                "name": spec.name,
                                "app_share": s.tenant_app_share.get(t).and_then(|v| v.get(i)),
                            })
                        })
                        .collect();
                    json!({
                        "name": tc.name,
                        "cores": tc.cores,
                        "throughput_ops_per_s": s.tenant_ops_per_s.get(t),
                        "tiers": shares,
                    })
                })
                .collect::<Vec<_>>());
        }
        SimOutput {
            summary,
            timeseries: self.timeseries(),
        }
    }
}
