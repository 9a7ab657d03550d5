"""onnxruntime's definitions as data (``contrib.json.gz``, tools/gen_contrib_defs.py) against onnxruntime itself,
and how they bind beside ONNX 1-2's (whose claim they must not change)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import onnxcore
from onnxcore import defs

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnxruntime.capi import onnxruntime_pybind11_state as ort_c  # noqa: E402

TOOLS = Path(__file__).resolve().parents[2] / "tools"
OPTION = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}


def _tool():
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location("gen_contrib_defs", TOOLS / "gen_contrib_defs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ort_schemas():
    return list(ort_c.get_all_operator_schema())


def test_committed_data_is_what_the_tool_generates() -> None:
    gen = _tool()
    built = gen.build()
    assert built == gen.build(), "the generator is not deterministic"
    committed = (Path(defs.__file__).parent / "contrib.json.gz").read_bytes()
    assert committed == built, "run python tools/gen_contrib_defs.py"
    assert gen.main(["--check"]) == 0
    assert defs.contrib_info()["onnxruntime_version"] == ort.__version__


def test_every_com_microsoft_schema_is_present_and_equal() -> None:
    theirs = [s for s in _ort_schemas() if s.domain == "com.microsoft"]
    assert len(theirs) > 100
    ours = {(s.name, s.since_version) for s in defs.all_schemas(origin="onnxruntime") if s.domain == "com.microsoft"}
    assert ours == {(s.name, int(s.since_version)) for s in theirs}
    for s in theirs:
        mine = defs.get_schema(s.name, int(s.since_version), "com.microsoft")
        assert mine is not None and mine.origin == "onnxruntime" and mine.since_version == s.since_version
        assert [p.name for p in mine.inputs] == [p.name for p in s.inputs]
        assert [p.option for p in mine.inputs] == [OPTION[p.option.name] for p in s.inputs]
        assert [p.option for p in mine.outputs] == [OPTION[p.option.name] for p in s.outputs]
        assert [p.types for p in mine.inputs] == [frozenset(p.types) for p in s.inputs]
        assert set(mine.attributes) == set(s.attributes)
        for name, a in s.attributes.items():
            assert mine.attributes[name].type == int(a.type)
            assert mine.attributes[name].required == a.required
            d = mine.attributes[name].default
            assert (d is not None) == bool(a._default_value)
            if d is not None:
                assert onnxcore.encode(d) == onnx.AttributeProto.FromString(a._default_value).SerializeToString()
        assert (mine.min_input, mine.max_input, mine.min_output, mine.max_output) == (
            s.min_input, s.max_input, s.min_output, s.max_output
        )  # fmt: skip


def test_default_domain_extensions_are_what_onnx_lacks() -> None:
    onnx_keys = {(s.name, s.since_version) for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}
    theirs = {(s.name, int(s.since_version)) for s in _ort_schemas() if s.domain == ""} - onnx_keys
    ours = {(s.name, s.since_version) for s in defs.all_schemas(origin="onnxruntime") if s.domain == ""}
    assert ours == theirs
    assert ("SimplifiedLayerNormalization", 1) in ours and ("LayerNormalization", 1) in ours


def test_onnx_binding_is_unchanged_by_the_extensions() -> None:
    # ai.onnx is what ONNX 1-2 says: get_schema never returns onnxruntime's default-domain definitions.
    assert defs.get_schema("LayerNormalization", 16) is None
    assert defs.get_schema("SimplifiedLayerNormalization", 21) is None
    assert defs.schema_versions("LayerNormalization") == [17]
    assert all(s.origin == "onnx" for s in defs.all_schemas())
    assert "com.microsoft" not in defs.known_domains()
    assert defs.domain_versions("com.microsoft") is None
    # extension_schema binds onnxruntime's below ONNX's first version, and nothing in com.microsoft
    ln = defs.extension_schema("LayerNormalization", 13)
    assert ln is not None and (ln.since_version, ln.origin) == (1, "onnxruntime")
    assert defs.extension_schema("LayerNormalization", 18).since_version == 1  # the caller tries ONNX first
    assert defs.extension_schema("Gelu", 1, "com.microsoft") is None
    assert defs.extension_versions("SimplifiedLayerNormalization", "ai.onnx") == [1]


def test_com_microsoft_binds_like_a_domain() -> None:
    s = defs.get_schema("Tokenizer", 1, "com.microsoft")
    assert s is not None and s.origin == "onnxruntime" and repr(s) == "OpSchema(com.microsoft:Tokenizer-1, onnxruntime)"
    assert defs.get_schema("Tokenizer", 0, "com.microsoft") is None
    assert defs.get_schema("NoSuchOperator", 1, "com.microsoft") is None
    assert defs.schema_versions("Tokenizer", "com.microsoft") == [1]
    assert defs.contrib_domains() == ["com.microsoft"]


def test_contrib_domains_match_the_data() -> None:
    import gzip
    import json

    doc = json.loads(gzip.decompress((Path(defs.__file__).parent / "contrib.json.gz").read_bytes()))
    assert sorted(doc["domains"]) == defs.contrib_domains()
