"""A signalling NaN in float_data keeps its bits through decode, re-encode, the canonical digest, external data and
evaluation (issue 41 item 5; Clause 12.2.4: a float is its 32-bit pattern on the wire). Fixed octets, written by
hand: a model whose one initializer holds [sNaN 0x7F800001, quiet NaN with payload 0x7FC00123, -sNaN 0xFF800005]."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np

import onnxcore
from onnxcore.io import canonical_digest

BITS = (0x7F800001, 0x7FC00123, 0xFF800005)


def _len(tag: int, body: bytes) -> bytes:
    assert len(body) < 128
    return bytes([tag << 3 | 2, len(body)]) + body


def _model_octets() -> bytes:
    """ModelProto{ir_version 8, graph{node Identity(w)->y, name "g", initializer w, output y: float[3]},
    opset_import {version 17}}, field by field."""
    floats = struct.pack("<3I", *BITS)
    tensor = bytes([0x08, 0x03, 0x10, 0x01]) + _len(4, floats) + _len(8, b"w")  # dims, data_type, float_data, name
    node = _len(1, b"w") + _len(2, b"y") + _len(4, b"Identity")
    dim = _len(1, bytes([0x08, 0x03]))  # TensorShapeProto{dim{dim_value 3}}
    ttype = bytes([0x08, 0x01]) + _len(2, dim)  # Tensor{elem_type FLOAT, shape}
    out = _len(1, b"y") + _len(2, _len(1, ttype))  # ValueInfoProto{name, type{tensor_type}}
    graph = _len(1, node) + _len(2, b"g") + _len(5, tensor) + _len(12, out)
    return bytes([0x08, 0x08]) + _len(7, graph) + _len(8, bytes([0x10, 17]))


def test_fixed_octets_round_trip_bit_for_bit(tmp_path: Path) -> None:
    data = _model_octets()
    model = onnxcore.load(data)
    assert onnxcore.check(model).errors == []
    (t,) = model.graph.initializer  # type: ignore[union-attr]
    assert [getattr(v, "bits", None) for v in t.float_data] == list(BITS)
    assert onnxcore.encode(model) == data
    assert onnxcore.encode(model, canonical=True) == data
    assert canonical_digest(model) == hashlib.sha256(data).hexdigest()
    assert onnxcore.to_array(t).view(np.uint32).tolist() == list(BITS)
    (y,) = onnxcore.Session(model).run(None, {})
    assert y.view(np.uint32).tolist() == list(BITS)
    # Through a file with the weights moved to external data (as raw octets): the same bits come back.
    path = tmp_path / "m.onnx"
    onnxcore.save(model, path, external_data=True, size_threshold=0)
    (ext,) = onnxcore.load(path).graph.initializer  # type: ignore[union-attr]
    assert onnxcore.to_array(ext, base_dir=tmp_path).view(np.uint32).tolist() == list(BITS)
