"""Every .pb file of the ONNX 1-3 node test vectors loads, through our decoder and value_from_proto,
into a value equal to what the onnx package reads (tensors, sequences, maps, optionals)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxcore import decode
from onnxcore.proto import MapProto, OptionalProto, SequenceProto, TensorProto
from onnxcore.types import SparseTensor, value_from_proto, value_to_proto

onnx = pytest.importorskip("onnx")
numpy_helper = pytest.importorskip("onnx.numpy_helper")


def _norm_onnx(v: Any) -> Any:
    """onnx's value with str elements encoded (ours are octet strings, Clause 6.4)."""
    if v is None:
        return None
    if isinstance(v, np.ndarray):
        if v.dtype == object or v.dtype.kind == "U":
            out = np.empty(v.shape, dtype=object)
            out.reshape(-1)[:] = [s.encode("utf-8") if isinstance(s, str) else s for s in v.reshape(-1)]
            return out
        return v
    if isinstance(v, list):
        return [_norm_onnx(x) for x in v]
    if isinstance(v, dict):
        return {(k.encode("utf-8") if isinstance(k, str) else k): _norm_onnx(x) for k, x in v.items()}
    return v


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype == object:
            return a.reshape(-1).tolist() == b.reshape(-1).tolist()
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a is None and b is None


_KINDS = {
    "sequence_type": (SequenceProto, "SequenceProto", numpy_helper.to_list),
    "map_type": (MapProto, "MapProto", numpy_helper.to_dict),
    "optional_type": (OptionalProto, "OptionalProto", numpy_helper.to_optional),
}


def _pb_files(case: Path, model: Any) -> list[tuple[Path, Any]]:
    out = []
    for ds in sorted(case.glob("test_data_set_*")):
        for kind, vis in (("input", model.graph.input), ("output", model.graph.output)):
            for k, vi in enumerate(vis):
                p = ds / f"{kind}_{k}.pb"
                if p.exists():
                    out.append((p, vi.type))
    return out


def test_every_node_vector_loads_like_onnx(node_cases: list[Path]) -> None:
    counts = {"tensor": 0, "sequence_type": 0, "map_type": 0, "optional_type": 0}
    roundtrip_failures: list[str] = []
    failures: list[str] = []
    for case in node_cases:
        model = onnx.load(str(case / "model.onnx"), load_external_data=False)
        for path, tp in _pb_files(case, model):
            data = path.read_bytes()
            which = tp.WhichOneof("value")
            if which in _KINDS:
                cls, oname, reader = _KINDS[which]
                o = getattr(onnx, oname)()
                o.ParseFromString(data)
                expected = _norm_onnx(reader(o))
                msg = decode(cls, data)
                counts[which] += 1
            else:
                o = onnx.TensorProto()
                o.ParseFromString(data)
                expected = _norm_onnx(numpy_helper.to_array(o))
                msg = decode(TensorProto, data)
                counts["tensor"] += 1
            got = value_from_proto(msg)
            if not _equal(got, expected):
                failures.append(str(path))
                continue
            # and back: our proto of the value reads as the same value again
            back = value_from_proto(value_to_proto(got))
            if not _equal(back, got):
                roundtrip_failures.append(str(path))
    assert not failures, f"{len(failures)} files differ, e.g. {failures[:5]}"
    assert not roundtrip_failures, f"{len(roundtrip_failures)} round trips differ, e.g. {roundtrip_failures[:5]}"
    # the vectors of onnx 1.23 hold no maps; test_map_values_like_onnx covers them
    assert counts["tensor"] > 6000 and counts["sequence_type"] > 40 and counts["optional_type"] >= 9


def test_sparse_tensor_value_round_trip() -> None:
    onnx_helper = pytest.importorskip("onnx.helper")
    values = numpy_helper.from_array(np.array([1.5, -2.0, 3.25], dtype=np.float32), "v")
    indices = numpy_helper.from_array(np.array([1, 4, 5], dtype=np.int64), "i")
    sp = onnx_helper.make_sparse_tensor(values, indices, [2, 3])
    from onnxcore.proto import SparseTensorProto

    st = value_from_proto(decode(SparseTensorProto, sp.SerializeToString()))
    assert isinstance(st, SparseTensor)
    assert st.dims == (2, 3)
    np.testing.assert_array_equal(st.to_dense(), np.array([[0, 1.5, 0], [0, -2.0, 3.25]], dtype=np.float32))
    assert value_from_proto(value_to_proto(st)) == st
    # coordinate form of the indices
    st2 = SparseTensor(st.values, np.array([[0, 1], [1, 1], [1, 2]]), (2, 3))
    np.testing.assert_array_equal(st2.to_dense(), st.to_dense())


@pytest.mark.parametrize(
    "value",
    [
        {1: np.array([1.0, 2.0], dtype=np.float32), -7: np.array([3.0], dtype=np.float32)},
        {"a": np.array(5, dtype=np.int64), "\u00e9": np.array(6, dtype=np.int64)},
        {3: [np.array([1], dtype=np.int32)], 4: []},
    ],
)
def test_map_values_like_onnx(value: dict[Any, Any]) -> None:
    """Maps written by onnx.numpy_helper.from_dict read back equal (keys: int, or bytes for STRING)."""
    from onnxcore.types import ElementType, MapType, SequenceType, TensorType

    if any(isinstance(v, list) for v in value.values()):
        seq = [numpy_helper.from_list(v, "s", dtype=onnx.SequenceProto.TENSOR) for v in value.values()]
        o = onnx.MapProto(name="m", key_type=onnx.TensorProto.INT64)
        o.keys.extend(value.keys())
        o.values.CopyFrom(onnx.SequenceProto(elem_type=onnx.SequenceProto.SEQUENCE, sequence_values=seq))
        vt = MapType(ElementType.INT64, SequenceType(TensorType(ElementType.INT32)))
    elif isinstance(next(iter(value)), str):  # from_dict cannot make STRING keys; build it by hand
        o = onnx.MapProto(name="m", key_type=onnx.TensorProto.STRING)
        o.string_keys.extend(k.encode("utf-8") for k in value)
        o.values.CopyFrom(numpy_helper.from_list(list(value.values()), "v"))
        vt = None
    else:
        o = numpy_helper.from_dict(value, "m")
        vt = None
    expected = _norm_onnx(numpy_helper.to_dict(o))
    got = value_from_proto(decode(MapProto, o.SerializeToString()))
    assert _equal(got, expected)
    mine = value_to_proto(got, "m", value_type=vt)
    from onnxcore import encode

    o2 = onnx.MapProto()
    o2.ParseFromString(bytes(encode(mine)))
    assert _equal(_norm_onnx(numpy_helper.to_dict(o2)), expected)


def test_optional_absent_and_present() -> None:
    from onnxcore import encode
    from onnxcore.types import ElementType, OptionalType, TensorType

    absent = value_to_proto(None, "o", value_type=OptionalType(TensorType(ElementType.FLOAT)))
    o = onnx.OptionalProto()
    o.ParseFromString(bytes(encode(absent)))
    # onnx's to_optional cannot read an absent optional that states its elem_type (it writes
    # UNDEFINED there); the proto says elem_type identifies the kind, so we write it (docs/types.md)
    assert o.elem_type == onnx.OptionalProto.TENSOR
    assert not o.HasField("tensor_value") and not o.HasField("sequence_value")
    assert value_from_proto(absent) is None
    assert value_from_proto(decode(OptionalProto, numpy_helper.from_optional(None).SerializeToString())) is None
    present = value_to_proto(np.array([1.0], np.float32), "o", value_type=OptionalType(TensorType(ElementType.FLOAT)))
    o.ParseFromString(bytes(encode(present)))
    np.testing.assert_array_equal(numpy_helper.to_optional(o), np.array([1.0], np.float32))
    assert value_from_proto(present).tolist() == [1.0]


def test_sequence_of_optionals() -> None:
    """A list holding None is a sequence of optionals (OptionalProto elements)."""
    from onnxcore import encode

    value = [np.array([1, 2], dtype=np.int64), None]
    p = value_to_proto(value, "s")
    assert p.elem_type == SequenceProto.DataType.OPTIONAL and len(p.optional_values) == 2
    back = value_from_proto(decode(SequenceProto, bytes(encode(p))))
    assert _equal(back, value)
    o = onnx.SequenceProto()
    o.ParseFromString(bytes(encode(p)))
    assert len(o.optional_values) == 2 and o.optional_values[0].elem_type == onnx.OptionalProto.TENSOR
