"""A layered (Sugiyama-style) drawing of a directed graph, top to bottom, in plain Python.

Four steps, each simple and each measured (``benchmarks/bench_report.py``):

1. **Acyclic.** An edge going back in the given order (a graph out of topological order, a cycle) is reversed
   for the layout and drawn back the right way round.
2. **Layering.** Longest path from the sources; then, bottom up, each node with at least as many edges out as
   in is pulled down to just above its first successor (a constant, or a weight reshaped, does not sit on the
   top row with a long edge down).
3. **Dummy nodes** split every edge spanning several layers into one segment per layer; **crossing reduction**
   sweeps down and up, ordering each layer by the barycentre of its neighbours in the layer before (median on
   ties), keeping the order with the fewest crossings (counted exactly, by inversions, each sweep).
4. **Coordinates.** Each layer is a row; x is assigned by sweeps that pull every node towards the weighted mean
   of its neighbours (long edges weigh most, so they run straight; a leaf such as a constant pulls its consumer
   only lightly), solved exactly per layer with the order and
   the spacing as constraints (weighted isotonic regression, pool-adjacent-violators).

Node boxes never overlap by construction: rows are separated by their tallest box and a gap, and within a row
the constraints keep each box ``gap_x`` from the next.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Layout", "count_crossings", "layered_layout", "segment_crossings"]

Point = tuple[float, float]


@dataclass(slots=True)
class Layout:
    """Where :func:`layered_layout` put things.

    Attributes:
        x, y: The top-left corner of each node's box (input order).
        layer: Each node's layer (0 at the top).
        edges: One polyline per input edge (input order), from the source's bottom to the target's top.
        width, height: The drawing's extent, margins included.
        crossings: Edge crossings between adjacent layers of the final order (dummy segments included).
    """

    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    layer: list[int] = field(default_factory=list)
    edges: list[list[Point]] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    crossings: int = 0


def _inversions(seq: list[int]) -> int:
    """Pairs i < j with seq[i] > seq[j] (a sorted insertion count: fine for the sizes drawn here)."""
    seen: list[int] = []
    total = 0
    for k, v in enumerate(seq):
        total += k - bisect.bisect_right(seen, v)
        bisect.insort(seen, v)
    return total


def count_crossings(order: Sequence[Sequence[int]], down: Sequence[Sequence[int]]) -> int:
    """Crossings between adjacent layers for the orders ``order`` (node ids per layer, left to right).

    Args:
        order: Node ids per layer.
        down: For each node id, its successors (each in the next layer).
    """
    total = 0
    for layer, nxt in itertools.pairwise(order):
        pos = {v: i for i, v in enumerate(nxt)}
        pairs = sorted((i, pos[w]) for i, v in enumerate(layer) for w in down[v] if w in pos)
        total += _inversions([p for _i, p in pairs])
    return total


def _pav(target: list[float], weight: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``target`` in weighted least squares (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for t, w in zip(target, weight):
        blocks.append([t, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            wt = w1 + w2
            blocks.append([(m1 * w1 + m2 * w2) / wt, wt, c1 + c2])
    out: list[float] = []
    for m, _w, c in blocks:
        out.extend([m] * int(c))
    return out


def layered_layout(
    sizes: Sequence[tuple[float, float]],
    edges: Sequence[tuple[int, int]],
    *,
    gap_x: float = 28.0,
    gap_y: float = 44.0,
    margin: float = 16.0,
    sweeps: int = 12,
) -> Layout:
    """Lay out a directed graph top to bottom.

    Args:
        sizes: (width, height) of each node's box.
        edges: (source, target) index pairs; self-loops are kept but not routed (an empty polyline).
        gap_x: Least horizontal space between two boxes of a row.
        gap_y: Vertical space between rows (edge labels sit there).
        margin: Space around the drawing.
        sweeps: Crossing-reduction sweeps (each one down or up).

    Returns:
        The :class:`Layout`.
    """
    n = len(sizes)
    # 1. acyclic: an edge against the given order is reversed for the layout.
    dag: list[tuple[int, int]] = []
    seen_pairs: set[tuple[int, int]] = set()
    for u, v in edges:
        if u == v:
            continue
        a, b = (u, v) if u < v else (v, u)
        if (a, b) not in seen_pairs:
            seen_pairs.add((a, b))
            dag.append((a, b))
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in dag:
        preds[b].append(a)
        succs[a].append(b)
    # 2. layering: longest path, then sources pulled down to their first successor.
    layer = [0] * n
    for v in range(n):
        if preds[v]:
            layer[v] = max(layer[u] for u in preds[v]) + 1
    # Pulled down (towards its successors) where that shortens its edges: more edges out than in.
    for v in range(n - 1, -1, -1):
        if succs[v] and len(succs[v]) >= len(preds[v]):
            layer[v] = max(layer[v], min(layer[w] for w in succs[v]) - 1)
    # 3. dummies: every edge becomes a chain of unit-span segments.
    widths = [float(w) for w, _h in sizes]
    heights = [float(h) for _w, h in sizes]
    lay = list(layer)
    down: list[list[int]] = [[] for _ in range(n)]
    up: list[list[int]] = [[] for _ in range(n)]
    chain: dict[tuple[int, int], list[int]] = {}
    for a, b in dag:
        path = [a]
        for k in range(layer[a] + 1, layer[b]):
            d = len(widths)
            widths.append(6.0)
            heights.append(0.0)
            lay.append(k)
            down.append([])
            up.append([])
            path.append(d)
        path.append(b)
        for s, t in itertools.pairwise(path):
            down[s].append(t)
            up[t].append(s)
        chain[(a, b)] = path
    total = len(widths)
    dummy = [i >= n for i in range(total)]
    depth = max(lay, default=-1) + 1
    order: list[list[int]] = [[] for _ in range(depth)]
    # Initial order: depth-first from the sources in input order, so a chain's nodes start aligned.
    placed = [False] * total
    for root in range(total):
        if placed[root] or up[root]:
            continue
        stack = [root]
        while stack:
            v = stack.pop()
            if placed[v]:
                continue
            placed[v] = True
            order[lay[v]].append(v)
            stack.extend(reversed(down[v]))
    for v in range(total):
        if not placed[v]:
            order[lay[v]].append(v)
    best = [list(o) for o in order]
    best_c = count_crossings(order, down)
    for sweep in range(sweeps):
        if best_c == 0:
            break
        downward = sweep % 2 == 0
        rng = range(1, depth) if downward else range(depth - 2, -1, -1)
        for li in rng:
            ref = order[li - 1] if downward else order[li + 1]
            pos = {v: i for i, v in enumerate(ref)}
            nbrs = up if downward else down
            keys: list[tuple[float, float, int]] = []
            for i, v in enumerate(order[li]):
                ps = sorted(pos[u] for u in nbrs[v] if u in pos)
                if ps:
                    bary = sum(ps) / len(ps)
                    med = float(ps[len(ps) // 2])
                    keys.append((bary, med, i))
                else:
                    keys.append((float(i) * len(ref) / max(len(order[li]), 1), float(i), i))
            order[li] = [order[li][k[2]] for k in sorted(keys)]
        c = count_crossings(order, down)
        if c < best_c:
            best_c, best = c, [list(o) for o in order]
        else:
            order = [list(o) for o in best] if sweep % 4 == 3 else order
    order = best
    # 4. coordinates: rows, then x by weighted pulls towards the neighbours.
    row_y: list[float] = []
    row_h = [max((heights[v] for v in order[li]), default=0.0) for li in range(depth)]
    y = margin
    for li in range(depth):
        row_y.append(y)
        y += row_h[li] + gap_y
    height = (y - gap_y + margin) if depth else 2 * margin
    cx = [0.0] * total
    for li in range(depth):
        x = 0.0
        for v in order[li]:
            cx[v] = x + widths[v] / 2
            x += widths[v] + gap_x

    # A leaf (a source with one successor, such as a constant, or a sink with one predecessor) weighs little both
    # ways: it yields its place in a row to the nodes around it and pulls its neighbour only lightly, so a chain
    # with a leaf hanging at every step stays straight instead of drifting aside by half a box per step.
    leaf = [(not up[v] and len(down[v]) == 1) or (not down[v] and len(up[v]) == 1) for v in range(total)]

    def weight(a: int, b: int) -> float:
        if leaf[a] or leaf[b]:
            return 0.05
        return 8.0 if dummy[a] and dummy[b] else 2.0 if dummy[a] or dummy[b] else 1.0

    def place(li: int, nbrs: list[list[int]], both: bool) -> None:
        row = order[li]
        if not row:
            return
        target: list[float] = []
        wts: list[float] = []
        offset = 0.0
        offsets: list[float] = []
        for k, v in enumerate(row):
            if k:
                offset += (widths[row[k - 1]] + widths[v]) / 2 + gap_x
            offsets.append(offset)
            ns = nbrs[v] + (up[v] + down[v] if both else [])
            if ns:
                ws = [weight(v, u) for u in ns]
                wt = sum(ws)
                target.append(sum(w * cx[u] for w, u in zip(ws, ns)) / wt - offset)
                wts.append(wt)
            else:
                target.append(cx[v] - offset)
                wts.append(0.05)
        for v, z, o in zip(row, _pav(target, wts), offsets):
            cx[v] = z + o

    for it in range(8):
        if it % 2 == 0:
            for li in range(1, depth):
                place(li, up, False)
        else:
            for li in range(depth - 2, -1, -1):
                place(li, down, False)
    for li in range(depth):
        place(li, up, True)
    left = min((cx[v] - widths[v] / 2 for v in range(total)), default=0.0)
    shift = margin - left
    cx = [c + shift for c in cx]
    width = max((cx[v] + widths[v] / 2 for v in range(total)), default=0.0) + margin
    top = [row_y[lay[v]] + (row_h[lay[v]] - heights[v]) / 2 for v in range(total)]
    out = Layout(
        x=[cx[v] - widths[v] / 2 for v in range(n)],
        y=top[:n],
        layer=layer,
        width=max(width, 2 * margin),
        height=height,
        crossings=best_c,
    )
    for u, v in edges:
        if u == v:
            out.edges.append([])
            continue
        a, b = (u, v) if u < v else (v, u)
        path = chain[(a, b)]
        pts: list[Point] = [(cx[a], top[a] + heights[a])]
        for d in path[1:-1]:
            pts.append((cx[d], row_y[lay[d]] + row_h[lay[d]] / 2))
        pts.append((cx[b], top[b]))
        out.edges.append(pts if u < v else pts[::-1])
    return out


def segment_crossings(polylines: Sequence[Sequence[Point]]) -> int:
    """Proper crossings between the segments of different polylines (a measure for any drawing, ours or dot's).

    Segments sharing an end point do not count (edges leaving one node); a pair of polylines may cross more
    than once, and each crossing counts.
    """
    segs: list[tuple[float, float, float, float, int]] = []
    for k, line in enumerate(polylines):
        for (x1, y1), (x2, y2) in itertools.pairwise(line):
            segs.append((x1, y1, x2, y2, k))
    if len(segs) < 2:
        return 0
    s = np.array([t[:4] for t in segs], dtype=np.float64)
    owner = np.array([t[4] for t in segs])
    total = 0
    for i in range(len(s) - 1):
        a = s[i]
        b = s[i + 1 :]
        d1 = _orient(a[0], a[1], a[2], a[3], b[:, 0], b[:, 1])
        d2 = _orient(a[0], a[1], a[2], a[3], b[:, 2], b[:, 3])
        d3 = _orient(b[:, 0], b[:, 1], b[:, 2], b[:, 3], a[0], a[1])
        d4 = _orient(b[:, 0], b[:, 1], b[:, 2], b[:, 3], a[2], a[3])
        eps = 1e-9
        hit = (d1 * d2 < -eps) & (d3 * d4 < -eps) & (owner[i + 1 :] != owner[i])
        total += int(np.count_nonzero(hit))
    return total


def _orient(ax: Any, ay: Any, bx: Any, by: Any, cx: Any, cy: Any) -> np.ndarray:
    """Sign-carrying area of the triangle (a, b, c), broadcast over arrays."""
    return np.asarray((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))
