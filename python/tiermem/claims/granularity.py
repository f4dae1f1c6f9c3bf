"""Granularity-aware migration (ICS'18): the numbers §1, §3 and §6 state, read from
granularity-fig8 (its ``checks``: per workload, the best and worst static granularity,
dynamic's share of migrations at each size, its speedup over the 4 KiB baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import BOUND_TOL, POINTS_TOL, RATIO_TOL, Claim


def _workload(s: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    rows = [w for w in s["checks"]["per_workload"] if w["workload"] == name]
    if len(rows) != 1:
        raise KeyError(f"{len(rows)} rows for workload {name}")
    return rows[0]


def _field(name: str, key: str, plus_one: bool = False):
    return lambda s: float(_workload(s, name)[key]) + (1.0 if plus_one else 0.0)


def _speedups(s: Mapping[str, Any]) -> list[float]:
    # The suite of Fig. 8 (the control workloads are tiermem's own additions).
    return [float(w["speedup_vs_baseline"]) for w in s["checks"]["per_workload"] if not w.get("control")]


CLAIMS = [
    Claim("granularity", "granularity-fig8",
          "§3, Fig. 4: at 1:3 latency the migration granularity changes lulesh's runtime by 23 % (worst static over best)",
          1.23, _field("lul", "worst_over_best", plus_one=True), tolerance=RATIO_TOL),
    Claim("granularity", "granularity-fig8",
          "§1: dynamic granularity improves performance by 11 % on average over a fixed (4 KiB) migration granularity",
          1.11, lambda s: 1.0 + sum(_speedups(s)) / len(_speedups(s)), tolerance=RATIO_TOL),
    Claim("granularity", "granularity-fig8",
          "§1: and by up to 36 %",
          1.36, lambda s: 1.0 + max(_speedups(s)), tolerance=RATIO_TOL),
    Claim("granularity", "granularity-fig8",
          "§6, Fig. 11: on graph500 dynamic migrates 64 KiB in more than 95 % of migrations",
          0.95, _field("g500", "dynamic_share_64k"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("granularity", "granularity-fig8",
          "§6, Fig. 11: on cg dynamic migrates 4 KiB in around 85 % of migrations, 64 KiB in the rest",
          0.85, _field("cg", "dynamic_share_4k"), unit="", tolerance=POINTS_TOL, kind="points"),
]
