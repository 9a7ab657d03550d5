"""The ``onnxcore`` command.

Exit codes: 0 success (and, for ``check``, no error findings); 1 the model has errors, a run or a
comparison failed, or the file is corrupt; 2 a file cannot be read or written, or the arguments are
wrong. Every failure is one line on standard error, ``onnxcore COMMAND: what``, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from onnxcore import __version__
from onnxcore.errors import OnnxCoreError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """An argument error is one line on stderr (``onnxcore run: argument --profile: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _count(text: str) -> int:
    """A non-negative integer argument."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {n}")
    return n


def _positive(text: str) -> int:
    """A positive integer argument."""
    n = _count(text)
    if n == 0:
        raise argparse.ArgumentTypeError("expected 1 or more, got 0")
    return n


def _untrusted(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--untrusted",
        action="store_true",
        help="the model is not trusted: load and run it under Limits.untrusted() (small allocation and loop "
        "budgets, a 60 s deadline per run; docs/external-data.md)",
    )


def _allow_outside(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-outside",
        action="store_true",
        help="let external data lie outside the model's directory or behind symbolic links (e.g. a Hugging "
        "Face cache); only for models you trust (Clause 15.3)",
    )


class _Unused:
    """Stands for the parser of a command that was not asked for: takes its arguments and drops them."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Unused:
        return self


class _OnlyCommand:
    """The subparsers of ``onnxcore``, keeping only the command ``keep`` (building all fourteen was 4 ms of every
    call: issue 42, item 3); ``seen`` records every command name, so that an unknown one gets the full parser."""

    def __init__(self, sub: Any, keep: str) -> None:
        self.sub, self.keep = sub, keep
        self.seen: set[str] = set()

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self.seen.add(name)
        return self.sub.add_parser(name, **kwargs) if name == self.keep else _Unused()


def _command_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: with only its command's arguments when its first word names a command (its help,
    its errors and its parse are the same as the full parser's); the full parser otherwise."""
    if argv and not argv[0].startswith("-"):
        only: dict[str, _OnlyCommand] = {}
        p = _parser(argv[0], only)
        if argv[0] in only[argv[0]].seen:
            return p
    return _parser()


def _parser(only_command: str | None = None, made: dict[str, _OnlyCommand] | None = None) -> argparse.ArgumentParser:
    """The ``onnxcore`` command's parser; with ``only_command``, that command's subparser alone (the filter it
    used is put in ``made`` under that name)."""
    p = _Parser(
        prog="onnxcore",
        description="Read, write, validate and run ONNX models (ONNX Part 1).",
        epilog="exit codes: 0 success; 1 the model has errors, decoding failed, or a run/case failed; "
        "2 a file cannot be read or written, or the arguments are wrong",
    )
    p.add_argument("--version", action="version", version=_version())
    sub: Any = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if only_command is not None:
        sub = _OnlyCommand(sub, only_command)
        if made is not None:
            made[only_command] = sub

    d = sub.add_parser("demo", help="validate and run the model bundled with onnxcore, and print the result")
    d.add_argument("--json", action="store_true", help="print the result as JSON")

    c = sub.add_parser(
        "check",
        help="validate models (Clause 10): every finding, with severity and clause",
        description="Validate each MODEL; the exit code is the worst of them (2 unreadable, 1 errors, 0 none).",
    )
    c.add_argument("model", nargs="+")
    c.add_argument("--json", action="store_true", help="print the report as JSON (several models: a list)")
    c.add_argument("--fast", action="store_true", help="skip the type and shape checks (full=False)")
    c.add_argument("--errors-only", action="store_true", help="omit warnings from the text report")
    _allow_outside(c)

    i = sub.add_parser("inspect", help="show a model field by field with offsets, without reading weights")
    i.add_argument("model")
    i.add_argument("--depth", type=_count, default=2, help="how deep to expand embedded messages (default 2)")
    i.add_argument("--max-items", type=_count, default=20, help="elements of a repeated field shown (default 20)")
    i.add_argument("--json", action="store_true", help="print the rows as JSON")

    r = sub.add_parser("run", help="run a model on inputs from .npy or .pb files")
    r.add_argument("model")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE", help="a graph input (repeatable)")
    r.add_argument(
        "--output-dir",
        help="write each tensor output to OUTPUT_DIR as .npy (strings as unicode), each sequence, map or "
        "optional as .json, and names.json mapping each output name to its file (names are %%-escaped)",
    )
    r.add_argument("--json", action="store_true", help="print shapes, types and previews as JSON")
    r.add_argument(
        "--profile",
        type=_count,
        nargs="?",
        const=5,
        default=0,
        metavar="RUNS",
        help="also time each step of the plan over RUNS runs (default 5): the costliest steps, the time per "
        'operator (with --json: {"outputs": ..., "profile": ...})',
    )
    r.add_argument("--no-check", action="store_true", help="do not validate the model first (Session(check=False))")
    _allow_outside(r)
    _untrusted(r)

    w = sub.add_parser(
        "warmup",
        help="pay a model's one-time costs ahead: a session and two runs on inputs of the declared shapes, timed "
        "(with the accelerator, fills numba's cache with the loops the model uses: docs/guide/startup.md)",
    )
    w.add_argument("model", nargs="+")
    w.add_argument("--json", action="store_true", help="print the times and the accelerator's state as JSON")

    v = sub.add_parser(
        "convert", help="re-save a model: another operator set version, external data, canonical form, inline"
    )
    v.add_argument("model")
    v.add_argument("out")
    v.add_argument(
        "--opset",
        type=_positive,
        metavar="N",
        help="rewrite the nodes for operator set version N of --domain (Clause 14); refused nodes are listed and "
        "nothing is written; external data stays in its files, unread (write OUT beside MODEL)",
    )
    v.add_argument("--domain", default="", help="the domain --opset applies to (default ai.onnx; or ai.onnx.ml)")
    v.add_argument(
        "--expand-functions",
        action="store_true",
        help="with --opset, replace a node that cannot be expressed at N by its operator's function body",
    )
    layout = v.add_mutually_exclusive_group()
    layout.add_argument("--external-data", action="store_true", help="move large tensors to a data file beside OUT")
    layout.add_argument("--inline", action="store_true", help="bring external contents into the model file")
    v.add_argument("--canonical", action="store_true", help="write the canonical form (docs/canonical.md)")
    v.add_argument(
        "--infer-shapes",
        action="store_true",
        help="state the inferred type and shape of each intermediate value (value_info) and the shape of each "
        "output declared without one (Clause 9)",
    )
    _allow_outside(v)

    o = sub.add_parser(
        "optimize",
        help="simplify a model (folding, no-ops, dead nodes, common subexpressions...) and prove it unchanged",
        description="Write OUT, the model simplified by the passes of onnxcore.optimize (standard operators only), "
        "after evaluating it against MODEL on generated inputs (dimension variables at several sizes, 1 included); "
        "a result that differs is not written, and the message names the pass that changed it. OUT is written "
        "atomically, with its external data beside it (OUT.data) when MODEL had external data or OUT reaches 2 GiB.",
    )
    o.add_argument("model")
    o.add_argument("out")
    o.add_argument("--level", choices=["none", "basic", "default", "all"], default="default", help="which passes run")
    o.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="fix input NAME to this shape (its dimension variables too, wherever the graph names them): shape "
        "arithmetic over it folds, and the proof runs at it (repeatable)",
    )
    o.add_argument(
        "--inputs",
        metavar="FILE.npz",
        help="also verify on these feeds (a numpy .npz file, one array per graph input, named as the input)",
    )
    o.add_argument("--disable", action="append", default=[], metavar="PASS", help="switch a pass off (repeatable)")
    o.add_argument("--no-verify", action="store_true", help="do not evaluate the two models (no proof)")
    o.add_argument("--opset", type=_positive, metavar="N", help="convert to operator set version N first")
    o.add_argument("--json", action="store_true", help="print the report as JSON")
    o.add_argument(
        "--html",
        metavar="FILE",
        help="also write the model report of OUT (onnxcore report) with an Optimization section to FILE",
    )
    io = o.add_mutually_exclusive_group()
    io.add_argument("--keep-inputs", dest="keep_inputs", action="store_true", default=True,
                    help="keep every graph input (the default)")  # fmt: skip
    io.add_argument("--remove-unused-inputs", dest="keep_inputs", action="store_false",
                    help="remove graph inputs nothing reads")  # fmt: skip
    o.add_argument(
        "--fold-growth",
        type=float,
        default=1.0,
        metavar="F",
        help="constant folding may make the file at most F times its size (default 1.0: never larger)",
    )
    o.add_argument(
        "--overridable-initializers",
        action="store_true",
        help="keep initializers listed among the graph inputs overridable before IR version 4 too (by default they "
        "are constants there, as onnxruntime treats them; from IR 4 they are always kept overridable)",
    )
    _allow_outside(o)

    k = sub.add_parser("conformance", help="run a test package laid out as the ONNX 1-3 vectors (Clause 4, 11)")
    k.add_argument("directory", help="the test package (cases with model.onnx and test_data_set_N/)")
    k.add_argument("--filter", metavar="PATTERN", help="only cases whose name matches this glob")
    _untrusted(k)
    k.add_argument(
        "--json",
        metavar="FILE",
        help="write one record per case to FILE ('-': standard output, the summary then goes to standard error)",
    )
    k.add_argument("--jobs", type=_positive, default=1, help="worker processes (default 1)")
    k.add_argument(
        "--generate", action="store_true", help="write the ONNX 1-3 node package into DIRECTORY (needs onnx)"
    )

    st = sub.add_parser("statement", help="generate the conformance statement of Annex A from a fresh test run")
    form = st.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print it as JSON")
    form.add_argument("--markdown", action="store_true", help="print it as Markdown (the default)")
    st.add_argument("--package", metavar="DIR", help="the test package to run (default: generate it, needs onnx)")
    st.add_argument("--jobs", type=_positive, default=1, help="worker processes for the run (default 1)")
    st.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")

    h = sub.add_parser("hash", help="SHA-256 of the canonical encoding with external contents included")
    h.add_argument("model")
    h.add_argument("--json", action="store_true")
    _allow_outside(h)

    pr = sub.add_parser("print", help="the model in the ONNX textual syntax (onnx.printer's), weights summarised")
    pr.add_argument("model")
    pr.add_argument(
        "--max-elements",
        type=_count,
        default=16,
        metavar="N",
        help="values shown of each tensor before '...' (default 16); a text with '...' does not parse back",
    )

    rp = sub.add_parser(
        "report",
        help="a self-contained HTML page of a model: summary, graph with inferred shapes, findings, profile",
        description="Write one HTML file (nothing fetched when opened) with the model's summary, its graph drawn "
        "in layers with each edge's inferred type and shape, the validator's findings linked to their nodes, and "
        "(with --profile or --input) the time of each plan step; or, with --format svg, the drawing alone.",
    )
    rp.add_argument("model")
    rp.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the file to write (default: the model's file name with .html or .svg, in the current directory; "
        "'-': standard output)",
    )
    rp.add_argument(
        "--input", action="append", default=[], metavar="NAME=FILE", help="a graph input to profile with (repeatable)"
    )
    rp.add_argument(
        "--profile",
        type=_positive,
        nargs="?",
        const=5,
        default=None,
        metavar="RUNS",
        help="time each plan step over RUNS runs (default 5), on the --input values or else on random inputs of "
        "the declared shapes",
    )
    rp.add_argument("--format", choices=["html", "svg"], default="html", help="the page (html) or the drawing alone")
    _allow_outside(rp)
    _untrusted(rp)

    b = sub.add_parser(
        "batch",
        help="score a Parquet table or .npy arrays on Dask into one output file (needs onnxcore[dask])",
        description="Run MODEL over every row of DATA on Dask workers, one session per worker. The output "
        "appears only when complete (part files in a hidden directory beside it, then a rename); interrupted "
        "(Ctrl-C, SIGTERM), nothing is left. Parquet columns feed the inputs of the same name (one column to "
        "an [N, 1] input) and the columns left over are stacked for the one input left ([N, k]).",
    )
    b.add_argument("model")
    b.add_argument("--input", required=True, metavar="DATA", help="a .parquet or .npy file, or a directory of them")
    b.add_argument(
        "--output",
        required=True,
        metavar="OUT",
        help="OUT.parquet (a dataset directory of part files: a column per output, name_0.. for [N, k], "
        "name_KEY for ZipMap's maps) or OUT.npy (one output)",
    )
    b.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a dask.distributed scheduler (tcp://host:8786), or threads/processes/synchronous for a local "
        "scheduler (default: a local cluster of --workers processes)",
    )
    b.add_argument(
        "--workers", type=_positive, metavar="N", help="worker processes of the local cluster (default: CPU count)"
    )
    b.add_argument("--batch-rows", type=_positive, default=65536, metavar="K", help="rows per task (default 65536)")
    b.add_argument("--output-name", action="append", default=[], metavar="NAME", help="an output to write")
    b.add_argument("--no-check", action="store_true", help="do not validate the model first")
    return p


def _version() -> str:
    return f"onnxcore {__version__}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``onnxcore`` command; returns the exit code.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        0 success; 1 the model has errors, decoding failed, a run or a case failed; 2 a file cannot be
        read or written, or the arguments are wrong. A failure is one line on standard error.
    """
    try:
        args = _command_parser(sys.argv[1:] if argv is None else list(argv)).parse_args(argv)
    except SystemExit as e:  # --help, --version, an argument error: argparse has printed its line
        return e.code if isinstance(e.code, int) else 2
    prog = f"onnxcore {args.command}" if args.command else "onnxcore"
    try:
        return _main(args)
    except BrokenPipeError:
        # Output piped into a reader that stopped early (e.g. ``| head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # before OnnxCoreError: a file error may be both, and is exit code 2
        where = f"{e.filename}: " if e.filename else ""
        print(f"{prog}: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except OnnxCoreError as e:
        print(f"{prog}: {_one_line(e)}", file=sys.stderr)
        return getattr(e, "code", 1)
    except Exception as e:  # a defect of ours: still one line, never a traceback for the user
        print(f"{prog}: internal error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _main(args: argparse.Namespace) -> int:
    if args.command is None:
        _parser().print_help()
        return 2
    # A command loads only the modules it runs, once it is chosen, so that ``--help``, ``--version`` and argument
    # errors answer at once and a cold ``check`` loads no evaluator.
    if args.command == "inspect":
        # inspect reads the wire format alone: none of the other commands' modules (lazy).
        from onnxcore.cli.inspect import run_inspect

        return run_inspect(args.model, depth=args.depth, max_items=args.max_items, as_json=args.json)
    if args.command == "check":
        # check loads the validator alone: not the runtime, conversion or the report (lazy).
        from onnxcore.cli.validate import cmd_check

        return cmd_check(args)
    if args.command == "optimize":
        # optimize loads the optimizer and the evaluator, not the conformance runner or the report (lazy).
        from onnxcore.cli.optimize import cmd_optimize

        return cmd_optimize(args)
    if args.command == "warmup":
        # warmup loads the evaluator and the report's input maker, not conversion or conformance (lazy).
        from onnxcore.cli.warmup import cmd_warmup

        return cmd_warmup(args)
    # The other commands load the validator, inference and the evaluator (lazy, as above).
    from onnxcore.cli import commands

    handler = getattr(commands, f"cmd_{args.command}")
    code: int = handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
