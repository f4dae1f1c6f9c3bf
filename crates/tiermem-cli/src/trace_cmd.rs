//! `tiermem trace ...`: address-trace tools.

use clap::Subcommand;
use tiermem_core::{Error, Result};

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Convert a valgrind lackey trace to tiermem's binary trace format.
    Convert { input: std::path::PathBuf, output: std::path::PathBuf },
}

pub fn trace(_c: TraceCommand) -> Result<()> {
    Err(Error::usage("trace tools are not built yet"))
}
