"""tiermem: tiered-memory placement policies, simulated and real.

A thin front over the Rust core (module ``tiermem._native``)::

    import tiermem
    res = tiermem.simulate("examples/sim.toml")
    res.summary                  # dict, as summary.json
    res.timeseries               # pandas DataFrame, one row per quantum
    df = tiermem.sweep(cfg, {"machine.tiers[1].capacity": ["64G", "96G"]}, jobs=2)
    tiermem.reproduce("colloid-fig1", "out/fig1", quick=True)
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
