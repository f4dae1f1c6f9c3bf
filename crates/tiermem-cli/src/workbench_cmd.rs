//! `tiermem reproduce all` and `tiermem sweep`: the researcher's workbench. Both run in the
//! Python front (`python -m tiermem.workbench`), where the sweep engine (local processes or
//! a Ray cluster) lives; this module only checks the arguments and hands them over.

use crate::sim_cmd::{check_out_dir, front_python, ReproduceArgs};
use clap::Args;
use std::path::PathBuf;
use tiermem_core::{Error, Result};

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep file (TOML): `base` (a config path, relative to the sweep file), `seeds`
    /// (integers) and a `[grid]` table of override paths to value lists.
    pub file: PathBuf,
    /// Output Parquet file (one row per point: the grid's columns, then the summary).
    #[arg(long)]
    pub out: PathBuf,
    /// Run the points on the Ray cluster at ADDRESS (host:port) instead of local processes.
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
    /// Local processes (without --ray).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
}

/// `tiermem reproduce all`: every experiment, resumable, with index.json.
pub fn reproduce_all(a: ReproduceArgs) -> Result<i32> {
    check_out_dir(&a.out)?;
    let mut args = vec![
        "reproduce-all".to_string(),
        "--out".into(),
        a.out.display().to_string(),
    ];
    if a.quick {
        args.push("--quick".into());
    }
    if a.no_plots {
        args.push("--no-plots".into());
    }
    if a.force {
        args.push("--force".into());
    }
    for p in &a.only {
        args.extend(["--only".into(), p.clone()]);
    }
    if let Some(addr) = &a.ray {
        args.extend(["--ray".into(), addr.clone()]);
    }
    run_python(&args)
}

/// What `tiermem sweep` checks before handing over (the sweep file itself is checked by
/// the Python front, which reads it).
pub fn check_sweep_args(a: &SweepArgs) -> Result<()> {
    if a.jobs == 0 {
        return Err(Error::usage("--jobs: 0; give at least 1 local process"));
    }
    Ok(())
}

pub fn sweep(a: SweepArgs) -> Result<i32> {
    check_sweep_args(&a)?;
    let mut args = vec![
        "sweep".to_string(),
        a.file.display().to_string(),
        "--out".into(),
        a.out.display().to_string(),
        "--jobs".into(),
        a.jobs.to_string(),
    ];
    if let Some(addr) = &a.ray {
        args.extend(["--ray".into(), addr.clone()]);
    }
    run_python(&args)
}

/// Run `python -m tiermem.workbench ARGS` and return its exit status (it prints its own
/// one-line errors, exit 2 for bad input).
fn run_python(args: &[String]) -> Result<i32> {
    let python = front_python();
    let status = std::process::Command::new(&python)
        .args(["-m", "tiermem.workbench"])
        .args(args)
        .status()
        .map_err(|e| {
            Error::usage(format!(
                "cannot run `{python} -m tiermem.workbench` ({e}); run `make setup` and set TIERMEM_PYTHON=.venv/bin/python"
            ))
        })?;
    Ok(status.code().unwrap_or(1))
}
