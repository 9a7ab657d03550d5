"""A small thread pool for kernels, and the number of threads the evaluation running in this context may use.

numpy releases the GIL inside its loops, so a pass over a large array split into blocks runs on several cores
from Python threads. A kernel asks :func:`active_threads` how many it may use (a session sets it for its runs
with :func:`threads_in_effect`, as it sets the limits); :func:`parallel_for` runs its blocks.

Determinism: a kernel splits only work whose blocks are independent (rows of an elementwise pass, channels of a
depthwise convolution, trees of an ensemble) and combines their results in a fixed order, so every result is
the same, bit for bit, for any number of threads; the tests check it.

The pool is process-wide, created on first use and grown to the largest number asked for; its workers run with
one thread (:func:`active_threads` is 1 there: blocks never split again).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "BLOCKS_PER_THREAD",
    "BLOCK_ELEMENTS",
    "MIN_PARALLEL_ELEMENTS",
    "active_threads",
    "blockwise",
    "clear_choices",
    "copy_split",
    "machine_threads",
    "enter_threads",
    "exit_threads",
    "parallel_for",
    "serial_pays",
    "threads_in_effect",
]

MIN_PARALLEL_ELEMENTS = 1 << 18
"""Below about this many elements a pass costs less than handing its blocks to other threads."""

BLOCK_ELEMENTS = 1 << 15
"""Elements per block of :func:`blockwise`: a formula's temporaries of a block stay in the L2 cache."""

_ACTIVE: contextvars.ContextVar[int] = contextvars.ContextVar("onnxcore_threads")
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def machine_threads() -> int:
    """The threads this process may run on: the CPUs it is allowed (``os.sched_getaffinity``), else the CPU count."""
    getaff = getattr(os, "sched_getaffinity", None)
    if getaff is not None:
        return max(1, len(getaff(0)))
    return max(1, os.cpu_count() or 1)


def active_threads() -> int:
    """How many threads a kernel may use here: those of the session evaluating in this context, else 1."""
    return _ACTIVE.get(1)


@contextlib.contextmanager
def threads_in_effect(threads: int) -> Iterator[None]:
    """Make ``threads`` (at least 1) the :func:`active_threads` of this context inside the ``with`` block."""
    token = _ACTIVE.set(max(1, int(threads)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def enter_threads(threads: int) -> contextvars.Token[int]:
    """Make ``threads`` (at least 1) the :func:`active_threads` of this context until :func:`exit_threads` of the
    token returned: :func:`threads_in_effect` without its generator, for ``Session.run``'s fixed cost."""
    return _ACTIVE.set(threads if threads > 1 else 1)


def exit_threads(token: contextvars.Token[int]) -> None:
    """Restore what :func:`enter_threads` replaced."""
    _ACTIVE.reset(token)


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    # Here, not at the top: concurrent.futures (with logging and queue) is 3 ms of every session's imports, and a
    # session of one thread never starts a pool (issue 42, item 3).
    from concurrent.futures import ThreadPoolExecutor

    with _pool_lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnxcore-kernel")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


BLOCKS_PER_THREAD = 4
""":func:`parallel_for` cuts its range into about this many blocks per thread, handed out one at a time."""


def parallel_for(
    fn: Callable[[int, int], Any],
    total: int,
    *,
    threads: int,
    min_block: int = 1,
    measured: bool = True,
    size: int | None = None,
) -> None:
    """Call ``fn(start, stop)`` over consecutive blocks covering ``range(total)``, on up to ``threads`` threads.

    The range is cut into about :data:`BLOCKS_PER_THREAD` blocks per thread (each of at least ``min_block``
    items), which the calling thread and the pool's workers take one at a time until none is left: a worker that
    starts late (its core busy with another process, or with BLAS threads still spinning after a product) takes
    fewer blocks or none, and the call never waits for a worker that has not started. The call returns when
    every block is done, and re-raises the exception of the first failing block (in block order), after the
    other blocks finished. ``fn`` writes its results to places no other block writes, so the outcome does not
    depend on the blocks nor on which thread runs them.

    ``measured`` (the default): whether the threads pay is learned per call site (``fn``'s code), ``total``, the
    magnitude of ``size`` (the work's elements, where ``total`` does not tell it) and ``threads``:
    :func:`serial_pays`. Handing blocks to the pool costs tens of microseconds and the blocks' Python steps take
    turns at the GIL; on a 2-core AMD EPYC a split bias-and-add pass over 2**18 float32 values took 148 us against
    36 us on the calling thread, while a tree ensemble's traversal at 1,000 rows took 0.6x its one-thread time.
    Either way the outcome is the same (see above), so the choice is free to follow the clock.
    """
    if threads <= 1 or total < 2 * max(1, min_block):
        if total:
            fn(0, total)
        return
    if measured:
        key = _site(fn, total, threads, size)
        if key is not None:
            serial = _SERIAL.get(key)
            if serial is None:
                _measure(fn, total, threads, min_block, key)
                return
            if serial:
                fn(0, total)
                return
    _run_blocks(fn, total, threads, min_block)


_TRIALS = 3
"""Timed calls of each way (on the calling thread, split) before a call site's choice is made."""

_MARGIN = 0.9
"""The split way is kept when its best time is below this fraction of the calling thread's."""

_SERIAL: dict[tuple[Any, ...], bool] = {}
_SAMPLES: dict[tuple[Any, ...], list[float]] = {}


def serial_pays(fn: Callable[[int, int], Any], total: int, threads: int, size: int | None = None) -> bool | None:
    """The choice :func:`parallel_for` made for ``fn``'s call site at this ``total``, ``size`` and ``threads``:
    True (the calling thread alone), False (split over the threads), None (not measured yet)."""
    key = _site(fn, total, threads, size)
    return None if key is None else _SERIAL.get(key)


def _site(fn: Callable[[int, int], Any], total: int, threads: int, size: int | None) -> tuple[Any, ...] | None:
    """The key of a measured choice: ``fn``'s code (its call site; None for a callable without one, never
    measured), ``total``, the magnitude of ``size`` and ``threads``."""
    code = getattr(fn, "__code__", None)
    return None if code is None else (code, total, 0 if size is None else size.bit_length(), threads)


def clear_choices() -> None:
    """Forget every call site's measured choice (the next calls measure again)."""
    _SERIAL.clear()
    _SAMPLES.clear()


def _measure(fn: Callable[[int, int], Any], total: int, threads: int, min_block: int, key: tuple[Any, ...]) -> None:
    """One call of ``fn`` over ``range(total)`` as part of a call site's measurement: the way with fewer timed calls
    (the calling thread first), timed; once each has :data:`_TRIALS`, the faster is kept (the split one only when
    faster by :data:`_MARGIN`). The calls are the work asked for, not extra runs: a measured call costs nothing
    but the clock's reads."""
    best = _SAMPLES.get(key)
    if best is None:
        best = [math.inf, math.inf, 0.0, 0.0]  # best time on the calling thread, split; calls of each
    split = best[3] < best[2]
    t0 = time.perf_counter()
    if split:
        _run_blocks(fn, total, threads, min_block)
    else:
        fn(0, total)
    dt = time.perf_counter() - t0
    i = 1 if split else 0
    best = best.copy()  # replaced whole: other threads read a complete list
    best[i] = min(best[i], dt)
    best[2 + i] += 1
    if best[2] >= _TRIALS and best[3] >= _TRIALS:
        if len(_SERIAL) >= 4096:
            _SERIAL.clear()
        _SERIAL[key] = not best[1] < best[0] * _MARGIN
        _SAMPLES.pop(key, None)
    else:
        if len(_SAMPLES) >= 4096:
            _SAMPLES.clear()
        _SAMPLES[key] = best


def _run_blocks(fn: Callable[[int, int], Any], total: int, threads: int, min_block: int) -> None:
    """:func:`parallel_for`'s blocks on the calling thread and the pool's workers."""
    blocks = _blocks(total, threads * BLOCKS_PER_THREAD, min_block)
    n = len(blocks)
    taken = itertools.count()  # next() on a count is atomic under the GIL
    done = threading.Condition(threading.Lock())
    left = [n]
    errors: list[tuple[int, BaseException]] = []

    def work() -> None:
        while (i := next(taken)) < n:
            try:
                fn(*blocks[i])
            except BaseException as e:  # the others still finish before it is raised: they write into our arrays
                errors.append((i, e))
            with done:
                left[0] -= 1
                if not left[0]:
                    done.notify_all()

    pool = _executor(threads - 1)
    for _ in range(min(threads, n) - 1):
        pool.submit(work)
    work()
    with done:
        while left[0]:
            done.wait()
    if errors:
        raise min(errors, key=lambda ie: ie[0])[1]


def copy_split(dst: np.ndarray, src: np.ndarray, *, add: np.ndarray | None = None) -> None:
    """``np.copyto(dst, src)`` (with ``add``, ``np.add(src, add, out=dst)``), split over the kernel threads along
    ``dst``'s first axis of at least two entries when ``dst`` has :data:`MIN_PARALLEL_ELEMENTS` elements or more.

    For the copies a BLAS-bound kernel makes between its products (im2col columns, Winograd's blocks): BLAS runs
    its products over the cores, and these copies would otherwise hold one core while the other idles. ``src``
    and ``add`` broadcast to ``dst``; each element is copied (or added) once, so the result is the same for any
    number of threads.
    """
    threads = active_threads() if dst.size >= MIN_PARALLEL_ELEMENTS else 1
    axis = next((i for i, n in enumerate(dst.shape) if n >= 2), 0)
    if threads <= 1 or dst.ndim == 0 or dst.shape[axis] < 2:
        if add is None:
            np.copyto(dst, src)
        else:
            np.add(src, add, out=dst)
        return
    s = np.broadcast_to(src, dst.shape)
    b = None if add is None else np.broadcast_to(add, dst.shape)
    lead = (slice(None),) * axis

    def run(a: int, z: int) -> None:
        idx = (*lead, slice(a, z))
        if b is None:
            np.copyto(dst[idx], s[idx])
        else:
            np.add(s[idx], b[idx], out=dst[idx])

    parallel_for(run, dst.shape[axis], threads=threads, size=dst.size)


def _blocks(total: int, threads: int, min_block: int) -> Sequence[tuple[int, int]]:
    n = max(1, min(threads, total // max(1, min_block)))
    step, extra = divmod(total, n)
    out = []
    a = 0
    for i in range(n):
        b = a + step + (1 if i < extra else 0)
        out.append((a, b))
        a = b
    return out


def blockwise(
    fn: Callable[..., None],
    x: Any,
    out: Any,
    *,
    block: int = BLOCK_ELEMENTS,
    min_size: int | None = None,
    indexed: bool = False,
) -> bool:
    """Evaluate an elementwise formula by blocks: ``fn(x_block, out_block)`` over consecutive blocks of the
    flattened C-contiguous arrays ``x`` and ``out`` (same size), on the kernel threads; with ``indexed``,
    ``fn(start, x_block, out_block)`` where ``start`` is the block's first flat index.

    Blocks depend on the size alone, so each element is computed the same way for any number of threads. Returns
    False (doing nothing) when ``x`` has fewer than ``min_size`` elements (default: two blocks): the caller then
    evaluates the formula whole.
    """
    size = x.size
    if size < (2 * block if min_size is None else min_size):
        return False
    xf, of = x.reshape(-1), out.reshape(-1)
    n_blocks = -(-size // block)

    def run(a: int, b: int) -> None:
        for i in range(a * block, min(b * block, size), block):
            j = min(size, i + block)
            if indexed:
                fn(i, xf[i:j], of[i:j])
            else:
                fn(xf[i:j], of[i:j])

    threads = active_threads() if size >= MIN_PARALLEL_ELEMENTS else 1
    parallel_for(run, n_blocks, threads=threads)
    return True
