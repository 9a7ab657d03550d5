"""Model-level rules: Table 2, operator set imports (Clause 5.3), metadata (5.5), Table 12 features."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.ir import FEATURE_IR_VERSION, element_ir_version
from onnxcore.proto.messages import (
    FunctionProto,
    GraphProto,
    NodeDeviceConfigurationProto,
    NodeProto,
    StringStringEntryProto,
    TensorProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.proto.messages import TensorProto as TP
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context

__all__ = ["KNOWN_IR_VERSION"]

Found = Iterator[tuple[str, str]]

KNOWN_IR_VERSION = 14  # Clause 14.1.2: the IR version this edition specifies


@rule("E-MODEL-IR-VERSION", "5.3.1", "ir_version absent or not a positive integer (Table 2: mandatory)")
def model_ir_version(ctx: Context) -> Found:
    m = ctx.model
    if not m.has("ir_version"):
        yield "ir_version", "the model has no ir_version (Table 2 makes it mandatory; Annex B says optional)"
    elif m.ir_version < 1:
        yield "ir_version", f"ir_version {m.ir_version} is not a positive integer (Clause 14.2)"


@rule("W-MODEL-IR-VERSION-NEWER", "14.2", "ir_version newer than the one this edition specifies")
def model_ir_version_newer(ctx: Context) -> Found:
    if ctx.ir_version > KNOWN_IR_VERSION:
        yield (
            "ir_version",
            f"ir_version {ctx.ir_version} is newer than IR version {KNOWN_IR_VERSION} this edition specifies; "
            "its additions are not checked",
        )


@rule("E-MODEL-GRAPH", "5.3.1", "the model has no top-level graph (Table 2: mandatory)")
def model_graph(ctx: Context) -> Found:
    if ctx.model.graph is None:
        yield "graph", "the model has no graph (Table 2 makes it mandatory; Annex B says optional)"


@rule("E-OPSET-MISSING", "5.3.1", "the model imports no operator set at all (Table 2: mandatory)")
def opset_missing(ctx: Context) -> Found:
    # IR versions 1 and 2 predate opset_import; such models implicitly used operator set 1.
    if not ctx.model.opset_import and (ctx.ir_version >= 3 or ctx.ir_version <= 0):
        yield "opset_import", "the model declares no operator set import (Table 2 makes them mandatory)"


@rule("E-OPSET-DUPLICATE", "5.3.2", "a domain imported twice with different versions (which one binds is ambiguous)")
def opset_duplicate(ctx: Context) -> Found:
    for prefix, imports in _all_imports(ctx):
        for i, j, o in _repeated_imports(imports):
            if o.version != imports[j].version:
                shown = o.domain or '""'
                yield (
                    f"{prefix}[{i}]",
                    f"domain {shown} version {o.version} is already imported at version {imports[j].version} by "
                    f"opset_import[{j}]",
                )


# skl2onnx writes the default domain twice at one version, and every runtime accepts it: a redundancy, not an
# ambiguity, so a warning (a model every producer writes and every runtime accepts is not an error).
@rule("W-OPSET-REPEATED", "5.3.2", "a domain imported twice at the same version (redundant)")
def opset_repeated(ctx: Context) -> Found:
    for prefix, imports in _all_imports(ctx):
        for i, j, o in _repeated_imports(imports):
            if o.version == imports[j].version:
                shown = o.domain or '""'
                yield f"{prefix}[{i}]", f"domain {shown} is already imported at the same version by opset_import[{j}]"


def _repeated_imports(imports: list) -> Iterator[tuple[int, int, Any]]:
    """(index, index of the first import of the same domain, import) for each repeat."""
    seen: dict[str, int] = {}
    for i, o in enumerate(imports):
        d = canonical_domain(o.domain)
        if d in seen:
            yield i, seen[d], o
        else:
            seen[d] = i


@rule("E-OPSET-VERSION", "5.3.2", "an operator set version that is not a positive integer")
def opset_version(ctx: Context) -> Found:
    for prefix, imports in _all_imports(ctx):
        for i, o in enumerate(imports):
            if o.has("version") and o.version < 1:
                yield f"{prefix}[{i}]", f"operator set version {o.version} of domain {o.domain!r} is not positive"


def _all_imports(ctx: Context) -> Iterator[tuple[str, list]]:
    yield "opset_import", ctx.model.opset_import
    for i, f in enumerate(ctx.model.functions):
        yield f'functions[{i}] "{f.domain}:{f.name}"/opset_import', f.opset_import


@rule("W-OPSET-NEWER", "14.4", "an imported operator set version newer than ONNX 1-2 publishes for a known domain")
def opset_newer(ctx: Context) -> Found:
    for i, o in enumerate(ctx.model.opset_import):
        d = canonical_domain(o.domain)
        if not ctx.defs.is_known_domain(d):
            continue
        rng = ctx.defs.domain_range(d)
        if rng is not None and o.version > rng[1]:
            yield (
                f"opset_import[{i}]",
                f"domain {o.domain or 'ai.onnx'} version {o.version} is newer than the latest known ({rng[1]}); "
                "nodes are checked against the latest definitions",
            )


@rule("E-OPSET-UNDECLARED", "5.3.2", "a node uses a domain the model does not import (Clause 10.4)")
def opset_undeclared(ctx: Context) -> Found:
    reported: set[tuple[int, str]] = set()
    for ref in ctx.unusual:
        if ref.status == "undeclared":
            fscope = ref.scope.function_scope()
            key = (id(fscope), ref.domain)
            if key in reported:
                continue
            reported.add(key)
            shown = ref.node.domain or '"" (the default domain)'
            yield ref.loc, f"{ref.label()} is in domain {shown}, which is not imported"


_REVERSE_DOMAIN = re.compile(r"[A-Za-z][A-Za-z0-9-]*(\.[A-Za-z0-9_-]+)+")


@rule("W-MODEL-DOMAIN", "5.3.1", "a model domain that is not a reverse domain name")
def model_domain(ctx: Context) -> Found:
    domain = ctx.model.domain
    if domain and not _REVERSE_DOMAIN.fullmatch(domain):
        yield (
            "domain",
            (
                f"model domain {domain!r} is not a reverse domain name (such as 'com.example.models'; "
                "Clause 5.3.1: SHOULD)"
            ),
        )


@rule("E-METADATA-DUPLICATE", "5.5", "metadata property keys that are not distinct")
def metadata_duplicate(ctx: Context) -> Found:
    groups: dict[int, dict[str, int]] = {}
    for i in ctx.of(StringStringEntryProto):
        _msg, parent, field, k = ctx.entries[i]
        if field != "metadata_props":
            continue
        keys = groups.setdefault(parent, {})
        key = ctx.entries[i][0].key  # type: ignore[attr-defined]
        if key in keys:
            yield ctx.path(i), f"metadata key {key!r} repeats metadata_props[{keys[key]}]"
        else:
            keys[key] = k


# Table 12: the IR version at which each feature was introduced (one table, onnxcore.defs.ir).
_META = "metadata properties on this item"
_FEATURE_MSGS = (NodeProto, GraphProto, FunctionProto, ValueInfoProto, TensorProto)


@rule("E-IR-FEATURE", "14.1.2", "a feature used in a model whose IR version predates it (Table 12)")
def ir_feature(ctx: Context) -> Found:
    ir = ctx.ir_version
    if ir <= 0 or ir > KNOWN_IR_VERSION:
        return

    def since(feature: str) -> int:
        return FEATURE_IR_VERSION[feature]

    def late(feature: str) -> str:
        return f"{feature} needs IR version {since(feature)}, the model declares {ir}"

    if ir < since("a model-local function") and ctx.model.functions:
        yield "functions", late("a model-local function")
    for i in ctx.of(FunctionProto):
        f = ctx.entries[i][0]
        assert isinstance(f, FunctionProto)
        if ir < since("an attribute default value in a function") and f.attribute_proto:
            yield ctx.path(i) + "/attribute_proto", late("an attribute default value in a function")
        if ir < since("a function overload") and f.overload:
            yield ctx.path(i) + "/overload", late("a function overload")
    if ir < since("a call of a function overload"):
        for ref in ctx.overloads:
            yield ref.loc + "/overload", late("a call of a function overload")
    if ir < since("a multi-device configuration"):
        for i in ctx.of(NodeDeviceConfigurationProto):
            parent = ctx.parent_of(i)
            if ctx.entries[i][2] == "device_configurations" and ctx.entries[i][3] == 0:
                yield ctx.path(parent) + "/device_configurations", late("a multi-device configuration")
    if ir < since("a multi-device configuration") and ctx.model.configuration:
        yield "configuration", late("a multi-device configuration")
    if ir < since(_META):
        for fcls in _FEATURE_MSGS:
            for i in ctx.of(fcls):
                if ctx.entries[i][0].metadata_props:  # type: ignore[attr-defined]
                    yield ctx.path(i) + "/metadata_props", late(_META)
    for i in ctx.of(TypeProto):
        t = ctx.entries[i][0]
        assert isinstance(t, TypeProto)
        if ir < since("the sparse tensor type") and t.sparse_tensor_type is not None:
            yield ctx.path(i), late("the sparse tensor type")
        if ir < since("the optional type") and t.optional_type is not None:
            yield ctx.path(i), late("the optional type")
    for cls, field in (
        (TypeProto.Tensor, "elem_type"),
        (TypeProto.SparseTensor, "elem_type"),
        (TensorProto, "data_type"),
    ):
        for i in ctx.of(cls):
            tag = getattr(ctx.entries[i][0], field)
            elem_since = element_ir_version(tag)
            if elem_since is not None and elem_since > ir:
                yield f"{ctx.path(i)}/{field}", _late_elem(tag, elem_since, ir)
    for i in ctx.of(TypeProto.Map):
        tag = ctx.entries[i][0].key_type  # type: ignore[attr-defined]
        elem_since = element_ir_version(tag)
        if elem_since is not None and elem_since > ir:
            yield f"{ctx.path(i)}/key_type", _late_elem(tag, elem_since, ir)


def _late_elem(tag: int, since: int, ir: int) -> str:
    return f"element type {_elem_name(tag)} needs IR version {since}, the model declares {ir}"


def _elem_name(tag: int) -> str:

    try:
        return TP.DataType(tag).name
    except ValueError:
        return str(tag)
