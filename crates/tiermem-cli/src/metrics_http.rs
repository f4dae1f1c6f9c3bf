//! `--metrics-listen ADDR` of `tiermem run`, `qos` and `attach`: Prometheus text on
//! `http://ADDR/metrics` (tiny_http), served from a tiermem process, never from inside the
//! managed program (docs/runtime.md, "Metrics over HTTP").
//!
//! `tiermem run` execs the program, so the server is a process of its own: bound before the
//! program starts (a bad or busy address is `tiermem run`'s error, exit 2, nothing started),
//! then double-forked so that it is neither the program's parent nor its child (a program
//! that waits for any child never sees it), in a session of its own, with nothing of the
//! program's open but the listening socket (no stdout/stderr pipe held open past the
//! program's exit). It reads the runtime's published stats (RUN_DIR/PID/stats.json, what
//! `tiermem stat` reads) on each scrape, and exits when the program does (a pidfd).

use clap::Args;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::time::Duration;
use tiermem_core::{Error, Result};
use tiermem_linux::metrics::Exposition;

#[derive(Args, Clone, Debug, Default)]
pub struct MetricsArgs {
    /// Serve Prometheus text on http://ADDR/metrics (e.g. 127.0.0.1:9464; port 0 picks
    /// one, printed on stderr). Loopback addresses only, unless --metrics-allow-remote.
    #[arg(long, value_name = "IP:PORT")]
    pub metrics_listen: Option<String>,
    /// Allow --metrics-listen on an address other hosts can reach (the metrics show the
    /// program's memory use and settings to anyone who can connect; no authentication).
    #[arg(long, requires = "metrics_listen")]
    pub metrics_allow_remote: bool,
}

impl MetricsArgs {
    /// The listening socket, bound now (so that a bad address is refused before anything
    /// starts); None without --metrics-listen.
    pub fn bind(&self) -> Result<Option<TcpListener>> {
        let Some(addr) = &self.metrics_listen else {
            return Ok(None);
        };
        let l = bind(addr, self.metrics_allow_remote)?;
        if addr.ends_with(":0") {
            if let Ok(a) = l.local_addr() {
                eprintln!("tiermem: metrics on http://{a}/metrics");
            }
        }
        Ok(Some(l))
    }
}

/// `--metrics-listen ADDR`: IP:PORT or localhost:PORT, loopback unless `allow_remote`.
pub fn bind(addr: &str, allow_remote: bool) -> Result<TcpListener> {
    let bad = |why: String| Error::usage(format!("--metrics-listen {addr}: {why}"));
    let addrs: Vec<SocketAddr> = match addr.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        Err(_) => match addr.rsplit_once(':') {
            // Names only as the loopback's: anything else would resolve through DNS.
            Some(("localhost", _)) => addr
                .to_socket_addrs()
                .map_err(|e| bad(e.to_string()))?
                .collect(),
            _ => {
                return Err(bad(
                    "expected IP:PORT, e.g. 127.0.0.1:9464 or [::1]:9464 (or localhost:PORT)"
                        .into(),
                ))
            }
        },
    };
    if let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
        if !allow_remote {
            return Err(bad(format!(
                "{} is not a loopback address: the metrics would be open to other hosts, \
                 without authentication; add --metrics-allow-remote to serve them there anyway",
                a.ip()
            )));
        }
    }
    TcpListener::bind(&addrs[..]).map_err(|e| bad(format!("cannot listen: {e}")))
}

/// Serve `render()` on /metrics until `done()` (checked every 200 ms).
pub fn serve(listener: TcpListener, render: &dyn Fn() -> String, done: &dyn Fn() -> bool) {
    let server = match tiny_http::Server::from_listener(listener, None) {
        Ok(s) => s,
        Err(_) => return,
    };
    while !done() {
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(req)) => respond(req, render),
            Ok(None) => {}
            Err(_) => return,
        }
    }
}

fn respond(req: tiny_http::Request, render: &dyn Fn() -> String) {
    use tiny_http::{Header, Method, Response};
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let text = |s: String, code: u16, ctype: &str| {
        let h = Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes()).expect("a valid header");
        Response::from_string(s)
            .with_status_code(code)
            .with_header(h)
    };
    let plain = "text/plain; charset=utf-8";
    let r = match (req.method(), path.as_str()) {
        (Method::Get | Method::Head, "/metrics") => {
            text(render(), 200, "text/plain; version=0.0.4; charset=utf-8")
        }
        (Method::Get | Method::Head, "/") => {
            text("tiermem: Prometheus text on /metrics\n".into(), 200, plain)
        }
        (Method::Get | Method::Head, _) => text("not found: try /metrics\n".into(), 404, plain),
        _ => text("only GET and HEAD\n".into(), 405, plain),
    };
    let _ = req.respond(r);
}

/// A runtime's stats as samples, and `tiermem_stats_available{pid}`: 0 while it has not
/// published any (no managed memory yet, or not under the runtime).
pub fn runtime_metrics(pid: u32, e: &mut Exposition) {
    let stats = tiermem_linux::control::Control::locate(pid).read_stats();
    e.gauge(
        "stats_available",
        "1 when the runtime's published stats (RUN_DIR/PID/stats.json) were read for this scrape",
        &[("pid", &pid.to_string())],
        stats.is_ok() as u8 as f64,
    );
    if let Ok(s) = stats {
        s.write_metrics(e);
    }
}

/// `tiermem run`: start the metrics process for this process (which is about to exec the
/// program, keeping its PID). Returns in the caller once the server runs on its own.
pub fn spawn_for_run(listener: TcpListener) -> Result<()> {
    use std::os::fd::AsRawFd;
    let pid = std::process::id();
    // pidfd_open's descriptor is always close-on-exec: the program does not inherit it,
    // the metrics process's copy survives our exec.
    // SAFETY: pidfd_open(2) only creates a descriptor.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
    if pidfd < 0 {
        return Err(Error::usage(format!(
            "--metrics-listen: pidfd_open: {}",
            std::io::Error::last_os_error()
        )));
    }
    // tiermem run has parsed its arguments and config and started nothing here.
    // SAFETY: single-threaded, so the child may run arbitrary code after fork.
    let child = unsafe { libc::fork() };
    if child < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: closes the pidfd opened above, ours alone.
        unsafe { libc::close(pidfd) };
        return Err(Error::usage(format!("--metrics-listen: fork: {e}")));
    }
    if child == 0 {
        // The intermediate child: fork the server and exit at once, so that the server's
        // parent is init (or a subreaper), not the program.
        // SAFETY: single-threaded (a fork of a single-threaded process).
        if unsafe { libc::fork() } == 0 {
            let keep = [listener.as_raw_fd(), pidfd];
            detach_from_program(&keep);
            serve(
                listener,
                &|| {
                    let mut e = Exposition::default();
                    runtime_metrics(pid, &mut e);
                    e.render()
                },
                &|| exited(pidfd),
            );
        }
        // SAFETY: _exit ends this process without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the intermediate child created above; `status` is a local.
    unsafe { libc::waitpid(child, &mut status, 0) };
    // SAFETY: closes our pidfd (the server holds its own copy).
    unsafe { libc::close(pidfd) };
    drop(listener); // the program must not inherit it (it is close-on-exec anyway)
    Ok(())
}

/// The metrics process: its own session (the terminal's signals and job control are the
/// program's), stdin/stdout/stderr on /dev/null, every other inherited fd closed.
fn detach_from_program(keep: &[i32]) {
    // SAFETY: plain system calls on this process; the path is a NUL-terminated literal.
    unsafe {
        libc::setsid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            libc::close(null);
        }
        libc::prctl(
            libc::PR_SET_NAME,
            c"tiermem-metrics".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in fds {
        if fd > 2 && !keep.contains(&fd) {
            // The fd read_dir used is closed already; closing it again fails harmlessly.
            // SAFETY: closes an fd inherited from tiermem run.
            unsafe { libc::close(fd) };
        }
    }
}

/// Has the process behind `pidfd` exited? (A pidfd polls readable then.)
fn exited(pidfd: i32) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, a local, with a zero timeout.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only_unless_allowed() {
        let e = bind("0.0.0.0:0", false).unwrap_err().to_string();
        assert!(
            e.contains("0.0.0.0 is not a loopback address") && e.contains("--metrics-allow-remote"),
            "{e}"
        );
        assert!(e.contains("--metrics-listen 0.0.0.0:0"), "{e}");
        assert!(bind("0.0.0.0:0", true).is_ok());
        assert!(bind("127.0.0.1:0", false).is_ok());
        assert!(bind("localhost:0", false).is_ok());
        for bad in ["127.0.0.1", "example.com:80", "9464", ""] {
            let e = bind(bad, false).unwrap_err().to_string();
            assert!(e.contains("expected IP:PORT"), "{bad}: {e}");
        }
        let l = bind("127.0.0.1:0", false).unwrap();
        let taken = l.local_addr().unwrap().to_string();
        let e = bind(&taken, false).unwrap_err().to_string();
        assert!(e.contains("cannot listen"), "{e}");
    }
}
