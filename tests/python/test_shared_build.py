"""The Python extension and the CLI share one build of every dependency.

`make setup` runs `cargo build --release` over the workspace, then maturin, which builds
crates/tiermem-py alone (`cargo rustc --manifest-path crates/tiermem-py/Cargo.toml`). Cargo
resolves features per invocation: a dependency that one graph enables more features of is
compiled twice, and with it every crate above it (tract and HiGHS were, once for each). Two
Cargo.toml blocks align the graphs (tiermem-cli's and tiermem-py's "Not used here"
dependencies); this test fails when a dependency change makes them drift apart again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

# What only the extension compiles (PyO3 and its build helpers): nothing to share.
EXTENSION_ONLY = ("pyo3", "target-lexicon", "tiermem-py")


def cargo() -> str:
    found = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    assert Path(found).exists(), "cargo not found (make setup installs the Rust toolchain)"
    return found


def feature_sets(root: Path, *selection: str) -> dict[tuple[str, str], set[str]]:
    """(package name and version, "host" or "target") -> the feature sets it is compiled
    with, for one cargo invocation over `selection` (normal and build edges: what `cargo
    build` compiles). Build scripts and proc-macros (and all below them) run on the host,
    which cargo resolves apart from the target: a crate may be built once for each."""
    run = subprocess.run(
        [cargo(), "tree", "--locked", *selection, "-e", "normal,build", "--charset", "ascii", "--format", "{p}|{f}"],
        cwd=root, capture_output=True, text=True, env={**os.environ, "CARGO_TERM_COLOR": "never"},
    )
    assert run.returncode == 0, run.stderr
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    # The open ancestors of the current line: [column, whether its children run on the host].
    stack: list[list] = []
    for line in run.stdout.splitlines():
        body = line.lstrip("|`- ")
        if not body:
            continue
        column = len(line) - len(body)
        while stack and stack[-1][0] > column or (stack and stack[-1][0] == column and not body.startswith("[")):
            stack.pop()
        if body.startswith("[build-dependencies]"):
            stack[-1][1] = True
            continue
        package, _, features = body.removesuffix(" (*)").partition("|")
        host = bool(stack) and stack[-1][1]
        stack.append([column, host or "(proc-macro)" in package])
        out[(" ".join(package.split()[:2]), "host" if host else "target")].add(features)
    return out

def test_the_extension_reuses_the_workspace_build_of_every_shared_dependency(root):
    workspace = feature_sets(root)  # `cargo build --release`: the default members
    extension = feature_sets(root, "--manifest-path", str(root / "crates/tiermem-py/Cargo.toml"))
    shared = [p for p in extension if not p[0].startswith(EXTENSION_ONLY)]
    # The extension's graph reaches tract and HiGHS through the simulator: the check covers them.
    assert ("tract-onnx v0.21.19", "target") in shared, sorted(shared)
    assert any(name.startswith("highs-sys ") for name, _ in shared), sorted(shared)
    assert any(side == "host" for _, side in shared), sorted(shared)
    drifted = {p: (sorted(extension[p]), sorted(workspace.get(p, set()))) for p in shared
               if not extension[p] <= workspace.get(p, set())}
    assert not drifted, (
        "compiled twice (features in the extension's graph vs the workspace's): "
        f"{drifted}; align them in tiermem-cli's or tiermem-py's Cargo.toml"
    )
