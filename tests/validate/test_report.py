"""The Report API, paths, external references, weights left unread, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxcore
from onnxcore.build import helper as oh
from onnxcore.cli import main as cli_main
from onnxcore.proto.messages import StringStringEntryProto, TensorProto
from onnxcore.validate import Finding, Report, check

mutants = pytest.importorskip("mutants")


def _bad_model() -> onnxcore.ModelProto:
    m = mutants.base()
    assert m.graph is not None
    m.graph.name = ""
    m.graph.node[1].op_type = "Upsample"  # deprecated: a warning ...
    m.graph.node[1].attribute = []
    m.graph.node[1].input.append("sc")  # ... with one float scale per axis of its [2, 3] input
    m.graph.initializer.append(onnxcore.from_array(np.ones(2, np.float32), "sc"))
    return m


def test_report_api() -> None:
    report = check(_bad_model())
    assert not report.ok
    assert [f.code for f in report.errors] == ["E-GRAPH-NAME"]
    assert [f.code for f in report.warnings] == ["W-OP-DEPRECATED"]
    assert report.errors[0] == Finding("error", "E-GRAPH-NAME", "7.1", "the graph has no name", "graph")
    doc = json.loads(report.to_json())
    assert doc["ok"] is False and doc["errors"] == 1 and doc["warnings"] == 1
    assert doc["findings"][0]["code"] == "E-GRAPH-NAME"
    text = str(report)
    assert "does not conform" in text and "E-GRAPH-NAME" in text and "clause 7.1" in text
    with pytest.raises(onnxcore.ValidationError) as info:
        report.raise_for_errors()
    assert info.value.report is report
    ok = check(mutants.base())
    assert ok.ok and ok.findings == []
    ok.raise_for_errors()


def test_top_level_names() -> None:
    import onnxcore.validate as package

    assert onnxcore.Report is Report and onnxcore.Finding is Finding
    # ``onnxcore.check`` is the function whichever modules are imported (the package is ``validate``).
    assert onnxcore.check is package.check
    assert onnxcore.check(mutants.base()).findings == []


def test_path_and_octets_and_decode_errors(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnxcore.save(_bad_model(), path)
    by_path = check(path)
    assert by_path.source == str(path)
    assert [f.code for f in by_path.errors] == ["E-GRAPH-NAME"]
    assert check(path.read_bytes()).findings == by_path.findings
    path.write_bytes(path.read_bytes()[:-5])
    broken = check(path)
    assert [f.code for f in broken.errors] == ["E-DECODE"]
    too_big = check(path.read_bytes(), limits=onnxcore.Limits(max_message_bytes=10))
    assert [f.code for f in too_big.errors] == ["E-DECODE-LIMIT"]
    with pytest.raises(onnxcore.OnnxCoreError):
        check(tmp_path / "missing.onnx")
    with pytest.raises(TypeError):
        check(42)  # type: ignore[arg-type]


def test_no_weight_byte_is_read() -> None:
    class Poison:
        """Stands in for raw_data: it has a length, and any other use fails."""

        def __init__(self, n: int) -> None:
            self.n = n

        def __len__(self) -> int:
            return self.n

        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"raw_data touched: {name}")

        def __getitem__(self, k: object) -> object:
            raise AssertionError("raw_data read")

        def __buffer__(self, flags: int) -> memoryview:
            raise AssertionError("raw_data read")

        def __iter__(self) -> object:
            raise AssertionError("raw_data read")

    m = mutants.base()
    assert m.graph is not None
    m.graph.initializer[0].raw_data = Poison(24)  # type: ignore[assignment]
    assert check(m).findings == []
    m.graph.initializer[0].raw_data = Poison(23)  # type: ignore[assignment]
    assert [f.code for f in check(m).errors] == ["E-TENSOR-DATA"]


def test_external_references_are_verified_from_a_path(tmp_path: Path) -> None:
    m = mutants.base()
    assert m.graph is not None
    w = m.graph.initializer[0]
    w.clear_field("raw_data")
    w.data_location = onnxcore.TensorProto.DataLocation.EXTERNAL
    w.external_data = [onnxcore.StringStringEntryProto(key="location", value="w.bin")]
    path = tmp_path / "m.onnx"
    onnxcore.save(m, path)
    missing = check(path)
    assert [(f.code, f.clause) for f in missing.errors] == [("E-EXTERNAL-FILE", "15.3")]
    assert missing.errors[0].location == 'graph/initializer[0] "w"'
    (tmp_path / "w.bin").write_bytes(bytes(24))
    assert check(path).findings == []
    w.external_data = [onnxcore.StringStringEntryProto(key="location", value="../w.bin")]
    onnxcore.save(m, path)
    assert [f.code for f in check(path).errors] == ["E-EXTERNAL-REF"]  # Clause 13.2: parent component
    # Clause 15.3: a symbolic link is refused even inside the directory.
    w.external_data = [onnxcore.StringStringEntryProto(key="location", value="link.bin")]
    onnxcore.save(m, path)
    (tmp_path / "link.bin").symlink_to(tmp_path / "w.bin")
    assert [f.code for f in check(path).errors] == ["E-EXTERNAL-FILE"]
    # Without a path, only the reference itself is checked.
    assert check(m).findings == []


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.onnx"
    bad = tmp_path / "bad.onnx"
    onnxcore.save(mutants.base(), good)
    onnxcore.save(_bad_model(), bad)
    assert cli_main(["check", str(good)]) == 0
    assert "conforms" in capsys.readouterr().out
    assert cli_main(["check", str(bad), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] == 1
    assert cli_main(["check", str(tmp_path / "nope.onnx")]) == 2
    assert "nope.onnx" in capsys.readouterr().err


def test_full_false_skips_the_type_checks() -> None:
    m = next(x for x in mutants.MUTANTS if x.code == "E-TYPE-CONSTRAINT").build()
    assert "E-TYPE-CONSTRAINT" in check(m).codes()
    assert check(m, full=False).findings == []


def test_a_local_function_call_is_not_a_custom_operator() -> None:
    report = check(mutants.base_fn())
    assert report.findings == []


# --- An external reference whose length disagrees with dims and type (issue 29: found only when read) -------------


def _external_model(tmp_path: Path, length: int | None, data: bytes) -> str:
    (tmp_path / "w.bin").write_bytes(data)
    w = TensorProto(name="w", data_type=TensorProto.DataType.FLOAT, dims=[4, 4], data_location=1)
    w.external_data.append(StringStringEntryProto(key="location", value="w.bin"))
    if length is not None:
        w.external_data.append(StringStringEntryProto(key="length", value=str(length)))
    g = oh.make_graph(
        [oh.make_node("Relu", ["w"], ["y"])], "g", [], [oh.make_tensor_value_info("y", 1, [4, 4])], initializer=[w]
    )
    path = str(tmp_path / "m.onnx")
    onnxcore.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)]), path)
    return path


def test_external_length_shorter_than_dims_need(tmp_path: Path) -> None:
    path = _external_model(tmp_path, 32, np.arange(16, dtype=np.float32).tobytes())
    errors = check(path).errors
    assert [(f.code, f.location) for f in errors] == [("E-TENSOR-DATA", 'graph/initializer[0] "w"')]
    assert "declares length 32" in errors[0].message and "needs 64" in errors[0].message
    # The model loaded with its data: the contents resolved are what is compared.
    short = _external_model(tmp_path, None, np.arange(8, dtype=np.float32).tobytes())
    (finding,) = check(onnxcore.load(short)).errors
    assert finding.code == "E-TENSOR-DATA" and "hold 32 octet(s)" in finding.message
    assert check(_external_model(tmp_path, 64, np.arange(16, dtype=np.float32).tobytes())).findings == []
