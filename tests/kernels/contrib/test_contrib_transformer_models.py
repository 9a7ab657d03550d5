"""Whole models as users make them: a tiny BERT and a tiny GPT-2 exported by torch and fused by onnxruntime's
transformer optimizer (``onnxruntime.transformers.optimizer.optimize_model``), run by onnxcore and onnxruntime.

The optimized graphs hold com.microsoft Attention (GPT-2's with its KV cache ``past``/``present``),
EmbedLayerNormalization, SkipLayerNormalization and BiasGelu (BERT) or FastGelu (GPT-2). Each test checks that
the fusion happened (else the test would prove nothing), then that onnxcore's outputs on the optimized model
equal onnxruntime's on it and onnxruntime's on the original model, and that onnxcore's on the original model
equal onnxruntime's too. GPT-2 decodes a prompt then three steps, each engine fed its own presents.

Tolerance rtol 1e-4, atol 1e-4 (float32 through two layers; the fused kernels reassociate sums).
Models are exported into pytest's temporary directory (a few hundred kB, never committed).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.kernels import load_all
from onnxcore.kernels.registry import lookup

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip(
    "torch", reason="the BERT/GPT-2 exports need torch (pyproject extra 'torch'; CI does not install it)"
)
pytest.importorskip("onnxruntime.transformers.optimizer")

TOL = {"rtol": 1e-4, "atol": 1e-4}
HEADS, HIDDEN, LAYERS = 4, 32, 2


def _missing(ops: list[str]) -> list[str]:
    load_all()
    return [op for op in ops if lookup("com.microsoft", op, 1) is None]


def _needs(ops: list[str]) -> None:
    missing = _missing(ops)
    if missing:
        pytest.skip(f"com.microsoft kernels not in this branch yet (helper 28A's): {', '.join(missing)}")


def _optimize(src: Path, dst: Path, model_type: str) -> Counter[str]:
    from onnxruntime.transformers.optimizer import optimize_model  # heavy: loads the optimizer's fusions

    opt = optimize_model(str(src), model_type=model_type, num_heads=HEADS, hidden_size=HIDDEN, opt_level=0)
    opt.save_model_to_file(str(dst))
    return Counter(f"{n.domain}::{n.op_type}" for n in onnx.load(str(dst)).graph.node)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from kernels.contrib import tiny_transformers  # imports torch (heavy, optional): only when a test runs

    d = tmp_path_factory.mktemp("contrib_models")
    out: dict[str, Any] = {}
    tiny_transformers.export_bert(d / "bert.onnx")
    out["bert_ops"] = _optimize(d / "bert.onnx", d / "bert_opt.onnx", "bert")
    tiny_transformers.export_gpt2(d / "gpt2.onnx", layers=LAYERS, heads=HEADS, hidden=HIDDEN)
    out["gpt2_ops"] = _optimize(d / "gpt2.onnx", d / "gpt2_opt.onnx", "gpt2")
    out["dir"] = d
    return out


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return list(ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds))


def _assert_all_close(actual: list[np.ndarray], expected: list[np.ndarray], what: str) -> None:
    assert len(actual) == len(expected), what
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"{what} output {k}: {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, **TOL, err_msg=f"{what} output {k}")


def _bert_feeds(batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[1:, seq - 2 :] = 0  # right padding on every item but the first
    types = np.zeros((batch, seq), np.int64)
    types[:, seq // 2 :] = 1
    return {
        "input_ids": rng.integers(0, 100, (batch, seq)).astype(np.int64),
        "attention_mask": mask,
        "token_type_ids": types,
    }


def test_bert_original_model(models: dict[str, Any]) -> None:
    path = models["dir"] / "bert.onnx"
    feeds = _bert_feeds(2, 7, 0)
    _assert_all_close(onnxcore.Session(str(path)).run(None, feeds), _ort(path, feeds), "original BERT")


def test_bert_fused_by_the_optimizer(models: dict[str, Any]) -> None:
    ops = models["bert_ops"]
    assert ops["com.microsoft::Attention"] == LAYERS
    assert ops["com.microsoft::EmbedLayerNormalization"] == 1
    assert ops["com.microsoft::SkipLayerNormalization"] == 2 * LAYERS
    _needs(sorted({k.split("::")[1] for k in ops if k.startswith("com.microsoft::")}))
    opt, orig = models["dir"] / "bert_opt.onnx", models["dir"] / "bert.onnx"
    for batch, seq, seed in ((2, 7, 0), (3, 5, 1), (1, 12, 2)):
        feeds = _bert_feeds(batch, seq, seed)
        ours = onnxcore.Session(str(opt)).run(None, feeds)
        _assert_all_close(ours, _ort(opt, feeds), f"optimized BERT {batch}x{seq} vs onnxruntime")
        _assert_all_close(ours, _ort(orig, feeds), f"optimized BERT {batch}x{seq} vs the original model")


def _gpt2_step(
    run: Any, ids: np.ndarray, past: list[np.ndarray], mask: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray]]:
    batch, seq = ids.shape
    past_len = past[0].shape[3]
    feeds = {
        "input_ids": ids,
        "position_ids": np.broadcast_to(np.arange(past_len, past_len + seq), (batch, seq)).astype(np.int64),
        "attention_mask": mask,
        **{f"past_{i}": p for i, p in enumerate(past)},
    }
    out = run(feeds)
    return out[0], list(out[1:])


def _gpt2_decode(run: Any, seed: int) -> list[np.ndarray]:
    """Logits and presents of a 4-token prompt then three one-token steps, item 1 left-padded by one token."""
    rng = np.random.default_rng(seed)
    batch = 2
    past = [np.zeros((2, batch, HEADS, 0, HIDDEN // HEADS), np.float32) for _ in range(LAYERS)]
    ids = rng.integers(0, 100, (batch, 4)).astype(np.int64)
    results = []
    for _ in range(4):
        total = past[0].shape[3] + ids.shape[1]
        mask = np.ones((batch, total), np.float32)
        mask[1, 0] = 0
        logits, past = _gpt2_step(run, ids, past, mask)
        results += [logits, *past]
        ids = rng.integers(0, 100, (batch, 1)).astype(np.int64)
    return results


def test_gpt2_original_model_decoding(models: dict[str, Any]) -> None:
    path = models["dir"] / "gpt2.onnx"
    sess = onnxcore.Session(str(path))
    ours = _gpt2_decode(lambda f: sess.run(None, f), 0)
    _assert_all_close(ours, _gpt2_decode(lambda f: _ort(path, f), 0), "original GPT-2")


def test_gpt2_fused_by_the_optimizer_decoding(models: dict[str, Any]) -> None:
    ops = models["gpt2_ops"]
    assert ops["com.microsoft::Attention"] == LAYERS
    _needs(sorted({k.split("::")[1] for k in ops if k.startswith("com.microsoft::")}))
    opt, orig = models["dir"] / "gpt2_opt.onnx", models["dir"] / "gpt2.onnx"
    sess = onnxcore.Session(str(opt))
    for seed in (0, 1):
        ours = _gpt2_decode(lambda f: sess.run(None, f), seed)
        _assert_all_close(
            ours, _gpt2_decode(lambda f: _ort(opt, f), seed), f"optimized GPT-2 (seed {seed}) vs onnxruntime"
        )
        _assert_all_close(
            ours, _gpt2_decode(lambda f: _ort(orig, f), seed), f"optimized GPT-2 (seed {seed}) vs original"
        )


def _gpt2_feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    batch, seq, past_len = 2, 3, 4
    past = {
        f"past_{i}": rng.standard_normal((2, batch, HEADS, past_len, HIDDEN // HEADS)).astype(np.float32)
        for i in range(LAYERS)
    }
    return {
        "input_ids": rng.integers(0, 100, (batch, seq)).astype(np.int64),
        "position_ids": np.broadcast_to(np.arange(past_len, past_len + seq), (batch, seq)).astype(np.int64),
        "attention_mask": np.array([[1] * 7, [0, 0] + [1] * 5], np.float32),
        **past,
    }


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_attention_nodes_alone_from_the_optimized_graph(models: dict[str, Any], name: str) -> None:
    """Each fused Attention node of an optimized model, run alone on its own inputs, equals onnxruntime's.

    Runs whatever other com.microsoft kernels exist: the values feeding each Attention node (BERT's mask_index
    of key lengths from EmbedLayerNormalization, GPT-2's raw mask and past) are taken from onnxruntime's run
    of the optimized graph, its intermediate values made graph outputs.
    """
    model = onnx.load(str(models["dir"] / f"{name}_opt.onnx"))
    attn = [n for n in model.graph.node if n.domain == "com.microsoft" and n.op_type == "Attention"]
    assert len(attn) == LAYERS
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    known = {o.name for o in model.graph.output} | {i.name for i in model.graph.input}
    for value in sorted({v for n in attn for v in [*n.input, *n.output] if v} - set(inits) - known):
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(value))
    feeds = _bert_feeds(3, 6, 4) if name == "bert" else _gpt2_feeds(3)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    values.update(feeds)
    values.update(inits)
    for node in attn:
        args = [values[i] if i else None for i in node.input]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        ours = onnxcore.kernels.run("Attention", 1, *args, domain="com.microsoft", **attrs)
        for k, out in enumerate(node.output):
            if out:
                np.testing.assert_allclose(ours[k], values[out], **TOL, err_msg=f"{node.name} output {k}")


def test_bert_dynamo_export_optimized(tmp_path: Path) -> None:
    """The dynamo exporter's BERT graph through the optimizer (which fuses no Attention in it, only the rest)."""
    from kernels.contrib import tiny_transformers  # imports torch (heavy, optional): only when a test runs

    tiny_transformers.export_bert(tmp_path / "bert.onnx", dynamo=True)
    ops = _optimize(tmp_path / "bert.onnx", tmp_path / "bert_opt.onnx", "bert")
    assert any(k.startswith("com.microsoft::") for k in ops), ops
    _needs(sorted({k.split("::")[1] for k in ops if k.startswith("com.microsoft::")}))
    feeds = _bert_feeds(2, 7, 5)
    ours = onnxcore.Session(str(tmp_path / "bert_opt.onnx")).run(None, feeds)
    _assert_all_close(ours, _ort(tmp_path / "bert_opt.onnx", feeds), "optimized dynamo BERT vs onnxruntime")
    _assert_all_close(ours, _ort(tmp_path / "bert.onnx", feeds), "optimized dynamo BERT vs the original model")
