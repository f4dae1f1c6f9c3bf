//! Granularity-aware migration (ICS'18; issue "Granularity-aware migration"): the access
//! bits a scanner reads over virtually contiguous ranges, one TLB shootdown per migration
//! whatever its size, the streaming workload's 512×, the reproduction's findings on a
//! subset of its applications, trace replay under the `ics18` policy, synchronous
//! migration, and a fixed amount of work.

use std::collections::BTreeMap;
use tiermem_core::{Backend, PageRange, Plan, TierId, TrackerSpec};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::config::SimConfig;
use tiermem_sim::ics18::{self, App, MAIN};
use tiermem_sim::reproduce::config_with;
use tiermem_sim::runner;

fn cfg(overrides: &[(&str, toml::Value)]) -> SimConfig {
    config_with(ics18::BASE, "experiments/ics18/base.toml", overrides).unwrap()
}

fn v(text: &str) -> toml::Value {
    // A TOML value written inline: `v("{kind = \"stream\"}")`.
    let doc: toml::Table = toml::from_str(&format!("x = {text}")).unwrap();
    doc["x"].clone()
}

fn counters(out: &runner::RunOutcome) -> BTreeMap<&'static str, u64> {
    out.policy_counters.iter().copied().collect()
}

/// A stationary workload: every page's bit, read over any range, is set with probability
/// `1 - exp(-λ)` where λ is the expected number of accesses to it since it was last read
/// (here: since the start, ops / pages); reading clears it; a stream sets the bit of every
/// page it swept, each page its sampled accesses passed included.
#[test]
fn access_bits_are_read_and_cleared_over_ranges() {
    let c = cfg(&[
        ("scale", toml::Value::Float(1.0 / 4.0)),
        (
            "workload",
            v(r#"{kind = "regions", working_set = "2GiB", stages = [{chunk_size = "4KiB"}]}"#),
        ),
    ]);
    let mut b = SimBackend::new(&c).unwrap();
    b.install_tracker(&TrackerSpec::AccessBitScan).unwrap();
    b.advance(2_000_000).unwrap();
    let n = b.placement().len();
    let lambda = b.ops_done() / n as f64;
    let mut bits = Vec::new();
    let snap = b.observe();
    let ab = snap.access_bits.expect("the scan tracker lends its bits");
    ab.read_and_clear(
        PageRange {
            start: 0,
            len: n as u32,
        },
        &mut bits,
    );
    assert_eq!(bits.len(), n);
    let set = bits.iter().filter(|&&b| b).count() as f64 / n as f64;
    let want = 1.0 - (-lambda).exp();
    let sd = (want * (1.0 - want) / n as f64).sqrt();
    assert!(
        (set - want).abs() < 5.0 * sd + 1e-3,
        "set {set}, want {want} (λ {lambda})"
    );
    assert!(want > 0.2 && want < 0.9, "a mixed bitmap: {want}");
    // Read again with no operation in between: all clear.
    ab.read_and_clear(PageRange { start: 0, len: 512 }, &mut bits);
    assert!(bits.iter().all(|&b| !b));
    // A filtered read leaves the other pages alone.
    b.advance(2_000_000).unwrap();
    let snap = b.observe();
    let ab = snap.access_bits.unwrap();
    ab.read_and_clear_if(
        PageRange { start: 0, len: 512 },
        &mut |p| p % 2 == 0,
        &mut bits,
    );
    assert!(bits.iter().skip(1).step_by(2).all(|&b| !b));
    let odd_later: usize = {
        let mut again = Vec::new();
        ab.read_and_clear(PageRange { start: 0, len: 512 }, &mut again);
        again.iter().skip(1).step_by(2).filter(|&&b| b).count()
    };
    assert!(odd_later > 50, "odd pages kept their bits: {odd_later}");

    // A stream (256-byte objects, 64 per sampled access: 4 pages per access) sets every page
    // it swept.
    let c = cfg(&[
        ("scale", toml::Value::Float(1.0 / 16.0)),
        (
            "workload",
            v(r#"{kind = "stream", working_set = "1GiB", object_size = 256}"#),
        ),
    ]);
    let mut b = SimBackend::new(&c).unwrap();
    b.install_tracker(&TrackerSpec::AccessBitScan).unwrap();
    b.advance(1_000_000).unwrap();
    let swept = (b.ops_done() * 256.0 / 4096.0) as usize;
    assert!(swept > 600, "{swept}");
    let snap = b.observe();
    snap.access_bits.unwrap().read_and_clear(
        PageRange {
            start: 0,
            len: (swept + 64) as u32,
        },
        &mut bits,
    );
    let first_unset = bits.iter().position(|&b| !b).unwrap();
    assert!(
        first_unset + 8 >= swept && bits[..first_unset].iter().all(|&b| b),
        "every page up to the stream's head: {first_unset} of {swept}"
    );
}

/// A streaming workload larger than the fast tier, slow enough that every scheme keeps up:
/// static 4 KiB and static 2 MiB move the same data, in 512 times as many moves, and each
/// move is one TLB shootdown.
#[test]
fn a_stream_takes_512_times_the_moves_at_4k_and_one_shootdown_each() {
    let ops = 5.0 * 64.0 * 1024.0 * 1024.0 / 256.0; // five sweeps of 64 MiB
    let mut m = BTreeMap::new();
    for scheme in ["static-4k", "static-2m"] {
        let mut c = cfg(&[
            (
                "machine.tiers[0].capacity",
                toml::Value::String("32MiB".into()),
            ),
            // Slow enough for the 4 KiB threads to keep up with two 13.2 µs shootdowns a
            // move (at 20 µs an operation they fell 10 % behind).
            ("machine.compute_ns_per_op", toml::Value::Float(40_000.0)),
            ("machine.ops_in_flight", toml::Value::Float(4.0)),
            (
                "workload",
                v(r#"{kind = "stream", working_set = "64MiB", object_size = 256}"#),
            ),
            ("policy.scheme", toml::Value::String(scheme.into())),
        ]);
        c.stop_after_ops = Some(ops);
        c.duration_s = 120.0;
        let out = runner::run(&c).unwrap();
        assert!(out.backend.finished(), "{scheme}: the work completed");
        let k = counters(&out);
        let migrations = k["migrations_4k"] + k["migrations_64k"] + k["migrations_2m"];
        let ops_applied = out.counters.applied.ops_applied;
        // The policy counts a move once a snapshot shows it landed; a run that ends when
        // its work is done takes no snapshot after its last quantum's moves (at most a
        // quantum of the threads' time: five 4 KiB moves).
        assert!(
            migrations <= ops_applied && ops_applied <= migrations + 5,
            "{scheme}: one shootdown per applied move, each counted at its granularity: \
             {migrations} counted, {ops_applied} applied"
        );
        assert_eq!(k["promotions"] + k["demotions"], migrations, "{scheme}");
        let moved = out.counters.applied.pages_applied as f64;
        m.insert(scheme, (migrations as f64, moved));
    }
    let (m4, p4) = m["static-4k"];
    let (m2, p2) = m["static-2m"];
    assert!(m2 >= 20.0, "2 MiB moves: {m2}");
    let ratio = m4 / m2;
    println!("4 KiB moves {m4} ({p4} pages), 2 MiB moves {m2} ({p2} pages): ratio {ratio:.1}");
    assert!(
        (ratio / 512.0 - 1.0).abs() <= 0.10,
        "4 KiB moves / 2 MiB moves = {ratio} (4 KiB: {m4} moves of {p4} pages; 2 MiB: {m2} of {p2})"
    );
}

fn rt(rows: &BTreeMap<(String, String), ics18::Measured>, w: &str, s: &str, t_ref: f64) -> f64 {
    rows[&(w.to_string(), s.to_string())].time_s / t_ref
}

/// A subset of the quick reproduction (one application per granularity class, the
/// phase-alternating one, the main setting): the best static granularity is the one the
/// paper found, the dynamic scheme is within 5 % of it and picks 64 KiB on the clustered
/// graph500, the baseline is close to static 4 KiB, and the dynamic scheme gains at least
/// 25 % over the baseline where the baseline's 4 KiB operations cost most.
#[test]
fn the_reproduction_finds_each_applications_granularity() {
    let apps: Vec<App> = ics18::apps()
        .unwrap()
        .into_iter()
        .filter(|a| ["gups", "g500", "lul", "can", "cg"].contains(&a.name.as_str()))
        .collect();
    assert_eq!(apps.len(), 5);
    let t_ref = ics18::reference_seconds(true);
    let mut jobs = Vec::new();
    for a in &apps {
        for s in ics18::SCHEMES {
            jobs.push((a.clone(), s));
        }
    }
    let work: BTreeMap<String, f64> = apps
        .iter()
        .map(|a| (a.name.clone(), ics18::reference(a, true).unwrap()))
        .collect();
    let results = tiermem_sim::reproduce::parallel_map(jobs, |(a, s)| {
        let m = ics18::run_scheme(&a, MAIN, s, work[&a.name], true).unwrap();
        ((a.name.clone(), s.to_string()), m)
    });
    let rows: BTreeMap<(String, String), ics18::Measured> = results.into_iter().collect();
    assert!(rows.values().all(|m| m.completed), "every run did the work");
    let best = |w: &str| -> (&'static str, f64, f64) {
        let mut v: Vec<(&'static str, f64)> = ics18::STATICS
            .iter()
            .map(|s| (*s, rt(&rows, w, s, t_ref)))
            .collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        (v[0].0, v[0].1, v[2].1)
    };
    for (w, want) in [
        ("gups", "static-4k"),
        ("g500", "static-64k"),
        ("can", "static-2m"),
        ("cg", "static-4k"),
    ] {
        let (b, bt, _) = best(w);
        for st in ics18::STATICS {
            let m = &rows[&(w.to_string(), st.to_string())];
            println!(
                "{w} {st}: runtime {:.3}, fast hit {:.3}, moves {}",
                rt(&rows, w, st, t_ref),
                m.fast_hit_ratio,
                m.shootdowns
            );
        }
        assert_eq!(b, want, "{w}: best static");
        let d = rt(&rows, w, "dynamic", t_ref);
        // canneal: since a move costs two shootdowns (footnote 3; 80d1de4) the dynamic
        // scheme, which moves more than static-2m, runs 8 % behind it here (1.133 vs 1.049)
        // where it was within 5 %. A measured gap of the model, not fitted away; the bound
        // below still fails a dynamic scheme that loses its way (stuck at 4 KiB it would be 2.04).
        let slack = if w == "can" { 1.10 } else { 1.05 };
        assert!(d <= bt * slack, "{w}: dynamic {d} vs best static {bt}");
    }
    // lulesh, from its program (kernels over its arrays, per-step temporaries): the
    // granularity now changes its hit ratio, which a single cyclic sweep's could not. The
    // model does not give the paper's 2 MiB best (§3: "the highest FM-hit ratio with the
    // largest granularity"): here 4 KiB 0.72, 64 KiB 0.70, 2 MiB 0.67, and 64 KiB is the
    // cheapest; asserted is only that the hit ratios differ (a measured disagreement, not
    // a constant to fit).
    let hits: Vec<f64> = ics18::STATICS
        .iter()
        .map(|st| rows[&("lul".to_string(), st.to_string())].fast_hit_ratio)
        .collect();
    let spread = hits.iter().cloned().fold(f64::MIN, f64::max)
        - hits.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        spread >= 0.02,
        "lulesh's hit ratios by granularity: {hits:?}"
    );
    // graph500: the dynamic scheme migrates at 64 KiB (paper: > 95 %).
    let g = &rows[&("g500".to_string(), "dynamic".to_string())];
    let total: u64 = g.migrations.iter().sum();
    assert!(
        g.migrations[1] as f64 >= 0.9 * total as f64,
        "g500 dynamic: {:?}",
        g.migrations
    );
    // cg: mostly 4 KiB, some 64 KiB (paper: ~85 % / 15 %).
    let c = &rows[&("cg".to_string(), "dynamic".to_string())];
    let total: u64 = c.migrations.iter().sum();
    assert!(
        c.migrations[0] as f64 >= 0.6 * total as f64 && c.migrations[1] > 0,
        "cg: {:?}",
        c.migrations
    );
    // The baseline is close to static 4 KiB (paper: "close to or slightly less").
    let (b4, bb) = (
        rt(&rows, "gups", "static-4k", t_ref),
        rt(&rows, "gups", "baseline", t_ref),
    );
    assert!(
        (bb / b4 - 1.0).abs() < 0.10,
        "gups baseline {bb} vs static-4k {b4}"
    );
    // The dynamic scheme's largest speedup over the baseline (paper: up to 36 %): the
    // clustered and dense workloads save most of the baseline's 4 KiB operations.
    let speedup = ["g500", "can"]
        .iter()
        .map(|w| rt(&rows, w, "baseline", t_ref) / rt(&rows, w, "dynamic", t_ref) - 1.0)
        .fold(0.0, f64::max);
    assert!(speedup >= 0.25, "largest dynamic speedup {speedup}");
    // lulesh sweeps its 696 MiB faster than any scheme can move it, so migration buys it
    // no hit ratio and its granularities differ only in overhead (paper: 23 %; measured
    // here 2–3 %: docs/simulator.md, "Granularity"); 2 MiB is still the cheapest (above).
}

/// Trace replay under the policy ("which granularity for my program?"): a program that
/// sweeps an array larger than the fast tier, replayed from a tiermem binary trace, is
/// cheapest at 2 MiB, and the dynamic scheme finds that. The program is small (48 MiB), so
/// the scanner is slowed to revisit its pages as rarely as the paper's scanner revisits a
/// gigabyte-sized footprint (4 096 pages per 4 ms instead of per 100 µs): the density of a
/// region depends on how far the program got between two reads of it.
#[test]
fn a_traced_program_finds_its_granularity() {
    use tiermem_sim::workload::trace::{BinaryWriter, RecordKind};
    let dir = std::env::temp_dir().join(format!("tiermem-gran-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sweep.tmt");
    let mut w = BinaryWriter::create(&path, 4096).unwrap();
    // 48 MiB, every 256-byte object read in order, 2 passes.
    for _ in 0..2 {
        for a in (0..48u64 << 20).step_by(256) {
            w.push_address(0x7f00_0000_0000 + a, RecordKind::Load)
                .unwrap();
        }
    }
    w.finish().unwrap();
    let mut res = BTreeMap::new();
    for scheme in ["static-4k", "static-2m", "dynamic"] {
        let mut c = cfg(&[
            (
                "machine.tiers[0].capacity",
                toml::Value::String("16MiB".into()),
            ),
            ("machine.ops_in_flight", toml::Value::Float(8.0)),
            ("machine.compute_ns_per_op", toml::Value::Float(10.0)),
            ("accesses_per_sample", toml::Value::Float(16.0)),
            (
                "workload",
                v(&format!(
                    r#"{{kind = "trace", path = "{}", loop = true}}"#,
                    path.display()
                )),
            ),
            ("policy.scheme", toml::Value::String(scheme.into())),
            ("policy.scan_period_us", toml::Value::Float(4000.0)),
        ]);
        c.stop_after_ops = Some(4.0 * 48.0 * 4096.0 * 16.0);
        c.duration_s = 30.0;
        let out = runner::run(&c).unwrap();
        let t = out.backend.completed_at_ns().expect("the work completed") / 1e9;
        res.insert(scheme, (t, counters(&out)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (t4, _) = &res["static-4k"];
    let (t2, _) = &res["static-2m"];
    let (td, kd) = &res["dynamic"];
    assert!(t2 < t4, "a sweep is cheaper at 2 MiB: {t2} vs {t4}");
    assert!(*td <= t2 * 1.05, "dynamic {td} vs static 2 MiB {t2}");
    assert!(kd["migrations_2m"] > kd["migrations_4k"], "{kd:?}");
}

/// `migration.synchronous`: the application waits for a migration operation in full (one
/// 2 MiB move: software + shootdown + the copy at the slow tier's latency), carried over
/// quanta; otherwise it only takes the shootdown's interrupt.
#[test]
fn synchronous_migration_stalls_the_application_for_the_whole_move() {
    let run = |sync: bool| -> (f64, f64) {
        let c = cfg(&[
            ("scale", toml::Value::Float(1.0 / 16.0)),
            ("machine.migration.synchronous", toml::Value::Boolean(sync)),
            (
                "machine.migration.threads_on_app_cores",
                toml::Value::Boolean(false),
            ),
            // Threads enough for both moves in one quantum, synchronous or not.
            ("machine.migration.threads", toml::Value::Float(100.0)),
            (
                "workload",
                v(r#"{kind = "regions", working_set = "2GiB", stages = [{chunk_size = "4KiB"}]}"#),
            ),
        ]);
        let mut b = SimBackend::new(&c).unwrap();
        let q = 100_000;
        b.advance(q).unwrap();
        let before = b.ops_done();
        let mut plan = Plan::default();
        // A 2 MiB region of the slow tier (past the first-touch fast part).
        let start = (b.placement().len() as u32 / 512 - 1) * 512;
        assert!(b.placement()[start as usize..start as usize + 512]
            .iter()
            .all(|&t| t == TierId(1)));
        // Room first (the fast tier is full), then the promotion.
        plan.push_range(PageRange { start: 0, len: 512 }, TierId(1));
        plan.push_range(PageRange { start, len: 512 }, TierId(0));
        let a = b.apply(&plan, None);
        assert_eq!(a.ops_applied, 2);
        for _ in 0..20 {
            b.advance(q).unwrap();
        }
        (before, b.ops_done() - before)
    };
    let (b0, async_ops) = run(false);
    let (_, sync_ops) = run(true);
    let rate = b0 / 100e-6;
    let m = ics18_migration();
    // Two moves of 2 MiB: each software + shootdown + 2 MiB at copy_gbps × 3 (slow tier).
    let op_ns = m.0 + m.1 + (2u64 << 20) as f64 / (m.2 * 1e9) * 1e9 * 3.0;
    // Asynchronous: the cores took each move's shootdown interrupt; synchronous: each move.
    let lost = (async_ops - sync_ops) / rate * 1e9;
    let want = 2.0 * (op_ns - m.3);
    assert!(
        (lost / want - 1.0).abs() < 0.1,
        "the app lost {lost} ns more work waiting, two moves take {want} ns more than their interrupts"
    );
}

/// `migration.threads_on_app_cores`: each migration thread runs an equal share of the
/// application's cores beside its runnable threads (4 cores, 8 threads and 2 migration
/// threads: 0.4 of a core each), which bounds what moves in a quantum; the time the
/// threads spend on a move is taken from the application's cores.
#[test]
fn migration_threads_on_the_application_cores_share_them() {
    let m = ics18_migration();
    // A move of `pages` pages to or from the slow tier (its copy at 3× the fast latency).
    let op_ns = |pages: u64| m.0 + m.1 + (pages * 4096) as f64 / (m.2 * 1e9) * 1e9 * 3.0;
    // (moves applied, work done in the 4 ms after them) for `pairs` moves of `pages` pages
    // each way (room in the fast tier, then a promotion) after a first quantum of `q0`.
    let run = |on_app_cores: bool, app_threads: f64, q0: u64, pages: u32, pairs: u32| {
        let c = cfg(&[
            ("scale", toml::Value::Float(1.0 / 16.0)),
            (
                "machine.migration.threads_on_app_cores",
                toml::Value::Boolean(on_app_cores),
            ),
            ("machine.migration.threads", toml::Value::Float(2.0)),
            (
                "machine.migration.app_threads",
                toml::Value::Float(app_threads),
            ),
            // Compute-bound: the cores' time is the application's rate, unmoved by load.
            ("machine.compute_ns_per_op", toml::Value::Float(20_000.0)),
            (
                "workload",
                v(r#"{kind = "regions", working_set = "2GiB", stages = [{chunk_size = "4KiB"}]}"#),
            ),
        ]);
        assert_eq!(c.machine.app_cores, 4.0, "the testbed's four cores");
        let mut b = SimBackend::new(&c).unwrap();
        b.advance(q0).unwrap();
        let before = b.ops_done();
        let mut plan = Plan::default();
        let last = b.placement().len() as u32 / 512 - 1;
        for i in 0..pairs {
            plan.push_range(
                PageRange {
                    start: i * pages,
                    len: pages,
                },
                TierId(1),
            );
            let start = last * 512 - (i + 1) * pages;
            plan.push_range(PageRange { start, len: pages }, TierId(0));
        }
        let applied = b.apply(&plan, None).ops_applied;
        for _ in 0..40 {
            b.advance(100_000).unwrap();
        }
        (applied, b.ops_done() - before)
    };
    // The threads' time in a quantum of 1.2 ms: 2 × 0.4 cores hold one 2 MiB move
    // (0.96 ms ≥ op), not two; with one application thread per core, 2 × 1.2 ms hold both.
    let q0 = 1_200_000;
    let budget = 0.8 * q0 as f64;
    assert!(budget >= op_ns(512) && budget < 2.0 * op_ns(512));
    assert_eq!(run(true, 8.0, q0, 512, 1).0, 1, "0.4 of a core per thread");
    assert_eq!(
        run(true, 4.0, q0, 512, 1).0,
        1,
        "4 / (4 + 2) of a core per thread"
    );
    assert_eq!(run(true, 2.0, q0, 512, 1).0, 2, "a whole core per thread");
    assert_eq!(run(false, 8.0, q0, 512, 1).0, 2, "cores of their own");
    // The work 10 moves of 4 KiB cost the application: their shootdown interrupts (two a
    // move), and with the threads on its cores each move's thread time taken from one of
    // its 4 cores (20 interrupts stop 40 % of the next quantum, under the 90 % a quantum's
    // stall is capped at).
    let (_, idle) = run(true, 8.0, q0, 1, 0);
    assert_eq!(idle, run(false, 8.0, q0, 1, 0).1, "no move, no cost");
    let rate = idle / 4e-3;
    let lost = |on: bool| {
        let (n, w) = run(on, 8.0, q0, 1, 5);
        assert_eq!(n, 10);
        (idle - w) / rate * 1e9
    };
    let (own, shared) = (lost(false), lost(true));
    assert!(
        (own / (10.0 * m.3) - 1.0).abs() < 0.05,
        "own cores: {own} ns lost, 10 moves' interrupts are {} ns",
        10.0 * m.3
    );
    let want = 10.0 * op_ns(1) / 4.0;
    assert!(
        ((shared - own) / want - 1.0).abs() < 0.05,
        "on the app's cores: {} ns more lost, 10 moves on one of 4 cores are {want} ns",
        shared - own
    );
}

/// (per_page_ns, the thread's shootdown waits of one move, copy_gbps, an app core's
/// shootdown interrupts of one move) of the shipped testbed: two shootdowns a move.
fn ics18_migration() -> (f64, f64, f64, f64) {
    let c = cfg(&[]);
    let m = c.machine.migration;
    assert_eq!(m.shootdowns_per_operation, 2.0, "footnote 3");
    (
        m.per_page_ns,
        2.0 * m.shootdown_wait_ns,
        m.copy_gbps,
        2.0 * m.shootdown_ns,
    )
}

/// Footnote 3 and §5 on the testbed: every move is two shootdowns (the thread waits for
/// both, the app cores take both interrupts), and a 2 MiB move's shootdowns flush the
/// whole TLB (cr3), so each app core also pays a refill per shootdown (Linux's 33-page
/// break-even, 3.3 µs); a 64 KiB move's 16 invlpg leave the rest of the TLB alone.
#[test]
fn a_move_is_two_shootdowns_and_a_2m_move_flushes_the_tlb() {
    let c = cfg(&[]);
    let m = &c.machine.migration;
    assert_eq!(m.full_flush_refill_ns, 3300.0);
    assert_eq!(
        m.full_flush_from.as_ref().unwrap().bytes("").unwrap(),
        2 << 20
    );
    // Work the app loses in the quanta after one move of `pages` pages (own cores, so only
    // interrupts and refills reach the app), against no move.
    let lost_ns = |pages: u32, refill: Option<f64>| -> f64 {
        let mut over = vec![
            ("scale", toml::Value::Float(1.0 / 16.0)),
            (
                "machine.migration.threads_on_app_cores",
                toml::Value::Boolean(false),
            ),
            ("machine.migration.threads", toml::Value::Float(100.0)),
            ("machine.compute_ns_per_op", toml::Value::Float(20_000.0)),
            (
                "workload",
                v(r#"{kind = "regions", working_set = "2GiB", stages = [{chunk_size = "4KiB"}]}"#),
            ),
        ];
        if let Some(r) = refill {
            over.push((
                "machine.migration.full_flush_refill_ns",
                toml::Value::Float(r),
            ));
        }
        let run = |moves: bool| {
            let mut b = SimBackend::new(&cfg(&over)).unwrap();
            b.advance(100_000).unwrap();
            let before = b.ops_done();
            if moves {
                let mut plan = Plan::default();
                plan.push_range(
                    PageRange {
                        start: 0,
                        len: pages,
                    },
                    TierId(1),
                );
                assert_eq!(b.apply(&plan, None).ops_applied, 1);
            }
            for _ in 0..10 {
                b.advance(100_000).unwrap();
            }
            (before, b.ops_done() - before)
        };
        let (b0, idle) = run(false);
        let (_, moved) = run(true);
        (idle - moved) / (b0 / 100e-6) * 1e9
    };
    let interrupts = 2.0 * m.shootdown_ns;
    for pages in [1, 16] {
        let lost = lost_ns(pages, None);
        assert!(
            (lost / interrupts - 1.0).abs() < 0.05,
            "{pages} pages: {lost} ns lost, two interrupts are {interrupts} ns"
        );
    }
    // A 2 MiB move also leaves 512 pages on the slow tier and loads it with the copy, so
    // the refill is read as the difference it makes.
    let (with, without) = (lost_ns(512, None), lost_ns(512, Some(0.0)));
    assert!(
        (without / interrupts - 1.0).abs() < 0.15,
        "2 MiB without the refill: {without} ns, two interrupts are {interrupts} ns"
    );
    let refills = with - without;
    assert!(
        (refills / (2.0 * 3300.0) - 1.0).abs() < 0.05,
        "2 MiB: the refills cost {refills} ns, two of 3.3 µs are 6600 ns"
    );
    // The reproduction counts two shootdowns per applied move.
    let app = ics18::apps()
        .unwrap()
        .into_iter()
        .find(|a| a.name == "gups")
        .unwrap();
    let work = ics18::reference(&app, true).unwrap();
    let r = ics18::run_scheme(&app, MAIN, "static-4k", work, true).unwrap();
    assert!(r.migration_ops > 100, "{r:?}");
    assert_eq!(r.shootdowns, 2 * r.migration_ops);
}

/// `stop_after_ops`: the run ends once the work is done and reports when, interpolated
/// within the epoch; no migration on a tier that holds everything: time = work / rate.
#[test]
fn a_fixed_amount_of_work_is_timed() {
    let mut c = cfg(&[
        (
            "machine.tiers[0].capacity",
            toml::Value::String("16GiB".into()),
        ),
        ("scale", toml::Value::Float(1.0 / 16.0)),
        (
            "workload",
            v(r#"{kind = "regions", working_set = "2GiB", stages = [{chunk_size = "4KiB"}]}"#),
        ),
        ("policy", v(r#"{policy = "static"}"#)),
    ]);
    c.duration_s = 0.01;
    let out = runner::run(&c).unwrap();
    let rate = out.backend.ops_done() / (out.backend.now_ns() as f64 / 1e9);
    c.stop_after_ops = Some(rate * 0.00737);
    c.duration_s = 1.0;
    let out = runner::run(&c).unwrap();
    let t = out.backend.completed_at_ns().unwrap() / 1e9;
    assert!((t / 0.00737 - 1.0).abs() < 1e-6, "{t}");
    let s = out.output(&c).summary;
    assert!((s["completion_time_s"].as_f64().unwrap() - t).abs() < 1e-12);
    assert!(s["ops_completed"].as_f64().unwrap() >= rate * 0.00737);
}

/// ICS'18 §5's projection (Fig. 7), on a run measured at 1:1 latency: the backend accounts
/// every core-second of the work (compute + memory per tier + stalled = the run's time),
/// the slow tier's share of the memory time is the share of reads it served (both tiers
/// at DRAM latency), and the projected runtime takes two shootdowns per migration
/// (footnote 3) at the testbed's 13.2 µs and the copy at its speed, scaling only the slow
/// memory time and the copy by the ratio.
#[test]
fn the_projection_splits_a_run_measured_at_dram_speed() {
    let app = ics18::apps()
        .unwrap()
        .into_iter()
        .find(|a| a.name == "gups")
        .unwrap();
    let work = ics18::reference(&app, true).unwrap();
    let one = ics18::Setting {
        fast_mib: MAIN.fast_mib,
        latency_ratio: 1.0,
    };
    let m = ics18::run_scheme(&app, one, "static-4k", work, true).unwrap();
    assert!(m.completed && m.shootdowns > 100, "{m:?}");
    let accounted = m.compute_s + m.memory_s.iter().sum::<f64>() + m.stalled_s;
    assert!(
        (accounted / m.time_s - 1.0).abs() < 1e-6,
        "accounted {accounted} s of {} s",
        m.time_s
    );
    assert!(
        m.stalled_s > 0.0,
        "migration threads on the cores stall them"
    );
    let slow_share = m.memory_s[1] / (m.memory_s[0] + m.memory_s[1]);
    assert!(
        (slow_share - (1.0 - m.fast_hit_ratio)).abs() < 0.02,
        "slow share of memory time {slow_share} vs reads {}",
        1.0 - m.fast_hit_ratio
    );
    let (_, move_wait_ns, copy_gbps, _) = ics18_migration();
    let shootdown_wait_ns = move_wait_ns / 2.0;
    let p = ics18::Projection::of(&m, &ics18::testbed_migration().unwrap());
    assert_eq!(p.shootdowns, m.shootdowns as f64);
    assert_eq!(p.shootdowns, 2.0 * m.migration_ops as f64);
    assert_eq!(p.refill_s, 0.0, "4 KiB moves flush no whole TLB");
    assert!((p.shootdown_s - p.shootdowns * shootdown_wait_ns / 1e9).abs() < 1e-12);
    assert!((p.copy_s - m.bytes_moved as f64 / (copy_gbps * 1e9)).abs() < 1e-12);
    assert_eq!(
        m.bytes_moved,
        4096 * m.migration_ops,
        "static 4 KiB moves one page each"
    );
    let fixed = p.compute_s + p.fast_s + p.shootdown_s;
    for r in [1.0, 2.0, 3.0, 8.0] {
        let want = fixed + r * (p.slow_s + p.copy_s);
        assert!((p.runtime_s(r) - want).abs() < 1e-12 * want, "ratio {r}");
    }
    // The no-migration reference projects to its own time at any ratio: it never waits on
    // the slow tier.
    let mut c = ics18::config(&app, MAIN, None).unwrap();
    c.stop_after_ops = Some(work);
    let r = ics18::measure(&c).unwrap();
    assert!(
        r.shootdowns == 0 && r.memory_s[1] == 0.0 && r.stalled_s == 0.0,
        "{r:?}"
    );
    let pr = ics18::Projection::of(&r, &ics18::testbed_migration().unwrap());
    assert!(
        (pr.runtime_s(8.0) / r.time_s - 1.0).abs() < 1e-6,
        "{pr:?} vs {}",
        r.time_s
    );
}

/// STREAM and LULESH are their programs' arrays at Table 2's footprints: STREAM's three
/// arrays make 1080 MiB; LULESH -s 93's peak (persistent arrays and the temporaries live
/// in CalcVolumeForceForElems) is within 1 % of 696 MiB, and its temporaries are allocated
/// and freed every step.
#[test]
fn stream_and_lulesh_have_table_2_footprints() {
    use tiermem_sim::workload::{build, MapEvent, WorkloadConfig};
    let apps = ics18::apps().unwrap();
    let app = |n: &str| apps.iter().find(|a| a.name == n).unwrap().clone();
    for (name, mib, tol) in [("str", 1080.0, 1e-6), ("lul", 696.0, 0.01)] {
        let a = app(name);
        let c = cfg(&[("workload", a.workload.clone())]);
        let Some(WorkloadConfig::Kernels(k)) = &c.workload else {
            panic!("{name} is not a kernels workload")
        };
        let peak = k.peak_bytes(4096, 1.0).unwrap() as f64 / (1u64 << 20) as f64;
        assert!((peak / mib - 1.0).abs() <= tol, "{name}: peak {peak} MiB");
    }
    // A LULESH step allocates and frees (temporaries start released).
    let c = cfg(&[("workload", app("lul").workload)]);
    let mut w = build(c.workload.as_ref().unwrap(), 4096, 1.0, 1).unwrap();
    w.set_accesses_per_sample(64.0);
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(1);
    let (mut allocs, mut frees) = (0, 0);
    for _ in 0..3_000_000 {
        w.next(&mut rng);
        while let Some(e) = w.take_map_event() {
            match e {
                MapEvent::Alloc(_) => allocs += 1,
                MapEvent::Free(_) => frees += 1,
            }
        }
    }
    assert!(
        allocs >= 9 && frees >= 8 + 9,
        "{allocs} allocations, {frees} frees"
    );
}

/// The machine's side of a release and an allocation: freed pages give their fast frames
/// back (the fast tier's use drops by their count), and an allocation takes free fast
/// frames at first touch, without migration traffic or operations.
#[test]
fn freed_pages_return_their_frames_and_allocations_take_them_at_first_touch() {
    // A 4 MiB persistent array swept, then a 2 MiB temporary written between an
    // allocation and a free; the fast tier (5 MiB) holds the array and one MiB more.
    let wl = v(concat!(
        r#"{kind = "kernels", units = {n = 1}, arrays = ["#,
        r#"{name = "a", unit = "n", bytes = 4194304}, "#,
        r#"{name = "t", unit = "n", bytes = 2097152, temporary = true}], "#,
        r#"kernels = [{name = "sweep", reads = ["a"]}, "#,
        r#"{name = "temp", writes = ["t"], alloc = ["t"], free = ["t"]}]}"#
    ));
    let c = cfg(&[
        (
            "machine.tiers[0].capacity",
            toml::Value::String("5MiB".into()),
        ),
        ("workload", wl),
        ("policy", v(r#"{policy = "static"}"#)),
    ]);
    let mut b = SimBackend::new(&c).unwrap();
    // First touch placed the 1 536 pages in order: 1 280 fast.
    assert_eq!(b.used_pages()[0], 1280);
    b.advance(50_000).unwrap();
    let fast_array = b.placement()[..1024]
        .iter()
        .filter(|&&t| t == TierId::DEFAULT)
        .count();
    assert_eq!(fast_array, 1024);
    // The temporary's 256 fast pages went back at the start; each allocation takes them
    // (and no more: the fast tier then is full), each free returns them.
    let temp_fast = b.placement()[1024..]
        .iter()
        .filter(|&&t| t == TierId::DEFAULT)
        .count();
    let used = b.used_pages()[0];
    assert!(used == 1024 || used == 1280, "fast pages in use: {used}");
    assert_eq!(used as usize - 1024, temp_fast);
    let out = runner::run(&c).unwrap();
    assert_eq!(
        out.counters.applied.ops_applied, 0,
        "a map event is no migration"
    );
}
