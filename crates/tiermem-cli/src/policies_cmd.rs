//! `tiermem policies`: the registered policies, each with its summary and documented
//! defaults, all from the registry (`tiermem_policies::REGISTRY`).

use clap::Args;
use tiermem_core::{Error, Result};
use tiermem_policies::{registry, REGISTRY};

#[derive(Args)]
pub struct PoliciesArgs {
    /// Print this policy's `[policy]` section with every field at its default (ready to
    /// paste into a config) instead of the list.
    pub name: Option<String>,
}

pub fn policies(a: PoliciesArgs) -> Result<()> {
    let Some(name) = a.name else {
        let width = REGISTRY.iter().map(|e| e.name.len()).max().unwrap_or(0);
        for e in REGISTRY {
            println!("{:<width$}  {}", e.name, e.summary);
        }
        return Ok(());
    };
    let e = registry::lookup(&name).ok_or_else(|| {
        Error::usage(format!(
            "unknown policy `{name}`; registered: {}",
            registry::names().join(", ")
        ))
    })?;
    println!("# {}: {}", e.name, e.summary);
    print!("{}", e.defaults_toml);
    Ok(())
}
