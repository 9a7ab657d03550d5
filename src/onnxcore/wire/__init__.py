"""Clause 12 primitives: variable-length integers, field keys, fixed-width and length-delimited values.

This package knows nothing of ONNX messages; :mod:`onnxcore.proto.decoder` and :mod:`onnxcore.proto.encoder` build
on it.
"""

from __future__ import annotations

from onnxcore.wire.reader import (
    FieldRecord,
    iter_fields,
    read_fixed32,
    read_fixed64,
    read_key,
    read_length,
    read_varint,
    skip_value,
)
from onnxcore.wire.varint import (
    MAX_VARINT_OCTETS,
    encode_key,
    encode_signed,
    encode_varint,
    to_int32,
    to_int64,
    varint_size,
)
from onnxcore.wire.writer import Writer

__all__ = [
    "MAX_VARINT_OCTETS",
    "FieldRecord",
    "Writer",
    "encode_key",
    "encode_signed",
    "encode_varint",
    "iter_fields",
    "read_fixed32",
    "read_fixed64",
    "read_key",
    "read_length",
    "read_varint",
    "skip_value",
    "to_int32",
    "to_int64",
    "varint_size",
]
