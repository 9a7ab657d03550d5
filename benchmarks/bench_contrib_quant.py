"""Models that use onnxruntime's ``com.microsoft`` operators (issue 28): onnxcore.Session against onnxruntime
single-threaded.

Each entry of :data:`FAMILIES` makes its models the way users make them (``tests/kernels/contrib/ms_models.py``:
torch export, then onnxruntime's quantization tools or its optimizer) and names the input shape; add a family
(the transformer-optimizer models, the skl2onnx text pipelines, ...) by adding an entry. Every model is run by
onnxcore and by onnxruntime (``intra_op_num_threads=1``, graph optimization off, so both evaluate the same
graph), the engines taking turns, after one warm-up run each; the best of ``--repeat`` runs is reported with
the ratio onnxcore / onnxruntime and whether the outputs agree (rtol 3e-2 of the output's magnitude: the
MatMulNBits accuracy-level-4 entry is the loosest). A Markdown table goes to stdout.

Usage: ``python benchmarks/bench_contrib_quant.py [--repeat 20] [--blas-threads 1] [--families quantized ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# BLAS threads must be fixed before numpy loads OpenBLAS.
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np

import onnxcore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.kernels.contrib import ms_models

CNN = (2, 3, 16, 16)
MLP = (2, 8, 32)
DEC = (1, 5, 256)

Maker = Callable[[Path], Path]


def _quantized(d: Path) -> list[tuple[str, Path, tuple[int, ...]]]:
    cnn, mlp = ms_models.cnn_float(d), ms_models.mlp_attention_float(d)
    out = []
    for name, src, shape in (("cnn", cnn, CNN), ("mlp_attention", mlp, MLP)):
        out.append((f"{name} float", src, shape))
        out.append(
            (f"{name} QOperator", ms_models.quantized_static(src, d / f"{name}_qop.onnx", shape, qdq=False), shape)
        )
        out.append((f"{name} QDQ", ms_models.quantized_static(src, d / f"{name}_qdq.onnx", shape, qdq=True), shape))
        dyn = ms_models.quantized_dynamic(src, d / f"{name}_dyn.onnx")
        out.append(
            (f"{name} dynamic+extended", ms_models.ort_optimized(dyn, d / f"{name}_dynx.onnx", "extended"), shape)
        )
    return out


def _optimized(d: Path) -> list[tuple[str, Path, tuple[int, ...]]]:
    out = []
    for name, src, shape in (
        ("cnn", ms_models.cnn_float(d), CNN),
        ("mlp_attention", ms_models.mlp_attention_float(d), MLP),
    ):
        for level in ("basic", "extended"):
            out.append((f"{name} ORT {level}", ms_models.ort_optimized(src, d / f"{name}_{level}.onnx", level), shape))
    return out


def _nbits(d: Path) -> list[tuple[str, Path, tuple[int, ...]]]:
    src = ms_models.decoder_mlp_float(d, d=256, layers=4)
    out = [("decoder float", src, DEC)]
    out.append(("decoder MatMulNBits 4b/32", ms_models.matmul_nbits(src, d / "dec4.onnx"), DEC))
    out.append(("decoder MatMulNBits 8b/64", ms_models.matmul_nbits(src, d / "dec8.onnx", bits=8, block_size=64), DEC))
    out.append(("decoder MatMulNBits 4b acc4", ms_models.matmul_nbits(src, d / "dec4a.onnx", accuracy_level=4), DEC))
    return out


FAMILIES: dict[str, Callable[[Path], list[tuple[str, Path, tuple[int, ...]]]]] = {
    "quantized": _quantized,
    "optimized": _optimized,
    "matmul_nbits": _nbits,
}


def _timed(session: object, feeds: dict[str, np.ndarray]) -> float:
    t = time.perf_counter()
    session.run(None, feeds)  # type: ignore[attr-defined]
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--families", nargs="*", default=list(FAMILIES))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fam in args.families:
            d = Path(tmp) / fam
            d.mkdir()
            for label, path, shape in FAMILIES[fam](d):
                x = ms_models.input_for(shape)
                theirs = ms_models.ort_session(path)
                ours = onnxcore.Session(str(path))
                expected = theirs.run(None, {"x": x})[0]
                actual = ours.run(None, {"x": x})[0]
                err = float(np.abs(np.asarray(expected, np.float64) - actual).max())
                ok = err <= 3e-2 * float(np.abs(expected).max()) + 1e-6
                t_ort, t_oc = float("inf"), float("inf")
                for _ in range(args.repeat):
                    t_ort = min(t_ort, _timed(theirs, {"x": x}))
                    t_oc = min(t_oc, _timed(ours, {"x": x}))
                rows.append((fam, label, t_oc, t_ort, ok, err))
    print("| family | model | onnxcore (ms) | onnxruntime 1 thread (ms) | ratio | outputs agree (max abs diff) |")
    print("|---|---|---:|---:|---:|---|")
    for fam, label, t_oc, t_ort, ok, err in rows:
        print(f"| {fam} | {label} | {t_oc * 1e3:.3f} | {t_ort * 1e3:.3f} | {t_oc / t_ort:.1f}x | "
              f"{'yes' if ok else 'NO'} ({err:.2g}) |")  # fmt: skip


if __name__ == "__main__":
    main()
