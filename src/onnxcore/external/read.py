"""Resolving the external references of a model (Clauses 13, 15.3): at load, later, or as a check."""

from __future__ import annotations

import os

from onnxcore.errors import ExternalDataError
from onnxcore.external.reference import ReferenceRule, is_external, make_error, parse_reference
from onnxcore.external.resolve import Resolver
from onnxcore.external.side_table import Resolution, register, resolution
from onnxcore.external.tensor_walk import iter_tensors, tensor_label
from onnxcore.limits import Limits
from onnxcore.proto.bridge import is_onnx_message
from onnxcore.proto.message import Message
from onnxcore.proto.messages import TensorProto

__all__ = [
    "base_dir_of",
    "has_external_tensors",
    "load_external_data",
    "read_external_tensor_bytes",
    "verify_references",
]

PathLike = str | os.PathLike[str]


def has_external_tensors(model: Message) -> bool:
    """Whether any tensor in ``model`` declares its data location EXTERNAL."""
    return any(is_external(t) for _, t in iter_tensors(model))


def base_dir_of(source: object) -> str | None:
    """The model directory for a load source (our policy, docs/external-data.md).

    For a path, the directory holding the file, resolved once with ``realpath`` (so a model
    directory reached through symbolic links above it, as in a download cache, is accepted; what
    lies *below* it is then checked component by component). For a binary file object, the same
    for its ``name`` when that names the very file open (same device and inode). Otherwise None:
    octets carry no directory, and the working directory is never assumed.
    """
    if isinstance(source, str | os.PathLike):
        return os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(source))))
    name = getattr(source, "name", None)
    fileno = getattr(source, "fileno", None)
    if isinstance(name, str) and callable(fileno):
        try:
            a = os.fstat(fileno())
            b = os.stat(name)
        except (OSError, ValueError, AttributeError):
            return None
        if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
            return os.path.realpath(os.path.dirname(os.path.abspath(name)))
    return None


def _resolve_all(
    model: Message, base_dir: PathLike | None, allow_outside: bool, limits: Limits | None
) -> list[tuple[TensorProto, memoryview, Resolution]]:
    out: list[tuple[TensorProto, memoryview, Resolution]] = []
    with Resolver(base_dir, allow_outside=allow_outside, limits=limits) as resolver:
        for path, tensor in iter_tensors(model):
            if not is_external(tensor) or resolution(tensor) is not None:
                continue
            label = tensor_label(path, tensor)
            ref = parse_reference(tensor, label, allow_outside=allow_outside)
            view, record = resolver.resolve(label, ref)
            out.append((tensor, view, record))
    return out


def load_external_data(
    model: Message,
    base_dir: PathLike | None,
    *,
    allow_outside: bool = False,
    limits: Limits | None = None,
) -> Message:
    """Resolve every external reference of ``model`` in place (Clause 13.2, 15.3).

    Each EXTERNAL tensor keeps its data location and its ``external_data`` entries, and gets
    ``raw_data`` set to a read-only, zero-copy view of its octets in the memory-mapped file, so
    :func:`onnxcore.to_array` reads it unchanged; see :mod:`onnxcore.external.side_table` for how the
    view is told apart from inline contents. Tensors already resolved are left as they are.
    Either every reference resolves or the model is not changed at all.

    Args:
        model: A model (or any message) loaded with ``external_data=False``.
        base_dir: The directory holding the model file. None resolves nothing relative to the
            working directory: any relative location then fails with rule ``no-base-dir``.
        allow_outside: Explicit opt-in to resolve locations outside ``base_dir`` (Clause 15.3).
        limits: Resource limits (external file size, tensor bytes); defaults to ``DEFAULT_LIMITS``.

    Returns:
        ``model`` itself.

    Raises:
        ExternalDataError: a reference was refused; ``.tensor``, ``.location`` and ``.rule`` say
            which and why (an :class:`~onnxcore.errors.ExternalDataLimitError` for a limit; a
            ``FileNotFoundError``, ``IsADirectoryError`` or ``PermissionError`` too where that is why).
        TypeError: ``model`` is the onnx package's object: this changes a model in place, and the
            views it sets cannot live in onnx's; convert it first (``model = onnxcore.from_onnx(obj)``).
    """
    if is_onnx_message(model):
        raise TypeError(
            "load_external_data changes a model in place and takes onnxcore's messages: convert the onnx "
            "package's object first (model = onnxcore.from_onnx(obj)) and pass that"
        )
    if not isinstance(model, Message):
        raise TypeError(f"load_external_data expects an onnxcore message, got {type(model).__name__}")
    for tensor, view, record in _resolve_all(model, base_dir, allow_outside, limits):
        register(view, record)
        tensor.raw_data = view
    return model


def verify_references(
    model: Message,
    base_dir: PathLike | None,
    *,
    allow_outside: bool = False,
    limits: Limits | None = None,
) -> list[ExternalDataError]:
    """Every refused external reference of ``model``, without changing it (for the validator).

    Each reference is checked against Table 11 and Clause 13.1 and, when ``base_dir`` is given,
    opened under the rules of Clause 15.3 with its range and checksum checked (nothing mapped).
    A tensor already resolved by :func:`load_external_data` is checked again when ``base_dir``
    is given and accepted as verified when it is not; an unresolved one without ``base_dir``
    gives a ``no-base-dir`` error.

    Returns:
        One :class:`ExternalDataError` per refused reference (empty when all are fine).
    """
    errors: list[ExternalDataError] = []
    with Resolver(base_dir, allow_outside=allow_outside, limits=limits, keep_open=False) as resolver:
        for path, tensor in iter_tensors(model):
            if not is_external(tensor):
                continue
            label = tensor_label(path, tensor)
            resolved = resolution(tensor) is not None
            try:
                ref = parse_reference(tensor, label, allow_outside=allow_outside, inline_ok=resolved)
                if base_dir is None and resolved:
                    continue
                resolver.check(label, ref)
            except ExternalDataError as e:
                errors.append(e)
    return errors


def read_external_tensor_bytes(
    tensor: TensorProto,
    base_dir: PathLike | None = None,
    *,
    allow_outside: bool = False,
    limits: Limits | None = None,
) -> memoryview:
    """The octets of an EXTERNAL tensor, as a read-only view (the tensor is not changed).

    A resolved tensor gives its ``raw_data`` view; an unresolved one is resolved against
    ``base_dir`` under the rules of Clause 15.3 (the file stays mapped while the view lives).

    Raises:
        ExternalDataError: the tensor is not EXTERNAL (rule ``not-external``), or its reference
            is refused.
    """
    label = tensor_label("", tensor)
    if not is_external(tensor):
        raise make_error(label, None, ReferenceRule.NOT_EXTERNAL, "the tensor's data location is not EXTERNAL")
    if resolution(tensor) is not None:
        raw = tensor.raw_data
        assert isinstance(raw, memoryview)
        return raw
    ref = parse_reference(tensor, label, allow_outside=allow_outside)
    with Resolver(base_dir, allow_outside=allow_outside, limits=limits) as resolver:
        view, _record = resolver.resolve(label, ref)
    return view
