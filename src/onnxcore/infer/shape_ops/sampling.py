"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.sampling`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    dim_at,
    require_rank,
    shape_rule,
    unify,
)

__all__: list[str] = []


@shape_rule("GridSample")
def _grid_sample(ctx: ShapeContext) -> list[ShapeT | None]:
    # X (N, C, D1, ..., Dr), grid (N, D1_out, ..., Dr_out, r) -> (N, C, D1_out, ..., Dr_out); 4-D only in 16.
    x, grid = ctx.shape(0), ctx.shape(1)
    if ctx.since < 20:
        require_rank(ctx, x, (4,), "X")
        require_rank(ctx, grid, (4,), "grid")
    if x is not None and grid is not None and len(x) != len(grid):
        ctx.fail(f"X has rank {len(x)} and grid rank {len(grid)}")
    r = len(x) if x is not None else (len(grid) if grid is not None else None)
    if r is None:
        return [None]
    unify(ctx, dim_at(grid, -1), r - 2, "grid's last extent and the number of spatial axes")
    n = unify(ctx, dim_at(x, 0), dim_at(grid, 0), "batch size of X and grid")
    return [(n, dim_at(x, 1), *(grid[1:-1] if grid is not None else [None] * (r - 2)))]


@shape_rule("AffineGrid")
def _affine_grid(ctx: ShapeContext) -> list[ShapeT | None]:
    # AffineGrid-20: theta (N, 2, 3), size (N, C, H, W) -> (N, H, W, 2); theta (N, 3, 4), size (N, C, D, H, W)
    # -> (N, D, H, W, 3).
    theta = ctx.shape(0)
    require_rank(ctx, theta, (3,), "theta")
    size = ctx.ints(1)
    if size is not None:
        if len(size) not in (4, 5):
            ctx.fail(f"size holds {len(size)} values, the definition requires 4 or 5")
        n = unify(ctx, dim_at(theta, 0), size[0], "theta.shape[0] and size[0]")
        return [(n, *size[2:], len(size) - 2)]
    s = ctx.shape(1)
    m = dim_at(s, 0) if s is not None and len(s) == 1 else None
    if not isinstance(m, int) or m not in (4, 5):
        return [None]
    return [(dim_at(theta, 0), *([None] * (m - 2)), m - 2)]


@shape_rule("NonMaxSuppression")
def _nms(ctx: ShapeContext) -> list[ShapeT | None]:
    # selected_indices (num_selected, 3): the count depends on the data.
    return [(None, 3)]
