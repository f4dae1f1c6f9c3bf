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

const LLAMA: &str = "[[tenants]]\nname = \"llama\"\ncores = 8\n[tenants.workload]\nkind = \"stream\"\nworking_set = \"40GiB\"\nobject_size = 4096\n";

fn local(f: f64) -> Vec<f64> {
    vec![f, 1.0 - f]
}

/// The Mercury machine with the paper's LS and BI microbenchmarks (§2.2.1, as the
/// calibration builds them) as its tenants.
fn micro_backend() -> SimBackend {
    let mut cfg = SimConfig::from_toml(MERCURY_FIG13_BASE, "fig13.toml").unwrap();
    let (ls, bi) = tiermem_sim::mercury::microbenchmarks(&cfg);
    cfg.tenants = vec![ls, bi];
    SimBackend::new(&cfg).unwrap()
}

/// The five published facts of the Genoa testbed the machine is built from (issue 47);
/// Figs. 11, 13, 14 and 16 set nothing.
#[test]
fn the_machine_meets_the_papers_genoa_facts() {
    let cfg = SimConfig::from_toml(MERCURY_FIG13_BASE, "fig13.toml").unwrap();
    assert_eq!(cfg.machine.app_cores, 96.0, "§2.2: 96 cores a socket");
    let b = micro_backend();
    let solve =
        |ls: f64, bi: f64, bi_share: f64| b.solve_static(&[local(ls), local(bi)], &[1.0, bi_share]);
    // Fig. 1a: LS (alone) is 2× slower all on CXL.
    let ls_local = solve(1.0, 1.0, 1e-9).0.avg_latency_ns[0];
    let ls_cxl = solve(0.0, 1.0, 1e-9).0.avg_latency_ns[0];
    println!(
        "Fig. 1a: LS {ls_local:.1} ns local, {ls_cxl:.1} ns on CXL ({:.2}x)",
        ls_cxl / ls_local
    );
    assert!(
        (ls_cxl / ls_local - 2.0).abs() < 0.1,
        "{}",
        ls_cxl / ls_local
    );
    // Fig. 1b: the max-capacity BI (95 cores) all on CXL gets 25 % of its all-local bandwidth.
    let bi_only = |x: f64| {
        let (_, bw) = b.solve_static(&[local(1.0), local(1.0 - x)], &[1e-9, 1.0]);
        bw[1]
    };
    let (bi_local, bi_cxl) = (bi_only(0.0), bi_only(1.0));
    println!(
        "Fig. 1b: BI {:.1} GB/s local, {:.1} GB/s on CXL ({:.3})",
        bi_local / 1e9,
        bi_cxl / 1e9,
        bi_cxl / bi_local
    );
    assert!(
        (bi_cxl / bi_local - 0.25).abs() < 0.02,
        "{}",
        bi_cxl / bi_local
    );
    // Fig. 2: LS local while BI moves to CXL first improves (less intra-tier interference),
    // then degrades (inter-tier), the worst when all of BI's bandwidth comes from CXL.
    let sweep: Vec<f64> = (0..=20)
        .map(|k| solve(1.0, 1.0 - k as f64 / 20.0, 1.0).0.avg_latency_ns[0])
        .collect();
    println!("Fig. 2: LS (ns) as BI moves to CXL in 5 % steps: {sweep:.0?}");
    let (best, &min) = sweep
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .unwrap();
    assert!(best > 0 && best < 20, "an interior best point: {best}");
    assert!(
        min < 0.9 * sweep[0],
        "moving BI to CXL first helps LS: {sweep:?}"
    );
    assert!(
        sweep[best..].windows(2).all(|w| w[1] >= w[0] - 1e-9),
        "then it only hurts: {sweep:?}"
    );
    let worst = sweep.iter().copied().fold(0.0, f64::max);
    assert!(sweep[20] >= 0.98 * worst, "worst all on CXL: {sweep:?}");
    // Fig. 7: llama.cpp's requests draw ~100 GB/s from local memory.
    let b = SimBackend::new(&machine_with(LLAMA, "")).unwrap();
    let llama_local = b.solve_static(&[local(1.0)], &[1.0]).1[0];
    let llama_cxl = b.solve_static(&[local(0.0)], &[1.0]).1[0];
    println!(
        "Fig. 7: llama {:.1} GB/s local; Fig. 10b: {:.1} GB/s all on CXL",
        llama_local / 1e9,
        llama_cxl / 1e9
    );
    assert!((llama_local / 1e9 - 100.0).abs() < 10.0, "{llama_local}");
    // Fig. 10b: all on CXL llama still exceeds SLOs of 30 GB/s and below.
    assert!(llama_cxl >= 30e9, "{llama_cxl}");
}

/// Fig. 10b's other half: at a 40 GB/s SLO Mercury needs local memory for llama, so all
/// on CXL it gets less than 40 GB/s. The model gives ~49: llama is bound by its cores'
/// outstanding misses, so its CXL/local bandwidth ratio is the loaded-latency ratio
/// (~2.1 at 8 cores), while Fig. 7's ~100 GB/s and this bound need ≥ 2.5; a CXL link
/// whose latency rises by a third at a third of its peak would, and no published
/// measurement of the testbed's expanders says so. Kept as the known gap (run with
/// `--ignored`).
#[test]
#[ignore = "known gap: the model's llama gets ~49 GB/s all on CXL (docs/simulator.md)"]
fn fig10b_llama_all_on_cxl_is_below_40_gbps() {
    let b = SimBackend::new(&machine_with(LLAMA, "")).unwrap();
    let llama_cxl = b.solve_static(&[local(0.0)], &[1.0]).1[0];
    assert!(llama_cxl < 40e9, "{llama_cxl}");
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
    // The shapes' constraint (§5.5): "TPP allocates almost all local memory to Redis as
    // Redis has the highest memory access frequency ... and thus most of llama.cpp's and
    // VectorDB's memory are placed on CXL memory" (40 GB local; WSS 40 / 40 / 20 GB).
    let redis_local = get(&tpp, "redis", "local_gib");
    assert!(
        redis_local >= 0.9 * 40.0,
        "TPP: Redis local {redis_local} GiB"
    );
    assert!(get(&tpp, "llama", "local_gib") < 0.5 * 40.0);
    assert!(get(&tpp, "vectordb", "local_gib") < 0.5 * 20.0);
    // Mercury meets every SLO it admitted most of the time (the model's CXL gives VectorDB
    // and llama theirs with little local memory: docs/simulator.md).
    for t in ["redis", "llama", "vectordb"] {
        let met = get(&mercury, t, "slo_met_share");
        assert!(met >= 0.8, "{t}: {met}");
    }
    // Strict priority: Redis (highest) keeps full CPU; the lowest-priority BI tenant is the
    // one throttled, and holds no more local memory than Redis.
    assert_eq!(get(&mercury, "redis", "cpu_share"), 1.0);
    assert!(get(&mercury, "llama", "cpu_share") < 1.0);
    assert!(get(&mercury, "llama", "local_gib") <= get(&mercury, "redis", "local_gib"));
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
fn fig16_quick_tpp_keeps_vectordb_local() {
    // The shapes' constraint (§5.6.2): "Under TPP, Redis cannot acquire more memory due to
    // lower access frequency compared to VectorDB": once Redis's hot set has grown to its
    // 30 GB, TPP still keeps all of VectorDB's 40 GB local. Local contention: the three
    // working sets (30 + 40 + 40 GB) exceed the 70 GB of local memory.
    let dir = std::env::temp_dir().join(format!("tiermem-mercury-fig16-{}", std::process::id()));
    let s = tiermem_sim::reproduce::run("mercury-fig16", &dir, true).unwrap();
    let after = &s["local_gib_after_growth"]["tpp"];
    let vdb = after["vectordb"].as_f64().unwrap();
    let redis = after["redis"].as_f64().unwrap();
    assert!(vdb >= 0.95 * 40.0, "{after}");
    assert!(redis <= 30.0 + 0.5, "{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_high_priority_ls_tenant_takes_local_memory_from_the_lowest_priority_first() {
    // llama (lowest) holds most of the local tier for a 100 GB/s target; VectorDB arrives at
    // 20 s as the most important tenant with a latency target that needs local memory.
    let ctl = "[controller]\ncontroller = \"mercury\"\n\
        [[controller.tenants]]\nname = \"redis\"\nslo = \"200ns\"\npriority = 2\n\
        [[controller.tenants]]\nname = \"llama\"\nslo = \"100GB/s\"\npriority = 1\n\
        [[controller.tenants]]\nname = \"vectordb\"\nslo = \"140ns\"\npriority = 9\narrive_s = 20\n";
    // Its own tenants (a skewed Redis, VectorDB on 16 cores), not Fig. 13's shapes.
    let tenants = "[[tenants]]\nname = \"redis\"\ncores = 8\n[tenants.workload]\nkind = \"gups\"\n\
        working_set = \"40GiB\"\nhot_set = \"8GiB\"\nhot_probability = 0.9\nobject_size = 64\n\
        write_fraction = 0.0\n\n[[tenants]]\nname = \"llama\"\ncores = 8\n[tenants.workload]\n\
        kind = \"stream\"\nworking_set = \"40GiB\"\nobject_size = 4096\n\n[[tenants]]\n\
        name = \"vectordb\"\ncores = 16\n[tenants.workload]\nkind = \"random\"\n\
        working_set = \"20GiB\"\nobject_size = 64\n\n";
    let at = MERCURY_FIG13_BASE.find("[[tenants]]").unwrap();
    let pol = MERCURY_FIG13_BASE.find("[policy]").unwrap();
    let text = format!(
        "{}{tenants}{}\n{ctl}",
        &MERCURY_FIG13_BASE[..at],
        &MERCURY_FIG13_BASE[pol..]
    )
    .replacen("duration_s = 60", "duration_s = 21", 1);
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
        "the late tenant needs more than is free: {need} vs {free_before}; {profiles}"
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

#[test]
fn fig11_full_no_policy_beats_the_slowdown_reference() {
    // The reference is each tenant alone with all memory local. The pair all local was
    // not a bound: under TPP the Silo pair's VectorDB ran 3.3 % faster than it, Silo's
    // ~100 GB/s being partly on CXL and so queueing less on the local tier.
    let dir =
        std::env::temp_dir().join(format!("tiermem-mercury-fig11-ref-{}", std::process::id()));
    let duration = tiermem_sim::reproduce_mercury::fig11_duration_s(false);
    let pairs = tiermem_sim::reproduce_mercury::fig11_pairs();
    assert!(pairs.contains(&"silo-tpcc"), "{pairs:?}");
    for pair in pairs {
        for sys in ["tpp", "mercury"] {
            let rows =
                tiermem_sim::reproduce_mercury::fig11_pair(pair, sys, duration, &dir).unwrap();
            assert_eq!(rows.len(), 2, "{pair} {sys}");
            for r in &rows {
                let slowdown = r["slowdown"].as_f64().unwrap();
                assert!(slowdown > -1e-3, "{pair} {sys}: {r}");
                let tput = r["throughput"].as_f64().unwrap();
                assert!(tput > 0.0, "{pair} {sys}: {r}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
