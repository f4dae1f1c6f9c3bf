"""Parameter sweeps: the cartesian product of path overrides (``machine.tiers[1].capacity``)
of a base config."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from .config import ConfigLike, override_text, resolve
from .engine import run_tasks
from .errors import ConfigError

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


def sweep(
    base_config: ConfigLike,
    grid: Mapping[str, Sequence[Any]],
    jobs: int = 1,
    backend: str = "local",
    address: str | None = None,
    on_point: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate ``base_config`` (a path, TOML text or a dict) at every point of ``grid``
    and tabulate the summaries.

    ``grid`` maps override paths (``"policy.policy"``, ``"machine.tiers[1].capacity"``:
    dots for tables, ``[i]`` for array elements, as in :func:`tiermem.apply_overrides`)
    to lists of values. The result has one row per point: the grid's columns (named by
    their paths) followed by the summary, flattened with dotted column names.

    ``backend="local"`` (the default, no Ray needed) runs the points in this process, or
    in ``jobs`` processes (the native call releases the GIL, but processes also keep
    Python-side work parallel). ``backend="ray"`` runs each point as a task on the Ray
    cluster at ``address`` (``"HOST:PORT"``; ``None`` starts a local instance; an existing
    ``ray.init`` is reused); each worker runs the Rust simulator through the bindings.
    Every point's config is validated before any runs (a :class:`tiermem.ConfigError`
    names the field). A failed point is retried once; one that fails twice raises
    :class:`tiermem.engine.TasksFailedError` naming it. ``df.attrs["retried"]`` lists the
    points that needed the retry (``{"point", "error"}``). ``on_point(done, total)`` is
    called as points finish.
    """
    if not grid:
        raise ConfigError("field `grid`: empty; give at least one override path with a list of values")
    for path, values in grid.items():
        if not isinstance(values, (str, bytes, Mapping)) and hasattr(values, "__len__") and len(values) == 0:
            raise ConfigError(f"field `grid.{path}`: empty list; give at least one value")
    points = grid_points(grid)
    text, origin = resolve(base_config)
    # Through api.native(), like _run_point, so that both see the same module.
    from . import api

    check = api.native().check_config
    for p in points:
        # A bad path or value fails here, naming it, before any point runs.
        check(override_text(text, origin, p), f"<dict: {origin} with overrides>")
    finished = 0

    def progress(_i: int, _row: Any) -> None:
        nonlocal finished
        finished += 1
        if on_point is not None:
            on_point(finished, len(points))

    rows, report = run_tasks(
        functools.partial(_run_point, text), points, backend=backend, address=address, jobs=jobs, on_result=progress
    )
    table = []
    for point, row in zip(points, rows, strict=True):
        merged = dict(point)
        for k, v in row.items():
            merged.setdefault(k, v)
        table.append(merged)
    frame = pd.DataFrame(table, columns=_column_order(grid, rows))
    frame.attrs["retried"] = [{"point": f.item, "error": f.error} for f in report.retried]
    return frame


def _column_order(grid: Mapping[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    cols = list(grid)
    for row in rows:
        for k in row:
            if k not in cols:
                cols.append(k)
    return cols
