//! Placement policies: one file per policy, named like its config name.
//!
//! * [`hemem`] (`policy = "hemem"`), [`tpp`] (`"tpp"`), [`memtis`] (`"memtis"`),
//!   [`static_placement`] (`"static"`): the baseline tiering systems as pure policies.
//! * [`heat::HeatModel`]: a base system's tracker state and page finder, which layers (Colloid)
//!   reuse instead of copying.
//! * [`budget`]: the DRAM budget guard the Linux runtime puts after any policy.
//! * [`colloid`]: the Colloid algorithm (latency meter, Algorithms 1 and 2).
//! * [`build`] / [`build_layered`]: a policy from its config.

pub mod budget;
pub mod colloid;
pub mod colloid_layer;
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
pub fn build_layered(
    cfg: &PolicyConfig,
    colloid: Option<&ColloidParams>,
) -> Result<Box<dyn Policy>> {
    build_with(cfg, colloid, BuildContext::default())
}

/// Build a base system's heat model (tracker state + page finder) by config name.
pub fn build_heat_model(cfg: &PolicyConfig, ctx: BuildContext) -> Result<Box<dyn HeatModel>> {
    Ok(match cfg {
        PolicyConfig::Hemem(c) => Box::new(hemem::Hemem::new(c.clone())),
        PolicyConfig::Memtis(c) => Box::new(memtis::Memtis::new(c.clone())),
        PolicyConfig::Tpp(c) => Box::new(tpp::Tpp::new(tpp_cfg(c, ctx))),
        PolicyConfig::Static(_) => {
            return Err(Error::config(
                "field `policy.policy`: \"static\" has no heat model (it never migrates)",
            ))
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
pub fn build_with(
    cfg: &PolicyConfig,
    colloid: Option<&ColloidParams>,
    ctx: BuildContext,
) -> Result<Box<dyn Policy>> {
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

/// Colloid over a base system's heat model (Colloid §4). `static` has none to layer over.
fn build_colloid(
    cfg: &PolicyConfig,
    p: &ColloidParams,
    ctx: BuildContext,
) -> Result<Box<dyn Policy>> {
    if let PolicyConfig::Static(_) = cfg {
        return Err(Error::config("field `colloid`: Colloid needs a base system with a tracker (hemem, tpp or memtis), not \"static\""));
    }
    let base = build_heat_model(cfg, ctx)?;
    Ok(Box::new(colloid_layer::Colloid::new(base, p.clone())))
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
        let p = build_with(
            &tpp,
            None,
            BuildContext {
                page_bytes: Some(4096),
            },
        )
        .unwrap();
        assert!(matches!(
            p.tracker(),
            tiermem_core::TrackerSpec::HintFault {
                scan_pages: 65536,
                ..
            }
        ));
    }

    #[test]
    fn builds_colloid_layers() {
        let params = ColloidParams::default();
        for name in ["hemem", "tpp", "memtis"] {
            let cfg = PolicyConfig::default_for(name).unwrap();
            let p = build_layered(&cfg, Some(&params)).unwrap();
            assert_eq!(p.name(), format!("{name}+colloid"));
        }
        let p = build_layered(&PolicyConfig::default_for("tpp").unwrap(), Some(&params)).unwrap();
        match p.tracker() {
            tiermem_core::TrackerSpec::HintFault { tiers, .. } => assert!(
                tiers.contains(&tiermem_core::TierId(0)),
                "TPP+Colloid scans the default tier too"
            ),
            other => panic!("{other:?}"),
        }
        assert!(
            build_layered(&PolicyConfig::default_for("static").unwrap(), Some(&params)).is_err()
        );
    }

    #[test]
    fn build_validates() {
        let cfg = PolicyConfig::Hemem(hemem::HememConfig {
            quantum_ms: -1.0,
            ..Default::default()
        });
        let e = build(&cfg).err().unwrap().to_string();
        assert!(e.contains("policy.quantum_ms"), "{e}");
    }
}
