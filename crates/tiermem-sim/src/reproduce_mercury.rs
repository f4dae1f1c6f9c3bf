//! Reproductions of Mercury's figures (arXiv 2412.08938 §5): each system is an ordinary
//! simulation of `experiments/mercury/fig13.toml`'s machine — TPP, Colloid over TPP, and
//! Mercury (TPP placing pages within the limits and CPU shares of the Mercury controller).
//! Each system's time series goes to `OUT/<system>/timeseries.csv` (per-tenant latency,
//! bandwidth, local bytes, limit, CPU share); `summary.json` has one row per system and
//! tenant.

use crate::backend::Record;
use crate::config::SimConfig;
use crate::reproduce::{config_with, parallel_map, MERCURY_FIG13_BASE};
use crate::runner::{self, RunOutcome};
use serde_json::{json, Value};
use std::path::Path;
use tiermem_core::Result;
use tiermem_policies::mercury::Slo;

const ORIGIN: &str = "experiments/mercury/fig13.toml";
const GIB: f64 = (1u64 << 30) as f64;
pub const SYSTEMS: &[&str] = &["tpp", "tpp+colloid", "mercury"];

/// A tenant under Mercury: name, SLO, priority.
type Managed = (&'static str, &'static str, u32);

/// How a paper SLO becomes the model's, the same for every figure: the paper's own number
/// in its own unit (ns of memory-access latency, GB/s of bandwidth), as the figure states
/// it or, where a figure states none, as §5.6 states it for the same tenant beside the
/// same co-runners (Fig. 14 ← §5.6.2). The machine's latencies are a published DDR5-4800
/// socket's (115 ns unloaded, CXL 2×), not shifted to match any figure. Fig. 11 states no
/// SLO at all: there each tenant's is its fair-share latency (`fig11`).
pub const SLO_RULE: &str =
    "the paper's stated SLO, unchanged (a figure without one: the same tenant's in §5.6)";

/// Fig. 13: SLOs 460 ns / 40 GB/s / 290 ns (§5.5). The paper does not state Fig. 13's
/// priorities; as in §5.4 the llama.cpp batch job is the least important, and Redis (the
/// strictest-latency service of §2.3 and §5.6) the most.
const FIG13: &[Managed] = &[
    ("redis", "460ns", 3),
    ("llama", "40GB/s", 1),
    ("vectordb", "290ns", 2),
];

fn controller_toml(tenants: &[(&str, &str, u32)]) -> toml::Value {
    let mut text = String::from("controller = \"mercury\"\n");
    for (name, slo, prio) in tenants {
        text += &format!("[[tenants]]\nname = \"{name}\"\nslo = \"{slo}\"\npriority = {prio}\n");
    }
    toml::from_str(&text).expect("controller TOML")
}

fn run_system(
    base: &str,
    system: &str,
    tenants: &[(&str, &str, u32)],
    overrides: &[(&str, toml::Value)],
) -> Result<(RunOutcome, SimConfig)> {
    let mut ov: Vec<(&str, toml::Value)> = overrides.to_vec();
    match system {
        "tpp+colloid" => ov.push(("colloid", toml::Value::Table(Default::default()))),
        "mercury" => ov.push(("controller", controller_toml(tenants))),
        _ => {}
    }
    let cfg = config_with(base, ORIGIN, &ov)?;
    let out = runner::run(&cfg)?;
    Ok((out, cfg))
}

fn met(slo: Slo, perf: f64) -> bool {
    match slo {
        Slo::LatencyNs(t) | Slo::StallMsPerS(t) => perf <= t,
        // ±5 % counts as held (the issue's tolerance for a bandwidth target).
        Slo::BandwidthBytesPerS(t) | Slo::CpuPerS(t) => perf >= 0.95 * t,
    }
}

/// Per-tenant rows over the records from `from_s` on.
fn rows_for(
    experiment: &str,
    system: &str,
    out: &RunOutcome,
    cfg: &SimConfig,
    tenants: &[(&str, &str, u32)],
    from_s: f64,
) -> Vec<Value> {
    let recs: Vec<&Record> = out
        .backend
        .records
        .iter()
        .filter(|r| r.t_s > from_s)
        .collect();
    let k = recs.len().max(1) as f64;
    let names: Vec<String> = out
        .backend
        .tenant_specs()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    tenants
        .iter()
        .filter_map(|(name, slo_text, prio)| {
            let t = names.iter().position(|n| n == name)?;
            let slo = Slo::parse(slo_text).expect("SLO");
            let get = |v: &Vec<f64>| v.get(t).copied().unwrap_or(0.0);
            let perf = |r: &Record| {
                if slo.is_latency() {
                    get(&r.tenant_latency_ns)
                } else {
                    get(&r.tenant_bandwidth_bytes_per_s)
                }
            };
            let mean = |f: &dyn Fn(&Record) -> f64| recs.iter().map(|r| f(r)).sum::<f64>() / k;
            let measured = mean(&perf);
            let met_share = recs.iter().filter(|r| met(slo, perf(r))).count() as f64 / k;
            Some(json!({
                "experiment": experiment,
                "system": system,
                "tenant": name,
                "class": slo.class(),
                "priority": prio,
                "slo": slo_text,
                "slo_value": slo.target(),
                "measured": measured,
                "measured_unit": if slo.is_latency() { "ns" } else { "bytes/s" },
                "slo_met_share": met_share,
                "local_gib": mean(&|r| get(&r.tenant_local_bytes)) / cfg.scale / GIB,
                "cpu_share": mean(&|r| get(&r.tenant_cpu_share)),
                "throughput": mean(&|r| get(&r.tenant_ops_per_s)),
            }))
        })
        .collect()
}

fn write_series(out_dir: &Path, system: &str, out: &RunOutcome, cfg: &SimConfig) -> Result<()> {
    out.output(cfg).write_to(&out_dir.join(system))
}

fn row<'a>(rows: &'a [Value], system: &str, tenant: &str) -> Option<&'a Value> {
    rows.iter()
        .find(|r| r["system"] == system && r["tenant"] == tenant)
}

/// Fig. 13 (§5.5): Redis-like LS, llama-like BI and VectorDB-like LS on 40 GB of local
/// memory, against TPP and Colloid. Steady state: the second half of the run.
pub fn fig13(quick: bool, out_dir: &Path) -> Result<Value> {
    // TPP scans each tenant on its own, 256 MB of it per 100 ms (a 40 GB tenant: 16 s a
    // pass); steady state is the second half.
    let duration = if quick { 300.0 } else { 600.0 };
    let runs = parallel_map(SYSTEMS.to_vec(), |system| {
        run_system(
            MERCURY_FIG13_BASE,
            system,
            FIG13,
            &[("duration_s", toml::Value::Float(duration))],
        )
        .map(|r| (system, r))
    });
    let mut rows = Vec::new();
    let mut setup = Value::Null;
    let mut scale = 1.0;
    for r in runs {
        let (system, (out, cfg)) = r?;
        scale = cfg.scale;
        write_series(out_dir, system, &out, &cfg)?;
        if let Some(s) = &out.controller_setup {
            setup = json!(s);
        }
        rows.extend(rows_for(
            "mercury-fig13",
            system,
            &out,
            &cfg,
            FIG13,
            duration / 2.0,
        ));
    }
    let tput = |s: &str, t: &str| row(&rows, s, t).and_then(|r| r["throughput"].as_f64());
    let vdb_gain = match (tput("mercury", "vectordb"), tput("tpp", "vectordb")) {
        (Some(m), Some(t)) if t > 0.0 => m / t - 1.0,
        _ => f64::NAN,
    };
    let missed = |s: &str| {
        rows.iter()
            .filter(|r| r["system"] == s && r["slo_met_share"].as_f64().unwrap_or(0.0) < 0.5)
            .count()
    };
    Ok(json!({
        "experiment": "mercury-fig13",
        "slo_rule": SLO_RULE,
        "quick": quick,
        "scale": scale,
        "duration_s": duration,
        "steady_from_s": duration / 2.0,
        "paper": {
            "mercury": {"redis_ns": 453, "llama_gbps": 40.5, "vectordb_ns": 286, "local_gb": {"redis": 10, "llama": 10, "vectordb": 20}},
            "tpp": {"redis_ns": 198, "llama_gbps": 34.1, "vectordb_ns": 1187},
            "vectordb_gain_vs_tpp": 0.534,
        },
        "vectordb_throughput_gain_vs_tpp": vdb_gain,
        "slos_missed": {"tpp": missed("tpp"), "tpp+colloid": missed("tpp+colloid"), "mercury": missed("mercury")},
        "controller": setup,
        "rows": rows,
    }))
}

/// Share of the time an idle inference server (llama between requests, or done) still
/// issues operations: §5.6.1 "no requests are being processed" — near nothing, not
/// nothing (an assumption; a tenant must run to be measured).
pub const IDLE_BUSY_SHARE: f64 = 0.01;

/// Fig. 14 (§5.6.1, Fig. 7's setup): Redis (higher priority) beside llama.cpp, whose two
/// inference requests each stream at full bandwidth, with an idle gap between them
/// (`busy_share` = [`IDLE_BUSY_SHARE`]). Both fit local memory (80 GB here), so TPP
/// migrates nothing.
pub fn fig14(quick: bool, out_dir: &Path) -> Result<Value> {
    let f = if quick { 0.4 } else { 1.0 };
    let (idle_at, busy_again, end) = (150.0 * f, 200.0 * f, 350.0 * f);
    let tenants = format!(
        r#"[[tenants]]
name = "redis"
cores = 8
[tenants.workload]
kind = "gups"
working_set = "20GiB"
hot_set = "4GiB"
hot_probability = 0.9
object_size = 64
write_fraction = 0.0

[[tenants]]
name = "llama"
cores = 8
[tenants.workload]
kind = "stream"
working_set = "40GiB"
object_size = 4096
[[tenants.workload.phases]]
at_s = {idle_at}
busy_share = {IDLE_BUSY_SHARE}
[[tenants.workload.phases]]
at_s = {busy_again}
busy_share = 1.0

"#
    );
    let base = machine_with(&tenants, "80GiB");
    // SLOs: the paper's own, as every figure here takes them ([`SLO_RULE`]); Fig. 14 states
    // none, so those of the same two tenants in §5.6's other runs: Redis 200 ns (§5.6.2),
    // llama 70 GB/s (Fig. 15, §5.6.2).
    let managed: &[Managed] = &[("redis", "200ns", 2), ("llama", "70GB/s", 1)];
    let runs = parallel_map(SYSTEMS.to_vec(), |system| {
        run_system(
            &base,
            system,
            managed,
            &[("duration_s", toml::Value::Float(end))],
        )
        .map(|r| (system, r))
    });
    let mut rows = Vec::new();
    let mut order = Value::Null;
    let mut scale = 1.0;
    for r in runs {
        let (system, (out, cfg)) = r?;
        scale = cfg.scale;
        write_series(out_dir, system, &out, &cfg)?;
        rows.extend(rows_for("mercury-fig14", system, &out, &cfg, managed, 0.0));
        if system == "mercury" {
            order = json!(bi_action_order(
                &out.backend.records,
                1,
                idle_at,
                busy_again
            ));
        }
    }
    let tput = |s: &str| row(&rows, s, "redis").and_then(|r| r["throughput"].as_f64());
    let gain = |base: &str| match (tput("mercury"), tput(base)) {
        (Some(m), Some(b)) if b > 0.0 => m / b - 1.0,
        _ => f64::NAN,
    };
    Ok(json!({
        "experiment": "mercury-fig14",
        "slo_rule": SLO_RULE,
        "quick": quick,
        "scale": scale,
        "phases_s": {"request1": [0.0, idle_at], "idle": [idle_at, busy_again], "request2": [busy_again, end]},
        "paper": {"redis_gain_vs_tpp": 0.149, "redis_gain_vs_colloid": 0.203},
        "redis_throughput_gain_vs_tpp": gain("tpp"),
        "redis_throughput_gain_vs_colloid": gain("tpp+colloid"),
        "llama_actions": order,
        "rows": rows,
    }))
}

/// When the BI tenant `t` was first demoted (its default-tier limit below its first one),
/// first CPU-throttled, and when its CPU share came back up during the idle phase.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ActionOrder {
    pub first_demotion_s: Option<f64>,
    pub first_throttle_s: Option<f64>,
    pub restored_s: Option<f64>,
    pub min_cpu_share: f64,
}

pub fn bi_action_order(recs: &[Record], t: usize, idle_at: f64, busy_again: f64) -> ActionOrder {
    let limit = |r: &Record| {
        r.tenant_local_limit_bytes
            .get(t)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let cpu = |r: &Record| r.tenant_cpu_share.get(t).copied().unwrap_or(1.0);
    let first_limit = recs.iter().map(limit).find(|l| l.is_finite());
    let first_demotion_s = first_limit.and_then(|l0| {
        recs.iter()
            .find(|r| limit(r).is_finite() && limit(r) < l0)
            .map(|r| r.t_s)
    });
    let first_throttle_s = recs.iter().find(|r| cpu(r) < 1.0 - 1e-9).map(|r| r.t_s);
    let min_before_idle = recs
        .iter()
        .filter(|r| r.t_s <= idle_at)
        .map(cpu)
        .fold(1.0, f64::min);
    let restored_s = recs
        .iter()
        .find(|r| {
            r.t_s > idle_at && r.t_s <= busy_again && cpu(r) >= 1.0 - 1e-9 && min_before_idle < 1.0
        })
        .map(|r| r.t_s);
    ActionOrder {
        first_demotion_s,
        first_throttle_s,
        restored_s,
        min_cpu_share: recs.iter().map(cpu).fold(1.0, f64::min),
    }
}

/// Fig. 16 (§5.6.2), time compressed 10×: Redis (30 GB, SLO 200 ns, highest priority),
/// llama.cpp (40 GB, 70 GB/s) and VectorDB (40 GB, 180 ns, lowest) on 70 GB of local
/// memory; llama streams at full bandwidth until 110 s (paper: surges 60–1100 s) and then
/// idles (`busy_share` = [`IDLE_BUSY_SHARE`]: "llama.cpp's task finishes"), then Redis's
/// active memory grows in steps from 116 to 237 s (paper: 1160–2366 s; its hot set from
/// 6 to 30 GB). Deviations: llama surges from the start (the profiler profiles a tenant's
/// initial load: an idle start would make it inadmissible for 70 GB/s), and VectorDB runs
/// throughout (the paper launches it at 1100 s; a tenant cannot start late under TPP here).
/// The figure's metric: how long Redis's SLO held.
///
/// Shapes (issue 47): "Under TPP, Redis cannot acquire more memory due to lower access
/// frequency compared to VectorDB" (§5.6.2): Redis's growing hot set is touched less often
/// per page than VectorDB's pages, from its first step on — Redis on 4 cores (90 % of them
/// on a 12 GB hot set: 0.3 cores per GB, like Fig. 11's KV store, colder than VectorDB there
/// too), VectorDB on 16 over 40 GB (0.4). Test `fig16_quick_tpp_keeps_vectordb_local`.
pub fn fig16(quick: bool, out_dir: &Path) -> Result<Value> {
    let end = if quick { 240.0 } else { 480.0 };
    let f = end / 240.0;
    let mut growth = String::new();
    for (k, hot) in [12, 18, 24, 30].iter().enumerate() {
        growth += &format!(
            "[[tenants.workload.phases]]\nat_s = {}\nhot_set = \"{hot}GiB\"\n",
            (116.0 + 30.0 * k as f64) * f
        );
    }
    let tenants = format!(
        r#"[[tenants]]
name = "redis"
cores = 4
[tenants.workload]
kind = "gups"
working_set = "30GiB"
hot_set = "6GiB"
hot_probability = 0.9
object_size = 64
write_fraction = 0.0
{growth}
[[tenants]]
name = "llama"
cores = 8
[tenants.workload]
kind = "stream"
working_set = "40GiB"
object_size = 4096
[[tenants.workload.phases]]
at_s = {calm}
busy_share = {IDLE_BUSY_SHARE}

[[tenants]]
name = "vectordb"
cores = 16
[tenants.workload]
kind = "random"
working_set = "40GiB"
object_size = 64

"#,
        calm = 110.0 * f,
    );
    let base = machine_with(&tenants, "70GiB");
    let managed: &[Managed] = &[
        ("redis", "200ns", 3),
        ("llama", "70GB/s", 2),
        ("vectordb", "180ns", 1),
    ];
    let systems = ["tpp", "mercury"];
    let runs = parallel_map(systems.to_vec(), |system| {
        run_system(
            &base,
            system,
            managed,
            &[("duration_s", toml::Value::Float(end))],
        )
        .map(|r| (system, r))
    });
    let mut rows = Vec::new();
    let mut scale = 1.0;
    let last_step = (116.0 + 30.0 * 3.0) * f;
    let mut after_growth = serde_json::Map::new();
    for r in runs {
        let (system, (out, cfg)) = r?;
        scale = cfg.scale;
        write_series(out_dir, system, &out, &cfg)?;
        rows.extend(rows_for("mercury-fig16", system, &out, &cfg, managed, 0.0));
        // Each tenant's mean local memory once Redis's hot set reached 30 GB.
        let late = rows_for("mercury-fig16", system, &out, &cfg, managed, last_step);
        let local: serde_json::Map<String, Value> = late
            .iter()
            .map(|r| {
                (
                    r["tenant"].as_str().unwrap_or("").to_string(),
                    r["local_gib"].clone(),
                )
            })
            .collect();
        after_growth.insert(system.to_string(), Value::Object(local));
    }
    let held = |s: &str| row(&rows, s, "redis").and_then(|r| r["slo_met_share"].as_f64());
    let ratio = match (held("mercury"), held("tpp")) {
        (Some(m), Some(t)) if t > 0.0 => m / t,
        (Some(m), Some(_)) if m > 0.0 => f64::INFINITY,
        _ => f64::NAN,
    };
    Ok(json!({
        "experiment": "mercury-fig16",
        "slo_rule": SLO_RULE,
        "quick": quick,
        "scale": scale,
        "duration_s": end,
        "paper": {"redis_slo_time_ratio_vs_tpp": 8.4, "redis_throughput_gain_vs_tpp": 0.3321},
        "redis_slo_time_ratio_vs_tpp": if ratio.is_finite() { json!(ratio) } else { json!(null) },
        "redis_hot_set_after_growth_gib": 30,
        "local_gib_after_growth": after_growth,
        "rows": rows,
    }))
}

/// The Mercury machine with other tenants and `local` of default-tier memory.
fn machine_with(tenants: &str, local: &str) -> String {
    let at = MERCURY_FIG13_BASE.find("[[tenants]]").expect("tenants");
    let pol = MERCURY_FIG13_BASE.find("[policy]").expect("policy");
    format!(
        "{}{}{}",
        &MERCURY_FIG13_BASE[..at],
        tenants,
        &MERCURY_FIG13_BASE[pol..]
    )
    .replace("capacity = \"40GiB\"", &format!("capacity = \"{local}\""))
}

/// One foreground application of Fig. 11: name, category (Mercury Appendix A), cores, and
/// its `[tenants.workload]` table.
struct Foreground {
    name: &'static str,
    category: &'static str,
    cores: u32,
    workload: &'static str,
}

/// Fig. 11's foreground population, one shape per kind of application the paper runs
/// (Appendix A), hotter or colder than VectorDB (16 cores over 20 GB: 0.8 cores per GB) as
/// §2.2.3 and §5.3 describe them: Database (TPC-H) and KV-store workloads touch their memory
/// less often than VectorDB and lose local memory to it under TPP; Graph about as often
/// (both lose); ML (DLRM), SPEC, Spark and Web more often (they take it from VectorDB).
/// The "cores per GB" of each hot set is in its comment. Sizes are ours: the paper gives
/// none, only that each pair's working sets exceed local memory. The first of each
/// category is the quick population.
const FIG11_FOREGROUNDS: &[Foreground] = &[
    // A scan at low intensity: 4 cores over 24 GB (0.17).
    Foreground {
        name: "tpch",
        category: "Database",
        cores: 4,
        workload: "kind = \"stream\"\nworking_set = \"24GiB\"\nobject_size = 64\n",
    },
    // Embedding lookups: 90 % of 16 cores on 12 GB (1.2).
    Foreground {
        name: "dlrm",
        category: "ML",
        cores: 16,
        workload: "kind = \"gups\"\nworking_set = \"24GiB\"\nhot_set = \"12GiB\"\nhot_probability = 0.9\nobject_size = 64\nwrite_fraction = 0.0\n",
    },
    // YCSB on Redis, HeMemKV-like keys: 90 % of 4 cores on 4.8 GB (0.75), a cold tail.
    Foreground {
        name: "redis-ycsb",
        category: "KV store",
        cores: 4,
        workload: "kind = \"gups\"\nworking_set = \"24GiB\"\nhot_set = \"4.8GiB\"\nhot_probability = 0.9\nobject_size = 64\nwrite_fraction = 0.0\n",
    },
    // Scans over 16 GB on 16 cores (1.0).
    Foreground {
        name: "spark",
        category: "Big data",
        cores: 16,
        workload: "kind = \"stream\"\nworking_set = \"16GiB\"\nobject_size = 64\n",
    },
    // Uniform over 24 GB on 16 cores (0.67): about VectorDB's.
    Foreground {
        name: "gapbs",
        category: "Graph",
        cores: 16,
        workload: "kind = \"random\"\nworking_set = \"24GiB\"\nobject_size = 64\n",
    },
    // 95 % of 12 cores on 8 GB (1.4).
    Foreground {
        name: "spec-mcf",
        category: "SPEC",
        cores: 12,
        workload: "kind = \"gups\"\nworking_set = \"16GiB\"\nhot_set = \"8GiB\"\nhot_probability = 0.95\nobject_size = 64\nwrite_fraction = 0.0\n",
    },
    // A JVM heap: 80 % of 12 cores on 8 GB (1.2).
    Foreground {
        name: "renaissance",
        category: "Web",
        cores: 12,
        workload: "kind = \"gups\"\nworking_set = \"16GiB\"\nhot_set = \"8GiB\"\nhot_probability = 0.8\nobject_size = 64\nwrite_fraction = 0.0\n",
    },
    // TPC-C on Silo: Zipf 0.99 keys on 8 cores (a hot head, a long cold tail).
    Foreground {
        name: "silo-tpcc",
        category: "Database",
        cores: 8,
        workload: "kind = \"kv\"\nkeys = 24000000\nvalue_size = \"1KiB\"\nmix = \"B\"\ndistribution = \"zipf\"\n",
    },
    // Vector search with larger objects: 8 cores over 24 GB (0.33).
    Foreground {
        name: "faiss",
        category: "Database",
        cores: 8,
        workload: "kind = \"random\"\nworking_set = \"24GiB\"\nobject_size = 256\n",
    },
    // YCSB-C on FASTER: Zipf 0.99 keys on 4 cores.
    Foreground {
        name: "faster-ycsb",
        category: "KV store",
        cores: 4,
        workload: "kind = \"kv\"\nkeys = 24000000\nvalue_size = \"1KiB\"\nmix = \"C\"\ndistribution = \"zipf\"\n",
    },
];

/// Fig. 11's local memory: every pair's working sets (VectorDB's 20 GB + 16–24 GB) exceed
/// it, by 12–38 %, as in §2.2.3 ("the total WSS ... exceeds the available local memory").
const FIG11_LOCAL: &str = "32GiB";

/// The background of Fig. 11 (and Fig. 5): Fig. 13's VectorDB-like tenant. It runs first,
/// so first-touch gives it local memory before the foreground starts.
const FIG11_VECTORDB: &str = "[[tenants]]\nname = \"vectordb\"\ncores = 16\n[tenants.workload]\nkind = \"random\"\nworking_set = \"20GiB\"\nobject_size = 64\n\n";

/// Fig. 11's run length: TPP scans each tenant on its own, 256 MB of it per 100 ms
/// (≤ 24 GB: ≤ 10 s a pass); steady state is the second half.
pub fn fig11_duration_s(quick: bool) -> f64 {
    if quick {
        160.0
    } else {
        300.0
    }
}

/// The names of Fig. 11's foreground applications, the full population's order.
pub fn fig11_pairs() -> Vec<&'static str> {
    FIG11_FOREGROUNDS.iter().map(|f| f.name).collect()
}

/// One pair of Fig. 11 (`pair`, a foreground's name, beside VectorDB) under `system`
/// ("tpp" or "mercury") for `duration_s`: its two rows (background first), the time
/// series under `out_dir/<pair>/<system>/`.
pub fn fig11_pair(pair: &str, system: &str, duration_s: f64, out_dir: &Path) -> Result<Vec<Value>> {
    let fg = FIG11_FOREGROUNDS
        .iter()
        .find(|f| f.name == pair)
        .ok_or_else(|| tiermem_core::Error::usage(format!("no Fig. 11 pair {pair:?}")))?;
    fig11_run(fg, system, duration_s, out_dir)
}

fn fig11_run(fg: &Foreground, system: &str, duration: f64, out_dir: &Path) -> Result<Vec<Value>> {
    let tenants = format!(
        "{FIG11_VECTORDB}[[tenants]]\nname = \"{}\"\ncores = {}\n[tenants.workload]\n{}\n",
        fg.name, fg.cores, fg.workload
    );
    let base = machine_with(&tenants, FIG11_LOCAL);
    let probe = config_with(&base, ORIGIN, &[])?;
    // A tenant's slowdown is against its best on this machine: alone, all memory local.
    // Not the pair all local: that puts both tenants' traffic on the local tier, and a
    // co-runner partly on CXL queues less there (its CXL queueing reaches local requests
    // only through the 0.20 coupling), so a co-run beat it (Silo TPC-C's ~100 GB/s:
    // VectorDB 116.4 ns under TPP vs 120.3 ns "all local", a -3.3 % slowdown).
    let alone: Vec<(f64, f64)> = (0..probe.tenants.len())
        .map(|t| crate::mercury::alone_local(&probe, t))
        .collect::<Result<_>>()?;
    let together = crate::mercury::Together::new(&probe)?;
    let fair = together.solve(&together.fair_shares());
    let slo = |t: usize| format!("{:.0}ns", fair[t].0.ceil());
    let (slo_bg, slo_fg) = (slo(0), slo(1));
    let managed = [
        ("vectordb", slo_bg.as_str(), 1),
        (fg.name, slo_fg.as_str(), 2),
    ];
    let (out, cfg) = run_system(
        &base,
        system,
        &managed,
        &[("duration_s", toml::Value::Float(duration))],
    )?;
    write_series(&out_dir.join(fg.name), system, &out, &cfg)?;
    let mut rows = rows_for(
        "mercury-fig11",
        system,
        &out,
        &cfg,
        &managed,
        duration / 2.0,
    );
    for r in rows.iter_mut() {
        let t = if r["tenant"] == "vectordb" { 0 } else { 1 };
        let tput = r["throughput"].as_f64().unwrap_or(f64::NAN);
        r["pair"] = json!(fg.name);
        r["category"] = json!(fg.category);
        r["role"] = json!(if t == 0 { "background" } else { "foreground" });
        r["alone_latency_ns"] = json!(alone[t].0);
        r["alone_throughput"] = json!(alone[t].1);
        r["slowdown"] = json!(1.0 - tput / alone[t].1);
    }
    Ok(rows)
}

pub fn fig11(quick: bool, out_dir: &Path) -> Result<Value> {
    let duration = fig11_duration_s(quick);
    let population: Vec<&Foreground> = FIG11_FOREGROUNDS
        .iter()
        .filter(|f| {
            !quick
                || FIG11_FOREGROUNDS
                    .iter()
                    .find(|g| g.category == f.category)
                    .is_some_and(|g| g.name == f.name)
        })
        .collect();
    let jobs: Vec<(&Foreground, &str)> = population
        .iter()
        .flat_map(|f| ["tpp", "mercury"].map(|s| (*f, s)))
        .collect();
    let results = parallel_map(jobs, |(fg, system)| {
        fig11_run(fg, system, duration, out_dir)
    });
    let mut rows = Vec::new();
    for r in results {
        rows.extend(r?);
    }
    let slowdown = |system: &str, pair: &str, role: &str| {
        rows.iter()
            .find(|r| r["system"] == system && r["pair"] == pair && r["role"] == role)
            .and_then(|r| r["slowdown"].as_f64())
            .unwrap_or(f64::NAN)
    };
    let max_over = |system: &str, role: &str| {
        population
            .iter()
            .map(|f| slowdown(system, f.name, role))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    // A pair moves towards (0, 0) when the worse of its two slowdowns drops.
    let worse = |system: &str, pair: &str| {
        slowdown(system, pair, "foreground").max(slowdown(system, pair, "background"))
    };
    let closer = population
        .iter()
        .filter(|f| worse("mercury", f.name) < worse("tpp", f.name))
        .count();
    let stat = |system: &str| {
        json!({
            "foreground_max_slowdown": max_over(system, "foreground"),
            "vectordb_max_slowdown": max_over(system, "background"),
        })
    };
    Ok(json!({
        "experiment": "mercury-fig11",
        "quick": quick,
        "duration_s": duration,
        "steady_from_s": duration / 2.0,
        "local": FIG11_LOCAL,
        "pairs": population.len(),
        "paper": {
            "tpp": {"foreground_max_slowdown": 0.29, "vectordb_max_slowdown": 0.75},
            "mercury": {"foreground_max_slowdown": 0.12, "vectordb_max_slowdown": 0.14},
        },
        "tpp": stat("tpp"),
        "mercury": stat("mercury"),
        "share_of_pairs_closer_to_origin": closer as f64 / population.len().max(1) as f64,
        "rows": rows,
    }))
}
