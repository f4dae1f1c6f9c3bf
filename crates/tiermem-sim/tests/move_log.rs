//! The simulator's move log (`Snapshot::moved`): every page whose tier changed between two
//! snapshots is in the later one's log, whether a plan moved it or an access to a
//! compressed page faulted it back during `advance`; the first snapshot has no log. The
//! incremental lists of HeMem, TPP and MEMTIS are only as right as this log.

use tiermem_core::{Backend, Engine, PageIdx, Plan, Policy, Snapshot, TierId, TrackerSpec};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::config::SimConfig;

/// 65 536 pages of 4 KiB under GUPS, DRAM for all of them and a compressed tier: pages a
/// plan sends there fault back to DRAM when the program next reads them, some within the
/// quantum, most later.
const CONFIG: &str = r#"
duration_s = 1
epoch_ms = 1
[machine]
page_size = "4KiB"
app_cores = 1
ops_in_flight = 5
mlp_lines = 14
[[machine.tiers]]
name = "local"
kind = "dram"
capacity = "256MiB"
unloaded_latency_ns = 70
peak_bandwidth_gbps = 205
curve = "flat"
[[machine.tiers]]
name = "z"
kind = "compressed"
capacity = "256MiB"
codec = "lz4"
allocator = "zsmalloc"
[page_compressibility]
min = 0.3
max = 0.3
[workload]
kind = "gups"
working_set = "256MiB"
hot_set = "64MiB"
hot_probability = 0.5
object_size = 64
write_fraction = 0
[policy]
policy = "static"
"#;

/// Sends a few pseudo-random pages to the compressed tier each quantum and checks, at
/// every snapshot, that the pages whose tier changed since the last one are in its log.
struct Checker {
    last: Option<Vec<TierId>>,
    rng: u64,
    snapshots: usize,
    with_log: usize,
    changed: usize,
    /// Changes from the compressed tier back to DRAM: faults during `advance`.
    faulted_back: usize,
}

impl Policy for Checker {
    fn name(&self) -> String {
        "move-log checker".into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn quantum_ns(&self) -> u64 {
        2_000_000
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.snapshots += 1;
        match (&self.last, snap.moved) {
            (None, moved) => assert!(moved.is_none(), "the first snapshot has no log"),
            (Some(last), Some(moved)) => {
                self.with_log += 1;
                for (p, (was, now)) in last.iter().zip(snap.placement).enumerate() {
                    if was != now {
                        self.changed += 1;
                        self.faulted_back += usize::from(*now == TierId(0));
                        assert!(
                            moved.contains(&(p as PageIdx)),
                            "page {p} went from {was:?} to {now:?} and is not in the log {moved:?}"
                        );
                    }
                }
            }
            (Some(_), None) => {}
        }
        self.last = Some(snap.placement.to_vec());
        let mut plan = Plan::default();
        for _ in 0..64 {
            self.rng = self
                .rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            plan.push((self.rng >> 33) as PageIdx % 65_536, TierId(1));
        }
        plan
    }
}

#[test]
fn every_page_whose_tier_changed_is_in_the_next_snapshots_log() {
    let cfg = SimConfig::from_toml(CONFIG, "move-log.toml").expect("config");
    let mut backend = SimBackend::new(&cfg).expect("backend");
    let checker = Checker {
        last: None,
        rng: 1,
        snapshots: 0,
        with_log: 0,
        changed: 0,
        faulted_back: 0,
    };
    let mut engine = Engine::new(checker, &mut backend).expect("engine");
    while backend.now_ns() < 400_000_000 {
        engine.step_within(&mut backend, u64::MAX).expect("step");
    }
    let c = &engine.policy;
    assert!(c.snapshots >= 100 && c.with_log + 1 == c.snapshots, "{} {}", c.snapshots, c.with_log);
    // Pages went both ways: compressed by the plans, faulted back by the reads.
    assert!(
        c.changed > 1000 && c.faulted_back > 100,
        "{} changes, {} faults back",
        c.changed,
        c.faulted_back
    );
    assert!(backend.placement().contains(&TierId(0)));
}
