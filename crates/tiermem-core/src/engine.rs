//! The engine loop. Per quantum:
//!
//! ```text
//!   backend.advance(quantum)           run the program / the simulated machine
//!   snapshot = backend.observe()       telemetry + placement + tracker events
//!   plan = policy.decide(snapshot)     pure: same history in, same plan out
//!   plan = quota.truncate(plan)        migration quota (bytes per second)
//!   applied = backend.apply(plan)      tried vs applied counters
//! ```

use crate::error::Result;
use crate::plan::{Applied, Plan};
use crate::snapshot::Snapshot;
use crate::tier::TierSpec;
use crate::tracker::TrackerSpec;
use serde::{Deserialize, Serialize};

/// A placement policy. Contract: `decide` depends only on the snapshots it has been given
/// (and its own config); it performs no I/O and reads no clock.
pub trait Policy: Send {
    /// The config name (`policy = "hemem"`), plus any layer (`"hemem+colloid"`).
    fn name(&self) -> String;
    /// The tracker this policy was designed for.
    fn tracker(&self) -> TrackerSpec;
    /// How often `decide` runs.
    fn quantum_ns(&self) -> u64;
    /// Bytes the policy may migrate per quantum (its system's rate limit); `None` = unlimited.
    fn migration_limit_bytes(&self) -> Option<u64> {
        None
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan;
}

/// Where pages live. Contract: `observe` reports the quantum that `advance` just ran;
/// `apply` moves pages in plan order, dropping (and counting) what does not fit.
pub trait Backend {
    fn page_bytes(&self) -> u64;
    fn tier_specs(&self) -> &[TierSpec];
    /// Build the tracker a policy asked for. Errors if this backend cannot provide it.
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()>;
    /// Run for `dt_ns` (virtual time for a simulator, wall time for a runtime).
    fn advance(&mut self, dt_ns: u64) -> Result<()>;
    fn now_ns(&self) -> u64;
    fn observe(&mut self) -> Snapshot<'_>;
    /// Apply up to `quota_bytes` of the plan.
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied;
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineCounters {
    pub quanta: u64,
    pub applied: Applied,
}

/// Runs one policy over one backend.
pub struct Engine<P: Policy> {
    pub policy: P,
    pub counters: EngineCounters,
    /// Extra global cap on migration, bytes per second (config `engine.migration_limit`).
    pub global_limit_bytes_per_s: Option<f64>,
}

impl<P: Policy> Engine<P> {
    pub fn new<B: Backend + ?Sized>(policy: P, backend: &mut B) -> Result<Self> {
        backend.install_tracker(&policy.tracker())?;
        Ok(Engine {
            policy,
            counters: EngineCounters::default(),
            global_limit_bytes_per_s: None,
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

    /// Run one quantum; returns what was applied in it.
    pub fn step<B: Backend + ?Sized>(&mut self, backend: &mut B) -> Result<Applied> {
        backend.advance(self.policy.quantum_ns())?;
        let plan = {
            let snap = backend.observe();
            self.policy.decide(&snap)
        };
        let applied = backend.apply(&plan, self.quota_bytes());
        self.counters.quanta += 1;
        self.counters.applied.add(&applied);
        Ok(applied)
    }
}

impl Policy for Box<dyn Policy> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn tracker(&self) -> TrackerSpec {
        (**self).tracker()
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
}
