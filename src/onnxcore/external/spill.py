"""Lean memory for large models: mapped constants kept as views, large new constants spilled to a file.

Inside :func:`lean_memory` (what ``onnxcore.optimize`` runs in):

- a constant that is a misaligned view of a read-only mapped file (a single file's weights sit at whatever
  offset protobuf's framing puts them), and any large misaligned constant, is kept as that view when a plan is
  compiled, not copied to aligned memory (:func:`onnxcore.graph.attributes.constant_array`): numpy's kernels read
  it through their unaligned paths, a matrix product copying it for the call only (a few milliseconds for a 16 MiB
  weight). A session outside the context copies it once, for speed; inside it, copies of a model's many small
  weights would cost anonymous memory in proportion to the model, once per session (the proof has two);
- a session made inside it drops a mapped weight's resident pages after the weight's last reader in each run
  (:attr:`onnxcore.runtime.plan.GraphIR.release_mapped`): the optimizer's proof evaluates the model and its result
  several times, reading every weight each time, and the resident set would otherwise grow by the whole file;
- a large constant a rewrite makes (a BatchNormalization folded into a 256 MiB weight) is written to an unlinked
  spill file and replaced by a read-only view of its mapping (:func:`spill_constant`): it costs page cache, which
  the kernel can drop and write back, instead of anonymous memory; the writer copies it file to file
  (:mod:`onnxcore.external.mapped`).

"Large" is :data:`SPILL_FROM` octets or more. The spill file is created in the directory given (the source model's,
so that it is on the disk the output goes to) or, where that cannot be written, the system's temporary directory;
it is unlinked at once, and its space is freed when the last view of it is gone.
"""

from __future__ import annotations

import contextlib
import contextvars
import mmap
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from onnxcore.external.mapped import MappedFile, mapped_pages, register_mapping

__all__ = ["SPILL_FROM", "SpillFile", "in_lean_memory", "lean_memory", "lean_view", "spill_constant"]

SPILL_FROM = 16 << 20
"""Octets from which a constant counts as large here (a 2048 x 2048 float32 matrix)."""

_GRANULE = mmap.ALLOCATIONGRANULARITY


class SpillFile:
    """An unlinked file that large arrays are written to and read back from by mapping (module docstring).

    Args:
        directory: Where to create it (None: the system's temporary directory).
    """

    def __init__(self, directory: str | None) -> None:
        self._directory = directory
        self._fd: int | None = None
        self._end = 0
        self._lock = threading.Lock()

    def _open(self) -> int:
        if self._fd is None:
            # Here, not at the top: with random, hashlib and shutil, 5 ms of every `import onnxcore`.
            import tempfile

            for d in (self._directory, None):
                try:
                    fd, path = tempfile.mkstemp(prefix=".onnxcore-spill-", dir=d)
                except OSError:
                    if d is None:
                        raise
                    continue
                os.unlink(path)
                self._fd = fd
                break
        assert self._fd is not None
        return self._fd

    def put(self, array: np.ndarray) -> np.ndarray:
        """``array``'s contents as a read-only array of the same dtype and shape, a view of the spill file.

        Raises:
            OSError: the file cannot be written (a full disk).
        """
        a = np.ascontiguousarray(array)
        octets = a.reshape(-1).view(np.uint8).data
        with self._lock:
            fd = self._open()
            offset = -(-self._end // _GRANULE) * _GRANULE  # a mapping starts at a multiple of the granule
            done = 0
            while done < len(octets):
                done += os.pwrite(fd, octets[done:], offset + done)
            self._end = offset + len(octets)
            mm = mmap.mmap(fd, len(octets), access=mmap.ACCESS_READ, offset=offset)
            st = os.fstat(fd)
            # The mapping's own descriptor: the writer copies from it; closed with the mapping.
            register_mapping(mm, MappedFile(None, os.dup(fd), st.st_dev, st.st_ino, offset))
        out = np.frombuffer(mm, dtype=a.dtype).reshape(a.shape)
        return out

    def close(self) -> None:
        """Close this object's descriptor (the views made stay valid: each mapping holds the file)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


_ACTIVE: contextvars.ContextVar[SpillFile | None] = contextvars.ContextVar("onnxcore_spill", default=None)


@contextlib.contextmanager
def lean_memory(directory: str | os.PathLike[str] | None = None) -> Iterator[SpillFile]:
    """Run the body in lean memory (module docstring), spilling to a file in ``directory``."""
    spill = SpillFile(None if directory is None else os.fspath(directory))
    token = _ACTIVE.set(spill)
    try:
        yield spill
    finally:
        _ACTIVE.reset(token)
        spill.close()


def in_lean_memory() -> bool:
    """Whether the caller runs inside :func:`lean_memory`."""
    return _ACTIVE.get() is not None


def lean_view(array: Any) -> bool:
    """Whether ``array`` is a constant to keep as it is (a view, however aligned): only in lean memory, a view of a
    read-only mapped file (:func:`onnxcore.external.mapped.mapped_pages`) or a large array."""
    if _ACTIVE.get() is None or not isinstance(array, np.ndarray):
        return False
    return array.nbytes >= SPILL_FROM or mapped_pages(array) is not None


def spill_constant(value: Any) -> Any:
    """``value`` itself, or, in lean memory and when it is a large numeric array not already a mapped view, its
    copy in the spill file (module docstring)."""
    spill = _ACTIVE.get()
    if spill is None or not isinstance(value, np.ndarray) or value.nbytes < SPILL_FROM or value.dtype.hasobject:
        return value
    base = value
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if isinstance(base, mmap.mmap):  # already a view of a file (the model's, or spilled)
        return value
    return spill.put(value)
