//! Bad configs are errors that name the field (and the fix), never panics.

use tiermem_core::ErrorKind;
use tiermem_sim::reproduce::COLLOID_GUPS_BASE;

fn error_for(text: &str) -> String {
    let err = tiermem_sim::simulate_toml(text, "bad.toml").expect_err("config must be rejected");
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
    let msg = error_for(&with("capacity = \"32GiB\"", "capacity = \"32 parsecs\""));
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
    let msg = error_for(&with("working_set = \"72GiB\"", "working_set = \"720G\""));
    assert!(msg.contains("capacity"), "{msg}");
}

// ---- issue 10, item 4: every bad input is a one-line error naming the field and the fix

/// The error for `text`, checked to be one line naming `field`.
fn names(text: &str, field: &str) -> String {
    let msg = std::panic::catch_unwind(|| error_for(text))
        .unwrap_or_else(|_| panic!("panicked instead of naming `{field}`"));
    assert!(msg.contains(&format!("`{field}`")), "{msg}");
    assert!(!msg.contains('\n'), "not one line: {msg}");
    msg
}

const KV_TAIL: &str = "[workload]\nkind = \"kv\"\nkeys = 1000\nvalue_size = \"VALUE\"\n[policy]\npolicy = \"hemem\"\n";

fn kv(value: &str) -> String {
    let cut = COLLOID_GUPS_BASE.find("[workload]").unwrap();
    COLLOID_GUPS_BASE[..cut].to_string() + &KV_TAIL.replace("VALUE", value)
}

#[test]
fn kv_value_size_past_2_pow_64_is_an_error_not_a_panic() {
    let msg = names(&kv("99999999999999999999G"), "workload.value_size");
    assert!(msg.contains("too large") && msg.contains("2^64"), "{msg}");
}

#[test]
fn kv_records_past_the_page_space_are_rejected() {
    let msg = names(&kv("9999999T"), "workload.value_size");
    assert!(msg.contains("pages the simulator handles"), "{msg}");
}

#[test]
fn capacity_past_2_pow_64_does_not_saturate() {
    let msg = names(
        &with(
            "capacity = \"32GiB\"",
            "capacity = \"99999999999999999999G\"",
        ),
        "machine.tiers[0].capacity",
    );
    assert!(msg.contains("too large"), "{msg}");
}

#[test]
fn float_and_negative_capacity_say_what_a_size_is() {
    let msg = names(
        &with("capacity = \"32GiB\"", "capacity = 1e30"),
        "machine.tiers[0].capacity",
    );
    assert!(!msg.contains("untagged enum"), "{msg}");
    assert!(
        msg.contains("floating-point") && msg.contains("\"32G\""),
        "{msg}"
    );
    let msg = names(
        &with("capacity = \"32GiB\"", "capacity = -5"),
        "machine.tiers[0].capacity",
    );
    assert!(msg.contains("negative"), "{msg}");
}

#[test]
fn integer_overflow_names_the_field() {
    let msg = names(
        &with("capacity = \"32GiB\"", "capacity = 99999999999999999999"),
        "machine.tiers[0].capacity",
    );
    assert!(msg.contains("bad.toml:"), "{msg}");
    assert!(msg.contains("as a string"), "{msg}");
    let msg = names(
        &kv("1K").replace("keys = 1000", "keys = 99999999999999999999"),
        "workload.keys",
    );
    assert!(msg.contains("too large"), "{msg}");
}

#[test]
fn syntax_error_is_not_blamed_on_the_next_key() {
    let msg = error_for(&with("app_cores = 15", "app_cores = [[["));
    assert!(!msg.contains("ops_in_flight"), "{msg}");
    assert!(!msg.contains('\n'), "not one line: {msg}");
}

#[test]
fn tier_smaller_than_one_page_is_rejected() {
    let msg = names(
        &with("capacity = \"96GiB\"", "capacity = 1000"),
        "machine.tiers[1].capacity",
    );
    assert!(msg.contains("one page") && msg.contains("2097152"), "{msg}");
    // A tier that scale shrinks below one page.
    let msg = names(
        &with("capacity = \"96GiB\"", "capacity = \"3M\"")
            .replace("seed = 1", "seed = 1\nscale = 0.5")
            .replace("working_set = \"72GiB\"", "working_set = \"16G\""),
        "machine.tiers[1].capacity",
    );
    assert!(msg.contains("scale"), "{msg}");
}

#[test]
fn zero_app_cores_is_rejected() {
    let msg = names(
        &with("app_cores = 15", "app_cores = 0"),
        "machine.app_cores",
    );
    assert!(msg.contains("positive"), "{msg}");
}

#[test]
fn infinite_curve_point_is_rejected() {
    let msg = names(
        &with(
            "curve = \"colloid-local\"",
            "curve = [[0.0, 1.0], [0.5, inf]]",
        ),
        "machine.tiers[0].curve",
    );
    assert!(msg.contains("finite"), "{msg}");
}

#[test]
fn every_missing_field_is_reported_at_once() {
    let text = COLLOID_GUPS_BASE
        .replace("app_cores = 15\n", "")
        .replace("mlp_lines = 14 ", "#");
    let msg = error_for(&text);
    for f in ["machine.app_cores", "machine.mlp_lines"] {
        assert!(msg.contains(&format!("`{f}`")), "{f} missing from: {msg}");
    }
    // A tier's fields depend on its kind and backend (core's one tier schema): a missing
    // capacity is reported by validation, after the fields every config needs.
    let msg = error_for(&COLLOID_GUPS_BASE.replace("capacity = \"96GiB\"\n", ""));
    assert!(
        msg.contains("machine.tiers[1].capacity") && msg.contains("missing"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
    // Whole tables: named, not the fields inside them. (`workload` is not a required
    // field but one of two forms, `[workload]` or `[[tenants]]`: validation names it once
    // the required fields are there.)
    let cut = COLLOID_GUPS_BASE.find("[workload]").unwrap();
    let msg = error_for(&COLLOID_GUPS_BASE[..cut]);
    assert!(msg.contains("`policy`"), "{msg}");
    assert!(!msg.contains("working_set"), "{msg}");
    let msg = error_for(&format!(
        "{}[policy]\npolicy = \"hemem\"\n",
        &COLLOID_GUPS_BASE[..cut]
    ));
    assert!(msg.contains("workload") && msg.contains("missing"), "{msg}");
}

fn short(text: &str) -> tiermem_sim::SimOutput {
    let text = text.replace("duration_s = 60", "duration_s = 1");
    tiermem_sim::simulate_toml(&text, "short.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn warnings(out: &tiermem_sim::SimOutput) -> Vec<String> {
    out.summary["warnings"]
        .as_array()
        .expect("summary.json has a warnings list")
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn full_tiers_warn_in_the_summary() {
    // 32G + 40G hold the 72G buffer exactly: nothing can be demoted to make room.
    let out = short(&with("capacity = \"96GiB\"", "capacity = \"40G\""));
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("tiers full") && w[0].contains("capacity"),
        "{w:?}"
    );
    assert!(
        out.summary["counters"]["applied"]["pages_no_capacity"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn nothing_can_move_warns_and_a_normal_run_does_not() {
    let w = warnings(&short(&with("policy = \"hemem\"", "policy = \"static\"")));
    assert!(
        w.len() == 1 && w[0].contains("nothing can move") && w[0].contains("static"),
        "{w:?}"
    );
    let w = warnings(&short(
        &with("working_set = \"72GiB\"", "working_set = \"16G\"")
            .replace("hot_set = \"24GiB\"", "hot_set = \"4G\""),
    ));
    assert!(
        w.len() == 1 && w[0].contains("nothing can move") && w[0].contains("tier 0"),
        "{w:?}"
    );
    assert!(warnings(&short(COLLOID_GUPS_BASE)).is_empty());
}

#[test]
fn policy_field_errors_name_the_policy_field() {
    let msg = names(
        &with(
            "policy = \"hemem\"",
            "policy = \"hemem\"\nquantum_ms = \"abc\"",
        ),
        "policy.quantum_ms",
    );
    assert!(msg.contains("f64"), "{msg}");
    let msg = names(
        &with("policy = \"hemem\"", "policy = \"hemem\"\nquantum_mss = 3"),
        "policy.quantum_mss",
    );
    assert!(msg.contains("unknown field"), "{msg}");
}

#[test]
fn nan_antagonist_end_and_empty_tier_name_are_rejected() {
    let msg = names(
        &format!("{COLLOID_GUPS_BASE}\n[[antagonist]]\ntier = 0\ncores = 1\nend_s = nan\n"),
        "antagonist[0].end_s",
    );
    assert!(msg.contains("NaN"), "{msg}");
    names(
        &with("name = \"local\"", "name = \"\""),
        "machine.tiers[0].name",
    );
}

#[test]
fn footprint_past_what_the_simulator_can_hold_is_rejected_before_running() {
    // 15T at 4K pages: 4e9 pages fit a u32 but would need tens of GiB of simulator state.
    let msg = names(
        &with("working_set = \"72GiB\"", "working_set = \"15T\"")
            .replace("page_size = \"2MiB\"", "page_size = \"4K\"")
            .replace("capacity = \"96GiB\"", "capacity = \"16T\""),
        "workload.working_set",
    );
    assert!(msg.contains("page_size"), "{msg}");
}

#[test]
fn two_migration_charges_at_once_are_refused() {
    let msg = error_for(&with(
        "[workload]",
        "[machine.migration]\nsynchronous = true\nthreads_on_app_cores = true\n[workload]",
    ));
    assert!(
        msg.contains("machine.migration.synchronous") && msg.contains("set one of them"),
        "{msg}"
    );
    let msg = error_for(&with(
        "[workload]",
        "[machine.migration]\nthreads_on_app_cores = true\napp_threads = 0\n[workload]",
    ));
    assert!(msg.contains("machine.migration.app_threads"), "{msg}");
}
