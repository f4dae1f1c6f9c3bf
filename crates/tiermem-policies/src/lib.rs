//! Placement policies: one file per policy, named like its config name.
//!
//! * [`hemem`] (`policy = "hemem"`), [`tpp`] (`"tpp"`), [`memtis`] (`"memtis"`),
//!   [`static_placement`] (`"static"`): the baseline tiering systems as pure policies.
//! * [`heat::HeatModel`]: a base system's tracker state and page finder, which layers (Colloid)
//!   reuse instead of copying.
//! * [`colloid`]: the Colloid algorithm (latency meter, Algorithms 1 and 2).
//! * [`build`] / [`build_layered`]: a policy from its config.

pub mod colloid;
pub mod config;
pub mod heat;
pub mod hemem;
pub mod memtis;
pub mod static_placement;
pub mod tpp;

pub use config::PolicyConfig;
pub use heat::HeatModel;

use colloid::ColloidParams;
use tiermem_core::{Error, Policy, Result};

/// What a backend knows before the run starts that a policy may need.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildContext {
    /// The backend's page (migration unit) size. TPP sizes its scan (256 MB per period) in
    /// pages; without it TPP assumes 2 MiB pages (THP).
    pub page_bytes: Option<u64>,
}

/// Build the policy a config names.
pub fn build(cfg: &PolicyConfig) -> Result<Box<dyn Policy>> {
    build_with(cfg, None, BuildContext::default())
}

/// Build the policy a config names, with Colloid layered over it when `colloid` is given.
pub fn build_layered(cfg: &PolicyConfig, colloid: Option<&ColloidParams>) -> Result<Box<dyn Policy>> {
    build_with(cfg, colloid, BuildContext::default())
}

/// Build a base system's heat model (tracker state + page finder) by config name.
pub fn build_heat_model(cfg: &PolicyConfig, ctx: BuildContext) -> Result<Box<dyn HeatModel>> {
    Ok(match cfg {
        PolicyConfig::Hemem(c) => Box::new(hemem::Hemem::new(c.clone())),
        PolicyConfig::Memtis(c) => Box::new(memtis::Memtis::new(c.clone())),
        PolicyConfig::Tpp(c) => Box::new(tpp::Tpp::new(tpp_cfg(c, ctx))),
        PolicyConfig::Static(_) => {
            return Err(Error::config("field `policy.policy`: \"static\" has no heat model (it never migrates)"))
        }
    })
}

fn tpp_cfg(c: &tpp::TppConfig, ctx: BuildContext) -> tpp::TppConfig {
    let mut c = c.clone();
    if c.scan_page_bytes.is_none() {
        c.scan_page_bytes = ctx.page_bytes;
    }
    c
}

/// The general form of [`build_layered`].
pub fn build_with(cfg: &PolicyConfig, colloid: Option<&ColloidParams>, ctx: BuildContext) -> Result<Box<dyn Policy>> {
    use tiermem_core::config::Validate;
    cfg.validate("policy")?;
    if let Some(p) = colloid {
        p.validate("colloid")?;
        return build_colloid(cfg, p, ctx);
    }
    Ok(match cfg {
        PolicyConfig::Hemem(c) => Box::new(hemem::Hemem::new(c.clone())),
        PolicyConfig::Tpp(c) => Box::new(tpp::Tpp::new(tpp_cfg(c, ctx))),
        PolicyConfig::Memtis(c) => Box::new(memtis::Memtis::new(c.clone())),
        PolicyConfig::Static(c) => Box::new(static_placement::StaticPlacement::new(c.clone())),
    })
}

fn build_colloid(cfg: &PolicyConfig, _p: &ColloidParams, _ctx: BuildContext) -> Result<Box<dyn Policy>> {
    Err(Error::config(format!(
        "field `colloid`: the Colloid layer over \"{}\" is not wired in yet",
        cfg.name()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_system() {
        for name in PolicyConfig::NAMES {
            let cfg = PolicyConfig::default_for(name).unwrap();
            let p = build(&cfg).unwrap();
            assert_eq!(p.name(), *name);
        }
        let tpp = PolicyConfig::default_for("tpp").unwrap();
        let p = build_with(&tpp, None, BuildContext { page_bytes: Some(4096) }).unwrap();
        assert!(matches!(p.tracker(), tiermem_core::TrackerSpec::HintFault { scan_pages: 65536, .. }));
    }

    #[test]
    fn build_validates() {
        let cfg = PolicyConfig::Hemem(hemem::HememConfig { quantum_ms: -1.0, ..Default::default() });
        let e = build(&cfg).err().unwrap().to_string();
        assert!(e.contains("policy.quantum_ms"), "{e}");
    }
}
