"""Chains of per-element affine steps (BatchNormalization, Mul and Add by constants, a closing Relu) as one pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.kernels._util import check_elements
from onnxcore.runtime.optimize._common import fused_with, is_relu, last_readers, per_channel_values, use_counts
from onnxcore.runtime.step import PlanNode

__all__ = ["AffineChain", "affine_step", "bn_parameters", "fuse_affine_chains"]


class AffineChain:
    """One pass for a chain like BatchNormalization -> Mul(c) -> Add(c) -> Relu on a float tensor.

    Each step is affine per element (``y = x * a + b`` with broadcastable constants), so the chain is
    ``x * A + B`` (then ``max(., 0)`` for a closing Relu) with ``A`` and ``B`` composed once per rank and
    dtype. The composed constants reassociate the arithmetic, which Clause 11.4 permits. Any other input
    dtype runs the original kernels one after the other.
    """

    __slots__ = ("_cache", "_last", "bn", "fallback", "ops", "relu")

    def __init__(
        self,
        bn: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float] | None,
        ops: list[tuple[str, np.ndarray]],
        relu: bool,
        fallback: list[tuple[Callable[..., Any], list[Any], dict[str, Any]]],
    ) -> None:
        self.bn = bn
        self.ops = ops
        self.relu = relu
        # (call, arguments with None standing for the running value, attributes) per original node.
        self.fallback = fallback
        self._cache: dict[tuple[tuple[int, ...], str], tuple[np.ndarray | None, np.ndarray, bool]] = {}
        # (shape, dtype, A, B, in place, shape kept) of the previous run, replaced as one tuple: a session run
        # from several threads never pairs one shape with another's coefficients. "Shape kept": the result has
        # the input's shape (see ``into``).
        self._last: tuple[tuple[int, ...], np.dtype[Any] | None, np.ndarray | None, np.ndarray, bool, bool] = (
            (),
            None,
            None,
            np.zeros(()),
            True,
            False,
        )

    def _coefficients(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[np.ndarray | None, np.ndarray, bool]:
        """``A`` (None when 1), ``B`` for inputs of this shape and dtype, and whether ``B`` can be added in place."""
        key = (shape, dtype.str)
        found = self._cache.get(key)
        if found is not None:
            return found
        composed = self._compose((-1,) + (1,) * (len(shape) - 2), lambda c: c.astype(np.float64))
        assert composed is not None
        a, b = composed
        y_shape = np.broadcast_shapes(shape, a.shape)
        # The constants may broadcast the input to a larger result: refused as the unfused Mul/Add would be.
        check_elements(list(np.broadcast_shapes(y_shape, b.shape)), "Mul/Add chain")
        # No Mul and no BatchNormalization: A is 1 and the chain is one addition.
        a_out = None if a.shape == () and a == 1 else a.astype(dtype)
        found = (a_out, b.astype(dtype), y_shape == np.broadcast_shapes(y_shape, b.shape))
        if len(self._cache) >= 64:  # shapes that vary from run to run: keep the cache bounded
            self._cache.clear()
        self._cache[key] = found
        return found

    def __call__(self, x: np.ndarray) -> np.ndarray:
        # The shape and dtype of the previous run are checked first: on tiny tensors the lookup is the cost.
        last = self._last
        if x.shape == last[0] and x.dtype == last[1]:
            a, b, in_place = last[2], last[3], last[4]
        elif x.dtype not in (np.float32, np.float64) or (self.bn is not None and x.ndim < 2):
            value = x
            for call, args, kw in self.fallback:
                out = call(*[value if a is None else a for a in args], **kw)
                value = out[0] if type(out) is tuple else out
            return value
        else:
            a, b, in_place = self._coefficients(x.shape, x.dtype)
            kept = a is None or np.broadcast_shapes(x.shape, a.shape) == x.shape
            self._last = (x.shape, x.dtype, a, b, in_place, kept)
        if a is None:
            y = np.add(x, b)
        else:
            y = np.multiply(x, a)
            if in_place:
                y += b
            else:
                y = y + b
        if self.relu:
            np.maximum(y, 0, out=y)
        return y

    def into(self, y: np.ndarray) -> bool:
        """Apply the chain to ``y`` in place (``y`` is an array the caller made and may overwrite), with the very
        operations :meth:`__call__` applies, when the previous run had ``y``'s shape and dtype and the constants
        do not grow it; False (``y`` untouched) otherwise: then call the chain."""
        last = self._last
        if y.shape != last[0] or y.dtype != last[1] or not (last[4] and last[5]):
            return False
        a, b = last[2], last[3]
        # The output positionally where numpy parses that faster than ``out=`` (a third of a tiny pass's cost);
        # not with the Python 0 of Relu, which then takes a path several times slower.
        if a is not None:
            np.multiply(y, a, y)
        np.add(y, b, y)
        if self.relu:
            np.maximum(y, 0, out=y)
        return True

    def per_channel(self, channels: int, dtype: np.dtype[Any], rank: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``(a, b)``, float64 vectors of ``channels`` values, when the chain is ``x * a + b`` along axis 1 of
        rank-``rank`` inputs of ``dtype``; None when some step varies along another axis."""
        if self.bn is not None and np.size(self.bn[0]) != channels:
            return None
        composed = self._compose((channels,), lambda c: per_channel_values(c, dtype, channels, rank))
        if composed is None:
            return None
        return np.broadcast_to(composed[0], (channels,)), np.broadcast_to(composed[1], (channels,))

    def _compose(
        self, bn_shape: tuple[int, ...], constant: Callable[[np.ndarray], np.ndarray | None]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The chain's ``(A, B)`` in float64: BatchNormalization's per-channel factors shaped ``bn_shape``, each
        Mul/Add constant as ``constant`` gives it (None: the chain does not compose that way)."""
        a: np.ndarray = np.ones((), np.float64)
        b: np.ndarray = np.zeros((), np.float64)
        if self.bn is not None:
            scale, bias, mean, var, eps = (np.asarray(v, np.float64) for v in self.bn)
            a = (scale / np.sqrt(var + eps)).reshape(bn_shape)
            b = bias.reshape(bn_shape) - mean.reshape(bn_shape) * a
        for op, c in self.ops:
            c64 = constant(c)
            if c64 is None:
                return None
            if op == "mul":
                a, b = a * c64, b * c64
            else:
                b = b + c64
        return a, b


def bn_parameters(bn: PlanNode, const: Mapping[str, Any]) -> tuple[Any, ...] | None:
    node = bn.node
    if node.op_type != "BatchNormalization" or node.domain not in ("", "ai.onnx") or bn.call is None:
        return None
    if bn.since < 7 and not bn.kw.get("is_test", 0):
        return None
    if bn.kw.get("training_mode", 0) or bn.kw.get("spatial", 1) != 1 or len(bn.inputs) != 5:
        return None
    if len([o for o in bn.outputs if o]) != 1 or not bn.outputs[0]:
        return None
    params: list[np.ndarray] = []
    for n in bn.inputs[1:]:
        p = const.get(n)
        if not isinstance(p, np.ndarray) or p.dtype.kind != "f":
            return None
        params.append(p)
    if len({p.size for p in params}) != 1:
        return None
    return (*[p.ravel() for p in params], float(bn.kw.get("epsilon", 1e-5)))


def affine_step(bn: PlanNode, current: str, const: Mapping[str, Any]) -> tuple[str, np.ndarray] | None:
    """("mul"|"add", constant) when ``bn`` is Mul/Add of ``current`` and a float constant."""
    node = bn.node
    if node.op_type not in ("Mul", "Add") or node.domain not in ("", "ai.onnx") or bn.call is None or bn.kw:
        return None
    if len(bn.inputs) != 2 or current not in bn.inputs or bn.since < 7:
        return None
    other = bn.inputs[1] if bn.inputs[0] == current else bn.inputs[0]
    c = const.get(other)
    if not isinstance(c, np.ndarray) or c.dtype not in (np.float32, np.float64) or other == current:
        return None
    return ("mul" if node.op_type == "Mul" else "add"), c


def fuse_affine_chains(nodes: list[PlanNode], const: Mapping[str, Any], outputs: Sequence[str]) -> list[PlanNode]:
    """Replace each chain of per-element affine steps (and a closing Relu) by one :class:`AffineChain` node.

    A chain starts at an inference BatchNormalization or at a Mul/Add with a float constant, continues
    through Mul/Add with float constants, and may end with a Relu; every intermediate value has exactly
    one reader and is not a graph output. Chains of one node are left alone.
    """

    uses = use_counts(nodes, outputs)
    reader = last_readers(nodes)
    out: list[PlanNode] = []
    consumed: set[int] = set()
    for k, head in enumerate(nodes):
        if k in consumed:
            continue
        bnp = bn_parameters(head, const)
        first = None if bnp is not None else affine_step(head, _variable_input(head, const), const)
        if bnp is None and first is None:
            out.append(head)
            continue
        x = head.inputs[0] if bnp is not None else _variable_input(head, const)
        ops: list[tuple[str, np.ndarray]] = [] if first is None else [first]
        fallback = [_fallback_entry(head, x, const)]
        members = [k]
        current = head.outputs[0]
        relu = False
        while uses.get(current) == 1 and current in reader:
            j = reader[current]
            nxt = nodes[j]
            if is_relu(nxt):
                relu = True
            else:
                step = affine_step(nxt, current, const)
                if step is None:
                    break
                ops.append(step)
            fallback.append(_fallback_entry(nxt, current, const))
            members.append(j)
            current = nxt.outputs[0]
            if relu:
                break
        if len(members) < 2:
            out.append(head)
            continue
        fused = PlanNode(head.index, head.node, AffineChain(bnp, ops, relu, fallback), {}, [])
        fused.inputs = [x]
        fused.outputs = [current]
        fused.may_tuple = False
        fused.since = head.since
        fused.fused = fused_with(head, [nodes[m] for m in members[1:]])
        consumed.update(members)
        out.append(fused)
    return out


def _variable_input(bn: PlanNode, const: Mapping[str, Any]) -> str:
    vs = [n for n in bn.inputs if n and n not in const]
    return vs[0] if len(vs) == 1 else ""


def _fallback_entry(
    bn: PlanNode, current: str, const: Mapping[str, Any]
) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
    # The node's own call, with None where it reads the running value and its constants bound.
    assert bn.call is not None
    return bn.call, [None if n == current else const[n] for n in bn.inputs], dict(bn.kw)
