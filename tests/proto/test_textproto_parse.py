"""Reading protocol buffers' text format (``text_format.Parse``'s counterpart), against protobuf's own reader."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

import onnxcore as oc
from onnxcore.proto.textproto_parse import TextFormatError, parse_text

onnx = pytest.importorskip("onnx")
text_format = pytest.importorskip("google.protobuf.text_format")


def test_str_reads_back_on_every_vector(node_cases: list[Path]) -> None:
    """parse_text(str(m)) == m, octet for octet, on every ONNX 1-3 vector and shipped model."""
    files = [d / "model.onnx" for d in node_cases] + corpus.shipped_models()
    bad = []
    for f in files:
        m = oc.decode(oc.ModelProto, f.read_bytes())
        m.DiscardUnknownFields()  # str() leaves them out, as protobuf's does
        back = parse_text(str(m), oc.ModelProto)
        if back != m or back.SerializeToString() != m.SerializeToString():
            bad.append(f)
    assert len(files) > 1500 and bad == []


HAND_WRITTEN = r"""
# a comment
ir_version: 0x8
producer_name: 'single ' "and double"  # adjacent literals join
doc_string: "\x41\101\n\t\\\"\'é\q"
opset_import { domain: "" version: 017 }
opset_import: < version: 1, domain: "ai.onnx.ml" >
graph {
  name: "g"
  node [{ op_type: "Relu" input: ["x"] output: "y" }, { op_type: "Abs" input: "y" output: "z" }]
  initializer {
    dims: [2, 3]
    data_type: 1
    float_data: [1.5f, -inf, nan, 1e-3, .5, 2]
    raw_data: "\000\377"
    data_location: EXTERNAL
  }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_param: "N" } dim { dim_value: -3 } } } } }
}
"""


def test_hand_written_text_as_protobuf_reads_it() -> None:
    """Comments, hex and octal integers, both quotes, escapes, [a, b] lists, < >, commas, enums by name."""
    ours = parse_text(HAND_WRITTEN, oc.ModelProto)
    theirs = text_format.Parse(HAND_WRITTEN, onnx.ModelProto())
    assert ours.SerializeToString() == theirs.SerializeToString()
    assert str(ours) == str(theirs)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("nope: 1", "line 1, column 1"),
        ("ir_version: 'x'", "expected a number"),
        ("graph { name: 3 }", "expected a quoted string"),
        ('graph {\n  node { op_type: "A" \n', "end of text"),
        ("graph { initializer { data_location: SOMEWHERE } }", "not a value"),
        ("ir_version 3", "expected ':'"),
        ('doc_string: "open', "unexpected character"),
        ("ir_version: 1 $", "unexpected character"),
    ],
)
def test_refusals_name_line_and_column(text: str, where: str) -> None:
    """Bad text is a TextFormatError (a ValueError) naming where and what; protobuf refuses it too."""
    with pytest.raises(TextFormatError, match=where):
        parse_text(text, oc.ModelProto)
    with pytest.raises(text_format.ParseError):
        text_format.Parse(text, onnx.ModelProto())
    assert issubclass(TextFormatError, ValueError)
