//! The engine checks a policy's needs against the backend's capabilities at start and
//! refuses with one line, never silently.

use tiermem_core::{
    Engine, ErrorKind, Needs, Plan, Policy, Snapshot, TelemetryKind, TrackerKind, TrackerSpec,
};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::reproduce::{config_with, COLLOID_GUPS_BASE};

struct Needy(Needs);

impl Policy for Needy {
    fn name(&self) -> String {
        "needy".into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn needs(&self) -> Needs {
        self.0.clone()
    }
    fn quantum_ns(&self) -> u64 {
        10_000_000
    }
    fn decide(&mut self, _: &Snapshot<'_>) -> Plan {
        Plan::default()
    }
}

fn backend() -> SimBackend {
    let cfg = config_with(
        COLLOID_GUPS_BASE,
        "gups-base",
        &[("scale", toml::Value::Float(1.0 / 64.0))],
    )
    .unwrap();
    SimBackend::new(&cfg).unwrap()
}

#[test]
fn what_the_simulator_has_is_granted() {
    let needs = Needs {
        trackers: vec![TrackerKind::Pebs, TrackerKind::AccessBit],
        telemetry: vec![TelemetryKind::LoadedLatency],
        granularity_bytes: 2 << 20,
        tier_limits: true,
        cpu_shares: true,
        ..Needs::default()
    };
    assert!(Engine::new(Needy(needs), &mut backend()).is_ok());
}

#[test]
fn what_it_lacks_is_refused_in_one_line() {
    let needs = Needs {
        tenants: 4,
        granularity_bytes: 1 << 62, // past any range of 2^31 pages
        ..Needs::default()
    };
    let e = Engine::new(Needy(needs), &mut backend()).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.kind.exit_code(), 2);
    let m = e.to_string();
    assert!(!m.contains('\n'), "{m}");
    assert!(
        m.contains("`needy`") && m.contains("4 tenants") && m.contains("one operation"),
        "{m}"
    );
    assert!(
        m.contains("simulator") && m.contains("PEBS sampling"),
        "{m}"
    );
}
