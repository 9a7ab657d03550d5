"""The rotary position embedding as one step (issue 27, Clause 8.2).

Llama-style decoders apply ``x * cos + rotate_half(x) * sin`` to every query and key: after
:func:`onnxcore.runtime.optimize.shapeops.fuse_rotate_half` that is four steps (``Mul``, the
:class:`~onnxcore.runtime.optimize.shapeops.RotateHalf` step, ``Mul``, ``Add``), each a few microseconds of Python
around a few thousand values. :func:`fuse_rotary` makes them one :class:`Rotary` step.

The step computes the same operations in the same order: each product rounded to the element type, then their
sum, as the graph's two ``Mul`` and its ``Add`` do (the compiled loop of :mod:`onnxcore.kernels.accel` does not
contract them into fused multiply-adds; with the accelerator off, numpy's ``multiply`` and ``add``), so the results
are the graph's bit for bit. It takes that path only for a float32 or float64 ``x`` whose ``rotate_half`` the
:class:`RotateHalf` step has seen is the halves of the last axis, with ``cos`` and ``sin`` of its type that
broadcast to its shape (not growing it) and have its last extent; anything else runs the four steps as written.
``run(..., intermediates=True)`` runs the graph as written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels import accel
from onnxcore.runtime.optimize._common import rebound, use_counts
from onnxcore.runtime.optimize.shapeops import RotateHalf, rotate_halves
from onnxcore.runtime.step import PlanNode

__all__ = ["Rotary", "fuse_rotary"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Rotary:
    """``Add(Mul(x, cos), Mul(RotateHalf(x), sin))`` as one step (module docstring).

    Args:
        rotate: The :class:`RotateHalf` step of ``x``.
        cos_mul: The kernel of ``Mul(x, cos)``, and whether the node reads ``cos`` first.
        sin_mul: The kernel of ``Mul(rotate_half(x), sin)``, and whether the node reads ``sin`` first.
        add: The kernel of the ``Add``, and whether the node reads the ``sin`` product first.
    """

    __slots__ = ("_fits", "add", "cos_mul", "rotate", "sin_mul")

    def __init__(
        self,
        rotate: RotateHalf,
        cos_mul: tuple[Callable[..., Any], bool],
        sin_mul: tuple[Callable[..., Any], bool],
        add: tuple[Callable[..., Any], bool],
    ) -> None:
        self.rotate = rotate
        self.cos_mul, self.sin_mul, self.add = cos_mul, sin_mul, add
        # Per (x, cos, sin) shapes: the row of cos and of sin for each row of x (:func:`_fit`), or None when the
        # shapes do not fit (cos or sin would grow x, or a last extent differs).
        self._fits: dict[tuple[tuple[int, ...], ...], tuple[np.ndarray, np.ndarray] | None] = {}

    def __call__(self, x: Any, cos: Any, sin: Any) -> Any:
        if type(x) is np.ndarray and type(cos) is np.ndarray and type(sin) is np.ndarray:
            h = self.rotate.seen.get(x.shape)
            if h is not None and x.dtype in _FLOATS and cos.dtype == x.dtype and sin.dtype == x.dtype:
                key = (x.shape, cos.shape, sin.shape)
                if key in self._fits:
                    fit = self._fits[key]
                else:
                    fit = _fit(x.shape, cos.shape, sin.shape)
                    fits = dict(self._fits) if len(self._fits) < 64 else {}
                    fits[key] = fit
                    self._fits = fits  # replaced whole: runs in other threads read a complete dict
                if fit is not None:
                    return _rotary(x, cos, sin, h, fit)
        return self._as_written(x, cos, sin)

    def _as_written(self, x: Any, cos: Any, sin: Any) -> Any:
        mul_c, cos_first = self.cos_mul
        mul_s, sin_first = self.sin_mul
        add, sin_product_first = self.add
        r = self.rotate(x)
        a = mul_c(cos, x) if cos_first else mul_c(x, cos)
        b = mul_s(sin, r) if sin_first else mul_s(r, sin)
        return add(b, a) if sin_product_first else add(a, b)


def _fit(x: tuple[int, ...], c: tuple[int, ...], s: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """For each row of ``x`` (its last axis), the row of ``c`` and of ``s`` it is multiplied by (they broadcast
    over the leading axes); None when one would grow ``x`` or has another last extent."""
    if not x or not c or not s or len(c) > len(x) or len(s) > len(x) or c[-1] != x[-1] or s[-1] != x[-1]:
        return None
    rows = []
    for shape in (c, s):
        full = (1,) * (len(x) - len(shape)) + shape
        if any(e != 1 and e != d for e, d in zip(full, x)):
            return None
        index = np.arange(math.prod(full[:-1]), dtype=np.int64).reshape(full[:-1])
        rows.append(np.ascontiguousarray(np.broadcast_to(index, x[:-1])).reshape(-1))
    return rows[0], rows[1]


def _rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, h: int, fit: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    if accel.enabled():
        n = x.shape[-1]
        out = np.empty(x.shape, x.dtype)
        accel.jit().rotary_rows(
            np.ascontiguousarray(x).reshape(-1, n),
            np.ascontiguousarray(cos).reshape(-1, n),
            np.ascontiguousarray(sin).reshape(-1, n),
            fit[0],
            fit[1],
            h,
            out.reshape(-1, n),
        )
        return out
    r = rotate_halves(x, h)
    y = np.multiply(x, cos)
    np.multiply(r, sin, out=r)
    np.add(y, r, out=y)
    return y


def _plain(bn: PlanNode, op: str, since: int) -> bool:
    node = bn.node
    return (
        node.op_type == op
        and node.domain in ("", "ai.onnx")
        and bn.call is not None
        and not bn.outer
        and bn.since >= since
        and len(bn.inputs) == 2
        and all(bn.inputs)
        and len(bn.outputs) == 1
        and bool(bn.outputs[0])
    )


def fuse_rotary(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """Make each ``Add(Mul(x, cos), Mul(RotateHalf(x), sin))`` whose intermediates are each read once (the
    products in either order, their operands in either order) one :class:`Rotary` step."""
    del const  # cos and sin may vary from run to run (position ids)
    if not any(isinstance(bn.call, RotateHalf) for bn in nodes):
        return nodes
    uses = use_counts(nodes, outputs)
    producer = {o: k for k, bn in enumerate(nodes) for o in bn.outputs if o}
    replaced: dict[int, PlanNode] = {}
    drop: set[int] = set()
    for a, bn in enumerate(nodes):
        # Add-7 on: multidirectional broadcasting (no legacy broadcast attribute); Mul likewise.
        if not _plain(bn, "Add", 7) or a in drop:
            continue
        muls = [producer.get(n) for n in bn.inputs]
        if any(m is None or m in drop or not _plain(nodes[m], "Mul", 7) for m in muls):
            continue
        if any(uses.get(n) != 1 for n in bn.inputs) or muls[0] == muls[1]:
            continue
        found = None
        for side, m in enumerate(muls):
            assert m is not None
            for pos, name in enumerate(nodes[m].inputs):
                r = producer.get(name)
                if r is not None and isinstance(nodes[r].call, RotateHalf) and uses.get(name) == 1 and r not in drop:
                    found = (side, m, pos, r)
        if found is None:
            continue
        side, ms, pos, r = found
        mc = muls[1 - side]
        assert mc is not None
        x = nodes[r].inputs[0]
        cos_ins = nodes[mc].inputs
        if x not in cos_ins or cos_ins[0] == cos_ins[1]:
            continue
        cos = cos_ins[1] if cos_ins[0] == x else cos_ins[0]
        sin = nodes[ms].inputs[1 - pos]
        rotate = nodes[r].call
        assert isinstance(rotate, RotateHalf)
        call_c, call_s, call_a = nodes[mc].call, nodes[ms].call, bn.call
        assert call_c is not None and call_s is not None and call_a is not None
        step = Rotary(rotate, (call_c, cos_ins[0] != x), (call_s, pos == 1), (call_a, side == 0))
        absorbed = [nodes[k] for k in sorted((r, mc, ms))]
        replaced[a] = rebound(bn, step, {}, [x, cos, sin], list(bn.outputs), absorbed=absorbed)
        replaced[a].may_tuple = False
        drop.update((r, mc, ms))
    if not replaced:
        return nodes
    return [replaced.get(k, b) for k, b in enumerate(nodes) if k not in drop]
