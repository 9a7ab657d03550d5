"""Differential tests: every schema of onnx.defs against our data (ONNX 1-2 facts; Clauses 7.3, 14.3)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import onnxcore
from onnxcore import defs

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnx.defs")

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _gen_defs():
    spec = importlib.util.spec_from_file_location("gen_defs", TOOLS / "gen_defs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_defs", mod)
    spec.loader.exec_module(mod)
    return mod


OPTION = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}


def _onnx_schemas():
    return sorted(onnx.defs.get_all_schemas_with_history(), key=lambda s: (s.domain, s.name, s.since_version))


def test_committed_data_is_what_the_tool_generates():
    # The data cannot go stale: regenerate from the installed onnx and compare octet for octet.
    gen = _gen_defs()
    built = gen.build()
    assert built == gen.build(), "the generator is not deterministic"
    committed = (Path(defs.__file__).parent / "schemas.json.gz").read_bytes()
    assert committed == built, "run python tools/gen_defs.py"
    assert len(committed) < 3_000_000


def test_every_schema_is_present_once():
    ours = {(s.domain, s.name, s.since_version) for s in defs.all_schemas()}
    theirs = {(s.domain, s.name, s.since_version) for s in _onnx_schemas()}
    assert ours == theirs
    assert len(defs.all_schemas()) == len(theirs)
    # all four ONNX 1-2 domains carry definitions
    assert {d for d, _, _ in ours} >= {"", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"}


def _params_equal(ours, theirs, normalize):
    assert len(ours) == len(theirs)
    for p, q in zip(ours, theirs):
        assert p.name == q.name
        assert p.type_str == q.type_str
        assert p.types == frozenset(q.types)
        assert p.option == OPTION[q.option.name]
        assert p.is_homogeneous == q.is_homogeneous
        assert p.min_arity == q.min_arity


def test_every_schema_agrees_with_onnx():
    gen = _gen_defs()
    checked = 0
    for q in _onnx_schemas():
        s = defs.get_schema(q.name, q.since_version, q.domain)
        assert s is not None, (q.domain, q.name, q.since_version)
        where = f"{q.domain}:{q.name}-{q.since_version}"
        assert (s.name, s.domain, s.since_version) == (q.name, q.domain, q.since_version), where
        assert s.deprecated == q.deprecated, where
        _params_equal(s.inputs, q.inputs, gen.normalize_type_str)
        _params_equal(s.outputs, q.outputs, gen.normalize_type_str)
        assert (s.min_input, s.max_input, s.min_output, s.max_output) == (
            q.min_input,
            q.max_input,
            q.min_output,
            q.max_output,
        ), where
        # constraints: same variables, same types in the same order (canonical spelling)
        assert list(s.type_constraints) == [c.type_param_str for c in q.type_constraints], where
        for c in q.type_constraints:
            assert s.type_constraints[c.type_param_str] == tuple(
                gen.normalize_type_str(t) for t in c.allowed_type_strs
            ), where
        assert set(s.attributes) == set(q.attributes), where
        for name, qa in q.attributes.items():
            a = s.attributes[name]
            assert a.name == name
            assert a.type == int(qa.type), (where, name)
            assert a.required == qa.required, (where, name)
            raw = qa.default_value.SerializeToString()
            if raw:
                assert a.default is not None, (where, name)
                assert onnxcore.encode(a.default) == raw, (where, name)
                assert a.default.type == int(qa.type)
            else:
                assert a.default is None, (where, name)
        assert s.function_versions == tuple(sorted(q.function_opset_versions)), where
        assert s.context_dependent_function_versions == tuple(sorted(q.context_dependent_function_opset_versions))
        checked += 1
    assert checked == len(_onnx_schemas()) > 600


def test_canonical_type_strings_match_onnx_formal_types():
    # onnx spells constraints loosely ("map(string, float)"); its formal parameters carry the canonical
    # form, which is what ours use throughout.
    s = defs.get_schema("ZipMap", 1, "ai.onnx.ml")
    assert s is not None
    assert s.type_constraints["T"] == ("seq(map(string,tensor(float)))", "seq(map(int64,tensor(float)))")
    assert s.outputs[0].types == frozenset(s.type_constraints["T"])


def test_domains_and_versions_agree_with_onnx():
    vmap = onnx.defs.C.schema_version_map()
    assert set(defs.known_domains()) == set(vmap)
    for d, (lo, hi) in vmap.items():
        assert defs.domain_versions(d) == (lo, hi)
    assert defs.domain_versions("") == (1, onnx.defs.onnx_opset_version())
    assert defs.domain_versions("ai.onnx") == defs.domain_versions("")
    assert defs.domain_versions("com.example") is None
    assert defs.data_info()["onnx_version"] == onnx.__version__
