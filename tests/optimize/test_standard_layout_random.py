"""merge_layout_ops on random chains of Transpose, Reshape, Squeeze and Unsqueeze (seeded): whatever it merges, the
result equals onnxruntime on the original for the dimension variables at 1 and at 2 or 3 (issue 39: never a
changed result)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import merge_layout_ops

MERGE = [Rewrite("merge_layout_ops", merge_layout_ops, 1)]
CASES = 60


def _chain(seed: int) -> tuple[object, list[dict[str, np.ndarray]]]:
    """A random chain on ``x`` of rank 1-4 (its extents dimension variables): each op valid for every size."""
    rng = np.random.default_rng(seed)
    opset = int(rng.choice([11, 13]))
    rank = int(rng.integers(1, 5))
    cur, r = "x", rank
    units: set[int] = set()  # the positions known to be 1 (inserted by an Unsqueeze)
    nodes, inits = [], []
    for k in range(int(rng.integers(2, 5))):
        out = f"v{k}"
        op = rng.choice(["Transpose", "Unsqueeze", "Squeeze", "Reshape"])
        if op == "Squeeze" and not units:
            op = "Unsqueeze"
        if op == "Transpose":
            perm = [int(p) for p in rng.permutation(r)]
            attrs = {} if rng.random() < 0.2 else {"perm": perm}
            perm = perm if attrs else list(range(r - 1, -1, -1))
            nodes.append(h.make_node("Transpose", [cur], [out], **attrs))
            units = {perm.index(u) for u in units}
        elif op in ("Unsqueeze", "Squeeze"):
            if op == "Unsqueeze":
                n = int(rng.integers(1, 3))
                axes = sorted(int(a) for a in rng.choice(r + n, n, replace=False))
                keep = [i for i in range(r + n) if i not in axes]
                units = {keep[u] for u in units} | set(axes)
                r += n  # Unsqueeze's negative axes count from its output's rank
                written = [a - r if rng.random() < 0.3 else a for a in axes]
            else:
                axes = sorted(int(a) for a in rng.choice(sorted(units), int(rng.integers(1, len(units) + 1)),
                                                           replace=False))  # fmt: skip
                written = [a - r if rng.random() < 0.3 else a for a in axes]  # Squeeze's from its input's rank
                rest = [i for i in range(r) if i not in axes]
                units = {rest.index(u) for u in units if u not in axes}
                r -= len(axes)
            if opset >= 13:
                inits.append(nh.from_array(np.asarray(written, np.int64), f"a{k}"))
                nodes.append(h.make_node(op, [cur, f"a{k}"], [out]))
            else:
                nodes.append(h.make_node(op, [cur], [out], axes=written))
        else:
            if r >= 2 and rng.random() < 0.5:
                j = int(rng.integers(1, r))
                target = [0] * j + [-1]  # flatten from axis j
                units = {u for u in units if u < j}
            else:
                target = [0] * r + [1]  # a trailing unit extent
                units = units | {r}
            r = len(target)
            inits.append(nh.from_array(np.asarray(target, np.int64), f"s{k}"))
            nodes.append(h.make_node("Reshape", [cur, f"s{k}"], [out]))
        cur = out
    nodes.append(h.make_node("Neg", [cur], ["y"]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, [f"d{i}" for i in range(rank)])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [f"o{i}" for i in range(r)])], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    sizes = [[1] * rank, [int(s) for s in rng.integers(2, 4, rank)]]
    return m, [{"x": rng.standard_normal(s).astype(np.float32)} for s in sizes]


@pytest.mark.parametrize("seed", range(CASES))
def test_random_layout_chain(seed: int) -> None:
    m, feeds = _chain(seed)
    out, _ = rewrite_and_compare(m, feeds, MERGE)
    assert len(ops(out)) <= len(ops(m))


def test_the_random_chains_exercise_the_merges() -> None:
    # Not a vacuous sweep: most chains lose nodes.
    merged = sum(len(ops(rewrite_and_compare(*_chain(s), MERGE)[0])) < len(ops(_chain(s)[0])) for s in range(20))
    assert merged >= 8
