//! The control directory and socket of a running program (control.rs): a private run
//! directory that cannot be hijacked, control over a Unix socket that only the program's
//! user and root may use, stale directories removed at the next start, private modes.
//!
//! Every test works in its own directory under /tmp (TIERMEM_RUN_DIR), removed on drop,
//! and kills the programs it started on drop, so a failure leaves nothing behind.

mod common;

use common::*;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and no memory effects.
    unsafe { libc::geteuid() == 0 }
}

fn touch_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem-touch"))
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .mode()
        & 0o7777
}

fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// A scratch directory under /tmp (0700, ours), removed with everything in it on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = PathBuf::from(format!(
            "/tmp/tiermem-ctltest-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        chmod(&p, 0o700);
        Scratch(p)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Undo chowns/chmods of the test first so removal cannot fail on them.
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+rwx")
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A program under the runtime, killed (by its PID) on drop unless waited for.
struct Prog(Option<Child>);

impl Prog {
    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
    fn wait(mut self, secs: u64) -> std::process::Output {
        wait_timeout(self.0.take().unwrap(), secs, "program under tiermem")
    }
}

impl Drop for Prog {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `tiermem run` (budget unlimited) of tiermem-touch over 16 MiB, sleeping `secs` before
/// it touches its memory and exits.
fn start(run_dir: &Path, secs: u64, extra: &[&str]) -> Prog {
    let mut c = Command::new(tiermem());
    c.arg("run")
        .args(extra)
        .args(["--dram-budget", "unlimited", "--"])
        .arg(touch_bin())
        .args(["--mb", "16", "--settle-ms", &(secs * 1000).to_string()])
        .env("TIERMEM_RUN_DIR", run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Prog(Some(c.spawn().expect("starting tiermem run")))
}

fn cli(run_dir: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(tiermem());
    c.args(args).env("TIERMEM_RUN_DIR", run_dir);
    run(c, None, 30, &format!("tiermem {}", args.join(" ")))
}

/// Live stats of `pid` (`tiermem stat --json`), waiting until it has published.
fn stats(run_dir: &Path, pid: u32) -> serde_json::Value {
    let t0 = Instant::now();
    loop {
        let o = cli(run_dir, &["stat", &pid.to_string(), "--json"]);
        if o.status.success() {
            return serde_json::from_slice(&o.stdout).unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no stats from {pid}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Run `f` in a forked child with uid/gid `uid` and no supplementary groups; its return
/// value is the child's exit status. `f` must only make raw system calls (the test
/// process has other threads: no allocation after fork).
fn as_user(uid: u32, f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child only makes raw system calls (`f`'s contract) and leaves with _exit; the
    // parent only waits.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // Raw system calls: this thread only, no glibc set*id broadcast machinery.
            if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
                || libc::syscall(libc::SYS_setgid, uid) != 0
                || libc::syscall(libc::SYS_setuid, uid) != 0
            {
                libc::_exit(100);
            }
            libc::_exit(f());
        }
        let mut st = 0;
        assert_eq!(libc::waitpid(pid, &mut st, 0), pid);
        assert!(libc::WIFEXITED(st), "child died: {st:#x}");
        libc::WEXITSTATUS(st)
    }
}

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

fn sockaddr(p: &Path) -> (libc::sockaddr_un, libc::socklen_t) {
    let b = p.as_os_str().as_encoded_bytes();
    // SAFETY: sockaddr_un is plain data; all zeros is a valid value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    assert!(b.len() < a.sun_path.len());
    for (d, s) in a.sun_path.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    (a, (2 + b.len() + 1) as libc::socklen_t)
}

/// In a child as `uid`: connect to the socket, send `budget 1%`, read the answer into
/// `answer`. Exit status: 10 connect refused with EACCES, 11 other connect error,
/// 0 connected (answer read).
fn connect_as(uid: u32, sock: &Path) -> (i32, String) {
    let (addr, len) = sockaddr(sock);
    // Shared page for the answer (the child cannot return data otherwise).
    // SAFETY: a fresh shared anonymous page; checked below and unmapped at the end.
    let buf = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(buf, libc::MAP_FAILED);
    // SAFETY: raw system calls on locals and on the shared page `buf` (4096 bytes, at most 4095
    // written), in the forked child.
    let code = as_user(uid, || unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        if libc::connect(fd, &addr as *const _ as *const libc::sockaddr, len) != 0 {
            return if *libc::__errno_location() == libc::EACCES {
                10
            } else {
                11
            };
        }
        let req = b"budget 1%\n";
        libc::write(fd, req.as_ptr() as *const libc::c_void, req.len());
        let tv = libc::timeval {
            tv_sec: 15,
            tv_usec: 0,
        };
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let mut got = 0usize;
        while got < 4095 {
            let r = libc::read(
                fd,
                (buf as *mut u8).add(got) as *mut libc::c_void,
                4095 - got,
            );
            if r <= 0 {
                break;
            }
            got += r as usize;
        }
        0
    });
    // SAFETY: `buf` is the shared page, zero-filled by mmap and written by the child with a NUL
    // kept at its end.
    let answer = unsafe { std::ffi::CStr::from_ptr(buf as *const libc::c_char) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: unmaps the page mapped above; `answer` is an owned copy.
    unsafe { libc::munmap(buf, 4096) };
    (code, answer)
}

/// In a child as `uid`: try to create `file`. 0 created, 10 EACCES, 11 other error.
fn create_as(uid: u32, file: &Path) -> i32 {
    let c = cstr(file);
    // SAFETY: raw system calls on `c`, a live C string, in the forked child.
    as_user(uid, || unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o666,
        );
        if fd >= 0 {
            0
        } else if *libc::__errno_location() == libc::EACCES {
            10
        } else {
            11
        }
    })
}

/// (a) A run directory someone else could write to, one owned by someone else, or a
/// symlink is refused: `tiermem run` exits 2 naming the path, the runtime itself (started
/// without the CLI) runs without a control directory, and the symlinks planted where
/// files would go leave their targets untouched.
#[test]
fn hostile_run_directories_are_refused() {
    let s = Scratch::new("hostile");
    let victim = s.path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    chmod(&victim, 0o644);
    // A world-writable run directory (what `mkdir -m 777 /tmp/tiermem` by another user
    // gave before), with symlinks planted where the runtime wrote.
    let ww = s.path("ww");
    std::fs::create_dir(&ww).unwrap();
    chmod(&ww, 0o777);
    for name in [
        ".stats.json.tmp",
        "stats.json",
        "metrics.prom",
        "control.sock",
        "log",
        "log.1",
    ] {
        std::os::unix::fs::symlink(&victim, ww.join(name)).unwrap();
    }
    let entries = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = entries(&ww);
    // A symlink to a good directory.
    let good = s.path("good");
    std::fs::create_dir(&good).unwrap();
    chmod(&good, 0o700);
    let link = s.path("link");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let mut cases = vec![
        (ww.clone(), "writable by group or others"),
        (link.clone(), "symbolic link"),
    ];
    // Ours, but readable by everyone (what `mkdir` with umask 022 gives).
    let readable = s.path("readable");
    std::fs::create_dir(&readable).unwrap();
    chmod(&readable, 0o755);
    cases.push((readable.clone(), "accessible by group or others"));
    // A directory created by another user (needs root to make one).
    let other = s.path("other");
    if is_root() {
        std::fs::create_dir(&other).unwrap();
        chmod(&other, 0o700);
        std::os::unix::fs::chown(&other, Some(NOBODY), Some(NOBODY)).unwrap();
        cases.push((other.clone(), "owned by uid 65534"));
    } else {
        eprintln!("not root: the foreign-owner case is skipped");
    }
    for (dir, why) in &cases {
        let o = start(dir, 0, &[]).wait(30);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", dir.display());
        assert!(
            err.contains(&dir.display().to_string()) && err.contains(why),
            "{}: expected `{why}`: {err}",
            dir.display()
        );
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    // The runtime alone (LD_PRELOAD, as a program started without the CLI would be): it
    // writes nowhere, not even on the program's stderr; its final stats say why.
    let (so, _) = built();
    for (k, (dir, why)) in cases.iter().enumerate() {
        let final_stats = s.path(&format!("final-{k}.json"));
        let mut c = Command::new(touch_bin());
        c.args(["--mb", "16", "--settle-ms", "1200"])
            .env("LD_PRELOAD", so)
            .env(
                "TIERMEM_CONFIG_JSON",
                serde_json::json!({ "run_dir": dir, "dram_budget": "50%" }).to_string(),
            )
            .env("TIERMEM_RUN_DIR", dir)
            .env("TIERMEM_STATS_OUT", &final_stats);
        let o = run(c, None, 60, "tiermem-touch under the preload");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.is_empty(), "{}: written on stderr: {err}", dir.display());
        let st: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&final_stats).unwrap()).unwrap();
        let recent = st["recent_messages"].to_string();
        assert!(
            recent.contains("no control directory") && recent.contains(why),
            "{}: {st}",
            dir.display()
        );
        assert_eq!(st["log_file"], "", "{}: {st}", dir.display());
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(mode(&victim), 0o644);
    assert_eq!(
        entries(&ww),
        before,
        "something was written into {}",
        ww.display()
    );
    assert!(entries(&good).is_empty(), "written through the symlink");
    assert!(entries(&readable).is_empty() && mode(&readable) == 0o755);
    if is_root() {
        assert!(
            entries(&other).is_empty(),
            "written into a foreign directory"
        );
    }
    assert_eq!(mode(&ww), 0o777, "the refused directory was changed");
}

/// The runtime's log (RUN_DIR/log, runtime/log.rs): created 0600 by the first line, which
/// goes nowhere else (not on stderr) unless the process is the one `TIERMEM_VERBOSE` names;
/// renamed to log.1 past 1 MiB; never written through a symlink planted in its place, nor
/// into a RUN_DIR the control directory would refuse. The line: a bad config, which the
/// preload reports at its start (`/bin/true` under it, nothing else runs).
#[test]
fn the_runtime_log_is_private_rotated_and_never_followed() {
    let s = Scratch::new("log");
    let run_dir = s.path("run");
    std::fs::create_dir(&run_dir).unwrap();
    chmod(&run_dir, 0o700);
    let (so, _) = built();
    let bad_config = |dir: &Path, verbose: bool| {
        // sh execs /bin/true: its PID is the one in TIERMEM_VERBOSE.
        let script = if verbose {
            "TIERMEM_VERBOSE=$$ exec env LD_PRELOAD=\"$SO\" /bin/true"
        } else {
            "exec env LD_PRELOAD=\"$SO\" /bin/true"
        };
        let mut c = Command::new("sh");
        c.args(["-c", script])
            .env("SO", so)
            .env("TIERMEM_CONFIG_JSON", "{not json")
            .env("TIERMEM_RUN_DIR", dir);
        let o = run(c, None, 30, "/bin/true under the preload");
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let log = run_dir.join("log");
    assert_eq!(bad_config(&run_dir, false), "", "a line on stderr without --verbose");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains(" warn true tiermem[") && text.contains("bad TIERMEM_CONFIG_JSON"),
        "{text}"
    );
    assert_eq!(mode(&log), 0o600);
    // The process TIERMEM_VERBOSE names also prints it, in the old form.
    let err = bad_config(&run_dir, true);
    assert!(
        err.starts_with("tiermem[") && err.contains("]: bad TIERMEM_CONFIG_JSON") && err.lines().count() == 1,
        "{err}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.ends_with(err.split_once("]: ").unwrap().1), "{text}\n{err}");
    // Past 1 MiB: the old lines become log.1, the new one starts a new log.
    let big = "x".repeat(1 << 20) + "\n";
    std::fs::write(&log, &big).unwrap();
    assert_eq!(bad_config(&run_dir, false), "");
    assert_eq!(std::fs::read_to_string(run_dir.join("log.1")).unwrap(), big);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
    // A symlink planted as the log: refused, its target untouched, still nothing on stderr.
    let victim = s.path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    assert_eq!(bad_config(&run_dir, false), "");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(std::fs::symlink_metadata(&log).unwrap().file_type().is_symlink());
    // A hard link to another file of ours (two links): refused too.
    std::fs::remove_file(&log).unwrap();
    std::fs::hard_link(&victim, &log).unwrap();
    assert_eq!(bad_config(&run_dir, false), "");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    // A RUN_DIR readable by others (what the control directory refuses with the default
    // stats_mode): no log there.
    let readable = s.path("readable");
    std::fs::create_dir(&readable).unwrap();
    chmod(&readable, 0o755);
    assert_eq!(bad_config(&readable, false), "");
    assert!(!readable.join("log").exists());
    // A RUN_DIR that does not exist: nothing is created, nothing is printed.
    let missing = s.path("missing");
    assert_eq!(bad_config(&missing, false), "");
    assert!(!missing.exists());
}

/// The client side never follows a symlink either: a PID directory that is a symlink to
/// forged stats is refused by `tiermem stat`.
#[test]
fn stat_refuses_a_symlinked_pid_directory() {
    let s = Scratch::new("statlink");
    let run_dir = s.path("run");
    std::fs::create_dir(&run_dir).unwrap();
    chmod(&run_dir, 0o700);
    let forged = s.path("forged");
    std::fs::create_dir(&forged).unwrap();
    std::fs::write(forged.join("stats.json"), r#"{"pid": 1}"#).unwrap();
    let sleeper = Prog(Some(
        Command::new("sleep").arg("30").spawn().expect("sleep"),
    ));
    let pid = sleeper.pid();
    std::os::unix::fs::symlink(&forged, run_dir.join(pid.to_string())).unwrap();
    let o = cli(&run_dir, &["stat", &pid.to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    drop(sleeper);
}

/// (b) Another user can neither use the control socket of a root program nor write into
/// its run directory, and the program's budget stays as it was. With the socket opened
/// up by hand (mode 0666, directories 0711), the SO_PEERCRED check still refuses the
/// request and the runtime reports it.
#[test]
fn another_user_cannot_control_a_root_program() {
    if !is_root() {
        eprintln!("skipping: needs root (to run as another user)");
        return;
    }
    let s = Scratch::new("otheruser");
    // The scratch directory must be traversable for the other user to reach RUN_DIR at
    // all (as /run and /tmp are).
    chmod(&s.0, 0o711);
    let run_dir = s.path("run");
    let prog = start(&run_dir, 12, &[]);
    let pid = prog.pid();
    let before = stats(&run_dir, pid);
    assert_eq!(before["budget"], "unlimited");
    let dir = run_dir.join(pid.to_string());
    let sock = dir.join("control.sock");
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());

    let (code, answer) = connect_as(NOBODY, &sock);
    assert_eq!(
        code, 10,
        "connect as uid {NOBODY} was not refused: {answer}"
    );
    assert_eq!(create_as(NOBODY, &run_dir.join("evil")), 10);
    assert_eq!(create_as(NOBODY, &dir.join("evil")), 10);
    assert_eq!(create_as(NOBODY, &dir.join("budget")), 10);
    // The CLI as that user fails too, with exit 2.
    if Path::new("/usr/bin/setpriv").exists() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(tiermem())
            .args(["budget", &pid.to_string(), "1%"])
            .env("TIERMEM_RUN_DIR", &run_dir);
        let o = run(c, None, 30, "tiermem budget as nobody");
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // Defense in depth: the permissions opened by hand, the peer check still says no.
    chmod(&run_dir, 0o711);
    chmod(&dir, 0o711);
    chmod(&sock, 0o666);
    let (code, answer) = connect_as(NOBODY, &sock);
    assert_eq!(code, 0, "could not connect through the opened permissions");
    assert!(
        answer.starts_with("error permission denied"),
        "request of uid {NOBODY} not refused: {answer:?}"
    );
    chmod(&sock, 0o600);
    chmod(&dir, 0o700);
    chmod(&run_dir, 0o700);

    std::thread::sleep(Duration::from_millis(600));
    let after = stats(&run_dir, pid);
    assert_eq!(after["budget"], "unlimited", "budget changed: {after}");
    assert_eq!(after["budget_bytes"], before["budget_bytes"]);
    let o = prog.wait(90);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let log = log_in(&run_dir);
    assert!(
        log.contains("refused a request from uid 65534") && !err.contains("tiermem["),
        "refusal not reported in the log, or reported on stderr:\nlog: {log}\nstderr: {err}"
    );
    assert!(!dir.exists(), "{} left after exit", dir.display());
}

/// (c) and (e): the same user changes the budget over the socket and stats show it; a
/// client that connects and says nothing does not block the manager; stats files are
/// 0600, directories 0700, the socket 0600; `stats_mode = "0644"` widens the files (and
/// the directories to 0755) but not the socket.
#[test]
fn same_user_budget_over_the_socket_and_private_modes() {
    let s = Scratch::new("budget");
    let run_dir = s.path("run");
    let prog = start(&run_dir, 8, &[]);
    let pid = prog.pid();
    let st = stats(&run_dir, pid);
    assert_eq!(st["budget"], "unlimited");
    let dir = run_dir.join(pid.to_string());
    assert_eq!(mode(&run_dir), 0o700);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("stats.json")), 0o600);
    assert_eq!(mode(&dir.join("metrics.prom")), 0o600);
    assert_eq!(mode(&dir.join("control.sock")), 0o600);
    assert!(!dir.join("budget").exists());

    // A silent client holds a connection open while the real request is served.
    let silent = std::os::unix::net::UnixStream::connect(dir.join("control.sock")).unwrap();
    let t0 = Instant::now();
    let o = cli(&run_dir, &["budget", &pid.to_string(), "25%"]);
    let out = ok(&o, "tiermem budget 25%");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "budget took {:?}",
        t0.elapsed()
    );
    assert!(out.contains("unlimited -> 25.0% of footprint"), "{out}");
    drop(silent);
    let t0 = Instant::now();
    loop {
        let st = stats(&run_dir, pid);
        if st["budget"] == "25.0% of footprint" {
            assert!(st["budget_bytes"].as_u64().unwrap() <= 5 << 20, "{st}");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "stats: {st}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A bad request is answered with an error, exit 2, budget unchanged.
    let o = cli(&run_dir, &["budget", &pid.to_string(), "lots"]);
    assert_eq!(o.status.code(), Some(2));
    let o = prog.wait(60);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.exists(), "{} left after exit", dir.display());

    // stats_mode = "0644".
    let cfg = s.path("wide.toml");
    std::fs::write(&cfg, "[runtime]\nstats_mode = \"0644\"\n").unwrap();
    let run_dir2 = s.path("run2");
    let prog = start(&run_dir2, 3, &["--config", cfg.to_str().unwrap()]);
    let pid = prog.pid();
    stats(&run_dir2, pid);
    let dir = run_dir2.join(pid.to_string());
    assert_eq!(mode(&run_dir2), 0o755);
    assert_eq!(mode(&dir), 0o755);
    assert_eq!(mode(&dir.join("stats.json")), 0o644);
    assert_eq!(mode(&dir.join("metrics.prom")), 0o644);
    assert_eq!(mode(&dir.join("control.sock")), 0o600);
    let o = prog.wait(60);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A bad mode is a config error naming the field.
    std::fs::write(&cfg, "[runtime]\nstats_mode = \"0666\"\n").unwrap();
    let o = start(&run_dir2, 0, &["--config", cfg.to_str().unwrap()]).wait(30);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stats_mode"));
}

/// (d) Directories of dead programs are removed when `tiermem run` starts and when a
/// runtime creates its own; live ones, foreign names, symlinks and what they point to
/// stay.
#[test]
fn stale_directories_are_removed_at_the_next_start() {
    let s = Scratch::new("stale");
    let run_dir = s.path("run");
    std::fs::create_dir(&run_dir).unwrap();
    chmod(&run_dir, 0o700);
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .map(|t| t.trim().parse().unwrap())
        .unwrap_or(4 << 20);
    let dead = |k: u32| run_dir.join((pid_max + k).to_string());
    let mk = |d: &Path| {
        std::fs::create_dir(d).unwrap();
        chmod(d, 0o700);
        std::fs::write(d.join("stats.json"), "{}").unwrap();
        std::fs::write(d.join(".stats.json.tmp"), "{}").unwrap();
    };
    mk(&dead(1));
    let live = run_dir.join(std::process::id().to_string());
    mk(&live);
    let other = run_dir.join("notes");
    mk(&other);
    let victim = s.path("victim");
    mk(&victim);
    std::os::unix::fs::symlink(&victim, dead(2)).unwrap();
    // A numeric directory holding something a runtime never writes is not ours: kept.
    let foreign = dead(4);
    mk(&foreign);
    std::fs::write(foreign.join("thesis.tex"), "keep me").unwrap();

    let o = start(&run_dir, 0, &[]).wait(30);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dead(1).exists(), "stale directory left");
    assert!(live.join("stats.json").exists() && other.join("stats.json").exists());
    assert!(
        std::fs::symlink_metadata(dead(2)).is_ok(),
        "symlink removed"
    );
    assert!(
        victim.join("stats.json").exists(),
        "removed through a symlink"
    );
    assert!(foreign.join("thesis.tex").exists() && foreign.join("stats.json").exists());

    // The runtime alone (no CLI) cleans up too, when it creates its directory.
    mk(&dead(3));
    let (so, _) = built();
    let mut c = Command::new(touch_bin());
    c.args(["--mb", "16", "--settle-ms", "1200"])
        .env("LD_PRELOAD", so)
        .env(
            "TIERMEM_CONFIG_JSON",
            serde_json::json!({ "run_dir": run_dir }).to_string(),
        );
    let o = run(c, None, 60, "tiermem-touch under the preload");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dead(3).exists(), "stale directory left by the runtime");
    assert!(live.exists() && victim.join("stats.json").exists());
    // Its own directory went at exit: only what we made is left.
    let mut left: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want = vec![
        std::process::id().to_string(),
        "notes".to_string(),
        (pid_max + 2).to_string(),
        (pid_max + 4).to_string(),
    ];
    want.sort();
    assert_eq!(left, want);
}

/// Root can watch and steer another user's program: `tiermem stat` finds its run
/// directory in the program's environment (owned by that user), and `tiermem budget` is
/// accepted from root by the peer check.
#[test]
fn root_controls_another_users_program() {
    if !is_root() || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipping: needs root and setpriv (util-linux)");
        return;
    }
    let s = Scratch::new("rootctl");
    chmod(&s.0, 0o711);
    let home = s.path("nobody");
    std::fs::create_dir(&home).unwrap();
    chmod(&home, 0o700);
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    let run_dir = home.join("run");
    // CAP_SYS_PTRACE (ambient) lets uid 65534 use userfaultfd whatever
    // vm.unprivileged_userfaultfd says; nothing else of root's is kept.
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=+sys_ptrace",
        "--ambient-caps=+sys_ptrace",
        "--",
    ])
    .arg(tiermem())
    .args(["run", "--dram-budget", "unlimited", "--"])
    .arg(touch_bin())
    .args(["--mb", "16", "--settle-ms", "5000"])
    .env("TIERMEM_RUN_DIR", &run_dir)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let prog = Prog(Some(c.spawn().expect("setpriv")));
    let pid = prog.pid().to_string();
    // Root's own TIERMEM_RUN_DIR points elsewhere: the program's environment wins.
    let elsewhere = s.path("elsewhere");
    let t0 = Instant::now();
    let st: serde_json::Value = loop {
        let o = cli(&elsewhere, &["stat", &pid, "--json"]);
        if o.status.success() {
            break serde_json::from_slice(&o.stdout).unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "root cannot stat uid {NOBODY}'s program: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(st["budget"], "unlimited");
    let dir = run_dir.join(&pid);
    assert_eq!(std::fs::metadata(&dir).unwrap().uid(), NOBODY);
    let o = cli(&elsewhere, &["budget", &pid, "25%"]);
    let out = ok(&o, "root: tiermem budget 25%");
    assert!(out.contains("-> 25.0% of footprint"), "{out}");
    let o = prog.wait(60);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.exists());
    assert!(!elsewhere.exists(), "the CLI created its own run directory");
}
