"""Build ``docs/results.md`` from reproduction outputs.

    python -m tiermem.results_page OUT_ROOT docs/results.md [--no-copy] [--exclude DIR]...

The page opens with each paper's claims (:mod:`tiermem.claims`): one row per claim with
the paper's number, tiermem's (from the experiment's summary.json), the tolerance and
pass/fail. Then every ``summary.json`` under OUT_ROOT becomes one section: the experiment name as heading,
its scalar settings as a list, its ``rows`` as a table (or, for a plain ``tiermem sim``
summary, its flattened fields as a two-column table), and the PNGs beside it. By default
the PNGs are copied next to the page (``docs/results/<experiment>/``) so the page stands on
its own; ``--no-copy`` links to them where they are. The output has no timestamps: the
same inputs give the same page.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["build", "find_summaries", "render_section", "claims_section", "main"]


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "n/a"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return out


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def key_columns(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Columns that identify a row (shown first): ``summary["keys"]`` when the summary
    names them, else the columns holding only names, flags and whole numbers (a row's
    settings: policy, scenario, contention level, ...; measurements are floats), names and
    flags first. Taken from the data, so a new policy or setting needs no code change."""
    listed = summary.get("keys")
    if isinstance(listed, list):
        return [str(k) for k in listed if any(k in r for r in rows)]
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]

    def kinds(k: str) -> set[str]:
        return {"name" if isinstance(v, (str, bool)) else "int" if isinstance(v, int) else "other"
                for r in rows if (v := r.get(k)) is not None}

    named = [k for k in columns if kinds(k) == {"name"}]
    counted = [k for k in columns if kinds(k) in ({"int"}, {"name", "int"}) and k not in named]
    return named + counted


def _record_lists(value: Any, prefix: str = "") -> dict[str, list[Mapping[str, Any]]]:
    """Lists of tables inside a summary (``steady_state.tiers``: one entry per tier)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    if isinstance(value, Mapping):
        for k, v in value.items():
            out.update(_record_lists(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        out[prefix] = value
    return out


def render_section(summary: Mapping[str, Any], name: str, images: Sequence[str]) -> list[str]:
    """Markdown lines for one summary; ``images`` are link targets relative to the page."""
    lines = [f"## {name}", ""]
    comparison = summary.get("comparison")
    if isinstance(comparison, list) and comparison and all(isinstance(r, Mapping) for r in comparison):
        # A reproduction's findings beside the paper's (granularity-fig8), before its rows.
        header = list(dict.fromkeys(k for r in comparison for k in r))
        lines += ["Paper vs measured:", ""]
        lines += _table(header, [[r.get(k) for k in header] for r in comparison])
        lines.append("")
    rows = summary.get("rows")
    if isinstance(rows, list) and rows and all(isinstance(r, Mapping) for r in rows):
        settings = {k: v for k, v in summary.items() if k not in ("rows", "experiment") and not isinstance(v, (list, dict))}
        for k, v in settings.items():
            lines.append(f"- {k}: {_fmt(v)}")
        if settings:
            lines.append("")
        header: list[str] = key_columns(summary, rows)
        for r in rows:
            for k in r:
                if k not in header:
                    header.append(k)
        lines += _table(header, [[r.get(k) for k in header] for r in rows])
    else:
        flat: dict[str, Any] = {}
        body = {k: v for k, v in summary.items() if k != "experiment"}
        records = _record_lists(body)
        _flatten("", body, flat)
        lines += _table(["field", "value"], sorted((k, v) for k, v in flat.items() if k not in records))
        # One table per list of tables (a row per tier, however many tiers the run had).
        for path, entries in records.items():
            header = []
            for e in entries:
                header += [k for k in e if k not in header]
            lines += ["", f"`{path}`:", ""]
            lines += _table(["#", *header], [[i, *(e.get(k) for k in header)] for i, e in enumerate(entries)])
    lines.append("")
    for img in images:
        lines += [f"![{Path(img).stem}]({img})", ""]
    return lines


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _experiment_of(path: Path) -> str:
    try:
        summary = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return path.parent.name
    return str(summary.get("experiment") or path.parent.name) if isinstance(summary, dict) else path.parent.name


def find_summaries(out_root: Path, exclude: Sequence[str] = ()) -> list[Path]:
    """summary.json files under ``out_root``, skipping top-level folders named in
    ``exclude``; a folder named like its experiment sorts before other runs of it."""
    if not out_root.is_dir():
        return []
    found = [p for p in out_root.rglob("summary.json") if p.relative_to(out_root).parts[0] not in exclude]
    return sorted(found, key=lambda p: (_experiment_of(p), p.parent.name != _experiment_of(p), str(p)))


def claims_section(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines: per paper, a table of its claims against ``summaries`` (experiment
    name -> summary); a claim whose experiment has not run shows "not run" and fails."""
    from .claims import all_claims, evaluate

    claims = all_claims()
    if not claims:
        return []
    verdicts = [(c, *evaluate(c, summaries.get(c.experiment))) for c in claims]
    passed = sum(1 for _, _, ok in verdicts if ok)
    unmeasured = sum(1 for _, m, _ in verdicts if m != m)
    lines = ["## Claims", "",
             f"{passed} of {len(verdicts)} claims pass ({unmeasured} not measured: the experiment has not run, or its",
             "run (e.g. `--quick`) leaves out the rows the claim reads).",
             "Each row: the paper's number, tiermem's number from the",
             "experiment's `summary.json`, the tolerance (`tiermem.claims`: fixed per kind of number,",
             "never per claim) and the verdict. A failing row is a measured disagreement with the paper;",
             "docs/simulator.md says why where the model is known to differ.", ""]
    papers = list(dict.fromkeys(c.paper for c in claims))
    for paper in papers:
        rows = []
        for c, measured, ok in verdicts:
            if c.paper != paper:
                continue
            summary = summaries.get(c.experiment)
            measured_ok = summary is not None and measured == measured
            shown = f"{_fmt(measured)}{c.unit}" if measured_ok else "not run" if summary is None else "not in this run"
            quick = " (quick)" if summary is not None and summary.get("quick") else ""
            verdict = "pass" if ok else "FAIL" if measured_ok else "not measured"
            rows.append([c.experiment + quick, c.text, f"{_fmt(c.paper_value)}{c.unit}", shown,
                         c.tolerance_text(), verdict])
        n_ok = sum(1 for r in rows if r[-1] == "pass")
        lines += [f"### {paper}: {n_ok} of {len(rows)} pass", ""]
        lines += _table(["figure", "claim", "paper", "tiermem", "tolerance", "verdict"], rows)
        lines.append("")
        gaps = [(c, measured) for c, measured, ok in verdicts
                if c.paper == paper and c.gap and not ok and measured == measured]
        if gaps:
            lines += ["Why these fail (the published fact the model cannot meet):", ""]
            lines += [f"- {c.text}: {c.gap}" for c, _ in gaps]
            lines.append("")
    return lines


def bench_section(path: Path) -> list[str]:
    """A benchmark's own markdown page (e.g. bench/runtime/results.md, written by its run
    script), embedded with every heading one level down so it nests under the page."""
    lines = path.read_text().splitlines()
    out = [f"<!-- from {path} -->"]
    for line in lines:
        out.append("#" + line if line.startswith("#") else line)
    return out + [""]


def build(
    out_root: Path,
    page: Path,
    copy_images: bool = True,
    exclude: Sequence[str] = (),
    bench_pages: Sequence[Path] = (),
) -> str:
    """Write the results page for every summary.json under ``out_root`` (except the
    top-level folders in ``exclude``), then the benchmark pages ``bench_pages`` that
    exist; returns its text."""
    summaries = find_summaries(out_root, exclude)
    lines = [
        "# Results",
        "",
        "Generated by `make docs-results` (`python -m tiermem.results_page`) from the",
        f"`summary.json` files under `{out_root}`. Do not edit by hand: rerun the experiments",
        "(`tiermem reproduce NAME --out out/NAME`) and regenerate.",
        *(
            ["Benchmark pages (written by `make bench`) follow the experiments."]
            if bench_pages
            else []
        ),
        "",
    ]
    if not summaries:
        lines += [f"No results yet: no summary.json under `{out_root}`.", ""]
    page.parent.mkdir(parents=True, exist_ok=True)
    by_experiment: dict[str, Mapping[str, Any]] = {}
    for path in summaries:
        summary = _read_json(path)
        if isinstance(summary, dict) and summary.get("experiment"):
            # find_summaries puts the folder named like the experiment first.
            by_experiment.setdefault(str(summary["experiment"]), summary)
    lines += claims_section(by_experiment)
    used_names: set[str] = set()
    for path in summaries:
        try:
            summary = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            print(f"results_page: skipping {path}: {e}", file=sys.stderr)
            continue
        if not isinstance(summary, dict):
            continue
        name = str(summary.get("experiment") or path.parent.name)
        if name in used_names:
            name = f"{name} ({path.parent.relative_to(out_root)})"
        used_names.add(name)
        images = []
        for png in sorted(path.parent.glob("*.png")):
            if copy_images:
                dest_dir = page.parent / page.stem / _slug(name)
                dest_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(png, dest_dir / png.name)
                target = dest_dir / png.name
            else:
                target = png
            images.append(Path(os.path.relpath(target.resolve(), page.parent.resolve())).as_posix())
        lines += render_section(summary, name, images)
    for bench in bench_pages:
        if bench.is_file():
            lines += bench_section(bench)
        else:
            lines += [f"## {bench}", "", f"Not run yet: `{bench}` does not exist (`make bench` writes it).", ""]
    text = "\n".join(lines).rstrip("\n") + "\n"
    page.write_text(text)
    return text


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-") or "result"


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    copy_images, exclude, benches, args = True, [], [], []
    it = iter(raw)
    for a in it:
        if a == "--no-copy":
            copy_images = False
        elif a == "--exclude":
            exclude.append(next(it, ""))
        elif a == "--bench":
            benches.append(Path(next(it, "")))
        else:
            args.append(a)
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print(
            "usage: python -m tiermem.results_page OUT_ROOT PAGE.md [--no-copy] [--exclude DIR]... [--bench PAGE.md]...",
            file=sys.stderr,
        )
        return 2
    build(Path(args[0]), Path(args[1]), copy_images=copy_images, exclude=exclude, bench_pages=benches)
    print(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
