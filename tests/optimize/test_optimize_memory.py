"""The proof's memory (issue 39 item 4): a session made in lean memory (what ``onnxcore.optimize`` runs in) drops each
memory-mapped weight's resident pages after the weight's last reader in a run, so that evaluating a model whose
weights are a mapped file holds about one weight of it at a time, not every weight it has read.

The evidence is the kernel's: the ``Rss`` of this process's mappings of the model file in ``/proc/self/smaps``, read
during a run by a probe operator between the steps, and after ``onnxcore.optimize`` has verified a result.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from optimize_models import T, model, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.external.mapped import mapped_pages, release_pages
from onnxcore.external.spill import lean_memory
from onnxcore.kernels import KernelSet
from onnxcore.optimizer import optimize
from onnxcore.runtime import Session
from onnxcore.runtime import plan as plan_module
from onnxcore.runtime.plan import _releasing

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads /proc/self/smaps (Linux)")

D = 2048  # a 2048 x 2048 float32 weight: 16 MiB (SPILL_FROM: lean memory keeps any misaligned array this large)
SMALL = 512  # 1 MiB: kept a view in lean memory because it is one of a mapped file (a session copies it, aligned)
W = D * D * 4
K = 3  # weights in the chain
PROBE = "test.memory"


def _resident(path: Path) -> int:
    """Octets of ``path`` resident in this process: the Rss of its mappings (/proc/self/smaps)."""
    real = os.path.realpath(path)
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) == 6 and head[5].strip() == real
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def _chain(tmp_path: Path, probes: bool, d: int = D, reads: tuple[int, ...] = tuple(range(K))) -> Path:
    """``X -> MatMul(w0) -> [Probe] -> MatMul(w1) -> [Probe] -> ...`` (the weights ``reads`` names, in turn), one
    file with every weight inline (``d x d`` float32), some misaligned for float32 (names of odd and even length)."""
    rng = np.random.default_rng(0)
    names = [f"w{k}" + "x" * k for k in range(max(reads) + 1)]
    inits = [tensor(n, (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32)) for n in names]
    nodes: list[Any] = []
    prev = "X"
    for k, read in enumerate(reads):
        nodes.append(helper.make_node("MatMul", [prev, names[read]], [f"m{k}"]))
        prev = f"m{k}"
        if probes:
            nodes.append(helper.make_node("Probe", [prev], [f"p{k}"], domain=PROBE))
            prev = f"p{k}"
    nodes.append(helper.make_node("Relu", [prev], ["Y"]))
    extra = [helper.make_opsetid(PROBE, 1)] if probes else []
    m = model(nodes, [vi("X", T.FLOAT, ["N", d])], [vi("Y", T.FLOAT, ["N", d])], inits, extra_opsets=extra)
    path = tmp_path / ("probed.onnx" if probes else "chain.onnx")
    onnxcore.save(m, path)
    assert path.stat().st_size > len(names) * d * d * 4
    assert any(not onnxcore.to_array(t).flags.aligned for t in onnxcore.load(path).graph.initializer)
    return path


def _probed_run(
    tmp_path: Path, lean: bool, d: int, reads: tuple[int, ...] = tuple(range(K))
) -> tuple[list[int], int, np.ndarray]:
    """The file's resident octets at each probe of one run, after the run, and the output."""
    path = _chain(tmp_path, probes=True, d=d, reads=reads)
    seen: list[int] = []
    ops = KernelSet()

    @ops.kernel("Probe", 1, domain=PROBE)
    def probe(x: np.ndarray) -> np.ndarray:
        seen.append(_resident(path))
        return x

    x = {"X": np.random.default_rng(1).standard_normal((2, d)).astype(np.float32)}
    if lean:
        with lean_memory(tmp_path):
            sess = Session(onnxcore.load(path), custom_ops=ops)
            (y,) = sess.run(None, x)
    else:
        sess = Session(onnxcore.load(path), custom_ops=ops)
        (y,) = sess.run(None, x)
    return seen, _resident(path), y


@pytest.mark.parametrize("d", [D, SMALL])
def test_a_run_in_lean_memory_holds_no_weight_after_its_last_reader(tmp_path: Path, d: int) -> None:
    w = d * d * 4
    seen, after, y = _probed_run(tmp_path, lean=True, d=d)
    assert len(seen) == K
    # Each probe runs after the MatMul that last read a weight: that weight's pages are gone from the process, and
    # so are the earlier ones'. What stays is the graph's own octets and, of each weight not yet read, the pages the
    # kernel mapped around its framing when the load read it (fault-around: 64 KiB by default).
    bound = min(w // 2, 1 << 20)
    assert all(r < bound for r in seen), seen
    assert seen[-1] <= seen[0] and after < bound
    # The values are the file's: the same output as an ordinary session's, which keeps the pages it read (a small
    # misaligned weight's while copying it, aligned, when the session is made).
    ordinary_seen, ordinary_after, want = _probed_run(tmp_path, lean=False, d=d)
    np.testing.assert_array_equal(y, want)
    assert ordinary_after >= K * w and ordinary_seen[-1] >= K * w


def test_a_weight_read_twice_stays_until_its_second_reader(tmp_path: Path) -> None:
    seen, after, y = _probed_run(tmp_path, lean=True, d=D, reads=(0, 0, 1))
    # After the first product w0 is still to be read: its pages stay (no fault again for the second); after the
    # second it is released, and w1 after the third.
    assert seen[0] >= W and seen[1] < W // 16 and seen[2] < W // 16 and after < W // 16, seen
    np.testing.assert_array_equal(y, _probed_run(tmp_path, lean=False, d=D, reads=(0, 0, 1))[2])


def test_a_session_outside_lean_memory_runs_its_kernels_unwrapped(tmp_path: Path) -> None:
    path = _chain(tmp_path, probes=False)
    plain = Session(onnxcore.load(path))
    with lean_memory(tmp_path):
        lean = Session(onnxcore.load(path))
    x = {"X": np.ones((1, D), np.float32)}
    plain.run(None, x)
    lean.run(None, x)
    for sess, wrapped in ((plain, False), (lean, True)):
        plan = next(iter(sess._ir._plans.values()))
        # The plain session's steps are the bound calls themselves; in lean memory each step holds a weight (a
        # product by a constant is a fused Linear step, the last one with the Relu) and is wrapped.
        unwrapped = [step[0] is bn.call for step, bn in zip(plan.steps, plan.info, strict=True)]
        assert unwrapped == [not wrapped] * len(plan.steps) and len(plan.steps) == K
    # Runs again after the release read the pages back from the page cache: the same values every run.
    again = [lean.run(None, x)[0] for _ in range(2)]
    np.testing.assert_array_equal(again[0], again[1])
    np.testing.assert_array_equal(again[0], plain.run(None, x)[0])


def test_optimize_leaves_the_verified_files_pages_released(tmp_path: Path) -> None:
    path = _chain(tmp_path, probes=False)
    result, rep = optimize(path)
    assert rep.verified and len(rep.verify_shapes) == 3  # three sizes, each a run of both models
    # The result still views the source file (the mapping is alive), but holds none of the pages the proof read.
    assert _resident(path) < W // 8
    weights = [onnxcore.to_array(t) for t in result.graph.initializer]
    assert all(mapped_pages(w) is not None for w in weights)


def test_the_release_hook_is_called_with_the_freed_arguments_after_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fn(a: Any, b: Any, c: Any, *, k: int) -> int:
        calls.append(f"fn{k}")
        return k

    monkeypatch.setattr(plan_module, "release_pages", lambda a: calls.append(f"release {a}"))
    assert _releasing(fn, (0, 2))("a", "b", "c", k=7) == 7
    assert calls == ["fn7", "release a", "release c"]


def _mapped(tmp_path: Path, access: int, n: int = 3 * mmap.PAGESIZE) -> tuple[np.ndarray, mmap.mmap]:
    path = tmp_path / "octets"
    path.write_bytes(np.arange(n, dtype=np.uint8).tobytes())
    with open(path, "r+b" if access != mmap.ACCESS_READ else "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=access)
    return np.frombuffer(mm, np.uint8), mm


def test_mapped_pages_spans_a_strided_view_and_leaves_writable_mappings_alone(tmp_path: Path) -> None:
    page = mmap.PAGESIZE
    octets, mm = _mapped(tmp_path, mmap.ACCESS_READ, 4 * page)
    # Octets 100 .. 2*page+99 as a (2, page) matrix, transposed: the span is the same, whole pages around it.
    view = octets[100 : 100 + 2 * page].reshape(2, page).T
    span = mapped_pages(view)
    assert span is not None and span[0] is mm and span[1:] == (0, 3 * page)
    assert mapped_pages(octets[::-1])[1:] == (0, 4 * page)  # type: ignore[index]
    assert mapped_pages(octets[page : page + 1])[1:] == (page, 2 * page)  # type: ignore[index]
    release_pages(view)
    assert int(view[5, 1]) == (100 + page + 5) % 256  # read back from the file
    assert mapped_pages(np.arange(4)) is None and mapped_pages("not an array") is None
    # A private copy (its pages may be this process's only copy of what it wrote) and a shared writable mapping are
    # never released.
    for access in (mmap.ACCESS_COPY, mmap.ACCESS_WRITE):
        writable, _mm = _mapped(tmp_path, access)
        assert mapped_pages(writable) is None
    copied, _mm = _mapped(tmp_path, mmap.ACCESS_COPY)
    copied[0] = 200
    release_pages(copied)
    assert copied[0] == 200
