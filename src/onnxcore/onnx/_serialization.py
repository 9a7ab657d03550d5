"""onnx's top-level load and save functions (``onnx.load``, ``onnx.save_model``, ...), over :func:`onnxcore.load`
and :func:`onnxcore.save`.

Adapters only: onnx's arguments (a path or a binary file object, ``format``, ``load_external_data``,
``save_as_external_data`` with ``location`` and ``size_threshold``) translated to ours. The formats are onnx's
names: ``"protobuf"`` (the default), ``"textproto"`` (protocol buffers' text format, ``str(model)``, read by
:func:`onnxcore.proto.textproto_parse.parse_text`) and ``"onnxtxt"`` (the ONNX textual syntax, :mod:`onnxcore.text`);
``"json"`` is refused by name.
"""

from __future__ import annotations

import os
from typing import IO, Any

from onnxcore.errors import OnnxCoreError
from onnxcore.external.onnx_steps import has_marked_tensors, write_external_data_tensors
from onnxcore.io import decode, encode
from onnxcore.io import load as load_source
from onnxcore.io import save as save_file
from onnxcore.proto.bridge import as_message
from onnxcore.proto.messages import ModelProto, TensorProto
from onnxcore.proto.textproto_parse import parse_text
from onnxcore.text import parse_model, to_text

__all__ = [
    "FormatError",
    "load",
    "load_from_string",
    "load_model",
    "load_model_from_string",
    "load_tensor",
    "load_tensor_from_string",
    "save",
    "save_model",
    "save_tensor",
]

_PROTOBUF = "protobuf"
_TEXT = "onnxtxt"
_TEXTPROTO = "textproto"
_PathOrFile = str | os.PathLike[str] | IO[bytes]


class FormatError(OnnxCoreError, ValueError):
    """A serialization format onnxcore does not read or write (a ``ValueError``, as onnx raises)."""


def _format(fmt: str | None, f: object) -> str:
    if fmt is None and isinstance(f, str | os.PathLike):
        # As onnx picks the format of a path by its extension.
        path = os.fspath(f)
        if path.endswith((".onnxtxt", ".onnxtext")):
            return _TEXT
        if path.endswith((".textproto", ".prototxt", ".pbtxt")):
            return _TEXTPROTO
    fmt = _PROTOBUF if fmt is None else fmt
    if fmt not in (_PROTOBUF, _TEXT, _TEXTPROTO):
        raise FormatError(
            f"serialization format {fmt!r} is not supported: onnxcore reads 'protobuf', 'textproto' and 'onnxtxt'"
        )
    return fmt


def _read(f: _PathOrFile | bytes) -> bytes:
    if isinstance(f, bytes | bytearray):
        return bytes(f)
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as fh:
            return fh.read()
    return f.read()


def load_model(f: _PathOrFile, format: str | None = None, load_external_data: bool = True) -> ModelProto:
    """Load a model from a path or a binary file (``onnx.load_model``).

    A path is memory-mapped (:func:`onnxcore.load`); with ``load_external_data`` the external references are
    resolved against the model's directory.
    """
    fmt = _format(format, f)
    if fmt == _TEXT:
        return parse_model(_read(f).decode("utf-8"))
    if fmt == _TEXTPROTO:
        return parse_text(_read(f).decode("utf-8"), ModelProto)
    return load_source(f, external_data=load_external_data)


def load_model_from_string(s: bytes, format: str | None = None) -> ModelProto:
    """A model from its octets (``onnx.load_model_from_string``)."""
    fmt = _format(format, None)
    if fmt != _PROTOBUF:
        text = s.decode("utf-8") if isinstance(s, bytes) else str(s)
        return parse_model(text) if fmt == _TEXT else parse_text(text, ModelProto)
    return decode(ModelProto, s)


def load_tensor(f: _PathOrFile, format: str | None = None) -> TensorProto:
    """A TensorProto from a path or a binary file (``onnx.load_tensor``)."""
    _format(format, None)
    return decode(TensorProto, _read(f))


def load_tensor_from_string(s: bytes, format: str | None = None) -> TensorProto:
    """A TensorProto from its octets (``onnx.load_tensor_from_string``)."""
    _format(format, None)
    return decode(TensorProto, s)


def _write(data: bytes, f: _PathOrFile) -> None:
    if isinstance(f, str | os.PathLike):
        with open(f, "wb") as fh:
            fh.write(data)
    else:
        f.write(data)


def save_model(
    proto: ModelProto | bytes | Any,
    f: _PathOrFile,
    format: str | None = None,
    *,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
) -> None:
    """Save a model to a path or a binary file (``onnx.save_model``).

    ``save_as_external_data`` writes every tensor of at least ``size_threshold`` octets to one data file
    (``location``, by default ``<model file>.data``) beside the model (:func:`onnxcore.save`); tensors marked
    by ``external_data_helper.convert_model_to_external_data`` are written to the files they name first, as
    onnx does. ``all_tensors_to_one_file=False`` and ``convert_attribute`` apply to the marking step only.

    Raises:
        FormatError: a format other than ``protobuf`` and ``onnxtxt``.
        ExternalDataError: external data asked for a file object, or a bad location.
    """
    fmt = _format(format, f)
    if isinstance(proto, bytes | bytearray):
        proto = decode(ModelProto, proto)
    model = as_message(proto, ModelProto, "save_model")
    if fmt in (_TEXT, _TEXTPROTO):
        _write((to_text(model) if fmt == _TEXT else str(model)).encode("utf-8"), f)
        return
    path = os.fspath(f) if isinstance(f, str | os.PathLike) else None
    if has_marked_tensors(model):
        write_external_data_tensors(model, os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    if save_as_external_data:
        if path is None:
            raise FormatError("save_model: save_as_external_data needs a path, not a file object")
        save_file(model, path, external_data=True, location=location, size_threshold=size_threshold)
    elif path is not None:
        save_file(model, path)
    else:
        _write(encode(model), f)


def save_tensor(proto: TensorProto | Any, f: _PathOrFile) -> None:
    """Write a TensorProto's octets to a path or a binary file (``onnx.save_tensor``)."""
    _write(encode(as_message(proto, TensorProto, "save_tensor")), f)


# onnx's aliases.
load = load_model
load_from_string = load_model_from_string
save = save_model
