"""One Session run from several threads at once gives each caller the result of a run alone.

Kernels keep their temporaries in per-thread scratch buffers (``kernels/_scratch.py``) and the plan's
per-shape caches are replaced whole, never field by field, so concurrent runs with different input shapes
cannot mix one run's values or coefficients with another's.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import corpus
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore


def _run_concurrently(session: onnxcore.Session, name: str, xs: list[np.ndarray], rounds: int) -> list[str]:
    expected = [session.run(None, {name: x}, intermediates=True)[0][0] for x in xs]
    problems: list[str] = []

    def worker(k: int) -> None:
        for r in range(rounds):
            i = (k + r) % len(xs)
            try:
                (y,) = session.run(None, {name: xs[i]})
            except Exception as e:  # reported below, with the others
                problems.append(f"thread {k}, round {r}: {e!r}")
                continue
            if y.shape != expected[i].shape or not np.allclose(y, expected[i], rtol=1e-4, atol=1e-5):
                problems.append(f"thread {k}, round {r}: input {i} gave another result")

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, inside the steps
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return problems


def test_a_fused_chain_run_from_threads_with_different_shapes() -> None:
    rng = np.random.default_rng(0)
    c = 4
    inits = [h.make_tensor(n, TP.FLOAT, [c], rng.uniform(0.5, 1.5, c).astype(np.float32)) for n in "sbmv"]
    inits.append(h.make_tensor("k", TP.FLOAT, [1, c, 1, 1], rng.uniform(0.5, 1.5, c).astype(np.float32)))
    nodes = [
        h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"]),
        h.make_node("Mul", ["n", "k"], ["q"]),
        h.make_node("Relu", ["q"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", c, "H", "W"])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", c, "H", "W"])],
        inits,
    )
    session = onnxcore.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 15)], ir_version=8))
    assert [type(bn.call).__name__ for bn in session._plan.info] == ["AffineChain"]
    xs = [rng.standard_normal(s).astype(np.float32) for s in [(1, c, 3, 3), (2, c, 5, 7), (1, c, 1, 1), (3, c, 2, 2)]]
    assert _run_concurrently(session, "x", xs, 300) == []


def test_squeezenet_run_from_threads_with_different_image_sizes() -> None:
    paths = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    if not paths:
        pytest.skip("light_squeezenet is not in this onnx wheel")
    model: Any = corpus.with_random_weights(paths[0])
    name, _ = corpus.light_model_input(paths[0])
    (inp,) = [i for i in model.graph.input if i.name == name]
    for k, symbol in ((2, "H"), (3, "W")):
        inp.type.tensor_type.shape.dim[k].dim_param = symbol
    session = onnxcore.Session(model.SerializeToString())
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1, 3, s, s)).astype(np.float32) for s in (224, 160, 97)]
    assert _run_concurrently(session, name, xs, 3) == []
