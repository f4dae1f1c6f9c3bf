//! Helpers for the runtime's end-to-end tests: build the preload library and the `tiermem`
//! binary once, run programs with a timeout, and skip heavy tests when TIERMEM_SKIP_E2E=1.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// target/<profile>/ of the running test binary.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Build libtiermem_preload.so and the tiermem binary (same profile as the tests), once.
pub fn built() -> &'static (PathBuf, PathBuf) {
    static B: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let dir = profile_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(workspace_root()).args([
            "build",
            "-q",
            "-p",
            "tiermem-preload",
            "-p",
            "tiermem-cli",
            // The example policy of docs/adding-a-policy.md (tests/policies.rs runs it), as
            // tiermem-cli's tests build it: the same features, so no rebuild between them.
            "--features",
            "tiermem-policies/toy-policy",
        ]);
        if dir.file_name().and_then(|s| s.to_str()) == Some("release") {
            cmd.arg("--release");
        }
        let st = cmd
            .status()
            .expect("running cargo build for the preload library");
        assert!(
            st.success(),
            "cargo build -p tiermem-preload -p tiermem-cli failed"
        );
        let so = dir.join("libtiermem_preload.so");
        let bin = dir.join("tiermem");
        assert!(so.is_file(), "{} missing after build", so.display());
        assert!(bin.is_file(), "{} missing after build", bin.display());
        (so, bin)
    })
}

pub fn tiermem() -> &'static Path {
    &built().1
}

pub fn stress_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem-stress"))
}

/// True (and prints why) when heavy end-to-end tests are to be skipped.
pub fn skip_e2e(name: &str) -> bool {
    if std::env::var("TIERMEM_SKIP_E2E")
        .map(|v| v == "1")
        .unwrap_or(false)
    {
        eprintln!("skipping {name}: TIERMEM_SKIP_E2E=1");
        return true;
    }
    false
}

/// Panic with the apt package to install when a program is missing.
pub fn require(program: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false);
    assert!(found, "`{program}` is not installed: apt-get install {package} (listed in scripts/apt-packages.txt)");
}

/// Wait for a child we started, killing it (by its PID) after `secs`. Its stdout and stderr
/// (if piped) are drained while it runs, so a chatty child never blocks on a full pipe.
pub fn wait_timeout(mut child: Child, secs: u64, what: &str) -> Output {
    use std::io::Read;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out_t = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err_t = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait().unwrap() {
            Some(st) => break st,
            None if t0.elapsed() > Duration::from_secs(secs) => {
                let _ = child.kill();
                let _ = child.wait();
                let (o, e) = (out_t.join().unwrap(), err_t.join().unwrap());
                panic!(
                    "{what}: timed out after {secs}s\nstdout: {}\nstderr: {}",
                    String::from_utf8_lossy(&o),
                    String::from_utf8_lossy(&e)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

pub fn run(mut cmd: Command, stdin: Option<&[u8]>, secs: u64, what: &str) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    if let Some(data) = stdin {
        let mut si = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = si.write_all(&data);
        });
    }
    wait_timeout(child, secs, what)
}

/// `tiermem run --dram-budget BUDGET -- argv...` with final stats written to a temp file.
pub fn tiered(budget: &str, argv: &[&str]) -> (Command, PathBuf) {
    tiered_with(&[], budget, argv)
}

/// `tiered` with more `tiermem run` options (`--policy NAME`) before the program.
pub fn tiered_with(opts: &[&str], budget: &str, argv: &[&str]) -> (Command, PathBuf) {
    let stats = std::env::temp_dir().join(format!(
        "tiermem-test-{}-{}.json",
        std::process::id(),
        unique()
    ));
    let mut cmd = Command::new(tiermem());
    cmd.arg("run")
        .args(opts)
        .args(["--dram-budget", budget, "--"])
        .args(argv)
        .env("TIERMEM_STATS_OUT", &stats)
        // A run directory of its own: its log holds this run's lines only (`problems`).
        .env("TIERMEM_RUN_DIR", run_dir_of(&stats));
    (cmd, stats)
}

/// The private run directory `tiered` gives a program (beside its final stats file).
pub fn run_dir_of(stats: &Path) -> PathBuf {
    stats.with_extension("run")
}

/// The runtime's log in a run directory (RUN_DIR/log.1 then RUN_DIR/log), "" if none.
pub fn log_in(run_dir: &Path) -> String {
    ["log.1", "log"]
        .iter()
        .filter_map(|n| std::fs::read_to_string(run_dir.join(n)).ok())
        .collect()
}

/// What went wrong in a `tiered` run, for an assertion that it is empty: the runtime's
/// warn and fatal lines in its log (the whole process tree's), and any line of the
/// runtime's on the program's stderr (there are none but fatal ones, which are problems
/// too). Removes the run directory.
pub fn problems(stats: &Path, out: &Output) -> Vec<String> {
    let dir = run_dir_of(stats);
    let log = log_in(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let mut p: Vec<String> = runtime_problems(&log)
        .into_iter()
        .map(String::from)
        .collect();
    p.extend(
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("tiermem["))
            .map(|l| format!("on stderr: {l}")),
    );
    p
}

/// A number in a stats document; panics naming the field when it is missing.
pub fn num(s: &serde_json::Value, k: &str) -> f64 {
    s[k].as_f64()
        .unwrap_or_else(|| panic!("stats field {k} missing: {s}"))
}

pub fn plain(argv: &[&str]) -> Command {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    c
}

pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Final stats of a tiered run (written at the program's exit). Removes them and the run's
/// directory (read its log before).
pub fn final_stats(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no final stats at {}: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(run_dir_of(path));
    serde_json::from_str(&text).unwrap()
}

/// A per-tier counter of the stats, summed over the tiers.
pub fn tiers_total(s: &serde_json::Value, key: &str) -> u64 {
    s["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_u64().unwrap())
        .sum()
}

pub fn tier_faults(s: &serde_json::Value) -> u64 {
    tiers_total(s, "faults")
}

pub fn migrations_in(s: &serde_json::Value) -> u64 {
    tiers_total(s, "migrations_in")
}

pub fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed: {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Heavy tests take this lock so they do not compete for the machine's two cores.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static M: std::sync::Mutex<()> = std::sync::Mutex::new(());
    M.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runtime's problem reports in its log (`TIME LEVEL PROGRAM tiermem[PID]: ...`
/// lines, runtime/log.rs): the warn and fatal ones; info lines (thrashing advice) are
/// information for the user, not faults.
pub fn runtime_problems(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| matches!(l.split(' ').nth(1), Some("warn" | "fatal")))
        .collect()
}

/// A fresh private run directory (0700) for a tiered program, so a test can read its
/// stats.json at DIR/PID/stats.json.
pub fn private_run_dir() -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let d = std::env::temp_dir().join(format!(
        "tiermem-test-run-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
    d
}

/// crates/tiermem-linux/tests/c/NAME.c compiled (with -pthread -lm) into the profile
/// directory; returns the binary's path.
pub fn c_bin(name: &str) -> PathBuf {
    require("cc", "gcc");
    let src = workspace_root().join(format!("crates/tiermem-linux/tests/c/{name}.c"));
    let out = profile_dir().join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lm")
        .status()
        .expect("running cc");
    assert!(st.success(), "cc {} failed", src.display());
    out
}
