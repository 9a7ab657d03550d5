"""Any size: a model with external data (Clause 13) is optimized from its path and written with its own data file
beside the output; untouched tensors are copied, folded ones written anew, nothing refers to the source's files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from optimize_models import T, model, ops, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.cli import main
from onnxcore.external.reference import is_external
from onnxcore.optimizer import optimize, save_optimized
from onnxcore.optimizer.write import EXTERNAL_FROM


def _big_model(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((512, 512)).astype(np.float32)  # 1 MiB, read by a node: copied as it is
    w2 = rng.standard_normal((512, 512)).astype(np.float32)  # transposed: folded into a new tensor
    unused = rng.standard_normal((256, 512)).astype(np.float32)
    nodes = [
        helper.make_node("Transpose", ["w2"], ["w2t"], perm=[1, 0]),
        helper.make_node("MatMul", ["X", "w1"], ["h"]),
        helper.make_node("MatMul", ["h", "w2t"], ["Y"]),
    ]
    m = model(nodes, [vi("X", T.FLOAT, ["N", 512])], [vi("Y", T.FLOAT, ["N", 512])],
              [tensor("w1", w1), tensor("w2", w2), tensor("unused", unused)])  # fmt: skip
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    path = src_dir / "model.onnx"
    onnxcore.save(m, path, external_data=True)
    return path, {"w1": w1, "w2t": w2.T}


def test_a_model_with_external_data_is_written_with_its_own_data_file(tmp_path: Path) -> None:
    src, weights = _big_model(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "small.onnx"
    result, rep = optimize(src)
    assert rep.verified and ops(result) == ["MatMul", "MatMul"]
    assert save_optimized(result, out) is True
    assert sorted(p.name for p in out_dir.iterdir()) == ["small.onnx", "small.onnx.data"]
    # Every external reference names the new data file, never the source's.
    written = onnxcore.load(out, external_data=False)
    locations = {e.value for t in written.graph.initializer if is_external(t) for e in t.external_data
                 if e.key == "location"}  # fmt: skip
    assert locations == {"small.onnx.data"}
    loaded = onnxcore.load(out)
    values = {t.name: onnxcore.to_array(t) for t in loaded.graph.initializer}
    assert sorted(values) == ["w1", "w2t"]  # the unused tensor is gone
    np.testing.assert_array_equal(values["w1"], weights["w1"])
    np.testing.assert_array_equal(values["w2t"], weights["w2t"])
    # The data file holds what is read, not the source's 2.5 MiB.
    assert (out_dir / "small.onnx.data").stat().st_size < 2 * 512 * 512 * 4 + 2 * 4096
    assert rep.size_after < rep.size_before
    x = {"X": np.random.default_rng(1).standard_normal((2, 512)).astype(np.float32)}
    np.testing.assert_allclose(
        onnxcore.Session(str(out)).run(None, x)[0], onnxcore.Session(str(src)).run(None, x)[0], rtol=1e-5, atol=1e-5
    )


def test_a_model_without_external_data_stays_one_file(tmp_path: Path) -> None:
    m = model([helper.make_node("Relu", ["X"], ["Y"])], [vi("X", T.FLOAT, [2])], [vi("Y", T.FLOAT, [2])])
    result, _ = optimize(m)
    assert save_optimized(result, tmp_path / "o.onnx") is False
    assert [p.name for p in tmp_path.iterdir()] == ["o.onnx"]
    assert EXTERNAL_FROM < 2**31  # a single file past 2 GiB is written with external data


def test_the_cli_writes_external_data_beside_out(tmp_path: Path) -> None:
    src, _ = _big_model(tmp_path)
    out = tmp_path / "cli.onnx"
    assert main(["optimize", str(src), str(out), "--no-verify"]) == 0
    assert (tmp_path / "cli.onnx.data").is_file()
    assert onnxcore.check(str(out)).ok
