"""com.microsoft activations and fused steps against onnxruntime: Gelu, FastGelu, BiasGelu, QuickGelu, CDist over
shapes, types and optional inputs; BiasAdd and BiasSoftmax (onnxruntime has them for CUDA only) against the
formula of onnxruntime's documentation, computed by scipy."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.contrib import both, check, node_model, run_ort_model
from onnxcore.errors import OnnxCoreError
from onnxcore.kernels import run

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

MS = "com.microsoft"
TYPES = [np.float32, np.float16]
SHAPES = [(5,), (2, 7), (2, 3, 8), (1, 2, 3, 16), (0, 4)]


def _data(shape: tuple[int, ...], dt: type, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dt)


def _tol(dt: type) -> dict[str, float]:
    return {"rtol": 2e-3, "atol": 2e-3} if dt == np.float16 else {"rtol": 1e-5, "atol": 2e-6}


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gelu(shape: tuple[int, ...], dt: type) -> None:
    check("Gelu", [_data(shape, dt)], **_tol(dt))


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_fast_gelu(shape: tuple[int, ...], dt: type, with_bias: bool) -> None:
    ins = [_data(shape, dt)] + ([_data(shape[-1:], dt, 1)] if with_bias else [])
    check("FastGelu", ins, **_tol(dt))


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_bias_gelu(shape: tuple[int, ...], dt: type) -> None:
    check("BiasGelu", [_data(shape, dt), _data(shape[-1:], dt, 1)], **_tol(dt))


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("alpha", [None, 1.0, -0.5, 2.5])
def test_quick_gelu(shape: tuple[int, ...], dt: type, alpha: float | None) -> None:
    check("QuickGelu", [_data(shape, dt)], 1, {} if alpha is None else {"alpha": alpha}, **_tol(dt))


@pytest.mark.usefixtures("accel_path")
def test_special_values() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30], np.float32)
    for op in ("Gelu", "FastGelu", "QuickGelu"):
        check(op, [x])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("metric", [None, "sqeuclidean", "euclidean"])
@pytest.mark.parametrize("n,m,k", [(3, 5, 4), (1, 1, 1), (7, 2, 16), (0, 3, 2)])
def test_cdist(dt: type, metric: str | None, n: int, m: int, k: int) -> None:
    a, b = _data((n, k), dt), _data((m, k), dt, 1)
    check("CDist", [a, b], 1, {} if metric is None else {"metric": metric}, rtol=1e-4, atol=1e-4)


def test_bias_shapes_are_refused_as_onnxruntime_does() -> None:
    x, bad = _data((2, 3, 4), np.float32), _data((3, 4), np.float32)
    for op in ("FastGelu", "BiasGelu"):
        with pytest.raises(OnnxCoreError, match="1-D"):
            run(op, 1, x, bad, domain=MS)
        model = node_model(op, [x, bad], 1)
        with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error class)
            sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            sess.run(None, {"x0": x, "x1": bad})
    with pytest.raises(OnnxCoreError, match="metric"):
        run("CDist", 1, x[0], x[0], domain=MS, metric="cityblock")
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        run_ort_model(node_model("CDist", [x[0], x[0]], 1, {"metric": "cityblock"}), {"x0": x[0], "x1": x[0]})


# ---- CUDA-only in onnxruntime: the documentation's formula ----------------------------------------------------

scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_bias_add(dt: type) -> None:
    x, bias, skip = _data((2, 3, 8), dt), _data((8,), dt, 1), _data((2, 3, 8), dt, 2)
    (got,) = run("BiasAdd", 1, x, bias, skip, domain=MS)
    want = (x.astype(np.float64) + bias.astype(np.float64) + skip.astype(np.float64)).astype(dt)
    assert got.dtype == dt
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **_tol(dt))


@pytest.mark.parametrize(
    "data_shape,bias_shape,axis,inner",
    [
        ((2, 3, 4, 5), (2, 1, 1, 5), 3, 1),  # an attention mask [B, 1, 1, S] over scores [B, N, S, S]
        ((2, 3, 4, 5), (1, 3, 4, 5), 3, 0),
        ((2, 3, 4, 5), (3, 4, 5), 3, 0),  # trailing alignment
        ((2, 3, 4, 5), (2, 5), 3, 1),  # leading alignment: (2, 5) -> (2, 1, 1, 5)
        ((2, 3, 4, 5), (2, 1, 4, 5), 2, 1),  # softmax over the last two axes together
        ((4, 6), (1, 6), 1, 0),
        ((2, 3, 4), (2, 3, 4), -1, 0),
    ],
)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bias_softmax(
    data_shape: tuple[int, ...], bias_shape: tuple[int, ...], axis: int, inner: int, dt: type
) -> None:
    data, bias = _data(data_shape, dt), _data(bias_shape, dt, 1)
    (got,) = run("BiasSoftmax", 1, data, bias, domain=MS, axis=axis, is_inner_broadcast=inner)
    r = len(data_shape)
    a = axis % r
    if len(bias_shape) < r and inner:
        lead = len(bias_shape) - (r - a)
        bias = bias.reshape(bias_shape[:lead] + (1,) * (r - len(bias_shape)) + bias_shape[lead:])
    want = scipy_special.softmax(data.astype(np.float64) + bias, axis=tuple(range(a, r)))
    assert got.dtype == dt and got.shape == data.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_cdist_of_a_set_with_itself(metric: str) -> None:
    # Equal points: onnxruntime's float32 product form leaves a rounding residue of about eps * |a|^2 on the
    # diagonal; onnxcore's float64 product gives exactly 0 (never negative or NaN). Off it, both agree to that
    # residue.
    a = (_data((6, 8), np.float32) * 100).astype(np.float32)
    ours, theirs = both("CDist", [a, a.copy()], 1, {"metric": metric})
    assert np.all(np.diag(ours[0]) == 0)
    residue = 1e-6 * float(np.max(np.sum(a.astype(np.float64) ** 2, axis=1)))
    atol = residue if metric == "sqeuclidean" else np.sqrt(residue)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=atol)
    np.testing.assert_allclose(np.diag(theirs[0]), 0, atol=atol)
