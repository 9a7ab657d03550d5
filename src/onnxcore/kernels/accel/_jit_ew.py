"""Compiled elementwise graphs (numba ``@njit`` of generated source): the accelerated path of the fused
``ElementwiseGraph`` kernel (``onnxcore.kernels.fused.elementwise``). Reach it as ``accel.jit_ew().graph_loop``;
numba itself is imported by ``_jit`` alone, whose decorator for generated functions this uses.

A graph of the IEEE operations whose numpy ufuncs are correctly rounded (add, subtract, multiply, divide, negative,
absolute, square root, and Relu's ``maximum(x, 0)``) becomes one loop over the output's elements: every node's value
is computed in the element type, one operation at a time in the graph's order, without fused multiply-adds or any
reassociation (no fastmath), so each value is the numpy kernels' bit for bit (a NaN where they give a NaN; its sign
bit is the hardware's choice, not a value). Its operands are full arrays of the
output's shape, rows of its last extent, columns (one value per row) or single values.

Each graph's source is generated once per (graph, operand kinds) and written to a file named by its digest in the
user's cache directory (``$XDG_CACHE_HOME/onnxcore/elementwise``, else ``~/.cache/onnxcore/elementwise``), so that
numba's on-disk cache keeps the machine code across processes. Measured on a graph of eleven nodes: a new graph
costs its compilation once (0.65-0.8 s), a graph seen before 3-17 ms to load; the first compiled graph a process
runs adds numba's own start (1.1-1.2 s, paid by any first compiled kernel of the accelerator).
The file is read back and compared with the source before it is imported (a file changed by anyone else is
written again); where the directory cannot be written, the loop is compiled in memory for the process alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit, _njit_generated

__all__ = ["COMPILED_UFUNCS", "graph_loop"]

# The expression of each ufunc on the values a (and b); Relu is ``maximum(x, 0)``: +0 for -0 as numpy gives.
COMPILED_UFUNCS: dict[np.ufunc, str] = {
    np.add: "{a} + {b}",
    np.subtract: "{a} - {b}",
    np.multiply: "{a} * {b}",
    np.true_divide: "{a} / {b}",
    np.negative: "-{a}",
    np.absolute: "abs({a})",
    np.sqrt: "np.sqrt({a})",
    np.maximum: "({a} if ({a} > zero or {a} != {a}) else zero)",
}

FULL, ROW, ONE, COL = 0, 1, 2, 3
"""Operand kinds: an array of the output's shape (read as rows), a row of the last extent, a single value, a column
(one value per row: the output's shape with a last extent of 1, a per-row statistic or norm)."""

_lock = threading.Lock()
_loops: dict[tuple[Any, ...], Callable[..., None]] = {}


def graph_loop(program: Sequence[tuple[np.ufunc, tuple[int, ...]]], kinds: tuple[int, ...]) -> Callable[..., None]:
    """The compiled loop of ``program`` (per instruction its ufunc and its sources: an operand's index, or ``-(j +
    1)`` for instruction ``j``'s value) over operands of ``kinds``: ``loop(out, zero, *operands)`` with ``out``
    2-D ``(rows, C)``, ``zero`` a 1-element array of the element type, FULL operands 2-D like ``out``, ROW ones 1-D
    of ``C`` values, ONE ones 1-D of one value, COL ones 1-D of ``rows`` values."""
    key = (tuple((COMPILED_UFUNCS[uf], s) for uf, s in program), kinds)
    loop = _loops.get(key)
    if loop is None:
        with _lock:
            loop = _loops.get(key)
            if loop is None:
                loop = _compile(key[0], kinds)
                if len(_loops) >= 256:
                    _loops.clear()
                _loops[key] = loop
    return loop


def _compile(program: tuple[tuple[str, tuple[int, ...]], ...], kinds: tuple[int, ...]) -> Callable[..., None]:
    names = [f"a{i}" for i in range(len(kinds))]
    lines = [f"def loop(out, zero_, {', '.join(names)}):", "    zero = zero_[0]", "    cols = out.shape[1]"]
    lines += [f"    o{i} = {n}[0]" for i, (n, k) in enumerate(zip(names, kinds)) if k == ONE]
    lines += ["    for r in range(out.shape[0]):", "        for c in range(cols):"]
    for i, (n, k) in enumerate(zip(names, kinds)):
        if k == FULL:
            lines.append(f"            x{i} = {n}[r, c]")
        elif k == ROW:
            lines.append(f"            x{i} = {n}[c]")
        elif k == COL:
            lines.append(f"            x{i} = {n}[r]")
        else:
            lines.append(f"            x{i} = o{i}")

    def value(s: int) -> str:
        return f"x{s}" if s >= 0 else f"v{-s - 1}"

    for j, (expr, sources) in enumerate(program):
        a = value(sources[0])
        b = value(sources[1]) if len(sources) > 1 else ""
        lines.append(f"            v{j} = {expr.format(a=a, b=b)}")
    lines.append(f"            out[r, c] = v{len(program) - 1}")
    # Our own source, made above from the table: no text from a model reaches it.
    source = "import numpy as np\n\n\n" + "\n".join(lines) + "\n"
    path = _source_file(source)
    if path is not None:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is not None:
            module = importlib.util.module_from_spec(spec)
            # Registered by its name: numba's cached code refers to the function's module by it.
            sys.modules[path.stem] = module
            # The code run is the source made above, compiled under the file's name (numba keys its cache by the
            # file), never the file's text read again: a file changed after the check above runs nothing.
            exec(compile(source, str(path), "exec"), module.__dict__)
            return _njit(module.loop)
    scope: dict[str, Any] = {}
    exec(compile(source, "<onnxcore elementwise graph>", "exec"), scope)
    return _njit_generated(scope["loop"])


def _source_file(source: str) -> Path | None:
    """The file holding ``source`` in the cache directory (module docstring), written when missing or different;
    None when the directory cannot be written."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "onnxcore" / "elementwise"
    path = folder / f"ew_{hashlib.sha256(source.encode()).hexdigest()[:24]}.py"
    try:
        if path.is_file() and path.read_text() == source:
            return path
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{path.stem}.{os.getpid()}.tmp"
        tmp.write_text(source)
        os.replace(tmp, path)
    except OSError:
        return None
    return path
