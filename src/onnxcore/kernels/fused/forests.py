"""Sibling tree ensembles as one walk (Clause 8.2; the matcher is ``onnxcore.runtime.optimize.forests``).

Converters write an ensemble of ensembles as one ``TreeEnsembleRegressor`` or ``TreeEnsembleClassifier`` node per
member, all reading the same input: an AdaBoost or a bagging model has 20 to 50 of them, an isolation forest one
per tree. Each node's call costs a few microseconds beside the walk of its one tree (the rows read, the compiled
call made, the sums allocated), which at a few rows is most of the model's time.

``TreeEnsembles`` evaluates such nodes together: their forests joined into one whose targets are theirs side by side
(:func:`~onnxcore.kernels.ml_tree.combined_forest`; a member's target ``t`` is its offset plus ``t``), walked once;
each member's outputs are then made from its own columns by its own code (its post transform, its labels, its
one-row paths), so they are what the member's kernel gives, bit for bit: every target's sum adds the same leaves in
the same order, and the columns of the other members receive no weight. Where the joined forest sums dense rows of
weights (classifiers whose leaves vote for several classes), a leaf adds a row as wide as all members' classes
together; past a few rows (:data:`SMALL_BATCH`) that costs more than the calls it saves, so larger batches call the
members one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._tree_eval import CompiledForest
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.ml_tree import ForestParts, combined_forest, forest_parts, forest_rows
from onnxcore.kernels.registry import kernel

__all__ = ["SMALL_BATCH", "TreeEnsembles", "joinable"]

SMALL_BATCH = 16
"""Rows up to which members whose joined forest sums dense weight rows are walked together."""

_MAX_WEIGHTS = 1 << 18  # entries of the joined forest's dense weight table (leaves x all members' targets)


def joinable(steps: Sequence[Any]) -> bool:
    """Whether these prepared nodes' functions can be walked together: each with its parts
    (:func:`~onnxcore.kernels.ml_tree.forest_parts`: a SUM aggregate), all summing in one type, without
    set-membership nodes, and their joined weight table of bounded size."""
    parts = [p for s in steps if (p := forest_parts(s)) is not None]
    if len(steps) < 2 or len(parts) != len(steps):
        return False
    if len({p.acc_dtype for p in parts}) != 1 or any(p.forest.member_sets.shape[0] for p in parts):
        return False
    leaves = sum(p.forest.w_sum.shape[0] for p in parts)
    return leaves * sum(p.width for p in parts) <= _MAX_WEIGHTS


class TreeEnsembles:
    """The step of several tree-ensemble nodes reading one input (module docstring).

    Args:
        steps: The members' prepared functions (:func:`joinable`).
        counts: How many outputs each member's node has (1 for a regressor, 2 for a classifier): the step returns
            them all, member after member.
    """

    __slots__ = ("base", "batches", "columns", "compiled", "counts", "members", "per_node", "steps", "summed")

    def __init__(self, steps: Sequence[Callable[[np.ndarray], Any]], counts: Sequence[int]) -> None:
        if not joinable(steps) or len(counts) != len(steps):
            raise EvaluationError("TreeEnsembles: these nodes cannot be walked together")
        parts: list[ForestParts] = [p for s in steps if (p := forest_parts(s)) is not None]
        joined = combined_forest([p.forest for p in parts])
        if joined is None:
            raise EvaluationError("TreeEnsembles: these nodes cannot be walked together")
        self.compiled = CompiledForest(joined, parts[0].acc_dtype)
        self.steps, self.counts = tuple(steps), tuple(counts)
        offsets = np.cumsum([0] + [p.width for p in parts[:-1]]).tolist()
        self.members = tuple(zip(parts, offsets, counts))
        # Every member finishing from its sums with base_values added: one sum_plus with all the bases side by
        # side (a column beyond a member's base_values gets +0.0, which leaves any sum as it is: none is -0.0).
        self.summed = all(p.finish_summed is not None for p in parts)
        base = np.zeros(sum(p.width for p in parts))
        for p, o, _c in self.members:
            base[o : o + p.base.size] = p.base
        self.base = base
        # Every member a one-target regressor whose output is its sums (an AdaBoost regressor's, an isolation
        # forest's trees): the outputs are the columns of the sums, as (N, 1) views, in one call.
        self.columns = self.summed and all(p.as_is and p.width == 1 for p in parts)
        # Dense weight rows (each leaf adds all members' targets): the members' own walks past a few rows.
        self.per_node = self.compiled.groups is None or self.compiled.leaf_value is None
        # Members finishing their sums by one function of each row (a bagging or AdaBoost model's trees: the same
        # classes and transform): finished together, their rows stacked, where each member's call costs 1.5-2 us at
        # a few rows. Per group: its members, the columns of their sums side by side, and the finishing function.
        by_key: dict[Any, list[int]] = {}
        if self.summed:
            for i, p in enumerate(parts):
                if p.finish_key is not None:
                    by_key.setdefault(p.finish_key, []).append(i)
        batches: list[tuple[tuple[int, ...], np.ndarray, int, Callable[[np.ndarray], Any]]] = []
        for idx in by_key.values():
            finish = parts[idx[0]].finish_summed
            if len(idx) > 1 and finish is not None:
                cols = np.concatenate([np.arange(offsets[i], offsets[i] + parts[i].width) for i in idx])
                batches.append((tuple(idx), cols, parts[idx[0]].width, finish))
        self.batches = tuple(batches)

    def __call__(self, x: np.ndarray) -> tuple[Any, ...]:
        rows = forest_rows(x)
        n = rows.shape[0]
        if not n or (self.per_node and n > SMALL_BATCH):
            return tuple(v for s, c in zip(self.steps, self.counts) for v in _outputs(s(x), c))
        if self.summed:
            scores, has = self.compiled.sum_plus(rows, self.base), None
            if self.columns:
                return tuple(scores.T[:, :, None])
        else:
            scores, has = self.compiled.aggregate(rows, "SUM", need_has=True)
        done: dict[int, Any] = {}
        if has is None and n <= SMALL_BATCH:
            for idx, cols, k, finish in self.batches:
                g = len(idx)
                # (rows member by member: member j's rows are j * n .. (j + 1) * n)
                stacked = scores[:, cols].reshape(n, g, k).transpose(1, 0, 2).reshape(g * n, k)
                labels, probs = finish(stacked)
                for j, i in enumerate(idx):
                    done[i] = (labels[j * n : (j + 1) * n], probs[j * n : (j + 1) * n])
        out: list[Any] = []
        for i, (p, o, c) in enumerate(self.members):
            r = done.get(i)
            if r is not None:
                out.extend(_outputs(r, c))
                continue
            if has is None:
                # A view of the step's own sums (a kernel never writes into its inputs, and the finishing code of
                # the summed case reads them only).
                assert p.finish_summed is not None
                r = p.finish_summed(scores[:, o : o + p.width])
            else:
                s = scores[:, o : o + p.width].copy()  # (its own array: the votes' path adds base_values into it)
                if p.finish_votes is not None:
                    r = p.finish_votes(s, has[:, o : o + p.width].copy())
                else:
                    assert p.finish_summed is not None
                    if p.base.size:
                        s[:, : p.base.size] += p.base  # (what sum_plus adds)
                    r = p.finish_summed(s)
            if c == 1 and type(r) is not tuple:
                out.append(r)
            else:
                out.extend(r if type(r) is tuple and len(r) == c else _outputs(r, c))
        return tuple(out)


def _outputs(r: Any, count: int) -> list[Any]:
    """A member's result as ``count`` outputs (a regressor returns one array, a classifier a pair)."""
    values = list(r) if type(r) is tuple else [r]
    return values[:count] + [None] * (count - len(values))


Member = Callable[[np.ndarray], Any]
"""A member's prepared function (its kernel's ``prepare``)."""


def _prepare(constants: Sequence[Any], *, members: Sequence[Member], counts: Sequence[int]) -> TreeEnsembles:
    return TreeEnsembles(members, counts)


@kernel("TreeEnsembles", 1, domain=FUSED_DOMAIN, prepare=_prepare, prepare_constants=True)
def tree_ensembles(x: np.ndarray, *, members: Sequence[Member], counts: Sequence[int]) -> tuple[Any, ...]:
    """The outputs of the tree-ensemble nodes ``members`` (prepared, reading ``x``), member after member, ``counts``
    of each: one walk of their joined forest (module docstring)."""
    return _prepare((x,), members=members, counts=counts)(x)
