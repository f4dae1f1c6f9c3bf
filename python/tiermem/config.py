"""Configs as Python values: load from a path, TOML text or dict; dotted-path overrides."""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

import tomli_w

__all__ = ["ConfigLike", "to_toml", "from_toml", "resolve", "set_dotted", "get_dotted", "apply_overrides"]

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
        return path.read_text(), str(path)
    if isinstance(config, str):
        if not _looks_like_toml(config) and Path(config).is_file():
            return Path(config).read_text(), config
        if not _looks_like_toml(config):
            raise FileNotFoundError(f"no such config file: {config}")
        return config, "<string>"
    raise TypeError(f"config must be a path, TOML text or a dict, not {type(config).__name__}")


def _split(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(p == "" for p in parts):
        raise ValueError(f"bad dotted path {path!r}")
    return parts


def get_dotted(config: Mapping[str, Any], path: str) -> Any:
    """Value at a dotted path such as ``"workload.hot_set_bytes"`` or ``"tiers.1.latency_ns"``."""
    node: Any = config
    for part in _split(path):
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def set_dotted(config: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a dotted path in place, creating missing tables.

    A numeric segment indexes into an array of tables (``"tiers.0.capacity_bytes"``).
    """
    parts = _split(path)
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            node = node[int(part)]
            continue
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, (dict, list)):
            where = ".".join(parts[: depth + 1])
            raise ValueError(f"cannot set {path!r}: {where!r} is a {type(child).__name__}, not a table")
        node = child
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``config`` with each dotted-path override applied."""
    out = copy.deepcopy(dict(config))
    for path, value in overrides.items():
        set_dotted(out, path, value)
    return out
