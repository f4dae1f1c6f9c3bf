"""`tiermem reproduce all` (resumable by config hash, index.json) and `tiermem sweep`
(sweep files, their one-line errors with exit 2, Parquet), through the real CLI binary
and native module."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tiermem import engine, workbench

pytest.importorskip("tiermem._native")

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "release" / "tiermem"
needs_bin = pytest.mark.skipif(not BIN.exists(), reason="target/release/tiermem not built (make setup)")


def tiermem_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TIERMEM_PYTHON": sys.executable}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=300)


def test_experiments_come_from_the_native_list():
    names = workbench.experiments()
    assert "colloid-fig1" in names and "mercury-fig13" in names
    # Every paper of the five has a reproduction in `reproduce all`.
    assert {workbench.paper_of(n) for n in names} >= {"colloid", "mercury", "granularity", "memstrata", "tierscape"}


def test_code_version_names_the_simulator_sources():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    trees, _, _dirty = workbench.code_version().partition("+")
    crates, experiments = trees.split("-")
    assert len(crates) == 12 and len(experiments) == 12 and int(crates, 16) >= 0


def test_config_hash_follows_the_config():
    a = workbench.figure_config("colloid-fig1", quick=True, version="v1")
    assert a["base_configs"], "the Colloid base config is read from experiments/colloid/"
    assert workbench.config_hash(a) == workbench.config_hash(workbench.figure_config("colloid-fig1", True, "v1"))
    assert workbench.config_hash(a) != workbench.config_hash(workbench.figure_config("colloid-fig1", False, "v1"))
    assert workbench.config_hash(a) != workbench.config_hash(workbench.figure_config("colloid-fig1", True, "v2"))


@needs_bin
def test_reproduce_all_is_resumable(tmp_path):
    out = tmp_path / "suite"
    first = tiermem_cli("reproduce", "all", "--quick", "--only", "mercury-fig14", "--no-plots", "--out", str(out))
    assert first.returncode == 0, first.stderr
    index = json.loads((out / "index.json").read_text())
    [fig] = index["figures"]
    assert fig["experiment"] == "mercury-fig14" and fig["status"] == "ran" and fig["paper"] == "mercury"
    assert fig["seed"] == 1 and fig["wall_s"] > 0 and fig["code_version"]
    assert fig["config"]["base_configs"] == ["experiments/mercury/fig13.toml"]
    summary_path = out / "mercury-fig14" / "summary.json"
    summary = json.loads(summary_path.read_text())
    assert summary["run"]["config_hash"] == fig["config_hash"] and summary["rows"]
    # The per-system time series the reproduction writes in subfolders are kept.
    assert (out / "mercury-fig14" / "mercury" / "timeseries.csv").stat().st_size > 0
    stamp = summary_path.stat().st_mtime_ns
    again = tiermem_cli("reproduce", "all", "--quick", "--only", "mercury-fig14", "--no-plots", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "index.json").read_text())["figures"][0]["status"] == "reused"
    assert summary_path.stat().st_mtime_ns == stamp
    # A stale hash (another config) reruns the figure.
    summary["run"]["config_hash"] = "0" * 16
    summary_path.write_text(json.dumps(summary))
    third = tiermem_cli("reproduce", "all", "--quick", "--only", "mercury-fig14", "--no-plots", "--out", str(out))
    assert third.returncode == 0, third.stderr
    assert json.loads((out / "index.json").read_text())["figures"][0]["status"] == "ran"
    # Another paper's figure alone: the index keeps the first figure's entry beside it.
    other = tiermem_cli("reproduce", "all", "--quick", "--only", "mercury-fig16", "--no-plots", "--out", str(out))
    assert other.returncode == 0, other.stderr
    figures = json.loads((out / "index.json").read_text())["figures"]
    assert [(f["experiment"], f["status"]) for f in figures] == [("mercury-fig14", "ran"), ("mercury-fig16", "ran")]


def _one_line_exit_2(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with-block ends


@needs_bin
@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('[grid]\n"policy.bogus" = [1]\n', "policy.bogus"),
        ('[grid]\n', "`grid`"),
        ('seeds = [1, "two"]\n[grid]\n"duration_s" = [2]\n', "`seeds`"),
        ('seeds = [1.5]\n[grid]\n"duration_s" = [2]\n', "`seeds`"),
        ('[grid]\n"duration_s" = []\n', "grid.duration_s"),
        ('colour = "red"\n[grid]\n"duration_s" = [2]\n', "`colour`"),
        ('[grid]\n"machine.tiers[5].capacity" = ["1G"]\n', "machine.tiers[5].capacity"),
    ],
)
def test_bad_sweep_files(tmp_path, body, needle):
    f = tmp_path / "bad.toml"
    f.write_text(f'base = "{ROOT / "examples" / "sim.toml"}"\n' + body)
    res = tiermem_cli("sweep", str(f), "--out", str(tmp_path / "x.parquet"))
    _one_line_exit_2(res, needle)
    assert not (tmp_path / "x.parquet").exists()


@needs_bin
def test_ray_address_that_does_not_answer(tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    res = tiermem_cli("sweep", str(ROOT / "examples" / "sweep.toml"), "--out", str(tmp_path / "x.parquet"), "--ray", address)
    _one_line_exit_2(res, address)
    res = tiermem_cli("reproduce", "all", "--quick", "--out", str(tmp_path / "o"), "--ray", address)
    _one_line_exit_2(res, address)
    res = tiermem_cli("reproduce", "all", "--quick", "--out", str(tmp_path / "o"), "--only", "nosuchpaper")
    _one_line_exit_2(res, "--only", "nosuchpaper")


@needs_bin
def test_sweep_file_to_parquet(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(f'base = "{ROOT / "examples" / "sim.toml"}"\nseeds = [1, 2]\n'
                 '[grid]\n"duration_s" = [2]\n"policy.policy" = ["hemem", "tpp"]\n')
    res = tiermem_cli("sweep", str(f), "--out", str(tmp_path / "s.parquet"), "--jobs", "2")
    assert res.returncode == 0, res.stderr
    df = pd.read_parquet(tmp_path / "s.parquet")
    assert df[["policy.policy", "seed"]].values.tolist() == [["hemem", 1], ["hemem", 2], ["tpp", 1], ["tpp", 2]]
    assert (df["steady_state.throughput_ops_per_s"] > 0).all()
    assert df.loc[0, "steady_state.throughput_ops_per_s"] != df.loc[2, "steady_state.throughput_ops_per_s"]


_calls: list[int] = []


def _fails_once(x: int) -> int:
    _calls.append(x)
    if x == 2 and _calls.count(2) == 1:
        raise RuntimeError("transient")
    return x * 10


def _always_fails(x: int) -> int:
    if x == 1:
        raise RuntimeError("broken point")
    return x


def test_local_engine_retries_once_and_reports():
    _calls.clear()
    results, report = engine.run_tasks(_fails_once, [1, 2, 3])
    assert results == [10, 20, 30]
    assert [(f.index, f.item, f.attempt) for f in report.retried] == [(1, 2, 1)]
    assert "transient" in report.retried[0].error
    with pytest.raises(engine.TasksFailedError) as e:
        engine.run_tasks(_always_fails, [0, 1, 2])
    assert [(f.index, f.attempt) for f in e.value.report.failed] == [(1, 2)]
    assert e.value.results == [0, None, 2]
    assert "broken point" in str(e.value)


def test_shipped_sweep_file_loads():
    base, grid = workbench.load_sweep_file(ROOT / "examples" / "sweep.toml")
    assert Path(base) == (ROOT / "examples" / "sim.toml").resolve()
    assert grid["seed"] == [1, 2] and list(grid)[-1] == "seed"


def test_timings_page_lists_every_reproduction_quick_and_full(tmp_path):
    def index(d, figures):
        d.mkdir()
        (d / "index.json").write_text(json.dumps({"figures": figures}))

    index(tmp_path / "q", [{"experiment": "colloid-fig1", "wall_s": 37.25, "status": "ran"},
                           {"experiment": "mercury-fig14", "wall_s": 1.3, "status": "reused"}])
    index(tmp_path / "f", [{"experiment": "colloid-fig1", "wall_s": 57.0, "status": "ran"}])
    page = workbench.timings_page(tmp_path / "q", tmp_path / "f")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in page.splitlines()[2:]}
    assert set(workbench.experiments()) < set(rows), "a row per reproduction"
    assert rows["colloid-fig1"] == "| colloid-fig1 | 37.2 | 57.0 |"
    assert rows["mercury-fig14"] == "| mercury-fig14 | 1.3 (reused) | not run |"
    assert rows["all (figures that ran)"] == "| all (figures that ran) | 37 | 57 |"
    assert "not run | not run" in rows["memstrata-fig12"]
