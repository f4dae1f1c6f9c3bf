//! Bad configs are errors that name the field (and the fix), never panics.

use tiermem_core::ErrorKind;
use tiermem_sim::reproduce::COLLOID_GUPS_BASE;

fn error_for(text: &str) -> String {
    let err = tiermem_sim::simulate_toml(text, "bad.toml")
        .err()
        .expect("config must be rejected");
    assert_eq!(err.kind, ErrorKind::Config, "{err}");
    assert_eq!(err.kind.exit_code(), 2);
    err.to_string()
}

fn with(find: &str, replace: &str) -> String {
    assert!(
        COLLOID_GUPS_BASE.contains(find),
        "base config lacks `{find}`"
    );
    COLLOID_GUPS_BASE.replacen(find, replace, 1)
}

#[test]
fn unknown_field_names_its_path_and_line() {
    let msg = error_for(&with("app_cores = 15", "app_cores = 15\napp_coers = 3"));
    assert!(
        msg.contains("machine") && msg.contains("app_coers"),
        "{msg}"
    );
    assert!(msg.contains("bad.toml:"), "{msg}");
}

#[test]
fn unknown_field_in_second_tier_names_index() {
    let msg = error_for(&with("name = \"remote\"", "name = \"remote\"\nlatency = 3"));
    assert!(msg.contains("machine.tiers[1]"), "{msg}");
}

#[test]
fn wrong_type_names_field() {
    let msg = error_for(&with("app_cores = 15", "app_cores = \"many\""));
    assert!(msg.contains("machine.app_cores"), "{msg}");
}

#[test]
fn out_of_range_values_name_field_and_range() {
    let msg = error_for(&with("duration_s = 60", "duration_s = -1"));
    assert!(msg.contains("duration_s") && msg.contains("range"), "{msg}");
    let msg = error_for(&with(
        "peak_bandwidth_gbps = 205",
        "peak_bandwidth_gbps = 0",
    ));
    assert!(
        msg.contains("machine.tiers[0].peak_bandwidth_gbps"),
        "{msg}"
    );
}

#[test]
fn bad_curve_and_size_are_explained() {
    let msg = error_for(&with("curve = \"colloid-local\"", "curve = \"fastest\""));
    assert!(
        msg.contains("machine.tiers[0].curve") && msg.contains("colloid-local"),
        "{msg}"
    );
    let msg = error_for(&with(
        "curve = \"colloid-local\"",
        "curve = [[0.0, 1.0], [0.5, 0.8]]",
    ));
    assert!(msg.contains("non-decreasing"), "{msg}");
    let msg = error_for(&with("capacity = \"32G\"", "capacity = \"32 parsecs\""));
    assert!(msg.contains("machine.tiers[0].capacity"), "{msg}");
}

#[test]
fn unknown_policy_and_missing_section() {
    let msg = error_for(&with("policy = \"hemem\"", "policy = \"lru\""));
    assert!(msg.contains("policy"), "{msg}");
    let cut = COLLOID_GUPS_BASE.find("[workload]").unwrap();
    let no_workload = COLLOID_GUPS_BASE[..cut].to_string() + "[policy]\npolicy = \"static\"\n";
    let msg = error_for(&no_workload);
    assert!(msg.contains("workload"), "{msg}");
}

#[test]
fn antagonist_on_missing_tier() {
    let msg = error_for(&format!(
        "{COLLOID_GUPS_BASE}\n[[antagonist]]\ntier = 5\ncores = 1\n"
    ));
    assert!(msg.contains("antagonist[0].tier"), "{msg}");
}

#[test]
fn workload_larger_than_memory() {
    let msg = error_for(&with("working_set = \"72G\"", "working_set = \"720G\""));
    assert!(msg.contains("capacity"), "{msg}");
}
