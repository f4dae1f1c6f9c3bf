"""Mercury (QoS for tiered memory): the numbers §5.3 and §5.5 state, read from
mercury-fig11/13/14/16."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import BOUND_TOL, POINTS_TOL, Claim, value


def _measured(tenant: str, scale: float = 1.0):
    return lambda s: value(s, "measured", system="mercury", tenant=tenant) * scale


def _gain(tenant: str, column: str, baseline: str):
    def measure(s: Mapping[str, Any]) -> float:
        return value(s, column, system="mercury", tenant=tenant) / value(s, column, system=baseline, tenant=tenant)
    return measure


def _top(system: str, key: str):
    return lambda s: float(s[system][key])


CLAIMS = [
    Claim("mercury", "mercury-fig11", "§5.3, Fig. 11: under TPP the foreground's largest slowdown beside VectorDB is 29 %",
          0.29, _top("tpp", "foreground_max_slowdown"), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("mercury", "mercury-fig11", "§5.3, Fig. 11: under Mercury the foreground's largest slowdown is 12 %",
          0.12, _top("mercury", "foreground_max_slowdown"), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("mercury", "mercury-fig11", "§5.3, Fig. 11: under TPP VectorDB's largest slowdown is 75 %",
          0.75, _top("tpp", "vectordb_max_slowdown"), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("mercury", "mercury-fig11", "§5.3, Fig. 11: under Mercury VectorDB's largest slowdown is 14 %",
          0.14, _top("mercury", "vectordb_max_slowdown"), unit="", tolerance=POINTS_TOL, kind="points"),
    Claim("mercury", "mercury-fig11",
          "§5.3, Fig. 11: \"most workload coordinates shift towards (0,0)\" (share of pairs whose worse slowdown drops)",
          0.5, lambda s: float(s["share_of_pairs_closer_to_origin"]), unit="", tolerance=BOUND_TOL, kind="at_least"),
    Claim("mercury", "mercury-fig13", "§5.5, Fig. 13: under Mercury Redis runs at 453 ns (SLO 460 ns)",
          453, _measured("redis"), unit=" ns", kind="approx"),
    Claim("mercury", "mercury-fig13", "§5.5, Fig. 13: under Mercury VectorDB runs at 286 ns (SLO 290 ns)",
          286, _measured("vectordb"), unit=" ns", kind="approx"),
    Claim("mercury", "mercury-fig13", "§5.5, Fig. 13: under Mercury llama gets 40.5 GB/s (SLO 40 GB/s)",
          40.5, _measured("llama", 1e-9), unit=" GB/s", kind="approx"),
    Claim("mercury", "mercury-fig13", "§5.5, Fig. 13: VectorDB's throughput under Mercury is 1.53× TPP's",
          1.534, _gain("vectordb", "throughput", "tpp")),
    Claim("mercury", "mercury-fig14", "§5.5, Fig. 14: Redis's throughput under Mercury is 1.149× TPP's",
          1.149, _gain("redis", "throughput", "tpp")),
    Claim("mercury", "mercury-fig14", "§5.5, Fig. 14: Redis's throughput under Mercury is 1.203× TPP+Colloid's",
          1.203, _gain("redis", "throughput", "tpp+colloid")),
    Claim("mercury", "mercury-fig16", "§5.5, Fig. 16: Redis meets its SLO 8.4× as long under Mercury as under TPP",
          8.4, _gain("redis", "slo_met_share", "tpp")),
]
