//! The soak's short version (issue 50 item 4): `bench/soak/run.sh` for 60 s (threads, fork,
//! a server under load, an interpreter, side by side, budgets changing every second; every
//! output and value checked there). The 30-minute run is `DURATION=1800 bash
//! bench/soak/run.sh` (bench/soak/results.md). Heavy: skipped with TIERMEM_SKIP_E2E=1.

mod common;
use common::*;
use std::process::Command;

#[test]
fn a_minute_of_real_programs_under_budgets_changing_every_second() {
    if skip_e2e("soak") {
        return;
    }
    for (p, pkg) in [
        ("redis-server", "redis-server"),
        ("redis-cli", "redis-tools"),
        ("cc", "gcc"),
    ] {
        require(p, pkg);
    }
    // The release binaries the script runs: tiermem and the preload (built here), the
    // stress and load programs (this crate's, built with its tests).
    let _ = built();
    let mut c = Command::new("bash");
    c.current_dir(workspace_root())
        .arg("bench/soak/run.sh")
        .env("DURATION", "60")
        .env("TIERMEM", tiermem())
        .env("BIN_DIR", profile_dir());
    let out = run(c, None, 400, "bench/soak/run.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("soak: ok, 0 mismatches"),
        "{text}\n{err}"
    );
    eprintln!("{text}");
}
