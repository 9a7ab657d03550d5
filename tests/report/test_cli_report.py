"""``onnxcore report`` and ``onnxcore.report``: what the page and the drawing contain, and the command's errors."""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import corpus
import numpy as np
import onnx
import pytest
import report_models
from onnx import numpy_helper

import onnxcore
from onnxcore.cli import main
from onnxcore.proto.encoder import encode_parts

SQUEEZE = corpus.onnx_data_dir() / "light" / "light_squeezenet.onnx"


def _data(html: str) -> dict:  # type: ignore[type-arg]
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert m
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_the_public_name_is_the_function() -> None:
    # The package loaded first (as the command line does) must not shadow the function.
    import onnxcore.reporting

    assert callable(onnxcore.report)
    assert onnxcore.report is onnxcore.reporting.report


def test_page_is_self_contained_and_summarises_the_model(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(SQUEEZE), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    # Nothing to fetch: no src= or href= but in-page anchors and the empty data: icon.
    assert not re.search(r'\ssrc="', html)
    assert set(re.findall(r'href="([^"#][^"]*)"', html)) <= {"data:,"}
    theirs = onnx.load(str(SQUEEZE))
    assert f"<td>{theirs.ir_version}</td>" in html
    for o in theirs.opset_import:
        assert f"{o.domain or 'ai.onnx'} {o.version}" in html
    elems = sum(int(np.prod(t.dims)) for t in theirs.graph.initializer)
    assert f"{elems:,} elements in {len(theirs.graph.initializer)} initializers" in html
    digest = hashlib.sha256()
    for part in encode_parts(onnxcore.load(SQUEEZE), canonical=True).parts():
        digest.update(part)
    assert digest.hexdigest() in html
    info = _data(html)["info"]
    assert sum(1 for v in info.values() if v.get("kind") == "node") == len(theirs.graph.node)


def test_svg_alone(tmp_path: Path) -> None:
    out = tmp_path / "d.svg"
    assert main(["report", str(SQUEEZE), "--format", "svg", "-o", str(out)]) == 0
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    boxes = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if (g.get("class") or "").startswith("node ")]
    assert len(boxes) == len(onnx.load(str(SQUEEZE)).graph.node)
    assert "<script" not in out.read_text(encoding="utf-8")


def test_profile_with_given_inputs_times_every_step(tmp_path: Path) -> None:
    model = report_models.transformer_model(60)
    path = tmp_path / "t.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(0).standard_normal((2, 5, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--input", f"tokens={tmp_path / 'x.npy'}", "--profile", "1", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "inputs: given" in html
    info = _data(html)["info"]
    timed = [v for v in info.values() if v.get("kind") == "node" and "time" in v]
    # Every node is a step or fused into one (carrying its step's time), except the no-op Identity nodes at the
    # end, which the plan leaves out (their readers read their inputs): those are marked as no step.
    nodes = [v for v in info.values() if v.get("kind") == "node"]
    untimed = [v for v in nodes if "time" not in v]
    assert len(nodes) == 60 and len(timed) + len(untimed) == 60
    assert untimed and all(v["op"] == "Identity" and v.get("not_a_step") for v in untimed)
    assert all(not v.get("not_a_step") for v in timed)
    assert '<rect class="bar"' in html


def test_profile_on_random_inputs_of_declared_shapes(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(SQUEEZE), "--profile", "1", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "random, of the declared shapes" in html
    assert "(fused)" in html  # squeezenet's Conv+Relu run as one plan step


def test_findings_are_linked_to_their_nodes() -> None:
    model = onnxcore.from_onnx(report_models.findings_model())
    html = onnxcore.report(model)
    data = _data(html)
    codes = {f["code"]: data["info"][f["node"]]["name"] for f in data["findings"]}
    assert codes == {"E-VALUE-UNDEFINED": "orphan_relu", "E-TYPE-BINDING": "mixed_add"}


def test_initializers_are_folded_into_their_consumers() -> None:
    model = report_models.transformer_model(30)
    html = onnxcore.report(onnxcore.from_onnx(model))
    info = _data(html)["info"]
    mm = next(v for v in info.values() if v.get("op") == "MatMul" and any(r[3] == "initializer" for r in v["inputs"]))
    weight = next(r for r in mm["inputs"] if r[3] == "initializer")
    arr = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == weight[1]))
    assert weight[2] == "float[" + ",".join(map(str, arr.shape)) + "]"
    assert not any(v.get("name") == weight[1] for v in info.values() if v.get("kind") == "input")


@pytest.mark.parametrize(
    ("argv", "code", "text"),
    [
        (["report", "/no/such.onnx"], 2, "cannot read"),
        (["report", str(SQUEEZE), "--format", "svg", "--profile"], 2, "HTML page only"),
        (["report", str(SQUEEZE), "--format", "png"], 2, "invalid choice"),
        (["report", str(SQUEEZE), "-o", "/no/such/dir/r.html"], 2, "no such directory"),
    ],
)
def test_errors_are_one_line(argv: list[str], code: int, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert text in err and len(err.strip().splitlines()) == 1


def test_a_model_that_does_not_run_is_reported_without_a_profile(tmp_path: Path) -> None:
    html = onnxcore.report(onnxcore.from_onnx(report_models.findings_model()), profile=1)
    assert "Not profiled: the model has errors" in html


def test_external_data_files_are_listed_and_the_hash_ignores_the_layout(tmp_path: Path) -> None:
    model = report_models.transformer_model(60)
    inline = tmp_path / "inline.onnx"
    onnx.save(model, str(inline))
    ext_dir = tmp_path / "ext"
    ext_dir.mkdir()
    onnx.save_model(
        model,
        str(ext_dir / "m.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    html = onnxcore.report(ext_dir / "m.onnx")
    size = (ext_dir / "weights.bin").stat().st_size
    assert "<td>weights.bin</td>" in html
    external = sum(
        1
        for t in onnx.load(str(ext_dir / "m.onnx"), load_external_data=False).graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
    )
    assert f"<td>{external}</td>" in html and f"<td>{size:,}</td>" in html
    digest = re.compile(r"<th>canonical hash \(SHA-256\)</th><td>([0-9a-f]{64})</td>")
    m1, m2 = digest.search(html), digest.search(onnxcore.report(inline))
    assert m1 and m2 and m1.group(1) == m2.group(1)


def test_a_model_without_a_graph_is_reported_with_its_findings() -> None:
    model = onnxcore.ModelProto(ir_version=8)
    html = onnxcore.report(model)
    findings = onnxcore.check(model).findings
    assert findings
    for f in findings:
        assert f.code in html
    assert ET.fromstring(onnxcore.report(model, format="svg")).tag == "{http://www.w3.org/2000/svg}svg"
