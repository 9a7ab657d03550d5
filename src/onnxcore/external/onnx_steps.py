"""onnx's two steps of external data (``onnx.external_data_helper``): mark the tensors, then write them.

onnx moves weights out of a model in two steps: ``convert_model_to_external_data`` marks each large tensor
EXTERNAL with its ``location`` while it keeps its contents, and ``write_external_data_tensors`` (called by
``onnx.save_model``) appends each marked tensor's octets to its file, records ``offset`` and ``length`` and
drops the contents. A marked tensor is the *inconsistent* state of :mod:`onnxcore.external.write` (EXTERNAL
with contents): it exists only between the two steps, and :func:`onnxcore.save` still refuses it; the façade's
``save_model`` writes the marked tensors first, as onnx's does. Locations are checked as a reader checks them
(Clause 13.2: relative, no ``..``); the files are opened for appending, as onnx does.
"""

from __future__ import annotations

import os
import re
import uuid

from onnxcore.errors import ExternalDataError
from onnxcore.external.reference import has_inline_contents, is_external, split_location
from onnxcore.external.side_table import resolution
from onnxcore.external.tensor_walk import iter_tensors
from onnxcore.external.write import _typed_to_raw
from onnxcore.proto.message import Message
from onnxcore.proto.messages import StringStringEntryProto, TensorProto

__all__ = [
    "convert_model_from_external_data",
    "convert_model_to_external_data",
    "has_marked_tensors",
    "uses_external_data",
    "write_external_data_tensors",
]

_EXTERNAL = TensorProto.DataLocation.EXTERNAL
_DEFAULT = TensorProto.DataLocation.DEFAULT
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def uses_external_data(tensor: TensorProto) -> bool:
    """Whether the tensor's data location is EXTERNAL (``onnx.external_data_helper.uses_external_data``)."""
    return bool(is_external(tensor))


def _marked(tensor: TensorProto) -> bool:
    # A resolved reference (load_external_data's view of its file, Clause 13.2) carries raw_data too but is not
    # marked: its octets are already in its file, and saving it writes them where the save puts them.
    return is_external(tensor) and has_inline_contents(tensor) and resolution(tensor) is None


def has_marked_tensors(model: Message) -> bool:
    """Whether any tensor of ``model`` is marked EXTERNAL and still holds its contents (the first step done)."""
    return any(_marked(t) for _path, t in iter_tensors(model))


def _in_attribute(path: str) -> bool:
    return ".attribute[" in path


def _raw(tensor: TensorProto) -> bytes | None:
    if tensor.has("raw_data"):
        return bytes(tensor.raw_data)
    return None


def convert_model_to_external_data(
    model: Message,
    all_tensors_to_one_file: bool = True,
    location: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
) -> None:
    """Mark every tensor of at least ``size_threshold`` octets EXTERNAL, in place (the first of onnx's steps).

    The contents stay (a typed field becomes ``raw_data``) until :func:`write_external_data_tensors` writes them.

    Args:
        model: An onnxcore model (changed in place).
        all_tensors_to_one_file: One file (``location``, or a fresh name) for all; else one file per tensor,
            named after the tensor (a fresh name when its name is not a plain file name).
        location: The file, relative to the model's directory.
        size_threshold: Tensors smaller than this many octets stay inline.
        convert_attribute: Also mark the tensors held by attributes (``Constant`` values, ...).

    Raises:
        ExternalDataError: a location a reader would refuse (absolute, ``..``).
        TypeError: ``model`` is not one of our messages.
    """
    if not isinstance(model, Message):
        raise TypeError(
            f"convert_model_to_external_data changes onnxcore's messages in place, got {type(model).__name__}"
        )
    one_file = location if location is not None else str(uuid.uuid1())
    if all_tensors_to_one_file:
        split_location(one_file, "<convert_model_to_external_data>")
    for path, tensor in iter_tensors(model):
        if is_external(tensor) or (_in_attribute(path) and not convert_attribute):
            continue
        raw = _raw(tensor)
        if raw is None and tensor.data_type != TensorProto.STRING:
            converted = _typed_to_raw(tensor, size_threshold)
            raw = None if converted is None else bytes(converted)
        if raw is None or len(raw) < size_threshold:
            continue
        name = one_file if all_tensors_to_one_file else tensor.name
        if not all_tensors_to_one_file and not _SAFE_NAME.match(name or ""):
            name = str(uuid.uuid1())
        for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            setattr(tensor, field, [])
        tensor.raw_data = raw
        tensor.mark_present("raw_data")
        tensor.data_location = _EXTERNAL
        tensor.external_data = [StringStringEntryProto(key="location", value=name)]


def write_external_data_tensors(model: Message, filepath: str | os.PathLike[str]) -> Message:
    """Write each marked tensor's octets to its file under ``filepath`` and make it a reference (onnx's second step).

    Each file is opened for appending: the tensor goes at its end, and ``offset`` and ``length`` are recorded;
    the contents are dropped from the model.

    Returns:
        ``model`` itself.

    Raises:
        ExternalDataError: a location a reader would refuse.
    """
    base = os.fspath(filepath)
    for path, tensor in iter_tensors(model):
        if not _marked(tensor):
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location")
        if not location:
            raise ExternalDataError(f"{path}: a tensor marked EXTERNAL names no location")
        target = os.path.join(base, *split_location(location, path))
        data = _raw(tensor)
        if data is None:
            converted = _typed_to_raw(tensor, 0)
            data = b"" if converted is None else bytes(converted)
        with open(target, "ab") as fh:
            offset = fh.seek(0, os.SEEK_END)
            fh.write(data)
        kept = [e for e in tensor.external_data if e.key not in ("offset", "length")]
        tensor.external_data = [
            *kept,
            StringStringEntryProto(key="offset", value=str(offset)),
            StringStringEntryProto(key="length", value=str(len(data))),
        ]
        tensor.clear_field("raw_data")
        for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            setattr(tensor, field, [])
    return model


def convert_model_from_external_data(model: Message) -> None:
    """Make every resolved external tensor inline again, in place (``onnx``'s function of that name).

    The tensors must have been resolved (loaded with their external data).

    Raises:
        ExternalDataError: a reference that was never resolved (its contents are not in memory).
    """
    for path, tensor in iter_tensors(model):
        if not is_external(tensor):
            continue
        if not tensor.has("raw_data"):
            raise ExternalDataError(f"{path}: the external tensor was not loaded; load its data first")
        tensor.raw_data = bytes(tensor.raw_data)
        tensor.mark_present("raw_data")
        tensor.external_data = []
        tensor.data_location = _DEFAULT
        tensor.clear_field("data_location")
