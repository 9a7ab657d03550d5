"""Binary elementwise nodes prepared with their constant operand (Clause 8.2: the ``prepare_with_constants``
rewrite, the last of the pipeline): ``ConstantOperand`` and ``PowConstantExponent`` give the kernel's values bit for
bit (the same ufunc over the same elements, only the constant's rank given once), raise the kernel's errors, and
take a node only after the fusions and lane groups have had it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.errors import EvaluationError
from onnxcore.kernels.elementwise_binary import ConstantOperand, PowConstantExponent

RNG = np.random.default_rng(31)
_TYPES = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE, np.dtype(np.int32): TP.INT32,
          np.dtype(np.int64): TP.INT64}  # fmt: skip


def _model(op: str, const: np.ndarray, x_rank: int, const_first: bool, dtype: np.dtype, out_type: int) -> bytes:
    ins = ["c", "x"] if const_first else ["x", "c"]
    g = h.make_graph(
        [h.make_node(op, ins, ["y"])],
        "g",
        [h.make_tensor_value_info("x", _TYPES[dtype], [None] * x_rank)],
        [h.make_tensor_value_info("y", out_type, [None] * max(x_rank, const.ndim))],
        [nh.from_array(const, "c")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


def _steps(s: onnxcore.Session) -> list[object]:
    return [step[0] for step in s._plan.steps]


def _values(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind == "f":
        v = RNG.standard_normal(shape).astype(dtype)
        if v.size > 2:
            v.flat[0], v.flat[1], v.flat[2] = np.nan, np.inf, -0.0  # specials meet the constant too
        return v
    return RNG.integers(1, 9, shape).astype(dtype)


# (x's shape, the constant's shape): lower rank, one element of each rank, the same rank, a higher rank.
_SHAPES = [((1, 10), (10,)), ((16, 3), (1, 3)), ((16, 10), (1,)), ((4, 5), ()), ((2, 3, 4), (4,)), ((3,), (2, 3)),
           ((2, 3), (1, 1, 1)), ((5,), (5,))]  # fmt: skip


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Greater", "Equal", "Less"])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize(("x_shape", "c_shape"), _SHAPES)
def test_a_constant_operand_gives_the_kernels_bits(
    op: str, dtype: np.dtype, const_first: bool, x_shape: tuple[int, ...], c_shape: tuple[int, ...]
) -> None:
    const = _values(dtype, c_shape)
    out = TP.BOOL if op in ("Greater", "Equal", "Less") else _TYPES[dtype]
    model = _model(op, const, len(x_shape), const_first, dtype, out)
    prepared = onnxcore.Session(model)
    plain = onnxcore.Session(model, disabled_rewrites=["prepare_with_constants"])
    assert any(isinstance(f, ConstantOperand) for f in _steps(prepared))
    assert not any(isinstance(f, ConstantOperand) for f in _steps(plain))
    for _ in range(2):  # the second run takes the constant shaped for x's rank from the step's cache
        x = _values(dtype, x_shape)
        (got,) = prepared.run(None, {"x": x})
        (want,) = plain.run(None, {"x": x})
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")
        a, b = (const, x) if const_first else (x, const)
        ref = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.true_divide, "Greater": np.greater,
               "Equal": np.equal, "Less": np.less}[op](a, b)  # fmt: skip
        if op == "Div" and dtype.kind == "i":
            ref = np.trunc(ref).astype(dtype)
        assert np.array_equal(got, ref.astype(got.dtype), equal_nan=got.dtype.kind == "f")


def test_a_different_rank_each_call_is_the_kernels_too() -> None:
    """One prepared step given operands of several ranks (a subgraph's value of unstated rank can be): each rank
    its own shaped constant, the values as numpy broadcasts them, the constant first or second."""
    const = _values(np.dtype(np.float32), (3,))
    second = ConstantOperand("Sub", np.subtract, np.subtract, const, 1)
    first = ConstantOperand("Sub", np.subtract, np.subtract, const, 0)
    for shape in [(3,), (2, 3), (2, 2, 3), (1, 2, 2, 3), (2, 3)]:
        x = _values(np.dtype(np.float32), shape)
        assert np.array_equal(second(x, const), x - const, equal_nan=True)
        assert np.array_equal(first(const, x), const - x, equal_nan=True)
    # Not the prepared value (a caller passing another array): the general way, the same result.
    other = np.full(3, 2.0, np.float32)
    x = np.ones((2, 3), np.float32)
    assert np.array_equal(second(x, other), x - other)


def test_the_kernels_errors_are_raised() -> None:
    """Integer division by a constant zero is refused at run time as the kernel refuses it; operands that do not
    broadcast are a ShapeError of the kernel's wording; the element limit holds."""
    zero = np.array([1, 0, 2], np.int64)
    s = onnxcore.Session(_model("Div", zero, 2, False, np.dtype(np.int64), TP.INT64))
    assert any(isinstance(f, ConstantOperand) for f in _steps(s))
    with pytest.raises(EvaluationError, match="division by zero"):
        s.run(None, {"x": np.ones((2, 3), np.int64)})
    c = np.ones(3, np.float32)
    s = onnxcore.Session(_model("Add", c, 2, False, np.dtype(np.float32), TP.FLOAT))
    with pytest.raises(EvaluationError, match="not broadcastable"):
        s.run(None, {"x": np.ones((2, 4), np.float32)})
    big = np.ones((1, 1000), np.float32)
    s = onnxcore.Session(
        _model("Mul", big, 2, False, np.dtype(np.float32), TP.FLOAT),
        limits=onnxcore.Limits(max_tensor_elements=100_000),
    )
    with pytest.raises(onnxcore.LimitError):
        s.run(None, {"x": np.ones((1000, 1), np.float32)})  # a 1000 x 1000 result


@pytest.mark.parametrize("exponent", [2.0, 3.0, -2.0, 0.5, 1.5, -0.5, 2.7, 1.0, 0.0])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64)])
@pytest.mark.parametrize("shape", [(1, 10), (16, 3), (), (0, 4)])
def test_pow_with_a_constant_exponent_gives_the_kernels_bits(exponent: float, dtype: np.dtype, shape: tuple) -> None:
    y = np.array(exponent, dtype)
    model = _model("Pow", y, len(shape), False, dtype, _TYPES[dtype])
    prepared = onnxcore.Session(model)
    plain = onnxcore.Session(model, disabled_rewrites=["prepare_with_constants"])
    assert any(isinstance(f, PowConstantExponent) for f in _steps(prepared))
    x = np.abs(_values(dtype, shape)) if exponent not in (2.0, 3.0, -2.0) else _values(dtype, shape)
    if x.size > 2:
        x.flat[1] = -np.inf
    (got,) = prepared.run(None, {"x": x})
    (want,) = plain.run(None, {"x": x})
    assert got.dtype == want.dtype == dtype and got.shape == want.shape == shape
    assert np.array_equal(got, want, equal_nan=True)


def test_pow_of_an_integer_base_or_exponent_takes_the_kernel() -> None:
    """An integer base with a float exponent, a float base with an integer exponent: the kernel's own routes."""
    model = _model("Pow", np.array(3, np.int64), 2, False, np.dtype(np.int64), TP.INT64)
    (got,) = onnxcore.Session(model).run(None, {"x": np.array([[2, -3]], np.int64)})
    assert got.tolist() == [[8, -27]]
    g = h.make_graph(
        [h.make_node("Pow", ["x", "c"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [None, 2])],
        [h.make_tensor_value_info("y", TP.FLOAT, [None, 2])],
        [nh.from_array(np.array([2], np.int64), "c")],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    x = np.array([[1.5, -2.0]], np.float32)
    (got,) = onnxcore.Session(model).run(None, {"x": x})
    (want,) = onnxcore.Session(model, disabled_rewrites=["prepare_with_constants"]).run(None, {"x": x})
    assert np.array_equal(got, want) and got.tolist() == [[2.25, 4.0]]


def test_fusions_and_lanes_see_the_nodes_before_they_are_prepared() -> None:
    """A Sub by a constant and the Exp after it still fuse into one elementwise step (the rewrite comes last): no
    ConstantOperand is left in that plan."""
    c = _values(np.dtype(np.float32), (4,))
    g = h.make_graph(
        [h.make_node("Sub", ["x", "c"], ["d"]), h.make_node("Exp", ["d"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [None, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, [None, 4])],
        [nh.from_array(c, "c")],
    )
    s = onnxcore.Session(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString())
    assert len(s._plan.steps) == 1 and not isinstance(s._plan.steps[0][0], ConstantOperand)
    x = _values(np.dtype(np.float32), (2, 4))
    (got,) = s.run(None, {"x": x})
    np.testing.assert_allclose(got, np.exp(x - c), rtol=1e-6)


def test_the_plan_passes_the_prepared_constant_itself() -> None:
    """The plan's constant slot holds the very array the step was prepared with, so every run takes the prepared
    way (the kernel, for another array, is not reached)."""

    def general(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise AssertionError("the general way was taken")

    for const_first in (False, True):
        const = _values(np.dtype(np.float32), (10,))
        s = onnxcore.Session(_model("Sub", const, 2, const_first, np.dtype(np.float32), TP.FLOAT))
        (step,) = [f for f in _steps(s) if isinstance(f, ConstantOperand)]
        step._kernel = general  # type: ignore[assignment]
        x = _values(np.dtype(np.float32), (3, 10))
        for _ in range(3):
            (got,) = s.run(None, {"x": x})
        want = const - x if const_first else x - const
        assert np.array_equal(got, want, equal_nan=True)
