//! `tiermem run`: check userfaultfd, find the preload library, exec PROGRAM with it.
//! tiermem execs the program (no parent process in between): its PID, signals, stdout,
//! stderr and exit status are the program's own (the runtime writes nothing on them but
//! fatal lines, unless `--verbose`: runtime/log.rs).

use crate::config::RuntimeConfig;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use tiermem_core::{Error, ErrorKind, Result};

/// Can this user create a userfaultfd that handles kernel-mode faults too?
pub fn check_userfaultfd() -> Result<()> {
    match crate::uffd::Uffd::open() {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) => Err(
            Error::new(ErrorKind::Unsupported, crate::uffd::permission_hint()),
        ),
        Err(e) => Err(Error::new(
            ErrorKind::Unsupported,
            format!("userfaultfd is not available on this kernel: {e}"),
        )),
    }
}

/// The preload library: $TIERMEM_PRELOAD, or libtiermem_preload.so next to the running
/// binary (or one directory up, for test binaries in target/*/deps).
pub fn find_preload() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("TIERMEM_PRELOAD") {
        let p = PathBuf::from(p);
        if p.is_file() {
            // Absolute, so children that change directory still find it.
            return Ok(p.canonicalize().unwrap_or(p));
        }
        return Err(Error::new(
            ErrorKind::Usage,
            format!("TIERMEM_PRELOAD={} does not exist", p.display()),
        ));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
    let mut dir = exe.parent().map(|p| p.to_path_buf());
    for _ in 0..2 {
        if let Some(d) = &dir {
            let cand = d.join("libtiermem_preload.so");
            if cand.is_file() {
                return Ok(cand);
            }
            dir = d.parent().map(|p| p.to_path_buf());
        }
    }
    Err(Error::new(
        ErrorKind::Unsupported,
        "libtiermem_preload.so not found next to the tiermem binary; build it with `cargo build -p tiermem-preload` or set TIERMEM_PRELOAD",
    ))
}

/// PROGRAM under the runtime: the preload library in front of any LD_PRELOAD, the config
/// in the environment. Checks userfaultfd and finds the library; starts nothing.
pub fn command(cfg: &RuntimeConfig, program: &[String]) -> Result<std::process::Command> {
    check_userfaultfd()?;
    let preload = find_preload()?;
    let json =
        serde_json::to_string(cfg).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
    let mut ld = preload.display().to_string();
    if let Ok(old) = std::env::var("LD_PRELOAD") {
        if !old.is_empty() {
            ld = format!("{ld}:{old}");
        }
    }
    let mut cmd = std::process::Command::new(&program[0]);
    cmd.args(&program[1..])
        .env("LD_PRELOAD", ld)
        .env("TIERMEM_CONFIG_JSON", json)
        // Only `exec --verbose` names a process whose lines go to stderr (runtime/log.rs).
        .env_remove(crate::runtime::log::VERBOSE_ENV);
    Ok(cmd)
}

/// Replace this process with PROGRAM under the runtime. Returns only on failure, with
/// the exit status a shell would give (127 not found, 126 not executable). `verbose`: the
/// runtime's lines in this process (which becomes the program: same PID) also go to
/// stderr; its descendants' go only to the log, as without it (runtime/log.rs).
pub fn exec(cfg: &RuntimeConfig, program: &[String], verbose: bool) -> Result<i32> {
    exec_after(cfg, program, verbose, || Ok(()))
}

/// `exec`, running `before` once every check has passed, just before the exec (`tiermem
/// run --metrics-listen` starts its metrics process there).
pub fn exec_after(
    cfg: &RuntimeConfig,
    program: &[String],
    verbose: bool,
    before: impl FnOnce() -> Result<()>,
) -> Result<i32> {
    let mut cmd = command(cfg, program)?;
    before()?;
    if verbose {
        cmd.env(crate::runtime::log::VERBOSE_ENV, std::process::id().to_string());
    }
    let err = cmd.exec();
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            eprintln!("tiermem: {}: command not found", program[0]);
            Ok(127)
        }
        std::io::ErrorKind::PermissionDenied => {
            eprintln!("tiermem: {}: permission denied", program[0]);
            Ok(126)
        }
        _ => {
            eprintln!("tiermem: {}: {err}", program[0]);
            Ok(126)
        }
    }
}
