//! The engine loop. Per quantum:
//!
//! ```text
//!   backend.advance(quantum)             run the program / the simulated machine
//!   snapshot = backend.observe()         telemetry, tenants, placement, tracker events
//!   controls = controller.control(snap)  per-tenant per-tier limits, CPU shares (optional)
//!   plan = policy.decide(snap+controls)  pure: same history in, same plan out
//!   plan.moves: tenants resolved, malformed moves dropped
//!   applied = backend.apply(plan, quota) controls first, then moves up to the quota
//! ```
//!
//! At start the engine checks that the backend can give the policy (and controller) what
//! it needs ([`Capabilities::check`]) and installs the policy's tracker.

use crate::capability::{Capabilities, Needs};
use crate::error::Result;
use crate::plan::{Applied, Controls, Plan};
use crate::snapshot::Snapshot;
use crate::tier::TierSpec;
use crate::tracker::TrackerSpec;
use serde::{Deserialize, Serialize};

/// A placement policy. Contract: `decide` depends only on the snapshots it has been given
/// (and its own config); it performs no I/O and reads no clock. It places pages within the
/// limits in `snap.controls`.
pub trait Policy: Send {
    /// The config name (`policy = "hemem"`), plus any layer (`"hemem+colloid"`).
    fn name(&self) -> String;
    /// The tracker this policy was designed for.
    fn tracker(&self) -> TrackerSpec;
    /// What it needs from a backend; by default just its tracker.
    fn needs(&self) -> Needs {
        Needs::tracking(&self.tracker())
    }
    /// How often `decide` runs.
    fn quantum_ns(&self) -> u64;
    /// Bytes the policy may migrate per quantum (its system's rate limit); `None` = unlimited.
    fn migration_limit_bytes(&self) -> Option<u64> {
        None
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan;
    /// The policy's own counters for run summaries (`name`, value), e.g. TierScape's
    /// analytical model's solver failures. None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A controller (Memstrata's dedicated-DRAM allocator, Mercury's admission control and
/// adaptation): decides per-tenant, per-tier limits and CPU shares each quantum, before the
/// policy places pages. Contract: pure, like a policy; returns the complete set of
/// controls in force (not a delta).
pub trait Controller: Send {
    fn name(&self) -> String;
    fn needs(&self) -> Needs;
    fn control(&mut self, snap: &Snapshot<'_>) -> Controls;
    /// The controller's own counters for run summaries (`name`, value). None by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Where pages live. Contract: `observe` reports the quantum that `advance` just ran;
/// `apply` sets the plan's controls, then moves pages in plan order, each move as one
/// operation, dropping (and counting) what does not fit.
pub trait Backend {
    fn page_bytes(&self) -> u64;
    fn tier_specs(&self) -> &[TierSpec];
    /// What this backend can give policies; checked by [`Engine::new`].
    fn capabilities(&self) -> Capabilities;
    /// Build the tracker a policy asked for. Errors if this backend cannot provide it.
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()>;
    /// Run for `dt_ns` (virtual time for a simulator, wall time for a runtime).
    fn advance(&mut self, dt_ns: u64) -> Result<()>;
    fn now_ns(&self) -> u64;
    fn observe(&mut self) -> Snapshot<'_>;
    /// Apply the plan's controls, then up to `quota_bytes` of its moves.
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied;
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineCounters {
    pub quanta: u64,
    pub applied: Applied,
}

/// Runs one policy (and optionally a controller) over one backend.
pub struct Engine<P: Policy> {
    pub policy: P,
    pub controller: Option<Box<dyn Controller>>,
    pub counters: EngineCounters,
    /// Extra global cap on migration, bytes per second (config `engine.migration_limit`).
    pub global_limit_bytes_per_s: Option<f64>,
    /// The controls in force (the controller's last decision).
    controls: Controls,
}

impl<P: Policy> Engine<P> {
    pub fn new<B: Backend + ?Sized>(policy: P, backend: &mut B) -> Result<Self> {
        Self::with_controller(policy, None, backend)
    }

    /// Check the backend's capabilities against the policy's and controller's needs, then
    /// install the policy's tracker.
    pub fn with_controller<B: Backend + ?Sized>(
        policy: P,
        controller: Option<Box<dyn Controller>>,
        backend: &mut B,
    ) -> Result<Self> {
        let caps = backend.capabilities();
        caps.check(&policy.name(), &policy.needs())?;
        if let Some(c) = &controller {
            caps.check(&c.name(), &c.needs())?;
        }
        backend.install_tracker(&policy.tracker())?;
        Ok(Engine {
            policy,
            controller,
            counters: EngineCounters::default(),
            global_limit_bytes_per_s: None,
            controls: Controls::default(),
        })
    }

    /// The quota for one quantum: the tighter of the policy's and the global limit.
    pub fn quota_bytes(&self) -> Option<u64> {
        let q = self.policy.quantum_ns() as f64 / 1e9;
        let global = self.global_limit_bytes_per_s.map(|b| (b * q) as u64);
        match (self.policy.migration_limit_bytes(), global) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// Run one quantum; returns what was applied in it.
    pub fn step<B: Backend + ?Sized>(&mut self, backend: &mut B) -> Result<Applied> {
        self.step_within(backend, u64::MAX)
    }

    /// Run one quantum, cut to `remaining_ns` when the run ends sooner: a run shorter than
    /// the policy's quantum (TierScape's profile window is minutes) must not simulate past
    /// its end. The policy still decides after the shortened quantum.
    pub fn step_within<B: Backend + ?Sized>(
        &mut self,
        backend: &mut B,
        remaining_ns: u64,
    ) -> Result<Applied> {
        backend.advance(self.policy.quantum_ns().min(remaining_ns).max(1))?;
        let (mut plan, malformed) = {
            let snap = backend.observe();
            if let Some(c) = self.controller.as_mut() {
                self.controls = c.control(&snap);
            }
            let snap = Snapshot {
                controls: &self.controls,
                ..snap
            };
            let mut plan = self.policy.decide(&snap);
            let malformed = resolve_moves(&mut plan, &snap);
            (plan, malformed)
        };
        if self.controller.is_some() {
            plan.controls = self.controls.clone();
        }
        let mut applied = backend.apply(&plan, self.quota_bytes());
        applied.moves_malformed += malformed;
        self.counters.quanta += 1;
        self.counters.applied.add(&applied);
        Ok(applied)
    }
}

/// Name each move's tenant from the snapshot and drop moves that are not a naturally
/// aligned power-of-two range inside one tenant (a policy bug, counted, never applied).
pub fn resolve_moves(plan: &mut Plan, snap: &Snapshot<'_>) -> u64 {
    let n = snap.placement.len() as u64;
    let before = plan.moves.len();
    plan.moves.retain_mut(|m| {
        if !m.is_aligned() || m.range.end() as u64 > n {
            return false;
        }
        if snap.tenants.len() <= 1 {
            m.tenant = snap.tenants.first().map_or(m.tenant, |t| t.id);
            return true;
        }
        match (
            snap.tenant_of(m.range.start),
            snap.tenant_of(m.range.end() - 1),
        ) {
            (Some(a), Some(b)) if a == b => {
                m.tenant = a;
                true
            }
            _ => false,
        }
    });
    (before - plan.moves.len()) as u64
}

impl Policy for Box<dyn Policy> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn tracker(&self) -> TrackerSpec {
        (**self).tracker()
    }
    fn needs(&self) -> Needs {
        (**self).needs()
    }
    fn quantum_ns(&self) -> u64 {
        (**self).quantum_ns()
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        (**self).migration_limit_bytes()
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        (**self).decide(snap)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        (**self).counters()
    }
}
