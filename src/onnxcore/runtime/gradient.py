"""Reverse-mode differentiation for ``Gradient-1`` of ``ai.onnx.preview.training``.

A Gradient node names, by its ``xs``, ``zs`` and ``y`` attributes, a part of the graph that encloses it: the
nodes through which ``y`` is computed from the tensors of ``xs`` and ``zs``. Its inputs are the values of
``xs`` then ``zs`` at which the derivatives are taken; its i-th output is dY/dX for the i-th tensor of ``xs``
(each output optional). Two stages, as for every other node (Clause 8):

* Binding (:func:`bind_gradients`, called when a graph is built): the sub-graph is identified among the bound
  nodes of the enclosing graph. The nodes on the paths from ``xs`` and ``zs`` to ``y`` are kept in graph
  order, with the nodes that compute their other inputs from initializers alone (a ``Constant``, a shape
  computation). Every other input of those nodes must be an initializer of that graph; each node whose result
  depends on an ``xs`` tensor must have a differentiation rule (:mod:`onnxcore.runtime.gradient_rules`). A
  Gradient on the path (higher order), a node with subgraphs, ``y`` not computed from ``xs``/``zs`` or an
  integer ``xs`` tensor make the session refuse the model at construction with
  :class:`~onnxcore.errors.UnsupportedOperatorError` naming the Gradient node and the cause (Clause 4.4:
  what is unsupported is reported, never approximated).
* Evaluation (:class:`GradientCall`): the sub-graph is evaluated again with the same bound kernels on the
  Gradient node's input values (so its forward results are those the graph's own nodes compute), keeping its
  intermediates, and the seed is propagated backwards through each node's vector-Jacobian product.

Positions taken where the definition is silent:

* A ``y`` with more than one element is differentiated as the sum of its elements (the seed is a tensor of
  ones of y's shape); for a one-element ``y`` that is dY/dX itself.
* An ``xs`` tensor that ``y`` does not depend on gets zeros of its shape.
* Each output has the shape and element type of its ``xs`` tensor. Gradients are computed in float64 for
  double tensors and in float32 otherwise, float16 and bfloat16 results being rounded once at the end.
* At points where an operator is not differentiable the rules choose one one-sided derivative, stated in
  :mod:`onnxcore.runtime.gradient_rules` (ties of Max/Min go to the first input holding the extreme, ties of
  ReduceMax/ReduceMin share the gradient equally, MaxPool's go to the first element of the window).

Support: the graph that immediately encloses the Gradient node (the top-level graph, a subgraph or a function
body); values read from an outer scope count as non-constant and are refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, UnsupportedOperatorError
from onnxcore.kernels.registry import NONDETERMINISTIC
from onnxcore.kernels.shared import is_float
from onnxcore.proto import NodeProto, TypeProto
from onnxcore.runtime.gradient_rules import BASIC_RULES, CHECKS, VJP, GradientRule
from onnxcore.runtime.gradient_rules_nn import NN_CHECKS, NN_RULES
from onnxcore.runtime.step import PlanNode

__all__ = ["GRADIENT_RULES", "TRAINING_DOMAIN", "GradientCall", "bind_gradients", "check_rule", "is_gradient"]

TRAINING_DOMAIN = "ai.onnx.preview.training"

GRADIENT_RULES: dict[str, GradientRule] = {**BASIC_RULES, **NN_RULES}
"""The differentiation rules, by operator name of the default domain."""

_CHECKS = {**CHECKS, **NN_CHECKS}

# Operators whose results depend on the shape of their input, never on its values: nothing flows through them.
_SHAPE_ONLY = frozenset({"Shape", "Size"})

# TensorProto element types of the floating-point tensors a derivative is taken with respect to.
_FLOAT_ELEM_TYPES = frozenset({1, 10, 11, 16})


def is_gradient(node: NodeProto) -> bool:
    """Whether ``node`` is a Gradient of the ``ai.onnx.preview.training`` domain."""
    return node.op_type == "Gradient" and node.domain == TRAINING_DOMAIN


def _op(node: NodeProto) -> str:
    return f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def check_rule(bn: PlanNode) -> str | None:
    """Why ``bn`` cannot be differentiated (no rule, or a form its rule does not cover), or None."""
    node = bn.node
    if node.domain not in ("", "ai.onnx") or node.op_type not in GRADIENT_RULES:
        return f"no differentiation rule for {_op(node)}"
    if bn.since == 0:
        return f"{_op(node)} is evaluated through a function body, which is not differentiated"
    check = _CHECKS.get(node.op_type)
    return None if check is None else check(bn)


def _shape_only(node: NodeProto) -> bool:
    return node.op_type in _SHAPE_ONLY and node.domain in ("", "ai.onnx")


def _has_subgraphs(bn: PlanNode) -> bool:
    return bool(bn.outer) or any(a.g is not None or a.graphs for a in bn.node.attribute)


class _Refusal(Exception):
    pass


def bind_gradients(
    nodes: Sequence[PlanNode], inits: Mapping[str, Any], types: Mapping[str, TypeProto], label: str
) -> None:
    """Give every bound Gradient node among ``nodes`` (one graph's, in order) its :class:`GradientCall`.

    The call replaces the placeholder kernel; ``outer`` of the node becomes the initializers the sub-graph
    reads, so that their values (an input's initializer may be overridden by a feed, Clause 7.2) reach it.

    Raises:
        UnsupportedOperatorError: a Gradient node whose sub-graph cannot be differentiated (see the module
            docstring); the message names the Gradient node and the node or value at fault.
    """
    for pos, bn in enumerate(nodes):
        if bn.call is None or not is_gradient(bn.node):
            continue
        node = bn.node
        where = f"{label}/node {bn.index} (Gradient, name {node.name!r})"
        try:
            built = _analyse(bn, pos, nodes, inits, types)
        except _Refusal as e:
            raise UnsupportedOperatorError(
                f"{where} cannot be evaluated (Clause 4.4): {e}", [(TRAINING_DOMAIN, "Gradient", 1)]
            ) from None
        if built is None:
            continue  # a node it needs has no kernel: that operator is reported already
        call, const_names = built
        bn.call = call
        bn.outer = const_names


def _analyse(
    bn: PlanNode,
    pos: int,
    nodes: Sequence[PlanNode],
    inits: Mapping[str, Any],
    types: Mapping[str, TypeProto],
) -> tuple[GradientCall, list[str]] | None:
    kw = bn.kw
    xs = [str(s) for s in kw.get("xs") or []]
    zs = [str(s) for s in kw.get("zs") or []]
    y = kw.get("y")
    if not xs or not isinstance(y, str) or not y:
        raise _Refusal("attributes xs (non-empty) and y are required")
    leaves = xs + zs
    if len(set(leaves)) != len(leaves) or "" in leaves:
        raise _Refusal(f"xs {xs} and zs {zs} must name distinct tensors")
    if len(bn.inputs) != len(leaves) or "" in bn.inputs:
        raise _Refusal(f"it has {len(bn.inputs)} inputs; expected one value for each of xs then zs ({len(leaves)})")
    if len(bn.outputs) > len(xs):
        raise _Refusal(f"it has {len(bn.outputs)} outputs; at most one per tensor of xs ({len(xs)})")
    for x in xs:
        tp = types.get(x)
        tt = tp.tensor_type if tp is not None and tp.which_oneof("value") == "tensor_type" else None
        if tt is not None and tt.elem_type and tt.elem_type not in _FLOAT_ELEM_TYPES:
            raise _Refusal(f"xs tensor {x!r} is not a floating-point tensor (element type {tt.elem_type})")

    leaf_set = set(leaves)
    producer: dict[str, int] = {}
    varying = set(leaf_set)  # values that depend on xs or zs
    active = set(xs)  # values that depend on xs
    for k, other in enumerate(nodes):
        outs = [o for o in other.outputs if o]
        if any(o in leaf_set for o in outs):
            continue  # a tensor of xs/zs is an independent variable: its producer is cut off
        for o in outs:
            producer[o] = k
        ins = [n for n in (*other.inputs, *other.outer) if n]
        if any(n in varying for n in ins):
            varying.update(outs)
        if any(n in active for n in ins) and not _shape_only(other.node):
            active.update(outs)
    if y not in varying:
        if y in producer or y in inits:
            raise _Refusal(f"y {y!r} is not computed from the tensors of xs and zs")
        raise _Refusal(f"y {y!r} is not computed in this graph")

    # The nodes on the paths from xs/zs to y.
    path: set[int] = set()
    stack = [y]
    while stack:
        name = stack.pop()
        if name in leaf_set:
            continue
        k = producer[name]
        if k in path:
            continue
        path.add(k)
        stack.extend(n for n in (*nodes[k].inputs, *nodes[k].outer) if n in varying)

    support: set[int] = set()
    const_names: list[str] = []

    def constant(name: str, reader: PlanNode) -> None:
        """Check that ``name`` is computed from initializers alone; collect what computes it."""
        if name in inits:
            if name not in const_names:
                const_names.append(name)
            return
        k = producer.get(name)
        if k is None or k == pos:
            raise _Refusal(
                f"input {name!r} of node {reader.index} ({_op(reader.node)}) is neither a tensor of xs/zs, nor "
                "computed from them, nor a constant (an initializer of this graph; a value of an enclosing scope "
                "is not)"
            )
        if k in support:
            return
        src = nodes[k]
        if src.call is None or _has_subgraphs(src) or src.node.op_type in NONDETERMINISTIC or is_gradient(src.node):
            raise _Refusal(
                f"input {name!r} of node {reader.index} ({_op(reader.node)}) is computed by node {src.index} "
                f"({_op(src.node)}), which is not a constant computation"
            )
        for n in src.inputs:
            if n:
                constant(n, src)
        support.add(k)

    unbound = False
    for k in sorted(path):
        other = nodes[k]
        op = _op(other.node)
        if is_gradient(other.node):
            raise _Refusal(
                f"node {other.index} (Gradient, name {other.node.name!r}) is on the path to y: "
                "higher-order differentiation is not supported"
            )
        if _has_subgraphs(other):
            raise _Refusal(f"node {other.index} ({op}) on the path to y has subgraphs, which are not differentiated")
        if other.call is None:
            unbound = True
            continue
        if any(n in active for n in other.inputs if n) and not _shape_only(other.node):
            reason = check_rule(other)
            if reason is not None:
                raise _Refusal(f"node {other.index} ({op}, name {other.node.name!r}): {reason}")
        for n in other.inputs:
            if n and n not in varying:
                constant(n, other)
    if unbound:
        return None
    forward = [nodes[k] for k in sorted(path | support)]
    call = GradientCall(
        xs=xs,
        zs=zs,
        y=y,
        forward=forward,
        active=frozenset(active),
        const_names=list(const_names),
        n_outputs=len(bn.outputs),
    )
    return call, const_names


def _work(v: Any) -> Any:
    """A float value as the backward pass computes on it: narrow floats widened to float32."""
    if isinstance(v, np.ndarray) and v.dtype != np.float32 and v.dtype != np.float64 and is_float(v.dtype):
        return v.astype(np.float32)
    return v


def _grad_dtype(dtype: Any) -> np.dtype[Any]:
    """The element type the gradient of a ``dtype`` tensor is computed in."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _differentiable(v: Any) -> bool:
    return isinstance(v, np.ndarray) and is_float(v.dtype)


class GradientCall:
    """The kernel of one bound Gradient node: forward again over the sub-graph, then backwards.

    Called with the values of ``xs`` then ``zs`` (the node's inputs), then those of the initializers the
    sub-graph reads (its ``outer`` names); returns one gradient per output of the node.
    """

    __slots__ = ("active", "const_names", "forward", "n_outputs", "xs", "y", "zs")

    def __init__(
        self,
        *,
        xs: list[str],
        zs: list[str],
        y: str,
        forward: list[PlanNode],
        active: frozenset[str],
        const_names: list[str],
        n_outputs: int,
    ) -> None:
        self.xs = xs
        self.zs = zs
        self.y = y
        self.forward = forward
        self.active = active
        self.const_names = const_names
        self.n_outputs = n_outputs

    def __call__(self, *args: Any, **_attrs: Any) -> tuple[Any, ...]:
        # The attributes (xs, zs, y) were resolved when the node was bound.
        n_leaves = len(self.xs) + len(self.zs)
        if len(args) != n_leaves + len(self.const_names):
            raise EvaluationError(f"Gradient: expected {n_leaves} inputs, got {len(args) - len(self.const_names)}")
        env: dict[str, Any] = dict(zip(self.const_names, args[n_leaves:]))
        env.update(zip(self.xs + self.zs, args[:n_leaves]))
        for x in self.xs:
            if not _differentiable(env[x]):
                raise EvaluationError(
                    f"Gradient: xs tensor {x!r} is {getattr(env[x], 'dtype', type(env[x]).__name__)}; "
                    "derivatives are taken with respect to floating-point tensors only"
                )
        tape = self._forward(env)
        yv = env[self.y]
        if not _differentiable(yv):
            raise EvaluationError(f"Gradient: y {self.y!r} is not a floating-point tensor")
        grads: dict[str, np.ndarray] = {self.y: np.ones(yv.shape, _grad_dtype(yv.dtype))}
        self._backward(tape, env, grads)
        out: list[Any] = []
        for x in self.xs[: self.n_outputs]:
            xv = env[x]
            g = grads.get(x)
            if g is None:
                out.append(np.zeros(xv.shape, xv.dtype))
            else:
                out.append(np.asarray(g).astype(xv.dtype))
        return tuple(out)

    def _forward(self, env: dict[str, Any]) -> list[tuple[PlanNode, list[Any], list[Any]]]:
        tape = []
        for bn in self.forward:
            ins = [env[n] if n else None for n in bn.inputs]
            assert bn.call is not None
            try:
                res = bn.call(*ins, **bn.kw)
            except Exception as e:
                raise EvaluationError(
                    f"Gradient: re-evaluating node {bn.index} ({_op(bn.node)}, name {bn.node.name!r}) failed: "
                    f"{type(e).__name__}: {e}"
                ) from e
            outs = list(res) if type(res) is tuple else [res]
            for o, v in zip(bn.outputs, outs):
                if o:
                    env[o] = v
            tape.append((bn, ins, outs))
        return tape

    def _backward(
        self, tape: list[tuple[PlanNode, list[Any], list[Any]]], env: dict[str, Any], grads: dict[str, np.ndarray]
    ) -> None:
        active = self.active
        for bn, ins, outs in reversed(tape):
            gouts = [grads.get(o) if o else None for o in bn.outputs]
            if all(g is None for g in gouts) or _shape_only(bn.node):
                continue
            need = [bool(n) and n in active and _differentiable(v) for n, v in zip(bn.inputs, ins)]
            if not any(need):
                continue
            rule = GRADIENT_RULES[bn.node.op_type]
            vjp = VJP(bn, [_work(v) for v in ins], [_work(v) for v in outs], gouts, need)
            try:
                gins = rule(vjp)
            except EvaluationError:
                raise
            except Exception as e:
                raise EvaluationError(
                    f"Gradient: differentiating node {bn.index} ({_op(bn.node)}, name {bn.node.name!r}) failed: "
                    f"{type(e).__name__}: {e}"
                ) from e
            for name, v, wanted, g in zip(bn.inputs, ins, need, gins):
                if not wanted or g is None:
                    continue
                g = np.asarray(g, _grad_dtype(v.dtype))
                if g.shape != v.shape:
                    raise EvaluationError(
                        f"Gradient: the gradient of input {name!r} of node {bn.index} ({_op(bn.node)}) has shape "
                        f"{g.shape}, not the input's {v.shape}"
                    )
                prev = grads.get(name)
                grads[name] = g if prev is None else prev + g
