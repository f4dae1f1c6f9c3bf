"""Parameter sweeps: the cartesian product of path overrides (``machine.tiers[1].capacity``)
of a base config."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd

from .config import ConfigLike, override_text, resolve

__all__ = ["sweep", "grid_points"]


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (last key varies fastest)."""
    keys = list(grid)
    values = []
    for k in keys:
        v = grid[k]
        if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
            raise TypeError(f"grid[{k!r}] must be a list of values, not {type(v).__name__}")
        values.append([_plain(x) for x in v])
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def _plain(x: Any) -> Any:
    """numpy scalars -> Python scalars (TOML writers only know the latter)."""
    item = getattr(x, "item", None)
    return item() if callable(item) and type(x).__module__ == "numpy" else x


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def _run_point(base: str, point: Mapping[str, Any]) -> dict[str, Any]:
    # Imported here so that a worker process (and a monkeypatched test) uses tiermem.api.
    from . import api

    result = api.simulate(base, overrides=point)
    row: dict[str, Any] = {}
    _flatten("", result.summary, row)
    return row


def sweep(base_config: ConfigLike, grid: Mapping[str, Sequence[Any]], jobs: int = 1) -> pd.DataFrame:
    """Simulate ``base_config`` (a path, TOML text or a dict) at every point of ``grid``
    and tabulate the summaries.

    ``grid`` maps override paths (``"policy.policy"``, ``"machine.tiers[1].capacity"``:
    dots for tables, ``[i]`` for array elements, as in :func:`tiermem.apply_overrides`)
    to lists of values. The result has one row per point: the grid's columns (named by
    their paths) followed by the summary, flattened with dotted column names.
    ``jobs > 1`` runs points in that many processes (the native call releases the GIL,
    but processes also keep Python-side work parallel).
    """
    points = grid_points(grid)
    text, origin = resolve(base_config)
    for p in points:
        # A bad path or value fails here, naming it, before any point runs.
        override_text(text, origin, p)
    if jobs <= 1 or len(points) <= 1:
        rows = [_run_point(text, p) for p in points]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(_run_point, itertools.repeat(text), points))
    table = []
    for point, row in zip(points, rows, strict=True):
        merged = dict(point)
        for k, v in row.items():
            merged.setdefault(k, v)
        table.append(merged)
    return pd.DataFrame(table, columns=_column_order(grid, rows))


def _column_order(grid: Mapping[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    cols = list(grid)
    for row in rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    return cols
