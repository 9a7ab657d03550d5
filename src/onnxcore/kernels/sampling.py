"""Sampling and detection operators: GridSample, AffineGrid, NonMaxSuppression (every version, ONNX 1-2).

GridSample is separable: each spatial axis contributes 1 (nearest), 2 (linear) or 4 (cubic) taps with
their indices and weights, computed for every output point at once; the result is the sum over the
(taps ** rank) combinations of one vectorised gather each. NonMaxSuppression runs the greedy selection
for every (batch, class) pair together: each round selects the best remaining box of every still-active
pair and suppresses, with one vectorised IoU, the boxes overlapping it.

Float16 and bfloat16 values interpolate in float32 and round once (Clause 11.4); integer values
interpolate in float64 and convert at the end, as the GridSample definition says. Invalid inputs raise
(Clause 8.6).
"""

from __future__ import annotations

import itertools

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels._util import check_elements, compute_dtype, scalar_of
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

# ---------------------------------------------------------------------------------------------
# GridSample (16, 20, 22)
# ---------------------------------------------------------------------------------------------

_CUBIC_A = -0.75  # Keys' cubic convolution coefficient, as in the operator's reference (PyTorch's).


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect ``x`` at the borders ``lo`` and ``hi`` until it lies within them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below = x < lo
    above = x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0))
    n = np.trunc(d / span)
    r = d - n * span
    even = (n % 2) == 0
    out = np.where(below, np.where(even, lo + r, hi - r), x)
    return np.where(above, np.where(even, hi - r, lo + r), out)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Weights of the taps at offsets -1, 0, 1, 2 for a fractional position ``t`` in [0, 1)."""
    a = _CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _axis_taps(
    x: np.ndarray, size: int, mode: str, padding_mode: str, align_corners: bool
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """(index, weight) per tap along one axis for unnormalised coordinates ``x``.

    Indices are always in range; for ``zeros`` padding an out-of-range tap gets weight 0 (and
    index 0). ``None`` as weight means 1 (nearest mode).
    """
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    if mode == "nearest":
        # Round half to even (the definition), then fold the coordinate into the border.
        x = np.rint(x)
    if padding_mode == "border" and mode != "cubic":
        # Cubic leaves the coordinate alone and reads every tap at its clamped index (PyTorch's bicubic,
        # which the definition cites, and onnxruntime); clamping the coordinate first, as onnx.reference
        # does, would move the fractional offset of an outside point. No ONNX 1-3 vector covers the pair.
        x = np.where((x < lo) | (x > hi), np.clip(x, 0, size - 1), x)
    elif padding_mode == "reflection":
        x = np.where((x < lo) | (x > hi), _reflect(x, lo, hi), x)

    def fetch(i: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        if padding_mode == "zeros":
            ok = (i >= 0) & (i < size)
            w = ok.astype(x.dtype) if w is None else np.where(ok, w, 0)
            return np.where(ok, i, 0), w
        if padding_mode == "border":
            return np.clip(i, 0, size - 1), w
        # reflection: reflect the integer position at the float borders, then truncate.
        r = _reflect(i.astype(x.dtype), lo, hi)
        return np.clip(np.trunc(r).astype(np.int64), 0, size - 1), w

    if mode == "nearest":
        return [fetch(np.trunc(x).astype(np.int64), None)]
    f = np.floor(x)
    t = x - f
    i0 = f.astype(np.int64)
    if mode == "linear":
        return [fetch(i0, 1 - t), fetch(i0 + 1, t)]
    return [fetch(i0 + k - 1, w) for k, w in enumerate(_cubic_weights(t))]


def _grid_sample(X: np.ndarray, grid: np.ndarray, mode: str, padding_mode: str, align_corners: int) -> np.ndarray:
    if mode not in ("linear", "nearest", "cubic"):
        raise EvaluationError(f"GridSample: unknown mode {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise EvaluationError(f"GridSample: unknown padding_mode {padding_mode!r}")
    r = X.ndim - 2
    if r < 1 or grid.ndim != r + 2 or grid.shape[-1] != r or grid.shape[0] != X.shape[0]:
        raise ShapeError(f"GridSample: X {X.shape} and grid {grid.shape} do not match (N, C, D1..Dr) / (N, ..., r)")
    n, c = X.shape[:2]
    in_sizes = X.shape[2:]
    out_sizes = grid.shape[1:-1]
    out_shape = (n, c, *out_sizes)
    if 0 in out_shape:
        return np.zeros(out_shape, X.dtype)
    if 0 in in_sizes:
        raise ShapeError(f"GridSample: input spatial shape {in_sizes} is empty")
    interp = mode != "nearest"
    kind = X.dtype.kind
    if interp and (kind in "OSUb" or X.dtype == object):
        raise EvaluationError(f"GridSample: mode {mode!r} cannot interpolate {X.dtype} values")
    gdt = np.dtype(np.float64) if grid.dtype == np.float64 else np.dtype(np.float32)
    g = grid.astype(gdt).reshape(n, -1, r)  # (N, P, r)
    npts = g.shape[1]
    # The grid lists coordinates innermost axis first: grid[..., 0] addresses the last axis of X.
    taps_per_axis = []
    for axis, size in enumerate(in_sizes):
        gn = g[:, :, r - 1 - axis]
        if align_corners:
            xs = np.multiply(gn + 1, 0.5 * (size - 1))
        else:
            xs = np.multiply(np.multiply(gn + 1, size) - 1, 0.5)
        taps_per_axis.append(_axis_taps(xs, size, mode, padding_mode, bool(align_corners)))
    strides = np.cumprod((1, *in_sizes[::-1]))[::-1][1:]  # row-major strides of the spatial axes
    if kind in "iub" or X.dtype == np.float16 or compute_dtype(X.dtype) != X.dtype:
        vdt = np.dtype(np.float64) if kind in "iu" else np.dtype(np.float32)
    else:
        vdt = X.dtype
    # Channels last, so each gathered position reads C contiguous values:
    # (N * S, C): row b * S + s holds the C values of spatial position s of batch item b.
    flat = np.ascontiguousarray(X.reshape(n, c, -1).transpose(0, 2, 1)).reshape(-1, c)
    if interp:
        flat = flat.astype(vdt, copy=False)
    base = (np.arange(n) * int(np.prod(in_sizes)))[:, None]
    if not interp:
        # One tap per axis; under zeros padding an out-of-range position reads 0.
        lin = np.repeat(base, npts, axis=1)
        ok: np.ndarray | None = None
        for ((idx, wt),), stride in zip(taps_per_axis, strides):
            lin += idx * int(stride)
            if wt is not None:
                ok = wt > 0 if ok is None else ok & (wt > 0)
        acc = flat.take(lin, axis=0)  # (N, P, C)
        if ok is not None:
            acc = np.where(ok[:, :, None], acc, np.zeros((), X.dtype))
    else:
        acc = None
        for combo in itertools.product(*taps_per_axis):
            lin = np.repeat(base, npts, axis=1)
            w: np.ndarray | None = None
            for (idx, wt), stride in zip(combo, strides):
                lin += idx * int(stride)
                if wt is not None:
                    w = wt if w is None else w * wt
            assert w is not None
            vals = flat.take(lin, axis=0)  # (N, P, C)
            vals *= w[:, :, None].astype(vdt, copy=False)
            if acc is None:
                acc = vals
            else:
                acc += vals
    assert acc is not None
    y = np.moveaxis(acc, 2, 1).reshape(out_shape)
    if kind in "iu" and interp:
        # Integer inputs interpolate in floating point and convert at the end (truncation, as a cast).
        info = np.iinfo(X.dtype)
        y = np.clip(np.trunc(y), info.min, info.max)
    return np.ascontiguousarray(y).astype(X.dtype, copy=False)


@kernel("GridSample", 16)
def grid_sample_16(
    X: np.ndarray, grid: np.ndarray, *, align_corners: int = 0, mode: str = "bilinear", padding_mode: str = "zeros"
) -> np.ndarray:
    """GridSample-16: 4-D input only; modes ``bilinear``, ``nearest``, ``bicubic``."""
    names = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
    if mode not in names:
        raise EvaluationError(f"GridSample-16: mode {mode!r} is not bilinear, nearest or bicubic")
    if X.ndim != 4:
        raise ShapeError(f"GridSample-16: X must be 4-D (N, C, H, W), has shape {X.shape}")
    return _grid_sample(X, grid, names[mode], padding_mode, align_corners)


@kernel("GridSample", 20, 22)
def grid_sample(
    X: np.ndarray, grid: np.ndarray, *, align_corners: int = 0, mode: str = "linear", padding_mode: str = "zeros"
) -> np.ndarray:
    """GridSample-20/22: N-D spatial input; modes ``linear``, ``nearest``, ``cubic`` (22 adds bfloat16)."""
    return _grid_sample(X, grid, mode, padding_mode, align_corners)


# ---------------------------------------------------------------------------------------------
# AffineGrid (20)
# ---------------------------------------------------------------------------------------------


def _base_coords(n: int, align_corners: int) -> np.ndarray:
    """The ``n`` normalised positions along one axis, from -1 to 1."""
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.full(n, -1.0)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


@kernel("AffineGrid", 20)
def affine_grid(theta: np.ndarray, size: np.ndarray, *, align_corners: int = 0) -> np.ndarray:
    """AffineGrid-20: the sampling grid ``theta @ [x, y, (z,) 1]`` over a 2-D or 3-D output size."""
    dims = [int(v) for v in np.asarray(size).ravel()]
    if len(dims) not in (4, 5):
        raise ShapeError(f"AffineGrid: size must hold 4 (2-D) or 5 (3-D) values, holds {len(dims)}")
    if any(d < 0 for d in dims):
        raise EvaluationError(f"AffineGrid: size {dims} has a negative extent")
    r = len(dims) - 2
    n, spatial = dims[0], dims[2:]
    check_elements([n, *spatial, r + 1], "AffineGrid")
    if theta.shape != (n, r, r + 1):
        raise ShapeError(f"AffineGrid: theta must have shape ({n}, {r}, {r + 1}), has {theta.shape}")
    axes = [_base_coords(s, align_corners) for s in spatial]  # outermost (D or H) first
    mesh = np.meshgrid(*axes, indexing="ij")
    # Homogeneous positions list the innermost axis first: (x, y[, z], 1).
    base = np.stack([*mesh[::-1], np.ones(tuple(spatial))], axis=-1).reshape(-1, r + 1)
    grid = np.matmul(base, theta.astype(np.float64).transpose(0, 2, 1))  # (N, P, r)
    return grid.reshape(n, *spatial, r).astype(theta.dtype)


# ---------------------------------------------------------------------------------------------
# NonMaxSuppression (10, 11)
# ---------------------------------------------------------------------------------------------

# Greedy rounds touch every remaining candidate once per selected box; when far fewer boxes can be
# selected than there are candidates, the block-wise pass (:func:`_nms_blocks`) touches only the
# candidates in front of the last selection.
_NMS_BLOCK_RATIO = 4
_NMS_BLOCK = 64


def _suppresses(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...], thr: np.float32) -> np.ndarray:
    """Whether boxes ``a`` and ``b`` (broadcast against each other) overlap with IoU above ``thr``.

    ``a`` and ``b`` are ``(x0, x1, y0, y1, area, positive)``; a box of empty area never suppresses
    nor is suppressed, and disjoint boxes never suppress (also when ``thr`` is negative).
    """
    ax0, ax1, ay0, ay1, aarea, apos = a
    bx0, bx1, by0, by1, barea, bpos = b
    iw = np.minimum(ax1, bx1) - np.maximum(ax0, bx0)
    ih = np.minimum(ay1, by1) - np.maximum(ay0, by0)
    inter = np.maximum(iw, 0) * np.maximum(ih, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (aarea + barea - inter)
    return (iou > thr) & (inter > 0) & apos & bpos


def _nms_blocks(
    rows: np.ndarray,
    order: np.ndarray,
    alive: np.ndarray,
    cand: tuple[np.ndarray, ...],
    thr: np.float32,
    limit: int,
    picked: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]],
) -> None:
    """Greedy NMS of every row at once, candidates taken in sorted order a block at a time.

    A candidate is selected when no box selected before it suppresses it, so each block is first
    checked against the selections so far (one broadcast IoU), then resolved within itself in order;
    rows stop at ``limit`` selections, and the pass stops when every row has. Appends the selected
    rows, boxes and selection steps to ``picked``.
    """
    n_rows, width = alive.shape
    count = np.zeros(n_rows, np.int64)
    sel = tuple(np.zeros((n_rows, limit), c.dtype) for c in cand)
    for b0 in range(0, width, _NMS_BLOCK):
        b1 = min(width, b0 + _NMS_BLOCK)
        block = alive[:, b0:b1] & (count < limit)[:, None]
        if not block.any():
            if not (count < limit).any():
                break
            continue
        here = tuple(c[:, b0:b1] for c in cand)
        s_max = int(count.max())
        if s_max:
            hit = _suppresses(
                tuple(v[:, :s_max, None] for v in sel), tuple(v[:, None, :] for v in here), thr
            )  # (rows, selected, block)
            hit &= (np.arange(s_max)[None, :] < count[:, None])[:, :, None]
            block &= ~hit.any(axis=1)
        within = _suppresses(tuple(v[:, :, None] for v in here), tuple(v[:, None, :] for v in here), thr)
        for i in range(b1 - b0):
            take = np.flatnonzero(block[:, i] & (count < limit))
            if not take.size:
                continue
            c = count[take]
            for v, src in zip(sel, here):
                v[take, c] = src[take, i]
            picked[0].append(rows[take])
            picked[1].append(order[take, b0 + i])
            picked[2].append(c)
            count[take] += 1
            block[take, i + 1 :] &= ~within[take, i, i + 1 :]


@kernel("NonMaxSuppression", 10, 11)
def non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_boxes_per_class: np.ndarray | None = None,
    iou_threshold: np.ndarray | None = None,
    score_threshold: np.ndarray | None = None,
    *,
    center_point_box: int = 0,
) -> np.ndarray:
    """NonMaxSuppression-10/11: greedy per-class selection; rows ``[batch, class, box]``.

    Rows are ordered by batch, then class, then selection order (decreasing score, lower box index
    first among equal scores). A box is suppressed when its IoU with a selected box is strictly
    greater than ``iou_threshold``; with ``score_threshold`` only boxes scoring strictly more are kept.
    """
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise ShapeError(f"NonMaxSuppression: boxes must be (batches, boxes, 4), has shape {boxes.shape}")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ShapeError(f"NonMaxSuppression: scores {scores.shape} do not match boxes {boxes.shape}")
    empty = np.zeros((0, 3), np.int64)
    limit = 0
    if max_output_boxes_per_class is not None and np.asarray(max_output_boxes_per_class).size:
        limit = max(int(scalar_of(max_output_boxes_per_class, name="max_output_boxes_per_class")), 0)
    thr = np.float32(0.0)
    if iou_threshold is not None and np.asarray(iou_threshold).size:
        thr = np.float32(scalar_of(iou_threshold, name="iou_threshold"))
        if not 0.0 <= thr <= 1.0:
            # "Value range [0, 1]" (the definition); onnxruntime refuses too.
            raise EvaluationError(f"NonMaxSuppression: iou_threshold {thr} is outside [0, 1]")
    nb, nc, ns = scores.shape
    if limit == 0 or ns == 0 or nc == 0 or nb == 0:
        return empty

    bx = boxes.astype(np.float32, copy=False)
    if center_point_box:
        half_w = bx[..., 2] / np.float32(2)
        half_h = bx[..., 3] / np.float32(2)
        x_min, x_max = bx[..., 0] - half_w, bx[..., 0] + half_w
        y_min, y_max = bx[..., 1] - half_h, bx[..., 1] + half_h
    else:
        # [y1, x1, y2, x2] with either diagonal pair of corners.
        y_min, y_max = np.minimum(bx[..., 0], bx[..., 2]), np.maximum(bx[..., 0], bx[..., 2])
        x_min, x_max = np.minimum(bx[..., 1], bx[..., 3]), np.maximum(bx[..., 1], bx[..., 3])
    area = (x_max - x_min) * (y_max - y_min)  # (B, S)

    sc = scores.astype(np.float32, copy=False).reshape(nb * nc, ns)
    rows_batch = np.repeat(np.arange(nb), nc)
    # Decreasing score; among equal scores the lower box index first (stable sort of -score).
    order = np.argsort(-sc, axis=1, kind="stable")
    alive = np.ones((nb * nc, ns), dtype=bool)
    if score_threshold is not None and np.asarray(score_threshold).size:
        st = np.float32(scalar_of(score_threshold, name="score_threshold"))
        alive = np.take_along_axis(sc, order, axis=1) > st
    # Candidates above the score threshold form a prefix of each sorted row: drop the tail columns.
    width = int(alive.sum(axis=1).max())
    if width == 0:
        return empty
    order, alive = order[:, :width], alive[:, :width]
    # The working set: rows that still have candidates, with their boxes in sorted order (R, width).
    # It is compacted whenever a row runs out, so every round touches live rows only.
    rows_a = np.flatnonzero(alive.any(axis=1))
    rb = rows_batch[rows_a][:, None]
    order_a, al = order[rows_a], alive[rows_a]
    cx0, cx1 = x_min[rb, order_a], x_max[rb, order_a]
    cy0, cy1 = y_min[rb, order_a], y_max[rb, order_a]
    carea = area[rb, order_a]
    # A box of empty area neither suppresses nor is suppressed (its IoU is taken as 0).
    cpos = carea > 0

    picked_rows: list[np.ndarray] = []
    picked_boxes: list[np.ndarray] = []
    picked_step: list[np.ndarray] = []
    if _NMS_BLOCK_RATIO * limit < al.shape[1]:
        _nms_blocks(rows_a, order_a, al, (cx0, cx1, cy0, cy1, carea, cpos), thr, limit,
                    (picked_rows, picked_boxes, picked_step))  # fmt: skip
        rows_a = rows_a[:0]  # done: skip the rounds below
    step = 0
    # Scratch arrays reused every round (the loop is the whole cost): no allocation per round.
    iw, ih, iou = (np.empty(al.shape, np.float32) for _ in range(3))
    sup = np.empty(al.shape, bool)
    while rows_a.size and step < limit:
        pos = np.argmax(al, axis=1)  # first alive in sorted order = best remaining box
        ar = np.arange(rows_a.size)
        picked_rows.append(rows_a)
        picked_boxes.append(order_a[ar, pos])
        picked_step.append(np.full(rows_a.size, step))
        al[ar, pos] = False
        # IoU of the chosen box with every box of its row; suppress where strictly above the threshold.
        np.minimum(cx1[ar, pos][:, None], cx1, out=iw)
        iw -= np.maximum(cx0[ar, pos][:, None], cx0)
        np.maximum(iw, 0, out=iw)
        np.minimum(cy1[ar, pos][:, None], cy1, out=ih)
        ih -= np.maximum(cy0[ar, pos][:, None], cy0)
        np.maximum(ih, 0, out=ih)
        inter = np.multiply(iw, ih, out=iw)
        # Both areas positive: the union is at least the larger area, never 0.
        np.add(carea[ar, pos][:, None], carea, out=iou)
        iou -= inter
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(inter, iou, out=iou)
        np.greater(iou, thr, out=sup)
        if thr < 0:  # an IoU of 0 (disjoint boxes) never suppresses
            sup &= inter > 0
        sup &= cpos
        sup &= cpos[ar, pos][:, None]
        np.logical_not(sup, out=sup)
        al &= sup
        live = al.sum(axis=1)
        keep = live > 0
        width = int(live.max()) if live.size else 0
        if not keep.all() or 2 * width < al.shape[1]:
            # Drop finished rows, and when most columns are dead, move each row's alive boxes to the
            # front (in order) and cut the width: later rounds touch live boxes only.
            sel = np.flatnonzero(keep)
            cols = np.argsort(~al[sel], axis=1, kind="stable")[:, :width]
            rsel = sel[:, None]
            rows_a = rows_a[sel]
            order_a, al = order_a[rsel, cols], al[rsel, cols]
            cx0, cx1, cy0, cy1 = cx0[rsel, cols], cx1[rsel, cols], cy0[rsel, cols], cy1[rsel, cols]
            carea, cpos = carea[rsel, cols], cpos[rsel, cols]
            iw, ih, iou = (np.empty(al.shape, np.float32) for _ in range(3))
            sup = np.empty(al.shape, bool)
        step += 1
    if not picked_rows:
        return empty
    rows = np.concatenate(picked_rows)
    boxes_sel = np.concatenate(picked_boxes)
    steps = np.concatenate(picked_step)
    sort = np.lexsort((steps, rows))  # by (batch, class) row, then selection order
    rows, boxes_sel = rows[sort], boxes_sel[sort]
    out = np.stack([rows // nc, rows % nc, boxes_sel], axis=1).astype(np.int64)
    return out
