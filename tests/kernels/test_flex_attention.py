"""FlexAttention-1 (``ai.onnx.preview``) against the ONNX 1-3 vectors and ``onnx.reference``.

Oracles: every single-node ``test_flexattention_*`` vector, through the kernel registry
(``node_harness``, whose GRAPH attributes run through the Session) and through
:class:`onnxcore.Session` (``run_case``); on random inputs beyond the vectors,
``onnx.reference.ReferenceEvaluator`` (onnxruntime has no FlexAttention kernel): element types,
GQA, explicit ``scale``, every ``softmax_precision``, score/prob modifier subgraphs, a fully masked
row (NaN, as the function body's Softmax gives).

Tolerances: float32/double rtol 1e-5/1e-12 relative-ish; float16 and bfloat16 wider, because the
reference multiplies in numpy's float16/bfloat16 matmul while we accumulate in float32 and round once
(Clause 11.4), which can move a score by an ulp of the narrow type.
"""

from __future__ import annotations

from typing import Any

import corpus
import ml_dtypes
import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

import onnxcore
from onnxcore.errors import OnnxCoreError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

PREVIEW = "ai.onnx.preview"
CASES = {
    c.name: c for c in corpus.node_case_dirs() if c.name.startswith("test_flexattention") and "expanded" not in c.name
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector(name: str) -> None:
    out = run_single_node_case(CASES[name])
    assert out is not None, f"{name}: no kernel registered"
    actual, expected = out
    assert len(actual) == len(expected) == 1
    assert actual[0].dtype == expected[0].dtype
    assert_close(actual[0], expected[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector_session(name: str) -> None:
    from onnxcore.conformance.runner import run_case

    r = run_case(CASES[name])
    assert r.status == "pass", (r.status, r.detail)


def test_vector_count() -> None:
    assert len(CASES) >= 11


# ---------------------------------------------------------------------------------------------
# Random inputs against onnx.reference
# ---------------------------------------------------------------------------------------------

_NP_TO_TP = {
    np.dtype(np.float32): TP.FLOAT,
    np.dtype(np.float16): TP.FLOAT16,
    np.dtype(np.float64): TP.DOUBLE,
    np.dtype(ml_dtypes.bfloat16): TP.BFLOAT16,
}


def _bias_graph(elem: int, bias: float) -> Any:
    s_in = helper.make_tensor_value_info("scores", elem, ["B", "H", "L", "S"])
    s_out = helper.make_tensor_value_info("scores_out", elem, ["B", "H", "L", "S"])
    init = helper.make_tensor("bias", elem, [], [bias])
    return helper.make_graph(
        [helper.make_node("Add", ["scores", "bias"], ["scores_out"])], "m", [s_in], [s_out], [init]
    )


def _square_graph(elem: int) -> Any:
    p_in = helper.make_tensor_value_info("p", elem, ["B", "H", "L", "S"])
    p_out = helper.make_tensor_value_info("q", elem, ["B", "H", "L", "S"])
    return helper.make_graph([helper.make_node("Mul", ["p", "p"], ["q"])], "sq", [p_in], [p_out])


def _mask_row_graph(elem: int, row: int) -> Any:
    """score_mod writing -inf over every score of query row ``row`` (all heads, all batch items)."""
    s_in = helper.make_tensor_value_info("scores", elem, ["B", "H", "L", "S"])
    s_out = helper.make_tensor_value_info("scores_out", elem, ["B", "H", "L", "S"])
    nodes = [
        helper.make_node("Shape", ["scores"], ["shp"]),
        helper.make_node("Gather", ["shp", "i2"], ["L"], axis=0),
        helper.make_node("Range", ["zero", "L", "one"], ["rng"]),
        helper.make_node("Reshape", ["rng", "col"], ["qidx"]),
        helper.make_node("Equal", ["qidx", "row"], ["hit"]),
        helper.make_node("Where", ["hit", "ninf", "scores"], ["scores_out"]),
    ]
    inits = [
        helper.make_tensor("i2", TP.INT64, [], [2]),
        helper.make_tensor("zero", TP.INT64, [], [0]),
        helper.make_tensor("one", TP.INT64, [], [1]),
        helper.make_tensor("col", TP.INT64, [2], [-1, 1]),
        helper.make_tensor("row", TP.INT64, [], [row]),
        helper.make_tensor("ninf", elem, [], [float("-inf")]),
    ]
    return helper.make_graph(nodes, "mask", [s_in], [s_out], inits)


_SHAPES = {
    "Q": ["b", "hq", "l", "e"],
    "K": ["b", "hk", "s", "e"],
    "V": ["b", "hk", "s", "ev"],
    "Y": ["b", "hq", "l", "ev"],
}


def _model(
    dtype: np.dtype[Any], attrs: dict[str, Any], graphs: dict[str, Any] | None = None, *, ranked: bool = True
) -> bytes:
    elem = _NP_TO_TP[np.dtype(dtype)]
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain=PREVIEW, **attrs)
    for name, g in (graphs or {}).items():
        node.attribute.append(helper.make_attribute(name, g))
    ins = [helper.make_tensor_value_info(n, elem, _SHAPES[n] if ranked else None) for n in ("Q", "K", "V")]
    out = helper.make_tensor_value_info("Y", elem, _SHAPES["Y"] if ranked else None)
    g = helper.make_graph([node], "flex", ins, [out])
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid(PREVIEW, 1)], ir_version=13
    )
    return m.SerializeToString()


def _both(model: bytes, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    (ours,) = onnxcore.Session(model).run(None, feeds)
    (theirs,) = ReferenceEvaluator(onnx.load_from_string(model)).run(None, feeds)
    return np.asarray(ours), np.asarray(theirs)


def _inputs(rng: np.random.Generator, dtype: Any, b: int, hq: int, hkv: int, lq: int, s: int, e: int, ev: int) -> Any:
    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32).astype(dtype)

    return {"Q": r(b, hq, lq, e), "K": r(b, hkv, s, e), "V": r(b, hkv, s, ev)}


_TOL = {
    np.dtype(np.float64): 1e-12,
    np.dtype(np.float32): 1e-5,
    np.dtype(np.float16): 4e-3,
    np.dtype(ml_dtypes.bfloat16): 3e-2,
}


_SP = {TP.FLOAT: np.float32, TP.FLOAT16: np.float16, TP.DOUBLE: np.float64, TP.BFLOAT16: ml_dtypes.bfloat16}


def _close(ours: np.ndarray, theirs: np.ndarray, dtype: Any, softmax_precision: int | None = None) -> None:
    assert ours.dtype == theirs.dtype == np.dtype(dtype)
    assert ours.shape == theirs.shape
    # The result is as precise as the narrower of the input type and the softmax type.
    tol = _TOL[np.dtype(dtype)]
    if softmax_precision is not None:
        tol = max(tol, _TOL[np.dtype(_SP[softmax_precision])])
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize(
    ("hq", "hkv", "attrs"),
    [
        (4, 4, {}),
        (6, 2, {}),
        (4, 1, {"scale": 0.3}),
        (2, 2, {"softmax_precision": TP.DOUBLE}),
        (4, 2, {"softmax_precision": TP.FLOAT16}),
        (2, 1, {"softmax_precision": TP.BFLOAT16}),
        (2, 2, {"softmax_precision": TP.FLOAT}),
    ],
)
def test_against_reference(dtype: Any, hq: int, hkv: int, attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(hq * 31 + hkv + len(attrs))
    feeds = _inputs(rng, dtype, 2, hq, hkv, 5, 7, 8, 3)
    ours, theirs = _both(_model(np.dtype(dtype), attrs), feeds)
    _close(ours, theirs, dtype, attrs.get("softmax_precision"))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modifiers_against_reference(dtype: Any) -> None:
    rng = np.random.default_rng(7)
    feeds = _inputs(rng, dtype, 1, 4, 2, 3, 5, 4, 6)
    graphs = {"score_mod": _bias_graph(TP.FLOAT, -0.75), "prob_mod": _square_graph(TP.FLOAT)}
    ours, theirs = _both(_model(np.dtype(dtype), {"scale": 0.5}, graphs), feeds)
    _close(ours, theirs, dtype)


def test_modifier_in_double_softmax() -> None:
    # The modifier sees the softmax type (DOUBLE here), not the input type.
    rng = np.random.default_rng(3)
    feeds = _inputs(rng, np.float32, 2, 2, 2, 4, 4, 4, 4)
    graphs = {"score_mod": _bias_graph(TP.DOUBLE, 1.5)}
    ours, theirs = _both(_model(np.dtype(np.float32), {"softmax_precision": TP.DOUBLE}, graphs), feeds)
    _close(ours, theirs, np.float32)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the reference's -inf - -inf
def test_fully_masked_row_is_nan() -> None:
    rng = np.random.default_rng(11)
    feeds = _inputs(rng, np.float32, 2, 2, 2, 4, 3, 4, 4)
    ours, theirs = _both(_model(np.dtype(np.float32), {}, {"score_mod": _mask_row_graph(TP.FLOAT, 1)}), feeds)
    assert np.isnan(ours[:, :, 1]).all()
    assert not np.isnan(np.delete(ours, 1, axis=2)).any()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_empty_key_sequence() -> None:
    # S = 0: the softmax of an empty row is empty, Y = probs @ V is all zeros (function body semantics).
    rng = np.random.default_rng(5)
    feeds = _inputs(rng, np.float32, 1, 2, 2, 3, 0, 4, 5)
    (y,) = onnxcore.Session(_model(np.dtype(np.float32), {})).run(None, feeds)
    assert y.shape == (1, 2, 3, 5) and y.dtype == np.float32
    assert not y.any()


# ---------------------------------------------------------------------------------------------
# Refused inputs (our errors, never bare exceptions)
# ---------------------------------------------------------------------------------------------


def _bad_shape_graph(elem: int) -> Any:
    s_in = helper.make_tensor_value_info("scores", elem, None)
    s_out = helper.make_tensor_value_info("out", elem, None)
    nodes = [helper.make_node("ReduceSum", ["scores"], ["out"], keepdims=0)]
    return helper.make_graph(nodes, "bad", [s_in], [s_out])


def _cast_graph(elem_in: int, elem_out: int) -> Any:
    s_in = helper.make_tensor_value_info("scores", elem_in, None)
    s_out = helper.make_tensor_value_info("out", elem_out, None)
    return helper.make_graph([helper.make_node("Cast", ["scores"], ["out"], to=elem_out)], "cast", [s_in], [s_out])


@pytest.mark.parametrize(
    ("shapes", "attrs", "graphs"),
    [
        (((2, 3, 4), (2, 3, 4), (2, 3, 4)), {}, None),  # rank 3
        (((1, 3, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {}, None),  # 3 heads, 2 kv heads
        (((1, 2, 2, 4), (1, 2, 5, 3), (1, 2, 5, 4)), {}, None),  # head sizes differ
        (((1, 2, 2, 4), (1, 2, 5, 4), (1, 2, 6, 4)), {}, None),  # K/V sequence lengths differ
        (((2, 2, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {}, None),  # batch sizes differ
        (((1, 2, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {"softmax_precision": TP.INT32}, None),
        (((1, 2, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {}, {"score_mod": "bad"}),
        (((1, 2, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {}, {"prob_mod": "bad"}),
        (((1, 2, 2, 4), (1, 2, 5, 4), (1, 2, 5, 4)), {"softmax_precision": TP.DOUBLE}, {"score_mod": "float"}),
    ],
)
def test_refused(shapes: Any, attrs: dict[str, Any], graphs: dict[str, str] | None) -> None:
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip("QKV", shapes)}
    built = {}
    for name, kind in (graphs or {}).items():
        # "bad": wrong output shape; "float": returns FLOAT where the softmax type is DOUBLE.
        built[name] = _bad_shape_graph(TP.FLOAT) if kind == "bad" else _cast_graph(TP.DOUBLE, TP.FLOAT)
    # Unranked declarations and no validation, so that the kernel (not the feed check) meets the input.
    model = _model(np.dtype(np.float32), attrs, built, ranked=False)
    with pytest.raises(OnnxCoreError, match="FlexAttention: "):  # the kernel's own refusal
        onnxcore.Session(model, check=False).run(None, feeds)
