//! `tiermem sim` and `tiermem reproduce`.

use clap::Args;
use std::path::PathBuf;
use tiermem_core::{Error, Result};

#[derive(Args)]
pub struct SimArgs {
    pub config: PathBuf,
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct ReproduceArgs {
    pub experiment: String,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub quick: bool,
}

pub fn sim(_a: SimArgs) -> Result<()> {
    Err(Error::usage("not built yet"))
}
pub fn reproduce(_a: ReproduceArgs) -> Result<()> {
    Err(Error::usage("not built yet"))
}
