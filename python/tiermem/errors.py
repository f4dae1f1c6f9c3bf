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

__all__ = ["TiermemError", "ConfigError", "TraceError", "UnsupportedError"]


class TiermemError(Exception):
    """Base class of every error tiermem raises."""


class ConfigError(TiermemError, ValueError):
    """A config (or an argument) is invalid; the message names the field path."""


class TraceError(TiermemError, ValueError):
    """An input address trace is malformed."""


class UnsupportedError(TiermemError):
    """The environment lacks something tiermem needs (a permission, a NUMA node, ...)."""
