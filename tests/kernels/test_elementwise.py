"""Elementwise and activation kernels: ONNX 1-3 vectors, and differential tests against onnxruntime."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernels import compare, run_ours, single_node_cases
from onnxcore.kernels._rational import tanh32
from onnxcore.kernels.elementwise_binary import _variadic
from onnxcore.kernels.registry import lookup

ELEMENTWISE_OPS = set(
    "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitCast BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor "
    "Ceil Celu Clip Cos Cosh Div Elu Equal Erf Exp Floor Gelu Greater GreaterOrEqual HardSigmoid HardSwish IsInf "
    "IsNaN LeakyRelu Less LessOrEqual Log Max Mean Min Mish Mod Mul Neg Not Or Pow PRelu Reciprocal Relu Round "
    "Selu Shrink Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub Sum Swish Tan Tanh ThresholdedRelu Where "
    "Xor".split()
)

RNG = np.random.default_rng(20261130)


@pytest.mark.parametrize("case_dir", single_node_cases(ELEMENTWISE_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of the elementwise operators (rtol 1e-3, atol 1e-7; Clause 11.5)."""
    pytest.importorskip("onnx")
    from node_harness import assert_close, run_single_node_case

    with np.errstate(all="ignore"):
        result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def _rand(shape: tuple[int, ...], dtype: str, lo: float = -3.0, hi: float = 3.0) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dt)
    return RNG.uniform(lo, hi, size=shape).astype(dt)


# Multidirectional broadcasting (Clause 6.6.2): scalar, suffix, both-sided, empty extents.
SHAPE_PAIRS = [
    ((2, 3, 4, 5), ()),
    ((2, 3, 4, 5), (5,)),
    ((4, 5), (2, 3, 4, 5)),
    ((1, 4, 5), (2, 3, 1, 1)),
    ((3, 4, 5), (2, 1, 1, 1)),
    ((0, 3), (1, 3)),
    ((2, 0, 3), (3,)),
    ((), ()),
]


# (opset, dtype): types admitted by Add/Sub/Mul/Div at that version.
ARITH_TYPES = [
    (7, "float32"),
    (7, "int32"),
    (13, "float16"),
    (13, "float64"),
    (14, "int8"),
    (14, "uint8"),
    (14, "int64"),
]


@pytest.mark.parametrize(("opset", "dtype"), ARITH_TYPES, ids=str)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_arith_broadcast_vs_ort(op: str, opset: int, dtype: str, shapes: tuple) -> None:
    pytest.importorskip("onnxruntime")
    a = _rand(shapes[0], dtype)
    b = _rand(shapes[1], dtype)
    if op == "Div" and np.dtype(dtype).kind in "iu":
        b[b == 0] = 3  # integer division by zero is undefined
        a = a.copy()
    rtol = 1e-3 if dtype == "float16" else 1e-6
    compare(op, [a, b], opset, rtol=rtol)


def test_div_int_truncates_like_c() -> None:
    a = np.array([7, -7, 7, -7, 0, -1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 5, 3], dtype=np.int32)
    (y,) = run_ours("Div", [a, b], 14)
    assert y.tolist() == [3, -3, -3, 3, 0, 0]
    for dt in ("int8", "int16", "int64", "uint8", "uint32", "uint64"):
        x = np.array([7, 9, 100], dt) if dt[0] == "u" else np.array([7, -9, 100], dt)
        (q,) = run_ours("Div", [x, np.array([2, 4, 3], dt)], 14)
        assert q.dtype == np.dtype(dt) and q.tolist() == ([3, 2, 33] if dt[0] == "u" else [3, -2, 33])
    pytest.importorskip("onnxruntime")
    compare("Div", [a, b], 14)


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint8", "uint64"])
@pytest.mark.parametrize(
    ("op", "opset", "attrs"),
    [("Div", 14, {}), ("Div", 6, {"broadcast": 1}), ("Mod", 13, {"fmod": 0}), ("Mod", 13, {"fmod": 1})],
)
def test_integer_division_by_zero_is_refused(dt: str, op: str, opset: int, attrs: dict[str, int]) -> None:
    # Not defined by the operators; numpy gives 0 silently, onnxruntime refuses ("Integer division by
    # zero", "Integer modulo by zero"): an error, never a made-up value (Clause 4.4).
    from onnxcore.errors import EvaluationError

    if opset == 6 and dt in ("int8", "uint8"):
        pytest.skip("Div-6 admits 32- and 64-bit integers only")
    x = np.array([7, 9, 100], dt)
    with pytest.raises(EvaluationError, match=f"{op}: integer division by zero"):
        run_ours(op, [x, np.array([2, 0, 3], dt)], opset, attrs)
    with pytest.raises(EvaluationError, match="by zero"):
        run_ours(op, [x, np.array(0, dt)], opset, attrs)  # a broadcast scalar divisor


def test_int8_add_wraps() -> None:
    a = np.array([127, -128, 100], dtype=np.int8)
    b = np.array([1, -1, 100], dtype=np.int8)
    (y,) = run_ours("Add", [a, b], 14)
    assert y.dtype == np.int8 and y.tolist() == [-128, 127, -56]


def test_rank0_result_is_array() -> None:
    (y,) = run_ours("Add", [np.array(1.0, np.float32), np.array(2.0, np.float32)], 14)
    assert type(y) is np.ndarray and y.shape == () and y.dtype == np.float32 and float(y) == 3.0


def test_not_broadcastable_raises_shape_error() -> None:
    from onnxcore.errors import ShapeError

    with pytest.raises(ShapeError):
        run_ours("Add", [np.zeros((2, 3), np.float32), np.zeros((4,), np.float32)], 14)


# Legacy broadcast (opsets 1 and 6): onnxruntime has no kernels before 7; the definitions' own
# examples are the oracle.
@pytest.mark.parametrize(
    ("bshape", "axis", "expect_shape"),
    [
        ((), None, ()),
        ((1, 1), None, ()),
        ((5,), None, (5,)),
        ((4, 5), None, (4, 5)),
        ((3, 4), 1, (3, 4, 1)),
        ((2,), 0, (2, 1, 1, 1)),
    ],
)
@pytest.mark.parametrize("opset", [1, 6])
def test_legacy_broadcast_attr(opset: int, bshape: tuple, axis: int | None, expect_shape: tuple) -> None:
    a = _rand((2, 3, 4, 5), "float32")
    b = _rand(bshape, "float32")
    attrs = {"broadcast": 1} if axis is None else {"broadcast": 1, "axis": axis}
    (y,) = run_ours("Add", [a, b], opset, attrs)
    np.testing.assert_allclose(y, a + b.reshape(expect_shape), rtol=1e-6)
    (y,) = run_ours("Mul", [a, b], opset, attrs)
    np.testing.assert_allclose(y, a * b.reshape(expect_shape), rtol=1e-6)


def test_legacy_broadcast_zero_requires_same_shape() -> None:
    from onnxcore.errors import ShapeError

    a = _rand((2, 3), "float32")
    with pytest.raises(ShapeError):
        run_ours("Sub", [a, _rand((3,), "float32")], 6)
    (y,) = run_ours("Sub", [a, a], 6)
    assert y.shape == (2, 3) and not y.any()
    (y,) = run_ours("Sub", [a, a], 1, {"consumed_inputs": [0, 0]})
    assert y.shape == (2, 3) and not y.any()


def test_legacy_broadcast_one_extents_stretch_and_nothing_else() -> None:
    """Opset 1/6 with broadcast=1: B matches a contiguous run of A's dimensions, where an extent of 1 in B
    stretches (the position taken against "1-dim expansion doesn't work yet": the onnx project's
    pytorch-operator vectors test_operator_add_size1_* expect it); any other mismatch is refused."""
    from onnxcore.errors import ShapeError

    a = _rand((2, 3), "float64")
    for bshape in ((2, 1), (1, 3)):  # the shapes of the shipped vectors, at axis 0
        b = _rand(bshape, "float64")
        (y,) = run_ours("Add", [a, b], 6, {"broadcast": 1, "axis": 0})
        np.testing.assert_array_equal(y, a + b)
    a4 = _rand((2, 3, 4, 5), "float32")
    b = _rand((3, 1), "float32")
    (y,) = run_ours("Mul", [a4, b], 6, {"broadcast": 1, "axis": 1})
    np.testing.assert_array_equal(y, a4 * b.reshape(3, 1, 1))
    with pytest.raises(ShapeError):
        run_ours("Add", [a4, _rand((3, 2), "float32")], 6, {"broadcast": 1, "axis": 1})
    with pytest.raises(ShapeError):
        run_ours("Mul", [a4, _rand((4, 6), "float32")], 1, {"broadcast": 1})
    with pytest.raises(ShapeError):  # runs past A's last axis
        run_ours("Sub", [a4, _rand((4, 5), "float32")], 6, {"broadcast": 1, "axis": 3})


@pytest.mark.parametrize("opset", [7, 9, 13])
@pytest.mark.parametrize("op", ["Equal", "Greater", "Less"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "uint8", "int16"])
def test_compare_vs_ort(op: str, opset: int, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    if opset < 9 and dtype != "float32" and not (op == "Equal" and dtype in ("int32", "int64")):
        pytest.skip("type not admitted before opset 9")
    if op == "Equal" and opset < 11 and dtype not in ("int32", "int64"):
        pytest.skip("Equal admits only bool/int32/int64 before 11")
    a = _rand((3, 1, 4), dtype, -2, 2).round() if dtype == "float32" else _rand((3, 1, 4), dtype)
    b = _rand((2, 4), dtype, -2, 2).round() if dtype == "float32" else a[0, :, :].repeat(2, axis=0)
    compare(op, [a, b], opset)


@pytest.mark.parametrize("op", ["GreaterOrEqual", "LessOrEqual"])
@pytest.mark.parametrize("opset", [12, 16])
def test_compare_or_equal_vs_ort(op: str, opset: int) -> None:
    pytest.importorskip("onnxruntime")
    a = _rand((2, 3, 4), "float32").round()
    b = _rand((3, 1), "float32").round()
    a[0, 0, 0] = np.nan
    compare(op, [a, b], opset)


def test_equal_strings() -> None:
    a = np.array([b"a", b"bc", b""], dtype=object)
    b = np.array([[b"a"], [b""]], dtype=object)
    (y,) = run_ours("Equal", [a, b], 19)
    assert y.dtype == np.bool_ and y.tolist() == [[True, False, False], [False, False, True]]


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical_vs_ort(op: str) -> None:
    pytest.importorskip("onnxruntime")
    compare(op, [_rand((2, 3, 4), "bool"), _rand((3, 1), "bool")], 7)
    compare("Not", [_rand((2, 3), "bool")], 1)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64"])
def test_bitwise_vs_ort(op: str, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    compare(op, [_rand((2, 3, 4), dtype), _rand((4,), dtype)], 18)
    compare("BitwiseNot", [_rand((5,), dtype)], 18)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift_unsigned_vs_ort(dtype: str, direction: str) -> None:
    pytest.importorskip("onnxruntime")
    bits = np.dtype(dtype).itemsize * 8
    x = RNG.integers(0, 2**bits - 1, size=(3, 4), dtype=dtype, endpoint=True)
    y = RNG.integers(0, bits - 1, size=(4,), dtype=dtype, endpoint=True)
    compare("BitShift", [x, y], 11, {"direction": direction})


def test_bitshift_signed_out_of_range() -> None:
    x = np.array([-8, 8, -1, 5], dtype=np.int8)
    y = np.array([1, 9, -1, 8], dtype=np.int8)
    (r,) = run_ours("BitShift", [x, y], 28, {"direction": "RIGHT"})
    assert r.tolist() == [-4, 0, -1, 0]
    (left,) = run_ours("BitShift", [x, y], 28, {"direction": "LEFT"})
    assert left.tolist() == [-16, 0, 0, 0]


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint8", "float32", "float64"])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_vs_ort(dtype: str, fmod: int) -> None:
    pytest.importorskip("onnxruntime")
    if np.dtype(dtype).kind == "f" and fmod == 0:
        pytest.skip("float Mod needs fmod=1 before opset 28; onnxruntime has no Mod-28")
    a = _rand((3, 4), dtype, -10, 10)
    b = _rand((4,), dtype, -4, 4)
    b[b == 0] = 3
    compare("Mod", [a, b], 13, {"fmod": fmod})


def test_mod28_float_floor_special_cases() -> None:
    # Mod-28 states the special cases; numpy.remainder and Python's float % follow them.
    a = np.array([5.5, -5.5, 0.0, -0.0, np.inf, 1.0, 3.0, -3.0, np.nan], dtype=np.float64)
    b = np.array([2.0, 2.0, -3.0, 3.0, 2.0, 0.0, np.inf, np.inf, 1.0], dtype=np.float64)
    (y,) = run_ours("Mod", [a, b], 28, {"fmod": 0})
    expect = [2 * 0 + 1.5, 0.5, -0.0, 0.0, np.nan, np.nan, 3.0, np.inf, np.nan]
    np.testing.assert_array_equal(y, np.array(expect))
    assert math.copysign(1.0, y[2]) == -1.0 and math.copysign(1.0, y[3]) == 1.0


def test_mod_float_fmod0_refused_before_28() -> None:
    from onnxcore.errors import EvaluationError

    with pytest.raises(EvaluationError):
        run_ours("Mod", [np.ones(2, np.float32), np.ones(2, np.float32)], 13, {"fmod": 0})


POW_TYPES = [
    ("float32", "float32"),
    ("float32", "int32"),
    ("float32", "int64"),
    ("int32", "int32"),
    ("int64", "int64"),
    ("int32", "float32"),
    ("int64", "float32"),
    ("float64", "float64"),
]


@pytest.mark.parametrize(("tx", "ty"), POW_TYPES)
@pytest.mark.parametrize("opset", [12, 15])
def test_pow_type_combinations_vs_ort(tx: str, ty: str, opset: int) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((3, 4), tx, 0.1, 4) if np.dtype(tx).kind == "f" else RNG.integers(-5, 6, (3, 4)).astype(tx)
    y = _rand((4,), ty, -2, 3) if np.dtype(ty).kind == "f" else RNG.integers(0, 5, (4,)).astype(ty)
    compare("Pow", [x, y], opset, rtol=1e-5)


def test_pow_negative_integer_exponent() -> None:
    x = np.array([1, -1, -1, 2, 5], dtype=np.int32)
    y = np.array([-3, -3, -2, -1, -2], dtype=np.int32)
    (z,) = run_ours("Pow", [x, y], 15)
    assert z.dtype == np.int32 and z.tolist() == [1, -1, 1, 0, 0]


@pytest.mark.parametrize("tx", ["float16", "float32", "float64"])
@pytest.mark.parametrize("ty", ["float32", "float64", "int64"])
def test_pow_of_exponent_two_is_numpys_square(tx: str, ty: str) -> None:
    # Pow with exponent 2 is computed as a product (Clause 11.1's Pow, elementwise_binary._PRODUCT_EXPONENTS): the
    # same bits as numpy's power, which squares, specials and overflow included.
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38, -3e38, 65504.0, 1e-7, -2.5]
    x = np.concatenate([np.array(specials), RNG.standard_normal(4000) * 10.0 ** RNG.integers(-20, 20, 4000)])
    x = x.astype(tx)
    (z,) = run_ours("Pow", [x, np.array(2, ty)], 15)
    want = np.power(x.astype(np.float64), 2.0).astype(tx) if np.dtype(ty).kind == "i" else np.power(x, x.dtype.type(2))
    assert z.dtype == x.dtype
    np.testing.assert_array_equal(z.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("opset", [8, 13])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_variadic_broadcast_vs_ort(op: str, opset: int, n: int) -> None:
    pytest.importorskip("onnxruntime")
    shapes = [(2, 1, 4), (3, 1), (1,)][:n]
    xs = [_rand(s, "float32") for s in shapes]
    compare(op, xs, opset)


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float64"])
def test_max_min_types_vs_ort(op: str, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    compare(op, [_rand((3, 4), dtype), _rand((4,), dtype), _rand((3, 1), dtype)], 13)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_propagate_nan(op: str) -> None:
    """IEEE 754 maximum/minimum, not maxNum (module docstring of elementwise_binary; Clause 11.3)."""
    a = np.array([np.nan, 1.0, 2.0], dtype=np.float32)
    b = np.array([0.0, np.nan, 3.0], dtype=np.float32)
    (y,) = run_ours(op, [a, b], 13)
    assert np.isnan(y[0]) and np.isnan(y[1])
    (y,) = run_ours(op, [b, a], 8)
    assert np.isnan(y[0]) and np.isnan(y[1])
    (r,) = run_ours("Relu", [a], 14)
    assert np.isnan(r[0])
    (c,) = run_ours("Clip", [a, np.array(0.0, np.float32), np.array(1.5, np.float32)], 13)
    assert np.isnan(c[0]) and c[1] == 1.0
    pytest.importorskip("onnxruntime")
    compare(op, [a, b], 13)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("opset", [1, 6])
def test_variadic_legacy_requires_same_shape(op: str, opset: int) -> None:
    from onnxcore.errors import ShapeError

    a, b = _rand((2, 3), "float32"), _rand((2, 3), "float32")
    ref = {"Max": np.maximum(a, b), "Min": np.minimum(a, b), "Sum": a + b, "Mean": (a + b) / 2}[op]
    (y,) = run_ours(op, [a, b], opset)
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    with pytest.raises(ShapeError):
        run_ours(op, [a, _rand((3,), "float32")], opset)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "uint8", "int64"])
def test_variadic_of_many_inputs_is_the_chain_of_binary_calls(op: str, dtype: str) -> None:
    """From 16 inputs of one shape and type the running result is one accumulate: the bits of the loop, in order
    (NaN payloads and signed zeros included), small integers wrapping in their type."""

    uf = {"Max": np.maximum, "Min": np.minimum, "Sum": np.add, "Mean": np.add}[op]
    rng = np.random.default_rng(21)
    cases = ((15, (1, 3)), (16, (1, 3)), (17, (1, 1)), (50, (1, 3)), (20, ()), (16, (0, 2)), (16, (3, 70)))
    for (n, shape), special in itertools.product(cases, (False, True)):
        xs = tuple((rng.standard_normal(shape) * 100).astype(dtype) for _ in range(n))
        if special and dtype.startswith("float") and xs[0].size:
            xs[3].flat[0], xs[5].flat[-1], xs[0].flat[-1], xs[7].flat[0] = np.nan, np.inf, -np.inf, -0.0
            xs[9].flat[0] = -xs[9].flat[0] * np.float16(np.nan)  # a NaN of the other sign
        with np.errstate(all="ignore"):
            want = np.asarray(uf(xs[0], xs[1]))
            for a in xs[2:]:
                want = np.asarray(uf(want, a))
            if op == "Mean":
                want = np.true_divide(want, n, out=want if want.dtype.kind == "f" else None).astype(dtype)
            for legacy in (False, True):
                got = _variadic(op, xs, uf, legacy)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.tobytes() == want.tobytes(), (n, shape)


@pytest.mark.parametrize(
    "op", ["Add", "Sub", "Mul", "Div", "Greater", "Less", "Equal", "LessOrEqual", "And", "BitwiseXor"]
)
def test_binary_with_an_operand_of_one_element_is_numpys_broadcast(op: str) -> None:
    """An operand of one element and no greater rank goes to numpy as rank 0: the values, type, shape and layout of
    numpy's broadcast of the operands as given."""

    fn = next(k.fn for v in (18, 16, 13, 7) if (k := lookup("", op, v)) is not None)
    uf = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.true_divide, "Greater": np.greater,
          "Less": np.less, "Equal": np.equal, "LessOrEqual": np.less_equal, "And": np.logical_and,
          "BitwiseXor": np.bitwise_xor}[op]  # fmt: skip
    rng = np.random.default_rng(23)
    dtype = "bool" if op == "And" else "int32" if op == "BitwiseXor" else "float32"
    shapes = [(1, 3), (1,), (), (1, 1), (3,), (16, 3), (0, 3), (1, 1, 1), (2, 1)]
    for sa, sb in itertools.product(shapes, shapes):
        if math.prod(sa) != 1 and math.prod(sb) != 1:
            continue
        a, b = (rng.standard_normal(sa) * 5).astype(dtype), (rng.standard_normal(sb) * 5 + 0.5).astype(dtype)
        if dtype == "float32" and a.size:
            a.flat[0] = np.nan
        for x, y in ((a, b), (np.asfortranarray(a.T), b)):
            got, want = fn(x, y), np.asarray(uf(x, y))
            assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
            assert got.strides == want.strides and got.tobytes() == want.tobytes(), (sa, sb)


def test_where_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    c = _rand((2, 1, 4), "bool")
    compare("Where", [c, _rand((3, 1), "float32"), _rand((4,), "float32")], 16)
    compare("Where", [c, _rand((3, 1), "int64"), _rand((4,), "int64")], 9)
    (y,) = run_ours("Where", [np.array([True, False]), np.array([b"a", b"b"], object), np.array([b"c"], object)], 16)
    assert y.tolist() == [b"a", b"c"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "uint8", "int64"])
@pytest.mark.parametrize("bounds", [(None, None), (-1, None), (None, 2), (-1, 2), (2, -1)], ids=str)
def test_clip_inputs_vs_ort(dtype: str, bounds: tuple) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((3, 5), dtype)
    if np.dtype(dtype).kind == "u":
        bounds = tuple(None if b is None else b + 1 for b in bounds)
    lo, hi = (None if b is None else np.array(b, dtype=dtype) for b in bounds)
    inputs = [x, lo, hi]
    while inputs[-1] is None:
        inputs.pop()
    compare("Clip", inputs, 13)
    if np.dtype(dtype).kind == "f":
        compare("Clip", inputs, 11)


@pytest.mark.parametrize("attrs", [{}, {"min": -1.0}, {"max": 0.5}, {"min": -0.5, "max": 0.5}], ids=str)
def test_clip_attribute_versions(attrs: dict) -> None:
    x = _rand((4, 4), "float32", -2, 2)
    lo = attrs.get("min", -3.4028234663852886e38)
    hi = attrs.get("max", 3.4028234663852886e38)
    (y6,) = run_ours("Clip", [x], 6, attrs)
    np.testing.assert_array_equal(y6, np.clip(x, lo, hi))
    (y1,) = run_ours("Clip", [x], 1, attrs)
    np.testing.assert_array_equal(y1, np.clip(x, attrs.get("min"), attrs.get("max")) if attrs else x)


UNARY_FLOAT = [
    ("Abs", 13, (-3, 3)),
    ("Acos", 7, (-1, 1)),
    ("Acosh", 9, (1, 5)),
    ("Asin", 7, (-1, 1)),
    ("Asinh", 9, (-3, 3)),
    ("Atan", 7, (-3, 3)),
    ("Atanh", 9, (-0.99, 0.99)),
    ("Ceil", 13, (-3, 3)),
    ("Cos", 7, (-3, 3)),
    ("Cosh", 9, (-3, 3)),
    ("Erf", 13, (-4, 4)),
    ("Exp", 13, (-5, 5)),
    ("Floor", 13, (-3, 3)),
    ("HardSwish", 14, (-5, 5)),
    ("Log", 13, (0.01, 5)),
    ("Mish", 18, (-5, 5)),
    ("Neg", 13, (-3, 3)),
    ("Reciprocal", 13, (0.5, 5)),
    ("Relu", 14, (-3, 3)),
    ("Round", 11, (-4, 4)),
    ("Sigmoid", 13, (-10, 10)),
    ("Sign", 13, (-3, 3)),
    ("Sin", 7, (-3, 3)),
    ("Sinh", 9, (-3, 3)),
    ("Softplus", 1, (-10, 10)),
    ("Softsign", 1, (-3, 3)),
    ("Sqrt", 13, (0, 5)),
    ("Tan", 7, (-1.5, 1.5)),
    ("Tanh", 13, (-3, 3)),
    ("IsNaN", 13, (-3, 3)),
    ("IsInf", 10, (-3, 3)),
]


@pytest.mark.parametrize(("op", "opset", "rng"), UNARY_FLOAT, ids=[u[0] for u in UNARY_FLOAT])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_unary_vs_ort(op: str, opset: int, rng: tuple, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((3, 7), dtype, *rng)
    if op in ("Round",):
        x[0, :4] = np.array([0.5, 1.5, -2.5, 2.5], dtype=dtype)
    if op in ("IsNaN", "IsInf"):
        x[0, :3] = np.array([np.nan, np.inf, -np.inf], dtype=dtype)
    rtol = 2e-3 if dtype == "float16" else 2e-6
    compare(op, [x], max(opset, 13) if dtype == "float16" and op in ("Relu",) else opset, rtol=rtol, atol=1e-6)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize(
    ("op", "attrs", "opset"),
    [
        ("Elu", {"alpha": 0.7}, 6),
        ("Celu", {"alpha": 1.3}, 12),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 6),
        ("LeakyRelu", {"alpha": 0.2}, 16),
        ("Selu", {}, 6),
        ("Selu", {"alpha": 2.0, "gamma": 3.0}, 6),
        ("ThresholdedRelu", {"alpha": 0.5}, 10),
        ("Shrink", {"bias": 0.3, "lambd": 0.7}, 9),
        ("Gelu", {}, 20),
        ("Gelu", {"approximate": "tanh"}, 20),
        ("IsInf", {"detect_negative": 0}, 10),
        ("IsInf", {"detect_positive": 0}, 10),
    ],
    ids=str,
)
def test_activation_attrs_vs_ort(op: str, attrs: dict, opset: int) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((4, 6), "float32", -4, 4)
    x[0, :2] = [np.inf, -np.inf]
    compare(op, [x], opset, attrs)


def test_shrink_integers_vs_ort() -> None:
    pytest.importorskip("onnxruntime")
    compare("Shrink", [np.arange(-5, 6, dtype=np.int32)], 9, {"bias": 1.0, "lambd": 2.0})


@pytest.mark.parametrize("opset", [9, 16])
def test_prelu_unidirectional_vs_ort(opset: int) -> None:
    pytest.importorskip("onnxruntime")
    x = _rand((2, 3, 4), "float32")
    for s in [(4,), (3, 1), (1,), (3, 4)]:
        compare("PRelu", [x, _rand(s, "float32", 0, 1)], opset)


@pytest.mark.parametrize("opset", [1, 6])
def test_prelu_legacy_per_channel(opset: int) -> None:
    x = _rand((2, 3, 4), "float32")
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    (y,) = run_ours("PRelu", [x, slope], opset)
    np.testing.assert_allclose(y, np.where(x < 0, x * slope.reshape(3, 1), x), rtol=1e-6)
    (y,) = run_ours("PRelu", [x, np.array([0.5], np.float32)], opset)
    np.testing.assert_allclose(y, np.where(x < 0, x * 0.5, x), rtol=1e-6)


def test_swish_matches_definition() -> None:
    x = _rand((5, 5), "float64", -6, 6)
    (y,) = run_ours("Swish", [x], 24, {"alpha": 1.7})
    np.testing.assert_allclose(y, x / (1 + np.exp(-1.7 * x)), rtol=1e-12)


@pytest.mark.usefixtures("accel_path")
def test_erf_accuracy_against_math() -> None:
    xs = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1e-300, 2.4999999, 2.5, 26.0, np.inf, -np.inf, np.nan]])
    (y,) = run_ours("Erf", [xs], 13)
    expect = np.array([math.erf(v) for v in xs])
    np.testing.assert_allclose(y, expect, rtol=4e-15, atol=1e-300, equal_nan=True)
    x32 = xs.astype(np.float32)
    (y32,) = run_ours("Erf", [x32], 13)
    assert y32.dtype == np.float32
    expect32 = np.array([math.erf(float(v)) for v in x32])
    finite = np.isfinite(expect32)
    ulps = np.abs(y32[finite] - expect32[finite]) / np.spacing(np.abs(expect32[finite]).astype(np.float32))
    assert ulps.max() <= 0.6
    assert np.isnan(y32[~finite & np.isnan(expect32)]).all()
    assert np.signbit(y32[-9:-7]).tolist() == [False, True]  # erf(0) = 0, erf(-0) = -0


@pytest.mark.usefixtures("accel_path")
def test_erf_float32_within_0_54_ulp_on_a_dense_grid() -> None:
    """The float32 path (a rational approximation evaluated in float64, rounded once) against math.erf on
    two million points: a dense grid of [0, 4.5] (beyond 3.9, erf rounds to 1 in float32), values down to
    the subnormals, and their negatives (erf is odd)."""
    pos = np.concatenate([np.linspace(0, 4.5, 1_000_001), np.logspace(-45, 0, 2000)]).astype(np.float32)
    xs = np.concatenate([pos, -pos])
    (y,) = run_ours("Erf", [xs], 13)
    expect = np.frompyfunc(math.erf, 1, 1)(xs.astype(np.float64)).astype(np.float64)
    spacing = np.spacing(np.abs(expect).astype(np.float32)).astype(np.float64)
    ulps = np.abs(y.astype(np.float64) - expect) / spacing
    assert ulps.max() <= 0.54, (xs[ulps.argmax()], ulps.max())


@pytest.mark.usefixtures("accel_path")
def test_tanh_float32_within_0_501_ulp_on_a_dense_grid() -> None:
    """The tanh GELU's float32 tanh (onnxcore.kernels._rational: a rational approximation evaluated in float64,
    rounded once) against math.tanh on two million points: a dense grid of [0, 9.5] (beyond 9.01, tanh rounds to 1
    in float32), values down to the subnormals, their negatives (tanh is odd), and the special values."""
    pos = np.concatenate([np.linspace(0, 9.5, 1_000_001), np.logspace(-45, 0, 2000), [20.0, 1e30]]).astype(np.float32)
    xs = np.concatenate([pos, -pos])
    y = tanh32(xs)
    expect = np.tanh(xs.astype(np.float64))
    spacing = np.spacing(np.abs(expect).astype(np.float32)).astype(np.float64)
    ulps = np.abs(y.astype(np.float64) - expect) / spacing
    assert ulps.max() <= 0.501, (xs[ulps.argmax()], ulps.max())
    special = tanh32(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32))
    assert np.isnan(special[0]) and special[1:3].tolist() == [1.0, -1.0]
    assert np.signbit(special[3:]).tolist() == [False, True]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_tanh_gelu_against_its_definition_in_double(dtype: str) -> None:
    """Gelu-20 with approximate="tanh": the definition 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in double,
    rounded to the type, within a few float32 roundings (the argument is formed in float32, Gelu-20's order);
    float16 and bfloat16 computed in float32 and rounded once."""
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = np.concatenate([np.linspace(-12, 12, 20001), [0.0, -0.0, 1e-30, 300.0, -300.0]]).astype(dt)
    (y,) = run_ours("Gelu", [x], 20, {"approximate": "tanh"})
    assert y.dtype == dt
    xd = x.astype(np.float64)
    expect = 0.5 * xd * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (xd + 0.044715 * xd**3)))
    if dt == np.float64:
        # atol: 1 + tanh cancels for negative x (the definition computed as written, as the kernel does).
        np.testing.assert_allclose(y, expect, rtol=1e-13, atol=1e-15)
    elif dt == np.float32:
        np.testing.assert_allclose(y.astype(np.float64), expect, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_allclose(y.astype(np.float64), expect.astype(dt).astype(np.float64), rtol=1e-2, atol=1e-3)
        # Computed in float32, rounded once to the type.
        (y32,) = run_ours("Gelu", [x.astype(np.float32)], 20, {"approximate": "tanh"})
        np.testing.assert_array_equal(y.astype(np.float32), y32.astype(dt).astype(np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn"])
def test_narrow_float_compute_in_float32_and_round_once(dtype: str) -> None:
    import ml_dtypes

    dt = np.dtype(getattr(ml_dtypes, dtype))
    x = _rand((16,), "float32", -2, 2).astype(dt)
    (y,) = run_ours("Exp", [x], 22 if dtype == "bfloat16" else 13)
    assert y.dtype == dt
    np.testing.assert_array_equal(y.astype(np.float32), np.exp(x.astype(np.float32)).astype(dt).astype(np.float32))


@pytest.mark.parametrize(
    ("src", "to", "dst"), [("float32", 6, "int32"), ("int64", 11, "float64"), ("uint8", 3, "int8")]
)
def test_bitcast_vs_numpy_view(src: str, to: int, dst: str) -> None:
    x = _rand((3, 2), src)
    (y,) = run_ours("BitCast", [x], 26, {"to": to})
    assert y.dtype == np.dtype(dst)
    np.testing.assert_array_equal(y, x.view(dst))


def _sweep_inputs(op: str) -> tuple[list[np.ndarray], dict]:
    f = _rand((3, 4), "float32", -2, 2)
    g = _rand((4,), "float32", -2, 2)
    pos = _rand((3, 4), "float32", 0.2, 3)
    table: dict[str, tuple[list[np.ndarray], dict]] = {
        "Acos": ([_rand((3, 4), "float32", -0.9, 0.9)], {}),
        "Asin": ([_rand((3, 4), "float32", -0.9, 0.9)], {}),
        "Atanh": ([_rand((3, 4), "float32", -0.9, 0.9)], {}),
        "Acosh": ([_rand((3, 4), "float32", 1.1, 3)], {}),
        "Log": ([pos], {}),
        "Sqrt": ([pos], {}),
        "Reciprocal": ([pos], {}),
        "Pow": ([pos, g], {}),
        "And": ([f > 0, g > 0], {}),
        "Or": ([f > 0, g > 0], {}),
        "Xor": ([f > 0, g > 0], {}),
        "Not": ([f > 0], {}),
        "Where": ([f > 0, f, g], {}),
        "Mod": ([_rand((3, 4), "int32", -9, 9), np.array([3, -2, 5, 7], np.int32)], {}),
        "BitShift": (
            [np.arange(12, dtype=np.uint32).reshape(3, 4), np.array([1, 2, 3, 0], np.uint32)],
            {"direction": "LEFT"},
        ),
        "BitwiseAnd": ([_rand((3, 4), "int32"), _rand((4,), "int32")], {}),
        "BitwiseOr": ([_rand((3, 4), "int32"), _rand((4,), "int32")], {}),
        "BitwiseXor": ([_rand((3, 4), "int32"), _rand((4,), "int32")], {}),
        "BitwiseNot": ([_rand((3, 4), "int32")], {}),
        "BitCast": ([f], {"to": 6}),
        "PRelu": ([f, _rand((4,), "float32", 0, 1)], {}),
        "Clip": ([f, np.array(-0.5, np.float32), np.array(0.7, np.float32)], {}),
        "Max": ([f, g, pos], {}),
        "Min": ([f, g, pos], {}),
        "Sum": ([f, g, pos], {}),
        "Mean": ([f, g, pos], {}),
    }
    binary = {"Add", "Sub", "Mul", "Div", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"}
    if op in table:
        return table[op]
    if op in binary:
        return [f, g], {}
    return [f], {}


@pytest.mark.parametrize("op", sorted(ELEMENTWISE_OPS))
def test_every_version_vs_ort(op: str) -> None:
    """Each since_version of the operator that onnxruntime implements, bound at exactly that opset."""
    pytest.importorskip("onnxruntime")
    from kernels import assert_same, run_ort
    from onnxcore.defs import schema_versions

    compared = 0
    for v in schema_versions(op):
        inputs, attrs = _sweep_inputs(op)
        if v < 7 and op in ("Max", "Min", "Sum", "Mean"):
            inputs = [inputs[0], inputs[0] * 2]  # no broadcasting before opset 8
        if v < 11 and op == "Clip":
            inputs, attrs = inputs[:1], {"min": -0.5, "max": 0.7}
        if v < 7 and len(inputs) == 2 and op not in ("PRelu",):
            attrs = {**attrs, "broadcast": 1}
        if v > 26:
            continue  # onnxruntime 1.31 loads models up to opset 26
        try:
            theirs = run_ort(op, inputs, 1, v, attrs)
        except Exception as e:
            if "NOT_IMPLEMENTED" in str(e) or "not implemented" in str(e).lower() or "INVALID_GRAPH" in str(e):
                continue
            raise
        (ours,) = run_ours(op, inputs, v, attrs)
        assert_same(ours, theirs[0], rtol=2e-6, atol=1e-6)
        compared += 1
    if not compared:
        pytest.skip(f"onnxruntime implements no version of {op} on these types")


@pytest.mark.parametrize("op", sorted(ELEMENTWISE_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16"])
def test_rank0_inputs_give_rank0_arrays(op: str, dtype: str) -> None:
    """Rank 0 in, rank 0 out, always an ndarray (never a numpy scalar), at the latest version."""
    from onnxcore.defs import schema_versions

    inputs, attrs = _sweep_inputs(op)
    scalars = [np.asarray(np.asarray(a).reshape(-1)[0]) for a in inputs]
    if dtype == "bfloat16":
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    scalars = [s.astype(dtype) if s.dtype == np.float32 else s for s in scalars]
    if op == "BitCast":
        attrs = {"to": {"float32": 6, "float16": 5, "float64": 7}.get(str(np.dtype(dtype)), 16)}
    version = max(v for v in schema_versions(op) if v <= 26 or op in ("Mod",))
    outs = run_ours(op, scalars, version, attrs)
    for y in outs:
        assert type(y) is np.ndarray and y.shape == ()


@pytest.mark.parametrize("alpha", [float("inf"), float("-inf"), float("nan"), 1e39])
@pytest.mark.parametrize("op", ["LeakyRelu", "Elu", "Selu"])
def test_activation_with_a_non_finite_alpha_keeps_the_positive_side(op: str, alpha: float) -> None:
    # The definitions are two-sided and alpha enters only the negative side; the select-free forms multiplied it
    # by 0 on the positive side and gave NaN there (found by the onnxruntime fuzz, which agrees with the fix).
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    (y,) = run_ours(op, [x], 6 if op != "LeakyRelu" else 16, {"alpha": alpha})
    gamma = np.float32(1.0507010221481323) if op == "Selu" else np.float32(1)
    np.testing.assert_array_equal(y[2:], gamma * x[2:])
    with np.errstate(over="ignore"):
        a = np.float32(alpha)  # 1e39 is infinite in float32
    neg = a * x[:2] if op == "LeakyRelu" else a * np.expm1(x[:2])
    np.testing.assert_array_equal(y[:2], gamma * neg)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("alpha", "beta"), [(1 / 6, 0.5), (0.2, 0.5), (0.3, 0.0), (-0.5, -0.0), (1.0, 1.0)])
@pytest.mark.parametrize("n", [1, 5, 576, 40000])
def test_hard_sigmoid_compiled_is_the_numpy_kernel(dtype: Any, alpha: float, beta: float, n: int) -> None:
    """HardSigmoid's compiled pass (the accelerator's; skipped without it) and its numpy passes give the same bits:
    every value through both bounds and between them, NaN, the infinities and both zeros (a zero bias and a negative
    slope make -0.0 before the bounds, which numpy's maximum turns into the bound +0.0), one value to a size past a
    block, float32 and float64."""
    from onnxcore.kernels import accel
    from onnxcore.kernels.registry import lookup

    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    fn = lookup("", "HardSigmoid", 6).fn
    rng = np.random.default_rng(n + int(abs(alpha) * 100))
    x = rng.uniform(-12, 12, n).astype(dtype)
    x[: min(n, 8)] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -3.0, 3.0], dtype=dtype)[: min(n, 8)]
    x = x.reshape((1, n, 1, 1))
    with accel.use(True):
        got = fn(x, alpha=alpha, beta=beta)
    with accel.use(False):
        want = fn(x, alpha=alpha, beta=beta)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape == x.shape
    assert np.array_equal(got, want, equal_nan=True)
    num = ~np.isnan(want)  # (a NaN is a NaN: its sign bit is the hardware's choice, not a value)
    assert np.array_equal(np.signbit(got[num]), np.signbit(want[num]))
    assert np.isnan(got.reshape(-1)[0]) and (got >= 0).sum() == n - 1 and (got <= 1).sum() == n - 1
