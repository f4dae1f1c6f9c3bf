"""Shared fixtures for the Python tests.

The package is imported from the development install (`make setup` runs `maturin
develop`); when running pytest against a bare checkout, python/ is put on sys.path so the
pure-Python tests still run.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
try:
    import tiermem  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "python"))


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def skip_e2e() -> bool:
    return os.environ.get("TIERMEM_SKIP_E2E", "") not in ("", "0")


@pytest.fixture
def root() -> Path:
    return ROOT
