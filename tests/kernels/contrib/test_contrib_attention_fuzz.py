"""Random configurations of the com.microsoft attention family against onnxruntime (seeded, reproducible).

Each case draws shapes, dtypes, attributes and which optional inputs are given (masks of every form, past
states, attention_bias, rotary caches, ...) and runs one node in onnxcore (``kernels.run``) and in
onnxruntime (in a child process: onnxruntime 1.31's Attention without bias segfaults, so a crash costs one
case). Properties:

- onnxcore gives a result or one of its own errors (an ``OnnxCoreError``), never another exception;
- where both run they agree: shapes, types, and values (float32 rtol 1e-4, atol 1e-4; float16 rtol 2e-3,
  atol 2e-3), GroupQueryAttention's output_qk only where a key is attended (elsewhere onnxruntime leaves its
  buffer's contents);
- most draws run in both (at least 60%), so the agreement is not vacuous; every case onnxcore refuses that
  onnxruntime runs is a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.errors import OnnxCoreError

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
ort_worker = pytest.importorskip("ort_worker")
from kernels.contrib.test_contrib_attention import gqa_attended, node_model  # noqa: E402

MS = "com.microsoft"
CASES = 60
Draw = tuple[list[np.ndarray | None], int, dict[str, Any]]


def _r(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _mask(rng: np.random.Generator, batch: int, seq: int, total: int) -> np.ndarray | None:
    form = rng.integers(0, 6)
    lens = rng.integers(1, total + 1, batch).astype(np.int32)
    if form == 1:
        return lens
    if form == 2:
        return np.concatenate([lens, rng.integers(0, 2, batch).astype(np.int32)])
    if form == 3:
        return np.concatenate([lens, rng.integers(0, total, 2 * batch + 2).astype(np.int32)])
    if form == 4:
        return (rng.random((batch, total)) > 0.3).astype(np.int32)
    if form == 5:
        return (rng.random((batch, seq, total)) > 0.3).astype(np.int32)
    return None


def _bias4(rng: np.random.Generator, batch: int, heads: int, seq: int, total: int, dtype: Any) -> np.ndarray | None:
    if rng.random() < 0.5:
        return None
    return _r(rng, (int(rng.choice([1, batch])), int(rng.choice([1, heads])), seq, total), dtype)


def _attention(rng: np.random.Generator) -> Draw:
    dtype = rng.choice([np.float32, np.float16])
    batch, seq, heads, head = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.choice([1, 2, 4])), 4
    hidden, d_in = heads * head, int(rng.choice([8, 16]))
    past_len = int(rng.integers(0, 4)) if rng.random() < 0.5 else None
    v_hidden = hidden if past_len is not None or rng.random() < 0.6 else heads * 2
    x = _r(rng, (batch, seq, d_in), dtype)
    w = _r(rng, (d_in, 2 * hidden + v_hidden), dtype, 1 / np.sqrt(d_in))
    b = _r(rng, (2 * hidden + v_hidden,), dtype)
    total = seq + (past_len or 0)
    past = None if past_len is None else _r(rng, (2, batch, heads, past_len, head), dtype)
    attrs: dict[str, Any] = {"num_heads": heads, "unidirectional": int(rng.integers(0, 2))}
    if v_hidden != hidden:
        attrs["qkv_hidden_sizes"] = [hidden, hidden, v_hidden]
    if rng.random() < 0.3:
        attrs["scale"] = float(rng.uniform(0.1, 1.0))
    if rng.random() < 0.3:
        attrs["mask_filter_value"] = float(rng.uniform(-100, -1))
    inputs = [x, w, b, _mask(rng, batch, seq, total), past, _bias4(rng, batch, heads, seq, total, dtype)]
    return inputs, 2 if past is not None else 1, attrs


def _mha(rng: np.random.Generator) -> Draw:
    dtype = rng.choice([np.float32, np.float16])
    batch, seq, heads, head = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.choice([1, 2, 4])), 4
    hidden = heads * head
    kv = seq if rng.random() < 0.5 else int(rng.integers(1, 7))
    q = _r(rng, (batch, seq, hidden), dtype)
    attrs: dict[str, Any] = {"num_heads": heads, "unidirectional": int(rng.integers(0, 2))}
    if rng.random() < 0.3:
        attrs["scale"] = float(rng.uniform(0.1, 1.0))
    if rng.random() < 0.2:  # cross attention on keys/values already in BNSH
        k, v = _r(rng, (batch, heads, kv, head), dtype), _r(rng, (batch, heads, kv, head), dtype)
        bias = _r(rng, (3 * hidden,), dtype) if rng.random() < 0.5 else None
        return [q, k, v, bias, _mask(rng, batch, seq, kv), _bias4(rng, batch, heads, seq, kv, dtype)], 3, attrs
    k, v = _r(rng, (batch, kv, hidden), dtype), _r(rng, (batch, kv, hidden), dtype)
    bias = _r(rng, (3 * hidden,), dtype) if rng.random() < 0.5 else None
    past_len = int(rng.integers(0, 4)) if rng.random() < 0.5 else None
    total = kv + (past_len or 0)
    pk = pv = None
    if past_len is not None:
        pk, pv = _r(rng, (batch, heads, past_len, head), dtype), _r(rng, (batch, heads, past_len, head), dtype)
    ab = _bias4(rng, batch, heads, seq, total, dtype)
    return [q, k, v, bias, _mask(rng, batch, seq, total), ab, pk, pv], 3, attrs


def _caches(rng: np.random.Generator, rows: int, half: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    theta = rng.random((rows, half)) * 6
    return np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)


def _rotary(rng: np.random.Generator) -> Draw:
    dtype = rng.choice([np.float32, np.float16])
    batch, seq, heads, head = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 4)), 8
    attrs: dict[str, Any] = {"interleaved": int(rng.integers(0, 2))}
    rot = head
    if rng.random() < 0.3:
        rot = 4
        attrs.update(rotary_embedding_dim=rot, num_heads=heads)
    shape = (batch, seq, heads * head) if rng.random() < 0.6 else (batch, heads, seq, head)
    if len(shape) == 4 and "num_heads" in attrs:
        shape = (batch, seq, heads * head)
    cos, sin = _caches(rng, 16, rot // 2, dtype)
    pos = np.array([rng.integers(0, 16 - seq)]) if rng.random() < 0.4 else rng.integers(0, 16, (batch, seq))
    return [_r(rng, shape, dtype), pos.astype(np.int64), cos, sin], 1, attrs


def _gqa(rng: np.random.Generator) -> Draw:
    dtype = rng.choice([np.float32, np.float16])
    kv_heads = int(rng.choice([1, 2]))
    heads, head, batch = kv_heads * int(rng.choice([1, 2, 3])), 16, int(rng.integers(1, 4))
    attrs: dict[str, Any] = {"num_heads": heads, "kv_num_heads": kv_heads}
    if rng.random() < 0.5:  # decoding: one new token onto ragged pasts in a buffer of capacity cap
        seq, cap = 1, int(rng.integers(2, 8))
        lens = rng.integers(1, cap + 1, batch)  # tokens held after this step
        total = int(lens.max())
        pk, pv = _r(rng, (batch, kv_heads, cap, head), dtype), _r(rng, (batch, kv_heads, cap, head), dtype)
    else:  # a prompt, right-padded
        seq = total = int(rng.integers(1, 7))
        lens = rng.integers(1, seq + 1, batch)
        pk = pv = None
    q, k, v = (_r(rng, (batch, seq, n * head), dtype) for n in (heads, kv_heads, kv_heads))
    inputs: list[np.ndarray | None] = [q, k, v, pk, pv, (lens - 1).astype(np.int32), np.array(total, np.int32)]
    if rng.random() < 0.3:
        inputs[:3] = [np.concatenate([q, k, v], axis=2), None, None]
    causal = rng.random() < 0.85
    if not causal:
        attrs["causal"] = 0
    elif rng.random() < 0.3:
        attrs["local_window_size"] = int(rng.integers(1, 4))
    if rng.random() < 0.3:
        attrs["softcap"] = float(rng.uniform(0.5, 5))
    if rng.random() < 0.2:
        attrs["smooth_softmax"] = 1
    if rng.random() < 0.3:
        attrs["scale"] = float(rng.uniform(0.05, 0.5))
    extra: list[np.ndarray | None] = [None] * 5
    if rng.random() < 0.4:
        attrs.update(do_rotary=1, rotary_interleaved=int(rng.integers(0, 2)))
        extra[0:2] = _caches(rng, 16, head // 2, dtype)
    if rng.random() < 0.3:
        extra[3] = _r(rng, (int(rng.choice([1, batch])), int(rng.choice([1, heads])), seq, total), dtype)
    if rng.random() < 0.2:
        extra[4] = _r(rng, (heads,), dtype)
    while extra and extra[-1] is None:
        extra.pop()
    n_out = 3
    if rng.random() < 0.3:
        attrs["qk_output"] = int(rng.integers(1, 3))
        n_out = 4
    return inputs + extra, n_out, attrs


GENERATORS: dict[str, Callable[[np.random.Generator], Draw]] = {
    "Attention": _attention,
    "MultiHeadAttention": _mha,
    "RotaryEmbedding": _rotary,
    "GroupQueryAttention": _gqa,
}


@pytest.fixture(scope="module")
def worker() -> Any:
    w = ort_worker.OrtWorker()
    yield w
    w.close()


@pytest.mark.parametrize("op", sorted(GENERATORS))
def test_random_configurations(op: str, worker: Any) -> None:
    rng = np.random.default_rng(sum(map(ord, op)))
    agreed, refused_by_ort = 0, []
    for case in range(CASES):
        inputs, n_out, attrs = GENERATORS[op](rng)
        model = node_model(op, inputs, n_out, attrs)
        feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
        ran, message, expected = worker.run(model, feeds)
        try:
            actual = onnxcore.kernels.run(op, 1, *inputs, domain=MS, outputs=n_out, **attrs)[:n_out]
        except OnnxCoreError as e:
            assert not ran, f"{op} case {case} {attrs}: onnxruntime runs it, onnxcore refuses: {e}"
            continue
        if not ran:
            refused_by_ort.append(message)
            continue
        assert expected is not None
        for k, (a, e) in enumerate(zip(actual, expected)):
            where = f"{op} case {case} {attrs} output {k}"
            assert a.dtype == e.dtype and a.shape == e.shape, f"{where}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
            if op == "GroupQueryAttention" and k == 3:
                seen = gqa_attended(inputs, attrs, a.shape)
                a, e = np.where(seen, a, 0), np.where(seen, e, 0)
            tol = {"rtol": 2e-3, "atol": 2e-3} if e.dtype == np.float16 else {"rtol": 1e-4, "atol": 1e-4}
            np.testing.assert_allclose(a.astype(np.float32), e.astype(np.float32), **tol, err_msg=where)
        agreed += 1
    assert agreed >= 0.6 * CASES, f"{op}: only {agreed} of {CASES} ran in both; onnxruntime refused: {refused_by_ort}"
