"""Any size, one file: a model file whose weights are inline is optimized from its path in lean memory (issue 39
item 4). Untouched weights stay views of the source's mapping, a large folded weight goes to the spill file, and the
writer copies both file to file; the result computes what the original does (onnxruntime judges)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from optimize_models import T, model, ops, ort_run, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.external import write
from onnxcore.external.mapped import file_range
from onnxcore.external.spill import SPILL_FROM
from onnxcore.optimizer import optimize, save_optimized
from onnxcore.runtime.optimize.standard import batchnorm

D = 2048  # a 2048 x 2048 float32 weight: 16 MiB, large enough to spill


def _gemm_bn(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    w0 = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    w1 = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    # Scales that are powers of two, mean 0, variance 1 and epsilon 0: the folded Gemm rounds as the Gemm and the
    # BatchNormalization do, so that the proof compares equal values (what this test is about is memory).
    scale = (2.0 ** rng.integers(-2, 3, D)).astype(np.float32)
    bn = [scale, rng.standard_normal(D).astype(np.float32), np.zeros(D, np.float32), np.ones(D, np.float32)]
    names = ["scale", "bias", "mean", "var"]
    nodes = [
        helper.make_node("Gemm", ["X", "w0"], ["g"], transB=1),
        helper.make_node("BatchNormalization", ["g", *names], ["h"], epsilon=0.0),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w1"], ["Y"]),
    ]
    inits = [tensor("w0", w0), tensor("w1", w1), *(tensor(n, v) for n, v in zip(names, bn, strict=True))]
    m = model(nodes, [vi("X", T.FLOAT, ["N", D])], [vi("Y", T.FLOAT, ["N", D])], inits)
    path = tmp_path / "src" / "single.onnx"
    path.parent.mkdir()
    onnxcore.save(m, path)  # one file, every weight inline
    return path


def test_a_single_file_is_optimized_with_its_weights_left_in_files(tmp_path: Path) -> None:
    src = _gemm_bn(tmp_path)
    result, rep = optimize(src)
    assert rep.verified and ops(result) == ["Gemm", "Relu", "MatMul"]
    inits = {t.name: t for t in result.graph.initializer}
    # The untouched weight: still a view of the source file (never read by the optimizer but to verify).
    kept = file_range(inits["w1"].raw_data)
    assert kept is not None and kept.file.path == os.path.realpath(src)
    # The folded weight: in the spill file (an unlinked file: a descriptor, no path), not in anonymous memory.
    folded = [t for name, t in inits.items() if name.startswith("w0") and len(t.dims) == 2]
    assert len(folded) == 1 and len(folded[0].raw_data) == D * D * 4 >= SPILL_FROM
    spilled = file_range(folded[0].raw_data)
    assert spilled is not None and spilled.file.path is None and spilled.file.fd is not None
    assert sorted(p.name for p in src.parent.iterdir()) == ["single.onnx"]  # the spill file left nothing
    out = tmp_path / "out" / "single.onnx"
    out.parent.mkdir()
    assert save_optimized(result, out) is False  # under 2 GiB and no external data before: one file
    written = onnxcore.load(out)
    x = {"X": np.random.default_rng(5).standard_normal((3, D)).astype(np.float32)}
    # onnxruntime adds the folded bias inside its GEMM (another order of additions than Gemm then BatchNormalization):
    # equal within float32 sums of 2048 products, far below what a wrong fold would give.
    (want,), (got,) = ort_run(onnxcore.load(src), x), ort_run(written, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="needs copy_file_range")
def test_the_optimized_single_file_is_written_by_file_to_file_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _gemm_bn(tmp_path)
    result, _ = optimize(src, verify=False)
    copied: list[int] = []
    real = os.copy_file_range

    def spy(*a: int) -> int:
        copied.append(a[2])
        return real(*a)

    monkeypatch.setattr(write.os, "copy_file_range", spy)
    out = tmp_path / "out.onnx"
    save_optimized(result, out, external=True)
    monkeypatch.setattr(write.os, "copy_file_range", real)
    assert sum(copied) == 2 * D * D * 4  # the kept weight from the source, the folded one from the spill file
    np.testing.assert_array_equal(
        onnxcore.to_array(next(t for t in onnxcore.load(out).graph.initializer if t.name == "w1")),
        onnxcore.to_array(next(t for t in onnxcore.load(src).graph.initializer if t.name == "w1")),
    )


@pytest.mark.parametrize("trans_b", [0, 1])
def test_the_folded_weight_is_computed_by_blocks_as_the_whole_expression(
    monkeypatch: pytest.MonkeyPatch, trans_b: int
) -> None:
    rng = np.random.default_rng(11)
    b = rng.standard_normal((37, 29)).astype(np.float32)
    s = rng.random(37 if trans_b else 29) + 0.5
    monkeypatch.setattr(batchnorm, "_ROW_BLOCK_OCTETS", 5 * 29 * 8)  # blocks of 5 rows, the last one short
    got = batchnorm._scaled_rows(b, s, trans_b)
    whole = (b.astype(np.float64) * (s[:, None] if trans_b else s[None, :])).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, whole)
