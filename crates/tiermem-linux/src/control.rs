//! The control directory of a running program, and its control socket.
//!
//! ```text
//!   RUN_DIR/            0700, owned by the user running the program
//!     log, log.1        0600, the runtime's lines of all the user's programs (runtime/log.rs;
//!                       appended, `log` renamed to `log.1` past 1 MiB)
//!     PID/              0700, one per program (removed at its exit, or by the next start)
//!       stats.json      0600 (`stats_mode`), published every 250 ms
//!       metrics.prom    0600 (`stats_mode`), Prometheus text
//!       control.sock    0600, SOCK_STREAM: one request line, one answer line
//! ```
//!
//! RUN_DIR is private to one user (see [`private_run_dir`]): `$TIERMEM_RUN_DIR` if set, else
//! `$XDG_RUNTIME_DIR/tiermem` when that is a 0700 directory of ours, else `/run/tiermem`
//! for root, `/tmp/tiermem-UID` for others. A directory that exists already is used only
//! when it is a real directory (not a symlink), owned by our effective uid and writable by
//! nobody else; otherwise it is refused with one line naming the path and the reason,
//! and the runtime runs without a control directory (it never writes anywhere else;
//! `tiermem run` exits 2). Every file is opened relative to the verified directory's fd
//! with `O_NOFOLLOW | O_CLOEXEC`, created fresh (`O_EXCL`) and renamed into place, so a
//! symlink planted anywhere cannot redirect a write.
//!
//! Control goes through `control.sock`, served without a thread of its own by the
//! manager thread (non-blocking accept once per quantum, at most 200 ms per client). The
//! peer's credentials (SO_PEERCRED) must be our uid or root. Protocol, one line each way:
//!
//! ```text
//!   budget 25%      -> ok budget 25.0% of footprint (16777216 bytes); was unlimited
//!   budget 2G | unlimited
//!   stats           -> {"pid":..., ...}            (the stats JSON on one line)
//!   ping            -> ok tiermem PID
//!   anything else   -> error ...
//! ```
//!
//! Directories of dead programs (numeric names whose PID no longer exists, owned by us)
//! are removed when `tiermem run` starts and when a runtime creates its own directory.

use crate::config::Budget;
use crate::stats::Stats;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Name of the control socket inside RUN_DIR/PID/.
pub const SOCKET: &str = "control.sock";
/// Longest request line the runtime accepts.
const MAX_REQUEST: usize = 256;
/// Time a client gets to send its line and read the answer (the manager waits no longer).
const CLIENT_MS: i32 = 200;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_err(e: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(e)
}

fn cpath(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

fn cname(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

pub fn euid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

fn fstat(fd: RawFd) -> Option<libc::stat> {
    // SAFETY: a plain C struct, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is an open fd and `st` a valid out-pointer.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st)
}

fn lstat_at(dir: RawFd, name: &CStr) -> Option<libc::stat> {
    // SAFETY: a plain C struct, for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open fd, `name` a NUL-terminated string, `st` a valid out-pointer; no symlink is followed.
    (unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0)
        .then_some(st)
}

fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// `stats_mode`: an octal string ("0600", "0640", "0644"); owner read+write, and at most
/// read for group and others.
pub fn parse_stats_mode(text: &str) -> Result<u32, String> {
    let t = text.trim();
    let t = t.strip_prefix("0o").unwrap_or(t);
    let m = u32::from_str_radix(t, 8)
        .map_err(|_| format!("`{text}` is not an octal file mode such as \"0600\""))?;
    if m & !0o644 != 0 || m & 0o600 != 0o600 {
        return Err(format!(
            "`{text}`: give 0600, 0640, 0604 or 0644 (owner read-write, at most read for group and others)"
        ));
    }
    Ok(m)
}

/// Mode of the directories for a stats file mode: 0700, plus r-x for the classes that may
/// read the stats files (a textfile collector running as another user must get to them).
pub fn dir_mode(stats_mode: u32) -> u32 {
    let mut m = 0o700;
    if stats_mode & 0o040 != 0 {
        m |= 0o050;
    }
    if stats_mode & 0o004 != 0 {
        m |= 0o005;
    }
    m
}

/// The default RUN_DIR for a user (without `$TIERMEM_RUN_DIR`): `$XDG_RUNTIME_DIR/tiermem`
/// when `xdg` is a directory owned by `uid` with no group/other permissions, else
/// `/run/tiermem` for root (when /run exists), else `/tmp/tiermem-UID`.
pub fn choose_run_dir(xdg: Option<&std::ffi::OsStr>, uid: u32) -> PathBuf {
    if let Some(x) = xdg.filter(|x| !x.is_empty()) {
        let p = Path::new(x);
        if p.is_absolute() {
            if let Ok(c) = cpath(p) {
                // SAFETY: a plain C struct, for which all-zero bytes are a valid value.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
                if unsafe { libc::stat(c.as_ptr(), &mut st) } == 0
                    && is_dir(&st)
                    && st.st_uid == uid
                    && st.st_mode & 0o077 == 0
                {
                    return p.join("tiermem");
                }
            }
        }
    }
    if uid == 0 && Path::new("/run").is_dir() {
        return PathBuf::from("/run/tiermem");
    }
    PathBuf::from(format!("/tmp/tiermem-{uid}"))
}

/// [`choose_run_dir`] for this process.
pub fn private_run_dir() -> String {
    choose_run_dir(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), euid())
        .display()
        .to_string()
}

/// Check an open directory: a directory, owned by one of `owners`, writable by nobody
/// else. With `want` (the mode we create it with), group/other bits beyond `want` are
/// refused too, and missing ones added (`stats_mode` widening an existing directory).
fn check_dir(fd: RawFd, path: &Path, owners: &[u32], want: Option<u32>) -> Result<(), String> {
    let st = fstat(fd).ok_or_else(|| format!("{}: fstat: {}", path.display(), os_err(errno())))?;
    let mode = st.st_mode & 0o7777;
    if !is_dir(&st) {
        return Err(format!("{}: refused: not a directory", path.display()));
    }
    if !owners.contains(&st.st_uid) {
        return Err(format!(
            "{}: refused: owned by uid {}, not by uid {} (someone else created it; remove it)",
            path.display(),
            st.st_uid,
            owners[0]
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "{}: refused: writable by group or others (mode {mode:04o}); remove it or `chmod 700` it",
            path.display()
        ));
    }
    if let Some(w) = want {
        if mode & 0o077 & !w != 0 {
            return Err(format!(
                "{}: refused: accessible by group or others (mode {mode:04o}, want {w:04o}); remove it or `chmod {w:o}` it",
                path.display()
            ));
        }
        // Add what `stats_mode` asks for (or owner bits that are missing).
        // SAFETY: `fd` is an open fd of ours.
        if mode != w && unsafe { libc::fchmod(fd, w) } != 0 {
            return Err(format!(
                "{}: chmod {w:04o}: {}",
                path.display(),
                os_err(errno())
            ));
        }
    }
    Ok(())
}

fn open_dir_flags() -> i32 {
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
}

/// Why `name` (relative to `at`) could not be opened as a directory.
fn describe_open_error(at: RawFd, name: &CStr, path: &Path, e: i32) -> String {
    let link = lstat_at(at, name).is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
    match e {
        _ if link => format!("{}: refused: it is a symbolic link", path.display()),
        libc::ELOOP => format!("{}: refused: it is a symbolic link", path.display()),
        libc::ENOTDIR => format!("{}: refused: not a directory", path.display()),
        _ => format!("{}: {}", path.display(), os_err(e)),
    }
}

/// Open directory `name` relative to `at` (AT_FDCWD for a path), creating it with `mode`
/// first when `create`, and verify it ([`check_dir`]).
fn open_private(
    at: RawFd,
    name: &CStr,
    path: &Path,
    owners: &[u32],
    create: Option<u32>,
) -> Result<OwnedFd, String> {
    if let Some(mode) = create {
        // SAFETY: `at` is an open directory fd and `name` a NUL-terminated string.
        if unsafe { libc::mkdirat(at, name.as_ptr(), mode as libc::mode_t) } != 0
            && errno() != libc::EEXIST
        {
            return Err(format!("{}: mkdir: {}", path.display(), os_err(errno())));
        }
    }
    // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe { libc::openat(at, name.as_ptr(), open_dir_flags()) };
    if fd < 0 {
        return Err(describe_open_error(at, name, path, errno()));
    }
    // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    check_dir(fd.as_raw_fd(), path, owners, create)?;
    Ok(fd)
}

/// Names in a directory (without . and ..).
fn list(dir: RawFd) -> Vec<CString> {
    let mut out = Vec::new();
    // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe { libc::openat(dir, c".".as_ptr(), open_dir_flags()) };
    if fd < 0 {
        return out;
    }
    // SAFETY: `fd` is an open directory fd of ours; on success the DIR stream owns it.
    let d = unsafe { libc::fdopendir(fd) };
    if d.is_null() {
        // SAFETY: `fd` is ours and not used after this.
        unsafe { libc::close(fd) };
        return out;
    }
    loop {
        // SAFETY: `d` is the live DIR stream opened above; the entry is read before the next call.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: `e` is a non-null entry from readdir; d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        if name != c"." && name != c".." {
            out.push(name.to_owned());
        }
    }
    // SAFETY: `d` is the DIR stream opened above, closed once.
    unsafe { libc::closedir(d) };
    out
}

/// Remove directory `name` of `parent` and what it holds (one level: our PID directories
/// hold files and a socket only). Never follows a symlink: everything is unlinkat'ed
/// relative to directory fds opened with O_NOFOLLOW.
fn remove_pid_dir(parent: RawFd, name: &CStr, uid: u32) -> bool {
    // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe { libc::openat(parent, name.as_ptr(), open_dir_flags()) };
    if fd < 0 {
        return false;
    }
    // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    match fstat(fd.as_raw_fd()) {
        Some(st) if is_dir(&st) && st.st_uid == uid => {}
        _ => return false,
    }
    // A file the manager thread was writing as we listed may appear after the listing
    // (once the directory is gone, nothing can be created in it): list again.
    for _ in 0..100 {
        for n in list(fd.as_raw_fd()) {
            // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
            if unsafe { libc::unlinkat(fd.as_raw_fd(), n.as_ptr(), 0) } != 0 {
                // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
                unsafe { libc::unlinkat(fd.as_raw_fd(), n.as_ptr(), libc::AT_REMOVEDIR) };
            }
        }
        // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
        if unsafe { libc::unlinkat(parent, name.as_ptr(), libc::AT_REMOVEDIR) } == 0 {
            return true;
        }
        if errno() != libc::ENOTEMPTY {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// Set when this process removes its own directory (at exit): the manager thread then
/// publishes nothing more.
static CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once this process has begun removing its own directory at exit.
pub fn closed() -> bool {
    CLOSED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Names a runtime (or `tiermem qos`: `qos.json`) creates in RUN_DIR/PID (and `budget`,
/// of older versions).
const OURS: [&str; 8] = [
    "stats.json",
    "metrics.prom",
    SOCKET,
    ".stats.json.tmp",
    ".metrics.prom.tmp",
    "budget",
    QOS_FILE,
    ".qos.json.tmp",
];

/// `tiermem qos`'s live status in its own RUN_DIR/PID (read by `tiermem stat QOS_PID`).
pub const QOS_FILE: &str = "qos.json";

/// True when directory `name` of `run` holds nothing but what a runtime creates: a
/// RUN_DIR pointed at a directory with other numeric subdirectories never loses data.
fn only_ours(run: RawFd, name: &CStr) -> bool {
    // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe { libc::openat(run, name.as_ptr(), open_dir_flags()) };
    if fd < 0 {
        return false;
    }
    // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    list(fd.as_raw_fd())
        .iter()
        .all(|n| n.to_str().is_ok_and(|n| OURS.contains(&n)))
}

fn pid_dead(pid: u32) -> bool {
    pid > 0
        && pid <= i32::MAX as u32
        // SAFETY: signal 0 sends nothing: it only asks whether the process exists.
        && unsafe { libc::kill(pid as i32, 0) } != 0
        && errno() == libc::ESRCH
}

/// Remove the directories of dead programs from an open RUN_DIR: numeric names of
/// directories owned by us whose PID does not exist. Returns how many were removed.
fn remove_stale_in(run: RawFd) -> usize {
    let uid = euid();
    let mut n = 0;
    for name in list(run) {
        let Ok(s) = name.to_str() else { continue };
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 10 {
            continue;
        }
        let Ok(pid) = s.parse::<u32>() else { continue };
        match lstat_at(run, &name) {
            Some(st) if is_dir(&st) && st.st_uid == uid => {}
            _ => continue,
        }
        if pid_dead(pid) && only_ours(run, &name) && remove_pid_dir(run, &name, uid) {
            n += 1;
        }
    }
    n
}

/// For `tiermem run`, before it execs the program: create RUN_DIR (0700) or verify it,
/// and remove the directories of dead programs. An error is one line naming the path.
pub fn prepare_run_dir(run_dir: &str, stats_mode: &str) -> Result<usize, String> {
    let mode = dir_mode(parse_stats_mode(stats_mode)?);
    let path = Path::new(run_dir);
    let run = open_private(libc::AT_FDCWD, &cpath(path)?, path, &[euid()], Some(mode))?;
    Ok(remove_stale_in(run.as_raw_fd()))
}

/// The runtime's log in RUN_DIR (runtime/log.rs), and its one older generation.
pub const LOG_FILE: &str = "log";
pub const LOG_FILE_OLD: &str = "log.1";
/// Size past which the log is renamed to `log.1` (and a new one started).
pub const LOG_MAX_BYTES: u64 = 1 << 20;

/// Why a line could not be appended to the log.
pub enum LogError {
    /// RUN_DIR does not exist (yet): keep the line for later.
    NotYet,
    /// RUN_DIR or the log is not safe to write (see [`append_log`]): write nowhere.
    Refused,
}

/// RUN_DIR/log, opened for one append: created 0600, never through a symlink
/// (`O_NOFOLLOW`, relative to the verified directory fd); it must be a regular file of ours
/// with one link, writable by nobody else.
fn open_log(run: RawFd) -> Result<(OwnedFd, libc::stat), LogError> {
    let name = cname(LOG_FILE);
    // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe {
        libc::openat(
            run,
            name.as_ptr(),
            libc::O_WRONLY
                | libc::O_APPEND
                | libc::O_CREAT
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | libc::O_NONBLOCK,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(LogError::Refused);
    }
    // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    match fstat(fd.as_raw_fd()) {
        Some(st)
            if st.st_mode & libc::S_IFMT == libc::S_IFREG
                && st.st_uid == euid()
                && st.st_nlink == 1
                && st.st_mode & 0o022 == 0 =>
        {
            Ok((fd, st))
        }
        _ => Err(LogError::Refused),
    }
}

/// Append `data` to RUN_DIR/log in one `write` (runtime/log.rs; `O_APPEND`, so lines of
/// several processes never mix). RUN_DIR is checked as for the control directory (a real
/// directory owned by us, writable by nobody else, no group/other bits beyond `dir_mode`)
/// but never created nor changed here. A log that would grow past [`LOG_MAX_BYTES`] is
/// renamed to `log.1` first, under `flock` and only while the name still is that file, so
/// processes rotating at once lose nothing.
pub fn append_log(run_dir: &str, dir_mode: u32, data: &[u8]) -> Result<(), LogError> {
    let path = Path::new(run_dir);
    let c = cpath(path).map_err(|_| LogError::Refused)?;
    // SAFETY: `c` is a NUL-terminated path; O_NOFOLLOW: a symlink is refused.
    let fd = unsafe { libc::open(c.as_ptr(), open_dir_flags()) };
    if fd < 0 {
        return Err(match errno() {
            libc::ENOENT => LogError::NotYet,
            _ => LogError::Refused,
        });
    }
    // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
    let run = unsafe { OwnedFd::from_raw_fd(fd) };
    check_dir(run.as_raw_fd(), path, &[euid()], None).map_err(|_| LogError::Refused)?;
    if fstat(run.as_raw_fd()).is_none_or(|st| st.st_mode & 0o077 & !dir_mode != 0) {
        return Err(LogError::Refused);
    }
    let (mut f, st) = open_log(run.as_raw_fd())?;
    if st.st_size > 0 && st.st_size as u64 + data.len() as u64 > LOG_MAX_BYTES {
        // SAFETY: an fd of ours; the lock is released when it closes.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        let (log, old) = (cname(LOG_FILE), cname(LOG_FILE_OLD));
        let same = |n: libc::stat| (n.st_dev, n.st_ino) == (st.st_dev, st.st_ino);
        if lstat_at(run.as_raw_fd(), &log).is_some_and(same) {
            // SAFETY: one open directory fd and two NUL-terminated names: a rename inside it.
            unsafe { libc::renameat(run.as_raw_fd(), log.as_ptr(), run.as_raw_fd(), old.as_ptr()) };
        }
        drop(f);
        f = open_log(run.as_raw_fd())?.0;
    }
    let mut rest = data;
    while !rest.is_empty() {
        // SAFETY: `rest` is valid for reads of `rest.len()` bytes and `f` is an open file of ours.
        let r = unsafe {
            libc::write(
                f.as_raw_fd(),
                rest.as_ptr() as *const libc::c_void,
                rest.len(),
            )
        };
        if r > 0 {
            rest = &rest[r as usize..];
        } else if !(r < 0 && errno() == libc::EINTR) {
            // Nothing written (a full disk): keep the lines for later; else drop the rest.
            return if rest.len() == data.len() {
                Err(LogError::NotYet)
            } else {
                Ok(())
            };
        }
    }
    Ok(())
}

/// (device, inode) of an fd, to notice that a program closed it and reused the number.
fn identity(fd: RawFd) -> Option<(u64, u64)> {
    fstat(fd).map(|s| (s.st_dev, s.st_ino))
}

/// Wait for `ev` on `fd` until `deadline` (CLOCK_MONOTONIC ns). False on timeout.
fn wait_fd(fd: RawFd, ev: i16, deadline: u64) -> bool {
    loop {
        let now = crate::sys::now_ns();
        if now >= deadline {
            return false;
        }
        let ms = ((deadline - now) / 1_000_000).clamp(1, i32::MAX as u64) as i32;
        let mut p = libc::pollfd {
            fd,
            events: ev,
            revents: 0,
        };
        // SAFETY: `p` is one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r > 0 {
            return true;
        }
        if r < 0 && errno() != libc::EINTR {
            return false;
        }
    }
}

/// Read one line (without its newline) from a non-blocking socket before `deadline`.
/// Err on a timeout, a read error or a line longer than `max`.
fn read_line(fd: RawFd, max: usize, deadline: u64) -> Result<String, String> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            buf.truncate(i);
            break;
        }
        if buf.len() > max {
            return Err(format!("line longer than {max} bytes"));
        }
        // SAFETY: the buffer is valid for writes of `chunk.len()` bytes.
        let r = unsafe { libc::read(fd, chunk.as_mut_ptr() as *mut libc::c_void, chunk.len()) };
        if r > 0 {
            buf.extend_from_slice(&chunk[..r as usize]);
        } else if r == 0 {
            if buf.is_empty() {
                return Err("connection closed without a line".into());
            }
            break;
        } else if errno() == libc::EAGAIN || errno() == libc::EINTR {
            if !wait_fd(fd, libc::POLLIN, deadline) {
                return Err("timed out".into());
            }
        } else {
            return Err(os_err(errno()).to_string());
        }
    }
    String::from_utf8(buf).map_err(|_| "not UTF-8".into())
}

fn write_all(fd: RawFd, mut data: &[u8], deadline: u64) -> bool {
    while !data.is_empty() {
        // SAFETY: `data` is valid for reads of `data.len()` bytes; MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
        let r = unsafe {
            libc::send(
                fd,
                data.as_ptr() as *const libc::c_void,
                data.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if r > 0 {
            data = &data[r as usize..];
        } else if r < 0 && (errno() == libc::EAGAIN || errno() == libc::EINTR) {
            if !wait_fd(fd, libc::POLLOUT, deadline) {
                return false;
            }
        } else {
            return false;
        }
    }
    true
}

/// A socket path for a name in a directory given by fd: /proc/self/fd/N/NAME reaches the
/// verified directory whatever its path (and stays short); the plain path if /proc is
/// missing.
fn socket_addr(
    dir: RawFd,
    dir_path: &Path,
) -> Result<(libc::sockaddr_un, libc::socklen_t), String> {
    let via_proc = format!("/proc/self/fd/{dir}/{SOCKET}");
    let p = if Path::new("/proc/self/fd").is_dir() {
        via_proc.into_bytes()
    } else {
        dir_path.join(SOCKET).as_os_str().as_bytes().to_vec()
    };
    // SAFETY: a plain C struct, for which all-zero bytes are a valid value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    if p.len() >= a.sun_path.len() {
        return Err(format!(
            "{}: socket path too long",
            dir_path.join(SOCKET).display()
        ));
    }
    for (d, s) in a.sun_path.iter_mut().zip(&p) {
        *d = *s as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + p.len() + 1) as libc::socklen_t;
    Ok((a, len))
}

enum Slot {
    Open(OwnedFd, (u64, u64)),
    None,
}

/// The runtime's side: the verified RUN_DIR/PID directory, its stats files and the
/// listening control socket. Lives on the manager thread.
pub struct Server {
    pub dir_path: PathBuf,
    dir: Slot,
    listener: Slot,
    uid: u32,
    file_mode: u32,
}

impl Server {
    /// Create (or verify) RUN_DIR and RUN_DIR/PID, remove stale directories, publish
    /// nothing yet, and listen on RUN_DIR/PID/control.sock. Err: one line naming the
    /// refused path; the caller then runs without a control directory.
    pub fn open(run_dir: &str, pid: u32, stats_mode: &str) -> Result<Server, String> {
        let file_mode = parse_stats_mode(stats_mode)?;
        let dmode = dir_mode(file_mode);
        let uid = euid();
        let run_path = Path::new(run_dir);
        let run = open_private(
            libc::AT_FDCWD,
            &cpath(run_path)?,
            run_path,
            &[uid],
            Some(dmode),
        )?;
        remove_stale_in(run.as_raw_fd());
        let dir_path = run_path.join(pid.to_string());
        let dir = open_private(
            run.as_raw_fd(),
            &cname(&pid.to_string()),
            &dir_path,
            &[uid],
            Some(dmode),
        )?;
        // A directory left by an earlier process with our PID: start empty.
        for n in list(dir.as_raw_fd()) {
            // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
            unsafe { libc::unlinkat(dir.as_raw_fd(), n.as_ptr(), 0) };
        }
        let id = identity(dir.as_raw_fd()).unwrap_or_default();
        let mut s = Server {
            dir_path,
            dir: Slot::Open(dir, id),
            listener: Slot::None,
            uid,
            file_mode,
        };
        match s.listen() {
            Ok(l) => {
                let id = identity(l.as_raw_fd()).unwrap_or_default();
                s.listener = Slot::Open(l, id);
            }
            // The program exiting meanwhile removes the directory under us (a short-lived
            // child such as a shell a launcher script forks): nothing to report then.
            Err(_) if closed() => {}
            Err(e) => crate::runtime::report(&format!("no control socket: {e}")),
        }
        if closed() {
            // The program exited while we created the directory: take it away again.
            s.dir = Slot::None;
            s.listener = Slot::None;
            remove_pid_dir(run.as_raw_fd(), &cname(&pid.to_string()), uid);
        }
        // RUN_DIR exists now: the runtime's lines that waited for it go to its log.
        crate::runtime::log::flush();
        Ok(s)
    }

    fn listen(&self) -> Result<OwnedFd, String> {
        let Slot::Open(dir, _) = &self.dir else {
            return Err("no directory".into());
        };
        let d = dir.as_raw_fd();
        // SAFETY: creates a new socket; no pointers.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return Err(format!("socket: {}", os_err(errno())));
        }
        // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let (addr, len) = socket_addr(d, &self.dir_path)?;
        let name = cname(SOCKET);
        let path = self.dir_path.join(SOCKET);
        // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
        unsafe { libc::unlinkat(d, name.as_ptr(), 0) };
        // SAFETY: `addr`/`len` are a sockaddr_un built by `socket_addr`, `fd` a socket of ours.
        if unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        } != 0
        {
            return Err(format!("{}: bind: {}", path.display(), os_err(errno())));
        }
        // The directory is ours alone, so nobody can swap the node between bind and chmod.
        // SAFETY: `d` is an open directory fd and `name` a NUL-terminated string.
        if unsafe { libc::fchmodat(d, name.as_ptr(), 0o600, 0) } != 0 {
            let e = errno();
            // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
            unsafe { libc::unlinkat(d, name.as_ptr(), 0) };
            return Err(format!("{}: chmod 600: {}", path.display(), os_err(e)));
        }
        // SAFETY: `fd` is a socket of ours.
        if unsafe { libc::listen(fd.as_raw_fd(), 8) } != 0 {
            return Err(format!("{}: listen: {}", path.display(), os_err(errno())));
        }
        Ok(fd)
    }

    /// The fd of a slot if it is still the file we opened; a program that closed our fd
    /// (and perhaps reused the number) loses us the slot, and the number is left alone.
    fn live(slot: &mut Slot, what: &str) -> Option<RawFd> {
        let Slot::Open(fd, id) = slot else {
            return None;
        };
        if identity(fd.as_raw_fd()) == Some(*id) {
            return Some(fd.as_raw_fd());
        }
        crate::runtime::report(&format!(
            "the program closed tiermem's {what} (fd {}); stats/control stop",
            fd.as_raw_fd()
        ));
        if let Slot::Open(fd, _) = std::mem::replace(slot, Slot::None) {
            let _ = fd.into_raw_fd();
        }
        None
    }

    /// Write NAME via a fresh `.NAME.tmp` (O_EXCL | O_NOFOLLOW, mode `stats_mode`) and
    /// renameat.
    fn write_atomic(&mut self, name: &str, text: &str) {
        if closed() {
            return;
        }
        let Some(d) = Self::live(&mut self.dir, "control directory") else {
            return;
        };
        let tmp = cname(&format!(".{name}.tmp"));
        // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
        unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
        // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
        let fd = unsafe {
            libc::openat(
                d,
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                self.file_mode as libc::c_uint,
            )
        };
        if fd < 0 {
            return;
        }
        // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `fd` is an open fd of ours.
        let mut ok = unsafe { libc::fchmod(fd.as_raw_fd(), self.file_mode) } == 0;
        let mut data = text.as_bytes();
        while ok && !data.is_empty() {
            // SAFETY: `data` is valid for reads of `data.len()` bytes and `fd` is an open file of ours.
            let r = unsafe {
                libc::write(
                    fd.as_raw_fd(),
                    data.as_ptr() as *const libc::c_void,
                    data.len(),
                )
            };
            if r <= 0 {
                ok = false;
            } else {
                data = &data[r as usize..];
            }
        }
        drop(fd);
        let dst = cname(name);
        // SAFETY: one open directory fd and two NUL-terminated names: a rename inside that directory.
        if !ok || unsafe { libc::renameat(d, tmp.as_ptr(), d, dst.as_ptr()) } != 0 {
            // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
            unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
        }
    }

    /// `tiermem qos`: publish its status as RUN_DIR/PID/qos.json (same checks and mode as
    /// the stats files).
    pub fn publish_qos(&mut self, json: &str) {
        self.write_atomic(QOS_FILE, json);
    }

    /// Stop listening and remove the socket: `tiermem qos` answers no requests (a client
    /// would otherwise wait for an answer that never comes).
    pub fn without_socket(mut self) -> Server {
        self.listener = Slot::None;
        if let Slot::Open(d, _) = &self.dir {
            let name = cname(SOCKET);
            // SAFETY: an open directory fd and a NUL-terminated name: removes only that entry, never follows a symlink.
            unsafe { libc::unlinkat(d.as_raw_fd(), name.as_ptr(), 0) };
        }
        self
    }

    pub fn publish(&mut self, s: &Stats) {
        if let Ok(j) = serde_json::to_string_pretty(s) {
            self.write_atomic("stats.json", &j);
        }
        self.write_atomic("metrics.prom", &s.prometheus());
    }

    /// Serve the clients waiting on the control socket (at most 4, each given at most
    /// 200 ms); returns at once when none is waiting.
    pub fn serve(&mut self, rt: &crate::runtime::Runtime) {
        for _ in 0..4 {
            if closed() {
                return;
            }
            let Some(l) = Self::live(&mut self.listener, "control socket") else {
                return;
            };
            // SAFETY: `l` is our listening socket; null address pointers are allowed.
            let c = unsafe {
                libc::accept4(
                    l,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if c < 0 {
                return;
            }
            // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
            let c = unsafe { OwnedFd::from_raw_fd(c) };
            let deadline = crate::sys::now_ns() + CLIENT_MS as u64 * 1_000_000;
            let answer = match peer_uid(c.as_raw_fd()) {
                Some(u) if u == self.uid || u == 0 => {
                    match read_line(c.as_raw_fd(), MAX_REQUEST, deadline) {
                        Ok(line) => answer(rt, &line),
                        Err(e) => format!("error {e}"),
                    }
                }
                other => {
                    let who = other.map_or("an unknown uid".to_string(), |u| format!("uid {u}"));
                    crate::runtime::report(&format!(
                        "control socket: refused a request from {who} (only uid {} or root may control this process)",
                        self.uid
                    ));
                    format!("error permission denied: {who} may not control this process")
                }
            };
            write_all(c.as_raw_fd(), format!("{answer}\n").as_bytes(), deadline);
        }
    }
}

fn peer_uid(fd: RawFd) -> Option<u32> {
    // SAFETY: a plain C struct, for which all-zero bytes are a valid value.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid out-pointers of the sizes SO_PEERCRED writes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0 && len as usize == std::mem::size_of::<libc::ucred>()).then_some(cred.uid)
}

/// One request line -> one answer line.
fn answer(rt: &crate::runtime::Runtime, line: &str) -> String {
    let line = line.trim();
    let (cmd, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match cmd {
        "budget" => match Budget::parse(arg) {
            Ok(b) => {
                let (old, bytes) = {
                    let mut st = rt.lock();
                    let old = st.budget.describe();
                    st.budget = b;
                    (old, st.budget_bytes())
                };
                let bytes = if bytes == u64::MAX {
                    "unlimited".to_string()
                } else {
                    format!("{bytes} bytes")
                };
                format!("ok budget {} ({bytes}); was {old}", b.describe())
            }
            Err(e) => format!("error budget: {e}"),
        },
        "stats" => match serde_json::to_string(&rt.stats()) {
            Ok(j) => j,
            Err(e) => format!("error stats: {e}"),
        },
        "ping" => format!("ok tiermem {}", std::process::id()),
        _ => format!(
            "error unknown request `{}` (requests: budget SIZE|PERCENT%|unlimited, stats, ping)",
            line.chars().take(40).collect::<String>()
        ),
    }
}

/// The client's side (`tiermem stat`, `tiermem budget`) and the runtime's removal of its
/// own directory at exit.
pub struct Control {
    pub run_dir: PathBuf,
    pub dir: PathBuf,
    pub pid: u32,
}

impl Control {
    /// RUN_DIR/PID (no I/O).
    pub fn new(run_dir: &str, pid: u32) -> Control {
        Control {
            run_dir: PathBuf::from(run_dir),
            dir: PathBuf::from(run_dir).join(pid.to_string()),
            pid,
        }
    }

    /// Find where program `pid` publishes: the `run_dir` of the config in its environment
    /// (readable by its own user and root), its `TIERMEM_RUN_DIR`, else ours.
    pub fn locate(pid: u32) -> Control {
        let mut cands: Vec<String> = Vec::new();
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            for var in env.split(|&b| b == 0) {
                if let Some(j) = var.strip_prefix(b"TIERMEM_CONFIG_JSON=") {
                    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(j) {
                        if let Some(d) = v["run_dir"].as_str() {
                            cands.push(d.to_string());
                        }
                    }
                } else if let Some(d) = var.strip_prefix(b"TIERMEM_RUN_DIR=") {
                    if !d.is_empty() {
                        cands.push(String::from_utf8_lossy(d).into_owned());
                    }
                }
            }
        }
        cands.push(crate::config::default_run_dir());
        let found = cands
            .iter()
            .find(|d| std::fs::symlink_metadata(Path::new(d).join(pid.to_string())).is_ok());
        Control::new(found.unwrap_or(cands.last().unwrap()), pid)
    }

    /// Open RUN_DIR/PID for reading, checking both directories: real directories (no
    /// symlinks), owned by us, by root or by the program's user, writable by nobody else.
    fn open(&self) -> Result<OwnedFd, String> {
        let mut owners = vec![euid(), 0];
        if let Ok(m) = std::fs::metadata(format!("/proc/{}", self.pid)) {
            owners.push(std::os::unix::fs::MetadataExt::uid(&m));
        }
        let run = open_private(
            libc::AT_FDCWD,
            &cpath(&self.run_dir)?,
            &self.run_dir,
            &owners,
            None,
        )?;
        open_private(
            run.as_raw_fd(),
            &cname(&self.pid.to_string()),
            &self.dir,
            &owners,
            None,
        )
    }

    /// The last stats the program published (RUN_DIR/PID/stats.json).
    pub fn read_stats(&self) -> Result<Stats, String> {
        let text = self.read_file("stats.json")?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: {e}", self.dir.join("stats.json").display()))
    }

    /// The status `tiermem qos` publishes (RUN_DIR/PID/qos.json), as JSON text.
    pub fn read_qos(&self) -> Result<String, String> {
        self.read_file(QOS_FILE)
    }

    /// A regular file of RUN_DIR/PID, never through a symlink.
    fn read_file(&self, file: &str) -> Result<String, String> {
        let dir = self.open()?;
        let name = cname(file);
        let path = self.dir.join(file);
        // SAFETY: an open directory fd and a NUL-terminated name; O_NOFOLLOW: a symlink is refused.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        };
        if fd < 0 {
            return Err(describe_open_error(dir.as_raw_fd(), &name, &path, errno()));
        }
        // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
        let f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        match f.metadata() {
            Ok(m) if m.is_file() => {}
            _ => return Err(format!("{}: not a regular file", path.display())),
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &f, &mut text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(text)
    }

    /// Send one request line over RUN_DIR/PID/control.sock and return the answer line.
    pub fn request(&self, line: &str, timeout: std::time::Duration) -> Result<String, String> {
        let dir = self.open()?;
        let path = self.dir.join(SOCKET);
        // SAFETY: creates a new socket; no pointers.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(format!("socket: {}", os_err(errno())));
        }
        // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let (addr, len) = socket_addr(dir.as_raw_fd(), &self.dir)?;
        // SAFETY: `addr`/`len` are a sockaddr_un built by `socket_addr`, `fd` a socket of ours.
        if unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &addr as *const _ as *const libc::sockaddr,
                len,
            )
        } != 0
        {
            return Err(format!("{}: connect: {}", path.display(), os_err(errno())));
        }
        // SAFETY: flag changes on a socket of ours; no pointers.
        unsafe {
            libc::fcntl(
                fd.as_raw_fd(),
                libc::F_SETFL,
                libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) | libc::O_NONBLOCK,
            )
        };
        let deadline = crate::sys::now_ns() + timeout.as_nanos() as u64;
        if !write_all(fd.as_raw_fd(), format!("{line}\n").as_bytes(), deadline) {
            return Err(format!("{}: sending the request failed", path.display()));
        }
        read_line(fd.as_raw_fd(), 64 << 20, deadline)
            .map_err(|e| format!("{}: no answer: {e}", path.display()))
    }

    /// Remove RUN_DIR/PID (the runtime at exit). Only a directory of ours, never through a
    /// symlink.
    pub fn remove(&self) {
        if self.pid == std::process::id() {
            CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let Ok(c) = cpath(&self.run_dir) else { return };
        // SAFETY: `c` is a NUL-terminated path; O_NOFOLLOW: a symlink is refused.
        let fd = unsafe { libc::open(c.as_ptr(), open_dir_flags()) };
        if fd < 0 {
            return;
        }
        // SAFETY: the fd was just returned to us by the kernel, is valid, and nothing else owns it.
        let run = unsafe { OwnedFd::from_raw_fd(fd) };
        if check_dir(run.as_raw_fd(), &self.run_dir, &[euid()], None).is_ok() {
            remove_pid_dir(run.as_raw_fd(), &cname(&self.pid.to_string()), euid());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn stats_modes() {
        assert_eq!(parse_stats_mode("0600").unwrap(), 0o600);
        assert_eq!(parse_stats_mode("0644").unwrap(), 0o644);
        assert!(parse_stats_mode("0666").is_err());
        assert!(parse_stats_mode("0400").is_err());
        assert!(parse_stats_mode("rw").is_err());
        assert_eq!(dir_mode(0o600), 0o700);
        assert_eq!(dir_mode(0o640), 0o750);
        assert_eq!(dir_mode(0o644), 0o755);
    }
    #[test]
    fn run_dir_choice() {
        let t = std::env::temp_dir().join(format!("tiermem-xdg-{}", std::process::id()));
        std::fs::create_dir_all(&t).unwrap();
        let cleanup = |t: &Path| {
            let _ = std::fs::remove_dir_all(t);
        };
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o700)).unwrap();
        let me = euid();
        let got = choose_run_dir(Some(t.as_os_str()), me);
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        let loose = choose_run_dir(Some(t.as_os_str()), me);
        let other = choose_run_dir(Some(t.as_os_str()), me + 1);
        cleanup(&t);
        assert_eq!(got, t.join("tiermem"));
        let fallback = |uid: u32| {
            if uid == 0 && Path::new("/run").is_dir() {
                PathBuf::from("/run/tiermem")
            } else {
                PathBuf::from(format!("/tmp/tiermem-{uid}"))
            }
        };
        assert_eq!(loose, fallback(me));
        assert_eq!(other, fallback(me + 1));
        assert_eq!(
            choose_run_dir(None, 1234),
            PathBuf::from("/tmp/tiermem-1234")
        );
    }
}
