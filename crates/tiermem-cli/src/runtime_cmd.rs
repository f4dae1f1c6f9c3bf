//! `tiermem run | stat | budget`: the Linux runtime's front end.

use clap::Args;
use tiermem_core::{Error, Result};

#[derive(Args)]
pub struct RunArgs {
    /// Program and its arguments.
    #[arg(trailing_var_arg = true, required = true)]
    pub program: Vec<String>,
}

#[derive(Args)]
pub struct StatArgs {
    pub pid: u32,
}

#[derive(Args)]
pub struct BudgetArgs {
    pub pid: u32,
    pub size: String,
}

pub fn run(_a: RunArgs) -> Result<i32> {
    Err(Error::new(tiermem_core::ErrorKind::Unsupported, "the Linux runtime is not built yet"))
}
pub fn stat(_a: StatArgs) -> Result<()> {
    Err(Error::new(tiermem_core::ErrorKind::Unsupported, "the Linux runtime is not built yet"))
}
pub fn budget(_a: BudgetArgs) -> Result<()> {
    Err(Error::new(tiermem_core::ErrorKind::Unsupported, "the Linux runtime is not built yet"))
}
