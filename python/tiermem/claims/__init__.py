"""Each paper's claims, checked against tiermem's reproductions.

A :class:`Claim` is one number a paper states (a speedup, a latency, a convergence time),
where it states it, and how to read tiermem's counterpart from a reproduction's
``summary.json``. One module per paper in this package (``colloid.py``, ``mercury.py``,
...) defines ``CLAIMS``; :func:`all_claims` collects every module, so a paper's claims are
added by adding its module, with no list to edit.

Tolerances are fixed per kind of number, never per claim to make it pass: ``RATIO_TOL``
for speedups, ratios (of the effect: the distance from 1) and latencies, ``TIME_TOL`` for
the timescales papers give as "~N s", ``POINTS_TOL`` for shares of a population a paper
states in percent ("73 % of workloads"), bounds as stated.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Claim", "RATIO_TOL", "TIME_TOL", "POINTS_TOL", "BOUND_TOL", "HELD_OUT_TOL", "all_claims", "evaluate", "pick", "value"]

#: Relative tolerance for a ratio, speedup or latency the paper states.
RATIO_TOL = 0.15
#: Relative tolerance for a timescale the paper gives approximately ("within ~10 s").
TIME_TOL = 0.5
#: Absolute tolerance, in fractions, for a share of a population ("82 % of 115 workloads"):
#: five percentage points (a share of ~100 workloads moves by one point per workload).
POINTS_TOL = 0.05
#: A bound the paper states ("within 3 % of the best case") is checked as stated.
BOUND_TOL = 0.0
#: Absolute tolerance for a classifier's accuracy on a held-out half of a population of
#: ~115 (57 held out, Memstrata §4.2): six points (issue 47), about 1.4 binomial standard
#: errors at 88 % (4.3 points) and three and a half held-out workloads.
HELD_OUT_TOL = 0.06

#: How a measured number is compared with the paper's: ``approx`` within the tolerance
#: (relative to the paper's number) either way; ``ratio`` for speedups and other ratios,
#: within the tolerance relative to the paper's distance from 1 (a 1.15× claim is a 15 %
#: effect: 1.0× must not pass it); ``at_least`` / ``at_most`` a bound the paper states
#: ("within 3 % of"); ``points`` a share within an absolute number of points (the
#: tolerance is a fraction: 0.05 = 5 points).
KINDS = ("ratio", "approx", "at_least", "at_most", "points")


@dataclass(frozen=True)
class Claim:
    paper: str
    experiment: str
    #: The claim in words, with the paper's section or figure.
    text: str
    paper_value: float
    measure: Callable[[Mapping[str, Any]], float]
    unit: str = "×"
    tolerance: float = RATIO_TOL
    kind: str = "ratio"
    #: Where the claim is known to fail: which published fact the model cannot meet, and
    #: why (one line, shown under the paper's table while the claim fails).
    gap: str = ""

    def passes(self, measured: float) -> bool:
        if measured != measured:  # NaN: the reproduction lacks the rows
            return False
        if self.kind == "at_least":
            return measured >= self.paper_value * (1 - self.tolerance)
        if self.kind == "at_most":
            return measured <= self.paper_value * (1 + self.tolerance)
        if self.kind == "ratio":
            return abs(measured - self.paper_value) <= self.tolerance * abs(self.paper_value - 1)
        if self.kind == "points":
            return abs(measured - self.paper_value) <= self.tolerance
        return abs(measured - self.paper_value) <= self.tolerance * abs(self.paper_value)

    def tolerance_text(self) -> str:
        pct = f"{self.tolerance * 100:.0f} %"
        return {"ratio": f"± {pct} of (paper − 1)", "approx": f"± {pct}", "at_least": f"≥ paper − {pct}",
                "at_most": f"≤ paper + {pct}", "points": f"± {self.tolerance * 100:.0f} points"}[self.kind]


def all_claims() -> list[Claim]:
    """Every claim of every paper module in this package, in module order."""
    out: list[Claim] = []
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        out += list(getattr(importlib.import_module(f"{__name__}.{mod.name}"), "CLAIMS", []))
    return out


def evaluate(claim: Claim, summary: Mapping[str, Any] | None) -> tuple[float, bool]:
    """(tiermem's number, pass) for ``claim`` against an experiment's summary (NaN and
    fail when the summary is missing or lacks the rows the claim reads)."""
    if summary is None:
        return float("nan"), False
    try:
        measured = float(claim.measure(summary))
    except (KeyError, ValueError, ZeroDivisionError, TypeError, IndexError):
        measured = float("nan")
    return measured, claim.passes(measured)


def pick(summary: Mapping[str, Any], **match: Any) -> list[Mapping[str, Any]]:
    """The summary's rows whose fields equal every ``match`` value."""
    return [r for r in summary.get("rows", []) if all(r.get(k) == v for k, v in match.items())]


def value(summary: Mapping[str, Any], column: str, **match: Any) -> float:
    """``column`` of the one row matching ``match`` (KeyError when none or several)."""
    rows = pick(summary, **match)
    if len(rows) != 1:
        raise KeyError(f"{len(rows)} rows match {match}")
    return float(rows[0][column])
