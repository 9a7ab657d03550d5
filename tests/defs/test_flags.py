"""The flag-attribute table (defs/flags.py) against the definitions of onnx.defs (the oracle)."""

from __future__ import annotations

import re

import pytest

from onnxcore.defs.flags import FLAG_ATTRIBUTES, is_flag

defs = pytest.importorskip("onnx.defs")

# A description names both values, or says true/false, or only "1" as the switch ("If set to 1 ...").
_NAMES_VALUES = re.compile(r"\b[01]\b|true|false|boolean|whether|if set|or not|enable", re.IGNORECASE)
# Stated as an imperative switch ("apply the linear transformation before ..."), default 0.
_IMPERATIVE = {"linear_before_reset"}


def _int_attributes() -> dict[tuple[str, str], list[tuple[str, object]]]:
    """(domain, attribute name) -> [(operator-version, attribute schema)] over every INT attribute."""
    out: dict[tuple[str, str], list[tuple[str, object]]] = {}
    for s in defs.get_all_schemas_with_history():
        domain = "" if s.domain == "ai.onnx" else s.domain
        for a in s.attributes.values():
            if a.type == defs.OpSchema.AttrType.INT:
                out.setdefault((domain, a.name), []).append((f"{s.name}-{s.since_version}", a))
    return out


def test_every_flag_is_an_int_attribute_of_its_domain_with_a_0_or_1_default() -> None:
    attrs = _int_attributes()
    for domain, names in FLAG_ATTRIBUTES.items():
        for name in sorted(names):
            uses = attrs.get((domain, name))
            assert uses, f"{name!r} is no INT attribute of domain {domain or 'ai.onnx'}"
            for op, a in uses:
                default = a.default_value  # type: ignore[attr-defined]
                assert default.name == "" or default.i in (0, 1), f"{op} {name} defaults to {default.i}"
                text = " ".join(a.description.split())  # type: ignore[attr-defined]
                reads_as_flag = name in _IMPERATIVE or _NAMES_VALUES.search(text)
                assert reads_as_flag, f"{op} {name}: {text!r} does not read as a 0/1 choice"


def test_is_test_and_other_int_attributes_are_not_flags() -> None:
    # is_test says "if nonzero": every value is defined. Counts and axes are not flags either.
    for name in ("is_test", "axis", "group", "hidden_size", "p", "size", "sample_size", "multi_class"):
        assert not is_flag("", name) and not is_flag("ai.onnx.ml", name)
    assert is_flag("", "keepdims") and not is_flag("ai.onnx.ml", "keepdims")
    assert is_flag("ai.onnx.ml", "zeros")
