//! `tiermem sim --set PATH=VALUE`: the one override path syntax on the command line.

mod common;
use common::*;

fn sim_with(out: &std::path::Path, sets: &[&str]) -> std::process::Output {
    let mut c = tiermem();
    c.arg("sim")
        .arg(repo().join("examples/sim.toml"))
        .arg("--out")
        .arg(out)
        .arg("--no-plots");
    for s in sets {
        c.arg("--set").arg(s);
    }
    c.output().unwrap()
}

#[test]
fn set_overrides_fields_arrays_and_creates_tables() {
    let out = tmp("set-ok");
    let o = sim_with(
        &out,
        &[
            "duration_s=2",
            "machine.tiers[1].capacity=64G",
            "machine.tiers[1].unloaded_latency_ns=189",
            "policy.policy=\"tpp\"",
            "colloid.delta=0.1",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let text = summary.to_string();
    assert!(text.contains("tpp"), "{text}");
    let csv = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 20, "duration_s=2 at 100 ms");
}

#[test]
fn bad_set_paths_exit_2_naming_the_path() {
    for (set, needles) in [
        (
            "machine.tiers[5].capacity=1G",
            &[
                "field `machine.tiers[5].capacity`",
                "`machine.tiers` has 2 entries, so index 5 does not exist; use 0..1",
            ][..],
        ),
        (
            "machine.tiers.1.capacity=1G",
            &["`machine.tiers` is an array", "`machine.tiers[0]`"][..],
        ),
        (
            "machine.app_cores.x=1",
            &["`machine.app_cores` is an integer, not a table"][..],
        ),
        ("a..b=1", &["field `a..b`", "not a valid path"][..]),
        ("seed", &["PATH=VALUE"][..]),
        // A well-formed path the schema does not know: the schema's error, same syntax.
        (
            "machine.tiers[1].turbo=1",
            &["field `machine.tiers[1].turbo`"][..],
        ),
        (
            "machine.tiers[1].capacity=-5",
            &["field `machine.tiers[1].capacity`"][..],
        ),
    ] {
        let out = tmp("set-bad");
        let o = sim_with(&out, &[set]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--set {set}: {err}");
        for n in needles {
            assert!(err.contains(n), "--set {set}: {n:?} not in {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            !out.join("summary.json").exists(),
            "--set {set}: nothing written"
        );
    }
}
