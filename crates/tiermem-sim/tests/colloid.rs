//! Colloid (SOSP'24) on the simulated Colloid testbed: the paper's findings, checked on
//! HeMem+Colloid (the fastest base to converge). `tiermem reproduce colloid-fig5/7/8/9`
//! produce the full figures.

use tiermem_sim::reproduce::{
    antagonist_at, best_case, config_with, converge_s, COLLOID_GUPS_BASE,
};
use tiermem_sim::runner;

fn steady(level: u32, colloid: bool, extra: &[(&str, toml::Value)]) -> (f64, f64) {
    let mut ov = vec![
        ("antagonist", antagonist_at(level)),
        ("duration_s", toml::Value::Float(30.0)),
    ];
    if colloid {
        ov.push(("colloid", toml::Value::Table(Default::default())));
    }
    ov.extend(extra.iter().cloned());
    let cfg = config_with(COLLOID_GUPS_BASE, "gups-base", &ov).unwrap();
    let s = runner::run(&cfg).unwrap().steady(cfg.steady_state_fraction);
    let best = best_case(&cfg).unwrap().eq.app_ops_per_s;
    (s.throughput_ops_per_s, best)
}

#[test]
fn fig5_colloid_is_near_best_case_and_harmless_without_contention() {
    let (base0, _) = steady(0, false, &[]);
    let (col0, best0) = steady(0, true, &[]);
    // Paper: at 0× Colloid matches the base system.
    assert!(
        (col0 - base0).abs() / base0 < 0.02,
        "0×: {col0:.3e} vs {base0:.3e}"
    );
    assert!(col0 / best0 > 0.95);
    let (base3, _) = steady(3, false, &[]);
    let (col3, best3) = steady(3, true, &[]);
    // Paper: within 3 % of best-case (HeMem), 2.3× gain at 3×.
    assert!(col3 / best3 > 0.95, "3×: {:.3} of best-case", col3 / best3);
    assert!(col3 / base3 >= 1.8, "gain at 3× only {:.2}", col3 / base3);
}

#[test]
fn fig8_large_objects_gain_even_without_contention() {
    // 4096-B objects let prefetchers fill the miss buffers: the default tier saturates on its
    // own and balancing pays off at 0× (paper: 1.17–1.35×). No special case in the model.
    let obj = [("workload.object_size", toml::Value::Integer(4096))];
    let (base, _) = steady(0, false, &obj);
    let (col, _) = steady(0, true, &obj);
    assert!(
        col / base > 1.05,
        "gain at 0× with 4 KiB objects only {:.3}",
        col / base
    );
}

#[test]
fn fig9_converges_after_contention_jump_without_oscillation() {
    let mut t = toml::map::Map::new();
    t.insert("tier".into(), toml::Value::Integer(0));
    t.insert("cores".into(), toml::Value::Float(15.0));
    t.insert("start_s".into(), toml::Value::Float(20.0));
    let ov = vec![
        (
            "antagonist",
            toml::Value::Array(vec![toml::Value::Table(t)]),
        ),
        ("duration_s", toml::Value::Float(60.0)),
        ("colloid", toml::Value::Table(Default::default())),
    ];
    let cfg = config_with(COLLOID_GUPS_BASE, "gups-base", &ov).unwrap();
    let run = runner::run(&cfg).unwrap();
    let recs = &run.backend.records;
    let t: Vec<f64> = recs.iter().map(|r| r.t_s).collect();
    let thr: Vec<f64> = recs.iter().map(|r| r.ops_per_s).collect();
    let conv = converge_s(&t, &thr, 20.0);
    assert!(
        conv <= 15.0,
        "HeMem+Colloid took {conv} s to converge (paper: ~10 s)"
    );
    // No sustained oscillation: little migration over the last 20 %.
    let tail: Vec<_> = recs.iter().filter(|r| r.t_s > 48.0).collect();
    let mig: f64 = tail.iter().map(|r| r.migrated_bytes_per_s).sum();
    let app: f64 = tail.iter().map(|r| r.ops_per_s * 128.0).sum();
    assert!(mig / app <= 0.01, "tail migration share {:.4}", mig / app);
    // And the final throughput is the 3× best case's.
    let best = {
        let cfg3 = config_with(
            COLLOID_GUPS_BASE,
            "gups-base",
            &[("antagonist", tiermem_sim::reproduce::antagonist_at(3))],
        )
        .unwrap();
        best_case(&cfg3).unwrap().eq.app_ops_per_s
    };
    let fin = thr[thr.len() - 50..].iter().sum::<f64>() / 50.0;
    assert!(fin / best > 0.95, "final {:.3} of best-case", fin / best);
}

/// Fig. 10: when the hot set moves, both migrate a burst and go quiet again; the series
/// file has every run's seconds, and Colloid's steady migration is a small share of the
/// application's traffic (§5.3: < 0.7 %).
#[test]
fn fig10_migration_bursts_after_the_hot_set_moves_and_settles() {
    let dir = std::env::temp_dir().join(format!("tiermem-fig10-{}", std::process::id()));
    let summary = tiermem_sim::reproduce::run("colloid-fig10", &dir, true).expect("runs");
    let csv = std::fs::read_to_string(dir.join("fig10_migration_rate.csv")).expect("series");
    let _ = std::fs::remove_dir_all(&dir);
    let rows = summary["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "two scenarios, with and without Colloid");
    // 60 s of per-second points for each of the 4 runs, and a header.
    assert_eq!(
        csv.lines().count(),
        1 + 4 * 60,
        "{}",
        &csv[..200.min(csv.len())]
    );
    for r in rows {
        let peak = r["peak_migrated_bytes_per_s"].as_f64().unwrap();
        let tail = r["tail_migration_share"].as_f64().unwrap();
        // The new hot set (24 GiB) has to move: a burst of GB/s, then near silence.
        assert!(peak > 1e9, "peak {peak:.3e} B/s: {r}");
        if r["colloid"] == true {
            assert!(tail < 0.007, "steady migration share {tail}: {r}");
        }
    }
}

#[test]
fn deterministic_for_a_seed() {
    let run = || {
        let cfg = config_with(
            COLLOID_GUPS_BASE,
            "gups-base",
            &[
                ("duration_s", toml::Value::Float(3.0)),
                ("colloid", toml::Value::Table(Default::default())),
            ],
        )
        .unwrap();
        let r = runner::run(&cfg).unwrap();
        (
            r.backend
                .records
                .iter()
                .map(|x| x.ops_per_s)
                .collect::<Vec<_>>(),
            r.counters.applied,
        )
    };
    assert_eq!(run(), run());
}
