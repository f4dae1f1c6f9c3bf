"""``simulate`` and ``reproduce``: the calls into the native core."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from .config import ConfigLike, native_module, override_text, resolve
from .errors import TiermemError

__all__ = ["SimResult", "simulate", "reproduce", "native"]


def native() -> ModuleType:
    """The compiled ``tiermem._native`` module (imported on first use, so that plotting
    and the results page work without it)."""
    return native_module()


@dataclass
class SimResult:
    """What one simulation returns."""

    #: Contents of ``summary.json``.
    summary: dict[str, Any]
    #: One row per quantum; the first column is ``t_s``.
    timeseries: pd.DataFrame = field(repr=False)

    @property
    def warnings(self) -> list[str]:
        """What the numbers do not say (tiers full, nothing could move): ``summary["warnings"]``."""
        return list(self.summary.get("warnings", []))

    def save(self, out_dir: str | Path, plots: bool = True) -> Path:
        """Write ``summary.json``, ``timeseries.csv`` and (optionally) the time-series
        PNGs to ``out_dir``, like ``tiermem sim --out``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        self.timeseries.to_csv(out / "timeseries.csv", index=False)
        if plots:
            from .plots import plot

            plot("timeseries", out)
        return out


def simulate(config: ConfigLike, overrides: Mapping[str, Any] | None = None) -> SimResult:
    """Simulate one config.

    ``config`` is a path to a TOML file, TOML text, or a dict (converted with tomli-w).
    ``overrides`` maps paths (``"workload.hot_set"``, ``"machine.tiers[1].capacity"``) to
    values applied on top (see :func:`tiermem.apply_overrides`).
    Raises :class:`tiermem.ConfigError` (naming the field, in the same path syntax) for an
    invalid config.
    """
    text, origin = resolve(config)
    if overrides:
        text = override_text(text, origin, overrides)
        # Generated text: an origin starting with `<dict` makes errors name field paths
        # only, never line numbers in text the user did not write.
        origin = origin if origin.startswith("<dict") else f"<dict: {origin} with overrides>"
    summary_json, columns = native().simulate(text, origin)
    frame = pd.DataFrame(dict(columns))
    return SimResult(summary=json.loads(summary_json), timeseries=frame)


def reproduce(name: str, out: str | Path, quick: bool = False, plots: bool = True) -> dict[str, Any]:
    """Reproduce a paper experiment (``"colloid-fig1"``, ...) into ``out``.

    Writes the data and ``summary.json`` (and the experiment's PNGs when a plot exists for
    it) and returns the summary.
    """
    mod = native()
    if not hasattr(mod, "reproduce"):
        raise TiermemError(
            "this build of tiermem._native has no `reproduce`; use `tiermem reproduce` from the CLI"
        )
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = json.loads(mod.reproduce(name, str(out_dir), quick))
    if plots:
        from .plots import KINDS, plot

        if name in KINDS:
            plot(name, out_dir)
    return summary
