"""com.microsoft Attention, MultiHeadAttention, GroupQueryAttention and RotaryEmbedding against onnxruntime.

Every case builds a one-node model, runs it with onnxruntime 1.31 (CPU, graph optimisations off) and with an
onnxcore ``Session`` on the same bytes, over shapes, attributes, dtypes (float32 everywhere, float16 where
onnxruntime's CPU kernels take it), the optional inputs and the KV cache (a prompt, then several decoder
steps fed each other's present outputs).

Every case also checks our shape rule against onnxruntime's output shapes. bfloat16, which onnxruntime's CPU
kernels do not take, is checked against onnxruntime's float32 result on the same values.

Tolerances: float32 rtol 1e-4, atol 1e-5 (both sides accumulate in float32, in different orders);
float16 rtol 2e-3, atol 2e-3 (we compute in float32 and round once; onnxruntime rounds some intermediates to
float16, so results may differ by a few float16 ulps); bfloat16 rtol/atol 2**-7 (one rounding).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import onnxcore
from onnxcore.build import helper as oc_helper
from onnxcore.infer import infer_shapes, infer_types, shape_ops
from onnxcore.infer.shape_core import SHAPE_RULES, ShapeContext
from onnxcore.io import decode
from onnxcore.proto import ModelProto

shape_ops.load_all()  # inference imports rule families as it meets their operators; these tests read the table whole

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402

MS = "com.microsoft"
F32 = np.float32
F16 = np.float16


def _tol(dtype: Any) -> dict[str, float]:
    return {"rtol": 2e-3, "atol": 2e-3} if np.dtype(dtype) == np.float16 else {"rtol": 1e-4, "atol": 1e-5}


# The rank of each output (graph outputs must state one, Clause 7.1); RotaryEmbedding's is its input's.
_OUT_RANKS = {"Attention": (3, 5), "MultiHeadAttention": (3, 4, 4, 4), "GroupQueryAttention": (3, 4, 4, 4)}


def node_model(op: str, inputs: list[np.ndarray | None], n_out: int, attrs: dict[str, Any]) -> bytes:
    """A one-node com.microsoft model (inputs x<i>, None left out; outputs y<k> of rank from _OUT_RANKS)."""
    names: list[str] = []
    vis = []
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        names.append(f"x{i}")
        vis.append(helper.make_tensor_value_info(f"x{i}", helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)))
    while names and not names[-1]:
        names.pop()
    outs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op, names, outs, domain=MS, **attrs)
    # Every output of these operators has the element type of the first input.
    elem = helper.np_dtype_to_tensor_dtype(next(a for a in inputs if a is not None).dtype)
    ranks = _OUT_RANKS.get(op) or (inputs[0].ndim,)  # type: ignore[union-attr]
    ovis = [helper.make_tensor_value_info(o, elem, [f"{o}_{d}" for d in range(r)]) for o, r in zip(outs, ranks)]
    graph = helper.make_graph([node], "g", vis, ovis)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def _ort_run(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return list(ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds))


def both(
    op: str, inputs: list[np.ndarray | None], n_out: int = 1, **attrs: Any
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(ours, onnxruntime's) outputs of one node with ``inputs`` (None: left out) and ``attrs``."""
    model = node_model(op, inputs, n_out, attrs)
    feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
    expected = _ort_run(model, feeds)
    actual = onnxcore.Session(model).run(None, feeds)
    # Shape inference over the model binds the node to onnxruntime's definition and applies our rule: every
    # fixed extent it infers is onnxruntime's (an input-valued extent stays the declared dimension variable).
    inferred = infer_shapes(decode(ModelProto, model))
    assert not inferred.unruled and not inferred.incompatibilities and not inferred.mismatches, inferred
    for k, e in enumerate(expected):
        got = inferred.shape(f"y{k}")
        assert got is not None and len(got) == e.ndim, f"{op} inferred y{k}: {got} vs {e.shape}"
        assert all(not isinstance(d, int) or d == n for d, n in zip(got, e.shape)), f"{op} y{k}: {got} != {e.shape}"
    return list(actual), expected


def rule_shapes(op: str, inputs: list[np.ndarray | None], n_out: int, attrs: dict[str, Any]) -> list[Any]:
    """The output shapes our com.microsoft shape rule gives for ``inputs`` (their int values known, as constants)."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    node = oc_helper.make_node(op, names, [f"y{k}" for k in range(n_out)], domain=MS, **attrs)
    shapes = [None if a is None else tuple(a.shape) for a in inputs]
    values = [a if a is not None and a.dtype.kind == "i" else None for a in inputs]
    ctx = ShapeContext(node, 1, shapes, values, {a.name: a for a in node.attribute}, None)
    return list(SHAPE_RULES[(MS, op)](ctx))


def check(op: str, inputs: list[np.ndarray | None], n_out: int = 1, **attrs: Any) -> list[np.ndarray]:
    """Assert ours equals onnxruntime's on every output, and our shape rule gives its shapes; return ours."""
    actual, expected = both(op, inputs, n_out, **attrs)
    for k, (e, r) in enumerate(zip(expected, rule_shapes(op, inputs, n_out, attrs))):
        assert r == e.shape, f"{op} shape rule, output {k}: {r} != onnxruntime's {e.shape}"
    assert len(actual) == len(expected) == n_out
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype, f"{op} output {k}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{op} output {k}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a.astype(F32), e.astype(F32), **_tol(e.dtype), err_msg=f"{op} output {k}")
    return actual


def rnd(rng: np.random.Generator, *shape: int, dtype: Any = F32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize(("batch", "seq", "hidden", "heads"), [(1, 1, 8, 1), (2, 5, 16, 4), (3, 7, 24, 2)])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_shapes(dtype: Any, batch: int, seq: int, hidden: int, heads: int, unidirectional: int) -> None:
    rng = np.random.default_rng(batch * 100 + seq)
    x, b = rnd(rng, batch, seq, hidden, dtype=dtype), rnd(rng, 3 * hidden, dtype=dtype)
    w = (rnd(rng, hidden, 3 * hidden) / np.sqrt(hidden)).astype(dtype)  # as trained projections are scaled
    check("Attention", [x, w, b], 2, num_heads=heads, unidirectional=unidirectional)


def _masks(batch: int, seq: int, total: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    lens = rng.integers(1, total + 1, batch).astype(np.int32)
    starts = rng.integers(0, 2, batch).astype(np.int32)
    raw2 = (rng.random((batch, total)) > 0.3).astype(np.int32)
    raw2[:, 0] = 1
    raw3 = (rng.random((batch, seq, total)) > 0.3).astype(np.int32)
    raw3[:, 0, :] = 0  # a query row with every key masked
    # (3B + 2): onnxruntime's CPU kernels read the first B values as key lengths.
    cumulative = np.concatenate([lens, rng.integers(0, total, 2 * batch + 2)]).astype(np.int32)
    return {"1d": lens, "1d_start": np.concatenate([lens, starts]), "3b+2": cumulative, "2d": raw2, "3d": raw3}


@pytest.mark.parametrize("form", ["1d", "1d_start", "3b+2", "2d", "3d"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_mask_forms(form: str, unidirectional: int) -> None:
    rng = np.random.default_rng(7)
    batch, seq, hidden = 3, 4, 16
    x, w, b = rnd(rng, batch, seq, hidden), rnd(rng, hidden, 3 * hidden), rnd(rng, 3 * hidden)
    mask = _masks(batch, seq, seq, rng)[form]
    check("Attention", [x, w, b, mask], 1, num_heads=2, unidirectional=unidirectional)


def test_attention_mask_filter_scale_bias_and_sizes() -> None:
    rng = np.random.default_rng(3)
    batch, seq, hidden = 2, 3, 8
    x = rnd(rng, batch, seq, hidden)
    mask = np.array([2, 3], np.int32)
    w, b = rnd(rng, hidden, 3 * hidden), rnd(rng, 3 * hidden)
    check("Attention", [x, w, b, mask], 1, num_heads=2, mask_filter_value=-50.0, scale=0.3)
    ab = rnd(rng, 1, 2, seq, seq)
    check("Attention", [x, w, b, None, None, ab], 1, num_heads=2)
    check("Attention", [x, w, b, mask, None, rnd(rng, batch, 1, seq, seq)], 1, num_heads=2, unidirectional=1)
    # qkv_hidden_sizes: V narrower than Q/K.
    w2, b2 = rnd(rng, hidden, 8 + 8 + 4), rnd(rng, 20)
    check("Attention", [x, w2, b2], 1, num_heads=2, qkv_hidden_sizes=[8, 8, 4])


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_past_present_decoding(unidirectional: int) -> None:
    """A prompt, then three single-token steps, each fed the previous step's present."""
    rng = np.random.default_rng(11)
    batch, hidden, heads = 2, 16, 4
    w, b = rnd(rng, hidden, 3 * hidden), rnd(rng, 3 * hidden)
    x = rnd(rng, batch, 3, hidden)
    _, present = check("Attention", [x, w, b], 2, num_heads=heads, unidirectional=unidirectional)
    for step in range(3):
        x = rnd(rng, batch, 1 + (step == 1), hidden)
        total = present.shape[3] + x.shape[1]
        mask = np.ones((batch, total), np.int32)
        mask[0, 0] = 0
        _, present = check("Attention", [x, w, b, mask, present], 2, num_heads=heads, unidirectional=unidirectional)
        assert present.shape == (2, batch, heads, total, hidden // heads)


def test_attention_refusals() -> None:
    rng = np.random.default_rng(0)
    x, w, b = rnd(rng, 1, 2, 8), rnd(rng, 8, 24), rnd(rng, 24)
    with pytest.raises(onnxcore.errors.EvaluationError, match="do_rotary"):
        onnxcore.kernels.run("Attention", 1, x, w, b, domain=MS, num_heads=2, do_rotary=1)
    with pytest.raises(onnxcore.errors.ShapeError, match="mask"):
        onnxcore.kernels.run("Attention", 1, x, w, b, np.ones((1, 1, 4, 4), np.int32), domain=MS, num_heads=2)
    w2 = rnd(rng, 8, 20)
    with pytest.raises(onnxcore.errors.EvaluationError, match="present needs"):
        onnxcore.kernels.run("Attention", 1, x, w2, rnd(rng, 20), domain=MS, num_heads=2, qkv_hidden_sizes=[8, 8, 4])
    with pytest.raises(onnxcore.errors.ShapeError, match="multiples of num_heads"):
        onnxcore.kernels.run("Attention", 1, x, w, b, domain=MS, num_heads=3)


# ---------------------------------------------------------------------------------------------
# MultiHeadAttention
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize(
    ("batch", "seq", "kv_seq", "hidden", "heads"), [(1, 1, 1, 8, 2), (2, 4, 6, 16, 4), (2, 5, 5, 8, 1)]
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_mha_shapes(dtype: Any, batch: int, seq: int, kv_seq: int, hidden: int, heads: int, with_bias: bool) -> None:
    rng = np.random.default_rng(seq * 10 + kv_seq)
    q, k, v = (
        rnd(rng, batch, seq, hidden, dtype=dtype),
        rnd(rng, batch, kv_seq, hidden, dtype=dtype),
        rnd(rng, batch, kv_seq, hidden, dtype=dtype),
    )
    bias = rnd(rng, 3 * hidden, dtype=dtype) if with_bias else None
    check("MultiHeadAttention", [q, k, v, bias], 3, num_heads=heads)


@pytest.mark.parametrize("form", ["1d", "3b+2", "2d", "3d"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_mha_key_padding_mask(form: str, unidirectional: int) -> None:
    rng = np.random.default_rng(5)
    batch, seq, hidden = 3, 4, 16
    q, k, v = rnd(rng, batch, seq, hidden), rnd(rng, batch, seq, hidden), rnd(rng, batch, seq, hidden)
    mask = _masks(batch, seq, seq, rng)[form]
    check("MultiHeadAttention", [q, k, v, rnd(rng, 3 * hidden), mask], 1, num_heads=4, unidirectional=unidirectional)


def test_mha_attention_bias_scale_filter() -> None:
    rng = np.random.default_rng(9)
    batch, seq, kv, hidden = 2, 3, 5, 8
    q, k, v = rnd(rng, batch, seq, hidden), rnd(rng, batch, kv, hidden), rnd(rng, batch, kv, hidden)
    for ab in (rnd(rng, batch, 2, seq, kv), rnd(rng, 1, 1, seq, kv), rnd(rng, batch, 1, seq, kv)):
        check("MultiHeadAttention", [q, k, v, None, None, ab], 1, num_heads=2)
    mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], np.int32)
    check("MultiHeadAttention", [q, k, v, None, mask], 1, num_heads=2, scale=0.5, mask_filter_value=-7.0)


def test_mha_value_width_differs() -> None:
    rng = np.random.default_rng(4)
    q, k, v = rnd(rng, 2, 3, 8), rnd(rng, 2, 4, 8), rnd(rng, 2, 4, 12)
    check("MultiHeadAttention", [q, k, v, rnd(rng, 28)], 1, num_heads=2)


@pytest.mark.parametrize("with_bias", [False, True])
def test_mha_cross_attention_bnsh(with_bias: bool) -> None:
    """Cross attention reusing projected keys/values given as (B, N, L, H); presents are those."""
    rng = np.random.default_rng(12)
    batch, seq, kv, heads, head = 2, 3, 6, 2, 4
    q = rnd(rng, batch, seq, heads * head)
    k, v = rnd(rng, batch, heads, kv, head), rnd(rng, batch, heads, kv, head)
    bias = rnd(rng, 3 * heads * head) if with_bias else None
    mask = np.array([6, 3], np.int32)
    check("MultiHeadAttention", [q, k, v, bias, mask], 3, num_heads=heads)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_mha_decoding_with_past(dtype: Any, unidirectional: int) -> None:
    rng = np.random.default_rng(21)
    batch, hidden, heads = 2, 16, 2
    bias = rnd(rng, 3 * hidden, dtype=dtype)
    x = rnd(rng, batch, 4, hidden, dtype=dtype)
    _, pk, pv = check("MultiHeadAttention", [x, x, x, bias], 3, num_heads=heads, unidirectional=unidirectional)
    for step in range(3):
        x = rnd(rng, batch, 1 + step % 2, hidden, dtype=dtype)
        total = pk.shape[2] + x.shape[1]
        mask = np.ones((batch, total), np.int32)
        mask[1, :2] = 0
        ab = rnd(rng, 1, heads, x.shape[1], total, dtype=dtype)
        _, pk, pv = check(
            "MultiHeadAttention", [x, x, x, bias, mask, ab, pk, pv], 3, num_heads=heads, unidirectional=unidirectional
        )
        assert pk.shape == (batch, heads, total, hidden // heads)


def test_mha_shared_buffer_decoding() -> None:
    """past_sequence_length: past and present share one buffer; new rows land after the past ones."""
    rng = np.random.default_rng(23)
    batch, hidden, heads, cap = 2, 16, 2, 8
    bias = rnd(rng, 3 * hidden)
    pk, pv = rnd(rng, batch, heads, cap, hidden // heads), rnd(rng, batch, heads, cap, hidden // heads)
    past = 0
    for step, seq in enumerate((3, 1, 2, 1)):
        x = rnd(rng, batch, seq, hidden)
        ab = rnd(rng, batch, 1, seq, past + seq)
        lens = np.array([past], np.int32)
        inputs = [x, x, x, bias, None, ab, pk, pv, lens]
        _, pk, pv = check("MultiHeadAttention", inputs, 3, num_heads=heads, unidirectional=step % 2)
        assert pk.shape[2] == cap
        past += seq


def test_mha_packed_qkv_and_kv() -> None:
    """Packed QKV / KV (refused by onnxruntime's CPU kernel) equal ours on the same Q, K, V given apart,
    which equal onnxruntime's."""
    rng = np.random.default_rng(14)
    batch, seq, kv, heads, head = 2, 3, 5, 2, 4
    packed = rnd(rng, batch, seq, heads, 3, head)
    q, k, v = (packed[:, :, :, i].reshape(batch, seq, heads * head) for i in range(3))
    separate = check("MultiHeadAttention", [q, k, v], 3, num_heads=heads)
    ours = onnxcore.kernels.run("MultiHeadAttention", 1, packed, domain=MS, outputs=3, num_heads=heads)
    for a, e in zip(ours, separate):
        np.testing.assert_array_equal(a, e)
    assert rule_shapes("MultiHeadAttention", [packed], 3, {"num_heads": heads})[:3] == [e.shape for e in separate]
    q = rnd(rng, batch, seq, heads * head)
    kv_packed = rnd(rng, batch, kv, heads, 2, head)
    k, v = (kv_packed[:, :, :, i].reshape(batch, kv, heads * head) for i in range(2))
    separate = check("MultiHeadAttention", [q, k, v], 3, num_heads=heads, unidirectional=1)
    ours = onnxcore.kernels.run(
        "MultiHeadAttention", 1, q, kv_packed, domain=MS, outputs=3, num_heads=heads, unidirectional=1
    )
    for a, e in zip(ours, separate):
        np.testing.assert_array_equal(a, e)
    assert rule_shapes("MultiHeadAttention", [q, kv_packed], 3, {"num_heads": heads})[:3] == [e.shape for e in separate]


def test_mha_refusals() -> None:
    rng = np.random.default_rng(0)
    x = rnd(rng, 2, 3, 16)
    model = node_model("MultiHeadAttention", [x, x, x], 4, {"num_heads": 2})
    with pytest.raises(onnxcore.errors.EvaluationError, match="qk output is not supported"):
        onnxcore.Session(model).run(None, {"x0": x, "x1": x, "x2": x})
    with pytest.raises(onnxcore.errors.EvaluationError, match="packed"):
        packed = rnd(rng, 1, 2, 2, 3, 4)
        onnxcore.kernels.run(
            "MultiHeadAttention", 1, packed, None, None, rnd(rng, 24), domain=MS, outputs=3, num_heads=2
        )


# ---------------------------------------------------------------------------------------------
# RotaryEmbedding
# ---------------------------------------------------------------------------------------------


def _caches(rng: np.random.Generator, max_len: int, half: int, dtype: Any = F32) -> tuple[np.ndarray, np.ndarray]:
    theta = rng.random((max_len, half)) * 6.0
    return np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("pos_form", ["offset", "per_token"])
def test_rotary_embedding(dtype: Any, interleaved: int, rank: int, pos_form: str) -> None:
    rng = np.random.default_rng(interleaved * 10 + rank)
    batch, seq, heads, head = 2, 3, 3, 8
    x = rnd(rng, batch, seq, heads * head, dtype=dtype) if rank == 3 else rnd(rng, batch, heads, seq, head, dtype=dtype)
    cos, sin = _caches(rng, 16, head // 2, dtype)
    pos = np.array([5], np.int64) if pos_form == "offset" else rng.integers(0, 16, (batch, seq)).astype(np.int64)
    check("RotaryEmbedding", [x, pos, cos, sin], 1, interleaved=interleaved)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_partial_dim(interleaved: int) -> None:
    """rotary_embedding_dim below the head size (with num_heads): the last features pass through."""
    rng = np.random.default_rng(2)
    batch, seq, heads, head, rot = 2, 4, 2, 16, 8
    x = rnd(rng, batch, seq, heads * head)
    cos, sin = _caches(rng, 10, rot // 2)
    pos = rng.integers(0, 10, (batch, seq)).astype(np.int64)
    check("RotaryEmbedding", [x, pos, cos, sin], 1, interleaved=interleaved, rotary_embedding_dim=rot, num_heads=heads)


def test_rotary_embedding_scale_and_packed_batching_change_nothing() -> None:
    rng = np.random.default_rng(6)
    x = rnd(rng, 2, 3, 8)
    cos, sin = _caches(rng, 10, 2)
    pos = np.array([[0, 1, 2], [3, 4, 5]], np.int64)
    check("RotaryEmbedding", [x, pos, cos, sin], 1, scale=2.0)
    check("RotaryEmbedding", [x, pos, cos, sin], 1, is_packed_batching=1)


# ---------------------------------------------------------------------------------------------
# GroupQueryAttention
# ---------------------------------------------------------------------------------------------


def _gqa_inputs(
    rng: np.random.Generator, batch: int, seq: int, heads: int, kv_heads: int, head: int, dtype: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        rnd(rng, batch, seq, heads * head, dtype=dtype),
        rnd(rng, batch, seq, kv_heads * head, dtype=dtype),
        rnd(rng, batch, seq, kv_heads * head, dtype=dtype),
    )


def gqa_attended(inputs: list[np.ndarray | None], attrs: dict[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """(B, 1, S, T) booleans: where GroupQueryAttention attends a key."""
    q, seqlens = inputs[0], inputs[5]
    assert q is not None and seqlens is not None
    sq, total = q.shape[1], shape[3]
    lens = seqlens.astype(np.int64) + 1
    first = inputs[3] is None and sq == total
    pos = np.broadcast_to(np.arange(sq), (len(lens), sq)) if first else (lens - sq)[:, None] + np.arange(sq)
    j = np.arange(total)
    seen = j < lens[:, None, None]
    if attrs.get("causal", 1):
        last = np.minimum(pos, lens[:, None] - 1)[:, :, None]
        seen = seen & (j <= last)
        w = attrs.get("local_window_size", -1)
        if w > 0:
            seen = seen & (j > last - w)
    return np.broadcast_to(seen, (len(lens), sq, total))[:, None]


def _gqa_check(inputs: list[np.ndarray | None], n_out: int = 3, **attrs: Any) -> list[np.ndarray]:
    """Compare GroupQueryAttention outputs: output and presents whole, output_qk where a key is attended.

    output_qk holds, for a key the query does not attend (causal, or past the item's length), whatever
    onnxruntime's buffer held (it varies from run to run); ours holds 0 there.
    """
    actual, expected = both("GroupQueryAttention", inputs, n_out, **attrs)
    for k, (e, r) in enumerate(zip(expected, rule_shapes("GroupQueryAttention", inputs, n_out, attrs))):
        assert r == e.shape, f"GroupQueryAttention shape rule, output {k}: {r} != onnxruntime's {e.shape}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype and a.shape == e.shape, f"output {k}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
        if k == 3:
            seen = gqa_attended(inputs, attrs, a.shape)
            a, e = np.where(seen, a, 0), np.where(seen, e, 0)
        np.testing.assert_allclose(a.astype(F32), e.astype(F32), **_tol(e.dtype), err_msg=f"output {k}")
    return actual


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize(("heads", "kv_heads"), [(2, 2), (4, 2), (4, 1)])
@pytest.mark.parametrize("seq", [1, 5])
def test_gqa_prompt(dtype: Any, heads: int, kv_heads: int, seq: int) -> None:
    rng = np.random.default_rng(heads * 10 + kv_heads + seq)
    batch, head = 2, 8
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, dtype)
    seqlens = np.full(batch, seq - 1, np.int32)
    _gqa_check([q, k, v, None, None, seqlens, np.array(seq, np.int32)], num_heads=heads, kv_num_heads=kv_heads)


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("rotary", [0, 1])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_gqa_decoding_steps(dtype: Any, rotary: int, interleaved: int) -> None:
    """A prompt, then four decoder steps, each fed the previous present_key/present_value."""
    rng = np.random.default_rng(31 + rotary)
    batch, heads, kv_heads, head, prompt = 2, 4, 2, 16, 4
    cos, sin = _caches(rng, 32, head // 2, dtype)
    extra = [cos, sin] if rotary else []
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads, "do_rotary": rotary, "rotary_interleaved": interleaved}
    q, k, v = _gqa_inputs(rng, batch, prompt, heads, kv_heads, head, dtype)
    seqlens = np.full(batch, prompt - 1, np.int32)
    _, pk, pv = _gqa_check([q, k, v, None, None, seqlens, np.array(prompt, np.int32), *extra], **attrs)
    for _ in range(4):
        q, k, v = _gqa_inputs(rng, batch, 1, heads, kv_heads, head, dtype)
        seqlens = seqlens + 1
        total = np.array(seqlens.max() + 1, np.int32)
        _, pk, pv = _gqa_check([q, k, v, pk, pv, seqlens, total, *extra], **attrs)
        assert pk.shape[2] == int(total)


def test_gqa_local_window_softcap_smooth_softmax_scale() -> None:
    rng = np.random.default_rng(41)
    batch, heads, kv_heads, head, seq = 1, 4, 2, 8, 9
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    common = [q, k, v, None, None, np.array([seq - 1], np.int32), np.array(seq, np.int32)]
    base = {"num_heads": heads, "kv_num_heads": kv_heads}
    _gqa_check(common, **base, local_window_size=3)
    _gqa_check(common, **base, softcap=2.0)
    _gqa_check(common, **base, smooth_softmax=1)
    _gqa_check(common, **base, scale=0.2, local_window_size=2, softcap=5.0)


def test_gqa_packed_qkv_and_attention_bias() -> None:
    rng = np.random.default_rng(43)
    batch, heads, kv_heads, head, seq = 2, 4, 2, 8, 3
    packed = rnd(rng, batch, seq, (heads + 2 * kv_heads) * head)
    seqlens = np.full(batch, seq - 1, np.int32)
    tot = np.array(seq, np.int32)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    _gqa_check([packed, None, None, None, None, seqlens, tot], **attrs)
    ab = rnd(rng, batch, 1, seq, seq)
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    _gqa_check([q, k, v, None, None, seqlens, tot, None, None, None, ab], **attrs)


def test_gqa_ragged_batch_decoding() -> None:
    """Batch items of different lengths: each new token lands at its own row of the shared cache."""
    rng = np.random.default_rng(47)
    batch, heads, kv_heads, head, cap = 3, 2, 1, 8, 6
    pk, pv = rnd(rng, batch, kv_heads, cap, head), rnd(rng, batch, kv_heads, cap, head)
    seqlens = np.array([2, 5, 0], np.int32)  # items hold 3, 6 and 1 tokens after this step
    q, k, v = _gqa_inputs(rng, batch, 1, heads, kv_heads, head, F32)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    _gqa_check([q, k, v, pk, pv, seqlens, np.array(6, np.int32)], **attrs)
    # A cache buffer longer than the sequence (past and present sharing one capacity): rows past an item are 0.
    _gqa_check([q, k, v, pk, pv, np.array([2, 3, 0], np.int32), np.array(4, np.int32)], **attrs)


def test_gqa_right_padded_prompt_and_bidirectional() -> None:
    rng = np.random.default_rng(53)
    batch, heads, kv_heads, head, seq = 3, 4, 2, 8, 5
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    seqlens = np.array([4, 1, 2], np.int32)  # items of 5, 2 and 3 tokens, right-padded to 5
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    _gqa_check([q, k, v, None, None, seqlens, np.array(seq, np.int32)], **attrs)
    _gqa_check([q, k, v, None, None, seqlens, np.array(seq, np.int32)], **attrs, causal=0)


@pytest.mark.parametrize("qk_output", [1, 2])
def test_gqa_output_qk(qk_output: int) -> None:
    rng = np.random.default_rng(59)
    batch, heads, kv_heads, head, cap = 2, 4, 2, 8, 8
    q, k, v = _gqa_inputs(rng, batch, 1, heads, kv_heads, head, F32)
    pk, pv = rnd(rng, batch, kv_heads, cap, head), rnd(rng, batch, kv_heads, cap, head)
    common = [q, k, v, pk, pv, np.array([4, 6], np.int32), np.array(7, np.int32)]
    _gqa_check(common, 4, num_heads=heads, kv_num_heads=kv_heads, qk_output=qk_output)
    q, k, v = _gqa_inputs(rng, batch, 3, heads, kv_heads, head, F32)
    ab = rnd(rng, batch, 1, 3, 3)
    prompt = [q, k, v, None, None, np.array([2, 1], np.int32), np.array(3, np.int32), None, None, None, ab]
    _gqa_check(prompt, 4, num_heads=heads, kv_num_heads=kv_heads, qk_output=qk_output, softcap=1.5)


def test_gqa_head_sink() -> None:
    rng = np.random.default_rng(61)
    batch, heads, kv_heads, head, seq = 2, 4, 2, 8, 3
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    sink = rnd(rng, heads)
    inputs = [q, k, v, None, None, np.full(batch, seq - 1, np.int32), np.array(seq, np.int32), *[None] * 4, sink]
    _gqa_check(inputs, num_heads=heads, kv_num_heads=kv_heads)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_gqa_rotary_position_ids(interleaved: int) -> None:
    """position_ids: a first prompt reads only its first element; a decoder step reads each item's."""
    rng = np.random.default_rng(67)
    batch, heads, kv_heads, head, seq = 2, 4, 2, 16, 3
    cos, sin = _caches(rng, 20, head // 2)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads, "do_rotary": 1, "rotary_interleaved": interleaved}
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    pid = np.array([[3, 4, 5], [0, 7, 2]], np.int64)
    seqlens = np.full(batch, seq - 1, np.int32)
    _, pk, pv = _gqa_check([q, k, v, None, None, seqlens, np.array(seq, np.int32), cos, sin, pid], **attrs)
    q, k, v = _gqa_inputs(rng, batch, 1, heads, kv_heads, head, F32)
    pid = np.array([[9], [11]], np.int64)
    _gqa_check([q, k, v, pk, pv, seqlens + 1, np.array(seq + 1, np.int32), cos, sin, pid], **attrs)


def test_gqa_refusals() -> None:
    rng = np.random.default_rng(0)
    q, k, v = _gqa_inputs(rng, 1, 2, 2, 1, 8, F32)
    args = (q, k, v, None, None, np.array([1], np.int32), np.array(2, np.int32))
    with pytest.raises(onnxcore.errors.EvaluationError, match="multiple of kv_num_heads"):
        onnxcore.kernels.run("GroupQueryAttention", 1, *args, domain=MS, num_heads=3, kv_num_heads=2)
    with pytest.raises(onnxcore.errors.EvaluationError, match="seqlens_k"):
        bad = (q, k, v, None, None, np.array([5], np.int32), np.array(2, np.int32))
        onnxcore.kernels.run("GroupQueryAttention", 1, *bad, domain=MS, num_heads=2, kv_num_heads=1)


# ---------------------------------------------------------------------------------------------
# bfloat16 (the definitions allow it; onnxruntime's CPU kernels do not take it)
# ---------------------------------------------------------------------------------------------


def _bf16_cases(rng: np.random.Generator) -> list[tuple[str, list[np.ndarray | None], int, dict[str, Any]]]:
    b, s, n, h = 2, 3, 2, 16
    x = rnd(rng, b, s, n * h)
    cos, sin = _caches(rng, 8, h // 2)
    seqlens, total = np.full(b, s - 1, np.int32), np.array(s, np.int32)
    w, bias = rnd(rng, n * h, 3 * n * h) / 6, rnd(rng, 3 * n * h)
    return [
        ("Attention", [x, w, bias, np.array([3, 2], np.int32)], 2, {"num_heads": n, "unidirectional": 1}),
        ("MultiHeadAttention", [x, x, x, bias], 3, {"num_heads": n}),
        ("RotaryEmbedding", [x, np.array([[0, 1, 2], [3, 4, 5]], np.int64), cos, sin], 1, {"num_heads": n}),
        (
            "GroupQueryAttention",
            [x, x, x, None, None, seqlens, total, cos, sin],
            3,
            {"num_heads": n, "kv_num_heads": n, "do_rotary": 1},
        ),
    ]


@pytest.mark.parametrize("case", range(4))
def test_bfloat16_against_onnxruntime_float32(case: int) -> None:
    """Ours on bfloat16 inputs equals onnxruntime's float32 result on the same values, to bfloat16 rounding
    (we compute in float32 and round once: rtol 2**-7, atol 2**-7)."""
    op, inputs, n_out, attrs = _bf16_cases(np.random.default_rng(71))[case]
    bf = ml_dtypes.bfloat16
    floats = [a if a is None or a.dtype != F32 else a.astype(bf).astype(F32) for a in inputs]
    expected = _ort_run(
        node_model(op, floats, n_out, attrs), {f"x{i}": a for i, a in enumerate(floats) if a is not None}
    )
    narrow = [a if a is None or a.dtype != F32 else a.astype(bf) for a in inputs]
    actual = onnxcore.kernels.run(op, 1, *narrow, domain=MS, outputs=n_out, **attrs)[:n_out]
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == bf and a.shape == e.shape, f"{op} output {k}: {a.dtype}{a.shape}"
        np.testing.assert_allclose(a.astype(F32), e, rtol=2**-7, atol=2**-7, err_msg=f"{op} output {k}")


# ---------------------------------------------------------------------------------------------
# Type inference of the outputs (as intermediate values, not declared graph outputs)
# ---------------------------------------------------------------------------------------------


def _type_cases(dtype: Any) -> list[tuple[str, list[np.ndarray | None], int, dict[str, Any]]]:
    rng = np.random.default_rng(81)
    x = rnd(rng, 2, 3, 16, dtype=dtype)
    k8 = rnd(rng, 2, 3, 8, dtype=dtype)
    lens, total = np.array([2, 2], np.int32), np.array(3, np.int32)
    cos, sin = _caches(rng, 8, 4, dtype)
    past = rnd(rng, 2, 1, 2, 8, dtype=dtype)
    return [
        ("Attention", [x, rnd(rng, 16, 48, dtype=dtype), rnd(rng, 48, dtype=dtype)], 2, {"num_heads": 2}),
        ("MultiHeadAttention", [x, x, x], 3, {"num_heads": 2}),
        ("RotaryEmbedding", [x, np.array([0], np.int64), cos, sin], 1, {"num_heads": 2}),
        ("GroupQueryAttention", [x, k8, k8, None, None, lens, total], 3, {"num_heads": 2, "kv_num_heads": 1}),
        (
            "GroupQueryAttention",
            [x[:, :1], k8[:, :1], k8[:, :1], past, past, lens, total],
            3,
            {"num_heads": 2, "kv_num_heads": 1},
        ),
    ]


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("case", range(5))
def test_inferred_output_types(dtype: Any, case: int) -> None:
    """Each output's type inferred from onnxruntime's definition (and our rules for what it leaves unbound:
    GroupQueryAttention's present without past) is the type onnxruntime returns."""
    op, inputs, n_out, attrs = _type_cases(dtype)[case]
    model = onnx.load_from_string(node_model(op, inputs, n_out, attrs))
    graph = model.graph
    declared = list(graph.output)
    del graph.output[:]
    for o in declared:  # the node's outputs become intermediate values read by Identity nodes
        graph.node.append(helper.make_node("Identity", [o.name], [f"id_{o.name}"]))
        graph.output.append(helper.make_tensor_value_info(f"id_{o.name}", o.type.tensor_type.elem_type, None))
    types = infer_types(decode(ModelProto, model.SerializeToString()))["graph"]
    feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
    for k, e in enumerate(_ort_run(model.SerializeToString(), feeds)):
        tt = types[f"y{k}"].tensor_type
        assert tt is not None and tt.elem_type == helper.np_dtype_to_tensor_dtype(e.dtype), f"{op} y{k}"


@pytest.mark.parametrize("interleaved", [0, 1])
def test_gqa_partial_rotary(interleaved: int) -> None:
    """Caches narrower than head_size / 2 rotate only the first 2 * cache-width features of each head."""
    rng = np.random.default_rng(83)
    batch, heads, kv_heads, head, seq = 2, 4, 2, 32, 3
    q, k, v = _gqa_inputs(rng, batch, seq, heads, kv_heads, head, F32)
    cos, sin = _caches(rng, 10, 8)
    inputs = [q, k, v, None, None, np.full(batch, seq - 1, np.int32), np.array(seq, np.int32), cos, sin]
    _gqa_check(inputs, num_heads=heads, kv_num_heads=kv_heads, do_rotary=1, rotary_interleaved=interleaved)


def test_empty_sequences_give_empty_outputs() -> None:
    """A sequence (or batch) of length 0 gives outputs of the definition's shapes, never an indexing error."""
    z = np.zeros
    w, b = z((8, 24), F32), z(24, F32)
    y, present = onnxcore.kernels.run("Attention", 1, z((2, 0, 8), F32), w, b, domain=MS, num_heads=2, unidirectional=1)
    assert y.shape == (2, 0, 8) and present.shape == (2, 2, 2, 0, 4)
    q = z((2, 0, 8), F32)
    out = onnxcore.kernels.run("MultiHeadAttention", 1, q, q, q, domain=MS, outputs=3, num_heads=2, unidirectional=1)
    assert [o.shape for o in out] == [(2, 0, 8), (2, 2, 0, 4), (2, 2, 0, 4)]
    q, kv = z((0, 1, 16), F32), z((0, 1, 8), F32)
    lens, total = z(0, np.int32), np.array(1, np.int32)
    out = onnxcore.kernels.run(
        "GroupQueryAttention", 1, q, kv, kv, None, None, lens, total, domain=MS, outputs=3, num_heads=2, kv_num_heads=1
    )
    assert [o.shape for o in out[:3]] == [(0, 1, 16), (0, 1, 1, 8), (0, 1, 1, 8)]
