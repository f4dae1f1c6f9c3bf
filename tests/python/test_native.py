"""The compiled module: present, and errors mapped to tiermem's exception classes."""

from __future__ import annotations

import pytest

import tiermem
from tiermem import errors


def test_native_module_is_built():
    from tiermem import _native

    assert _native.__version__ == tiermem.__version__
    assert callable(_native.simulate)


def test_exception_hierarchy():
    for cls in (tiermem.ConfigError, tiermem.TraceError, tiermem.UnsupportedError):
        assert issubclass(cls, tiermem.TiermemError)
        assert cls.__module__ == "tiermem.errors"
    assert tiermem.ConfigError is errors.ConfigError
    assert issubclass(tiermem.ConfigError, ValueError)


def test_invalid_toml_syntax_is_config_error():
    from tiermem import _native

    with pytest.raises(tiermem.ConfigError):
        _native.simulate("this is = = not toml", "<test>")


def test_unknown_field_error_names_the_field(root):
    """An unknown field deep in a valid config raises ConfigError naming its full path."""
    from tiermem import _native

    example = root / "examples" / "sim.toml"
    if not example.is_file():
        pytest.skip("examples/sim.toml not written yet")
    base = tiermem.from_toml(example.read_text())
    table = next((k for k, v in base.items() if isinstance(v, dict)), None)
    assert table is not None, "examples/sim.toml has no table to put a typo in"
    base[table]["definitely_not_a_field"] = 1
    with pytest.raises(tiermem.ConfigError, match="definitely_not_a_field") as info:
        _native.simulate(tiermem.to_toml(base), str(example))
    assert table in str(info.value)
