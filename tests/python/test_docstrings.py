"""Every example in the package's docstrings runs (doctest), against the shipped configs.

Examples run in a scratch copy of the repository's ``examples/`` and ``experiments/`` (the
docstrings use paths relative to the repository root and write under ``out/``). An example
marked ``+SKIP`` (a minute-long reproduction) is still executed by
``test_skipped_examples_run`` unless ``TIERMEM_SKIP_E2E=1``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import shutil

import pytest

import tiermem
from conftest import skip_e2e

MODULES = ["tiermem"] + [f"tiermem.{m.name}" for m in pkgutil.iter_modules(tiermem.__path__)
                         if not m.name.startswith("_")]


@pytest.fixture
def in_scratch_repo(root, tmp_path, monkeypatch):
    for d in ("examples", "experiments"):
        shutil.copytree(root / d, tmp_path / d)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tests(module_name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(module_name)
    return [t for t in doctest.DocTestFinder().find(module, module_name) if t.examples]


def test_the_package_docstring_has_examples():
    assert _tests("tiermem"), "the package docstring lost its examples"


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name, in_scratch_repo):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in _tests(module_name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 or module_name != "tiermem"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {module_name} failed (see stdout)"


@pytest.mark.skipif(skip_e2e(), reason="TIERMEM_SKIP_E2E=1")
def test_skipped_examples_run(in_scratch_repo):
    """The ``+SKIP`` examples are slow, not fake: run them (outputs unchecked)."""
    ran = 0
    for name in MODULES:
        for test in _tests(name):
            globs = dict(test.globs)
            for ex in test.examples:
                if ex.exc_msg is not None:
                    continue  # shows an exception: checked by the doctest run above
                exec(compile(ex.source, f"<{test.name}>", "exec"), globs)
                ran += bool(ex.options.get(doctest.SKIP))
    assert ran >= 1
    assert (in_scratch_repo / "out" / "fig1" / "summary.json").is_file()
