"""A small Llama-style decoder graph as generative-AI exporters write it, decoded step by step.

The graph is built as onnxruntime-genai's model builder lays out a Llama/Mistral decoder: token embedding,
``SimplifiedLayerNormalization`` (onnxruntime's RMS norm in the default domain), separate Q/K/V MatMuls,
``com.microsoft::GroupQueryAttention`` with rotary embedding (cos/sin caches as initializers) over a BNSH KV
cache (``past_key_values.<i>.key``/``.value`` in, ``present.<i>.key``/``.value`` out), ``seqlens_k`` and
``total_sequence_length`` computed from ``attention_mask`` inside the graph,
``com.microsoft::SkipSimplifiedLayerNormalization`` on the residual, a SiLU-gated MLP, and a final norm and
LM head. Weights are random (seed 0); grouped-query attention with 4 query and 2 key/value heads.

Each engine decodes a 5-token prompt and then 4 single tokens, fed its own presents; logits and presents are
compared at every step (float32 rtol 1e-4, atol 1e-4). A second case uses a sliding window
(``local_window_size``) and an interleaved rotary.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

VOCAB, HIDDEN, HEADS, KV_HEADS, LAYERS, INNER, MAX_POS = 64, 64, 4, 2, 2, 96, 32
HEAD = HIDDEN // HEADS
TOL = {"rtol": 1e-4, "atol": 1e-4}


def _decoder(*, window: int = -1, interleaved: int = 0) -> bytes:
    rng = np.random.default_rng(0)
    inits: list[Any] = []

    def w(name: str, *shape: int, scale: float = 0.1) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def ones(name: str, n: int) -> str:
        inits.append(numpy_helper.from_array((1 + 0.1 * rng.standard_normal(n)).astype(np.float32), name))
        return name

    theta = np.outer(np.arange(MAX_POS), 1.0 / 10000 ** (np.arange(0, HEAD, 2) / HEAD))
    inits.append(numpy_helper.from_array(np.cos(theta).astype(np.float32), "cos_cache"))
    inits.append(numpy_helper.from_array(np.sin(theta).astype(np.float32), "sin_cache"))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one_axis"))
    inits.append(numpy_helper.from_array(np.array(1, np.int64), "one"))
    nodes = [
        helper.make_node("ReduceSum", ["attention_mask", "one_axis"], ["mask_sum"], keepdims=0),
        helper.make_node("Sub", ["mask_sum", "one"], ["seqlens_k_64"]),
        helper.make_node("Cast", ["seqlens_k_64"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "one"], ["total_64"], axis=0),
        helper.make_node("Cast", ["total_64"], ["total_sequence_length"], to=TensorProto.INT32),
        helper.make_node("Gather", [w("embed", VOCAB, HIDDEN, scale=1.0), "input_ids"], ["x0"]),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
    ]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])]
    x = "x0"
    nodes.append(helper.make_node("SimplifiedLayerNormalization", [x, ones("ln0", HIDDEN)], ["h0"], epsilon=1e-5))
    h = "h0"
    for i in range(LAYERS):
        pk, pv, ck, cv = (
            f"past_key_values.{i}.key",
            f"past_key_values.{i}.value",
            f"present.{i}.key",
            f"present.{i}.value",
        )
        for name in (pk, pv):
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", KV_HEADS, "past", HEAD]))
        for name in (ck, cv):
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", KV_HEADS, "total", HEAD]))
        p = f"l{i}_"
        nodes += [
            helper.make_node("MatMul", [h, w(p + "wq", HIDDEN, HEADS * HEAD)], [p + "q"]),
            helper.make_node("MatMul", [h, w(p + "wk", HIDDEN, KV_HEADS * HEAD)], [p + "k"]),
            helper.make_node("MatMul", [h, w(p + "wv", HIDDEN, KV_HEADS * HEAD)], [p + "v"]),
            helper.make_node(
                "GroupQueryAttention",
                [p + "q", p + "k", p + "v", pk, pv, "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"],
                [p + "attn", ck, cv],
                domain="com.microsoft",
                num_heads=HEADS,
                kv_num_heads=KV_HEADS,
                do_rotary=1,
                rotary_interleaved=interleaved,
                local_window_size=window,
            ),
            helper.make_node("MatMul", [p + "attn", w(p + "wo", HEADS * HEAD, HIDDEN)], [p + "o"]),
            helper.make_node(
                "SkipSimplifiedLayerNormalization",
                [p + "o", x, ones(p + "ln2", HIDDEN)],
                [p + "h2", "", "", p + "resid"],
                domain="com.microsoft",
                epsilon=1e-5,
            ),
            helper.make_node("MatMul", [p + "h2", w(p + "wg", HIDDEN, INNER)], [p + "gate"]),
            helper.make_node("MatMul", [p + "h2", w(p + "wu", HIDDEN, INNER)], [p + "up"]),
            helper.make_node("Sigmoid", [p + "gate"], [p + "sig"]),
            helper.make_node("Mul", [p + "gate", p + "sig"], [p + "silu"]),
            helper.make_node("Mul", [p + "silu", p + "up"], [p + "act"]),
            helper.make_node("MatMul", [p + "act", w(p + "wd", INNER, HIDDEN)], [p + "down"]),
            helper.make_node("Add", [p + "resid", p + "down"], [p + "out"]),
            helper.make_node(
                "SimplifiedLayerNormalization", [p + "out", ones(p + "ln1n", HIDDEN)], [p + "hn"], epsilon=1e-5
            ),
        ]
        x, h = p + "out", p + "hn"
    nodes.append(helper.make_node("MatMul", [h, w("lm_head", HIDDEN, VOCAB)], ["logits"]))
    graph = helper.make_graph(nodes, "llama_like", inputs, outputs, inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def _decode(run: Any, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    batch = 2
    past = {
        f"past_key_values.{i}.{kv}": np.zeros((batch, KV_HEADS, 0, HEAD), np.float32)
        for i in range(LAYERS)
        for kv in ("key", "value")
    }
    ids = rng.integers(0, VOCAB, (batch, 5)).astype(np.int64)
    total = 0
    results: list[np.ndarray] = []
    for _ in range(5):
        total += ids.shape[1]
        out = run({"input_ids": ids, "attention_mask": np.ones((batch, total), np.int64), **past})
        results += out
        past = {
            f"past_key_values.{i}.{kv}": out[1 + 2 * i + j]
            for i in range(LAYERS)
            for j, kv in enumerate(("key", "value"))
        }
        ids = rng.integers(0, VOCAB, (batch, 1)).astype(np.int64)
    return results


@pytest.mark.parametrize(("window", "interleaved"), [(-1, 0), (3, 1)])
def test_llama_like_decoder_decoding(window: int, interleaved: int) -> None:
    model = _decoder(window=window, interleaved=interleaved)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    theirs = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ours = onnxcore.Session(model)
    expected = _decode(lambda f: theirs.run(None, f), 1)
    actual = _decode(lambda f: ours.run(None, f), 1)
    assert len(actual) == len(expected) == 5 * (1 + 2 * LAYERS)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"result {k}: {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, **TOL, err_msg=f"step {k // (1 + 2 * LAYERS)}, output {k % (1 + 2 * LAYERS)}")
