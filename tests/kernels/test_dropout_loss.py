"""Dropout and the loss kernels: ONNX 1-3 vectors, onnxruntime differential tests, and the
definitions written out (Dropout's statistics and masks across its versions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from kernels import compare, run_ours, single_node_cases

pytest.importorskip("onnx")  # the oracle run_ours binds versions with (onnx.defs)

OPS = {"Dropout", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}
RNG = np.random.default_rng(53)


@pytest.mark.parametrize("case_dir", single_node_cases(OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7), including the
    seeded training-mode Dropout cases."""
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def dropout(version: int, inputs: list[Any], attrs: dict[str, Any], n_outputs: int, rng: Any = None) -> Any:
    from onnxcore.kernels.registry import KernelContext, lookup

    k = lookup("", "Dropout", version)
    assert k is not None and k.context
    ctx = KernelContext(None, since_version=version, opset_version=version, num_outputs=n_outputs, rng=rng)
    return k.fn(ctx, *inputs, **attrs)


@pytest.mark.parametrize("version", [7, 10, 12, 13, 22])
def test_dropout_inference_identity(version: int) -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y, mask = dropout(version, [x], {}, 2)
    np.testing.assert_array_equal(y, x)
    assert mask.shape == x.shape and bool(np.all(mask))
    assert mask.dtype == (np.float32 if version == 7 else np.bool_)
    assert isinstance(dropout(version, [x], {}, 1), np.ndarray)


def test_dropout_training_seeded_and_statistics() -> None:
    """Seeded: reproducible; kept elements scaled by 1/(1-ratio); about ratio of them dropped."""
    x = np.ones((200, 100), np.float32)
    args = [x, np.array(0.3, np.float32), np.array(True)]
    y1, m1 = dropout(13, args, {"seed": 5}, 2)
    y2, m2 = dropout(13, args, {"seed": 5}, 2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_allclose(y1[m1], 1 / 0.7, rtol=1e-6)
    assert np.all(y1[~m1] == 0)
    assert abs((~m1).mean() - 0.3) < 0.02
    # Unseeded draws come from the session's generator.
    _, m3 = dropout(22, args, {}, 2, rng=np.random.default_rng(0))
    assert abs((~m3).mean() - 0.3) < 0.02
    # ratio 0 or training off: identity
    y4, m4 = dropout(22, [x, np.array(0.0, np.float32), np.array(True)], {"seed": 1}, 2)
    np.testing.assert_array_equal(y4, x)
    assert m4.all()


def test_dropout_bfloat16_training() -> None:
    x = np.ones((50, 40), ml_dtypes.bfloat16)
    y, m = dropout(22, [x, np.array(0.5, np.float32), np.array(True)], {"seed": 0}, 2)
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.astype(np.float32)[m], 2.0)


def test_dropout_legacy_is_test() -> None:
    """Dropout-1/6: is_test=1 is identity; the default is_test=0 drops (mask in the data's type)."""
    x = np.ones((100, 100), np.float32)
    y, m = dropout(6, [x], {"is_test": 1}, 2)
    np.testing.assert_array_equal(y, x)
    y, m = dropout(6, [x], {"ratio": 0.25}, 2, rng=np.random.default_rng(1))
    assert m.dtype == np.float32 and set(np.unique(m)) <= {0.0, 1.0}
    assert abs(1 - m.mean() - 0.25) < 0.03
    np.testing.assert_allclose(y, m / 0.75, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_random_vs_ort(reduction: str) -> None:
    pytest.importorskip("onnxruntime")
    for shape in [(4, 5), (3, 4, 6), (2, 3, 4, 2)]:
        n, c = shape[:2]
        x = RNG.standard_normal(shape).astype(np.float32)
        t = RNG.integers(0, c, size=(n, *shape[2:])).astype(np.int64)
        w = RNG.uniform(0.1, 2, c).astype(np.float32)
        compare("NegativeLogLikelihoodLoss", [x, t], 13, {"reduction": reduction}, rtol=1e-5)
        compare("NegativeLogLikelihoodLoss", [x, t, w], 13, {"reduction": reduction}, rtol=1e-5)
        t2 = t.copy()
        t2.flat[::3] = -1
        compare("NegativeLogLikelihoodLoss", [x, t2.astype(np.int32), w], 13,
                {"reduction": reduction, "ignore_index": -1}, rtol=1e-5)  # fmt: skip


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_softmax_cross_entropy_random_vs_ort(reduction: str) -> None:
    pytest.importorskip("onnxruntime")
    for shape in [(4, 5), (3, 4, 6)]:
        n, c = shape[:2]
        x = RNG.standard_normal(shape).astype(np.float32)
        t = RNG.integers(0, c, size=(n, *shape[2:])).astype(np.int64)
        w = RNG.uniform(0.1, 2, c).astype(np.float32)
        compare("SoftmaxCrossEntropyLoss", [x, t], 13, {"reduction": reduction}, n_outputs=2, rtol=1e-5)
        t[0] = 2
        compare("SoftmaxCrossEntropyLoss", [x, t, w], 13, {"reduction": reduction, "ignore_index": 2},
                n_outputs=2, rtol=1e-5)  # fmt: skip


def test_losses_reject_bad_targets() -> None:
    from onnxcore.errors import EvaluationError, ShapeError

    x = np.zeros((2, 3), np.float32)
    with pytest.raises(EvaluationError):
        run_ours("NegativeLogLikelihoodLoss", [x, np.array([0, 3], np.int64)], 13, {})
    with pytest.raises(ShapeError):
        run_ours("SoftmaxCrossEntropyLoss", [x, np.array([0, 1, 2], np.int64)], 13, {})
    with pytest.raises(EvaluationError):
        run_ours("NegativeLogLikelihoodLoss", [x, np.array([0, 1], np.int64)], 13, {"reduction": "avg"})


@pytest.mark.parametrize("ratio", [-0.5, 1.0, 2.0, float("nan")])
@pytest.mark.parametrize("training", [False, True])
def test_dropout_ratio_outside_the_definitions_range_is_refused(ratio: float, training: bool) -> None:
    # Dropout-12 and later give ratio "value in [0, 1)"; 1 would divide by zero, a negative ratio scale by a
    # negative factor. Refused in inference mode too, where the ratio is unused (onnxruntime agrees).
    from onnxcore.errors import EvaluationError

    x = np.ones((2, 3), np.float32)
    for version in (12, 13, 22):
        with pytest.raises(EvaluationError, match=r"ratio must be in \[0, 1\)"):
            dropout(version, [x, np.array(ratio, np.float32), np.array(training)], {"seed": 0}, 1)
