"""fold_channel_affine (runtime/optimize/standard/channel_affine.py, issue 39 item 2): a per-channel constant Mul,
Div, Add or Sub folded into the Conv, ConvTranspose, Gemm, MatMul or BatchNormalization before it (Caffe2's
scale-and-shift after each convolution, timm's layer scale); the result equals onnxruntime on the original for
batch sizes 1 and 3, and the traps (a factor that varies along another axis, or whose broadcast adds an axis or
grows an extent that a dimension variable may make 1, a non-finite factor, a shift of zeros, the product read
twice) are left alone."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import fold_channel_affine

RNG = np.random.default_rng(31)
FOLD = [Rewrite("fold_channel_affine", fold_channel_affine, 1)]


def _c(name: str, shape: tuple[int, ...], dtype: type = np.float32, low: float = 0.5) -> object:
    """A constant away from 0 (a divisor), of either sign."""
    v = (RNG.random(shape) + low) * RNG.choice([-1.0, 1.0], size=shape)
    return nh.from_array(np.asarray(v, dtype), name)


def _model(nodes: list, inits: list, x_shape: list, y_shape: list, *, opset: int = 15, elem: int = TP.FLOAT,
           outputs: tuple[str, ...] = ("y",)) -> object:  # fmt: skip
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", elem, x_shape)],
                     [h.make_tensor_value_info(o, elem, [f"{o}{i}" for i in range(len(y_shape))]) for o in outputs],
                     inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _feeds(shape: tuple[int, ...], dtype: type = np.float32) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal((n, *shape[1:])).astype(dtype)} for n in (1, 3)]


def _conv(bias: bool, c_in: int = 4, c_out: int = 6, nd: int = 2) -> tuple[list, object]:
    inits = [nh.from_array(RNG.standard_normal((c_out, c_in, *(3,) * nd)).astype(np.float32), "W")]
    if bias:
        inits.append(nh.from_array(RNG.standard_normal(c_out).astype(np.float32), "cb"))
    return inits, h.make_node("Conv", ["x", "W", *(["cb"] if bias else [])], ["c"], name="conv", pads=[1] * 2 * nd)


@pytest.mark.parametrize("bias", [True, False])
def test_caffe2_scale_and_shift_fold_into_the_conv(bias: bool) -> None:
    # densenet121 and inception_v2 of the zoo: Conv, Mul by [C, 1, 1], Add of [C, 1, 1].
    inits, conv = _conv(bias)
    nodes = [conv, h.make_node("Mul", ["c", "s"], ["m"], name="scale"), h.make_node("Add", ["m", "t"], ["y"])]
    m = _model(nodes, [*inits, _c("s", (6, 1, 1)), _c("t", (6, 1, 1))], ["N", 4, "H", "W"], ["N", 6, "H", "W"])
    out, fired = rewrite_and_compare(m, _feeds((1, 4, 5, 7)), FOLD)
    assert fired == ["fold_channel_affine"] and ops(out) == ["Conv"]
    node = out.graph.node[0]
    assert node.output == ["y"] and node.name == "conv+scale" and len(node.input) == 3


def test_layer_scale_constant_first_and_scalar_factor() -> None:
    # timm's layer scale: gamma [1, C, 1, 1] as the Mul's first input; then a Div by a scalar and a Sub of [C, 1, 1].
    inits, conv = _conv(False)
    nodes = [conv, h.make_node("Mul", ["g", "c"], ["m"]), h.make_node("Div", ["m", "d"], ["q"]),
             h.make_node("Sub", ["q", "t"], ["y"])]  # fmt: skip
    m = _model(nodes, [*inits, _c("g", (1, 6, 1, 1)), _c("d", ()), _c("t", (6, 1, 1))], ["N", 4, 5, 5], ["N", 6, 5, 5])
    out, _ = rewrite_and_compare(m, _feeds((1, 4, 5, 5)), FOLD)
    assert ops(out) == ["Conv"]


def test_a_scale_alone_adds_no_bias_and_a_shift_alone_keeps_the_weight() -> None:
    inits, conv = _conv(False)
    scaled, _ = rewrite(_model([conv, h.make_node("Mul", ["c", "s"], ["y"])], [*inits, _c("s", (6, 1, 1))],
                               ["N", 4, 5, 5], ["N", 6, 5, 5]), FOLD)  # fmt: skip
    assert ops(scaled) == ["Conv"] and len(scaled.graph.node[0].input) == 2
    shifted, _ = rewrite(_model([conv, h.make_node("Add", ["c", "t"], ["y"])], [*inits, _c("t", (6, 1, 1))],
                                ["N", 4, 5, 5], ["N", 6, 5, 5]), FOLD)  # fmt: skip
    assert ops(shifted) == ["Conv"] and shifted.graph.node[0].input[1] == "W"


def test_batchnorm_then_scale_and_shift_is_one_batchnorm() -> None:
    # densenet121: BatchNormalization (after a Concat), Mul by [C, 1, 1], Add of [C, 1, 1].
    stats = [nh.from_array(RNG.standard_normal(6).astype(np.float32), n) for n in ("bs", "bb", "bm")]
    stats.append(nh.from_array((RNG.random(6) + 0.1).astype(np.float32), "bv"))
    nodes = [h.make_node("BatchNormalization", ["x", "bs", "bb", "bm", "bv"], ["b"], epsilon=1e-3),
             h.make_node("Mul", ["b", "s"], ["m"]), h.make_node("Add", ["m", "t"], ["y"])]  # fmt: skip
    m = _model(nodes, [*stats, _c("s", (6, 1, 1)), _c("t", (6, 1, 1))], ["N", 6, 4, 4], ["N", 6, 4, 4])
    out, _ = rewrite_and_compare(m, _feeds((1, 6, 4, 4)), FOLD)
    assert ops(out) == ["BatchNormalization"]
    assert {a.name: h.get_attribute_value(a) for a in out.graph.node[0].attribute} == pytest.approx({"epsilon": 1e-3})


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_and_two_d_matmul_take_a_column_scale(trans_b: int) -> None:
    b = RNG.standard_normal((7, 5) if trans_b else (5, 7)).astype(np.float32)
    gemm = h.make_node("Gemm", ["x", "B", "C"], ["c"], transB=trans_b, alpha=0.5, beta=2.0)
    inits = [nh.from_array(b, "B"), _c("C", (7,)), _c("s", (1, 7)), _c("t", (7,))]
    m = _model([gemm, h.make_node("Mul", ["c", "s"], ["m"]), h.make_node("Add", ["m", "t"], ["y"])], inits,
               ["N", 5], ["N", 7])  # fmt: skip
    out, _ = rewrite_and_compare(m, _feeds((1, 5)), FOLD)
    assert ops(out) == ["Gemm"]
    mm = _model([h.make_node("MatMul", ["x", "W"], ["c"]), h.make_node("Mul", ["c", "s"], ["y"])],
                [nh.from_array(RNG.standard_normal((5, 7)).astype(np.float32), "W"), _c("s", (7,))],
                ["N", 5], ["N", 7])  # fmt: skip
    out, _ = rewrite_and_compare(mm, _feeds((1, 5)), FOLD)
    assert ops(out) == ["Gemm"]


def test_conv_transpose_takes_a_channel_scale() -> None:
    w = nh.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    ct = h.make_node("ConvTranspose", ["x", "W"], ["c"], group=2, strides=[2, 2])
    m = _model([ct, h.make_node("Mul", ["c", "s"], ["y"])], [w, _c("s", (6, 1, 1))], ["N", 4, 5, 5],
               ["N", 6, 11, 11])  # fmt: skip
    out, _ = rewrite_and_compare(m, _feeds((1, 4, 5, 5)), FOLD)
    assert ops(out) == ["ConvTranspose"]


def test_float64_batchnorm_scale() -> None:
    stats = [nh.from_array(RNG.standard_normal(3), n) for n in ("bs", "bb", "bm")]
    stats.append(nh.from_array(RNG.random(3) + 0.1, "bv"))
    nodes = [h.make_node("BatchNormalization", ["x", "bs", "bb", "bm", "bv"], ["b"]),
             h.make_node("Div", ["b", "s"], ["y"])]  # fmt: skip
    m = _model(nodes, [*stats, _c("s", (3, 1), np.float64)], ["N", 3, 4], ["N", 3, 4], elem=TP.DOUBLE)
    out, _ = rewrite_and_compare(m, _feeds((1, 3, 4), np.float64), FOLD)
    assert ops(out) == ["BatchNormalization"]


def _trap(tail: object, const: object, *, x_shape: list | None = None, bias: bool = True, nd: int = 2,
          outputs: tuple[str, ...] = ("y",), extra: list | None = None, y_rank: int = 4) -> object:  # fmt: skip
    inits, conv = _conv(bias, nd=nd)
    return _model([conv, tail, *(extra or [])], [*inits, const], x_shape or ["N", 4, "H", "W"], [0] * y_rank,
                  outputs=outputs)  # fmt: skip


def test_traps_are_left_alone() -> None:
    mul = h.make_node("Mul", ["c", "s"], ["y"])
    add = h.make_node("Add", ["c", "s"], ["y"])
    div = h.make_node("Div", ["c", "s"], ["y"])
    zeros = nh.from_array(np.zeros((6, 1, 1), np.float32), "s")
    traps = {
        # Varies along the height: not one factor per channel.
        "spatial": _trap(mul, _c("s", (6, 5, 1)), x_shape=["N", 4, 5, 5]),
        # [1, 1, 1, 5] on a width that is a dimension variable: where W is 1 the broadcast makes it 5, and the
        # factor varies along it elsewhere (the extent is 1 only for some input sizes).
        "width one for some sizes": _trap(mul, _c("s", (1, 1, 1, 5))),
        # Rank 5 on a rank-4 output: the broadcast adds an axis.
        "adds an axis": _trap(mul, _c("s", (1, 1, 6, 1, 1)), y_rank=5),
        # [1, C, 1, 1] on a 1-D convolution's rank-3 output: again an axis added, and C on the wrong axis.
        "rank 3 output": _trap(mul, _c("s", (1, 6, 1, 1)), x_shape=["N", 4, "L"], nd=1),
        # Two along the batch axis: the batch is a dimension variable.
        "batch": _trap(mul, _c("s", (2, 6, 1, 1))),
        # A factor that does not distribute over the sum (0 * inf, nan), a divisor of zero, a shift of zeros.
        "inf": _trap(mul, nh.from_array(np.full((6, 1, 1), np.inf, np.float32), "s")),
        "nan": _trap(add, nh.from_array(np.full((6, 1, 1), np.nan, np.float32), "s")),
        "divide by zero": _trap(div, zeros),
        "zero shift": _trap(add, zeros),
        # The constant first in a Sub: s - c negates the product.
        "constant minus": _trap(h.make_node("Sub", ["s", "c"], ["y"]), _c("s", (6, 1, 1))),
        # The product read twice (by a graph output's Relu), or a graph output itself.
        "read twice": _trap(mul, _c("s", (6, 1, 1)), outputs=("y", "r"), extra=[h.make_node("Relu", ["c"], ["r"])]),
        "graph output": _trap(mul, _c("s", (6, 1, 1)), outputs=("y", "c")),
    }
    for name, m in traps.items():
        out, fired = rewrite(m, FOLD)
        assert fired == [] and ops(out)[0] == "Conv" and len(ops(out)) >= 2, name


def test_an_integer_product_is_left_alone() -> None:
    mm = _model([h.make_node("MatMul", ["x", "W"], ["c"]), h.make_node("Mul", ["c", "s"], ["y"])],
                [nh.from_array(np.arange(35, dtype=np.int64).reshape(5, 7), "W"),
                 nh.from_array(np.full(7, 3, np.int64), "s")], ["N", 5], ["N", 7], elem=TP.INT64)  # fmt: skip
    out, fired = rewrite(mm, FOLD)
    assert fired == [] and ops(out) == ["MatMul", "Mul"]


@pytest.mark.parametrize("seed", range(12))
def test_random_chains_fold(seed: int) -> None:
    # Seeded chains of one to three per-channel steps after a Conv (1-D or 2-D, bias or not), constant shapes of
    # every admitted form.
    rng = np.random.default_rng(500 + seed)
    nd = int(rng.integers(1, 3))
    inits, conv = _conv(bool(rng.random() < 0.5), nd=nd)
    nodes, prev = [conv], "c"
    forms = [(), (1,), (6,) + (1,) * nd, (1, 6) + (1,) * nd, (1,) * (nd + 2)]
    for k in range(int(rng.integers(1, 4))):
        op = str(rng.choice(["Mul", "Div", "Add", "Sub"]))
        shape = forms[int(rng.integers(len(forms)))]
        shape = shape if len(shape) <= nd + 2 else ()
        inits.append(_c(f"k{k}", shape))
        ins = [prev, f"k{k}"] if op in ("Div", "Sub") or rng.random() < 0.5 else [f"k{k}", prev]
        prev = "y" if k == 2 else f"v{k}"
        nodes.append(h.make_node(op, ins, [prev]))
    nodes.append(h.make_node("Identity", [prev], ["out"]))
    spatial = [int(v) for v in rng.integers(3, 7, nd)]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4, *spatial])],
                     [h.make_tensor_value_info("out", TP.FLOAT, ["n", 6, *spatial])], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
    m.ir_version = 8
    feeds = [{"x": rng.standard_normal((n, 4, *spatial)).astype(np.float32)} for n in (1, 2)]
    out, _ = rewrite_and_compare(m, feeds, FOLD)
    assert ops(out) == ["Conv", "Identity"]


def test_a_factor_that_overflows_the_folded_weight_is_left_alone() -> None:
    # W = 1e20 and s = 1e20: W * s overflows float32 to inf, while (conv(x) * s) is finite for a small x.
    w = nh.from_array(np.full((2, 1, 1, 1), 1e20, np.float32), "W")
    conv = h.make_node("Conv", ["x", "W"], ["c"])
    m = _model([conv, h.make_node("Mul", ["c", "s"], ["y"])], [w, nh.from_array(np.full((2, 1, 1), 1e20,
               np.float32), "s")], ["N", 1, 2, 2], ["N", 2, 2, 2])  # fmt: skip
    out, fired = rewrite(m, FOLD)
    assert fired == [] and ops(out) == ["Conv", "Mul"]
