"""Configs as Python values: load from a path, TOML text or dict; dotted-path overrides."""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

import tomli_w

from .errors import ConfigError, ConfigNotFoundError

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


def _split(path: str) -> list[str]:
    parts = path.split(".") if isinstance(path, str) else []
    if not path or any(p == "" for p in parts):
        raise ConfigError(f"bad dotted path {path!r}: write table and field names separated by dots, e.g. 'machine.tiers.1.capacity'")
    return parts


def _path_error(path: str, message: str) -> ConfigError:
    """A ConfigError about a dotted path; ``.field`` is that path."""
    err = ConfigError(message)
    err.field = path
    err.fields = [path]
    return err


def _index(node: list[Any], parts: list[str], depth: int, path: str) -> int:
    """The list index that ``parts[depth]`` names, checked against ``node``."""
    part = parts[depth]
    where = ".".join(parts[:depth]) or "the config"
    try:
        i = int(part)
    except ValueError:
        raise _path_error(
            path, f"bad path {path!r}: {where!r} is a list, so {part!r} must be an index 0..{len(node) - 1}"
        ) from None
    if not 0 <= i < len(node):
        raise _path_error(
            path, f"bad path {path!r}: {where!r} has {len(node)} entries, so index {i} does not exist"
            + (f"; use 0..{len(node) - 1}" if node else "")
        )
    return i


def get_dotted(config: Mapping[str, Any], path: str) -> Any:
    """Value at a dotted path such as ``"workload.hot_set_bytes"`` or ``"tiers.1.latency_ns"``."""
    parts = _split(path)
    node: Any = config
    for depth, part in enumerate(parts):
        if isinstance(node, list):
            node = node[_index(node, parts, depth, path)]
        elif isinstance(node, Mapping):
            if part not in node:
                where = ".".join(parts[:depth]) or "the config"
                raise _path_error(path, f"bad path {path!r}: {where!r} has no field {part!r}")
            node = node[part]
        else:
            where = ".".join(parts[:depth])
            raise _path_error(path, f"bad path {path!r}: {where!r} is a {type(node).__name__}, not a table")
    return node


def set_dotted(config: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a dotted path in place, creating missing tables.

    A numeric segment indexes into an array of tables (``"tiers.0.capacity_bytes"``).
    A path that cannot exist (an index past the end, a field of a number) raises
    :class:`tiermem.ConfigError` naming it.
    """
    parts = _split(path)
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            node = node[_index(node, parts, depth, path)]
            if not isinstance(node, (dict, list)):
                where = ".".join(parts[: depth + 1])
                raise _path_error(path, f"cannot set {path!r}: {where!r} is a {type(node).__name__}, not a table")
            continue
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, (dict, list)):
            where = ".".join(parts[: depth + 1])
            raise _path_error(path, f"cannot set {path!r}: {where!r} is a {type(child).__name__}, not a table")
        node = child
    last = parts[-1]
    if isinstance(node, list):
        node[_index(node, parts, len(parts) - 1, path)] = value
    else:
        node[last] = value


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``config`` with each dotted-path override applied."""
    out = copy.deepcopy(dict(config))
    for path, value in overrides.items():
        set_dotted(out, path, value)
    return out
