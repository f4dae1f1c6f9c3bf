"""Exception classes raised by tiermem.

The native module maps each Rust ``tiermem_core::ErrorKind`` onto one of these classes:

=====================  ==========================
Rust kind              Python class
=====================  ==========================
``Config``, ``Usage``  :class:`ConfigError`
``Trace``              :class:`TraceError`
``Unsupported``        :class:`UnsupportedError`
``Io``, ``Internal``   :class:`TiermemError`
=====================  ==========================
"""

from __future__ import annotations

import re

__all__ = ["TiermemError", "ConfigError", "ConfigNotFoundError", "TraceError", "UnsupportedError"]


class TiermemError(Exception):
    """Base class of every error tiermem raises."""


class ConfigError(TiermemError, ValueError):
    """A config (or an argument) is invalid; the message names the field path.

    ``field`` is the first field the message names, as a path in the syntax that
    overrides and sweeps take (``"machine.tiers[1].capacity"``), or ``None``; ``fields``
    lists every one (a config missing several required fields names them all).
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        message = str(args[0]) if args else ""
        self.fields: list[str] = [f for f in re.findall(r"`([A-Za-z_][\w.\[\]-]*)`", message)
                                  if _is_path(message, f)]
        self.field: str | None = self.fields[0] if self.fields else None


def _is_path(message: str, name: str) -> bool:
    """Whether a backticked name in ``message`` is a field path (after "field" or in a
    "missing required fields" list), not a quoted value."""
    i = message.find(f"`{name}`")
    before = message[:i]
    return before.rstrip().endswith("field") or "missing required fields" in before


class ConfigNotFoundError(ConfigError, FileNotFoundError):
    """``simulate("path.toml")`` where the path is no file (and the text is no TOML)."""


class TraceError(TiermemError, ValueError):
    """An input address trace is malformed."""


class UnsupportedError(TiermemError):
    """The environment lacks something tiermem needs (a permission, a NUMA node, ...)."""
