"""Paper claims (tiermem.claims) and their table on the results page, against a real
reproduction (mercury-fig14 --quick, a few seconds)."""

from __future__ import annotations

import json
import math

import pytest

from tiermem import api, claims, results_page, workbench

pytest.importorskip("tiermem._native")


def test_every_claim_names_a_known_experiment_and_kind():
    known = set(workbench.experiments())
    every = claims.all_claims()
    assert {c.paper for c in every} >= {"colloid", "mercury", "granularity", "memstrata", "tierscape"}
    for c in every:
        assert c.experiment in known, c
        assert c.kind in claims.KINDS and c.tolerance >= 0 and c.paper_value > 0, c


def test_verdicts():
    ratio = claims.Claim("p", "e", "t", 1.2, lambda s: 0.0, tolerance=0.15)
    assert ratio.passes(1.175) and ratio.passes(1.225) and not ratio.passes(1.0) and not ratio.passes(1.24)
    approx = claims.Claim("p", "e", "t", 2.0, lambda s: 0.0, tolerance=0.1, kind="approx")
    assert approx.passes(2.19) and approx.passes(1.81) and not approx.passes(2.21) and not approx.passes(float("nan"))
    bound = claims.Claim("p", "e", "t", 0.97, lambda s: 0.0, tolerance=0.0, kind="at_least")
    assert bound.passes(0.99) and not bound.passes(0.96)
    share = claims.Claim("p", "e", "t", 0.73, lambda s: 0.0, tolerance=claims.POINTS_TOL, kind="points")
    assert share.passes(0.775) and share.passes(0.685) and not share.passes(0.79) and not share.passes(0.67)
    assert share.tolerance_text() == "± 5 points"
    assert claims.evaluate(approx, None)[1] is False
    broken = claims.Claim("p", "e", "t", 2.0, lambda s: claims.value(s, "x", system="none"))
    measured, ok = claims.evaluate(broken, {"rows": [{"system": "a", "x": 1}]})
    assert math.isnan(measured) and not ok


def test_results_page_lists_claims_with_verdicts(tmp_path):
    out = tmp_path / "out"
    summary = api.reproduce("mercury-fig14", out / "mercury-fig14", quick=True, plots=False)
    page = tmp_path / "results.md"
    text = results_page.build(out, page)
    assert "## Claims" in text and "### mercury:" in text and "### colloid: 0 of" in text
    fig14 = [line for line in text.splitlines() if line.startswith("| mercury-fig14 (quick)")]
    assert len(fig14) == 2
    # tiermem's number is the ratio of the rows' throughputs, and the verdict follows it.
    rows = {r["system"]: r["throughput"] for r in summary["rows"] if r["tenant"] == "redis"}
    ratio = rows["mercury"] / rows["tpp"]
    expected = "pass" if abs(ratio - 1.149) <= 0.15 * 0.149 else "FAIL"
    assert f"| {results_page._fmt(ratio)}× |" in fig14[0] and fig14[0].endswith(f"| {expected} |")
    fig13 = [line for line in text.splitlines() if line.startswith("| mercury-fig13")]
    assert fig13 and all("not run" in line and line.endswith("| not measured |") for line in fig13)
    assert json.loads((out / "mercury-fig14" / "summary.json").read_text())["rows"]
