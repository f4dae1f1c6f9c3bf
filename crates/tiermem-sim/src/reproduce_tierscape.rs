//! TierScape §7 (Kumar et al., "Taming Server Memory TCO with Multiple Software-Defined
//! Compressed Tiers"), Figures 8–10: `tiermem reproduce tierscape-fig8`.
//!
//! Every configuration of §7.1 runs on `experiments/tierscape/fig8.toml`'s machine (DRAM plus
//! the 5 compressed tiers of Table 2):
//!  * `2T-C/M/A`: DRAM + zsmalloc-lzo on DRAM only (Google's production tier, §7.1), the
//!    waterfall policy with one compressed tier (a region under the threshold goes to it and
//!    stays until it faults: the 2-Tier system), at the three threshold presets;
//!  * `6T-WF-C/M/A`: the waterfall model over all 6 tiers at the same presets;
//!  * `6T-AM-0.9/0.5/0.1`: the analytical model at α = 0.9, 0.5, 0.1;
//!  * `DRAM`: every page in DRAM (no policy), the reference of slowdown and TCO.
//!
//! Workloads (the paper's Table 3, scaled to about 1 GiB):
//!  * `memcached`, `redis`: key-value stores of 4 KiB values driven like memtier (§7.2:
//!    "generate the load in a Gaussian distribution"; memtier's `--key-pattern G`), SET:GET
//!    1:10 (memtier's default ratio); key popularity σ = 25 % of the keys for memcached and
//!    2.5 % for Redis, whose Fig. 10 shows only ~10 % of the compressed pages faulting back
//!    (a concentrated popularity); one core, ~7.5 µs of server work per request;
//!  * `pagerank`: Ligra's PageRank over a directed rMat graph (§7.2; `workload/pagerank.rs`:
//!    Ligra's arrays, the dense pull `edgeMap`, which never reads the out-edges, and rMat's
//!    degree skew), the paper's graph at 1/16; one line per access, 10 ns of compute.
//!
//! Time is scaled with the footprint: a 120 s profile window (§7.1) becomes `120 s × the
//! simulated share of the paper's footprint`, so a page sees as many accesses per
//! window as in the paper at the same per-core rate. Each run lasts 24 windows (12 with
//! `--quick`); the steady state is the second half.
//!
//! Outputs: `summary.json` rows `{workload, config, slowdown, tco_savings, dram_share,
//! faulted_share}` (fractions; slowdown `1 − throughput / DRAM's`, TCO saving the time mean
//! of `1 − TCO / TCO_max` with each tier's measured pool bytes, Eq. 12), and
//! `occupancy.csv`: pages per tier and faults per second over time, per workload and
//! configuration (Figures 9–10). The compressed tiers' fault and compression times are a
//! `tiermem tiers characterize` measurement (`--tiers FILE`, default the committed
//! `experiments/tierscape/tiers-characterized.json`), recorded as `tier_source`.

use crate::config::SimConfig;
use crate::measured_tiers::MeasuredTiers;
use crate::reproduce::parallel_map;
use crate::runner::{self, RunOutcome};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use tiermem_core::{Backend, Error, Result};

pub const TIERSCAPE_FIG8_BASE: &str = include_str!("../../../experiments/tierscape/fig8.toml");
const ORIGIN: &str = "experiments/tierscape/fig8.toml";

/// The compressed tiers' fault and compression times (TierScape's per codec × allocator
/// latencies), unless `--tiers` gives another characterization: written by
/// `target/release/tiermem tiers characterize --out /tmp/char --no-plots` (the built-in
/// corpus, 4096 pages, fastest of 3 rounds; compression timed with the allocator's store)
/// on 2026-11-24 on the 2-core AMD EPYC dev VM, otherwise idle; its tiers.json as it came
/// out. Each tier takes its codec and
/// allocator's row with the pool in DRAM; fig8.toml's Optane backing adds its extra reads.
pub const TIERS_CHARACTERIZED: &str =
    include_str!("../../../experiments/tierscape/tiers-characterized.json");
const TIERS_ORIGIN: &str = "experiments/tierscape/tiers-characterized.json";

/// The committed characterization ([`TIERS_CHARACTERIZED`]).
pub fn default_tiers() -> Result<MeasuredTiers> {
    MeasuredTiers::from_json(TIERS_CHARACTERIZED, TIERS_ORIGIN)
}

/// The footprint the base config simulates, GB (1 GiB).
const SIM_GB: f64 = 1.073_741_824;
/// §7.1: "We use 120 seconds as our profile window duration".
const PAPER_WINDOW_S: f64 = 120.0;
/// The 2-Tier system's one compressed tier (§7.1: zsmalloc + lzo on DRAM).
const TWO_TIER: &str = "zs-lo-dr";

/// One workload of Table 3 as the simulator runs it.
pub struct App {
    pub name: &'static str,
    /// The simulated footprint as a share of the paper's (Table 3).
    pub sim_share: f64,
    pub compute_ns_per_op: f64,
    pub workload: &'static str,
}

/// Redis serves ~80–150 K requests/s on one core without pipelining (Redis's benchmark page:
/// 81 K GET / 110 K SET on a 2.5 GHz Xeon X3320; ~130 K on an EC2 c4.large): ~7.5 µs each.
const KV_REQUEST_NS: f64 = 7500.0;

pub const APPS: &[App] = &[
    App {
        name: "memcached",
        sim_share: SIM_GB / 44.0,
        compute_ns_per_op: KV_REQUEST_NS,
        workload: r#"kind = "kv"
keys = 262144
value_size = "4KiB"
mix = "10:1"
distribution = "gaussian"
gaussian_stddev = 0.25
"#,
    },
    App {
        name: "redis",
        sim_share: SIM_GB / 41.0,
        compute_ns_per_op: KV_REQUEST_NS,
        workload: r#"kind = "kv"
keys = 262144
value_size = "4KiB"
mix = "10:1"
distribution = "gaussian"
gaussian_stddev = 0.025
"#,
    },
    App {
        name: "pagerank",
        // The paper's graph at 1/16: Ligra's rMatGraph for n = 100 M makes 2^27 vertices and
        // 10 n = 10^9 edges; here 2^23 and 62.5 M (852 MB: 13.6 GB at full size, where Table 3
        // says 18 GB, presumably the peak while the graph is read).
        sim_share: 1.0 / 16.0,
        compute_ns_per_op: 10.0,
        workload: r#"kind = "pagerank"
vertices = 8388608
edges = 62500000
"#,
    },
];

impl App {
    /// The profile window at this footprint: 120 s (§7.1) times the simulated share, so a
    /// page sees as many accesses per window as in the paper at the same per-core rate.
    pub fn window_s(&self) -> f64 {
        PAPER_WINDOW_S * self.sim_share
    }
}

/// The configurations of §7.1, in Figure 8's order, after the DRAM reference.
pub const CONFIGS: &[&str] = &[
    "DRAM",
    "2T-C",
    "2T-M",
    "2T-A",
    "6T-WF-C",
    "6T-WF-M",
    "6T-WF-A",
    "6T-AM-0.9",
    "6T-AM-0.5",
    "6T-AM-0.1",
];

fn preset(letter: &str) -> &'static str {
    match letter {
        "C" => "conservative",
        "M" => "moderate",
        _ => "aggressive",
    }
}

/// The `[policy]` table and whether the machine keeps only the 2-Tier tier.
fn policy_of(config: &str, window_ms: f64) -> (String, bool) {
    if config == "DRAM" {
        return ("policy = \"static\"\n".into(), false);
    }
    if let Some(alpha) = config.strip_prefix("6T-AM-") {
        return (
            format!("policy = \"tierscape_analytical\"\nprofile_window_ms = {window_ms:?}\nalpha = {alpha}\n"),
            false,
        );
    }
    let (two_tier, letter) = match config.strip_prefix("2T-") {
        Some(l) => (true, l),
        None => (false, config.trim_start_matches("6T-WF-")),
    };
    (
        format!(
            "policy = \"tierscape_waterfall\"\nprofile_window_ms = {window_ms:?}\nthreshold = \"{}\"\n",
            preset(letter)
        ),
        two_tier,
    )
}

/// The run's config: the base machine, the app's workload and core, the policy, and the
/// run length in windows; the tiers' times from the committed characterization.
pub fn config_for(app: &App, config: &str, windows: f64) -> Result<SimConfig> {
    config_with_tiers(app, config, windows, &default_tiers()?)
}

/// [`config_for`] with the compressed tiers' `fault_ns` / `compress_ns` from `measured`.
pub fn config_with_tiers(
    app: &App,
    config: &str,
    windows: f64,
    measured: &MeasuredTiers,
) -> Result<SimConfig> {
    let window_s = app.window_s();
    let mut doc: toml::Value = toml::from_str(TIERSCAPE_FIG8_BASE)
        .map_err(|e| Error::config(format!("{ORIGIN}: {e}")))?;
    let (policy, two_tier) = policy_of(config, window_s * 1000.0);
    let root = doc.as_table_mut().expect("a TOML document is a table");
    let parse = |text: &str| -> toml::Value { toml::from_str(text).expect("built-in TOML") };
    root.insert("workload".into(), parse(app.workload));
    root.insert("policy".into(), parse(&policy));
    root.insert("duration_s".into(), toml::Value::Float(window_s * windows));
    let machine = root
        .get_mut("machine")
        .and_then(|m| m.as_table_mut())
        .ok_or_else(|| Error::config(format!("{ORIGIN}: no [machine]")))?;
    machine.insert(
        "compute_ns_per_op".into(),
        toml::Value::Float(app.compute_ns_per_op),
    );
    if let Some(toml::Value::Array(tiers)) = machine.get_mut("tiers") {
        measured.apply(tiers)?;
    }
    if two_tier {
        if let Some(toml::Value::Array(tiers)) = machine.get_mut("tiers") {
            let mut i = 0;
            tiers.retain(|t| {
                i += 1;
                i == 1 || t.get("name").and_then(|n| n.as_str()) == Some(TWO_TIER)
            });
        }
    }
    let text = toml::to_string(&doc).expect("serialize TOML");
    SimConfig::from_toml(&text, &format!("{ORIGIN} ({} {config})", app.name))
}

/// Steady-state measures of one run.
struct Measures {
    throughput: f64,
    tco_savings: f64,
    dram_share: f64,
    faulted_share: f64,
}

fn measure(out: &RunOutcome, cfg: &SimConfig) -> Measures {
    let b = &out.backend;
    let specs = b.tier_specs();
    let page = b.page_bytes();
    let total = b.placement().len() as f64;
    let recs: Vec<_> = {
        let last = b.records.last().map_or(0.0, |r| r.t_s);
        let from = last * (1.0 - cfg.steady_state_fraction);
        b.records.iter().filter(|r| r.t_s > from + 1e-12).collect()
    };
    let k = recs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&crate::backend::Record) -> f64| recs.iter().map(|r| f(r)).sum::<f64>() / k;
    let savings = |r: &crate::backend::Record| {
        let logical: Vec<u64> = r.used_pages.iter().map(|&p| p * page).collect();
        let physical: Vec<u64> = r.used_bytes.iter().map(|&x| x as u64).collect();
        tiermem_core::tco::measured_savings(specs, &logical, &physical)
    };
    let dt = cfg.record_interval_ms / 1000.0;
    let faults: f64 = recs
        .iter()
        .map(|r| r.faults_per_s.iter().sum::<f64>() * dt)
        .sum();
    Measures {
        throughput: mean(&|r| r.ops_per_s),
        tco_savings: mean(&savings),
        dram_share: mean(&|r| r.used_pages[0] as f64 / total),
        // Pages faulted back over the steady state, as a share of the footprint
        // (normalised per window by the caller).
        faulted_share: faults / total,
    }
}

/// `tiermem reproduce tierscape-fig8`.
pub fn fig8(quick: bool, out_dir: &Path) -> Result<Value> {
    fig8_with_tiers(quick, out_dir, None)
}

/// `tiermem reproduce tierscape-fig8 [--tiers FILE]`: the tiers' times from FILE (a
/// characterization's tiers.json or tiers.csv), else the committed one.
pub fn fig8_with_tiers(quick: bool, out_dir: &Path, tiers: Option<&Path>) -> Result<Value> {
    let measured = match tiers {
        Some(p) => MeasuredTiers::read(p)?,
        None => default_tiers()?,
    };
    // Every tier of the base config must be in it: checked before any run.
    let mut base: toml::Value = toml::from_str(TIERSCAPE_FIG8_BASE)
        .map_err(|e| Error::config(format!("{ORIGIN}: {e}")))?;
    let used = match base["machine"].get_mut("tiers") {
        Some(toml::Value::Array(t)) => measured.apply(t)?,
        _ => Vec::new(),
    };
    let tier_source = json!({
        "file": measured.origin,
        "committed": tiers.is_none(),
        "source": measured.source,
        "tiers": used,
    });
    let windows = if quick { 12.0 } else { 24.0 };
    let jobs: Vec<(usize, &str)> = (0..APPS.len())
        .flat_map(|a| CONFIGS.iter().map(move |&c| (a, c)))
        .collect();
    let runs = parallel_map(jobs, |(a, c)| {
        let cfg = config_with_tiers(&APPS[a], c, windows, &measured)?;
        let out = runner::run(&cfg)?;
        Ok::<_, Error>((a, c, cfg, out))
    });
    let mut rows = Vec::new();
    let mut occupancy = String::from("workload,config,t_s,tier,pages,faults_per_s\n");
    let mut reference = vec![f64::NAN; APPS.len()];
    let mut done = Vec::new();
    for r in runs {
        let (a, c, cfg, out) = r?;
        let m = measure(&out, &cfg);
        if c == "DRAM" {
            reference[a] = m.throughput;
        }
        for rec in &out.backend.records {
            for (i, spec) in out.backend.tier_specs().iter().enumerate() {
                let _ = writeln!(
                    occupancy,
                    "{},{},{:.3},{},{},{:.3}",
                    APPS[a].name, c, rec.t_s, spec.name, rec.used_pages[i], rec.faults_per_s[i]
                );
            }
        }
        done.push((a, c, cfg, m));
    }
    for (a, c, cfg, m) in &done {
        let app = &APPS[*a];
        let window_s = app.window_s();
        let steady_windows = cfg.duration_s * cfg.steady_state_fraction / window_s;
        rows.push(json!({
            "workload": app.name,
            "config": c,
            "system": c,
            "slowdown": 1.0 - m.throughput / reference[*a],
            "tco_savings": m.tco_savings,
            "dram_share": m.dram_share,
            "faulted_share": m.faulted_share / steady_windows,
            "throughput_ops_per_s": m.throughput,
            "window_s": window_s,
        }));
    }
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir.display(), e))?;
    let p = out_dir.join("occupancy.csv");
    std::fs::write(&p, occupancy).map_err(|e| Error::io(p.display(), e))?;
    Ok(json!({
        "experiment": "tierscape-fig8",
        "quick": quick,
        "windows": windows,
        "steady_state_fraction": 0.5,
        "tiers": ["dram", "zb-l4-dr", "zb-l4-op", "zs-l4-op", "zs-lo-dr", "zs-de-op"],
        "tier_source": tier_source,
        "paper": {
            "redis": {
                "2T-A": {"tco_savings": 0.3484, "slowdown": 0.1833},
                "6T-WF-A": {"tco_savings": 0.5611, "slowdown": 0.1948},
                "6T-AM-0.1": {"tco_savings": 0.6410, "slowdown": 0.1437},
            },
            "pagerank": {
                "2T-C": {"tco_savings": 0.2486, "slowdown": 0.2182},
                "6T-WF-C": {"tco_savings": 0.4078, "slowdown": 0.1309},
                "6T-AM-0.9": {"tco_savings": 0.2126, "slowdown": 0.1491},
            },
        },
        "rows": rows,
    }))
}
