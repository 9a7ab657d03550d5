"""The compatibility corpus: public example scripts run as published and with their imports swapped to onnxcore.

Each script of ``tests/compat/scripts/`` is run twice in fresh interpreters and temporary directories
(``runner.run_script``), and the two runs must both exit 0 and print the same (``runner.verdict``), except for
the lines ``expected.py`` masks, each with its reason (docs/compatibility.md lists them). The runs of all
scripts are started together on a small thread pool the first time a test asks for one, so the corpus takes
about a minute and a half of wall time on two cores; every run has its own directory, so the corpus may run
beside anything else.

The runner's own rules (the swap, the normalisation, the comparison) are tested first, on fixed text.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.compat.expected import EXPECTED
from tests.compat.runner import (
    SWAPPED_PACKAGES,
    Expected,
    Mask,
    Run,
    apply_masks,
    compare_outputs,
    normalise,
    run_script,
    script_names,
    swap_imports,
    verdict,
)

NAMES = script_names()

# ---------------------------------------------------------------------------------------------------------------
# The runner's rules
# ---------------------------------------------------------------------------------------------------------------

SWAP_CASES = [
    ("import onnxruntime\n", "import onnxcore as onnxruntime\n"),
    ("import onnxruntime as rt\n", "import onnxcore as rt\n"),
    ("import onnxruntime.backend as backend\n", "import onnxcore.backend as backend\n"),
    ("import onnxruntime.backend\n", "import onnxcore.backend, onnxcore as onnxruntime\n"),
    (
        "from onnxruntime import InferenceSession, get_device as gd\n",
        "from onnxcore import InferenceSession, get_device as gd\n",
    ),
    (
        "from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument\n",
        "from onnxcore.capi.onnxruntime_pybind11_state import InvalidArgument\n",
    ),
    ("import onnx\n", "import onnxcore.onnx as onnx\n"),
    ("import onnx as o\n", "import onnxcore.onnx as o\n"),
    ("import onnx.helper\n", "import onnxcore.onnx.helper, onnxcore.onnx as onnx\n"),
    ("import numpy, onnx.numpy_helper as nh\n", "import numpy, onnxcore.onnx.numpy_helper as nh\n"),
    ("from onnx import TensorProto\n", "from onnxcore.onnx import TensorProto\n"),
    ("from onnx.reference.op_run import OpRun\n", "from onnxcore.onnx.reference.op_run import OpRun\n"),
    # Not swapped: other packages whose names start alike, relative imports, names that are not imports.
    ("import onnxscript, onnx_ir, onnxruntime_extensions\n", "import onnxscript, onnx_ir, onnxruntime_extensions\n"),
    ("from skl2onnx import to_onnx\n", "from skl2onnx import to_onnx\n"),
    ("from .onnx import x\n", "from .onnx import x\n"),
    ("x = 'import onnx'  # import onnxruntime\n", "x = 'import onnx'  # import onnxruntime\n"),
]


@pytest.mark.parametrize(("source", "swapped"), SWAP_CASES)
def test_swap_rewrites_import_statements_only(source: str, swapped: str) -> None:
    assert swap_imports(source) == swapped


def test_swap_keeps_line_numbers_and_the_rest_of_the_line() -> None:
    source = (
        "try:\n"
        "    from onnx.helper import (  # a comment\n"
        "        make_node,\n"
        "        make_graph,\n"
        "    )  # noqa: E402\n"
        "except ImportError: pass\n"
        "def f():\n"
        "    import onnxruntime; return onnxruntime  # é\n"
    )
    out = swap_imports(source)
    assert len(out.splitlines()) == len(source.splitlines())
    assert out.splitlines()[1] == "    from onnxcore.onnx.helper import make_node, make_graph"
    assert out.splitlines()[4] == "  # noqa: E402"
    assert out.splitlines()[7] == "    import onnxcore as onnxruntime; return onnxruntime  # é"
    ast.parse(out)


def test_every_corpus_script_swaps_to_valid_python_importing_neither_package() -> None:
    for name in NAMES:
        with open(os.path.join(os.path.dirname(__file__), "scripts", name + ".py"), encoding="utf-8") as f:
            tree = ast.parse(swap_imports(f.read()))
        for node in ast.walk(tree):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for module in modules:
                assert module.partition(".")[0] not in SWAPPED_PACKAGES, (name, module)


def test_normalise_masks_addresses_paths_colours_uuids_and_class_modules() -> None:
    text = "\x1b[0;93mwarn\x1b[m <obj at 0x7f3a2b1c> /tmp/abc/model.onnx array([2, 1], dtype=int64)\n"
    assert normalise(text, "/tmp/abc") == "warn <obj at 0x?> <TMP>/model.onnx array([2, 1])\n"
    assert normalise('"5a8871a6f1784a1ca970c84003a2bb52" (float x)', "/t") == "<uuid> (float x)"
    assert normalise("c0b74fd689a34f2e9b1d6a5e4c3b2a10 (float x)", "/t") == "<uuid> (float x)"
    published = "<class 'onnx.onnx_ml_pb2.TensorProto'> <class 'onnxruntime.capi.onnxruntime_pybind11_state.Fail'>"
    swapped = "<class 'onnxcore.proto.messages.TensorProto'> <class 'onnxcore.capi.onnxruntime_pybind11_state.Fail'>"
    assert (
        normalise(published, "/t")
        == normalise(swapped, "/t")
        == ("<class '<module>.TensorProto'> <class '<module>.Fail'>")
    )
    assert normalise("<class 'onnxcore.errors.InputError'>", "/t") == "<class 'onnxcore.errors.InputError'>"


def test_compare_numbers_within_float32_tolerance_and_ignores_layout() -> None:
    assert compare_outputs("[[ 1.  2.5]\n [ 3.  4. ]]", "[[1.0000001 2.5000002] [3. 4.]]") is None
    assert compare_outputs("p=0.12345678", "p=0.1234571") is None
    assert compare_outputs("p=0.1234", "p=0.1236") is not None
    assert compare_outputs("n=100000", "n=100001") is not None  # integers exactly
    assert compare_outputs("nan inf -inf", "nan inf -inf") is None
    assert compare_outputs("a 1", "b 1") is not None
    assert compare_outputs("a 1", "a 1 2") is not None
    assert compare_outputs("float32 x1", "float32 x1") is None


def test_masks_replace_what_they_match() -> None:
    masks = [
        Mask(r"^Average .*$", "timing", volatile=True),
        Mask(r"(?<=: )(\[ONNXRuntimeError\][^\n]*(\n Please fix[^\n]*)*|input '.*)$", "message"),
        Mask(r"(?s)^profile\.json$.*", "profile", volatile=True),
    ]
    a = "x\nAverage 1\nAverage 2\nE: [ONNXRuntimeError] : 2 : bad\n Please fix it.\ny\nprofile.json\n[1]\n"
    b = "x\nAverage 9\nE: input 'x': rank 1\ny\nprofile.json\n[2, 3]\n"
    assert apply_masks(a, masks) == apply_masks(b, masks) == "x\n<mask 0>\nE: <mask 1>\ny\n<mask 2>"


def test_verdict_requires_both_runs_to_exit_zero() -> None:
    ok = Run("published", 0, "1\n", "", 0.0)
    failed = Run("swapped", 1, "", "Traceback\nValueError: x\n", 0.0)
    assert verdict(ok, ok, Expected()) is None
    why = verdict(ok, failed, Expected())
    assert why is not None and "ValueError: x" in why


# ---------------------------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------------------------

_POOL: ThreadPoolExecutor | None = None
_RUNS: dict[tuple[str, str], Future[Run]] = {}


def _runs(name: str) -> tuple[Run, Run]:
    """Both runs of a script; the first call starts every script's runs, in corpus order, on the pool."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
        for n in NAMES:
            if _missing_package(n) is not None:
                continue
            for variant in ("published", "swapped"):
                _RUNS[n, variant] = _POOL.submit(run_script, n, variant)
    return _RUNS[name, "published"].result(), _RUNS[name, "swapped"].result()


def _missing_facade(name: str) -> str | None:
    """The façade module of issue 38 this checkout lacks, if any: a swapped script expects onnxruntime's façade
    (onnxcore.capi, onnxcore.backend, the feeds onnxruntime takes) and onnx's (onnxcore.onnx), and before they
    are merged its run says nothing about the corpus."""
    for module in ("onnxcore.capi", "onnxcore.backend", "onnxcore.onnx"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


def _missing_package(name: str) -> str | None:
    """A package the published script imports that is not installed (pandas, onnxscript, lightgbm, ... come
    with the test environment's extras), if any; an import inside ``try`` is the script's own optional one."""
    with open(os.path.join(os.path.dirname(__file__), "scripts", name + ".py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for b in t.body for n in ast.walk(b)}
    tops = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            tops.update(a.name.partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.partition(".")[0])
    tops.discard("compat_data")
    return next((t for t in sorted(tops) if importlib.util.find_spec(t) is None), None)


def test_the_corpus_is_large_and_every_script_names_its_source() -> None:
    assert len(NAMES) >= 30
    for name in NAMES:
        with open(os.path.join(os.path.dirname(__file__), "scripts", name + ".py"), encoding="utf-8") as f:
            head = f.read(600)
        assert head.startswith("# Source: "), name
        assert "# Licence: " in head and "# Edits: " in head, name
    assert set(EXPECTED) <= set(NAMES), set(EXPECTED) - set(NAMES)


def test_the_page_lists_every_script_and_its_gap() -> None:
    page = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs", "compatibility.md")
    with open(page, encoding="utf-8") as f:
        rows = {m.group(1): line for line in f if (m := re.match(r"\| `((?:ort|skl|onnx|onnxscript)_\w+)` \|", line))}
    assert sorted(rows) == NAMES
    for name in NAMES:
        expected = EXPECTED.get(name, Expected())
        assert ("gap:" in rows[name]) == (expected.gap is not None), name
        assert (rows[name].rstrip().endswith("| |")) == (expected.gap is None and not expected.masks), name


@pytest.mark.parametrize("name", NAMES)
def test_script_runs_the_same_swapped(name: str) -> None:
    missing = _missing_facade(name)
    if missing is not None:
        pytest.skip(f"{missing} is not in this checkout: the swapped scripts need the façades of issue 38")
    package = _missing_package(name)
    if package is not None:
        pytest.skip(f"the script needs {package}, which is not installed")
    expected = EXPECTED.get(name, Expected())
    published, swapped = _runs(name)
    why = verdict(published, swapped, expected)
    if expected.gap is not None:
        assert why is not None, f"the known gap is closed ({expected.gap}): remove it from tests/compat/expected.py"
        pytest.xfail(expected.gap)
    assert why is None, why
