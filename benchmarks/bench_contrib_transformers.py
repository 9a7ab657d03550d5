"""Transformer models with onnxruntime's com.microsoft attention operators (issue 28): onnxcore against onnxruntime.

Models (built as the tests build them, ``tests/kernels/contrib``): a BERT encoder and a GPT-2 decoder exported
by torch and fused by onnxruntime's transformer optimizer (Attention, EmbedLayerNormalization,
SkipLayerNormalization, BiasGelu/FastGelu), and a Llama-style decoder as generative-AI exporters write it
(GroupQueryAttention with rotary, SimplifiedLayerNormalization). Timed: BERT on one batch, GPT-2 and the
Llama-style decoder on a prompt and on one decoding step over that prompt's KV cache.

Each engine gets one warm-up run, then the best of ``--repeat`` runs is kept, the engines taking turns;
onnxruntime runs single-threaded (``intra_op_num_threads=1``) and with its default threads. Outputs are checked
against onnxruntime (rtol 1e-4, atol 1e-4). Compare single-threaded with ``--blas-threads 1``. A Markdown table
goes to stdout.

Usage: ``python benchmarks/bench_contrib_transformers.py [--repeat 10] [--blas-threads 1] [--clock wall|cpu]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# BLAS threads must be fixed before numpy loads OpenBLAS.
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np
import onnxruntime as ort
from onnxruntime.transformers.optimizer import optimize_model

import onnxcore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from kernels.contrib import test_contrib_llm_decoder as llm
from kernels.contrib import tiny_transformers

BERT = {"layers": 4, "heads": 8, "hidden": 256, "max_pos": 256}
GPT2 = {"layers": 4, "heads": 8, "hidden": 256, "max_pos": 256}


def best_of(fns: list[Callable[[], Any]], repeat: int, clock: Callable[[], float]) -> list[float]:
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = clock()
            fn()
            best[i] = min(best[i], clock() - t0)
    return best


def _ort(model: str | bytes, threads: int) -> Any:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def _check(ours: list[np.ndarray], theirs: list[np.ndarray], what: str) -> None:
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4, err_msg=what)


def cases(tmp: Path) -> list[tuple[str, str | bytes, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    out: list[tuple[str, str | bytes, dict[str, np.ndarray]]] = []
    tiny_transformers.export_bert(tmp / "bert.onnx", **BERT)
    opt = optimize_model(str(tmp / "bert.onnx"), "bert", num_heads=BERT["heads"], hidden_size=BERT["hidden"])
    opt.save_model_to_file(str(tmp / "bert_opt.onnx"))
    seq = 128
    bert_feeds = {
        "input_ids": rng.integers(0, 100, (1, seq)).astype(np.int64),
        "attention_mask": np.ones((1, seq), np.int64),
        "token_type_ids": np.zeros((1, seq), np.int64),
    }
    out.append((f"BERT {BERT['layers']}x{BERT['hidden']}, 1 x {seq} tokens", str(tmp / "bert_opt.onnx"), bert_feeds))

    tiny_transformers.export_gpt2(tmp / "gpt2.onnx", **GPT2)
    opt = optimize_model(str(tmp / "gpt2.onnx"), "gpt2", num_heads=GPT2["heads"], hidden_size=GPT2["hidden"])
    opt.save_model_to_file(str(tmp / "gpt2_opt.onnx"))
    head = GPT2["hidden"] // GPT2["heads"]
    for past, seq in ((0, 64), (64, 1)):
        feeds = {
            "input_ids": rng.integers(0, 100, (1, seq)).astype(np.int64),
            "position_ids": np.arange(past, past + seq, dtype=np.int64)[None],
            "attention_mask": np.ones((1, past + seq), np.float32),
            **{
                f"past_{i}": rng.standard_normal((2, 1, GPT2["heads"], past, head)).astype(np.float32)
                for i in range(GPT2["layers"])
            },
        }
        what = "prompt of 64" if past == 0 else "one step after 64"
        out.append((f"GPT-2 {GPT2['layers']}x{GPT2['hidden']}, {what}", str(tmp / "gpt2_opt.onnx"), feeds))

    model = llm._decoder()
    for past, seq in ((0, 16), (16, 1)):
        kv = {
            f"past_key_values.{i}.{n}": rng.standard_normal((1, llm.KV_HEADS, past, llm.HEAD)).astype(np.float32)
            for i in range(llm.LAYERS)
            for n in ("key", "value")
        }
        feeds = {
            "input_ids": rng.integers(0, llm.VOCAB, (1, seq)).astype(np.int64),
            "attention_mask": np.ones((1, past + seq), np.int64),
            **kv,
        }
        what = "prompt of 16" if past == 0 else "one step after 16"
        out.append((f"Llama-style (GQA) {llm.LAYERS}x{llm.HIDDEN}, {what}", model, feeds))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print("| model | onnxcore | onnxruntime, 1 thread | ratio | onnxruntime, default | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for name, model, feeds in cases(Path(d)):
            ours, one, default = onnxcore.Session(model), _ort(model, 1), _ort(model, 0)
            _check(ours.run(None, feeds), one.run(None, feeds), name)
            runs = [lambda s=s, f=feeds: s.run(None, f) for s in (ours, one, default)]
            t = best_of(runs, args.repeat, clock)
            ms = [f"{x * 1e3:.2f} ms" for x in t]
            print(f"| {name} | {ms[0]} | {ms[1]} | {t[0] / t[1]:.2f} | {ms[2]} | {t[0] / t[2]:.2f} |")


if __name__ == "__main__":
    main()
