"""``onnxcore.kernels.load_all``: every family is imported; a missing one is a defect that fails loudly."""

from __future__ import annotations

import pytest

from onnxcore import kernels
from onnxcore.kernels import registry


def test_every_family_registers_kernels() -> None:
    kernels.load_all()
    modules = {k.fn.__module__ for k in registry.registered()}
    assert {f"onnxcore.kernels.{name}" for name in kernels.FAMILIES} <= modules


def test_a_missing_family_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "FAMILIES", (*kernels.FAMILIES, "no_such_family"))
    with pytest.raises(ModuleNotFoundError, match="no_such_family"):
        kernels.load_all()
