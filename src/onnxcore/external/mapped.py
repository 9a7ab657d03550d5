"""Memory-mapped files whose views a writer copies file to file: a loaded model file, the optimizer's spill file.

A model loaded from a path keeps every ``raw_data`` as a view of the mapped file (:func:`onnxcore.load`), and the
optimizer's large new constants are views of a spill file (:mod:`onnxcore.external.spill`). Writing such a model
need not pass the weights through this process: :func:`file_range` says which file and which octets a view shows,
and :func:`open_range` opens that file for ``copy_file_range``, so that neither anonymous memory nor the mapping's
resident pages grow with the model.

The registry is keyed by the mapping object (weakly: nothing here keeps a mapping alive). A file reopened by path is
checked to be the very file that was mapped (device and inode, Clause 15.3: the path alone is not relied on).

A file that changes under its mapping (our position, docs/external-data.md): the mapping and a copy read the file as
it is at that moment (a shared read-only mapping shows another process's writes), so a model file must not be
rewritten in place while a model loaded from it is in use. A file replaced by rename is a new inode: the copy is
then refused and the octets are written from the mapping (the old contents, which the mapping keeps). A file
truncated below a view's end is refused with :class:`~onnxcore.errors.ModelFileError` before any octet is read
from the missing part (a read through the mapping there would be a fault, not an error).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import threading
import weakref
from typing import Any

import numpy as np

from onnxcore.errors import ModelFileError

__all__ = [
    "FileRange",
    "backing_mapping",
    "MappedFile",
    "ensure_within",
    "file_range",
    "mapped_pages",
    "open_range",
    "register_mapping",
    "release_pages",
]


@dataclasses.dataclass(frozen=True, slots=True)
class MappedFile:
    """The file behind one mapping.

    Attributes:
        path: Absolute path to reopen it by (None for an unlinked file, which ``fd`` keeps).
        fd: A descriptor held open while the mapping lives (an unlinked spill file), or None.
        device: ``st_dev`` of the file mapped.
        inode: ``st_ino`` of the file mapped.
        offset: File offset of the mapping's first octet.
    """

    path: str | None
    fd: int | None
    device: int
    inode: int
    offset: int


@dataclasses.dataclass(frozen=True, slots=True)
class FileRange:
    """Octets ``[offset, offset + length)`` of ``file``: what one view shows."""

    file: MappedFile
    offset: int
    length: int


_MAPS: dict[int, tuple[weakref.ref[mmap.mmap], MappedFile]] = {}
_LOCK = threading.Lock()


def register_mapping(mm: mmap.mmap, file: MappedFile) -> None:
    """Record that ``mm`` maps ``file`` from ``file.offset``; a held ``file.fd`` is closed with the mapping."""
    key = id(mm)

    def _drop(ref: weakref.ref[mmap.mmap], key: int = key) -> None:
        with _LOCK:
            entry = _MAPS.get(key)
            if entry is not None and entry[0] is ref:
                del _MAPS[key]
        if file.fd is not None:
            os.close(file.fd)

    with _LOCK:
        _MAPS[key] = (weakref.ref(mm, _drop), file)


def file_range(view: memoryview) -> FileRange | None:
    """The file and octets ``view`` shows, when it is a contiguous view of a registered mapping; else None."""
    mm = view.obj
    if not isinstance(mm, mmap.mmap) or not view.c_contiguous or view.nbytes == 0:
        return None
    entry = _MAPS.get(id(mm))
    if entry is None or entry[0]() is not mm:
        return None
    try:
        start = int(np.frombuffer(view, np.uint8).ctypes.data) - int(np.frombuffer(mm, np.uint8).ctypes.data)
    except (ValueError, TypeError):  # a closed mapping
        return None
    if start < 0 or start + view.nbytes > len(mm):  # not within the mapping: never trusted
        return None
    file = entry[1]
    return FileRange(file, file.offset + start, view.nbytes)


def open_range(rng: FileRange) -> tuple[int, bool] | None:
    """A descriptor to read ``rng`` from and whether the caller closes it, or None when the file is no longer the
    one mapped (the caller then writes from the mapping).

    Raises:
        ModelFileError: the file is the one mapped but now ends before the range does (truncated under the
            mapping).
    """
    file = rng.file
    owned = file.fd is None
    if file.fd is not None:
        fd = file.fd
    else:
        assert file.path is not None
        try:
            fd = os.open(file.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (file.device, file.inode):
        if owned:
            os.close(fd)
        return None
    try:
        ensure_within(fd, rng)
    except ModelFileError:
        if owned:
            os.close(fd)
        raise
    return fd, owned


def ensure_within(fd: int, rng: FileRange) -> None:
    """Refuse a range the file (open as ``fd``) no longer holds: truncated under its mapping (module docstring).

    Raises:
        ModelFileError: the file ends before the range does.
    """
    size = os.fstat(fd).st_size
    if size < rng.offset + rng.length:
        where = rng.file.path or "the spill file"
        raise ModelFileError(
            f"{where} was truncated to {size} octets while mapped; octets {rng.offset}..{rng.offset + rng.length}"
            " are gone (a model file must not change while a model loaded from it is in use)",
            filename=rng.file.path,
        )


def backing_mapping(array: Any) -> mmap.mmap | None:
    """The memory mapping whose octets ``array`` views (through any chain of views and memoryviews), or None."""
    base: Any = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None


def mapped_pages(array: Any) -> tuple[mmap.mmap, int, int] | None:
    """The read-only mapping ``array`` views and the page-aligned octets ``[start, end)`` of it the array spans, or
    None when it views none (or a mapping this process may have written: a private copy's pages are its only copy).

    The span covers every element whatever the strides (a transposed view of a weight spans the weight).
    """
    if not isinstance(array, np.ndarray) or array.size == 0:
        return None
    base = backing_mapping(array)
    if base is None or base.closed:
        return None
    # Only ACCESS_READ mappings (io.load's, the spill file's) are read-only: dropping a page of one loses nothing,
    # the file holds it. ACCESS_COPY (private) and ACCESS_WRITE mappings are left alone.
    if not memoryview(base).readonly:
        return None
    origin = int(np.frombuffer(base, np.uint8).ctypes.data)
    low = high = int(array.ctypes.data)
    for n, stride in zip(array.shape, array.strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    start, end = low - origin, high + array.itemsize - origin
    if start < 0 or end > len(base):  # not within the mapping: never trusted
        return None
    page = mmap.PAGESIZE
    return base, start // page * page, min(len(base), -(-end // page) * page)


def release_pages(array: Any) -> None:
    """Drop this process's resident pages of the read-only mapped file ``array`` views (nothing when it views
    none; :func:`mapped_pages`).

    The octets stay in the file and the page cache: a later read of the array maps them again (a minor fault per
    page, no disk read while the page cache keeps them). A pass that reads a large weight once (a folding) calls it
    on each block it has read, and a plan laid out in lean memory on each mapped weight after its last reader
    (:mod:`onnxcore.runtime.plan`), so that the resident set does not grow by every weight read.
    """
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    span = mapped_pages(array)
    if span is None:
        return
    base, lo, hi = span
    if hi > lo:
        try:
            base.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError):  # advice only
            pass
