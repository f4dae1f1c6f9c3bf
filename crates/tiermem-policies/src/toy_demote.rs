//! `policy = "toy_demote"`: the example policy of docs/adding-a-policy.md, compiled only with
//! the cargo feature `toy-policy` (the tests of tiermem-sim and tiermem-cli enable it).
//!
//! Every quantum it demotes the first `pages_per_quantum` pages (lowest page index first)
//! of the default tier to the next tier. It needs no tracker: it is the smallest policy
//! that moves pages, which makes it a test that a policy added the documented way (this
//! file, one line in the registry) runs through the same config path as the others.

use crate::heat::{ms_to_ns, pages_in, FAST};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, join, Validate};
use tiermem_core::{Plan, Policy, Result, Snapshot, TierId, TrackerSpec};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyDemoteConfig {
    /// Pages demoted each quantum.
    #[serde(default = "d_pages")]
    pub pages_per_quantum: u64,
    /// How often it runs.
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
}

fn d_pages() -> u64 {
    16
}
fn d_quantum_ms() -> f64 {
    100.0
}

impl Default for ToyDemoteConfig {
    fn default() -> Self {
        ToyDemoteConfig {
            pages_per_quantum: d_pages(),
            quantum_ms: d_quantum_ms(),
        }
    }
}

impl Validate for ToyDemoteConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(
            &join(p, "pages_per_quantum"),
            self.pages_per_quantum as f64,
            1.0,
            1e9,
        )?;
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 3_600_000.0)
    }
}

pub static ENTRY: PolicyEntry = PolicyEntry::new::<ToyDemoteConfig>(
    "toy_demote",
    "Example policy (feature `toy-policy`): demotes the first pages_per_quantum pages of the default tier each quantum; no tracker",
    r#"[policy]
policy = "toy_demote"
pages_per_quantum = 16                # pages demoted each quantum
quantum_ms = 100.0                    # how often
"#,
);

impl PolicyParams for ToyDemoteConfig {
    fn build(&self, _ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(ToyDemote { cfg: self.clone() })
    }
}

pub struct ToyDemote {
    cfg: ToyDemoteConfig,
}

impl Policy for ToyDemote {
    fn name(&self) -> String {
        ENTRY.name.into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.quantum_ms)
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let n = self.cfg.pages_per_quantum as usize;
        for page in pages_in(snap, FAST).take(n) {
            plan.push(page, TierId(1));
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::{moved_to, World};

    #[test]
    fn demotes_the_first_pages_of_the_default_tier() {
        let mut w = World::new(10, 6, 10, 10);
        let cfg = crate::PolicyConfig::from_name(
            "toy_demote",
            toml::toml! { pages_per_quantum = 4 },
        )
        .unwrap();
        let mut p = crate::build(&cfg).unwrap();
        assert_eq!(p.name(), "toy_demote");
        let plan = p.decide(&w.snap());
        assert_eq!(moved_to(&plan, TierId(1)), [0, 1, 2, 3]);
        w.apply(&plan);
        // Only pages 4 and 5 are left in the default tier.
        assert_eq!(moved_to(&p.decide(&w.snap()), TierId(1)), [4, 5]);
    }
}
