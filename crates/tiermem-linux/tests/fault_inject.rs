//! Issue 50 item 1: when tiermem itself fails, the program keeps its data and runs on
//! untiered (docs/runtime.md "When tiermem itself fails"). Each failure is injected with
//! `TIERMEM_FAULT_INJECT` into `tests/c/pattern.c` (64 MiB written, read back and rewritten
//! three times under an 8 MiB budget, every byte checked): the program must print "ok" and
//! exit 0 within the timeout (a hang fails the test), and the runtime must say what
//! happened in exactly one `tiermem[PID]:` line, on stderr and in the log.

mod common;
use common::*;

/// Run pattern.c under `inject`; returns the one tiermem line (asserted one) and the stats.
fn degraded_run(inject: &str) -> (String, serde_json::Value) {
    let bin = c_bin("pattern");
    let (mut cmd, stats) = tiered("8M", &[bin.to_str().unwrap(), "64", "3"]);
    cmd.env("TIERMEM_FAULT_INJECT", inject);
    let out = run(cmd, None, 120, inject);
    let stdout = ok(&out, inject);
    assert_eq!(stdout, "ok\n", "{inject}: the program's output");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("tiermem[")).collect();
    assert_eq!(
        lines.len(),
        1,
        "{inject}: one tiermem line on stderr, got:\n{stderr}"
    );
    let line = lines[0].to_string();
    assert!(
        line.contains("tiering stopped") && line.contains("the program continues"),
        "{inject}: {line}"
    );
    let log = log_in(&run_dir_of(&stats));
    let logged = runtime_problems(&log);
    assert_eq!(
        logged.len(),
        1,
        "{inject}: one problem line in the log:\n{log}"
    );
    assert!(
        logged[0].contains("tiering stopped"),
        "{inject}: {}",
        logged[0]
    );
    let s = final_stats(&stats);
    let _ = std::fs::remove_dir_all(run_dir_of(&stats));
    (line, s)
}

/// "N pages brought home" of the line.
fn brought_home(line: &str) -> u64 {
    let before = line.split(" pages brought home").next().unwrap();
    before
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn a_manager_panic_mid_eviction_brings_every_page_home() {
    let (line, s) = degraded_run("manager-panic:2000");
    assert!(
        line.contains("tiermem-mgr panicked: injected manager-panic"),
        "{line}"
    );
    // Pages were compressed when it failed, and all of them came home.
    assert!(brought_home(&line) > 0, "{line}");
    assert!(!line.contains("could not come home"), "{line}");
    assert_eq!(
        tiers_total(&s, "pages"),
        0,
        "nothing left in a tier at the end"
    );
}

#[test]
fn a_fault_thread_panic_holding_the_lock_brings_every_page_home() {
    // The faulting thread was asleep in the kernel on a page whose fault never got served:
    // the bring-home installs it and wakes it.
    let (line, s) = degraded_run("fault-thread-panic:500");
    assert!(
        line.contains("tiermem-fault panicked: injected fault-thread-panic"),
        "{line}"
    );
    assert!(brought_home(&line) > 0, "{line}");
    assert_eq!(
        tiers_total(&s, "pages"),
        0,
        "nothing left in a tier at the end"
    );
    assert!(
        tier_faults(&s) >= 499,
        "tiered before the panic: {} tier faults",
        tier_faults(&s)
    );
}

#[test]
fn a_pool_that_cannot_grow_stops_tiering_and_keeps_every_byte() {
    let (line, s) = degraded_run("pool-enomem:2");
    assert!(line.contains("a compressed pool could not grow"), "{line}");
    assert_eq!(
        tiers_total(&s, "pages"),
        0,
        "nothing left in a tier at the end"
    );
}

#[test]
fn an_unknown_kind_is_refused_before_the_program_starts_naming_the_kinds() {
    let bin = c_bin("pattern");
    let (mut cmd, stats) = tiered("8M", &[bin.to_str().unwrap(), "8", "1"]);
    cmd.env("TIERMEM_FAULT_INJECT", "manager-panik:1");
    let out = run(cmd, None, 60, "unknown kind");
    let _ = std::fs::remove_dir_all(run_dir_of(&stats));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "the program did not start");
    assert!(
        stderr.contains("unknown kind \"manager-panik\"") && stderr.contains("fault-thread-panic"),
        "{stderr}"
    );
}

#[test]
fn a_failed_userfaultfd_brings_every_page_home() {
    let (line, s) = degraded_run("uffd-error:200");
    assert!(
        line.contains("the userfaultfd failed: injected uffd-error"),
        "{line}"
    );
    assert!(brought_home(&line) > 0, "{line}");
    assert_eq!(
        tiers_total(&s, "pages"),
        0,
        "nothing left in a tier at the end"
    );
}

#[test]
fn without_memory_to_bring_pages_home_a_manager_panic_drains_instead() {
    // `low-memory`: the stop sees no memory available, so nothing is brought home at once;
    // the pages come home as the program touches them (its next round reads them all).
    let (line, _) = degraded_run("manager-panic:2000,low-memory");
    assert!(line.contains("tiermem-mgr panicked"), "{line}");
    assert!(line.contains("not enough memory to bring"), "{line}");
    assert!(line.contains("nothing is evicted any more"), "{line}");
}

#[test]
fn without_memory_to_bring_pages_home_a_dead_fault_thread_serves_again() {
    // The fault thread that panicked runs again (the pools need it), and the fault it had
    // left unserved is woken to come again.
    let (line, s) = degraded_run("fault-thread-panic:500,low-memory");
    assert!(line.contains("tiermem-fault panicked"), "{line}");
    assert!(line.contains("not enough memory to bring"), "{line}");
    assert!(
        tier_faults(&s) > 500,
        "served after the panic: {} tier faults",
        tier_faults(&s)
    );
}

#[test]
fn a_page_that_does_not_decompress_ends_the_program_with_sigbus_never_wrong_bytes() {
    use std::os::unix::process::ExitStatusExt;
    let bin = c_bin("pattern");
    let (mut cmd, stats) = tiered("8M", &[bin.to_str().unwrap(), "64", "3"]);
    cmd.env("TIERMEM_FAULT_INJECT", "codec-corrupt:300");
    let out = run(cmd, None, 120, "codec-corrupt");
    let _ = std::fs::remove_file(&stats);
    let _ = std::fs::remove_dir_all(run_dir_of(&stats));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Not "ok", and no mismatch either: the program never read the lost page.
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "{:?}\n{stderr}",
        out.status
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!stderr.contains("mismatch"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("tiermem[")).collect();
    assert_eq!(lines.len(), 1, "one tiermem line:\n{stderr}");
    assert!(
        lines[0].contains("does not decompress") && lines[0].contains("SIGBUS"),
        "{}",
        lines[0]
    );
}
