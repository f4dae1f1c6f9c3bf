//! `tiermem attach PID` refusals on this one-node machine: each one line on stderr, exit 2,
//! and the target process untouched and running. (Moving pages needs a second node: the
//! 3-node QEMU guest of numa_guest.rs attaches for real.)

mod common;

use common::{require, run, tiermem};
use std::process::{Child, Command, Stdio};

/// A process to attach to (killed when dropped).
struct Target(Child);

impl Target {
    fn start() -> Target {
        Target(
            Command::new("sleep")
                .arg("60")
                .stdout(Stdio::null())
                .spawn()
                .expect("starting sleep"),
        )
    }
    fn pid(&self) -> String {
        self.0.id().to_string()
    }
    fn alive(&mut self) -> bool {
        self.0.try_wait().expect("try_wait").is_none()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run `cmd` (a `tiermem attach ...`): exit 2 and exactly one stderr line holding every
/// one of `words`.
fn refused(cmd: Command, words: &[&str]) {
    let o = run(cmd, None, 60, "tiermem attach");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    for w in words {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
}

fn attach(args: &[&str]) -> Command {
    let mut c = Command::new(tiermem());
    c.arg("attach").args(args);
    c
}

#[test]
fn a_pid_that_does_not_exist_is_refused() {
    refused(attach(&["2147483000"]), &["no process 2147483000"]);
    refused(attach(&["0"]), &["PID 0"]);
}

#[test]
fn another_users_process_is_refused_as_not_ours() {
    require("setpriv", "util-linux");
    if unsafe_not_root() {
        eprintln!("skipped: needs root to start tiermem as another user");
        return;
    }
    let mut t = Target::start();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(tiermem())
        .args(["attach", &t.pid()]);
    refused(c, &["is not ours", &format!("/proc/{}/pagemap", t.pid())]);
    assert!(t.alive());
}

#[test]
fn without_cap_sys_nice_the_capability_is_named() {
    require("setpriv", "util-linux");
    if unsafe_not_root() {
        eprintln!("skipped: needs root to drop one capability");
        return;
    }
    let mut t = Target::start();
    let mut c = Command::new("setpriv");
    c.args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--"])
        .arg(tiermem())
        .args(["attach", &t.pid()]);
    refused(c, &["CAP_SYS_NICE", "setcap"]);
    assert!(t.alive());
}

#[test]
fn configs_attach_cannot_serve_are_refused_by_field() {
    if unsafe_not_root() {
        return;
    }
    let mut t = Target::start();
    let dir = std::env::temp_dir().join(format!("tiermem-attach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The default tiers: DRAM + a compressed tier, which attach cannot hold.
    let comp = dir.join("compressed.toml");
    std::fs::write(&comp, "[runtime]\ndram_budget = \"50%\"\n").unwrap();
    refused(
        attach(&["--config", comp.to_str().unwrap(), &t.pid()]),
        &["runtime.tiers[1]", "tiermem run"],
    );
    // A node this machine does not have.
    let far = dir.join("far.toml");
    std::fs::write(
        &far,
        "[runtime]\n[[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\n[[runtime.tiers]]\nname = \"cxl\"\nkind = \"node\"\nnode = 77\n",
    )
    .unwrap();
    refused(
        attach(&["--config", far.to_str().unwrap(), &t.pid()]),
        &["runtime.tiers[1].node", "node 77 does not exist"],
    );
    // No config on a machine with one memory node: nothing to tier across.
    if tiermem_linux::numa::memory_nodes().len() == 1 {
        refused(attach(&[&t.pid()]), &["one memory node"]);
    }
    refused(attach(&["--duration=-1", &t.pid()]), &["--duration"]);
    assert!(t.alive(), "a refused attach left the process running");
    let _ = std::fs::remove_dir_all(&dir);
}

fn unsafe_not_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() != 0 }
}
