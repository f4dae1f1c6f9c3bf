//! Workload configuration (`[workload]` in a simulation config) and the builder.
//!
//! One serde enum, internally tagged by `kind`; every struct rejects unknown fields.
//! Sizes are strings (`"72G"`, `"4K"`) or integers (bytes). Examples:
//!
//! ```toml
//! [workload]                      # Colloid §2.1 GUPS
//! kind = "gups"
//! working_set = "72G"
//! hot_set = "24G"
//! hot_probability = 0.9
//! object_size = 64
//! write_fraction = 1.0            # 1:1 read/write: every object read is updated
//! hot_set_move_at_s = 100         # optional: the hot set moves at t = 100 s
//!
//! [workload]                      # YCSB-A over 10 M 1 KiB records, Zipf 0.99
//! kind = "kv"
//! keys = 10000000
//! value_size = "1K"
//! mix = "A"
//! distribution = "zipf"
//!
//! [workload]
//! kind = "stream"
//! working_set = "8G"
//!
//! [workload]
//! kind = "random"
//! working_set = "5G"
//!
//! [workload]
//! kind = "trace"
//! path = "traces/app.tmt"         # lackey text or tiermem binary, detected by its magic
//! loop = true
//!
//! [workload]                      # Ligra PageRank over a directed rMat graph
//! kind = "pagerank"
//! vertices = 8388608              # a power of two
//! edges = 62500000
//!
//! [workload]                      # graph500-like: dense 64 KiB chunks at random places
//! kind = "regions"
//! working_set = "761MiB"
//! [[workload.stages]]
//! chunk_size = "64KiB"
//! hot_set = "128MiB"
//! hot_probability = 0.9
//! redraw_every_ops = 2e7          # a fresh hot set every 20 M operations
//! ```
//!
//! Every kind takes `phases`, a schedule of changes: each phase is a table with `at_s`
//! (virtual seconds) and the fields that change from then on. Changes accumulate (phase 2
//! applies on top of phase 1), may include `kind` (a different workload over the same page
//! space), and are checked as strictly as the base:
//!
//! ```toml
//! [[workload.phases]]
//! at_s = 30
//! hot_probability = 0.5
//! [[workload.phases]]
//! at_s = 60
//! kind = "stream"
//! ```
//! Each phase starts its workload afresh (a new hot set only if its size or seed-relevant
//! fields changed: phases are built from the same seed).

use super::gups::{Gups, GupsSpec};
use super::kernels::{ArraySpec, KernelSpec, Kernels, KernelsSpec};
use super::kv::{KeyDist, Kv, KvSpec, Mix};
use super::pagerank::{Pagerank, PagerankSpec};
use super::phased::Phased;
use super::random::RandomUniform;
use super::regions::{Regions, RegionsSpec, StageSpec};
use super::stream::Stream;
use super::trace::TraceReplay;
use super::Workload;
use crate::config::Size;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, decode_table, invalid, join, Validate};
use tiermem_core::Result;

/// Deserialized by hand (see [`WorkloadConfig::from_value`]) so that errors inside a
/// variant name their field path, which serde's internally tagged enums lose.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WorkloadConfig {
    Gups(GupsConfig),
    Kv(KvConfig),
    Stream(StreamConfig),
    Random(RandomConfig),
    Trace(TraceConfig),
    Regions(RegionsConfig),
    Pagerank(PagerankConfig),
    Kernels(KernelsConfig),
}

/// One entry of a phase schedule: from `at_s` on, these fields differ from the base.
/// (Not `deny_unknown_fields`: `changes` takes every other key by design. The merged
/// config of each phase is decoded as strictly as the base, so a misspelt field is still
/// an error naming `workload.phases[i]` and the field.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseConfig {
    /// Virtual time (s) at which the change takes effect.
    pub at_s: f64,
    /// The changed fields (any field of the workload, including `kind`).
    #[serde(flatten)]
    pub changes: toml::Table,
}

/// GUPS as in Colloid §2.1 (after HeMem's GUPS): objects chosen from a contiguous hot
/// region with `hot_probability`, otherwise from the whole buffer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GupsConfig {
    /// Buffer size (Colloid §2.1: 72 GB).
    pub working_set: Size,
    /// Size of the hot region (Colloid §2.1: 24 GB), a random contiguous region chosen by
    /// the seed.
    pub hot_set: Size,
    /// Probability an operation picks its object from the hot set (Colloid §2.1: 0.9).
    #[serde(default = "default_hot_probability")]
    pub hot_probability: f64,
    /// Object size in bytes, 64..4096 in Colloid §5.1, Fig. 8 (default 64); objects are
    /// aligned within pages.
    #[serde(default = "default_object_size")]
    pub object_size: Size,
    /// Fraction of operations that also write the object back (1.0 = Colloid's 1:1 RW).
    #[serde(default = "one")]
    pub write_fraction: f64,
    /// At this virtual time the hot set moves to a different random region (disjoint from
    /// the old one when the buffer allows; Colloid §5.2, Fig. 9, moves it at t = 100 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_set_move_at_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

/// A key-value store driven by a YCSB core workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvConfig {
    /// Number of records loaded (YCSB `recordcount`).
    pub keys: u64,
    /// Value bytes per record.
    pub value_size: Size,
    /// Key (plus item header) bytes per record, stored with the value (default 0).
    #[serde(default = "zero_size")]
    pub key_size: Size,
    /// YCSB core workload "A".."F" (see `kv.rs` for the proportions), or a read:update
    /// ratio such as "90:10".
    #[serde(default = "default_mix")]
    pub mix: String,
    /// Key popularity: "zipf" (YCSB's default), "gaussian" (memtier `--key-pattern G`),
    /// "uniform", or "hotset" (HeMemKV: `hot_fraction` of the keys get `hot_probability`).
    #[serde(default = "default_distribution")]
    pub distribution: String,
    /// Zipf exponent (YCSB `ZIPFIAN_CONSTANT` = 0.99).
    #[serde(default = "default_theta")]
    pub zipf_theta: f64,
    /// Gaussian standard deviation as a fraction of the key space (memtier's default
    /// `--key-stddev` is (max - min) / 6).
    #[serde(default = "default_stddev")]
    pub gaussian_stddev: f64,
    /// "hotset": fraction of the keys that are hot (HeMemKV, Colloid §5.3: 0.2).
    #[serde(default = "default_hot_fraction")]
    pub hot_fraction: f64,
    /// "hotset": probability an operation picks a hot key (HeMemKV: 0.9).
    #[serde(default = "default_hot_probability")]
    pub hot_probability: f64,
    /// Scatter popular keys over the key space (YCSB's scrambled Zipfian). Defaults to true
    /// for zipf, false for gaussian/uniform (memtier keys are laid out in key order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scramble: Option<bool>,
    /// Record slots for inserts (mixes D, E); inserts past it overwrite the oldest
    /// inserted slot. Default: `keys` (a full store: every insert replaces the oldest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_keys: Option<u64>,
    /// Longest scan of mix E (YCSB `maxscanlength` = 100; lengths uniform in 1..=max).
    #[serde(default = "default_scan")]
    pub max_scan_length: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

/// Sequential streaming over a buffer, wrapping at its end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    pub working_set: Size,
    /// Bytes consumed per operation (default 64: one line).
    #[serde(default = "default_object_size")]
    pub object_size: Size,
    /// Fraction of operations that write (default 0: a read stream).
    #[serde(default)]
    pub write_fraction: f64,
    /// Share of the time the program issues operations (default 1). Below 1 it idles
    /// between requests (an inference server waiting for the next one): its cores issue
    /// that share of the operations they could, so its memory traffic falls with it.
    #[serde(default = "default_busy_share")]
    pub busy_share: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

fn default_busy_share() -> f64 {
    1.0
}

/// A program's arrays and the kernels of its time step (`kernels.rs`; ICS'18's STREAM and
/// LULESH in `experiments/ics18/workloads.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelsConfig {
    /// The program, for reports.
    #[serde(default = "default_kernels_label")]
    pub label: String,
    /// OpenMP threads: each kernel's range is split into this many contiguous chunks.
    #[serde(default = "default_threads")]
    pub threads: u32,
    /// Problem sizes by name (LULESH's elements, nodes): counts, multiplied by `scale`.
    pub units: std::collections::BTreeMap<String, f64>,
    pub arrays: Vec<KernelArrayConfig>,
    /// One time step, in program order.
    pub kernels: Vec<KernelConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelArrayConfig {
    pub name: String,
    /// The `units` entry its length counts.
    pub unit: String,
    /// Items per unit (LULESH's 8 corners per element).
    #[serde(default = "default_per_unit")]
    pub per_unit: f64,
    /// Bytes of one item.
    pub bytes: u64,
    /// Allocated and freed within a time step (`alloc`/`free` of the kernels).
    #[serde(default)]
    pub temporary: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    pub name: String,
    #[serde(default)]
    pub reads: Vec<String>,
    #[serde(default)]
    pub writes: Vec<String>,
    /// Temporaries allocated before it.
    #[serde(default)]
    pub alloc: Vec<String>,
    /// Temporaries freed after it.
    #[serde(default)]
    pub free: Vec<String>,
}

fn default_kernels_label() -> String {
    "program".into()
}
fn default_threads() -> u32 {
    1
}
fn default_per_unit() -> f64 {
    1.0
}

impl KernelsConfig {
    /// Bytes mapped at the peak of a time step (`KernelsSpec::peak_bytes`).
    pub fn peak_bytes(&self, page_bytes: u64, scale: f64) -> Result<u64> {
        Ok(self.spec("workload", page_bytes, scale)?.peak_bytes())
    }

    fn spec(&self, p: &str, page_bytes: u64, scale: f64) -> Result<KernelsSpec> {
        let mut arrays = Vec::with_capacity(self.arrays.len());
        for (i, a) in self.arrays.iter().enumerate() {
            let at = format!("{p}.arrays[{i}]");
            let count = self.units.get(&a.unit).ok_or_else(|| {
                invalid(
                    &join(&at, "unit"),
                    format!(
                        "`{}` is not one of `units` ({})",
                        a.unit,
                        self.units.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            let items = (count * scale).round().max(1.0) * a.per_unit;
            arrays.push(ArraySpec {
                name: a.name.clone(),
                bytes: (items * a.bytes as f64).round().max(1.0) as u64,
                temporary: a.temporary,
            });
        }
        let index = |at: &str, names: &[String]| -> Result<Vec<usize>> {
            names
                .iter()
                .map(|n| {
                    self.arrays
                        .iter()
                        .position(|a| &a.name == n)
                        .ok_or_else(|| invalid(at, format!("`{n}` is not one of `arrays`")))
                })
                .collect()
        };
        let mut kernels = Vec::with_capacity(self.kernels.len());
        for (i, k) in self.kernels.iter().enumerate() {
            let at = format!("{p}.kernels[{i}]");
            let spec = KernelSpec {
                name: k.name.clone(),
                reads: index(&join(&at, "reads"), &k.reads)?,
                writes: index(&join(&at, "writes"), &k.writes)?,
                alloc: index(&join(&at, "alloc"), &k.alloc)?,
                free: index(&join(&at, "free"), &k.free)?,
            };
            if spec.reads.is_empty() && spec.writes.is_empty() {
                return Err(invalid(
                    &at,
                    "reads and writes nothing; a kernel sweeps at least one array",
                ));
            }
            for &a in spec.alloc.iter().chain(&spec.free) {
                if !arrays[a].temporary {
                    return Err(invalid(
                        &at,
                        format!(
                            "allocates or frees `{}`, which is not `temporary`",
                            arrays[a].name
                        ),
                    ));
                }
            }
            kernels.push(spec);
        }
        let spec = KernelsSpec {
            label: self.label.clone(),
            arrays,
            kernels,
            threads: self.threads,
            page_bytes,
        };
        let pages = spec.pages();
        if pages > MAX_SIM_PAGES {
            return Err(invalid(&join(p, "units"), format!("the arrays take {pages} pages of {page_bytes} bytes, more than the simulator handles (2^28); use smaller units, a smaller scale or a larger machine.page_size")));
        }
        Ok(spec)
    }
}

impl Validate for KernelsConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if self.threads == 0 {
            return Err(invalid(&join(p, "threads"), "must be ≥ 1"));
        }
        if self.kernels.is_empty() {
            return Err(invalid(
                &join(p, "kernels"),
                "is empty; give the kernels of one time step",
            ));
        }
        for (u, c) in &self.units {
            check_range(&join(&join(p, "units"), u), *c, 1.0, 1e15)?;
        }
        for (i, a) in self.arrays.iter().enumerate() {
            check_range(&format!("{p}.arrays[{i}].per_unit"), a.per_unit, 1e-9, 1e9)?;
            if a.bytes == 0 {
                return Err(invalid(&format!("{p}.arrays[{i}].bytes"), "must be ≥ 1"));
            }
        }
        // Names resolve and alloc/free name temporaries.
        self.spec(p, 4096, 1.0).map(|_| ())
    }
}

/// Ligra's PageRank over a directed rMat graph (`pagerank.rs`: Ligra's arrays, the dense
/// pull `edgeMap`, rMat's degree skew).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PagerankConfig {
    /// Vertices, a power of two (rMat's recursive quadrants; Ligra's `rMatGraph` rounds the
    /// n it is given up to one).
    pub vertices: u64,
    /// Edges (Ligra's `rMatGraph` default: 10 × the n it is given).
    pub edges: u64,
    /// rMat quadrant probabilities (Ligra's `rMatGraph` defaults: a = 0.5, b = c = 0.1).
    #[serde(default = "default_rmat_a")]
    pub rmat_a: f64,
    #[serde(default = "default_rmat_bc")]
    pub rmat_b: f64,
    #[serde(default = "default_rmat_bc")]
    pub rmat_c: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

fn default_rmat_a() -> f64 {
    0.5
}
fn default_rmat_bc() -> f64 {
    0.1
}

impl PagerankConfig {
    /// The graph at `scale`: vertices to the nearest power of two, edges by the same factor.
    fn spec(&self, p: &str, page_bytes: u64, scale: f64) -> Result<PagerankSpec> {
        let scaled = (self.vertices as f64 * scale).max(2.0);
        let vertices = 1u64 << (scaled.log2().round() as u32).min(40);
        let edges =
            ((self.edges as f64 * vertices as f64 / self.vertices as f64).round() as u64).max(1);
        let spec = PagerankSpec {
            vertices,
            edges,
            rmat_a: self.rmat_a,
            rmat_b: self.rmat_b,
            rmat_c: self.rmat_c,
            page_bytes,
        };
        let pages = spec.pages();
        if pages > MAX_SIM_PAGES {
            return Err(invalid(&join(p, "vertices"), format!("{vertices} vertices and {edges} edges take {pages} pages of {page_bytes} bytes, more than the simulator handles (2^28); use a smaller graph, a smaller scale or a larger machine.page_size")));
        }
        Ok(spec)
    }
}

impl Validate for PagerankConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if self.vertices < 2 || !self.vertices.is_power_of_two() {
            return Err(invalid(&join(p, "vertices"), format!("{} is not a power of two ≥ 2; rMat graphs have 2^k vertices (Ligra's rMatGraph rounds up): use e.g. {}", self.vertices, self.vertices.max(2).next_power_of_two())));
        }
        if self.edges == 0 {
            return Err(invalid(&join(p, "edges"), "must be ≥ 1"));
        }
        check_range(&join(p, "rmat_a"), self.rmat_a, 0.0, 1.0)?;
        check_range(&join(p, "rmat_b"), self.rmat_b, 0.0, 1.0)?;
        check_range(&join(p, "rmat_c"), self.rmat_c, 0.0, 1.0)?;
        let abc = self.rmat_a + self.rmat_b + self.rmat_c;
        if abc > 1.0 {
            return Err(invalid(&join(p, "rmat_c"), format!("rmat_a + rmat_b + rmat_c = {abc} exceeds 1; d = 1 − a − b − c is the fourth quadrant")));
        }
        Ok(())
    }
}

/// Uniform random objects over a buffer (XSBench-like lookups).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomConfig {
    pub working_set: Size,
    #[serde(default = "default_object_size")]
    pub object_size: Size,
    #[serde(default)]
    pub write_fraction: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

/// Spatially clustered random access with changing hot sets and alternating stages
/// (`regions.rs`): hot chunks of `chunk_size` at random places, redrawn every
/// `redraw_every_ops` operations; the stages follow each other by operation count and repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsConfig {
    pub working_set: Size,
    #[serde(default = "default_object_size")]
    pub object_size: Size,
    #[serde(default)]
    pub write_fraction: f64,
    /// At least one; several alternate (each `ops` operations long), repeating.
    pub stages: Vec<RegionsStage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

/// One stage of a `regions` workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsStage {
    /// Operations the stage lasts before the next one (0: forever; a single stage only).
    #[serde(default)]
    pub ops: f64,
    /// The unit of spatial locality: hot data comes in whole chunks of this size (a power of
    /// two, at least a page). Default 4 KiB: scattered single pages.
    #[serde(default = "default_chunk")]
    pub chunk_size: Size,
    /// Bytes of hot chunks (0: accesses uniform over the buffer).
    #[serde(default = "zero_size")]
    pub hot_set: Size,
    /// Probability an operation picks a hot page.
    #[serde(default = "default_hot_probability")]
    pub hot_probability: f64,
    /// Operations between two draws of the hot chunks (0: drawn once per stage).
    #[serde(default)]
    pub redraw_every_ops: f64,
}

fn default_chunk() -> Size {
    Size::Text("4KiB".into())
}

/// Replay of a real address trace (valgrind lackey text or tiermem binary).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    pub path: String,
    /// Start again at the first record after the last (else the workload finishes).
    #[serde(default, rename = "loop")]
    pub looping: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseConfig>,
}

fn one() -> f64 {
    1.0
}
fn default_hot_probability() -> f64 {
    0.9
}
fn default_hot_fraction() -> f64 {
    0.2
}
fn default_object_size() -> Size {
    Size::Bytes(64)
}
fn zero_size() -> Size {
    Size::Bytes(0)
}
fn default_mix() -> String {
    "A".into()
}
fn default_distribution() -> String {
    "zipf".into()
}
fn default_theta() -> f64 {
    0.99
}
fn default_stddev() -> f64 {
    1.0 / 6.0
}
fn default_scan() -> u32 {
    100
}

impl<'de> Deserialize<'de> for WorkloadConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = toml::Value::deserialize(d)?;
        WorkloadConfig::from_value(v).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl WorkloadConfig {
    /// Decode a `[workload]` table; errors name the failing field relative to it.
    pub fn from_value(v: toml::Value) -> std::result::Result<WorkloadConfig, String> {
        const KINDS: &str =
            "use kind = \"gups\", \"kv\", \"stream\", \"random\", \"regions\", \"pagerank\", \"kernels\" or \"trace\"";
        let mut t = match v {
            toml::Value::Table(t) => t,
            other => {
                return Err(format!(
                    "expected a table with a `kind`, found a {}",
                    other.type_str()
                ))
            }
        };
        let kind = match t.remove("kind") {
            Some(toml::Value::String(s)) => s,
            Some(other) => {
                return Err(format!(
                    "`kind`: expected a string, found a {}; {KINDS}",
                    other.type_str()
                ))
            }
            None => return Err(format!("missing field `kind`; {KINDS}")),
        };
        Ok(match kind.as_str() {
            "gups" => WorkloadConfig::Gups(decode_table(t)?),
            "kv" => WorkloadConfig::Kv(decode_table(t)?),
            "stream" => WorkloadConfig::Stream(decode_table(t)?),
            "random" => WorkloadConfig::Random(decode_table(t)?),
            "trace" => WorkloadConfig::Trace(decode_table(t)?),
            "regions" => WorkloadConfig::Regions(decode_table(t)?),
            "pagerank" => WorkloadConfig::Pagerank(decode_table(t)?),
            "kernels" => WorkloadConfig::Kernels(decode_table(t)?),
            other => return Err(format!("`kind`: unknown workload kind `{other}`; {KINDS}")),
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadConfig::Gups(_) => "gups",
            WorkloadConfig::Kv(_) => "kv",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Random(_) => "random",
            WorkloadConfig::Trace(_) => "trace",
            WorkloadConfig::Regions(_) => "regions",
            WorkloadConfig::Pagerank(_) => "pagerank",
            WorkloadConfig::Kernels(_) => "kernels",
        }
    }

    pub fn phases(&self) -> &[PhaseConfig] {
        match self {
            WorkloadConfig::Gups(c) => &c.phases,
            WorkloadConfig::Kv(c) => &c.phases,
            WorkloadConfig::Stream(c) => &c.phases,
            WorkloadConfig::Random(c) => &c.phases,
            WorkloadConfig::Trace(c) => &c.phases,
            WorkloadConfig::Regions(c) => &c.phases,
            WorkloadConfig::Pagerank(c) => &c.phases,
            WorkloadConfig::Kernels(c) => &c.phases,
        }
    }

    /// The full config in force during each phase (base plus the changes of phases
    /// `0..=i`), with its start time. `path` is this config's field path.
    pub fn phase_configs(&self, path: &str) -> Result<Vec<(f64, WorkloadConfig)>> {
        let mut cur = toml::Value::try_from(self)
            .map_err(|e| invalid(path, format!("cannot re-encode the workload config: {e}")))?;
        if let Some(t) = cur.as_table_mut() {
            t.remove("phases");
        }
        let mut out = Vec::new();
        let mut last_t = 0.0;
        for (i, ph) in self.phases().iter().enumerate() {
            let pp = join(path, &format!("phases[{i}]"));
            check_range(&join(&pp, "at_s"), ph.at_s, 0.0, 1e9)?;
            if ph.at_s <= last_t && i > 0 {
                return Err(invalid(&join(&pp, "at_s"), format!("{} is not after the previous phase's at_s {last_t}; list phases in time order", ph.at_s)));
            }
            last_t = ph.at_s;
            if ph.changes.contains_key("phases") {
                return Err(invalid(
                    &join(&pp, "phases"),
                    "phases cannot nest; list every change in the top-level workload.phases",
                ));
            }
            let table = cur
                .as_table_mut()
                .expect("workload config encodes as a table");
            if let Some(k) = ph.changes.get("kind") {
                if k.as_str() != table.get("kind").and_then(|v| v.as_str()) {
                    // A different kind keeps only the fields this phase gives.
                    table.retain(|key, _| key == "kind");
                }
            }
            for (k, v) in &ph.changes {
                table.insert(k.clone(), v.clone());
            }
            let cfg = WorkloadConfig::from_value(cur.clone()).map_err(|e| {
                invalid(
                    &pp,
                    format!("{e}; a phase lists `at_s` and fields of the workload kind in force"),
                )
            })?;
            cfg.validate_one(&pp)?;
            out.push((ph.at_s, cfg));
        }
        Ok(out)
    }

    fn validate_one(&self, p: &str) -> Result<()> {
        match self {
            WorkloadConfig::Gups(c) => c.validate(p),
            WorkloadConfig::Kv(c) => c.validate(p),
            WorkloadConfig::Stream(c) => {
                validate_buffer(p, &c.working_set, &c.object_size, c.write_fraction)?;
                // Above 0: a program that never runs has no rate to measure.
                check_range(&join(p, "busy_share"), c.busy_share, 1e-3, 1.0)
            }
            WorkloadConfig::Random(c) => {
                validate_buffer(p, &c.working_set, &c.object_size, c.write_fraction)
            }
            WorkloadConfig::Regions(c) => c.validate(p),
            WorkloadConfig::Pagerank(c) => c.validate(p),
            WorkloadConfig::Kernels(c) => c.validate(p),
            WorkloadConfig::Trace(c) => {
                if c.path.trim().is_empty() {
                    return Err(invalid(
                        &join(p, "path"),
                        "is empty; give the trace file (lackey text or tiermem binary)",
                    ));
                }
                Ok(())
            }
        }
    }
}

impl Validate for WorkloadConfig {
    fn validate(&self, p: &str) -> Result<()> {
        self.validate_one(p)?;
        self.phase_configs(p)?;
        Ok(())
    }
}

fn positive_size(path: &str, s: &Size) -> Result<u64> {
    let b = s.bytes(path)?;
    if b == 0 {
        return Err(invalid(
            path,
            "must be > 0; write e.g. \"64\", \"4K\" or \"72G\"",
        ));
    }
    Ok(b)
}

fn validate_buffer(p: &str, ws: &Size, obj: &Size, wf: f64) -> Result<()> {
    positive_size(&join(p, "working_set"), ws)?;
    positive_size(&join(p, "object_size"), obj)?;
    check_range(&join(p, "write_fraction"), wf, 0.0, 1.0)
}

impl Validate for GupsConfig {
    fn validate(&self, p: &str) -> Result<()> {
        let ws = positive_size(&join(p, "working_set"), &self.working_set)?;
        let hot = self.hot_set.bytes(&join(p, "hot_set"))?;
        if hot > ws {
            return Err(invalid(&join(p, "hot_set"), format!("{hot} bytes is larger than working_set ({ws} bytes); the hot set is a region of the buffer")));
        }
        check_range(&join(p, "hot_probability"), self.hot_probability, 0.0, 1.0)?;
        positive_size(&join(p, "object_size"), &self.object_size)?;
        check_range(&join(p, "write_fraction"), self.write_fraction, 0.0, 1.0)?;
        if let Some(t) = self.hot_set_move_at_s {
            check_range(&join(p, "hot_set_move_at_s"), t, 0.0, 1e9)?;
        }
        Ok(())
    }
}

impl Validate for RegionsConfig {
    fn validate(&self, p: &str) -> Result<()> {
        let ws = positive_size(&join(p, "working_set"), &self.working_set)?;
        positive_size(&join(p, "object_size"), &self.object_size)?;
        check_range(&join(p, "write_fraction"), self.write_fraction, 0.0, 1.0)?;
        if self.stages.is_empty() {
            return Err(invalid(
                &join(p, "stages"),
                "is empty; give at least one `[[workload.stages]]` (chunk_size, hot_set, hot_probability)",
            ));
        }
        let several = self.stages.len() > 1;
        for (i, st) in self.stages.iter().enumerate() {
            let sp = join(p, &format!("stages[{i}]"));
            let chunk = positive_size(&join(&sp, "chunk_size"), &st.chunk_size)?;
            if !chunk.is_power_of_two() {
                return Err(invalid(
                    &join(&sp, "chunk_size"),
                    format!("{chunk} bytes is not a power of two; write e.g. \"4KiB\", \"64KiB\" or \"2MiB\""),
                ));
            }
            let hot = st.hot_set.bytes(&join(&sp, "hot_set"))?;
            if hot > ws {
                return Err(invalid(
                    &join(&sp, "hot_set"),
                    format!("{hot} bytes is larger than working_set ({ws} bytes)"),
                ));
            }
            check_range(&join(&sp, "hot_probability"), st.hot_probability, 0.0, 1.0)?;
            check_range(&join(&sp, "ops"), st.ops, 0.0, 1e18)?;
            check_range(
                &join(&sp, "redraw_every_ops"),
                st.redraw_every_ops,
                0.0,
                1e18,
            )?;
            if several && st.ops <= 0.0 {
                return Err(invalid(
                    &join(&sp, "ops"),
                    "must be > 0 when there are several stages (they alternate by operation count)",
                ));
            }
        }
        Ok(())
    }
}

impl Validate for KvConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if self.keys == 0 || self.keys > u32::MAX as u64 / 2 {
            return Err(invalid(
                &join(p, "keys"),
                format!(
                    "{} is out of range; give between 1 and {} records",
                    self.keys,
                    u32::MAX / 2
                ),
            ));
        }
        positive_size(&join(p, "value_size"), &self.value_size)?;
        self.key_size.bytes(&join(p, "key_size"))?;
        Mix::parse(&self.mix).map_err(|e| invalid(&join(p, "mix"), e))?;
        match self.distribution.as_str() {
            "zipf" => check_range(&join(p, "zipf_theta"), self.zipf_theta, 0.0, 10.0)?,
            "gaussian" => {
                check_range(&join(p, "gaussian_stddev"), self.gaussian_stddev, 1e-9, 1e3)?
            }
            "uniform" => {}
            "hotset" => {
                check_range(&join(p, "hot_fraction"), self.hot_fraction, 1e-9, 1.0)?;
                check_range(&join(p, "hot_probability"), self.hot_probability, 0.0, 1.0)?;
            }
            other => {
                return Err(invalid(&join(p, "distribution"), format!("`{other}` is not a key distribution; use \"zipf\", \"gaussian\", \"uniform\" or \"hotset\"")));
            }
        }
        if let Some(m) = self.max_keys {
            if m < self.keys || m > u32::MAX as u64 / 2 {
                return Err(invalid(
                    &join(p, "max_keys"),
                    format!(
                        "{m} must be at least keys ({}) and at most {}",
                        self.keys,
                        u32::MAX / 2
                    ),
                ));
            }
        }
        if self.max_scan_length == 0 {
            return Err(invalid(
                &join(p, "max_scan_length"),
                "must be ≥ 1 (YCSB's default is 100)",
            ));
        }
        Ok(())
    }
}

/// Build the workload a config describes.
///
/// `page_bytes` is the machine's page size; the page space is `0..page_count()` of that
/// size. `scale` multiplies every footprint (GUPS working set and hot set, the key count
/// of a key-value store, stream and random buffers) and `seed` fixes every random choice
/// made here (hot-set placement, key scrambling).
///
/// Why scaling preserves results: the machine multiplies every tier capacity by the same
/// `scale`, so the ratios that decide placement — hot set : working set : default-tier
/// capacity — are unchanged, and each page's access probability relative to the tier
/// capacities is unchanged too (a page of a hot set of H pages has probability
/// `p/H + (1-p)/N`; scaling H, N and the capacities together scales every page's
/// probability by 1/scale and the pages a tier holds by scale, so the *mass* per tier —
/// what sets bandwidth and latency — is the same). Per-operation shape (object size, lines
/// per op, read/write mix) is not scaled, so throughput per core is the same. What does
/// change is the number of pages a policy has to find and move (fewer, so migration at a
/// scaled rate takes the same time) — the simulator scales migration/scan rates alongside.
/// One caveat: Zipf popularity is not scale-free in the key count — the mass of the
/// hottest fraction f of N keys is `H_{fN,θ} / H_{N,θ}`, which for θ = 0.99 drifts by
/// about one percentage point per decade of N (f = 1/3: 0.930 at N = 15 M, 0.921 at
/// 1.5 M). Gaussian and uniform key popularity, GUPS, stream and random are exact.
/// Traces are real address streams and cannot be scaled: `kind = "trace"` requires
/// `scale = 1`.
pub fn build(
    cfg: &WorkloadConfig,
    page_bytes: u64,
    scale: f64,
    seed: u64,
) -> Result<Box<dyn Workload>> {
    let path = "workload";
    cfg.validate_one(path)?;
    if !(scale.is_finite() && scale > 0.0) {
        return Err(invalid(
            "scale",
            format!("{scale} must be a positive number"),
        ));
    }
    if page_bytes == 0 || !page_bytes.is_power_of_two() {
        return Err(invalid(
            "machine.page_size",
            format!("{page_bytes} is not a power of two"),
        ));
    }
    let base = build_one(cfg, path, page_bytes, scale, seed)?;
    let phases = cfg.phase_configs(path)?;
    if phases.is_empty() {
        return Ok(base);
    }
    let mut parts = vec![(0u64, base)];
    for (i, (at_s, pc)) in phases.into_iter().enumerate() {
        let w = build_one(
            &pc,
            &join(path, &format!("phases[{i}]")),
            page_bytes,
            scale,
            seed,
        )?;
        parts.push(((at_s * 1e9).round() as u64, w));
    }
    Ok(Box::new(Phased::new(parts)))
}

impl WorkloadConfig {
    /// Pages the workload occupies on a machine with `page_bytes` pages at `scale` (the
    /// largest over its phases), checking every size against the page size and the
    /// simulator's page space with the arithmetic `build` uses. `None` for a trace (its
    /// footprint is known once it is read).
    pub fn footprint_pages(&self, path: &str, page_bytes: u64, scale: f64) -> Result<Option<u64>> {
        let mut most = one_footprint(self, path, page_bytes, scale)?;
        for (i, (_, pc)) in self.phase_configs(path)?.iter().enumerate() {
            let pp = join(path, &format!("phases[{i}]"));
            if let Some(n) = one_footprint(pc, &pp, page_bytes, scale)? {
                most = Some(most.map_or(n, |m| m.max(n)));
            }
        }
        Ok(most)
    }
}

fn one_footprint(
    cfg: &WorkloadConfig,
    p: &str,
    page_bytes: u64,
    scale: f64,
) -> Result<Option<u64>> {
    Ok(Some(match cfg {
        WorkloadConfig::Gups(c) => {
            object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?;
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)? as u64
        }
        WorkloadConfig::Stream(StreamConfig {
            working_set,
            object_size,
            ..
        })
        | WorkloadConfig::Random(RandomConfig {
            working_set,
            object_size,
            ..
        }) => {
            object_bytes(&join(p, "object_size"), object_size, page_bytes)?;
            let ws = working_set.bytes(&join(p, "working_set"))?;
            scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)? as u64
        }
        WorkloadConfig::Kv(c) => kv_pages(c, p, page_bytes, scale)?,
        WorkloadConfig::Pagerank(c) => c.spec(p, page_bytes, scale)?.pages(),
        WorkloadConfig::Kernels(c) => c.spec(p, page_bytes, scale)?.pages(),
        WorkloadConfig::Regions(c) => {
            object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?;
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)? as u64
        }
        WorkloadConfig::Trace(_) => {
            if (scale - 1.0).abs() > 1e-12 {
                return Err(invalid("scale", format!("{scale}: a trace is a real address stream and cannot be scaled; set scale = 1 (or drop it) when {p}.kind = \"trace\"")));
            }
            return Ok(None);
        }
    }))
}

/// The pages a key-value store occupies, as `Kv::new` lays it out, with checked arithmetic.
fn kv_pages(c: &KvConfig, p: &str, page_bytes: u64, scale: f64) -> Result<u64> {
    let value = c.value_size.bytes(&join(p, "value_size"))?;
    let key = c.key_size.bytes(&join(p, "key_size"))?;
    let too_big = |what: String| {
        invalid(
            &join(p, "value_size"),
            format!("{what} exceeds the pages the simulator handles (2^28 of {page_bytes} bytes; it keeps state per page); use smaller records, fewer keys, a smaller scale or a larger machine.page_size"),
        )
    };
    let rec = value
        .checked_add(key)
        .ok_or_else(|| too_big(format!("value_size + key_size ({value} + {key} bytes)")))?
        .max(1);
    let keys = ((c.keys as f64 * scale).round() as u64).max(1);
    let slots = c
        .max_keys
        .map(|m| ((m as f64 * scale).round() as u64).max(keys))
        .unwrap_or(keys);
    let pages = if rec <= page_bytes {
        slots.div_ceil(page_bytes / rec)
    } else {
        rec.div_ceil(page_bytes)
            .checked_mul(slots)
            .ok_or_else(|| too_big(format!("{slots} records of {rec} bytes")))?
    };
    if pages > MAX_SIM_PAGES {
        return Err(too_big(format!(
            "{slots} records of {rec} bytes ({pages} pages)"
        )));
    }
    Ok(pages)
}

/// Most pages a workload may span: the simulator keeps per-page state (placement, access
/// probability, tracker counters), a few GiB at 2^28 pages; 72 GiB at 4 KiB pages is 2^24.5.
pub const MAX_SIM_PAGES: u64 = 1 << 28;

/// Footprint in pages after scaling: `ceil(bytes · scale / page_bytes)`, at least 1.
fn scaled_pages(path: &str, bytes: u64, scale: f64, page_bytes: u64) -> Result<u32> {
    let pages = (bytes as f64 * scale / page_bytes as f64).ceil().max(1.0);
    if pages > MAX_SIM_PAGES as f64 {
        return Err(invalid(path, format!("{pages} pages of {page_bytes} bytes is more than the simulator handles (2^28 pages: it keeps state per page, several GiB at that count); use a larger machine.page_size or a smaller scale")));
    }
    Ok(pages as u32)
}

fn object_bytes(path: &str, s: &Size, page_bytes: u64) -> Result<u64> {
    let b = positive_size(path, s)?;
    if b > page_bytes {
        return Err(invalid(path, format!("{b} bytes exceeds machine.page_size ({page_bytes}); objects are aligned within pages: use at most the page size")));
    }
    Ok(b)
}

fn build_one(
    cfg: &WorkloadConfig,
    p: &str,
    page_bytes: u64,
    scale: f64,
    seed: u64,
) -> Result<Box<dyn Workload>> {
    Ok(match cfg {
        WorkloadConfig::Gups(c) => {
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            let hot = c.hot_set.bytes(&join(p, "hot_set"))?;
            let pages = scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)?;
            let hot_pages = if hot == 0 {
                0
            } else {
                ((hot as f64 * scale / page_bytes as f64).round().max(1.0) as u32).min(pages)
            };
            Box::new(Gups::new(&GupsSpec {
                pages,
                hot_pages,
                hot_probability: c.hot_probability,
                object_bytes: object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?,
                page_bytes,
                write_fraction: c.write_fraction,
                move_at_ns: c.hot_set_move_at_s.map(|s| (s * 1e9).round() as u64),
                seed,
            }))
        }
        WorkloadConfig::Kv(c) => {
            let value = c.value_size.bytes(&join(p, "value_size"))?;
            let key = c.key_size.bytes(&join(p, "key_size"))?;
            let keys = ((c.keys as f64 * scale).round() as u64).max(1);
            let max_keys = c
                .max_keys
                .map(|m| ((m as f64 * scale).round() as u64).max(keys))
                .unwrap_or(keys);
            let dist = match c.distribution.as_str() {
                "zipf" => KeyDist::Zipf {
                    theta: c.zipf_theta,
                },
                "gaussian" => KeyDist::Gaussian {
                    stddev_fraction: c.gaussian_stddev,
                },
                "hotset" => KeyDist::HotSet {
                    hot_fraction: c.hot_fraction,
                    hot_probability: c.hot_probability,
                },
                _ => KeyDist::Uniform,
            };
            let spec = KvSpec {
                keys: keys as u32,
                max_keys: max_keys as u32,
                record_bytes: value + key,
                page_bytes,
                mix: Mix::parse(&c.mix).map_err(|e| invalid(&join(p, "mix"), e))?,
                scramble: c.scramble.unwrap_or(matches!(dist, KeyDist::Zipf { .. })),
                dist,
                max_scan_length: c.max_scan_length,
                seed,
            };
            Box::new(Kv::new(&spec).map_err(|e| invalid(p, e))?)
        }
        WorkloadConfig::Stream(c) => {
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            let pages = scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)?;
            let obj = object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?;
            Box::new(Stream::new(pages, page_bytes, obj, c.write_fraction).busy(c.busy_share))
        }
        WorkloadConfig::Random(c) => {
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            let pages = scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)?;
            let obj = object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?;
            Box::new(RandomUniform::new(pages, obj, c.write_fraction))
        }
        WorkloadConfig::Regions(c) => {
            let ws = c.working_set.bytes(&join(p, "working_set"))?;
            let pages = scaled_pages(&join(p, "working_set"), ws, scale, page_bytes)?;
            let mut stages = Vec::new();
            for (i, st) in c.stages.iter().enumerate() {
                let sp = join(p, &format!("stages[{i}]"));
                let chunk = st.chunk_size.bytes(&join(&sp, "chunk_size"))?;
                if chunk < page_bytes {
                    return Err(invalid(&join(&sp, "chunk_size"), format!("{chunk} bytes is less than machine.page_size ({page_bytes}); a chunk is whole pages")));
                }
                let chunk_pages = ((chunk / page_bytes) as u32).min(pages);
                let hot = st.hot_set.bytes(&join(&sp, "hot_set"))?;
                let hot_chunks = if hot == 0 {
                    0
                } else {
                    ((hot as f64 * scale / chunk as f64).round().max(1.0) as u32)
                        .min(pages / chunk_pages.max(1))
                };
                // Operation counts scale with the footprint: each page sees as many
                // accesses per hot period as at full size (regions.rs, "Scaling").
                stages.push(StageSpec {
                    ops: st.ops * scale,
                    chunk_pages,
                    hot_chunks,
                    hot_probability: st.hot_probability,
                    redraw_every_ops: st.redraw_every_ops * scale,
                });
            }
            Box::new(Regions::new(RegionsSpec {
                pages,
                page_bytes,
                object_bytes: object_bytes(&join(p, "object_size"), &c.object_size, page_bytes)?,
                write_fraction: c.write_fraction,
                stages,
                seed,
            }))
        }
        WorkloadConfig::Pagerank(c) => Box::new(Pagerank::new(c.spec(p, page_bytes, scale)?)),
        WorkloadConfig::Kernels(c) => Box::new(Kernels::new(c.spec(p, page_bytes, scale)?)),
        WorkloadConfig::Trace(c) => {
            if (scale - 1.0).abs() > 1e-12 {
                return Err(invalid("scale", format!("{scale}: a trace is a real address stream and cannot be scaled; set scale = 1 (or drop it) when {p}.kind = \"trace\"")));
            }
            Box::new(TraceReplay::open(
                std::path::Path::new(&c.path),
                page_bytes,
                c.looping,
            )?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WorkloadConfig> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Top {
            workload: WorkloadConfig,
        }
        let t: Top = tiermem_core::config::from_toml_str(text, "w.toml")?;
        t.workload.validate("workload")?;
        Ok(t.workload)
    }

    #[test]
    fn pagerank_errors_name_the_field() {
        let e =
            parse("[workload]\nkind = \"pagerank\"\nvertices = 1000\nedges = 10\n").unwrap_err();
        assert!(
            e.to_string().contains("workload.vertices") && e.to_string().contains("1024"),
            "{e}"
        );
        let e = parse("[workload]\nkind = \"pagerank\"\nvertices = 1024\nedges = 0\n").unwrap_err();
        assert!(e.to_string().contains("workload.edges"), "{e}");
        let e = parse("[workload]\nkind = \"pagerank\"\nvertices = 1024\nedges = 9\nrmat_a = 0.9\nrmat_b = 0.1\nrmat_c = 0.1\n").unwrap_err();
        assert!(
            e.to_string().contains("rmat_c") && e.to_string().contains("exceeds 1"),
            "{e}"
        );
        let w = parse("[workload]\nkind = \"pagerank\"\nvertices = 1024\nedges = 7450\n").unwrap();
        // Scaled by 1/4: 256 vertices, a quarter of the edges; footprint as built.
        let pages = w.footprint_pages("workload", 4096, 0.25).unwrap().unwrap();
        let built = build(&w, 4096, 0.25, 1).unwrap();
        assert_eq!(built.page_count() as u64, pages);
        assert!(
            built.name().contains("2^8 vertices, 1863 edges"),
            "{}",
            built.name()
        );
    }

    #[test]
    fn gups_example_parses_with_defaults() {
        let w = parse("[workload]\nkind = \"gups\"\nworking_set = \"72G\"\nhot_set = \"24G\"\n")
            .unwrap();
        match w {
            WorkloadConfig::Gups(g) => {
                assert_eq!(g.hot_probability, 0.9);
                assert_eq!(g.object_size, Size::Bytes(64));
                assert_eq!(g.write_fraction, 1.0);
            }
            _ => panic!("not gups"),
        }
    }

    #[test]
    fn unknown_field_is_named() {
        let e = parse("[workload]\nkind = \"gups\"\nworking_set = \"72G\"\nhot_sett = \"24G\"\n")
            .unwrap_err();
        assert!(e.to_string().contains("hot_sett"), "{e}");
        let e = parse("[workload]\nkind = \"gupz\"\nworking_set = \"72G\"\n").unwrap_err();
        assert!(e.to_string().contains("gupz"), "{e}");
    }

    #[test]
    fn invalid_values_name_path_and_fix() {
        let e = parse("[workload]\nkind = \"gups\"\nworking_set = \"1G\"\nhot_set = \"2G\"\n")
            .unwrap_err();
        assert!(e.to_string().contains("workload.hot_set"), "{e}");
        let e = parse("[workload]\nkind = \"kv\"\nkeys = 10\nvalue_size = 100\nmix = \"G\"\n")
            .unwrap_err();
        assert!(
            e.to_string().contains("workload.mix") && e.to_string().contains("\"A\""),
            "{e}"
        );
        let e = parse("[workload]\nkind = \"random\"\nworking_set = \"1G\"\nwrite_fraction = 2\n")
            .unwrap_err();
        assert!(e.to_string().contains("workload.write_fraction"), "{e}");
    }

    #[test]
    fn phases_accumulate_and_are_strict() {
        let base = "[workload]\nkind = \"gups\"\nworking_set = \"1G\"\nhot_set = \"256M\"\n";
        let w = parse(&format!("{base}[[workload.phases]]\nat_s = 1\nhot_probability = 0.5\n[[workload.phases]]\nat_s = 2\nobject_size = 128\n")).unwrap();
        let ph = w.phase_configs("workload").unwrap();
        match &ph[1].1 {
            WorkloadConfig::Gups(g) => {
                assert_eq!(g.hot_probability, 0.5);
                assert_eq!(g.object_size, Size::Bytes(128));
            }
            _ => panic!(),
        }
        let e = parse(&format!(
            "{base}[[workload.phases]]\nat_s = 1\nhot_probabilty = 0.5\n"
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("workload.phases[0]")
                && e.to_string().contains("hot_probabilty"),
            "{e}"
        );
        let e = parse(&format!("{base}[[workload.phases]]\nat_s = 2\nhot_probability = 0.5\n[[workload.phases]]\nat_s = 1\nhot_probability = 0.6\n")).unwrap_err();
        assert!(e.to_string().contains("phases[1].at_s"), "{e}");
        // Switching kind keeps only the new phase's fields.
        let w = parse(&format!(
            "{base}[[workload.phases]]\nat_s = 1\nkind = \"stream\"\nworking_set = \"1G\"\n"
        ))
        .unwrap();
        assert_eq!(w.phase_configs("workload").unwrap()[0].1.kind(), "stream");
    }

    #[test]
    fn every_kind_round_trips_through_toml() {
        let examples = [
            "kind = \"gups\"\nworking_set = \"72G\"\nhot_set = \"24G\"\nhot_set_move_at_s = 100\n[[workload.phases]]\nat_s = 5\nhot_probability = 0.5",
            "kind = \"kv\"\nkeys = 10000000\nvalue_size = \"1K\"\nmix = \"D\"\ndistribution = \"zipf\"\nmax_keys = 12000000",
            "kind = \"kv\"\nkeys = 1000\nvalue_size = 100\nmix = \"C\"\ndistribution = \"gaussian\"\ngaussian_stddev = 0.1\nscramble = true",
            "kind = \"stream\"\nworking_set = \"8G\"\nobject_size = 256\nwrite_fraction = 0.5",
            "kind = \"random\"\nworking_set = 5368709120",
            "kind = \"trace\"\npath = \"traces/app.tmt\"\nloop = true",
            "kind = \"pagerank\"\nvertices = 1024\nedges = 7450\nrmat_a = 0.57",
            "kind = \"regions\"\nworking_set = \"761MiB\"\n[[workload.stages]]\nops = 4e7\nchunk_size = \"64KiB\"\nhot_set = \"128MiB\"\nredraw_every_ops = 2e7\n[[workload.stages]]\nops = 1e6\nchunk_size = \"4KiB\"",
        ];
        for e in examples {
            let w = parse(&format!("[workload]\n{e}\n")).unwrap();
            let v = toml::Value::try_from(&w).unwrap();
            assert_eq!(WorkloadConfig::from_value(v).unwrap(), w, "{e}");
            let json = serde_json::to_string(&w).unwrap();
            assert!(
                json.contains(&format!("\"kind\":\"{}\"", w.kind())),
                "{json}"
            );
        }
    }

    #[test]
    fn scaled_build_keeps_ratios() {
        let w = parse("[workload]\nkind = \"gups\"\nworking_set = \"72G\"\nhot_set = \"24G\"\n")
            .unwrap();
        let full = build(&w, 2 << 20, 1.0, 7).unwrap();
        let tenth = build(&w, 2 << 20, 0.1, 7).unwrap();
        assert_eq!(full.page_count(), 36864);
        assert_eq!(tenth.page_count(), 3687);
        let hf = full.hot_pages().unwrap().len() as f64 / full.page_count() as f64;
        let ht = tenth.hot_pages().unwrap().len() as f64 / tenth.page_count() as f64;
        assert!((hf - ht).abs() < 1e-3, "{hf} vs {ht}");
        let big = parse("[workload]\nkind = \"gups\"\nworking_set = \"1G\"\nhot_set = 0\nobject_size = \"8K\"\n").unwrap();
        let e = build(&big, 4096, 1.0, 7).err().unwrap();
        assert!(
            e.to_string().contains("workload.object_size") && e.to_string().contains("page_size"),
            "{e}"
        );
    }
}
