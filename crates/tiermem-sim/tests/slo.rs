//! The runtime's SLO controller (`tiermem_policies::slo`) on the simulator's compressed
//! tiers: the same code that picks `tiermem run`'s budget offloads a GUPS workload's cold
//! memory to a simulated lz4 tier and keeps the fault stall under its target.

use tiermem_core::{Plan, Policy, Snapshot, TrackerSpec};
use tiermem_policies::slo::{SloConfig, SloController};
use tiermem_sim::config::SimConfig;
use tiermem_sim::runner::{run_with_controller, steady};

/// 64 MiB of 4 KiB pages, 10 % of them taking all but 1e-5 of the accesses (a cold page
/// is touched about once a minute), all in DRAM at the start;
/// an lz4 tier below, a page fault and decompression per access to it.
fn config() -> String {
    r#"
duration_s = 40
epoch_ms = 10
initial_placement = "tier:0"
[machine]
page_size = "4KiB"
app_cores = 1
ops_in_flight = 1
mlp_lines = 10
compressed_fault_ns = 2000
[[machine.tiers]]
name = "dram"
kind = "dram"
capacity = "64MiB"
unloaded_latency_ns = 81
peak_bandwidth_gbps = 140
curve = "flat"
[[machine.tiers]]
name = "lz4"
kind = "compressed"
codec = "lz4"
allocator = "zsmalloc"
capacity = "64MiB"
[page_compressibility]
min = 0.3
max = 0.5
[workload]
kind = "gups"
working_set = "64MiB"
hot_set = "6553KiB"
hot_probability = 0.99999
object_size = 64
[policy]
policy = "static"
"#
    .into()
}

/// Places nothing itself (the runtime's guard alone, which only holds the limit): every
/// move is the simulator's reclaim under the controller's limit, faults bring pages back.
struct Hold;

impl Policy for Hold {
    fn name(&self) -> String {
        "hold".into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn quantum_ns(&self) -> u64 {
        20_000_000
    }
    fn decide(&mut self, _: &Snapshot<'_>) -> Plan {
        Plan::default()
    }
}

#[test]
fn the_slo_controller_offloads_cold_memory_in_the_simulator_within_its_target() {
    let cfg = SimConfig::from_toml(&config(), "slo.toml").unwrap();
    let plain = tiermem_sim::runner::run(&cfg).unwrap();
    let backend = tiermem_sim::backend::SimBackend::new(&cfg).unwrap();
    let slo = SloController::new(SloConfig::default(), None).unwrap();
    let out =
        run_with_controller(&cfg, backend, Box::new(Hold), Some(Box::new(slo)), None).unwrap();
    let pages = 64 * 256;
    let used = out.backend.used_pages();
    // At least 70 % of the cold 90 % left DRAM.
    let cold_out = used[1] as f64 / (0.9 * pages as f64);
    assert!(
        cold_out >= 0.7,
        "{cold_out:.2} of the cold pages offloaded: {used:?}"
    );
    // And the program barely noticed: steady-state throughput within 3 % of all-in-DRAM
    // (the stall target is 1 % of wall time).
    let t0 = steady(&plain.backend.records, 0.25).throughput_ops_per_s;
    let t1 = steady(&out.backend.records, 0.25).throughput_ops_per_s;
    assert!(t1 >= 0.97 * t0, "throughput {t1:.0} vs {t0:.0} all in DRAM");
}
