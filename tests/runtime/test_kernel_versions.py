"""Every registered kernel names a real operator definition (Clause 14.3: (domain, name, since_version))."""

from __future__ import annotations

import inspect

import pytest

from onnxcore.defs import (
    contrib_domains,
    extension_schema,
    extension_versions,
    get_schema,
    known_domains,
    schema_versions,
)
from onnxcore.kernels.registry import KernelDef, registered


def _ours() -> list[KernelDef]:
    # Kernels that tests register under their own custom domains are not ONNX 1-2 definitions; onnxruntime's
    # com.microsoft and its extensions of the ONNX domains are definitions (tools/gen_contrib_defs.py).
    domains = set(known_domains()) | set(contrib_domains())
    return [k for k in registered() if k.domain in domains]


def test_every_kernel_is_a_real_since_version() -> None:
    bad = []
    for k in _ours():
        if k.since_version not in schema_versions(k.op_type, k.domain) + extension_versions(k.op_type, k.domain):
            bad.append(repr(k))
    assert bad == []


def test_kernel_signatures_read_like_the_schema() -> None:
    """Attributes are keyword-only parameters named as the schema's attributes (or taken by **kwargs)."""
    bad = []
    for k in _ours():
        schema = get_schema(k.op_type, k.since_version, k.domain)
        if schema is None or schema.since_version != k.since_version:
            schema = extension_schema(k.op_type, k.since_version, k.domain)
        assert schema is not None
        params = inspect.signature(k.fn).parameters.values()
        kwonly = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
        has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        unknown = kwonly - set(schema.attributes)
        missing = set() if has_var_kw else set(schema.attributes) - kwonly
        if unknown or missing:
            bad.append(f"{k!r}: unknown {sorted(unknown)} missing {sorted(missing)}")
    if bad:
        pytest.fail("\n".join(bad))
