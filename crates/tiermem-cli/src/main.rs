//! The `tiermem` command.

#[cfg(test)]
mod cli_fuzz;
mod memstrata_cmd;
mod metrics_http;
mod policies_cmd;
mod qos_cmd;
mod runtime_cmd;
mod sim_cmd;
mod tiers_cmd;
mod trace_cmd;
mod workbench_cmd;

use clap::{Parser, Subcommand};
use tiermem_core::Error;

#[derive(Parser)]
#[command(
    name = "tiermem",
    version,
    about = "Tiered-memory manager: simulate policies, reproduce papers, tier real programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one config: writes summary.json, timeseries.csv and plots to --out.
    Sim(sim_cmd::SimArgs),
    /// Reproduce a paper figure (colloid-fig1, ...), or `all` of them.
    Reproduce(sim_cmd::ReproduceArgs),
    /// List the placement policies (`policy = "NAME"`), or print one's defaults.
    Policies(policies_cmd::PoliciesArgs),
    /// Address traces: convert valgrind lackey output to tiermem's binary format, inspect.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// Run PROGRAM with its memory tiered by tiermem (userfaultfd + compressed tiers).
    Run(runtime_cmd::RunArgs),
    /// Tier a running process across NUMA nodes from outside (move_pages; no preload)
    /// until Ctrl-C, --duration or its exit; detaching leaves every page where it is.
    Attach(runtime_cmd::AttachArgs),
    /// Show live tier statistics of a program running under `tiermem run`.
    Stat(runtime_cmd::StatArgs),
    /// Change the DRAM budget of a program running under `tiermem run`.
    Budget(runtime_cmd::BudgetArgs),
    /// Run several programs as tenants with SLOs and priorities (Mercury's QoS): per-tenant
    /// DRAM limits through the runtime, CPU shares through cgroups.
    Qos(qos_cmd::QosArgs),
    /// Run a sweep file (base config x grid x seeds) locally or on Ray; writes Parquet.
    Sweep(workbench_cmd::SweepArgs),
    /// Compressed tiers: `characterize` measures each codec x allocator x backing here.
    #[command(subcommand)]
    Tiers(tiers_cmd::TiersCommand),
    /// Memstrata's slowdown estimator: `train` retrains the shipped model.
    #[command(subcommand)]
    Memstrata(memstrata_cmd::MemstrataCommand),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // A value its parser refused (`--dram-budget 0`, `--fault-threads two`): one line
            // naming the option and the fix, as every other bad input (tests/bad_inputs.rs).
            if e.kind() == clap::error::ErrorKind::ValueValidation {
                let text = e.render().to_string();
                let line = text.lines().next().unwrap_or_default();
                eprintln!("tiermem: {}", line.strip_prefix("error: ").unwrap_or(line));
            } else {
                let _ = e.print();
            }
            std::process::exit(code);
        }
    };
    let result: Result<i32, Error> = match cli.command {
        Command::Sim(a) => sim_cmd::sim(a).map(|_| 0),
        Command::Reproduce(a) => sim_cmd::reproduce(a),
        Command::Policies(a) => policies_cmd::policies(a).map(|_| 0),
        Command::Trace(c) => trace_cmd::trace(c).map(|_| 0),
        Command::Run(a) => runtime_cmd::run(a),
        Command::Attach(a) => runtime_cmd::attach(a).map(|_| 0),
        Command::Stat(a) => runtime_cmd::stat(a).map(|_| 0),
        Command::Budget(a) => runtime_cmd::budget(a).map(|_| 0),
        Command::Qos(a) => qos_cmd::qos(a),
        Command::Sweep(a) => workbench_cmd::sweep(a),
        Command::Memstrata(c) => memstrata_cmd::memstrata(c).map(|_| 0),
        Command::Tiers(c) => tiers_cmd::tiers(c).map(|_| 0),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("tiermem: {e}");
            std::process::exit(e.kind.exit_code());
        }
    }
}
