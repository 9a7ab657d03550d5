"""``run --output-dir``: an output name never chooses where a file goes (issue 22)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from onnxcore.cli import main
from onnxcore.cli.commands import bundled_model_path
from onnxcore.cli.files import encode_name

onnx = pytest.importorskip("onnx")


def _model(tmp_path: Path, outside: Path) -> Path:
    from onnx import TensorProto, helper

    names = [str(outside / "pwned"), "../escaped", "gpu_0/softmax_1", "/model/out", "..", ".", "link"]
    nodes = [helper.make_node("Identity", ["x"], [n]) for n in names]
    nodes.append(helper.make_node("Identity", ["s"], ["text"]))
    nodes.append(helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]))
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
        ],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in names]
        + [
            helper.make_tensor_value_info("text", TensorProto.STRING, [2]),
            helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [2]),
        ],
    )
    path = tmp_path / "names.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.save(tmp_path / "x.npy", np.array([1, 2], np.float32))
    np.save(tmp_path / "s.npy", np.array(["a", "bé"]))
    return path


def _run(tmp_path: Path, model: Path, out: Path) -> int:
    return main(
        ["run", str(model), "--input", f"x={tmp_path / 'x.npy'}", "--input", f"s={tmp_path / 's.npy'}"]
        + ["--output-dir", str(out)]
    )


def test_output_names_cannot_leave_the_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target"
    target.write_text("untouched")
    model = _model(tmp_path, outside)
    out = tmp_path / "work" / "out"
    out.mkdir(parents=True)
    # A symbolic link already in the directory, at the very name an output is written to, pointing outside.
    (out / "link.npy").symlink_to(target)
    assert _run(tmp_path, model, out) == 0
    capsys.readouterr()
    assert target.read_text() == "untouched"
    assert sorted(p.name for p in outside.iterdir()) == ["target"]
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["out"]
    assert not (tmp_path / "escaped.npy").exists()
    files = json.loads((out / "names.json").read_text(encoding="utf-8"))
    assert set(files) == {
        str(outside / "pwned"),
        "../escaped",
        "gpu_0/softmax_1",
        "/model/out",
        "..",
        ".",
        "link",
        "text",
        "seq",
    }
    for name, file in files.items():
        assert os.sep not in file and not file.startswith(".") and (out / file).is_file()
        assert not (out / file).is_symlink()
        if name not in ("text", "seq"):
            np.testing.assert_array_equal(np.load(out / file, allow_pickle=False), [1, 2])
    assert sorted(p.name for p in out.iterdir()) == sorted([*files.values(), "names.json"])  # no temporaries left
    # A string output is a unicode array that loads without pickle; a sequence is JSON.
    text = np.load(out / files["text"], allow_pickle=False)
    assert text.dtype.kind == "U" and text.tolist() == ["a", "bé"]
    seq = json.loads((out / files["seq"]).read_text(encoding="utf-8"))
    assert [item["data"] for item in seq["sequence"]] == [[1.0, 2.0], [1.0, 2.0]]


def test_a_written_string_output_can_be_fed_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "o"
    outside.mkdir()
    model = _model(tmp_path, outside)
    out = tmp_path / "out"
    assert _run(tmp_path, model, out) == 0
    files = json.loads((out / "names.json").read_text(encoding="utf-8"))
    args = ["run", str(model), "--input", f"x={tmp_path / 'x.npy'}", "--input", f"s={out / files['text']}", "--json"]
    capsys.readouterr()
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["text"]["preview"] == ["a", "bé"]


def test_encode_name() -> None:
    for name in ["a/b", "/abs", "..", ".", "", "a\\b", "x" * 1000, "é/ü", "a b:c"]:
        enc = encode_name(name)
        assert "/" not in enc and "\\" not in enc and enc not in (".", "..") and not enc.startswith(".")
        assert 0 < len(enc.encode()) <= 200
    assert encode_name("gpu_0/softmax_1") == "gpu_0%2Fsoftmax_1"
    assert encode_name("plain_name-1.2") == "plain_name-1.2"
    assert encode_name("x" * 1000) != encode_name("x" * 999)


def test_output_dir_that_cannot_be_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", np.ones((1, 4), np.float32))
    model = bundled_model_path()
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    for bad in (a_file, a_file / "below"):
        assert main(["run", str(model), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("onnxcore run: --output-dir") and len(err.strip().splitlines()) == 1
    assert a_file.read_text() == "keep"
