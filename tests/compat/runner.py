"""Run a corpus script as published and with its imports swapped to onnxcore, and compare what the two print.

The corpus (``tests/compat/scripts/``) holds public example scripts that nobody on this project wrote; each is
run twice, each time in a fresh interpreter and a fresh temporary directory (scripts write files):

* **published**: the file as kept (its header says what was edited: local data, smaller sizes);
* **swapped**: the same file with only its import statements rewritten by :func:`swap_imports`.

Both runs must exit 0, and their standard outputs must be equal after :func:`normalise` and
:func:`compare_outputs` (numbers within a float32 tolerance). Standard error is kept for the report, never
compared (warnings and logging differ by design). What each run gets:

* the working directory: a new temporary directory, removed afterwards;
* ``PYTHONPATH``: this directory (``compat_data.get_example``) and the onnxcore source tree in use;
* ``PYTHONHASHSEED=0``, and ``random``/``numpy.random`` seeded with 0 before the script starts, so that a
  script drawing data without a seed draws the same data in both runs;
* one thread for BLAS/OpenMP (the corpus runs several scripts at once);
* in the swapped run, ``import onnxruntime`` fails (``sys.modules['onnxruntime'] = None``): a swapped script
  that still reaches onnxruntime, directly or through a library, is caught instead of silently passing.

``python -m tests.compat.runner [name ...]`` (from the repository's root) prints one line per script (the
trial report); the tests are ``tests/compat/test_scripts.py``.
"""

from __future__ import annotations

import ast
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import onnxcore

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS_DIR = os.path.join(HERE, "scripts")
DATA_DIR = os.path.join(HERE, "data")

#: Relative and absolute tolerance of two printed numbers: ``|a - b| <= ATOL + RTOL * |b|``. Results are float32
#: (onnxruntime and onnxcore compute in float32 and may round a sum in another order); two integers (no point, no
#: exponent) must be equal.
RTOL = 1e-4
ATOL = 1e-6

#: Seconds one run may take before it counts as failed.
TIMEOUT = 240.0

# ---------------------------------------------------------------------------------------------------------------
# The swap: a rewrite of import statements only
# ---------------------------------------------------------------------------------------------------------------

#: The top-level packages the swap replaces, and their replacements.
SWAPPED_PACKAGES = {"onnxruntime": "onnxcore", "onnx": "onnxcore.onnx"}


def _swap_module(name: str) -> str | None:
    """The module a swapped script imports instead of ``name``, or None if ``name`` is not swapped."""
    top, dot, rest = name.partition(".")
    target = SWAPPED_PACKAGES.get(top)
    if target is None:
        return None
    return target + dot + rest


def _swap_statement(node: ast.Import | ast.ImportFrom) -> str | None:
    """The text of ``node`` with its swapped modules replaced, or None if it imports nothing swapped."""
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module is None:
            return None  # relative imports are the script's own
        target = _swap_module(node.module)
        if target is None:
            return None
        names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in node.names)
        return f"from {target} import {names}"
    parts: list[str] = []
    changed = False
    for alias in node.names:
        target = _swap_module(alias.name)
        if target is None:
            parts.append(alias.name if alias.asname is None else f"{alias.name} as {alias.asname}")
            continue
        changed = True
        if alias.asname is not None:
            parts.append(f"{target} as {alias.asname}")
        elif "." not in alias.name:
            parts.append(f"{target} as {alias.name}")
        else:
            # `import onnx.helper` binds `onnx` and loads the submodule: import the swapped submodule, then bind
            # the swapped top package to the script's name (the submodule is its attribute once imported).
            top = alias.name.partition(".")[0]
            parts.append(target)
            parts.append(f"{SWAPPED_PACKAGES[top]} as {top}")
    return "import " + ", ".join(parts) if changed else None


def swap_imports(source: str) -> str:
    """Rewrite a script's import statements from onnxruntime and onnx to onnxcore; nothing else changes.

    The rewrite, statement by statement (any nesting: module level, functions, ``try`` blocks):

    ============================================  =================================================================
    ``import onnxruntime``                         ``import onnxcore as onnxruntime``
    ``import onnxruntime as rt``                   ``import onnxcore as rt``
    ``import onnxruntime.backend as backend``      ``import onnxcore.backend as backend``
    ``import onnxruntime.backend``                 ``import onnxcore.backend, onnxcore as onnxruntime``
    ``from onnxruntime import X``                  ``from onnxcore import X``
    ``from onnxruntime.capi.S import X``           ``from onnxcore.capi.S import X``
    ``import onnx``                                ``import onnxcore.onnx as onnx``
    ``import onnx as o``                           ``import onnxcore.onnx as o``
    ``import onnx.helper``                         ``import onnxcore.onnx.helper, onnxcore.onnx as onnx``
    ``import onnx.numpy_helper as nh``             ``import onnxcore.onnx.numpy_helper as nh``
    ``from onnx import X``                         ``from onnxcore.onnx import X``
    ``from onnx.reference.op_run import X``        ``from onnxcore.onnx.reference.op_run import X``
    ============================================  =================================================================

    Only a module whose first component is exactly ``onnxruntime`` or ``onnx`` is swapped (``onnxscript``,
    ``onnx_ir``, ``onnxruntime_extensions``, ``skl2onnx``, ... stay). A multi-line statement becomes one line
    followed by as many empty lines, so every other line keeps its number (tracebacks point at the same lines).

    Args:
        source: The script's text.

    Returns:
        The swapped text.
    """
    tree = ast.parse(source)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            text = _swap_statement(node)
            if text is not None:
                assert node.end_lineno is not None and node.end_col_offset is not None
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))
    # ast's columns are UTF-8 byte offsets: edit the encoded lines, last statement first.
    lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]
    for lineno, col, end_lineno, end_col, text in sorted(edits, reverse=True):
        head = lines[lineno - 1][:col]
        tail = lines[end_lineno - 1][end_col:]
        extra = end_lineno - lineno
        lines[lineno - 1 : end_lineno] = [head + text.encode("utf-8") + b"\n" * extra + tail]
    return b"".join(lines).decode("utf-8")


# ---------------------------------------------------------------------------------------------------------------
# Normalisation and comparison of the printed output
# ---------------------------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_INT64_REPR = re.compile(r",\s*dtype=int64\b")
_UUID = re.compile(r"\"?\b[0-9a-f]{32}\b\"?")
# The modules of the classes a swapped script prints under the same names: onnx's messages and onnxruntime's
# exceptions, against onnxcore's.
_CLASS_MODULE = re.compile(
    r"\b(?:onnx\.onnx_ml_pb2|onnxcore\.proto\.messages|onnxruntime\.capi\.onnxruntime_pybind11_state"
    r"|onnxcore\.capi\.onnxruntime_pybind11_state)\.(?=[A-Z])"
)
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|(?<![A-Za-z_])[-+]?(?:nan|inf)\b")


@dataclass(frozen=True)
class Mask:
    """Output text that may differ between the two runs, and why.

    ``pattern`` is a regular expression (``re.MULTILINE``) replaced, in both normalised outputs, by
    ``<mask N>`` (N the mask's index in its list) before they are compared; a run of lines that became the same
    label becomes one line. A pattern may match part of a line (an exception's message after its class), whole
    lines (``^...$``) or several lines (``\\n`` in the pattern, or ``(?s)``); the two outputs must agree
    everywhere else.

    Attributes:
        pattern: The regular expression.
        reason: Why this text differs (docs/compatibility.md lists every one).
        volatile: True for what differs between any two runs (timings, versions, profiles, random names),
            False for a real difference between onnxruntime/onnx and onnxcore.
    """

    pattern: str
    reason: str
    volatile: bool = False


@dataclass
class Expected:
    """What the corpus knows about one script: masked lines, a known gap of the swapped run, its source.

    Attributes:
        masks: Lines allowed to differ, each with its reason.
        gap: If set, the swapped run is known not to agree yet (the reason); the test is an expected failure.
    """

    masks: Sequence[Mask] = field(default_factory=tuple)
    gap: str | None = None


def normalise(text: str, tmpdir: str) -> str:
    """The printed output with what varies between any two runs masked.

    ANSI colour codes are removed, the run's temporary directory becomes ``<TMP>``, the corpus's data directory
    ``<DATA>``, the Python installation's library directories ``<LIB>``, and memory addresses (``0x`` and four
    or more hexadecimal digits) ``0x?``. numpy's repr of an int64 array says ``dtype=int64`` when its scalar
    type is C ``long long`` (onnxruntime's int64 outputs) and says nothing when it is C ``long`` (numpy's
    default integer on Linux: onnxcore's): the same values, the same dtype ``==``, so ``, dtype=int64`` is
    removed. A 32-digit hexadecimal name (a uuid4, which skl2onnx gives graphs), quoted or not (the textual syntax
    quotes a name that starts with a digit), becomes ``<uuid>``. The module
    of a class the swapped run defines under onnx's or onnxruntime's name becomes ``<module>.``: onnx's message
    classes (``onnx.onnx_ml_pb2.TensorProto``, ``onnxcore.proto.messages.TensorProto``) and onnxruntime's
    exception classes (``onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument``, ``onnxcore.capi...``);
    the class names themselves are compared.

    Args:
        text: A run's standard output.
        tmpdir: The run's working directory.

    Returns:
        The normalised text.
    """
    text = _ANSI.sub("", text)
    for path, label in _path_labels(tmpdir):
        text = text.replace(path, label)
    text = _INT64_REPR.sub("", _ADDRESS.sub("0x?", text))
    return _CLASS_MODULE.sub("<module>.", _UUID.sub("<uuid>", text))


def _path_labels(tmpdir: str) -> list[tuple[str, str]]:
    pairs = [(tmpdir, "<TMP>"), (os.path.realpath(tmpdir), "<TMP>"), (DATA_DIR, "<DATA>")]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        pairs.append((os.path.join(prefix, "lib"), "<LIB>"))
    return sorted(set(pairs), key=lambda p: -len(p[0]))


def apply_masks(text: str, masks: Iterable[Mask]) -> str:
    """Replace what each mask matches by ``<mask N>`` (N its index); a run of lines that are the same label alone
    becomes one line."""
    for i, mask in enumerate(masks):
        text = re.sub(mask.pattern, f"<mask {i}>", text, flags=re.MULTILINE)
    out: list[str] = []
    for line in text.splitlines():
        if not (out and line == out[-1] and re.fullmatch(r"<mask \d+>", line)):
            out.append(line)
    return "\n".join(out)


def _tokens(text: str) -> list[str | float]:
    """The text as alternating fragments: text with all whitespace removed, and numbers as floats."""
    tokens: list[str | float] = []
    pos = 0
    for m in _NUMBER.finditer(text):
        fragment = "".join(text[pos : m.start()].split())
        if fragment:
            tokens.append(fragment)
        literal = m.group()
        tokens.append(int(literal) if re.fullmatch(r"[-+]?\d+", literal) else float(literal))
        pos = m.end()
    fragment = "".join(text[pos:].split())
    if fragment:
        tokens.append(fragment)
    return tokens


def _same_number(a: float, b: float) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(b)


def compare_outputs(published: str, swapped: str) -> str | None:
    """Compare two normalised, masked outputs; None if they agree, else a description of the first difference.

    Whitespace is ignored (numpy pads columns to the widest number, which differs with the digits printed);
    numbers are compared by value within ``RTOL``/``ATOL`` (integers exactly); all other text exactly.

    Args:
        published: The published run's output.
        swapped: The swapped run's output.

    Returns:
        None, or the first difference with a little context.
    """
    a, b = _tokens(published), _tokens(swapped)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        same = _same_number(x, y) if isinstance(x, int | float) and isinstance(y, int | float) else x == y
        if not same:
            context_a = " ".join(map(str, a[max(0, i - 6) : i + 4]))
            context_b = " ".join(map(str, b[max(0, i - 6) : i + 4]))
            return f"token {i}: published {x!r}, swapped {y!r}\n  published: {context_a}\n  swapped:   {context_b}"
    if len(a) != len(b):
        longer, which = (a, "published") if len(a) > len(b) else (b, "swapped")
        extra = " ".join(map(str, longer[min(len(a), len(b)) :][:12]))
        return f"the {which} output goes on: {extra}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------

_BOOT = """\
import random, runpy, sys
import numpy
random.seed(0)
numpy.random.seed(0)
if sys.argv[2] == "swapped":
    sys.modules["onnxruntime"] = None
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@dataclass
class Run:
    """One run of a script.

    Attributes:
        variant: ``"published"`` or ``"swapped"``.
        returncode: The exit status (-1 after a timeout).
        stdout: The normalised standard output.
        stderr: The standard error, as printed.
        seconds: Wall time.
    """

    variant: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def script_names() -> list[str]:
    """The corpus's scripts, by file name without ``.py``, sorted."""
    return sorted(f[:-3] for f in os.listdir(SCRIPTS_DIR) if f.endswith(".py") and not f.startswith("_"))


def _environment() -> dict[str, str]:
    src = os.path.dirname(os.path.dirname(os.path.abspath(onnxcore.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, src])
    env["PYTHONHASHSEED"] = "0"
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env.pop("PYTHONSTARTUP", None)
    return env


def run_script(name: str, variant: str, timeout: float = TIMEOUT) -> Run:
    """Run one script in a fresh interpreter and temporary directory.

    Args:
        name: The script's name (file name without ``.py``).
        variant: ``"published"`` (as kept) or ``"swapped"`` (imports rewritten by :func:`swap_imports`).
        timeout: Seconds before the run is stopped and counted as failed.

    Returns:
        The run, its standard output normalised.
    """
    with open(os.path.join(SCRIPTS_DIR, name + ".py"), encoding="utf-8") as f:
        source = f.read()
    if variant == "swapped":
        source = swap_imports(source)
    elif variant != "published":
        raise ValueError(f"unknown variant {variant!r}")
    tmpdir = tempfile.mkdtemp(prefix=f"compat-{name}-{variant}-")
    try:
        path = os.path.join(tmpdir, name + ".py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _BOOT, path, variant],
                cwd=tmpdir,
                env=_environment(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            code = -1
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"timed out after {timeout} s"
        seconds = time.perf_counter() - start
        return Run(variant, code, normalise(out, tmpdir), normalise(err, tmpdir), seconds)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def verdict(published: Run, swapped: Run, expected: Expected) -> str | None:
    """None if the two runs agree as the corpus requires, else why not (the first reason found)."""
    if published.returncode != 0:
        return f"the published run exits {published.returncode}:\n{_tail(published.stderr)}"
    if swapped.returncode != 0:
        return f"the swapped run exits {swapped.returncode}:\n{_tail(swapped.stderr)}"
    a = apply_masks(published.stdout, expected.masks)
    b = apply_masks(swapped.stdout, expected.masks)
    diff = compare_outputs(a, b)
    return None if diff is None else "the outputs differ: " + diff


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def main(argv: Sequence[str]) -> int:
    """Print one line per script: agree / differ / fail, with times; details of the failures after."""
    # A function-local import: expected.py imports this module.
    from tests.compat.expected import EXPECTED

    names = list(argv) or script_names()
    details: list[str] = []
    agreeing = 0
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        runs = {(n, v): pool.submit(run_script, n, v) for n in names for v in ("published", "swapped")}
        for name in names:
            exp = EXPECTED.get(name, Expected())
            pub, swp = runs[name, "published"].result(), runs[name, "swapped"].result()
            why = verdict(pub, swp, exp)
            agreeing += why is None
            state = "agree" if why is None else ("GAP  " if exp.gap else "FAIL ")
            print(f"{state} {name:48s} {pub.seconds:5.1f}s {swp.seconds:5.1f}s", flush=True)
            if why is not None:
                details.append(f"== {name}\n{why}")
    print(f"{agreeing}/{len(names)} agree")
    print("\n".join(details))
    return 0 if agreeing == len(names) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
