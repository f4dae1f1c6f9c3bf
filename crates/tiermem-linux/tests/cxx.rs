//! C++ programs under the runtime, with glibc malloc and with jemalloc (which exports its own
//! `operator new`; the preload defines every variant and forwards a program's calls to the
//! definition the program had): threads, over-aligned arrays, exceptions, and allocations no
//! machine can satisfy, which must fail as without tiermem (the arena once truncated 2^62
//! bytes to a 2-page region and handed it out). Heavy: skipped with TIERMEM_SKIP_E2E=1.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// tests/c/cxx_stress.cpp compiled with the system C++ compiler, with `extra` link arguments.
fn cxx_bin(name: &str, extra: &[&Path]) -> PathBuf {
    require("c++", "g++");
    let src = workspace_root().join("crates/tiermem-linux/tests/c/cxx_stress.cpp");
    let out = profile_dir().join(name);
    let st = Command::new("c++")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .args(extra)
        .status()
        .expect("running c++");
    assert!(st.success(), "c++ {} failed", src.display());
    out
}

fn same_output_tiered(bin: &Path, what: &str) {
    let b = bin.to_str().unwrap();
    let want = ok(&run(plain(&[b]), None, 120, what), what);
    assert!(
        want.contains(
            "bad_alloc=1 nothrow_null=1 malloc_null=1,1 calloc_null=1 realloc_null=1 kept=kept"
        ),
        "{what}: plain run: {want}"
    );
    let (cmd, stats) = tiered("50%", &[b]);
    let out = run(cmd, None, 300, what);
    assert_eq!(ok(&out, what), want, "{what}: output differs under tiermem");
    let p = problems(&stats, &out);
    assert!(p.is_empty(), "{what}: {}", p.join("\n"));
    let s = final_stats(&stats);
    assert!(migrations_in(&s) > 1_000, "{what}: little was tiered: {s}");
}

#[test]
fn a_cpp_program_with_glibc_malloc_behaves_as_without_tiermem() {
    if skip_e2e("cxx") {
        return;
    }
    let _h = heavy();
    same_output_tiered(&cxx_bin("cxx_stress", &[]), "C++ (glibc malloc)");
}

#[test]
fn a_cpp_program_with_jemalloc_behaves_as_without_tiermem() {
    if skip_e2e("cxx") {
        return;
    }
    // libjemalloc2 comes with redis-server (scripts/apt-packages.txt); linked by path, as
    // its -dev package is not needed for anything else.
    let je = Path::new("/lib/x86_64-linux-gnu/libjemalloc.so.2");
    assert!(
        je.exists(),
        "{} missing: apt-get install libjemalloc2 (a dependency of redis-server)",
        je.display()
    );
    let _h = heavy();
    same_output_tiered(&cxx_bin("cxx_stress_jemalloc", &[je]), "C++ (jemalloc)");
}
