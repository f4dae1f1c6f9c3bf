"""Memstrata (Flat Memory Mode): the numbers §3 states, read from memstrata-fig5/fig6,
§4.2's slowdown estimator, read from memstrata-estimator, and §6.1's allocator results,
read from memstrata-fig10/fig12."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import BOUND_TOL, HELD_OUT_TOL, POINTS_TOL, Claim


def _stat(*path: str):
    def measure(s: Mapping[str, Any]) -> float:
        v: Any = s["stats"]
        for k in path:
            v = v[k]
        return float(v)
    return measure


def _over_mixes(field: str, reduce):
    def measure(s: Mapping[str, Any]) -> float:
        return float(reduce(float(m[field]) for m in s["mixes"]))
    return measure


def _fixed_share(case: str):
    """Share of a Fig. 12 case's outliers that Memstrata brings to 5 % or less."""
    def measure(s: Mapping[str, Any]) -> float:
        after = next(c["outliers_memstrata"] for c in s["cases"] if c["case"] == case)
        return sum(1 for x in after if x <= 0.05) / len(after)
    return measure


def _share(config: str, key: str, paper: float, text: str) -> Claim:
    return Claim("memstrata", "memstrata-fig5", text, paper, _stat(config, key), unit="",
                 tolerance=POINTS_TOL, kind="points")


CLAIMS = [
    _share("hw-tiered", "share_at_most_5pct", 0.73,
           "§3, Fig. 5: under hardware tiering alone, 73 % of the 115 workloads stay within 5 % of all-local"),
    _share("mixed", "share_at_most_5pct", 0.82,
           "§3, Fig. 5: with a dedicated local node beside it (mixed), 82 % stay within 5 %"),
    _share("hw-tiered", "share_at_most_10pct", 0.86,
           "§3, Fig. 5: under hardware tiering alone, 86 % stay within 10 %"),
    _share("mixed", "share_at_most_10pct", 0.95, "§3, Fig. 5: mixed, 95 % stay within 10 %"),
    Claim("memstrata", "memstrata-fig6",
          "§3, Fig. 6: conflicting with a noisy neighbour (MLC), not isolated, 73 % of the sampled workloads slow "
          "down > 10 % (read over the memory-sensitive ones, > 5 % on CXL alone: the paper's sample is not "
          "published, and insensitive web workloads cannot slow down)",
          0.73, _stat("share_over_10pct_conflicting_sensitive"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("memstrata", "memstrata-fig6",
          "§3.3: with local DRAM conflicts isolated (colored) and the 6-thread MLC neighbour saturating "
          "neither tier, the neighbour causes no interference; read as the largest change of any victim, "
          "held to the issue's 1 point",
          0.01, _stat("max_isolated_vs_alone"), unit="", tolerance=BOUND_TOL, kind="at_most"),
    # §4.2's estimator. The paper's other number, MPKI-only at 63 %, is reported ungated
    # (memstrata-estimator's stats.ungated says why): it is below answering "no outlier" for
    # every VM on the paper's own population (Fig. 5: 73-82 % within 5 %).
    Claim("memstrata", "memstrata-estimator",
          "§4.2: the slowdown estimator classifies held-out workloads' samples (workloads split evenly, "
          "every sample of a workload on one side; mean of 10 splits) with at least 80 % accuracy",
          0.80, _stat("validation_accuracy_mean"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("memstrata", "memstrata-estimator",
          "§4.2: and at least 10 points above answering \"no outlier\" for every held-out VM (mean of the "
          "10 splits' margins)",
          0.10, _stat("accuracy_over_constant_mean"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("memstrata", "memstrata-estimator",
          "§4.2: under the paper's protocol (one sample per workload, measured under hardware tiering alone; "
          "workloads split 50/50) 88 % validation accuracy",
          0.88, _stat("paper_protocol", "validation_accuracy_mean"), unit="", tolerance=HELD_OUT_TOL, kind="points"),
    Claim("memstrata", "memstrata-fig11",
          "§6.1, Fig. 11: under TPP (half of each VM's memory local, 4 KiB pages) 17 % of the workloads slow "
          "down by more than 50 % (thrashing)",
          0.17, _stat("tpp", "share_over_50pct"), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("memstrata", "memstrata-fig10",
          "§6.1, Fig. 10: in every six-VM mix the outlier is above 30 % under static hardware tiering (the least of the six)",
          0.30, _over_mixes("outlier_static", min), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("memstrata", "memstrata-fig10",
          "Abstract, §6.1: Memstrata brings the outliers from above 30 % to below 6 % (the worst of the six mixes)",
          0.06, _over_mixes("outlier_memstrata", max), unit="", tolerance=BOUND_TOL, kind="at_most"),
    Claim("memstrata", "memstrata-fig12",
          "§6.1, Fig. 12b: with four outliers and 33 % dedicated, not every outlier gets below 5 % (share brought to ≤ 5 %)",
          0.75, _fixed_share("4-outliers-33pct"), unit="", tolerance=BOUND_TOL, kind="at_most"),
    Claim("memstrata", "memstrata-fig12",
          "§6.1, Fig. 12c: with 67 % dedicated Memstrata removes all four outliers (share brought to ≤ 5 %)",
          1.0, _fixed_share("4-outliers-67pct"), unit="", tolerance=BOUND_TOL, kind="at_least"),
]
