"""The mutation suite of the validator: for each rule, a model that breaks that rule and only it.

Each :class:`Mutant` builds a model from a small valid base (written with ``onnx.helper`` and
converted to our record classes) and edits it with the record classes. ``expect`` is the finding
the rule must give (code, clause, location); no other *error* may appear. Used by
``test_mutations.py`` and by ``compare_onnx.py``, which runs onnx's checker on the same mutants
to build the comparison table in docs/validation.md.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable

import mutants_ml
import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxcore
from onnxcore import Limits
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    SparseTensorProto,
    StringStringEntryProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)

AT = AttributeProto.AttributeType


def convert(onnx_model: object) -> ModelProto:
    """An onnx ModelProto as our record classes (through the octets)."""
    return onnxcore.decode(ModelProto, onnx_model.SerializeToString())  # type: ignore[attr-defined]


def _vi(name: str, elem: int, shape: list[int | str] | None) -> object:
    return helper.make_tensor_value_info(name, elem, shape)


def base() -> ModelProto:
    """x:float[2,3] + w (initializer) -> s; LeakyRelu(s, alpha=0.2) -> y:float[2,3]."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    g = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["s"], name="add"),
            helper.make_node("LeakyRelu", ["s"], ["y"], name="leaky", alpha=0.2),
        ],
        "g",
        [_vi("x", T.FLOAT, [2, 3])],
        [_vi("y", T.FLOAT, [2, 3])],
        [w],
    )
    return convert(helper.make_model(g, ir_version=10, opset_imports=[helper.make_opsetid("", 21)]))


def base_if() -> ModelProto:
    """If(c) then Identity(x) else Neg(x) -> y."""
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t1"])], "then", [], [_vi("t1", T.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t2"])], "else", [], [_vi("t2", T.FLOAT, [2])])
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "g", [_vi("c", T.BOOL, []), _vi("x", T.FLOAT, [2])], [_vi("y", T.FLOAT, [2])])
    return convert(helper.make_model(g, ir_version=10, opset_imports=[helper.make_opsetid("", 21)]))


def base_loop() -> ModelProto:
    """Loop(M, "", x) with body (i, cond_in, v_in) -> (Identity(cond_in), v_in + v_in)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
        ],
        "body",
        [_vi("i", T.INT64, []), _vi("cond_in", T.BOOL, []), _vi("v_in", T.FLOAT, [2])],
        [_vi("cond_out", T.BOOL, []), _vi("v_out", T.FLOAT, [2])],
    )
    node = helper.make_node("Loop", ["M", "", "x"], ["y"], name="loop", body=body)
    g = helper.make_graph([node], "g", [_vi("M", T.INT64, []), _vi("x", T.FLOAT, [2])], [_vi("y", T.FLOAT, [2])])
    return convert(helper.make_model(g, ir_version=10, opset_imports=[helper.make_opsetid("", 21)]))


def base_fn() -> ModelProto:
    """A call of the model-local function local:f(a) = Relu(a)."""
    f = helper.make_function(
        "local", "f", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], [helper.make_opsetid("", 21)]
    )
    g = helper.make_graph(
        [helper.make_node("f", ["x"], ["y"], domain="local", name="call")],
        "g",
        [_vi("x", T.FLOAT, [2])],
        [_vi("y", T.FLOAT, [2])],
    )
    m = helper.make_model(
        g, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)], functions=[f]
    )
    return convert(m)


BASES: dict[str, Callable[[], ModelProto]] = {
    "base": base,
    "base_if": base_if,
    "base_loop": base_loop,
    "base_fn": base_fn,
}


@dataclasses.dataclass
class Mutant:
    """A model breaking one rule.

    Attributes:
        code: The rule broken.
        clause: Its clause.
        location: Where the finding must point (None: not checked, e.g. a decoder's byte path).
        build: Builds the model (or octets).
        what: What was changed, for the docs table.
        limits: Limits to check under.
        encodable: Whether the model can be written to octets (onnx's checker can see it).
    """

    code: str
    clause: str
    location: str | None
    build: Callable[[], ModelProto | bytes]
    what: str
    limits: Limits | None = None
    encodable: bool = True


def _node(m: ModelProto, i: int) -> NodeProto:
    assert m.graph is not None
    return m.graph.node[i]


def _set(**kw: object) -> Callable[[ModelProto], None]:
    def f(m: ModelProto) -> None:
        for k, v in kw.items():
            setattr(m, k, v)

    return f


def mut(basename: str, edit: Callable[[ModelProto], object]) -> Callable[[], ModelProto]:
    def build() -> ModelProto:
        m = BASES[basename]()
        edit(m)
        return m

    return build


def _rename_s(m: ModelProto) -> None:
    m.graph.node[0].output[0] = m.graph.node[1].input[0] = "/block/Add_output_0"


def _spaced_dim_variable(m: ModelProto) -> None:
    m.graph.input[0].type.tensor_type.shape.dim[0] = TensorShapeProto.Dimension(dim_param="batch size")


def _tensor_vi(name: str, elem: int, dims: list[int] | None, *, elem_present: bool = True) -> ValueInfoProto:
    tt = TypeProto.Tensor(elem_type=elem) if elem_present else TypeProto.Tensor()
    if dims is not None:
        tt.shape = TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=d) for d in dims])
    return ValueInfoProto(name=name, type=TypeProto(tensor_type=tt))


def _attr(node: NodeProto, name: str) -> AttributeProto:
    return next(a for a in node.attribute if a.name == name)


def _then(m: ModelProto) -> GraphProto:
    g = _attr(_node(m, 0), "then_branch").g
    assert g is not None
    return g


def _alpha(m: ModelProto) -> AttributeProto:
    return _node(m, 1).attribute[0]


def _unknown_field(tag_key: bytes) -> Callable[[ModelProto], None]:
    def f(m: ModelProto) -> None:
        assert m.graph is not None
        data = onnxcore.encode(m.graph) + tag_key
        m.graph = onnxcore.decode(GraphProto, data)

    return f


def _cycle_subgraph(m: ModelProto) -> None:
    then_g = _then(m)
    inner = NodeProto(op_type="If", input=["c"], output=["t_inner"], name="inner")
    inner.attribute = [
        AttributeProto(name="then_branch", type=AT.GRAPH, g=then_g),
        AttributeProto(name="else_branch", type=AT.GRAPH, g=then_g),
    ]
    then_g.node.append(inner)


def _sparse(m: ModelProto) -> None:
    sp = helper.make_sparse_tensor(
        helper.make_tensor("sp", T.FLOAT, [2], [1.0, 2.0]), helper.make_tensor("sp_i", T.INT64, [2], [0, 99]), [2, 3]
    )
    assert m.graph is not None
    m.graph.sparse_initializer.append(onnxcore.decode(SparseTensorProto, sp.SerializeToString()))


def _nested_if(depth: int) -> bytes:
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "g0", [], [_vi("o0", T.FLOAT, [2])])
    for d in range(1, depth):
        node = helper.make_node("If", ["c"], [f"o{d}"], then_branch=inner, else_branch=inner)
        inner = helper.make_graph([node], f"g{d}", [], [_vi(f"o{d}", T.FLOAT, [2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)
    g = helper.make_graph([node], "g", [_vi("c", T.BOOL, []), _vi("x", T.FLOAT, [2])], [_vi("y", T.FLOAT, [2])])
    return helper.make_model(g, ir_version=10, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()


def _fn_call(m: ModelProto) -> NodeProto:
    return _node(m, 0)


def _add_node(node: NodeProto) -> Callable[[ModelProto], None]:
    def f(m: ModelProto) -> None:
        assert m.graph is not None
        m.graph.node.append(node)

    return f


def _f(m: ModelProto) -> FunctionProto:
    return m.functions[0]


MUTANTS: list[Mutant] = [
    Mutant(
        "E-MODEL-IR-VERSION",
        "5.3.1",
        "ir_version",
        mut("base", lambda m: m.clear_field("ir_version")),
        "ir_version removed",
    ),
    Mutant("W-MODEL-IR-VERSION-NEWER", "14.2", "ir_version", mut("base", _set(ir_version=99)), "ir_version 99"),
    Mutant(
        "W-OPSET-NEWER",
        "14.4",
        "opset_import[0]",
        mut("base", lambda m: setattr(m.opset_import[0], "version", 99)),
        "default domain version 99",
    ),
    Mutant("E-MODEL-GRAPH", "5.3.1", "graph", mut("base", _set(graph=None)), "graph removed"),
    Mutant(
        "E-OPSET-MISSING",
        "5.3.1",
        "opset_import",
        mut(
            "base",
            lambda m: (
                setattr(m, "opset_import", []),
                setattr(m.graph, "node", []),
                setattr(m.graph.output[0], "name", "x"),
            ),
        ),
        "no opset_import (and no node)",
    ),
    Mutant(
        "E-OPSET-DUPLICATE",
        "5.3.2",
        "opset_import[1]",
        mut("base", lambda m: m.opset_import.append(OperatorSetIdProto(domain="ai.onnx", version=20))),
        '"ai.onnx" imported at another version besides ""',
    ),
    Mutant(
        "W-OPSET-REPEATED",
        "5.3.2",
        "opset_import[1]",
        mut("base", lambda m: m.opset_import.append(OperatorSetIdProto(domain="", version=21))),
        '"" imported twice at one version (as skl2onnx writes)',
    ),
    Mutant(
        "W-MODEL-DOMAIN",
        "5.3.1",
        "domain",
        mut("base", lambda m: setattr(m, "domain", "my models")),
        "a model domain that is not a reverse domain name",
    ),
    Mutant(
        "W-NAME-SYNTAX",
        "5.4.1",
        'graph/node[0] "add"/output[0]',
        mut("base", _rename_s),
        "a value named as exporters name them ('/block/Add_output_0')",
    ),
    Mutant(
        "W-TYPE-EMPTY",
        "B.2.21",
        'graph/value_info[0] "s"/type',
        mut("base", lambda m: m.graph.value_info.append(ValueInfoProto(name="s", type=TypeProto()))),
        "value_info for 's' with an empty TypeProto",
    ),
    Mutant(
        "W-DIM-SYNTAX",
        "6.5.2",
        'graph/input[0] "x"/type/tensor_type/shape/dim[0]',
        mut("base", _spaced_dim_variable),
        "a dimension variable 'batch size'",
    ),
    Mutant(
        "E-OPSET-VERSION",
        "5.3.2",
        "opset_import[1]",
        mut("base", lambda m: m.opset_import.append(OperatorSetIdProto(domain="com.example", version=0))),
        "an operator set version 0",
    ),
    Mutant(
        "E-OPSET-UNDECLARED",
        "5.3.2",
        'graph/node[1] "leaky"',
        mut("base", lambda m: setattr(_node(m, 1), "domain", "com.example")),
        "a node in a domain not imported",
    ),
    Mutant(
        "E-METADATA-DUPLICATE",
        "5.5",
        'metadata_props[1] "k"',
        mut(
            "base",
            _set(
                metadata_props=[StringStringEntryProto(key="k", value="1"), StringStringEntryProto(key="k", value="2")]
            ),
        ),
        "metadata key given twice",
    ),
    Mutant(
        "E-IR-FEATURE",
        "14.1.2",
        "graph/metadata_props",
        mut(
            "base",
            lambda m: (
                setattr(m, "ir_version", 9),
                setattr(m.graph, "metadata_props", [StringStringEntryProto(key="k", value="v")]),
            ),
        ),
        "graph metadata_props at IR version 9",
    ),
    Mutant(
        "E-PROTO-MANDATORY",
        "B.1",
        "graph/value_info[0]",
        mut("base", lambda m: m.graph.value_info.append(ValueInfoProto(type=_tensor_vi("s", T.FLOAT, [2, 3]).type))),
        "a value_info without a name",
    ),
    Mutant(
        "E-PROTO-ONEOF",
        "B.1",
        'graph/input[0] "x"/type/tensor_type/shape/dim[0]',
        # Past the oneof rule of assignment (which clears dim_value, as protobuf does): the state only code that
        # writes the slots directly can make, which the validator still reports.
        mut("base", lambda m: object.__setattr__(m.graph.input[0].type.tensor_type.shape.dim[0], "dim_param", "N")),
        "a dimension with both dim_value and dim_param",
    ),
    Mutant(
        "E-PROTO-RESERVED",
        "12.6",
        "graph",
        mut("base", _unknown_field(b"\x18\x01")),
        "GraphProto field with reserved tag 3",
    ),
    Mutant(
        "W-PROTO-UNKNOWN-FIELD",
        "12.4",
        "graph",
        mut("base", _unknown_field(b"\xa0\x06\x01")),
        "GraphProto field with unknown tag 100",
    ),
    Mutant(
        "E-ELEM-UNDEFINED",
        "6.2",
        'graph/value_info[0] "s"/type/tensor_type/elem_type',
        mut("base", lambda m: m.graph.value_info.append(_tensor_vi("s", 0, [2, 3]))),
        "elem_type 0 declared",
    ),
    Mutant(
        "E-ELEM-UNKNOWN",
        "6.2",
        'graph/value_info[0] "s"/type/tensor_type/elem_type',
        mut("base", lambda m: m.graph.value_info.append(_tensor_vi("s", 99, [2, 3]))),
        "elem_type 99 declared",
    ),
    Mutant(
        "E-TYPE-COMPOSITE",
        "6.8",
        'graph/value_info[0] "m"/type/map_type/key_type',
        mut(
            "base",
            lambda m: m.graph.value_info.append(
                ValueInfoProto(
                    name="m",
                    type=TypeProto(
                        map_type=TypeProto.Map(key_type=T.FLOAT, value_type=_tensor_vi("", T.FLOAT, [1]).type)
                    ),
                )
            ),
        ),
        "a map type keyed by float",
    ),
    Mutant(
        "E-ATTR-VALUE",
        "7.4",
        'graph/node[1] "leaky"/attribute[0] "alpha"',
        mut("base", lambda m: (_alpha(m).clear_field("f"), setattr(_alpha(m), "i", 1))),
        "FLOAT attribute whose value is in field i",
    ),
    Mutant(
        "E-VALUE-UNDEFINED",
        "7.5",
        'graph/node[0] "add"/input[1]',
        mut("base", lambda m: _node(m, 0).input.__setitem__(1, "nowhere")),
        "an input nothing produces",
    ),
    Mutant(
        "E-TOPO-ORDER",
        "7.5",
        'graph/node[0] "leaky"/input[0]',
        mut("base", lambda m: m.graph.node.reverse()),
        "the two nodes swapped",
    ),
    Mutant(
        "E-TOPO-CYCLE",
        "7.5",
        "graph",
        mut("base", lambda m: _node(m, 0).input.__setitem__(1, "y")),
        "Add consumes LeakyRelu's output",
    ),
    Mutant(
        "E-VALUE-DUPLICATE",
        "7.5",
        "graph/node[2]/output[0]",
        mut("base", _add_node(NodeProto(op_type="Relu", input=["y"], output=["s"]))),
        "a second producer of s",
    ),
    Mutant(
        "E-NAME-EMPTY",
        "5.4.1",
        "graph/output[1]",
        mut("base", lambda m: m.graph.output.append(_tensor_vi("", T.FLOAT, [2, 3]))),
        'a graph output named ""',
    ),
    Mutant(
        "E-NODE-NAME-DUPLICATE",
        "5.4.1",
        'graph/node[1] "add"',
        mut("base", lambda m: setattr(_node(m, 1), "name", "add")),
        "two nodes named add",
    ),
    Mutant(
        "E-ATTR-DUPLICATE",
        "7.4",
        'graph/node[1] "leaky"/attribute[1] "alpha"',
        mut("base", lambda m: _node(m, 1).attribute.append(copy.deepcopy(_alpha(m)))),
        "alpha given twice",
    ),
    Mutant(
        "E-SCOPE-SHADOW",
        "5.4.3",
        'graph/node[0] "if"/then_branch/node[0]/output[0]',
        mut(
            "base_if", lambda m: (_then(m).node[0].output.__setitem__(0, "c"), setattr(_then(m).output[0], "name", "c"))
        ),
        "a branch redefines the outer input c",
    ),
    Mutant(
        "E-SUBGRAPH-INIT-INPUT",
        "7.2",
        'graph/node[0] "loop"/body/initializer[0] "v_in"',
        mut(
            "base_loop",
            lambda m: (
                _node(m, 0)
                .attribute[0]
                .g.initializer.append(
                    onnxcore.decode(
                        TensorProto, numpy_helper.from_array(np.zeros(2, np.float32), "v_in").SerializeToString()
                    )
                )
            ),
        ),
        "a Loop body input that is also an initializer",
    ),
    Mutant(
        "E-SUBGRAPH-CYCLE",
        "7.6",
        'graph/node[0] "if"/then_branch/node[1] "inner"/then_branch',
        mut("base_if", _cycle_subgraph),
        "a branch holding itself (object identity)",
        encodable=False,
    ),
    Mutant("E-GRAPH-NAME", "7.1", "graph", mut("base", lambda m: setattr(m.graph, "name", "")), "graph name removed"),
    Mutant(
        "E-IO-TYPE",
        "7.1",
        'graph/input[0] "x"',
        mut("base", lambda m: setattr(m.graph.input[0].type.tensor_type, "shape", None)),
        "input x without shape",
    ),
    Mutant(
        "E-SUBGRAPH-ARITY",
        "7.6",
        'graph/node[0] "if"/then_branch',
        mut("base_if", lambda m: _then(m).input.append(_tensor_vi("extra", T.FLOAT, [2]))),
        "an If branch with an input",
    ),
    Mutant(
        "E-LIMIT-NESTING",
        "15.4",
        'graph/node[0] "if"/then_branch',
        base_if,
        "If under Limits(max_nesting_depth=0)",
        limits=Limits(max_nesting_depth=0),
    ),
    Mutant(
        "E-OP-UNDEFINED",
        "10.2",
        'graph/node[1] "leaky"',
        mut("base", lambda m: setattr(_node(m, 1), "op_type", "NoSuchOp")),
        "an operator no opset defines",
    ),
    Mutant(
        "E-OP-VERSION",
        "10.4",
        'graph/node[1] "leaky"',
        mut("base", lambda m: (setattr(_node(m, 1), "op_type", "Swish"), setattr(_node(m, 1), "attribute", []))),
        "Swish (opset 24) in a model importing 21",
    ),
    Mutant(
        "W-CUSTOM-DOMAIN",
        "16.1",
        'graph/node[1] "leaky"',
        mut(
            "base",
            lambda m: (
                setattr(_node(m, 1), "domain", "com.example"),
                m.opset_import.append(OperatorSetIdProto(domain="com.example", version=1)),
            ),
        ),
        "a custom-domain node",
    ),
    Mutant(
        "W-ORT-UNDEFINED",
        "16.1",
        'graph/node[1] "leaky"',
        mut(
            "base",
            lambda m: (
                setattr(_node(m, 1), "domain", "com.microsoft"),
                setattr(_node(m, 1), "op_type", "NoSuchOperator"),
                m.opset_import.append(OperatorSetIdProto(domain="com.microsoft", version=1)),
            ),
        ),
        "an operator of com.microsoft that onnxruntime does not define",
    ),
    Mutant(
        "W-ORT-EXTENSION",
        "10.2",
        'graph/node[1] "leaky"',
        mut("base", lambda m: setattr(_node(m, 1), "op_type", "ScaledTanh")),
        "ScaledTanh (onnxruntime's, not ONNX 1-2's) in the default domain",
    ),
    Mutant(
        "W-OP-DEPRECATED",
        "14.5",
        'graph/node[2] "up"',
        mut(
            "base",
            lambda m: (
                m.graph.initializer.append(
                    onnxcore.decode(
                        TensorProto, numpy_helper.from_array(np.array([1, 2], np.float32), "scales").SerializeToString()
                    )
                ),
                _add_node(NodeProto(op_type="Upsample", input=["y", "scales"], output=["up"], name="up"))(m),
            ),
        ),
        "Upsample (deprecated) used",
    ),
    Mutant(
        "E-ATTR-UNKNOWN",
        "10.4",
        'graph/node[1] "leaky"/attribute[1] "beta"',
        mut("base", lambda m: _node(m, 1).attribute.append(AttributeProto(name="beta", type=AT.FLOAT, f=1.0))),
        "an attribute LeakyRelu lacks",
    ),
    Mutant(
        "E-ATTR-MISSING",
        "10.4",
        'graph/node[1] "leaky"',
        mut("base", lambda m: (setattr(_node(m, 1), "op_type", "Cast"), setattr(_node(m, 1), "attribute", []))),
        "Cast without to",
    ),
    Mutant(
        "E-ATTR-TYPE",
        "7.3.1",
        'graph/node[1] "leaky"/attribute[0] "alpha"',
        mut(
            "base",
            lambda m: (setattr(_alpha(m), "type", AT.INT), _alpha(m).clear_field("f"), setattr(_alpha(m), "i", 1)),
        ),
        "alpha given as INT",
    ),
    Mutant(
        "W-ATTR-FLAG",
        "7.3.1",
        'graph/node[2] "amax"/attribute[0] "keepdims"',
        mut(
            "base",
            _add_node(
                NodeProto(
                    op_type="ArgMax",
                    input=["y"],
                    output=["am"],
                    name="amax",
                    attribute=[AttributeProto(name="keepdims", type=AT.INT, i=2)],
                )
            ),
        ),
        "ArgMax with keepdims=2",
    ),
    Mutant(
        "E-INPUT-ARITY",
        "7.3.2",
        'graph/node[0] "add"',
        mut("base", lambda m: _node(m, 0).input.append("w")),
        "Add with three inputs",
    ),
    Mutant(
        "E-INPUT-UNSUPPLIED",
        "7.3.3",
        'graph/node[0] "add"/input[0]',
        mut("base", lambda m: _node(m, 0).input.__setitem__(0, "")),
        "Add's first input empty",
    ),
    Mutant(
        "E-OUTPUT-ARITY",
        "7.3.2",
        "graph/node[2]",
        mut("base", _add_node(NodeProto(op_type="Relu", input=["x"], output=[]))),
        "a Relu without outputs",
    ),
    Mutant(
        "E-OUTPUT-EXTRA",
        "7.3.3",
        'graph/node[1] "leaky"/output[1]',
        mut("base", lambda m: _node(m, 1).output.append("extra")),
        "LeakyRelu with two outputs",
    ),
    Mutant(
        "E-OUTPUT-UNNAMED",
        "7.3.3",
        "graph/node[2]/output[0]",
        mut("base", _add_node(NodeProto(op_type="Relu", input=["x"], output=[""]))),
        'a Relu output named ""',
    ),
    Mutant(
        "E-TYPE-CONSTRAINT",
        "10.3",
        "graph/node[2]/input[0]",
        mut(
            "base",
            lambda m: (
                m.graph.input.append(_tensor_vi("sx", T.STRING, [2])),
                _add_node(NodeProto(op_type="Relu", input=["sx"], output=["r"]))(m),
            ),
        ),
        "Relu of a string tensor",
    ),
    Mutant(
        "E-TYPE-BINDING",
        "10.3",
        "graph/node[2]",
        mut(
            "base",
            lambda m: (
                m.graph.input.append(_tensor_vi("i", T.INT64, [2, 3])),
                _add_node(NodeProto(op_type="Add", input=["x", "i"], output=["r"]))(m),
            ),
        ),
        "Add of float and int64",
    ),
    Mutant(
        "E-TYPE-MISMATCH",
        "9.4",
        'graph/node[1] "leaky"/output[0]',
        mut("base", lambda m: setattr(m.graph.output[0].type.tensor_type, "elem_type", T.DOUBLE)),
        "output declared double, inferred float",
    ),
    Mutant(
        "E-TENSOR-DIMS",
        "6.5.1",
        'graph/initializer[0] "w"/dims',
        mut("base", lambda m: setattr(m.graph.initializer[0], "dims", [-1])),
        "initializer dims [-1]",
    ),
    Mutant(
        "E-TENSOR-DATA",
        "6.3.4",
        'graph/initializer[0] "w"',
        mut("base", lambda m: setattr(m.graph.initializer[0], "raw_data", bytes(m.graph.initializer[0].raw_data)[:20])),
        "raw_data 4 octets short",
    ),
    Mutant(
        "E-EXTERNAL-REF",
        "13.2",
        'graph/initializer[0] "w"',
        mut(
            "base",
            lambda m: (
                m.graph.initializer[0].clear_field("raw_data"),
                setattr(m.graph.initializer[0], "data_location", 1),
            ),
        ),
        "EXTERNAL tensor without location",
    ),
    Mutant("E-SPARSE", "B.2.18", "graph/sparse_initializer[0]", mut("base", _sparse), "sparse index 99 of 6"),
    Mutant(
        "E-SHAPE-NEGATIVE",
        "6.5.1",
        'graph/value_info[0] "s"/type/tensor_type/shape/dim[1]',
        mut("base", lambda m: m.graph.value_info.append(_tensor_vi("s", T.FLOAT, [2, -3]))),
        "declared extent -3",
    ),
    Mutant(
        "E-TYPE-CONFLICT",
        "10.3",
        'graph/value_info[0] "y"',
        mut("base", lambda m: m.graph.value_info.append(_tensor_vi("y", T.INT64, [2, 3]))),
        "y declared float and int64",
    ),
    Mutant(
        "E-SHAPE-CONFLICT",
        "10.3",
        'graph/value_info[0] "y"',
        mut("base", lambda m: m.graph.value_info.append(_tensor_vi("y", T.FLOAT, [2, 4]))),
        "y declared [2,3] and [2,4]",
    ),
    Mutant(
        "E-SHAPE-MISMATCH",
        "9.4",
        'graph/node[1] "leaky"/output[0]',
        mut("base", lambda m: setattr(m.graph.output[0], "type", _tensor_vi("y", T.FLOAT, [2, 4]).type)),
        "output declared [2,4], inferred [2,3]",
    ),
    Mutant(
        "E-SHAPE-INCOMPATIBLE",
        "10.3",
        'graph/node[0] "add"',
        mut("base", lambda m: setattr(m.graph.input[0], "type", _tensor_vi("x", T.FLOAT, [2, 4]).type)),
        "Add of [2,4] and the [2,3] initializer",
    ),
    Mutant(
        "E-INIT-TYPE",
        "7.2",
        'graph/initializer[1] "u"',
        mut(
            "base",
            lambda m: (
                m.graph.input.append(_tensor_vi("u", T.INT64, [1])),
                m.graph.initializer.append(
                    onnxcore.decode(
                        TensorProto, numpy_helper.from_array(np.zeros(1, np.float32), "u").SerializeToString()
                    )
                ),
            ),
        ),
        "initializer float, input declared int64",
    ),
    Mutant(
        "E-INIT-SHAPE",
        "7.2",
        'graph/initializer[1] "u"',
        mut(
            "base",
            lambda m: (
                m.graph.input.append(_tensor_vi("u", T.FLOAT, [3])),
                m.graph.initializer.append(
                    onnxcore.decode(
                        TensorProto, numpy_helper.from_array(np.zeros(2, np.float32), "u").SerializeToString()
                    )
                ),
            ),
        ),
        "initializer dims [2], input declared [3]",
    ),
    Mutant(
        "E-LIMIT-TENSOR",
        "15.4",
        'graph/initializer[0] "w"',
        base,
        "6-element tensors under Limits(max_tensor_elements=5)",
        limits=Limits(max_tensor_elements=5),
    ),
    Mutant(
        "E-FUNC-DUPLICATE",
        "8.4",
        'functions[1] "local:f"',
        mut("base_fn", lambda m: m.functions.append(copy.deepcopy(m.functions[0]))),
        "function defined twice",
    ),
    Mutant(
        "E-FUNC-REF-ATTR",
        "8.4",
        'functions[0] "local:f"/node[0]/attribute[0] "alpha"',
        mut(
            "base_fn",
            lambda m: (
                setattr(_f(m).node[0], "op_type", "LeakyRelu"),
                _f(m).node[0].attribute.append(AttributeProto(name="alpha", type=AT.FLOAT, ref_attr_name="nope")),
            ),
        ),
        "a ref_attr_name the function does not declare",
    ),
    Mutant(
        "E-FUNC-CALL-ARITY",
        "8.4",
        'graph/node[0] "call"',
        mut("base_fn", lambda m: _fn_call(m).input.append("x")),
        "a call with two inputs for one",
    ),
    Mutant(
        "E-FUNC-CALL-ATTR",
        "8.4",
        'graph/node[0] "call"/attribute[0] "zzz"',
        mut("base_fn", lambda m: _fn_call(m).attribute.append(AttributeProto(name="zzz", type=AT.INT, i=1))),
        "a call with an attribute the function lacks",
    ),
    Mutant("E-DECODE", "12", None, lambda: base_bytes()[:-3], "the last 3 octets cut off"),
    Mutant(
        "E-DECODE-LIMIT",
        "15.4",
        None,
        lambda: _nested_if(12),
        "12 nested Ifs under Limits(max_nesting_depth=1)",
        limits=Limits(max_nesting_depth=1),
    ),
]

# One mutant per attribute-consistency rule (rules_ml, rules_sized): the operator's consistent model with one
# attribute resized.
MUTANTS += [Mutant(c.code, "7.3.1", c.location(), functools.partial(c.model, True), c.what) for c in mutants_ml.CASES]


def base_bytes() -> bytes:
    """The base model as octets."""
    return onnxcore.encode(base())


def build(m: Mutant) -> ModelProto | bytes:
    """Build mutant ``m``."""
    return m.build()
