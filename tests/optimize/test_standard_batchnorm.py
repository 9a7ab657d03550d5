"""fold_batchnorm (runtime/optimize/standard/batchnorm.py, issue 39 item 2): an inference BatchNormalization folded
into the Conv, ConvTranspose, Gemm or MatMul before it; the result equals onnxruntime on the original for batch
sizes 1 and 3, and the traps (the product read twice, training mode, a 3-D MatMul, varying statistics) are left
alone."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import fold_batchnorm

RNG = np.random.default_rng(7)
FOLD = [Rewrite("fold_batchnorm", fold_batchnorm, 1)]


def _bn_inits(c: int, dtype: type = np.float32, prefix: str = "") -> list:
    values = {"s": RNG.standard_normal(c), "b": RNG.standard_normal(c), "m": RNG.standard_normal(c),
              "v": RNG.random(c) + 0.05}  # fmt: skip
    return [nh.from_array(v.astype(dtype), prefix + k) for k, v in values.items()]


def _bn(x: str, y: str, *, prefix: str = "", **attrs: object) -> object:
    return h.make_node("BatchNormalization", [x, *(prefix + k for k in "sbmv")], [y], name="bn", **attrs)


def _model(nodes: list, inits: list, x_shape: list, y_shape: list, *, opset: int = 15, elem: int = TP.FLOAT,
           outputs: tuple[str, ...] = ("y",), extra_inputs: list | None = None) -> object:  # fmt: skip
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", elem, x_shape), *(extra_inputs or [])],
        [h.make_tensor_value_info(o, elem, y_shape if o in ("y", "r", "c") else [y_shape[1]]) for o in outputs],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _feeds(shape: tuple[int, ...], dtype: type = np.float32) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal((n, *shape[1:])).astype(dtype)} for n in (1, 3)]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("opset", [9, 15])
def test_conv_batchnorm_folds(bias: bool, group: int, opset: int) -> None:
    w = nh.from_array(RNG.standard_normal((8, 4 // group, 3, 3)).astype(np.float32), "W")
    inits = [w, *_bn_inits(8)] + ([nh.from_array(RNG.standard_normal(8).astype(np.float32), "cb")] if bias else [])
    conv = h.make_node("Conv", ["x", "W", *(["cb"] if bias else [])], ["c"], name="conv", pads=[1, 1, 1, 1],
                       group=group, strides=[2, 2])  # fmt: skip
    m = _model([conv, _bn("c", "y", epsilon=1e-3)], inits, ["N", 4, 9, 9], ["N", 8, 5, 5], opset=opset)
    out, fired = rewrite_and_compare(m, _feeds((1, 4, 9, 9)), FOLD)
    assert fired == ["fold_batchnorm"] and ops(out) == ["Conv"]
    node = out.graph.node[0]
    assert node.name == "conv+bn" and node.output == ["y"]
    assert {a.name: h.get_attribute_value(a) for a in node.attribute} == {
        "pads": [1, 1, 1, 1], "group": group, "strides": [2, 2]}  # fmt: skip


def test_float64_gemm_batchnorm_folds() -> None:
    # onnxruntime has no float64 Conv; its Gemm runs float64.
    w = nh.from_array(RNG.standard_normal((3, 6)), "W")
    m = _model([h.make_node("Gemm", ["x", "W"], ["c"]), _bn("c", "y")], [w, *_bn_inits(6, np.float64)],
               ["N", 3], ["N", 6], elem=TP.DOUBLE)  # fmt: skip
    out, _ = rewrite_and_compare(m, _feeds((1, 3), np.float64), FOLD)
    assert ops(out) == ["Gemm"]


@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_batchnorm_folds(group: int) -> None:
    # ConvTranspose's weight is [C, M / group, k...]: output channel g * (M / group) + j.
    w = nh.from_array(RNG.standard_normal((4, 6 // group, 3, 3)).astype(np.float32), "W")
    ct = h.make_node("ConvTranspose", ["x", "W"], ["c"], group=group, strides=[2, 2])
    m = _model([ct, _bn("c", "y")], [w, *_bn_inits(6)], ["N", 4, 5, 5], ["N", 6, 11, 11])
    out, _ = rewrite_and_compare(m, _feeds((1, 4, 5, 5)), FOLD)
    assert ops(out) == ["ConvTranspose"]


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("with_c", [True, False])
def test_gemm_batchnorm_folds(trans_b: int, with_c: bool) -> None:
    b = RNG.standard_normal((5, 7) if not trans_b else (7, 5)).astype(np.float32)
    inits = [nh.from_array(b, "B"), *_bn_inits(7)]
    ins = ["x", "B"]
    if with_c:
        inits.append(nh.from_array(RNG.standard_normal((1, 7)).astype(np.float32), "C"))
        ins.append("C")
    gemm = h.make_node("Gemm", ins, ["c"], transB=trans_b, alpha=0.5, beta=2.0)
    m = _model([gemm, _bn("c", "y")], inits, ["N", 5], ["N", 7])
    out, _ = rewrite_and_compare(m, _feeds((1, 5)), FOLD)
    assert ops(out) == ["Gemm"]


def test_matmul_batchnorm_becomes_gemm() -> None:
    inits = [nh.from_array(RNG.standard_normal((5, 7)).astype(np.float32), "W"), *_bn_inits(7)]
    m = _model([h.make_node("MatMul", ["x", "W"], ["c"]), _bn("c", "y")], inits, ["N", 5], ["N", 7])
    out, _ = rewrite_and_compare(m, _feeds((1, 5)), FOLD)
    assert ops(out) == ["Gemm"]


def test_traps_are_left_alone() -> None:
    w = nh.from_array(RNG.standard_normal((8, 4, 3, 3)).astype(np.float32), "W")
    conv = h.make_node("Conv", ["x", "W"], ["c"])
    # The conv output read twice: by the BatchNormalization and by a graph output's Relu.
    twice = _model([conv, _bn("c", "y"), h.make_node("Relu", ["c"], ["r"])], [w, *_bn_inits(8)], ["N", 4, 6, 6],
                   ["N", 8, 4, 4], outputs=("y", "r"))  # fmt: skip
    # The conv output is a graph output itself.
    exposed = _model([conv, _bn("c", "y")], [w, *_bn_inits(8)], ["N", 4, 6, 6], ["N", 8, 4, 4], outputs=("y", "c"))
    # Training mode (running statistics as outputs).
    bn_train = h.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1)
    training = _model([conv, bn_train], [w, *_bn_inits(8)], ["N", 4, 6, 6], ["N", 8, 4, 4],
                      outputs=("y", "rm", "rv"))  # fmt: skip
    # A MatMul whose input has rank 3: axis 1 of the product is not the weight's columns.
    mm3 = _model([h.make_node("MatMul", ["x", "W2"], ["c"]), _bn("c", "y")],
                 [nh.from_array(RNG.standard_normal((5, 7)).astype(np.float32), "W2"), *_bn_inits(7)],
                 ["N", 7, 5], ["N", 7, 7])  # fmt: skip
    # The statistics vary (a graph input).
    varying = _model([conv, _bn("c", "y")], [w, *_bn_inits(8)[:2], *_bn_inits(8)[3:]], ["N", 4, 6, 6],
                     ["N", 8, 4, 4], extra_inputs=[h.make_tensor_value_info("m", TP.FLOAT, [8])])  # fmt: skip
    # BatchNormalization-7 with spatial=0: one statistic per feature, not per channel.
    per_feature = _model([conv, _bn("c", "y", spatial=0)], [w, *[nh.from_array(
        (RNG.random((8, 4, 4)) + 0.1).astype(np.float32), k) for k in "sbmv"]], ["N", 4, 6, 6], ["N", 8, 4, 4],
        opset=7)  # fmt: skip
    # MatMul then BatchNormalization-6 (is_test) at opset 6: a Gemm there would need its broadcast attribute.
    mm6 = _model([h.make_node("MatMul", ["x", "W2"], ["c"]), _bn("c", "y", is_test=1)],
                 [nh.from_array(RNG.standard_normal((5, 7)).astype(np.float32), "W2"), *_bn_inits(7)],
                 ["N", 5], ["N", 7], opset=6)  # fmt: skip
    for m in (twice, exposed, training, mm3, varying, per_feature, mm6):
        out, fired = rewrite(m, FOLD)
        assert fired == [] and "BatchNormalization" in ops(out)


@pytest.mark.parametrize("seed", range(20))
def test_random_convolutions_fold(seed: int) -> None:
    # Seeded Conv / ConvTranspose attributes (1-D or 2-D, strides, pads, dilations, groups, bias or not).
    rng = np.random.default_rng(100 + seed)
    op = "ConvTranspose" if rng.random() < 0.35 else "Conv"
    nd = int(rng.integers(1, 3))
    group = int(rng.choice([1, 2]))
    c_in, c_out = 2 * group * int(rng.integers(1, 3)), group * int(rng.integers(1, 4))
    k = [int(v) for v in rng.integers(1, 4, nd)]
    wshape = (c_out, c_in // group, *k) if op == "Conv" else (c_in, c_out // group, *k)
    inits = [nh.from_array(rng.standard_normal(wshape).astype(np.float32), "W")]
    ins = ["x", "W"]
    if rng.random() < 0.5:
        inits.append(nh.from_array(rng.standard_normal(c_out).astype(np.float32), "cb"))
        ins.append("cb")
    attrs = {"group": group, "strides": [int(v) for v in rng.integers(1, 3, nd)],
             "pads": [int(v) for v in rng.integers(0, 2, 2 * nd)]}  # fmt: skip
    if op == "Conv":
        attrs["dilations"] = [int(v) for v in rng.integers(1, 3, nd)]
    values = {"s": rng.standard_normal(c_out), "b": rng.standard_normal(c_out), "m": rng.standard_normal(c_out),
              "v": rng.random(c_out) + 0.05}  # fmt: skip
    inits += [nh.from_array(v.astype(np.float32), k2) for k2, v in values.items()]
    spatial = [int(v) for v in rng.integers(5, 9, nd)]
    m = _model([h.make_node(op, ins, ["c"], **attrs), _bn("c", "y", epsilon=float(rng.choice([1e-5, 1e-3])))],
               inits, ["N", c_in, *spatial], ["N", c_out, *[f"s{i}" for i in range(nd)]])  # fmt: skip
    feeds = [{"x": rng.standard_normal((n, c_in, *spatial)).astype(np.float32)} for n in (1, 2)]
    out, _ = rewrite_and_compare(m, feeds, FOLD)
    assert ops(out) == [op]


def test_new_names_avoid_the_names_of_subgraphs() -> None:
    # The folded weight would be named W_bn; a branch of an If defines W_bn already (a name is defined once across
    # a graph and its subgraphs, Clause 5.4), so the weight takes another name and the model stays valid.
    def branch(out: str, value: float) -> object:
        c = h.make_node("Constant", [], [out], value=nh.from_array(np.full((1,), value, np.float32)))
        return h.make_graph([c], f"b{out}", [], [h.make_tensor_value_info(out, TP.FLOAT, [1])])

    w = nh.from_array(RNG.standard_normal((4, 2, 1, 1)).astype(np.float32), "W")
    cond = nh.from_array(np.asarray(True), "cond")
    nodes = [
        h.make_node("Conv", ["x", "W"], ["c"]),
        _bn("c", "y"),
        h.make_node("If", ["cond"], ["z"], then_branch=branch("W_bn", 1.0), else_branch=branch("W_else", 2.0)),
    ]
    m = _model(nodes, [w, cond, *_bn_inits(4)], ["N", 2, 3, 3], ["N", 4, 3, 3], outputs=("y", "z"))  # fmt: skip
    m.graph.output[1].type.tensor_type.shape.dim[0].dim_value = 1
    out, _ = rewrite_and_compare(m, _feeds((1, 2, 3, 3)), FOLD)
    assert ops(out) == ["Conv", "If"] and out.graph.node[0].input[1] not in ("W", "W_bn")
