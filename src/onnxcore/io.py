"""Load and save models and messages: paths (memory-mapped), bytes, binary files."""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import IO, TypeVar

from onnxcore.errors import DecodeLimitError, file_error
from onnxcore.external import base_dir_of, internalize, load_external_data, save_model
from onnxcore.external.mapped import MappedFile, register_mapping
from onnxcore.external.reference import is_external
from onnxcore.limits import DEFAULT_LIMITS, Limits, collection_paused
from onnxcore.proto.bridge import OnnxMessage, as_message, is_onnx_message
from onnxcore.proto.decoder import DEFAULT_MAX_DEPTH, decode_message, decode_recording
from onnxcore.proto.encoder import encode_parts
from onnxcore.proto.message import Message
from onnxcore.proto.messages import ModelProto, TensorProto

__all__ = ["canonical_digest", "decode", "encode", "load", "save", "read_source", "write_atomic"]

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


def encode(message: Message | OnnxMessage, *, canonical: bool = False) -> bytes:
    """Encode a message to octets.

    Fields are written in increasing tag order and repeated fields in the form Annex B records
    for them, followed by retained unknown fields in the order they were read.

    Args:
        message: Any Annex B message (the onnx package's too, converted first).
        canonical: Write the canonical form (our position on Clause 12.8, see docs/canonical.md):
            as the ordinary form, but with unknown fields sorted by tag. Equal content then
            gives equal octets.

    Raises:
        TypeError: ``message`` is not a message.
    """
    return encode_parts(as_message(message, None, "encode"), canonical=canonical).getvalue()


def canonical_digest(model: ModelProto) -> str:
    """SHA-256 (hex) of ``model``'s canonical encoding with resolved external contents inlined.

    The same content gives the same digest whether its weights are inline or external, in whatever field
    order another writer put them (docs/canonical.md): what ``onnxcore hash`` prints, and the key of the
    sessions ``onnxcore.dask`` caches per worker.

    Raises:
        ExternalDataError: an external tensor is unresolved.
    """
    import hashlib  # here, not at the top: 3 ms of every `import onnxcore`, for a digest

    h = hashlib.sha256()
    for part in encode_parts(internalize(model), canonical=True).parts():
        h.update(part)
    return h.hexdigest()


def read_source(source: Source) -> tuple[memoryview, Path | None]:
    """Octets of ``source`` as a memoryview, and the file's path when it is one.

    A path is memory-mapped read-only: nothing is copied, and views into it stay valid for as
    long as they are referenced. The mapping is registered (:mod:`onnxcore.external.mapped`), so that a
    writer copies its views file to file.

    Raises:
        ModelFileError: the file cannot be read; a ``FileNotFoundError``, ``IsADirectoryError`` or
            ``PermissionError`` too where that is the cause (see :mod:`onnxcore.errors`).
        TypeError: ``source`` is none of the kinds above (a message object among them: see ``from_onnx``).
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
                st = os.fstat(fh.fileno())
        except OSError as e:
            raise file_error(e, f"cannot read {path}: {e.strerror or e}", os.fspath(path)) from e
        # Writers copy the weights of a model loaded from this file file to file (onnxcore.external.mapped).
        register_mapping(mm, MappedFile(os.path.realpath(path), None, st.st_dev, st.st_ino, 0))
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
    if isinstance(source, Message) or is_onnx_message(source):
        raise TypeError(
            f"load() reads a path, octets or a binary file, not a {type(source).__name__} object: "
            "use it as it is (onnxcore's), or convert the onnx package's with onnxcore.from_onnx"
        )
    raise TypeError(f"cannot load from {type(source).__name__}")


def load(
    source: Source,
    *,
    external_data: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    allow_outside: bool = False,
    limits: Limits | None = None,
    max_depth: int | None = None,
) -> ModelProto:
    """Load a model from a path, octets or a binary file.

    A path is memory-mapped and ``raw_data`` of every tensor is a zero-copy view into the map:
    loading a model does not copy its weights.

    External data (Clause 13): with ``external_data=True`` every reference is resolved and
    checked now, under the rules of Clause 15.3, and each EXTERNAL tensor gets ``raw_data`` set to
    a read-only view of the memory-mapped file (nothing is read until used; the reference stays
    visible, see :mod:`onnxcore.external.side_table`). With ``external_data=False`` references stay
    unresolved: the explicit opt-in step of Clause 15.5 for untrusted models, done later with
    :func:`onnxcore.load_external_data`.

    Args:
        source: A path, octets, or a binary file.
        external_data: Resolve external references now.
        base_dir: The directory locations are relative to. Defaults to the directory holding the
            model file (resolved with ``realpath``); a model given as octets has none, and the
            working directory is never assumed.
        allow_outside: Explicit opt-in to resolve locations outside the model directory.
        limits: Resource limits (Clause 15.4); ``limits.message_depth()`` bounds message nesting,
            ``max_message_bytes`` the input, ``max_repeated_messages`` and ``max_messages`` the embedded
            messages, and the external ones the data files.
        max_depth: Overrides the message nesting bound derived from ``limits``.

    Raises:
        DecodeError: malformed input (offset and field path in the message).
        DecodeLimitError: the input exceeds a limit (a ``LimitError`` too).
        ExternalDataError: a reference was refused (``.tensor``, ``.location``, ``.rule``); a
            ``FileNotFoundError`` too when the data file does not exist.
        ModelFileError: the file cannot be read (an ``OnnxCoreError``); a missing file is a
            ``FileNotFoundError`` too, a directory an ``IsADirectoryError``, no permission a
            ``PermissionError``.
        TypeError: ``source`` is not a path, octets or a binary file (for an ``onnx.ModelProto``,
            use :func:`onnxcore.from_onnx`).
    """
    lim = limits if limits is not None else DEFAULT_LIMITS
    buf, _path = read_source(source)
    if lim.max_message_bytes is not None and len(buf) > lim.max_message_bytes:
        raise DecodeLimitError(
            f"the model has {len(buf)} octets, more than max_message_bytes ({lim.max_message_bytes}) (Clause 12.5)", 0
        )
    depth = max_depth if max_depth is not None else lim.message_depth()
    # Paused past the decoding too: the collection its objects would trigger falls in the walk over the tensors.
    with collection_paused():
        model, tensors = decode_recording(
            ModelProto, buf, max_depth=depth, max_repeated=lim.max_repeated_messages, max_messages=lim.max_messages
        )
        # The decode lists every tensor it made, however deep: with none EXTERNAL there is nothing to resolve, and
        # the walk over every node that finds them (12 % of loading a 50,000-node graph) is skipped.
        if external_data and any(isinstance(t, TensorProto) and is_external(t) for t in tensors):
            bd = base_dir if base_dir is not None else base_dir_of(source)
            load_external_data(model, bd, allow_outside=allow_outside, limits=lim)
    return model


def write_atomic(path: str | os.PathLike[str], parts: object) -> None:
    """Write octet parts to ``path`` through a temporary file in the same directory.

    The temporary is renamed into place only once complete, so a failure never leaves a
    partial file at ``path`` (the old file, if any, stays intact).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    import tempfile  # here, not at the top: with random, hashlib and shutil, 5 ms of every `import onnxcore`

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


def save(
    model: Message | OnnxMessage,
    path: str | os.PathLike[str],
    *,
    external_data: bool = False,
    location: str | None = None,
    size_threshold: int = 1024,
    align: int = 4096,
    checksum: bool = False,
    canonical: bool = False,
) -> None:
    """Save a model (or any message) to ``path`` atomically.

    Weights held as views (e.g. into a memory-mapped source) are written without copying.

    With ``external_data=False`` every resolved external tensor is written inline and unresolved
    references are written as they are. With ``external_data=True`` every tensor whose contents
    take at least ``size_threshold`` octets goes to one data file beside the model (``location``,
    by default ``<model file name>.data``), each at an offset aligned to ``align``, with
    ``location``, ``offset``, ``length`` and, with ``checksum=True``, the file's SHA-1 (Clause
    13). Both files are written to temporaries and renamed into place, the model last; the data
    file is always written anew (never appended to), and may be the file the model's tensors are
    views into. The onnx package's ``ModelProto`` is accepted and converted first.

    Raises:
        TypeError: ``model`` is not a message.
        ExternalDataError: an EXTERNAL tensor that also carries other contents, an unresolved
            one with ``external_data=True``, or a bad ``location``.
        EncodeError: a value that cannot be encoded.
    """
    save_model(
        as_message(model, None, "save"),
        path,
        external_data=external_data,
        location=location,
        size_threshold=size_threshold,
        align=align,
        checksum=checksum,
        canonical=canonical,
    )
