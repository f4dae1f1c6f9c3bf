"""Config values: dict -> TOML round trip, path/string/dict resolution, dotted paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiermem import config as cfg

SAMPLE = {
    "seed": 7,
    "duration_s": 2.5,
    "machine": {"cores": 15, "antagonist": {"cores": 5, "tier": 0}},
    "tiers": [
        {"name": "dram", "capacity_bytes": 2**30, "latency_ns": 70.0},
        {"name": "cxl", "capacity_bytes": 2 * 2**30, "latency_ns": 135.0},
    ],
    "policy": {"name": "colloid", "base": "hemem", "enabled": True},
    "workload": {"kind": "gups", "sizes": [64, 4096], "note": None},
}


def test_dict_to_toml_round_trip():
    text = cfg.to_toml(SAMPLE)
    back = cfg.from_toml(text)
    expected = {**SAMPLE, "workload": {"kind": "gups", "sizes": [64, 4096]}}  # None dropped
    assert back == expected
    assert cfg.to_toml(back) == text  # stable: a second trip changes nothing


def test_resolve_dict_string_and_path(tmp_path: Path):
    text, origin = cfg.resolve(SAMPLE)
    assert origin == "<dict>" and cfg.from_toml(text)["machine"]["cores"] == 15

    assert cfg.resolve("seed = 1\n") == ("seed = 1\n", "<string>")

    f = tmp_path / "x.toml"
    f.write_text("seed = 3\n")
    assert cfg.resolve(f) == ("seed = 3\n", str(f))
    assert cfg.resolve(str(f)) == ("seed = 3\n", str(f))
    with pytest.raises(FileNotFoundError):
        cfg.resolve(str(tmp_path / "missing.toml"))
    with pytest.raises(TypeError):
        cfg.resolve(42)  # type: ignore[arg-type]


def test_set_and_get_dotted_paths():
    c = cfg.apply_overrides(SAMPLE, {
        "machine.antagonist.cores": 10,
        "tiers.1.latency_ns": 189.0,
        "policy.watermark.step": 0.05,  # creates the missing table
    })
    assert cfg.get_dotted(c, "machine.antagonist.cores") == 10
    assert c["tiers"][1]["latency_ns"] == 189.0
    assert c["policy"]["watermark"] == {"step": 0.05}
    # the base is untouched
    assert SAMPLE["machine"]["antagonist"]["cores"] == 5
    assert SAMPLE["tiers"][1]["latency_ns"] == 135.0
    with pytest.raises(ValueError, match="seed"):
        cfg.set_dotted(dict(SAMPLE), "seed.x", 1)
    with pytest.raises(ValueError):
        cfg.set_dotted({}, "a..b", 1)
