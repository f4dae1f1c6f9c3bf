//! Node tiers end to end, in a QEMU guest with a declared NUMA topology (this machine has
//! one node): scripts/numa-guest.sh boots Debian's kernel with a busybox initramfs holding
//! the release `tiermem`, the preload library, the stress program and GNU sort, runs a
//! script from tests/guest/ and prints the serial console. Guest lines `RESULT key value`
//! are the facts asserted here; guest timings mean nothing (software emulation), so only
//! behaviour is asserted. Heavy: skipped with TIERMEM_SKIP_E2E=1.

mod common;

use common::{profile_dir, skip_e2e, wait_timeout, workspace_root};
use std::collections::HashMap;
use std::process::{Command, Stdio};

/// Seconds a guest may run before it is killed (the script's `timeout` kills QEMU first).
const GUEST_SECS: u64 = 280;

/// Build the guest (cached under target/numa-guest/), boot `topology`, run `script` (a file
/// of tests/guest/), and return the serial console.
fn guest(topology: &str, script: &str) -> String {
    common::built();
    common::require("qemu-system-x86_64", "qemu-system-x86");
    common::require("cpio", "cpio");
    let root = workspace_root();
    let sh = root.join("scripts/numa-guest.sh");
    let st = Command::new(&sh)
        .arg("build")
        .arg(profile_dir())
        .status()
        .expect("running scripts/numa-guest.sh build");
    assert!(st.success(), "scripts/numa-guest.sh build failed");
    let child = Command::new(&sh)
        .args(["run", topology])
        .arg(root.join("crates/tiermem-linux/tests/guest").join(script))
        .arg(GUEST_SECS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the guest");
    let out = wait_timeout(child, GUEST_SECS + 30, &format!("{topology} guest"));
    let console = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(
        console.contains("TIERMEM-GUEST-EXIT 0"),
        "{topology} guest: the script did not finish with status 0 (killed after {GUEST_SECS}s?)\nconsole:\n{console}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    console
}

/// `RESULT key value...` lines of the console (the last one wins).
fn results(console: &str) -> HashMap<String, String> {
    console
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("RESULT "))
        .map(|l| l.split_once(' ').unwrap_or((l, "")))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn get<'a>(r: &'a HashMap<String, String>, key: &str, console: &str) -> &'a str {
    r.get(key)
        .map(|s| s.as_str())
        .unwrap_or_else(|| panic!("guest printed no RESULT {key}\nconsole:\n{console}"))
}

fn num(r: &HashMap<String, String>, key: &str, console: &str) -> f64 {
    let v = get(r, key, console);
    v.parse()
        .unwrap_or_else(|_| panic!("RESULT {key} {v}: not a number\nconsole:\n{console}"))
}

#[test]
fn two_node_guest_with_a_cpu_less_node() {
    if skip_e2e("two_node_guest_with_a_cpu_less_node") {
        return;
    }
    let console = guest("2node", "two_node.sh");
    let r = results(&console);
    // The declared topology as the guest kernel sees it.
    assert_eq!(get(&r, "nodes", &console), "0-1", "{console}");
    assert_eq!(
        get(&r, "node1_cpus", &console),
        "",
        "node 1 has CPUs:\n{console}"
    );
    assert_eq!(num(&r, "hmat_node1_read_latency", &console), 250.0);
    assert_eq!(num(&r, "hmat_node0_read_latency", &console), 80.0);
    // A real program under the runtime gives a plain run's output.
    assert_eq!(
        get(&r, "sort_plain", &console),
        get(&r, "sort_compressed", &console),
        "{console}"
    );
}
