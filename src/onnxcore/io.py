"""Load and save models and messages: paths (memory-mapped), bytes, binary files."""

from __future__ import annotations

import mmap
import os
import tempfile
from pathlib import Path
from typing import IO, TypeVar

from onnxcore.errors import DecodeError, OnnxCoreError
from onnxcore.proto.codec import DEFAULT_MAX_DEPTH, decode_message, encode_parts
from onnxcore.proto.message import Message
from onnxcore.proto.messages import ModelProto

__all__ = ["decode", "encode", "load", "save", "read_source", "write_atomic"]

M = TypeVar("M", bound=Message)

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]


def decode(cls: type[M], data: bytes | bytearray | memoryview, *, max_depth: int = DEFAULT_MAX_DEPTH) -> M:
    """Decode one message of class ``cls`` from octets (Clause 12).

    ``bytes`` fields such as ``TensorProto.raw_data`` are zero-copy views into ``data``.

    Raises:
        DecodeError: malformed input; ``.offset`` is the byte offset, the message names the
            field path.
    """
    return decode_message(cls, data, max_depth=max_depth)


def encode(message: Message, *, canonical: bool = False) -> bytes:
    """Encode a message to octets.

    Fields are written in increasing tag order and repeated fields in the form Annex B records
    for them, followed by retained unknown fields in the order they were read.

    Args:
        message: Any Annex B message.
        canonical: Write the canonical form (our position on Clause 12.8, see docs/canonical.md):
            as the ordinary form, but with unknown fields sorted by tag. Equal content then
            gives equal octets.
    """
    return encode_parts(message, canonical=canonical).getvalue()


def read_source(source: Source) -> tuple[memoryview, Path | None]:
    """Octets of ``source`` as a memoryview, and the file's path when it is one.

    A path is memory-mapped read-only: nothing is copied, and views into it stay valid for as
    long as they are referenced.
    """
    if isinstance(source, bytes | bytearray):
        return memoryview(source), None
    if isinstance(source, memoryview):
        return source.cast("B") if source.format != "B" else source, None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size == 0:
                    return memoryview(b""), path
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise OnnxCoreError(f"cannot read {path}: {e.strerror or e}") from e
        return memoryview(mm), path
    if hasattr(source, "read"):
        name = getattr(source, "name", None)
        try:
            fileno = source.fileno()
            pos = source.tell()
            size = os.fstat(fileno).st_size
            if pos == 0 and size > 0:
                mm = mmap.mmap(fileno, 0, access=mmap.ACCESS_READ)
                source.seek(size)
                return memoryview(mm), Path(name) if isinstance(name, str) else None
        except (OSError, AttributeError, ValueError):
            pass
        data = source.read()
        if not isinstance(data, bytes | bytearray):
            raise TypeError("load() needs a binary file")
        return memoryview(data), Path(name) if isinstance(name, str) else None
    raise TypeError(f"cannot load from {type(source).__name__}")


def load(source: Source, *, max_depth: int = DEFAULT_MAX_DEPTH) -> ModelProto:
    """Load a model from a path, octets or a binary file.

    A path is memory-mapped and ``raw_data`` of every tensor is a zero-copy view into the map:
    loading a model does not copy its weights.

    Raises:
        DecodeError: malformed input (offset and field path in the message).
        OnnxCoreError: the file cannot be read.
    """
    buf, _path = read_source(source)
    return decode_message(ModelProto, buf, max_depth=max_depth)


def write_atomic(path: str | os.PathLike[str], parts: object) -> None:
    """Write octet parts to ``path`` through a temporary file in the same directory.

    The temporary is renamed into place only once complete, so a failure never leaves a
    partial file at ``path`` (the old file, if any, stays intact).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:  # type: ignore[attr-defined]
                fh.write(part)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(model: Message, path: str | os.PathLike[str], *, canonical: bool = False) -> None:
    """Save a model (or any message) to ``path`` atomically.

    Weights held as views (e.g. into a memory-mapped source) are written without copying.
    """
    w = encode_parts(model, canonical=canonical)
    write_atomic(path, w.parts())


_ = DecodeError
