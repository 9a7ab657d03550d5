"""onnxcore never imports the oracles at run time: not onnx, protobuf, onnxruntime or torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "onnxcore"
BANNED = ("onnx", "google.protobuf", "onnxruntime", "torch")


def _banned(name: str) -> bool:
    return any(name == b or name.startswith(b + ".") for b in BANNED)


def test_no_banned_import_statement() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                offenders += [f"{path}:{node.lineno} {a.name}" for a in node.names if _banned(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and _banned(node.module):
                offenders.append(f"{path}:{node.lineno} {node.module}")
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module",
                "__import__",
            ):
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _banned(arg.value):
                        offenders.append(f"{path}:{node.lineno} {arg.value}")
    assert offenders == []


def test_importing_everything_loads_no_oracle() -> None:
    code = (
        "import sys, importlib, pkgutil, onnxcore\n"
        "for m in pkgutil.walk_packages(onnxcore.__path__, 'onnxcore.'):\n"
        "    if m.name.endswith('__main__'): continue\n"
        # onnxcore.dask is the optional extra: without dask installed it cannot be imported at all; nor can the
        # accelerator's compiled kernels (onnxcore.kernels.accel._jit) without numba (the accel extra).
        "    try: importlib.import_module(m.name)\n"
        "    except ImportError:\n"
        "        if not m.name.startswith(('onnxcore.dask', 'onnxcore.kernels.accel._jit')): raise\n"
        "from onnxcore.kernels.registry import registered\n"
        "list(registered())\n"
        f"bad = [m for m in sys.modules if any(m == b or m.startswith(b + '.') for b in {BANNED!r})]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_ruff_bans_the_oracles_in_src() -> None:
    pyproject = (SRC.parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    for name in BANNED:
        assert f'"{name}".msg' in pyproject


# The optional accelerator's compiler: imported by onnxcore.kernels.accel alone (never by another module, so that
# every other module imports without it and `import onnxcore` never loads it).
OPTIONAL_COMPILER = "numba"
ACCEL_PACKAGE = SRC / "kernels" / "accel"


def test_numba_is_imported_only_by_the_accelerator() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        if ACCEL_PACKAGE in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path}:{node.lineno} {n}" for n in names if n.split(".")[0] == OPTIONAL_COMPILER]
    assert offenders == []
    # Inside the package, only the compiled kernels' module imports it at module level.
    top_level = [
        path.name
        for path in ACCEL_PACKAGE.glob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == OPTIONAL_COMPILER for a in node.names)
    ]
    assert top_level == ["_jit.py"]
