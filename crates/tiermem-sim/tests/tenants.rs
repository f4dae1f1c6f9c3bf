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

/// Two tenants, each with half of the base's cores, working set and hot set.
fn two_halves(cores_b: f64) -> String {
    as_tenants(&[("a", 7.5), ("b", cores_b)])
        .replace("working_set = \"72GiB\"", "working_set = \"36GiB\"")
        .replace("hot_set = \"24GiB\"", "hot_set = \"12GiB\"")
}

fn tenant_ops(o: &tiermem_sim::SimOutput, t: usize) -> f64 {
    o.summary["tenants"][t]["throughput_ops_per_s"]
        .as_f64()
        .unwrap()
}

#[test]
fn two_half_tenants_share_the_machine_as_one_whole() {
    // The same per-page access rates as the one-tenant base (each tenant's hot page is
    // accessed at half its tenant's rate over half as many pages), on the same cores: the
    // machine serves the two together about as it serves the one, and splits it evenly.
    // Pages start in random tiers: in page order, a's pages would all start in the default
    // tier and b's in the other (a real asymmetry that lasts until the policy evens it).
    let random = |t: String| {
        t.replacen(
            "initial_placement = \"first-touch\"",
            "initial_placement = \"random\"",
            1,
        )
    };
    let whole = tiermem_sim::simulate_toml(&random(base()), "whole.toml").unwrap();
    let two = tiermem_sim::simulate_toml(&random(two_halves(7.5)), "two.toml").unwrap();
    let (a, b) = (tenant_ops(&two, 0), tenant_ops(&two, 1));
    let all = whole.summary["steady_state"]["throughput_ops_per_s"]
        .as_f64()
        .unwrap();
    let sum = two.summary["steady_state"]["throughput_ops_per_s"]
        .as_f64()
        .unwrap();
    assert!(
        ((a + b) - sum).abs() / sum < 1e-9,
        "tenants {a} + {b} vs machine {sum}"
    );
    assert!(
        (a - b).abs() / (a + b) < 0.05,
        "symmetric tenants: {a} vs {b}"
    );
    assert!(
        (sum - all).abs() / all < 0.10,
        "two halves {sum} vs one whole {all}"
    );
}

#[test]
fn a_busier_neighbour_slows_a_tenant() {
    // Tenant a keeps its 7.5 cores; b grows from 1 to 7.5 cores and loads the shared
    // tiers harder: a's latency rises and its throughput falls (shared bandwidth, not a
    // constant).
    let quiet = tiermem_sim::simulate_toml(&two_halves(1.0), "quiet.toml").unwrap();
    let busy = tiermem_sim::simulate_toml(&two_halves(7.5), "busy.toml").unwrap();
    assert!(
        tenant_ops(&busy, 0) < tenant_ops(&quiet, 0) * 0.99,
        "a with a busy neighbour {} vs a quiet one {}",
        tenant_ops(&busy, 0),
        tenant_ops(&quiet, 0)
    );
    assert!(tenant_ops(&busy, 1) > tenant_ops(&quiet, 1));
}

#[test]
fn a_tenants_move_never_lands_in_another_tenants_pages() {
    use tiermem_core::{Backend, Move, PageRange, Plan, TenantId, TierId};
    let cfg = tiermem_sim::config::SimConfig::from_toml(&two_halves(7.5), "t.toml").unwrap();
    let mut b = tiermem_sim::backend::SimBackend::new(&cfg).unwrap();
    b.advance(10_000_000).unwrap();
    let spans: Vec<PageRange> = b.observe().tenants.iter().map(|t| t.pages).collect();
    assert_eq!(spans.len(), 2);
    assert_eq!(
        spans[0].end(),
        spans[1].start,
        "tenants' pages follow each other"
    );
    let before = b.placement().to_vec();
    // Tenant b names a range of tenant a's pages: refused as malformed, nothing moves.
    let p = spans[0].start;
    let to = if before[p as usize] == TierId(0) {
        TierId(1)
    } else {
        TierId(0)
    };
    let plan = Plan {
        moves: vec![Move {
            tenant: TenantId(1),
            range: PageRange::one(p),
            to,
        }],
        ..Plan::default()
    };
    let a = b.apply(&plan, None);
    assert_eq!((a.moves_malformed, a.pages_applied), (1, 0), "{a:?}");
    assert_eq!(b.placement(), &before[..]);
    // The same move named for its own tenant lands.
    let plan = Plan {
        moves: vec![Move {
            tenant: TenantId(0),
            range: PageRange::one(p),
            to,
        }],
        ..Plan::default()
    };
    assert_eq!(b.apply(&plan, None).pages_applied, 1);
    assert_eq!(b.capabilities().max_tenants, 2);
}

/// A controller's CPU share scales its tenant's cores: halving b's share lowers b's
/// throughput and, with less traffic on the shared tiers, raises a's.
#[test]
fn a_cpu_share_slows_its_tenant_and_frees_bandwidth_for_the_other() {
    use tiermem_core::{
        Backend, Controller, Controls, CpuShare, Engine, Needs, Snapshot, TenantId,
    };
    struct Throttle(f64);
    impl Controller for Throttle {
        fn name(&self) -> String {
            "throttle".into()
        }
        fn needs(&self) -> Needs {
            Needs {
                cpu_shares: true,
                ..Needs::default()
            }
        }
        fn control(&mut self, _: &Snapshot<'_>) -> Controls {
            Controls {
                cpu_shares: vec![CpuShare {
                    tenant: TenantId(1),
                    share: self.0,
                }],
                ..Controls::default()
            }
        }
    }
    let run = |share: f64| -> Vec<f64> {
        let cfg = tiermem_sim::config::SimConfig::from_toml(&two_halves(7.5), "t.toml").unwrap();
        let mut b = tiermem_sim::backend::SimBackend::new(&cfg).unwrap();
        let policy = tiermem_policies::build(&cfg.policy).unwrap();
        let mut e =
            Engine::with_controller(policy, Some(Box::new(Throttle(share))), &mut b).unwrap();
        while b.now_ns() < 500_000_000 {
            e.step(&mut b).unwrap();
        }
        b.tenant_ops_per_s()
    };
    let (full, half) = (run(1.0), run(0.5));
    assert!(
        half[1] < full[1] * 0.75,
        "b at half share {} vs {}",
        half[1],
        full[1]
    );
    assert!(
        half[0] > full[0],
        "a beside a throttled b {} vs {}",
        half[0],
        full[0]
    );
}

#[test]
fn a_stream_busy_half_the_time_issues_half_the_operations_and_can_idle_in_a_phase() {
    // The base machine with a read stream that fits the fast tier: no migration, latency
    // near idle, so throughput follows the cores that issue operations.
    let stream = |busy: &str, phases: &str| {
        let b = base();
        let at = b.find("[workload]").unwrap();
        let end = b[at..].find("\n[policy]").unwrap() + at;
        let w = format!(
            "[workload]\nkind = \"stream\"\nworking_set = \"1GiB\"\nobject_size = 64\n{busy}\n{phases}"
        );
        let text = format!("{}{}{}", &b[..at], w, &b[end..]);
        tiermem_sim::simulate_toml(&text, "busy.toml").unwrap()
    };
    let ops = |o: &tiermem_sim::SimOutput| {
        o.summary["steady_state"]["throughput_ops_per_s"]
            .as_f64()
            .unwrap()
    };
    let full = stream("", "");
    let half = stream("busy_share = 0.5", "");
    let r = ops(&half) / ops(&full);
    assert!((0.45..=0.55).contains(&r), "{r}");
    // Idle from 0.5 s on (the steady state is the end of the run): far fewer operations.
    let idle = stream("", "[[workload.phases]]\nat_s = 0.5\nbusy_share = 0.01");
    let r = ops(&idle) / ops(&full);
    assert!(r < 0.05, "{r}");
    let e = error_for(&base().replacen("[workload]", "[workload]\nbusy_share = 0.5", 1));
    assert!(e.contains("busy_share"), "{e}");
}
