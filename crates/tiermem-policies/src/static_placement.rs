//! `policy = "static"`: no migration at all. The initial placement is the backend's (the
//! simulator's `initial_placement`, or the best-case search of Colloid §2.1, which places
//! 0–100 % of the hot set in the default tier and runs each placement statically).

use crate::heat::ms_to_ns;
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, join, Validate};
use tiermem_core::{Plan, Policy, Result, Snapshot, TrackerSpec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticConfig {
    /// How often the engine wakes the (idle) policy; only sets the recording cadence.
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
}

fn d_quantum_ms() -> f64 {
    100.0
}

impl Default for StaticConfig {
    fn default() -> Self {
        StaticConfig {
            quantum_ms: d_quantum_ms(),
        }
    }
}

impl Validate for StaticConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 3_600_000.0)
    }
}

/// `policy = "static"` in the registry ([`crate::REGISTRY`]).
pub static ENTRY: PolicyEntry = PolicyEntry::new::<StaticConfig>(
    "static",
    "No migration: every page stays where the backend's initial placement put it (no tracker, no heat model)",
    r#"[policy]
policy = "static"
quantum_ms = 100.0                    # only the recording cadence: nothing ever moves
"#,
);

impl PolicyParams for StaticConfig {
    fn build(&self, _ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(StaticPlacement::new(self.clone()))
    }
}

/// A policy that never moves a page and needs no tracker.
#[derive(Clone, Debug)]
pub struct StaticPlacement {
    pub cfg: StaticConfig,
}

impl StaticPlacement {
    pub fn new(cfg: StaticConfig) -> Self {
        StaticPlacement { cfg }
    }
}

impl Policy for StaticPlacement {
    fn name(&self) -> String {
        "static".into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.quantum_ms)
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        Some(0)
    }
    fn decide(&mut self, _snap: &Snapshot<'_>) -> Plan {
        Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::World;

    #[test]
    fn never_moves() {
        let mut w = World::new(10, 0, 10, 10);
        w.reads(3, 100);
        let mut s = StaticPlacement::new(StaticConfig::default());
        assert!(s.decide(&w.snap()).moves.is_empty());
        assert_eq!(s.tracker(), TrackerSpec::None);
        assert_eq!(s.quantum_ns(), 100_000_000);
    }
}
