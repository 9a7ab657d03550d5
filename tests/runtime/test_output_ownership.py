"""Each output of a run is the caller's own array (Clause 8: a run's results; onnxruntime behaves alike).

An output computed as a numpy view of a feed (``Identity(x)``, ``Reshape(x)``) or equal to another output (``y`` and
``Identity(y)`` both graph outputs) was handed out sharing memory: writing into it changed the caller's input or the
other output. Every run path is checked: the common fast path, the general one (a timeout), ``intermediates`` and
``run_profiled``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore


def _model() -> bytes:
    nodes = [
        h.make_node("Relu", ["x"], ["y"]),
        h.make_node("Identity", ["y"], ["z"]),
        h.make_node("Identity", ["x"], ["w"]),
        h.make_node("Reshape", ["x", "shape"], ["r"]),
        h.make_node("Identity", ["c"], ["k"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [
            h.make_tensor_value_info(n, TP.FLOAT, d)
            for n, d in (("y", [2, 3]), ("z", [2, 3]), ("w", [2, 3]), ("r", [3, 2]), ("k", [4]))
        ],
        [nh.from_array(np.array([3, 2], np.int64), "shape"), nh.from_array(np.ones(4, np.float32), "c")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _run(path: str, s: onnxcore.Session, feeds: dict[str, Any]) -> list[Any]:
    if path == "fast":
        return s.run(None, feeds)
    if path == "general":
        return s.run(None, feeds, timeout=60.0)
    if path == "intermediates":
        return s.run(None, feeds, intermediates=True)[0]
    return s.run_profiled(None, feeds)[0] if path == "profile" else []


@pytest.mark.parametrize("path", ["fast", "general", "intermediates", "profile"])
def test_outputs_share_no_memory_with_feeds_or_each_other(path: str) -> None:
    model = _model()
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    original = x.copy()
    s = onnxcore.Session(model)
    outs = _run(path, s, {"x": x})
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b in zip(outs, ref):
        np.testing.assert_array_equal(a, b)
        assert not np.shares_memory(b, x)  # the oracle's behaviour
    for i, a in enumerate(outs):
        assert a.flags.writeable
        assert not np.shares_memory(a, x), f"output {i} shares the feed's memory"
        for j in range(i):
            assert not np.shares_memory(a, outs[j]), f"outputs {j} and {i} share memory"
    for a in outs:
        a[...] = 99.0
    np.testing.assert_array_equal(x, original)
    # The next run is unaffected by what the caller wrote into the last one's outputs.
    for a, b in zip(_run(path, s, {"x": x}), ref):
        np.testing.assert_array_equal(a, b)
