//! `tiermem policies` lists the registry, and a registered policy is reachable by name from
//! the command line. The tests' binary has the example policy `toy_demote` (this crate's
//! dev-dependencies turn on tiermem-policies' `toy-policy` feature).

mod common;
use common::*;
use tiermem_policies::{PolicyConfig, REGISTRY};

fn stdout_of(args: &[&str]) -> (std::process::Output, String) {
    let o = tiermem().args(args).output().unwrap();
    let s = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, s)
}

#[test]
fn lists_every_registered_policy_and_prints_its_defaults() {
    let (o, list) = stdout_of(&["policies"]);
    assert!(o.status.success());
    assert_eq!(list.lines().count(), REGISTRY.len(), "{list}");
    for (line, e) in list.lines().zip(REGISTRY) {
        assert!(
            line.starts_with(e.name) && line.ends_with(e.summary),
            "{line}"
        );
    }
    assert!(list.contains("toy_demote"), "{list}");
    for e in REGISTRY {
        let (o, text) = stdout_of(&["policies", e.name]);
        assert!(o.status.success());
        let doc: toml::Table = toml::from_str(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
        let cfg = PolicyConfig::from_value(doc["policy"].clone()).unwrap();
        assert_eq!(Some(cfg), PolicyConfig::default_for(e.name), "{text}");
    }
    let (o, _) = stdout_of(&["policies", "autonuma"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown policy `autonuma`; registered: hemem, tpp"),
        "{err}"
    );
}

#[test]
fn sim_runs_a_policy_named_on_the_command_line() {
    let out = tmp("toy-policy");
    let o = tiermem()
        .arg("sim")
        .arg(repo().join("examples/sim.toml"))
        .args([
            "--no-plots",
            "--set",
            "duration_s=2",
            "--set",
            "policy.policy=toy_demote",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["policy"], "toy_demote");
    let applied = summary["counters"]["applied"]["pages_applied"]
        .as_u64()
        .unwrap();
    let quanta = summary["counters"]["quanta"].as_u64().unwrap();
    assert_eq!(
        applied,
        16 * quanta,
        "the default pages_per_quantum each quantum"
    );
}
