//! CPU shares of `tiermem qos`'s tenants through cgroups: v1's `cpu.cfs_quota_us` where the
//! cpu controller is mounted on its own hierarchy (this machine), v2's `cpu.max` where it
//! is in the unified one. One directory per run, `tiermem-qos.PID`, with one child per
//! tenant; removed at exit (its tasks moved back to the root first), also after a failure,
//! and a dead run's leftovers are removed by the next run. The cgroup filesystem is the
//! kernel's (no symlinks, root-owned): nothing here can be redirected by another user.

use std::path::{Path, PathBuf};

/// The CFS period every quota is a fraction of (the kernel's default, 100 ms).
const PERIOD_US: u64 = 100_000;
/// The smallest quota the kernel accepts (1 ms).
const MIN_QUOTA_US: u64 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Version {
    V1,
    V2,
}

/// This run's cgroups: `base/tiermem-qos.PID/tN` per tenant.
pub struct CpuCgroups {
    version: Version,
    /// The hierarchy's root (`/sys/fs/cgroup/cpu` or `/sys/fs/cgroup`).
    base: PathBuf,
    /// `base/tiermem-qos.PID`.
    dir: PathBuf,
    tenants: Vec<PathBuf>,
    /// v2: this run enabled the cpu controller in the root's `cgroup.subtree_control`
    /// (undone at exit).
    enabled_at_base: bool,
}

const PREFIX: &str = "tiermem-qos.";

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: writing `{text}`: {e}", path.display()))
}

/// Where the cpu controller is: v1's own hierarchy, else v2's unified one.
fn find() -> Option<(Version, PathBuf)> {
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu");
    if v1.join("cpu.cfs_quota_us").is_file() || v1.join("tasks").is_file() {
        return Some((Version::V1, v1));
    }
    let v2 = PathBuf::from("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "cpu")
        .then_some((Version::V2, v2))
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Move every task of `dir` to `to` (its `cgroup.procs`), then remove `dir`.
fn drain_and_remove(dir: &Path, to: &Path) -> Result<(), String> {
    if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        for pid in procs.split_whitespace() {
            // A process that exits meanwhile is gone from the cgroup anyway.
            let _ = std::fs::write(to.join("cgroup.procs"), pid);
        }
    }
    std::fs::remove_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Remove a run's directory: each tenant's child, then the run's own.
fn remove_run(base: &Path, dir: &Path) -> Result<(), String> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                drain_and_remove(&e.path(), base)?;
            }
        }
    }
    drain_and_remove(dir, base)
}

impl CpuCgroups {
    /// Create this run's cgroups, one per tenant (named in `tenants` for messages). A
    /// dead run's directory is removed first. Errors say what to do (run as root, or set
    /// `qos.cpu_limits = false`).
    pub fn create(tenants: &[String]) -> Result<CpuCgroups, String> {
        const FIX: &str = "CPU shares need the cpu cgroup controller and the right to create cgroups: run as root (or in a delegated cgroup), or set `qos.cpu_limits = false` to run without CPU throttling";
        let (version, base) = find().ok_or_else(|| {
            format!("no cpu cgroup controller is mounted (neither /sys/fs/cgroup/cpu nor cpu in /sys/fs/cgroup/cgroup.controllers); {FIX}")
        })?;
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name
                    .strip_prefix(PREFIX)
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                if !pid_alive(pid) {
                    if let Err(err) = remove_run(&base, &e.path()) {
                        eprintln!("tiermem qos: could not remove a dead run's cgroup: {err}");
                    }
                }
            }
        }
        let dir = base.join(format!("{PREFIX}{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}; {FIX}", dir.display()))?;
        let mut cg = CpuCgroups {
            version,
            base,
            dir,
            tenants: Vec::new(),
            enabled_at_base: false,
        };
        if version == Version::V2 {
            // Children get the cpu controller from their parents' subtree_control.
            let at_base = cg.base.join("cgroup.subtree_control");
            let had = std::fs::read_to_string(&at_base)
                .is_ok_and(|t| t.split_whitespace().any(|c| c == "cpu"));
            if !had {
                write(&at_base, "+cpu").map_err(|e| format!("{e}; {FIX}"))?;
                cg.enabled_at_base = true;
            }
            write(&cg.dir.join("cgroup.subtree_control"), "+cpu")
                .map_err(|e| format!("{e}; {FIX}"))?;
        }
        for i in 0..tenants.len() {
            let d = cg.dir.join(format!("t{i}"));
            std::fs::create_dir(&d).map_err(|e| format!("{}: {e}; {FIX}", d.display()))?;
            cg.tenants.push(d);
        }
        Ok(cg)
    }

    /// `cgroup.procs` of tenant `i`: the child writes its own PID there before exec.
    pub fn procs_file(&self, i: usize) -> PathBuf {
        self.tenants[i].join("cgroup.procs")
    }

    /// Limit tenant `i` to `share` of `cores` cores (share 1: all of them).
    pub fn set_share(&self, i: usize, share: f64, cores: f64) -> Result<(), String> {
        let quota = ((share * cores * PERIOD_US as f64).round() as u64).max(MIN_QUOTA_US);
        let d = &self.tenants[i];
        match self.version {
            Version::V1 => {
                write(&d.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                write(&d.join("cpu.cfs_quota_us"), &quota.to_string())
            }
            Version::V2 => write(&d.join("cpu.max"), &format!("{quota} {PERIOD_US}")),
        }
    }

    /// Times tenant `i` was throttled and for how long (`cpu.stat`), for the report.
    pub fn throttled(&self, i: usize) -> (u64, f64) {
        let text = std::fs::read_to_string(self.tenants[i].join("cpu.stat")).unwrap_or_default();
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        match self.version {
            Version::V1 => (
                field("nr_throttled "),
                field("throttled_time ") as f64 / 1e9,
            ),
            Version::V2 => (
                field("nr_throttled "),
                field("throttled_usec ") as f64 / 1e6,
            ),
        }
    }

    /// The run's directory (for messages and tests).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for CpuCgroups {
    fn drop(&mut self) {
        if let Err(e) = remove_run(&self.base, &self.dir) {
            eprintln!("tiermem qos: could not remove its cgroup: {e}");
        }
        if self.enabled_at_base {
            let _ = std::fs::write(self.base.join("cgroup.subtree_control"), "-cpu");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn can_create() -> bool {
        // SAFETY: geteuid has no arguments and no memory effects.
        let root = unsafe { libc::geteuid() == 0 };
        root && find().is_some()
    }

    #[test]
    fn shares_are_written_and_everything_is_removed_with_a_dead_runs_leftovers() {
        if !can_create() {
            eprintln!("skipping: needs root and a cpu cgroup controller");
            return;
        }
        let (version, base) = find().unwrap();
        // A dead run's leftovers: PID 2^22 + 1 is above pid_max's ceiling, never alive.
        let dead = base.join(format!("{PREFIX}{}", (1u32 << 22) + 1));
        std::fs::create_dir_all(dead.join("t0")).unwrap();
        let names = vec!["a".to_string(), "b".to_string()];
        let cg = CpuCgroups::create(&names).unwrap();
        assert!(!dead.exists(), "a dead run's cgroup is removed");
        let dir = cg.dir().to_path_buf();
        cg.set_share(0, 0.25, 2.0).unwrap();
        cg.set_share(1, 0.0, 1.0).unwrap();
        let read = |i: usize, f: &str| {
            std::fs::read_to_string(dir.join(format!("t{i}")).join(f))
                .unwrap()
                .trim()
                .to_string()
        };
        match version {
            Version::V1 => {
                assert_eq!(read(0, "cpu.cfs_quota_us"), "50000"); // 0.25 of 2 cores
                assert_eq!(read(1, "cpu.cfs_quota_us"), "1000"); // the kernel's minimum
                assert_eq!(read(0, "cpu.cfs_period_us"), "100000");
            }
            Version::V2 => assert_eq!(read(0, "cpu.max"), "50000 100000"),
        }
        // A process in a tenant's cgroup is moved back to the root when the run ends.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(cg.procs_file(1), sleeper.id().to_string()).unwrap();
        drop(cg);
        assert!(!dir.exists(), "the run's cgroup is removed");
        let procs = std::fs::read_to_string(base.join("cgroup.procs")).unwrap();
        assert!(procs
            .split_whitespace()
            .any(|p| p == sleeper.id().to_string()));
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
}
