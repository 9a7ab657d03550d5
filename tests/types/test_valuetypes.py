"""Value types (Clause 6.1, 6.8), shapes (6.5), denotations (6.7) and their TypeProto form."""

from __future__ import annotations

from pathlib import Path

import pytest

import onnxcore
from onnxcore import ShapeError, decode, encode
from onnxcore.infer import shapes as shape_inference
from onnxcore.proto import TensorShapeProto, TypeProto, ValueInfoProto
from onnxcore.types import (
    Dim,
    ElementType,
    MapType,
    OpaqueType,
    OptionalType,
    SequenceType,
    Shape,
    SparseTensorType,
    TensorType,
    type_from_proto,
    type_string,
    type_to_proto,
    typestr,
)
from onnxcore.types.valuetypes import declared_shape, stated_dims
from onnxcore.validate import types_util

E = ElementType
onnx = pytest.importorskip("onnx")


def test_unknown_rank_distinct_from_rank0() -> None:
    """6.5.1: an absent shape (unknown rank) is not rank 0 and not known rank with unknown extents."""
    unknown = TensorType(E.FLOAT, None)
    scalar = TensorType(E.FLOAT, Shape())
    one_unknown = TensorType(E.FLOAT, Shape(None))
    assert len({str(unknown), str(scalar), str(one_unknown)}) == 3
    assert unknown != scalar != one_unknown
    assert type_to_proto(unknown).tensor_type.shape is None
    assert type_to_proto(scalar).tensor_type.shape == TensorShapeProto()
    for t in (unknown, scalar, one_unknown):
        assert type_from_proto(decode(TypeProto, bytes(encode(type_to_proto(t))))) == t


def test_dims_and_denotations() -> None:
    s = Shape(Dim("N", "DATA_BATCH"), 3, None, Dim(224, "DATA_FEATURE"))
    assert s.rank == 4 and s.extents == ("N", 3, None, 224)
    assert s[1] == 3 and s[0] == Dim("N", "DATA_BATCH") and s[0] != "N"
    t = TensorType(E.FLOAT, s, denotation="IMAGE")
    p = type_to_proto(t)
    assert p.denotation == "IMAGE"
    assert [d.denotation for d in p.tensor_type.shape.dim] == ["DATA_BATCH", "", "", "DATA_FEATURE"]
    assert [d.which_oneof("value") for d in p.tensor_type.shape.dim] == ["dim_param", "dim_value", None, "dim_value"]
    assert type_from_proto(p) == t
    with pytest.raises(ShapeError):
        Dim(-1)
    assert Dim(0).is_fixed and Dim("x").is_variable and Dim(None).is_unknown


def test_composite_types_and_type_strings() -> None:
    seq = SequenceType(TensorType(E.INT64, Shape("N")))
    mp = MapType(E.INT64, TensorType(E.FLOAT))
    opt = OptionalType(SequenceType(TensorType(E.FLOAT)))
    sp = SparseTensorType(E.FLOAT, Shape(3, 4))
    oq = OpaqueType("com.example", "handle")
    assert seq.type_str() == "seq(tensor(int64))"
    assert mp.type_str() == "map(int64,tensor(float))"
    assert opt.type_str() == "optional(seq(tensor(float)))"
    assert sp.type_str() == "sparse_tensor(float)"
    assert TensorType(E.FLOAT8E4M3FN).type_str() == "tensor(float8e4m3fn)"
    for t in (seq, mp, opt, sp, oq, MapType(E.STRING, SequenceType(TensorType(E.BOOL)))):
        p = type_to_proto(t)
        back = type_from_proto(decode(TypeProto, bytes(encode(p))))
        assert back == t and hash(back) == hash(t)
        assert type_string(p) == t.type_str()
    assert type_string(TypeProto()) is None
    assert type_string(TypeProto(tensor_type=TypeProto.Tensor())) is None
    assert type_string(TypeProto(tensor_type=TypeProto.Tensor(elem_type=99))) is None
    assert onnxcore.TensorType is TensorType and onnxcore.type_from_proto is type_from_proto


def test_onnx_made_types_round_trip() -> None:
    h = pytest.importorskip("onnx.helper")
    protos = [
        h.make_tensor_type_proto(onnx.TensorProto.FLOAT, ["N", 3, None]),
        h.make_tensor_type_proto(onnx.TensorProto.INT4, None),
        h.make_sparse_tensor_type_proto(onnx.TensorProto.DOUBLE, [2, 0]),
        h.make_sequence_type_proto(h.make_tensor_type_proto(onnx.TensorProto.STRING, [])),
        h.make_map_type_proto(onnx.TensorProto.STRING, h.make_tensor_type_proto(onnx.TensorProto.FLOAT, [1])),
        h.make_optional_type_proto(h.make_sequence_type_proto(h.make_tensor_type_proto(onnx.TensorProto.UINT8, [2]))),
    ]
    for op in protos:
        data = op.SerializeToString()
        ours = decode(TypeProto, data)
        assert bytes(encode(type_to_proto(type_from_proto(ours)))) == data


def test_node_vector_types(node_cases: list[Path]) -> None:
    """Every declared type in the node vectors round-trips, and its type string is one the operator's
    type constraint allows (onnx.defs as the oracle)."""
    defs = pytest.importorskip("onnx.defs")
    checked = 0
    for case in node_cases:
        raw = (case / "model.onnx").read_bytes()
        model = onnxcore.load(raw)
        g = model.graph
        for vi in [*g.input, *g.output, *g.value_info]:
            assert isinstance(vi, ValueInfoProto)
            t = type_from_proto(vi.type)
            assert t is not None, (case.name, vi.name)
            assert type_to_proto(t) == vi.type, (case.name, vi.name)
        if len(g.node) != 1:
            continue
        node = g.node[0]
        version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        if node.domain not in ("", "ai.onnx") or version is None:
            continue
        try:
            schema = defs.get_schema(node.op_type, version, "")
        except Exception:
            continue
        constraints = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        declared = {vi.name: vi.type for vi in [*g.input, *g.output]}
        for names, formals in ((node.input, schema.inputs), (node.output, schema.outputs)):
            for i, name in enumerate(names):
                if not name or name not in declared or not formals:
                    continue
                formal = formals[min(i, len(formals) - 1)]
                allowed = constraints.get(formal.type_str, {formal.type_str})
                ts = type_string(declared[name])
                assert ts in allowed, (case.name, name, ts, sorted(allowed)[:5])
                checked += 1
    assert checked > 3000


def test_one_type_string_spelling() -> None:
    """Value types, messages, inference and the validator spell a type one way (types/typestr.py)."""
    assert types_util.type_string is typestr.type_string
    cases = {
        TensorType(E.FLOAT): "tensor(float)",
        SparseTensorType(E.INT8): "sparse_tensor(int8)",
        MapType(E.STRING, SequenceType(TensorType(E.BOOL))): "map(string,seq(tensor(bool)))",
        OptionalType(TensorType(E.BFLOAT16)): "optional(tensor(bfloat16))",
        OpaqueType("com.example", "handle"): "opaque(com.example,handle)",
        OpaqueType("", "handle"): "opaque(handle)",  # onnx's spelling: no domain, no comma
    }
    for t, text in cases.items():
        assert t.type_str() == type_string(t) == typestr.type_string(type_to_proto(t)) == text
        assert typestr.type_string(typestr.parse_type_string(text)) == text
    for unknown in (TensorType(None), SequenceType(None), MapType(None, TensorType(E.FLOAT))):
        assert unknown.type_str() is None and type_string(type_to_proto(unknown)) is None


def test_stated_dims_and_declared_shape() -> None:
    assert shape_inference.stated_dims is stated_dims and shape_inference.declared_shape is declared_shape
    dims = [
        TensorShapeProto.Dimension(dim_value=2),
        TensorShapeProto.Dimension(dim_param="N"),
        TensorShapeProto.Dimension(),
        TensorShapeProto.Dimension(dim_value=-1),
    ]
    tensor = TypeProto(tensor_type=TypeProto.Tensor(elem_type=1, shape=TensorShapeProto(dim=dims)))
    assert stated_dims(tensor) == (2, "N", None, -1)  # as written: the validator reports the negative extent
    assert declared_shape(tensor) == (2, "N", None, None)  # as inference reads it: unknown
    sparse = TypeProto(sparse_tensor_type=TypeProto.SparseTensor(elem_type=1, shape=TensorShapeProto(dim=dims[:2])))
    assert stated_dims(sparse) == declared_shape(sparse) == (2, "N")
    optional = TypeProto(optional_type=TypeProto.Optional(elem_type=tensor))
    assert stated_dims(optional) is None and declared_shape(optional) == (2, "N", None, None)
    assert declared_shape(TypeProto(tensor_type=TypeProto.Tensor(elem_type=1))) is None  # rank unknown
    assert declared_shape(TypeProto(tensor_type=TypeProto.Tensor(elem_type=1, shape=TensorShapeProto()))) == ()
    assert declared_shape(None) is None and declared_shape(TypeProto(sequence_type=TypeProto.Sequence())) is None
