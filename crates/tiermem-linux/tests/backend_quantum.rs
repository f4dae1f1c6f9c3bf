//! The `Backend` contract on the runtime and on attach (issue 48 item 3): `observe` reports
//! the quantum `advance` ran. The engine advances by the policy's quantum (HeMem's 10 ms),
//! not by the runtime config's `quantum_ms` (20 ms); both backends used to report the
//! config's, so Colloid's migration limit on them (a rate times `Snapshot.quantum_ns`,
//! tiermem-policies/src/colloid.rs) was computed on twice the quantum that ran. Here the
//! real engine steps the real backends (this process: a runtime of its own, and attach on
//! itself) under `hemem+colloid`, and the policy records the quantum each snapshot gives it.

use std::sync::atomic::AtomicBool;
use tiermem_core::capability::Needs;
use tiermem_core::{Backend, Engine, Plan, Policy, Snapshot, TrackerSpec};
use tiermem_linux::backend::{build_policy, RuntimeBackend};
use tiermem_linux::config::RuntimeConfig;
use tiermem_policies::PolicyConfig;

const MS: u64 = 1_000_000;

/// The configured policy, recording the `quantum_ns` of every snapshot it decides on.
struct Seen<P> {
    inner: P,
    quanta: Vec<u64>,
}

impl<P: Policy> Policy for Seen<P> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn tracker(&self) -> TrackerSpec {
        self.inner.tracker()
    }
    fn needs(&self) -> Needs {
        self.inner.needs()
    }
    fn quantum_ns(&self) -> u64 {
        self.inner.quantum_ns()
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        self.inner.migration_limit_bytes()
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.quanta.push(snap.quantum_ns);
        self.inner.decide(snap)
    }
}

/// `cfg` under hemem+colloid; checks the two quanta differ (else nothing is tested).
fn hemem_colloid(mut cfg: RuntimeConfig) -> (RuntimeConfig, Seen<impl Policy>) {
    cfg.policy = PolicyConfig::default_for("hemem");
    cfg.colloid = Some(Default::default());
    let inner = build_policy(&cfg).unwrap();
    assert_eq!(inner.name(), "hemem+colloid");
    assert_eq!((inner.quantum_ns(), cfg.quantum_ns()), (10 * MS, 20 * MS));
    (
        cfg,
        Seen {
            inner,
            quanta: Vec::new(),
        },
    )
}

/// Two full quanta, then one cut to 3 ms (a run ending sooner), then `advance` directly.
fn check<B: Backend>(backend: &mut B, policy: Seen<impl Policy>) {
    let mut e = Engine::new(policy, backend).unwrap();
    e.step(backend).unwrap();
    e.step(backend).unwrap();
    e.step_within(backend, 3 * MS).unwrap();
    assert_eq!(e.policy.quanta, [10 * MS, 10 * MS, 3 * MS]);
    backend.advance(7 * MS).unwrap();
    assert_eq!(backend.observe().quantum_ns, 7 * MS);
}

#[test]
fn the_runtime_reports_the_quantum_advance_ran() {
    let mut cfg = RuntimeConfig::default();
    let dir = std::env::temp_dir().join(format!("tiermem-quantum-{}", std::process::id()));
    cfg.run_dir = dir.to_str().unwrap().into();
    let (cfg, policy) = hemem_colloid(cfg);
    // This process's runtime (userfaultfd, fault and manager threads); nothing of ours is
    // managed (no preload), so its own manager has nothing to move either.
    let rt = tiermem_linux::runtime::Runtime::init(cfg).expect("runtime (userfaultfd)");
    check(&mut RuntimeBackend::new(rt), policy);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attach_reports_the_quantum_advance_ran() {
    static STOP: AtomicBool = AtomicBool::new(false);
    // Attach's tiers below DRAM are node tiers; with one node here, node 0 again (as in
    // attach.rs's scan test). Attached to this process: preflight refuses it, the backend
    // does not care.
    let mut cfg = RuntimeConfig::default();
    cfg.tiers[1] = {
        let mut t = tiermem_core::tier::TierConfig::dram("other");
        t.kind = "node".into();
        t.node = Some(tiermem_linux::numa::dram_node());
        t
    };
    let (cfg, policy) = hemem_colloid(cfg);
    let mut b =
        tiermem_linux::attach::AttachBackend::new(std::process::id() as i32, &cfg, &STOP).unwrap();
    check(&mut b, policy);
}
