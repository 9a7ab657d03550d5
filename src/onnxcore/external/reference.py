"""External data references (Clause 13.2, Table 11): the keys, their syntax, and the rules.

This module decides everything that can be decided from the model alone: which keys a reference
carries, whether its location is a relative path without a parent-directory component, and whether
its offset and length are well-formed integers. Opening the file is :mod:`onnxcore.external.resolve`.
"""

from __future__ import annotations

import dataclasses
import enum
import re

from onnxcore.errors import (
    ExternalDataError,
    ExternalDataFileNotFoundError,
    ExternalDataIsADirectoryError,
    ExternalDataLimitError,
    ExternalDataPermissionError,
)
from onnxcore.external.side_table import resolution
from onnxcore.proto.messages import StringStringEntryProto, TensorProto

__all__ = [
    "EXTERNAL",
    "INT64_MAX",
    "ExternalRef",
    "ReferenceRule",
    "has_inline_contents",
    "is_external",
    "make_error",
    "parse_reference",
    "split_location",
]

EXTERNAL = TensorProto.DataLocation.EXTERNAL
INT64_MAX = (1 << 63) - 1


class ReferenceRule(str, enum.Enum):
    """Why a reference was refused; the value is what :attr:`ExternalDataError.rule` holds."""

    KEY_UNKNOWN = "key-unknown"
    KEY_DUPLICATE = "key-duplicate"
    LOCATION_MISSING = "location-missing"
    LOCATION_EMPTY = "location-empty"
    LOCATION_ABSOLUTE = "location-absolute"
    LOCATION_PARENT = "location-parent"
    LOCATION_INVALID = "location-invalid"
    OFFSET_INVALID = "offset-invalid"
    LENGTH_INVALID = "length-invalid"
    OVERFLOW = "overflow"
    OUT_OF_BOUNDS = "out-of-bounds"
    CHECKSUM_INVALID = "checksum-invalid"
    CHECKSUM_MISMATCH = "checksum-mismatch"
    INLINE_AND_EXTERNAL = "inline-and-external"
    NO_BASE_DIR = "no-base-dir"
    UNRESOLVED = "unresolved"
    NOT_EXTERNAL = "not-external"
    SYMLINK = "symlink"
    HARDLINK = "hardlink"
    NOT_REGULAR = "not-regular-file"
    NOT_DIRECTORY = "not-directory"
    NOT_FOUND = "not-found"
    UNREADABLE = "unreadable"
    IDENTITY = "identity"
    OUTSIDE = "outside"
    FILE_SIZE_LIMIT = "file-size-limit"
    TENSOR_SIZE_LIMIT = "tensor-size-limit"

    def __str__(self) -> str:
        return self.value


# Where each rule comes from, for the message of the error.
_CLAUSE: dict[ReferenceRule, str] = {
    ReferenceRule.KEY_UNKNOWN: "13.2, Table 11",
    ReferenceRule.KEY_DUPLICATE: "13.2, Table 11",
    ReferenceRule.LOCATION_MISSING: "13.2, Table 11",
    ReferenceRule.LOCATION_EMPTY: "13.2",
    ReferenceRule.LOCATION_ABSOLUTE: "13.2",
    ReferenceRule.LOCATION_PARENT: "13.2",
    ReferenceRule.LOCATION_INVALID: "13.2",
    ReferenceRule.OFFSET_INVALID: "13.2, Table 11",
    ReferenceRule.LENGTH_INVALID: "13.2, Table 11",
    ReferenceRule.OVERFLOW: "15.4",
    ReferenceRule.OUT_OF_BOUNDS: "13.2, 15.4",
    ReferenceRule.CHECKSUM_INVALID: "13.3",
    ReferenceRule.CHECKSUM_MISMATCH: "13.3",
    ReferenceRule.INLINE_AND_EXTERNAL: "13.1",
    ReferenceRule.NO_BASE_DIR: "13.2, 15.3",
    ReferenceRule.UNRESOLVED: "13.2",
    ReferenceRule.NOT_EXTERNAL: "13.1",
    ReferenceRule.SYMLINK: "15.3",
    ReferenceRule.HARDLINK: "15.3",
    ReferenceRule.NOT_REGULAR: "15.3",
    ReferenceRule.NOT_DIRECTORY: "13.2",
    ReferenceRule.NOT_FOUND: "13.2",
    ReferenceRule.UNREADABLE: "13.2",
    ReferenceRule.IDENTITY: "15.3",
    ReferenceRule.OUTSIDE: "13.2, 15.3",
    ReferenceRule.FILE_SIZE_LIMIT: "15.4",
    ReferenceRule.TENSOR_SIZE_LIMIT: "15.4",
}

_LIMIT_RULES = frozenset({ReferenceRule.FILE_SIZE_LIMIT, ReferenceRule.TENSOR_SIZE_LIMIT})

KEYS = ("location", "offset", "length", "checksum")
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_SHA1 = re.compile(r"[0-9a-fA-F]{40}", re.ASCII)
_DRIVE = re.compile(r"[A-Za-z]:")


_BUILTIN: dict[type[OSError], type[ExternalDataError]] = {
    FileNotFoundError: ExternalDataFileNotFoundError,
    IsADirectoryError: ExternalDataIsADirectoryError,
    PermissionError: ExternalDataPermissionError,
}


def make_error(
    tensor: str, location: str | None, rule: ReferenceRule, detail: str, builtin: type[OSError] | None = None
) -> ExternalDataError:
    """An :class:`ExternalDataError` naming the tensor, the location and the rule.

    A refusal for a resource limit is an :class:`~onnxcore.errors.ExternalDataLimitError`, so it is
    also a :class:`~onnxcore.LimitError` (Clause 15.4). A file that does not exist, is a directory or
    may not be read (``builtin``: ``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``) gives
    the subclass that is also that built-in exception.
    """
    where = f" at {location!r}" if location is not None else ""
    msg = f"external data of tensor {tensor!r}{where} refused: {detail} [rule {rule.value}, Clause {_CLAUSE[rule]}]"
    cls = ExternalDataLimitError if rule in _LIMIT_RULES else _BUILTIN.get(builtin, ExternalDataError)  # type: ignore[arg-type]
    return cls(msg, tensor=tensor, location=location, rule=rule)


def builtin_of(e: OSError) -> type[OSError] | None:
    """Which of ``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError`` ``e`` is, if any."""
    for b in _BUILTIN:
        if isinstance(e, b):
            return b
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class ExternalRef:
    """A syntactically valid reference (Table 11).

    Attributes:
        location: The location as written in the model.
        components: Its path components ("." and empty components dropped); empty only when the
            reference is allowed outside the model directory and names it by an absolute path.
        absolute: Whether ``location`` is an absolute path (only with ``allow_outside``).
        offset: Where the contents begin (0 when absent).
        length: The number of octets, or None for "to the end of the file".
        checksum: The lowercase hexadecimal SHA-1 of the file, or None.
    """

    location: str
    components: tuple[str, ...]
    absolute: bool
    offset: int
    length: int | None
    checksum: str | None


def is_external(tensor: TensorProto) -> bool:
    """Whether the tensor declares its data location EXTERNAL (Clause 13.1)."""
    return tensor.data_location == EXTERNAL


def has_inline_contents(tensor: TensorProto) -> bool:
    """Whether the tensor carries contents in the model (``raw_data`` or a typed field)."""
    return bool(
        tensor.has("raw_data")
        or tensor.float_data
        or tensor.int32_data
        or tensor.string_data
        or tensor.int64_data
        or tensor.double_data
        or tensor.uint64_data
    )


def split_location(location: str, tensor: str = "<tensor>", *, allow_outside: bool = False) -> tuple[str, ...]:
    """The components of a location, refusing what Clause 13.2 refuses.

    Both ``/`` and ``\\`` separate components, so a reference written on Windows resolves here and
    ``..\\x`` is the traversal it is there. A drive prefix (``C:``) counts as absolute. With
    ``allow_outside`` absolute paths and ``..`` are let through (the caller resolves them by path).

    Raises:
        ExternalDataError: with rule ``location-empty``, ``location-invalid``,
            ``location-absolute`` or ``location-parent``.
    """
    if location == "":
        raise make_error(tensor, location, ReferenceRule.LOCATION_EMPTY, "the location is empty")
    if "\x00" in location:
        raise make_error(tensor, location, ReferenceRule.LOCATION_INVALID, "the location contains a NUL character")
    try:
        location.encode("utf-8")
    except UnicodeEncodeError:
        raise make_error(
            tensor, location, ReferenceRule.LOCATION_INVALID, "the location is not valid Unicode"
        ) from None
    absolute = location[0] in "/\\" or _DRIVE.match(location) is not None
    if absolute and not allow_outside:
        raise make_error(tensor, location, ReferenceRule.LOCATION_ABSOLUTE, "the location is an absolute path")
    comps: list[str] = []
    for part in re.split(r"[/\\]", location):
        if part in ("", "."):
            continue
        if part == ".." and not allow_outside:
            raise make_error(
                tensor, location, ReferenceRule.LOCATION_PARENT, "the location has a parent-directory component"
            )
        comps.append(part)
    if not comps and not absolute:
        raise make_error(tensor, location, ReferenceRule.LOCATION_EMPTY, "the location names no file")
    return tuple(comps)


def _integer(tensor: str, location: str | None, key: str, value: str) -> int:
    rule = ReferenceRule.OFFSET_INVALID if key == "offset" else ReferenceRule.LENGTH_INVALID
    if _DIGITS.fullmatch(value) is None:
        raise make_error(tensor, location, rule, f"{key} {value[:40]!r} is not a non-negative decimal integer")
    digits = value.lstrip("0")
    if len(digits) > 19 or int(digits or "0") > INT64_MAX:
        raise make_error(
            tensor, location, ReferenceRule.OVERFLOW, f"{key} {value[:40]!r} does not fit a signed 64-bit integer"
        )
    return int(digits or "0")


def parse_reference(
    tensor: TensorProto, label: str, *, allow_outside: bool = False, inline_ok: bool | None = None
) -> ExternalRef:
    """Check the reference of an EXTERNAL tensor against Table 11 and Clause 13.

    Args:
        tensor: A tensor whose data location is EXTERNAL.
        label: How errors name the tensor.
        allow_outside: Let absolute locations and ``..`` through (explicit opt-in, Clause 15.3).
        inline_ok: Whether ``raw_data`` is the resolved view of this very reference (and so not
            inline contents). None (the default) decides it from the side table
            (:func:`onnxcore.external.is_resolved`), which is right for any model we loaded.

    Raises:
        ExternalDataError: the first rule the reference breaks.
    """
    seen: dict[str, str] = {}
    entry: StringStringEntryProto
    location: str | None = None
    for entry in tensor.external_data:
        if entry.key == "location":
            location = entry.value
            break
    for entry in tensor.external_data:
        if entry.key not in KEYS:
            raise make_error(
                label, location, ReferenceRule.KEY_UNKNOWN, f"key {entry.key[:40]!r} is not one of Table 11"
            )
        if entry.key in seen:
            raise make_error(label, location, ReferenceRule.KEY_DUPLICATE, f"key {entry.key!r} is given more than once")
        seen[entry.key] = entry.value
    if inline_ok is None:
        inline_ok = resolution(tensor) is not None
    if not inline_ok and has_inline_contents(tensor):
        raise make_error(
            label,
            location,
            ReferenceRule.INLINE_AND_EXTERNAL,
            "the tensor is EXTERNAL and also carries contents in the model",
        )
    if location is None:
        raise make_error(label, None, ReferenceRule.LOCATION_MISSING, "the reference has no location")
    comps = split_location(location, label, allow_outside=allow_outside)
    absolute = location[0] in "/\\" or _DRIVE.match(location) is not None
    offset = _integer(label, location, "offset", seen["offset"]) if "offset" in seen else 0
    length = _integer(label, location, "length", seen["length"]) if "length" in seen else None
    if length is not None and offset + length > INT64_MAX:
        raise make_error(label, location, ReferenceRule.OVERFLOW, f"offset {offset} plus length {length} overflows")
    checksum = seen.get("checksum")
    if checksum is not None:
        if _SHA1.fullmatch(checksum) is None:
            raise make_error(
                label,
                location,
                ReferenceRule.CHECKSUM_INVALID,
                f"checksum {checksum[:48]!r} is not 40 hexadecimal digits",
            )
        checksum = checksum.lower()
    return ExternalRef(location, comps, absolute, offset, length, checksum)
