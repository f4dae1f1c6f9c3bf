//! Transparency of the runtime's reporting (issue 51): a managed program's stdout and
//! stderr are its own. Programs read their children's output as data (CPython's test
//! suite asserts a child's stderr is empty; supervisors, shells with `2>&1`): the
//! runtime's lines go to RUN_DIR/log and the stats (runtime/log.rs), never there.
//!
//! * A managed program starts a managed child that thrashes under a small budget and
//!   captures its stderr: byte for byte what a plain run captures, also under `--verbose`
//!   (which is for the process `tiermem run` started, not its children).
//! * A part of CPython's own regression suite (threads, fork, subprocess, signals, mmap,
//!   gc, weakref) under a 25 % budget, beside a plain run: the same test cases pass, fail
//!   and are skipped. Heavy (TIERMEM_SKIP_E2E=1 skips it).

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The parent: runs the child with its stdout and stderr captured and prints what it got.
/// The child touches 64 MiB at random for 5 s (under 10 %: every other access is a tier
/// fault) and writes one line on each of its outputs.
const PY_PARENT: &str = r#"
import subprocess, sys
CHILD = r'''
import random, sys, time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = i % 251
r = random.Random(1); t = time.time(); s = 0
while time.time() - t < 5:
    for _ in range(1000): s += b[r.randrange(0, len(b) >> 12) << 12]
sys.stderr.write("child stderr %s\n" % (s > 0))
print("child stdout")
'''
p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True)
print("rc", p.returncode)
print("stdout", repr(p.stdout))
print("stderr", repr(p.stderr))
"#;

/// Lines of the log that say a process thrashed.
fn thrashing_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(" info ") && l.contains("]: thrashing: "))
        .collect()
}

#[test]
fn a_thrashing_childs_stderr_is_what_a_plain_run_captures() {
    if skip_e2e("transparency") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let argv = ["python3", "-c", PY_PARENT];
    let want = ok(
        &run(plain(&argv), None, 120, "plain parent"),
        "plain parent",
    );
    assert!(
        want.contains("stderr b'child stderr True\\n'"),
        "the plain run itself is wrong: {want}"
    );
    for verbose in [false, true] {
        let opts: &[&str] = if verbose { &["--verbose"] } else { &[] };
        let what = format!("tiermem run {} --dram-budget 10%", opts.join(" "));
        let (mut cmd, stats) = tiered_with(opts, "10%", &argv);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().unwrap();
        // `tiermem run` execs the program: the parent's PID.
        let top = child.id();
        let out = wait_timeout(child, 300, &what);
        let got = ok(&out, &what);
        let log = log_in(&run_dir_of(&stats));
        // The child's stdout and stderr, as its parent captured them, are a plain run's...
        assert_eq!(got, want, "{what}: the child's output differs\nlog:\n{log}");
        // ... and the child thrashed (its runtime said so, in the log).
        let ours = format!("tiermem[{top}]: ");
        assert!(
            thrashing_lines(&log).iter().any(|l| !l.contains(&ours)),
            "{what}: the child did not thrash, the test proves nothing:\n{log}"
        );
        // The parent's own stderr: nothing of tiermem's, or under --verbose the parent's
        // own lines only (it thrashes too, starting up in 10 % of a few MiB).
        let err = String::from_utf8_lossy(&out.stderr);
        for l in err.lines().filter(|l| l.contains("tiermem[")) {
            assert!(
                verbose && l.starts_with(&ours),
                "{what}: on stderr: {l}\n{err}"
            );
        }
        assert!(runtime_problems(&log).is_empty(), "{what}: {log}");
        let _ = std::fs::remove_dir_all(run_dir_of(&stats));
        let _ = final_stats(&stats);
    }
}

// ---- CPython's regression suite ----------------------------------------------------------

/// Test files of CPython's suite (Lib/test) that pass plain on this machine and exercise
/// what the runtime must be transparent to: threads (and their signals), fork (os.fork,
/// wait4, pty), subprocesses (which assert their children's stderr), signals, mmap, gc and
/// weakrefs (finalizers, callbacks). Under two minutes plain (test_signal's sleeps take 48 s);
/// test_multiprocessing_* and test_os are left out for their length.
const CPYTHON_TESTS: &[&str] = &[
    "test_threading",
    "test_thread",
    "test_threading_local",
    "test_threadsignals",
    "test_fork1",
    "test_wait4",
    "test_subprocess",
    "test_signal",
    "test_mmap",
    "test_gc",
    "test_weakref",
];

/// Cases left out of both runs for time alone: gc- and weakref-heavy loops that walk every
/// object again and again (each 5-26 s under 25 %, under 1 s plain; they pass there too),
/// and a 30 s wait for a timeout in test_signal (in both runs).
const SLOW_CASES: &[&str] = &[
    "test_siginterrupt_off",
    "test_trashcan",
    "test_local_refs",
    "test_threaded_weak_value_dict_deepcopy",
    "test_threaded_weak_key_dict_deepcopy",
    "test_threaded_weak_key_dict_copy",
    "test_threaded_weak_value_dict_copy",
    "test_weak_values_destroy_while_iterating",
    "test_weak_keys_destroy_while_iterating",
    "test_threaded_weak_valued_consistency",
];

/// Cases known to differ, and why: not the runtime's messages, a separate limit. The
/// runtime's userfaultfd is opened in the child at start-up and takes the lowest free fd,
/// which these tests expect closed (`fd to be closed passed`: {7}). Their outcome is
/// printed, not held against this test.
const KNOWN_DIFFERENCES: &[&str] = &[
    "test.test_subprocess.POSIXProcessTestCase.test_close_fds",
    "test.test_subprocess.POSIXProcessTestCase.test_pass_fds",
    "test.test_subprocess.POSIXProcessTestCase.test_pass_fds_redirected",
];

/// An interpreter with CPython's test package: Debian's python3.11 with
/// libpython3.11-testsuite (scripts/apt-packages.txt), else `python3` on PATH when it has
/// the package (a pyenv or source build).
fn cpython_with_tests() -> String {
    let has_tests = |py: &str| {
        Command::new(py)
            .args(["-c", "import test.libregrtest, test.test_threading"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    for py in ["/usr/bin/python3.11", "python3"] {
        if has_tests(py) {
            // The interpreter itself (a pyenv shim would be a shell script around it).
            let o = Command::new(py)
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .unwrap();
            return String::from_utf8_lossy(&o.stdout).trim().to_string();
        }
    }
    panic!("no python3 with CPython's test package: apt-get install libpython3.11-testsuite (listed in scripts/apt-packages.txt)");
}

/// Outcome of each test case in a regrtest JUnit file: id -> pass | fail | error | skip.
fn outcomes(py: &str, junit: &Path) -> BTreeMap<String, String> {
    const SUMMARY: &str = r#"
import sys, xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).iter("testcase"):
    kinds = [c.tag for c in tc if c.tag in ("failure", "error", "skipped")]
    k = {"failure": "fail", "error": "error", "skipped": "skip"}[kinds[0]] if kinds else "pass"
    cls = tc.get("classname")
    print((cls + "." if cls else "") + tc.get("name", ""), k)
"#;
    let o = Command::new(py)
        .args(["-c", SUMMARY])
        .arg(junit)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        junit.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(id, k)| (id.to_string(), k.to_string()))
        .collect()
}

/// `python -m test` over `tests` (in one interpreter, its tests' own children aside: a
/// worker per file would add half a minute each under the budget), under `tiermem run
/// --dram-budget BUDGET` or plain; `only`: the test case ids to run (`--match`). Started,
/// not waited for.
fn regrtest(
    py: &str,
    tests: &[&str],
    only: &[String],
    budget: Option<&str>,
    dir: &Path,
    tag: &str,
) -> (std::process::Child, PathBuf) {
    let junit = dir.join(format!("{tag}.xml"));
    let tmp = dir.join(format!("{tag}-tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut argv: Vec<String> = vec![
        py.into(),
        "-m".into(),
        "test".into(),
        "--timeout".into(),
        "600".into(),
        "--junit-xml".into(),
        junit.display().to_string(),
    ];
    for id in only {
        argv.extend(["--match".into(), id.rsplit('.').next().unwrap().into()]);
    }
    for case in SLOW_CASES {
        argv.extend(["--ignore".into(), case.to_string()]);
    }
    argv.extend(tests.iter().map(|t| t.to_string()));
    let mut cmd = match budget {
        Some(b) => {
            let mut c = Command::new(tiermem());
            c.args(["run", "--dram-budget", b, "--"]).args(&argv);
            // Every managed process's final stats (the tests' own children too).
            c.env(
                "TIERMEM_STATS_OUT",
                dir.join(format!("{tag}-stats-%p.json")),
            )
            .env("TIERMEM_RUN_DIR", dir.join(format!("{tag}-run")));
            c
        }
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    // Temporary files (and the test suite's own TESTFN directories) in a place of their own.
    cmd.current_dir(&tmp)
        .env("TMPDIR", &tmp)
        .env_remove("PYTHONWARNINGS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    (cmd.spawn().expect("starting python -m test"), junit)
}

/// Run plain and tiered side by side; returns both outputs and outcomes.
fn side_by_side(
    py: &str,
    tests: &[&str],
    only: &[String],
    budget: &str,
    dir: &Path,
    tag: &str,
) -> [(Output, BTreeMap<String, String>); 2] {
    let (p, pj) = regrtest(py, tests, only, None, dir, &format!("{tag}-plain"));
    let (t, tj) = regrtest(py, tests, only, Some(budget), dir, &format!("{tag}-tiered"));
    let po = wait_timeout(p, 900, "plain python -m test");
    let to = wait_timeout(t, 900, "tiered python -m test");
    let summary = |o: &Output| {
        format!(
            "status {:?}\nstdout (tail): {}\nstderr (tail): {}",
            o.status,
            tail(&o.stdout),
            tail(&o.stderr)
        )
    };
    assert!(
        pj.exists(),
        "plain run wrote no JUnit file:\n{}",
        summary(&po)
    );
    assert!(
        tj.exists(),
        "tiered run wrote no JUnit file:\n{}",
        summary(&to)
    );
    let (pr, tr) = (outcomes(py, &pj), outcomes(py, &tj));
    [(po, pr), (to, tr)]
}

fn tail(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}

/// The test cases whose outcome differs between two runs (a case missing from one: "-").
fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut ids: Vec<&String> = a.keys().chain(b.keys()).collect();
    ids.sort();
    ids.dedup();
    ids.into_iter()
        .filter(|id| a.get(*id) != b.get(*id))
        .map(|id| {
            let k = |m: &BTreeMap<String, String>| m.get(id).cloned().unwrap_or("-".into());
            format!("{id}: plain {}, tiermem {}", k(a), k(b))
        })
        .collect()
}

fn count(m: &BTreeMap<String, String>, k: &str) -> usize {
    m.values().filter(|v| *v == k).count()
}

#[test]
fn cpython_regression_tests_pass_and_fail_as_in_a_plain_run() {
    if skip_e2e("cpython regrtest") {
        return;
    }
    let py = cpython_with_tests();
    let _h = heavy();
    let dir = std::env::temp_dir().join(format!("tiermem-cpython-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let budget = "25%";
    let [(po, plain_r), (to, tiered_r)] =
        side_by_side(&py, CPYTHON_TESTS, &[], budget, &dir, "all");
    assert!(
        plain_r.len() > 500,
        "only {} test cases ran plain:\n{}",
        plain_r.len(),
        tail(&po.stdout)
    );
    let line = |m: &BTreeMap<String, String>| {
        format!(
            "{} cases: {} pass, {} fail, {} error, {} skip",
            m.len(),
            count(m, "pass"),
            count(m, "fail"),
            count(m, "error"),
            count(m, "skip")
        )
    };
    eprintln!(
        "cpython {py} {}: plain {}",
        CPYTHON_TESTS.join(" "),
        line(&plain_r)
    );
    eprintln!("cpython under --dram-budget {budget}: {}", line(&tiered_r));
    // A case whose outcome differs is run again alone, side by side: timing-dependent
    // cases of the suite on a loaded 2-core machine are not held against the runtime
    // unless they differ again.
    let (known, diff): (Vec<String>, Vec<String>) =
        differences(&plain_r, &tiered_r).into_iter().partition(|d| {
            KNOWN_DIFFERENCES
                .iter()
                .any(|k| d.starts_with(&format!("{k}:")))
        });
    if !known.is_empty() {
        eprintln!(
            "known differences (KNOWN_DIFFERENCES):\n  {}",
            known.join("\n  ")
        );
    }
    let mut persistent = Vec::new();
    if !diff.is_empty() {
        eprintln!("differing, run again alone:\n  {}", diff.join("\n  "));
        let ids: Vec<String> = diff
            .iter()
            .map(|d| d.split(':').next().unwrap().to_string())
            .collect();
        for id in &ids {
            // test.test_x.Class.case -> test file test_x
            let file = id.split('.').nth(1).unwrap_or("");
            let [(_, p2), (_, t2)] = side_by_side(
                &py,
                &[file],
                std::slice::from_ref(id),
                budget,
                &dir,
                &format!("again-{}", unique()),
            );
            let (a, b) = (p2.get(id), t2.get(id));
            if a != b {
                persistent.push(format!("{id}: plain {a:?}, tiermem {b:?} (twice)"));
            }
        }
    }
    // Nothing of tiermem's in what the suite printed.
    let out_err = [&to.stdout[..], &to.stderr[..]].concat();
    let leaked: Vec<String> = String::from_utf8_lossy(&out_err)
        .lines()
        .filter(|l| l.contains("tiermem["))
        .map(String::from)
        .collect();
    // The runtime tiered: the processes' final stats (the interpreter and the suite's own
    // children) count tier faults.
    let mut procs = 0;
    let mut faults = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("all-tiered-stats-") {
            if let Ok(s) = serde_json::from_str::<serde_json::Value>(
                &std::fs::read_to_string(e.path()).unwrap_or_default(),
            ) {
                procs += 1;
                faults += tier_faults(&s);
            }
        }
    }
    let log = log_in(&dir.join("all-tiered-run"));
    let problems = runtime_problems(&log);
    eprintln!(
        "{procs} managed processes, {faults} tier faults, {} thrashing reports in the log",
        thrashing_lines(&log).len()
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        persistent.is_empty(),
        "outcomes differ from the plain run:\n{}",
        persistent.join("\n")
    );
    assert!(
        leaked.is_empty(),
        "tiermem's lines in the suite's output:\n{}",
        leaked.join("\n")
    );
    assert!(
        problems.is_empty(),
        "the runtime reported problems:\n{}",
        problems.join("\n")
    );
    assert!(
        procs > 10 && faults > 1000,
        "little was tiered: {procs} processes, {faults} tier faults"
    );
}
