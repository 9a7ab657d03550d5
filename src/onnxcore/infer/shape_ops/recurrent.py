"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.recurrent`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    dim_at,
    dim_div,
    require_rank,
    shape_rule,
    unify,
    unify_all,
)

__all__: list[str] = []


_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@shape_rule("RNN", "GRU", "LSTM")
def _recurrent(ctx: ShapeContext) -> list[ShapeT | None]:
    """Y (seq, dirs, batch, hidden), Y_h and Y_c (dirs, batch, hidden); with layout=1 (from 14) batch first:
    Y (batch, seq, dirs, hidden), Y_h and Y_c (batch, dirs, hidden)."""
    g = _GATES[ctx.op_type]
    x, w, r, b = ctx.shape(0), ctx.shape(1), ctx.shape(2), ctx.shape(3) if ctx.present(3) else None
    for s, name in ((x, "X"), (w, "W"), (r, "R")):
        require_rank(ctx, s, (3,), name)
    require_rank(ctx, b, (2,), "B")
    layout = int(ctx.attr("layout", 0)) if ctx.since >= 14 else 0
    states = [ctx.shape(i) for i in ((5, 6) if ctx.op_type == "LSTM" else (5,)) if ctx.present(i)]
    dirs: Extent = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    dirs = unify_all(ctx, [dirs, dim_at(w, 0), dim_at(r, 0), dim_at(b, 0)], "num_directions")
    hs = ctx.attr("hidden_size", None)
    hidden = unify_all(
        ctx,
        [
            hs if isinstance(hs, int) else None,
            dim_at(r, 2),
            dim_div(ctx, dim_at(r, 1), g, "R.shape[1] and the gate count"),
            dim_div(ctx, dim_at(w, 1), g, "W.shape[1] and the gate count"),
            dim_div(ctx, dim_at(b, 1), 2 * g, "B.shape[1] and twice the gate count"),
        ],
        "hidden_size",
    )
    seq, batch = (dim_at(x, 0), dim_at(x, 1)) if layout == 0 else (dim_at(x, 1), dim_at(x, 0))
    lens = ctx.shape(4) if ctx.present(4) else None
    batch = unify_all(ctx, [batch, dim_at(lens, 0), *(dim_at(s, 1 - layout) for s in states)], "batch size")
    for s in states:
        require_rank(ctx, s, (3,), "initial state")
        unify(ctx, dim_at(s, layout), dirs, "initial state, num_directions")
        unify(ctx, dim_at(s, 2), hidden, "initial state, hidden_size")
    if layout == 0:
        return [(seq, dirs, batch, hidden), (dirs, batch, hidden), (dirs, batch, hidden)]
    return [(batch, seq, dirs, hidden), (batch, dirs, hidden), (batch, dirs, hidden)]
