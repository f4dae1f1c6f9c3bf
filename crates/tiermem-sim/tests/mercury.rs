//! Mercury on the simulator: the machine's calibration against the paper's stated
//! measurements, the controller end to end, and its config errors.

use tiermem_sim::backend::SimBackend;
use tiermem_sim::config::SimConfig;
use tiermem_sim::reproduce::MERCURY_FIG13_BASE;

/// The Fig. 13 machine with the given `[[tenants]]` (TOML) instead of its own.
fn machine_with(tenants: &str, extra: &str) -> SimConfig {
    let at = MERCURY_FIG13_BASE.find("[[tenants]]").unwrap();
    let pol = MERCURY_FIG13_BASE.find("[policy]").unwrap();
    let text = format!(
        "{}{tenants}\n{}{extra}",
        &MERCURY_FIG13_BASE[..at],
        &MERCURY_FIG13_BASE[pol..]
    );
    SimConfig::from_toml(&text, "test.toml").unwrap()
}

const LS_MICRO: &str = "[[tenants]]\nname = \"ls\"\ncores = 1\n[tenants.workload]\nkind = \"random\"\nworking_set = \"4GiB\"\n";
const LLAMA: &str = "[[tenants]]\nname = \"llama\"\ncores = 8\n[tenants.workload]\nkind = \"stream\"\nworking_set = \"40GiB\"\nobject_size = 4096\n";

fn local(f: f64) -> Vec<f64> {
    vec![f, 1.0 - f]
}

#[test]
fn the_machine_matches_the_papers_measurements() {
    // Fig. 7: llama.cpp alone on local memory draws ~100 GB/s; Fig. 1b: all on CXL, 25 % of it.
    let b = SimBackend::new(&machine_with(LLAMA, "")).unwrap();
    let bw_local = b.solve_static(&[local(1.0)], &[1.0]).1[0];
    let bw_cxl = b.solve_static(&[local(0.0)], &[1.0]).1[0];
    println!(
        "llama alone: local {:.1} GB/s, cxl {:.1} GB/s",
        bw_local / 1e9,
        bw_cxl / 1e9
    );
    assert!((bw_local / 1e9 - 100.0).abs() < 10.0, "{bw_local}");
    assert!(
        (bw_cxl / bw_local - 0.25).abs() < 0.03,
        "{}",
        bw_cxl / bw_local
    );
    // Fig. 1a: the LS microbenchmark is 2× slower all on CXL.
    let b = SimBackend::new(&machine_with(LS_MICRO, "")).unwrap();
    let l_local = b.solve_static(&[local(1.0)], &[1.0]).0.avg_latency_ns[0];
    let l_cxl = b.solve_static(&[local(0.0)], &[1.0]).0.avg_latency_ns[0];
    assert!((l_cxl / l_local - 2.0).abs() < 0.1, "{}", l_cxl / l_local);
    // Fig. 6b: llama.cpp all on the slow tier slows a local co-runner by up to 32 %
    // (inter-tier interference); Fig. 6a: on the same tier, by up to 50 %.
    let b = SimBackend::new(&machine_with(&format!("{LS_MICRO}{LLAMA}"), "")).unwrap();
    let alone = b
        .solve_static(&[local(1.0), local(1.0)], &[1.0, 1e-9])
        .0
        .avg_latency_ns[0];
    let inter = b
        .solve_static(&[local(1.0), local(0.0)], &[1.0, 1.0])
        .0
        .avg_latency_ns[0];
    let intra = b
        .solve_static(&[local(1.0), local(1.0)], &[1.0, 1.0])
        .0
        .avg_latency_ns[0];
    println!(
        "LS alone {alone:.1} ns, BI on CXL {inter:.1} ns ({:.2}x), BI local {intra:.1} ns ({:.2}x)",
        inter / alone,
        intra / alone
    );
    assert!((inter / alone - 1.32).abs() < 0.03, "{}", inter / alone);
}
