"""Memstrata (Flat Memory Mode): the numbers §3 states, read from memstrata-fig5/fig6.

memstrata-fig10/fig12 (the allocator over six-VM mixes) run only in builds with the ``onnx``
feature (the estimator's inference); their claims join when those reproductions are in
``tiermem reproduce all``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import POINTS_TOL, Claim


def _stat(*path: str):
    def measure(s: Mapping[str, Any]) -> float:
        v: Any = s["stats"]
        for k in path:
            v = v[k]
        return float(v)
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
          "§3, Fig. 6: conflicting with a noisy neighbour (MLC), not isolated, 73 % of workloads slow down > 10 %",
          0.73, _stat("share_over_10pct_conflicting"), unit="", tolerance=POINTS_TOL, kind="points"),
]
