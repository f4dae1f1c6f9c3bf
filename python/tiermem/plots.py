"""Plots of simulation and reproduction outputs (matplotlib, no display needed).

Command line (the Rust CLI calls this with ``$TIERMEM_PYTHON -m tiermem.plots KIND DIR``)::

    python -m tiermem.plots timeseries out/x        # throughput/latency/bandwidth PNGs
    python -m tiermem.plots colloid-fig1 out/fig1    # Colloid Fig. 1, 2a, 2b
    python -m tiermem.plots --list

Each KIND is one function registered with :func:`kind`; it reads its data files from DIR
and returns the PNG paths it wrote there. The building blocks (:func:`grouped_bars`,
:func:`heatmap`, :func:`lines`) take a long-format DataFrame, so a new experiment's plot is
a few lines. Figures are drawn on :class:`matplotlib.figure.Figure` objects directly (the
Agg canvas), never through pyplot: no GUI backend, no global state.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "KINDS",
    "kind",
    "plot",
    "new_figure",
    "save",
    "grouped_bars",
    "heatmap",
    "lines",
    "read_summary_rows",
    "systems_of",
    "system_labeler",
    "tier_latency_columns",
    "main",
]

#: Resolution of every PNG; sizes below are in inches, so pixels = inches x DPI.
DPI = 100
#: Size of a one-panel figure (800 x 450 px).
SINGLE = (8.0, 4.5)
#: Colour cycle of every axis: Okabe & Ito's palette, distinguishable under the common
#: colour-vision deficiencies (Okabe & Ito, "Color Universal Design", 2008).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

PlotFn = Callable[[Path], list[Path]]
#: Registered plot kinds: name -> function(DIR) -> written PNG paths.
KINDS: dict[str, PlotFn] = {}

#: The series the Colloid plots synthesize from ``best_case_throughput`` (drawn last).
BEST_CASE = "best-case"


def kind(name: str) -> Callable[[PlotFn], PlotFn]:
    """Register a plot function under ``name`` (usable as ``python -m tiermem.plots name DIR``)."""

    def register(fn: PlotFn) -> PlotFn:
        KINDS[name] = fn
        return fn

    return register


def plot(kind_name: str, directory: str | Path) -> list[Path]:
    """Draw the plots of kind ``kind_name`` from the data in ``directory``."""
    try:
        fn = KINDS[kind_name]
    except KeyError:
        raise ValueError(f"unknown plot kind {kind_name!r}; known: {', '.join(sorted(KINDS))}") from None
    return fn(Path(directory))


# ---------------------------------------------------------------------------------------
# Building blocks


def new_figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = SINGLE, **kw: Any) -> tuple[Figure, np.ndarray]:
    """A figure of ``size`` inches with an (nrows x ncols) array of axes."""
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    for ax in axes.flat:
        ax.set_prop_cycle(color=PALETTE)
    return fig, axes


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG at :data:`DPI` (the size is the figure's: no tight cropping)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return path


def _ordered(values: Sequence[Any], preferred: Sequence[Any] | None) -> list[Any]:
    seen = list(dict.fromkeys(values))
    if preferred is None:
        try:
            return sorted(seen)
        except TypeError:
            return seen
    head = [v for v in preferred if v in seen]
    return head + [v for v in seen if v not in head]


def grouped_bars(
    ax: Any,
    frame: pd.DataFrame,
    group: str,
    series: str,
    value: str,
    *,
    group_order: Sequence[Any] | None = None,
    series_order: Sequence[Any] | None = None,
    group_label: Callable[[Any], str] = str,
    series_label: Callable[[Any], str] = str,
    scale: float = 1.0,
    ylabel: str = "",
    xlabel: str = "",
    legend: bool = True,
    colors: Mapping[Any, Any] | None = None,
    bounds: tuple[str, str] | None = None,
) -> None:
    """Bars of ``value`` for each ``series`` side by side within each ``group``.

    Repeated (group, series) rows are runs: the bar is their mean with min-max error bars,
    as in the Colloid paper's figures. A row that already summarises several runs gives
    their range in the ``bounds`` columns (min, max; absent or NaN: no bar). ``colors``
    optionally fixes a colour per series.
    """
    data = frame[[group, series, value]].dropna()
    groups = _ordered(list(data[group]), group_order)
    names = _ordered(list(data[series]), series_order)
    stats = data.groupby([group, series])[value].agg(["mean", "min", "max", "count"])
    if bounds and all(c in frame.columns for c in bounds):
        ranged = frame[[group, series, *bounds]].dropna()
        if len(ranged):
            lo_hi = ranged.groupby([group, series]).agg({bounds[0]: "min", bounds[1]: "max"})
            for key, (lo_v, hi_v) in lo_hi.iterrows():
                if key in stats.index:
                    stats.loc[key, "min"] = min(stats.loc[key, "min"], lo_v)
                    stats.loc[key, "max"] = max(stats.loc[key, "max"], hi_v)
                    stats.loc[key, "count"] = max(stats.loc[key, "count"], 2)
    width = 0.8 / max(len(names), 1)
    x = np.arange(len(groups))
    for i, name in enumerate(names):
        means, lo, hi = [], [], []
        for g in groups:
            if (g, name) in stats.index:
                s = stats.loc[(g, name)]
                means.append(s["mean"] * scale)
                lo.append((s["mean"] - s["min"]) * scale)
                hi.append((s["max"] - s["mean"]) * scale)
            else:
                means.append(np.nan)
                lo.append(0.0)
                hi.append(0.0)
        err = [lo, hi] if stats["count"].max() > 1 else None
        color = colors.get(name) if colors else None
        ax.bar(x - 0.4 + width * (i + 0.5), means, width, yerr=err, capsize=2, label=series_label(name), color=color)
    ax.set_xticks(x, [group_label(g) for g in groups])
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if legend and names:
        # Legend in a band of headroom above the bars, so it never hides one.
        ncols = min(len(names), 4)
        legend_rows = -(-len(names) // ncols)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * (1.08 + 0.1 * legend_rows))
        ax.legend(fontsize="small", ncols=ncols, loc="upper center")


def heatmap(
    ax: Any,
    frame: pd.DataFrame,
    x: str,
    y: str,
    value: str,
    *,
    fmt: str = "{:.2f}",
    x_label: Callable[[Any], str] = str,
    y_label: Callable[[Any], str] = str,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
) -> Any:
    """A heatmap of ``value`` over (x, y), each cell annotated; returns the image."""
    table = frame.pivot_table(index=y, columns=x, values=value, aggfunc="mean").sort_index().sort_index(axis=1)
    img = ax.imshow(table.to_numpy(dtype=float), origin="lower", aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(table.shape[1]), [x_label(v) for v in table.columns])
    ax.set_yticks(range(table.shape[0]), [y_label(v) for v in table.index])
    lo, hi = img.get_clim()
    mid = (lo + hi) / 2
    for (r, c), v in np.ndenumerate(table.to_numpy(dtype=float)):
        if np.isfinite(v):
            ax.text(c, r, fmt.format(v), ha="center", va="center", fontsize="small", color="white" if v < mid else "black")
    return img


def lines(ax: Any, frame: pd.DataFrame, x: str, y: str, by: str | None = None, *, scale: float = 1.0,
          label: Callable[[Any], str] = str, ylabel: str = "", xlabel: str = "", **kw: Any) -> None:
    """One line of ``y`` against ``x`` per value of ``by`` (or a single line)."""
    if by is None:
        ax.plot(frame[x], frame[y] * scale, **kw)
    else:
        for key, part in frame.groupby(by, sort=False):
            ax.plot(part[x], part[y] * scale, label=label(key), **kw)
        ax.legend(fontsize="small")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def read_summary(directory: Path) -> dict[str, Any]:
    path = directory / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no summary.json (run the experiment first)")
    return json.loads(path.read_text())


def read_summary_rows(directory: Path, required: Sequence[str] = ()) -> pd.DataFrame:
    """``summary.json``'s ``rows`` as a DataFrame, checking the columns a plot needs."""
    summary = read_summary(directory)
    rows = pd.DataFrame(summary.get("rows", []))
    missing = [c for c in required if c not in rows.columns]
    if missing:
        raise ValueError(f"{directory / 'summary.json'}: rows lack {', '.join(missing)}")
    return rows


def _contention_label(c: Any) -> str:
    return f"{c:g}x" if isinstance(c, (int, float)) else str(c)


def systems_of(values: Sequence[Any], summary: Mapping[str, Any] | None = None) -> list[Any]:
    """The policies ("systems") a run has, in the run's order: ``summary["systems"]`` when
    the summary lists them, then any other in order of first appearance in ``values``;
    the synthesized best case last. Never a fixed list: a new policy plots as it is."""
    seen = list(dict.fromkeys(values))
    listed = summary.get("systems") if summary else None
    head = [v for v in listed if v in seen and v != BEST_CASE] if isinstance(listed, list) else []
    rest = [v for v in seen if v not in head and v != BEST_CASE]
    return head + rest + ([BEST_CASE] if BEST_CASE in seen else [])


def system_labeler(summary: Mapping[str, Any] | None = None) -> Callable[[Any], str]:
    """A policy's label: ``summary["labels"][name]`` when the summary has one, else its name."""
    labels = summary.get("labels") if summary else None
    labels = labels if isinstance(labels, Mapping) else {}

    def label(s: Any) -> str:
        if s in labels:
            return str(labels[s])
        return "best case" if s == BEST_CASE else str(s)

    return label


_ROW_TIER_LAT = re.compile(r"^(?:(?P<role>[a-z][a-z0-9_]*?)_tier|tier(?P<index>\d+))_latency_ns$")


def tier_latency_columns(rows: pd.DataFrame, summary: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Per-tier latency columns of summary rows -> their labels, in tier order.

    Columns are ``tierN_latency_ns`` (labelled with the summary's tier names when it has
    them) or ``ROLE_tier_latency_ns`` (``default``/``alternate`` in the Colloid figures;
    the default tier, tier 0, first). Any number of tiers."""
    names = _summary_tier_names(summary or {})
    indexed: list[tuple[int, str, str]] = []
    roles: list[tuple[int, str, str]] = []
    for col in rows.columns:
        m = _ROW_TIER_LAT.match(str(col))
        if not m:
            continue
        if m.group("index") is not None:
            i = int(m.group("index"))
            indexed.append((i, col, f"tier {i} ({names[i]})" if i in names else f"tier {i}"))
        else:
            role = m.group("role")
            roles.append((0 if role == "default" else 1, col, role.replace("_", " ") + " tier"))
    return {col: label for _, col, label in sorted(indexed) + sorted(roles, key=lambda r: r[0])}


# ---------------------------------------------------------------------------------------
# Time series of one simulation (`tiermem sim --out DIR`)

_TIER_COL = re.compile(r"^tier(\d+)_(latency_ns|read_bytes_per_s|write_bytes_per_s|used_bytes)$")
_SHARE_COL = re.compile(r"^app_share_tier(\d+)$")


def _read_summary_or_empty(directory: Path) -> dict[str, Any]:
    try:
        summary = read_summary(directory)
    except (FileNotFoundError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def _tier_names(directory: Path) -> dict[int, str]:
    """Tier names from summary.json's ``tiers`` list when there is one."""
    return _summary_tier_names(_read_summary_or_empty(directory))


def _summary_tier_names(summary: Mapping[str, Any]) -> dict[int, str]:
    """Tier index -> name from a summary's ``tiers`` (or ``steady_state.tiers``) list."""
    tiers = summary.get("tiers")
    if tiers is None and isinstance(summary.get("steady_state"), dict):
        tiers = summary["steady_state"].get("tiers")
    names: dict[int, str] = {}
    if isinstance(tiers, list):
        for i, t in enumerate(tiers):
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                names[i] = t["name"]
    return names


@kind("timeseries")
def plot_timeseries(directory: Path) -> list[Path]:
    """``DIR/timeseries.csv`` -> ``throughput.png``, ``latency.png`` (per tier, plus
    ``avg_latency_ns`` when present), ``bandwidth.png``
    (and ``placement.png`` when tier occupancy or application shares are recorded).
    Only the columns present are drawn; a file whose columns are all absent is skipped."""
    csv = directory / "timeseries.csv"
    if not csv.is_file():
        raise FileNotFoundError(f"{csv}: no timeseries.csv")
    ts = pd.read_csv(csv)
    if "t_s" not in ts.columns:
        raise ValueError(f"{csv}: no t_s column")
    t = ts["t_s"]
    summary = _read_summary_or_empty(directory)
    names = _summary_tier_names(summary)
    policy = summary.get("policy")
    title = f"policy {policy}" if isinstance(policy, str) and policy else None
    tiers: dict[str, dict[int, str]] = {}
    for col in ts.columns:
        m = _TIER_COL.match(col)
        if m:
            tiers.setdefault(m.group(2), {})[int(m.group(1))] = col
    shares = {int(m.group(1)): c for c in ts.columns if (m := _SHARE_COL.match(c))}

    def tier_label(i: int) -> str:
        return f"tier {i} ({names[i]})" if i in names else f"tier {i}"

    written: list[Path] = []
    if "throughput_ops_per_s" in ts.columns:
        has_mig = "migrated_bytes_per_s" in ts.columns
        fig, axes = new_figure(2 if has_mig else 1, 1, sharex=True)
        ax = axes[0, 0]
        ax.plot(t, ts["throughput_ops_per_s"] / 1e6)
        ax.set_ylabel("throughput (Mops/s)")
        ax.grid(alpha=0.3)
        if title:
            ax.set_title(title)
        if has_mig:
            ax2 = axes[1, 0]
            ax2.plot(t, ts["migrated_bytes_per_s"] / 1e6, color=PALETTE[3])
            ax2.set_ylabel("migration (MB/s)")
            ax2.grid(alpha=0.3)
        axes[-1, 0].set_xlabel("time (s)")
        written.append(save(fig, directory / "throughput.png"))
    if "latency_ns" in tiers:
        fig, axes = new_figure()
        ax = axes[0, 0]
        for i, col in sorted(tiers["latency_ns"].items()):
            ax.plot(t, ts[col], label=tier_label(i))
        if "avg_latency_ns" in ts.columns:
            ax.plot(t, ts["avg_latency_ns"], "k--", linewidth=1, label="application average")
        ax.set_ylabel("loaded latency (ns)")
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        written.append(save(fig, directory / "latency.png"))
    if "read_bytes_per_s" in tiers or "write_bytes_per_s" in tiers:
        fig, axes = new_figure()
        ax = axes[0, 0]
        for what, style in (("read_bytes_per_s", "-"), ("write_bytes_per_s", "--")):
            for i, col in sorted(tiers.get(what, {}).items()):
                ax.plot(t, ts[col] / 1e9, style, color=PALETTE[i % len(PALETTE)], label=f"{tier_label(i)} {what.split('_')[0]}")
        ax.set_ylabel("bandwidth (GB/s)")
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        written.append(save(fig, directory / "bandwidth.png"))
    if "used_bytes" in tiers or shares:
        panels = [p for p in ("used_bytes", "shares") if (p == "shares" and shares) or p in tiers]
        fig, axes = new_figure(len(panels), 1, sharex=True)
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            if panel == "used_bytes":
                for i, col in sorted(tiers["used_bytes"].items()):
                    ax.plot(t, ts[col] / 2**30, label=tier_label(i))
                ax.set_ylabel("used (GiB)")
            else:
                for i, col in sorted(shares.items()):
                    ax.plot(t, ts[col], label=tier_label(i))
                ax.set_ylabel("share of app accesses")
                ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        axes[-1, 0].set_xlabel("time (s)")
        written.append(save(fig, directory / "placement.png"))
    return written


# ---------------------------------------------------------------------------------------
# Colloid (SOSP'24) figures


def _with_best_case(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows plus synthesized ``best-case`` rows from ``best_case_throughput`` when the
    summary has no explicit best-case system."""
    if BEST_CASE in set(rows["system"]) or "best_case_throughput" not in rows.columns:
        return rows
    best = rows.dropna(subset=["best_case_throughput"]).groupby("contention", as_index=False)["best_case_throughput"].mean()
    best = best.rename(columns={"best_case_throughput": "throughput"}).assign(system=BEST_CASE)
    return pd.concat([rows, best], ignore_index=True)


@kind("colloid-fig1")
def plot_colloid_fig1(directory: Path) -> list[Path]:
    """Colloid Fig. 1 (throughput vs contention), Fig. 2a (per-tier latency), Fig. 2b
    (default-tier share) from ``DIR/summary.json``."""
    rows = read_summary_rows(directory, ["system", "contention", "throughput"])
    summary = _read_summary_or_empty(directory)
    label = system_labeler(summary)
    written = []

    fig, axes = new_figure()
    with_best = _with_best_case(rows)
    grouped_bars(axes[0, 0], with_best, "contention", "system", "throughput",
                 series_order=systems_of(list(with_best["system"]), summary), series_label=label,
                 group_label=_contention_label, bounds=("throughput_min", "throughput_max"),
                 scale=1e-6, ylabel="throughput (Mops/s)", xlabel="memory interconnect contention")
    runs = summary.get("seeds") or [None]
    axes[0, 0].set_title("GUPS throughput vs best case (Colloid Fig. 1)"
                         + (f"\nmean of {len(runs)} runs, bars: min-max" if len(runs) > 1 else ""))
    written.append(save(fig, directory / "fig1_throughput.png"))

    lat_cols = tier_latency_columns(rows, summary)
    if lat_cols:
        systems = [s for s in systems_of(list(rows["system"]), summary) if s != BEST_CASE]
        fig, axes = new_figure(1, max(len(systems), 1), size=(4.0 * max(len(systems), 1), 4.0), sharey=True)
        long = rows.melt(id_vars=["system", "contention"], value_vars=list(lat_cols), var_name="tier", value_name="latency_ns")
        for ax, system in zip(axes[0], systems, strict=False):
            grouped_bars(ax, long[long["system"] == system], "contention", "tier", "latency_ns",
                         series_order=list(lat_cols), series_label=lat_cols.get, group_label=_contention_label,
                         xlabel="contention", legend=ax is axes[0, 0])
            ax.set_title(label(system))
        axes[0, 0].set_ylabel("average access latency (ns)")
        fig.suptitle("Per-tier loaded latency (Colloid Fig. 2a)")
        written.append(save(fig, directory / "fig2a_latency.png"))

    if "default_tier_share" in rows.columns:
        fig, axes = new_figure()
        grouped_bars(axes[0, 0], rows, "contention", "system", "default_tier_share",
                     series_order=systems_of(list(rows["system"]), summary), series_label=label,
                     group_label=_contention_label,
                     scale=100.0, ylabel="default-tier share (%)", xlabel="memory interconnect contention")
        axes[0, 0].set_ylim(0, 100 * (1.08 + 0.1))
        axes[0, 0].set_yticks(range(0, 101, 20))
        axes[0, 0].set_title("Share of app bandwidth served by the default tier (Colloid Fig. 2b)")
        written.append(save(fig, directory / "fig2b_share.png"))
    return written


def _colloid_variants(directory: Path, value: str) -> tuple[pd.DataFrame, list[str], Callable[[str], str], dict[str, Any]]:
    """Rows of a Colloid Fig. 5/6 summary as variants (``system`` or ``system+colloid``, and
    the best case), their order, labels and colours: one hue per system, light without
    Colloid, dark with it, the best case grey."""
    rows = read_summary_rows(directory, ["system", "contention", "colloid", value])
    summary = _read_summary_or_empty(directory)
    system_label = system_labeler(summary)
    flags = rows["colloid"].astype(bool)
    rows = rows.assign(variant=[f"{s}+colloid" if c else s for s, c in zip(rows["system"], flags, strict=True)])
    best = _with_best_case(rows.drop(columns=["variant"]))
    best = best[best["system"] == BEST_CASE].assign(variant=BEST_CASE)
    data = pd.concat([rows[rows["system"] != BEST_CASE], best], ignore_index=True)
    systems = [s for s in systems_of(list(rows["system"]), summary) if s != BEST_CASE]
    order = [v for s in systems for v in (s, f"{s}+colloid")] + [BEST_CASE]

    def label(v: str) -> str:
        base, _, extra = v.partition("+")
        return system_label(base) + (" + Colloid" if extra else "")

    paired = matplotlib.colormaps["tab20"].colors
    colors: dict[str, Any] = {v: paired[(2 * (i // 2) + (1 - i % 2)) % len(paired)] for i, v in enumerate(order[:-1])}
    colors[BEST_CASE] = "0.45"
    return data, order, label, colors


@kind("colloid-fig5")
def plot_colloid_fig5(directory: Path) -> list[Path]:
    """Colloid Fig. 5: each system with and without Colloid, plus best case, per contention."""
    data, order, label, colors = _colloid_variants(directory, "throughput")
    fig, axes = new_figure(size=(10.0, 4.5))
    grouped_bars(axes[0, 0], data, "contention", "variant", "throughput", series_order=order, series_label=label,
                 colors=colors,
                 group_label=_contention_label, scale=1e-6, ylabel="throughput (Mops/s)",
                 xlabel="memory interconnect contention")
    axes[0, 0].set_title("With and without Colloid (Colloid Fig. 5)")
    return [save(fig, directory / "fig5_throughput.png")]


@kind("colloid-fig6")
def plot_colloid_fig6(directory: Path) -> list[Path]:
    """Colloid Fig. 6: (a) the share of the hot set each system places in the default tier,
    with and without Colloid, and the best case's; (b) each tier's loaded latency with
    Colloid (compare Fig. 2a, without)."""
    data, order, label, colors = _colloid_variants(directory, "hot_set_default_share")
    fig, axes = new_figure(size=(10.0, 4.5))
    grouped_bars(axes[0, 0], data.dropna(subset=["hot_set_default_share"]), "contention", "variant",
                 "hot_set_default_share", series_order=order, series_label=label, colors=colors,
                 group_label=_contention_label, scale=100.0, ylabel="hot set in the default tier (%)",
                 xlabel="memory interconnect contention")
    axes[0, 0].set_title("Hot-set placement (Colloid Fig. 6a)")
    written = [save(fig, directory / "fig6a_hot_set.png")]
    summary = _read_summary_or_empty(directory)
    rows = read_summary_rows(directory, ["system", "contention", "colloid"])
    lat_cols = tier_latency_columns(rows, summary)
    with_colloid = rows[rows["colloid"].astype(bool) | (rows["system"] == BEST_CASE)]
    systems = systems_of(list(with_colloid["system"]), summary)
    if lat_cols and systems:
        system_label = system_labeler(summary)
        fig, axes = new_figure(1, len(systems), size=(3.5 * len(systems), 4.0), sharey=True)
        long = with_colloid.melt(id_vars=["system", "contention"], value_vars=list(lat_cols), var_name="tier",
                                 value_name="latency_ns")
        for ax, system in zip(axes[0], systems, strict=False):
            grouped_bars(ax, long[long["system"] == system], "contention", "tier", "latency_ns",
                         series_order=list(lat_cols), series_label=lat_cols.get, group_label=_contention_label,
                         xlabel="contention", legend=ax is axes[0, 0])
            ax.set_title(system_label(system) + ("" if system == BEST_CASE else " + Colloid"))
        axes[0, 0].set_ylabel("average access latency (ns)")
        fig.suptitle("Per-tier loaded latency with Colloid (Colloid Fig. 6b)")
        written.append(save(fig, directory / "fig6b_latency.png"))
    return written


@kind("colloid-fig11")
def plot_colloid_fig11(directory: Path) -> list[Path]:
    """Colloid Fig. 11: each application's gain with Colloid per base system and contention."""
    rows = read_summary_rows(directory, ["app", "system", "contention", "gain"])
    summary = _read_summary_or_empty(directory)
    label = system_labeler(summary)
    apps = list(dict.fromkeys(rows["app"]))
    fig, axes = new_figure(1, len(apps), size=(4.5 * len(apps), 4.0), sharey=True)
    for ax, app in zip(axes[0], apps, strict=False):
        part = rows[rows["app"] == app]
        grouped_bars(ax, part, "contention", "system", "gain", series_order=systems_of(list(part["system"]), summary),
                     series_label=label, group_label=_contention_label, xlabel="contention",
                     legend=ax is axes[0, 0])
        ax.axhline(1.0, color="0.5", linewidth=1)
        ax.set_title(str(app))
    axes[0, 0].set_ylabel("throughput with Colloid / without")
    fig.suptitle("Applications (Colloid Fig. 11)")
    return [save(fig, directory / "fig11_gain.png")]


@kind("colloid-3tier")
def plot_colloid_3tier(directory: Path) -> list[Path]:
    """Three tiers: throughput of each system with and without Colloid against the oracle,
    and the share of the accesses each tier serves (one panel per tier)."""
    data, order, label, colors = _colloid_variants(directory, "throughput")
    fig, axes = new_figure(size=(10.0, 4.5))
    grouped_bars(axes[0, 0], data, "contention", "variant", "throughput", series_order=order, series_label=label,
                 colors=colors, group_label=_contention_label, scale=1e-6, ylabel="throughput (Mops/s)",
                 xlabel="memory interconnect contention")
    axes[0, 0].set_title("Three tiers: with and without Colloid, and the oracle")
    written = [save(fig, directory / "3tier_throughput.png")]
    names = _tier_names(directory)
    tiers = sorted(int(c[4:-6]) for c in data.columns if re.fullmatch(r"tier\d+_share", str(c)))
    if tiers:
        fig, axes = new_figure(1, len(tiers), size=(4.5 * len(tiers), 4.0), sharey=True)
        for ax, i in zip(axes[0], tiers, strict=False):
            grouped_bars(ax, data.dropna(subset=[f"tier{i}_share"]), "contention", "variant", f"tier{i}_share",
                         series_order=order, series_label=label, colors=colors, group_label=_contention_label,
                         scale=100.0, xlabel="contention", legend=ax is axes[0, -1])
            ax.set_title(f"tier {i} ({names[i]})" if i in names else f"tier {i}")
        axes[0, 0].set_ylabel("share of the accesses (%)")
        fig.suptitle("Where the accesses go on three tiers")
        written.append(save(fig, directory / "3tier_shares.png"))
    return written


def _gain_heatmaps(directory: Path, ycol: str, ylabel: str, out: str, title: str,
                   y_label: Callable[[Any], str] = str) -> list[Path]:
    rows = read_summary_rows(directory, ["system", "contention", ycol, "gain"])
    summary = _read_summary_or_empty(directory)
    label = system_labeler(summary)
    systems = [s for s in systems_of(list(rows["system"]), summary) if s != BEST_CASE]
    n = max(len(systems), 1)
    fig, axes = new_figure(1, n, size=(4.0 * n + 1.0, 4.0))
    vmin, vmax = float(rows["gain"].min()), float(rows["gain"].max())
    img = None
    for ax, system in zip(axes[0], systems, strict=False):
        img = heatmap(ax, rows[rows["system"] == system], "contention", ycol, "gain",
                      x_label=_contention_label, y_label=y_label, vmin=vmin, vmax=vmax)
        ax.set_title(label(system))
        ax.set_xlabel("contention")
    axes[0, 0].set_ylabel(ylabel)
    if img is not None:
        fig.colorbar(img, ax=list(axes[0]), label="throughput gain with Colloid (x)")
    fig.suptitle(title)
    return [save(fig, directory / out)]


def _size_label(v: Any) -> str:
    try:
        n = int(v)
    except (TypeError, ValueError):
        return str(v)
    for unit, div in (("MB", 2**20), ("KB", 2**10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


@kind("colloid-fig7")
def plot_colloid_fig7(directory: Path) -> list[Path]:
    """Colloid Fig. 7: gain over (contention x alternate-tier latency ratio), one map per system."""
    return _gain_heatmaps(directory, "alt_latency_ratio", "alternate / default unloaded latency",
                          "fig7_gain.png", "Colloid gain vs alternate-tier latency (Colloid Fig. 7)",
                          y_label=lambda v: f"{v:g}x")


@kind("colloid-fig8")
def plot_colloid_fig8(directory: Path) -> list[Path]:
    """Colloid Fig. 8: gain over (contention x object size), one map per system."""
    return _gain_heatmaps(directory, "object_size", "object size", "fig8_gain.png",
                          "Colloid gain vs object size (Colloid Fig. 8)", y_label=_size_label)


def _scenario_timeseries(directory: Path, csv_name: str,
                         panels: Sequence[tuple[str, str, str, float]]) -> list[Path]:
    """Colloid §5.3's per-second series from ``DIR/<csv_name>``: for each (column, file,
    y label, scale) one figure, a row per scenario and a column per system, with and without
    Colloid (a dotted line marks the change: a row's ``change_at_s`` from summary.json, else
    the top-level one)."""
    csv = directory / csv_name
    if not csv.is_file():
        raise FileNotFoundError(f"{csv}: no {csv_name}")
    ts = pd.read_csv(csv)
    need = ["scenario", "system", "colloid", "t_s"]
    missing = [c for c in need if c not in ts.columns]
    if missing:
        raise ValueError(f"{csv}: lacks {', '.join(missing)}")
    ts["colloid"] = ts["colloid"].astype(str).str.lower().isin(["true", "1", "yes"])
    try:
        summary = read_summary(directory)
    except (FileNotFoundError, ValueError):
        summary = {}
    change_at = summary.get("change_at_s")
    # TPP warms up longer before its change (it needs ~250 s to reach steady state).
    change_for = {r.get("system"): r["change_at_s"] for r in summary.get("rows", [])
                  if isinstance(r, dict) and isinstance(r.get("change_at_s"), (int, float))}
    scenarios = list(dict.fromkeys(ts["scenario"]))
    systems = systems_of(list(ts["system"]), summary)
    label = system_labeler(summary)
    written = []
    for col, out, ylabel, scale in panels:
        if col not in ts.columns:
            continue
        fig, axes = new_figure(len(scenarios), len(systems), size=(3.5 * len(systems), 2.6 * len(scenarios)),
                               sharex="col")
        for r, scenario in enumerate(scenarios):
            for c, system in enumerate(systems):
                ax = axes[r, c]
                part = ts[(ts["scenario"] == scenario) & (ts["system"] == system)]
                for with_colloid in (False, True):
                    sub = part[part["colloid"] == with_colloid]
                    if len(sub):
                        ax.plot(sub["t_s"], sub[col] * scale, label="with Colloid" if with_colloid else "without")
                mark = change_for.get(system, change_at)
                if isinstance(mark, (int, float)):
                    ax.axvline(mark, color="0.5", linestyle=":", linewidth=1)
                ax.grid(alpha=0.3)
                if r == 0:
                    ax.set_title(label(system))
                if c == 0:
                    ax.set_ylabel(f"{scenario}\n{ylabel}")
                if r == len(scenarios) - 1:
                    ax.set_xlabel("time (s)")
                if r == 0 and ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize="x-small")
        written.append(save(fig, directory / out))
    return written


@kind("colloid-fig9")
def plot_colloid_fig9(directory: Path) -> list[Path]:
    """Colloid Fig. 9: throughput and migration rate over time, with and without Colloid,
    one row per scenario and one column per system, from ``DIR/fig9_timeseries.csv``."""
    return _scenario_timeseries(directory, "fig9_timeseries.csv", (
        ("throughput_ops_per_s", "fig9_throughput.png", "throughput (Mops/s)", 1e-6),
        ("migrated_bytes_per_s", "fig9_migration.png", "migration (MB/s)", 1e-6),
    ))


@kind("colloid-fig10")
def plot_colloid_fig10(directory: Path) -> list[Path]:
    """Colloid Fig. 10: HeMem's migration rate over time with and without Colloid when the
    hot set moves, from ``DIR/fig10_migration_rate.csv``."""
    return _scenario_timeseries(directory, "fig10_migration_rate.csv", (
        ("migrated_bytes_per_s", "fig10_migration.png", "migration (GB/s)", 1e-9),
    ))


def _mercury_timelines(directory: Path, prefix: str) -> list[Path]:
    """One figure per system (``DIR/<system>/timeseries.csv``): per tenant, local memory
    (solid) and its limit (dashed), CPU share, and performance relative to its SLO
    (latency / target for LS, bandwidth / target for BI; 1 = on target)."""
    summary = read_summary(directory)
    rows = [r for r in summary.get("rows", []) if isinstance(r, dict)]
    label = system_labeler(summary)
    scale_gib = 1.0 / (1 << 30)
    written = []
    for system in systems_of([r["system"] for r in rows], summary):
        csv = directory / system / "timeseries.csv"
        if not csv.is_file():
            continue
        ts = pd.read_csv(csv)
        fig, axes = new_figure(3, 1, size=(8.0, 7.5), sharex="col")
        for r in (r for r in rows if r["system"] == system):
            t = r["tenant"]
            if f"{t}_local_bytes" not in ts.columns:
                continue
            # The run's bytes are scaled by the config's ``scale``: show the unscaled GiB.
            factor = 1.0 / float(summary.get("scale", 1.0))
            line, = axes[0, 0].plot(ts["t_s"], ts[f"{t}_local_bytes"] * scale_gib * factor, label=t)
            if ts[f"{t}_local_limit_bytes"].notna().any():
                axes[0, 0].plot(ts["t_s"], ts[f"{t}_local_limit_bytes"] * scale_gib * factor, linestyle="--",
                                color=line.get_color(), linewidth=0.8)
            axes[1, 0].plot(ts["t_s"], ts[f"{t}_cpu_share"], label=t, color=line.get_color())
            if r["class"] == "LS":
                rel = ts[f"{t}_latency_ns"] / r["slo_value"]
            else:
                rel = ts[f"{t}_bandwidth_bytes_per_s"] / r["slo_value"]
            axes[2, 0].plot(ts["t_s"], rel, label=f"{t} ({r['class']}, SLO {r['slo']})", color=line.get_color())
        axes[2, 0].axhline(1.0, color="0.4", linestyle=":", linewidth=1)
        axes[0, 0].set_ylabel("local memory (GiB)\n(dashed: limit)")
        axes[1, 0].set_ylabel("CPU share")
        axes[2, 0].set_ylabel("measured / SLO\n(LS: lower is better)")
        axes[2, 0].set_xlabel("time (s)")
        axes[0, 0].set_title(f"{prefix}: {label(system)}")
        for ax in axes[:, 0]:
            ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize="x-small")
        axes[2, 0].legend(fontsize="x-small")
        written.append(save(fig, directory / f"{prefix}_{system.replace('+', '_')}_timeline.png"))
    frame = pd.DataFrame(rows)
    if len(frame):
        fig, axes = new_figure()
        grouped_bars(axes[0, 0], frame, "tenant", "system", "slo_met_share",
                     series_order=systems_of(list(frame["system"]), summary), series_label=label,
                     ylabel="share of time the SLO held")
        written.append(save(fig, directory / f"{prefix}_slo_met.png"))
    return written


@kind("mercury-fig11")
def plot_mercury_fig11(directory: Path) -> list[Path]:
    """Mercury Fig. 11: per pair, (foreground slowdown, VectorDB slowdown) under TPP and under
    Mercury, an arrow from one to the other (the paper: pairs move towards (0, 0))."""
    rows = read_summary_rows(directory, ["system", "pair", "role", "slowdown"])
    fig, axes = new_figure(size=(6.5, 6.0))
    ax = axes[0, 0]
    points = {}
    for system, marker in (("tpp", "o"), ("mercury", "^")):
        sub = rows[rows["system"] == system]
        xy = {}
        for pair, group in sub.groupby("pair"):
            roles = dict(zip(group["role"], group["slowdown"] * 100.0, strict=True))
            if "foreground" in roles and "background" in roles:
                xy[pair] = (roles["foreground"], roles["background"])
        points[system] = xy
        if xy:
            ax.scatter([p[0] for p in xy.values()], [p[1] for p in xy.values()], marker=marker,
                       label="TPP" if system == "tpp" else "Mercury", zorder=3)
    for pair, (x0, y0) in points.get("tpp", {}).items():
        if pair in points.get("mercury", {}):
            x1, y1 = points["mercury"][pair]
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": "0.6"})
            ax.annotate(pair, (x0, y0), fontsize="x-small", xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("foreground slowdown (%)")
    ax.set_ylabel("VectorDB slowdown (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    return [save(fig, directory / "fig11_slowdowns.png")]


@kind("mercury-fig13")
def plot_mercury_fig13(directory: Path) -> list[Path]:
    """Mercury Fig. 13: per-system timelines (local memory and limits, CPU shares, per-tenant
    latency/bandwidth vs SLO) and the share of time each SLO held."""
    return _mercury_timelines(directory, "fig13")


@kind("mercury-fig14")
def plot_mercury_fig14(directory: Path) -> list[Path]:
    """Mercury Fig. 14: Redis beside llama.cpp's two requests; timelines per system."""
    return _mercury_timelines(directory, "fig14")


@kind("mercury-fig16")
def plot_mercury_fig16(directory: Path) -> list[Path]:
    """Mercury Fig. 16: llama's surge, then Redis's growth; timelines per system."""
    return _mercury_timelines(directory, "fig16")


def _slowdown_cdf(directory: Path, configs: tuple[str, ...], marks: tuple[float, ...], name: str) -> list[Path]:
    """CDF of the population's slowdowns, one line per config, dotted lines at `marks` (%)."""
    rows = read_summary_rows(directory, ["config", "slowdown"])
    fig, axes = new_figure()
    ax = axes[0, 0]
    for config in configs:
        s = np.sort(rows[rows["config"] == config]["slowdown"].to_numpy() * 100.0)
        if len(s):
            ax.step(s, np.arange(1, len(s) + 1) / len(s), where="post", label=config)
    for m in marks:
        ax.axvline(m, color="0.5", linestyle=":", linewidth=1)
    ax.set_xlabel("slowdown vs all-local (%)")
    ax.set_ylabel("share of workloads")
    ax.grid(alpha=0.3)
    ax.legend()
    return [save(fig, directory / name)]


@kind("memstrata-fig5")
def plot_memstrata_fig5(directory: Path) -> list[Path]:
    """Memstrata Fig. 5: CDF of the population's slowdowns (CXL-only, hardware-tiered, mixed)."""
    return _slowdown_cdf(directory, ("cxl-only", "hw-tiered", "mixed"), (5.0,), "fig5_cdf.png")


@kind("memstrata-fig11")
def plot_memstrata_fig11(directory: Path) -> list[Path]:
    """Memstrata Fig. 11: CDF of the population's slowdowns under TPP beside hardware tiering
    (half of each VM's memory local); the paper counts those above 50 %."""
    return _slowdown_cdf(directory, ("hw-tiered", "tpp"), (5.0, 50.0), "fig11_tpp_cdf.png")


@kind("memstrata-fig6")
def plot_memstrata_fig6(directory: Path) -> list[Path]:
    """Memstrata Fig. 6: per workload, slowdown of conflicting vs isolated (colored) allocation
    beside a noisy neighbour, and of isolated vs alone."""
    rows = read_summary_rows(directory, ["workload", "config", "slowdown"])
    rows = rows.assign(slowdown_pct=rows["slowdown"] * 100.0)
    fig, axes = new_figure(size=(14.0, 4.5))
    grouped_bars(axes[0, 0], rows, "workload", "config", "slowdown_pct", ylabel="slowdown (%)")
    axes[0, 0].tick_params(axis="x", labelrotation=90, labelsize="xx-small")
    return [save(fig, directory / "fig6_noisy_neighbour.png")]


@kind("memstrata-estimator")
def plot_memstrata_estimator(directory: Path) -> list[Path]:
    """Memstrata §4.2: the slowdown estimator's held-out accuracy beside MPKI alone and the
    "no outlier" answer, over every sample and under the paper's protocol, with the paper's."""
    st = read_summary(directory)["stats"]
    pp = st["paper_protocol"]
    paper = st.get("paper", {})
    groups = ["every sample", "paper's protocol"]
    series = [
        ("estimator", [st["validation_accuracy_mean"], pp["validation_accuracy_mean"]]),
        ("MPKI only", [st["mpki_only_accuracy_mean"], pp["mpki_only_accuracy_mean"]]),
        ("'no outlier'", [st["constant_accuracy_mean"], pp["constant_accuracy_mean"]]),
        ("balanced (estimator)", [st["balanced_accuracy_mean"], pp["balanced_accuracy_mean"]]),
    ]
    fig, axes = new_figure(size=(7.0, 4.0))
    ax = axes[0, 0]
    width = 0.8 / len(series)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, np.asarray(values) * 100.0, width, label=name,
               color=PALETTE[i % len(PALETTE)])
    for value, name, style in [(paper.get("validation_accuracy"), "paper: estimator", "--"),
                               (paper.get("mpki_only_accuracy"), "paper: MPKI only", ":")]:
        if value is not None:
            ax.axhline(value * 100.0, color="0.3", linestyle=style, linewidth=1, label=name)
    ax.set_xticks(x, groups)
    ax.set_ylim(0, 105)
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title("Slowdown > 5 % estimator, held-out workloads (Memstrata §4.2)")
    ax.legend(fontsize="x-small", ncols=2, loc="lower center")
    return [save(fig, directory / "estimator_accuracy.png")]


def _memstrata_mixes(directory: Path, prefix: str) -> list[Path]:
    """One panel per mix: each VM's slowdown, static hardware tiering vs Memstrata."""
    rows = read_summary_rows(directory, ["mix", "workload", "config", "slowdown"])
    mixes = list(dict.fromkeys(rows["mix"]))
    fig, axes = new_figure(len(mixes), 1, size=(8.0, 2.6 * len(mixes)))
    for ax, mix in zip(axes[:, 0], mixes, strict=True):
        part = rows[rows["mix"] == mix].assign(slowdown_pct=lambda f: f["slowdown"] * 100.0)
        grouped_bars(ax, part, "workload", "config", "slowdown_pct", ylabel=f"{mix}\nslowdown (%)")
        ax.axhline(5.0, color="0.5", linestyle=":", linewidth=1)
    return [save(fig, directory / f"{prefix}_slowdowns.png")]


@kind("memstrata-fig10")
def plot_memstrata_fig10(directory: Path) -> list[Path]:
    """Memstrata Fig. 10: six-VM mixes, per-VM slowdown with static dedicated memory vs Memstrata."""
    return _memstrata_mixes(directory, "fig10")


@kind("memstrata-fig12")
def plot_memstrata_fig12(directory: Path) -> list[Path]:
    """Memstrata Fig. 12: 2 and 4 outliers at 33 % and 67 % dedicated memory."""
    return _memstrata_mixes(directory, "fig12")


# ---------------------------------------------------------------------------------------
# CLI


_SCHEMES = ["baseline", "static-4k", "static-64k", "static-2m", "dynamic"]
_SCHEME_LABELS = {"baseline": "baseline", "static-4k": "4 KiB", "static-64k": "64 KiB",
                  "static-2m": "2 MiB", "dynamic": "dynamic"}


def _granularity_frames(directory: Path) -> tuple[pd.DataFrame, list[str], str]:
    rows = read_summary_rows(directory, ["setting", "workload", "scheme", "runtime_norm", "shootdowns",
                                         "fast_hit_ratio", "migrations_4k", "migrations_64k", "migrations_2m"])
    order = list(dict.fromkeys(rows["workload"]))
    main_setting = str(rows["setting"].iloc[0]) if len(rows) else ""
    return rows, order, main_setting


@kind("granularity-fig8")
def plot_granularity_fig8(directory: Path) -> list[Path]:
    """ICS'18 Figs. 8-13 from ``DIR/summary.json`` (``tiermem reproduce granularity-fig8``):
    normalised runtime, TLB shootdowns (relative to static 4 KiB), fast-memory hit ratio and
    the dynamic scheme's migrations per granularity in the main setting, then the best
    static granularity against the dynamic scheme at 200/800 MiB and 1:2/1:8."""
    rows, order, main = _granularity_frames(directory)
    m = rows[rows["setting"] == main].copy()
    label = _SCHEME_LABELS.get
    written: list[Path] = []
    wide = (max(8.0, 0.75 * len(order) + 2.0), 4.5)

    fig, axes = new_figure(size=wide)
    grouped_bars(axes[0, 0], m, "workload", "scheme", "runtime_norm", group_order=order,
                 series_order=_SCHEMES, series_label=lambda s: label(s, s),
                 ylabel="runtime / runtime with no migration")
    axes[0, 0].axhline(1.0, color="black", lw=0.6)
    axes[0, 0].set_title(f"Normalised execution time, {main} (ICS'18 Fig. 8; lower is better)")
    written.append(save(fig, directory / "fig8_runtime.png"))

    base = m[m["scheme"] == "static-4k"].set_index("workload")["shootdowns"]
    m["shootdowns_rel"] = [r.shootdowns / base.get(r.workload, float("nan")) if base.get(r.workload, 0) else float("nan")
                           for r in m.itertuples()]
    fig, axes = new_figure(size=wide)
    grouped_bars(axes[0, 0], m, "workload", "scheme", "shootdowns_rel", group_order=order,
                 series_order=_SCHEMES, series_label=lambda s: label(s, s),
                 ylabel="TLB shootdowns / static 4 KiB's")
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_title("TLB shootdowns (ICS'18 Fig. 9; lower is better)")
    written.append(save(fig, directory / "fig9_shootdowns.png"))

    fig, axes = new_figure(size=wide)
    grouped_bars(axes[0, 0], m, "workload", "scheme", "fast_hit_ratio", group_order=order,
                 series_order=_SCHEMES, series_label=lambda s: label(s, s), ylabel="fast-memory hit ratio")
    axes[0, 0].set_title("Share of memory reads served by the fast tier (ICS'18 Fig. 10; higher is better)")
    written.append(save(fig, directory / "fig10_hit_ratio.png"))

    d = m[m["scheme"] == "dynamic"].set_index("workload").reindex(order)
    tot = (d["migrations_4k"] + d["migrations_64k"] + d["migrations_2m"]).replace(0, np.nan)
    fig, axes = new_figure(size=wide)
    ax = axes[0, 0]
    bottom = np.zeros(len(order))
    for col, name in [("migrations_4k", "4 KiB"), ("migrations_64k", "64 KiB"), ("migrations_2m", "2 MiB")]:
        share = (d[col] / tot).fillna(0.0).to_numpy() * 100.0
        ax.bar(np.arange(len(order)), share, 0.6, bottom=bottom, label=name)
        bottom += share
    ax.set_xticks(np.arange(len(order)), order)
    ax.set_ylabel("share of the dynamic scheme's migrations (%)")
    ax.set_ylim(0, 118)
    ax.legend(fontsize="small", ncols=3, loc="upper center")
    ax.set_title("Migrations per granularity, dynamic scheme (ICS'18 Fig. 11)")
    written.append(save(fig, directory / "fig11_breakdown.png"))

    for name, settings, title in [
        ("fig12_capacity.png", ["200MiB 1:3", "800MiB 1:3"], "fast-memory capacity (ICS'18 Fig. 12)"),
        ("fig13_latency.png", ["400MiB 1:8", "400MiB 1:2"], "fast:slow latency (ICS'18 Fig. 13)"),
    ]:
        present = [st for st in settings if (rows["setting"] == st).any()]
        if not present:
            continue
        fig, axes = new_figure(1, len(present), size=(wide[0] * len(present) * 0.6, 4.5))
        for ax, st in zip(axes[0], present, strict=False):
            part = rows[rows["setting"] == st]
            best = []
            for w, g in part.groupby("workload", sort=False):
                statics = g[g["scheme"].str.startswith("static")]
                dyn = g[g["scheme"] == "dynamic"]
                if len(statics) and len(dyn):
                    best.append({"workload": w, "scheme": "best static", "runtime_norm": statics["runtime_norm"].min()})
                    best.append({"workload": w, "scheme": "dynamic", "runtime_norm": float(dyn["runtime_norm"].iloc[0])})
            bf = pd.DataFrame(best)
            if len(bf):
                grouped_bars(ax, bf, "workload", "scheme", "runtime_norm",
                             group_order=[w for w in order if w in set(bf["workload"])],
                             series_order=["best static", "dynamic"], ylabel="normalised runtime")
            ax.set_title(st)
        fig.suptitle(f"Best static granularity vs dynamic: {title}")
        written.append(save(fig, directory / name))
    return written


@kind("granularity-fig8-projection")
def plot_granularity_fig8_projection(directory: Path) -> list[Path]:
    """ICS'18 Figs. 8-13 by the paper's projection (``tiermem reproduce
    granularity-fig8-projection``: runs at 1:1 latency, Fig. 7's formula for each ratio)."""
    return plot_granularity_fig8(directory)


#: Marker per TierScape system family (Fig. 8: 2-Tier, waterfall, analytical).
_TIERSCAPE_FAMILIES = (("2T-", "o", PALETTE[0]), ("6T-WF-", "s", PALETTE[1]), ("6T-AM-", "^", PALETTE[2]))


@kind("tierscape-fig8")
def plot_tierscape_fig8(directory: Path) -> list[Path]:
    """TierScape Fig. 8 (slowdown vs memory TCO saving per configuration, one panel per
    workload; the saving axis decreases to the right as in the paper) and Fig. 10 (pages per
    tier over time for Redis under 6T-WF-M/A and 6T-AM-0.5/0.1, faults below)."""
    rows = read_summary_rows(directory, ["workload", "config", "slowdown", "tco_savings"])
    rows = rows[rows["config"] != "DRAM"]
    workloads = list(dict.fromkeys(rows["workload"]))
    fig, axes = new_figure(1, len(workloads), size=(5.0 * len(workloads), 4.5))
    for ax, w in zip(axes[0], workloads, strict=True):
        sub = rows[rows["workload"] == w]
        for prefix, marker, colour in _TIERSCAPE_FAMILIES:
            fam = sub[sub["config"].str.startswith(prefix)]
            ax.scatter(fam["tco_savings"] * 100.0, fam["slowdown"] * 100.0, marker=marker,
                       color=colour, label=prefix.rstrip("-"), zorder=3)
            for _, r in fam.iterrows():
                ax.annotate(str(r["config"]).removeprefix(prefix), (r["tco_savings"] * 100.0, r["slowdown"] * 100.0),
                            textcoords="offset points", xytext=(4, 3), fontsize="x-small")
        ax.invert_xaxis()
        ax.set_title(w)
        ax.set_xlabel("memory TCO saving vs all-DRAM (%)")
        ax.set_ylabel("slowdown vs all-DRAM (%)")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    written = [save(fig, directory / "fig8_slowdown_vs_tco.png")]
    occ_path = directory / "occupancy.csv"
    if occ_path.exists():
        occ = pd.read_csv(occ_path)
        configs = [c for c in ("6T-WF-M", "6T-WF-A", "6T-AM-0.5", "6T-AM-0.1") if c in set(occ["config"])]
        redis = occ[occ["workload"] == "redis"]
        if configs and not redis.empty:
            fig, axes = new_figure(2, len(configs), size=(4.0 * len(configs), 6.0), sharex=True)
            tiers = list(dict.fromkeys(redis["tier"]))
            for j, c in enumerate(configs):
                sub = redis[redis["config"] == c]
                pages = sub.pivot(index="t_s", columns="tier", values="pages")[tiers]
                faults = sub.pivot(index="t_s", columns="tier", values="faults_per_s")[tiers[1:]].sum(axis=1)
                axes[0, j].stackplot(pages.index, *(pages[t] for t in tiers), labels=tiers,
                                     colors=PALETTE[: len(tiers)])
                axes[0, j].set_title(f"redis {c}")
                axes[0, j].set_ylabel("pages (4 KiB)")
                axes[1, j].plot(faults.index, faults.to_numpy(), color=PALETTE[3])
                axes[1, j].set_xlabel("time (s)")
                axes[1, j].set_ylabel("faults per second")
                axes[1, j].grid(alpha=0.3)
            axes[0, -1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
            written.append(save(fig, directory / "fig10_redis_occupancy.png"))
    return written


#: Marker per backing medium in the characterization plot (DRAM, then memory nodes).
_BACKING_MARKERS = ("o", "s", "^", "D", "v")


@kind("tiers-characterize")
def plot_tiers_characterize(directory: Path) -> list[Path]:
    """TierScape Fig. 3 from ``DIR/tiers.csv`` (``tiermem tiers characterize``): each
    candidate tier's fault latency against its memory TCO saving, colour per codec, marker
    per backing, the frontier tiers (``tiers.json``) labelled."""
    rows = pd.read_csv(directory / "tiers.csv")
    rows = rows[rows["compressible_pages"] > 0]
    frontier = set()
    meta = directory / "tiers.json"
    if meta.exists():
        frontier = set(json.loads(meta.read_text()).get("frontier", []))
    fig, axes = new_figure()
    ax = axes[0, 0]
    codecs = list(dict.fromkeys(rows["codec"]))
    backings = list(dict.fromkeys(rows["backing"]))
    for ci, codec in enumerate(codecs):
        for bi, backing in enumerate(backings):
            sub = rows[(rows["codec"] == codec) & (rows["backing"] == backing)]
            if sub.empty:
                continue
            ax.scatter(sub["tco_saving"] * 100.0, sub["fault_ns"] / 1e3, color=PALETTE[ci % len(PALETTE)],
                       marker=_BACKING_MARKERS[bi % len(_BACKING_MARKERS)], label=f"{codec} / {backing}", zorder=3)
    for _, r in rows[rows["name"].isin(frontier)].iterrows():
        ax.annotate(str(r["name"]), (r["tco_saving"] * 100.0, r["fault_ns"] / 1e3),
                    textcoords="offset points", xytext=(4, 3), fontsize="x-small")
    ax.set_xlabel("memory TCO saving vs DRAM (%)")
    ax.set_ylabel("fault latency (µs per 4 KiB page)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="x-small")
    return [save(fig, directory / "tiers_latency_vs_tco.png")]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-l", "--list"):
        for name, fn in sorted(KINDS.items()):
            print(f"{name:14s} {(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print("usage: python -m tiermem.plots KIND DIR   (KIND: " + ", ".join(sorted(KINDS)) + "; --list)",
              file=sys.stderr)
        return 0 if args and args[0] in ("-h", "--help") else 2
    kind_name, directory = args
    if kind_name not in KINDS:
        print(f"tiermem.plots: unknown plot kind {kind_name!r}; known: {', '.join(sorted(KINDS))}", file=sys.stderr)
        return 2
    try:
        written = plot(kind_name, directory)
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"tiermem.plots: {kind_name} {directory}: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

