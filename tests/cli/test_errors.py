"""Every failure of the command line is one line on stderr and the promised exit code (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.cli import main
from onnxcore.cli.commands import _DEMO_INPUT, bundled_model_path

MODEL = str(bundled_model_path())


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], code: int, *words: str) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"onnxcore {argv[0]}: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, err)
    return lines[0]


@pytest.fixture
def x(tmp_path: Path) -> str:
    np.save(tmp_path / "x.npy", _DEMO_INPUT)
    return str(tmp_path / "x.npy")


def test_argument_errors_exit_2(capsys: pytest.CaptureFixture[str], x: str) -> None:
    _fails(capsys, ["run", MODEL, "--input", x], 2, "--input", "NAME=FILE")
    _fails(capsys, ["run", MODEL, "--input", f"x={x}", "--profile", "-3"], 2, "--profile")
    _fails(capsys, ["run", MODEL, "--input", f"y={x}"], 2, "'y'", "x")
    _fails(capsys, ["run", MODEL], 2, "missing --input for x")
    _fails(capsys, ["convert", MODEL, "out.onnx", "--inline", "--external-data"], 2, "not allowed")
    _fails(capsys, ["statement", "--json", "--markdown"], 2, "not allowed")
    _fails(capsys, ["conformance", "somewhere", "--jobs", "0"], 2, "--jobs")
    assert main(["--help"]) == 0
    capsys.readouterr()


def test_a_wrong_input_name_lists_only_the_inputs_to_feed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # As in resnet50 (IR version 3): every weight is also a graph input, supplied by its initializer.
    model = oc.load(bundled_model_path())
    g = model.graph
    assert g is not None
    for i in range(40):
        g.initializer.append(oc.from_array(np.zeros(1, np.float32), f"weight_{i}"))
        g.input.append(
            oc.ValueInfoProto(
                name=f"weight_{i}",
                type=oc.TypeProto(
                    tensor_type=oc.TypeProto.Tensor(
                        elem_type=1, shape=oc.TensorShapeProto(dim=[oc.TensorShapeProto.Dimension(dim_value=1)])
                    )
                ),
            )
        )
    path = tmp_path / "many.onnx"
    oc.save(model, path)
    np.save(tmp_path / "x.npy", _DEMO_INPUT)
    line = _fails(capsys, ["run", str(path), "--input", f"data={tmp_path / 'x.npy'}"], 2, "'data'")
    assert line.endswith("inputs to feed: x") and "weight_" not in line


def test_unusable_input_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], x: str) -> None:
    good = Path(x).read_bytes()
    (tmp_path / "trunc.npy").write_bytes(good[:70])
    (tmp_path / "short.npy").write_bytes(good[:-5])
    (tmp_path / "garbage.npy").write_bytes(b"not an array at all")
    np.save(tmp_path / "obj.npy", np.array(["a", None], dtype=object), allow_pickle=True)
    (tmp_path / "garbage.pb").write_bytes(b"\xff\xff\xff")
    for name in ("trunc.npy", "short.npy", "garbage.npy", "garbage.pb"):
        _fails(capsys, ["run", MODEL, "--input", f"x={tmp_path / name}"], 2, name)
    _fails(capsys, ["run", MODEL, "--input", f"x={tmp_path / 'obj.npy'}"], 2, "object array", "'<U'")
    _fails(capsys, ["run", MODEL, "--input", f"x={tmp_path / 'missing.npy'}"], 2, "missing.npy")


def test_report_files_that_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(capsys, ["conformance", str(tmp_path), "--json", "/nonexistent/x.json"], 2, "/nonexistent/x.json")
    _fails(capsys, ["statement", "--package", str(tmp_path), "--output", "/nonexistent/x.md"], 2, "/nonexistent/x.md")
    _fails(capsys, ["conformance", "--generate", "/proc/x"], 2)
    _fails(capsys, ["convert", MODEL, "/nonexistent/d/x.onnx"], 2, "/nonexistent/d/x.onnx")
    assert not list(tmp_path.iterdir())


def test_a_failed_convert_names_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_save(model: object, path: object, **kw: object) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / ".out.onnx.x1y2.tmp"))

    monkeypatch.setattr(oc, "save", failing_save)
    out = tmp_path / "out.onnx"
    line = _fails(capsys, ["convert", MODEL, str(out)], 2, str(out), "No space left")
    assert ".tmp" not in line
    assert capsys.readouterr().err == ""  # no progress display when stderr is not a terminal


def test_run_prints_a_table_and_no_check_skips_validation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], x: str
) -> None:
    assert main(["run", MODEL, "--input", f"x={x}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["output", "type", "shape", "preview"]
    prob = next(line for line in lines if line.startswith("probabilities"))
    assert prob.split()[1:3] == ["tensor(float32)", "[4,"] and "..." in prob
    label = next(line for line in lines if line.startswith("label"))
    assert label.split()[1] == "tensor(int64)" and label.endswith("0, 1, 2, 0")
    model = oc.load(bundled_model_path())
    assert model.graph is not None
    model.graph.name = ""  # an error finding (Clause 10), which does not stop evaluation
    bad = tmp_path / "noname.onnx"
    oc.save(model, bad)
    _fails(capsys, ["run", str(bad), "--input", f"x={x}"], 1)
    assert main(["run", str(bad), "--input", f"x={x}", "--no-check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["label"]["preview"] == [0, 1, 2, 0]


def test_allow_outside_follows_symlinked_external_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A Hugging Face cache layout: the model directory holds symbolic links into a blob store.
    model_dir, blobs = tmp_path / "snapshot", tmp_path / "blobs"
    model_dir.mkdir()
    blobs.mkdir()
    oc.save(oc.load(bundled_model_path()), model_dir / "m.onnx", external_data=True, size_threshold=16)
    data = next(p for p in model_dir.iterdir() if p.name != "m.onnx")
    data.rename(blobs / "blob")
    data.symlink_to(blobs / "blob")
    np.save(tmp_path / "x.npy", _DEMO_INPUT)
    run = ["run", str(model_dir / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}", "--json"]
    _fails(capsys, run, 1)
    assert main([*run, "--allow-outside"]) == 0
    assert json.loads(capsys.readouterr().out)["label"]["preview"] == [0, 1, 2, 0]
    _fails(capsys, ["hash", str(model_dir / "m.onnx")], 1)
    assert main(["hash", str(model_dir / "m.onnx"), "--allow-outside"]) == 0
    assert main(["hash", MODEL]) == 0
    digests = capsys.readouterr().out.split()
    assert digests[0] == digests[2]
    assert main(["check", str(model_dir / "m.onnx")]) == 1
    assert main(["check", str(model_dir / "m.onnx"), "--allow-outside"]) == 0
    capsys.readouterr()
    out = tmp_path / "inline.onnx"
    assert main(["convert", str(model_dir / "m.onnx"), str(out), "--inline", "--allow-outside"]) == 0
    assert main(["hash", str(out)]) == 0
    assert capsys.readouterr().out.split()[0] == digests[0]
