"""The Python code is ruff-clean (rules in pyproject.toml's [tool.ruff]; ruff pinned in
requirements-dev.txt). The same command by hand: ruff check python tests/python scripts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff not installed (make setup installs it)")
def test_ruff_check(root):
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "python", "tests/python", "scripts"],
                         cwd=root, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
