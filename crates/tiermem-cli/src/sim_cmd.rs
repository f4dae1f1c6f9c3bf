//! `tiermem sim` and `tiermem reproduce`.

use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tiermem_core::{Error, ErrorKind, Result};
use tiermem_sim::reproduce::EXPERIMENTS;

#[derive(Args)]
pub struct SimArgs {
    /// Simulation config (TOML); see examples/sim.toml.
    pub config: PathBuf,
    /// Output directory (summary.json, timeseries.csv, PNG plots).
    #[arg(long)]
    pub out: PathBuf,
    /// Skip the PNG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Override one config field (repeatable, applied in order): PATH is
    /// `machine.tiers[1].capacity` style (dots for tables, [i] for array elements), VALUE is
    /// TOML (42, 1.5, true, "64G", [1, 2]) or else taken as a string (--set policy.policy=tpp).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
}

#[derive(Args)]
pub struct ReproduceArgs {
    /// Experiment name (colloid-fig1, ...), or `all`: every experiment into OUT/NAME/,
    /// resumable, with OUT/index.json.
    pub experiment: String,
    #[arg(long)]
    pub out: PathBuf,
    /// Shorter runs (within a minute here), same shape of results.
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub no_plots: bool,
    /// With `all`: only this paper's experiments (colloid, mercury, ...) or this experiment
    /// (repeatable).
    #[arg(long, value_name = "PAPER")]
    pub only: Vec<String>,
    /// With `all`: run the experiments on the Ray cluster at ADDRESS (host:port).
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
    /// With `all`: rerun experiments whose summary.json already matches their config hash.
    #[arg(long)]
    pub force: bool,
    /// With tierscape-fig8: the compressed tiers' fault and compression times from this
    /// `tiermem tiers characterize` tiers.json or tiers.csv (each tier's codec and allocator
    /// with the pool in DRAM). Default: experiments/tierscape/tiers-characterized.json.
    #[arg(long, value_name = "FILE")]
    pub tiers: Option<PathBuf>,
    /// With granularity-fig8: ICS'18's own method (§5, Fig. 7) instead of the simulation:
    /// every scheme run at 1:1 latency, the runtime at 1:2, 1:3 and 1:8 projected from its
    /// compute, per-tier stall, shootdowns and copies (the experiment
    /// granularity-fig8-projection).
    #[arg(long)]
    pub projection: bool,
}

/// `--out` must be a directory or a path where one can be made: checked before any work
/// (so a bad invocation writes nothing).
pub fn check_out_dir(out: &Path) -> Result<()> {
    if out.as_os_str().is_empty() {
        return Err(Error::usage(
            "--out: empty path; give a directory for the results (created if missing)",
        ));
    }
    if out.exists() && !out.is_dir() {
        return Err(Error::usage(format!(
            "--out: {} exists and is not a directory; give a new or existing directory for the results",
            out.display()
        )));
    }
    // The nearest existing ancestor must be a directory too (`--out file.txt/sub`).
    let mut anc = out.parent();
    while let Some(p) = anc {
        if p.as_os_str().is_empty() || p.exists() {
            if !p.as_os_str().is_empty() && !p.is_dir() {
                return Err(Error::usage(format!(
                    "--out: {} is not a directory, so {} cannot be created; give a directory path",
                    p.display(),
                    out.display()
                )));
            }
            break;
        }
        anc = p.parent();
    }
    Ok(())
}

pub fn sim(a: SimArgs) -> Result<()> {
    check_out_dir(&a.out)?;
    let overrides = a
        .set
        .iter()
        .map(|s| tiermem_sim::overrides::parse_assignment(s))
        .collect::<Result<Vec<_>>>()?;
    let text = std::fs::read_to_string(&a.config).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot read config {}: {e}", a.config.display()),
        )
    })?;
    let mut origin = a.config.display().to_string();
    let text = if overrides.is_empty() {
        text
    } else {
        let text = tiermem_sim::overrides::apply_to_text(&text, &origin, &overrides)?;
        // Generated text: an origin starting with `<dict` makes errors name field paths
        // only, not line numbers of text the user never saw.
        origin = format!("<dict: {origin} with --set>");
        text
    };
    let out = tiermem_sim::simulate_toml(&text, &origin)?;
    out.write_to(&a.out)?;
    if let Some(ws) = out.summary["warnings"].as_array() {
        for w in ws {
            eprintln!("tiermem: warning: {}", w.as_str().unwrap_or_default());
        }
    }
    let s = &out.summary["steady_state"];
    println!(
        "policy {}  workload {}",
        out.summary["policy"], out.summary["workload"]
    );
    println!(
        "steady-state throughput {:.4e} ops/s, mean latency {:.1} ns",
        num(&s["throughput_ops_per_s"]),
        num(&s["avg_latency_ns"])
    );
    if let Some(tiers) = s["tiers"].as_array() {
        for t in tiers {
            println!(
                "  tier {:<10} latency {:>7.1} ns  app share {:>5.1} %",
                t["name"].as_str().unwrap_or("?"),
                num(&t["latency_ns"]),
                100.0 * num(&t["app_share"])
            );
        }
    }
    if !a.no_plots {
        plot("timeseries", &a.out);
    }
    println!("wrote {}", a.out.display());
    Ok(())
}

pub fn reproduce(mut a: ReproduceArgs) -> Result<i32> {
    if a.tiers.is_some() && a.experiment != "tierscape-fig8" {
        return Err(Error::usage(format!(
            "--tiers applies to `tiermem reproduce tierscape-fig8` only, not to `{}`; drop it",
            a.experiment
        )));
    }
    if a.projection {
        if a.experiment != "granularity-fig8" {
            return Err(Error::usage(format!(
                "--projection applies to `tiermem reproduce granularity-fig8` only, not to `{}`; drop it",
                a.experiment
            )));
        }
        a.experiment = "granularity-fig8-projection".into();
    }
    if a.experiment == "all" {
        return crate::workbench_cmd::reproduce_all(a);
    }
    if !EXPERIMENTS.contains(&a.experiment.as_str()) {
        return Err(Error::usage(format!(
            "unknown experiment `{}`; available: all, {}",
            a.experiment,
            EXPERIMENTS.join(", ")
        )));
    }
    for (flag, given) in [
        ("--only", !a.only.is_empty()),
        ("--ray", a.ray.is_some()),
        ("--force", a.force),
    ] {
        if given {
            return Err(Error::usage(format!(
                "{flag} applies to `tiermem reproduce all`, not to one experiment; drop it or use `all`"
            )));
        }
    }
    check_out_dir(&a.out)?;
    let start = std::time::Instant::now();
    let summary =
        tiermem_sim::reproduce::run_with_tiers(&a.experiment, &a.out, a.quick, a.tiers.as_deref())?;
    print_rows(&summary);
    if !a.no_plots {
        plot(&a.experiment, &a.out);
    }
    println!(
        "wrote {} in {:.1} s",
        a.out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(0)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Print a summary's rows as an aligned table (numbers with 4 significant digits).
fn print_rows(summary: &Value) {
    let Some(rows) = summary["rows"].as_array() else {
        return;
    };
    let Some(first) = rows.first().and_then(|r| r.as_object()) else {
        return;
    };
    let keys: Vec<&String> = first.keys().collect();
    let cell = |v: &Value| match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-2) {
                format!("{x:.3e}")
            } else if x.fract() == 0.0 {
                format!("{x}")
            } else {
                format!("{x:.3}")
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| keys.iter().map(|k| cell(&r[k.as_str()])).collect())
        .collect();
    let widths: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            table
                .iter()
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
                .max(k.len())
        })
        .collect();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:>w$}", w = widths[i]))
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!("{}", line(keys.iter().map(|k| k.to_string()).collect()));
    for r in table {
        println!("{}", line(r));
    }
}

/// The checkout's `python/` (the `tiermem` package) when the binary runs from one.
pub fn checkout_python_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.parent()?.join("python");
    dir.join("tiermem").is_dir().then_some(dir)
}

/// Draw PNGs with the Python front (matplotlib). Plots are optional: without Python the
/// data files are still complete, and we say how to get the plots.
pub(crate) fn plot(kind: &str, dir: &Path) {
    let python = front_python();
    let status = std::process::Command::new(&python)
        .args(["-m", "tiermem.plots", kind])
        .arg(dir)
        .status();
    match status {
        Ok(s) if s.success() => {}
        _ => eprintln!(
            "tiermem: plots skipped: `{python} -m tiermem.plots` failed; run `make setup` and set TIERMEM_PYTHON=.venv/bin/python"
        ),
    }
}

/// The Python that runs the `tiermem` package: `$TIERMEM_PYTHON`, else the checkout's
/// venv, else `python3`.
pub fn front_python() -> String {
    std::env::var("TIERMEM_PYTHON")
        .unwrap_or_else(|_| project_python().unwrap_or_else(|| "python3".into()))
}

/// The project's venv Python when the binary runs from a checkout (`target/release/tiermem`
/// next to `.venv/`), so plots work without setting TIERMEM_PYTHON.
fn project_python() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let root = exe.parent()?.parent()?.parent()?;
    let py = root.join(".venv/bin/python");
    py.exists().then(|| py.display().to_string())
}
