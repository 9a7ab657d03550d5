"""Tensor and declared-type rules: storage against dims and type (Clause 6.3.4), external references
(13.1, 13.2, 15.3), sparse tensors (B.2.18), declarations that contradict each other (10.3) or an
initializer (7.2), shapes (6.5.1), and tensor size limits (15.4). No weight byte is read: a
``raw_data`` is measured, never looked into (sparse indices are the one exception, with ``full``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from onnxcore.external import parse_reference, verify_references
from onnxcore.proto.messages import SparseTensorProto, TensorProto, TensorShapeProto, TypeProto
from onnxcore.types.packing import int32_per_elements
from onnxcore.types.tensors import raw_size, typed_field
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context, Scope
from onnxcore.validate.types_util import dims_of, elem_of, elem_type, type_string

__all__: list[str] = []

Found = Iterator[tuple[str, str]]
EXTERNAL = int(TensorProto.DataLocation.EXTERNAL)
_TYPED = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _count(dims: list[int]) -> int | None:
    if any(d < 0 for d in dims):
        return None
    return math.prod(dims)


@rule("E-TENSOR-DIMS", "6.5.1", "a tensor with a negative dimension")
def tensor_dims(ctx: Context) -> Found:
    for i in ctx.of(TensorProto):
        t = ctx.entries[i][0]
        bad = [d for d in t.dims if d < 0]  # type: ignore[attr-defined]
        if bad:
            yield f"{ctx.path(i)}/dims", f"dims {list(t.dims)} has a negative extent"  # type: ignore[attr-defined]


def _expected_typed(et: Any, n: int) -> int:

    if et.type_name == "string":
        return n
    if et.is_narrow:
        return int32_per_elements(n, et.bits)
    return 2 * n if et.is_complex else n


@rule("E-TENSOR-DATA", "6.3.4", "tensor contents whose length disagrees with dims and type, or in the wrong field")
def tensor_data(ctx: Context) -> Found:

    for i in ctx.of(TensorProto):
        t = ctx.entries[i][0]
        assert isinstance(t, TensorProto)
        if t.segment is not None:
            continue  # segments are partial
        et = elem_type(t.data_type)
        n = _count(list(t.dims))
        if et is None or n is None:
            continue  # E-ELEM-*, E-TENSOR-DIMS
        if t.data_location == EXTERNAL:
            # Clause 13.1: external contents have the layout of raw contents, so a declared length (or the contents
            # resolved at load) must be what dims and type need; otherwise the tensor fails only when it is read.
            if et.type_name != "string":
                problem = _external_length_problem(t, raw_size(et, n))
                if problem:
                    yield ctx.path(i), f"{problem}; {et.name} with dims {list(t.dims)} needs {raw_size(et, n)}"
            continue
        typed = [f for f in _TYPED if getattr(t, f)]
        has_raw = t.has("raw_data")
        loc = ctx.path(i)
        if has_raw and typed:
            yield loc, f"the tensor carries both raw_data and {typed[0]}; it uses one or the other"
            continue
        if len(typed) > 1:
            yield loc, f"the tensor carries several typed fields ({', '.join(typed)})"
            continue
        if has_raw:
            if et.type_name == "string":
                yield loc, "a STRING tensor has no raw storage; its elements go in string_data"
                continue
            want = raw_size(et, n)
            got = len(t.raw_data)
            if got != want:
                yield loc, f"raw_data holds {got} octet(s); {et.name} with dims {list(t.dims)} needs {want}"
        elif typed:
            field = typed_field(et)
            if typed[0] != field:
                yield loc, f"a {et.name} tensor keeps its elements in {field}, not {typed[0]}"
                continue
            want = _expected_typed(et, n)
            got = len(getattr(t, field))
            if got != want:
                yield loc, f"{field} holds {got} value(s); {et.name} with dims {list(t.dims)} needs {want}"
        elif n > 0:
            yield loc, f"the tensor has no contents; dims {list(t.dims)} declare {n} element(s)"


def _external_length_problem(t: TensorProto, want: int) -> str | None:
    for entry in t.external_data:
        if entry.key == "length":
            try:
                declared = int(entry.value)
            except ValueError:
                return None  # malformed: E-EXTERNAL-REF
            if declared != want:
                return f"the external reference declares length {declared}"
    if t.has("raw_data") and len(t.raw_data) != want:
        return f"the external contents hold {len(t.raw_data)} octet(s)"
    return None


def _external(ctx: Context) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(malformed references, refused resolutions), computed once for the two rules below."""
    if ctx.external is not None:
        return ctx.external
    malformed: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    ctx.external = (malformed, refused)
    externals = [i for i in ctx.of(TensorProto) if ctx.entries[i][0].data_location == EXTERNAL]  # type: ignore[attr-defined]
    if not externals:
        return malformed, refused

    bad_names: set[str] = set()
    by_name: dict[str, int] = {}
    for i in externals:
        t = ctx.entries[i][0]
        assert isinstance(t, TensorProto)
        by_name.setdefault(t.name, i)
        try:
            parse_reference(t, t.name or ctx.path(i))
        except Exception as err:  # an ExternalDataError naming the rule and clause
            malformed.append((ctx.path(i), str(err)))
            bad_names.add(t.name)
    base_dir = ctx.base_dir
    if base_dir is not None:
        for refusal in verify_references(ctx.model, base_dir, limits=ctx.limits):
            name = str(getattr(refusal, "tensor", "") or "")
            if name in bad_names:
                continue  # already reported as malformed
            j = by_name.get(name)
            refused.append((ctx.path(j) if j is not None else name, str(refusal)))
    return malformed, refused


@rule("E-EXTERNAL-REF", "13.2", "an external data reference that is malformed (Table 11, Clause 13.1)")
def external_ref(ctx: Context) -> Found:
    yield from _external(ctx)[0]


@rule("E-EXTERNAL-FILE", "15.3", "an external data reference whose file is refused (missing, outside, link, range)")
def external_file(ctx: Context) -> Found:
    yield from _external(ctx)[1]


@rule(
    "E-SPARSE", "B.2.18", "a sparse tensor whose values, indices and dims disagree, or whose indices are out of range"
)
def sparse(ctx: Context) -> Found:
    for i in ctx.of(SparseTensorProto):
        sp = ctx.entries[i][0]
        assert isinstance(sp, SparseTensorProto)
        loc = ctx.path(i)
        dims = list(sp.dims)
        if any(d < 0 for d in dims):
            yield loc, f"dims {dims} has a negative extent"
            continue
        if sp.values is None or sp.indices is None:
            yield loc, "a sparse tensor needs both values and indices"
            continue
        vdims = list(sp.values.dims)
        if len(vdims) != 1:
            yield loc, f"values must be 1-D [NNZ], not dims {vdims}"
            continue
        nnz = vdims[0]
        idims = list(sp.indices.dims)
        rank = len(dims)
        if sp.indices.data_type != TensorProto.DataType.INT64:
            yield loc, "indices must be an INT64 tensor"
            continue
        if idims not in ([nnz], [nnz, rank]):
            yield (
                loc,
                f"indices have dims {idims}; with {nnz} values and rank {rank} they must be [{nnz}] or [{nnz}, {rank}]",
            )
            continue
        if ctx.full:
            msg = _index_problem(sp.indices, idims, dims)
            if msg:
                yield loc, msg


def _index_problem(indices: TensorProto, idims: list[int], dims: list[int]) -> str | None:
    import numpy as np

    n = math.prod(idims)
    if indices.data_location == EXTERNAL:
        return None
    if indices.has("raw_data"):
        if len(indices.raw_data) != 8 * n:
            return None  # E-TENSOR-DATA
        arr = np.frombuffer(indices.raw_data, dtype="<i8")
    else:
        if len(indices.int64_data) != n:
            return None
        arr = np.asarray(indices.int64_data, dtype=np.int64)
    if n == 0:
        return None
    if len(idims) == 2:
        coords = arr.reshape(idims)
        bounds = np.asarray(dims, dtype=np.int64)
        bad = np.nonzero(((coords < 0) | (coords >= bounds)).any(axis=1))[0]
        if bad.size:
            return f"index {int(bad[0])} ({coords[bad[0]].tolist()}) lies outside dims {dims}"
        linear = np.ravel_multi_index(tuple(coords.T), tuple(dims)) if dims else np.zeros(len(coords), np.int64)
    else:
        total = math.prod(dims)
        bad = np.nonzero((arr < 0) | (arr >= total))[0]
        if bad.size:
            return f"linear index {int(arr[bad[0]])} lies outside [0, {total})"
        linear = arr
    if linear.size > 1 and not bool(np.all(np.diff(linear) > 0)):
        return "indices are not in strictly increasing (row-major) order"
    return None


@rule("E-SHAPE-NEGATIVE", "6.5.1", "a declared dimension with a negative extent")
def shape_negative(ctx: Context) -> Found:
    for i in ctx.of(TensorShapeProto.Dimension):
        d = ctx.entries[i][0]
        if d.has("dim_value") and d.dim_value < 0:  # type: ignore[attr-defined]
            yield ctx.path(i), f"dim_value {d.dim_value} is negative"  # type: ignore[attr-defined]


def _declarations(scope: Scope) -> Iterator[tuple[str, str, TypeProto]]:
    g = scope.graph
    if g is None:
        f = scope.function
        if f is not None:
            for k, vi in enumerate(f.value_info):
                if vi.type is not None:
                    yield vi.name, f"{scope.loc}/value_info[{k}]", vi.type
        return
    for field, values in (("input", g.input), ("output", g.output), ("value_info", g.value_info)):
        for k, vi in enumerate(values):
            if vi.type is not None and vi.name:
                yield vi.name, f'{scope.loc}/{field}[{k}] "{vi.name}"', vi.type


def _shape_clash(a: list[Any] | None, b: list[Any] | None) -> str | None:
    if a is None or b is None:
        return None
    if len(a) != len(b):
        return f"rank {len(a)} against rank {len(b)}"
    for j, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, int) and isinstance(y, int) and x != y:
            return f"extent {x} against {y} at axis {j}"
    return None


@rule("E-TYPE-CONFLICT", "10.3", "one value declared twice in a graph with different types")
def type_conflict(ctx: Context) -> Found:
    for scope in ctx.scopes:
        first: dict[str, tuple[str, TypeProto]] = {}
        for name, loc, tp in _declarations(scope):
            prev = first.get(name)
            if prev is None:
                first[name] = (loc, tp)
                continue
            a, b = type_string(prev[1]), type_string(tp)
            if a is not None and b is not None and a != b:
                yield loc, f"{name!r} is declared {b} here and {a} at {prev[0]}"


@rule("E-SHAPE-CONFLICT", "10.3", "one value declared twice with statically known extents or ranks that differ")
def shape_conflict(ctx: Context) -> Found:
    for scope in ctx.scopes:
        first: dict[str, tuple[str, TypeProto]] = {}
        for name, loc, tp in _declarations(scope):
            prev = first.get(name)
            if prev is None:
                first[name] = (loc, tp)
                continue
            clash = _shape_clash(dims_of(prev[1]), dims_of(tp))
            if clash:
                yield loc, f"{name!r} is declared with a shape that contradicts {prev[0]}: {clash}"


def _init_decls(ctx: Context) -> Iterator[tuple[str, TensorProto, TypeProto, str]]:
    for scope in ctx.scopes:
        g = scope.graph
        if g is None or not g.initializer:
            continue
        declared: dict[str, tuple[TypeProto, str]] = {}
        for name, loc, tp in _declarations(scope):
            declared.setdefault(name, (tp, loc))
        for k, t in enumerate(g.initializer):
            d = declared.get(t.name)
            if d is not None:
                yield f'{scope.loc}/initializer[{k}] "{t.name}"', t, d[0], d[1]


@rule("E-INIT-TYPE", "7.2", "an initializer whose element type differs from the type declared for its name")
def init_type(ctx: Context) -> Found:
    for loc, t, tp, where in _init_decls(ctx):
        declared = elem_of(tp)
        if declared and t.data_type and declared != t.data_type and tp.sparse_tensor_type is None:
            a, b = _ename(t.data_type), _ename(declared)
            yield loc, f"the initializer is {a}, but {where} declares {b}"
        elif tp.which_oneof("value") not in (None, "tensor_type", "sparse_tensor_type"):
            yield loc, f"the initializer is a tensor, but {where} declares {type_string(tp) or 'a non-tensor type'}"


@rule("E-INIT-SHAPE", "7.2", "an initializer whose dims contradict the shape declared for its name")
def init_shape(ctx: Context) -> Found:
    for loc, t, tp, where in _init_decls(ctx):
        clash = _shape_clash(list(t.dims), dims_of(tp))
        if clash:
            yield loc, f"dims {list(t.dims)} contradict the shape declared at {where}: {clash}"


def _ename(tag: int) -> str:
    et = elem_type(tag)
    return et.name if et is not None else str(tag)


@rule("E-LIMIT-TENSOR", "15.4", "a tensor declared larger than the limits (elements, octets, rank): a refusal")
def limit_tensor(ctx: Context) -> Found:
    lim = ctx.limits
    for i in ctx.of(TensorProto):
        t = ctx.entries[i][0]
        assert isinstance(t, TensorProto)
        for msg in _over(list(t.dims), t.data_type, lim):
            yield ctx.path(i), msg
    for cls in (TypeProto.Tensor, TypeProto.SparseTensor):
        for i in ctx.of(cls):
            tt = ctx.entries[i][0]
            if tt.shape is None:  # type: ignore[attr-defined]
                continue
            dims = [d.dim_value for d in tt.shape.dim if d.has("dim_value")]  # type: ignore[attr-defined]
            rank = len(tt.shape.dim)  # type: ignore[attr-defined]
            if lim.max_rank is not None and rank > lim.max_rank:
                yield ctx.path(i), f"declared rank {rank} exceeds the limit {lim.max_rank}"
            elif len(dims) == rank:
                for msg in _over(dims, tt.elem_type, lim, rank_checked=True):  # type: ignore[attr-defined]
                    yield ctx.path(i), msg


def _over(dims: list[int], tag: int, lim: Any, rank_checked: bool = False) -> Iterator[str]:
    if not rank_checked and lim.max_rank is not None and len(dims) > lim.max_rank:
        yield f"rank {len(dims)} exceeds the limit {lim.max_rank}"
        return
    n = _count(dims)
    if n is None:
        return
    if lim.max_tensor_elements is not None and n > lim.max_tensor_elements:
        yield f"{n} elements exceed the limit of {lim.max_tensor_elements}"
        return
    et = elem_type(tag)
    if et is not None and lim.max_tensor_bytes is not None:
        size = (n * et.bits + 7) // 8 if et.bits else n  # STRING: at least one octet each
        if size > lim.max_tensor_bytes:
            yield f"{size} octets exceed the limit of {lim.max_tensor_bytes}"
