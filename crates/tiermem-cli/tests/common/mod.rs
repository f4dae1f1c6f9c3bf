//! Helpers shared by the `tiermem` binary's end-to-end tests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The binary under test; plots need the project's Python, these tests check data only.
pub fn tiermem() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tiermem"));
    c.env("TIERMEM_PYTHON", "/nonexistent/python");
    c
}

/// A fresh scratch directory for one test (this process and `name`).
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tiermem-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}
