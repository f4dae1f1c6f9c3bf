"""The researcher's workbench: ``tiermem reproduce all`` and ``tiermem sweep FILE.toml``.

    python -m tiermem.workbench reproduce-all --out DIR [--quick] [--only PAPER]... [--ray ADDRESS] [--force] [--no-plots]
    python -m tiermem.workbench sweep FILE.toml --out FILE.parquet [--ray ADDRESS] [--jobs N]
    python -m tiermem.workbench timings [--quick-dir DIR] [--full-dir DIR]   (make bench)

(the ``tiermem`` CLI runs these). Both use the task engine of :mod:`tiermem.engine`, so a
Ray address spreads either over a cluster. The experiments are the native module's list
(``tiermem_sim::reproduce::EXPERIMENTS``, the one ``tiermem reproduce`` checks names
against), so a reproduction added there is part of ``reproduce all`` with no change here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import native_module
from .engine import TaskReport, TasksFailedError, check_ray_address, run_tasks
from .errors import ConfigError, ConfigNotFoundError, TiermemError

__all__ = [
    "experiments",
    "paper_of",
    "figure_config",
    "config_hash",
    "reproduce_all",
    "load_sweep_file",
    "run_sweep_file",
    "main",
]

#: The checkout this package runs from (``make setup`` installs it in development mode).
ROOT = Path(__file__).resolve().parents[2]


def experiments() -> list[str]:
    """Every reproduction the native core knows, in the CLI's order."""
    return list(native_module().experiments())


def paper_of(experiment: str) -> str:
    """The paper an experiment belongs to: its name up to the first ``-``
    (``colloid-fig7`` -> ``colloid``); its base configs live in ``experiments/PAPER/``."""
    return experiment.split("-", 1)[0]


def code_version() -> str:
    """The simulator's code: git tree hashes of ``crates/`` and ``experiments/`` (so a
    commit that changes neither keeps every result valid), ``+dirty`` when either has
    uncommitted changes; the package version outside a git checkout."""
    try:
        trees = [t[:12] for t in subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD:crates", "HEAD:experiments"],
            capture_output=True, text=True, check=True,
        ).stdout.split()]
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "crates", "experiments"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"tiermem {native_module().__version__}"
    return "-".join(trees) + ("+dirty" if dirty else "")


def figure_config(experiment: str, quick: bool, version: str | None = None) -> dict[str, Any]:
    """What determines a figure: its name, ``quick``, the text of its paper's base configs
    (``experiments/PAPER/*.toml``, compiled into the simulator) and the code version."""
    base_dir = ROOT / "experiments" / paper_of(experiment)
    bases = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted(base_dir.glob("*.toml"))}
    return {
        "experiment": experiment,
        "quick": quick,
        "base_configs": bases,
        "code_version": version if version is not None else code_version(),
    }


def config_hash(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _seed_of(config: Mapping[str, Any]) -> int | list[int] | None:
    seeds = sorted({s for text in config["base_configs"].values()
                    if isinstance(s := tomllib.loads(text).get("seed"), int)})
    return seeds[0] if len(seeds) == 1 else (seeds or None)


def _reproduce_task(job: tuple[str, bool]) -> dict[str, Any]:
    """One figure, on whichever worker runs it: the native reproduction into a scratch
    folder, returned as the files' bytes (a cluster's workers share no disk with us)."""
    name, quick = job
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"tiermem-{name}-") as tmp:
        native_module().reproduce(name, tmp, quick)
        root = Path(tmp)
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return {"experiment": name, "files": files, "wall_s": time.monotonic() - start}


class Progress:
    """Bars on stderr: one for the whole suite (figures done, weighted by their expected
    time when a previous index.json gives it) and one for each figure running (elapsed
    against that figure's last wall time). On a terminal the lines redraw twice a second;
    otherwise each start and finish is one line."""

    WIDTH = 24

    def __init__(self, names: Sequence[str], expected_s: Mapping[str, float], stream=None) -> None:
        self.names = list(names)
        self.expected = dict(expected_s)
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.drawn = 0

    def __enter__(self) -> Progress:
        if self.tty and self.names:
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            self._draw()
            self.stream.write("\n")

    def start(self, name: str) -> None:
        with self.lock:
            self.running[name] = time.monotonic()
        if not self.tty:
            self._line(f"{name}: started{self._estimate(name)}")

    def finish(self, name: str, wall_s: float, note: str = "") -> None:
        with self.lock:
            self.running.pop(name, None)
            self.done[name] = wall_s
        if not self.tty:
            self._line(f"{name}: {note or 'done'} in {wall_s:.1f} s  {self._overall()}")

    def _estimate(self, name: str) -> str:
        e = self.expected.get(name)
        return f" (last run {e:.0f} s)" if e else ""

    def _line(self, text: str) -> None:
        self.stream.write(f"tiermem: {text}\n")
        self.stream.flush()

    @classmethod
    def bar(cls, fraction: float) -> str:
        filled = int(round(max(0.0, min(1.0, fraction)) * cls.WIDTH))
        return "[" + "#" * filled + "-" * (cls.WIDTH - filled) + "]"

    def _overall(self) -> str:
        known = [self.expected.get(n) for n in self.names]
        if all(known):
            total = sum(known)
            frac = sum(self.expected[n] for n in self.done) / total if total else 1.0
        else:
            frac = len(self.done) / max(1, len(self.names))
        return f"all {self.bar(frac)} {len(self.done)}/{len(self.names)} figures"

    def _render(self) -> list[str]:
        now = time.monotonic()
        lines = [self._overall()]
        for name, t0 in sorted(self.running.items()):
            elapsed = now - t0
            e = self.expected.get(name)
            if e:
                lines.append(f"  {name:<16} {self.bar(elapsed / e)} {elapsed:5.0f} s of ~{e:.0f} s")
            else:
                spin = "|/-\\"[int(elapsed * 2) % 4]
                lines.append(f"  {name:<16} [{spin}] {elapsed:5.0f} s (no earlier run to estimate from)")
        return lines

    def _draw(self) -> None:
        with self.lock:
            lines = self._render()
        up = f"\x1b[{self.drawn - 1}F" if self.drawn > 1 else "\r"
        self.stream.write(up + "\n".join(f"\x1b[2K{line}" for line in lines))
        self.stream.write("\x1b[J")
        self.stream.flush()
        self.drawn = len(lines)

    def _tick(self) -> None:
        while not self.stop.wait(0.5):
            self._draw()


def _select(names: Sequence[str], only: Sequence[str]) -> list[str]:
    """The experiments of the papers (or the experiments themselves) named in ``only``."""
    papers = list(dict.fromkeys(paper_of(n) for n in names))
    for p in only:
        if p not in papers and p not in names:
            raise ConfigError(f"field `--only`: unknown paper `{p}`; give a paper ({', '.join(papers)}) or an experiment name")
    return [n for n in names if not only or paper_of(n) in only or n in only]


def _previous(path: Path) -> dict[str, Any]:
    try:
        index = json.loads(path.read_text())
        return {f["experiment"]: f for f in index.get("figures", []) if isinstance(f, dict) and "experiment" in f}
    except (OSError, json.JSONDecodeError, AttributeError):
        return {}


def reproduce_all(
    out: str | Path,
    quick: bool = False,
    only: Sequence[str] = (),
    backend: str = "local",
    address: str | None = None,
    force: bool = False,
    plots: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """Every reproduction (of the papers or experiments in ``only``, default all) into
    ``out/NAME/``.

    A figure whose ``summary.json`` carries the config hash it would run with now
    (``summary["run"]["config_hash"]``, see :func:`figure_config`) is reused, unless
    ``force``. Writes ``out/index.json`` after each figure: every figure's config (base
    config files, quick), hash, seed, code version, wall time and whether it ran or was
    reused. Returns the index.
    """
    if address is not None and backend == "local":
        backend = "ray"
    if backend == "ray" and address is not None and address not in ("auto", "local"):
        check_ray_address(address)
    out = Path(out)
    names = _select(experiments(), only)
    version = code_version()
    previous = _previous(out / "index.json")
    configs = {n: figure_config(n, quick, version) for n in names}
    hashes = {n: config_hash(c) for n, c in configs.items()}
    entries: dict[str, dict[str, Any]] = {}
    todo: list[str] = []
    for n in names:
        summary = _read_summary(out / n / "summary.json")
        run = summary.get("run") if isinstance(summary, dict) else None
        if not force and isinstance(run, dict) and run.get("config_hash") == hashes[n]:
            entries[n] = {**run, "status": "reused"}
        else:
            todo.append(n)
    expected = {n: float(p["wall_s"]) for n, p in previous.items() if isinstance(p.get("wall_s"), (int, float))}
    started = time.monotonic()
    index: dict[str, Any] = {"quick": quick, "code_version": version, "backend": backend, "figures": []}

    # Figures a narrower run (`--only`) did not select keep their entries from the last run.
    kept = {n: f for n, f in previous.items() if n not in names}

    def write_index() -> None:
        index["figures"] = [entries[n] if n in entries else kept[n] for n in experiments()
                            if n in entries or n in kept]
        index["wall_s"] = round(time.monotonic() - started, 3)
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.json").write_text(json.dumps(index, indent=2) + "\n")

    bar = Progress(names if progress else [], expected, stream=sys.stderr if progress else _Null())
    with bar:
        for n in names:
            if n in entries:
                bar.finish(n, float(entries[n].get("wall_s", 0.0)), note="reused (config hash matches)")
        write_index()

        def collected(i: int, result: dict[str, Any]) -> None:
            n = todo[i]
            entries[n] = _store(out / n, result, configs[n], hashes[n], plots)
            bar.finish(n, result["wall_s"])
            write_index()

        jobs = [(n, quick) for n in todo]
        if backend == "local":
            def task(job: tuple[str, bool]) -> dict[str, Any]:
                bar.start(job[0])
                return _reproduce_task(job)
        else:
            for n in todo:
                bar.start(n)
            task = _reproduce_task
        try:
            _, report = run_tasks(task, jobs, backend=backend, address=address, on_result=collected)
        except TasksFailedError as e:
            index["failed"] = _failures(e.report, todo)
            write_index()
            raise
    index["retried"] = _failures(report, todo)
    write_index()
    return index


class _Null:
    def write(self, _text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def _failures(report: TaskReport, todo: Sequence[str]) -> list[dict[str, Any]]:
    return [{"experiment": todo[f.index], "attempt": f.attempt, "error": f.error}
            for f in (*report.retried, *report.failed)]


def _read_summary(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _store(folder: Path, result: dict[str, Any], config: dict[str, Any], digest: str, plots: bool) -> dict[str, Any]:
    """Write one figure's files (summary.json with its ``run`` record) and plots."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, data in result["files"].items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    summary = json.loads(result["files"]["summary.json"])
    run = {
        "experiment": result["experiment"],
        "paper": paper_of(result["experiment"]),
        "config_hash": digest,
        "config": {"quick": config["quick"], "base_configs": sorted(config["base_configs"])},
        "seed": _seed_of(config),
        "code_version": config["code_version"],
        "wall_s": round(result["wall_s"], 3),
        "out": folder.name,
    }
    summary["run"] = run
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if plots:
        from .plots import KINDS, plot

        if result["experiment"] in KINDS:
            try:
                plot(result["experiment"], folder)
            except Exception as e:  # noqa: BLE001 - the data is complete without the PNGs
                print(f"tiermem: {result['experiment']}: plots skipped: {type(e).__name__}: {e}", file=sys.stderr)
    return {**run, "status": "ran"}


# ---- sweep files -------------------------------------------------------------------------

SWEEP_FIELDS = ("base", "grid", "seeds")


def load_sweep_file(path: str | Path) -> tuple[str | dict[str, Any], dict[str, list[Any]]]:
    """``(base config, grid)`` of a sweep file; ``seeds`` become the grid's last axis
    (``seed``). Raises :class:`ConfigError` naming the field for a bad file.

    A sweep file::

        base = "../examples/sim.toml"   # a config path, relative to this file (or a [base] table)
        seeds = [1, 2, 3]               # optional: integers
        [grid]                          # override path = list of values
        "policy.policy" = ["hemem", "tpp"]
        "machine.tiers[1].unloaded_latency_ns" = [135, 189]
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigNotFoundError(f"sweep file {str(path)!r} is not an existing file; give a path to a TOML sweep file")
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e}); fix the syntax") from None
    for key in doc:
        if key not in SWEEP_FIELDS:
            raise ConfigError(f"{path}: field `{key}`: unknown; a sweep file has {', '.join(SWEEP_FIELDS)}")
    base = doc.get("base")
    if isinstance(base, str):
        base_path = (path.parent / base).resolve()
        if not base_path.is_file():
            raise ConfigError(f"{path}: field `base`: {base!r} is no file (relative to the sweep file); give a config path")
        base_config: str | dict[str, Any] = str(base_path)
    elif isinstance(base, dict):
        base_config = base
    else:
        raise ConfigError(f"{path}: field `base`: missing or not a path/table; add base = \"PATH/TO/config.toml\"")
    grid = doc.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"{path}: field `grid`: missing or empty; "
                          "add a [grid] table such as \"policy.policy\" = [\"hemem\", \"tpp\"]")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{path}: field `grid.{key}`: must be a non-empty list of values")
    grid = dict(grid)
    if "seeds" in doc:
        seeds = doc["seeds"]
        if (not isinstance(seeds, list) or not seeds
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
            raise ConfigError(f"{path}: field `seeds`: {json.dumps(seeds)} is not a non-empty list of integers >= 0; "
                              "write e.g. seeds = [1, 2, 3]")
        grid["seed"] = seeds
    return base_config, grid


def run_sweep_file(path: str | Path, out: str | Path, address: str | None = None, jobs: int = 1,
                   progress: bool = True) -> Any:
    """Run a sweep file (locally, or on the Ray cluster at ``address``) and write the
    DataFrame to ``out`` as Parquet; returns the DataFrame."""
    from .sweeps import sweep

    base, grid = load_sweep_file(path)
    if address is not None:
        check_ray_address(address)

    def report(done: int, total: int) -> None:
        if not progress:
            return
        if sys.stderr.isatty():
            end = "\n" if done == total else ""
            sys.stderr.write(f"\rtiermem: sweep {Progress.bar(done / total)} {done}/{total} points{end}")
        elif done == total or done * 10 // total != (done - 1) * 10 // total:
            # A log, not a terminal: a line per tenth of the points.
            sys.stderr.write(f"tiermem: sweep {Progress.bar(done / total)} {done}/{total} points\n")
        sys.stderr.flush()

    frame = sweep(base, grid, jobs=jobs, backend="ray" if address else "local", address=address, on_point=report)
    for r in frame.attrs.get("retried", []):
        print(f"tiermem: point {json.dumps(r['point'])} failed once and was retried: {r['error']}", file=sys.stderr)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out, index=False)
    return frame


def timings_page(quick_dir: str | Path | None, full_dir: str | Path | None) -> str:
    """A markdown table of every reproduction's wall time, quick and full, from the
    ``index.json`` of a ``reproduce all --quick`` and a ``reproduce all`` run (`make
    bench`'s ``reproduce`` step). A figure a run did not time (reused, or not run) says so."""
    def walls(d: str | Path | None) -> dict[str, tuple[float, str]]:
        if d is None:
            return {}
        return {n: (float(f.get("wall_s", float("nan"))), str(f.get("status", "")))
                for n, f in _previous(Path(d) / "index.json").items()}

    quick, full = walls(quick_dir), walls(full_dir)

    def cell(w: dict[str, tuple[float, str]], n: str) -> str:
        if n not in w:
            return "not run"
        secs, status = w[n]
        return f"{secs:.1f}" + ("" if status == "ran" else f" ({status})")

    lines = ["| reproduction | quick (s) | full (s) |", "|---|---|---|"]
    for n in experiments():
        lines.append(f"| {n} | {cell(quick, n)} | {cell(full, n)} |")

    def total(w: dict[str, tuple[float, str]]) -> str:
        ran = [s for s, st in w.values() if st == "ran"]
        return f"{sum(ran):.0f}" if ran else "–"

    lines.append(f"| all (figures that ran) | {total(quick)} | {total(full)} |")
    return "\n".join(lines) + "\n"


# ---- command line ------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tiermem", description="reproduce all / sweep (see module doc)")
    sub = parser.add_subparsers(dest="command", required=True)
    ra = sub.add_parser("reproduce-all")
    ra.add_argument("--out", required=True)
    ra.add_argument("--quick", action="store_true")
    ra.add_argument("--only", action="append", default=[])
    ra.add_argument("--ray")
    ra.add_argument("--force", action="store_true")
    ra.add_argument("--no-plots", action="store_true")
    tp = sub.add_parser("timings", help="every reproduction's wall time from reproduce-all indexes")
    tp.add_argument("--quick-dir")
    tp.add_argument("--full-dir")
    sw = sub.add_parser("sweep")
    sw.add_argument("file")
    sw.add_argument("--out", required=True)
    sw.add_argument("--ray")
    sw.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        if args.command == "reproduce-all":
            index = reproduce_all(args.out, quick=args.quick, only=args.only, address=args.ray,
                                  force=args.force, plots=not args.no_plots)
            selected = set(_select(experiments(), args.only))
            this_run = [f for f in index["figures"] if f["experiment"] in selected]
            ran = sum(1 for f in this_run if f["status"] == "ran")
            kept = len(index["figures"]) - len(this_run)
            print(f"wrote {Path(args.out) / 'index.json'}: {len(this_run)} figures "
                  f"({ran} ran, {len(this_run) - ran} reused) in {index['wall_s']:.1f} s"
                  + (f"; {kept} more kept from earlier runs" if kept else ""))
        elif args.command == "timings":
            print(timings_page(args.quick_dir, args.full_dir), end="")
        else:
            frame = run_sweep_file(args.file, args.out, address=args.ray, jobs=args.jobs)
            print(f"wrote {args.out}: {len(frame)} points")
    except ConfigError as e:
        print(f"tiermem: {e}", file=sys.stderr)
        return 2
    except TasksFailedError as e:
        for f in e.report.failed:
            print(f"tiermem: task {f.index} failed twice: {json.dumps(f.item, default=str)}: {f.error}", file=sys.stderr)
        return 1
    except TiermemError as e:
        print(f"tiermem: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
