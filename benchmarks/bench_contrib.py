"""Models with onnxruntime's operators (issue 28): onnxcore.Session against onnxruntime.

- skl2onnx text classifiers (TfidfVectorizer / CountVectorizer then LogisticRegression: com.microsoft::Tokenizer),
  word and character n-grams, on a generated corpus;
- a transformer block (LayerNormalization, MatMul, Gelu, residuals, an RMS norm) saved by onnxruntime with its
  optimized graph (``optimized_model_filepath``, extended level: SkipLayerNormalization, BiasGelu,
  SimplifiedLayerNormalization), the model of tests/kernels/contrib/test_contrib_models.py at a larger size.

Each engine gets one warm-up run, then the best of ``--repeat`` runs, the engines taking turns (onnxruntime with one
intra-op thread, and with its default). Outputs are checked against onnxruntime. A Markdown table goes to stdout.

Usage: ``python benchmarks/bench_contrib.py [--repeat 5] [--clock wall|cpu]``.
"""

from __future__ import annotations

import argparse
import copy
import functools
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import StringTensorType
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import onnxcore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from kernels.contrib import test_contrib_models

CLOCK: Callable[[], float] = time.perf_counter
WORDS = "the a cat dog mat sat ran on under over quick brown fox jumps lazy document text model data".split()


def corpus(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([" ".join(rng.choice(WORDS, rng.integers(3, 30))) for _ in range(n)], dtype=object)


def text_model(vectorizer: Any, texts: np.ndarray) -> bytes:
    labels = np.arange(len(texts)) % 2
    pipe = make_pipeline(vectorizer, LogisticRegression(max_iter=200)).fit(texts, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = convert_sklearn(
            pipe,
            initial_types=[("input", StringTensorType([None, 1]))],
            options={id(pipe.steps[-1][1]): {"zipmap": False}},
        )
    return m.SerializeToString()


def for_ort(model: bytes) -> bytes:
    # onnxruntime's StringNormalizer needs an installed locale; C.UTF-8 is present everywhere.
    m = copy.deepcopy(onnx.load_from_string(model))
    for n in m.graph.node:
        if n.op_type == "StringNormalizer":
            for a in [a for a in n.attribute if a.name == "locale"]:
                n.attribute.remove(a)
            n.attribute.append(helper.make_attribute("locale", "C.UTF-8"))
    return m.SerializeToString()


def saved_block(tmp: Path) -> bytes:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(tmp / "block.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(
        test_contrib_models._block(17, False).SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    return Path(so.optimized_model_filepath).read_bytes()


def ort_session(model: bytes, threads: int | None) -> Any:
    so = ort.SessionOptions()
    if threads is not None:
        so.intra_op_num_threads = threads
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def best_of(fns: list[Callable[[], Any]], repeat: int) -> tuple[list[float], list[Any]]:
    outs = [fn() for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = CLOCK()
            outs[i] = fn()
            best[i] = min(best[i], CLOCK() - t0)
    return best, outs


def ms(t: float) -> str:
    return f"{t * 1e3:.3g} ms" if t < 1 else f"{t * 1e3:,.0f} ms"


def main() -> int:
    global CLOCK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = ap.parse_args()
    if args.clock == "cpu":
        CLOCK = time.process_time
    texts = corpus(2000)
    cases: list[tuple[str, bytes, bytes, dict[str, Any]]] = []
    for name, vec in (
        ("TF-IDF words 1-2 + LogisticRegression, 2000 texts", TfidfVectorizer(ngram_range=(1, 2))),
        ("counts chars 1-3 + LogisticRegression, 2000 texts", CountVectorizer(analyzer="char", ngram_range=(1, 3))),
    ):
        m = text_model(vec, texts)
        cases.append((name, m, for_ort(m), {"input": texts.reshape(-1, 1)}))
    with tempfile.TemporaryDirectory() as tmp:
        block = saved_block(Path(tmp))
    x = np.random.default_rng(1).standard_normal((32, 128, test_contrib_models.H)).astype(np.float32)
    cases.append(("transformer block saved by onnxruntime (extended), 32 x 128", block, block, {"x": x}))
    print("| model | onnxcore | onnxruntime, 1 thread | ratio | onnxruntime, default | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ours_model, ort_model, feeds in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = onnxcore.Session(ours_model)
        one, default = ort_session(ort_model, 1), ort_session(ort_model, None)
        runs = [functools.partial(sess.run, None, feeds) for sess in (ours, one, default)]
        t, outs = best_of(runs, args.repeat)
        for a, b in zip(outs[0], outs[1], strict=True):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-4, atol=1e-5)
        print(f"| {name} | {ms(t[0])} | {ms(t[1])} | {t[0] / t[1]:.2f} | {ms(t[2])} | {t[0] / t[2]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
