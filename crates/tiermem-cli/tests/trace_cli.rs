//! `tiermem trace record|convert|info` end to end, with a real valgrind.

use std::path::PathBuf;
use std::process::Command;

fn tiermem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tiermem"))
}

/// A per-test scratch directory, removed when the test ends (pass or fail).
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(test: &str) -> TmpDir {
        let d =
            std::env::temp_dir().join(format!("tiermem-trace-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(c: &mut Command) -> (i32, String, String) {
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn record_info_convert() {
    let d = TmpDir::new("record_info_convert");
    let bin = d.path("echo.tmt");
    let text = d.path("echo.lackey");
    let (code, out, err) = run(tiermem()
        .args(["trace", "record", "--out"])
        .arg(&bin)
        .arg("--keep-text")
        .arg(&text)
        .args(["--", "/bin/echo", "hi"]));
    assert_eq!(
        code, 0,
        "record failed (valgrind is needed: apt-get install valgrind): {err}"
    );
    assert!(
        out.contains("records") && out.contains("distinct pages"),
        "{out}"
    );
    let lines = std::fs::read_to_string(&text)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(" L ") || l.starts_with(" S ") || l.starts_with(" M "))
        .count();
    let (code, out, _) = run(tiermem().args(["trace", "info"]).arg(&bin));
    assert_eq!(code, 0);
    assert!(
        out.contains("tiermem binary") && out.contains(&format!("records         {lines} ")),
        "{out}"
    );
    let again = d.path("again.tmt");
    let (code, out, err) = run(tiermem()
        .args(["trace", "convert"])
        .arg(&text)
        .arg(&again)
        .args(["--page-size", "2M"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("{lines} records")), "{out}");
}

#[test]
fn bad_inputs_exit_2_with_a_reason() {
    let d = TmpDir::new("bad_inputs_exit_2_with_a_reason");
    let bad = d.path("bad.lackey");
    std::fs::write(&bad, " L 10,8\nnot a record\n").unwrap();
    let out = d.path("bad.tmt");
    let (code, _, err) = run(tiermem().args(["trace", "convert"]).arg(&bad).arg(&out));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(":2:") && err.contains("not a record"), "{err}");
    assert!(!out.exists(), "no half-written output");

    let cut = d.path("cut.tmt");
    std::fs::write(&cut, b"TMTRACE1\x01\x00").unwrap();
    let (code, _, err) = run(tiermem().args(["trace", "info"]).arg(&cut));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("byte offset"), "{err}");

    let (code, _, err) = run(tiermem()
        .args(["trace", "convert"])
        .arg(&bad)
        .arg(&out)
        .args(["--page-size", "3K"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--page-size"), "{err}");

    let (code, _, err) = run(tiermem()
        .args(["trace", "record", "--out"])
        .arg(d.path("x.tmt"))
        .args(["--", "/bin/true"])
        .env("PATH", "/nonexistent"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("apt-get install valgrind"), "{err}");
}
