"""Writing external data (Clause 13): externalize, internalize, and saving a model with a data file.

In memory a tensor is in one of four states, and every function here maps each state explicitly:

* **inline**: data location DEFAULT, contents in ``raw_data`` or a typed field;
* **resolved external**: EXTERNAL, reference kept, ``raw_data`` is the registered view of the
  mapped file (see :mod:`onnxcore.external.side_table`);
* **unresolved external**: EXTERNAL, reference only (loaded with ``external_data=False``, or made
  by :func:`externalize`);
* **inconsistent**: EXTERNAL with contents that are not its resolved view; Clause 13.1 forbids it
  and every function here refuses it (rule ``inline-and-external``).
"""

from __future__ import annotations

import dataclasses
import errno
import mmap
import os
from collections.abc import Iterable
from typing import Any, TypeVar, overload

import numpy as np

from onnxcore.errors import ExternalDataError
from onnxcore.external.mapped import FileRange, MappedFile, ensure_within, file_range, open_range
from onnxcore.external.reference import ReferenceRule, has_inline_contents, is_external, make_error, split_location
from onnxcore.external.side_table import Resolution, resolution
from onnxcore.external.tensor_walk import iter_tensors, tensor_label
from onnxcore.proto.bridge import OnnxMessage, as_message
from onnxcore.proto.decoder import NanBits
from onnxcore.proto.encoder import encode_parts
from onnxcore.proto.message import Message, copy_message
from onnxcore.proto.messages import StringStringEntryProto, TensorProto

__all__ = ["externalize", "internalize", "save_model"]

M = TypeVar("M", bound=Message)

_DT = TensorProto.DataType
_DEFAULT = TensorProto.DataLocation.DEFAULT
_EXTERNAL = TensorProto.DataLocation.EXTERNAL

# Typed storage -> raw little-endian layout (Annex B notes on each typed field). Only types
# whose raw layout is one element per stored value are converted; others stay inline.
_TYPED: dict[int, tuple[str, str]] = {
    _DT.FLOAT: ("float_data", "<f4"),
    _DT.COMPLEX64: ("float_data", "<f4"),
    _DT.DOUBLE: ("double_data", "<f8"),
    _DT.COMPLEX128: ("double_data", "<f8"),
    _DT.INT64: ("int64_data", "<i8"),
    _DT.UINT64: ("uint64_data", "<u8"),
    _DT.UINT32: ("uint64_data", "<u4"),
    _DT.INT32: ("int32_data", "<i4"),
    _DT.INT16: ("int32_data", "<i2"),
    _DT.INT8: ("int32_data", "i1"),
    _DT.UINT16: ("int32_data", "<u2"),
    _DT.UINT8: ("int32_data", "u1"),
    _DT.BOOL: ("int32_data", "u1"),
    _DT.FLOAT16: ("int32_data", "<u2"),
    _DT.BFLOAT16: ("int32_data", "<u2"),
    _DT.FLOAT8E4M3FN: ("int32_data", "u1"),
    _DT.FLOAT8E4M3FNUZ: ("int32_data", "u1"),
    _DT.FLOAT8E5M2: ("int32_data", "u1"),
    _DT.FLOAT8E5M2FNUZ: ("int32_data", "u1"),
    _DT.FLOAT8E8M0: ("int32_data", "u1"),
}
_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


@dataclasses.dataclass(slots=True)
class _Plan:
    parts: list[bytes | memoryview]
    size: int
    refs: list[TensorProto]
    # parts[i] is a view of a mapped external file: where it came from (for an in-kernel copy)
    sources: dict[int, Resolution] = dataclasses.field(default_factory=dict)


def _typed_to_raw(tensor: TensorProto, threshold: int) -> bytes | None:
    """Raw little-endian octets of typed storage, or None (too small, no raw form, or malformed)."""
    conv = _TYPED.get(tensor.data_type)
    if conv is None:
        return None
    field, code = conv
    values: list[Any] = getattr(tensor, field)
    others = [f for f in _TYPED_FIELDS if f != field and getattr(tensor, f)]
    dt = np.dtype(code)
    if not values or others or tensor.has("raw_data") or len(values) * dt.itemsize < threshold:
        return None
    try:
        if dt.kind == "f":
            arr = np.array(values, dtype=dt)
            if dt.itemsize == 4:
                bits = arr.view("<u4")
                for i, v in enumerate(values):
                    if isinstance(v, NanBits):
                        bits[i] = v.bits
        else:
            wide = np.array(values, dtype=np.uint64 if field == "uint64_data" else np.int64)
            arr = wide.astype(dt)
            if not np.array_equal(arr.astype(wide.dtype), wide):
                return None  # out of range for the type: left for the validator to report
    except (OverflowError, ValueError, TypeError):
        return None
    return arr.tobytes()


def _octets(raw: bytes | bytearray | memoryview) -> bytes | memoryview:
    # A memoryview of a typed buffer (e.g. of a float32 array) counts elements, not octets.
    if isinstance(raw, memoryview):
        return raw if raw.format == "B" and raw.ndim == 1 and raw.contiguous else raw.cast("B")
    return raw if isinstance(raw, bytes) else memoryview(raw)


def _set_reference(tensor: TensorProto, location: str, offset: int, length: int) -> None:
    tensor.clear_field("raw_data")
    for f in _TYPED_FIELDS:
        setattr(tensor, f, [])
    tensor.data_location = _EXTERNAL
    tensor.external_data = [
        StringStringEntryProto(key="location", value=location),
        StringStringEntryProto(key="offset", value=str(offset)),
        StringStringEntryProto(key="length", value=str(length)),
    ]


def _set_inline(tensor: TensorProto) -> None:
    # The raw_data view stays (zero-copy); the reference goes.
    tensor.clear_field("data_location")
    tensor.external_data = []


def _state(path: str, tensor: TensorProto) -> str:
    if not is_external(tensor):
        return "inline"
    typed = any(getattr(tensor, f) for f in _TYPED_FIELDS)
    if resolution(tensor) is not None and not typed:
        return "resolved"
    if typed or has_inline_contents(tensor):
        loc = next((e.value for e in tensor.external_data if e.key == "location"), None)
        raise make_error(
            tensor_label(path, tensor),
            loc,
            ReferenceRule.INLINE_AND_EXTERNAL,
            "the tensor is EXTERNAL and carries contents that are not its resolved external data",
        )
    return "unresolved"


def _unresolved(path: str, tensor: TensorProto) -> ExternalDataError:
    loc = next((e.value for e in tensor.external_data if e.key == "location"), None)
    return make_error(
        tensor_label(path, tensor),
        loc,
        ReferenceRule.UNRESOLVED,
        "the reference is not resolved; call onnxcore.load_external_data(model, base_dir) first",
    )


def _plan(model: M, location: str, size_threshold: int, align: int) -> tuple[M, _Plan]:
    split_location(location, "<save>")
    align = max(1, int(align))
    out = copy_message(model)
    plan = _Plan([], 0, [])
    for path, tensor in iter_tensors(out):
        state = _state(path, tensor)
        if state == "unresolved":
            raise _unresolved(path, tensor)
        data: bytes | memoryview | None = None
        if tensor.has("raw_data"):
            raw = _octets(tensor.raw_data)
            # Contents in raw_data and a typed field are malformed: left as they are, for the
            # validator to report, rather than silently dropping one of them.
            if len(raw) >= size_threshold and not any(getattr(tensor, f) for f in _TYPED_FIELDS):
                data = raw
        elif state == "inline":
            data = _typed_to_raw(tensor, size_threshold)
        if data is None:
            if state == "resolved":
                _set_inline(tensor)
            continue
        pad = -plan.size % align
        if pad:
            plan.parts.append(bytes(pad))
            plan.size += pad
        offset = plan.size
        record = resolution(tensor) if state == "resolved" else None
        if record is not None and isinstance(data, memoryview) and isinstance(data.obj, mmap.mmap):
            plan.sources[len(plan.parts)] = record
        plan.parts.append(data)
        plan.size += len(data)
        _set_reference(tensor, location, offset, len(data))
        plan.refs.append(tensor)
    return out, plan


def _add_checksum(refs: Iterable[TensorProto], digest: str) -> None:
    for t in refs:
        t.external_data.append(StringStringEntryProto(key="checksum", value=digest))


@overload
def externalize(
    model: M, *, location: str, size_threshold: int = 1024, align: int = 4096, checksum: bool = False
) -> tuple[M, list[bytes | memoryview]]: ...
@overload
def externalize(
    model: OnnxMessage, *, location: str, size_threshold: int = 1024, align: int = 4096, checksum: bool = False
) -> tuple[Message, list[bytes | memoryview]]: ...
def externalize(
    model: Message | OnnxMessage,
    *,
    location: str,
    size_threshold: int = 1024,
    align: int = 4096,
    checksum: bool = False,
) -> tuple[Message, list[bytes | memoryview]]:
    """Move tensor contents out of a model, in memory (Clause 13).

    Every tensor whose contents (``raw_data``, or typed storage converted to the raw
    little-endian layout) take at least ``size_threshold`` octets becomes an unresolved EXTERNAL
    reference into one data file named ``location``, each at an offset aligned to ``align``
    (Clause 13.2 SHOULD). Resolved external tensors are re-laid the same way (or inlined when
    below the threshold). STRING tensors have no raw form and stay inline.

    Args:
        model: The model; not changed. The onnx package's is accepted (converted first); the copy
            returned is then onnxcore's.
        location: The data file's location, relative to the model directory (checked as a
            reader would check it: relative, no ``..``).
        size_threshold: Octets at or above which a tensor goes to the data file.
        align: Offset alignment in octets (1 for none).
        checksum: Also record the SHA-1 of the data file (Clause 13.3) in each reference.

    Returns:
        ``(copy, parts)``: the converted copy, and the octets of the data file as a list of
        parts (views into the original contents, and zero padding) to be written in order.

    Raises:
        ExternalDataError: an unresolved or inconsistent EXTERNAL tensor, or a bad location.
        TypeError: ``model`` is not a message.
    """
    out, plan = _plan(as_message(model, None, "externalize"), location, size_threshold, align)
    if checksum and plan.refs:
        import hashlib  # here, not at the top: 3 ms of every `import onnxcore`, for a checksum

        h = hashlib.sha1(usedforsecurity=False)
        for p in plan.parts:
            h.update(p)
        _add_checksum(plan.refs, h.hexdigest())
    return out, plan.parts


@overload
def internalize(model: M) -> M: ...
@overload
def internalize(model: OnnxMessage) -> Message: ...
def internalize(model: Message | OnnxMessage) -> Message:
    """A copy of ``model`` with every resolved external tensor made inline.

    The contents become ``raw_data`` (still a zero-copy view of the mapped file), the data location
    goes back to DEFAULT and the ``external_data`` entries are removed. The onnx package's message is
    accepted and converted (its external tensors are then unresolved: resolve them with
    ``onnxcore.load_external_data(onnxcore.from_onnx(obj), base_dir)`` first).

    Raises:
        ExternalDataError: a tensor is EXTERNAL and unresolved (rule ``unresolved``) or
            inconsistent (rule ``inline-and-external``).
        TypeError: ``model`` is not a message.
    """
    out = copy_message(as_message(model, None, "internalize"))
    for path, tensor in iter_tensors(out):
        state = _state(path, tensor)
        if state == "unresolved":
            raise _unresolved(path, tensor)
        if state == "resolved":
            _set_inline(tensor)
    return out


def _inline_for_save(model: M) -> M:
    """Resolved external tensors inline; unresolved references kept as they are."""
    states = [(path, t, _state(path, t)) for path, t in iter_tensors(model)]
    if not any(s == "resolved" for _, _, s in states):
        return model
    out = copy_message(model)
    for path, tensor in iter_tensors(out):
        if _state(path, tensor) == "resolved":
            _set_inline(tensor)
    return out


def _file_mode(final: str) -> int:
    # mkstemp creates 0600; the file put in place gets the mode the old one had, or the
    # ordinary mode for a new file under the process umask.
    try:
        return os.stat(final).st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


# Parts from which a view of a mapped file is copied file to file rather than through the mapping.
_COPY_FROM = 1 << 16


def _range_of(record: Resolution) -> FileRange:
    # A resolved external tensor's file, as the mapped-file registry describes a file (reopened by path, its
    # device and inode checked: Clause 15.3).
    return FileRange(MappedFile(record.path, None, record.device, record.inode, 0), record.offset, record.length)


def _copy_in_kernel(src: int, dst: int, offset: int, length: int) -> bool:
    """Copy a range with copy_file_range (no pass through user space); False to fall back."""
    start = os.lseek(dst, 0, os.SEEK_CUR)
    done = 0
    try:
        while done < length:
            n = os.copy_file_range(src, dst, length - done, offset + done)
            if n <= 0:
                raise OSError(errno.EIO, "short copy")
            done += n
    except OSError:
        os.lseek(dst, start, os.SEEK_SET)
        os.ftruncate(dst, start)
        return False
    return True


def _write_parts(
    fd: int,
    parts: list[bytes | memoryview] | Iterable[bytes | bytearray | memoryview],
    sources: dict[int, Resolution],
) -> None:
    # A part that views a mapped file (a resolved external tensor, a weight of a model loaded from a path, a
    # spilled constant: onnxcore.external.mapped) is copied file to file inside the kernel when the platform can:
    # re-saving a loaded model runs at the speed of a plain file copy, and neither this process's anonymous memory
    # nor its resident pages of the mapping grow with the model.
    opened: dict[MappedFile, tuple[int, bool] | None] = {}
    use_kernel = hasattr(os, "copy_file_range")
    try:
        for i, part in enumerate(parts):
            rng: FileRange | None = None
            if use_kernel:
                record = sources.get(i)
                if record is not None:
                    rng = _range_of(record)
                elif isinstance(part, memoryview) and part.nbytes >= _COPY_FROM:
                    rng = file_range(part)
            if rng is not None:
                if rng.file not in opened:
                    opened[rng.file] = open_range(rng)
                elif opened[rng.file] is not None:
                    ensure_within(opened[rng.file][0], rng)  # type: ignore[index]
                src = opened[rng.file]
                if src is not None and _copy_in_kernel(src[0], fd, rng.offset, rng.length):
                    continue
            _write_all(fd, part)
    finally:
        for src in opened.values():
            if src is not None and src[1]:
                os.close(src[0])


def _write_temp(
    directory: str,
    name: str,
    parts: Iterable[bytes | bytearray | memoryview],
    digest: Any = None,
    sources: dict[int, Resolution] | None = None,
) -> str:
    import tempfile  # here, not at the top: with random, hashlib and shutil, 5 ms of every `import onnxcore`

    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _file_mode(os.path.join(directory, name)))
        if digest is not None:
            # The digest needs the octets in hand: write through user space.
            for part in parts:
                _write_all(fd, part)
                digest.update(part)
        else:
            _write_parts(fd, parts, sources or {})
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def save_model(
    model: Message,
    path: str | os.PathLike[str],
    *,
    external_data: bool = False,
    location: str | None = None,
    size_threshold: int = 1024,
    align: int = 4096,
    checksum: bool = False,
    canonical: bool = False,
) -> None:
    """Save ``model`` to ``path``; see :func:`onnxcore.save` for the contract."""
    target = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(target)
    name = os.path.basename(target)
    if not external_data:
        if location is not None:
            raise ValueError("location is only meaningful with external_data=True")
        out = _inline_for_save(model)
        tmp_inline = _write_temp(directory, name, encode_parts(out, canonical=canonical).parts())
        try:
            os.replace(tmp_inline, target)
        except BaseException:
            _unlink(tmp_inline)
            raise
        return
    loc = location if location is not None else f"{name}.data"
    comps = split_location(loc, "<save>")
    data_path = os.path.join(directory, *comps)
    if os.path.abspath(data_path) == target:
        raise make_error("<save>", loc, ReferenceRule.LOCATION_INVALID, "the data file would be the model file itself")
    out, plan = _plan(model, loc, size_threshold, align)
    tmp_data: str | None = None
    tmp_model: str | None = None
    try:
        if plan.refs:
            # New octets go to a temporary first: the tensors may be views into the very file
            # being replaced, whose old inode stays mapped until they are dropped.
            import hashlib  # here, not at the top: 3 ms of every `import onnxcore`, for a checksum

            h = hashlib.sha1(usedforsecurity=False) if checksum else None
            tmp_data = _write_temp(os.path.dirname(data_path), comps[-1], plan.parts, h, plan.sources)
            if h is not None:
                _add_checksum(plan.refs, h.hexdigest())
        tmp_model = _write_temp(directory, name, encode_parts(out, canonical=canonical).parts())
        if tmp_data is not None:
            os.replace(tmp_data, data_path)
            tmp_data = None
        # The model last: until this rename the old model file is what a reader finds.
        os.replace(tmp_model, target)
        tmp_model = None
    finally:
        for t in (tmp_data, tmp_model):
            if t is not None:
                _unlink(t)
