//! Three tiers (DRAM, a full CXL node, a far node): the base systems demote down the tiers
//! (`tiermem_policies::cascade`) instead of stalling. Before it, every move was refused
//! (HeMem: 2.75 M pages tried, 0 applied, "tiers full").

const EXAMPLE: &str = include_str!("../../../examples/sim.toml");

/// examples/sim.toml with a 24 GiB CXL tier (filled by first touch: 32 GiB DRAM + 24 GiB)
/// and a 96 GiB far node below it, for 4 simulated seconds.
fn three_tiers() -> String {
    let far = r#"[[machine.tiers]]
name = "far"
kind = "node"
capacity = "96GiB"
unloaded_latency_ns = 250
peak_bandwidth_gbps = 50
write_cost = 1.0
curve = "colloid-remote"
cost_per_gb = 0.25

"#;
    let at = EXAMPLE
        .find("[[antagonist]]")
        .expect("example has an antagonist");
    let text = format!("{}{far}{}", &EXAMPLE[..at], &EXAMPLE[at..]);
    assert!(text.contains("capacity = \"96GiB\"\nunloaded_latency_ns = 135"));
    text.replacen(
        "capacity = \"96GiB\"\nunloaded_latency_ns = 135",
        "capacity = \"24GiB\"\nunloaded_latency_ns = 135",
        1,
    )
    .replacen("duration_s = 30", "duration_s = 4", 1)
}

fn run(policy: &str, colloid: bool) -> serde_json::Value {
    let mut text =
        three_tiers().replacen("policy = \"hemem\"", &format!("policy = \"{policy}\""), 1);
    if colloid {
        text.push_str("\n[colloid]\n");
    }
    tiermem_sim::simulate_toml(&text, "three.toml")
        .unwrap()
        .summary
}

fn far_pages_at_end(s: &serde_json::Value) -> f64 {
    s["steady_state"]["tiers"][2]["app_share"].as_f64().unwrap()
}

#[test]
fn base_systems_demote_down_the_tiers_and_their_moves_land() {
    let before = run("static", false);
    for policy in ["hemem", "memtis", "tpp"] {
        let s = run(policy, false);
        let a = &s["counters"]["applied"];
        let applied = a["pages_applied"].as_u64().unwrap();
        assert!(applied > 0, "{policy}: nothing applied: {a}");
        let warnings = s["warnings"].as_array().unwrap();
        assert!(
            warnings
                .iter()
                .all(|w| !w.as_str().unwrap().contains("tiers full")),
            "{policy}: {warnings:?}"
        );
        if policy != "tpp" {
            // HeMem and MEMTIS bring hot pages up: more of the accesses hit DRAM.
            let dram = |s: &serde_json::Value| {
                s["steady_state"]["tiers"][0]["app_share"].as_f64().unwrap()
            };
            assert!(
                dram(&s) > dram(&before) + 0.1,
                "{policy}: DRAM share {} vs {}",
                dram(&s),
                dram(&before)
            );
        }
    }
}

#[test]
fn colloid_moves_pages_between_the_lower_pair_too() {
    // MEMTIS+Colloid balances CXL against the far node as well as DRAM against CXL: the
    // far node serves fewer accesses than with no migration.
    let before = run("static", false);
    let s = run("memtis", true);
    assert!(
        far_pages_at_end(&s) < far_pages_at_end(&before) * 0.8,
        "far share {} vs {}",
        far_pages_at_end(&s),
        far_pages_at_end(&before)
    );
}
