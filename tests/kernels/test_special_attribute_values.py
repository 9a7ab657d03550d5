"""NaN and infinite float attributes, per operator family (Clause 11.3 leaves special values open).

Position (listed in onnxcore.conformance.divergences): where the attribute enters a formula the node is
evaluated and the value spreads as IEEE 754 says, compared here with numpy's IEEE arithmetic on the
operator's formula and with onnxruntime where it evaluates the node; where a float sizes an output or
a count, a non-finite value is refused with EvaluationError before anything is allocated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import onnxcore
from onnxcore import kernels

NAN, INF = math.nan, math.inf
X = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]], dtype=np.float32)


def _ort(op: str, opset: int, x: np.ndarray, **attrs: object) -> np.ndarray | None:
    """onnxruntime's output for the single node, or None when it refuses the node."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x"], ["y"], **attrs)
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, {"x": x})[0]
    except Exception:
        return None


def _one(out: object) -> np.ndarray:
    return np.asarray(out[0] if isinstance(out, tuple | list) else out)


SELU_A = np.float32(1.67326319217681884765625)
# (op, opset, attributes, the formula in numpy's IEEE arithmetic)
FORMULAS = [
    ("LeakyRelu", 16, {"alpha": NAN}, lambda x: np.where(x < 0, np.float32(NAN) * x, x)),
    ("LeakyRelu", 16, {"alpha": INF}, lambda x: np.where(x < 0, np.float32(INF) * x, x)),
    ("Elu", 6, {"alpha": -INF}, lambda x: np.where(x < 0, np.float32(-INF) * (np.exp(x) - 1), x)),
    ("ThresholdedRelu", 10, {"alpha": NAN}, lambda x: np.zeros_like(x)),  # x > NaN is false everywhere
    ("ThresholdedRelu", 10, {"alpha": -INF}, lambda x: x),
    ("HardSigmoid", 6, {"alpha": NAN, "beta": 0.5}, lambda x: np.full_like(x, NAN)),
    ("Shrink", 9, {"lambd": INF}, lambda x: np.zeros_like(x)),
    ("Selu", 6, {"gamma": INF}, lambda x: np.float32(INF) * np.where(x <= 0, SELU_A * (np.exp(x) - 1), x)),
]  # fmt: skip


@pytest.mark.parametrize(("op", "opset", "attrs", "formula"), FORMULAS, ids=lambda v: str(v)[:24])
def test_a_special_value_in_a_formula_spreads_as_ieee_says(op: str, opset: int, attrs: dict, formula: object) -> None:
    with np.errstate(all="ignore"):
        want = formula(X)  # type: ignore[operator]
        got = _one(kernels.run(op, opset, X, **attrs))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-5)
    ref = _ort(op, opset, X, **attrs)
    if ref is not None:  # onnxruntime agrees where it evaluates the node at all
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


@pytest.mark.parametrize("eps", [NAN, INF])
def test_a_special_epsilon_spreads(eps: float) -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    y = _one(kernels.run("LayerNormalization", 17, x, np.ones(3, np.float32), np.zeros(3, np.float32), epsilon=eps))
    # (x - mean) / sqrt(var + eps): NaN everywhere for NaN, 0 (finite / inf) for inf.
    if math.isnan(eps):
        assert np.isnan(y).all()
    else:
        np.testing.assert_array_equal(y, np.zeros_like(y))


def test_a_seed_is_the_bits_of_its_float() -> None:
    a = _one(kernels.run("RandomUniform", 1, shape=[4], seed=NAN))
    b = _one(kernels.run("RandomUniform", 1, shape=[4], seed=NAN))
    c = _one(kernels.run("RandomUniform", 1, shape=[4], seed=INF))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_nan_or_infinite_normal_scale_spreads() -> None:
    assert np.isnan(_one(kernels.run("RandomNormal", 1, shape=[3], scale=NAN))).all()
    assert np.isinf(_one(kernels.run("RandomNormal", 1, shape=[3], scale=INF))).all()


def test_a_negative_normal_scale_is_refused() -> None:
    with pytest.raises(onnxcore.EvaluationError, match="below zero"):
        kernels.run("RandomNormal", 1, shape=[3], scale=-1.0)
    with pytest.raises(onnxcore.EvaluationError, match="below zero"):
        kernels.run("RandomNormalLike", 1, X, scale=-1.0)


XI = np.ones((1, 1, 2, 2), np.float32)


@pytest.mark.parametrize("bad", [NAN, INF, -INF, 0.0])
@pytest.mark.parametrize(
    "call",
    [
        lambda s: kernels.run("Upsample", 7, XI, scales=[1.0, 1.0, s, 2.0]),
        lambda s: kernels.run("Upsample", 1, XI, height_scale=s, width_scale=2.0),
        lambda s: kernels.run("Upsample", 9, XI, np.array([1, 1, s, 2], np.float32)),
        lambda s: kernels.run("Resize", 10, XI, np.array([1, 1, s, 2], np.float32)),
        lambda s: kernels.run("Resize", 13, XI, None, np.array([1, 1, s, 2], np.float32)),
        lambda s: kernels.run("Resize", 19, XI, None, np.array([1, 1, s, 2], np.float32)),
    ],
    ids=["Upsample-7", "Upsample-1", "Upsample-9", "Resize-10", "Resize-13", "Resize-19"],
)
def test_a_scale_that_sizes_an_output_must_be_finite(call: object, bad: float) -> None:
    # Before: ValueError / OverflowError from int(NaN) / int(inf) escaped kernels.run.
    with pytest.raises(onnxcore.EvaluationError, match="finite and positive"):
        call(bad)  # type: ignore[operator]


def test_a_roi_that_gives_no_size_is_refused() -> None:
    roi = np.array([0, 0, 0, 0, 1, 1, NAN, 1], np.float32)
    with pytest.raises(onnxcore.EvaluationError, match="no output size"):
        kernels.run(
            "Resize",
            13,
            XI,
            roi,
            np.array([1, 1, 2, 2], np.float32),
            coordinate_transformation_mode="tf_crop_and_resize",
        )


@pytest.mark.parametrize(("start", "limit", "delta"), [(0.0, INF, 1.0), (0.0, 10.0, NAN), (NAN, 1.0, 1.0)])
def test_range_with_special_bounds_is_refused(start: float, limit: float, delta: float) -> None:
    f = np.float32
    with pytest.raises(onnxcore.EvaluationError):
        kernels.run("Range", 11, np.array(start, f), np.array(limit, f), np.array(delta, f))


@pytest.mark.parametrize("ratio", [NAN, INF, -INF])
def test_dropout_ratio_must_be_a_probability(ratio: float) -> None:
    # The definition gives ratio the range [0, 1) whether or not it is used; onnxruntime refuses it too.
    for training in (True, False):
        with pytest.raises(onnxcore.EvaluationError, match="ratio"):
            kernels.run("Dropout", 12, XI, np.array(ratio, np.float32), np.array(training), seed=1)
