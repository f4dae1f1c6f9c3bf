//! The runtime as a core [`Backend`]: the same seam the simulator implements. The manager
//! thread runs the core [`Engine`] over it.

use crate::config::RuntimeConfig;
use crate::runtime::fault_around::{PAGES_2M, PAGES_64K};
use crate::runtime::{MoveResult, RangeBufs, Runtime, EVICT_BATCH, EVICT_SLOTS, SHARED_RECHECK_NS};
use crate::sys::{self, PAGE};
use tiermem_core::{
    Applied, Backend, Capabilities, Controller, Controls, Engine, Error, ErrorKind, HeatEvent,
    PageRange, Plan,
    Policy, Provision, Result, Snapshot, TelemetryKind, TenantId, TenantSpec, TierId, TierSpec,
    TenantTelemetry, TierTelemetry, TrackerKind, TrackerSpec,
};
use tiermem_policies::budget::BudgetGuard;
use tiermem_policies::slo::SloController;
use tiermem_policies::BuildContext;

/// How the runtime stands in for PEBS (no PMU in user space, nor on most VMs): every hint
/// fault, tier fault and first touch the hint-fault sampler sees becomes one sample.
const PEBS_EMULATION: &str = "one sample per hint fault, tier fault or first touch";
/// How the runtime measures loaded latency without a PMU.
const LATENCY_EMULATION: &str = "compressed tiers: fault rate and Little's law over measured fault service times; DRAM: its unloaded latency at a touch rate estimated from hint faults";

/// What the Linux runtime gives policies (checked by `Engine::new`, and by `tiermem run`
/// before the program starts).
pub fn capabilities() -> Capabilities {
    Capabilities {
        backend: "linux runtime".into(),
        trackers: vec![
            (TrackerKind::HintFault, Provision::Native),
            (
                TrackerKind::Pebs,
                Provision::Emulated(PEBS_EMULATION.into()),
            ),
        ],
        telemetry: vec![
            (TelemetryKind::FaultRate, Provision::Native),
            (
                TelemetryKind::LoadedLatency,
                Provision::Emulated(LATENCY_EMULATION.into()),
            ),
        ],
        max_granularity_bytes: (EVICT_SLOTS * PAGE) as u64,
        max_tenants: 1,
        // DRAM's (tier 0's): the SLO controller's limit becomes the budget in force.
        tier_limits: true,
        cpu_shares: false,
    }
}

/// The configured policy under the DRAM budget guard (the guard alone when none is named).
pub fn build_policy(cfg: &RuntimeConfig) -> Result<BudgetGuard> {
    Ok(match &cfg.policy {
        None => {
            let guard = BudgetGuard::alone(
                cfg.quantum_ns(),
                cfg.scan_period_ns(),
                cfg.sampler.scan_pages,
            )
            .with_heat_block(crate::runtime::SAMPLE_BLOCK_PAGES);
            // Under the SLO controller the budget is a probe: only pages not seen in use go.
            if cfg.slo_config().is_some() {
                guard.spare_active()
            } else {
                guard
            }
        }
        Some(p) => BudgetGuard::over(tiermem_policies::build_with(
            p,
            cfg.colloid.as_ref(),
            BuildContext {
                page_bytes: Some(PAGE as u64),
            },
        )?),
    })
}

/// Refuse, before the program starts, a policy the runtime cannot serve (one line, exit 2).
pub fn check_policy(cfg: &RuntimeConfig) -> Result<String> {
    let p = build_policy(cfg)?;
    let caps = capabilities();
    caps.check(&p.name(), &p.needs())?;
    Ok(caps.describe_tracker(&p.tracker()))
}

pub struct RuntimeBackend {
    rt: &'static Runtime,
    specs: Vec<TierSpec>,
    telemetry: Vec<TierTelemetry>,
    placement: Vec<TierId>,
    events: Vec<HeatEvent>,
    scan_period_ns: u64,
    scan_pages: u64,
    next_scan_ns: u64,
    next_shared_check_ns: u64,
    now: u64,
    /// The quantum the last `advance` was asked to run (the engine's: the policy's, not
    /// `RuntimeConfig::quantum_ns`), which `observe` reports (the `Backend` contract).
    quantum_ns: u64,
    /// Compression output buffer of `apply` (used without the state lock).
    cbuf: Vec<u8>,
    range_bufs: RangeBufs,
    /// The moves of a batch that are not node moves (`Runtime::node_batch`).
    rest: Vec<(usize, u8)>,
    /// The fault thread's kick counter as last seen (`Runtime::kick`).
    kicks_seen: u32,
    /// One tenant: this process.
    tenants: Vec<TenantSpec>,
    controls: Controls,
    /// The policy asked for PEBS: the sampler's events are delivered as samples.
    pebs_emulated: bool,
    /// Counters at the previous `observe` (telemetry is per quantum): time, hint faults,
    /// and per compressed tier (faults, fault service ns).
    last_ns: u64,
    last_hint_faults: u64,
    last_tier: Vec<(u64, u64)>,
    /// The one tenant's telemetry (its fault stall, for the SLO controller) and the stall
    /// counter (tier-fault service + waits for room, ns) at the previous `observe`.
    tenant_telemetry: Vec<TenantTelemetry>,
    last_stall_ns: u64,
    /// The SLO mode's sampler slows down where its samples come back hot (`adapt_scan`):
    /// the period's multiplier (1..=SCAN_SLOWDOWN_MAX), and the sampler's counters (samples,
    /// hint faults) when it was last set.
    scan_slowdown: u64,
    scan_adapt_at: (u64, u64),
}

/// The SLO mode's sampler covers the resident blocks at most once in this long.
const SAMPLE_PASS_NS: u64 = 1_000_000_000;
/// How far the SLO mode's sampler slows down over memory that is all hot (16 x 100 ms).
const SCAN_SLOWDOWN_MAX: u64 = 16;
/// Samples between two adjustments of the sampler's period (0.2 s at 256 per 100 ms: from
/// 1x to 16x in 3 s of hot samples).
const SCAN_ADAPT_SAMPLES: u64 = 512;

impl RuntimeBackend {
    pub fn new(rt: &'static Runtime) -> RuntimeBackend {
        // Capacities are not bounds here: the budget policy limits DRAM, pools grow.
        let specs = tier_specs(&rt.cfg).expect("Runtime::init parsed these compressed tiers");
        RuntimeBackend {
            rt,
            specs,
            telemetry: Vec::new(),
            placement: Vec::new(),
            events: Vec::new(),
            scan_period_ns: rt.cfg.scan_period_ns(),
            scan_pages: rt.cfg.sampler.scan_pages,
            next_scan_ns: 0,
            next_shared_check_ns: 0,
            now: sys::now_ns(),
            quantum_ns: rt.cfg.quantum_ns(),
            cbuf: Vec::with_capacity(8192),
            range_bufs: RangeBufs::default(),
            rest: Vec::with_capacity(EVICT_BATCH),
            kicks_seen: 0,
            tenants: vec![TenantSpec {
                id: TenantId::FIRST,
                name: program_name(),
                pages: PageRange { start: 0, len: 0 },
            }],
            controls: Controls::default(),
            pebs_emulated: false,
            last_ns: sys::now_ns(),
            last_hint_faults: 0,
            last_tier: Vec::new(),
            tenant_telemetry: vec![TenantTelemetry::default()],
            last_stall_ns: 0,
            scan_slowdown: 1,
            scan_adapt_at: (0, 0),
        }
    }
}

impl Backend for RuntimeBackend {
    fn page_bytes(&self) -> u64 {
        PAGE as u64
    }
    fn tier_specs(&self) -> &[TierSpec] {
        &self.specs
    }
    fn capabilities(&self) -> Capabilities {
        capabilities()
    }
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()> {
        match spec {
            TrackerSpec::HintFault { scan_period_ns, scan_pages, .. } => {
                self.scan_period_ns = *scan_period_ns;
                self.scan_pages = *scan_pages;
                Ok(())
            }
            TrackerSpec::Pebs { .. } => {
                // Emulated (PEBS_EMULATION): the sampler as configured for the runtime.
                self.pebs_emulated = true;
                Ok(())
            }
            TrackerSpec::Combined(v) => v.iter().try_for_each(|t| self.install_tracker(t)),
            TrackerSpec::None => {
                self.scan_pages = 0;
                Ok(())
            }
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("the Linux runtime provides hint-fault tracking (and PEBS emulated from it), not {other:?} (no hardware PMU here)"),
            )),
        }
    }
    fn advance(&mut self, dt_ns: u64) -> Result<()> {
        // Sleep out the quantum unless the fault thread kicks: DRAM went over budget +
        // slack and faults wait for room (`Runtime::make_room`).
        self.quantum_ns = dt_ns;
        let until = sys::now_ns() + dt_ns;
        loop {
            let seen = self.rt.kick.load(std::sync::atomic::Ordering::Acquire);
            if seen != self.kicks_seen {
                self.kicks_seen = seen;
                break;
            }
            let now = sys::now_ns();
            if now >= until {
                break;
            }
            sys::futex_wait(&self.rt.kick, seen, until - now);
        }
        self.now = sys::now_ns();
        // Regions left to the kernel that the manager may now evict from (lazy registration).
        self.rt.adopt_due(self.now);
        if self.scan_pages > 0 && self.now >= self.next_scan_ns {
            let n = self.adapt_scan();
            self.next_scan_ns = self.now + self.scan_period_ns * self.scan_slowdown;
            self.rt.sample(n);
        }
        if self.now >= self.next_shared_check_ns {
            self.next_shared_check_ns = self.now + SHARED_RECHECK_NS;
            self.rt.recheck_shared();
        }
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.now - self.rt.start_ns
    }
    fn observe(&mut self) -> Snapshot<'_> {
        {
            let mut st = self.rt.lock();
            st.quanta += 1;
            st.take_placement_changes(&mut self.placement);
            self.events.clear();
            std::mem::swap(&mut self.events, &mut st.events);
            if self.pebs_emulated {
                for e in &mut self.events {
                    if let HeatEvent::HintFault { page, .. }
                    | HeatEvent::TierFault { page }
                    | HeatEvent::Accessed { page } = *e
                    {
                        *e = HeatEvent::Sample {
                            page,
                            write: false,
                            count: 1,
                        };
                    }
                }
            }
            self.tenants[0].pages.len = self.placement.len() as u32;
            self.measure(&mut st);
        }
        Snapshot {
            now_ns: self.now - self.rt.start_ns,
            quantum_ns: self.quantum_ns,
            page_bytes: PAGE as u64,
            tier_specs: &self.specs,
            tiers: &self.telemetry,
            placement: &self.placement,
            events: &self.events,
            tenants: &self.tenants,
            controls: &self.controls,
            tenant_telemetry: &self.tenant_telemetry,
            access_bits: None,
            moved: None,
        }
    }
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
        if let Some(l) = plan.controls.limit(TenantId::FIRST, TierId(0)) {
            // The SLO controller's budget: in force before the moves, so the guard's plan
            // and the fault thread's wait limit agree.
            self.rt.lock().set_slo_limit(l);
        }
        let a = self.apply_moves(plan, quota_bytes);
        // Tell a fault waiting for room how it went (`Runtime::make_room`).
        if !plan.moves.is_empty() {
            self.rt
                .can_make_room
                .store(a.pages_applied > 0, std::sync::atomic::Ordering::Relaxed);
        }
        self.rt
            .room
            .fetch_add(1, std::sync::atomic::Ordering::Release);
        sys::futex_wake(&self.rt.room);
        a
    }
}

impl RuntimeBackend {
    /// The SLO mode samples to find what is cold; where nearly every sample faults back
    /// (the memory is hot), another pass finds nothing to offload and only costs the
    /// program a hint fault per sample (perl's 2 M-key hash: 97 % of samples hot, 1 400
    /// hint faults/s, ~3 % of its time), so the period doubles every 512 samples that were
    /// more than 90 % hot, up to 16x, and halves back
    /// once samples stay idle. Linux's NUMA balancing adapts its scan period the same way
    /// (`update_task_scan_period`: slower when the faults it takes show nothing to move).
    /// Policies keep their tracker's period and pass size: they place by heat.
    ///
    /// Returns how many pages this pass samples: in SLO mode no more than one pass over the
    /// resident blocks per second (`SAMPLE_PASS_NS`; a block is judged idle only after 5 s
    /// untouched). A 65 MiB heap (gawk's word counts) had every block sampled 2.5 times a
    /// second at the configured 256 per 100 ms.
    fn adapt_scan(&mut self) -> usize {
        let n = self.scan_pages as usize;
        if self.rt.cfg.policy.is_some() || self.rt.cfg.slo_config().is_none() {
            return n;
        }
        let (sampled, faults, resident) = {
            let st = self.rt.lock();
            (st.hint_sampled, st.hint_faults, st.resident)
        };
        let calls_per_pass = (SAMPLE_PASS_NS / self.scan_period_ns.max(1)).max(1) as usize;
        let blocks = resident as usize / crate::runtime::SAMPLE_BLOCK_PAGES;
        let n = n.min((blocks / calls_per_pass).max(16));
        let (s0, f0) = self.scan_adapt_at;
        let ds = sampled.saturating_sub(s0);
        if ds < SCAN_ADAPT_SAMPLES {
            return n;
        }
        let hot = faults.saturating_sub(f0) as f64 / ds as f64;
        self.scan_slowdown = if hot > 0.9 {
            (self.scan_slowdown * 2).min(SCAN_SLOWDOWN_MAX)
        } else if hot < 0.5 {
            (self.scan_slowdown / 2).max(1)
        } else {
            self.scan_slowdown
        };
        self.scan_adapt_at = (sampled, faults);
        n
    }

    /// Per-tier telemetry of the quantum just ended (`LATENCY_EMULATION`), and the
    /// latencies `tiermem stat` shows.
    fn measure(&mut self, st: &mut crate::runtime::State) {
        let now = sys::now_ns();
        let dt_s = now.saturating_sub(self.last_ns).max(1) as f64 / 1e9;
        self.last_ns = now;
        // The program's stall: tier-fault service and waits for room (a lower bound of its
        // wait: the wake of the faulting thread is not seen here).
        let stall = st.stall_ns + st.room_wait_ns;
        let footprint_bytes = st.footprint_pages() * PAGE as u64;
        self.tenant_telemetry[0] = TenantTelemetry {
            fault_stall_ms_per_s: stall.saturating_sub(self.last_stall_ns) as f64 / 1e6 / dt_s,
            footprint_bytes,
            ..TenantTelemetry::default()
        };
        self.last_stall_ns = stall;
        // DRAM: touches of resident pages per second, estimated from the sampler: the staged
        // pages stand for all resident ones, and each hint fault is one touch of a staged page.
        let hints = st.hint_faults.saturating_sub(self.last_hint_faults);
        self.last_hint_faults = st.hint_faults;
        let staged = st.hint_staged().max(1) as f64;
        let touch_rate = hints as f64 / dt_s * (st.resident as f64 / staged).max(1.0);
        let probe = self.rt.probe.as_ref();
        let dram_ns = probe
            .and_then(|p| p.latency_ns(0))
            .unwrap_or(self.specs[0].unloaded_latency_ns);
        self.telemetry.clear();
        self.telemetry.push(TierTelemetry {
            used_bytes: st.resident * PAGE as u64,
            // Pages no compressed tier takes stay in DRAM whatever the policy plans: the
            // budget holds the others. Counted in, a DRAM full of them would have the guard
            // evict every compressible page each quantum, hot ones included (memcached
            // with random values at a 320 MiB budget: 57 821 tier faults in 16 s, 46 % of
            // its plain throughput).
            capacity_bytes: st
                .budget_bytes()
                .saturating_add(st.incompressible * PAGE as u64),
            arrival_rate_per_s: touch_rate,
            occupancy: touch_rate * dram_ns / 1e9,
            ..Default::default()
        });
        self.last_tier.resize(st.tiers.len(), (0, 0));
        st.latency_ns.resize(st.tiers.len() + 1, 0.0);
        st.latency_ns[0] = dram_ns;
        for (k, (t, last)) in st.tiers.iter().zip(&mut self.last_tier).enumerate() {
            if t.node.is_some() {
                // A node tier: no faults; its pages are touched at the DRAM estimate's rate
                // per page, served at the node's latency (the probe's, else its unloaded
                // one from the config or HMAT).
                let lat = probe
                    .and_then(|p| p.latency_ns(k + 1))
                    .unwrap_or(self.specs[k + 1].unloaded_latency_ns);
                let rate = touch_rate * t.pages as f64 / (st.resident.max(1)) as f64;
                st.latency_ns[k + 1] = lat;
                self.telemetry.push(TierTelemetry {
                    used_bytes: t.pages * PAGE as u64,
                    capacity_bytes: u64::MAX,
                    arrival_rate_per_s: rate,
                    occupancy: rate * lat / 1e9,
                    ..Default::default()
                });
                continue;
            }
            let faults = t.faults.saturating_sub(last.0) as f64;
            let service_s = t.service_ns.saturating_sub(last.1) as f64 / 1e9;
            *last = (t.faults, t.service_ns);
            let rate = faults / dt_s;
            // Little's law: faults in service on average = their total service time / elapsed.
            let tel = TierTelemetry {
                // The pool's memory, as the simulator reports a compressed tier (its logical
                // size is in the placement): TierScape's analytical model measures each
                // tier's ratio from the two, and saw 1.0 (no saving to be had) before.
                used_bytes: t.pool.pool_bytes,
                capacity_bytes: u64::MAX,
                arrival_rate_per_s: rate,
                occupancy: service_s / dt_s,
                faults_per_s: rate,
                ..Default::default()
            };
            if let Some(l) = tel.latency_ns() {
                // What `tiermem stat` shows: smoothed over the quanta that had faults (a
                // quantum of HeMem's is 10 ms: most see none).
                let shown = &mut st.latency_ns[self.telemetry.len()];
                *shown = if *shown > 0.0 {
                    *shown + 0.2 * (l - *shown)
                } else {
                    l
                };
            }
            self.telemetry.push(tel);
        }
    }

    /// Apply the plan's moves in order: single pages in batches of EVICT_BATCH (one
    /// DONTNEED frees a batch's staging slots), ranges through `Runtime::move_range`, each
    /// as one operation (the quota admits or drops a range whole).
    ///
    /// With fault-around above 4 KiB, single-page demotions that cover a whole aligned unit
    /// (the guard lists its picks in page order) are evicted as one range: the same pages,
    /// one page-table operation per unit ("eviction in units", docs/runtime.md).
    fn apply_moves(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
        let mut a = Applied::default();
        let mut batch: Vec<(usize, u8)> = Vec::with_capacity(EVICT_BATCH);
        let unit = self.rt.lock().granularity.evict_unit();
        let moves = &plan.moves;
        let mut k = 0;
        while k < moves.len() {
            let m = &moves[k];
            let whole_unit = |u: usize| {
                (m.range.start as usize).is_multiple_of(u)
                    && m.to.0 >= 1
                    && k + u <= moves.len()
                    && (1..u).all(|d| {
                        let n = &moves[k + d];
                        n.range.len == 1
                            && n.to == m.to
                            && n.range.start == m.range.start + d as u32
                    })
            };
            let (start, len) = if m.range.len == 1 {
                match [PAGES_2M, PAGES_64K]
                    .into_iter()
                    .find(|&u| u <= unit && whole_unit(u))
                {
                    Some(u) => {
                        k += u;
                        (m.range.start as usize, u)
                    }
                    None => {
                        k += 1;
                        batch.push((m.range.start as usize, m.to.0));
                        if batch.len() == EVICT_BATCH {
                            self.apply_pages(&batch, quota_bytes, &mut a);
                            batch.clear();
                        }
                        continue;
                    }
                }
            } else {
                k += 1;
                (m.range.start as usize, m.range.len as usize)
            };
            self.apply_pages(&batch, quota_bytes, &mut a);
            batch.clear();
            for i0 in (start..start + len).step_by(EVICT_SLOTS) {
                let n = EVICT_SLOTS.min(start + len - i0);
                let bytes = (n * PAGE) as u64;
                a.pages_tried += n as u64;
                if quota_bytes.is_some_and(|q| a.bytes_moved + bytes > q) {
                    a.pages_over_quota += n as u64;
                    continue;
                }
                let r = self.rt.move_range(i0, n, m.to.0, &mut self.range_bufs);
                a.pages_applied += r.applied;
                a.bytes_moved += r.applied * PAGE as u64;
                a.ops_applied += (r.applied > 0) as u64;
                a.pages_already_there += r.already_there;
                a.pages_no_capacity += r.no_capacity + r.refused;
            }
        }
        self.apply_pages(&batch, quota_bytes, &mut a);
        a
    }

    /// One batch of single-page moves (at most EVICT_BATCH).
    fn apply_pages(&mut self, batch: &[(usize, u8)], quota_bytes: Option<u64>, a: &mut Applied) {
        if batch.is_empty() {
            return;
        }
        // Moves to and from node tiers: one move_pages call per target (quota permitting).
        let room = quota_bytes.map_or(usize::MAX, |q| {
            (q.saturating_sub(a.bytes_moved) / PAGE as u64) as usize
        });
        let mut rest = std::mem::take(&mut self.rest);
        let r = self.rt.node_batch(
            &batch[..batch.len().min(room)],
            &mut self.range_bufs,
            &mut rest,
        );
        if batch.len() > room {
            rest.extend_from_slice(&batch[room..]);
        }
        a.pages_tried += r.applied + r.already_there + r.no_capacity + r.refused;
        a.pages_applied += r.applied;
        a.ops_applied += r.applied;
        a.bytes_moved += r.applied * PAGE as u64;
        a.pages_already_there += r.already_there;
        a.pages_no_capacity += r.no_capacity + r.refused;
        let batch = &rest[..];
        let mut out = std::mem::take(&mut self.cbuf);
        // The lock is taken per page and never across a compression (`Runtime::evict`), so
        // a fault waits for at most one page move; the batch's staging slots are released
        // with one DONTNEED at its end.
        for (slot, &(p, to)) in batch.iter().enumerate() {
            a.pages_tried += 1;
            if quota_bytes.is_some_and(|q| a.bytes_moved + PAGE as u64 > q) {
                a.pages_over_quota += 1;
                continue;
            }
            let r = if to >= 1 {
                self.rt.evict(p, to, slot, &mut out)
            } else {
                let mut st = self.rt.lock();
                self.rt.move_page(&mut st, p, to, slot)
            };
            match r {
                MoveResult::Applied => {
                    a.pages_applied += 1;
                    a.ops_applied += 1;
                    a.bytes_moved += PAGE as u64;
                }
                MoveResult::AlreadyThere => a.pages_already_there += 1,
                MoveResult::NoCapacity | MoveResult::Refused => a.pages_no_capacity += 1,
            }
        }
        let mut st = self.rt.lock();
        self.rt.end_batch(&mut st);
        self.cbuf = out;
        self.rest = rest;
    }
}

/// Every tier's spec, as the runtime's policies see it. Where the config leaves a tier's
/// `unloaded_latency_ns` out: a node tier's latency (and bandwidth) is what the firmware's
/// HMAT says of its node (sysfs); a compressed tier's is its fault latency measured now on
/// this machine ([`crate::characterize::tier_fault_ns`]). With the schema's one default
/// (10 µs) for every codec, TierScape's analytical policy saw five equally fast compressed
/// tiers and put every compressed region in the densest (deflate, 3-4x lz4's fault time).
pub(crate) fn tier_specs(cfg: &RuntimeConfig) -> Result<Vec<TierSpec>> {
    let compressed = cfg.compressed_tiers()?;
    Ok(cfg
        .tiers
        .iter()
        .map(|t| {
            let mut spec = node_tier_spec(t);
            let c = compressed.iter().find(|c| c.name == t.name);
            if let (Some(c), None) = (c, t.unloaded_latency_ns) {
                let max = c.max_compressed_bytes as usize;
                if let Some(ns) =
                    crate::characterize::tier_fault_ns(&c.codec, c.allocator, c.backing, max)
                {
                    spec.unloaded_latency_ns = ns;
                }
            }
            spec
        })
        .collect())
}

/// A tier's spec; a node tier's latency and bandwidth, where the config leaves them out,
/// are what the firmware's HMAT says of its node (sysfs), else the schema's defaults.
fn node_tier_spec(t: &tiermem_core::tier::TierConfig) -> TierSpec {
    let mut spec = t.spec(u64::MAX);
    if let (Some(n), true) = (t.node, t.kind == "node") {
        if let Some((lat_ns, bw_mbps)) = crate::numa::hmat(n) {
            if t.unloaded_latency_ns.is_none() && lat_ns > 0.0 {
                spec.unloaded_latency_ns = lat_ns;
            }
            if t.peak_bandwidth_gbps.is_none() && bw_mbps > 0.0 {
                spec.peak_bandwidth_bytes_per_s = bw_mbps * 1e6;
            }
        }
    }
    spec
}

/// This process's name, for its tenant.
fn program_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "program".into())
}

/// The manager thread: engine steps, stats publication, control socket requests.
pub fn manager_loop(rt: &'static Runtime) {
    let mut backend = RuntimeBackend::new(rt);
    // `tiermem run` checked the policy before the program started (`check_policy`).
    let engine = build_policy(&rt.cfg).and_then(|policy| {
        // Policies place by heat; the SLO controller needs to know what is hot before it
        // probes (sampling only once it has made DRAM scarce, its probes met hot pages the
        // sampler had not seen yet). The guard alone under a fixed budget samples only
        // while the footprint exceeds it.
        let heat = rt.cfg.policy.is_some() || rt.cfg.slo_config().is_some();
        let name = policy.name();
        let tracker = capabilities().describe_tracker(&policy.tracker());
        // The SLO controller picks the budget (`slo`); the user's budget stays its ceiling,
        // applied by the runtime (`State::budget_bytes`), so `tiermem budget` still works.
        let controller = match rt.cfg.slo_config() {
            Some(c) => Some(Box::new(SloController::new(c, None)?) as Box<dyn Controller>),
            None => None,
        };
        let e = Engine::with_controller(policy, controller, &mut backend)?;
        let mut st = rt.lock();
        (st.policy, st.tracker, st.sample_always) = (name, tracker, heat);
        Ok(e)
    });
    let mut engine = match engine {
        Ok(e) => e,
        Err(e) => {
            crate::runtime::report(&format!("manager not started: {e}"));
            return;
        }
    };
    // The control directory and socket (control.rs), created with the first managed
    // memory; refused (a warn line, runtime/log.rs) -> none at all, nothing written elsewhere.
    let mut ctl: Option<crate::control::Server> = None;
    let mut ctl_refused = false;
    let mut next_pub = 0u64;
    let mut last_counters = Vec::new();
    let mut last_plan = tiermem_core::Applied::default();
    while !rt.stop.load(std::sync::atomic::Ordering::Relaxed) {
        // A pool that could not grow ends tiering (runtime/degrade.rs); so does a failure
        // of another thread of tiermem's, after which this one has nothing left to do.
        if crate::pool::grow_failed() {
            rt.degrade("a compressed pool could not grow (the kernel refused memory)");
        }
        if rt.degraded() {
            return;
        }
        let frozen = rt.lock().frozen;
        if frozen {
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        if let Err(e) = engine.step(&mut backend) {
            crate::runtime::report(&format!("engine step failed: {e}"));
        }
        if engine.counters.applied != last_plan {
            last_plan = engine.counters.applied;
            rt.lock().plan = last_plan;
        }
        let counters = engine.policy.counters();
        if counters != last_counters {
            rt.lock().policy_counters.clone_from(&counters);
            last_counters = counters;
        }
        if let Some(c) = engine.controller.as_ref() {
            let of = |k: &str, cs: &[(&'static str, u64)]| {
                cs.iter().find(|(n, _)| *n == k).map_or(0, |&(_, v)| v)
            };
            let cs = c.counters();
            if let Some(slo) = rt.lock().slo.as_mut() {
                slo.probes = of("slo_probes", &cs);
                slo.backoffs = of("slo_backoffs", &cs);
                slo.stall_share = of("slo_stall_ppm", &cs) as f64 / 1e6;
            }
        }
        if let Some(line) = rt.check_thrash() {
            crate::runtime::report_info(&line);
        }
        let publish = rt.publish.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(c) = ctl.as_mut().filter(|_| publish) {
            c.serve(rt);
        }
        let now = sys::now_ns();
        if now >= next_pub {
            next_pub = now + 250_000_000;
            let st = rt.stats();
            if st.regions > 0 && publish {
                if ctl.is_none() && !ctl_refused {
                    match crate::control::Server::open(
                        &rt.cfg.run_dir,
                        std::process::id(),
                        &rt.cfg.stats_mode,
                    ) {
                        Ok(c) => ctl = Some(c),
                        Err(e) => {
                            ctl_refused = true;
                            // At exit the directory goes away under us: not a problem.
                            if !crate::control::closed() {
                                crate::runtime::report(&format!(
                                    "no control directory (no `tiermem stat`/`budget`): {e}"
                                ));
                            }
                        }
                    }
                }
                if let Some(c) = ctl.as_mut() {
                    c.publish(&st);
                }
            }
        }
    }
}
