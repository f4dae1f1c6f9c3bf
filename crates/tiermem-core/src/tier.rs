//! Memory tiers: what a tier is, independent of how a backend realises it, and the one
//! config schema for a tier (`[[machine.tiers]]` in a simulator config, `[[runtime.tiers]]`
//! in a runtime config).
//!
//! ```toml
//! [[machine.tiers]]              # or [[runtime.tiers]]
//! name = "local"
//! kind = "dram"                  # "dram" | "node" | "compressed"
//! capacity = "64GiB"             # a size string (or an integer number of bytes)
//! unloaded_latency_ns = 70
//! peak_bandwidth_gbps = 205      # GB/s = 1e9 bytes/s
//! cost_per_gb = 1.0              # relative, for TCO
//! curve = "colloid-local"        # simulator only: loaded-latency curve
//! write_cost = 1.75              # simulator only
//!
//! [[runtime.tiers]]
//! name = "lz4"
//! kind = "compressed"
//! codec = "lz4"                  # lz4, zstd[:LEVEL], deflate[:LEVEL], lzo
//! allocator = "zsmalloc"         # zsmalloc, zbud, z3fold
//! backing = "dram"               # where the pool lives: "dram", a tier name, "node:N"
//! max_compressed = "3KiB"        # a page that does not compress below this stays put
//! # simulator only (compressed): backing_latency_ns, and measured fault_ns / compress_ns
//! # (ns; `tiermem tiers characterize`), replacing the codec table's times
//! ```

use crate::config::{check_range, invalid, join};
use crate::error::Result;
use crate::units::Size;
use serde::{Deserialize, Serialize};

/// Index of a tier in the backend's tier list. Tier 0 is the default (fastest) tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TierId(pub u8);

impl TierId {
    pub const DEFAULT: TierId = TierId(0);
    /// In a snapshot's placement: no data at this page (a hole, or a page never touched).
    /// The runtime's address spaces have such pages; the simulator's never do. A policy
    /// that counts pages or looks for the tier a page is in must skip them.
    pub const NONE: TierId = TierId(u8::MAX);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What backs a tier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TierKind {
    /// Locally attached DRAM.
    Dram,
    /// A memory node: byte-addressable memory behind an interconnect (CXL expander, remote
    /// socket). `node` is the Linux NUMA node where the runtime realises it.
    Node { node: Option<u32> },
    /// Software-defined compressed tier: pages are compressed into a pool and faulted back.
    /// `backing` is the tier whose memory holds the pool ("dram", a tier name, "node:N").
    Compressed {
        codec: String,
        allocator: String,
        backing: String,
    },
}

/// Static description of one tier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierSpec {
    pub name: String,
    pub kind: TierKind,
    pub capacity_bytes: u64,
    /// Latency of a single request with nothing else in flight.
    pub unloaded_latency_ns: f64,
    /// Theoretical peak bandwidth (reads + writes) of the tier's interconnect.
    pub peak_bandwidth_bytes_per_s: f64,
    /// Cost of a GB of this tier, for TCO models (TierScape §TCO). Relative units.
    pub cost_per_gb: f64,
}

/// A loaded-latency curve as written in a config: a calibrated curve's name or a table.
/// Its evaluation lives in the simulator (`tiermem_sim::latency::Curve`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CurveSpec {
    /// `"colloid-local"`, `"colloid-remote"`, `"mess-skylake"`, `"mess-sapphire-rapids"`,
    /// `"flat"`.
    Named(String),
    /// `[[u, multiplier], ...]`, u increasing in [0, 1), multiplier ≥ 1 and non-decreasing.
    Table(Vec<[f64; 2]>),
}

/// The simulator's calibrated curves.
pub const CURVE_NAMES: &[&str] = &[
    "colloid-local",
    "colloid-remote",
    "mess-skylake",
    "mess-sapphire-rapids",
    "flat",
];

/// By hand, so that a wrong type says what a curve is (an untagged enum only says "data
/// did not match any variant").
impl<'de> Deserialize<'de> for CurveSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<CurveSpec, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CurveSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(
                    f,
                    "a curve name ({}) or a table [[u, multiplier], ...]",
                    CURVE_NAMES.join(", ")
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<CurveSpec, E> {
                Ok(CurveSpec::Named(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<CurveSpec, A::Error> {
                let mut points = Vec::new();
                while let Some(p) = seq.next_element::<[f64; 2]>()? {
                    points.push(p);
                }
                Ok(CurveSpec::Table(points))
            }
        }
        d.deserialize_any(V)
    }
}

/// Which backend a tier table is validated for: the fields that apply differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierBackend {
    /// The simulator: `dram` and `node` tiers with their physics (capacity, latency,
    /// bandwidth and loaded-latency curve all required); `compressed` tiers with a
    /// `capacity` (the pool's physical bytes) and no physics fields (the codec gives them).
    Sim,
    /// The Linux runtime: tier 0 is `dram` (its `capacity` is the DRAM budget), then
    /// `node` tiers (`node = N`, bounded by the node's memory) and `compressed` tiers
    /// (unlimited: no `capacity`). No simulator physics.
    Runtime,
}

impl TierBackend {
    fn what(self) -> &'static str {
        match self {
            TierBackend::Sim => "a simulator config",
            TierBackend::Runtime => "a runtime config",
        }
    }
}

/// One tier in a config: the same table in `[[machine.tiers]]` (simulator) and
/// `[[runtime.tiers]]` (runtime). Fields that do not apply to the tier's kind or to the
/// backend are errors ([`validate_tiers`]); [`TierConfig::spec`] is the one conversion to a
/// [`TierSpec`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// Labels outputs and stats; a compressed tier's `backing` may name it.
    pub name: String,
    /// "dram", "node" (CXL expander / remote socket; a NUMA node on Linux) or "compressed".
    pub kind: String,
    /// Bytes the tier holds. Required in the simulator. In the runtime only the DRAM tier
    /// takes one (its DRAM budget; `runtime.dram_budget` is the alternative that also takes
    /// a percentage); compressed tiers are unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Size>,
    /// Latency of one request with nothing else in flight, ns. Required in the simulator;
    /// in the runtime it describes the tier to policies (default dram 100, compressed 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unloaded_latency_ns: Option<f64>,
    /// Peak bandwidth (reads + writes), GB/s (1 GB/s = 1e9 bytes/s). Required in the
    /// simulator; runtime default dram 10, compressed 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bandwidth_gbps: Option<f64>,
    /// Relative cost of a GB of the tier's medium, for TCO (default 1.0; for a compressed
    /// tier the cost of the medium its pool lives on, so 1.0 for a pool in DRAM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_gb: Option<f64>,
    /// kind = "node": the Linux NUMA node that realises the tier (the simulator ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// kind = "compressed": lz4, zstd[:LEVEL], deflate[:LEVEL], lzo (default lz4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codec: Option<String>,
    /// kind = "compressed": zsmalloc, zbud, z3fold (default zsmalloc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<String>,
    /// kind = "compressed": the tier whose memory holds the pool: "dram" (default), the
    /// name of a dram/node tier, or "node:N".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<String>,
    /// kind = "compressed": a page whose compressed size is not below this stays where it
    /// is (default "3KiB"; at most "4KiB").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_compressed: Option<Size>,
    /// Simulator only, kind = "compressed": the load latency of the medium holding the
    /// pool, ns (TierScape's "backing media", §4.1: e.g. Optane). Default: tier 0's
    /// `unloaded_latency_ns` (a pool in DRAM). The runtime measures its real backing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_latency_ns: Option<f64>,
    /// Simulator only, kind = "compressed": a measured fault on this tier with its pool in
    /// DRAM (fault + decompression + install of the page), ns; e.g. `tiermem tiers
    /// characterize`'s `fault_ns`. Replaces `machine.compressed_fault_ns` + the codec
    /// table's decompression time (also the migration thread's decompression); a slower
    /// `backing_latency_ns` still adds its extra line reads. Default: the codec table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_ns: Option<f64>,
    /// Simulator only, kind = "compressed": measured compression time per 4 KiB page, ns
    /// (`tiermem tiers characterize`'s `compress_ns`), charged to the migration thread for
    /// each page moved in. Default: the codec table's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress_ns: Option<f64>,
    /// Simulator only: the loaded-latency curve (a name or a table [[u, multiplier], ...]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<CurveSpec>,
    /// Simulator only: a written byte loads the tier like this many read bytes (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_cost: Option<f64>,
}

/// Defaults of the fields a kind may leave out.
pub const DEFAULT_CODEC: &str = "lz4";
pub const DEFAULT_ALLOCATOR: &str = "zsmalloc";
pub const DEFAULT_BACKING: &str = "dram";
pub const DEFAULT_MAX_COMPRESSED_BYTES: u64 = 3072;

impl TierConfig {
    /// A DRAM tier with nothing else set.
    pub fn dram(name: &str) -> TierConfig {
        TierConfig {
            name: name.into(),
            kind: "dram".into(),
            capacity: None,
            unloaded_latency_ns: None,
            peak_bandwidth_gbps: None,
            cost_per_gb: None,
            node: None,
            codec: None,
            allocator: None,
            backing: None,
            max_compressed: None,
            backing_latency_ns: None,
            fault_ns: None,
            compress_ns: None,
            curve: None,
            write_cost: None,
        }
    }
    /// A compressed tier with the given codec and every other field at its default.
    pub fn compressed(name: &str, codec: &str) -> TierConfig {
        TierConfig {
            kind: "compressed".into(),
            codec: Some(codec.into()),
            ..TierConfig::dram(name)
        }
    }

    /// The kind, with the kind's defaults filled in; `path` names this tier.
    pub fn tier_kind(&self, path: &str) -> Result<TierKind> {
        Ok(match self.kind.as_str() {
            "dram" => TierKind::Dram,
            "node" => TierKind::Node { node: self.node },
            "compressed" => TierKind::Compressed {
                codec: self.codec.clone().unwrap_or_else(|| DEFAULT_CODEC.into()),
                allocator: self
                    .allocator
                    .clone()
                    .unwrap_or_else(|| DEFAULT_ALLOCATOR.into()),
                backing: self.backing.clone().unwrap_or_else(|| DEFAULT_BACKING.into()),
            },
            "cxl" => {
                return Err(invalid(
                    &join(path, "kind"),
                    "`kind = \"cxl\"` is now `kind = \"node\"` (a memory node: CXL expander or remote socket); rename it",
                ))
            }
            other => {
                return Err(invalid(
                    &join(path, "kind"),
                    format!("`{other}` is not a tier kind; use \"dram\", \"node\" or \"compressed\""),
                ))
            }
        })
    }

    /// `max_compressed` in bytes (default 3 KiB).
    pub fn max_compressed_bytes(&self, path: &str) -> Result<u64> {
        match &self.max_compressed {
            Some(s) => s.bytes(&join(path, "max_compressed")),
            None => Ok(DEFAULT_MAX_COMPRESSED_BYTES),
        }
    }

    /// Check one tier for `backend`; `path` names it (`machine.tiers[1]`).
    pub fn validate_for(&self, path: &str, backend: TierBackend) -> Result<()> {
        let f = |field: &str| join(path, field);
        if self.name.trim().is_empty() {
            return Err(invalid(
                &f("name"),
                "is empty; give the tier a name (it labels the outputs), e.g. \"local\"",
            ));
        }
        let kind = self.tier_kind(path)?;
        let not_for_kind = |field: &str, applies: &str| {
            invalid(
                &f(field),
                format!(
                    "does not apply to kind = \"{}\" (only to kind = \"{applies}\"); remove it",
                    self.kind
                ),
            )
        };
        if self.node.is_some() && !matches!(kind, TierKind::Node { .. }) {
            return Err(not_for_kind("node", "node"));
        }
        if !matches!(kind, TierKind::Compressed { .. }) {
            for (field, set) in [
                ("codec", self.codec.is_some()),
                ("allocator", self.allocator.is_some()),
                ("backing", self.backing.is_some()),
                ("max_compressed", self.max_compressed.is_some()),
                ("backing_latency_ns", self.backing_latency_ns.is_some()),
                ("fault_ns", self.fault_ns.is_some()),
                ("compress_ns", self.compress_ns.is_some()),
            ] {
                if set {
                    return Err(not_for_kind(field, "compressed"));
                }
            }
        }
        match backend {
            TierBackend::Sim if matches!(kind, TierKind::Compressed { .. }) => {
                for (field, set) in [
                    ("unloaded_latency_ns", self.unloaded_latency_ns.is_some()),
                    ("peak_bandwidth_gbps", self.peak_bandwidth_gbps.is_some()),
                    ("curve", self.curve.is_some()),
                    ("write_cost", self.write_cost.is_some()),
                ] {
                    if set {
                        return Err(invalid(
                            &f(field),
                            "does not apply to a compressed tier in the simulator: an access to a compressed page costs a fault plus the codec's decompression time (docs/simulator.md); remove it, or give a measured `fault_ns`",
                        ));
                    }
                }
                if self.capacity.is_none() {
                    return Err(invalid(
                        &f("capacity"),
                        "missing; the simulator needs the pool's physical size: add e.g. `capacity = \"16GiB\"`",
                    ));
                }
            }
            TierBackend::Sim => {
                let need = |field: &str, set: bool, eg: &str| {
                    if set {
                        Ok(())
                    } else {
                        Err(invalid(
                            &f(field),
                            format!("missing; the simulator needs it: add e.g. `{field} = {eg}`"),
                        ))
                    }
                };
                need("capacity", self.capacity.is_some(), "\"64GiB\"")?;
                need(
                    "unloaded_latency_ns",
                    self.unloaded_latency_ns.is_some(),
                    "70",
                )?;
                need(
                    "peak_bandwidth_gbps",
                    self.peak_bandwidth_gbps.is_some(),
                    "205",
                )?;
                need("curve", self.curve.is_some(), "\"colloid-local\"")?;
            }
            TierBackend::Runtime => {
                for (field, set) in [
                    ("curve", self.curve.is_some()),
                    ("write_cost", self.write_cost.is_some()),
                    ("backing_latency_ns", self.backing_latency_ns.is_some()),
                    ("fault_ns", self.fault_ns.is_some()),
                    ("compress_ns", self.compress_ns.is_some()),
                ] {
                    if set {
                        return Err(invalid(
                            &f(field),
                            format!("is simulator physics and does not apply to {}: the runtime runs on real memory; remove it", backend.what()),
                        ));
                    }
                }
                match kind {
                    TierKind::Node { node: None } => {
                        return Err(invalid(
                            &f("node"),
                            "missing; a node tier in the runtime holds its pages on a NUMA node: add e.g. `node = 1` (see `numactl -H`)",
                        ))
                    }
                    TierKind::Node { .. } if self.capacity.is_some() => {
                        return Err(invalid(
                            &f("capacity"),
                            "a node tier is bounded by its node's memory in the runtime: remove it; limit DRAM with the dram tier's capacity or runtime.dram_budget",
                        ))
                    }
                    TierKind::Compressed { .. } if self.capacity.is_some() => {
                        return Err(invalid(
                            &f("capacity"),
                            "a compressed tier is unlimited in the runtime (its pool grows with what it holds): remove it; limit DRAM with the dram tier's capacity or runtime.dram_budget",
                        ))
                    }
                    _ => {}
                }
            }
        }
        if let Some(c) = &self.capacity {
            if c.bytes(&f("capacity"))? == 0 {
                return Err(invalid(&f("capacity"), "must be > 0"));
            }
        }
        if let Some(v) = self.unloaded_latency_ns {
            check_range(&f("unloaded_latency_ns"), v, 1.0, 1e9)?;
        }
        if let Some(v) = self.peak_bandwidth_gbps {
            check_range(&f("peak_bandwidth_gbps"), v, 0.001, 1e5)?;
        }
        if let Some(v) = self.write_cost {
            check_range(&f("write_cost"), v, 0.1, 10.0)?;
        }
        if let Some(v) = self.backing_latency_ns {
            check_range(&f("backing_latency_ns"), v, 1.0, 1e9)?;
        }
        for (field, v) in [
            ("fault_ns", self.fault_ns),
            ("compress_ns", self.compress_ns),
        ] {
            match v {
                Some(v) if !(v.is_finite() && v > 0.0 && v <= 1e9) => {
                    return Err(invalid(
                        &f(field),
                        format!("{v}: give a measured time in ns, > 0 and at most 1e9 (e.g. `tiermem tiers characterize`'s {field} for this codec and allocator)"),
                    ))
                }
                _ => {}
            }
        }
        if let Some(v) = self.cost_per_gb {
            if !(v.is_finite() && v > 0.0 && v <= 1e6) {
                return Err(invalid(
                    &f("cost_per_gb"),
                    format!("{v}: give the medium's cost per GB relative to the others, > 0 (DRAM is usually 1, Optane-like memory ~0.33)"),
                ));
            }
        }
        if matches!(kind, TierKind::Compressed { .. }) {
            let m = self.max_compressed_bytes(path)?;
            if m == 0 || m > 4096 {
                return Err(invalid(
                    &f("max_compressed"),
                    format!("{m} bytes; give 1 byte to \"4KiB\" (one page), e.g. \"3KiB\""),
                ));
            }
        }
        Ok(())
    }

    /// The one conversion to a [`TierSpec`]. `capacity_bytes` is the capacity the backend
    /// realises (the simulator scales it; the runtime's DRAM tier is its budget).
    pub fn spec(&self, capacity_bytes: u64) -> TierSpec {
        let kind = self.tier_kind("").unwrap_or(TierKind::Dram);
        let compressed = matches!(kind, TierKind::Compressed { .. });
        TierSpec {
            name: self.name.clone(),
            capacity_bytes,
            unloaded_latency_ns: self.unloaded_latency_ns.unwrap_or(if compressed {
                10_000.0
            } else {
                100.0
            }),
            peak_bandwidth_bytes_per_s: gbps_to_bytes_per_s(
                self.peak_bandwidth_gbps
                    .unwrap_or(if compressed { 1.0 } else { 10.0 }),
            ),
            // A compressed tier's cost is its backing medium's (TierScape Eq. 12: USD_y per
            // stored byte; the saving comes from the ratio): a pool in DRAM costs DRAM's.
            cost_per_gb: self.cost_per_gb.unwrap_or(1.0),
            kind,
        }
    }
}

/// GB/s (1e9 bytes/s) to bytes/s.
pub fn gbps_to_bytes_per_s(gbps: f64) -> f64 {
    gbps * 1e9
}

/// Check a whole tier table for `backend`; `path` names the list (`machine.tiers`).
/// Beyond each tier: 1 to 8 tiers, unique names, compressed tiers' `backing` names a
/// memory tier; in the runtime, tier 0 is the only "dram" tier and at least one
/// compressed tier follows.
pub fn validate_tiers(tiers: &[TierConfig], path: &str, backend: TierBackend) -> Result<()> {
    if tiers.is_empty() || tiers.len() > 8 {
        return Err(invalid(path, "give between 1 and 8 tiers"));
    }
    for (i, t) in tiers.iter().enumerate() {
        let tp = format!("{path}[{i}]");
        t.validate_for(&tp, backend)?;
        if backend == TierBackend::Runtime && (i == 0) != (t.kind == "dram") {
            return Err(invalid(
                &join(&tp, "kind"),
                "the runtime's tier 0 is its DRAM, and only tier 0: give [[runtime.tiers]] as one kind = \"dram\" tier, then the node and compressed tiers",
            ));
        }
        if let Some(j) = tiers[..i].iter().position(|o| o.name == t.name) {
            return Err(invalid(
                &join(&tp, "name"),
                format!(
                    "`{}` is already the name of {path}[{j}]; give each tier its own name",
                    t.name
                ),
            ));
        }
        if let TierKind::Compressed { backing, .. } = t.tier_kind(&tp)? {
            let bp = join(&tp, "backing");
            if backing == "memory" {
                return Err(invalid(
                    &bp,
                    "`backing = \"memory\"` is now `backing = \"dram\"`; rename it",
                ));
            }
            if backing != "dram" && !backing.starts_with("node:") {
                match tiers.iter().find(|o| o.name == backing).map(|o| o.kind.as_str()) {
                    Some("dram") | Some("node") => {}
                    Some(_) => return Err(invalid(&bp, format!("`{backing}` is a compressed tier; a pool lives in a memory tier: \"dram\", a dram/node tier's name or \"node:N\""))),
                    None => return Err(invalid(&bp, format!("`{backing}` is not a tier; use \"dram\", a dram/node tier's name or \"node:N\""))),
                }
            }
        }
    }
    if backend == TierBackend::Runtime && tiers.len() < 2 {
        return Err(invalid(
            path,
            "the runtime needs a kind = \"node\" or \"compressed\" tier after the dram tier (demotions go to the first)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = r#"
[[tiers]]
name = "local"
kind = "dram"
capacity = "4GiB"
unloaded_latency_ns = 70
peak_bandwidth_gbps = 205
[[tiers]]
name = "lz4"
kind = "compressed"
codec = "lz4"
max_compressed = "3KiB"
"#;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct T {
        tiers: Vec<TierConfig>,
    }

    fn parse(text: &str) -> Vec<TierConfig> {
        crate::config::from_toml_str::<T>(text, "t.toml")
            .unwrap()
            .tiers
    }

    #[test]
    fn kinds_and_spec() {
        let t = parse(TABLE);
        validate_tiers(&t, "runtime.tiers", TierBackend::Runtime).unwrap();
        let s = t[1].spec(0);
        assert_eq!(
            s.kind,
            TierKind::Compressed {
                codec: "lz4".into(),
                allocator: "zsmalloc".into(),
                backing: "dram".into()
            }
        );
        assert_eq!(t[1].max_compressed_bytes("x").unwrap(), 3072);
        assert_eq!(t[0].spec(1).peak_bandwidth_bytes_per_s, 205e9);
        // The simulator has no compressed tiers and needs a curve.
        let e = validate_tiers(&t, "machine.tiers", TierBackend::Sim)
            .unwrap_err()
            .to_string();
        assert!(e.contains("machine.tiers[0].curve"), "{e}");
    }

    #[test]
    fn field_of_another_kind_or_backend_is_named() {
        let mut t = parse(TABLE);
        t[0].codec = Some("lz4".into());
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[0].codec") && e.contains("kind = \"compressed\""),
            "{e}"
        );
        let mut t = parse(TABLE);
        t[0].curve = Some(CurveSpec::Named("flat".into()));
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[0].curve") && e.contains("simulator"),
            "{e}"
        );
        let mut t = parse(TABLE);
        t[1].capacity = Some(Size::text("1GiB"));
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime.tiers[1].capacity"), "{e}");
        let mut t = parse(TABLE);
        t[1].max_compressed = Some(Size::text("8KiB"));
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime.tiers[1].max_compressed"), "{e}");
        let mut t = parse(TABLE);
        t[1].backing = Some("lz4".into());
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime.tiers[1].backing"), "{e}");
        // The media latency of a pool is simulator physics; a DRAM tier has no pool.
        let mut t = parse(TABLE);
        t[1].backing_latency_ns = Some(305.0);
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[1].backing_latency_ns") && e.contains("simulator"),
            "{e}"
        );
        let mut t = parse(TABLE);
        t[0].backing_latency_ns = Some(305.0);
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[0].backing_latency_ns") && e.contains("compressed"),
            "{e}"
        );
        // Measured tier times are simulator inputs: the runtime measures its own.
        let mut t = parse(TABLE);
        t[1].fault_ns = Some(5000.0);
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("runtime.tiers[1].fault_ns") && e.contains("simulator"),
            "{e}"
        );
    }

    #[test]
    fn a_cost_that_is_not_positive_is_named() {
        for v in [0.0, -1.0, f64::NAN] {
            let mut t = parse(TABLE);
            t[1].cost_per_gb = Some(v);
            let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
                .unwrap_err()
                .to_string();
            assert!(e.contains("runtime.tiers[1].cost_per_gb") && e.contains("> 0"), "{e}");
        }
    }

    #[test]
    fn old_spellings_name_the_new_ones() {
        let mut t = parse(TABLE);
        t[0].kind = "cxl".into();
        let e = validate_tiers(&t, "machine.tiers", TierBackend::Sim)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("machine.tiers[0].kind") && e.contains("kind = \"node\""),
            "{e}"
        );
        let mut t = parse(TABLE);
        t[1].backing = Some("memory".into());
        let e = validate_tiers(&t, "runtime.tiers", TierBackend::Runtime)
            .unwrap_err()
            .to_string();
        assert!(e.contains("backing = \"dram\""), "{e}");
        let e = crate::config::from_toml_str::<T>(
            &TABLE.replace("max_compressed =", "max_compressed_bytes ="),
            "t.toml",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("tiers[1]") && e.contains("`max_compressed`"),
            "{e}"
        );
    }
}
