//! Where the runtime's lines go (docs/runtime.md, "Observability"): never into the program's
//! stdout or stderr unless the user asked for it.
//!
//! ```text
//!   level   what                                         RUN_DIR/log  stats  stderr
//!   info    advice (thrashing and the budget to try)     yes          yes    --verbose
//!   warn    tiermem cannot do something it should        yes          yes    --verbose
//!           (no control directory, a move refused,
//!           not managing memory, a refused request)
//!   fatal   the program's data is at stake (a page that  yes          yes    always
//!           reads as zeros or cannot be decompressed,
//!           a region that lost its registration, a
//!           free/realloc of a pointer tiermem never
//!           handed out) or the runtime aborts it
//! ```
//!
//! "--verbose" means: this process is the one `tiermem run --verbose` started (it execs the
//! program, so the program has its PID; `TIERMEM_VERBOSE=PID` in the environment, which
//! every descendant inherits but none matches). A managed process's stdout and stderr are
//! data to whoever reads them (a test harness asserting a child's stderr is empty, a
//! supervisor, `2>&1`): tiermem writes nothing there but fatal lines, after which the
//! program's output is no longer to be trusted anyway.
//!
//! The log is `RUN_DIR/log`, one file per user shared by all of its managed programs
//! (RUN_DIR/PID/ is removed at each program's exit; the log stays), appended line by line:
//! `2025-06-01T12:00:00.123Z warn python3 tiermem[4242]: ...`. Each line is one `write(2)`
//! to a file opened for it with `O_APPEND | O_NOFOLLOW | O_CLOEXEC` relative to RUN_DIR's
//! verified fd (`control::append_log`) and closed again: the program never sees an fd of
//! ours it could close or reuse. Past 1 MiB the log is renamed `log.1` (one generation).
//! Until RUN_DIR is known and exists (early in startup; a runtime started by plain
//! LD_PRELOAD creates it with its control directory), lines wait in a fixed 16 KiB buffer
//! and go out with the next line, when the control directory opens or at exit; a RUN_DIR
//! that is refused (see control.rs) gets nothing, the lines stay in memory only. Counts per
//! level and the last lines are in the stats (`tiermem stat`, stats.json,
//! `tiermem_messages_total`).
//!
//! Everything here runs under `InternalGuard` (allocations go to glibc, never to managed
//! memory) and takes only this module's lock, after the state lock when both are held
//! (the fault thread reports under it), never before: `Runtime::stats` reads the log
//! before it locks the state.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// The environment variable `tiermem run --verbose` sets to the PID it execs the program as.
pub const VERBOSE_ENV: &str = "TIERMEM_VERBOSE";
/// Lines waiting for the log (bytes).
const PENDING_BYTES: usize = 16 << 10;
/// Last lines kept for the stats, and the bytes kept of each.
const RECENT: usize = 8;
const RECENT_BYTES: usize = 240;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Advice: thrashing and the budget to try.
    Info = 0,
    /// tiermem could not do something it should have (the program's data is safe).
    Warn = 1,
    /// The program's data is at stake, or the runtime aborts it: also on stderr.
    Fatal = 2,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Fatal => "fatal",
        }
    }
}

struct Log {
    /// RUN_DIR, once the config is known, and the most group/other bits it may have
    /// (`control::dir_mode` of the config's `stats_mode`, as for the control directory).
    dir: Option<String>,
    dir_mode: u32,
    /// The last attempt found RUN_DIR (or the log) unsafe to write: nothing was written.
    /// Each line tries again (a RUN_DIR made private again gets the lines that waited).
    refused: bool,
    pending: [u8; PENDING_BYTES],
    pending_len: usize,
    /// Lines that did not fit in `pending`.
    dropped: u64,
    recent: [[u8; RECENT_BYTES]; RECENT],
    recent_len: [usize; RECENT],
    /// Lines reported so far, per level; `recent` holds the last of them.
    counts: [u64; 3],
}

static LOG: Mutex<Log> = Mutex::new(Log {
    dir: None,
    dir_mode: 0o700,
    refused: false,
    pending: [0; PENDING_BYTES],
    pending_len: 0,
    dropped: 0,
    recent: [[0; RECENT_BYTES]; RECENT],
    recent_len: [0; RECENT],
    counts: [0; 3],
});

/// The PID whose lines also go to stderr (`TIERMEM_VERBOSE`), 0 for none.
static VERBOSE_PID: AtomicU32 = AtomicU32::new(0);

/// The process whose thread took the log's lock last (0: none yet).
static HOLDER: AtomicU32 = AtomicU32::new(0);

/// The log's lock. A forked child can inherit it held by a thread that does not exist
/// there (the holder was another process's): the line then goes only where it can without
/// it (stderr, if fatal or verbose). Within one process, waits its turn.
fn lock() -> Option<MutexGuard<'static, Log>> {
    let me = std::process::id();
    let got = match LOG.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => {
            let h = HOLDER.load(Ordering::Acquire);
            if h != 0 && h != me {
                return None;
            }
            LOG.lock().unwrap_or_else(|p| p.into_inner())
        }
    };
    HOLDER.store(me, Ordering::Release);
    Some(got)
}

/// Read `TIERMEM_VERBOSE` (at the preload's start, before any line; not from the fault
/// thread, which must not take the environment's lock).
pub fn from_env() {
    let _g = crate::InternalGuard::new();
    let pid = std::env::var(VERBOSE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    VERBOSE_PID.store(pid, Ordering::Relaxed);
}

/// Lines of this process also go to stderr (it is the one `tiermem run --verbose` started).
pub fn verbose() -> bool {
    let v = VERBOSE_PID.load(Ordering::Relaxed);
    v != 0 && v == std::process::id()
}

/// The run directory is known (the config is): send what waits there when it can.
/// `stats_mode` as in the config: RUN_DIR may have no more permissions than the control
/// directory would accept (a refused RUN_DIR gets no log either).
pub fn set_run_dir(run_dir: &str, stats_mode: &str) {
    let _g = crate::InternalGuard::new();
    if let Some(mut l) = lock() {
        if l.dir.is_none() && !run_dir.is_empty() {
            l.dir = Some(run_dir.to_string());
            l.dir_mode = crate::control::parse_stats_mode(stats_mode)
                .map_or(0o700, crate::control::dir_mode);
        }
        write_out(&mut l, &[]);
    }
}

/// Send the lines waiting for the log (the control directory was just created; at exit).
pub fn flush() {
    let _g = crate::InternalGuard::new();
    if let Some(mut l) = lock() {
        if l.pending_len > 0 {
            write_out(&mut l, &[]);
        }
    }
}

/// The log file, when lines go to one.
pub fn path() -> Option<String> {
    let l = lock()?;
    match (&l.dir, l.refused) {
        (Some(d), false) => Some(format!("{}/log", d.trim_end_matches('/'))),
        _ => None,
    }
}

/// What the stats show: lines per level (info, warn, fatal), and the last ones (oldest first).
pub fn snapshot() -> ([u64; 3], Vec<String>) {
    let _g = crate::InternalGuard::new();
    let Some(l) = lock() else {
        return ([0; 3], Vec::new());
    };
    let total: u64 = l.counts.iter().sum();
    let n = (total as usize).min(RECENT);
    let recent = (0..n)
        .map(|k| {
            let slot = ((total as usize) - n + k) % RECENT;
            String::from_utf8_lossy(&l.recent[slot][..l.recent_len[slot]]).into_owned()
        })
        .collect();
    (l.counts, recent)
}

/// Pending lines then `line` to the log, in one write; kept in `pending` when the log
/// cannot be written yet.
fn write_out(l: &mut Log, line: &[u8]) {
    if l.dir.is_some() && (l.pending_len > 0 || !line.is_empty()) {
        let mut buf = Vec::with_capacity(l.pending_len + line.len() + 64);
        buf.extend_from_slice(&l.pending[..l.pending_len]);
        if l.dropped > 0 {
            let note = format!(
                "(tiermem: {} earlier lines did not fit in memory before the log opened)\n",
                l.dropped
            );
            buf.extend_from_slice(note.as_bytes());
        }
        buf.extend_from_slice(line);
        let dir = l.dir.as_deref().unwrap_or_default();
        let r = crate::control::append_log(dir, l.dir_mode, &buf);
        l.refused = matches!(r, Err(crate::control::LogError::Refused));
        if r.is_ok() {
            l.pending_len = 0;
            l.dropped = 0;
            return;
        }
    }
    if line.is_empty() {
        return;
    }
    if l.pending_len + line.len() <= PENDING_BYTES {
        let at = l.pending_len;
        l.pending[at..at + line.len()].copy_from_slice(line);
        l.pending_len += line.len();
    } else {
        l.dropped += 1;
    }
}

/// One line from the runtime at `level` (never panics, never allocates through the
/// program's allocator).
pub fn report(level: Level, msg: &str) {
    let _g = crate::InternalGuard::new();
    let pid = std::process::id();
    if level == Level::Fatal || verbose() {
        let line = format!("tiermem[{pid}]: {msg}\n");
        // SAFETY: `line` is a live buffer of `line.len()` bytes.
        unsafe { libc::write(2, line.as_ptr() as *const libc::c_void, line.len()) };
    }
    // `msg` may live in managed memory (a caller's format!): read it only before the log's
    // lock is taken (a fault on it must not wait for a fault thread that waits for the lock).
    let ts = utc_now();
    let line = format!("{ts} {} {} tiermem[{pid}]: {msg}\n", level.name(), comm());
    // The stats' copy: without the program name and PID (the stats are the process's own).
    let short = format!("{ts} {}: {msg}", level.name());
    let mut n = short.len().min(RECENT_BYTES);
    while !short.is_char_boundary(n) {
        n -= 1;
    }
    let Some(mut l) = lock() else { return };
    let total: u64 = l.counts.iter().sum();
    let slot = total as usize % RECENT;
    l.recent[slot][..n].copy_from_slice(&short.as_bytes()[..n]);
    l.recent_len[slot] = n;
    l.counts[level as usize] += 1;
    write_out(&mut l, line.as_bytes());
}

/// The program's name: its main thread's (/proc/self is the thread group; the thread
/// reporting may be one of ours, named tiermem-fault or tiermem-mgr).
fn comm() -> String {
    std::fs::read("/proc/self/comm")
        .map(|b| String::from_utf8_lossy(&b).trim().replace(' ', "_"))
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "-".into())
}

/// Now as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn utc_now() -> String {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    utc(ts.tv_sec, ts.tv_nsec as u32 / 1_000_000)
}

fn utc(secs: i64, ms: u32) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(utc(1_748_779_199, 999), "2025-06-01T11:59:59.999Z");
        assert_eq!(utc(4_102_444_800, 0), "2100-01-01T00:00:00.000Z");
    }
}
