//! Runtime config: `[runtime]` in a tiermem TOML file, or `--dram-budget` on the command
//! line. Passed to the preload shim as JSON in `TIERMEM_CONFIG_JSON`.

use crate::codec::Codec;
use crate::pool::{AllocatorKind, Backing};
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, Validate};
use tiermem_core::tier::{validate_tiers, TierBackend, TierConfig, TierKind};
use tiermem_core::{parse_size, Result, Size};
use tiermem_policies::colloid::ColloidParams;
use tiermem_policies::PolicyConfig;
use tiermem_policies::slo::SloConfig;

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

impl std::str::FromStr for Budget {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Budget, String> {
        Budget::parse(text)
    }
}

/// `dram_budget` / `--dram-budget`: the budget parsed once, where the config is read (the
/// command line, the TOML file, the preload's `TIERMEM_CONFIG_JSON`), and the text it was
/// parsed from, which is what is written back out (TOML, JSON), so the preload reads exactly
/// what the user gave. A value that does not parse never becomes one: deserialising it fails
/// with `Budget::parse`'s message at the field's path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DramBudget {
    text: String,
    budget: Budget,
}

impl DramBudget {
    /// The parsed budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }
    /// As the user wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }
    /// `bytes` bytes (written as the plain number, which `Budget::parse` reads back).
    pub fn from_bytes(bytes: u64) -> std::result::Result<DramBudget, String> {
        bytes.to_string().parse()
    }
}

impl std::str::FromStr for DramBudget {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<DramBudget, String> {
        Ok(DramBudget {
            budget: Budget::parse(text)?,
            text: text.to_string(),
        })
    }
}

impl TryFrom<String> for DramBudget {
    type Error = String;
    fn try_from(text: String) -> std::result::Result<DramBudget, String> {
        Ok(DramBudget {
            budget: Budget::parse(&text)?,
            text,
        })
    }
}

impl From<DramBudget> for String {
    fn from(b: DramBudget) -> String {
        b.text
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

/// A compressed tier as the runtime realises it: a `kind = "compressed"` entry of
/// `[[runtime.tiers]]` with its defaults filled in, `backing` resolved ("dram" when it
/// names the DRAM tier) and every name parsed (`RuntimeConfig::compressed_tiers`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompressedTier {
    pub name: String,
    pub codec: Codec,
    pub allocator: AllocatorKind,
    pub backing: Backing,
    /// A page whose compressed size is not below this many bytes stays resident.
    pub max_compressed_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplerConfig {
    /// How often the hint-fault scanner unmaps a sample of resident pages.
    #[serde(default = "default_scan_period_ms")]
    pub scan_period_ms: f64,
    /// Pages unmapped per scan.
    #[serde(default = "default_scan_pages")]
    pub scan_pages: u64,
}
fn default_scan_period_ms() -> f64 {
    100.0
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
    /// "unlimited", a size ("512MiB") or a percentage of the managed footprint ("50%").
    /// Default: the DRAM tier's `capacity` when it has one, else unlimited. Giving both is
    /// an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_budget: Option<DramBudget>,
    /// The SLO controller (`tiermem_policies::slo`): `"stall=1%"` (a target share of wall
    /// time stalled on tier faults; more keys in `SloConfig::parse`) or `"off"`. Default:
    /// on at `stall=1%` when neither a budget nor a placement policy is given; with a
    /// budget it is that budget's ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<String>,
    /// Anonymous mmaps and malloc-family allocations at least this large are managed.
    #[serde(default = "default_min_region")]
    pub min_region: Size,
    /// Quantum of the DRAM budget guard alone (no `policy`), ms; a named policy runs at its
    /// own `quantum_ms` (`backend::build_policy`), the quantum its snapshots report.
    #[serde(default = "default_quantum_ms")]
    pub quantum_ms: f64,
    /// The tiers, in order: tier 0 is `kind = "dram"` (the process's own memory; its
    /// `capacity`, if given, is the DRAM budget), then `kind = "compressed"` tiers
    /// (unlimited; demotions go to the first). The same schema as the simulator's
    /// `[[machine.tiers]]` (`tiermem_core::tier::TierConfig`).
    #[serde(default = "default_tiers")]
    pub tiers: Vec<TierConfig>,
    #[serde(default)]
    pub sampler: SamplerConfig,
    /// Pages a tier fault brings back with the faulting one (aligned): "4KiB" (one page),
    /// "64KiB", "2MiB", or "dynamic" (chosen from the program's spatial locality;
    /// runtime/fault_around.rs, docs/runtime.md "Fault-around").
    #[serde(default = "default_fault_around")]
    pub fault_around: String,
    /// Virtual address space reserved for managed regions.
    #[serde(default = "default_arena")]
    pub arena: Size,
    /// Where `stat`/`budget` find a running program: RUN_DIR/PID/ (private to the user;
    /// see control.rs and docs/runtime.md).
    #[serde(default = "default_run_dir")]
    pub run_dir: String,
    /// Mode of RUN_DIR/PID/{stats.json,metrics.prom}: "0600", or "0640"/"0644" for a
    /// Prometheus textfile collector running as another user (the directories then get
    /// the matching r-x bits).
    #[serde(default = "default_stats_mode")]
    pub stats_mode: String,
    /// The placement policy (the file's `[policy]`, the same table as the simulator's;
    /// `tiermem run --policy NAME`); `None` = the DRAM budget guard alone ("budget").
    /// Every policy runs under the guard (`tiermem_policies::budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyConfig>,
    /// Colloid over the policy (the file's `[colloid]`; `--policy NAME+colloid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colloid: Option<ColloidParams>,
    /// Where per-tier loaded latency comes from: "faults" (compressed tiers' fault service
    /// times; DRAM and node tiers at their unloaded latency) or "probe" (a pointer-chasing
    /// thread per memory node: src/probe.rs, docs/running-on-cxl.md).
    #[serde(default = "default_telemetry")]
    pub telemetry: String,
    /// Who serves tier faults: "per-cpu" (a fault thread pinned to each CPU the program may
    /// run on, up to 8: a fault is served on the faulting thread's CPU, with no cross-CPU
    /// wakeup) or "one" (a single unpinned thread that polls briefly between faults).
    /// Default "per-cpu" (one thread where only one CPU or more than 8 are allowed);
    /// docs/runtime.md "Where a tier fault's time goes".
    #[serde(default)]
    pub fault_threads: FaultThreads,
}

/// `[runtime] fault_threads` (`tiermem run --fault-threads`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultThreads {
    #[default]
    PerCpu,
    One,
}

impl std::str::FromStr for FaultThreads {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-cpu" => Ok(FaultThreads::PerCpu),
            "one" => Ok(FaultThreads::One),
            _ => Err(format!("unknown fault_threads {s:?}: use \"per-cpu\" or \"one\"")),
        }
    }
}
fn default_telemetry() -> String {
    "faults".into()
}
fn default_stats_mode() -> String {
    "0600".into()
}
fn default_fault_around() -> String {
    "4KiB".into()
}
fn default_min_region() -> Size {
    Size::text("128KiB")
}
fn default_quantum_ms() -> f64 {
    20.0
}
/// One DRAM tier and one lz4/zsmalloc tier in DRAM (max_compressed 3 KiB).
pub fn default_tiers() -> Vec<TierConfig> {
    vec![
        TierConfig::dram("dram"),
        TierConfig::compressed("lz4", "lz4"),
    ]
}
fn default_arena() -> Size {
    Size::text("1TiB")
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
            dram_budget: None,
            slo: None,
            min_region: default_min_region(),
            quantum_ms: default_quantum_ms(),
            tiers: default_tiers(),
            sampler: SamplerConfig::default(),
            fault_around: default_fault_around(),
            arena: default_arena(),
            run_dir: default_run_dir(),
            stats_mode: default_stats_mode(),
            fault_threads: FaultThreads::default(),
            policy: None,
            colloid: None,
            telemetry: default_telemetry(),
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
    /// `[policy]`: the same table as the simulator's.
    #[serde(default)]
    pub policy: Option<PolicyConfig>,
    /// `[colloid]`: Colloid over the policy.
    #[serde(default)]
    pub colloid: Option<ColloidParams>,
}

/// `--slo` / `slo`: `off`, or the controller's settings.
pub fn parse_slo(text: &str) -> std::result::Result<Option<SloConfig>, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    SloConfig::parse(text).map(Some)
}

impl Validate for RuntimeConfig {
    fn validate(&self, path: &str) -> Result<()> {
        let p = |f: &str| tiermem_core::config::join(path, f);
        if let Some(s) = &self.slo {
            parse_slo(s).map_err(|e| invalid(&p("slo"), e))?;
        }
        let min_region = self.min_region.bytes(&p("min_region"))?;
        if !(4096..=1 << 30).contains(&min_region) {
            return Err(invalid(
                &p("min_region"),
                format!("{min_region} bytes; give a size from \"4KiB\" (one page) to \"1GiB\", e.g. \"128KiB\""),
            ));
        }
        let arena = self.arena.bytes(&p("arena"))?;
        if !(64 << 20..=16u64 << 40).contains(&arena) {
            return Err(invalid(
                &p("arena"),
                format!("{arena} bytes of address space; give \"64MiB\" to \"16TiB\" (it is only reserved, e.g. \"1TiB\")"),
            ));
        }
        check_range(&p("quantum_ms"), self.quantum_ms, 0.1, 10_000.0)?;
        validate_tiers(&self.tiers, &p("tiers"), TierBackend::Runtime)?;
        if self.dram_budget.is_some() && self.tiers[0].capacity.is_some() {
            return Err(invalid(
                &p("dram_budget"),
                format!("and {}[0].capacity both set the DRAM budget; keep one (dram_budget also takes a percentage, \"50%\")", p("tiers")),
            ));
        }
        self.compressed_tiers_at(path)?;
        self.fault_around_at(path)?;
        crate::control::parse_stats_mode(&self.stats_mode)
            .map_err(|e| invalid(&p("stats_mode"), e))?;
        if let Some(pc) = &self.policy {
            pc.validate("policy")?;
        }
        if let Some(c) = &self.colloid {
            c.validate("colloid")?;
        }
        if !matches!(self.telemetry.as_str(), "faults" | "probe") {
            return Err(invalid(
                &p("telemetry"),
                format!(
                    "`{}` is not a telemetry source; use \"faults\" or \"probe\"",
                    self.telemetry
                ),
            ));
        }
        check_range(
            &p("sampler.scan_period_ms"),
            self.sampler.scan_period_ms,
            0.1,
            3_600_000.0,
        )?;
        Ok(())
    }
}

impl RuntimeConfig {
    pub fn from_file(path: &std::path::Path) -> Result<RuntimeConfig> {
        let f: RuntimeFile = tiermem_core::config::from_toml_file(path)?;
        let mut cfg = f.runtime;
        cfg.take_tables(f.policy, f.colloid);
        cfg.validate("runtime")?;
        Ok(cfg)
    }
    /// The config `tiermem run` hands the preload (`TIERMEM_CONFIG_JSON`, written by
    /// `launch::command`), decoded and validated as a file is: a field that does not parse or
    /// a value out of range is an error naming `TIERMEM_CONFIG_JSON.FIELD`, never a default
    /// taken further down.
    pub fn from_wire_json(text: &str) -> Result<RuntimeConfig> {
        const WIRE: &str = "TIERMEM_CONFIG_JSON";
        let mut de = serde_json::Deserializer::from_str(text);
        let cfg: RuntimeConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.into_inner().to_string();
            if path == "." || path.is_empty() {
                invalid(WIRE, msg)
            } else {
                invalid(&format!("{WIRE}.{path}"), msg)
            }
        })?;
        de.end().map_err(|e| invalid(WIRE, e.to_string()))?;
        cfg.validate(WIRE)?;
        Ok(cfg)
    }
    /// A file's `[policy]` and `[colloid]` tables (beside `[runtime]`), where given.
    pub fn take_tables(&mut self, policy: Option<PolicyConfig>, colloid: Option<ColloidParams>) {
        if policy.is_some() {
            self.policy = policy;
        }
        if colloid.is_some() {
            self.colloid = colloid;
        }
    }
    /// The SLO controller's settings, `None` when it is off (see the `slo` field).
    pub fn slo_config(&self) -> Option<SloConfig> {
        match &self.slo {
            Some(s) => parse_slo(s).ok().flatten(),
            None => {
                let budget_given = self.dram_budget.is_some()
                    || self.tiers.first().is_some_and(|t| t.capacity.is_some());
                (!budget_given && self.policy.is_none()).then(SloConfig::default)
            }
        }
    }
    /// `dram_budget`, else the DRAM tier's capacity, else unlimited.
    pub fn budget(&self) -> Budget {
        if let Some(b) = &self.dram_budget {
            return b.budget();
        }
        match self.tiers.first().and_then(|t| t.capacity.as_ref()) {
            Some(c) => c.bytes("").map(Budget::Bytes).unwrap_or(Budget::Unlimited),
            None => Budget::Unlimited,
        }
    }
    pub fn min_region_bytes(&self) -> u64 {
        self.min_region.bytes("").unwrap_or(128 << 10)
    }
    pub fn arena_bytes(&self) -> u64 {
        self.arena.bytes("").unwrap_or(1 << 40)
    }
    /// The policy quantum in ns.
    pub fn quantum_ns(&self) -> u64 {
        (self.quantum_ms * 1e6).round() as u64
    }
    /// The hint-fault scan period in ns.
    pub fn scan_period_ns(&self) -> u64 {
        (self.sampler.scan_period_ms * 1e6).round() as u64
    }
    /// "dram" when `backing` names the DRAM tier, "node:N" when it names node tier N,
    /// else `backing` as written.
    fn resolve_backing(&self, backing: &str) -> String {
        match self.tiers.iter().find(|t| t.name == backing) {
            Some(t) if t.kind == "dram" => "dram".into(),
            Some(t) if t.kind == "node" => format!("node:{}", t.node.unwrap_or(0)),
            _ => backing.into(),
        }
    }
    /// The NUMA node of each tier (index = runtime tier; None for dram and compressed).
    pub fn tier_nodes(&self) -> Vec<Option<u32>> {
        self.tiers
            .iter()
            .map(|t| match t.tier_kind("") {
                Ok(TierKind::Node { node }) => node,
                _ => None,
            })
            .collect()
    }
    /// Check the nodes the config names against this machine (sysfs): each exists and has
    /// memory, none twice (as node tiers or pool backings), none is the DRAM node (the node
    /// the program starts on). One line naming the field; `tiermem run` exits 2 on it
    /// before the program starts, so nothing is moved.
    pub fn check_nodes(&self, path: &str) -> Result<()> {
        let dram = crate::numa::dram_node();
        let mut seen: Vec<(u32, String)> = Vec::new();
        for (i, t) in self.tiers.iter().enumerate() {
            let tp = format!("{}[{i}]", tiermem_core::config::join(path, "tiers"));
            let (field, node) = match t.tier_kind("") {
                Ok(TierKind::Node { node: Some(n) }) => (format!("{tp}.node"), n),
                Ok(TierKind::Compressed { backing, .. }) => {
                    // A pool may share a node with a node tier or another pool.
                    if let Ok(Backing::Node(n)) = Backing::parse(&self.resolve_backing(&backing)) {
                        crate::numa::check_node(n)
                            .map_err(|e| invalid(&format!("{tp}.backing"), e))?;
                    }
                    continue;
                }
                _ => continue,
            };
            crate::numa::check_node(node).map_err(|e| invalid(&field, e))?;
            if node == dram && t.kind == "node" {
                return Err(invalid(
                    &field,
                    format!("node {node} is the DRAM node (the program runs there); a node tier names another memory node, see `numactl -H`"),
                ));
            }
            if let Some((_, other)) = seen.iter().find(|(n, _)| *n == node) {
                return Err(invalid(
                    &field,
                    format!("node {node} is already used by {other}; give each tier its own node"),
                ));
            }
            seen.push((node, field));
        }
        Ok(())
    }
    /// The compressed tiers (runtime tiers 1, 2, ...), defaults filled in and every name
    /// parsed: a codec, allocator or backing that does not parse is an error naming
    /// `runtime.tiers[i].FIELD` (the runtime used to take lz4, zsmalloc or DRAM instead).
    pub fn compressed_tiers(&self) -> Result<Vec<CompressedTier>> {
        self.compressed_tiers_at("runtime")
    }
    fn compressed_tiers_at(&self, path: &str) -> Result<Vec<CompressedTier>> {
        let mut out = Vec::new();
        for (i, t) in self.tiers.iter().enumerate().skip(1) {
            let tp = format!("{}[{i}]", tiermem_core::config::join(path, "tiers"));
            let TierKind::Compressed {
                codec,
                allocator,
                backing,
            } = t.tier_kind(&tp)?
            else {
                continue;
            };
            out.push(CompressedTier {
                name: t.name.clone(),
                codec: Codec::parse(&codec).map_err(|e| invalid(&format!("{tp}.codec"), e))?,
                allocator: AllocatorKind::parse(&allocator)
                    .map_err(|e| invalid(&format!("{tp}.allocator"), e))?,
                backing: Backing::parse(&self.resolve_backing(&backing))
                    .map_err(|e| invalid(&format!("{tp}.backing"), e))?,
                max_compressed_bytes: t.max_compressed_bytes(&tp)?,
            });
        }
        Ok(out)
    }
    /// `fault_around` parsed; an error naming `runtime.fault_around` (the runtime used to
    /// serve one page instead).
    pub fn fault_around(&self) -> Result<crate::runtime::fault_around::FaultAround> {
        self.fault_around_at("runtime")
    }
    fn fault_around_at(&self, path: &str) -> Result<crate::runtime::fault_around::FaultAround> {
        crate::runtime::fault_around::FaultAround::parse(&self.fault_around)
            .map_err(|e| invalid(&tiermem_core::config::join(path, "fault_around"), e))
    }
    /// The first compressed tier (where demotions go), for command-line overrides.
    pub fn first_compressed_mut(&mut self) -> Option<&mut TierConfig> {
        self.tiers.iter_mut().find(|t| t.kind == "compressed")
    }
    /// Set the DRAM budget from the command line: it replaces the file's dram_budget and
    /// DRAM tier capacity.
    pub fn set_dram_budget(&mut self, budget: DramBudget) {
        self.dram_budget = Some(budget);
        if let Some(t) = self.tiers.first_mut() {
            t.capacity = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fault_threads_in_a_config_file() {
        assert_eq!(file("[runtime]\n").unwrap().fault_threads, FaultThreads::PerCpu);
        assert_eq!(
            file("[runtime]\nfault_threads = \"one\"\n").unwrap().fault_threads,
            FaultThreads::One
        );
        let e = file("[runtime]\nfault_threads = \"two\"\n").unwrap_err().to_string();
        assert!(e.contains("fault_threads") && e.contains("per-cpu"), "{e}");
    }

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
            ("min_region", "2GiB"),
            ("arena", "0"),
            ("arena", "1MiB"),
        ] {
            let mut c = RuntimeConfig::default();
            match field {
                "min_region" => c.min_region = Size::text(val),
                _ => c.arena = Size::text(val),
            }
            let e = c.validate("runtime").unwrap_err().to_string();
            assert!(
                e.contains(&format!("runtime.{field}")),
                "{field}={val}: {e}"
            );
        }
        assert!(RuntimeConfig::default().validate("runtime").is_ok());
    }

    fn file(text: &str) -> Result<RuntimeConfig> {
        let f: RuntimeFile = tiermem_core::config::from_toml_str(text, "c.toml")?;
        f.runtime.validate("runtime")?;
        Ok(f.runtime)
    }
    const DRAM: &str = "[runtime]\n[[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\n";

    #[test]
    fn unknown_field_is_named() {
        let e = file(&format!(
            "{DRAM}[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\ncodex = \"lz4\"\n"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("runtime.tiers[1]"), "{e}");
        assert!(e.to_string().contains("codex"), "{e}");
    }
    #[test]
    fn bad_codec_is_named() {
        let e = file(&format!(
            "{DRAM}[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\ncodec = \"brotli\"\n"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("runtime.tiers[1].codec"), "{e}");
    }
    #[test]
    fn node_backing_is_refused_by_name() {
        let e = file(&format!(
            "{DRAM}[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\nbacking = \"node:x\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("runtime.tiers[1].backing") && e.contains("node:N"),
            "{e}"
        );
        // The DRAM tier's name or "dram".
        for b in ["dram", "local"] {
            let c = file(&format!("[runtime]\n[[runtime.tiers]]\nname = \"local\"\nkind = \"dram\"\n[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\nbacking = \"{b}\"\n")).unwrap();
            assert_eq!(c.compressed_tiers().unwrap()[0].backing, Backing::Memory);
        }
    }
    #[test]
    fn old_spellings_name_the_new_field() {
        let e = file(&format!("{DRAM}[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\nmax_compressed_bytes = 3072\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[1]") && e.contains("`max_compressed`"),
            "{e}"
        );
        let e = file(&format!(
            "{DRAM}[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\nbacking = \"memory\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("runtime.tiers[1].backing") && e.contains("\"dram\""),
            "{e}"
        );
        // Compressed tiers need their kind: the old codec-only table is refused by path.
        let e = file("[runtime]\n[[runtime.tiers]]\ncodec = \"lz4\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime.tiers[0]"), "{e}");
    }
    #[test]
    fn dram_capacity_is_the_budget() {
        let c = file(&format!("{}capacity = \"512MiB\"\n[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\nmax_compressed = \"2KiB\"\n", DRAM)).unwrap();
        assert_eq!(c.budget(), Budget::Bytes(512 << 20));
        assert_eq!(c.compressed_tiers().unwrap()[0].max_compressed_bytes, 2048);
        let e = file("[runtime]\ndram_budget = \"50%\"\n[[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\ncapacity = \"512MiB\"\n[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\n").unwrap_err().to_string();
        assert!(
            e.contains("runtime.dram_budget") && e.contains("runtime.tiers[0].capacity"),
            "{e}"
        );
        let mut c = c;
        c.set_dram_budget("25%".parse().unwrap());
        c.validate("runtime").unwrap();
        assert_eq!(c.budget(), Budget::Fraction(0.25));
        assert_eq!(RuntimeConfig::default().budget(), Budget::Unlimited);
    }
    #[test]
    fn times_are_f64_ms() {
        let c =
            file("[runtime]\nquantum_ms = 2.5\n[runtime.sampler]\nscan_period_ms = 50\n").unwrap();
        assert_eq!(c.quantum_ns(), 2_500_000);
        assert_eq!(c.scan_period_ns(), 50_000_000);
        assert_eq!(RuntimeConfig::default().quantum_ns(), 20_000_000);
    }
    /// Issue 48 item 1: the budget is parsed once, where it is read; a bad one is an error
    /// at its field, never `Unlimited` later (`budget()` used to re-parse it with
    /// `.unwrap_or(Budget::Unlimited)`).
    #[test]
    fn dram_budget_is_parsed_where_it_is_read() {
        for (text, want) in [
            ("50%", Budget::Fraction(0.5)),
            ("64M", Budget::Bytes(64 << 20)),
            ("unlimited", Budget::Unlimited),
        ] {
            let c = file(&format!("[runtime]\ndram_budget = \"{text}\"\n")).unwrap();
            assert_eq!(c.budget(), want, "{text}");
            // Written back out as given: the preload reads the user's text.
            let j = serde_json::to_value(&c).unwrap();
            assert_eq!(j["dram_budget"], text);
            let back: RuntimeConfig = serde_json::from_value(j).unwrap();
            assert_eq!(back.dram_budget, c.dram_budget);
        }
        for (bad, needle) in [
            ("0", "positive size"),
            ("150%", "at most 100"),
            ("lots", "unlimited"),
        ] {
            let e = file(&format!("[runtime]\ndram_budget = \"{bad}\"\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("runtime.dram_budget") && e.contains(needle),
                "{bad}: {e}"
            );
            let e =
                serde_json::from_str::<RuntimeConfig>(&format!("{{\"dram_budget\": \"{bad}\"}}"))
                    .unwrap_err()
                    .to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        assert_eq!(
            DramBudget::from_bytes(4096).unwrap().budget(),
            Budget::Bytes(4096)
        );
        assert!(DramBudget::from_bytes(0).is_err());
    }
    /// A config that never went through `validate` (built in code) still cannot reach the
    /// runtime with a name that does not parse: `Runtime::init` takes these typed values
    /// and used to fall back to lz4, zsmalloc, DRAM backing and one-page fault-around.
    #[test]
    fn unvalidated_names_are_errors_not_defaults() {
        let mut c = RuntimeConfig::default();
        assert_eq!(c.compressed_tiers().unwrap()[0].codec, Codec::Lz4);
        c.tiers[1].codec = Some("brotli".into());
        let e = c.compressed_tiers().unwrap_err().to_string();
        assert!(e.contains("runtime.tiers[1].codec") && e.contains("brotli"), "{e}");
        let mut c = RuntimeConfig::default();
        c.tiers[1].allocator = Some("slab".into());
        let e = c.compressed_tiers().unwrap_err().to_string();
        assert!(e.contains("runtime.tiers[1].allocator"), "{e}");
        let c = RuntimeConfig {
            fault_around: "3KiB".into(),
            ..Default::default()
        };
        let e = c.fault_around().unwrap_err().to_string();
        assert!(e.contains("runtime.fault_around"), "{e}");
    }
    /// The preload's wire config is validated as a file is (it used to be decoded only).
    #[test]
    fn wire_json_is_validated() {
        let c = RuntimeConfig::default();
        let j = serde_json::to_string(&c).unwrap();
        let back = RuntimeConfig::from_wire_json(&j).unwrap();
        assert_eq!(back.tiers, c.tiers);
        for (bad, field) in [
            (r#"{"dram_budget": "0"}"#, "TIERMEM_CONFIG_JSON.dram_budget"),
            (r#"{"quantum_ms": 0}"#, "TIERMEM_CONFIG_JSON.quantum_ms"),
            (r#"{"telemetry": "pmu"}"#, "TIERMEM_CONFIG_JSON.telemetry"),
            (
                r#"{"fault_around": "3KiB"}"#,
                "TIERMEM_CONFIG_JSON.fault_around",
            ),
            (r#"{"min_region": "1"}"#, "TIERMEM_CONFIG_JSON.min_region"),
            (r#"{"qantum_ms": 5}"#, "TIERMEM_CONFIG_JSON"),
            ("{not json", "TIERMEM_CONFIG_JSON"),
        ] {
            let e = RuntimeConfig::from_wire_json(bad).unwrap_err().to_string();
            assert!(e.contains(field), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{bad}: one line: {e}");
        }
    }
    #[test]
    fn json_round_trip_for_the_preload() {
        let c = file(&format!("{DRAM}capacity = \"1GiB\"\n[[runtime.tiers]]\nname = \"z\"\nkind = \"compressed\"\ncodec = \"zstd:3\"\n")).unwrap();
        let j = serde_json::to_string(&c).unwrap();
        let back: RuntimeConfig = serde_json::from_str(&j).unwrap();
        back.validate("runtime").unwrap();
        assert_eq!(back.tiers, c.tiers);
        assert_eq!(back.budget(), c.budget());
    }
}
