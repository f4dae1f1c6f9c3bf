"""tiermem: tiered-memory placement policies, simulated and real.

A thin front over the Rust core (module ``tiermem._native``). From the repository root:

>>> import tiermem
>>> res = tiermem.simulate("examples/sim.toml", overrides={"duration_s": 2})
>>> res.summary["policy"]                   # summary.json as a dict
'hemem'
>>> [t["name"] for t in res.summary["steady_state"]["tiers"]]
['local', 'remote']
>>> list(res.timeseries.columns[:3])        # pandas DataFrame, one row per quantum
['t_s', 'throughput_ops_per_s', 'avg_latency_ns']

Overrides and sweeps name config fields by path, in the syntax config errors use: dots
for tables, ``[i]`` for array elements (``machine.tiers[1]`` is the second
``[[machine.tiers]]``):

>>> cfg = tiermem.from_toml(open("examples/sim.toml").read())
>>> cfg["duration_s"] = 2
>>> df = tiermem.sweep(cfg, {"policy.policy": ["hemem", "tpp"],
...                          "machine.tiers[1].unloaded_latency_ns": [135, 189]}, jobs=2)
>>> df[["policy.policy", "machine.tiers[1].unloaded_latency_ns"]].values.tolist()
[['hemem', 135], ['hemem', 189], ['tpp', 135], ['tpp', 189]]
>>> tiermem.simulate(cfg, overrides={"machine.tiers[2].capacity": "64G"})
Traceback (most recent call last):
...
tiermem.errors.ConfigError: field `machine.tiers[2].capacity`: `machine.tiers` has 2 entries, so index 2 does not exist; use 0..1

A paper figure, data and PNGs (about a minute with ``quick=True``):

>>> summary = tiermem.reproduce("colloid-fig1", "out/fig1", quick=True)  # doctest: +SKIP
"""

from __future__ import annotations

from .api import SimResult, reproduce, simulate
from .config import apply_overrides, from_toml, set_path, to_toml
from .errors import ConfigError, ConfigNotFoundError, TiermemError, TraceError, UnsupportedError
from .sweeps import sweep

__version__ = "0.1.0"

__all__ = [
    "SimResult",
    "simulate",
    "reproduce",
    "sweep",
    "to_toml",
    "from_toml",
    "set_path",
    "apply_overrides",
    "TiermemError",
    "ConfigError",
    "ConfigNotFoundError",
    "TraceError",
    "UnsupportedError",
]
