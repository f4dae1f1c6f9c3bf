//! Reproductions of Memstrata's figures (OSDI'24) on the simulated Flat Memory Mode node
//! (`flat_memory`, `memstrata`): Fig. 5 (the population under all-local, CXL-only,
//! hardware-only and mixed memory) and Fig. 6 (a noisy neighbour with conflicting vs
//! colored allocation). `summary.json` rows: `{experiment, workload, category, config,
//! slowdown, miss_ratio, dedicated_share}`; `stats` holds the shares the paper reports.

use crate::flat_memory::{allocate, Allocation, Backing, FlatMachine, Pattern, Vm, VmMemory};
use crate::memstrata::{self, paper_machine, Workload, COLORS, OUTLIER};
use crate::reproduce::parallel_map;
use serde_json::{json, Value};
use tiermem_core::Result;

/// The population's seed (fixed: every run reproduces the same 115 workloads).
const SEED: u64 = 15;
/// Mixed mode's dedicated share (§3.2: 33 % dedicated + 67 % hardware-tiered).
pub const MIXED_DEDICATED: f64 = 1.0 / 3.0;

/// The calibrated population on the paper's machine (128 GB local).
pub fn calibrated_population(m: &FlatMachine) -> Result<Vec<Workload>> {
    parallel_map(memstrata::population(SEED), |mut w| {
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

/// Fig. 5: each workload alone in a VM; slowdown against all-local for CXL-only,
/// hardware-tiered only, and mixed (33 % dedicated). Quick mode is the same population
/// (the page-level model is fast enough for all of it).
pub fn fig5(_quick: bool) -> Result<Value> {
    let m = paper_machine(128);
    let pop = calibrated_population(&m)?;
    let configs: [(&str, Backing, f64); 3] = [
        ("cxl-only", Backing::CxlOnly, 0.0),
        ("hw-tiered", Backing::Tiered, 0.0),
        ("mixed", Backing::Tiered, MIXED_DEDICATED),
    ];
    let results = parallel_map(pop.clone(), |w| -> Result<Vec<Value>> {
        let local = memstrata::alone(&m, &w, Backing::AllLocal, 0.0, SEED)?.0;
        configs
            .iter()
            .map(|&(name, backing, ded)| {
                let (ops, miss) = memstrata::alone(&m, &w, backing, ded, SEED)?;
                Ok(row(
                    "memstrata-fig5",
                    &w,
                    name,
                    local / ops - 1.0,
                    miss,
                    ded,
                ))
            })
            .collect()
    });
    let mut rows = Vec::new();
    for r in results {
        rows.extend(r?);
    }
    let mut stats = serde_json::Map::new();
    for (name, _, _) in configs {
        let s: Vec<f64> = rows
            .iter()
            .filter(|r| r["config"] == name)
            .map(|r| r["slowdown"].as_f64().unwrap_or(f64::NAN))
            .collect();
        stats.insert(
            name.into(),
            json!({
                "share_at_most_5pct": share(&s, OUTLIER),
                "share_at_most_10pct": share(&s, 0.10),
                "max_slowdown": s.iter().copied().fold(0.0, f64::max),
            }),
        );
    }
    Ok(json!({
        "experiment": "memstrata-fig5",
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
