"""Colloid (SOSP '24): the numbers §2.1 and §5 state, read from colloid-fig1/5/6/7/8/9/10/11."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import BOUND_TOL, POINTS_TOL, TIME_TOL, Claim, pick, value

SYSTEMS = {"hemem": "HeMem", "tpp": "TPP", "memtis": "MEMTIS"}


def _worst_gap(s: Mapping[str, Any]) -> float:
    return max(r["best_case_throughput"] / r["throughput"] for r in pick(s, contention=3) if r["system"] in SYSTEMS)


def _latency_ratio(system: str):
    return lambda s: (value(s, "default_tier_latency_ns", system=system, contention=3)
                      / value(s, "alternate_tier_latency_ns", system=system, contention=3))


def _slowdown(system: str):
    return lambda s: value(s, "throughput", system=system, contention=0) / value(s, "throughput", system=system, contention=3)


def _colloid_gain(system: str):
    return lambda s: (value(s, "throughput", system=system, contention=3, colloid=True)
                      / value(s, "throughput", system=system, contention=3, colloid=False))


def _closeness(system: str):
    return lambda s: min(r["throughput"] / r["best_case_throughput"] for r in pick(s, system=system, colloid=True))


def _max_gain(system: str, **match: Any):
    def measure(s: Mapping[str, Any]) -> float:
        gains = [r["gain"] for r in pick(s, system=system, **match)]
        if not gains:
            raise KeyError(system)
        return max(gains)
    return measure


def _max_gain_large_objects(system: str):
    def measure(s: Mapping[str, Any]) -> float:
        gains = [r["gain"] for r in pick(s, system=system, contention=0) if r.get("object_size", 0) >= 256]
        if not gains:
            raise KeyError(system)
        return max(gains)
    return measure


def _converge(system: str):
    return lambda s: value(s, "converge_s", scenario="contention-0x-to-3x", system=system, colloid=True)


def _hot_share(levels: tuple[int, ...], worst: Callable[..., float]):
    """The hot-set share in the default tier with Colloid at ``levels``: the worst of the
    systems (``min`` where the paper says all of it, ``max`` where it says none)."""
    def measure(s: Mapping[str, Any]) -> float:
        shares = [r["hot_set_default_share"] for r in pick(s, colloid=True)
                  if r["system"] in SYSTEMS and r["contention"] in levels]
        if not shares:
            raise KeyError("hot_set_default_share")
        return worst(shares)
    return measure


def _balanced_latency(s: Mapping[str, Any]) -> float:
    """Default / alternate latency with Colloid at 1×, the system farthest from equal."""
    ratios = [r["default_tier_latency_ns"] / r["alternate_tier_latency_ns"]
              for r in pick(s, colloid=True, contention=1) if r["system"] in SYSTEMS]
    return max(ratios, key=lambda x: abs(x - 1))


def _hemem_fig10(column: str, op: Callable[[float, float], float]):
    """HeMem+Colloid against HeMem when the hot set moves at 0× (Fig. 10, left)."""
    return lambda s: op(value(s, column, scenario="hot-set-move-0x", system="hemem", colloid=True),
                        value(s, column, scenario="hot-set-move-0x", system="hemem", colloid=False))


CLAIMS = [
    Claim("colloid", "colloid-fig1", "§1/§2.1: under 3× contention the systems are up to 2.3× worse than the best case",
          2.3, _worst_gap),
    Claim("colloid", "colloid-fig1", "§2.1, Fig. 2a: at 3× the default tier's latency is 2.4× the alternate tier's (HeMem)",
          2.4, _latency_ratio("hemem")),
    *(Claim("colloid", "colloid-fig1", f"§2.1: {name} throughput falls {v}× from 0× to 3× contention", v, _slowdown(sys))
      for sys, name, v in (("hemem", "HeMem", 3.42), ("tpp", "TPP", 3.39), ("memtis", "MEMTIS", 3.29))),
    *(Claim("colloid", "colloid-fig5", f"§5.1, Fig. 5: Colloid speeds {name} up {v}× at 3× contention", v, _colloid_gain(sys))
      for sys, name, v in (("hemem", "HeMem", 2.3), ("tpp", "TPP", 2.35), ("memtis", "MEMTIS", 2.3))),
    *(Claim("colloid", "colloid-fig5", f"§5.1: {name}+Colloid within {pct} % of the best case at every contention "
            "(worst throughput / best case)", 1 - pct / 100, _closeness(sys), unit="", tolerance=BOUND_TOL, kind="at_least")
      for sys, name, pct in (("hemem", "HeMem", 3), ("tpp", "TPP", 8), ("memtis", "MEMTIS", 13))),
    *(Claim("colloid", "colloid-fig7", f"§5.2, Fig. 7: at alternate-tier latency 2.7× Colloid gains {name} up to {v}×",
            v, _max_gain(sys, alt_latency_ratio=2.7))
      for sys, name, v in (("hemem", "HeMem", 1.76), ("tpp", "TPP", 1.76), ("memtis", "MEMTIS", 1.63))),
    *(Claim("colloid", "colloid-fig8", f"§5.2, Fig. 8: objects ≥ 256 B at 0× contention, Colloid gains {name} up to {v}×",
            v, _max_gain_large_objects(sys))
      for sys, name, v in (("hemem", "HeMem", 1.31), ("tpp", "TPP", 1.35), ("memtis", "MEMTIS", 1.35))),
    *(Claim("colloid", "colloid-fig9", f"§5.3, Fig. 9: after 0×→3× contention {name}+Colloid converges in ~{v} s",
            v, _converge(sys), unit=" s", tolerance=TIME_TOL, kind="approx")
      for sys, name, v in (("hemem", "HeMem", 10), ("tpp", "TPP", 250), ("memtis", "MEMTIS", 25))),
    Claim("colloid", "colloid-fig6", "§5.1, Fig. 6a: at 0× Colloid places nearly the entire hot set in the default tier "
          "(least of the three systems)", 1.0, _hot_share((0,), min), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("colloid", "colloid-fig6", "§5.1, Fig. 6a: at 2× and 3× Colloid places the entire hot set in the alternate tier "
          "(share there, least of the three systems)", 1.0, lambda s: 1 - _hot_share((2, 3), max)(s), unit="",
          tolerance=POINTS_TOL, kind="points"),
    Claim("colloid", "colloid-fig6", "§5.1, Fig. 6b: at 1× Colloid equalizes the tiers' latencies (default / alternate, "
          "the system farthest from 1)", 1.0, _balanced_latency, kind="approx"),
    Claim("colloid", "colloid-fig10", "§5.3, Fig. 10: HeMem+Colloid does not exceed HeMem's peak migration rate "
          "(peak with / without)", 1.0, _hemem_fig10("peak_migrated_bytes_per_s", lambda a, b: a / b),
          tolerance=BOUND_TOL, kind="at_most"),
    Claim("colloid", "colloid-fig10", "§5.3: HeMem+Colloid takes ~3 s longer than HeMem to converge after the hot set moves",
          3.0, _hemem_fig10("converge_s", lambda a, b: a - b), unit=" s", tolerance=TIME_TOL, kind="approx"),
    Claim("colloid", "colloid-fig10", "§5.3: in steady state HeMem+Colloid migrates < 0.7 % of the application's traffic",
          0.007, lambda s: value(s, "tail_migration_share", scenario="hot-set-move-0x", system="hemem", colloid=True),
          unit="", tolerance=BOUND_TOL, kind="at_most"),
    *(Claim("colloid", "colloid-fig11", f"§5.3, Fig. 11: Colloid gains {name} on {label} up to {v}× "
            "(largest over the contention levels)", v, _max_gain(sys, app=app))
      for app, label, gains in (("gapbs", "GAPBS", (1.92, 1.48, 2.12)), ("silo", "Silo", (1.25, 1.17, 1.17)),
                                ("cachelib", "CacheLib", (1.74, 1.79, 1.93)))
      for (sys, name), v in zip(SYSTEMS.items(), gains, strict=True)),
]
