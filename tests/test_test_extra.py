"""The ``test`` extra installs what the tests import (issue 41 item 3): every third-party module a test module
imports is installed by the extra (its pins and what they require), or the module guards it with
``pytest.importorskip`` and skips saying why. Read from the sources with :mod:`ast`, function-local imports
included; the package's own dependencies (numpy, ml_dtypes) count as installed."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

# Helper modules whose imports run only under tests that skip first, and why.
GUARDED_BY_CALLERS = {
    "kernels/contrib/ms_models.py": {"torch"},  # its exporters run only in tests that importorskip("torch")
    "kernels/contrib/tiny_transformers.py": {"torch"},  # imported only by tests that importorskip("torch")
}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    return re.split(r"[\s;<>=!\[~(]", req, maxsplit=1)[0]


def _installed_closure(names: list[str]) -> set[str]:
    """The distributions ``names`` pull in (required, not optional), as installed here."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if _key(name) in seen:
            continue
        seen.add(_key(name))
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        todo += [_requirement_name(r) for r in dist.requires or [] if "extra ==" not in r]
    return seen


def _top_level_modules(dists: set[str]) -> set[str]:
    mods: set[str] = set()
    for dist in md.distributions():
        if _key(dist.metadata["Name"]) not in dists:
            continue
        listed = dist.read_text("top_level.txt")
        mods.update(listed.split() if listed else [])
        for f in dist.files or []:
            head = str(f).split("/")[0]
            if head.endswith(".py"):
                mods.add(head[:-3])
            elif "." not in head and head != "__pycache__":
                mods.add(head)
    return mods


def _catches_import_error(node: ast.Try) -> bool:
    names = {"ImportError", "ModuleNotFoundError"}
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(k, ast.Name) and k.id in names for k in kinds):
            return True
    return False


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(top-level modules imported, modules guarded by pytest.importorskip or by a ``try`` that catches
    ImportError) of a test source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    skipped: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and _catches_import_error(node):
            for inner in (n for stmt in node.body for n in ast.walk(stmt)):
                if isinstance(inner, ast.Import):
                    skipped.update(a.name.split(".")[0] for a in inner.names)
                elif isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                    skipped.add(inner.module.split(".")[0])
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "importorskip"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            skipped.add(node.args[0].value.split(".")[0])
    return imported, skipped


def test_the_test_extra_installs_what_the_tests_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [_requirement_name(r) for r in project["optional-dependencies"]["test"] + project["dependencies"]]
    missing = [n for n in wanted if _key(n) not in {_key(d.metadata["Name"]) for d in md.distributions()}]
    if missing:
        pytest.skip(f"the test extra is not installed here: {missing}")
    provided = _top_level_modules(_installed_closure(wanted))
    local = {p.stem for p in TESTS.rglob("*.py")} | {p.name for p in TESTS.rglob("*") if p.is_dir()}
    local |= {"onnxcore", "tests"}
    unguarded = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel.startswith("compat/scripts/"):
            # Public scripts run in child processes: the corpus's harness skips one whose packages are missing,
            # naming them (tests/compat/runner.py).
            continue
        imported, skipped = _imports(path)
        for mod in sorted(imported - skipped - local - provided - GUARDED_BY_CALLERS.get(rel, set())):
            if mod not in sys.stdlib_module_names:
                unguarded.append(f"{rel}: {mod}")
    assert unguarded == [], "imported by tests, not in the test extra, not guarded by pytest.importorskip"


def test_the_transformer_optimizer_finds_sympy_in_the_test_extra() -> None:
    # onnxruntime's transformer optimizer imports sympy when it runs (its symbolic shape inference), which no
    # static reading of the tests sees: the extra pins it (tests/kernels/contrib/test_contrib_models.py).
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {_key(_requirement_name(r)): r for r in project["optional-dependencies"]["test"]}
    assert "sympy" in pins and "==" in pins["sympy"]
