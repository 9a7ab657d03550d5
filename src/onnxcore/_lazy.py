"""Names a package resolves on first use (PEP 562): the one mechanism of ``onnxcore`` and ``onnxcore.runtime``.

A script that imports the package pays only for what it names: ``import onnxcore`` loads the codec alone, and a
``Session`` does not load the onnxruntime façade's modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(
    package: str, scope: dict[str, Any], where: Mapping[str, str], name: str, *, modules: Collection[str] = ()
) -> object:
    """The value of ``name`` for ``package``'s ``__getattr__``: imported from the module ``where`` names for it (or
    the subpackage ``package.name`` where ``name`` is one of ``modules``), then kept in ``scope`` (the package's
    globals), so later reads do not come here.

    Raises:
        AttributeError: ``package`` has no such name.
    """
    module = where.get(name)
    if module is None and name not in modules:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = (
        importlib.import_module(f"{package}.{name}")
        if module is None
        else getattr(importlib.import_module(module), name)
    )
    scope[name] = value
    return value
