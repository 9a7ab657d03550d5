"""Per-thread scratch buffers for a kernel's temporaries (memory kept from one call to the next).

A temporary of a few megabytes that numpy allocates afresh on every call costs more than its arithmetic on
Linux: glibc returns the freed top of its heap to the system once it exceeds the trim threshold, and the next
allocation takes a page fault (and the kernel's zeroing) for every page again. Measured on DenseNet-121: 14,600
page faults per run, all in the temporaries of the Winograd convolution, about a fifth of the run's time. A
kernel that asks :func:`scratch` for its temporaries gets the same memory on every call instead.

Rules for callers: a scratch array never leaves the kernel that asked for it (it is not returned, stored or
aliased by a result), and each name belongs to one kernel, which does not call anything using the same name
while it holds the array. Buffers are per thread, so sessions run from several threads do not share them.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

__all__ = ["MAX_SCRATCH_BYTES", "scratch"]

MAX_SCRATCH_BYTES = 1 << 26
"""Larger requests get a fresh array each time: a one-off huge temporary is not kept for the thread's life."""

_local = threading.local()


class _Buffer:
    """One named buffer of a thread: its memory, its 64-byte-aligned start, and the array last made over it."""

    __slots__ = ("dtype", "memory", "shape", "start", "view")

    def __init__(self, nbytes: int) -> None:
        # 64 bytes of slack for an aligned start: BLAS reads aligned rows faster. The start is found once per buffer
        # (numpy's ctypes.data costs microseconds a call).
        self.memory = np.empty(nbytes + 64, np.uint8)
        self.start: int = -self.memory.ctypes.data % 64
        self.shape: tuple[int, ...] | None = None
        self.dtype: Any = None
        self.view: np.ndarray | None = None


def scratch(name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` over this thread's buffer ``name``.

    The buffer grows to the largest request made under ``name`` (up to :data:`MAX_SCRATCH_BYTES`) and is reused
    by later requests, so its contents are whatever the previous user left.
    """
    buffers: dict[str, _Buffer] | None = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    got = buffers.get(name)
    # The last array made over the buffer, when asked again with its shape and type (a layer's every run): the same
    # view, without the slicing (a request cost 6 us, numpy's ctypes.data half of it, on a busy 2-core machine).
    if got is not None and got.view is not None and got.shape == shape and got.dtype == dtype:
        return got.view
    shape = tuple(shape)
    dt = np.dtype(dtype)
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes > MAX_SCRATCH_BYTES:
        return np.empty(shape, dt)
    if got is None or got.memory.nbytes < nbytes + 64:
        got = buffers[name] = _Buffer(nbytes)
    view = got.memory[got.start : got.start + nbytes].view(dt).reshape(shape)
    got.shape, got.dtype, got.view = shape, dtype, view
    return view
