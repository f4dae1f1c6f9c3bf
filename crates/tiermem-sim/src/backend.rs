//! The simulator as a [`Backend`]: a virtual clock, the machine model, a workload, a
//! tracker, and page placement. Each `advance` is split into epochs (≤ `epoch_ms`), each
//! solved with one fixed point and filled with sampled accesses.

use crate::compressed::{Allocator, CodecModel, Compressibility, Pool};
use crate::config::{AntagonistConfig, SimConfig};
use crate::latency::Curve;
use crate::machine::{CoreModel, Demand, Equilibrium, Machine, TenantsEquilibrium, TierModel};
use crate::tracker::{EpochContext, SimTracker};
use crate::workload::{Access, MapEvent, OpShape, Workload};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use tiermem_core::{
    Applied, Backend, Capabilities, Controls, HeatEvent, PageIdx, PageRange, Plan, Provision,
    Result, Snapshot, TelemetryKind, TenantId, TenantSpec, TenantTelemetry, TierId, TierKind,
    TierSpec, TierTelemetry, TrackerKind, TrackerSpec,
};

/// One row of the time series (averages over `record_interval_ms`).
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub t_s: f64,
    pub ops_per_s: f64,
    pub avg_latency_ns: f64,
    pub latency_ns: Vec<f64>,
    pub read_bytes_per_s: Vec<f64>,
    pub write_bytes_per_s: Vec<f64>,
    /// Bytes each tier's media holds (a compressed tier's pool frames).
    pub used_bytes: Vec<f64>,
    /// Pages placed in each tier (a compressed tier's logical pages).
    pub used_pages: Vec<u64>,
    /// Share of the application's memory traffic served by each tier.
    pub app_share: Vec<f64>,
    pub migrated_bytes_per_s: f64,
    pub pages_tried: f64,
    pub pages_applied: f64,
    /// Faults per second on each tier (compressed tiers; 0 elsewhere).
    pub faults_per_s: Vec<f64>,
    /// Per tenant: operations per second and the share of its reads each tier served.
    pub tenant_ops_per_s: Vec<f64>,
    pub tenant_app_share: Vec<Vec<f64>>,
    /// Per tenant: mean read latency, memory bandwidth (reads + writes), bytes in the
    /// default tier, the default-tier limit in force (NaN: none), CPU share and NUMA hint
    /// faults per second (the last quantum's).
    pub tenant_latency_ns: Vec<f64>,
    pub tenant_bandwidth_bytes_per_s: Vec<f64>,
    pub tenant_local_bytes: Vec<f64>,
    pub tenant_local_limit_bytes: Vec<f64>,
    pub tenant_cpu_share: Vec<f64>,
    pub tenant_hint_faults_per_s: Vec<f64>,
}

/// Hint faults are taken per base page (4 KiB) in this model.
const HINT_FAULT_PAGE_BYTES: f64 = 4096.0;

/// Remote NUMA hint faults per second of a task of `footprint_bytes` (full scale) on
/// `threads` threads at CPU share `share` whose pages are remote and touched within a scan
/// cycle in the fraction `touched_remote`: Linux's per-task scan
/// ([`crate::tracker::numa_scan_bytes_per_s`], the model TPP's simulated scanner runs)
/// in base pages, times that fraction.
pub fn hint_fault_rate(footprint_bytes: f64, threads: f64, share: f64, touched_remote: f64) -> f64 {
    crate::tracker::numa_scan_bytes_per_s(footprint_bytes, threads, share) / HINT_FAULT_PAGE_BYTES
        * touched_remote
}

/// Extra time a fault from compressed tier `t` spends reading its object from a pool on a
/// slower medium than tier 0 (TierScape §4.1: "the access latency of DRAM-backed tiers is
/// better than those backed by the Optane due to the higher media access latency"). The
/// codecs were timed reading DRAM (`compressed.rs`), so only the difference counts: the
/// object's lines at the mean compressibility, fetched `mlp_lines` at a time like any other
/// access of the core model, each round paying `backing_latency_ns − tier 0's latency`.
fn backing_media_ns(cfg: &SimConfig, t: &tiermem_core::TierConfig, codec: &CodecModel) -> f64 {
    let (Some(backing), Some(local)) = (
        t.backing_latency_ns,
        cfg.machine
            .tiers
            .first()
            .and_then(|t0| t0.unloaded_latency_ns),
    ) else {
        return 0.0;
    };
    let lz4 = cfg
        .page_compressibility
        .as_ref()
        .map_or(1.0, |c| (c.min + c.max) / 2.0);
    let lines = (lz4 * codec.size_vs_lz4 * crate::compressed::FRAME as f64 / 64.0).ceil();
    (lines / cfg.machine.mlp_lines).ceil() * (backing - local).max(0.0)
}

#[derive(Default)]
struct Accum {
    dt_s: f64,
    ops: f64,
    avg_lat: f64,
    lat: Vec<f64>,
    rb: Vec<f64>,
    wb: Vec<f64>,
    app_lines: Vec<f64>,
    occupancy: Vec<f64>,
    reads: Vec<f64>,
    /// Per tenant: operations, and read lines per tier.
    tenant_ops: Vec<f64>,
    tenant_lines: Vec<Vec<f64>>,
    /// Per tenant: time-weighted mean latency and bandwidth.
    tenant_lat: Vec<f64>,
    tenant_bytes: Vec<f64>,
}

impl Accum {
    fn new(n: usize) -> Accum {
        Accum {
            lat: vec![0.0; n],
            rb: vec![0.0; n],
            wb: vec![0.0; n],
            app_lines: vec![0.0; n],
            occupancy: vec![0.0; n],
            reads: vec![0.0; n],
            ..Default::default()
        }
    }
    /// Add tenant `t`'s operations at `ops_per_s` with read lines `lines_per_s` per tier.
    fn add_tenant(
        &mut self,
        t: usize,
        ops_per_s: f64,
        lines_per_s: impl Iterator<Item = f64>,
        (latency_ns, bytes_per_s): (f64, f64),
        dt_s: f64,
    ) {
        if self.tenant_ops.len() <= t {
            self.tenant_ops.resize(t + 1, 0.0);
            self.tenant_lines.resize(t + 1, vec![0.0; self.lat.len()]);
            self.tenant_lat.resize(t + 1, 0.0);
            self.tenant_bytes.resize(t + 1, 0.0);
        }
        self.tenant_ops[t] += ops_per_s * dt_s;
        self.tenant_lat[t] += latency_ns * dt_s;
        self.tenant_bytes[t] += bytes_per_s * dt_s;
        for (acc, l) in self.tenant_lines[t].iter_mut().zip(lines_per_s) {
            *acc += l * dt_s;
        }
    }
    fn add(&mut self, eq: &Equilibrium, dt_s: f64) {
        self.dt_s += dt_s;
        self.ops += eq.app_ops_per_s * dt_s;
        self.avg_lat += eq.avg_latency_ns * dt_s;
        for i in 0..self.lat.len() {
            self.lat[i] += eq.latency_ns[i] * dt_s;
            self.rb[i] += eq.read_bytes_per_s[i] * dt_s;
            self.wb[i] += eq.write_bytes_per_s[i] * dt_s;
            self.app_lines[i] += eq.app_read_lines_per_s[i] * dt_s;
            // Little's law per tier: occupancy = arrival rate × latency.
            self.occupancy[i] += eq.read_lines_per_s[i] * eq.latency_ns[i] * 1e-9 * dt_s;
            self.reads[i] += eq.read_lines_per_s[i] * dt_s;
        }
    }
    fn reset(&mut self) {
        let n = self.lat.len();
        *self = Accum::new(n);
    }
}

/// One tenant's workload on its own cores, over its span of the page space.
struct TenantLoad {
    workload: Box<dyn Workload>,
    /// The workload allocates and frees pages as it runs (`Workload::maps_memory`).
    maps: bool,
    /// Its first page (its pages are `start..start + workload.page_count()`).
    start: usize,
    cores: f64,
    shape: OpShape,
    /// The share of its operations' reads each tier serves (sums to 1), maintained
    /// incrementally.
    mass: Vec<f64>,
    exact: bool,
    /// Its sampled accesses per tier since the last recompute (traces: no probabilities).
    measured: Vec<u64>,
    sample_carry: f64,
    /// Its operations per second in the last solve.
    ops_per_s: f64,
    /// Per-core stall (ns) of the TLB shootdowns of migrations on its pages not yet
    /// charged: each applied move interrupts its cores `shootdowns_per_operation` times,
    /// plus the TLB refill of a full flush for a move of at least `full_flush_from`.
    pending_shootdown_ns: f64,
    /// Migration time its cores still owe (`MigrationCharge::Synchronous` or
    /// `ThreadsOnAppCores`; carried over quanta until served).
    owed_core_ns: f64,
    /// Fault service time (ns of its cores' time) not yet charged to an epoch.
    fault_carry_ns: f64,
    /// Per tier: the access probability of its stuck compressed pages.
    stuck_mass: Vec<f64>,
}

impl TenantLoad {
    fn span(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.workload.page_count() as usize
    }
    /// Page `p`'s (global index) probability per operation of this tenant.
    fn prob(&self, p: usize) -> Option<f64> {
        self.workload.probabilities().map(|pr| pr[p - self.start])
    }
}

pub struct SimBackend {
    page_bytes: u64,
    specs: Vec<TierSpec>,
    machine: Machine,
    capacity_pages: Vec<u64>,
    used_pages: Vec<u64>,
    placement: Vec<TierId>,
    /// The tenants' workloads, in page order: tenant `t`'s pages follow tenant `t-1`'s
    /// (one tenant: the config's `[workload]`).
    loads: Vec<TenantLoad>,
    applies_since_recompute: u32,
    /// Several tenants: every page's access rate share (its tenant's probability times
    /// the tenant's share of the operations) for exact trackers, rebuilt each epoch.
    rates: Vec<f64>,
    tracker: SimTracker,
    events: Vec<HeatEvent>,
    telemetry: Vec<TierTelemetry>,
    rng: SmallRng,
    noise: f64,
    now_ns: u64,
    epoch_ns: u64,
    record_ns: u64,
    next_record_ns: u64,
    antagonists: Vec<AntagonistConfig>,
    antagonist_mlp: f64,
    accesses_per_sample: f64,
    scale: f64,
    // Migration effects of the last `apply`, spread over the next `advance`.
    pending_mig_read: Vec<f64>,
    pending_mig_write: Vec<f64>,
    last_quantum_ns: u64,
    /// Fixed CPU cost per migration operation (config `per_page_ns`: one page was one
    /// operation before range moves).
    per_op_ns: f64,
    copy_bytes_per_s: f64,
    mig_threads: f64,
    /// Per-core stall of one move's shootdown interrupts (`shootdowns_per_operation` x
    /// `shootdown_ns`), and the TLB refill after a full-flush move's
    /// (`shootdowns_per_operation` x `full_flush_refill_ns`).
    move_shootdown_ns: f64,
    full_flush_refill_ns: f64,
    /// Moves of at least this many pages flush the whole TLB (`full_flush_from`).
    full_flush_pages: u64,
    /// Per tier: the copy time multiplier to or from it (its unloaded latency over the
    /// fastest tier's with `copy_scales_with_latency`, else 1).
    copy_factor: Vec<f64>,
    /// Migration-thread time owed by a move that outlasted its quantum.
    mig_debt_ns: f64,
    /// What a migration operation costs the application's cores.
    charge: MigrationCharge,
    quantum: Accum,
    interval: Accum,
    interval_mig_bytes: f64,
    interval_tried: f64,
    interval_applied: f64,
    pub records: Vec<Record>,
    last_eq: Equilibrium,
    tenants: Vec<TenantSpec>,
    /// `tenant_used[tenant][tier]`: pages of each tenant in each tier (for limits).
    tenant_used: Vec<Vec<u64>>,
    /// The controls in force (the last plan's).
    controls: Controls,
    /// Per tier: the pool of a compressed tier, `None` for a memory tier.
    pools: Vec<Option<Pool>>,
    any_compressed: bool,
    /// Scratch for a batch of sampled draws (`draw_samples`), kept to reuse its memory.
    drawn: Vec<Access>,
    compressibility: Option<Compressibility>,
    /// Per tier, the service time of a fault from its pool (0 for memory tiers): the fixed
    /// fault cost, the decompression, and the backing medium's extra read time.
    fault_cost_ns: Vec<f64>,
    /// Stationary workloads: each compressed page's next access (its fault), drawn
    /// exactly as `Exp(T_ops · p_page)` when it enters the pool. `due_of` marks the live
    /// entry of each page (a page that left the pool leaves a stale heap entry).
    due: BinaryHeap<Reverse<(u64, PageIdx)>>,
    due_of: HashMap<PageIdx, u64>,
    /// Compressed pages that faulted when tier 0 was full: they stay, and every access to
    /// them faults (a per-operation cost in the machine, `stuck_mass` per tier). Ordered,
    /// for determinism.
    stuck: std::collections::BTreeSet<PageIdx>,
    quantum_faults: Vec<f64>,
    interval_faults: Vec<f64>,
    fault_events: Vec<HeatEvent>,
    /// Per tenant, the last quantum's measurements (the snapshot's `tenant_telemetry`).
    tenant_telemetry: Vec<TenantTelemetry>,
    /// Whether anyone reads the NUMA hint-fault rate: a controller (Mercury) or the
    /// per-tenant time series (more than one tenant). Its model costs a pass over every
    /// page per quantum (half of a 2-tier GUPS run's time), so a single-tenant run
    /// without a controller reports 0 instead of paying for it.
    hint_fault_telemetry: bool,
    /// The pages moved since the first `apply` after the last snapshot (the snapshot's
    /// `moved`), while `moved_log_whole`; a wholesale change (`set_placement`) or a log
    /// past `moved_log_cap` pages clears it and tells the policy to re-read the placement.
    /// `moved_log_read`: a snapshot has shown the log, so the next `apply` starts it again.
    moved_log: Vec<PageIdx>,
    moved_log_whole: bool,
    moved_log_cap: usize,
    moved_log_read: bool,
    /// The last single-tenant fixed point and the bits of its inputs (`solve`).
    solve_memo: std::cell::RefCell<Option<(Vec<u64>, Equilibrium)>>,
    /// Application operations completed (all tenants), and the fixed amount of work after
    /// which the run stops (`stop_after_ops`) with the time it was done.
    ops_done: f64,
    work_ops: Option<f64>,
    completed_at_ns: Option<f64>,
    /// Where the application cores' time went until the work was done (`core_time`).
    core_time: CoreTime,
}

/// The application cores' time (all tenants; ns of core time, i.e. summed over cores),
/// split as a leading-load model splits it (ICS'18 §5, Fig. 6): compute, waiting on each
/// tier's memory, stalled (TLB shootdowns, migration threads on the cores, synchronous
/// waits) and in faults. Counted up to the run's `stop_after_ops` work when it has one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoreTime {
    pub compute_ns: f64,
    pub memory_ns: Vec<f64>,
    pub stalled_ns: f64,
    pub fault_ns: f64,
}

impl SimBackend {
    pub fn new(cfg: &SimConfig) -> Result<SimBackend> {
        let page_bytes = cfg.page_bytes()?;
        let mut tenants = Vec::new();
        for (t, run) in cfg.tenant_runs()?.into_iter().enumerate() {
            // Each tenant its own seed stream, the first the config's own (one tenant runs
            // exactly as the top-level workload did).
            let seed = cfg.seed.wrapping_add(t as u64 * 0x9e37_79b9_7f4a_7c15);
            let w = crate::workload::build(run.workload, page_bytes, cfg.scale, seed)?;
            let name = run.name.map_or_else(|| w.name(), str::to_string);
            tenants.push((name, run.cores, w));
        }
        Self::with_tenants(cfg, tenants)
    }

    /// Pages now in each tier.
    pub fn used_pages(&self) -> &[u64] {
        &self.used_pages
    }

    /// A backend running `tenants` (name, cores, workload), their pages in that order.
    pub fn with_tenants(
        cfg: &SimConfig,
        tenants: Vec<(String, f64, Box<dyn Workload>)>,
    ) -> Result<SimBackend> {
        let page_bytes = cfg.page_bytes()?;
        let n = cfg.machine.tiers.len();
        let mut specs = Vec::new();
        let mut tiers = Vec::new();
        let mut capacity_pages = Vec::new();
        let mut pools = Vec::new();
        let mut fault_cost_ns = Vec::new();
        for (i, t) in cfg.machine.tiers.iter().enumerate() {
            let path = format!("machine.tiers[{i}]");
            let cap = (crate::config::tier_capacity(t, &format!("{path}.capacity"))? as f64
                * cfg.scale) as u64;
            capacity_pages.push(cap / page_bytes);
            let mut spec = t.spec(cap);
            if let TierKind::Compressed {
                codec, allocator, ..
            } = &spec.kind
            {
                let mut codec = crate::compressed::codec(codec, &format!("{path}.codec"))?;
                let allocator = Allocator::parse(allocator, &format!("{path}.allocator"))?;
                // An access is a fault: its service time is the tier's latency, flat (the
                // decompression runs on the faulting core, not on a shared channel). A
                // measured `fault_ns` (pool in DRAM) replaces the fixed fault cost plus the
                // codec table's decompression; a slower backing adds its line reads either way.
                let cost = t
                    .fault_ns
                    .unwrap_or(cfg.machine.compressed_fault_ns + codec.decompress_ns)
                    + backing_media_ns(cfg, t, &codec);
                // The migration thread's codec work: the measured times where given (a
                // move out of the pool decompresses into a fresh page, as a fault does).
                if let Some(f) = t.fault_ns {
                    codec.decompress_ns = f;
                }
                if let Some(c) = t.compress_ns {
                    codec.compress_ns = c;
                }
                fault_cost_ns.push(cost);
                spec.unloaded_latency_ns = cost;
                tiers.push(TierModel {
                    unloaded_ns: cost,
                    peak_bytes_per_s: f64::MAX / 4.0,
                    write_cost: 1.0,
                    curve: Curve::from_spec(&tiermem_core::tier::CurveSpec::Named("flat".into()))
                        .expect("the flat curve"),
                    coupling: 0.0,
                });
                pools.push(Some(Pool::new(
                    codec,
                    allocator,
                    t.max_compressed_bytes(&path)?,
                    cap / page_bytes,
                )));
                specs.push(spec);
                continue;
            }
            pools.push(None);
            fault_cost_ns.push(0.0);
            let curve = t.curve.as_ref().ok_or_else(|| {
                tiermem_core::config::invalid(&format!("{path}.curve"), "missing")
            })?;
            tiers.push(TierModel {
                unloaded_ns: spec.unloaded_latency_ns,
                peak_bytes_per_s: spec.peak_bandwidth_bytes_per_s,
                write_cost: t.write_cost.unwrap_or(1.0),
                curve: Curve::from_spec(curve)
                    .map_err(|e| tiermem_core::config::invalid(&format!("{path}.curve"), e))?,
                // A lower memory tier's traffic couples into the default tier's queues.
                coupling: if i > 0 {
                    cfg.machine.inter_tier_coupling
                } else {
                    0.0
                },
            });
            specs.push(spec);
        }
        let m = &cfg.machine;
        let full_flush_pages = match &m.migration.full_flush_from {
            Some(size) => size
                .bytes("machine.migration.full_flush_from")?
                .div_ceil(page_bytes)
                .max(1),
            None => u64::MAX,
        };
        let machine = Machine {
            tiers,
            cores: CoreModel {
                cores: tenants.iter().map(|t| t.1).sum(),
                ops_in_flight: m.ops_in_flight,
                mlp_lines: m.mlp_lines,
                compute_ns_per_op: m.compute_ns_per_op,
            },
        };
        let pages: u64 = tenants.iter().map(|t| t.2.page_count() as u64).sum();
        let tenant_count = tenants.len();
        // The memory tiers hold the initial placement; pages beyond them start compressed
        // (reclaimed into the pools, in tier order, as packing allows).
        let memory_cap: Vec<u64> = capacity_pages
            .iter()
            .zip(&pools)
            .map(|(&c, p)| if p.is_some() { 0 } else { c })
            .collect();
        let total_cap: u64 = memory_cap.iter().sum();
        if pages > total_cap && pools.iter().all(Option::is_none) {
            return Err(tiermem_core::Error::config(format!(
                "the workload needs {pages} pages but the tiers hold only {total_cap}; raise machine.tiers[].capacity or shrink the workload"
            )));
        }
        let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0x5eed_7157);
        let mut placement = initial_placement(
            &cfg.initial_placement,
            pages.min(total_cap) as usize,
            &memory_cap,
            &mut rng,
        );
        if pages > total_cap {
            let c = cfg
                .page_compressibility
                .as_ref()
                .map(|c| Compressibility::of(c, cfg.seed));
            for p in total_cap..pages {
                let f = c.map_or(1.0, |c| c.lz4_fraction(p as u32));
                let tier = pools.iter_mut().position(|pool| {
                    pool.as_mut().is_some_and(|pool| {
                        let b = pool.compressed_bytes(f);
                        pool.accepts(b) && pool.try_add(&[b])
                    })
                });
                let Some(tier) = tier else {
                    return Err(tiermem_core::Error::config(format!(
                        "the workload needs {pages} pages: the memory tiers hold {total_cap} and the compressed tiers' pools only {} more after packing; raise machine.tiers[].capacity or shrink the workload",
                        p - total_cap
                    )));
                };
                placement.push(TierId(tier as u8));
            }
        }
        let mut used_pages = vec![0u64; n];
        for t in &placement {
            used_pages[t.index()] += 1;
        }
        let mut loads = Vec::new();
        let mut specs_t = Vec::new();
        let mut start = 0usize;
        for (name, cores, mut workload) in tenants {
            workload.set_accesses_per_sample(cfg.accesses_per_sample);
            let len = workload.page_count() as usize;
            specs_t.push(TenantSpec {
                id: TenantId(specs_t.len() as u16),
                name,
                pages: PageRange {
                    start: start as u32,
                    len: len as u32,
                },
            });
            loads.push(TenantLoad {
                maps: workload.maps_memory(),
                shape: workload.op_shape(),
                exact: workload.probabilities().is_some(),
                workload,
                start,
                cores,
                mass: vec![0.0; n],
                measured: vec![0; n],
                sample_carry: 0.0,
                ops_per_s: 0.0,
                pending_shootdown_ns: 0.0,
                owed_core_ns: 0.0,
                fault_carry_ns: 0.0,
                stuck_mass: vec![0.0; n],
            });
            start += len;
        }
        let copy_factor: Vec<f64> = {
            let lat: Vec<f64> = specs.iter().map(|t| t.unloaded_latency_ns).collect();
            let min = lat.iter().copied().fold(f64::INFINITY, f64::min);
            lat.iter()
                .map(|l| {
                    if m.migration.copy_scales_with_latency && min > 0.0 {
                        l / min
                    } else {
                        1.0
                    }
                })
                .collect()
        };
        let mut b = SimBackend {
            page_bytes,
            specs,
            machine,
            capacity_pages,
            used_pages,
            placement,
            loads,
            applies_since_recompute: 0,
            rates: Vec::new(),
            tracker: SimTracker::None,
            events: Vec::new(),
            telemetry: vec![TierTelemetry::default(); n],
            rng,
            noise: m.telemetry_noise,
            now_ns: 0,
            epoch_ns: (cfg.epoch_ms * 1e6) as u64,
            record_ns: (cfg.record_interval_ms * 1e6) as u64,
            next_record_ns: (cfg.record_interval_ms * 1e6) as u64,
            antagonists: cfg.antagonist.clone(),
            antagonist_mlp: m.antagonist_mlp,
            accesses_per_sample: cfg.accesses_per_sample,
            scale: cfg.scale,
            pending_mig_read: vec![0.0; n],
            pending_mig_write: vec![0.0; n],
            last_quantum_ns: 10_000_000,
            per_op_ns: m.migration.per_page_ns
                + m.migration.shootdowns_per_operation * m.migration.shootdown_wait_ns,
            copy_bytes_per_s: m.migration.copy_gbps * 1e9,
            mig_threads: m.migration.threads * thread_core_share(m),
            move_shootdown_ns: m.migration.shootdowns_per_operation * m.migration.shootdown_ns,
            full_flush_refill_ns: m.migration.shootdowns_per_operation
                * m.migration.full_flush_refill_ns,
            full_flush_pages,
            copy_factor,
            mig_debt_ns: 0.0,
            charge: MigrationCharge::of(&m.migration),
            quantum: Accum::new(n),
            interval: Accum::new(n),
            interval_mig_bytes: 0.0,
            interval_tried: 0.0,
            interval_applied: 0.0,
            records: Vec::new(),
            last_eq: Equilibrium::default(),
            tenants: specs_t,
            tenant_used: Vec::new(),
            controls: Controls::default(),
            any_compressed: pools.iter().any(Option::is_some),
            drawn: Vec::new(),
            pools,
            compressibility: cfg
                .page_compressibility
                .as_ref()
                .map(|c| Compressibility::of(c, cfg.seed)),
            fault_cost_ns,
            due: BinaryHeap::new(),
            due_of: HashMap::new(),
            stuck: Default::default(),
            quantum_faults: vec![0.0; n],
            interval_faults: vec![0.0; n],
            fault_events: Vec::new(),
            tenant_telemetry: Vec::new(),
            hint_fault_telemetry: cfg.controller.is_some() || tenant_count > 1,
            moved_log: Vec::new(),
            // The first snapshot has no log: a policy reads the whole placement once.
            moved_log_whole: false,
            moved_log_cap: (pages as usize / 8).max(4096),
            moved_log_read: false,
            solve_memo: Default::default(),
            ops_done: 0.0,
            core_time: CoreTime::default(),
            work_ops: cfg.stop_after_ops,
            completed_at_ns: None,
        };
        b.tenant_used = b.count_tenant_used();
        b.recompute_mass();
        if b.any_compressed {
            for p in 0..b.placement.len() {
                if b.is_compressed(b.placement[p]) {
                    b.schedule_fault(p);
                }
            }
        }
        Ok(b)
    }

    pub fn placement(&self) -> &[TierId] {
        &self.placement
    }

    /// Applies (with moves) between two recomputes of the per-tier access mass from every
    /// page. The moves update the mass incrementally; the recompute clears the rounding
    /// drift. It is O(pages) (~1.4 s at 268 M pages), so above 2^24 pages it runs less
    /// often, keeping its amortised cost at most 2^16 page visits per apply; the drift of
    /// 2^12 applies of ~10^3 moves each is still ~1e-12 relative.
    pub fn mass_recompute_every(&self) -> u32 {
        256u32.max((self.placement.len() >> 16) as u32)
    }

    /// Heap bytes of the placement state: the page → tier table (one byte per page: a
    /// `TierId` is a `u8`) and the per-tier and per-tenant page counts. The quantum loop
    /// never copies it: `observe` lends it to the policy, `apply` edits it in place.
    pub fn placement_bytes(&self) -> usize {
        use std::mem::size_of;
        self.placement.capacity() * size_of::<TierId>()
            + (self.used_pages.capacity() + self.capacity_pages.capacity()) * size_of::<u64>()
            + self
                .tenant_used
                .iter()
                .map(|t| t.capacity() * size_of::<u64>() + size_of::<Vec<u64>>())
                .sum::<usize>()
    }
    /// The first tenant's workload (the only one without `[[tenants]]`).
    pub fn workload(&self) -> &dyn Workload {
        self.loads[0].workload.as_ref()
    }
    /// Every tenant's workload has ended (a trace replayed to its end), or the run's fixed
    /// amount of work (`stop_after_ops`) is done.
    pub fn finished(&self) -> bool {
        self.completed_at_ns.is_some() || self.loads.iter().all(|l| l.workload.finished())
    }
    /// Application operations completed so far (all tenants).
    pub fn ops_done(&self) -> f64 {
        self.ops_done
    }
    /// When the run's `stop_after_ops` operations were complete (ns of virtual time,
    /// interpolated within the epoch that completed them), once they are.
    pub fn completed_at_ns(&self) -> Option<f64> {
        self.completed_at_ns
    }
    /// Where the application cores' time went so far (up to the work's completion).
    pub fn core_time(&self) -> &CoreTime {
        &self.core_time
    }
    /// The tenants' specs (name, span), in page order.
    pub fn tenant_specs(&self) -> &[TenantSpec] {
        &self.tenants
    }
    /// Per tenant: its operations per second in the last epoch.
    pub fn tenant_ops_per_s(&self) -> Vec<f64> {
        self.loads.iter().map(|l| l.ops_per_s).collect()
    }
    /// Pages of each tenant in each tier, counted from the placement.
    fn count_tenant_used(&self) -> Vec<Vec<u64>> {
        self.loads
            .iter()
            .map(|l| {
                let mut u = vec![0u64; self.specs.len()];
                for p in l.span() {
                    u[self.placement[p].index()] += 1;
                }
                u
            })
            .collect()
    }
    /// Whether a tier is compressed (a pool, not mapped memory: an access to it faults).
    #[inline]
    fn is_compressed(&self, tier: TierId) -> bool {
        self.pools[tier.index()].is_some()
    }
    /// The tenant (index into `loads`) page `p` belongs to.
    fn tenant_of(&self, p: usize) -> usize {
        self.loads
            .partition_point(|l| l.start <= p)
            .saturating_sub(1)
    }
    pub fn capacity_pages(&self) -> &[u64] {
        &self.capacity_pages
    }

    /// Replace the placement wholesale (static placements, best-case search).
    pub fn set_placement(&mut self, placement: Vec<TierId>) -> Result<()> {
        assert_eq!(placement.len(), self.placement.len());
        let mut used = vec![0u64; self.specs.len()];
        for t in &placement {
            used[t.index()] += 1;
        }
        let mut pools = self.pools.clone();
        for pool in pools.iter_mut().flatten() {
            *pool = Pool::new(
                pool.codec,
                pool.allocator,
                pool.max_compressed,
                pool.capacity_frames,
            );
        }
        for (p, t) in placement.iter().enumerate() {
            if let Some(pool) = pools[t.index()].as_mut() {
                let b = pool.compressed_bytes(self.lz4_fraction(p));
                if !pool.accepts(b) || !pool.try_add(&[b]) {
                    return Err(tiermem_core::Error::new(
                        tiermem_core::ErrorKind::Internal,
                        format!("placement puts page {p} in compressed tier {t:?}, which cannot hold it"),
                    ));
                }
            }
        }
        for (i, u) in used.iter().enumerate() {
            if self.pools[i].is_none() && *u > self.capacity_pages[i] {
                return Err(tiermem_core::Error::new(
                    tiermem_core::ErrorKind::Internal,
                    format!(
                        "placement puts {u} pages in tier {i} of capacity {}",
                        self.capacity_pages[i]
                    ),
                ));
            }
        }
        self.placement = placement;
        self.moved_log_whole = false;
        self.moved_log.clear();
        self.pools = pools;
        self.due.clear();
        self.due_of.clear();
        self.stuck.clear();
        for l in &mut self.loads {
            l.stuck_mass.iter_mut().for_each(|m| *m = 0.0);
        }
        for p in 0..self.placement.len() {
            if self.is_compressed(self.placement[p]) {
                self.schedule_fault(p);
            }
        }
        self.tenant_used = self.count_tenant_used();
        self.used_pages = used;
        self.recompute_mass();
        Ok(())
    }

    fn recompute_mass(&mut self) {
        for t in 0..self.loads.len() {
            self.recompute_tenant_mass(t);
        }
        self.applies_since_recompute = 0;
    }

    fn recompute_tenant_mass(&mut self, t: usize) {
        let n = self.specs.len();
        let l = &self.loads[t];
        let span = l.span();
        let mut mass = vec![0.0; n];
        match l.workload.probabilities() {
            Some(p) => {
                for (page, tier) in self.placement[span.clone()].iter().enumerate() {
                    mass[tier.index()] += p[page];
                }
            }
            None => {
                let total: u64 = l.measured.iter().sum();
                if total == 0 {
                    for tier in &self.placement[span.clone()] {
                        mass[tier.index()] += 1.0 / span.len().max(1) as f64;
                    }
                } else {
                    for (m, &c) in mass.iter_mut().zip(&l.measured).take(n) {
                        *m = c as f64 / total as f64;
                    }
                }
            }
        }
        let sum: f64 = mass.iter().sum();
        if sum > 0.0 {
            mass.iter_mut().for_each(|m| *m /= sum);
        }
        self.loads[t].mass = mass;
    }

    /// The fraction of a page lz4 compresses page `p` to.
    fn lz4_fraction(&self, p: usize) -> f64 {
        self.compressibility
            .map_or(1.0, |c| c.lz4_fraction(p as u32))
    }

    /// Bytes a tier occupies now: pages, or a compressed tier's pool frames.
    pub fn used_bytes(&self, i: usize) -> u64 {
        match &self.pools[i] {
            Some(pool) => pool.frames() * self.page_bytes,
            None => self.used_pages[i] * self.page_bytes,
        }
    }

    /// The access mass the machine sees from tenant `t`: a compressed page's accesses are
    /// faults (charged as core stall when they happen) after which the page is in tier 0,
    /// so its mass counts there.
    fn demand_mass(&self, t: usize) -> Cow<'_, [f64]> {
        let mass = &self.loads[t].mass;
        if !self.any_compressed {
            return Cow::Borrowed(mass);
        }
        let mut m = mass.clone();
        for (i, pool) in self.pools.iter().enumerate() {
            if pool.is_some() {
                m[0] += m[i];
                m[i] = 0.0;
            }
        }
        Cow::Owned(m)
    }

    /// Stationary workloads: draw when page `p` (now in a compressed tier) is next
    /// accessed, `Exp(T_ops · p_page)` from now. Traces fault on their sampled accesses.
    fn schedule_fault(&mut self, p: usize) {
        let t = self.tenant_of(p);
        let Some(w) = self.loads[t].prob(p) else {
            return;
        };
        if self.last_eq.app_ops_per_s <= 0.0 {
            // Before the first epoch: the rate the machine would run at now.
            let (eq, ops) = self.solve_now_per_tenant();
            self.last_eq = eq;
            for (l, o) in self.loads.iter_mut().zip(ops) {
                l.ops_per_s = o;
            }
        }
        let rate = self.loads[t].ops_per_s * w;
        if rate <= 0.0 {
            self.due_of.remove(&(p as PageIdx));
            return;
        }
        let u: f64 = self.rng.gen();
        let dt_ns = -(1.0 - u).ln() / rate * 1e9;
        let due = self.now_ns.saturating_add(dt_ns.min(1e18) as u64);
        self.due_of.insert(p as PageIdx, due);
        self.due.push(Reverse((due, p as PageIdx)));
    }

    /// Page `p`, in a compressed tier, is accessed: it faults, is decompressed and moves to
    /// tier 0 when tier 0 has room (otherwise it is served and stays, and faults again).
    /// Returns the faulting tenant and the time its core spent on the fault.
    fn fault(&mut self, p: usize) -> (usize, f64) {
        let from = self.placement[p];
        let tenant = self.tenant_of(p);
        if !self.is_compressed(from) {
            return (tenant, 0.0);
        }
        let cost = self.fault_cost_ns[from.index()];
        self.quantum_faults[from.index()] += 1.0;
        self.interval_faults[from.index()] += 1.0;
        self.fault_events
            .push(HeatEvent::TierFault { page: p as PageIdx });
        let w = self.loads[tenant].prob(p);
        if self.used_pages[0] < self.capacity_pages[0] {
            self.relocate(p, TierId::DEFAULT, tenant, w);
        } else if let Some(w) = w {
            if self.stuck.insert(p as PageIdx) {
                self.loads[tenant].stuck_mass[from.index()] += w;
            }
        }
        (tenant, cost)
    }

    /// Move page `p` to `to`, keeping every count in step: tiers, the tenant's, pools
    /// (the caller has added the page's object to `to`'s pool), the access mass, pending
    /// faults and the migration traffic of the next quantum.
    fn relocate(&mut self, p: usize, to: TierId, tenant: usize, w: Option<f64>) {
        let from = self.placement[p];
        self.remap(p, to, tenant, w);
        self.pending_mig_read[from.index()] += self.page_bytes as f64;
        self.pending_mig_write[to.index()] += self.page_bytes as f64;
        if self.any_compressed {
            if self.is_compressed(from) {
                let f = self.lz4_fraction(p);
                let pool = self.pools[from.index()].as_mut().expect("a pool");
                pool.remove(pool.compressed_bytes(f));
                self.due_of.remove(&(p as PageIdx));
                if self.stuck.remove(&(p as PageIdx)) {
                    self.loads[tenant].stuck_mass[from.index()] -= w.unwrap_or(0.0);
                }
            }
            if self.is_compressed(to) {
                self.schedule_fault(p);
            }
        }
    }

    /// The allocations and releases tenant `t`'s program has made since its last access
    /// (`MapEvent`). A release returns its pages' frames: a page in the fastest tier is
    /// parked in the slowest memory tier with room (not mapped, it takes no fast frame and
    /// is not accessed until allocated again). An allocation maps its pages at first touch
    /// (Linux's default local policy): each page moves to the fastest tier when it has a
    /// free frame, else stays in the tier it is parked in. Neither copies data nor counts
    /// as migration (no traffic, no shootdown); policies see the pages moved in the
    /// placement log. Pages in compressed tiers are left as they are.
    fn apply_map_events(&mut self, t: usize) {
        while let Some(e) = self.loads[t].workload.take_map_event() {
            let start = self.loads[t].start;
            let (range, alloc) = match e {
                MapEvent::Alloc(r) => (r, true),
                MapEvent::Free(r) => (r, false),
            };
            let fast = TierId::DEFAULT;
            for page in range {
                let p = start + page as usize;
                let from = self.placement[p];
                if self.is_compressed(from) {
                    continue;
                }
                let to = if alloc {
                    if from == fast || self.used_pages[0] >= self.capacity_pages[0] {
                        continue;
                    }
                    fast
                } else {
                    if from != fast {
                        continue;
                    }
                    match (1..self.specs.len()).rev().find(|&i| {
                        !self.is_compressed(TierId(i as u8))
                            && self.used_pages[i] < self.capacity_pages[i]
                    }) {
                        Some(i) => TierId(i as u8),
                        None => continue,
                    }
                };
                let w = self.loads[t].prob(p);
                self.remap(p, to, t, w);
            }
        }
    }

    /// Page `p` gets a frame in `to` without a copy (a map event): every count in step as
    /// `relocate` keeps them, but no migration traffic.
    fn remap(&mut self, p: usize, to: TierId, tenant: usize, w: Option<f64>) {
        let from = self.placement[p];
        self.placement[p] = to;
        if self.moved_log_whole {
            if self.moved_log.len() < self.moved_log_cap {
                self.moved_log.push(p as PageIdx);
            } else {
                self.moved_log_whole = false;
                self.moved_log = Vec::new();
            }
        }
        self.used_pages[from.index()] -= 1;
        self.used_pages[to.index()] += 1;
        self.tenant_used[tenant][from.index()] -= 1;
        self.tenant_used[tenant][to.index()] += 1;
        if let Some(w) = w {
            let mass = &mut self.loads[tenant].mass;
            mass[from.index()] -= w;
            mass[to.index()] += w;
        }
    }

    /// Per-operation fault time of tenant `t`'s stuck compressed pages (0 without any).
    fn stuck_fault_ns_per_op(&self, t: usize) -> f64 {
        if self.stuck.is_empty() {
            return 0.0;
        }
        self.pools
            .iter()
            .zip(&self.loads[t].stuck_mass)
            .zip(&self.fault_cost_ns)
            .filter(|((pool, _), _)| pool.is_some())
            .map(|((_, m), cost)| m.max(0.0) * cost)
            .sum()
    }

    /// Codec time on the migration thread for moving `range` to `to`: each page entering
    /// a pool is compressed, each leaving one decompressed.
    fn codec_ns(&self, range: std::ops::Range<usize>, to: TierId) -> f64 {
        let mut ns = 0.0;
        for p in range {
            let from = self.placement[p];
            if from == to {
                continue;
            }
            if let Some(pool) = &self.pools[from.index()] {
                ns += pool.codec.decompress_ns;
            }
            if let Some(pool) = &self.pools[to.index()] {
                ns += pool.codec.compress_ns;
            }
        }
        ns
    }

    fn antagonist_cores(&self, now_ns: u64) -> Vec<f64> {
        let mut cores = vec![0.0; self.specs.len()];
        let t = now_ns as f64 / 1e9;
        for a in &self.antagonists {
            if t >= a.start_s && a.end_s.is_none_or(|e| t < e) {
                cores[a.tier] += a.cores;
            }
        }
        cores
    }

    /// Next time something scheduled changes (antagonist start/end, workload phase), after `now`.
    fn next_change_ns(&self, now_ns: u64) -> u64 {
        let mut next = self
            .loads
            .iter()
            .filter_map(|l| l.workload.next_change_ns())
            .filter(|&t| t > now_ns)
            .min()
            .unwrap_or(u64::MAX);
        for a in &self.antagonists {
            for t in [Some(a.start_s), a.end_s].into_iter().flatten() {
                let ns = (t * 1e9) as u64;
                if ns > now_ns {
                    next = next.min(ns);
                }
            }
        }
        next
    }

    /// The last epoch's solved state.
    pub fn equilibrium(&self) -> &Equilibrium {
        &self.last_eq
    }

    /// Solve the machine for the current placement and schedule, without advancing time.
    pub fn solve_now(&self) -> Equilibrium {
        self.solve_now_per_tenant().0
    }

    /// The equilibrium if the tiers served the fractions `mass` of the first tenant's
    /// accesses now, with no migration, no stall and no faults: a best-case search's
    /// objective (`reproduce::best_case`), the same fixed point every epoch solves.
    pub fn solve_for_mass(&self, mass: &[f64]) -> Equilibrium {
        let zero = vec![0.0; self.specs.len()];
        let ant = self.antagonist_cores(self.now_ns);
        let shape = &self.loads[0].shape;
        self.machine.solve(&Demand {
            mass,
            lines_per_op: shape.lines_per_op as f64,
            written_lines_per_op: shape.written_lines_per_op,
            antagonist_cores: &ant,
            antagonist_mlp: self.antagonist_mlp,
            migration_read_bytes_per_s: &zero,
            migration_write_bytes_per_s: &zero,
            app_stall: 0.0,
            fault_ns_per_op: 0.0,
        })
    }

    /// The steady state if each tenant's reads were split over the tiers as `masses[t]` and
    /// it ran at CPU share `shares[t]`, with no migration (Mercury's profiler and its
    /// machine calibration: a scratch run reduced to its fixed point). Returns the
    /// equilibrium and, per tenant, its memory bandwidth (bytes/s).
    pub fn solve_static(
        &self,
        masses: &[Vec<f64>],
        shares: &[f64],
    ) -> (TenantsEquilibrium, Vec<f64>) {
        let n = self.specs.len();
        let zero = vec![0.0; n];
        let ant = self.antagonist_cores(self.now_ns);
        let tenants: Vec<(CoreModel, Demand<'_>)> = (0..self.loads.len())
            .map(|t| {
                let shape = &self.loads[t].shape;
                (
                    CoreModel {
                        cores: self.loads[t].cores * shares[t],
                        ..self.machine.cores
                    },
                    Demand {
                        mass: &masses[t],
                        lines_per_op: shape.lines_per_op as f64,
                        written_lines_per_op: shape.written_lines_per_op,
                        antagonist_cores: &ant,
                        antagonist_mlp: self.antagonist_mlp,
                        migration_read_bytes_per_s: &zero,
                        migration_write_bytes_per_s: &zero,
                        app_stall: 0.0,
                        fault_ns_per_op: 0.0,
                    },
                )
            })
            .collect();
        let te = self.machine.solve_tenants(&tenants);
        let bw = (0..self.loads.len())
            .map(|t| {
                let shape = &self.loads[t].shape;
                te.ops_per_s[t]
                    * (shape.lines_per_op as f64 + shape.written_lines_per_op)
                    * tiermem_core::CACHELINE_BYTES as f64
            })
            .collect();
        (te, bw)
    }

    /// Tenant `t`'s per-page access probabilities (a stationary workload), in its own page
    /// order.
    pub fn tenant_probabilities(&self, t: usize) -> Option<&[f64]> {
        self.loads.get(t)?.workload.probabilities()
    }

    fn solve_now_per_tenant(&self) -> (Equilibrium, Vec<f64>) {
        let zero = vec![0.0; self.specs.len()];
        self.solve(&zero, &zero, &vec![0.0; self.loads.len()])
    }

    /// One epoch's fixed point: the machine's equilibrium (all tenants together) and each
    /// tenant's operations per second. One tenant: `Machine::solve` (exact); several:
    /// `Machine::solve_tenants`, each tenant on its own cores with its own demand, the
    /// antagonists and the migration traffic shared.
    fn solve(&self, mig_read: &[f64], mig_write: &[f64], stall: &[f64]) -> (Equilibrium, Vec<f64>) {
        let ant = self.antagonist_cores(self.now_ns);
        let k = self.loads.len();
        let masses: Vec<Cow<'_, [f64]>> = (0..k).map(|t| self.demand_mass(t)).collect();
        let demand = |t: usize| Demand {
            mass: &masses[t],
            lines_per_op: self.loads[t].shape.lines_per_op as f64,
            written_lines_per_op: self.loads[t].shape.written_lines_per_op,
            antagonist_cores: &ant,
            antagonist_mlp: self.antagonist_mlp,
            migration_read_bytes_per_s: mig_read,
            migration_write_bytes_per_s: mig_write,
            app_stall: stall[t],
            fault_ns_per_op: self.stuck_fault_ns_per_op(t),
        };
        if k == 1 {
            // Epochs in a steady state (no migration, the same placement) solve the same
            // inputs again: the last answer is reused when every input is bit-identical.
            let cores = self.tenant_cores(0);
            let d = demand(0);
            let key: Vec<u64> = [
                cores.cores,
                cores.ops_in_flight,
                cores.mlp_lines,
                cores.compute_ns_per_op,
                d.lines_per_op,
                d.written_lines_per_op,
                d.antagonist_mlp,
                d.app_stall,
                d.fault_ns_per_op,
            ]
            .iter()
            .chain(d.mass.iter())
            .chain(d.antagonist_cores.iter())
            .chain(d.migration_read_bytes_per_s.iter())
            .chain(d.migration_write_bytes_per_s.iter())
            .map(|x| x.to_bits())
            .collect();
            let mut memo = self.solve_memo.borrow_mut();
            if let Some((k, eq)) = memo.as_ref() {
                if *k == key {
                    return (eq.clone(), vec![eq.app_ops_per_s]);
                }
            }
            let eq = self.machine.solve_on(&cores, &d);
            let ops = vec![eq.app_ops_per_s];
            *memo = Some((key, eq.clone()));
            return (eq, ops);
        }
        let tenants: Vec<(CoreModel, Demand<'_>)> =
            (0..k).map(|t| (self.tenant_cores(t), demand(t))).collect();
        let te = self.machine.solve_tenants(&tenants);
        (te.total, te.ops_per_s)
    }

    /// NUMA hint faults per second tenant `t` takes on its pages outside the default tier
    /// (Mercury §4.2's `Thresh_numa` signal). NUMA balancing scans each task on its own
    /// (`task_numa_work`): one 256 MB window per `task_scan_min()` of its footprint, paced
    /// by its threads' CPU time ([`crate::tracker::numa_scan_bytes_per_s`], the same model
    /// as TPP's simulated scanner); a scanned page faults if it is touched before its next
    /// scan, which for page `p` at `λ_p` accesses per second over a scan cycle `c` (the
    /// footprint over the scan rate) happens with probability `1 − exp(−λ_p c)`. Rate =
    /// base pages scanned per second × the share of its pages that are remote and touched
    /// within a cycle. (Traces and streams: every remote page counts.)
    pub fn hint_faults_per_s(&self, t: usize) -> f64 {
        let l = &self.loads[t];
        let share = self.controls.cpu_share(TenantId(t as u16)).clamp(0.0, 1.0);
        let pages = l.workload.page_count() as usize;
        if pages == 0 || share == 0.0 {
            return 0.0;
        }
        let footprint = pages as f64 * self.page_bytes as f64 / self.scale;
        let scan = crate::tracker::numa_scan_bytes_per_s(footprint, l.cores, share);
        let cycle_s = footprint / scan;
        let span = l.span();
        let touched: f64 = match l.workload.probabilities() {
            Some(pr) => span
                .filter(|&p| self.placement[p] != TierId::DEFAULT)
                .map(|p| 1.0 - (-l.ops_per_s * pr[p - l.start] * cycle_s).exp())
                .sum(),
            None => span
                .filter(|&p| self.placement[p] != TierId::DEFAULT)
                .count() as f64,
        };
        hint_fault_rate(footprint, l.cores, share, touched / pages as f64)
    }

    /// Reclamation under per-tier limits (Mercury §4.1, `memory.per_numa_high`: a limit
    /// below a tenant's usage immediately reclaims on that tier, demoting to the next tier):
    /// for each tenant over its limit on a tier, moves of its least-accessed pages there
    /// (the kernel's LRU order; here by the workload's access probability, traces by page
    /// order) to the next tier down, one page per move.
    fn reclaim_moves(&self) -> Vec<tiermem_core::Move> {
        let mut out = Vec::new();
        if self.controls.limits.is_empty() {
            return out;
        }
        let n = self.specs.len();
        for (t, l) in self.loads.iter().enumerate() {
            for k in 0..n.saturating_sub(1) {
                let Some(limit) = self.controls.limit(TenantId(t as u16), TierId(k as u8)) else {
                    continue;
                };
                let used = self.tenant_used[t][k];
                let excess = used.saturating_sub(limit / self.page_bytes) as usize;
                if excess == 0 {
                    continue;
                }
                let mut here: Vec<usize> = l
                    .span()
                    .filter(|&p| self.placement[p].index() == k)
                    .collect();
                if let Some(pr) = l.workload.probabilities() {
                    let key = |p: &usize| pr[*p - l.start];
                    if excess < here.len() {
                        here.select_nth_unstable_by(excess, |a, b| key(a).total_cmp(&key(b)));
                    }
                    here.truncate(excess);
                    here.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.cmp(b)));
                } else {
                    here.reverse();
                    here.truncate(excess);
                }
                out.extend(here.into_iter().map(|p| tiermem_core::Move {
                    tenant: TenantId(t as u16),
                    range: PageRange::one(p as PageIdx),
                    to: TierId(k as u8 + 1),
                }));
            }
        }
        out
    }

    /// Tenant `t`'s cores as the machine sees them: its cores times the CPU share the
    /// controls give it (a CPU quota scales how fast its cores issue operations) and the
    /// share of the time its program is busy (an idle server issues none).
    fn tenant_cores(&self, t: usize) -> CoreModel {
        let share = self.controls.cpu_share(TenantId(t as u16)).clamp(0.0, 1.0);
        let busy = self.loads[t].workload.busy_share().clamp(0.0, 1.0);
        CoreModel {
            cores: self.loads[t].cores * share * busy,
            ..self.machine.cores
        }
    }

    /// Add `dt_ns` of the cores' time at the epoch's solution (per-tier latencies, each
    /// tenant's operations per second and stalled share) to `core_time`: per operation,
    /// `lines × mass_i × L_i / outstanding` waiting on tier `i` and `compute_ns` computing,
    /// as `machine::ops_per_s` divides an operation's time.
    fn count_core_time(&mut self, latency_ns: &[f64], ops: &[f64], stall: &[f64], dt_ns: f64) {
        let n = self.specs.len();
        let mut add = CoreTime {
            memory_ns: vec![0.0; n],
            ..CoreTime::default()
        };
        for (t, &o) in ops.iter().enumerate() {
            let c = self.tenant_cores(t);
            let lines = self.loads[t].shape.lines_per_op as f64;
            let outstanding = c.mlp_lines.min(c.ops_in_flight * lines).max(1e-12);
            let done = o * dt_ns / 1e9;
            let mass = self.demand_mass(t);
            add.compute_ns += done * c.compute_ns_per_op;
            add.fault_ns += done * self.stuck_fault_ns_per_op(t);
            for i in 0..n.min(latency_ns.len()) {
                add.memory_ns[i] += done * lines * mass[i] * latency_ns[i] / outstanding;
            }
            add.stalled_ns += c.cores * dt_ns * stall.get(t).copied().unwrap_or(0.0);
        }
        let ct = &mut self.core_time;
        ct.memory_ns.resize(n, 0.0);
        ct.compute_ns += add.compute_ns;
        ct.fault_ns += add.fault_ns;
        ct.stalled_ns += add.stalled_ns;
        for (a, b) in ct.memory_ns.iter_mut().zip(&add.memory_ns) {
            *a += b;
        }
    }

    fn epoch(&mut self, step_ns: u64, mig_read: &[f64], mig_write: &[f64], stall: &[f64]) {
        let k = self.loads.len();
        let mut changed = false;
        for (t, l) in self.loads.iter_mut().enumerate() {
            if l.workload.advance_to(self.now_ns) {
                l.shape = l.workload.op_shape();
                l.exact = l.workload.probabilities().is_some();
                changed = true;
                let len = l.workload.page_count() as usize;
                self.tracker
                    .set_tenant_workload(t, l.start, len, l.workload.probabilities());
            }
        }
        if changed {
            self.tracker
                .set_lines_per_op(self.loads[0].shape.lines_per_op.max(1) as f64);
            self.recompute_mass();
            if self.any_compressed {
                // New access probabilities: redraw every compressed page's next access.
                let pages: Vec<PageIdx> = self.due_of.keys().copied().collect();
                self.due.clear();
                self.due_of.clear();
                for p in pages {
                    self.schedule_fault(p as usize);
                }
                for l in &mut self.loads {
                    l.stuck_mass.iter_mut().for_each(|m| *m = 0.0);
                }
                for p in self.stuck.iter().map(|&p| p as usize).collect::<Vec<_>>() {
                    let t = self.tenant_of(p);
                    if let Some(w) = self.loads[t].prob(p) {
                        let i = self.placement[p].index();
                        self.loads[t].stuck_mass[i] += w;
                    }
                }
            }
        }
        // Compressed pages whose next access falls in this epoch fault now; their service
        // time stalls their tenant's cores (a fault blocks its core: no memory-level
        // parallelism).
        let mut stall = stall.to_vec();
        if self.any_compressed {
            let end = self.now_ns + step_ns;
            let mut fault_ns: Vec<f64> = self
                .loads
                .iter_mut()
                .map(|l| std::mem::take(&mut l.fault_carry_ns))
                .collect();
            // Stuck pages come back (one fault each) as tier 0 has room again.
            while self.used_pages[0] < self.capacity_pages[0] {
                let Some(p) = self.stuck.pop_first() else {
                    break;
                };
                let (p, t) = (p as usize, self.tenant_of(p as usize));
                let from = self.placement[p].index();
                let w = self.loads[t].prob(p).unwrap_or(0.0);
                self.loads[t].stuck_mass[from] -= w;
                let (t, ns) = self.fault(p);
                fault_ns[t] += ns;
            }
            while let Some(&Reverse((t, p))) = self.due.peek() {
                if t >= end {
                    break;
                }
                self.due.pop();
                if self.due_of.get(&p) == Some(&t) {
                    self.due_of.remove(&p);
                    let (t, ns) = self.fault(p as usize);
                    fault_ns[t] += ns;
                }
            }
            for (t, ns) in fault_ns.iter().enumerate() {
                if *ns > 0.0 {
                    let core_ns = self.tenant_cores(t).cores.max(1e-9) * step_ns as f64;
                    stall[t] = (stall[t] + ns / core_ns).min(0.95);
                }
            }
        }
        let (eq, ops) = self.solve(mig_read, mig_write, &stall);
        for (l, o) in self.loads.iter_mut().zip(&ops) {
            l.ops_per_s = *o;
        }
        let step_s = step_ns as f64 / 1e9;
        let epoch_ops: f64 = ops.iter().sum::<f64>() * step_s;
        let mut counted = if self.completed_at_ns.is_some() {
            0.0
        } else {
            1.0
        };
        if let (Some(target), None) = (self.work_ops, self.completed_at_ns) {
            if self.ops_done + epoch_ops >= target {
                // Operations run at a constant rate within the epoch.
                let f = ((target - self.ops_done) / epoch_ops.max(1e-300)).clamp(0.0, 1.0);
                self.completed_at_ns = Some(self.now_ns as f64 + f * step_ns as f64);
                counted = f;
            }
        }
        if counted > 0.0 {
            self.count_core_time(&eq.latency_ns, &ops, &stall, step_ns as f64 * counted);
        }
        self.ops_done += epoch_ops;
        for (t, o) in ops.iter().enumerate() {
            self.tracker.add_tenant_ops(t, o * step_s);
        }
        let spans = self.tracker.wants_spans();
        // Sampled accesses: the access path, tenant by tenant. Exact trackers draw from
        // every page's probability only when every tenant has one (below); beside a
        // tenant without (a stream, a trace) every tenant's accesses feed them as sampled.
        let all_exact = self.loads.iter().all(|l| l.exact);
        for t in 0..k {
            if k > 1 {
                self.tracker
                    .set_lines_per_op(self.loads[t].shape.lines_per_op.max(1) as f64);
            }
            let l = &mut self.loads[t];
            let want = l.ops_per_s * step_s / self.accesses_per_sample + l.sample_carry;
            let n = want.floor() as u64;
            l.sample_carry = want - n as f64;
            let (exact, start) = (l.exact, l.start);
            let dt_per = step_ns as f64 / n.max(1) as f64;
            if exact && all_exact {
                self.draw_samples(t, n);
                continue;
            }
            for i in 0..n {
                if self.loads[t].maps {
                    self.apply_map_events(t);
                }
                let l = &mut self.loads[t];
                if l.workload.finished() {
                    break;
                }
                let a = l.workload.next(&mut self.rng);
                let page = start + a.page as usize;
                let tier = self.placement[page];
                l.measured[tier.index()] += 1;
                if self.any_compressed && self.is_compressed(tier) {
                    // A compressed page is not mapped: no PEBS sample, a fault. Stationary
                    // workloads drew it exactly (above); a trace faults on its sampled
                    // access (charged to the next epoch).
                    if !exact {
                        let (_, ns) = self.fault(page);
                        self.loads[t].fault_carry_ns += ns;
                    }
                    continue;
                }
                let time = self.now_ns + (i as f64 * dt_per) as u64;
                self.tracker.on_access(page as PageIdx, a.write, time);
                if spans {
                    let l = &self.loads[t];
                    let span = l.workload.span_pages() as usize;
                    if span > 1 {
                        let len = l.workload.page_count() as usize;
                        let first = a.page as usize;
                        self.tracker
                            .on_access_span((1..span.min(len)).map(|i| start + (first + i) % len));
                    }
                }
            }
        }
        if k > 1 {
            self.tracker
                .set_lines_per_op(self.loads[0].shape.lines_per_op.max(1) as f64);
        }
        self.now_ns += step_ns;
        self.quantum.add(&eq, step_s);
        if !self.stuck.is_empty() {
            for (l, o) in self.loads.iter().zip(&ops) {
                for i in 0..l.stuck_mass.len() {
                    let f = o * l.stuck_mass[i].max(0.0) * step_s;
                    self.quantum_faults[i] += f;
                    self.interval_faults[i] += f;
                }
            }
        }
        self.interval.add(&eq, step_s);
        for (t, &o) in ops.iter().enumerate() {
            let m = self.demand_mass(t).into_owned();
            let shape = &self.loads[t].shape;
            let lines = o * shape.lines_per_op as f64;
            let latency: f64 = m.iter().zip(&eq.latency_ns).map(|(a, l)| a * l).sum();
            let bytes = o
                * (shape.lines_per_op as f64 + shape.written_lines_per_op)
                * tiermem_core::CACHELINE_BYTES as f64;
            self.interval
                .add_tenant(t, o, m.iter().map(|x| x * lines), (latency, bytes), step_s);
            self.quantum
                .add_tenant(t, o, m.iter().map(|x| x * lines), (latency, bytes), step_s);
        }
        // Exact trackers need each page's access rate: one tenant, its probabilities at
        // its rate; several, every page's share of all operations.
        let total_ops: f64 = ops.iter().sum();
        let mut rates = std::mem::take(&mut self.rates);
        let probs: Option<&[f64]> = if k == 1 {
            self.loads[0].workload.probabilities()
        } else if self.loads.iter().all(|l| l.exact) && total_ops > 0.0 {
            rates.clear();
            for (l, o) in self.loads.iter().zip(&ops) {
                let share = o / total_ops;
                let pr = l.workload.probabilities().expect("exact");
                rates.extend(pr.iter().map(|x| x * share));
            }
            Some(&rates)
        } else {
            None
        };
        for t in 0..k {
            let share = self.controls.cpu_share(TenantId(t as u16));
            let pace = crate::tracker::scan_pace(self.loads[t].cores, share);
            self.tracker.set_scan_pace(t, pace);
        }
        let mut ctx = EpochContext {
            now_ns: self.now_ns,
            placement: &self.placement,
            probabilities: probs,
            ops_per_s: eq.app_ops_per_s,
            rng: &mut self.rng,
        };
        self.tracker.on_epoch(&mut ctx);
        self.rates = rates;
        for t in 0..k {
            if !self.loads[t].exact {
                self.recompute_tenant_mass(t);
                self.loads[t].measured.iter_mut().for_each(|m| *m = 0);
            }
        }
        self.last_eq = eq;
        if self.now_ns >= self.next_record_ns {
            self.flush_record();
            self.next_record_ns += self.record_ns;
        }
    }

    /// A stationary tenant's `n` sampled accesses of this epoch when every tenant is
    /// stationary: the trackers draw time-to-fault and access bits from the exact
    /// probabilities, so only the draws PEBS samples need a page. The others are passed
    /// (`Workload::skip`, `SimTracker::skip_draws`): the cost follows the samples, not the
    /// accesses. A compressed page is not mapped: its access is no load PEBS counts (its
    /// faults were drawn exactly at the epoch's start), so a passed draw counts for the
    /// share of the tenant's accesses that reach mapped pages.
    fn draw_samples(&mut self, t: usize, n: u64) {
        let start = self.loads[t].start;
        let mapped = if self.any_compressed {
            let m = &self.loads[t].mass;
            let compressed: f64 = (0..m.len())
                .filter(|&i| self.pools[i].is_some())
                .map(|i| m[i])
                .sum();
            (1.0 - compressed).clamp(0.0, 1.0)
        } else {
            1.0
        };
        if self.tracker.samples_every_draw(mapped) {
            if self.any_compressed {
                for _ in 0..n {
                    self.draw_sampled(t, start);
                }
                return;
            }
            // Every draw is a sample (MEMTIS).
            self.draw_in_batches(t, n, SimTracker::on_exact_accesses);
            return;
        }
        if !self.any_compressed && self.loads[t].workload.skip_is_nothing() {
            if let Some(k) = self.tracker.take_sampled_draws(n) {
                // The same samples as draw by draw (see `take_sampled_draws`), and the same
                // draws: passing the others takes nothing from the generator.
                self.draw_in_batches(t, k, SimTracker::on_sampled);
                return;
            }
        }
        let mut drawn = 0;
        while drawn < n {
            let left = n - drawn;
            let d = match self.tracker.draws_to_next_sample(mapped) {
                Some(d) if d <= left => d,
                _ => {
                    self.loads[t].workload.skip(left, &mut self.rng);
                    self.tracker.skip_draws(left, mapped);
                    return;
                }
            };
            if d > 1 {
                self.loads[t].workload.skip(d - 1, &mut self.rng);
                self.tracker.skip_draws(d - 1, mapped);
            }
            drawn += d;
            self.draw_sampled(t, start);
        }
    }

    /// `n` draws of tenant `t`'s workload, handed to the tracker by `deliver` (with the
    /// tenant's first page) in batches small enough to stay in cache.
    fn draw_in_batches(
        &mut self,
        t: usize,
        n: u64,
        deliver: fn(&mut SimTracker, usize, &[Access]),
    ) {
        let start = self.loads[t].start;
        let mut drawn = std::mem::take(&mut self.drawn);
        let mut left = n;
        while left > 0 {
            let b = left.min(SAMPLE_BATCH);
            drawn.clear();
            self.loads[t]
                .workload
                .next_batch(&mut self.rng, b as usize, &mut drawn);
            deliver(&mut self.tracker, start, &drawn);
            left -= b;
        }
        self.drawn = drawn;
    }

    /// One draw PEBS samples (`draw_samples`); an access to a compressed page is no load.
    #[inline]
    fn draw_sampled(&mut self, t: usize, start: usize) {
        let a = self.loads[t].workload.next(&mut self.rng);
        let page = start + a.page as usize;
        let tier = self.placement[page];
        if self.any_compressed && self.is_compressed(tier) {
            return;
        }
        self.tracker.on_exact_access(page as PageIdx, a.write);
    }

    fn flush_record(&mut self) {
        let a = &self.interval;
        if a.dt_s <= 0.0 {
            return;
        }
        let n = self.specs.len();
        let app_total: f64 = a.app_lines.iter().sum();
        self.records.push(Record {
            t_s: self.now_ns as f64 / 1e9,
            ops_per_s: a.ops / a.dt_s,
            avg_latency_ns: a.avg_lat / a.dt_s,
            latency_ns: (0..n).map(|i| a.lat[i] / a.dt_s).collect(),
            read_bytes_per_s: (0..n).map(|i| a.rb[i] / a.dt_s).collect(),
            write_bytes_per_s: (0..n).map(|i| a.wb[i] / a.dt_s).collect(),
            used_bytes: (0..n).map(|i| self.used_bytes(i) as f64).collect(),
            used_pages: self.used_pages.clone(),
            app_share: (0..n)
                .map(|i| {
                    if app_total > 0.0 {
                        a.app_lines[i] / app_total
                    } else {
                        0.0
                    }
                })
                .collect(),
            migrated_bytes_per_s: self.interval_mig_bytes / a.dt_s,
            pages_tried: self.interval_tried,
            pages_applied: self.interval_applied,
            faults_per_s: self.interval_faults.iter().map(|f| f / a.dt_s).collect(),
            tenant_ops_per_s: a.tenant_ops.iter().map(|o| o / a.dt_s).collect(),
            tenant_app_share: a
                .tenant_lines
                .iter()
                .map(|l| {
                    let total: f64 = l.iter().sum();
                    l.iter()
                        .map(|x| if total > 0.0 { x / total } else { 0.0 })
                        .collect()
                })
                .collect(),
            tenant_latency_ns: a.tenant_lat.iter().map(|x| x / a.dt_s).collect(),
            tenant_bandwidth_bytes_per_s: a.tenant_bytes.iter().map(|x| x / a.dt_s).collect(),
            tenant_local_bytes: self
                .tenant_used
                .iter()
                .map(|u| (u[0] * self.page_bytes) as f64)
                .collect(),
            tenant_local_limit_bytes: (0..self.loads.len())
                .map(|t| {
                    self.controls
                        .limit(TenantId(t as u16), TierId::DEFAULT)
                        .map_or(f64::NAN, |b| b as f64)
                })
                .collect(),
            tenant_cpu_share: (0..self.loads.len())
                .map(|t| self.controls.cpu_share(TenantId(t as u16)))
                .collect(),
            tenant_hint_faults_per_s: self
                .tenant_telemetry
                .iter()
                .map(|x| x.hint_faults_per_s)
                .collect(),
        });
        self.interval_faults.iter_mut().for_each(|f| *f = 0.0);
        self.interval.reset();
        self.interval_mig_bytes = 0.0;
        self.interval_tried = 0.0;
        self.interval_applied = 0.0;
    }

    fn noisy(&mut self, x: f64) -> f64 {
        if self.noise <= 0.0 {
            return x;
        }
        let n = Normal::new(1.0, self.noise).expect("valid noise");
        x * n.sample(&mut self.rng).max(0.0)
    }
}

/// What a migration operation costs the application's cores (`[machine.migration]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MigrationCharge {
    /// The threads have cores of their own: each operation's shootdown interrupt.
    Interrupt,
    /// `threads_on_app_cores`: the interrupt, and the threads' time on the operation.
    ThreadsOnAppCores,
    /// `synchronous`: the whole operation, waited for.
    Synchronous,
}

impl MigrationCharge {
    fn of(m: &crate::config::MigrationConfig) -> MigrationCharge {
        if m.synchronous {
            MigrationCharge::Synchronous
        } else if m.threads_on_app_cores {
            MigrationCharge::ThreadsOnAppCores
        } else {
            MigrationCharge::Interrupt
        }
    }
}

/// The share of a core each migration thread runs: all of one, or with
/// `threads_on_app_cores` an equal share beside the application's runnable threads.
fn thread_core_share(m: &crate::config::MachineConfig) -> f64 {
    let mg = &m.migration;
    if !mg.threads_on_app_cores {
        return 1.0;
    }
    let cores = m.app_cores;
    let app_threads = mg.app_threads.unwrap_or(cores);
    (cores / (app_threads + mg.threads)).min(1.0)
}

/// The largest share of a quantum a synchronous migration keeps the cores waiting (the
/// rest of the wait carries over): just under 1, so that the fixed point stays regular.
const SYNC_STALL_MAX: f64 = 0.999;

/// Sampled draws are made this many at a time (`draw_samples`): 32 KiB of accesses, in
/// the first-level cache.
const SAMPLE_BATCH: u64 = 4096;

/// The smallest PEBS sample period in a tracker spec.
fn pebs_period(spec: &TrackerSpec) -> Option<u64> {
    match spec {
        TrackerSpec::Pebs { sample_period } => Some(*sample_period),
        TrackerSpec::Combined(ts) => ts.iter().filter_map(pebs_period).min(),
        _ => None,
    }
}

fn initial_placement(how: &str, pages: usize, capacity: &[u64], rng: &mut SmallRng) -> Vec<TierId> {
    let fill_in_order = |order: &[usize]| -> Vec<TierId> {
        let mut out = Vec::with_capacity(pages);
        let mut tier = 0;
        let mut used = 0u64;
        for _ in 0..pages {
            while used >= capacity[order[tier]] {
                tier += 1;
                used = 0;
            }
            out.push(TierId(order[tier] as u8));
            used += 1;
        }
        out
    };
    let n = capacity.len();
    if let Some(t) = how
        .strip_prefix("tier:")
        .and_then(|t| t.parse::<usize>().ok())
    {
        let mut order = vec![t];
        order.extend((0..n).filter(|&i| i != t));
        return fill_in_order(&order);
    }
    let mut p = fill_in_order(&(0..n).collect::<Vec<_>>());
    if how == "random" {
        // Fisher–Yates keeps per-tier counts and randomises which pages go where.
        for i in (1..p.len()).rev() {
            let j = rng.gen_range(0..=i);
            p.swap(i, j);
        }
    }
    p
}

impl Backend for SimBackend {
    fn page_bytes(&self) -> u64 {
        self.page_bytes
    }
    fn tier_specs(&self) -> &[TierSpec] {
        &self.specs
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "simulator".into(),
            trackers: vec![
                (TrackerKind::Pebs, Provision::Native),
                (TrackerKind::HintFault, Provision::Native),
                (TrackerKind::AccessBit, Provision::Native),
            ],
            telemetry: vec![
                (TelemetryKind::LoadedLatency, Provision::Native),
                (TelemetryKind::FaultRate, Provision::Native),
            ],
            // Any naturally aligned power-of-two range (a `PageRange` holds at most 2^31
            // pages), as one operation. Whether a given range exists depends on the page
            // space (a move past its end is malformed and dropped), not on what the backend
            // can do: a policy that may move 2 MiB runs on a footprint smaller than that and
            // simply finds no such region.
            max_granularity_bytes: self.page_bytes << 31,
            max_tenants: self.tenants.len(),
            tier_limits: true,
            cpu_shares: true,
        }
    }
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()> {
        // A simulated access must not stand for more cache-line loads than one PEBS sample
        // period: otherwise one access yields several samples of the same page, clumping
        // the samples and inflating the tracker's noise.
        let lines = self.loads[0].shape.lines_per_op.max(1) as f64;
        if let Some(period) = pebs_period(spec) {
            let k = (period as f64 / self.scale / lines).max(1.0);
            if k < self.accesses_per_sample {
                self.accesses_per_sample = k;
                for l in &mut self.loads {
                    l.workload.set_accesses_per_sample(k);
                }
            }
        }
        self.tracker = SimTracker::new(
            spec,
            self.placement.len(),
            self.accesses_per_sample,
            self.scale,
        );
        self.tracker.set_lines_per_op(lines);
        // Hint-fault scanners scan each tenant on its own, as Linux scans each task.
        let tasks: Vec<(usize, usize)> = self
            .loads
            .iter()
            .map(|l| (l.start, l.workload.page_count() as usize))
            .collect();
        self.tracker.set_scan_tasks(&tasks);
        if self.tracker.access_bits().is_some() {
            let seed = self.rng.gen();
            self.tracker.reseed(seed);
            for t in 0..self.loads.len() {
                let l = &self.loads[t];
                let (start, len) = (l.start, l.workload.page_count() as usize);
                let probs = l.workload.probabilities();
                self.tracker.set_tenant_workload(t, start, len, probs);
            }
        }
        Ok(())
    }
    fn advance(&mut self, dt_ns: u64) -> Result<()> {
        self.quantum.reset();
        self.events.clear();
        let dt = dt_ns.max(1);
        let dt_s = dt as f64 / 1e9;
        let mig_read: Vec<f64> = self.pending_mig_read.iter().map(|b| b / dt_s).collect();
        let mig_write: Vec<f64> = self.pending_mig_write.iter().map(|b| b / dt_s).collect();
        // A migration's TLB shootdown stops the cores of the tenant whose pages moved.
        // Synchronous migration: the cores wait for every operation in full, the wait carried
        // into the next quanta when it exceeds one. Threads on the application's cores: each
        // busy thread holds one of them, at most its share of the quantum.
        let (charge, mig_threads) = (self.charge, self.mig_threads);
        let dt_ns = dt as f64;
        let stall: Vec<f64> = self
            .loads
            .iter_mut()
            .map(|l| {
                let shootdowns = std::mem::take(&mut l.pending_shootdown_ns);
                match charge {
                    MigrationCharge::Synchronous => {
                        let f = (l.owed_core_ns / dt_ns).min(SYNC_STALL_MAX);
                        l.owed_core_ns -= f * dt_ns;
                        f
                    }
                    MigrationCharge::ThreadsOnAppCores => {
                        let busy = l.owed_core_ns.min(mig_threads * dt_ns);
                        l.owed_core_ns -= busy;
                        (shootdowns / dt_ns + busy / (dt_ns * l.cores.max(1e-9))).min(0.9)
                    }
                    MigrationCharge::Interrupt => (shootdowns / dt_ns).min(0.9),
                }
            })
            .collect();
        self.pending_mig_read.iter_mut().for_each(|b| *b = 0.0);
        self.pending_mig_write.iter_mut().for_each(|b| *b = 0.0);
        self.last_quantum_ns = dt;
        let end = self.now_ns + dt;
        while self.now_ns < end {
            let step = (end - self.now_ns)
                .min(self.epoch_ns)
                .min(self.next_change_ns(self.now_ns) - self.now_ns)
                .min(self.next_record_ns.saturating_sub(self.now_ns).max(1));
            self.epoch(step, &mig_read, &mig_write, &stall);
        }
        // Telemetry for the quantum, as uncore counters would report it.
        let n = self.specs.len();
        let q = std::mem::replace(&mut self.quantum, Accum::new(n));
        for i in 0..n {
            let occ = q.occupancy[i] / q.dt_s;
            let rate = q.reads[i] / q.dt_s;
            let (occ, rate) = (self.noisy(occ), self.noisy(rate));
            self.telemetry[i] = TierTelemetry {
                used_bytes: self.used_bytes(i),
                capacity_bytes: self.capacity_pages[i] * self.page_bytes,
                occupancy: occ,
                arrival_rate_per_s: rate,
                read_bytes_per_s: q.rb[i] / q.dt_s,
                write_bytes_per_s: q.wb[i] / q.dt_s,
                faults_per_s: self.quantum_faults[i] / q.dt_s,
            };
        }
        self.quantum_faults.iter_mut().for_each(|f| *f = 0.0);
        self.tenant_telemetry = (0..self.loads.len())
            .map(|t| TenantTelemetry {
                ops_per_s: q.tenant_ops.get(t).map_or(0.0, |x| x / q.dt_s),
                avg_latency_ns: q.tenant_lat.get(t).map_or(0.0, |x| x / q.dt_s),
                bandwidth_bytes_per_s: q.tenant_bytes.get(t).map_or(0.0, |x| x / q.dt_s),
                hint_faults_per_s: if self.hint_fault_telemetry {
                    self.hint_faults_per_s(t)
                } else {
                    0.0
                },
                used_bytes: self.tenant_used[t]
                    .iter()
                    .map(|u| u * self.page_bytes)
                    .collect(),
                footprint_bytes: self.loads[t].workload.page_count() as u64 * self.page_bytes,
                fault_stall_ms_per_s: 0.0,
                cpu_per_s: 0.0,
                core_counters: None,
            })
            .collect();
        self.quantum = q;
        self.tracker.drain(&mut self.events);
        self.events.append(&mut self.fault_events);
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.now_ns
    }
    fn observe(&mut self) -> Snapshot<'_> {
        self.moved_log_read = true;
        Snapshot {
            now_ns: self.now_ns,
            quantum_ns: self.last_quantum_ns,
            page_bytes: self.page_bytes,
            tier_specs: &self.specs,
            tiers: &self.telemetry,
            placement: &self.placement,
            events: &self.events,
            tenants: &self.tenants,
            controls: &self.controls,
            tenant_telemetry: &self.tenant_telemetry,
            access_bits: self.tracker.access_bits(),
            moved: self.moved_log_whole.then_some(self.moved_log.as_slice()),
        }
    }
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
        // A snapshot has shown the log: it starts again for the next one.
        if std::mem::take(&mut self.moved_log_read) {
            self.moved_log.clear();
            self.moved_log_whole = true;
        }
        self.controls = plan.controls.clone();
        let mut a = Applied::default();
        let page = self.page_bytes;
        let mut quota = quota_bytes.map(|q| (q as f64 * self.scale) as u64);
        // The migration threads' time in the next quantum bounds how much they can move:
        // each move is one operation (fixed cost: fault, unmap, shootdown) plus its copy.
        // A move longer than a whole quantum of the threads (a 2 MiB copy when quanta are
        // 100 µs) starts when they are idle and keeps them busy into the next quanta.
        let budget = self.last_quantum_ns as f64 * self.mig_threads;
        let mut thread_ns = budget - std::mem::take(&mut self.mig_debt_ns);
        let n_tiers = self.specs.len();
        let reclaim = self.reclaim_moves();
        for mv in reclaim.iter().chain(&plan.moves) {
            let pages = mv.range.len as u64;
            a.pages_tried += pages;
            let to = mv.to;
            let t = mv.tenant.index();
            if to.index() >= n_tiers
                || t >= self.tenants.len()
                || mv.range.end() as usize > self.placement.len()
                || !self.loads[t].span().contains(&(mv.range.start as usize))
                || mv.range.end() as usize > self.loads[t].span().end
            {
                a.moves_malformed += 1;
                continue;
            }
            let range = mv.range.start as usize..mv.range.end() as usize;
            let moving = self.placement[range.clone()]
                .iter()
                .filter(|&&f| f != to)
                .count() as u64;
            a.pages_already_there += pages - moving;
            if moving == 0 {
                continue;
            }
            let bytes = moving * page;
            let from = self.placement[range.clone()]
                .iter()
                .find(|&&f| f != to)
                .map_or(to, |&f| f);
            let factor = self.copy_factor[to.index()].max(self.copy_factor[from.index()]);
            let mut op_ns = self.per_op_ns + bytes as f64 / self.copy_bytes_per_s * 1e9 * factor;
            if self.any_compressed {
                op_ns += self.codec_ns(range.clone(), to);
            }
            let outlasts = op_ns > budget && thread_ns >= budget;
            let synchronous = self.charge == MigrationCharge::Synchronous;
            let no_time = !synchronous && thread_ns < op_ns && !outlasts;
            if quota.is_some_and(|q| q < bytes) || no_time {
                a.pages_over_quota += moving;
                continue;
            }
            // A move lands whole or not at all: the tier and the tenant's limit on it
            // must hold every page of it.
            let limit_pages = self
                .controls
                .limit(mv.tenant, to)
                .map_or(u64::MAX, |b| b / page);
            let over_pages = !self.is_compressed(to)
                && self.used_pages[to.index()] + moving > self.capacity_pages[to.index()];
            if over_pages || self.tenant_used[t][to.index()] + moving > limit_pages {
                a.pages_no_capacity += moving;
                continue;
            }
            // Into a pool: every page must compress below the tier's `max_compressed`, and
            // the pool's frames must hold them all after packing.
            if let Some(pool) = &self.pools[to.index()] {
                let sizes: Vec<u64> = range
                    .clone()
                    .filter(|&p| self.placement[p] != to)
                    .map(|p| pool.compressed_bytes(self.lz4_fraction(p)))
                    .collect();
                let fits = sizes.iter().all(|&b| pool.accepts(b))
                    && self.pools[to.index()]
                        .as_mut()
                        .expect("a pool")
                        .try_add(&sizes);
                if !fits {
                    a.pages_no_capacity += moving;
                    continue;
                }
            }
            if let Some(q) = quota.as_mut() {
                *q -= bytes;
            }
            thread_ns -= op_ns;
            for p in range {
                if self.placement[p] == to {
                    continue;
                }
                let w = self.loads[t].prob(p);
                self.relocate(p, to, t, w);
            }
            // After a full flush every core walks the page tables again for what it uses,
            // whoever waits for the move.
            let refill_ns = if pages >= self.full_flush_pages {
                self.full_flush_refill_ns
            } else {
                0.0
            };
            match self.charge {
                MigrationCharge::Interrupt => {
                    self.loads[t].pending_shootdown_ns += self.move_shootdown_ns + refill_ns;
                }
                MigrationCharge::ThreadsOnAppCores => {
                    self.loads[t].pending_shootdown_ns += self.move_shootdown_ns + refill_ns;
                    self.loads[t].owed_core_ns += op_ns;
                }
                MigrationCharge::Synchronous => self.loads[t].owed_core_ns += op_ns + refill_ns,
            }
            a.ops_applied += 1;
            a.pages_applied += moving;
            a.bytes_moved += bytes;
        }
        if self.loads.iter().any(|l| l.exact) && a.pages_applied > 0 {
            self.applies_since_recompute += 1;
            if self.applies_since_recompute >= self.mass_recompute_every() {
                self.recompute_mass();
            } else {
                for l in self.loads.iter_mut().filter(|l| l.exact) {
                    l.mass.iter_mut().for_each(|m| *m = m.max(0.0));
                }
            }
        }
        if thread_ns < 0.0 && self.charge != MigrationCharge::Synchronous {
            self.mig_debt_ns = -thread_ns;
        }
        self.interval_mig_bytes += a.bytes_moved as f64;
        self.interval_tried += a.pages_tried as f64;
        self.interval_applied += a.pages_applied as f64;
        a
    }
}

/// Page indices of a placement in a given tier (helper for tests and harnesses).
pub fn pages_in(placement: &[TierId], tier: TierId) -> Vec<PageIdx> {
    placement
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == tier)
        .map(|(i, _)| i as PageIdx)
        .collect()
}
