"""``onnxcore optimize IN OUT``: :func:`onnxcore.optimize` from the command line.

Exit codes as every command's (:mod:`onnxcore.cli`): 0 written; 1 the model does not conform, or the result could
not be proved equal (the message names the pass), nothing written; 2 a file cannot be read or written, or the
arguments are wrong. The report goes to standard output (``--json``: as JSON). ``--inputs FILE.npz`` adds one feed set
of real data to the proof.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

import onnxcore
from onnxcore.cli.files import CliError, check_writable, write_text
from onnxcore.optimizer import LEVELS, PASSES, optimize, save_optimized
from onnxcore.reporting import report

__all__ = ["cmd_optimize", "parse_input_shape"]


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=D0,D1,...`` as (name, shape); a scalar is ``NAME=``."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise CliError(f"--input-shape {spec!r}: expected NAME=D0,D1,... (e.g. input=1,3,224,224)")
    try:
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        raise CliError(f"--input-shape {spec!r}: the extents must be whole numbers") from None
    if any(d < 0 for d in shape):
        raise CliError(f"--input-shape {spec!r}: an extent is negative")
    return name, shape


def _load_feeds(path: str) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file by name (no pickled objects: a file given on the command line is data)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise CliError(f"--inputs {path}: not a numpy .npz file of arrays: {e}") from None


def cmd_optimize(args: argparse.Namespace) -> int:
    """Optimize ``args.model`` into ``args.out`` and print the report."""
    if not os.path.isfile(args.model):
        raise CliError(f"cannot read {args.model}: no such file")
    check_writable(args.out)
    if args.html:
        check_writable(args.html)
    unknown = sorted(set(args.disable) - set(PASSES))
    if unknown:
        raise CliError(f"--disable: no pass named {', '.join(unknown)}; the passes: {', '.join(PASSES)}")
    if args.level not in LEVELS:
        raise CliError(f"--level: one of {', '.join(LEVELS)}")
    shapes = dict(parse_input_shape(s) for s in args.input_shape)
    feeds = _load_feeds(args.inputs) if args.inputs else None
    model = onnxcore.load(args.model, allow_outside=args.allow_outside)
    result, summary = optimize(
        model,
        level=args.level,
        input_shapes=shapes or None,
        keep_io=bool(args.keep_inputs),
        verify=not args.no_verify,
        disabled=tuple(args.disable),
        opset=args.opset,
        fold_growth=float(args.fold_growth),
        overridable_initializers=True if args.overridable_initializers else None,
        inputs=None if feeds is None else [feeds],
    )
    try:
        save_optimized(result, args.out)
    except OSError as e:
        raise CliError(f"cannot write {args.out}: {e.strerror or e}") from None
    if args.html:
        page = report(result, title=os.path.basename(args.out), optimization=summary.to_json())
        write_text(args.html, page)
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
    else:
        print(summary.to_text())
    return 0
