"""Attention, RotaryEmbedding, SwiGLU, LinearAttention and CausalConvWithState.

Oracles: the ONNX 1-3 node vectors (every single-node case), onnxruntime on random inputs for
Attention-23/24/25 and RotaryEmbedding-23 (masks, causal, GQA/MQA, KV cache, softcap, scale,
qk_matmul_output modes, nonpad_kv_seqlen, sliding windows), and ``onnx.reference`` for SwiGLU-28,
LinearAttention-27 and CausalConvWithState-27 (onnxruntime does not implement opsets 27/28).

Tolerance: rtol 1e-3, atol 1e-7 (the onnx harness's), widened to 2**-6 for bfloat16 outputs as the
onnx runner does: we compute bfloat16 in float32 and round once, the vectors were made rounding every
intermediate step to bfloat16 (our result is within half an ulp of the float64 value, theirs up to 1.3).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import corpus
import ml_dtypes
import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

from onnxcore.kernels import accel
from onnxcore.kernels.registry import KernelContext

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

PREFIXES = ("test_attention", "test_rotary_embedding", "test_swiglu", "test_linear_attention", "test_causal_conv")
CASES = {c.name: c for c in corpus.node_case_dirs() if c.name.startswith(PREFIXES) and "expanded" not in c.name}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector(name: str) -> None:
    out = run_single_node_case(CASES[name])
    assert out is not None, f"{name}: no kernel registered"
    actual, expected = out
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        rtol = 2.0**-6 if np.asarray(e).dtype == ml_dtypes.bfloat16 else 1e-3
        assert_close(a, e, rtol=rtol)


def test_vector_count() -> None:
    assert len([n for n in CASES if n.startswith("test_attention")]) >= 90
    assert len(CASES) >= 130


# ---------------------------------------------------------------------------------------------
# Model building and running (ours straight through the registry)
# ---------------------------------------------------------------------------------------------


def _model(op: str, opset: int, inputs: list[tuple[str, np.ndarray | None]], n_out: int, attrs: dict) -> Any:
    names = [n if v is not None else "" for n, v in inputs]
    while names and names[-1] == "":
        names.pop()
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    vis = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
        for n, v in inputs
        if v is not None
    ]
    out_type = helper.np_dtype_to_tensor_dtype(inputs[0][1].dtype)  # type: ignore[union-attr]
    graph = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info(o, out_type, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _ours(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnxcore.kernels.registry import lookup

    node = model.graph.node[0]
    opset = model.opset_import[0].version
    since = onnx.defs.get_schema(node.op_type, opset, "").since_version
    k = lookup("", node.op_type, since)
    assert k is not None
    attrs = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        attrs[a.name] = v.decode() if isinstance(v, bytes) else v
    args = [feeds[n] if n else None for n in node.input]
    if k.context:
        ctx = KernelContext(
            None,
            since_version=since,
            opset_version=opset,
            num_outputs=len(node.output),
            outputs_requested=[bool(o) for o in node.output],
        )
        out = k.fn(ctx, *args, **attrs)
    else:
        out = k.fn(*args, **attrs)
    out = out if isinstance(out, tuple) else (out,)
    return list(out[: len(node.output)])


def _attention_fn(version: int, n_out: int = 4) -> Any:
    """The Attention kernel of ``version`` as a plain function, for a node declaring ``n_out`` outputs."""
    from onnxcore.kernels.registry import lookup

    k = lookup("", "Attention", version)
    assert k is not None and k.context
    ctx = KernelContext(None, since_version=version, opset_version=version, num_outputs=n_out)
    return functools.partial(k.fn, ctx)


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _reference(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(model).run(None, feeds))


def _compare(
    op: str,
    opset: int,
    inputs: list[tuple[str, np.ndarray | None]],
    n_out: int,
    attrs: dict,
    oracle: Any,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    what: str = "",
) -> None:
    model = _model(op, opset, inputs, n_out, attrs)
    feeds = {n: v for n, v in inputs if v is not None}
    expected = oracle(model, feeds)
    actual = _ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype, f"{what} output {i}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{what} output {i}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(
            a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=f"{what} output {i}"
        )


RNG = np.random.default_rng(20260)


def _f(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Attention against onnxruntime
# ---------------------------------------------------------------------------------------------


def _qkv(rank3: bool, b: int, hq: int, hkv: int, sq: int, skv: int, d: int, dv: int) -> tuple[np.ndarray, ...]:
    if rank3:
        return _f(b, sq, hq * d), _f(b, skv, hkv * d), _f(b, skv, hkv * dv)
    return _f(b, hq, sq, d), _f(b, hkv, skv, d), _f(b, hkv, skv, dv)


@pytest.mark.parametrize("rank3", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
def test_attention_against_onnxruntime(rank3: bool, heads: tuple[int, int]) -> None:
    """Masks (none, bool, float; 2-D and 4-D), causal, KV cache, softcap, scale, all four outputs."""
    hq, hkv = heads
    b, sq, d, dv = 2, 3, 8, 6
    combos = itertools.product([None, "bool", "float", "bool4d"], [0, 1], [0, 4], [0.0, 1.5])
    for mask_kind, causal, past, softcap in combos:
        skv = 5
        total = past + skv
        q, k, v = _qkv(rank3, b, hq, hkv, sq, skv, d, dv)
        mask: np.ndarray | None = None
        if mask_kind == "bool":
            mask = RNG.random((sq, total)) > 0.3
        elif mask_kind == "bool4d":
            mask = RNG.random((b, 1, sq, total)) > 0.3
        elif mask_kind == "float":
            mask = _f(sq, total)
        pk = _f(b, hkv, past, d) if past else None
        pv = _f(b, hkv, past, dv) if past else None
        attrs: dict = {"is_causal": causal}
        if rank3:
            attrs |= {"q_num_heads": hq, "kv_num_heads": hkv}
        if softcap:
            attrs["softcap"] = softcap
        if mask_kind == "float":
            attrs["scale"] = 0.3
        n_out = 3 if past else 1
        inputs = [("Q", q), ("K", k), ("V", v), ("attn_mask", mask), ("past_key", pk), ("past_value", pv)]
        what = f"mask={mask_kind} causal={causal} past={past} softcap={softcap}"
        _compare("Attention", 23, inputs, n_out, attrs, _ort, what=what)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_matmul_output_modes(mode: int) -> None:
    q, k, v = _qkv(False, 2, 4, 2, 3, 5, 8, 8)
    mask = _f(2, 1, 3, 5)
    attrs = {"qk_matmul_output_mode": mode, "softcap": 2.0, "is_causal": 1}
    inputs = [("Q", q), ("K", k), ("V", v), ("attn_mask", mask)]
    model = _model(
        "Attention", 23, inputs[:3] + [("attn_mask", mask), ("past_key", None), ("past_value", None)], 4, attrs
    )
    feeds = {"Q": q, "K": k, "V": v, "attn_mask": mask}
    # onnxruntime returns every output the node names; ours must match all four.
    expected = _ort(model, feeds)
    actual = _ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        if i in (1, 2):
            continue  # present_key/value without a cache: both sides hold K, V
        if mode == 2:
            # onnxruntime writes its causal mask as the lowest finite float; the definition's bias is -inf.
            e = np.where(e <= np.finfo(np.float32).min, -np.inf, e)
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5, err_msg=f"mode {mode} output {i}")


def test_attention_24_nonpad_against_onnxruntime() -> None:
    """External KV cache: nonpad_kv_seqlen pads keys per batch item and shifts the causal frontier."""
    for causal, mask_kind, heads in itertools.product([0, 1], [None, "bool", "float"], [(4, 4), (4, 2)]):
        b, sq, skv, d = 3, 2, 7, 8
        q, k, v = _qkv(False, b, heads[0], heads[1], sq, skv, d, d)
        lens = np.array([7, 4, 2], np.int64)
        mask = None if mask_kind is None else (RNG.random((sq, skv)) > 0.2 if mask_kind == "bool" else _f(sq, skv))
        inputs = [
            ("Q", q),
            ("K", k),
            ("V", v),
            ("attn_mask", mask),
            ("past_key", None),
            ("past_value", None),
            ("nonpad_kv_seqlen", lens),
        ]
        _compare(
            "Attention",
            24,
            inputs,
            1,
            {"is_causal": causal},
            _ort,
            what=f"causal={causal} mask={mask_kind} heads={heads}",
        )


def test_attention_25_window_against_reference() -> None:
    """Sliding windows (version 25); onnxruntime 1.31 does not know them, onnx.reference does."""
    for left, right, causal, past in itertools.product([-1, 0, 2], [-1, 0, 1], [0, 1], [0, 3]):
        if causal and right > 0:
            continue
        q, k, v = _qkv(False, 2, 2, 2, 4, 4, 8, 8)
        pk = _f(2, 2, past, 8) if past else None
        pv = _f(2, 2, past, 8) if past else None
        attrs = {"left_window_size": left, "right_window_size": right, "is_causal": causal}
        inputs = [("Q", q), ("K", k), ("V", v), ("attn_mask", None), ("past_key", pk), ("past_value", pv)]
        _compare(
            "Attention",
            25,
            inputs,
            3 if past else 1,
            attrs,
            _reference,
            what=f"window {left},{right} causal={causal} past={past}",
        )


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_attention_dtypes_against_onnxruntime(dtype: Any) -> None:
    q, k, v = (x.astype(dtype) for x in _qkv(False, 2, 4, 2, 3, 5, 8, 8))
    mask = RNG.random((3, 5)) > 0.3
    # No fully masked row: onnxruntime gives NaN there for float64, the definition (errata) gives 0.
    mask[:, 0] = True
    inputs = [("Q", q), ("K", k), ("V", v), ("attn_mask", mask)]
    tol = 2e-3 if dtype == np.float16 else 1e-10
    _compare("Attention", 23, inputs, 1, {"is_causal": 1}, _ort, rtol=tol, atol=tol)


def test_attention_fully_masked_row_is_zero() -> None:

    q, k, v = _qkv(False, 1, 2, 2, 2, 3, 4, 4)
    mask = np.array([[True, True, True], [False, False, False]])
    y, _, _, probs = _attention_fn(23)(q, k, v, mask, qk_matmul_output_mode=3)
    assert not np.isnan(y).any()
    assert (y[:, :, 1] == 0).all() and (probs[:, :, 1] == 0).all()
    np.testing.assert_allclose(probs[:, :, 0].sum(-1), 1.0, rtol=1e-6)


def test_attention_bfloat16_rounds_once() -> None:
    """bfloat16 computes in float32: the result is float32's rounded to bfloat16."""

    fn = _attention_fn(23)
    q, k, v = _qkv(False, 2, 2, 2, 3, 4, 8, 8)
    qb, kb, vb = (x.astype(ml_dtypes.bfloat16) for x in (q, k, v))
    y = fn(qb, kb, vb, is_causal=1)[0]
    y32 = fn(*(x.astype(np.float32) for x in (qb, kb, vb)), is_causal=1)[0]
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), y32.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_attention_errors() -> None:
    from onnxcore.errors import OnnxCoreError

    fn = _attention_fn(23)
    q, k, v = _qkv(True, 1, 4, 2, 3, 5, 8, 8)
    with pytest.raises(OnnxCoreError):
        fn(q, k, v)  # 3-D without head counts
    with pytest.raises(OnnxCoreError):
        fn(q, k, v, q_num_heads=3, kv_num_heads=2)
    q4, k4, v4 = _qkv(False, 1, 3, 2, 3, 5, 8, 8)
    with pytest.raises(OnnxCoreError):
        fn(q4, k4, v4)  # 3 query heads over 2 kv heads
    q4, k4, v4 = _qkv(False, 1, 2, 2, 3, 5, 8, 8)
    with pytest.raises(OnnxCoreError):
        fn(q4, k4, v4, None, _f(1, 2, 2, 8))  # past_key without past_value
    with pytest.raises(OnnxCoreError):
        fn(q4, k4, v4, np.ones((3, 4), bool))  # mask shorter than the keys: refused before version 24
    with pytest.raises(OnnxCoreError):
        _attention_fn(25)(q4, k4, v4, q_num_heads=2, kv_num_heads=2)


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding against onnxruntime
# ---------------------------------------------------------------------------------------------


def test_rotary_embedding_against_onnxruntime() -> None:
    for rank3, interleaved, rot, with_pos in itertools.product([False, True], [0, 1], [0, 4], [False, True]):
        b, h, s, d = 2, 3, 5, 8
        x = _f(b, s, h * d) if rank3 else _f(b, h, s, d)
        half = (rot or d) // 2
        if with_pos:
            cos, sin = _f(11, half), _f(11, half)
            pos: np.ndarray | None = RNG.integers(0, 11, (b, s)).astype(np.int64)
        else:
            cos, sin = _f(b, s, half), _f(b, s, half)
            pos = None
        attrs: dict = {"interleaved": interleaved}
        if rot:
            attrs["rotary_embedding_dim"] = rot
        if rank3:
            attrs["num_heads"] = h
        inputs = [("X", x), ("cos_cache", cos), ("sin_cache", sin), ("position_ids", pos)]
        _compare(
            "RotaryEmbedding",
            23,
            inputs,
            1,
            attrs,
            _ort,
            what=f"rank3={rank3} interleaved={interleaved} rot={rot} pos={with_pos}",
        )


def test_attention_past_key_and_value_of_different_lengths_are_refused() -> None:
    # A numpy matmul ValueError inside the kernel before (found by the differential fuzz against onnxruntime).
    from onnxcore.errors import ShapeError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "Attention", 23).fn
    ctx = KernelContext(None, since_version=23, opset_version=23, num_outputs=3)
    q, k, v = _f(2, 3, 4, 8), _f(2, 3, 2, 8), _f(2, 3, 2, 8)
    with pytest.raises(ShapeError, match=r"past_key \(2, 3, 8, 8\) and past_value \(2, 3, 3, 8\) differ in length"):
        fn(ctx, q, k, v, None, _f(2, 3, 8, 8), _f(2, 3, 3, 8))
    y, pk, pv = fn(ctx, q, k, v, None, _f(2, 3, 8, 8), _f(2, 3, 8, 8))
    assert y.shape == (2, 3, 4, 8) and pk.shape == pv.shape == (2, 3, 10, 8)


def test_rotary_embedding_caches_of_different_shapes_are_refused() -> None:
    # The definition gives cos_cache and sin_cache one shape; found by the differential fuzz against onnxruntime
    # (which refuses): a (50, 4) cosine and a (5, 4) sine cache ran while the positions stayed below 5.
    from onnxcore.errors import ShapeError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "RotaryEmbedding", 23).fn
    x, pos = _f(2, 4, 3, 8), RNG.integers(0, 5, (2, 3)).astype(np.int64)
    with pytest.raises(ShapeError, match=r"cos_cache \(50, 4\) and sin_cache \(5, 4\) differ"):
        fn(x, _f(50, 4), _f(5, 4), pos)
    assert fn(x, _f(5, 4), _f(5, 4), pos).shape == x.shape


def test_rotary_embedding_caches_of_one_batch_row_broadcast() -> None:
    # torch's dynamo exporter at opset 23 writes caches of shape (1, seq, rot/2) for a batch of any size. The
    # definition's reference algorithm multiplies with numpy's broadcasting, so they broadcast (onnxruntime 1.23
    # refuses a batch above 1: "expected to have the same shape as input 'x'"); the oracle is onnx.reference.
    from onnxcore.errors import ShapeError
    from onnxcore.kernels.registry import lookup

    for rank3 in (False, True):
        b, h, s, d = 3, 2, 5, 8
        x = _f(b, s, h * d) if rank3 else _f(b, h, s, d)
        inputs = [("X", x), ("cos_cache", _f(1, s, d // 2)), ("sin_cache", _f(1, s, d // 2))]
        attrs = {"num_heads": h} if rank3 else {}
        _compare("RotaryEmbedding", 23, inputs, 1, attrs, _reference, what=f"rank3={rank3}")
    fn = lookup("", "RotaryEmbedding", 23).fn
    with pytest.raises(ShapeError, match=r"caches give \(2, 5, 4\)"):
        fn(_f(3, 2, 5, 8), _f(2, 5, 4), _f(2, 5, 4))  # a batch of 2 rows for 3 items does not broadcast


def test_rotary_embedding_float16() -> None:
    x = _f(1, 2, 4, 8, dtype=np.float16)
    cos, sin = _f(6, 4, dtype=np.float16), _f(6, 4, dtype=np.float16)
    pos = np.array([[0, 5, 2, 3]], np.int64)
    inputs = [("X", x), ("cos_cache", cos), ("sin_cache", sin), ("position_ids", pos)]
    _compare("RotaryEmbedding", 23, inputs, 1, {}, _ort, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------------------------------------
# Opset 27/28 operators against onnx.reference (onnxruntime lacks them)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.0, 0.4])
def test_swiglu_against_reference(alpha: float) -> None:
    a, b = _f(3, 7) * 4, _f(3, 7)
    _compare("SwiGLU", 28, [("A", a), ("B", b)], 1, {"alpha": alpha}, _reference, rtol=1e-5, atol=1e-6)
    # And the closed form in float64.
    from onnxcore.kernels.registry import lookup

    y = lookup("", "SwiGLU", 28).fn(a.astype(np.float64), b.astype(np.float64), alpha=alpha)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(y, a64 / (1 + np.exp(-alpha * a64)) * b64, rtol=1e-12)


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_against_reference(rule: str) -> None:
    for (hq, hkv), per_key, with_past, beta_one in itertools.product(
        [(4, 4), (4, 2), (3, 1)], [False, True], [False, True], [False, True]
    ):
        b, t, dk, dv = 2, 5, 4, 3
        q = _f(b, t, hq * dk)
        kk = _f(b, t, hkv, dk)
        k = (kk / np.linalg.norm(kk, axis=-1, keepdims=True)).reshape(b, t, hkv * dk).astype(np.float32)
        v = _f(b, t, hkv * dv)
        past = _f(b, hkv, dk, dv) if with_past else None
        decay = None
        beta = None
        if rule in ("gated", "gated_delta"):
            decay = -np.abs(_f(b, t, hkv * dk if per_key else hkv)) * 0.3
        if rule in ("delta", "gated_delta"):
            beta = 1 / (1 + np.exp(-_f(b, t, 1 if beta_one else hkv)))
        attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule}
        inputs = [("query", q), ("key", k), ("value", v), ("past_state", past), ("decay", decay), ("beta", beta)]
        _compare(
            "LinearAttention", 27, inputs, 2, attrs, _reference, rtol=1e-4, atol=1e-5, what=f"{rule} heads={hq},{hkv}"
        )


def test_linear_attention_decode_matches_prefill() -> None:
    """Running T steps at once equals T single-step calls threading the state."""
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "LinearAttention", 27).fn
    b, t, h, dk, dv = 1, 4, 2, 4, 4
    q, k, v = _f(b, t, h * dk), _f(b, t, h * dk) * 0.3, _f(b, t, h * dv)
    decay, beta = -np.abs(_f(b, t, h)), np.full((b, t, h), 0.5, np.float32)
    y_all, s_all = fn(q, k, v, None, decay, beta, q_num_heads=h, kv_num_heads=h)
    state = None
    ys = []
    for i in range(t):
        sl = slice(i, i + 1)
        y, state = fn(q[:, sl], k[:, sl], v[:, sl], state, decay[:, sl], beta[:, sl], q_num_heads=h, kv_num_heads=h)
        ys.append(y)
    np.testing.assert_allclose(np.concatenate(ys, axis=1), y_all, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, s_all, rtol=1e-5, atol=1e-6)


def test_causal_conv_with_state_against_reference() -> None:
    for k, act, with_bias, with_past, length in itertools.product(
        [1, 3, 4], ["none", "silu"], [False, True], [False, True], [1, 6]
    ):
        b, c = 2, 3
        x = _f(b, c, length)
        w = _f(c, 1, k)
        bias = _f(c) if with_bias else None
        past = _f(b, c, k - 1) if with_past else None
        inputs = [("input", x), ("weight", w), ("bias", bias), ("past_state", past)]
        _compare(
            "CausalConvWithState",
            27,
            inputs,
            2,
            {"activation": act},
            _reference,
            rtol=1e-5,
            atol=1e-6,
            what=f"k={k} {act} L={length}",
        )


def test_causal_conv_matches_conv() -> None:
    """Streaming in two pieces equals one call (the carried state is exact)."""
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "CausalConvWithState", 27).fn
    x, w, bias = _f(2, 4, 9), _f(4, 1, 3), _f(4)
    y_all, s_all = fn(x, w, bias)
    y1, s1 = fn(x[:, :, :5], w, bias)
    y2, s2 = fn(x[:, :, 5:], w, bias, s1)
    np.testing.assert_allclose(np.concatenate([y1, y2], axis=2), y_all, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(s2, s_all)
    # Against a direct depthwise causal convolution written as sums.
    xp = np.concatenate([np.zeros((2, 4, 2), np.float32), x], axis=2)
    direct = sum(xp[:, :, j : j + 9] * w[None, :, 0, j, None] for j in range(3)) + bias[None, :, None]
    np.testing.assert_allclose(y_all, direct, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("precision", [1, 10, 11])
def test_attention_softmax_precision_against_onnxruntime(precision: int) -> None:
    q, k, v = (x.astype(np.float16) for x in _qkv(False, 1, 2, 2, 3, 4, 8, 8))
    inputs = [("Q", q), ("K", k), ("V", v)]
    _compare("Attention", 23, inputs, 1, {"softmax_precision": precision, "is_causal": 1}, _ort, rtol=2e-3, atol=2e-3)


def test_attention_empty_keys() -> None:
    """No keys at all: every query row is fully masked, so Y is zeros (not NaN, not an error)."""

    q, k, v = _f(1, 2, 3, 4), _f(1, 2, 0, 4), _f(1, 2, 0, 5)
    y, pk, pv, qk = _attention_fn(23)(q, k, v, is_causal=1)
    assert y.shape == (1, 2, 3, 5) and not y.any()
    assert pk.shape == (1, 2, 0, 4) and pv.shape == (1, 2, 0, 5) and qk.shape == (1, 2, 3, 0)


def test_attention_skips_unrequested_qk_output() -> None:
    """A node naming only Y (or Y and the cache) gets no qk_matmul_output (it would cost a copy)."""
    q, k, v = _qkv(False, 1, 2, 2, 3, 4, 8, 8)
    assert len(_attention_fn(23, n_out=1)(q, k, v)) == 3
    full = _attention_fn(23, n_out=4)(q, k, v)
    assert len(full) == 4 and full[3].shape == (1, 2, 3, 4)
    # (the same computation on the numpy path, both taken there: with the accelerator on, the softmax of the node
    # with qk_matmul_output may use compiled row passes whose exp and sums round otherwise on some CPUs; and Y alone
    # is the small loop's, within rounding)
    with accel.use(False):
        full_numpy = _attention_fn(23, n_out=4)(q, k, v)
        np.testing.assert_array_equal(_attention_fn(23, n_out=1)(q, k, v)[0], full_numpy[0])
    np.testing.assert_allclose(full_numpy[0], full[0], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(_attention_fn(23, n_out=1)(q, k, v)[0], full[0], rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("precision", [10, 16])
def test_attention_narrow_softmax_precision(precision: int) -> None:
    """FLOAT16/BFLOAT16 softmax precision: the weights are those types' values (rounded once each way)."""
    q, k, v = _qkv(False, 1, 2, 2, 3, 4, 8, 8)
    fn = _attention_fn(23)
    narrow = np.float16 if precision == 10 else ml_dtypes.bfloat16
    probs = fn(q, k, v, softmax_precision=precision, qk_matmul_output_mode=3)[3]
    exact = fn(q, k, v, qk_matmul_output_mode=3)[3]
    assert (probs.astype(narrow).astype(np.float32) == probs).all()
    np.testing.assert_allclose(probs, exact, rtol=2.0**-7, atol=1e-3)


# ---------------------------------------------------------------------------------------------
# The accelerator's paths of Attention's softmax and RotaryEmbedding against the numpy paths
# ---------------------------------------------------------------------------------------------

needs_accel = pytest.mark.skipif(
    not accel.available(),
    reason="the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)",
)


@needs_accel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_softmax_compiled_rows_match_numpy(dtype: Any) -> None:
    # A causal bool mask with a query row that attends nothing (zeros, not NaN), a NaN score (its row NaN), an
    # infinite score (its row NaN, as x - max(x) makes it): the compiled row passes and numpy agree on every such
    # row, and elsewhere within the type's rounding of a row's sum.
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "Attention", 23).fn
    ctx = KernelContext(None, since_version=23, opset_version=23, num_outputs=1)
    b, h, s, d = 2, 4, 9, 8
    q, k, v = (_f(b, h, s, d, dtype=dtype) for _ in range(3))
    mask = np.tril(np.ones((s, s), bool))[None, None].repeat(b, 0)
    mask[1, 0, 3] = False  # row 3 of batch item 1 attends nothing
    q[0, 1, 2, 0] = np.nan
    q[1, 2, 5] = np.inf
    got = {}
    for on in (False, True):
        with accel.use(on), np.errstate(invalid="ignore"):
            got[on] = fn(ctx, q, k, v, mask, is_causal=0)[0]
    a, c = got[False], got[True]
    assert np.array_equal(np.isnan(a), np.isnan(c))
    assert np.isnan(a[0, 1, 2]).all() and not np.isnan(a[0, 1, 3]).any()
    assert (a[1, :, 3] == 0).all() and (c[1, :, 3] == 0).all()
    assert np.isnan(a[1, 2, 5]).all()
    ok = ~np.isnan(a)
    np.testing.assert_allclose(c[ok], a[ok], rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7)


@needs_accel
@pytest.mark.parametrize("case", ["4d", "3d", "interleaved", "partial", "positions", "one_row"])
def test_rotary_embedding_compiled_is_numpy_bit_for_bit(case: str) -> None:
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "RotaryEmbedding", 23).fn
    b, h, s, d = 2, 3, 5, 8
    x = _f(b, s, h * d) if case == "3d" else _f(b, h, s, d)
    half = (4 if case == "partial" else d) // 2
    args: list[Any] = [x, _f(b, s, half), _f(b, s, half)]
    kw: dict[str, Any] = {"num_heads": h} if case == "3d" else {}
    if case == "interleaved":
        kw["interleaved"] = 1
    if case == "partial":
        kw["rotary_embedding_dim"] = 4
    if case == "positions":
        args = [x, _f(11, half), _f(11, half), RNG.integers(0, 11, (b, s)).astype(np.int64)]
    if case == "one_row":
        args = [x, _f(1, s, half), _f(1, s, half)]
    with accel.use(False):
        want = fn(*args, **kw)
    with accel.use(True):
        got = fn(*args, **kw)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@needs_accel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rank3", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
def test_small_attention_compiled_loop_matches_numpy(
    dtype: Any, rank3: bool, heads: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoder step's Attention (few query rows) runs as one compiled loop (attention._attention_compiled):
    masks (bool, float, 2-D and 4-D, a row attending nothing), causal with a cache, scale, grouped heads, against
    the numpy path within the type's rounding, and the loop was taken; with a NaN score it hands back to numpy."""
    import onnxcore.kernels.attention as att

    calls: list[bool] = []
    real = att._attention_compiled

    def spy(*a: Any) -> Any:
        y = real(*a)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(att, "_attention_compiled", spy)
    hq, hkv = heads
    b, d, dv = 2, 8, 6
    fn = _attention_fn(23, n_out=3)
    for mask_kind, causal, sq, past in itertools.product(
        [None, "bool", "float", "bool4d", "dead"], [0, 1], [1, 3], [0, 5]
    ):
        skv = sq
        total = past + skv
        q, k, v = (a.astype(dtype) for a in _qkv(rank3, b, hq, hkv, sq, skv, d, dv))
        mask: np.ndarray | None = None
        if mask_kind == "bool":
            mask = RNG.random((sq, total)) > 0.3
        elif mask_kind in ("bool4d", "dead"):
            mask = RNG.random((b, 1, sq, total)) > 0.3
            if mask_kind == "dead":
                mask[1, 0, sq - 1] = False  # a query row that attends nothing: zeros
        elif mask_kind == "float":
            mask = _f(sq, total, dtype=dtype)
        pk = _f(b, hkv, past, d, dtype=dtype) if past else None
        pv = _f(b, hkv, past, dv, dtype=dtype) if past else None
        kw: dict[str, Any] = {"is_causal": causal, "scale": 0.3}
        if rank3:
            kw |= {"q_num_heads": hq, "kv_num_heads": hkv}
        calls.clear()
        with accel.use(True):
            got = fn(q, k, v, mask, pk, pv, **kw)
        assert calls == [True], (mask_kind, causal, sq, past)
        with accel.use(False):
            want = fn(q, k, v, mask, pk, pv, **kw)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-6)
        if mask_kind == "dead":
            y4 = got[0] if not rank3 else got[0].reshape(b, sq, hq, dv).transpose(0, 2, 1, 3)
            assert (y4[1, :, sq - 1] == 0).all()
    # A NaN score: the loop gives up, and the numpy path decides the row (NaN), as without the accelerator.
    q, k, v = (a.astype(dtype) for a in _qkv(False, 1, hq, hkv, 2, 4, d, dv))
    q[0, 0, 1, 0] = np.nan
    calls.clear()
    with accel.use(True), np.errstate(invalid="ignore"):
        y = fn(q, k, v)[0]
    assert calls == [False]
    assert np.isnan(y[0, 0, 1]).all() and not np.isnan(y[0, 0, 0]).any()
