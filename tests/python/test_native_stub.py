"""The hand-written stub ``python/tiermem/_native.pyi`` against the built extension module.

The stub is what type checkers and editors see; nothing else keeps it in step with
``crates/tiermem-py/src/lib.rs`` (issue 48 item 7). Checked here: every public name of the
module is in the stub and every stub name is in the module; for each function the stub's
parameters (names, order, kind, defaults) equal the module's, read from the
``__text_signature__`` PyO3 gives each ``#[pyfunction]`` (``inspect.signature``); a
module-level value's annotation is its runtime type. Return types are not introspectable
from a builtin function and are not checked.

Run after ``make native`` (the module must be built from the current sources).
"""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType

import pytest

from conftest import ROOT

STUB = ROOT / "python" / "tiermem" / "_native.pyi"
LIB_RS = ROOT / "crates" / "tiermem-py" / "src" / "lib.rs"

# ast.arguments field -> inspect.Parameter kind, in signature order.
_KINDS = (
    ("posonlyargs", inspect.Parameter.POSITIONAL_ONLY),
    ("args", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    ("kwonlyargs", inspect.Parameter.KEYWORD_ONLY),
)


def stub_names(text: str) -> dict[str, ast.stmt]:
    """Top-level names the stub declares: functions and annotated values (imports are not)."""
    out: dict[str, ast.stmt] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def stub_params(fn: ast.FunctionDef) -> list[tuple[str, inspect._ParameterKind, object]]:
    """(name, kind, default) per parameter of a stub function; default is
    ``inspect.Parameter.empty`` where none is given."""
    a = fn.args
    empty = inspect.Parameter.empty
    positional = [(p, k) for field, k in _KINDS[:2] for p in getattr(a, field)]
    # Positional defaults belong to the last len(defaults) positional parameters.
    pos_defaults = [empty] * (len(positional) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
    out = [(p.arg, k, d) for (p, k), d in zip(positional, pos_defaults, strict=True)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, empty))
    for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append((p.arg, inspect.Parameter.KEYWORD_ONLY, empty if d is None else ast.literal_eval(d)))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, empty))
    return out


def module_public_names(mod: ModuleType) -> set[str]:
    """What the module exports: its ``__all__`` (PyO3 lists every added function and value
    there) and any other attribute without a leading underscore."""
    return set(getattr(mod, "__all__", ())) | {n for n in dir(mod) if not n.startswith("_")}


def mismatches(mod: ModuleType, text: str) -> list[str]:
    """Every disagreement between the module and the stub text, one line each."""
    declared = stub_names(text)
    public = module_public_names(mod)
    problems = [f"`{n}` is in the module but not in the stub" for n in sorted(public - declared.keys())]
    problems += [f"`{n}` is in the stub but not in the module" for n in sorted(declared.keys() - public)]
    for name in sorted(public & declared.keys()):
        obj, node = getattr(mod, name), declared[name]
        if isinstance(node, ast.FunctionDef):
            if not callable(obj):
                problems.append(f"`{name}`: a function in the stub, a {type(obj).__name__} in the module")
                continue
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                problems.append(f"`{name}`: the module gives no signature to check the stub against")
                continue
            have = [(p.name, p.kind, p.default) for p in sig.parameters.values()]
            want = stub_params(node)
            if have != want:
                problems.append(f"`{name}`: stub parameters {_show(want)} != module {_show(have)}")
        else:
            if callable(obj):
                problems.append(f"`{name}`: a value in the stub, callable in the module")
                continue
            ann = ast.unparse(node.annotation)
            if ann != type(obj).__name__:
                problems.append(f"`{name}`: annotated `{ann}` in the stub, a {type(obj).__name__} in the module")
    return problems


def _show(params: list[tuple[str, inspect._ParameterKind, object]]) -> str:
    def one(p):
        name, kind, default = p
        star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(kind, "")
        kw = "(kw-only)" if kind == inspect.Parameter.KEYWORD_ONLY else ""
        pos = "(pos-only)" if kind == inspect.Parameter.POSITIONAL_ONLY else ""
        dflt = "" if default is inspect.Parameter.empty else f"={default!r}"
        return f"{star}{name}{pos}{kw}{dflt}"

    return "(" + ", ".join(one(p) for p in params) + ")"


@pytest.fixture(scope="module")
def native() -> ModuleType:
    try:
        from tiermem import _native
    except ImportError as e:  # pragma: no cover
        pytest.fail(f"tiermem._native is not built (run `make native`): {e}")
    return _native


def test_stub_matches_the_built_module(native):
    problems = mismatches(native, STUB.read_text())
    assert not problems, f"{STUB.relative_to(ROOT)} disagrees with the built tiermem._native:\n" + "\n".join(problems)


def test_every_module_function_is_introspectable(native):
    """The signature comparison above only means something if the module's functions carry
    signatures (PyO3's ``__text_signature__``); none of them may be skipped."""
    funcs = [n for n in module_public_names(native) if callable(getattr(native, n))]
    assert funcs, "the module exports no functions"
    for n in funcs:
        inspect.signature(getattr(native, n))  # raises if PyO3 gave none


def test_the_check_finds_each_kind_of_drift(native):
    """Edited copies of the real stub: each drift is reported, naming the function."""
    text = STUB.read_text()
    assert not mismatches(native, text)
    cases = {
        # a parameter dropped
        "def simulate(toml_text: str, origin: str)": ("def simulate(toml_text: str)", "`simulate`"),
        # a default changed
        "quick: bool = False": ("quick: bool = True", "`reproduce`"),
        # a parameter renamed
        "def check_config(toml_text: str, origin: str)": ("def check_config(text: str, origin: str)", "`check_config`"),
        # a value's type
        "__version__: str": ("__version__: int", "`__version__`"),
    }
    for old, (new, named) in cases.items():
        assert old in text, f"the stub no longer contains {old!r}: update this test"
        found = mismatches(native, text.replace(old, new, 1))
        assert any(named in p for p in found), f"{new!r} not reported: {found}"
    # A function missing from the stub, and one the module does not have.
    gone = text.replace("def experiments()", "def experiments_gone()", 1)
    found = mismatches(native, gone)
    assert "`experiments` is in the module but not in the stub" in found
    assert "`experiments_gone` is in the stub but not in the module" in found


def test_the_built_module_is_current(native):
    """A stale ``.so`` would check the stub against old code: the module exports exactly what
    ``lib.rs``'s ``#[pymodule]`` registers (``wrap_pyfunction!(NAME`` and ``m.add("NAME"``)."""
    src = LIB_RS.read_text()
    registered = set(re.findall(r"wrap_pyfunction!\((\w+)", src)) | set(re.findall(r'm\.add\("(\w+)"', src))
    assert registered, f"no registrations found in {LIB_RS}"
    assert module_public_names(native) == registered, "tiermem._native is stale: run `make native`"
