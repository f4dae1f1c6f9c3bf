"""TierScape (Kumar et al., "Taming Server Memory TCO with Multiple Software-Defined
Compressed Tiers"): the comparisons §7.3 draws from Figure 8, read from tierscape-fig8's
rows (``slowdown`` and ``tco_savings``, fractions, per workload and configuration).

The paper's absolute numbers depend on its data's compressibility and its machine; what
it claims is how the configurations compare on one workload. Each claim is therefore a
difference (in points) or a ratio between two configurations, checked as a bound (the
paper's own numbers are in the text)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import BOUND_TOL, Claim, value


def _ratio(workload: str, column: str, config: str, base: str) -> Callable[[Mapping[str, Any]], float]:
    """``column`` of ``config`` over that of ``base`` on ``workload``."""
    return lambda s: (value(s, column, workload=workload, config=config)
                      / value(s, column, workload=workload, config=base))


def _gap(workload: str, column: str, config: str, base: str) -> Callable[[Mapping[str, Any]], float]:
    """``column`` of ``config`` minus that of ``base`` on ``workload``."""
    return lambda s: (value(s, column, workload=workload, config=config)
                      - value(s, column, workload=workload, config=base))


CLAIMS = [
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: on Redis 6T-WF-A saves at least 15 points more memory TCO than 2T-A "
          "(paper: 56.11 % vs 34.84 %, +21.27 points)",
          0.15, _gap("redis", "tco_savings", "6T-WF-A", "2T-A"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: ... at most 3 points more slowdown (paper: 19.48 % vs 18.33 %, +1.15 points)",
          0.03, _gap("redis", "slowdown", "6T-WF-A", "2T-A"), unit="", tolerance=BOUND_TOL, kind="at_most"),
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: on Redis 6T-AM-0.1 saves at least 20 points more memory TCO than 2T-A "
          "(paper: 64.10 % vs 34.84 %, +29.26 points)",
          0.20, _gap("redis", "tco_savings", "6T-AM-0.1", "2T-A"), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: ... at no more slowdown than 2T-A: slowdown ratio at most 1 "
          "(paper: 14.37 % vs 18.33 %, 0.78×)",
          1.0, _ratio("redis", "slowdown", "6T-AM-0.1", "2T-A"), tolerance=BOUND_TOL, kind="at_most"),
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: on PageRank 6T-WF-C slows down less than 2T-C: slowdown ratio at most 1 "
          "(paper: 13.09 % vs 21.82 %, 0.60×)",
          1.0, _ratio("pagerank", "slowdown", "6T-WF-C", "2T-C"), tolerance=BOUND_TOL, kind="at_most"),
    Claim("tierscape", "tierscape-fig8",
          "§7.3, Fig. 8: ... and saves more memory TCO than 2T-C: saving ratio at least 1 "
          "(paper: 40.78 % vs 24.86 %, 1.64×)",
          1.0, _ratio("pagerank", "tco_savings", "6T-WF-C", "2T-C"), tolerance=BOUND_TOL, kind="at_least"),
]
