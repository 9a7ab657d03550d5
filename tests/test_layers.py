"""The package's layers (docs/architecture.md): imports go down the layers only, and no module imports itself
back through others.

Read from the source with :mod:`ast`, function-local imports included (an import moved into a function to dodge
a cycle is still a dependency); imports under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "onnxcore"

# Top to bottom. A layer may import the layers below it; layers in one tuple are independent of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),
    ("optimizer",),
    ("conformance", "reporting", "dask", "backend", "onnx"),
    ("<root>",),
    ("runtime",),
    ("capi",),
    ("convert",),
    ("build",),
    ("validate",),
    ("infer",),
    ("kernels",),
    ("graph",),
    ("defs", "text"),
    ("types",),
    ("io",),
    ("external",),
    ("proto",),
    ("wire",),
    ("libs",),
    ("limits",),
    ("errors", "_lazy"),
)
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return "<root>" if len(parts) == 1 else parts[1]


def _imports(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, imported onnxcore module, inside a function) of every import that runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""  # relative imports are banned (ruff TID252)
            names = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names]
        else:
            continue
        for name in names:
            if name == "onnxcore" or name.startswith("onnxcore."):
                yield node.lineno, name, id(node) in inside


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (SRC.parent / rel).with_suffix(".py").is_file() or (SRC.parent / rel / "__init__.py").is_file()


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    for path in _sources():
        assert _layer(_module_name(path)) in LEVEL, f"{path}: add its package to LAYERS (docs/architecture.md)"


def test_imports_go_down_the_layers() -> None:
    wrong: list[str] = []
    for path in _sources():
        here = _layer(_module_name(path))
        for line, name, _local in _imports(path):
            there = _layer(name)
            if there == here:
                continue
            if LEVEL[there] <= LEVEL[here]:
                wrong.append(f"{path.relative_to(SRC)}:{line}: {here} imports {name} ({there} is not below it)")
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back() -> None:
    """No file-level circle: the graph of module imports (function-local ones included) is acyclic."""
    graph: dict[str, set[str]] = {}
    for path in _sources():
        mod = _module_name(path)
        targets = graph.setdefault(mod, set())
        for _line, name, _local in _imports(path):
            while name and not _is_module(name):
                name = name.rpartition(".")[0]
            if name and name != mod:
                targets.add(name)
    # A package's __init__ re-exporting its modules is not a circle with them: a module importing its own
    # package's name is resolved to the package's modules already loaded.
    for mod, targets in graph.items():
        graph[mod] = {t for t in targets if not mod.startswith(t + ".")}
    state: dict[str, int] = {}
    cycles: list[str] = []
    for start in graph:
        if state.get(start):
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            mod, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[mod] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    assert not cycles, "\n".join(cycles)


def _function_spans(path: Path) -> list[tuple[int, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_function_local_imports_say_why() -> None:
    """An import inside a function is lazy on purpose (a heavy or optional path), and a comment says why: on the
    import's line, the line above it, or a line of the function before it that says "lazy"."""
    silent: list[str] = []
    for path in _sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        spans = _function_spans(path)
        for line, name, local in _imports(path):
            if not local:
                continue
            if "#" in lines[line - 1] or (line > 1 and lines[line - 2].strip().startswith("#")):
                continue
            start = max(a for a, b in spans if a <= line <= b)
            if any(t.strip().startswith("#") and "lazy" in t.lower() for t in lines[start - 1 : line - 1]):
                continue
            where = f"{path.relative_to(SRC)}:{line}"
            if not silent or not silent[-1].startswith(where + ":"):
                silent.append(f"{where}: {name}")
    assert not silent, "function-local imports without a comment saying why:\n" + "\n".join(silent)


@pytest.mark.parametrize("entry", ["check", "infer"])
def test_validation_loads_no_runtime(tmp_path: Path, entry: str) -> None:
    """``onnxcore.check`` (and inference) of a model loads no module of the evaluator."""
    model = Path(__file__).resolve().parent.parent / "src" / "onnxcore" / "data"
    bundled = next(model.glob("*.onnx"))
    call = "onnxcore.check(m)" if entry == "check" else "__import__('onnxcore.infer').infer.infer_shapes(m)"
    code = (
        "import sys, onnxcore\n"
        f"m = onnxcore.load({str(bundled)!r})\n"
        f"{call}\n"
        "print(sorted(n for n in sys.modules if n.startswith('onnxcore.runtime')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _private_kernels_module(name: str) -> bool:
    """A private module of ``kernels`` (a ``_``-prefixed part below ``onnxcore.kernels``) or the compiled loops
    (``onnxcore.kernels.accel``, which only kernels call)."""
    parts = name.split(".")
    if parts[:2] != ["onnxcore", "kernels"]:
        return False
    return any(p.startswith("_") for p in parts[2:]) or parts[2:3] == ["accel"]


def test_only_kernels_import_private_kernels_modules() -> None:
    """No module outside ``kernels/`` imports a private kernels module or ``kernels.accel`` (issue 37): operator
    arithmetic and the compiled loops are reached through kernels and the public modules of ``kernels``."""
    wrong: list[str] = []
    for path in _sources():
        if _layer(_module_name(path)) == "kernels":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            wrong += [f"{path.relative_to(SRC)}:{node.lineno}: {n}" for n in names if _private_kernels_module(n)]
    assert not wrong, "\n".join(wrong)


def test_private_kernels_module_rule_is_checked() -> None:
    """The rule above recognises what it forbids (so that its test cannot pass by matching nothing)."""
    assert _private_kernels_module("onnxcore.kernels._util")
    assert _private_kernels_module("onnxcore.kernels.fused._x")
    assert _private_kernels_module("onnxcore.kernels.accel")
    assert not _private_kernels_module("onnxcore.kernels.fused.conv")
    assert not _private_kernels_module("onnxcore.kernels.shared")


def _numpy_in_call(cls: ast.ClassDef) -> int | None:
    """The line of the first use of numpy (``np.`` or ``numpy.``) in the ``__call__`` of ``cls``, else None."""
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__call__":
            for n in ast.walk(item):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("np", "numpy"):
                    return n.lineno
    return None


# The one exception, named: the Gradient operator's kernel (ai.onnx.preview.training) differentiates the plan's own
# bound nodes (it is made when the graph's nodes are bound, from them), so it lives beside the plan.
_RUNTIME_COMPUTES = frozenset({"runtime/gradient.py:GradientCall"})


def test_no_runtime_class_computes_tensor_values() -> None:
    """The rule (issue 37): no class in ``runtime/`` computes tensor values, checked as "no class of ``runtime/``
    has a ``__call__`` that uses numpy, and no class of ``runtime/optimize/`` (the matchers) has a ``__call__`` at
    all". A step the plan calls per run that computes values is a kernel (``kernels/fused/`` for the plan's fused
    steps); runtime's callables (a function body's plan, a subgraph call) only run plans."""
    wrong: list[str] = []
    for path in sorted((SRC / "runtime").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_optimize = "optimize" in path.relative_to(SRC).parts
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            calls = any(isinstance(i, ast.FunctionDef) and i.name == "__call__" for i in cls.body)
            line = _numpy_in_call(cls)
            if f"{path.relative_to(SRC).as_posix()}:{cls.name}" in _RUNTIME_COMPUTES:
                continue
            if line is not None or (in_optimize and calls):
                wrong.append(f"{path.relative_to(SRC)}:{cls.lineno}: class {cls.name}")
    assert not wrong, "classes of runtime/ that compute tensor values:\n" + "\n".join(wrong)


def test_tensor_value_rule_is_checked() -> None:
    """The rule above recognises a class that computes values in its call."""
    tree = ast.parse("class S:\n    def __call__(self, x):\n        return np.maximum(x, 0)\n")
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    assert _numpy_in_call(cls) == 3
