"""Builders shared by the external-data tests: models with references, written with our encoder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

import onnxcore
from onnxcore import (
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    StringStringEntryProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)

EXTERNAL = TensorProto.DataLocation.EXTERNAL
SECRET = b"TOP-SECRET-OUTSIDE-FILE-CONTENTS"  # 32 octets = 8 float32


def ext_tensor(
    name: str,
    entries: Sequence[tuple[str, str]],
    *,
    dims: Sequence[int] = (8,),
    data_type: int = TensorProto.DataType.FLOAT,
) -> TensorProto:
    """A tensor with data location EXTERNAL and the given (key, value) entries, in order."""
    return TensorProto(
        name=name,
        dims=list(dims),
        data_type=data_type,
        data_location=EXTERNAL,
        external_data=[StringStringEntryProto(key=k, value=v) for k, v in entries],
    )


def ref(location: str, offset: int | None = None, length: int | None = None) -> list[tuple[str, str]]:
    out = [("location", location)]
    if offset is not None:
        out.append(("offset", str(offset)))
    if length is not None:
        out.append(("length", str(length)))
    return out


def vinfo(name: str, dims: Sequence[int]) -> ValueInfoProto:
    shape = TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=d) for d in dims])
    return ValueInfoProto(
        name=name, type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=TensorProto.DataType.FLOAT, shape=shape))
    )


def add_model(initializers: Sequence[TensorProto], dims: Sequence[int] = (8,)) -> ModelProto:
    """``y = x + w`` with ``w`` the first initializer (further initializers ride along)."""
    w = initializers[0].name
    graph = GraphProto(
        name="g",
        node=[NodeProto(op_type="Add", input=["x", w], output=["y"])],
        initializer=list(initializers),
        input=[vinfo("x", dims)],
        output=[vinfo("y", dims)],
    )
    return ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=17)], graph=graph)


def write_model(path: Path, model: ModelProto) -> Path:
    """Write with the plain encoder (so even an inconsistent model is written as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(onnxcore.encode(model))
    return path


def floats(n: int, start: float = 0.0) -> np.ndarray:
    return (np.arange(n, dtype=np.float32) + np.float32(start)).astype("<f4")
