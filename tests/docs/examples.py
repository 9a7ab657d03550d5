"""The examples of the README and the documentation pages, found and run.

A page's fenced blocks are read in order:

- ```` ```python ```` blocks run one after the other in one namespace per page (a later block may use what an
  earlier one made, as a reader following the page would), in a directory holding the models the examples name;
- ```` ```sh ````, ```` ```bash ```` and ```` ```console ```` blocks are command lines: each line (``\\`` continues
  it, ``#`` starts a comment, a leading ``$ `` is dropped) must be an ``onnxcore`` command, which is run and whose
  exit code is checked (0 unless the block says otherwise);
- any other fence (``text``, ``json``, none) is output or a drawing, and is not run.

An HTML comment on the line just before a fence says how to treat that block:
``<!-- docs-test: skip REASON -->`` (not run, the reason is required), ``<!-- docs-test: requires MODULE -->``
(run only where MODULE imports, an optional extra), ``<!-- docs-test: exit N -->`` (every command of the block
exits with N).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import traceback
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)[^\n]*$")
_MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<verb>skip|requires|exit)\b\s*(?P<arg>.*?)\s*-->")
PYTHON = {"python", "py", "python3"}
SHELL = {"sh", "bash", "console", "shell"}


class ExampleError(AssertionError):
    """An example that fails: the page and line of its block, and what went wrong."""


@dataclass
class Block:
    """One fenced block of a page."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: tuple[str, str] | None = None  # (verb, argument) of the docs-test comment before it

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


@dataclass
class Outcome:
    """What running a page did: the blocks run and those left out, with why."""

    ran: list[Block] = field(default_factory=list)
    skipped: list[tuple[Block, str]] = field(default_factory=list)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the docs-test marker just before it if any."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m["indent"], m["fence"], m["lang"].lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1  # the closing fence
        marker = None
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        if prev >= 0 and (mm := _MARKER.search(lines[prev])):
            marker = (mm["verb"], mm["arg"])
        out.append(Block(path, start + 1, lang, "\n".join(body) + "\n", marker))
    return out


def commands(block: Block) -> list[list[str]]:
    """The command lines of a shell block, each split as the shell would (comments and ``$ `` dropped)."""
    joined = block.code.replace("\\\n", " ")
    out = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        out.append(shlex.split(line, comments=True))
    return out


def _run_python(block: Block, namespace: dict[str, object]) -> None:
    try:
        code = compile(block.code, f"{block.path.name} (block at line {block.line})", "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)
    except Exception as e:
        tb = traceback.format_exc(limit=-3)
        raise ExampleError(f"{block.where}: the Python example fails: {type(e).__name__}: {e}\n{tb}") from e


def _run_shell(block: Block, expected: int) -> None:
    # The command runs in this process (its parser and exit codes are what `onnxcore` runs), output captured.
    from onnxcore.cli import main  # the package under test; imported here so that collecting pages needs nothing

    for argv in commands(block):
        if not argv or argv[0] != "onnxcore":
            raise ExampleError(
                f"{block.where}: {' '.join(argv)!r} is not an onnxcore command: run it, or mark the block "
                "<!-- docs-test: skip REASON -->"
            )
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv[1:])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        if code != expected:
            raise ExampleError(
                f"{block.where}: `{shlex.join(argv)}` exited with {code}, expected {expected}\n"
                f"stdout: {out.getvalue()[-2000:]}\nstderr: {err.getvalue()[-2000:]}"
            )


def _importable(module: str) -> bool:
    """Whether ``module`` imports (dask's core can be installed without what ``dask.dataframe`` needs)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def run_page(path: Path) -> Outcome:
    """Run every example of a page in the current directory; raise ExampleError at the first that fails."""
    outcome = Outcome()
    namespace: dict[str, object] = {"__name__": "__docs_example__"}
    for block in blocks(path):
        if block.lang not in PYTHON | SHELL:
            continue
        verb, arg = block.marker or ("", "")
        if verb == "skip":
            if not arg:
                raise ExampleError(f"{block.where}: a skipped example must say why (docs-test: skip REASON)")
            outcome.skipped.append((block, arg))
            continue
        if verb == "requires" and not _importable(arg):
            outcome.skipped.append((block, f"{arg} is not installed"))
            continue
        if block.lang in PYTHON:
            _run_python(block, namespace)
        else:
            _run_shell(block, int(arg) if verb == "exit" else 0)
        outcome.ran.append(block)
    return outcome
