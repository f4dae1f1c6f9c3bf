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

fn fig13_with(controller: &str) -> String {
    format!("{MERCURY_FIG13_BASE}\n{controller}").replacen("duration_s = 60", "duration_s = 2", 1)
}

fn config_error(text: &str) -> String {
    let e = tiermem_sim::simulate_toml(text, "bad.toml").expect_err("must be rejected");
    assert_eq!(e.kind, tiermem_core::ErrorKind::Config, "{e}");
    let msg = e.to_string();
    assert_eq!(msg.lines().count(), 1, "{msg}");
    msg
}

const TWO: &str = "[controller]\ncontroller = \"mercury\"\n[[controller.tenants]]\nname = \"redis\"\nslo = \"460ns\"\npriority = 3\n[[controller.tenants]]\nname = \"llama\"\nslo = \"40GB/s\"\npriority = 1\n";

#[test]
fn controller_config_errors_name_the_field() {
    let dup = TWO.replace("priority = 1", "priority = 3");
    let e = config_error(&fig13_with(&dup));
    assert!(
        e.contains("controller.tenants[1].priority") && e.contains("unique"),
        "{e}"
    );
    let e = config_error(&fig13_with(&TWO.replace("\"460ns\"", "\"460\"")));
    assert!(
        e.contains("controller.tenants[0].slo") && e.contains("no unit"),
        "{e}"
    );
    let e = config_error(&fig13_with(
        &TWO.replace("name = \"llama\"", "name = \"lama\""),
    ));
    assert!(
        e.contains("controller.tenants[1].name") && e.contains("llama"),
        "{e}"
    );
    let e = config_error(&fig13_with(&TWO.replace("\"mercury\"", "\"venus\"")));
    assert!(e.contains("controller.controller"), "{e}");
    // A config that runs: the controller is built, profiles and thresholds reported.
    let out = tiermem_sim::simulate_toml(&fig13_with(TWO), "ok.toml").unwrap();
    let c = &out.summary["controller"];
    assert_eq!(c["profiles"].as_array().unwrap().len(), 2);
    assert!(c["thresholds"]["numa_hint_faults_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_inadmissible_tenant_is_rejected_and_never_runs() {
    // 100 ns is below the machine's unloaded local latency (120 ns): never met alone.
    let bad = TWO.replace("\"460ns\"", "\"100ns\"");
    let out = tiermem_sim::simulate_toml(&fig13_with(&bad), "ok.toml").unwrap();
    let p = &out.summary["controller"]["profiles"][0];
    assert_eq!(p["admissible"], false);
    let col = |name: &str| {
        out.timeseries
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .values
            .clone()
    };
    // Rejected: it never runs (CPU share 0) and holds no local memory.
    assert!(col("redis_cpu_share").iter().all(|&s| s == 0.0));
    assert!(col("redis_ops_per_s").iter().skip(1).all(|&o| o == 0.0));
    assert!(col("redis_local_limit_bytes").iter().all(|&l| l == 0.0));
}

fn rows(summary: &serde_json::Value, system: &str) -> Vec<serde_json::Value> {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["system"] == system)
        .cloned()
        .collect()
}

#[test]
fn fig13_quick_properties() {
    let dir = std::env::temp_dir().join(format!("tiermem-mercury-fig13-{}", std::process::id()));
    let s = tiermem_sim::reproduce::run("mercury-fig13", &dir, true).unwrap();
    for sys in ["tpp", "tpp+colloid", "mercury"] {
        assert!(dir.join(sys).join("timeseries.csv").exists());
    }
    let mercury = rows(&s, "mercury");
    let tpp = rows(&s, "tpp");
    let get = |rows: &[serde_json::Value], t: &str, k: &str| {
        rows.iter().find(|r| r["tenant"] == t).unwrap()[k]
            .as_f64()
            .unwrap()
    };
    // TPP misses llama's bandwidth SLO and over-serves Redis (hot-first: Redis is hottest).
    assert!(get(&tpp, "llama", "slo_met_share") < 0.5);
    assert!(get(&tpp, "redis", "measured") < 0.5 * 460.0);
    // Mercury holds the two LS tenants at their targets: Redis in [0.95, 1.0] × 460 ns
    // (it gives up the local memory it does not need), VectorDB within 1 % of 290 ns.
    let redis = get(&mercury, "redis", "measured");
    assert!((0.95 * 460.0..=460.0).contains(&redis), "{redis}");
    let vdb = get(&mercury, "vectordb", "measured");
    assert!(vdb <= 290.0 * 1.01, "{vdb}");
    // Strict priority: the memory Redis gives up goes to lower priorities, none to it.
    assert!(get(&mercury, "redis", "local_gib") < 1.0);
    // The lowest-priority BI tenant is the one throttled.
    assert!(get(&mercury, "llama", "cpu_share") < 1.0);
    assert_eq!(get(&mercury, "redis", "cpu_share"), 1.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fig14_quick_bi_tenant_is_demoted_then_throttled_then_restored_when_idle() {
    let dir = std::env::temp_dir().join(format!("tiermem-mercury-fig14-{}", std::process::id()));
    let s = tiermem_sim::reproduce::run("mercury-fig14", &dir, true).unwrap();
    let a = &s["llama_actions"];
    let demote = a["first_demotion_s"].as_f64().expect("demoted");
    let throttle = a["first_throttle_s"].as_f64().expect("throttled");
    let restored = a["restored_s"].as_f64().expect("restored");
    let idle = s["phases_s"]["idle"].as_array().unwrap();
    let (idle_from, idle_to) = (idle[0].as_f64().unwrap(), idle[1].as_f64().unwrap());
    assert!(demote <= throttle, "{a}");
    assert!(throttle < idle_from, "{a}");
    assert!(restored > idle_from && restored <= idle_to, "{a}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_high_priority_ls_tenant_takes_local_memory_from_the_lowest_priority_first() {
    // llama (lowest) holds most of the local tier for a 60 GB/s target; VectorDB arrives at
    // 20 s as the most important tenant with a latency target that needs local memory.
    let ctl = "[controller]\ncontroller = \"mercury\"\n\
        [[controller.tenants]]\nname = \"redis\"\nslo = \"200ns\"\npriority = 2\n\
        [[controller.tenants]]\nname = \"llama\"\nslo = \"60GB/s\"\npriority = 1\n\
        [[controller.tenants]]\nname = \"vectordb\"\nslo = \"200ns\"\npriority = 9\narrive_s = 20\n";
    let text = fig13_with(ctl).replacen("duration_s = 2", "duration_s = 21", 1);
    let out = tiermem_sim::simulate_toml(&text, "late.toml").unwrap();
    let profiles = &out.summary["controller"]["profiles"];
    let need = profiles[2]["local_bytes"].as_f64().unwrap();
    assert!(need > 0.0, "{profiles}");
    let col = |name: &str| {
        out.timeseries
            .iter()
            .find(|c| c.name == name)
            .unwrap()
            .values
            .clone()
    };
    let t = col("t_s");
    let before = t.iter().position(|&x| (x - 20.0).abs() < 1e-6).unwrap();
    let after = before + 1;
    let lim = |n: &str, i: usize| col(&format!("{n}_local_limit_bytes"))[i];
    let cap = 40.0 * 0.1 * (1u64 << 30) as f64;
    let free_before = cap - lim("redis", before) - lim("llama", before);
    assert!(
        need > free_before,
        "the late tenant needs more than is free"
    );
    assert_eq!(lim("vectordb", before), 0.0);
    assert_eq!(col("vectordb_cpu_share")[before], 0.0, "not arrived");
    // At admission: VectorDB gets its profiled memory, all of the shortfall from llama.
    assert_eq!(lim("vectordb", after), need);
    assert_eq!(lim("redis", after), lim("redis", before));
    assert!(
        lim("redis", before) > 0.0,
        "redis holds memory that a wrong order would take"
    );
    let taken = lim("llama", before) - lim("llama", after);
    assert!(
        (taken - (need - free_before)).abs() < 1.0,
        "{taken} vs {}",
        need - free_before
    );
}

#[test]
fn fair_shares_split_the_default_tier_in_proportion_to_the_footprints() {
    // Fig. 13's tenants: 40, 40 and 20 GB on 40 GB of local memory (scaled by 0.1).
    let cfg = SimConfig::from_toml(MERCURY_FIG13_BASE, "fig13.toml").unwrap();
    let together = tiermem_sim::mercury::Together::new(&cfg).unwrap();
    let shares = together.fair_shares();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64 / 0.1;
    assert!((gib(shares[0]) - 16.0).abs() < 0.2, "{shares:?}");
    assert!((gib(shares[1]) - 16.0).abs() < 0.2, "{shares:?}");
    assert!((gib(shares[2]) - 8.0).abs() < 0.2, "{shares:?}");
    assert!(gib(shares.iter().sum()) <= 40.0);
    // More local memory never makes a tenant slower; all local is each one's best.
    let fair = together.solve(&shares);
    let local = together.solve(&[u64::MAX; 3]);
    for t in 0..3 {
        assert!(local[t].0 < fair[t].0, "tenant {t}: {local:?} vs {fair:?}");
    }
}

#[test]
fn fig11_quick_mercury_holds_the_foreground_slo_and_reports_every_pair() {
    let dir = std::env::temp_dir().join(format!("tiermem-mercury-fig11-{}", std::process::id()));
    let s = tiermem_sim::reproduce::run("mercury-fig11", &dir, true).unwrap();
    let all = s["rows"].as_array().unwrap();
    let pairs = s["pairs"].as_u64().unwrap() as usize;
    assert_eq!(
        pairs, 7,
        "one foreground per category in the quick population"
    );
    assert_eq!(all.len(), pairs * 2 * 2, "pairs × systems × roles");
    for sys in ["tpp", "mercury"] {
        for r in all.iter().filter(|r| r["system"] == sys) {
            let pair = r["pair"].as_str().unwrap();
            assert!(dir.join(pair).join(sys).join("timeseries.csv").exists());
            // No co-run beats the same pair with all of its memory local.
            let slowdown = r["slowdown"].as_f64().unwrap();
            assert!(slowdown > -1e-3, "{r}");
        }
    }
    // Strict priority: under Mercury the foreground (the more important tenant) runs at
    // its SLO or better, within 1 % (it hovers at the target, and yields below 95 % of it).
    for r in all
        .iter()
        .filter(|r| r["system"] == "mercury" && r["role"] == "foreground")
    {
        let (measured, slo) = (
            r["measured"].as_f64().unwrap(),
            r["slo_value"].as_f64().unwrap(),
        );
        assert!(measured <= 1.01 * slo, "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
