"""onnxruntime's normalizations against onnxruntime: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
EmbedLayerNormalization (com.microsoft), and the default-domain extensions SimplifiedLayerNormalization-1 and
LayerNormalization-1 -- over shapes, types, attributes, every optional input and output."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernels.contrib import check, feeds_of, node_model, run_ours_model
from onnxcore.errors import OnnxCoreError
from onnxcore.kernels import run

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

MS = "com.microsoft"
TYPES = [np.float32, np.float16]


def _data(shape: tuple[int, ...], dt: type, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5).astype(dt)


def _tol(dt: type) -> dict[str, float]:
    return {"rtol": 4e-3, "atol": 4e-3} if dt == np.float16 else {"rtol": 1e-4, "atol": 1e-5}


# ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ---------------------------------------------------

SKIP_SHAPES = [
    ((2, 3, 8), (2, 3, 8)),
    ((2, 3, 8), (3, 8)),
    ((2, 3, 8), (1, 3, 8)),
    ((4, 16), (4, 16)),
    ((1, 1, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shapes", SKIP_SHAPES, ids=str)
@pytest.mark.parametrize("beta,bias", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("epsilon", [None, 1e-5])
def test_skip_layer_normalization(dt: type, shapes: tuple, beta: bool, bias: bool, epsilon: float | None) -> None:
    x_shape, skip_shape = shapes
    h = x_shape[-1]
    ins: list[np.ndarray | None] = [_data(x_shape, dt), _data(skip_shape, dt, 1), _data((h,), dt, 2)]
    ins += [_data((h,), dt, 3) if beta else None, _data((h,), dt, 4) if bias else None]
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    check("SkipLayerNormalization", ins, 4, attrs, **_tol(dt))


@pytest.mark.parametrize("outputs", [[True], [True, False, False, True], [True, True, True], [True, False, True]])
def test_skip_layer_normalization_optional_outputs(outputs: list[bool]) -> None:
    ins = [_data((2, 3, 8), np.float32), _data((2, 3, 8), np.float32, 1), _data((8,), np.float32, 2)]
    check("SkipLayerNormalization", ins, outputs, {"epsilon": 1e-5})
    check("SkipSimplifiedLayerNormalization", ins, outputs, {"epsilon": 1e-5})


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("shapes", SKIP_SHAPES, ids=str)
@pytest.mark.parametrize("bias", [False, True])
def test_skip_simplified_layer_normalization(dt: type, shapes: tuple, bias: bool) -> None:
    x_shape, skip_shape = shapes
    h = x_shape[-1]
    ins: list[np.ndarray | None] = [_data(x_shape, dt), _data(skip_shape, dt, 1), _data((h,), dt, 2)]
    if bias:
        ins.append(_data((h,), dt, 4))
    check("SkipSimplifiedLayerNormalization", ins, 4, {"epsilon": 1e-6}, **_tol(dt))


def test_skip_shapes_are_refused() -> None:
    x = _data((2, 3, 8), np.float32)
    with pytest.raises(OnnxCoreError, match="hidden size"):
        run("SkipLayerNormalization", 1, x, x, _data((7,), np.float32), domain=MS)
    with pytest.raises(OnnxCoreError, match="skip"):
        run("SkipLayerNormalization", 1, x, _data((2, 4, 8), np.float32), _data((8,), np.float32), domain=MS)


# ---- EmbedLayerNormalization -------------------------------------------------------------------------------------


def _ids(shape: tuple[int, ...], hi: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, hi, shape).astype(np.int32)


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("b,s", [(2, 5), (1, 1), (3, 7)])
@pytest.mark.parametrize("segment", [False, True])
@pytest.mark.parametrize("mask", [None, "prefix", "holes"])
def test_embed_layer_normalization(dt: type, b: int, s: int, segment: bool, mask: str | None) -> None:
    h = 8
    ins: list[np.ndarray | None] = [
        _ids((b, s), 11, 0),
        _ids((b, s), 2, 1) if segment else None,
        _data((11, h), dt, 2),
        _data((9, h), dt, 3),
        _data((2, h), dt, 4) if segment else None,
        _data((h,), dt, 5),
        _data((h,), dt, 6),
    ]
    if mask == "prefix":
        ins.append((np.arange(s)[None, :] < np.arange(1, b + 1)[:, None]).astype(np.int32))
    elif mask == "holes":
        ins.append(_ids((b, s), 2, 7))
    check("EmbedLayerNormalization", ins, 3, {"epsilon": 1e-5}, **_tol(dt))


@pytest.mark.parametrize("position_ids", ["shared", "per_batch"])
def test_embed_layer_normalization_position_ids(position_ids: str) -> None:
    b, s, h = 2, 5, 8
    pos = _ids((1, s), 9, 8) if position_ids == "shared" else _ids((b, s), 9, 8)
    ins = [_ids((b, s), 11, 0), _ids((b, s), 2, 1), _data((11, h), np.float32, 2), _data((9, h), np.float32, 3)]
    ins += [_data((2, h), np.float32, 4), _data((h,), np.float32, 5), _data((h,), np.float32, 6), None, pos]
    check("EmbedLayerNormalization", ins, 3)
    check("EmbedLayerNormalization", ins, [True, False, True])


def test_embed_out_of_range_is_refused() -> None:
    ids = np.array([[0, 11]], np.int32)
    with pytest.raises(OnnxCoreError, match="out of range"):
        run(
            "EmbedLayerNormalization", 1, ids, None, _data((11, 4), np.float32), _data((9, 4), np.float32), None,
            _data((4,), np.float32), _data((4,), np.float32), domain=MS,
        )  # fmt: skip


# ---- the default-domain extensions -------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("shape,axis", [((2, 3, 8), -1), ((2, 3, 8), 1), ((4, 16), 0), ((5,), 0)])
@pytest.mark.parametrize("opset", [13, 17, 21])
def test_simplified_layer_normalization(dt: type, shape: tuple[int, ...], axis: int, opset: int) -> None:
    a = axis % len(shape)
    x, scale = _data(shape, dt), _data(shape[a:], dt, 1)
    check(
        "SimplifiedLayerNormalization",
        [x, scale],
        2,
        {"axis": axis, "epsilon": 1e-5},
        domain="",
        opset=opset,
        **_tol(dt),
    )


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("shape,axis", [((2, 3, 8), -1), ((2, 3, 8), 1), ((4, 16), 0)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_layer_normalization_1(dt: type, shape: tuple[int, ...], axis: int, with_bias: bool) -> None:
    # A model importing ai.onnx 13 binds onnxruntime's LayerNormalization-1 (ONNX 1-2 defines it from 17).
    a = axis % len(shape)
    ins = [_data(shape, dt), _data(shape[a:], dt, 1)] + ([_data(shape[a:], dt, 2)] if with_bias else [])
    check("LayerNormalization", ins, 3, {"axis": axis}, domain="", opset=13, **_tol(dt))
    check("LayerNormalization", ins, [True, False, True], {"axis": axis}, domain="", opset=16, **_tol(dt))


@pytest.mark.parametrize("mask_index_type", [0, 1])
@pytest.mark.parametrize("with_mask", [False, True])
def test_embed_layer_normalization_mask_index_type(mask_index_type: int, with_mask: bool) -> None:
    # mask_index_type is a hint for shape inference: onnxruntime computes mask_index the same either way
    b, s, h = 2, 5, 8
    ins: list[np.ndarray | None] = [
        _ids((b, s), 11, 0),
        None,
        _data((11, h), np.float32, 2),
        _data((9, h), np.float32, 3),
    ]
    ins += [None, _data((h,), np.float32, 5), _data((h,), np.float32, 6)]
    if with_mask:
        ins.append(np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], np.int32))
    check("EmbedLayerNormalization", ins, 3, {"mask_index_type": mask_index_type})


def test_embed_layer_normalization_with_one_output() -> None:
    # onnxruntime refuses the node (its shape inference reads output 1, which the definition makes optional);
    # onnxcore evaluates it, to what the node with every output named gives.
    b, s, h = 2, 4, 8
    ins: list[np.ndarray | None] = [
        _ids((b, s), 11, 0),
        None,
        _data((11, h), np.float32, 2),
        _data((9, h), np.float32, 3),
    ]
    ins += [None, _data((h,), np.float32, 5), _data((h,), np.float32, 6)]
    with pytest.raises(Exception, match="out of range"):
        check("EmbedLayerNormalization", ins, 1)
    full = check("EmbedLayerNormalization", ins, 3)
    model = node_model("EmbedLayerNormalization", ins, 1, out_types=[(1, 3)])
    (alone,) = run_ours_model(model, feeds_of(ins))
    np.testing.assert_array_equal(alone, full[0])
