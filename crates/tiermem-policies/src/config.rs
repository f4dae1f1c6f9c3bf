//! The policy section of a config: `[policy]` with `policy = "hemem" | "tpp" | "memtis" |
//! "static"` and that system's tunables, every one defaulting to the system's published
//! default. Unknown fields are errors. Colloid is a separate, optional section (`[colloid]`,
//! [`crate::colloid::ColloidParams`]) layered over the base system by
//! [`crate::build_layered`].
//!
//! ```toml
//! [policy]
//! policy = "hemem"
//! hot_read_threshold = 4
//! ```

use crate::hemem::HememConfig;
use crate::memtis::MemtisConfig;
use crate::static_placement::StaticConfig;
use crate::tpp::TppConfig;
use serde::{Deserialize, Serialize};
use tiermem_core::config::Validate;
use tiermem_core::Result;

/// Every field of every system with its default value, as TOML (commented lines are
/// optional fields whose default is computed). Tests check these parse to the defaults.
pub const DEFAULTS_TOML: [(&str, &str); 4] = [
    (
        "hemem",
        r#"[policy]
policy = "hemem"
sample_period = 19997                 # PEBS period (hemem src/pebs.h SAMPLE_PERIOD)
hot_read_threshold = 4                # HOT_READ_THRESHOLD
hot_write_threshold = 4               # HOT_WRITE_THRESHOLD
cooling_threshold = 10                # PEBS_COOLING_THRESHOLD: halve all counts past this
quantum_ms = 10.0                     # PEBS_KSWAPD_INTERVAL
migration_limit_gbps = 1073.741824   # PEBS_KSWAPD_MIGRATE_RATE: 10 GiB per 10 ms pass = 1024000 MiB/s x 1048576 B/MiB
"#,
    ),
    (
        "tpp",
        r#"[policy]
policy = "tpp"
quantum_ms = 10.0                     # promotion is synchronous: short quantum
scan_size_mb = 256                    # numa_balancing_scan_size_mb
scan_period_min_ms = 1000.0           # numa_balancing_scan_period_min_ms (threshold period)
# scan_interval_ms = 100.0            # default: task_scan_min() = 1000 * scan_size_mb / 2560
hot_threshold_ms = 1000.0             # numa_balancing_hot_threshold_ms
promote_rate_limit_gbps = 68.719476736 # numa_balancing_promote_rate_limit_MBps: 65536 MiB/s x 1048576 B/MiB
adjust_threshold = true               # numa_promotion_adjust_threshold
watermark_scale_factor = 10           # vm.watermark_scale_factor
# min_free_kbytes = 23170             # default: clamp(sqrt(16 * capacity_kB), 128, 262144)
lru = "fault-rate"                    # kswapd victim order: fault-rate | access-bit | recency
lru_scan_ms = 1000.0                  # access-bit scan period (lru = "access-bit")
# scan_page_bytes = 2097152           # default: the backend's page size, else 2 MiB
"#,
    ),
    (
        "memtis",
        r#"[policy]
policy = "memtis"
sample_period = 199                   # htmm_sample_period
quantum_ms = 500.0                    # htmm_{promotion,demotion}_period_in_ms
cooling_period_samples = 2000000      # htmm_cooling_period
adaptation_period_samples = 100000    # htmm_adaptation_period
thres_hot = 1                         # htmm_thres_hot: lowest hot bin
warm = true                           # !htmm_nowarm
promotion_watermark = 0.03            # get_memcg_promotion_watermark: 3 % of the tier
demotion_watermark = 0.02             # get_memcg_demotion_watermark: 2 %
migration_limit_gbps = 2.147483648   # MAX_MIGRATION_RATE_IN_MBPS: 2048 MiB/s x 1048576 B/MiB
"#,
    ),
    (
        "static",
        r#"[policy]
policy = "static"
quantum_ms = 100.0                    # only the recording cadence: nothing ever moves
"#,
    ),
];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum PolicyConfig {
    Hemem(HememConfig),
    Tpp(TppConfig),
    Memtis(MemtisConfig),
    Static(StaticConfig),
}

impl PolicyConfig {
    /// The config name (`policy = "..."`).
    pub fn name(&self) -> &'static str {
        match self {
            PolicyConfig::Hemem(_) => "hemem",
            PolicyConfig::Tpp(_) => "tpp",
            PolicyConfig::Memtis(_) => "memtis",
            PolicyConfig::Static(_) => "static",
        }
    }

    /// The system with all defaults, by config name.
    pub fn default_for(name: &str) -> Option<PolicyConfig> {
        Some(match name {
            "hemem" => PolicyConfig::Hemem(HememConfig::default()),
            "tpp" => PolicyConfig::Tpp(TppConfig::default()),
            "memtis" => PolicyConfig::Memtis(MemtisConfig::default()),
            "static" => PolicyConfig::Static(StaticConfig::default()),
            _ => return None,
        })
    }

    /// Every config name.
    pub const NAMES: &'static [&'static str] = &["hemem", "tpp", "memtis", "static"];
}

impl Validate for PolicyConfig {
    fn validate(&self, path: &str) -> Result<()> {
        match self {
            PolicyConfig::Hemem(c) => c.validate(path),
            PolicyConfig::Tpp(c) => c.validate(path),
            PolicyConfig::Memtis(c) => c.validate(path),
            PolicyConfig::Static(c) => c.validate(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn bare_names_give_the_systems_defaults() {
        for name in PolicyConfig::NAMES {
            let cfg = parse(&format!("[policy]\npolicy = \"{name}\"\n")).unwrap();
            assert_eq!(Some(cfg.clone()), PolicyConfig::default_for(name));
            assert_eq!(cfg.name(), *name);
        }
    }

    #[test]
    fn documented_defaults_are_the_defaults() {
        for (name, text) in DEFAULTS_TOML {
            let cfg = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(Some(cfg), PolicyConfig::default_for(name), "{name}");
        }
        assert_eq!(DEFAULTS_TOML.map(|(n, _)| n), PolicyConfig::NAMES);
    }

    #[test]
    fn fields_override_defaults() {
        let cfg =
            parse("[policy]\npolicy = \"hemem\"\nhot_read_threshold = 6\ncooling_threshold = 20\n")
                .unwrap();
        match cfg {
            PolicyConfig::Hemem(h) => {
                assert_eq!(h.hot_read_threshold, 6);
                assert_eq!(h.cooling_threshold, 20);
                assert_eq!(h.sample_period, 19997);
            }
            other => panic!("{other:?}"),
        }
        let cfg =
            parse("[policy]\npolicy = \"tpp\"\nhot_threshold_ms = 500\nmin_free_kbytes = 65536\n")
                .unwrap();
        assert!(matches!(
            cfg,
            PolicyConfig::Tpp(TppConfig {
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
        assert!(e.contains("hot_read_treshold"), "{e}");
        assert!(e.contains("policy"), "{e}");
        // A field of another system is unknown here.
        let e = parse("[policy]\npolicy = \"memtis\"\nhot_read_threshold = 6\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hot_read_threshold"), "{e}");
        let e = parse("[policy]\npolicy = \"autonuma\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("autonuma"), "{e}");
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
}
