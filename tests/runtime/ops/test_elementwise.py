"""Elementwise and activation kernels: ONNX 1-3 vectors, and differential tests against onnxruntime."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from . import assert_same, compare, run_ours, single_node_cases

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


@pytest.pytest_param if False else None  # placeholder removed below
def _unused() -> None:  # pragma: no cover
    pass
