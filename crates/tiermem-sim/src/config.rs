//! The simulation config: one TOML schema, strict (unknown fields are errors naming
//! their full path). `examples/sim.toml` documents every field.

use crate::latency::Curve;
use crate::workload::config::WorkloadConfig;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_positive, check_range, invalid, join, Validate};
use tiermem_core::tier::{validate_tiers, TierBackend};
use tiermem_core::Result;
use tiermem_policies::colloid::ColloidParams;
use tiermem_policies::PolicyConfig;

pub use tiermem_core::Size;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed for every random draw: same config + seed = same numbers.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Virtual seconds to simulate.
    pub duration_s: f64,
    /// Multiplies every footprint and tier capacity (and migration/scan rates), so a 72 GiB
    /// experiment runs at 7.2 GiB with the same ratios; see docs/simulator.md.
    #[serde(default = "one")]
    pub scale: f64,
    /// Each simulated access stands for this many real ones.
    #[serde(default = "default_sample")]
    pub accesses_per_sample: f64,
    /// Resolution of the time series.
    #[serde(default = "default_record_ms")]
    pub record_interval_ms: f64,
    /// Longest span solved with one fixed point.
    #[serde(default = "default_epoch_ms")]
    pub epoch_ms: f64,
    /// The summary's steady-state numbers average the last fraction of the run.
    #[serde(default = "default_steady")]
    pub steady_state_fraction: f64,
    /// Where pages start: "first-touch" (fill tiers in order), "tier:N" (all in tier N,
    /// capacity permitting), "random".
    #[serde(default = "default_initial")]
    pub initial_placement: String,
    /// A fixed amount of work: stop once the application has completed this many operations
    /// (all tenants together). The summary's `completion_time_s` is when it did (interpolated
    /// within the epoch); `duration_s` still bounds the run. Unset: run for `duration_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_after_ops: Option<f64>,
    pub machine: MachineConfig,
    #[serde(default)]
    pub antagonist: Vec<AntagonistConfig>,
    /// The one tenant's workload, on all `machine.app_cores`. Exactly one of `workload`
    /// and `[[tenants]]` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadConfig>,
    /// Tenants sharing the machine, each a span of the page space (in this order) with its
    /// own workload and cores; instead of the top-level `workload`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantConfig>,
    /// With compressed tiers: what each page compresses to (required then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_compressibility: Option<crate::compressed::CompressibilityConfig>,
    pub policy: PolicyConfig,
    /// Layer Colloid (latency balancing) over the policy: present = enabled.
    pub colloid: Option<ColloidParams>,
    #[serde(default)]
    pub engine: EngineConfig,
    /// A controller over the tenants (`controller = "mercury"`): per-tenant SLOs and
    /// priorities, enforced with default-tier limits and CPU shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<tiermem_policies::mercury::ControllerConfig>,
}

/// One `[[tenants]]` entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// Unique, non-empty; names the tenant in plans, snapshots and the summary.
    pub name: String,
    /// Application cores this tenant runs on (the tenants' sum at most `machine.app_cores`).
    pub cores: f64,
    pub workload: WorkloadConfig,
}

/// One tenant as the backend builds it: its config path (for errors), name, cores and
/// workload.
pub struct TenantRun<'a> {
    pub path: String,
    /// `None`: the workload's own name.
    pub name: Option<&'a str>,
    pub cores: f64,
    pub workload: &'a WorkloadConfig,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Global cap on migration bandwidth (GB/s), on top of the policy's own limit.
    pub migration_limit_gbps: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    /// Page (migration unit) size, e.g. "4K" or "2M".
    pub page_size: Size,
    pub app_cores: f64,
    /// Independent operations each app core keeps in flight.
    pub ops_in_flight: f64,
    /// Max outstanding cache-line misses per core (LFBs + prefetch).
    pub mlp_lines: f64,
    #[serde(default)]
    pub compute_ns_per_op: f64,
    /// Outstanding lines per antagonist core.
    #[serde(default = "default_ant_mlp")]
    pub antagonist_mlp: f64,
    /// Relative noise (standard deviation) on the occupancy/rate telemetry.
    #[serde(default)]
    pub telemetry_noise: f64,
    /// Inter-tier interference (Mercury §2.2.2, Fig. 3): the share of each lower memory
    /// tier's queueing delay (loaded minus unloaded latency) that a default-tier request
    /// waits as well, behind that tier's requests in the shared request queues. 0 (default)
    /// = independent tiers, as the Colloid reproductions assume (their alternate tier is a
    /// remote socket behind UPI, not a CXL expander on the same request queues); the
    /// Mercury machine fits it to Fig. 2 (docs/simulator.md).
    #[serde(default)]
    pub inter_tier_coupling: f64,
    pub tiers: Vec<TierConfig>,
    #[serde(default)]
    pub migration: MigrationConfig,
    /// Fixed cost of a fault on a page in a compressed tier, before its decompression
    /// (HeMem's simulator charges 2 µs per page fault); a tier's measured `fault_ns`
    /// replaces both.
    #[serde(default = "default_fault_ns")]
    pub compressed_fault_ns: f64,
}

/// A tier of the simulated machine: core's one tier schema (`tiermem_core::tier`),
/// validated for the simulator (kinds "dram" and "node"; capacity, latency, bandwidth and
/// curve required).
pub use tiermem_core::tier::TierConfig;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationConfig {
    /// Fixed CPU cost per migrated page on the migration thread: fault + unmap + TLB
    /// shootdown (HeMem's simulator: 2 µs fault + 4 µs shootdown; ICS'18 measured ~13 µs).
    #[serde(default = "default_per_page_ns")]
    pub per_page_ns: f64,
    /// Copy speed of one migration thread, GB/s.
    #[serde(default = "default_copy_gbps")]
    pub copy_gbps: f64,
    #[serde(default = "one")]
    pub threads: f64,
    /// App-core stall per TLB shootdown (the IPI's receipt, invalidation, ack), ns:
    /// `shootdowns_per_operation` per move, whatever its size (ICS'18 §3: one shootdown
    /// invalidates a whole virtually contiguous range).
    #[serde(default = "default_shootdown_ns")]
    pub shootdown_ns: f64,
    /// Time the migrating thread waits for each operation's TLB shootdown to complete (the
    /// initiator's side: IPIs out, every acknowledgement back; ICS'18 §2.2 cites 13.2 µs),
    /// added to its cost of every operation. Default 0: `per_page_ns` includes it.
    #[serde(default)]
    pub shootdown_wait_ns: f64,
    /// TLB shootdowns per migration operation: both `shootdown_wait_ns` (the thread's
    /// wait) and `shootdown_ns` (each app core's interrupt) are paid this many times per
    /// move. Default 1; ICS'18's kernel does 2 (footnote 3: "the number of TLB shootdowns
    /// are exactly twice the number of migrations").
    #[serde(default = "one")]
    pub shootdowns_per_operation: f64,
    /// Moves of at least this size are shot down with a full flush of the receiving
    /// cores' TLBs instead of per-page invalidations (ICS'18 §5: for 2 MB "it writes to the
    /// local core's cr3 register", flushing every user entry). Unset: never.
    #[serde(default)]
    pub full_flush_from: Option<Size>,
    /// With `full_flush_from`: each app core's cost of refilling its TLB after one full
    /// flush (the entries of other pages destroyed and walked again), ns, paid per
    /// shootdown of such a move on top of `shootdown_ns`.
    #[serde(default)]
    pub full_flush_refill_ns: f64,
    /// The copy runs at `copy_gbps` between the fastest tiers and proportionally slower to
    /// or from a slower one: its time is multiplied by the higher unloaded latency of the
    /// two tiers over the fastest tier's (ICS'18 §5: "the data copy latency is scaled in
    /// proportion to the ratio of the fast to slow memory latency"). Default off.
    #[serde(default)]
    pub copy_scales_with_latency: bool,
    /// The application waits for every migration operation: its cores stall for the whole
    /// operation (`per_page_ns` + `shootdown_wait_ns` + the copy) instead of only
    /// `shootdown_ns`, the wait carried into later quanta when it is longer than one, and
    /// the threads' time no longer bounds how much moves per quantum (ICS'18 §5, Fig. 7: the
    /// projected runtime adds every migration's shootdown and copy time). Default off:
    /// migration threads copy alongside the application.
    #[serde(default)]
    pub synchronous: bool,
    /// The migration threads run on the application's cores: their time on each
    /// operation (software, shootdown wait, copy) is taken from the cores of the tenant
    /// whose pages moved, one core per busy thread, carried into later quanta when it is
    /// longer than one. Default off: the threads have cores of their own.
    #[serde(default)]
    pub threads_on_app_cores: bool,
    /// With `threads_on_app_cores`: the application's runnable threads on those cores. The
    /// scheduler gives every runnable thread an equal share (CFS, equal weights), so a
    /// migration thread runs `app cores / (app_threads + threads)` of a core. Default: one
    /// application thread per core.
    #[serde(default)]
    pub app_threads: Option<f64>,
}

impl Default for MigrationConfig {
    fn default() -> Self {
        MigrationConfig {
            per_page_ns: default_per_page_ns(),
            copy_gbps: default_copy_gbps(),
            threads: 1.0,
            shootdown_ns: default_shootdown_ns(),
            shootdown_wait_ns: 0.0,
            shootdowns_per_operation: 1.0,
            full_flush_from: None,
            full_flush_refill_ns: 0.0,
            copy_scales_with_latency: false,
            synchronous: false,
            threads_on_app_cores: false,
            app_threads: None,
        }
    }
}

/// Antagonist cores streaming 1:1 read/write traffic to one tier during [start_s, end_s).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AntagonistConfig {
    pub tier: usize,
    pub cores: f64,
    #[serde(default)]
    pub start_s: f64,
    pub end_s: Option<f64>,
}

fn default_seed() -> u64 {
    1
}
fn one() -> f64 {
    1.0
}
fn default_sample() -> f64 {
    1000.0
}
fn default_record_ms() -> f64 {
    100.0
}
fn default_epoch_ms() -> f64 {
    10.0
}
fn default_steady() -> f64 {
    0.25
}
fn default_initial() -> String {
    "first-touch".into()
}
fn default_ant_mlp() -> f64 {
    22.0
}
fn default_per_page_ns() -> f64 {
    6000.0
}
fn default_copy_gbps() -> f64 {
    8.0
}
fn default_shootdown_ns() -> f64 {
    4000.0
}
fn default_fault_ns() -> f64 {
    2000.0
}

/// Whether a tier is compressed (`kind = "compressed"`).
pub fn is_compressed(t: &TierConfig) -> bool {
    t.kind == "compressed"
}

/// A simulated tier's capacity in bytes (required: [`validate_tiers`] checks it is there).
pub fn tier_capacity(t: &TierConfig, path: &str) -> Result<u64> {
    match &t.capacity {
        Some(c) => c.bytes(path),
        None => Err(invalid(
            path,
            "missing; the simulator needs it: add e.g. `capacity = \"64GiB\"`",
        )),
    }
}

impl SimConfig {
    pub fn from_toml(text: &str, origin: &str) -> Result<SimConfig> {
        let cfg: SimConfig = tiermem_core::config::from_toml_str(text, origin)?;
        cfg.validate("")
            .map_err(|e| e.context(origin.to_string()))?;
        Ok(cfg)
    }

    /// The tenants in page-space order: the `[[tenants]]` entries, or the top-level
    /// `workload` as the one tenant on all `machine.app_cores`. Errors (config, naming the
    /// fields) when both or neither are given.
    pub fn tenant_runs(&self) -> Result<Vec<TenantRun<'_>>> {
        match (&self.workload, self.tenants.is_empty()) {
            (Some(w), true) => Ok(vec![TenantRun {
                path: "workload".into(),
                name: None,
                cores: self.machine.app_cores,
                workload: w,
            }]),
            (None, false) => Ok(self
                .tenants
                .iter()
                .enumerate()
                .map(|(i, t)| TenantRun {
                    path: format!("tenants[{i}].workload"),
                    name: Some(&t.name),
                    cores: t.cores,
                    workload: &t.workload,
                })
                .collect()),
            (Some(_), false) => Err(invalid(
                "tenants",
                "both `workload` and `[[tenants]]` are given; use one: the top-level `[workload]` (one tenant on all machine.app_cores) or `[[tenants]]` entries, each with its own `[tenants.workload]` and `cores`",
            )),
            (None, true) => Err(invalid(
                "workload",
                "missing; add a `[workload]` table (or `[[tenants]]` entries, each with a `name`, `cores` and `[tenants.workload]`)",
            )),
        }
    }

    pub fn page_bytes(&self) -> Result<u64> {
        self.machine.page_size.bytes("machine.page_size")
    }
}

impl Validate for SimConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(&join(p, "duration_s"), self.duration_s, 1e-3, 1e7)?;
        check_range(&join(p, "scale"), self.scale, 1e-6, 1.0)?;
        check_range(
            &join(p, "accesses_per_sample"),
            self.accesses_per_sample,
            1.0,
            1e9,
        )?;
        check_range(
            &join(p, "record_interval_ms"),
            self.record_interval_ms,
            0.1,
            1e6,
        )?;
        check_range(&join(p, "epoch_ms"), self.epoch_ms, 0.01, 1e4)?;
        if let Some(w) = self.stop_after_ops {
            check_range(&join(p, "stop_after_ops"), w, 1.0, 1e18)?;
        }
        if self.duration_s * 1e3 < self.record_interval_ms {
            return Err(invalid(
                &join(p, "duration_s"),
                format!(
                    "{} s is shorter than record_interval_ms ({} ms), so the run would record nothing; make duration_s at least {} or record_interval_ms smaller",
                    self.duration_s,
                    self.record_interval_ms,
                    self.record_interval_ms / 1e3
                ),
            ));
        }
        check_range(
            &join(p, "steady_state_fraction"),
            self.steady_state_fraction,
            0.01,
            1.0,
        )?;
        let ip = &self.initial_placement;
        let ok = ip == "first-touch"
            || ip == "random"
            || ip
                .strip_prefix("tier:")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n < self.machine.tiers.len());
        if !ok {
            return Err(invalid(
                &join(p, "initial_placement"),
                format!("`{ip}` is not a placement; use \"first-touch\", \"random\" or \"tier:N\" with N < number of tiers"),
            ));
        }
        self.machine.validate(&join(p, "machine"))?;
        // Scaled capacities: every tier holds at least one page, and together they hold
        // the workload (the same arithmetic the backend and the workload builder use).
        let page = self.page_bytes()?;
        self.validate_compressed(p, page)?;
        let mut total_pages = 0u64;
        for (i, t) in self.machine.tiers.iter().enumerate() {
            let cp = join(p, &format!("machine.tiers[{i}].capacity"));
            let cap = tier_capacity(t, &cp)?;
            let pages = (cap as f64 * self.scale) as u64 / page;
            if pages == 0 {
                let scaled = if self.scale < 1.0 {
                    format!(" after scale = {}", self.scale)
                } else {
                    String::new()
                };
                return Err(invalid(
                    &cp,
                    format!("{cap} bytes{scaled} is less than one page (machine.page_size = {page} bytes); give at least one page per tier"),
                ));
            }
            if !is_compressed(t) {
                // Pages start uncompressed: only memory tiers hold the initial placement.
                total_pages = total_pages.saturating_add(pages);
            }
        }
        for (i, a) in self.antagonist.iter().enumerate() {
            let ap = join(p, &format!("antagonist[{i}]"));
            if a.tier >= self.machine.tiers.len() {
                return Err(invalid(
                    &join(&ap, "tier"),
                    format!(
                        "tier {} does not exist; the machine has {} tiers",
                        a.tier,
                        self.machine.tiers.len()
                    ),
                ));
            }
            check_range(&join(&ap, "cores"), a.cores, 0.0, 4096.0)?;
            check_range(&join(&ap, "start_s"), a.start_s, 0.0, 1e7)?;
            if let Some(e) = a.end_s {
                check_range(&join(&ap, "end_s"), e, 0.0, 1e7)?;
                if e <= a.start_s {
                    return Err(invalid(&join(&ap, "end_s"), "must be after start_s"));
                }
            }
        }
        self.validate_tenants(p, page, total_pages)?;
        self.policy.validate(&join(p, "policy"))?;
        if let Some(c) = &self.colloid {
            c.validate(&join(p, "colloid"))?;
        }
        if let Some(g) = self.engine.migration_limit_gbps {
            check_range(&join(p, "engine.migration_limit_gbps"), g, 0.0, 1e4)?;
        }
        if let Some(c) = &self.controller {
            let cp = join(p, "controller");
            c.validate(&cp)?;
            c.check_backend(&cp, false)?;
            if self.tenants.is_empty() {
                return Err(invalid(
                    &join(&cp, "tenants"),
                    "a controller manages `[[tenants]]`; give the workloads as [[tenants]] entries (name, cores, [tenants.workload])",
                ));
            }
            for (i, t) in c.tenants.iter().enumerate() {
                if !self.tenants.iter().any(|u| u.name == t.name) {
                    let names: Vec<&str> = self.tenants.iter().map(|u| u.name.as_str()).collect();
                    return Err(invalid(
                        &join(&cp, &format!("tenants[{i}].name")),
                        format!(
                            "`{}` is not a [[tenants]] name; use one of: {}",
                            t.name,
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl SimConfig {
    /// The workload(s): exactly one of `workload` and `[[tenants]]`; tenants named uniquely,
    /// their cores within `machine.app_cores`; together the footprints fit the memory tiers.
    fn validate_tenants(&self, p: &str, page: u64, total_pages: u64) -> Result<()> {
        let runs = self.tenant_runs()?;
        let mut cores = 0.0;
        for (i, t) in self.tenants.iter().enumerate() {
            let tp = join(p, &format!("tenants[{i}]"));
            if t.name.trim().is_empty() {
                return Err(invalid(
                    &join(&tp, "name"),
                    "empty; give each tenant a name",
                ));
            }
            if let Some(j) = self.tenants[..i].iter().position(|u| u.name == t.name) {
                return Err(invalid(
                    &join(&tp, "name"),
                    format!(
                        "`{}` is also tenants[{j}].name; tenant names are unique",
                        t.name
                    ),
                ));
            }
            check_positive(&join(&tp, "cores"), t.cores, 4096.0)?;
            cores += t.cores;
            if cores > self.machine.app_cores * (1.0 + 1e-12) {
                return Err(invalid(
                    &join(&tp, "cores"),
                    format!("the tenants' cores up to here sum to {cores}, more than machine.app_cores = {}; lower tenants[].cores or raise machine.app_cores", self.machine.app_cores),
                ));
            }
        }
        let mut need = 0u64;
        for r in &runs {
            let wp = join(p, &r.path);
            r.workload.validate(&wp)?;
            if let Some(n) = r.workload.footprint_pages(&wp, page, self.scale)? {
                need = need.saturating_add(n);
                // (With compressed tiers the backend checks what the pools hold after packing.)
                let compressed = self.machine.tiers.iter().any(is_compressed);
                if need > total_pages && !compressed {
                    let what = if runs.len() == 1 {
                        "the workload needs".to_string()
                    } else {
                        format!("the tenants up to {} need", r.path)
                    };
                    return Err(invalid(
                        &wp,
                        format!("{what} {need} pages of {page} bytes but the tiers hold only {total_pages}; raise machine.tiers[].capacity or shrink the workload"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Compressed tiers: 4 KiB pages, a codec and allocator the simulator models, a
    /// `[page_compressibility]`, and pages that start in a memory tier.
    fn validate_compressed(&self, p: &str, page: u64) -> Result<()> {
        let tiers = &self.machine.tiers;
        let Some(first) = tiers.iter().position(is_compressed) else {
            if self.page_compressibility.is_some() {
                return Err(invalid(
                    &join(p, "page_compressibility"),
                    "applies only with a kind = \"compressed\" tier in machine.tiers; remove it",
                ));
            }
            return Ok(());
        };
        if first == 0 {
            return Err(invalid(
                &join(p, "machine.tiers[0].kind"),
                "tier 0 is where faulted pages go and must be a memory tier (\"dram\" or \"node\"); put the compressed tiers after it",
            ));
        }
        if page != crate::compressed::FRAME {
            return Err(invalid(
                &join(p, "machine.page_size"),
                format!("{page} bytes; compressed tiers hold 4 KiB pages (zswap compresses base pages): set page_size = \"4KiB\""),
            ));
        }
        for (i, t) in tiers.iter().enumerate().filter(|(_, t)| is_compressed(t)) {
            let tp = join(p, &format!("machine.tiers[{i}]"));
            if let tiermem_core::TierKind::Compressed {
                codec, allocator, ..
            } = t.tier_kind(&tp)?
            {
                crate::compressed::codec(&codec, &join(&tp, "codec"))?;
                crate::compressed::Allocator::parse(&allocator, &join(&tp, "allocator"))?;
            }
        }
        if let Some(n) = self
            .initial_placement
            .strip_prefix("tier:")
            .and_then(|n| n.parse::<usize>().ok())
        {
            if tiers.get(n).is_some_and(is_compressed) {
                return Err(invalid(
                    &join(p, "initial_placement"),
                    format!("tier {n} is compressed; pages start in a memory tier (\"tier:0\")"),
                ));
            }
        }
        let cp = join(p, "page_compressibility");
        let Some(c) = &self.page_compressibility else {
            return Err(invalid(
                &cp,
                "missing; with a compressed tier the simulator needs what pages compress to: add `[page_compressibility]` with `min = 0.3` and `max = 0.7` (the fraction of a page lz4 compresses a page to, uniform per page)",
            ));
        };
        check_range(&join(&cp, "min"), c.min, 0.001, 1.0)?;
        check_range(&join(&cp, "max"), c.max, 0.001, 1.0)?;
        if c.max < c.min {
            return Err(invalid(&join(&cp, "max"), "must be at least min"));
        }
        Ok(())
    }
}

impl Validate for MachineConfig {
    fn validate(&self, p: &str) -> Result<()> {
        let page = self.page_size.bytes(&join(p, "page_size"))?;
        if !page.is_power_of_two() || page < 4096 {
            return Err(invalid(
                &join(p, "page_size"),
                format!("{page} is not a power of two ≥ 4096; use e.g. \"4K\" or \"2M\""),
            ));
        }
        check_positive(&join(p, "app_cores"), self.app_cores, 4096.0)?;
        check_range(&join(p, "ops_in_flight"), self.ops_in_flight, 0.01, 1024.0)?;
        check_range(&join(p, "mlp_lines"), self.mlp_lines, 1.0, 1024.0)?;
        check_range(
            &join(p, "compute_ns_per_op"),
            self.compute_ns_per_op,
            0.0,
            1e9,
        )?;
        check_range(&join(p, "antagonist_mlp"), self.antagonist_mlp, 0.0, 1024.0)?;
        check_range(&join(p, "telemetry_noise"), self.telemetry_noise, 0.0, 1.0)?;
        check_range(
            &join(p, "inter_tier_coupling"),
            self.inter_tier_coupling,
            0.0,
            4.0,
        )?;
        validate_tiers(&self.tiers, &join(p, "tiers"), TierBackend::Sim)?;
        for (i, t) in self.tiers.iter().enumerate() {
            if let Some(c) = &t.curve {
                Curve::from_spec(c)
                    .map_err(|e| invalid(&join(p, &format!("tiers[{i}].curve")), e))?;
            }
        }
        let m = join(p, "migration");
        check_range(
            &join(&m, "per_page_ns"),
            self.migration.per_page_ns,
            0.0,
            1e9,
        )?;
        check_range(&join(&m, "copy_gbps"), self.migration.copy_gbps, 0.001, 1e4)?;
        check_range(&join(&m, "threads"), self.migration.threads, 0.01, 1024.0)?;
        if self.migration.synchronous && self.migration.threads_on_app_cores {
            return Err(invalid(
                &join(&m, "synchronous"),
                "`synchronous` and `threads_on_app_cores` are two ways to charge a migration to the application; set one of them",
            ));
        }
        if let Some(t) = self.migration.app_threads {
            check_range(&join(&m, "app_threads"), t, 0.01, 1e6)?;
        }
        check_range(
            &join(&m, "shootdown_ns"),
            self.migration.shootdown_ns,
            0.0,
            1e9,
        )?;
        check_range(
            &join(&m, "shootdown_wait_ns"),
            self.migration.shootdown_wait_ns,
            0.0,
            1e9,
        )?;
        check_range(
            &join(&m, "shootdowns_per_operation"),
            self.migration.shootdowns_per_operation,
            0.0,
            64.0,
        )?;
        check_range(
            &join(&m, "full_flush_refill_ns"),
            self.migration.full_flush_refill_ns,
            0.0,
            1e9,
        )?;
        if let Some(s) = &self.migration.full_flush_from {
            s.bytes(&join(&m, "full_flush_from"))?;
        }
        check_range(
            &join(p, "compressed_fault_ns"),
            self.compressed_fault_ns,
            0.0,
            1e9,
        )?;
        Ok(())
    }
}
