//! Placement policies: one file per policy, named like its config name, and one line per
//! policy in the registry below.
//!
//! * [`hemem`] (`policy = "hemem"`), [`tpp`] (`"tpp"`), [`memtis`] (`"memtis"`),
//!   [`static_placement`] (`"static"`): the baseline tiering systems as pure policies.
//! * [`registry`]: what a policy file provides ([`registry::PolicyEntry`],
//!   [`registry::PolicyParams`]) and lookup by name; [`PolicyConfig`]: a `[policy]` section.
//! * [`heat::HeatModel`]: a base system's tracker state and page finder, which layers (Colloid)
//!   reuse instead of copying.
//! * [`budget`]: the DRAM budget guard the Linux runtime puts after any policy.
//! * [`slo`]: the SLO controller, which picks that budget from a stall target.
//! * [`colloid`]: the Colloid algorithm (latency meter, Algorithms 1 and 2).
//! * [`build`] / [`build_layered`]: a policy from its config.

pub mod budget;
pub mod cascade;
pub mod colloid;
pub mod colloid_layer;
pub mod config;
pub mod granularity;
pub mod heat;
pub mod memstrata;
pub mod mercury;
pub mod registry;
pub mod slo;

/// Declares each policy's module and lists its `ENTRY` in [`REGISTRY`]: one line per policy.
macro_rules! registry {
    ($($(#[$attr:meta])* $module:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*
        /// Every policy, in the order listings show them.
        pub static REGISTRY: &[&registry::PolicyEntry] = &[$($(#[$attr])* &$module::ENTRY,)*];
    };
}

registry! {
    hemem,
    tpp,
    memtis,
    static_placement,
    tierscape_waterfall,
    tierscape_analytical,
    ics18,
    #[cfg(feature = "toy-policy")]
    toy_demote,
}

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
    cfg.heat_model(ctx).ok_or_else(|| {
        Error::config(format!(
            "field `policy.policy`: \"{}\" has no heat model (tracker state and page finder); those that have one: {}",
            cfg.name(),
            layerable()
        ))
    })
}

/// The systems with a heat model, as "hemem, tpp or memtis".
fn layerable() -> String {
    let ctx = BuildContext::default();
    let names: Vec<&str> = REGISTRY
        .iter()
        .filter_map(|e| {
            let cfg = PolicyConfig::default_for(e.name)?;
            cfg.heat_model(ctx).map(|_| e.name)
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
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
    Ok(cfg.build(ctx))
}

/// Colloid over a base system's heat model (Colloid §4). A system without one (`static`)
/// has nothing to layer over.
fn build_colloid(
    cfg: &PolicyConfig,
    p: &ColloidParams,
    ctx: BuildContext,
) -> Result<Box<dyn Policy>> {
    let Some(base) = cfg.heat_model(ctx) else {
        return Err(Error::config(format!(
            "field `colloid`: Colloid needs a base system with a tracker ({}), not \"{}\"",
            layerable(),
            cfg.name()
        )));
    };
    Ok(Box::new(colloid_layer::Colloid::new(base, p.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_system() {
        for name in PolicyConfig::names() {
            let cfg = PolicyConfig::default_for(name).unwrap();
            let p = build(&cfg).unwrap();
            assert_eq!(p.name(), name);
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
        let stat = PolicyConfig::default_for("static").unwrap();
        let e = build_layered(&stat, Some(&params))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("field `colloid`: Colloid needs a base system with a tracker (hemem, tpp or memtis), not \"static\""), "{e}");
        let e = build_heat_model(&stat, BuildContext::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("field `policy.policy`: \"static\" has no heat model"),
            "{e}"
        );
    }

    #[test]
    fn build_validates() {
        // Decoded but not validated, as a deserialized config is.
        let cfg =
            PolicyConfig::from_value(toml::toml! { policy = "hemem" quantum_ms = -1.0 }.into())
                .unwrap();
        let e = build(&cfg).err().unwrap().to_string();
        assert!(e.contains("policy.quantum_ms"), "{e}");
    }
}
