"""Typed stubs of the private native module built from ``crates/tiermem-py``.

Use the public API in :mod:`tiermem` instead of calling these directly.
"""

from typing import Any

__version__: str

def apply_overrides(toml_text: str, origin: str, overrides: list[tuple[str, Any]]) -> str:
    """Apply ``(path, value)`` overrides in order to the TOML document ``toml_text`` and
    return the new document (``tiermem_sim::overrides``, as ``tiermem sim --set``).

    Paths are ``machine.tiers[1].capacity`` style; values are bool, int, float, str, lists
    and dicts of them (``None`` entries of a dict are left out). Raises
    :class:`tiermem.ConfigError` naming the path for a malformed or impossible path or a
    value TOML cannot hold.
    """

def simulate(toml_text: str, origin: str) -> tuple[str, list[tuple[str, list[float]]]]:
    """Run one simulation.

    ``origin`` names the config in error messages and is the base for relative paths.
    Returns the summary as JSON text and the time-series columns as ``(name, values)``;
    all columns have the same length and the first is ``t_s``.

    Raises :class:`tiermem.ConfigError` for an invalid config (the message names the field
    path), :class:`tiermem.TraceError`, :class:`tiermem.UnsupportedError`, or
    :class:`tiermem.TiermemError`.
    """

def reproduce(experiment: str, out_dir: str, quick: bool = False) -> str:
    """Reproduce a paper experiment (``colloid-fig1``, ...) into ``out_dir``.

    Writes the experiment's data files and ``summary.json`` there and returns the summary
    as JSON text. Plots are drawn by :mod:`tiermem.plots`, not here.
    """

def experiments() -> list[str]:
    """The experiment names :func:`reproduce` accepts, in the order ``tiermem reproduce``
    lists them (``tiermem_sim::reproduce::EXPERIMENTS``)."""

def check_config(toml_text: str, origin: str) -> None:
    """Parse and validate a simulation config without running it (the checks of
    :func:`simulate`); raises :class:`tiermem.ConfigError` naming the field."""
