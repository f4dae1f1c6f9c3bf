//! Unprivileged users (issue 50 item 2): `tiermem run` as uid 65534 with access to
//! /dev/userfaultfd and nothing else (no capability, `vm.unprivileged_userfaultfd` as it
//! is, the userfaultfd system call refused by a seccomp filter as container profiles do):
//! kernel-mode accesses to evicted buffers (write(2)/read(2) through a pipe, send(2)/recv(2)
//! through a TCP socket) give the plain run's output. Without either way a userfaultfd,
//! `tiermem run` is one line naming both fixes, and a preloaded program runs untiered.
//!
//! The access is given without touching the real /dev/userfaultfd: each run is in a
//! private mount namespace (`unshare --mount`) in which a node of the same device (10:257),
//! owned by 65534 and mode 0600, is bind-mounted over /dev/userfaultfd; the namespace and
//! its mount end with the run, whatever happens to the test. Needs root (skipped otherwise).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const NOBODY: &str = "65534";

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// Why these tests cannot run here, if they cannot.
fn cannot() -> Option<&'static str> {
    if !is_root() {
        return Some("needs root (to become uid 65534 in a mount namespace of its own)");
    }
    if !Path::new("/dev/userfaultfd").exists() {
        return Some("this kernel has no /dev/userfaultfd (Linux 6.1+)");
    }
    for p in ["/usr/bin/unshare", "/usr/bin/setpriv"] {
        if !Path::new(p).exists() {
            return Some("unshare/setpriv (util-linux) not installed");
        }
    }
    None
}

// C programs come from `common::c_bin` (target/release: readable and executable by everyone).
fn kernel_io() -> &'static PathBuf {
    static B: OnceLock<PathBuf> = OnceLock::new();
    B.get_or_init(|| c_bin("kernel_io"))
}

fn no_uffd_seccomp() -> &'static PathBuf {
    static B: OnceLock<PathBuf> = OnceLock::new();
    B.get_or_init(|| c_bin("no_uffd_seccomp"))
}

/// A directory of the test's (0755), with `run/` owned by 65534 (0700) for RUN_DIR.
struct Dir(PathBuf);

impl Dir {
    fn new(what: &str) -> Dir {
        let d = std::env::temp_dir().join(format!(
            "tiermem-unpriv-{what}-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(d.join("run")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(d.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(d.join("run"), Some(65534), Some(65534)).unwrap();
        Dir(d)
    }
    fn run_dir(&self) -> PathBuf {
        self.0.join("run")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `argv` as uid/gid 65534 with no groups and no capabilities, under the seccomp filter
/// that refuses userfaultfd(2), in a mount namespace of its own where /dev/userfaultfd is
/// open to 65534 when `device` (a node of ours bind-mounted over it) and is the real,
/// root-only one otherwise.
fn as_nobody(dir: &Dir, device: bool, env: &[(&str, String)], argv: &[&str]) -> Command {
    let node = dir.0.join("userfaultfd");
    let mut script = String::from("set -e\n");
    if device {
        script += &format!(
            "mknod -m 600 '{n}' c 10 257\nchown {NOBODY} '{n}'\nmount --bind '{n}' /dev/userfaultfd\n",
            n = node.display()
        );
    }
    script += &format!(
        "exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups --inh-caps=-all '{}' \"$@\"\n",
        no_uffd_seccomp().display()
    );
    // The environment is the program's alone (the wrapper puts it there): a preload in
    // unshare's, sh's or setpriv's would start runtimes in them too.
    let mut c = Command::new("/usr/bin/unshare");
    c.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
        "sh",
    ])
    .arg(format!("TIERMEM_RUN_DIR={}", dir.run_dir().display()));
    for (k, v) in env {
        c.arg(format!("{k}={v}"));
    }
    c.args(argv);
    c
}

fn plain_kernel_io() -> Output {
    let out = run(
        plain(&[kernel_io().to_str().unwrap()]),
        None,
        60,
        "kernel_io plain",
    );
    assert!(out.status.success(), "{out:?}");
    out
}

/// "not resident when handed to the kernel (pages): write W read R send S recv V".
fn not_resident(stderr: &str) -> Vec<u64> {
    let l = stderr
        .lines()
        .find(|l| l.starts_with("not resident when handed to the kernel"))
        .unwrap_or_else(|| panic!("no residency line: {stderr}"));
    l.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn nobody_with_dev_userfaultfd_only_gets_kernel_io_into_evicted_buffers_right() {
    if let Some(why) = cannot() {
        eprintln!("skipping: {why}");
        return;
    }
    let plain = plain_kernel_io();
    let dir = Dir::new("dev");
    let stats = dir.run_dir().join("stats.json");
    let bin = tiermem().to_str().unwrap().to_string();
    let cmd = as_nobody(
        &dir,
        true,
        &[("TIERMEM_STATS_OUT", stats.display().to_string())],
        &[
            &bin,
            "run",
            "--dram-budget",
            "8M",
            "--",
            kernel_io().to_str().unwrap(),
        ],
    );
    let out = run(
        cmd,
        None,
        120,
        "kernel_io as 65534 through /dev/userfaultfd",
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "output differs from the plain run; stderr: {err}"
    );
    // The kernel was handed evicted pages: 6 144 per kind of call (24 MiB each way).
    let nr = not_resident(&err);
    assert_eq!(nr.len(), 4, "{err}");
    for (kind, n) in ["write", "read", "send", "recv"].iter().zip(&nr) {
        assert!(
            *n > 1536,
            "{kind}: only {n} of 6144 pages were evicted when handed to the kernel: {err}"
        );
    }
    assert_eq!(
        not_resident(&String::from_utf8_lossy(&plain.stderr)),
        vec![0, 0, 0, 0]
    );
    // The runtime ran as 65534 (the syscall refused by the filter: the device served it).
    let log = log_in(&dir.run_dir());
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&stats)
            .unwrap_or_else(|e| panic!("no final stats: {e}; log: {log}")),
    )
    .unwrap();
    assert!(tier_faults(&s) > 10_000, "{s}");
    let problems = runtime_problems(&log);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn without_dev_userfaultfd_and_the_system_call_tiermem_run_is_one_line_naming_both_fixes() {
    if let Some(why) = cannot() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir = Dir::new("none");
    let marker = dir.0.join("started");
    let bin = tiermem().to_str().unwrap().to_string();
    let cmd = as_nobody(
        &dir,
        false,
        &[],
        &[&bin, "run", "--", "touch", marker.to_str().unwrap()],
    );
    let out = run(cmd, None, 30, "tiermem run as 65534 without userfaultfd");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for fix in [
        "/dev/userfaultfd is not open to this user",
        "a group and a udev rule",
        "sudo sysctl -w vm.unprivileged_userfaultfd=1",
        "seccomp",
    ] {
        assert!(err.contains(fix), "`{fix}` missing: {err}");
    }
    assert!(!marker.exists(), "the program ran");
}

#[test]
fn under_a_seccomp_filter_a_preloaded_program_runs_untiered_with_one_line() {
    if let Some(why) = cannot() {
        eprintln!("skipping: {why}");
        return;
    }
    let plain = plain_kernel_io();
    let dir = Dir::new("seccomp");
    let stats = dir.run_dir().join("stats.json");
    // As a managed program's child inherits it: the preload in its environment, started
    // under a sandbox's filter, by a user without /dev/userfaultfd.
    let cmd = as_nobody(
        &dir,
        false,
        &[
            ("LD_PRELOAD", built().0.display().to_string()),
            ("TIERMEM_STATS_OUT", stats.display().to_string()),
        ],
        &[kernel_io().to_str().unwrap()],
    );
    let out = run(cmd, None, 60, "kernel_io preloaded under seccomp");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, plain.stdout, "{err}");
    // Untiered, not half-managed: no runtime (no final stats), nothing of tiermem's on its
    // stderr, one line in the log saying why and what to do.
    assert!(
        !stats.exists(),
        "a runtime started: {:?}",
        std::fs::read_to_string(&stats)
    );
    assert!(!err.contains("tiermem["), "{err}");
    assert_eq!(not_resident(&err), vec![0, 0, 0, 0]);
    let log = log_in(&dir.run_dir());
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains(" warn ")
            && lines[0].contains("not managing memory: userfaultfd is not permitted")
            && lines[0].contains("/dev/userfaultfd")
            && lines[0].contains("vm.unprivileged_userfaultfd"),
        "{log}"
    );
}
