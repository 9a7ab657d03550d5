"""Operator families aligned between ``kernels/`` and ``infer/shape_ops/`` (issue 37): an operator's kernel and its
shape rule are in modules of the same family name, onnxruntime's under ``contrib`` on both sides; a new operator
family touches its kernel module and its shape rule's module."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from onnxcore import kernels
from onnxcore.defs.binding import canonical_domain
from onnxcore.infer import shape_ops
from onnxcore.infer.shape_core import SHAPE_RULES
from onnxcore.kernels import registry
from onnxcore.kernels.contrib import CONTRIB_FAMILIES

SHAPE_OPS = Path(shape_ops.__file__).parent
shape_ops.load_all()  # inference imports rule families as it meets their operators; these tests read the table whole


def _is_rule_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "shape_rule"


def _registering_modules() -> dict[tuple[str, str], str]:
    """(domain, op) -> the shape_ops module (relative, dotted: ``normalization``, ``contrib.gqa``) whose
    ``shape_rule(...)`` call registers its rule, read from the source (a rule function registered under several
    names, such as ``same_as_input``, is credited to the module registering each name)."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(SHAPE_OPS.rglob("*.py")):
        rel = path.relative_to(SHAPE_OPS).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(f"onnxcore.infer.shape_ops.{rel}".removesuffix(".__init__"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not _is_rule_call(node):
                continue
            assert isinstance(node, ast.Call)
            domain = ""
            for kw in node.keywords:
                if kw.arg == "domain":
                    value = kw.value
                    domain = value.value if isinstance(value, ast.Constant) else getattr(module, ast.unparse(value))
            for arg in node.args:
                assert isinstance(arg, ast.Constant), f"{rel}: shape_rule's operators are written as strings"
                found[(canonical_domain(domain), arg.value)] = rel
    return found


def _kernel_modules() -> dict[tuple[str, str], set[str]]:
    """(domain, op) -> the kernels modules (relative, dotted) registering a kernel of it; the plan's fused kernels
    (``kernels/fused``, private domain, no shape rules) aside."""
    kernels.load_all()
    out: dict[tuple[str, str], set[str]] = {}
    for k in registry.registered():
        rel = k.fn.__module__.removeprefix("onnxcore.kernels.")
        if not rel.startswith("fused."):
            out.setdefault((k.domain, k.op_type), set()).add(rel)
    return out


def test_the_source_scan_sees_every_registered_rule() -> None:
    assert set(_registering_modules()) == set(SHAPE_RULES)


def test_every_operator_s_kernel_and_shape_rule_share_a_family_name() -> None:
    rules = _registering_modules()
    kernel_modules = _kernel_modules()
    both = sorted(set(rules) & set(kernel_modules))
    assert len(both) > 200  # the check speaks of the operator set, not of a few
    wrong = [
        f"{d or 'ai.onnx'}::{op}: kernel in {sorted(kernel_modules[(d, op)])}, rule in shape_ops/{rules[(d, op)]}"
        for d, op in both
        if rules[(d, op)] not in kernel_modules[(d, op)]
    ]
    assert not wrong, "\n".join(wrong)


def test_every_family_module_is_a_kernel_family() -> None:
    """A shape_ops module registering rules for operators with kernels is named after a kernels module; the others
    are named for what they are (``windows``: the sliding-window arithmetic; ``symbolic``: value rules;
    ``control_flow`` is a family on both sides)."""
    families = {f"{name}" for name in kernels.FAMILIES} | {f"contrib.{name}" for name in CONTRIB_FAMILIES}
    modules = set(_registering_modules().values())
    assert modules <= families, sorted(modules - families)
