//! A program stopped and continued mid-eviction (issue 50 item 1: "stopped and continued
//! mid-eviction"): SIGSTOP stops every thread of the process, tiermem's fault and manager
//! threads with the program's, at whatever point they are (a page moved to a staging slot
//! and not yet compressed, a fault half served); SIGCONT resumes them. tiermem-stress under
//! a 10 % budget (about a hundred thousand tier faults and evictions in the run) is stopped
//! and continued every 40 ms; every page must still hold its version, the program must end
//! normally within the timeout (a hang fails the test) and the runtime report no problem.

mod common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn stress_stopped_and_continued_every_40ms_loses_nothing_and_ends() {
    if skip_e2e("stop_cont") {
        return;
    }
    let _h = heavy();
    let bin = stress_bin();
    let (mut cmd, stats) = tiered(
        "10%",
        &[
            bin.to_str().unwrap(),
            "--mb",
            "32",
            "--threads",
            "3",
            "--seconds",
            "6",
            "--forks",
            "2",
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("starting tiermem run");
    let pid = child.id() as i32;
    let stopper = std::thread::spawn(move || {
        let (t0, mut stops) = (Instant::now(), 0u32);
        // Until the program exits (kill then fails) or 60 s pass.
        while t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(30));
            // SAFETY: signals to the child this test started, by its PID.
            if unsafe { libc::kill(pid, libc::SIGSTOP) } != 0 {
                break;
            }
            stops += 1;
            std::thread::sleep(Duration::from_millis(10));
            // SAFETY: as above.
            if unsafe { libc::kill(pid, libc::SIGCONT) } != 0 {
                break;
            }
        }
        stops
    });
    // The stress runs 6 s of its own time; stopped a quarter of the time, plus its checks.
    let out = wait_timeout(child, 120, "tiermem-stress stopped and continued");
    let stops = stopper.join().unwrap();
    let text = ok(&out, "tiermem-stress stopped and continued");
    assert!(text.contains("mismatches=0"), "{text}");
    assert!(stops > 50, "only {stops} stops");
    let p = problems(&stats, &out);
    assert!(p.is_empty(), "{}", p.join("\n"));
    let s = final_stats(&stats);
    assert!(
        tier_faults(&s) > 10_000,
        "too few tier faults to mean anything: {s}"
    );
    eprintln!("{stops} stops, {} tier faults: {text}", tier_faults(&s));
}
