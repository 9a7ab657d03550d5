"""``onnxcore optimize IN OUT``: exit codes, the report, atomic writes (never a partial file, never a traceback)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from optimize_models import T, model, ops, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.cli import main
from onnxcore.optimizer import api
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.model_passes import MODEL_PIPELINE, model_rewrite
from onnxcore.runtime.rewrite_model import rewrite_model
from onnxcore.runtime.step import PlanNode

X = vi("X", T.FLOAT, ["N", 4])
Y = vi("Y", T.FLOAT, ["N", 4])


def _write(tmp_path: Path) -> Path:
    w = tensor("w", np.arange(4, dtype=np.float32))
    nodes = [helper.make_node("Identity", ["X"], ["a"]), helper.make_node("Neg", ["w"], ["nw"]),
             helper.make_node("Add", ["a", "nw"], ["Y"]), helper.make_node("Neg", ["X"], ["dead"])]  # fmt: skip
    path = tmp_path / "in.onnx"
    onnxcore.save(model(nodes, [X], [Y], [w]), path)
    return path


def test_optimize_writes_out_and_prints_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path)
    out = tmp_path / "out.onnx"
    assert main(["optimize", str(src), str(out)]) == 0
    text = capsys.readouterr().out
    assert "nodes: 4 -> 1" in text and "verified on 3 input sets" in text
    assert ops(onnxcore.load(out)) == ["Add"]
    assert onnxcore.check(str(out)).ok


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path)
    assert main(["optimize", str(src), str(tmp_path / "o.onnx"), "--json", "--input-shape", "X=7,4"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["nodes_before"] == 4 and rep["nodes_after"] == 1 and rep["verified"] is True
    assert rep["verify_shapes"] == [{"X": [7, 4]}]
    assert rep["ops_after"] == {"Add": 1}


def test_options_reach_the_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path)
    out = tmp_path / "o.onnx"
    assert main(["optimize", str(src), str(out), "--disable", "fold_constants", "--no-verify", "--level", "basic"]) == 0
    assert ops(onnxcore.load(out)) == ["Neg", "Add"]
    assert "not verified" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--disable", "nope"], "no pass named nope"),
        (["--input-shape", "X=a,b"], "whole numbers"),
        (["--level", "turbo"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    src = _write(tmp_path)
    out = tmp_path / "o.onnx"
    assert main(["optimize", str(src), str(out), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_missing_model_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["optimize", str(tmp_path / "none.onnx"), str(tmp_path / "o.onnx")]) == 2
    assert "cannot read" in capsys.readouterr().err


def _break_sub(graph: PlanGraph) -> list[PlanNode]:
    out = []
    for bn in graph.nodes:
        if bn.node.op_type == "Add" and bn.inputs[0] != bn.inputs[1]:
            copy = PlanNode(bn.index, bn.node, bn.call, bn.kw, bn.outer)
            copy.inputs, copy.outputs, copy.since = [bn.inputs[0], bn.inputs[0]], list(bn.outputs), bn.since
            bn = copy
        out.append(bn)
    return out


def test_a_failed_proof_exits_1_and_leaves_out_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rewrites = (*MODEL_PIPELINE, model_rewrite("break_add", _break_sub))
    monkeypatch.setattr(api, "rewrite_model", functools.partial(rewrite_model, rewrites=rewrites))
    src = _write(tmp_path)
    out = tmp_path / "o.onnx"
    out.write_bytes(b"old contents")
    assert main(["optimize", str(src), str(out)]) == 1
    err = capsys.readouterr().err
    assert "break_add" in err and "nothing was written" in err and "Traceback" not in err
    assert out.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.onnx", "o.onnx"]  # no temporary left behind


def test_an_unwritable_output_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path)
    assert main(["optimize", str(src), str(tmp_path / "no" / "dir" / "o.onnx")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_html_report_has_an_optimization_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path)
    page = tmp_path / "r.html"
    assert main(["optimize", str(src), str(tmp_path / "o.onnx"), "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert '<section id="optimization">' in text and 'href="#optimization"' in text
    assert "4 \u2192 1" in text and "fold_constants" in text and "verified on 3 input sets" in text
    assert "shape annotations" in text and "kept" in text


def test_the_report_without_optimization_has_no_such_section() -> None:
    m = model([helper.make_node("Relu", ["X"], ["Y"])], [X], [Y])
    assert 'id="optimization"' not in onnxcore.report(m)
