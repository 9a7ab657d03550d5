"""Random single-node cases of onnxruntime's operators implemented here, against onnxruntime: the operator, the
rank and extents, the element type, which optional inputs are given, which optional outputs are named, and the
attributes are drawn by hypothesis (a seeded, bounded search; the fixed cases are in the other modules)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.contrib import check

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

_SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _tol(dt: Any) -> dict[str, float]:
    return {"rtol": 5e-3, "atol": 5e-3} if dt == np.float16 else {"rtol": 1e-4, "atol": 1e-5}


@st.composite
def _case(draw: Any) -> tuple[str, list[Any], Any, dict[str, Any], str, int]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dt = draw(st.sampled_from([np.float32, np.float16]))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0]))

    def data(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(dt)

    op = draw(
        st.sampled_from(
            [
                "Gelu",
                "FastGelu",
                "BiasGelu",
                "QuickGelu",
                "SkipLayerNormalization",
                "SkipSimplifiedLayerNormalization",
                "SimplifiedLayerNormalization",
                "LayerNormalization",
                "EmbedLayerNormalization",
            ]
        )
    )
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    flag = st.booleans()
    if op in ("Gelu", "QuickGelu"):
        attrs = {"alpha": draw(st.floats(-3, 3, width=32))} if op == "QuickGelu" and draw(flag) else {}
        return op, [data(*shape)], 1, attrs, "com.microsoft", 17
    if op in ("FastGelu", "BiasGelu"):
        bias = [data(shape[-1])] if op == "BiasGelu" or draw(flag) else []
        return op, [data(*shape), *bias], 1, {}, "com.microsoft", 17
    if op.startswith("Skip"):
        b, s, h = (draw(st.integers(1, 4)) for _ in range(3))
        x_shape = (b, s, h) if draw(flag) else (b * s, h)
        skip = data(*x_shape) if draw(flag) or len(x_shape) == 2 else data(s, h)
        ins: list[Any] = [data(*x_shape), skip, data(h)]
        if op == "SkipLayerNormalization":
            ins += [data(h) if draw(flag) else None, data(h) if draw(flag) else None]
        else:
            ins += [data(h) if draw(flag) else None]
        while ins[-1] is None:
            ins.pop()
        outs = [True] + [draw(flag) for _ in range(3)]
        return op, ins, outs, {"epsilon": draw(st.sampled_from([1e-12, 1e-5, 1e-3]))}, "com.microsoft", 17
    if op == "EmbedLayerNormalization":
        b, s, h, v = (draw(st.integers(1, 5)) for _ in range(4))
        seg = draw(flag)
        ins = [
            rng.integers(0, v, (b, s)).astype(np.int32),
            rng.integers(0, 2, (b, s)).astype(np.int32) if seg else None,
        ]
        ins += [data(v, h), data(s + draw(st.integers(0, 3)), h), data(2, h) if seg else None, data(h), data(h)]
        if draw(flag):
            ins.append(rng.integers(0, 2, (b, s)).astype(np.int32))
        # (mask_index always named: onnxruntime's shape inference reads output 1 and refuses a node without it;
        # test_contrib_norm.py has that case)
        return op, ins, [True, True, draw(flag)], {}, "com.microsoft", 17
    axis = draw(st.integers(-rank, rank - 1))
    a = axis % rank
    attrs = {"axis": axis, "epsilon": draw(st.sampled_from([1e-5, 1e-3]))}
    if op == "SimplifiedLayerNormalization":
        return op, [data(*shape), data(*shape[a:])], [True, draw(flag)], attrs, "", draw(st.sampled_from([13, 21]))
    ins = [data(*shape), data(*shape[a:])] + ([data(*shape[a:])] if draw(flag) else [])
    return op, ins, [True, draw(flag), draw(flag)], attrs, "", draw(st.sampled_from([1, 13, 16]))


@_SETTINGS
@given(_case())
def test_random_cases_agree_with_onnxruntime(case: tuple[str, list[Any], Any, dict[str, Any], str, int]) -> None:
    op, inputs, outputs, attrs, domain, opset = case
    dt = next(a.dtype for a in inputs if a is not None and a.dtype.kind == "f")
    check(op, inputs, outputs, attrs, domain=domain, opset=opset, **_tol(dt))
