//! `[[tenants]]` in the sim config: the one-tenant form runs exactly as the top-level
//! `workload`, and bad tenant configs are config errors (exit 2) naming the field.

use tiermem_core::ErrorKind;
use tiermem_sim::reproduce::COLLOID_GUPS_BASE;

const SHORT: &str = "duration_s = 2";

fn base() -> String {
    assert!(COLLOID_GUPS_BASE.contains("duration_s = 60"));
    COLLOID_GUPS_BASE.replacen("duration_s = 60", SHORT, 1)
}

/// The base config with its `[workload]` turned into `[[tenants]]` entries
/// `(name, cores)`, each with the base's workload.
fn as_tenants(tenants: &[(&str, f64)]) -> String {
    let b = base();
    let at = b.find("[workload]").expect("base has [workload]");
    let end = b[at..].find("\n[policy]").expect("policy after workload") + at;
    let body = &b[at + "[workload]".len()..end];
    let mut out = String::new();
    for (name, cores) in tenants {
        out +=
            &format!("[[tenants]]\nname = \"{name}\"\ncores = {cores}\n[tenants.workload]{body}\n");
    }
    format!("{}{}{}", &b[..at], out, &b[end..])
}

fn error_for(text: &str) -> String {
    let err = tiermem_sim::simulate_toml(text, "bad.toml").expect_err("config must be rejected");
    assert_eq!(err.kind, ErrorKind::Config, "{err}");
    assert_eq!(err.kind.exit_code(), 2);
    err.to_string()
}

#[test]
fn one_tenant_entry_runs_exactly_as_the_top_level_workload() {
    let plain = tiermem_sim::simulate_toml(&base(), "plain.toml").unwrap();
    let text = as_tenants(&[("gups", 15.0)]);
    let tenant = tiermem_sim::simulate_toml(&text, "tenant.toml").unwrap();
    assert_eq!(
        plain.summary["steady_state"], tenant.summary["steady_state"],
        "same model, same numbers"
    );
    assert_eq!(plain.summary["counters"], tenant.summary["counters"]);
    assert!(
        plain.summary.get("tenants").is_none(),
        "no tenants list without [[tenants]]"
    );
    let t = &tenant.summary["tenants"][0];
    assert_eq!(t["name"], "gups");
    assert_eq!(t["cores"], 15.0);
    assert_eq!(
        t["throughput_ops_per_s"],
        tenant.summary["steady_state"]["throughput_ops_per_s"]
    );
    assert_eq!(t["tiers"][1]["name"], "remote");
}

#[test]
fn a_tenant_on_fewer_cores_runs_slower() {
    // Fewer cores, less closed-loop throughput (the same machine model, not a constant).
    let all = tiermem_sim::simulate_toml(&as_tenants(&[("a", 15.0)]), "all.toml").unwrap();
    let few = tiermem_sim::simulate_toml(&as_tenants(&[("a", 5.0)]), "few.toml").unwrap();
    let ops = |o: &tiermem_sim::SimOutput| {
        o.summary["tenants"][0]["throughput_ops_per_s"]
            .as_f64()
            .unwrap()
    };
    assert!(ops(&few) < ops(&all), "{} vs {}", ops(&few), ops(&all));
}

#[test]
fn workload_and_tenants_together_is_an_error_naming_both() {
    let text = as_tenants(&[("a", 15.0)]);
    let text = text.replacen(
        "[policy]",
        &format!("[workload]{}\n[policy]", {
            let b = base();
            let at = b.find("[workload]").unwrap();
            let end = b[at..].find("\n[policy]").unwrap() + at;
            b[at + "[workload]".len()..end].to_string()
        }),
        1,
    );
    let msg = error_for(&text);
    assert!(
        msg.contains("tenants") && msg.contains("`workload`"),
        "{msg}"
    );
}

#[test]
fn neither_workload_nor_tenants_names_workload() {
    let b = base();
    let at = b.find("[workload]").unwrap();
    let end = b[at..].find("\n[policy]").unwrap() + at;
    let msg = error_for(&format!("{}{}", &b[..at], &b[end..]));
    assert!(msg.contains("workload") && msg.contains("missing"), "{msg}");
}

#[test]
fn tenant_fields_are_checked_by_path() {
    let msg = error_for(&as_tenants(&[("a", 5.0), ("a", 5.0)]));
    assert!(
        msg.contains("tenants[1].name") && msg.contains("unique"),
        "{msg}"
    );
    let msg = error_for(&as_tenants(&[("", 5.0)]));
    assert!(msg.contains("tenants[0].name"), "{msg}");
    let msg = error_for(&as_tenants(&[("a", 10.0), ("b", 10.0)]));
    assert!(
        msg.contains("tenants[1].cores") && msg.contains("app_cores"),
        "{msg}"
    );
    let msg = error_for(&as_tenants(&[("a", 0.0)]));
    assert!(msg.contains("tenants[0].cores"), "{msg}");
    let msg =
        error_for(&as_tenants(&[("a", 15.0)]).replacen("cores = 15", "cores = 15\ncorse = 1", 1));
    assert!(msg.contains("corse"), "{msg}");
    // Two 72 GiB footprints do not fit 128 GiB of tiers: the second tenant's is named.
    let msg = error_for(&as_tenants(&[("a", 5.0), ("b", 5.0)]));
    assert!(
        msg.contains("tenants[1].workload") && msg.contains("pages"),
        "{msg}"
    );
}

#[test]
fn several_tenants_are_refused_until_the_backend_runs_them() {
    let text = as_tenants(&[("a", 5.0), ("b", 5.0)])
        .replace("working_set = \"72GiB\"", "working_set = \"36GiB\"")
        .replace("hot_set = \"24GiB\"", "hot_set = \"12GiB\"");
    let msg = error_for(&text);
    assert!(
        msg.contains("tenants") && msg.contains("one tenant"),
        "{msg}"
    );
}
