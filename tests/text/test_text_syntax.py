"""The textual syntax construct by construct, against ``onnx.parser`` and ``onnx.printer``.

Each case is read by both parsers (ours must give onnx's model field for field, presence included), printed by
both printers (ours must give onnx's text) and read back by ours (a fixed point). Where ours differs on purpose,
the case is listed with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnx.parser
import onnx.printer
import pytest

from onnxcore.proto import GraphProto, Message, ModelProto, TensorProto
from onnxcore.proto.bridge import from_onnx
from onnxcore.text import parse_function, parse_graph, parse_model, parse_node, to_text

CASES: dict[str, tuple[str, str]] = {
    "node": ("node", "y = Add(a, b)"),
    "node_label_and_kinds": (
        "node",
        '[lbl] y, z = com.x.Foo <a = 1, b = 2.5, c = "s", d = [1, 2], e = [1.0, 2], f = ["a", "b"], g = -3, '
        'h = -1.5e-3> (x, "", w)',
    ),
    "node_attributes_after_inputs": ("node", "y = Foo (x) <a: int = 1, b: floats = [1, 2]>"),
    "node_without_outputs": ("node", "= Foo (x)"),
    # Places left blank in a list of names: empty names (optional inputs and outputs left out), as onnx reads them;
    # a comma just before the closing token adds none.
    "node_blank_inputs": ("node", "y = Resize(x, , , sizes)"),
    "node_blank_first_input": ("node", "y = Foo(, x)"),
    "node_blank_then_trailing_comma": ("node", "y = Foo(x, , )"),
    "node_trailing_comma": ("node", "y = Foo(x, )"),
    "node_only_a_blank": ("node", "y = Foo(,)"),
    "node_blank_outputs": ("node", "y, , z = Foo(x)"),
    "node_blank_first_output": ("node", ", y = Foo(x)"),
    "graph_resize_blank_inputs": (
        "graph",
        "g (float[1, 3, 4, 4] image, int64[4] target_size) => (float[1, 3, 8, 8] y) "
        "{ y = Resize(image, , , target_size) }",
    ),
    "node_attribute_references": ("node", "y = Foo <r: int = @rr, s: float = @ss> (x)"),
    "node_type_proto": ("node", "y = Foo <tp: type_proto = float[3,N]> (x)"),
    "node_type_protos": ("node", "y = Foo <tps: type_protos = [seq(int64), optional(float[])]> (x)"),
    "node_tensors": (
        "node",
        'y = Constant <value = float[2] {1, 2}, t2: tensor = int64[2] tt {1,2}, t3 = string[2] {"a", "b"}, '
        "t4 = double {0.25}, t5 = float16[1] {15360}, t6 = bool[2] {1, 0}, t7 = uint64[1] {7}, "
        "t8 = int8[1] {-3}, t9 = float[3] {inf, -inf, 0.1}> ()",
    ),
    "node_tensor_list": ("node", "y = Foo <ts: tensors = [float[1] {1}, int64 {2}]> (x)"),
    "node_overload": ("node", "y = local.Foo:v2 <a = 1> (x)"),
    "node_graph_list": ("node", "y = Foo <gs: graphs = [a () => () {}, b () => (float y) { y = Id() }]> (x)"),
    "node_graphs": (
        "node",
        "y = If (c) <then_branch = g1 () => (float[1] a) { a = Constant <value = float[1] {1}> () }, "
        "else_branch: graph = g2 () => (float[1] b) <float[1] k = {2}> { b = Identity (k) }>",
    ),
    "node_escapes": ("node", 'y = Foo <s = "a \\"quoted\\" \\\\ word"> (x)'),
    "graph": ("graph", "agraph (float[N, 128] X, float[128, 10] W) => (float[N, 10] C) { C = MatMul(X, W) }"),
    "graph_types": (
        "graph",
        'g (float X, float[] Y, float[?] Z, float["a b", 3] W, seq(float[2]) S, map(int64, seq(string)) M, '
        "optional(int32[1]) O, sparse_tensor(float[2,3]) P) => (uint8 U) { U = Foo(X) }",
    ),
    "graph_opaque": ("graph", "g (opaque(com.x, T) a) => (opaque(T) b) { b = Identity(a) }"),
    "graph_initializers": (
        "graph",
        'g (float[2] x) => (float[2] y) <float[2] c = {0.1, -2e3}, int64[2] d = {1, -2}, string s = {"x"}, '
        'float e = ["location": "f.bin", "offset": "0"], float[2] vi> { y = Add(x, c) }',
    ),
    "graph_initializer_among_inputs": (
        "graph",
        "g (float[2] x, float[2] w = {1, 2}) => (float[2] y) { y = Add(x, w) }",
    ),
    "graph_untyped_outputs": ("graph", "g (float x) => (y, z) { y, z = Foo(x) }"),
    "graph_quoted_names": ("graph", '"my graph" (float["N.1"] "a.b") => (float y) { y = Foo("a.b", "x:0", "1x") }'),
    "graph_comments": ("graph", "# a comment\ng (float x) => (float y) {\n  # another\n  y = Identity(x)\n}"),
    "function": ("function", '<domain: "local", opset_import: ["" : 18]> Fn <alpha> (x) => (y) { y = Identity(x) }'),
    "function_attribute_defaults": (
        "function",
        '<domain: "local", opset_import: ["" : 18]> Fn <alpha, beta: int = 3, gamma: floats = [1.5]> (x) => (y) '
        "{ y = Identity(x) }",
    ),
    "function_value_infos": (
        "function",
        '<domain: "local", opset_import: ["" : 18]> Fn2 (float[N] x, y) => (y2) <float t> '
        "{ t = Identity(x) y2 = Add(t, y) }",
    ),
    "function_overload": (
        "function",
        '<domain: "local", overload: "v2", opset_import: ["" : 18]> Fn (x) => (y) { y = Identity(x) }',
    ),
    "model": (
        "model",
        '<ir_version: 8, opset_import: ["" : 18, "local" : 1], producer_name: "p", producer_version: "1.0", '
        'domain: "d", model_version: 3, doc_string: "doc", metadata_props: ["k": "v", "k2": "v2"]> '
        "agraph (float[N] X) => (float[N] Y) { Y = local.Fn<alpha=2>(X) }\n"
        '<domain: "local", opset_import: ["" : 18]> Fn <alpha> (x) => (y) { y = Identity(x) }',
    ),
    "model_without_header": ("model", "agraph (float[N] X) => (float[N] Y) { Y = Identity(X) }"),
}

# case -> why onnx's parser reads it otherwise than ours (ours keeps what the text says).
PARSE_DIFFERENCES = {
    "node_type_protos": "onnx's parser drops the values of a type_protos list (reads an empty list)",
    "node_tensor_list": "onnx's parser drops the values of a tensors list (reads an empty list)",
    "node_graph_list": "onnx's parser drops the values of a graphs list (reads an empty list)",
}
# case -> why our text differs from onnx.printer's.
PRINT_DIFFERENCES = {
    "node_type_protos": "onnx's model has an empty list (see PARSE_DIFFERENCES)",
    "node_tensor_list": "onnx's model has an empty list (see PARSE_DIFFERENCES)",
    "node_graph_list": "onnx's model has an empty list (see PARSE_DIFFERENCES)",
    "function_attribute_defaults": "onnx's printer drops attribute defaults (attribute_proto); ours writes them",
    "function_value_infos": "onnx's printer drops a function's value_info; ours writes it (typed inputs as <...>)",
}
# case -> why ours -> ours is not a fixed point of the model.
ROUND_TRIP_DIFFERENCES = {
    "model_without_header": "onnx's printer (so ours) always writes ir_version, which then reads back as present",
}

_OURS: dict[str, Callable[[str], Any]] = {
    "node": parse_node,
    "graph": parse_graph,
    "function": parse_function,
    "model": parse_model,
}


def _theirs(kind: str, text: str) -> Any:
    return getattr(onnx.parser, f"parse_{kind}")(text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_we_read_as_onnx_reads(case: str) -> None:
    kind, text = CASES[case]
    ours = _OURS[kind](text)
    if case in PARSE_DIFFERENCES:
        assert ours != from_onnx(_theirs(kind, text))
    else:
        assert ours == from_onnx(_theirs(kind, text))


@pytest.mark.parametrize("case", sorted(CASES))
def test_we_print_as_onnx_prints(case: str) -> None:
    kind, text = CASES[case]
    theirs = _theirs(kind, text)
    ours = to_text(_OURS[kind](text))
    if case in PRINT_DIFFERENCES:
        assert ours != onnx.printer.to_text(theirs)
        # onnx's parser still reads our text (minus what its printer leaves out)
        assert _theirs(kind, ours).SerializeToString() == theirs.SerializeToString() or case in PARSE_DIFFERENCES
    else:
        assert ours == onnx.printer.to_text(theirs)
        assert to_text(theirs) == ours


@pytest.mark.parametrize("case", sorted(CASES))
def test_ours_to_ours_is_a_fixed_point(case: str) -> None:
    kind, text = CASES[case]
    parse = _OURS[kind]
    first = parse(text)
    again = parse(to_text(first))
    assert to_text(again) == to_text(first)
    if case not in ROUND_TRIP_DIFFERENCES:
        assert again == first


def test_sparse_tensor_attributes_round_trip() -> None:
    """onnx's printer writes nothing for a sparse tensor and its parser reads none: ours writes and reads them."""
    values = TensorProto(name="v", dims=[2], data_type=1, float_data=[1.5, 2.0])
    indices = TensorProto(name="i", dims=[2], data_type=7, int64_data=[0, 3])
    text = "y = Foo <st: sparse_tensor = sparse_tensor[4](float[2] v {1.5,2}, int64[2] i {0,3})> (x)"
    node = parse_node(text)
    st = node.attribute[0].sparse_tensor
    assert st is not None and st.dims == [4]
    assert (st.values, st.indices) == (values, indices)
    assert to_text(node) == "   " + text + "\n"


def test_raw_data_is_written_as_values() -> None:
    t = TensorProto(name="w", dims=[3], data_type=1, raw_data=np.array([0.5, -1, 3], np.float32).tobytes())
    g = GraphProto(name="g", initializer=[t])
    text = to_text(g)
    assert "float[3] w =  {0.5,-1,3}" in text
    back = parse_graph(text).initializer[0]
    assert back.float_data == [0.5, -1.0, 3.0] and not back.has("raw_data")


def test_max_elements_summarises_tensors() -> None:
    t = TensorProto(name="w", dims=[100], data_type=7, int64_data=list(range(100)))
    model = ModelProto(ir_version=8, graph=GraphProto(name="g", initializer=[t]))
    text = to_text(model, max_elements=3)
    assert "int64[100] w =  {0,1,2,...}" in text
    assert to_text(model, max_elements=100) == to_text(model)


def test_a_function_without_domain_prints_as_onnx_prints() -> None:
    f = onnx.helper.make_function("", "F", ["x"], ["y"], [onnx.helper.make_node("Relu", ["x"], ["y"])], [])
    f.ClearField("domain")
    assert to_text(f) == onnx.printer.to_text(f)


def test_numbers_and_strings_print_as_onnx_prints() -> None:
    """Shortest round-trip digits, fixed or exponent as onnx's printer chooses, over magnitudes 1e-30..1e30."""
    rng = np.random.default_rng(0)
    edges = [1e5, 1e6, 123456.0, 1e-5, 1e-4, 1e15, 2.0**24, 2.0**31, 3.4e38, 1e-45, 5e-324, -0.0, np.inf, -np.inf]
    vals = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300), edges])
    helper, nh = onnx.helper, onnx.numpy_helper
    node = helper.make_node("X", [], ["y"], fs=vals.astype(np.float32).tolist(), s="tab\tnl\nü\x01", ss=["é"])
    ints = [nh.from_array(np.array([-(2**63), 2**63 - 1]), "i64"), nh.from_array(np.array([2**64 - 1], np.uint64), "u")]
    ints.append(nh.from_array(np.array([-128, 127], np.int8), "i8"))
    floats = [nh.from_array(vals.astype(np.float64), "d"), nh.from_array(vals.astype(np.float32), "f")]
    g = helper.make_graph([node], "g", [], [], initializer=floats + ints)
    assert to_text(g) == onnx.printer.to_text(g)
    assert to_text(parse_graph(to_text(g))) == to_text(g)


def test_onnx_messages_are_accepted() -> None:
    node = onnx.helper.make_node("Relu", ["x"], ["y"])
    assert to_text(node) == onnx.printer.to_text(node)


def test_a_message_of_another_kind_is_refused() -> None:
    with pytest.raises(TypeError):
        to_text(TensorProto())


def test_every_attribute_kind_is_covered() -> None:
    """The cases above use each attribute type of Annex B at least once (sparse tensors in their own test)."""
    seen: set[int] = set()

    def walk(msg: Message) -> None:
        for f in msg._SPEC.fields:
            v = getattr(msg, f.name)
            for item in v if f.repeated else [v]:
                if isinstance(item, Message):
                    if hasattr(item, "ref_attr_name") and hasattr(item, "type_protos"):
                        seen.add(int(item.type))
                    walk(item)

    for kind, text in CASES.values():
        walk(_OURS[kind](text))
    assert seen >= {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14}
