"""Text that is not the syntax: a :class:`TextSyntaxError` naming the line and column of the offending token."""

from __future__ import annotations

import pytest

from onnxcore import OnnxCoreError
from onnxcore.proto import GraphProto, TensorProto
from onnxcore.text import TextSyntaxError, parse_function, parse_graph, parse_model, parse_node, to_text

MODEL = """<ir_version: 8, opset_import: ["" : 18]>
agraph (float[N] X) => (float[N] Y)
{
    Y = Relu (X
}
"""


def test_the_error_names_line_and_column() -> None:
    with pytest.raises(TextSyntaxError) as info:
        parse_model(MODEL)
    err = info.value
    assert (err.line, err.column) == (5, 1)
    assert str(err) == "line 5, column 1: expected ',' or ')' in the inputs, found '}'"
    assert isinstance(err, OnnxCoreError) and isinstance(err, ValueError)


@pytest.mark.parametrize(
    ("parse", "text", "line", "column", "words"),
    [
        (parse_node, "y = Relu (x", 1, 12, "the end of the text"),
        (parse_node, "y = Relu <a: intt = 1> (x)", 1, 14, "unknown attribute type 'intt'"),
        (parse_node, 'y = Relu <a = [1, "s"]> (x)', 1, 15, "cannot tell the type"),
        (parse_node, "y = Relu (x) extra", 1, 14, "expected the end of the text"),
        (parse_node, "y = Relu <a = 1 (x)", 1, 17, "',' or '>'"),
        (parse_node, 'y = Relu <s = "open> (x)', 1, 15, "unterminated string"),
        (parse_node, "y = Relu (x) $", 1, 14, "unexpected character '$'"),
        (parse_graph, "g (floot[2] x) => () {}", 1, 4, "unknown type 'floot'"),
        (parse_graph, "g (float[2] x) () {}", 1, 16, "'=>'"),
        (parse_graph, "g () => () <float[2] w = {1, x}> {}", 1, 30, "expected a float"),
        (parse_graph, "g () => () <int64[2] w = {1, 2.5}> {}", 1, 30, "expected an integer"),
        (parse_graph, "g () => () {\n  y = Relu(x)\n", 3, 1, "'}' closing the nodes"),
        (parse_function, '<domain: "d", bogus: 1> f (x) => (y) {}', 1, 15, "unknown key 'bogus'"),
        (parse_model, '<ir_version: "8"> g () => () {}', 1, 14, "expected an integer"),
        (parse_model, "<ir_version: 8>\n\ng () => () {}\nnot a function", 4, 5, "'('"),
    ],
)
def test_errors_point_at_the_token(parse, text: str, line: int, column: int, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TextSyntaxError) as info:
        parse(text)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert words in str(info.value)
    assert str(info.value).startswith(f"line {line}, column {column}: ")


def test_a_summary_is_not_read_back() -> None:
    t = TensorProto(name="w", dims=[10], data_type=7, int64_data=list(range(10)))
    text = to_text(GraphProto(name="g", initializer=[t]), max_elements=2)
    with pytest.raises(TextSyntaxError, match=r"expected an integer, found '\.'"):
        parse_graph(text)
