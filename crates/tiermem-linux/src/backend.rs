//! The runtime as a core [`Backend`]: the same seam the simulator implements. The manager
//! thread runs the core [`Engine`] over it.

use crate::budget_policy::BudgetPolicy;
use crate::runtime::{MoveResult, Runtime, EVICT_BATCH, SHARED_RECHECK_NS};
use crate::sys::{self, PAGE};
use tiermem_core::{
    Applied, Backend, Capabilities, Controls, Engine, Error, ErrorKind, HeatEvent, PageRange, Plan,
    Provision, Result, Snapshot, TelemetryKind, TenantId, TenantSpec, TierId, TierSpec,
    TierTelemetry, TrackerKind, TrackerSpec,
};

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
    /// Compression output buffer of `apply` (used without the state lock).
    cbuf: Vec<u8>,
    /// The fault thread's kick counter as last seen (`Runtime::kick`).
    kicks_seen: u32,
    /// One tenant: this process.
    tenants: Vec<TenantSpec>,
    controls: Controls,
}

impl RuntimeBackend {
    pub fn new(rt: &'static Runtime) -> RuntimeBackend {
        // Capacities are not bounds here: the budget policy limits DRAM, pools grow.
        let specs: Vec<TierSpec> = rt.cfg.tiers.iter().map(|t| t.spec(u64::MAX)).collect();
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
            cbuf: Vec::with_capacity(8192),
            kicks_seen: 0,
            tenants: vec![TenantSpec {
                id: TenantId::FIRST,
                name: program_name(),
                pages: PageRange { start: 0, len: 0 },
            }],
            controls: Controls::default(),
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
        Capabilities {
            backend: "linux runtime".into(),
            trackers: vec![(TrackerKind::HintFault, Provision::Native)],
            telemetry: vec![(TelemetryKind::FaultRate, Provision::Native)],
            max_granularity_bytes: PAGE as u64,
            max_tenants: 1,
            tier_limits: false,
            cpu_shares: false,
        }
    }
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()> {
        match spec {
            TrackerSpec::HintFault { scan_period_ns, scan_pages, .. } => {
                self.scan_period_ns = *scan_period_ns;
                self.scan_pages = *scan_pages;
                Ok(())
            }
            TrackerSpec::None => {
                self.scan_pages = 0;
                Ok(())
            }
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("the Linux runtime provides hint-fault and tier-fault tracking, not {other:?} (no hardware PMU here)"),
            )),
        }
    }
    fn advance(&mut self, dt_ns: u64) -> Result<()> {
        // Sleep out the quantum unless the fault thread kicks: DRAM went over budget +
        // slack and faults wait for room (`Runtime::make_room`).
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
        if self.scan_pages > 0 && self.now >= self.next_scan_ns {
            self.next_scan_ns = self.now + self.scan_period_ns;
            self.rt.sample(self.scan_pages as usize);
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
            self.placement.clear();
            self.placement.extend_from_slice(&st.placement);
            self.events.clear();
            std::mem::swap(&mut self.events, &mut st.events);
            self.tenants[0].pages.len = self.placement.len() as u32;
            self.telemetry.clear();
            self.telemetry.push(TierTelemetry {
                used_bytes: st.resident * PAGE as u64,
                capacity_bytes: st.budget_bytes(),
                ..Default::default()
            });
            for t in &st.tiers {
                self.telemetry.push(TierTelemetry {
                    used_bytes: t.pages * PAGE as u64,
                    capacity_bytes: u64::MAX,
                    ..Default::default()
                });
            }
        }
        Snapshot {
            now_ns: self.now - self.rt.start_ns,
            quantum_ns: self.rt.cfg.quantum_ns(),
            page_bytes: PAGE as u64,
            tier_specs: &self.specs,
            tiers: &self.telemetry,
            placement: &self.placement,
            events: &self.events,
            tenants: &self.tenants,
            controls: &self.controls,
        }
    }
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
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
    fn apply_moves(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
        let mut a = Applied::default();
        let pages: Vec<(usize, u8)> = plan
            .moves
            .iter()
            .flat_map(|m| m.range.pages().map(move |p| (p as usize, m.to.0)))
            .collect();
        let mut out = std::mem::take(&mut self.cbuf);
        for chunk in pages.chunks(EVICT_BATCH) {
            // The lock is taken per page and never across a compression (`Runtime::evict`),
            // so a fault waits for at most one page move; the batch's staging slots are
            // released with one DONTNEED at its end.
            for (slot, &(p, to)) in chunk.iter().enumerate() {
                a.pages_tried += 1;
                if quota_bytes.is_some_and(|q| a.bytes_moved + PAGE as u64 > q) {
                    a.pages_over_quota += 1;
                    continue;
                }
                let r = {
                    if to >= 1 {
                        self.rt.evict(p, to, slot, &mut out)
                    } else {
                        let mut st = self.rt.lock();
                        self.rt.move_page(&mut st, p, to, slot)
                    }
                };
                match r {
                    MoveResult::Applied => {
                        a.pages_applied += 1;
                        a.bytes_moved += PAGE as u64;
                    }
                    MoveResult::AlreadyThere => a.pages_already_there += 1,
                    MoveResult::NoCapacity | MoveResult::Refused => a.pages_no_capacity += 1,
                }
            }
            let mut st = self.rt.lock();
            self.rt.end_batch(&mut st);
        }
        self.cbuf = out;
        a
    }
}

/// This process's name, for its tenant.
fn program_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "program".into())
}

/// The manager thread: engine steps, stats publication, control socket requests.
pub fn manager_loop(rt: &'static Runtime) {
    let policy = BudgetPolicy::new(
        rt.cfg.quantum_ns(),
        rt.cfg.scan_period_ns(),
        rt.cfg.sampler.scan_pages,
    );
    let mut backend = RuntimeBackend::new(rt);
    let mut engine = match Engine::new(policy, &mut backend) {
        Ok(e) => e,
        Err(e) => {
            crate::runtime::report(&format!("manager not started: {e}"));
            return;
        }
    };
    // The control directory and socket (control.rs), created with the first managed
    // memory; refused (one line on stderr) -> none at all, nothing written elsewhere.
    let mut ctl: Option<crate::control::Server> = None;
    let mut ctl_refused = false;
    let mut next_pub = 0u64;
    while !rt.stop.load(std::sync::atomic::Ordering::Relaxed) {
        let frozen = rt.lock().frozen;
        if frozen {
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        if let Err(e) = engine.step(&mut backend) {
            crate::runtime::report(&format!("engine step failed: {e}"));
        }
        if let Some(line) = rt.check_thrash() {
            crate::runtime::report(&line);
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
                            crate::runtime::report(&format!(
                                "no control directory (no `tiermem stat`/`budget`): {e}"
                            ));
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
