"""Straight-line Python for a plan: the per-node overhead of evaluation kept to one call.

A :class:`~onnxcore.runtime.plan.Plan` is a list of steps over integer slots. Interpreting it costs a
loop iteration, an argument list and output bookkeeping per node; this module instead writes the
plan once as the body of one Python function, each value a local variable and each node one line::

    def _run(v):
        _2 = v[2]
        _3 = v[3]
        try:
            _4 = f0(_2, _3)
            _5 = f1(_4, alpha=k1_0); _4 = None
            ...
        except Exception as e:
            raise _fail(e, locals()) from e
        v[7] = _7

A failing node is identified from the line of the traceback, so naming it costs nothing at run time.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from typing import Any

from onnxcore.kernels.registry import prepared_function

__all__ = ["generate", "MAX_STEPS"]

MAX_STEPS = 50_000
"""Plans longer than this are interpreted (compiling one huge function costs more than it saves)."""

_NONE_SLOT = 0


def _ident(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def generate(
    steps: Sequence[tuple[Any, ...]],
    may_tuple: Sequence[bool],
    prefilled: Sequence[int],
    stores: Sequence[int],
    fail: Callable[[int, Callable[[int], Any], BaseException], BaseException],
    label: str,
) -> Callable[[list[Any]], None]:
    """Compile ``steps`` into one function ``run(vals)``.

    Args:
        steps: ``(fn, input_slots, out0, outs, attrs, frees)`` per step (see ``Plan``).
        may_tuple: Per step, whether the callable may return a tuple of outputs.
        prefilled: Slots holding a value before the first step (inputs, constants, outer values).
        stores: Slots written back into ``vals`` at the end (outputs, and every value when kept).
        fail: ``fail(step_index, value_of_slot, exc)`` builds the exception raised for a failure.
        label: Names the graph in tracebacks.
    """
    ns: dict[str, Any] = {}
    lines = ["def _run(v):"]
    lines += [f"    _{s} = v[{s}]" for s in prefilled]
    lines.append("    try:")
    first = len(lines) + 1  # line number of step 0
    for k, ((fn, ins, _out0, outs, kw, frees), tup) in enumerate(zip(steps, may_tuple)):
        inner = prepared_function(fn)
        if inner is not None:
            # A node prepared once (an ML operator's tables, say): its function takes the inputs alone, so the
            # line calls it without the wrapper's frame and without building the attributes' keywords every run.
            fn, kw = inner, {}
        ns[f"f{k}"] = fn
        args = ["None" if j == _NONE_SLOT else f"_{j}" for j in ins]
        if kw:
            if all(_ident(a) for a in kw):
                for idx, (name, value) in enumerate(kw.items()):
                    ns[f"k{k}_{idx}"] = value
                    args.append(f"{name}=k{k}_{idx}")
            else:
                ns[f"k{k}"] = kw
                args.append(f"**k{k}")
        call = f"f{k}({', '.join(args)})"
        if not outs:
            stmt = call
        elif len(outs) == 1 and outs[0][0] == 0 and not tup:
            stmt = f"_{outs[0][1]} = {call}"
        elif len(outs) == 1 and outs[0][0] == 0:
            # One value, or a tuple whose first item is it (a kernel may return a 1-tuple).
            s = outs[0][1]
            stmt = f"r = {call}; _{s} = r[0] if type(r) is tuple else r"
        else:
            parts = [f"r = {call}", "r = r if type(r) is tuple else (r,)"]
            parts += [f"_{s} = r[{j}]" for j, s in outs]
            stmt = "; ".join(parts)
        if frees:
            stmt += "; " + "; ".join(f"_{s} = None" for s in frees)
        lines.append("        " + stmt)
    if not steps:
        lines.append("        pass")
    lines += [
        "    except Exception as e:",
        "        raise _fail(e, locals()) from e",
    ]
    lines += [f"    v[{s}] = _{s}" for s in stores]

    def _fail(e: BaseException, loc: dict[str, Any]) -> BaseException:
        tb = e.__traceback__
        k = (tb.tb_lineno - first) if tb is not None else 0
        k = min(max(k, 0), max(len(steps) - 1, 0))
        return fail(k, lambda s: None if s == _NONE_SLOT else loc.get(f"_{s}"), e)

    ns["_fail"] = _fail
    code = compile("\n".join(lines), f"<onnxcore plan {label}>", "exec")
    exec(code, ns)
    run: Callable[[list[Any]], None] = ns["_run"]
    return run
