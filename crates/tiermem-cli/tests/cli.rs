//! The `tiermem` binary end to end: outputs, exit codes, error messages.

mod common;
use common::*;

#[test]
fn sim_writes_summary_and_timeseries() {
    let out = tmp("sim");
    let cfg = out.join("c.toml");
    let text = std::fs::read_to_string(repo().join("examples/sim.toml"))
        .unwrap()
        .replace("duration_s = 30", "duration_s = 3");
    std::fs::write(&cfg, text).unwrap();
    let o = tiermem()
        .arg("sim")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .arg("--no-plots")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(
        summary["steady_state"]["throughput_ops_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let csv = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "t_s",
        "throughput_ops_per_s",
        "tier0_latency_ns",
        "tier1_latency_ns",
        "app_share_tier0",
        "migrated_bytes_per_s",
    ] {
        assert!(
            header.split(',').any(|c| c == col),
            "missing column {col} in {header}"
        );
    }
    // 3 s at 100 ms resolution.
    assert_eq!(csv.lines().count(), 1 + 30);
}

#[test]
fn bad_config_exits_2_naming_the_field() {
    let out = tmp("bad");
    let cfg = out.join("c.toml");
    let text = std::fs::read_to_string(repo().join("examples/sim.toml"))
        .unwrap()
        .replace("app_cores = 15", "app_cores = 15\nturbo = true");
    std::fs::write(&cfg, text).unwrap();
    let o = tiermem()
        .arg("sim")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("machine") && err.contains("turbo"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !out.join("summary.json").exists(),
        "nothing written on a bad config"
    );
}

#[test]
fn missing_config_and_unknown_experiment_exit_2() {
    let out = tmp("missing");
    let o = tiermem()
        .args(["sim", "/no/such/file.toml", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/file.toml"));
    let o = tiermem()
        .args(["reproduce", "colloid-fig99", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("colloid-fig1"),
        "lists what exists"
    );
    // --projection is ICS'18's method: granularity-fig8 only, refused before any work.
    let o = tiermem()
        .args(["reproduce", "colloid-fig1", "--projection", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--projection") && err.contains("granularity-fig8"),
        "{err}"
    );
    assert!(!out.join("summary.json").exists());
}

#[test]
fn usage_errors_exit_2() {
    let o = tiermem().arg("sim").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = tiermem().arg("frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
