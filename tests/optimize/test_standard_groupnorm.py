"""group_norms (runtime/optimize/standard/groupnorm.py, issue 39 item 2): GroupNorm as torch's exporter writes it
(Reshape, InstanceNormalization, Reshape, Mul, Add) as GroupNormalization-21 with the chain's epsilon, equal to
onnxruntime on the original for batch 1 and 3 and spatial extents that vary; left alone below opset 21, with an
InstanceNormalization scale that is not one, a channel count the graph does not tell, or a first target that is not
``[0, G, -1]``."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import FOLD, ops, rewrite, rewrite_and_compare, run_both

import onnxcore
from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import group_norms

RNG = np.random.default_rng(17)
GROUP = [FOLD, Rewrite("group_norms", group_norms, 2)]
C, G = 8, 4


def _model(*, opset: int = 21, eps: float = 1e-4, in_scale: float = 1.0, channels: int | str = C,
           target: tuple[int, ...] = (0, G, -1), dtype: type = np.float32, affine: bool = True) -> object:  # fmt: skip
    elem = TP.DOUBLE if dtype == np.float64 else TP.FLOAT
    nodes = [
        h.make_node("Reshape", ["x", "t"], ["r"], name="reshape"),
        h.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=eps, name="in"),
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Reshape", ["n", "s"], ["back" if affine else "y"]),
    ]
    inits = [nh.from_array(np.asarray(target, np.int64), "t"), nh.from_array(np.full(G, in_scale, dtype), "ones"),
             nh.from_array(np.zeros(G, dtype), "zeros")]  # fmt: skip
    if affine:
        nodes += [h.make_node("Mul", ["back", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["y"])]
        inits += [nh.from_array(RNG.standard_normal((C, 1, 1)).astype(dtype), "w"),
                  nh.from_array(RNG.standard_normal((C, 1, 1)).astype(dtype), "b")]  # fmt: skip
    shape = ["N", channels, "H", "W"]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", elem, shape)],
                     [h.make_tensor_value_info("y", elem, shape)], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _feeds(dtype: type = np.float32) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal((n, C, hh, ww)).astype(dtype)} for n, hh, ww in ((1, 1, 1), (3, 5, 4))]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_group_norm_becomes_group_normalization(affine: bool, eps: float) -> None:
    out, fired = rewrite_and_compare(_model(eps=eps, affine=affine), _feeds(), GROUP)
    assert "group_norms" in fired and ops(out) == ["GroupNormalization"]
    node = out.graph.node[0]
    attrs = {a.name: h.get_attribute_value(a) for a in node.attribute}
    assert attrs["num_groups"] == G and attrs["epsilon"] == pytest.approx(np.float32(eps), rel=1e-7)
    assert node.input[0] == "x" and node.output == ["y"] and node.name == "reshape+in"


def test_float64_group_norm_keeps_its_type() -> None:
    # onnxruntime has no float64 InstanceNormalization: onnxcore evaluates the original; both the result.
    m = _model(dtype=np.float64)
    out, _ = rewrite(m, GROUP)
    attrs = {a.name: h.get_attribute_value(a) for a in out.graph.node[0].attribute}
    assert ops(out) == ["GroupNormalization"] and attrs["stash_type"] == TP.DOUBLE
    for feeds in _feeds(np.float64):
        (want,) = onnxcore.Session(m.SerializeToString()).run(None, feeds)
        by_ort, (ours,) = run_both(out.SerializeToString(), feeds)
        np.testing.assert_allclose(ours, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(by_ort[0], want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("case", "kw"),
    [
        ("opset 20", {"opset": 20}),
        ("per-group scale", {"in_scale": 2.0}),  # InstanceNormalization's scale is not one
        ("channels unknown", {"channels": "C"}),  # C not told: G may not divide it, scale [C] not sized
        ("another first target", {"target": (0, G, 2, -1)}),
    ],
)
def test_traps_are_left_alone(case: str, kw: dict) -> None:
    out, fired = rewrite(_model(**kw), GROUP)
    assert "group_norms" not in fired and "InstanceNormalization" in ops(out), case
