"""The ``onnxcore`` command.

Exit codes: 0 success (and, for ``check``, no error findings); 1 the model has errors, a run or a
comparison failed, or the file is corrupt; 2 the file cannot be read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import os
import sys

from onnxcore import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onnxcore",
        description="Read, write, validate and run ONNX models (ONNX Part 1).",
        epilog="exit codes: 0 success; 1 the model has errors, decoding failed, or a run/case failed; "
        "2 a file cannot be read or the arguments are wrong",
    )
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("demo", help="validate and run the model bundled with onnxcore, and print the result")
    d.add_argument("--json", action="store_true", help="print the result as JSON")

    c = sub.add_parser("check", help="validate a model (Clause 10): every finding, with severity and clause")
    c.add_argument("model")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--fast", action="store_true", help="skip the type and shape checks (full=False)")
    c.add_argument("--errors-only", action="store_true", help="omit warnings from the text report")

    i = sub.add_parser("inspect", help="show a model field by field with offsets, without reading weights")
    i.add_argument("model")
    i.add_argument("--depth", type=int, default=2, help="how deep to expand embedded messages (default 2)")
    i.add_argument("--max-items", type=int, default=20, help="elements of a repeated field shown (default 20)")
    i.add_argument("--json", action="store_true", help="print the rows as JSON")

    r = sub.add_parser("run", help="run a model on inputs from .npy or .pb files")
    r.add_argument("model")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE", help="a graph input (repeatable)")
    r.add_argument("--output-dir", help="write each output to OUTPUT_DIR/<name>.npy")
    r.add_argument("--json", action="store_true", help="print shapes, types and previews as JSON")
    r.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=5,
        default=0,
        metavar="RUNS",
        help="also time each step of the plan over RUNS runs (default 5): the costliest steps, the time per "
        'operator (with --json: {"outputs": ..., "profile": ...})',
    )

    v = sub.add_parser("convert", help="re-save a model: external data, canonical form, inline")
    v.add_argument("model")
    v.add_argument("out")
    v.add_argument("--external-data", action="store_true", help="move large tensors to a data file beside OUT")
    v.add_argument("--inline", action="store_true", help="bring external contents into the model file")
    v.add_argument("--canonical", action="store_true", help="write the canonical form (docs/canonical.md)")
    v.add_argument(
        "--infer-shapes",
        action="store_true",
        help="state the inferred type and shape of each intermediate value (value_info) and the shape of each "
        "output declared without one (Clause 9)",
    )

    k = sub.add_parser("conformance", help="run a test package laid out as the ONNX 1-3 vectors (Clause 4, 11)")
    k.add_argument("directory", help="the test package (cases with model.onnx and test_data_set_N/)")
    k.add_argument("--filter", metavar="PATTERN", help="only cases whose name matches this glob")
    k.add_argument("--json", metavar="FILE", help="write one record per case to FILE")
    k.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    k.add_argument(
        "--generate", action="store_true", help="write the ONNX 1-3 node package into DIRECTORY (needs onnx)"
    )

    st = sub.add_parser("statement", help="generate the conformance statement of Annex A from a fresh test run")
    st.add_argument("--json", action="store_true", help="print it as JSON")
    st.add_argument("--markdown", action="store_true", help="print it as Markdown (the default)")
    st.add_argument("--package", metavar="DIR", help="the test package to run (default: generate it, needs onnx)")
    st.add_argument("--jobs", type=int, default=1, help="worker processes for the run (default 1)")
    st.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")

    h = sub.add_parser("hash", help="SHA-256 of the canonical encoding with external contents included")
    h.add_argument("model")
    h.add_argument("--json", action="store_true")
    return p


def _version() -> str:
    return f"onnxcore {__version__}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``onnxcore`` command; returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Output piped into a reader that stopped early (e.g. ``| head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    # The commands load the validator, inference and the evaluator: only once a command is chosen, so that
    # ``--help``, ``--version`` and argument errors answer at once.
    from onnxcore.cli import commands

    if args.command == "inspect":
        # inspect reads the wire format alone: none of the other commands' modules.
        from onnxcore.cli.inspect import run_inspect

        return run_inspect(args.model, depth=args.depth, max_items=args.max_items, as_json=args.json)
    handler = getattr(commands, f"cmd_{args.command}")
    code: int = handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
