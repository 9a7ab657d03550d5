"""Compiled loops of the tree ensembles (numba ``@njit``): the walk of every (tree, row) pair to its leaf over the
tables of :class:`onnxcore.kernels._tree_eval.CompiledForest` (sixteen rows at a time through a tree, or for a few
rows sixteen trees at a time in scalar lanes), the sums of the leaves' values or weights per target, a small batch's
walk, sums and base values in one call, and a one-row SOFTMAX's steps around numpy's ``exp``. Split from
:mod:`onnxcore.kernels.accel._jit` by family (reach them as ``accel.jit_tree().NAME``); numba itself is imported by
``_jit`` alone, whose decorators these use. numba does not check bounds: every index these loops follow has been
validated by the caller (see each docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.accel._jit import _njit, _njit_inline

__all__ = [
    "tree_predict_groups",
    "tree_predict_rows",
    "tree_softmax_scale",
    "tree_softmax_shift",
    "tree_states",
    "tree_states_uniform",
    "tree_sum_groups",
    "tree_sum_rows",
]

_LEAF = 7
_LANES = 16  # rows walked together through one tree


@_njit
def tree_states(
    x: Any,
    feature: Any,
    threshold: Any,
    child: Any,
    mode: Any,
    miss: Any,
    member_row: Any,
    member_sets: Any,
    roots: Any,
    depth: Any,
    out: Any,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """For trees ``start..stop`` and every row of ``x`` ``(N, F)``: the state ``2 * leaf`` the row reaches,
    into ``out[tree, row]``. Tables by state ``s = 2 * node`` (``feature``, ``threshold``, ``mode`` (0-5 the
    comparisons of BRANCH_LEQ..BRANCH_NEQ, 6 BRANCH_MEMBER, 7 a leaf), ``miss``, ``member_row``) and ``child``
    (``child[s]`` the false child's state, ``child[s + 1]`` the true one's).

    The caller has validated (``CompiledForest._validated_tables``): every child, root and state in
    ``[0, len(child))``, even; every feature of an interior node in ``[0, F)``; every member row of a
    BRANCH_MEMBER node in ``[0, len(member_sets))``; ``depth[t]`` bounds the walk (a leaf ends it sooner)."""
    n = x.shape[0]
    lanes = np.empty(_LANES, np.intp)
    for t in range(start, stop):
        root = roots[t]
        steps = depth[t]
        # _LANES rows walk the tree together: independent chains of loads the processor overlaps.
        for r0 in range(0, n, _LANES):
            k = min(_LANES, n - r0)
            for lane in range(k):
                lanes[lane] = root
            for _ in range(steps):
                for lane in range(k):
                    s = lanes[lane]
                    md = mode[s]
                    if md == _LEAF:
                        continue
                    v = x[r0 + lane, feature[s]]
                    th = threshold[s]
                    if md == 0:
                        c = v <= th
                    elif md == 1:
                        c = v < th
                    elif md == 2:
                        c = v >= th
                    elif md == 3:
                        c = v > th
                    elif md == 4:
                        c = v == th
                    elif md == 5:
                        c = v != th
                    else:
                        c = False
                        sets = member_sets[member_row[s]]
                        for j in range(sets.size):
                            if sets[j] == v:
                                c = True
                                break
                    if miss[s] and v != v:
                        c = True
                    # An index, not a branch: the outcome is data, a branch on it mispredicts half the time.
                    lanes[lane] = child[s + np.intp(c)]
            for lane in range(k):
                out[t, r0 + lane] = lanes[lane]


@_njit
def _compare(code: int, v: Any, th: Any) -> bool:  # pragma: no cover - compiled
    """``v <mode> th`` for the comparison codes 0-5 (BRANCH_LEQ, LT, GTE, GT, EQ, NEQ)."""
    if code == 0:
        return v <= th
    if code == 1:
        return v < th
    if code == 2:
        return v >= th
    if code == 3:
        return v > th
    if code == 4:
        return v == th
    return v != th


@_njit_inline
def _walk16(
    xr: Any, nodes: Any, code: int, roots: Any, depth: Any, out: Any, r: int, t0: int
) -> None:  # pragma: no cover
    """:func:`tree_states_uniform`'s walk of the sixteen trees from ``t0`` for the row ``xr`` (row ``r`` of the
    states), each tree's node in a scalar of its own: the sixteen chains of loads stay in registers, where a lanes
    array costs a store and a load per step on each chain (1.2-1.5x slower on one-row forests of 100-300 trees).
    Validated by the caller as that function is."""
    steps = depth[t0]
    for lane in range(1, 16):
        steps = max(steps, depth[t0 + lane])
    s0 = roots[t0]
    s1 = roots[t0 + 1]
    s2 = roots[t0 + 2]
    s3 = roots[t0 + 3]
    s4 = roots[t0 + 4]
    s5 = roots[t0 + 5]
    s6 = roots[t0 + 6]
    s7 = roots[t0 + 7]
    s8 = roots[t0 + 8]
    s9 = roots[t0 + 9]
    s10 = roots[t0 + 10]
    s11 = roots[t0 + 11]
    s12 = roots[t0 + 12]
    s13 = roots[t0 + 13]
    s14 = roots[t0 + 14]
    s15 = roots[t0 + 15]
    if code == 0:
        # BRANCH_LEQ written out (the strict comparisons arrive as it, see CompiledForest): with the code a value
        # known only at run time the compiler keeps its test inside the loop (7 % slower on 300 trees of depth 10).
        for _ in range(steps):
            n0 = nodes[s0]
            s0 = n0.true if xr[n0.feature] <= n0.threshold else n0.false
            n1 = nodes[s1]
            s1 = n1.true if xr[n1.feature] <= n1.threshold else n1.false
            n2 = nodes[s2]
            s2 = n2.true if xr[n2.feature] <= n2.threshold else n2.false
            n3 = nodes[s3]
            s3 = n3.true if xr[n3.feature] <= n3.threshold else n3.false
            n4 = nodes[s4]
            s4 = n4.true if xr[n4.feature] <= n4.threshold else n4.false
            n5 = nodes[s5]
            s5 = n5.true if xr[n5.feature] <= n5.threshold else n5.false
            n6 = nodes[s6]
            s6 = n6.true if xr[n6.feature] <= n6.threshold else n6.false
            n7 = nodes[s7]
            s7 = n7.true if xr[n7.feature] <= n7.threshold else n7.false
            n8 = nodes[s8]
            s8 = n8.true if xr[n8.feature] <= n8.threshold else n8.false
            n9 = nodes[s9]
            s9 = n9.true if xr[n9.feature] <= n9.threshold else n9.false
            n10 = nodes[s10]
            s10 = n10.true if xr[n10.feature] <= n10.threshold else n10.false
            n11 = nodes[s11]
            s11 = n11.true if xr[n11.feature] <= n11.threshold else n11.false
            n12 = nodes[s12]
            s12 = n12.true if xr[n12.feature] <= n12.threshold else n12.false
            n13 = nodes[s13]
            s13 = n13.true if xr[n13.feature] <= n13.threshold else n13.false
            n14 = nodes[s14]
            s14 = n14.true if xr[n14.feature] <= n14.threshold else n14.false
            n15 = nodes[s15]
            s15 = n15.true if xr[n15.feature] <= n15.threshold else n15.false
    else:
        for _ in range(steps):
            n0 = nodes[s0]
            s0 = n0.true if _compare(code, xr[n0.feature], n0.threshold) else n0.false
            n1 = nodes[s1]
            s1 = n1.true if _compare(code, xr[n1.feature], n1.threshold) else n1.false
            n2 = nodes[s2]
            s2 = n2.true if _compare(code, xr[n2.feature], n2.threshold) else n2.false
            n3 = nodes[s3]
            s3 = n3.true if _compare(code, xr[n3.feature], n3.threshold) else n3.false
            n4 = nodes[s4]
            s4 = n4.true if _compare(code, xr[n4.feature], n4.threshold) else n4.false
            n5 = nodes[s5]
            s5 = n5.true if _compare(code, xr[n5.feature], n5.threshold) else n5.false
            n6 = nodes[s6]
            s6 = n6.true if _compare(code, xr[n6.feature], n6.threshold) else n6.false
            n7 = nodes[s7]
            s7 = n7.true if _compare(code, xr[n7.feature], n7.threshold) else n7.false
            n8 = nodes[s8]
            s8 = n8.true if _compare(code, xr[n8.feature], n8.threshold) else n8.false
            n9 = nodes[s9]
            s9 = n9.true if _compare(code, xr[n9.feature], n9.threshold) else n9.false
            n10 = nodes[s10]
            s10 = n10.true if _compare(code, xr[n10.feature], n10.threshold) else n10.false
            n11 = nodes[s11]
            s11 = n11.true if _compare(code, xr[n11.feature], n11.threshold) else n11.false
            n12 = nodes[s12]
            s12 = n12.true if _compare(code, xr[n12.feature], n12.threshold) else n12.false
            n13 = nodes[s13]
            s13 = n13.true if _compare(code, xr[n13.feature], n13.threshold) else n13.false
            n14 = nodes[s14]
            s14 = n14.true if _compare(code, xr[n14.feature], n14.threshold) else n14.false
            n15 = nodes[s15]
            s15 = n15.true if _compare(code, xr[n15.feature], n15.threshold) else n15.false
    out[t0, r] = 2 * s0
    out[t0 + 1, r] = 2 * s1
    out[t0 + 2, r] = 2 * s2
    out[t0 + 3, r] = 2 * s3
    out[t0 + 4, r] = 2 * s4
    out[t0 + 5, r] = 2 * s5
    out[t0 + 6, r] = 2 * s6
    out[t0 + 7, r] = 2 * s7
    out[t0 + 8, r] = 2 * s8
    out[t0 + 9, r] = 2 * s9
    out[t0 + 10, r] = 2 * s10
    out[t0 + 11, r] = 2 * s11
    out[t0 + 12, r] = 2 * s12
    out[t0 + 13, r] = 2 * s13
    out[t0 + 14, r] = 2 * s14
    out[t0 + 15, r] = 2 * s15


@_njit
def tree_states_uniform(
    x: Any, nodes: Any, code: int, roots: Any, depth: Any, out: Any, start: int, stop: int
) -> None:  # pragma: no cover - compiled
    """:func:`tree_states` when every interior node makes the comparison ``code`` (0-5) and no NaN is routed, over
    node records (``nodes``: a record per node, its ``feature``, ``threshold`` and ``false`` and ``true`` child
    nodes, in one cache line; a leaf is its own child with feature 0), ``roots`` as nodes; writes states
    ``2 * leaf``. A step reads one record, then the feature's value, and takes a child already in registers: one
    load fewer on each step's chain than separate feature, threshold and child tables (300 trees of depth 3 at one
    row: 3.4 -> 2.8 us, the call included). Each tree takes exactly ``depth[t]`` steps (a row at a leaf stays
    there), so the loop has no branch on the data.

    The caller has validated every child and root in ``[0, len(nodes))`` and every feature in ``[0, F)`` (F >= 1
    whenever some depth is positive)."""
    n = x.shape[0]
    lanes = np.empty(_LANES, np.intp)
    if n < _LANES:
        # Few rows: sixteen trees walked together for each row (independent chains of loads overlap), in scalar
        # lanes (_walk16); the trees after the last whole sixteen as the last sixteen trees, which walks a few
        # trees twice (the same states written again) rather than the rest through the lanes array. Fewer than
        # sixteen trees take the lanes array.
        k = stop - start
        for r in range(n):
            xr = x[r]
            if k >= _LANES:
                for t0 in range(start, stop - _LANES + 1, _LANES):
                    _walk16(xr, nodes, code, roots, depth, out, r, t0)
                if k % _LANES:
                    _walk16(xr, nodes, code, roots, depth, out, r, stop - _LANES)
                continue
            most = 0
            for lane in range(k):
                lanes[lane] = roots[start + lane]
                most = max(most, depth[start + lane])
            for _ in range(most):
                for lane in range(k):
                    node = nodes[lanes[lane]]
                    # A tree past its depth is at a leaf, its own child: the step changes nothing.
                    if _compare(code, xr[node.feature], node.threshold):
                        lanes[lane] = node.true
                    else:
                        lanes[lane] = node.false
            for lane in range(k):
                out[start + lane, r] = 2 * lanes[lane]
        return
    for t in range(start, stop):
        root = roots[t]
        steps_t = depth[t]
        # Sixteen rows walk the tree together: independent chains of loads the processor overlaps.
        for r0 in range(0, n, _LANES):
            k = min(_LANES, n - r0)
            xb = x[r0 : r0 + k]
            for lane in range(k):
                lanes[lane] = root
            for _ in range(steps_t):
                for lane in range(k):
                    node = nodes[lanes[lane]]
                    if _compare(code, xb[lane, node.feature], node.threshold):
                        lanes[lane] = node.true
                    else:
                        lanes[lane] = node.false
            for lane in range(k):
                out[t, r0 + lane] = 2 * lanes[lane]


@_njit
def tree_sum_groups(states: Any, leaf_value: Any, order: Any, offsets: Any, acc: Any) -> None:  # pragma: no cover
    """Per target ``j`` and row ``r``: ``acc[r, j] += leaf_value[states[t, r]]`` for the trees ``t`` of
    ``order[offsets[j]:offsets[j + 1]]``, one after the other (the numpy path's order: the same sums bit for bit).
    Validated by the caller: ``order`` within ``states``' trees, ``offsets`` nondecreasing within ``order``, every
    state within ``leaf_value``, which is of ``acc``'s type."""
    n = states.shape[1]
    if n == 1:
        # One row (a single prediction): each sum kept in a register and the states read in place, where a row view
        # per tree and a load and store of the sum per tree cost a microsecond over 300 trees. The same additions
        # in the same order and type (leaf_value is of acc's type), so the same bits.
        for j in range(offsets.size - 1):
            total = acc[0, j]
            for p in range(offsets[j], offsets[j + 1]):
                total += leaf_value[states[order[p], 0]]
            acc[0, j] = total
        return
    for j in range(offsets.size - 1):
        for p in range(offsets[j], offsets[j + 1]):
            srow = states[order[p]]
            for r in range(n):
                acc[r, j] += leaf_value[srow[r]]


@_njit
def tree_sum_rows(states: Any, w_row: Any, w_sum: Any, order: Any, acc: Any) -> None:  # pragma: no cover
    """``acc[r, :] += w_sum[w_row[states[t, r]], :]`` for the trees ``t`` of ``order``, one after the other (the
    numpy path's order). Validated by the caller: ``order`` within ``states``' trees, every state within ``w_row``,
    every weight row within ``w_sum``."""
    n, k = acc.shape
    if n == 1:
        # One row: the states and weights read in place (no row views per tree); the same additions.
        for p in range(order.size):
            wr = w_row[states[order[p], 0]]
            for j in range(k):
                acc[0, j] += w_sum[wr, j]
        return
    for p in range(order.size):
        srow = states[order[p]]
        for r in range(n):
            wr = w_sum[w_row[srow[r]]]
            ar = acc[r]
            for j in range(k):
                ar[j] += wr[j]


@_njit
def _add_base(acc: Any, base: Any) -> None:  # pragma: no cover - compiled
    """``acc[:, :base.size] += base``: each sum and its base value added in float64, rounded to ``acc``'s type."""
    for r in range(acc.shape[0]):
        ar = acc[r]
        for j in range(base.size):
            ar[j] = np.float64(ar[j]) + base[j]


@_njit
def _packed_states(x: Any, nodes: Any, idx: Any, code: int, t: int) -> Any:  # pragma: no cover - compiled
    """Every tree's leaf state for every row of ``x``, from the packed tables of :func:`tree_predict_groups` and
    :func:`tree_predict_rows` (``nodes``: the node records; ``idx``: ``roots`` then ``depth`` ...)."""
    states = np.empty((t, x.shape[0]), np.intp)
    tree_states_uniform(x, nodes, code, idx[:t], idx[t : 2 * t], states, 0, t)
    return states


@_njit
def tree_predict_groups(
    x: Any, nodes: Any, idx: Any, base: Any, leaf_value: Any, acc: Any, code: int, t: int, e: Any
) -> int:  # pragma: no cover - compiled
    """:func:`tree_states_uniform` over every tree, then :func:`tree_sum_groups` into ``acc``, in one call (a small
    batch pays one dispatch instead of two and no state array made by the caller). The tables come packed, so that
    a call passes few arguments (numba's dispatch cost grows with each one): ``nodes`` are the node records;
    ``idx`` is ``roots``, ``depth`` and ``order`` (``t`` trees each) then ``offsets``. Then ``base`` (float64, at
    most as many values as targets; empty for none) is added to the first targets' sums as numpy's
    ``acc[:, :base.size] += base`` adds it (in float64, rounded to ``acc``'s type). Validated by the caller as
    those two are. With ``e`` not empty (one row, ``e`` of its width), then :func:`tree_softmax_shift` of the row
    into ``e``, returning what it returns (a one-row SOFTMAX classifier's first step in the same call); else -2."""
    states = _packed_states(x, nodes, idx, code, t)
    tree_sum_groups(states, leaf_value, idx[2 * t : 3 * t], idx[3 * t :], acc)
    _add_base(acc, base)
    return tree_softmax_shift(acc, e) if e.size else -2


@_njit
def tree_predict_rows(
    x: Any, nodes: Any, idx: Any, base: Any, w_sum: Any, acc: Any, code: int, t: int, e: Any
) -> int:  # pragma: no cover - compiled
    """:func:`tree_states_uniform` over every tree, then :func:`tree_sum_rows` into ``acc``, in one call. Packed as
    :func:`tree_predict_groups`'s tables, ``idx`` ending with ``w_row`` (by state) instead of ``offsets``.
    Validated by the caller as those two are; ``e`` and the result as :func:`tree_predict_groups`'s."""
    states = _packed_states(x, nodes, idx, code, t)
    tree_sum_rows(states, idx[3 * t :], w_sum, idx[2 * t : 3 * t], acc)
    _add_base(acc, base)
    return tree_softmax_shift(acc, e) if e.size else -2


@_njit
def tree_softmax_shift(scores: Any, e: Any) -> int:  # pragma: no cover - compiled
    """For one row of class scores (``scores`` ``[1, K]``, float32 or float64): ``e = s - max(s)`` in float64 and
    the index of the first largest score (numpy's argmax), or -1 when a score is NaN (the caller's numpy path then
    decides). The operations of the numpy softmax's first step, on the same float64 values."""
    row = scores[0]
    best = 0
    m = np.float64(row[0])
    if m != m:
        return -1
    for j in range(1, row.size):
        v = np.float64(row[j])
        if v != v:
            return -1
        if v > m:
            m = v
            best = j
    for j in range(row.size):
        e[j] = np.float64(row[j]) - m
    return best


@_njit
def tree_softmax_scale(e: Any, z: Any) -> None:  # pragma: no cover - compiled
    """``z[0, j] = e[j] / sum(e)`` rounded to ``z``'s float32, the sum from left to right: numpy's row sum of fewer
    than eight values adds them in that order, so for up to seven classes the same bits as the numpy softmax."""
    total = 0.0
    for j in range(e.size):
        total += e[j]
    for j in range(e.size):
        z[0, j] = e[j] / total
