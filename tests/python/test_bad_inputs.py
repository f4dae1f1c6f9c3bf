"""Issue 10, item 4: bad inputs from Python raise tiermem.ConfigError naming the field."""

from __future__ import annotations

import pytest

import tiermem
from tiermem import config as cfg_mod


@pytest.fixture
def base(root):
    path = root / "experiments" / "colloid" / "gups-base.toml"
    c = tiermem.from_toml(path.read_text())
    c["duration_s"] = 1
    return c


def test_text_that_is_neither_file_nor_toml_is_config_error():
    with pytest.raises(tiermem.ConfigError, match="neither an existing file nor valid TOML") as info:
        tiermem.simulate("not toml [[[")
    assert "line 1" in str(info.value)  # the TOML parse error is included
    # A missing path is still a FileNotFoundError too (and a ConfigError).
    with pytest.raises(FileNotFoundError):
        tiermem.simulate("/no/such/config.toml")
    with pytest.raises(tiermem.ConfigError, match="neither"):
        cfg_mod.resolve("/no/such/config.toml")
    from pathlib import Path

    with pytest.raises(tiermem.ConfigError, match="not an existing file"):
        tiermem.simulate(Path("/no/such/config.toml"))


def test_bad_sweep_path_is_config_error_naming_it(base):
    with pytest.raises(tiermem.ConfigError, match=r"machine\.tiers.*2 entries") as info:
        tiermem.sweep(base, {"machine.tiers[5].capacity": ["1G", "2G"]})
    assert not isinstance(info.value, IndexError)
    assert info.value.field == "machine.tiers[5].capacity"
    with pytest.raises(tiermem.ConfigError, match="index") as info:
        tiermem.sweep(base, {"machine.tiers[first].capacity": ["1G"]})
    assert info.value.field == "machine.tiers[first].capacity"
    with pytest.raises(tiermem.ConfigError, match=r"index it as `machine\.tiers\[0\]`"):
        tiermem.sweep(base, {"machine.tiers.1.capacity": ["1G"]})
    with pytest.raises(tiermem.ConfigError, match="machine.app_cores"):
        cfg_mod.set_path(base, "machine.app_cores.x", 1)
    # A bad value at any point fails before anything runs.
    with pytest.raises(tiermem.ConfigError, match="does not fit a TOML integer"):
        tiermem.sweep(base, {"seed": [1, 2**70]})
    with pytest.raises(tiermem.ConfigError, match=r"field `policy\.policy`"):
        tiermem.simulate(base, overrides={"policy.policy": "no-such-policy"})


def test_dict_config_errors_cite_paths_not_lines(base):
    base["machine"]["tiers"][1]["capacity"] = 1000
    with pytest.raises(tiermem.ConfigError) as info:
        tiermem.simulate(base)
    msg = str(info.value)
    assert "`machine.tiers[1].capacity`" in msg and "one page" in msg, msg
    assert info.value.field == "machine.tiers[1].capacity"
    assert "<dict>:" not in msg.replace("<dict>: ", ""), msg  # no "<dict>:42:"
    base["machine"]["tiers"][1]["capacity"] = "96G"
    base["machine"]["app_cores"] = "many"
    with pytest.raises(tiermem.ConfigError) as info:
        tiermem.simulate(base)
    assert info.value.field == "machine.app_cores"
    assert not any(f"<dict>:{n}" in str(info.value) for n in range(1, 100)), str(info.value)


def test_every_python_case_maps_to_config_error_with_field(base):
    cases = {
        "machine.app_cores": 0,
        "machine.tiers[0].capacity": 1e30,
        "workload.working_set": "99999999999999999999G",
        "machine.tiers[1].capacity": -5,
    }
    for path, value in cases.items():
        c = cfg_mod.apply_overrides(base, {path: value})
        with pytest.raises(tiermem.ConfigError) as info:
            tiermem.simulate(c)
        assert info.value.field == path, (path, str(info.value))
        # The same override given to simulate: the same path in the error, no line numbers.
        with pytest.raises(tiermem.ConfigError) as info:
            tiermem.simulate(base, overrides={path: value})
        assert info.value.field == path, (path, str(info.value))


def test_missing_fields_reported_together(base):
    del base["machine"]["app_cores"]
    del base["machine"]["mlp_lines"]
    with pytest.raises(tiermem.ConfigError) as info:
        tiermem.simulate(base)
    assert info.value.fields == ["machine.app_cores", "machine.mlp_lines"], str(info.value)


def test_warnings_reach_the_python_summary(base):
    base["policy"]["policy"] = "static"
    res = tiermem.simulate(base)
    assert res.summary["warnings"] == res.warnings
    assert len(res.warnings) == 1 and "nothing can move" in res.warnings[0]
    base["policy"]["policy"] = "hemem"
    base["machine"]["tiers"][1]["capacity"] = "40G"
    res = tiermem.simulate(base)
    assert [w for w in res.warnings if w.startswith("tiers full")], res.warnings
