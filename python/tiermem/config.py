"""Configs as Python values: load from a path, TOML text or dict; path overrides
(``machine.tiers[1].capacity``), applied by the Rust core."""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Union

import tomli_w

from .errors import ConfigError, ConfigNotFoundError, TiermemError

__all__ = ["ConfigLike", "to_toml", "from_toml", "resolve", "set_path", "apply_overrides", "override_text"]

#: What :func:`tiermem.simulate` accepts: a path to a TOML file, TOML text, or a dict.
ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def to_toml(config: Mapping[str, Any]) -> str:
    """TOML text of a config dict (``None`` values are dropped: TOML has no null)."""
    return tomli_w.dumps(_drop_none(config))


def from_toml(text: str) -> dict[str, Any]:
    """Parse TOML text into a dict."""
    return tomllib.loads(text)


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_drop_none(v) for v in value]
    return value


def _looks_like_toml(text: str) -> bool:
    return "\n" in text or "=" in text or text.lstrip().startswith("[")


def resolve(config: ConfigLike) -> tuple[str, str]:
    """Turn a config into ``(toml_text, origin)`` for the native simulator.

    ``origin`` is the file path (relative paths inside the config are resolved against
    it) or ``"<string>"`` / ``"<dict>"``.
    """
    if isinstance(config, Mapping):
        return to_toml(config), "<dict>"
    if isinstance(config, os.PathLike):
        path = Path(config)
        if not path.is_file():
            raise ConfigNotFoundError(f"config {str(path)!r} is not an existing file; give a path to a TOML file")
        return path.read_text(), str(path)
    if isinstance(config, str):
        if "\n" not in config and len(config) < 4096 and Path(config).is_file():
            return Path(config).read_text(), config
        try:
            tomllib.loads(config)
        except tomllib.TOMLDecodeError as e:
            shown = config if len(config) <= 60 else config[:57] + "..."
            cls = ConfigError if _looks_like_toml(config) else ConfigNotFoundError
            raise cls(
                f"config {shown!r} is neither an existing file nor valid TOML ({e}); "
                "give a path to a TOML file, TOML text or a dict"
            ) from None
        return config, "<string>"
    raise TypeError(f"config must be a path, TOML text or a dict, not {type(config).__name__}")


_stale_checked = False


def native_module() -> ModuleType:
    """The compiled ``tiermem._native`` module (imported on first use, so that plotting
    and the results page work without it). In a source checkout, a warning on stderr
    when a Rust source is newer than the module: `cargo build` rebuilds the `tiermem`
    binary, not this module, and `tiermem reproduce all` simulates through it."""
    global _stale_checked
    try:
        from . import _native
    except ImportError as e:  # pragma: no cover - depends on the build
        raise TiermemError(
            "tiermem's native module is not built: run `make setup` (or `maturin develop --release`)"
        ) from e
    if not _stale_checked:
        _stale_checked = True
        native = Path(getattr(_native, "__file__", "") or "")
        newer = newer_rust_source(native, Path(__file__).resolve().parents[2])
        if newer is not None:
            print(
                f"tiermem: warning: {newer} is newer than the native module {native.name}: "
                "results come from the code it was built from; run `make setup` to rebuild it",
                file=sys.stderr,
            )
    return _native


def newer_rust_source(native: Path, root: Path) -> Path | None:
    """A Rust source (``crates/**/*.rs``, ``Cargo.toml``s, ``Cargo.lock``) under the source
    checkout ``root`` modified after the built module ``native``, or None (also when
    ``root`` is no checkout, e.g. an installed package, or the module has no file)."""
    if not native.is_file() or not (root / "Cargo.toml").is_file() or not (root / "crates").is_dir():
        return None
    built = native.stat().st_mtime
    sources = [root / "Cargo.toml", root / "Cargo.lock"]
    sources += [p for p in (root / "crates").rglob("*") if p.suffix == ".rs" or p.name == "Cargo.toml"]
    for source in sources:
        try:
            if source.stat().st_mtime > built:
                return source
        except OSError:
            continue
    return None


def override_text(text: str, origin: str, overrides: Mapping[str, Any]) -> str:
    """TOML ``text`` (from ``origin``) with each override applied in order, by the Rust
    core (``tiermem_sim::overrides``, the same code as ``tiermem sim --set``)."""
    pairs = []
    for path, value in overrides.items():
        if not isinstance(path, str):
            raise TypeError(f"override paths are strings such as 'machine.tiers[1].capacity', not {path!r}")
        pairs.append((path, value))
    return native_module().apply_overrides(text, origin, pairs)


def apply_overrides(config: ConfigLike, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A new config dict: ``config`` (a path, TOML text or a dict; left untouched) with
    each override applied.

    ``overrides`` maps paths to values. A path names tables with dots and array elements
    with ``[i]``, as config errors do: ``"machine.tiers[1].capacity"`` is ``capacity`` in
    the second ``[[machine.tiers]]``. Missing tables are created (``"colloid.delta"``); a
    path that cannot exist (an index past the end, a field of a number, a malformed path)
    raises :class:`tiermem.ConfigError` naming it (``err.field`` is the path).

    >>> base = {"machine": {"tiers": [{"capacity": "32G"}, {"capacity": "96G"}]}}
    >>> apply_overrides(base, {"machine.tiers[1].capacity": "64G", "policy.policy": "tpp"})
    {'machine': {'tiers': [{'capacity': '32G'}, {'capacity': '64G'}]}, 'policy': {'policy': 'tpp'}}
    >>> apply_overrides(base, {"machine.tiers[2].capacity": "1G"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tiermem.errors.ConfigError: field `machine.tiers[2].capacity`: `machine.tiers` has 2 entries, so index 2 ...
    """
    text, origin = resolve(config)
    return from_toml(override_text(text, origin, overrides))


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at ``path`` in ``config`` in place (see :func:`apply_overrides`).

    >>> c = {"seed": 1}
    >>> set_path(c, "workload.hot_set", "24G")
    >>> c
    {'seed': 1, 'workload': {'hot_set': '24G'}}
    """
    new = apply_overrides(config, {path: value})
    config.clear()
    config.update(new)
