"""Plots from synthetic data: each kind writes non-empty PNGs of the documented size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from conftest import png_size
from tiermem import plots

SYSTEMS = ["hemem", "tpp", "memtis"]


def write_summary(d: Path, rows: list[dict], experiment: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "summary.json").write_text(json.dumps({"experiment": experiment, "rows": rows}))
    return d


def fig1_rows(with_best_rows: bool) -> list[dict]:
    rows = []
    for c in range(4):
        best = 30e6 - 4e6 * c
        for i, s in enumerate(SYSTEMS):
            rows.append({
                "system": s, "contention": c, "throughput": best / (1 + 0.3 * c + 0.05 * i),
                "best_case_throughput": best, "default_tier_latency_ns": 70.0 * (1 + 1.3 * c),
                "alternate_tier_latency_ns": 135.0, "default_tier_share": 0.97 - 0.01 * i,
            })
        if with_best_rows:
            rows.append({"system": "best-case", "contention": c, "throughput": best, "best_case_throughput": best,
                         "default_tier_latency_ns": 110.0, "alternate_tier_latency_ns": 150.0,
                         "default_tier_share": 1.0 - 0.2 * c})
    return rows


def assert_png(path: Path, size: tuple[int, int]) -> None:
    assert path.is_file(), path
    assert path.stat().st_size > 5_000, f"{path} looks empty"
    assert png_size(path) == size


@pytest.mark.parametrize("with_best_rows", [True, False])
def test_colloid_fig1(tmp_path, with_best_rows):
    d = write_summary(tmp_path, fig1_rows(with_best_rows), "colloid-fig1")
    written = plots.plot("colloid-fig1", d)
    assert [p.name for p in written] == ["fig1_throughput.png", "fig2a_latency.png", "fig2b_share.png"]
    assert_png(d / "fig1_throughput.png", (800, 450))
    assert_png(d / "fig2a_latency.png", (1200, 400))  # one 4-inch panel per system
    assert_png(d / "fig2b_share.png", (800, 450))


def test_colloid_fig1_minimal_rows(tmp_path):
    rows = [{"system": s, "contention": c, "throughput": 1e6 * (c + 1)} for s in SYSTEMS for c in range(2)]
    d = write_summary(tmp_path, rows, "colloid-fig1")
    assert [p.name for p in plots.plot("colloid-fig1", d)] == ["fig1_throughput.png"]


def test_colloid_fig1_repeated_runs_get_error_bars(tmp_path):
    rows = fig1_rows(False)
    rows += [{**r, "throughput": r["throughput"] * 1.05} for r in rows]
    d = write_summary(tmp_path, rows, "colloid-fig1")
    plots.plot("colloid-fig1", d)
    assert_png(d / "fig1_throughput.png", (800, 450))


def test_grouped_bars_draw_a_summarised_rows_range():
    # One row per bar that already summarises 3 runs (colloid-fig1 full): its min-max range.
    frame = pd.DataFrame([
        {"c": 0, "s": "a", "v": 10.0, "lo": 9.0, "hi": 12.0},
        {"c": 0, "s": "b", "v": 20.0, "lo": float("nan"), "hi": float("nan")},
    ])
    fig, axes = plots.new_figure()
    plots.grouped_bars(axes[0, 0], frame, "c", "s", "v", bounds=("lo", "hi"))
    errs = [c for c in axes[0, 0].containers if isinstance(c, ErrorbarContainer)]
    spans = [[seg[:, 1].tolist() for seg in c.lines[2][0].get_segments()] for c in errs]
    assert np.allclose(spans, [[[9.0, 12.0]], [[20.0, 20.0]]])  # b: no range, a zero bar


def test_colloid_fig5(tmp_path):
    rows = []
    for r in fig1_rows(False):
        rows.append({**r, "colloid": False})
        rows.append({**r, "colloid": True, "throughput": r["best_case_throughput"] * 0.95})
    d = write_summary(tmp_path, rows, "colloid-fig5")
    plots.plot("colloid-fig5", d)
    assert_png(d / "fig5_throughput.png", (1000, 450))


@pytest.mark.parametrize("kind,col,values,out", [
    ("colloid-fig7", "alt_latency_ratio", [1.9, 2.3, 2.7], "fig7_gain.png"),
    ("colloid-fig8", "object_size", [64, 256, 4096], "fig8_gain.png"),
])
def test_colloid_heatmaps(tmp_path, kind, col, values, out):
    rows = [{"system": s, "contention": c, col: v, "gain": 1.0 + 0.2 * c + 0.01 * k}
            for s in SYSTEMS for c in range(4) for k, v in enumerate(values)]
    d = write_summary(tmp_path, rows, kind)
    plots.plot(kind, d)
    assert_png(d / out, (1300, 400))


def test_colloid_fig9(tmp_path):
    t = np.arange(0, 5, 0.1)
    parts = []
    for scenario in ["hot-set-change", "contention-change"]:
        for s in SYSTEMS:
            for colloid in (False, True):
                parts.append(pd.DataFrame({
                    "scenario": scenario, "system": s, "colloid": colloid, "t_s": t,
                    "throughput_ops_per_s": 1e7 + 1e6 * np.sin(t) * (2 if colloid else 1),
                    "migrated_bytes_per_s": 1e8 * np.exp(-t),
                }))
    pd.concat(parts).to_csv(tmp_path / "fig9_timeseries.csv", index=False)
    (tmp_path / "summary.json").write_text(json.dumps({"experiment": "colloid-fig9", "change_at_s": 2.0, "rows": []}))
    plots.plot("colloid-fig9", tmp_path)
    assert_png(tmp_path / "fig9_throughput.png", (1050, 520))
    assert_png(tmp_path / "fig9_migration.png", (1050, 520))


def write_timeseries(d: Path, tiers: int = 2) -> None:
    t = np.arange(0, 2, 0.01)
    cols = {"t_s": t, "throughput_ops_per_s": 2e7 + 1e6 * np.cos(t)}
    for i in range(tiers):
        cols[f"tier{i}_latency_ns"] = 70 + 60 * i + 10 * np.sin(t)
        cols[f"tier{i}_read_bytes_per_s"] = 1e10 / (i + 1) + 0 * t
        cols[f"tier{i}_write_bytes_per_s"] = 2e9 + 0 * t
        cols[f"tier{i}_used_bytes"] = 2**30 * (i + 1) + 0 * t
        cols[f"app_share_tier{i}"] = (0.8 if i == 0 else 0.2) + 0 * t
    cols["migrated_bytes_per_s"] = 1e8 * np.exp(-t)
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(cols).to_csv(d / "timeseries.csv", index=False)


def test_timeseries(tmp_path):
    write_timeseries(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"tiers": [{"name": "dram"}, {"name": "cxl"}]}))
    names = [p.name for p in plots.plot("timeseries", tmp_path)]
    assert names == ["throughput.png", "latency.png", "bandwidth.png", "placement.png"]
    for n in names:
        assert_png(tmp_path / n, (800, 450))


def test_timeseries_draws_only_what_exists(tmp_path):
    pd.DataFrame({"t_s": [0.0, 0.1, 0.2], "throughput_ops_per_s": [1.0, 2.0, 3.0]}).to_csv(
        tmp_path / "timeseries.csv", index=False)
    assert [p.name for p in plots.plot("timeseries", tmp_path)] == ["throughput.png"]


def test_cli(tmp_path):
    write_timeseries(tmp_path)
    run = subprocess.run([sys.executable, "-m", "tiermem.plots", "timeseries", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "latency.png" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "tiermem.plots", "no-such-kind", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "colloid-fig1" in bad.stderr
    missing = subprocess.run([sys.executable, "-m", "tiermem.plots", "colloid-fig1", str(tmp_path / "nope")],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "summary.json" in missing.stderr
    listing = subprocess.run([sys.executable, "-m", "tiermem.plots", "--list"], capture_output=True, text=True)
    assert set(plots.KINDS) <= {line.split()[0] for line in listing.stdout.splitlines()}


def test_granularity_fig8(tmp_path):
    rows = []
    settings = ["400MiB 1:3", "200MiB 1:3", "800MiB 1:3", "400MiB 1:2", "400MiB 1:8"]
    for st in settings:
        for w in ["g500", "gups", "str"]:
            schemes = ["baseline", "static-4k", "static-64k", "static-2m", "dynamic"]
            for i, s in enumerate(schemes if st == settings[0] else schemes[1:]):
                rows.append({"setting": st, "workload": w, "scheme": s, "runtime_norm": 1.0 + 0.1 * i,
                             "shootdowns": 1000 // (i + 1), "fast_hit_ratio": 0.5 + 0.05 * i,
                             "migrations_4k": 10 * i, "migrations_64k": 5, "migrations_2m": i})
    d = write_summary(tmp_path, rows, "granularity-fig8")
    written = plots.plot("granularity-fig8", d)
    assert [p.name for p in written] == ["fig8_runtime.png", "fig9_shootdowns.png", "fig10_hit_ratio.png",
                                         "fig11_breakdown.png", "fig12_capacity.png", "fig13_latency.png"]
    for p in written:
        assert p.stat().st_size > 5_000, p
