"""docs/results.md generation from summary.json files."""

from __future__ import annotations

import json

from tiermem import plots, results_page


def test_results_page(tmp_path):
    out = tmp_path / "out"
    fig1 = out / "colloid-fig1"
    fig1.mkdir(parents=True)
    rows = [{"system": s, "contention": c, "throughput": 1.5e7 / (c + 1), "default_tier_share": 0.9}
            for s in ("hemem", "tpp") for c in range(2)]
    (fig1 / "summary.json").write_text(json.dumps({"experiment": "colloid-fig1", "quick": True, "rows": rows}))
    plots.plot("colloid-fig1", fig1)
    sim = out / "x"
    sim.mkdir()
    (sim / "summary.json").write_text(json.dumps({"policy": "tpp", "throughput_ops_per_s": 1234.5,
                                                   "tiers": {"dram": {"share": 0.5}},
                                                   "steady_state": {"tiers": [
                                                       {"name": n, "latency_ns": 70.0 * (i + 1)}
                                                       for i, n in enumerate(["dram", "cxl", "far"])]}}))
    page = tmp_path / "docs" / "results.md"
    text = results_page.build(out, page)
    assert page.read_text() == text
    assert "## colloid-fig1" in text and "## x" in text
    assert "| system | contention | throughput | default_tier_share |" in text  # key columns first
    assert "| hemem | 0 | 15,000,000 | 0.9 |" in text
    assert "- quick: yes" in text
    assert "| tiers.dram.share | 0.5 |" in text
    # N tiers: one row each, columns from the data
    assert "| # | name | latency_ns |" in text and "| 2 | far | 210 |" in text, text
    assert "![fig1_throughput](results/colloid-fig1/fig1_throughput.png)" in text
    assert (page.parent / "results" / "colloid-fig1" / "fig1_throughput.png").stat().st_size > 0
    # deterministic
    assert results_page.build(out, page) == text
    # a second run of the same experiment elsewhere: listed after, under its folder; or excluded
    other = out / "bench" / "fig1-quick"
    other.mkdir(parents=True)
    (other / "summary.json").write_text(json.dumps({"experiment": "colloid-fig1", "rows": rows}))
    text2 = results_page.build(out, page)
    assert text2.index("## colloid-fig1\n") < text2.index("## colloid-fig1 (bench/fig1-quick)")
    assert results_page.build(out, page, exclude=["bench"]) == text


def test_key_columns_come_from_the_data():
    rows = [{"alt": 1.5, "contention": 1, "gain": 2.0, "system": "my-new-policy", "colloid": True}]
    assert results_page.key_columns({}, rows) == ["system", "colloid", "contention"]
    assert results_page.key_columns({"keys": ["alt", "system", "nope"]}, rows) == ["alt", "system"]
    lines = results_page.render_section({"rows": rows}, "x", [])
    assert "| system | colloid | contention | alt | gain |" in lines


def test_results_page_empty(tmp_path):
    text = results_page.build(tmp_path / "none", tmp_path / "r.md")
    assert "No results yet" in text


def test_results_page_embeds_benchmark_pages(tmp_path):
    bench = tmp_path / "bench" / "results.md"
    bench.parent.mkdir()
    bench.write_text("# Linux runtime benchmarks\n\n## Eviction\n\nevicted 10 pages/s\n")
    missing = tmp_path / "bench" / "nope.md"
    text = results_page.build(tmp_path / "none", tmp_path / "r.md", bench_pages=[bench, missing])
    # headings nest one level under the page's own sections; the body is kept as is
    assert "\n## Linux runtime benchmarks\n" in text and "\n### Eviction\n" in text
    assert "evicted 10 pages/s" in text
    assert f"Not run yet: `{missing}`" in text


def test_results_page_shows_a_comparison_before_the_rows(tmp_path):
    out = tmp_path / "out" / "granularity-fig8"
    out.mkdir(parents=True)
    (out / "summary.json").write_text(json.dumps({
        "experiment": "granularity-fig8", "quick": True,
        "comparison": [{"criterion": "lulesh: worst static over best", "paper": "+23 %", "measured": "+9.9 %",
                        "holds": False}],
        "rows": [{"setting": "400MiB 1:3", "workload": "lul", "scheme": "dynamic", "runtime_norm": 1.5}]}))
    text = results_page.build(tmp_path / "out", tmp_path / "results.md")
    assert "Paper vs measured:" in text
    assert "| criterion | paper | measured | holds |" in text
    assert "| lulesh: worst static over best | +23 % | +9.9 % | no |" in text
    assert text.index("Paper vs measured:") < text.index("| setting | workload | scheme |")


def test_a_failing_claim_shows_why_under_its_table(monkeypatch):
    from tiermem import claims

    fails = claims.Claim("p", "e", "claim A", 2.0, lambda s: float(s["x"]), gap="fact F is not met")
    passes = claims.Claim("p", "e", "claim B", 2.0, lambda s: 2.0, gap="never shown")
    monkeypatch.setattr(claims, "all_claims", lambda: [fails, passes])
    text = "\n".join(results_page.claims_section({"e": {"x": 1.0}}))
    assert "- claim A: fact F is not met" in text
    assert "never shown" not in text
    # Fixed: no line.
    text = "\n".join(results_page.claims_section({"e": {"x": 2.0}}))
    assert "fact F" not in text
