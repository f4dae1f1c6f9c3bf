"""The compiled module: present, and errors mapped to tiermem's exception classes."""

from __future__ import annotations

import pytest

import tiermem
from conftest import skip_e2e
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


def base_config(root):
    path = root / "experiments" / "colloid" / "gups-base.toml"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path, tiermem.from_toml(path.read_text())


def test_unknown_field_error_names_the_field(root):
    """An unknown field inside a table of a valid config raises ConfigError naming it."""
    from tiermem import _native

    path, base = base_config(root)
    base["workload"]["definitely_not_a_field"] = 1
    with pytest.raises(tiermem.ConfigError, match="definitely_not_a_field") as info:
        _native.simulate(tiermem.to_toml(base), str(path))
    assert "workload" in str(info.value)


e2e = pytest.mark.skipif(skip_e2e(), reason="TIERMEM_SKIP_E2E=1")


@e2e
def test_simulate_shipped_config_end_to_end(root, tmp_path):
    path, base = base_config(root)
    res = tiermem.simulate(path, overrides={"duration_s": 1})
    assert isinstance(res.summary, dict) and res.summary
    assert res.timeseries.columns[0] == "t_s"
    assert len(res.timeseries) > 0
    assert res.timeseries["t_s"].is_monotonic_increasing
    out = res.save(tmp_path / "sim")
    assert (out / "summary.json").is_file() and (out / "timeseries.csv").is_file()
    assert (out / "throughput.png").is_file()


@e2e
def test_reproduce_colloid_fig1_quick(tmp_path):
    summary = tiermem.reproduce("colloid-fig1", tmp_path / "fig1", quick=True)
    assert summary["experiment"] == "colloid-fig1"
    systems = {r["system"] for r in summary["rows"]}
    assert {"hemem", "tpp", "memtis"} <= systems
    for png in ("fig1_throughput.png", "fig2a_latency.png", "fig2b_share.png"):
        assert (tmp_path / "fig1" / png).stat().st_size > 5_000


def test_reproduce_unknown_experiment_is_config_error(tmp_path):
    with pytest.raises(tiermem.ConfigError, match="no-such-figure"):
        tiermem.reproduce("no-such-figure", tmp_path)
