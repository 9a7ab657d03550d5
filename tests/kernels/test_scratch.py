"""Per-thread scratch buffers (runtime/ops/_scratch.py): reuse, growth, alignment, threads, the size cap."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from onnxcore.kernels import _scratch
from onnxcore.kernels._scratch import scratch


def test_same_name_reuses_memory_and_grows() -> None:
    a = scratch("test.a", (100,))
    b = scratch("test.a", (10, 5), np.float64)  # 400 bytes, as many as before: the same memory
    assert np.shares_memory(a, b)
    assert b.shape == (10, 5) and b.dtype == np.float64 and b.flags.c_contiguous
    c = scratch("test.a", (10_000,))  # larger: a new buffer, kept from now on
    assert not np.shares_memory(a, c)
    assert np.shares_memory(c, scratch("test.a", (5_000,)))


def test_names_are_distinct() -> None:
    a = scratch("test.b1", (64,))
    b = scratch("test.b2", (64,))
    assert not np.shares_memory(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex128])
def test_arrays_are_64_byte_aligned(dtype: type) -> None:
    for size in (1, 7, 1000):
        assert scratch(f"test.align.{np.dtype(dtype).str}", (size,), dtype).ctypes.data % 64 == 0


def test_empty_shapes() -> None:
    assert scratch("test.empty", (0, 3)).shape == (0, 3)


def test_threads_get_their_own_buffers() -> None:
    mine = scratch("test.t", (256,))
    theirs: list[np.ndarray] = []
    t = threading.Thread(target=lambda: theirs.append(scratch("test.t", (256,))))
    t.start()
    t.join()
    assert not np.shares_memory(mine, theirs[0])


def test_requests_over_the_cap_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_scratch, "MAX_SCRATCH_BYTES", 1024)
    a = scratch("test.cap", (1024,))  # 4 KiB > 1 KiB: fresh each time
    b = scratch("test.cap", (1024,))
    assert not np.shares_memory(a, b)
    assert scratch("test.cap", (16,)).base is not None  # small requests still come from the buffer


@pytest.mark.skipif(sys.platform != "linux", reason="page-fault counts from getrusage are Linux's")
@pytest.mark.parametrize("last", [False, True], ids=["channels_first", "channels_last"])
def test_winograd_temporaries_take_no_fresh_pages(last: bool) -> None:
    """The reason scratch exists: repeated Winograd calls fault no pages for their ~10 MB of temporaries
    (afresh, each call took ~2,400 faults after glibc trimmed its heap; measured on DenseNet-121's first block)."""
    import resource

    from onnxcore.kernels._winograd import transformed_weights, winograd_conv

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 128, 56, 56)).astype(np.float32)
    u = transformed_weights(rng.standard_normal((8, 128, 3, 3)).astype(np.float32), channels_last=last)
    for _ in range(2):
        winograd_conv(x, u, None, [1, 1], [56, 56], channels_last=last)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        winograd_conv(x, u, None, [1, 1], [56, 56], channels_last=last)
    # The output (100 KB) is fresh on each call; the temporaries (36 x 128 x 196 floats, three of them) are not.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 5 * 100


def test_a_repeated_request_is_the_array_made_last() -> None:
    """A layer asks for the same shape and type on every run: the array made for the last request is handed back
    (no slicing, no alignment found again); another shape or type is a new view of the same memory."""
    a = scratch("test.again", (16, 16, 96), np.float32)
    assert scratch("test.again", (16, 16, 96), np.dtype(np.float32)) is a
    b = scratch("test.again", (16, 16, 95), np.float32)
    assert b.shape == (16, 16, 95) and np.shares_memory(a, b) and b.ctypes.data == a.ctypes.data
    c = scratch("test.again", (16, 16, 96), np.float64)  # twice the octets: a larger buffer
    assert c.dtype == np.float64 and c.shape == (16, 16, 96) and c.ctypes.data % 64 == 0
    assert scratch("test.again", [16, 16, 96], np.float64).shape == (16, 16, 96)  # a list for the shape too
