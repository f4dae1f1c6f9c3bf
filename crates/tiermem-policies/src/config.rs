//! The policy section of a config: `[policy]` with `policy = "NAME"`, a name of the
//! registry ([`crate::REGISTRY`]: `hemem`, `tpp`, `memtis`, `static`, ...), and that
//! system's tunables, every one defaulting to the system's published default (each
//! policy's [`PolicyEntry::defaults_toml`] lists them). Unknown fields are errors naming the
//! field. Colloid is a separate, optional section (`[colloid]`,
//! [`crate::colloid::ColloidParams`]) layered over the base system by
//! [`crate::build_layered`].
//!
//! ```toml
//! [policy]
//! policy = "hemem"
//! hot_read_threshold = 4
//! ```

use crate::registry::{self, names_quoted, Params, PolicyEntry, PolicyParams};
use crate::{BuildContext, HeatModel};
use serde::{Deserialize, Serialize};
use tiermem_core::config::{invalid, Validate};
use tiermem_core::{Policy, Result};

/// One policy's config: which registered system, and its decoded tunables.
pub struct PolicyConfig {
    entry: &'static PolicyEntry,
    params: Box<dyn Params>,
}

impl PolicyConfig {
    /// The config name (`policy = "..."`).
    pub fn name(&self) -> &'static str {
        self.entry.name
    }

    /// The registry entry of this system.
    pub fn entry(&self) -> &'static PolicyEntry {
        self.entry
    }

    /// The system with all defaults, by config name.
    pub fn default_for(name: &str) -> Option<PolicyConfig> {
        let entry = registry::lookup(name)?;
        Some(PolicyConfig {
            entry,
            params: entry.default_params(),
        })
    }

    /// Every config name, in registry order.
    pub fn names() -> Vec<&'static str> {
        registry::names()
    }

    /// Decode a `[policy]` table: `policy = "NAME"` and that system's fields. Errors name
    /// the failing field relative to the table (`` `quantum_ms`: ... ``); an unknown or
    /// missing name lists the valid ones. Not validated: see [`Validate`].
    pub fn from_value(v: toml::Value) -> std::result::Result<PolicyConfig, String> {
        let names = names_quoted(&registry::names());
        let mut t = match v {
            toml::Value::Table(t) => t,
            other => {
                return Err(format!(
                    "expected a table with `policy = ...`, found a {}",
                    other.type_str()
                ))
            }
        };
        let name = match t.remove("policy") {
            Some(toml::Value::String(s)) => s,
            Some(other) => {
                return Err(format!(
                    "`policy`: expected a string, found a {}; expected one of {names}",
                    other.type_str()
                ))
            }
            None => return Err(format!("missing field `policy`; expected one of {names}")),
        };
        let entry = registry::lookup(&name).ok_or_else(|| {
            format!("`policy`: unknown variant `{name}`, expected one of {names}")
        })?;
        Ok(PolicyConfig {
            entry,
            params: entry.decode(t)?,
        })
    }

    /// The system named `name` (a command line's `--policy NAME`) with `fields` set over its
    /// defaults, decoded and validated: errors are config errors naming the field as
    /// `policy.FIELD`, as in a config file's `[policy]` section.
    pub fn from_name(name: &str, fields: toml::Table) -> Result<PolicyConfig> {
        let mut t = fields;
        t.insert("policy".into(), toml::Value::String(name.into()));
        let cfg = PolicyConfig::from_value(toml::Value::Table(t)).map_err(|msg| {
            match msg
                .strip_prefix('`')
                .and_then(|rest| rest.split_once("`: "))
            {
                Some((field, what)) => invalid(&format!("policy.{field}"), what),
                None => invalid("policy", msg),
            }
        })?;
        cfg.validate("policy")?;
        Ok(cfg)
    }

    /// The decoded tunables as the system's own config type (`None` if `T` is another
    /// system's).
    pub fn params<T: PolicyParams>(&self) -> Option<&T> {
        self.params.as_any().downcast_ref()
    }

    pub(crate) fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        self.params.build(ctx)
    }

    pub(crate) fn heat_model(&self, ctx: BuildContext) -> Option<Box<dyn HeatModel>> {
        self.params.heat_model(ctx)
    }
}

impl Validate for PolicyConfig {
    fn validate(&self, path: &str) -> Result<()> {
        self.params.validate(path)
    }
}

impl Clone for PolicyConfig {
    fn clone(&self) -> Self {
        PolicyConfig {
            entry: self.entry,
            params: self.params.clone_box(),
        }
    }
}

impl PartialEq for PolicyConfig {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.entry, other.entry) && self.params.same(other.params.as_ref())
    }
}

impl std::fmt::Debug for PolicyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyConfig")
            .field("policy", &self.entry.name)
            .field("params", &self.params)
            .finish()
    }
}

/// `policy = "NAME"` first, then the system's fields in their declared order.
impl Serialize for PolicyConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            policy: &'static str,
            #[serde(flatten)]
            params: &'a dyn Params,
        }
        Tagged {
            policy: self.entry.name,
            params: self.params.as_ref(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PolicyConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut v = serde_json::Value::deserialize(d)?;
        // An echo in JSON writes an unset optional field as null; in TOML it is absent.
        if let Some(fields) = v.as_object_mut() {
            fields.retain(|_, x| !x.is_null());
        }
        let v = toml::Value::try_from(v).map_err(D::Error::custom)?;
        PolicyConfig::from_value(v).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hemem::HememConfig;
    use crate::tpp::TppConfig;
    use crate::REGISTRY;
    use tiermem_core::config::from_toml_str;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        policy: PolicyConfig,
    }

    fn parse(text: &str) -> Result<PolicyConfig> {
        let d: Doc = from_toml_str(text, "t.toml")?;
        d.policy.validate("policy")?;
        Ok(d.policy)
    }

    /// A documented defaults text with its optional (commented) fields uncommented.
    fn uncommented(text: &str) -> String {
        text.lines()
            .map(|l| l.strip_prefix("# ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn bare_names_give_the_systems_defaults() {
        for name in PolicyConfig::names() {
            let cfg = parse(&format!("[policy]\npolicy = \"{name}\"\n")).unwrap();
            assert_eq!(Some(cfg.clone()), PolicyConfig::default_for(name));
            assert_eq!(cfg.name(), name);
        }
        assert!(PolicyConfig::default_for("autonuma").is_none());
    }

    #[test]
    fn documented_defaults_are_the_defaults() {
        for e in REGISTRY {
            let cfg = parse(e.defaults_toml).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(Some(cfg), PolicyConfig::default_for(e.name), "{}", e.name);
            // The optional fields are real fields too, and every field is documented.
            let all = uncommented(e.defaults_toml);
            parse(&all).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            let documented: toml::Table = toml::from_str(&all).unwrap();
            let defaults = toml::Table::try_from(PolicyConfig::default_for(e.name)).unwrap();
            for field in defaults.keys() {
                assert!(
                    documented["policy"].get(field).is_some(),
                    "{}: field `{field}` is missing from its defaults_toml",
                    e.name
                );
            }
        }
    }

    #[test]
    fn fields_override_defaults() {
        let cfg =
            parse("[policy]\npolicy = \"hemem\"\nhot_read_threshold = 6\ncooling_threshold = 20\n")
                .unwrap();
        let h: &HememConfig = cfg.params().unwrap();
        assert_eq!(h.hot_read_threshold, 6);
        assert_eq!(h.cooling_threshold, 20);
        assert_eq!(h.sample_period, 19997);
        assert!(cfg.params::<TppConfig>().is_none());
        let cfg =
            parse("[policy]\npolicy = \"tpp\"\nhot_threshold_ms = 500\nmin_free_kbytes = 65536\n")
                .unwrap();
        assert!(matches!(
            cfg.params(),
            Some(TppConfig {
                hot_threshold_ms: 500.0,
                min_free_kbytes: Some(65536),
                ..
            })
        ));
    }

    #[test]
    fn unknown_fields_and_policies_are_rejected() {
        let e = parse("[policy]\npolicy = \"hemem\"\nhot_read_treshold = 6\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `policy.hot_read_treshold`"), "{e}");
        // A field of another system is unknown here.
        let e = parse("[policy]\npolicy = \"memtis\"\nhot_read_threshold = 6\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `policy.hot_read_threshold`"), "{e}");
        let e = parse("[policy]\npolicy = \"hemem\"\nquantum_ms = \"fast\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `policy.quantum_ms`: invalid type"), "{e}");
        let e = parse("[policy]\nquantum_ms = 1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `policy.policy`: missing"), "{e}");
        for (text, what) in [
            ("policy = \"autonuma\"", "unknown variant `autonuma`"),
            ("policy = 3", "expected a string"),
        ] {
            let e = parse(&format!("[policy]\n{text}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(what), "{e}");
            for name in PolicyConfig::names() {
                assert!(e.contains(&format!("`{name}`")), "{e}");
            }
        }
    }

    #[test]
    fn validation_names_the_field() {
        let e = parse("[policy]\npolicy = \"hemem\"\ncooling_threshold = 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy.cooling_threshold"), "{e}");
        let e = parse("[policy]\npolicy = \"tpp\"\nquantum_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy.quantum_ms"), "{e}");
        let e = parse("[policy]\npolicy = \"memtis\"\nthres_hot = 16\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy.thres_hot"), "{e}");
    }

    #[test]
    fn serializes_name_first_and_round_trips() {
        for name in PolicyConfig::names() {
            let mut cfg = PolicyConfig::default_for(name).unwrap();
            if name == "tpp" {
                cfg =
                    PolicyConfig::from_name(name, toml::toml! { min_free_kbytes = 65536 }).unwrap();
            }
            let text = toml::to_string(&cfg).unwrap();
            assert!(
                text.starts_with(&format!("policy = \"{name}\"\n")),
                "{text}"
            );
            let back: PolicyConfig = toml::from_str(&text).unwrap();
            assert_eq!(back, cfg, "{text}");
            let json = serde_json::to_string(&cfg).unwrap();
            assert!(
                json.starts_with(&format!("{{\"policy\":\"{name}\",")),
                "{json}"
            );
            let back: PolicyConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(back, cfg, "{json}");
        }
        // The fields keep their declared order.
        let text = toml::to_string(&PolicyConfig::default_for("hemem").unwrap()).unwrap();
        let keys: Vec<&str> = text.lines().filter_map(|l| l.split(" = ").next()).collect();
        assert_eq!(
            keys,
            [
                "policy",
                "sample_period",
                "hot_read_threshold",
                "hot_write_threshold",
                "cooling_threshold",
                "quantum_ms",
                "migration_limit_gbps"
            ]
        );
    }

    #[test]
    fn by_name_with_fields_as_on_a_command_line() {
        let cfg = PolicyConfig::from_name("hemem", toml::toml! { hot_read_threshold = 6 }).unwrap();
        assert_eq!(cfg.params::<HememConfig>().unwrap().hot_read_threshold, 6);
        for (name, fields, what) in [
            (
                "hemem",
                toml::toml! { quantum_ms = -1.0 },
                "field `policy.quantum_ms`",
            ),
            (
                "hemem",
                toml::toml! { hot_read_treshold = 6 },
                "field `policy.hot_read_treshold`: unknown field",
            ),
            (
                "autonuma",
                toml::Table::new(),
                "unknown variant `autonuma`, expected one of `hemem`",
            ),
        ] {
            let e = PolicyConfig::from_name(name, fields)
                .unwrap_err()
                .to_string();
            assert!(e.contains(what), "{e}");
        }
    }
}
