"""The Ray backend against a real local Ray cluster (started with `ray start --head` by
the module fixture, 2 worker CPUs, stopped at the end): the same sweep gives the same
DataFrame as the local backend, and a task whose worker is killed is retried and reported.
Needs the native module and Ray (both installed by `make setup`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
import ray.cloudpickle

import tiermem
from conftest import skip_e2e
from tiermem import engine, sweeps
from tiermem.config import resolve

pytest.importorskip("tiermem._native")

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "examples" / "sim.toml"
# 3 policies x 2 CXL latencies x 2 contention levels x 2 seeds = 24 points.
GRID = {
    "duration_s": [2],
    "policy.policy": ["hemem", "tpp", "memtis"],
    "machine.tiers[1].unloaded_latency_ns": [135, 189],
    "antagonist[0].cores": [5, 15],
    "seed": [1, 2],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    port = _free_port()
    ray_cli = Path(sys.executable).with_name("ray")
    # A short temp dir: Ray's socket paths must fit 107 bytes.
    tmp = tempfile.mkdtemp(prefix="tmray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats", f"--temp-dir={tmp}", "--block"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            engine.check_ray_address(address, timeout_s=1)
            break
        except tiermem.ConfigError:
            if head.poll() is not None or time.monotonic() > deadline:
                head.kill()
                pytest.fail(f"`ray start --head` did not come up at {address} (exit {head.poll()})")
            time.sleep(0.5)
    yield address
    if ray.is_initialized():
        ray.shutdown()
    # `ray start --block` stops every process it started when it is interrupted.
    os.killpg(head.pid, signal.SIGINT)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()


def test_ray_sweep_equals_local(cluster):
    local = tiermem.sweep(str(SIM), GRID)
    remote = tiermem.sweep(str(SIM), GRID, backend="ray", address=cluster)
    assert len(local) == 24
    # Distinct results: the grid changes the numbers (the comparison is not of constants).
    assert local["steady_state.throughput_ops_per_s"].nunique() >= 12
    # Everything but the host's wall time of each simulation (a timing, not a result).
    timings = [c for c in local.columns if "wall_time" in c]
    assert timings == ["wall_time_s"]
    pd.testing.assert_frame_equal(local.drop(columns=timings), remote.drop(columns=timings))
    assert remote.attrs["retried"] == []


def _simulate_or_die(job):
    """Kill this worker (SIGKILL: the process dies mid-task) on the first attempt at the
    point `job` names; simulate it on the retry."""
    marker, text, point, victim = job
    if point == victim and not os.path.exists(marker):
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return sweeps._run_point(text, point)


def test_killed_worker_task_is_retried_and_reported(cluster, tmp_path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    text, _ = resolve(str(SIM))
    points = sweeps.grid_points({"duration_s": [2], "policy.policy": ["hemem", "tpp", "memtis"], "seed": [1, 2]})
    victim = points[3]
    jobs = [(str(tmp_path / "killed"), text, p, victim) for p in points]
    rows, report = engine.run_tasks(_simulate_or_die, jobs, backend="ray", address=cluster)
    assert (tmp_path / "killed").exists()
    assert [f.index for f in report.retried] == [3]
    assert report.retried[0].item[2] == victim
    assert "Worker" in report.retried[0].error or "died" in report.retried[0].error, report.retried[0].error
    assert report.failed == []
    expected = [sweeps._run_point(text, p) for p in points]
    for row in (*rows, *expected):
        del row["wall_time_s"]  # a timing, not a result
    assert rows == expected


@pytest.mark.skipif(skip_e2e(), reason="TIERMEM_SKIP_E2E=1")
def test_reproduce_all_on_ray_matches_local(cluster, tmp_path):
    """Heavy: a whole reproduction, on Ray and locally (16 s here under load)."""
    from tiermem import api, workbench

    index = workbench.reproduce_all(tmp_path / "ray", quick=True, only=["mercury-fig14"], address=cluster,
                                    plots=False, progress=False)
    assert index["backend"] == "ray"
    assert [(f["experiment"], f["status"]) for f in index["figures"]] == [("mercury-fig14", "ran")]
    on_ray = json.loads((tmp_path / "ray" / "mercury-fig14" / "summary.json").read_text())
    local = api.reproduce("mercury-fig14", tmp_path / "local", quick=True, plots=False)
    assert on_ray["rows"] == local["rows"] and on_ray["rows"]
    # Every data file came back from the worker, subfolders included (per-system series).
    def files(d):
        return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())
    assert files(tmp_path / "ray" / "mercury-fig14") == files(tmp_path / "local")
    assert "mercury/timeseries.csv" in files(tmp_path / "local")
