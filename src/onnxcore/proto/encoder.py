"""Encoding of Annex B messages under Clause 12, driven by :mod:`onnxcore.proto.spec` (decoding is
:mod:`onnxcore.proto.decoder`).

Encoding writes fields in increasing tag order, repeated fields in the form Annex B records for them, then the
unknown fields (Clause 12.3); the canonical form also sorts the unknown fields by tag (Clause 12.8). Importing
this module gives the messages' protobuf methods (``SerializeToString``, ``ParseFromString``, ...) both halves.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from onnxcore.errors import EncodeError
from onnxcore.proto.decoder import (
    _F32,
    _F64,
    _I32_LIM,
    _I32_MIN,
    _I64_LIM,
    _U32,
    _U64,
    MESSAGE_CLASSES,
    M,
    NanBits,
    _decode_for_api,
)
from onnxcore.proto.message import Message, copy_message, install_codec
from onnxcore.proto.spec import MESSAGE_SPECS, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT, FieldSpec
from onnxcore.wire.varint import encode_key, encode_varint
from onnxcore.wire.writer import Writer

__all__ = [
    "encode_message",
    "encode_parts",
]

_Plan = list[tuple[FieldSpec, bytes, Any]]


def _build_encode_plan(name: str) -> _Plan:
    spec = MESSAGE_SPECS[name]
    plan: _Plan = []
    for f in sorted(spec.fields, key=lambda x: x.tag):
        key = encode_key(f.tag, f.wire_type if not f.packed else WIRE_LEN)
        if f.repeated and not f.packed:
            key = encode_key(f.tag, f.element_wire_type)
        sub = MESSAGE_CLASSES[f.type] if f.kind == "message" else None
        plan.append((f, key, sub))
    return plan


_ENCODE_PLANS: dict[type[Message], _Plan] = {cls: _build_encode_plan(n) for n, cls in MESSAGE_CLASSES.items()}


def _enc_int(f: FieldSpec, v: Any, path: str) -> bytes:
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            try:
                v = int(v) if isinstance(v, np.integer) else v.__index__()
            except (AttributeError, TypeError):
                raise EncodeError(f"{path}.{f.name}: expected an integer, got {type(v).__name__}") from None
    if f.type == "uint64":
        if not 0 <= v < _U64:
            raise EncodeError(f"{path}.{f.name}: {v} is outside the uint64 range")
        return encode_varint(v)
    if f.type == "int64":
        if not -_I64_LIM <= v < _I64_LIM:
            raise EncodeError(f"{path}.{f.name}: {v} is outside the int64 range")
    elif not _I32_MIN <= v < _I32_LIM:
        raise EncodeError(f"{path}.{f.name}: {v} is outside the int32 range")
    return encode_varint(v + _U64 if v < 0 else v)


def _enc_float(f: FieldSpec, v: Any, path: str) -> bytes:
    if isinstance(v, NanBits):
        return _U32.pack(v.bits)
    try:
        if f.type == "float":
            return _F32.pack(v)
        return _F64.pack(v)
    except (OverflowError, struct.error, TypeError) as e:
        raise EncodeError(f"{path}.{f.name}: {v!r} cannot be encoded as {f.type}: {e}") from None


def _enc_len(f: FieldSpec, v: Any, path: str) -> bytes | memoryview:
    if f.type == "string":
        if not isinstance(v, str):
            raise EncodeError(f"{path}.{f.name}: expected str, got {type(v).__name__}")
        try:
            return v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EncodeError(f"{path}.{f.name}: string cannot be encoded as UTF-8: {e.reason}") from None
    if isinstance(v, memoryview):
        return (
            v if v.format == "B" and v.ndim == 1 and v.c_contiguous else v.cast("B") if v.c_contiguous else v.tobytes()
        )
    if isinstance(v, bytes):
        return v
    if isinstance(v, bytearray):
        return memoryview(v)
    if isinstance(v, np.ndarray):
        arr: Any = np.ascontiguousarray(v).view(np.uint8).reshape(-1)
        return memoryview(arr)
    raise EncodeError(f"{path}.{f.name}: expected bytes, got {type(v).__name__}")


def _encode_into(msg: Message, w: Writer, path: str) -> None:
    plan = _ENCODE_PLANS.get(type(msg))
    if plan is None:
        raise EncodeError(f"{path}: {type(msg).__name__} is not an Annex B message")
    present = msg._present
    for f, key, sub in plan:
        v = getattr(msg, f.name)
        if f.kind == "message":
            if f.repeated:
                for i, item in enumerate(v):
                    if type(item) is not sub:
                        raise EncodeError(f"{path}.{f.name}[{i}]: expected {sub.__name__}, got {type(item).__name__}")
                    _write_sub(w, key, item, f"{path}.{f.name}[{i}]")
            elif v is not None:
                if type(v) is not sub:
                    raise EncodeError(f"{path}.{f.name}: expected {sub.__name__}, got {type(v).__name__}")
                _write_sub(w, key, v, f"{path}.{f.name}")
            continue
        if f.repeated:
            if not v:
                continue
            if f.packed:
                body = _packed_body(f, v, path)
                w.write(key)
                w.write_varint(len(body))
                w.write(body)
            elif f.element_wire_type == WIRE_LEN:
                for item in v:
                    data = _enc_len(f, item, path)
                    w.write(key)
                    w.write_varint(len(data))
                    w.write(data)
            else:
                enc = _enc_int if f.element_wire_type == WIRE_VARINT else _enc_float
                for item in v:
                    w.write(key)
                    w.write(enc(f, item, path))
            continue
        if not (present >> f.index & 1):
            # Not read from the wire nor given explicitly: written only when not the default.
            if f.element_wire_type == WIRE_LEN:
                if len(v) == 0:
                    continue
            elif f.element_wire_type in (WIRE_I32, WIRE_I64):
                if v == 0.0 and _F64.pack(v) == _F64.pack(0.0) and not isinstance(v, NanBits):
                    continue
            elif v == 0:
                continue
        w.write(key)
        if f.element_wire_type == WIRE_LEN:
            data = _enc_len(f, v, path)
            w.write_varint(len(data))
            w.write(data)
        elif f.element_wire_type == WIRE_VARINT:
            w.write(_enc_int(f, v, path))
        else:
            w.write(_enc_float(f, v, path))
    if msg._unknown:
        for _tag, octets in msg._unknown:
            w.write(octets)


def _packed_body(f: FieldSpec, v: list[Any], path: str) -> bytes:
    if f.type == "float":
        if any(isinstance(x, NanBits) for x in v):
            return b"".join(_enc_float(f, x, path) for x in v)
        try:
            return np.asarray(v, dtype="<f4").tobytes()
        except (OverflowError, ValueError, TypeError) as e:
            raise EncodeError(f"{path}.{f.name}: cannot encode as float: {e}") from None
    if f.type == "double":
        try:
            return np.asarray(v, dtype="<f8").tobytes()
        except (ValueError, TypeError) as e:
            raise EncodeError(f"{path}.{f.name}: cannot encode as double: {e}") from None
    return b"".join([_enc_int(f, x, path) for x in v])


def _write_sub(w: Writer, key: bytes, msg: Message, path: str) -> None:
    sw = Writer()
    _encode_into(msg, sw, path)
    w.write(key)
    w.write_varint(sw.size)
    w.extend(sw)


def encode_parts(msg: Message, *, canonical: bool = False) -> Writer:
    """Encode ``msg`` into a :class:`~onnxcore.wire.Writer` (parts kept by reference)."""
    if canonical:
        msg = _canonicalize(msg)
    w = Writer()
    try:
        _encode_into(msg, w, msg._SPEC.name)
    except RecursionError:
        raise EncodeError("message nested too deeply to encode") from None
    return w


def encode_message(msg: Message, *, canonical: bool = False) -> bytes:
    """Encode ``msg`` to octets (Clause 12). See :func:`onnxcore.io.encode` for ``canonical``."""
    return encode_parts(msg, canonical=canonical).getvalue()


def _canonicalize(msg: M) -> M:
    # The canonical form (our position on Clause 12.8): the writer's ordinary output, plus
    # unknown fields sorted by tag (stable). Decoding already folded last-wins and merges.
    out = copy_message(msg)

    def visit(m: Message) -> None:
        if m._unknown:
            m._unknown = sorted(m._unknown, key=lambda t: t[0])
        for f in m._SPEC.fields:
            if f.kind != "message":
                continue
            v = getattr(m, f.name)
            if f.repeated:
                for x in v:
                    visit(x)
            elif v is not None:
                visit(v)

    visit(out)
    return out


# The messages' protobuf methods (SerializeToString, ParseFromString, ...) encode and decode through us.
install_codec(encode_message, _decode_for_api)
