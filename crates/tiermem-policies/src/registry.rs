//! The policy registry: every policy by its config name, one line each in
//! [`crate::REGISTRY`].
//!
//! A policy is one file, `src/NAME.rs`, holding its config struct (which implements
//! [`PolicyParams`]), the documented text of its defaults, its [`Policy`], and
//! `pub static ENTRY: PolicyEntry`. Its line in the `registry!` list of `lib.rs` makes it a
//! `policy = "..."` of every config: the simulator's `[policy]`, `tiermem sim --set
//! policy.policy=...`, and the runtime's `--policy`. See docs/adding-a-policy.md.

use crate::{BuildContext, HeatModel, REGISTRY};
use serde::{de::DeserializeOwned, Serialize};
use std::any::Any;
use std::fmt::Debug;
use tiermem_core::config::{decode_table, Validate};
use tiermem_core::{Policy, Result};

/// A policy's config section: the struct a policy file decodes `[policy]` into.
///
/// `Deserialize` with `#[serde(deny_unknown_fields)]` and every field defaulted to the
/// system's published default; `Default` equal to those defaults; [`Validate`] naming the
/// field path of a bad value.
pub trait PolicyParams:
    Default
    + Clone
    + Debug
    + PartialEq
    + Serialize
    + DeserializeOwned
    + Validate
    + Send
    + Sync
    + 'static
{
    /// The policy this config describes.
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy>;

    /// Its tracker state and page finder, for a layer (Colloid) to reuse; `None` for a
    /// system that has none.
    fn heat_model(&self, _ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        None
    }
}

/// One policy of the registry: its name, what it is, its documented defaults, and its
/// config section's decoder.
pub struct PolicyEntry {
    /// The config name (`policy = "NAME"`); the file is `src/NAME.rs` where the name is not
    /// a Rust keyword (`static` lives in `static_placement.rs`).
    pub name: &'static str,
    /// One line: the system, its source, its tracker.
    pub summary: &'static str,
    /// The `[policy]` section with every field at its default value, each with a comment
    /// saying where the value comes from. A commented-out line (`# field = ...`) is an
    /// optional field whose default is computed. Tests check that it decodes to the
    /// defaults.
    pub defaults_toml: &'static str,
    decode: fn(toml::Table) -> std::result::Result<Box<dyn Params>, String>,
    default: fn() -> Box<dyn Params>,
}

impl PolicyEntry {
    /// The entry of a policy whose config section is `T`.
    pub const fn new<T: PolicyParams>(
        name: &'static str,
        summary: &'static str,
        defaults_toml: &'static str,
    ) -> PolicyEntry {
        PolicyEntry {
            name,
            summary,
            defaults_toml,
            decode: decode_params::<T>,
            default: default_params::<T>,
        }
    }

    /// The config section's fields (without `policy`) decoded; unknown fields are errors,
    /// and an error names its field relative to the section (`` `quantum_ms`: ... ``).
    pub(crate) fn decode(
        &self,
        fields: toml::Table,
    ) -> std::result::Result<Box<dyn Params>, String> {
        (self.decode)(fields)
    }

    pub(crate) fn default_params(&self) -> Box<dyn Params> {
        (self.default)()
    }
}

fn decode_params<T: PolicyParams>(
    fields: toml::Table,
) -> std::result::Result<Box<dyn Params>, String> {
    Ok(Box::new(decode_table::<T>(fields)?))
}

fn default_params<T: PolicyParams>() -> Box<dyn Params> {
    Box::new(T::default())
}

impl PolicyEntry {
    /// The system's name for plots and tables: its summary up to the first " (" or ":"
    /// ("HeMem (SOSP'21): ..." -> "HeMem").
    pub fn label(&self) -> &'static str {
        let end = self.summary.find([':', '(']).unwrap_or(self.summary.len());
        self.summary[..end].trim_end()
    }
}

/// The label of a system as a run names it: a registry policy ("hemem" -> "HeMem"), a
/// policy with a layer ("hemem+colloid" -> "HeMem+Colloid"), or the name itself.
pub fn system_label(system: &str) -> String {
    let (base, layer) = system.split_once('+').unwrap_or((system, ""));
    let base = lookup(base).map_or(base, |e| e.label());
    match layer {
        "" => base.to_string(),
        "colloid" => format!("{base}+Colloid"),
        other => format!("{base}+{other}"),
    }
}

/// The entry named `name`.
pub fn lookup(name: &str) -> Option<&'static PolicyEntry> {
    REGISTRY.iter().copied().find(|e| e.name == name)
}

/// Every config name, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// Every config name as `` `a`, `b` `` for messages.
pub(crate) fn names_quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A decoded config of any policy: the object-safe face of [`PolicyParams`].
pub(crate) trait Params: erased_serde::Serialize + Debug + Send + Sync {
    fn validate(&self, path: &str) -> Result<()>;
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy>;
    fn heat_model(&self, ctx: BuildContext) -> Option<Box<dyn HeatModel>>;
    fn clone_box(&self) -> Box<dyn Params>;
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Params) -> bool;
}

erased_serde::serialize_trait_object!(Params);

impl<T: PolicyParams> Params for T {
    fn validate(&self, path: &str) -> Result<()> {
        Validate::validate(self, path)
    }
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        PolicyParams::build(self, ctx)
    }
    fn heat_model(&self, ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        PolicyParams::heat_model(self, ctx)
    }
    fn clone_box(&self) -> Box<dyn Params> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Params) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let all = names();
        for (i, n) in all.iter().enumerate() {
            assert!(!all[..i].contains(n), "`{n}` registered twice");
            assert_eq!(lookup(n).map(|e| e.name), Some(*n));
            assert!(!lookup(n).unwrap().summary.is_empty(), "{n}");
        }
        assert!(lookup("autonuma").is_none());
    }

    #[test]
    fn labels_come_from_the_summaries() {
        assert_eq!(system_label("hemem"), "HeMem");
        assert_eq!(system_label("memtis+colloid"), "MEMTIS+Colloid");
        assert_eq!(system_label("tpp"), "TPP");
        assert_eq!(system_label("best-case"), "best-case");
        for n in names() {
            let l = lookup(n).unwrap().label();
            assert!(!l.is_empty() && l.len() <= 24, "`{n}`: label `{l}`");
        }
    }
}
