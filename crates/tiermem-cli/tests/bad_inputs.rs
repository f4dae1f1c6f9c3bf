//! Issue 10, item 4: every bad input to the `tiermem` binary is a one-line error naming the
//! argument or field and the fix, exit status 2, no panic, and nothing written.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

/// Run and expect exit 2 with one line on stderr containing every `needle`; returns it.
fn fails(c: &mut Command, needles: &[&str]) -> String {
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "exit {:?}: {err}", o.status);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    err
}

/// A short copy of examples/sim.toml with `find` replaced, written to DIR/c.toml.
fn config(dir: &Path, find: &str, replace: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/sim.toml"))
        .unwrap()
        .replace("duration_s = 30", "duration_s = 1");
    assert!(text.contains(find), "examples/sim.toml lacks `{find}`");
    let p = dir.join("c.toml");
    std::fs::write(&p, text.replacen(find, replace, 1)).unwrap();
    p
}

fn sim_fails(name: &str, find: &str, replace: &str, needles: &[&str]) {
    let d = tmp(name);
    let out = d.join("out");
    let cfg = config(&d, find, replace);
    fails(
        tiermem()
            .arg("sim")
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .arg("--no-plots"),
        needles,
    );
    assert!(!out.exists(), "{name}: output written for a bad config");
}

#[test]
fn sim_bad_fields_exit_2_naming_the_field() {
    sim_fails(
        "kvhuge",
        "kind = \"gups\"                   # \"gups\", \"kv\", \"stream\", \"random\", \"trace\"\nworking_set = \"72GiB\"\nhot_set = \"24GiB\"\nhot_probability = 0.9\nobject_size = 64\nwrite_fraction = 1.0",
        "kind = \"kv\"\nkeys = 1000\nvalue_size = \"99999999999999999999G\"",
        &["`workload.value_size`", "too large"],
    );
    sim_fails(
        "caphuge",
        "capacity = \"32GiB\"",
        "capacity = \"99999999999999999999G\"",
        &["`machine.tiers[0].capacity`", "too large"],
    );
    sim_fails(
        "cap1e30",
        "capacity = \"32GiB\"",
        "capacity = 1e30",
        &["`machine.tiers[0].capacity`", "floating-point"],
    );
    sim_fails(
        "capu64",
        "capacity = \"32GiB\"",
        "capacity = 99999999999999999999",
        &["`machine.tiers[0].capacity`", "as a string"],
    );
    sim_fails(
        "tiny",
        "capacity = \"96GiB\"",
        "capacity = 1000",
        &["`machine.tiers[1].capacity`", "one page"],
    );
    sim_fails(
        "cores0",
        "app_cores = 15",
        "app_cores = 0",
        &["`machine.app_cores`", "positive"],
    );
    sim_fails("missing", "app_cores = 15", "", &["`machine.app_cores`"]);
}

#[test]
fn sim_out_naming_a_file_is_a_usage_error() {
    let d = tmp("outfile");
    let cfg = config(&d, "seed = 1", "seed = 1");
    let file = d.join("taken");
    std::fs::write(&file, "keep me").unwrap();
    let err = fails(
        tiermem()
            .arg("sim")
            .arg(&cfg)
            .arg("--out")
            .arg(&file)
            .arg("--no-plots"),
        &["--out", "not a directory"],
    );
    assert!(!err.contains("File exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    fails(
        tiermem()
            .arg("sim")
            .arg(&cfg)
            .arg("--out")
            .arg(file.join("sub"))
            .arg("--no-plots"),
        &["--out", "not a directory"],
    );
}

#[test]
fn sim_warns_on_stderr_when_tiers_are_full() {
    let d = tmp("full");
    let out = d.join("out");
    let cfg = config(&d, "capacity = \"96GiB\"", "capacity = \"40G\"");
    let o = tiermem()
        .arg("sim")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .arg("--no-plots")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("tiermem: warning: tiers full"))
            .count(),
        1,
        "{err}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("tiers full"));
}

#[test]
fn run_codec_level_out_of_range_names_the_range() {
    let err = fails(
        tiermem().args(["run", "--codec", "zstd:99", "--", "/bin/true"]),
        &["--codec", "zstd levels are 1..=22"],
    );
    assert!(!err.contains("not built"), "{err}");
    fails(
        tiermem().args(["run", "--codec", "deflate:12", "--", "/bin/true"]),
        &["--codec", "0..=9"],
    );
}

#[test]
fn run_dram_budget_zero_or_huge_is_rejected() {
    for (b, needle) in [
        ("0", "positive size"),
        ("0%", "above 0"),
        ("99999999999T", "too large"),
        ("9999T", "machine's memory"),
    ] {
        fails(
            tiermem().args(["run", "--dram-budget", b, "--", "/bin/true"]),
            &["--dram-budget", needle, "unlimited"],
        );
        // Parsed by clap, before anything else (the pid is not looked at).
        fails(
            tiermem().args(["attach", "--dram-budget", b, "1"]),
            &["--dram-budget", needle, "unlimited"],
        );
    }
}

/// Issue 48, item 7: an unknown option is clap's error (exit 2) naming the option and the
/// nearest valid one, and nothing is started: `tiermem run --dram-budjet 50% -- PROG` used to
/// run a program named `--dram-budjet` (exit 127). The program given to `run` writes a file,
/// so a run that started it would show.
fn unknown_option(args: &[&str], bad: &str, nearest: &str) {
    let o = tiermem().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?}: exit {:?}: {err}",
        o.status
    );
    assert!(
        err.contains(&format!("unexpected argument '{bad}'")),
        "{args:?}: `{bad}` not named: {err}"
    );
    assert!(
        err.contains(&format!("a similar argument exists: '{nearest}'")),
        "{args:?}: `{nearest}` not suggested: {err}"
    );
    assert!(!err.contains("command not found"), "{args:?}: {err}");
}

#[test]
fn run_attach_qos_unknown_options_name_the_nearest_valid_one() {
    let d = tmp("unknownopt");
    let marker = d.join("ran");
    let prog = format!("touch {}", marker.display());
    unknown_option(
        &["run", "--dram-budjet", "50%", "--", "sh", "-c", &prog],
        "--dram-budjet",
        "--dram-budget",
    );
    unknown_option(
        &[
            "run",
            "--dram-budget",
            "50%",
            "--polcy",
            "tpp",
            "sh",
            "-c",
            &prog,
        ],
        "--polcy",
        "--policy",
    );
    unknown_option(
        &["run", "--fault-arund", "64KiB", "--", "sh", "-c", &prog],
        "--fault-arund",
        "--fault-around",
    );
    assert!(
        !marker.exists(),
        "the program ran despite an unknown option"
    );
    unknown_option(
        &["attach", "1", "--dram-budjet", "50%"],
        "--dram-budjet",
        "--dram-budget",
    );
    unknown_option(&["attach", "--durat", "1", "1"], "--durat", "--duration");
    let cfg = repo().join("examples/qos/redis-stream.toml");
    let cfg = cfg.to_str().unwrap();
    unknown_option(
        &["qos", "--config", cfg, "--mod", "even"],
        "--mod",
        "--mode",
    );
    unknown_option(&["qos", "--config", cfg, "--chek"], "--chek", "--check");
}

#[test]
fn trace_info_on_binary_directory_and_empty_files() {
    let d = tmp("traceinfo");
    let bin = d.join("blob.bin");
    let mut bytes = vec![0u8, 1, 2, 0x1b, b'[', b'2', b'J', 0xff, 0xfe];
    bytes.extend(vec![0xAAu8; 4000]);
    std::fs::write(&bin, &bytes).unwrap();
    let o = tiermem()
        .args(["trace", "info"])
        .arg(&bin)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !o.stderr.iter().any(|&b| b == 0 || b == 0x1b || b >= 0x80),
        "raw bytes echoed: {:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a trace") && err.contains("\\x00"),
        "{err}"
    );
    assert!(err.len() < 400, "{err}");

    fails(
        tiermem().args(["trace", "info"]).arg(&d),
        &["is a directory", "trace file"],
    );
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let o = tiermem()
        .args(["trace", "info"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("empty trace"));
}

#[test]
fn trace_convert_to_a_directory_or_missing_directory_exits_2() {
    let d = tmp("convertout");
    let lackey = d.join("a.lackey");
    std::fs::write(&lackey, " L 10,8\n").unwrap();
    fails(
        tiermem().args(["trace", "convert"]).arg(&lackey).arg(&d),
        &["is a directory", "file path"],
    );
    fails(
        tiermem()
            .args(["trace", "convert"])
            .arg(&lackey)
            .arg(d.join("no/such/dir/x.tmt")),
        &["cannot create output", "existing, writable directory"],
    );
}
