"""Plots take policies and tiers from the run's own data (summary.json, column names):
a 3-tier simulation and a policy the plots have never heard of draw without code changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tiermem
from tiermem import plots

NEW = "my-new-policy"


@pytest.fixture
def figures(monkeypatch):
    """Every figure plots.save writes: file name -> figure."""
    seen = {}
    real = plots.save

    def save(fig, path: Path):
        seen[path.name] = fig
        return real(fig, path)

    monkeypatch.setattr(plots, "save", save)
    return seen


def labels(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        out.append(ax.get_title())
        legend = ax.get_legend()
        if legend is not None:
            out += [t.get_text() for t in legend.get_texts()]
    return out


def test_three_tier_simulation_plots_every_tier(root, tmp_path, figures):
    cfg = tiermem.from_toml((root / "examples" / "sim.toml").read_text())
    cfg["duration_s"] = 2
    far = {**cfg["machine"]["tiers"][1], "name": "far", "capacity": "64G", "unloaded_latency_ns": 250}
    cfg["machine"]["tiers"].append(far)
    res = tiermem.simulate(cfg, overrides={"policy.policy": "static", "machine.tiers[2].write_cost": 1.5})
    res.save(tmp_path)
    for name in ("latency.png", "bandwidth.png", "placement.png"):
        text = " ".join(labels(figures[name]))
        for i, tier in enumerate(["local", "remote", "far"]):
            assert f"tier {i} ({tier})" in text, (name, text)
    assert "policy static" in labels(figures["throughput.png"])


def write(d: Path, summary: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def test_unknown_policy_and_three_tier_rows(tmp_path, figures):
    rows = [
        {"system": s, "contention": c, "throughput": 1e6 * (3 - c) * (1.1 if s == NEW else 1.0),
         "best_case_throughput": 3.5e6 - 1e6 * c, "tier0_latency_ns": 70.0 + 40 * c,
         "tier1_latency_ns": 135.0, "tier2_latency_ns": 250.0, "default_tier_share": 0.9}
        for s in ["hemem", NEW] for c in range(3)
    ]
    d = write(tmp_path / "fig1", {"experiment": "colloid-fig1", "rows": rows,
                                  "tiers": [{"name": "dram"}, {"name": "cxl"}, {"name": "far"}]})
    assert [p.name for p in plots.plot("colloid-fig1", d)] == ["fig1_throughput.png", "fig2a_latency.png",
                                                               "fig2b_share.png"]
    assert labels(figures["fig1_throughput.png"])[1:] == ["hemem", NEW, "best case"]
    lat = labels(figures["fig2a_latency.png"])
    assert NEW in lat and ["tier 0 (dram)", "tier 1 (cxl)", "tier 2 (far)"] == [x for x in lat if x.startswith("tier")]

    # The summary may order and label its policies; unknown ones still plot.
    d5 = write(tmp_path / "fig5", {"experiment": "colloid-fig5", "systems": [NEW, "hemem"],
                                   "labels": {NEW: "My Policy"},
                                   "rows": [{**r, "colloid": flag} for r in rows for flag in (False, True)]})
    plots.plot("colloid-fig5", d5)
    assert labels(figures["fig5_throughput.png"])[1:] == [
        "My Policy", "My Policy + Colloid", "hemem", "hemem + Colloid", "best case"]

    rows7 = [{"system": s, "contention": c, "alt_latency_ratio": r, "gain": 1.0 + 0.1 * c}
             for s in [NEW, "tpp"] for c in range(2) for r in (1.9, 2.7)]
    plots.plot("colloid-fig7", write(tmp_path / "fig7", {"experiment": "colloid-fig7", "rows": rows7}))
    assert labels(figures["fig7_gain.png"])[:2] == [NEW, "tpp"]


def test_timeseries_with_five_tiers(tmp_path, figures):
    import numpy as np
    import pandas as pd

    t = np.arange(0, 1, 0.1)
    cols = {"t_s": t, "throughput_ops_per_s": 1e6 + 0 * t}
    for i in range(5):
        cols[f"tier{i}_latency_ns"] = 70.0 + 50 * i + 0 * t
        cols[f"app_share_tier{i}"] = 0.2 + 0 * t
    tmp_path.mkdir(exist_ok=True)
    pd.DataFrame(cols).to_csv(tmp_path / "timeseries.csv", index=False)
    write(tmp_path, {"policy": NEW, "steady_state": {"tiers": [{"name": f"t{i}"} for i in range(5)]}})
    names = [p.name for p in plots.plot("timeseries", tmp_path)]
    assert names == ["throughput.png", "latency.png", "placement.png"]
    assert [x for x in labels(figures["latency.png"]) if x] == [f"tier {i} (t{i})" for i in range(5)]
    assert labels(figures["throughput.png"]) == [f"policy {NEW}"]
