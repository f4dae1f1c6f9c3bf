"""Typed stubs of the private native module built from ``crates/tiermem-py``.

Use the public API in :mod:`tiermem` instead of calling these directly.
"""

__version__: str

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
