//! Every policy on real memory (issue 11): `tiermem run --policy NAME` runs the registry's
//! policies under the DRAM budget guard with the program's output unchanged, `tiermem stat`
//! shows the policy, its tracker and per-tier latency, a policy added the documented way
//! (the example `toy_demote`) runs here as in the simulator, and what the runtime cannot
//! serve is refused before the program starts. Heavy: skipped with TIERMEM_SKIP_E2E=1.

mod common;
use common::*;
use std::process::Command;

/// Small blocks built in order, a hot tenth re-read often, the rest read once at the end.
const PY_HOT_COLD: &str = r#"
import hashlib
blocks = [bytes([i % 251]) * (200 + i % 3000) for i in range(60000)]
hot = blocks[:6000]
h = hashlib.sha256()
for _ in range(60):
    for b in hot: h.update(b[:32])
for b in blocks: h.update(b)
print(h.hexdigest(), len(blocks))
"#;

#[test]
fn base_systems_with_colloid_keep_output_identical_under_a_quarter_budget() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let argv = ["python3", "-c", PY_HOT_COLD];
    let want = ok(&run(plain(&argv), None, 120, "plain"), "plain");
    for policy in ["hemem+colloid", "tpp+colloid", "memtis+colloid"] {
        let (cmd, stats) = tiered_with(&["--policy", policy], "25%", &argv);
        let out = run(cmd, None, 300, policy);
        assert_eq!(ok(&out, policy), want, "{policy}: output differs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("manager not started"), "{policy}: {err}");
        let s = final_stats(&stats);
        assert_eq!(s["policy"], policy, "{s}");
        let tracker = s["tracker"].as_str().unwrap();
        if policy.starts_with("tpp") {
            assert_eq!(tracker, "hint-fault sampling", "{s}");
        } else {
            assert!(tracker.starts_with("PEBS sampling (emulated: "), "{s}");
        }
        assert!(migrations_in(&s) > 100, "{policy}: nothing was tiered: {s}");
        assert!(num(&s, "dram_latency_ns") > 0.0, "{s}");
    }
}

/// `tiermem stat` while the program runs: the policy, its tracker, and a latency column
/// with the compressed tier's loaded latency once it has faulted.
#[test]
fn stat_shows_the_policy_its_tracker_and_tier_latency() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let prog = r#"
import random, time
b = bytearray(32 << 20)
for i in range(0, len(b), 4096): b[i] = i % 251
r = random.Random(1); t = time.time(); s = 0
while time.time() - t < 12:
    for _ in range(1000): s += b[r.randrange(0, len(b) >> 12) << 12]
print("done", s > 0)
"#;
    // The interpreter itself, not a launcher script that execs it (a pyenv shim): `stat`
    // then reads the process from its start.
    let venv = workspace_root().join(".venv/bin/python");
    let py = if venv.exists() {
        venv.to_str().unwrap().to_string()
    } else {
        "python3".to_string()
    };
    let (mut cmd, stats) = tiered_with(&["--policy", "hemem+colloid"], "25%", &[&py, "-c", prog]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id().to_string();
    let mut text = String::new();
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let o = Command::new(tiermem())
            .args(["stat", &pid])
            .output()
            .unwrap();
        text = String::from_utf8_lossy(&o.stdout).into_owned();
        let tier_latency = text
            .lines()
            .find(|l| l.starts_with("1:"))
            .is_some_and(|l| latency_of(l) != "-");
        if tier_latency {
            break;
        }
    }
    let out = wait_timeout(child, 120, "stat target");
    assert_eq!(ok(&out, "stat target").trim(), "done True");
    let _ = final_stats(&stats);
    assert!(text.contains("policy hemem+colloid"), "{text}");
    assert!(text.contains("tracker PEBS sampling (emulated: "), "{text}");
    let head = text.lines().find(|l| l.starts_with("tier")).unwrap_or("");
    assert!(head.contains("latency"), "{text}");
    let tier1 = text.lines().find(|l| l.starts_with("1:")).unwrap_or("");
    let lat = latency_of(tier1);
    assert!(
        lat.ends_with("us") || lat.ends_with("ms"),
        "no tier latency in: {text}"
    );
}

/// A tier row's latency column: the one before the last (sizes print as "1.5 MiB").
fn latency_of(row: &str) -> &str {
    row.split_whitespace().rev().nth(1).unwrap_or("-")
}

/// The policy of docs/adding-a-policy.md (one file, one registry line) on real memory: with
/// no budget pressure, every page it demotes is its own doing.
#[test]
fn the_documented_toy_policy_runs_on_the_runtime() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let prog = r#"
import hashlib, time
b = bytearray(16 << 20)
for i in range(0, len(b), 4096): b[i] = i % 251
time.sleep(2)
print(hashlib.sha256(b).hexdigest())
"#;
    let argv = ["python3", "-c", prog];
    let want = ok(&run(plain(&argv), None, 60, "plain"), "plain");
    let (cmd, stats) = tiered_with(&["--policy", "toy_demote"], "unlimited", &argv);
    let out = run(cmd, None, 120, "toy_demote");
    assert_eq!(ok(&out, "toy_demote"), want);
    let s = final_stats(&stats);
    assert_eq!(s["policy"], "toy_demote", "{s}");
    assert_eq!(s["tracker"], "none", "{s}");
    // 16 pages every 100 ms for about 2 s.
    assert!(migrations_in(&s) >= 16 * 10, "{s}");
}

/// A 2 MiB move is one page-table operation on the runtime (one UFFDIO_MOVE out, one
/// UFFDIO_COPY back), 4 KiB moves one each; ranges moved both ways while the program writes
/// into them lose nothing.
#[test]
fn a_two_mib_move_is_one_page_table_operation_and_loses_nothing() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let prog = r#"
import hashlib, random, time
r = random.Random(7)
n = 48 << 20
b = bytearray(n)
for i in range(0, n, 4096):
    b[i:i + 256] = bytes([(i >> 12) % 251]) * 256
for step in range(30):
    time.sleep(0.1)
    for _ in range(50):
        j = r.randrange(n)
        b[j] = (b[j] + step) % 256
print(hashlib.sha256(b).hexdigest())
"#;
    let argv = ["python3", "-c", prog];
    let want = ok(&run(plain(&argv), None, 60, "plain"), "plain");
    let dir = std::env::temp_dir().join(format!("tiermem-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut per_op = Vec::new();
    for granularity in ["2MiB", "4KiB"] {
        let cfg = dir.join(format!("toy-{granularity}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[policy]\npolicy = \"toy_demote\"\npages_per_quantum = 4096\n\
                 granularity = \"{granularity}\"\nround_trip = true\n"
            ),
        )
        .unwrap();
        let (cmd, stats) = tiered_with(&["--config", cfg.to_str().unwrap()], "unlimited", &argv);
        let out = run(cmd, None, 180, granularity);
        assert_eq!(ok(&out, granularity), want, "{granularity}: output differs");
        let s = final_stats(&stats);
        let (pages, ops) = (num(&s, "moved_pages"), num(&s, "move_ops"));
        assert!(
            pages >= 4.0 * 512.0,
            "{granularity}: only {pages} pages moved: {s}"
        );
        per_op.push(pages / ops.max(1.0));
    }
    let _ = std::fs::remove_dir_all(&dir);
    // Whole ranges move in one call each (a call the kernel stops partway adds one).
    assert!(
        per_op[0] >= 256.0,
        "2 MiB moves: {} pages per operation",
        per_op[0]
    );
    assert!(
        per_op[1] <= 1.01,
        "4 KiB moves: {} pages per operation",
        per_op[1]
    );
}

/// What the runtime cannot serve exits 2 with one line, before the program runs.
#[test]
fn unsupported_policies_are_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("tiermem-pol-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("tpp-access-bit.toml");
    std::fs::write(&cfg, "[policy]\npolicy = \"tpp\"\nlru = \"access-bit\"\n").unwrap();
    let marker = dir.join("ran");
    let touch = ["sh", "-c", &format!("touch {}", marker.display())];
    let cases: Vec<(Vec<String>, &[&str])> = vec![
        (
            vec!["--config".into(), cfg.display().to_string()],
            &["`tpp`", "access-bit scanning", "hint-fault sampling"],
        ),
        (
            vec!["--policy".into(), "static+colloid".into()],
            &["colloid", "static"],
        ),
        (
            vec!["--policy".into(), "budget+colloid".into()],
            &["budget", "hemem+colloid"],
        ),
        (
            vec!["--policy".into(), "autonuma".into()],
            &["autonuma", "hemem", "memtis"],
        ),
    ];
    for (args, words) in cases {
        let o = Command::new(tiermem())
            .arg("run")
            .args(&args)
            .arg("--")
            .args(touch)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: `{w}` missing in {err}");
        }
        assert!(!marker.exists(), "{args:?}: the program ran");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
