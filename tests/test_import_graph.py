"""The file-level imports between onnxcore's modules form a DAG: no import circle, not even one dodged by
importing inside a function (those are not counted here, so a new circle shows up as a failure)."""

from __future__ import annotations

import ast
from pathlib import Path

import onnxcore

PACKAGE = Path(onnxcore.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    # Module level only (including if/try blocks), not functions or classes, not TYPE_CHECKING blocks.
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                stack.extend(node.body)
            stack.extend(node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody)
            for h in node.handlers:
                stack.extend(h.body)
    return out


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def _graph(*, inside_functions: bool = False) -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    imports = _all_imports if inside_functions else _top_level_imports
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps: set[str] = set()
        for node in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif node.module and node.level == 0:
                # ``from pkg import mod`` imports the submodule when there is one.
                deps.update(
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files else node.module for a in node.names
                )
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        iters = [iter(sorted(graph[start]))]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(graph[nxt])))
    return None


def test_the_finder_sees_a_circle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_the_codec_imports():
    graph = _graph()
    assert "onnxcore.proto.message" in graph["onnxcore.proto.codec"]
    assert "onnxcore.proto.messages" in graph["onnxcore.proto.codec"]
    assert "onnxcore.kernels.codecs.jpeg_common" in graph["onnxcore.kernels.codecs.jpeg_prog"]


def test_module_imports_form_a_dag():
    assert _find_cycle(_graph()) is None


def test_no_circle_dodged_by_a_function_local_import_in_proto_and_the_codecs():
    # The codec <-> record base and the JPEG sequential <-> progressive circles were once dodged that way.
    scoped = ("onnxcore.proto", "onnxcore.kernels.codecs")
    graph = {
        name: {d for d in deps if d.startswith(scoped)}
        for name, deps in _graph(inside_functions=True).items()
        if name.startswith(scoped)
    }
    assert "onnxcore.kernels.codecs.jpeg_prog" in graph["onnxcore.kernels.codecs.jpeg"]
    assert _find_cycle(graph) is None
