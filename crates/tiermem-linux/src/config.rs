//! Runtime config: `[runtime]` in a tiermem TOML file, or `--dram-budget` on the command
//! line. Passed to the preload shim as JSON in `TIERMEM_CONFIG_JSON`.

use crate::codec::Codec;
use crate::pool::{AllocatorKind, Backing};
use serde::{Deserialize, Serialize};
use tiermem_core::config::{invalid, Validate};
use tiermem_core::{parse_size, Result};

/// A DRAM budget: absolute bytes, or a fraction of the managed footprint (resident +
/// compressed pages).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Budget {
    Unlimited,
    Bytes(u64),
    Fraction(f64),
}

impl Budget {
    pub fn parse(text: &str) -> std::result::Result<Budget, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("none") {
            return Ok(Budget::Unlimited);
        }
        const FIX: &str = "give a positive size (512M, 2G), a percentage of the footprint (50%; above 0, at most 100) or \"unlimited\"";
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("`{text}` is not a percentage; {FIX}"))?;
            if !(v > 0.0 && v <= 100.0) {
                return Err(format!(
                    "`{text}`: a percentage must be above 0 and at most 100; {FIX}"
                ));
            }
            return Ok(Budget::Fraction(v / 100.0));
        }
        let b = parse_size(t).map_err(|e| format!("{e}, a percentage (50%) or \"unlimited\""))?;
        if b == 0 {
            return Err(format!(
                "`{text}`: a DRAM budget of 0 bytes leaves the program no memory; {FIX}"
            ));
        }
        if let Some(mem) = machine_memory_bytes() {
            if b > mem {
                return Err(format!(
                    "`{text}` ({}) is more than this machine's memory ({}), so it would never limit anything; give at most {} or \"unlimited\"",
                    tiermem_core::format_bytes(b),
                    tiermem_core::format_bytes(mem),
                    tiermem_core::format_bytes(mem)
                ));
            }
        }
        Ok(Budget::Bytes(b))
    }
    /// The budget in bytes for a footprint of `footprint_bytes`.
    pub fn bytes(&self, footprint_bytes: u64) -> u64 {
        match *self {
            Budget::Unlimited => u64::MAX,
            Budget::Bytes(b) => b,
            Budget::Fraction(f) => (footprint_bytes as f64 * f) as u64,
        }
    }
    pub fn describe(&self) -> String {
        match *self {
            Budget::Unlimited => "unlimited".into(),
            Budget::Bytes(b) => tiermem_core::format_bytes(b),
            Budget::Fraction(f) => format!("{:.1}% of footprint", f * 100.0),
        }
    }
}

/// MemTotal of /proc/meminfo, read once (None where it cannot be read).
fn machine_memory_bytes() -> Option<u64> {
    static MEM: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *MEM.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// lz4, zstd[:LEVEL], deflate[:LEVEL], lzo
    #[serde(default = "default_codec")]
    pub codec: String,
    /// zsmalloc, zbud, z3fold
    #[serde(default = "default_allocator")]
    pub allocator: String,
    /// A page whose compressed size is not below this many bytes stays resident.
    #[serde(default = "default_max_compressed")]
    pub max_compressed_bytes: u64,
    /// Where the pool lives: "memory" (the process's own memory); NUMA nodes later.
    #[serde(default = "default_backing")]
    pub backing: String,
}
fn default_backing() -> String {
    "memory".into()
}
fn default_codec() -> String {
    "lz4".into()
}
fn default_allocator() -> String {
    "zsmalloc".into()
}
fn default_max_compressed() -> u64 {
    3072
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplerConfig {
    /// How often the hint-fault scanner unmaps a sample of resident pages.
    #[serde(default = "default_scan_period_ms")]
    pub scan_period_ms: u64,
    /// Pages unmapped per scan.
    #[serde(default = "default_scan_pages")]
    pub scan_pages: u64,
}
fn default_scan_period_ms() -> u64 {
    100
}
fn default_scan_pages() -> u64 {
    256
}
impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            scan_period_ms: default_scan_period_ms(),
            scan_pages: default_scan_pages(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// "unlimited", a size ("512M") or a percentage of the managed footprint ("50%").
    #[serde(default = "default_budget")]
    pub dram_budget: String,
    /// Anonymous mmaps and malloc-family allocations at least this large are managed.
    #[serde(default = "default_min_region")]
    pub min_region: String,
    /// Policy quantum.
    #[serde(default = "default_quantum_ms")]
    pub quantum_ms: u64,
    /// Compressed tiers, in order (tier 1, 2, ...). Demotions go to the first.
    #[serde(default = "default_tiers")]
    pub tiers: Vec<TierConfig>,
    #[serde(default)]
    pub sampler: SamplerConfig,
    /// Virtual address space reserved for managed regions.
    #[serde(default = "default_arena")]
    pub arena: String,
    /// Where `stat`/`budget` find a running program: RUN_DIR/PID/ (private to the user;
    /// see control.rs and docs/runtime.md).
    #[serde(default = "default_run_dir")]
    pub run_dir: String,
    /// Mode of RUN_DIR/PID/{stats.json,metrics.prom}: "0600", or "0640"/"0644" for a
    /// Prometheus textfile collector running as another user (the directories then get
    /// the matching r-x bits).
    #[serde(default = "default_stats_mode")]
    pub stats_mode: String,
}
fn default_stats_mode() -> String {
    "0600".into()
}
fn default_budget() -> String {
    "unlimited".into()
}
fn default_min_region() -> String {
    "128K".into()
}
fn default_quantum_ms() -> u64 {
    20
}
fn default_tiers() -> Vec<TierConfig> {
    vec![TierConfig {
        codec: default_codec(),
        allocator: default_allocator(),
        max_compressed_bytes: default_max_compressed(),
        backing: default_backing(),
    }]
}
fn default_arena() -> String {
    "1T".into()
}
/// `$TIERMEM_RUN_DIR`, else the user's private directory (`control::private_run_dir`).
pub fn default_run_dir() -> String {
    std::env::var("TIERMEM_RUN_DIR")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(crate::control::private_run_dir)
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            dram_budget: default_budget(),
            min_region: default_min_region(),
            quantum_ms: default_quantum_ms(),
            tiers: default_tiers(),
            sampler: SamplerConfig::default(),
            arena: default_arena(),
            run_dir: default_run_dir(),
            stats_mode: default_stats_mode(),
        }
    }
}

/// The file form: `[runtime]` plus whatever else the file holds for other commands is
/// rejected, so a typo never passes silently.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeFile {
    #[serde(default)]
    pub runtime: RuntimeConfig,
}

impl Validate for RuntimeConfig {
    fn validate(&self, path: &str) -> Result<()> {
        let p = |f: &str| tiermem_core::config::join(path, f);
        Budget::parse(&self.dram_budget).map_err(|e| invalid(&p("dram_budget"), e))?;
        let min_region = parse_size(&self.min_region).map_err(|e| invalid(&p("min_region"), e))?;
        if !(4096..=1 << 30).contains(&min_region) {
            return Err(invalid(
                &p("min_region"),
                format!("{min_region} bytes; give a size from 4K (one page) to 1G, e.g. \"128K\""),
            ));
        }
        let arena = parse_size(&self.arena).map_err(|e| invalid(&p("arena"), e))?;
        if !(64 << 20..=16u64 << 40).contains(&arena) {
            return Err(invalid(
                &p("arena"),
                format!("{arena} bytes of address space; give 64M to 16T (it is only reserved, e.g. \"1T\")"),
            ));
        }
        if self.quantum_ms == 0 || self.quantum_ms > 10_000 {
            return Err(invalid(&p("quantum_ms"), "must be in [1, 10000]"));
        }
        if self.tiers.is_empty() || self.tiers.len() > 8 {
            return Err(invalid(&p("tiers"), "give 1 to 8 compressed tiers"));
        }
        for (i, t) in self.tiers.iter().enumerate() {
            let tp = format!("{}[{i}]", p("tiers"));
            Codec::parse(&t.codec).map_err(|e| invalid(&format!("{tp}.codec"), e))?;
            AllocatorKind::parse(&t.allocator)
                .map_err(|e| invalid(&format!("{tp}.allocator"), e))?;
            Backing::parse(&t.backing).map_err(|e| invalid(&format!("{tp}.backing"), e))?;
            if t.max_compressed_bytes == 0 || t.max_compressed_bytes > 4096 {
                return Err(invalid(
                    &format!("{tp}.max_compressed_bytes"),
                    "must be in [1, 4096]",
                ));
            }
        }
        crate::control::parse_stats_mode(&self.stats_mode)
            .map_err(|e| invalid(&p("stats_mode"), e))?;
        if self.sampler.scan_period_ms == 0 {
            return Err(invalid(&p("sampler.scan_period_ms"), "must be > 0"));
        }
        Ok(())
    }
}

impl RuntimeConfig {
    pub fn from_file(path: &std::path::Path) -> Result<RuntimeConfig> {
        let f: RuntimeFile = tiermem_core::config::from_toml_file(path)?;
        f.runtime.validate("runtime")?;
        Ok(f.runtime)
    }
    pub fn budget(&self) -> Budget {
        Budget::parse(&self.dram_budget).unwrap_or(Budget::Unlimited)
    }
    pub fn min_region_bytes(&self) -> u64 {
        parse_size(&self.min_region).unwrap_or(128 << 10)
    }
    pub fn arena_bytes(&self) -> u64 {
        parse_size(&self.arena).unwrap_or(1 << 40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn budgets_parse() {
        assert_eq!(Budget::parse("50%").unwrap(), Budget::Fraction(0.5));
        assert_eq!(Budget::parse("64M").unwrap(), Budget::Bytes(64 << 20));
        assert!(Budget::parse("150%").is_err());
        for bad in ["0", "0%", "0.0%", "-5%", "nan%", "99999999999T", "0G"] {
            let e = Budget::parse(bad).unwrap_err();
            assert!(e.contains("unlimited"), "{bad}: {e}");
        }
        assert_eq!(Budget::parse("unlimited").unwrap(), Budget::Unlimited);
        assert_eq!(Budget::Fraction(0.25).bytes(400), 100);
    }
    #[test]
    fn region_and_arena_sizes_are_bounded() {
        for (field, val) in [
            ("min_region", "0"),
            ("min_region", "2G"),
            ("arena", "0"),
            ("arena", "1M"),
        ] {
            let mut c = RuntimeConfig::default();
            match field {
                "min_region" => c.min_region = val.into(),
                _ => c.arena = val.into(),
            }
            let e = c.validate("runtime").unwrap_err().to_string();
            assert!(
                e.contains(&format!("runtime.{field}")),
                "{field}={val}: {e}"
            );
        }
        assert!(RuntimeConfig::default().validate("runtime").is_ok());
    }
    #[test]
    fn unknown_field_is_named() {
        let e = tiermem_core::config::from_toml_str::<RuntimeFile>(
            "[runtime]\n[[runtime.tiers]]\ncodex = \"lz4\"\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("runtime.tiers[0]"), "{e}");
        assert!(e.to_string().contains("codex"), "{e}");
    }
    #[test]
    fn bad_codec_is_named() {
        let f: RuntimeFile = tiermem_core::config::from_toml_str(
            "[runtime]\n[[runtime.tiers]]\ncodec = \"brotli\"\n",
            "c.toml",
        )
        .unwrap();
        let e = f.runtime.validate("runtime").unwrap_err();
        assert!(e.to_string().contains("runtime.tiers[0].codec"), "{e}");
    }
    #[test]
    fn numa_backing_is_refused_by_name() {
        let f: RuntimeFile = tiermem_core::config::from_toml_str(
            "[runtime]\n[[runtime.tiers]]\nbacking = \"numa:1\"\n",
            "c.toml",
        )
        .unwrap();
        let e = f.runtime.validate("runtime").unwrap_err().to_string();
        assert!(
            e.contains("runtime.tiers[0].backing") && e.contains("not implemented"),
            "{e}"
        );
        let f: RuntimeFile = tiermem_core::config::from_toml_str(
            "[runtime]\n[[runtime.tiers]]\nbacking = \"memory\"\n",
            "c.toml",
        )
        .unwrap();
        f.runtime.validate("runtime").unwrap();
    }
}
