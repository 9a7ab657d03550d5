"""Conversion adapters are registered only at real since_versions, as kernels are (issue 37): an adapter at a version
where the operator's definition does not change would never be asked (Clause 14.3)."""

from __future__ import annotations

import pytest

from onnxcore.convert import engine  # noqa: F401 -- fills the tables
from onnxcore.convert.adapters import ADAPTERS, adapter
from onnxcore.defs.binding import schema_versions
from onnxcore.errors import AdapterRegistrationError, OnnxCoreError


def _noop(step: object) -> None:
    return None


def test_a_version_without_a_definition_is_refused_at_registration() -> None:
    before = dict(ADAPTERS)
    with pytest.raises(AdapterRegistrationError, match=r"Relu-15 \(up\): 15 is no since_version .*\[1, 6, 13, 14\]"):
        adapter("Relu", 15, "up")
    # Several operators sharing one adapter: one without that definition refuses them all, before any is entered.
    assert 14 in schema_versions("Relu") and 14 not in schema_versions("Abs")
    with pytest.raises(AdapterRegistrationError, match="Abs-14"):
        adapter(("Relu", "Abs"), 14, "down")(_noop)
    with pytest.raises(AdapterRegistrationError, match="Frobnicate-1"):
        adapter("Frobnicate", 1, "up")
    assert ADAPTERS == before


def test_a_real_since_version_registers_once() -> None:
    key = ("", "Relu", 6, "down")
    assert key not in ADAPTERS
    try:
        adapter("Relu", 6, "down")(_noop)
        assert ADAPTERS[key] is _noop
        with pytest.raises(AdapterRegistrationError, match="registered twice") as ei:
            adapter("Relu", 6, "down")(_noop)
        assert isinstance(ei.value, OnnxCoreError) and isinstance(ei.value, ValueError)
    finally:
        ADAPTERS.pop(key, None)
