"""sweep(): cartesian product of path overrides, with the native simulation faked (the
overrides are applied by the real native module)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tiermem
from tiermem import api, config
from tiermem import sweeps as sweep_mod

BASE = {
    "seed": 1,
    "machine": {"antagonist_cores": 0},
    "tiers": [{"name": "dram", "latency_ns": 70.0}, {"name": "cxl", "latency_ns": 135.0}],
    "policy": {"name": "hemem"},
}


class FakeNative:
    """Stands in for tiermem._native: echoes parts of the config into the summary."""

    def __init__(self):
        self.calls: list[dict] = []

    def simulate(self, toml_text: str, origin: str):
        c = config.from_toml(toml_text)
        self.calls.append(c)
        summary = {
            "policy": c["policy"]["name"],
            "throughput": 1e6 / (1 + c["machine"]["antagonist_cores"]) * 135.0 / c["tiers"][1]["latency_ns"],
            "tiers": {"alt_latency_ns": c["tiers"][1]["latency_ns"]},
        }
        return json.dumps(summary), [("t_s", [0.0, 0.1]), ("throughput_ops_per_s", [1.0, 2.0])]

    def check_config(self, toml_text: str, origin: str) -> None:
        """The fake's configs are not simulator configs: only their TOML is checked."""
        config.from_toml(toml_text)


@pytest.fixture
def fake(monkeypatch):
    f = FakeNative()
    monkeypatch.setattr(api, "native", lambda: f)
    return f


def test_grid_points_order():
    pts = sweep_mod.grid_points({"a": [1, 2], "b.c": ["x", "y", "z"]})
    assert len(pts) == 6
    assert pts[0] == {"a": 1, "b.c": "x"} and pts[1] == {"a": 1, "b.c": "y"} and pts[-1] == {"a": 2, "b.c": "z"}
    assert sweep_mod.grid_points({"a": np.array([1, 2])}) == [{"a": 1}, {"a": 2}]
    assert type(sweep_mod.grid_points({"a": np.array([1])})[0]["a"]) is int
    with pytest.raises(TypeError):
        sweep_mod.grid_points({"a": "not a list"})


def test_sweep_overrides_paths(fake):
    grid = {"machine.antagonist_cores": [0, 5, 10], "tiers[1].latency_ns": [135.0, 270.0], "policy.name": ["hemem", "tpp"]}
    df = tiermem.sweep(BASE, grid)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 12 and len(fake.calls) == 12
    assert list(df.columns[:3]) == list(grid)
    # every config the simulator saw carries exactly its point's overrides
    for (_, row), seen in zip(df.iterrows(), fake.calls, strict=True):
        assert seen["machine"]["antagonist_cores"] == row["machine.antagonist_cores"]
        assert seen["tiers"][1]["latency_ns"] == row["tiers[1].latency_ns"]
        assert seen["tiers"][0]["latency_ns"] == 70.0
        assert row["policy"] == row["policy.name"]
        assert row["tiers.alt_latency_ns"] == row["tiers[1].latency_ns"]
    slow = df[(df["machine.antagonist_cores"] == 10) & (df["tiers[1].latency_ns"] == 270.0)]
    assert slow["throughput"].iloc[0] == pytest.approx(1e6 / 11 / 2)
    assert BASE["machine"]["antagonist_cores"] == 0  # base not mutated


def test_simulate_accepts_dict_string_and_path(fake, tmp_path):
    r = tiermem.simulate(BASE)
    assert r.summary["policy"] == "hemem"
    assert list(r.timeseries.columns) == ["t_s", "throughput_ops_per_s"]
    p = tmp_path / "c.toml"
    p.write_text(config.to_toml(BASE))
    assert tiermem.simulate(p).summary == r.summary
    assert tiermem.simulate(config.to_toml(BASE)).summary == r.summary
    r2 = tiermem.simulate(p, overrides={"policy.name": "memtis"})
    assert r2.summary["policy"] == "memtis"


def test_sim_result_save_writes_files(fake, tmp_path):
    r = tiermem.simulate(BASE)
    out = r.save(tmp_path / "run", plots=True)
    assert json.loads((out / "summary.json").read_text()) == r.summary
    assert (out / "timeseries.csv").read_text().splitlines()[0] == "t_s,throughput_ops_per_s"
    assert (out / "throughput.png").stat().st_size > 0


def test_sweep_parallel_matches_serial(fake):
    # Worker processes are forked (Linux default), so they inherit the fake native module.
    grid = {"machine.antagonist_cores": [0, 5, 10, 15], "tiers[1].latency_ns": [135.0, 189.0]}
    serial = tiermem.sweep(BASE, grid, jobs=1)
    parallel = tiermem.sweep(BASE, grid, jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)
