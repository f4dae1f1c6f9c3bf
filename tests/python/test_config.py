"""Config values: dict -> TOML round trip, path/string/dict resolution, override paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tiermem
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


def test_overrides_use_the_one_path_syntax():
    c = cfg.apply_overrides(SAMPLE, {
        "machine.antagonist.cores": 10,
        "tiers[1].latency_ns": 189.0,
        "policy.watermark.step": 0.05,  # creates the missing table
        "workload.sizes[0]": 128,
        "machine.name": "ice lake",
        "workload.extra": {"a": [1, 2], "b": True, "gone": None},
    })
    assert c["machine"]["antagonist"]["cores"] == 10
    assert c["tiers"][1]["latency_ns"] == 189.0 and c["tiers"][0]["latency_ns"] == 70.0
    assert c["policy"]["watermark"] == {"step": 0.05}
    assert c["workload"]["sizes"] == [128, 4096]
    assert c["machine"]["name"] == "ice lake"
    assert c["workload"]["extra"] == {"a": [1, 2], "b": True}
    assert type(cfg.apply_overrides(SAMPLE, {"seed": np.int64(3)})["seed"]) is int
    # the base is untouched
    assert SAMPLE["machine"]["antagonist"]["cores"] == 5
    assert SAMPLE["tiers"][1]["latency_ns"] == 135.0
    # set_path: in place
    c = {"seed": 1}
    cfg.set_path(c, "machine.tiers", [{"name": "a"}])
    cfg.set_path(c, "machine.tiers[0].name", "b")
    assert c == {"seed": 1, "machine": {"tiers": [{"name": "b"}]}}
    # configs given as TOML text or a path work too
    assert cfg.apply_overrides("seed = 1\n", {"seed": 2}) == {"seed": 2}


@pytest.mark.parametrize("path,value,needle", [
    ("seed.x", 1, "`seed` is an integer, not a table, so it has no field `x`"),
    ("a..b", 1, "not a valid path"),
    ("tiers.1.latency_ns", 1, "`tiers` is an array of 2 entries, not a table: index it as `tiers[0]`"),
    ("tiers[2].latency_ns", 1, "`tiers` has 2 entries, so index 2 does not exist; use 0..1"),
    ("tiers[x]", 1, "`[x]` is not an array index"),
    ("machine[0]", 1, "`machine` is a table, not an array"),
    ("antagonists[0].cores", 1, "`antagonists` does not exist, so it has no element [0]"),
    ("seed", None, "None is not a TOML value"),
    ("seed", object(), "a Python object is not a TOML value"),
    ("seed", 2**70, "does not fit a TOML integer"),
])
def test_bad_override_paths_are_config_errors_naming_the_path(path, value, needle):
    with pytest.raises(tiermem.ConfigError) as info:
        cfg.apply_overrides(SAMPLE, {path: value})
    assert needle in str(info.value), str(info.value)
    assert str(info.value).startswith(f"field `{path}`: "), str(info.value)
    assert info.value.field == path
    with pytest.raises(TypeError):
        cfg.apply_overrides(SAMPLE, {1: 2})  # type: ignore[dict-item]


def test_a_rust_source_newer_than_the_native_module_is_named(tmp_path):
    """`cargo build` leaves the native module stale; the check names the newer source."""
    import os

    from tiermem.config import newer_rust_source

    (tmp_path / "Cargo.toml").write_text("[workspace]\n")
    src = tmp_path / "crates" / "x" / "src" / "lib.rs"
    src.parent.mkdir(parents=True)
    src.write_text("")
    native = tmp_path / "python" / "_native.abi3.so"
    native.parent.mkdir()
    native.write_bytes(b"")
    for path, t in [(tmp_path / "Cargo.toml", 100), (src, 100), (native, 200)]:
        os.utime(path, (t, t))
    assert newer_rust_source(native, tmp_path) is None
    os.utime(src, (300, 300))
    assert newer_rust_source(native, tmp_path) == src
    # Not a checkout (an installed package), or no module file: nothing to compare.
    assert newer_rust_source(native, tmp_path / "python") is None
    assert newer_rust_source(tmp_path / "missing.so", tmp_path) is None
