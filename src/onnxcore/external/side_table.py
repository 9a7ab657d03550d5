"""Which ``raw_data`` views are resolved external contents: the side table.

A resolved external tensor keeps its reference visible (``data_location`` stays EXTERNAL and its
``external_data`` entries stay) and gets ``raw_data`` set to a read-only memoryview of the mapped
file, so :func:`onnxcore.to_array` reads it like any raw tensor. ``TensorProto`` is a slotted
record with no room for anything else, and is unhashable, so the fact "this ``raw_data`` is the
resolution of this tensor's reference, not inline contents" is recorded against the *view object*:

* each resolution makes a fresh memoryview (a slice) and registers ``id(view)`` here with a weak
  reference to the view and a :class:`Resolution` record;
* the weak reference's callback removes the entry when the view dies, and a lookup also checks
  that the weak reference still points at the very object, so a recycled ``id`` never matches;
* nothing here keeps a view, a tensor or a file alive.

So a tensor is *resolved external* exactly when its data location is EXTERNAL and its
``raw_data`` is a registered view. Assigning anything else to ``raw_data`` makes it an EXTERNAL
tensor with inline contents again (which Clause 13.1 forbids, and save refuses). Copies made with
``copy.deepcopy`` share ``raw_data`` views and therefore stay resolved.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref

from onnxcore.proto.messages import TensorProto

__all__ = ["Resolution", "register", "resolution", "is_resolved"]


@dataclasses.dataclass(frozen=True, slots=True)
class Resolution:
    """How a reference was resolved (the record Clause 13.2's note allows a consumer to keep).

    Attributes:
        location: The location as written in the model.
        offset: Where the contents begin in the file.
        length: Octets of contents.
        path: Absolute path of the file that was opened (for messages; never reopened by path).
        base_dir: The model directory the location was resolved against (None for an absolute
            location allowed outside).
        device: ``st_dev`` of the file opened.
        inode: ``st_ino`` of the file opened.
        checksum: The SHA-1 the reference declared and that was verified, or None.
    """

    location: str
    offset: int
    length: int
    path: str
    base_dir: str | None
    device: int
    inode: int
    checksum: str | None


_TABLE: dict[int, tuple[weakref.ref[memoryview], Resolution]] = {}
_LOCK = threading.RLock()


def register(view: memoryview, record: Resolution) -> None:
    """Record that ``view`` holds the resolved contents described by ``record``."""
    key = id(view)

    def _drop(ref: weakref.ref[memoryview], key: int = key) -> None:
        with _LOCK:
            entry = _TABLE.get(key)
            if entry is not None and entry[0] is ref:
                del _TABLE[key]

    with _LOCK:
        _TABLE[key] = (weakref.ref(view, _drop), record)


def resolution(tensor: TensorProto) -> Resolution | None:
    """The resolution record of the tensor's ``raw_data``, or None when it is not a resolved view."""
    raw = tensor.raw_data
    if type(raw) is not memoryview:
        return None
    entry = _TABLE.get(id(raw))
    if entry is None or entry[0]() is not raw:
        return None
    return entry[1]


def is_resolved(tensor: TensorProto) -> bool:
    """Whether the tensor is EXTERNAL and its ``raw_data`` is the resolved view of its reference."""
    return tensor.data_location == TensorProto.DataLocation.EXTERNAL and resolution(tensor) is not None
