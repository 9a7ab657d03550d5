"""The operator -> module index the registry imports kernel families by (issue 42, item 3).

A session imports the families of its model's operators only, as ``kernels/kernel_index.py`` names them; that file
is generated (``tools/gen_op_index.py``) and must name, for every operator, every module that registers one of
its kernels. A kernel added without regenerating the index fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from onnxcore import kernels
from onnxcore.infer import shape_core, shape_ops
from onnxcore.infer.rule_index import RULE_MODULES
from onnxcore.kernels import registry
from onnxcore.kernels.kernel_index import KERNEL_MODULES

ROOT = Path(__file__).resolve().parents[2]


def test_the_index_names_the_module_of_every_registered_kernel() -> None:
    kernels.load_all()
    # Built-in kernels only: other tests of this process may have registered their own.
    builtin = {k for k, d in registry._REGISTRY.items() if str(getattr(d.fn, "__module__", "")).startswith("onnxcore.")}
    assert builtin <= set(registry._ORIGIN), "a built-in kernel registered without its module"
    missing = sorted(
        f"{dom or 'ai.onnx'}::{op}-{v} from {module}"
        for (dom, op, v), module in registry._ORIGIN.items()
        if module not in KERNEL_MODULES.get((dom, op), ())
    )
    assert not missing, f"kernel_index.py is stale (run tools/gen_op_index.py): {missing[:10]}"
    registered_ops = {(dom, op) for dom, op, _v in registry._ORIGIN}
    assert set(KERNEL_MODULES) == registered_ops, "the index names operators no module registers"


def test_the_generated_file_is_what_the_tool_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_op_index.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_each_operator_gets_the_kernels_of_a_full_load_from_its_modules_alone() -> None:
    # In a fresh interpreter, operator by operator (in reverse order, so that a family is first imported for an
    # operator late in the index): the kernels the lazy path finds are those a full load registers.
    code = (
        "from onnxcore.kernels import registry, load_all\n"
        "from onnxcore.kernels.kernel_index import KERNEL_MODULES\n"
        "got = {}\n"
        "for dom, op in reversed(list(KERNEL_MODULES)):\n"
        "    for v in registry.kernel_versions(dom, op):\n"
        "        k = registry.lookup(dom, op, v)\n"
        "        got[(dom, op, v)] = (k.fn.__module__, k.fn.__qualname__)\n"
        "assert not registry._loaded\n"
        "load_all()\n"
        "full = {key: (k.fn.__module__, k.fn.__qualname__) for key, k in registry._REGISTRY.items()}\n"
        "print(len(got), len(full), sorted(set(full.items()) ^ set(got.items()))[:5])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    n_lazy, n_full, diff = done.stdout.split(" ", 2)
    assert n_lazy == n_full and diff.strip() == "[]", done.stdout


def test_a_lookup_imports_only_the_families_of_its_operator() -> None:
    code = (
        "import sys\n"
        "from onnxcore.kernels import registry\n"
        "k = registry.lookup('', 'Relu', 14)\n"
        "fams = sorted(m for m in sys.modules if m.startswith('onnxcore.kernels.') and m.count('.') == 2"
        " and not m.rsplit('.', 1)[1].startswith('_'))\n"
        "print(k.fn.__module__, 'onnxcore.kernels.conv' in fams, 'onnxcore.kernels.ml_tree' in fams,"
        " 'onnxcore.kernels.text' in fams, registry._loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["onnxcore.kernels.elementwise", "False", "False", "False", "False"]


def test_the_rule_index_names_the_module_of_every_shape_and_value_rule() -> None:
    shape_ops.load_all()
    # The package's rules only: other tests of this process may have registered their own.
    keys = {
        (kind, d, o)
        for kind, table in (("shape", shape_core.SHAPE_RULES), ("value", shape_core.VALUE_RULES))
        for (d, o), fn in table.items()
        if str(getattr(fn, "__module__", "")).startswith("onnxcore.")
    }
    assert keys <= set(shape_core._ORIGIN), "a rule of the package registered without its module"
    missing = sorted(
        f"{kind} rule {dom or 'ai.onnx'}::{op} from {module}"
        for (kind, dom, op), module in shape_core._ORIGIN.items()
        if module not in RULE_MODULES.get((dom, op), ())
    )
    assert not missing, f"rule_index.py is stale (run tools/gen_op_index.py): {missing[:10]}"
    assert set(RULE_MODULES) == {(d, o) for _k, d, o in shape_core._ORIGIN}


def test_each_operator_gets_the_rules_of_a_full_load_from_its_modules_alone() -> None:
    code = (
        "from onnxcore.infer import shape_core, shape_ops\n"
        "from onnxcore.infer.rule_index import RULE_MODULES\n"
        "got = {}\n"
        "for dom, op in reversed(list(RULE_MODULES)):\n"
        "    shape_core.load_rules(dom, op)\n"
        "    for kind, table in (('shape', shape_core.SHAPE_RULES), ('value', shape_core.VALUE_RULES)):\n"
        "        if (dom, op) in table:\n"
        "            got[(kind, dom, op)] = table[(dom, op)].__qualname__\n"
        "shape_ops.load_all()\n"
        "full = {(k, d, o): t[(d, o)].__qualname__ for k, t in (('shape', shape_core.SHAPE_RULES),"
        " ('value', shape_core.VALUE_RULES)) for d, o in t}\n"
        "print(len(got), len(full), sorted(set(full.items()) ^ set(got.items()))[:5])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    n_lazy, n_full, diff = done.stdout.split(" ", 2)
    assert n_lazy == n_full and diff.strip() == "[]", done.stdout
