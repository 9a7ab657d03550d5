"""Shape rules of the tensor-manipulation and indexing operators (Clause 9) against actual runtime shapes.

Random cases per operator and version are run (onnxruntime, or onnxcore's session where onnxruntime lacks the
operator version) and inferred in three variants: the shape-like operands constant (every extent must be
inferred, exactly; data-dependent outputs as stated per case), the shape-like operands fed (whatever is
inferred must hold), and the data inputs declared with dimension variables and unknown extents (whatever is
inferred must hold, a variable only where it is the actual extent). Targeted tests cover the definitions'
corners, what stays known when a shape-like operand is not constant, and each contradiction ``ctx.fail``
reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.infer import shape_step
from onnxcore.infer.shapes import ShapeInference, infer_shapes
from onnxcore.proto.messages import ModelProto

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
Shape = tuple[Any, ...] | None


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_step, "STRICT", True)


# --- building, running, inferring --------------------------------------------------------------


@dataclass
class Case:
    """One node: inputs as ``(name, value, shape_like)`` or None (omitted); ``expect`` the exact inferred
    shapes with the shape-like operands constant where the outputs are data-dependent (else fully static)."""

    op: str
    opset: int
    inputs: list[tuple[str, np.ndarray, bool] | None]
    attrs: dict[str, Any] = field(default_factory=dict)
    n_out: int = 1
    expect: list[Shape] | None = None

    def __str__(self) -> str:
        ins = [
            "-" if e is None else f"{e[0]}{list(e[1].shape)}{'=' + str(e[1].tolist()) if e[2] else ''}"
            for e in self.inputs
        ]
        return f"{self.op}-{self.opset} {ins} {self.attrs}"


def _model(
    case: Case, *, fed_shape_like: bool = False, declare: Callable[[int, tuple[int, ...]], list[Any]] | None = None
) -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, int]]:
    """The model of ``case``, its feeds, and the extent each declared dimension variable takes."""
    ins, inits, feeds, names, binding = [], [], {}, [], {}
    for k, e in enumerate(case.inputs):
        if e is None:
            names.append("")
            continue
        name, arr, shape_like = e
        names.append(name)
        if shape_like and not fed_shape_like:
            inits.append(nh.from_array(arr, name))
            continue
        decl: list[Any] = list(arr.shape) if declare is None or shape_like else declare(k, arr.shape)
        for d, actual in zip(decl, arr.shape):
            if isinstance(d, str):
                binding[d] = actual
        ins.append(h.make_tensor_value_info(name, nh.from_array(arr).data_type, decl))
        feeds[name] = arr
    while names and not names[-1]:
        names.pop()
    outs = [f"y{i}" for i in range(case.n_out)]
    node = h.make_node(case.op, names, outs, **case.attrs)
    g = h.make_graph([node], "g", ins, [h.make_empty_tensor_value_info(o) for o in outs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", case.opset)])
    m.ir_version = 10 if case.opset < 23 else 11
    return m, feeds, binding


_SO = ort.SessionOptions()
_SO.log_severity_level = 3


def _actual(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[tuple[int, ...]]:
    data = m.SerializeToString()
    try:
        sess = ort.InferenceSession(data, _SO, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime lacks the operator version: onnxcore's session is the oracle
        if "NOT_IMPLEMENTED" not in str(e) and "opset" not in str(e).lower():
            raise
        return [np.asarray(v).shape for v in onnxcore.Session(data, check=False).run(None, feeds)]
    return [v.shape for v in sess.run(None, feeds)]


def _infer(m: onnx.ModelProto) -> ShapeInference:
    r = infer_shapes(onnxcore.decode(ModelProto, m.SerializeToString()))
    assert not r.incompatibilities, [i.message for i in r.incompatibilities]
    assert not r.unruled
    return r


def _holds(got: Shape, actual: tuple[int, ...], binding: dict[str, int], what: str) -> None:
    """Every extent ``got`` states is the actual one; a variable only where it is the actual extent."""
    if got is None:
        return
    assert len(got) == len(actual), f"{what}: inferred {got}, actual {actual}"
    for g, a in zip(got, actual):
        if isinstance(g, int):
            assert g == a, f"{what}: inferred {got}, actual {actual}"
        elif isinstance(g, str):
            assert binding.get(g) == a, f"{what}: inferred {got}, actual {actual}, {g}={binding.get(g)}"


def _check(case: Case, rng: np.random.Generator) -> None:
    m, feeds, _ = _model(case)
    actual = _actual(m, feeds)
    got = [_infer(m).shape(f"y{i}") for i in range(case.n_out)]
    for i, (g, a) in enumerate(zip(got, actual)):
        _holds(g, a, {}, f"{case} output {i}")
        if case.expect is None:
            assert g == a, f"{case}: output {i} inferred {g}, actual {a} (static expected)"
        else:
            assert g == case.expect[i], f"{case}: output {i} inferred {g}, expected {case.expect[i]}"
    if any(e is not None and e[2] for e in case.inputs):
        m2, _, _ = _model(case, fed_shape_like=True)
        r2 = _infer(m2)
        for i, a in enumerate(actual):
            g = r2.shape(f"y{i}")
            _holds(g, a, {}, f"{case} (shape-like operands fed) output {i}")
            if case.op != "Squeeze":  # which axes go decides the rank
                assert g is not None, f"{case}: the rank is known whatever the shape-like operands hold"

    def declare(k: int, shape: tuple[int, ...]) -> list[Any]:
        return [
            (d if c == 0 else f"v{k}_{j}" if c == 1 else None)
            for j, (d, c) in enumerate(zip(shape, rng.integers(0, 3, len(shape))))
        ]

    m3, _, binding = _model(case, declare=declare)
    r3 = _infer(m3)
    for i, a in enumerate(actual):
        _holds(r3.shape(f"y{i}"), a, binding, f"{case} (symbolic) output {i}")


# --- random cases per operator -----------------------------------------------------------------


def _dims(rng: np.random.Generator, rank: int, lo: int = 1, hi: int = 4) -> list[int]:
    return [int(rng.integers(lo, hi + 1)) for _ in range(rank)]


def _f(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    return rng.standard_normal(tuple(shape)).astype(np.float32)


def _i(v: Any) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def _pick(rng: np.random.Generator, xs: Sequence[Any]) -> Any:
    return xs[int(rng.integers(len(xs)))]


def _axis(rng: np.random.Generator, a: int, r: int, negative: bool) -> int:
    """``a`` written as a negative axis half of the time where negative axes are allowed."""
    return a - r if negative and rng.random() < 0.5 else a


def _factor(rng: np.random.Generator, total: int, k: int) -> list[int]:
    out = [1] * k
    n, p = total, 2
    while n > 1:
        while n % p == 0:
            out[int(rng.integers(k))] *= p
            n //= p
        p += 1
    return out


def g_reshape(rng):
    opset = _pick(rng, [1, 5, 13, 14, 19, 21, 24])
    xs = _dims(rng, int(rng.integers(1, 5)))
    target = _factor(rng, math.prod(xs), int(rng.integers(1, 5)))
    allowzero = opset >= 14 and rng.random() < 0.3
    if not allowzero:
        for i in range(min(len(xs), len(target))):
            if target[i] == xs[i] and rng.random() < 0.5:
                target[i] = 0
    if rng.random() < 0.5:
        target[int(rng.integers(len(target)))] = -1
    x = ("x", _f(rng, xs), False)
    attrs = {"allowzero": 1} if allowzero else {}
    if opset < 5:
        return Case("Reshape", opset, [x], {"shape": target})
    return Case("Reshape", opset, [x, ("s", _i(target), True)], attrs)


def g_flatten(rng):
    opset = _pick(rng, [1, 9, 11, 13, 21, 24])
    xs = _dims(rng, int(rng.integers(1, 5)))
    r = len(xs)
    axis = int(rng.integers(-r if opset >= 11 else 0, r + 1))
    return Case("Flatten", opset, [("x", _f(rng, xs), False)], {"axis": axis})


def g_transpose(rng):
    xs = _dims(rng, int(rng.integers(0, 5)))
    attrs = {} if rng.random() < 0.3 or not xs else {"perm": [int(a) for a in rng.permutation(len(xs))]}
    return Case("Transpose", _pick(rng, [1, 13, 21, 24]), [("x", _f(rng, xs), False)], attrs)


def g_concat(rng):
    opset = _pick(rng, [1, 4, 11, 13])
    base = _dims(rng, int(rng.integers(1, 5)))
    r = len(base)
    a = int(rng.integers(r))
    attrs: dict[str, Any] = {"axis": _axis(rng, a, r, opset >= 11)}
    if opset < 4 and a == 1 and rng.random() < 0.5:
        attrs = {}  # Concat-1 defaults to axis 1
    ins = []
    for k in range(int(rng.integers(1, 4))):
        s = list(base)
        s[a] = int(rng.integers(0, 4))
        ins.append((f"x{k}", _f(rng, s), False))
    return Case("Concat", opset, ins, attrs)


def g_split(rng):
    opset = _pick(rng, [1, 2, 11, 13, 18])
    xs = _dims(rng, int(rng.integers(1, 4)), 1, 3)
    r = len(xs)
    a = int(rng.integers(r))
    n = int(rng.integers(1, 4))
    mode = _pick(rng, ["sizes", "num"] if opset >= 18 else ["sizes", "equal"])
    if mode == "sizes":
        sizes = [int(v) for v in rng.integers(0, 4, n)]
        xs[a] = sum(sizes)
    elif mode == "equal":
        xs[a] = n * int(rng.integers(1, 4))
    else:
        chunk = int(rng.integers(1, 4))
        xs[a] = chunk * (n - 1) + int(rng.integers(1, chunk + 1))  # the last part smaller but not empty
    attrs: dict[str, Any] = {"axis": _axis(rng, a, r, opset >= 11)}
    ins: list[Any] = [("x", _f(rng, xs), False)]
    if mode == "num":
        attrs["num_outputs"] = n
    elif mode == "sizes":
        if opset >= 13 or (opset == 1 and rng.random() < 0.5):
            ins.append(("split", np.array(sizes, np.float32 if opset == 1 else np.int64), True))
        else:
            attrs["split"] = sizes
    return Case("Split", opset, ins, attrs, n_out=n)


def g_squeeze(rng):
    opset = _pick(rng, [1, 11, 13, 21])
    xs = [int(v) for v in rng.choice([1, 1, 2, 3], int(rng.integers(1, 5)))]
    ones = [i for i, d in enumerate(xs) if d == 1]
    ins: list[Any] = [("x", _f(rng, xs), False)]
    attrs = {}
    if ones and rng.random() < 0.7:
        axes = [
            _axis(rng, int(a), len(xs), opset >= 11)
            for a in rng.permutation(ones)[: int(rng.integers(1, len(ones) + 1))]
        ]
        if opset >= 13:
            ins.append(("axes", _i(axes), True))
        else:
            attrs["axes"] = axes
    return Case("Squeeze", opset, ins, attrs)


def g_unsqueeze(rng):
    opset = _pick(rng, [1, 11, 13, 21])
    xs = _dims(rng, int(rng.integers(0, 4)))
    k = int(rng.integers(1, 3))
    out_r = len(xs) + k
    axes = [_axis(rng, int(a), out_r, opset >= 11) for a in rng.permutation(out_r)[:k]]
    if opset >= 13:
        return Case("Unsqueeze", opset, [("x", _f(rng, xs), False), ("axes", _i(axes), True)])
    return Case("Unsqueeze", opset, [("x", _f(rng, xs), False)], {"axes": axes})


def g_slice(rng):
    opset = _pick(rng, [1, 10, 11, 13])
    xs = _dims(rng, int(rng.integers(1, 4)), 0, 6)
    r = len(xs)
    m = int(rng.integers(1, r + 1))
    axes = [int(a) for a in rng.permutation(r)[:m]]
    starts, ends, steps = [], [], []
    for a in axes:
        d = xs[a]
        k = 1 if opset < 10 else int(_pick(rng, [1, 1, 2, 3, -1, -1, -2, -3]))
        pool = list(range(-d - 2, d + 3))
        if k > 0:
            starts.append(int(_pick(rng, [*pool, INT64_MIN, 0])))
            ends.append(int(_pick(rng, [*pool, INT64_MAX, 2**31 - 1])))
        else:
            starts.append(int(_pick(rng, [*pool, INT64_MAX, -1])))
            ends.append(int(_pick(rng, [*pool, INT64_MIN, -(2**31)])))
        steps.append(k)
    omit_axes = axes == list(range(m)) and rng.random() < 0.5
    axes = [_axis(rng, a, r, opset >= 11) for a in axes]
    x = ("x", _f(rng, xs), False)
    if opset < 10:
        attrs: dict[str, Any] = {"starts": starts, "ends": ends}
        if not omit_axes:
            attrs["axes"] = axes
        return Case("Slice", opset, [x], attrs)
    ins: list[Any] = [x, ("starts", _i(starts), True), ("ends", _i(ends), True)]
    ins.append(None if omit_axes else ("axes", _i(axes), True))
    if any(k != 1 for k in steps) or rng.random() < 0.5:
        ins.append(("steps", _i(steps), True))
    return Case("Slice", opset, ins)


def _indices(rng, shape, size, negative) -> np.ndarray:
    lo = -size if negative else 0
    return rng.integers(lo, max(size, lo + 1), tuple(shape)).astype(np.int64) if size else np.zeros(shape, np.int64)


def g_gather(rng):
    opset = _pick(rng, [1, 11, 13])
    xs = _dims(rng, int(rng.integers(1, 4)))
    a = int(rng.integers(len(xs)))
    idx = _indices(rng, _dims(rng, int(rng.integers(0, 3))), xs[a], opset >= 11)
    attrs = {"axis": _axis(rng, a, len(xs), True)}
    return Case("Gather", opset, [("x", _f(rng, xs), False), ("i", idx, False)], attrs)


def g_gather_elements(rng):
    xs = _dims(rng, int(rng.integers(1, 4)))
    a = int(rng.integers(len(xs)))
    ids = [int(rng.integers(1, d + 1)) if j != a else int(rng.integers(1, 5)) for j, d in enumerate(xs)]
    ins = [("x", _f(rng, xs), False), ("i", _indices(rng, ids, xs[a], True), False)]
    return Case("GatherElements", _pick(rng, [11, 13]), ins, {"axis": _axis(rng, a, len(xs), True)})


def g_gather_nd(rng):
    opset = _pick(rng, [11, 12, 13])
    xs = _dims(rng, int(rng.integers(1, 5)))
    r = len(xs)
    b = int(rng.integers(0, r)) if opset >= 12 else 0
    k = int(rng.integers(1, r - b + 1))
    mid = _dims(rng, int(rng.integers(0, 3)))
    idx = np.stack([_indices(rng, xs[:b] + mid, xs[b + j], True) for j in range(k)], axis=-1)
    attrs = {"batch_dims": b} if b or (opset >= 12 and rng.random() < 0.5) else {}
    return Case("GatherND", opset, [("x", _f(rng, xs), False), ("i", idx, False)], attrs)


def g_scatter_elements(rng):
    op = _pick(rng, ["Scatter", "ScatterElements"])
    opset = _pick(rng, [9, 10] if op == "Scatter" else [11, 13, 16, 18])
    xs = _dims(rng, int(rng.integers(1, 4)))
    a = int(rng.integers(len(xs)))
    ids = [int(rng.integers(1, d + 1)) for d in xs]
    attrs: dict[str, Any] = {"axis": _axis(rng, a, len(xs), opset >= 11)}
    if opset >= 16:
        attrs["reduction"] = _pick(rng, ["none", "add", "mul"] + (["max", "min"] if opset >= 18 else []))
    ind = _indices(rng, ids, xs[a], False)
    return Case(op, opset, [("x", _f(rng, xs), False), ("i", ind, False), ("u", _f(rng, ids), False)], attrs)


def g_scatter_nd(rng):
    opset = _pick(rng, [11, 13, 16, 18])
    xs = _dims(rng, int(rng.integers(1, 4)))
    k = int(rng.integers(1, len(xs) + 1))
    mid = _dims(rng, int(rng.integers(0, 3)))
    idx = np.stack([_indices(rng, mid, xs[j], False) for j in range(k)], axis=-1)
    attrs = {"reduction": _pick(rng, ["add", "mul"])} if opset >= 16 and rng.random() < 0.5 else {}
    ins = [("x", _f(rng, xs), False), ("i", idx, False), ("u", _f(rng, mid + xs[k:]), False)]
    return Case("ScatterND", opset, ins, attrs)


def g_tensor_scatter(rng):
    cs = _dims(rng, int(rng.integers(2, 5)))
    r = len(cs)
    a = int(rng.integers(1, r))
    us = list(cs)
    us[a] = int(rng.integers(1, cs[a] + 1))
    ins: list[Any] = [("c", _f(rng, cs), False), ("u", _f(rng, us), False)]
    if rng.random() < 0.5:
        ins.append(("w", rng.integers(0, cs[a] - us[a] + 1, cs[0]).astype(np.int64), False))
    return Case("TensorScatter", 24, ins, {"axis": _axis(rng, a, r, True)})


def g_pad(rng):
    opset = _pick(rng, [2, 11, 13, 18, 19, 21, 24])
    xs = _dims(rng, int(rng.integers(1, 4)))
    r = len(xs)
    ax = list(range(r))
    use_axes = opset >= 18 and rng.random() < 0.5
    if use_axes:
        ax = [int(a) for a in rng.permutation(r)[: int(rng.integers(1, r + 1))]]
    pb, pe = [], []
    for a in ax:
        b = int(rng.integers(-1, 3))
        e = int(rng.integers(-1, 3))
        while -min(b, 0) - min(e, 0) > xs[a]:
            b, e = max(b, 0), max(e, 0)
        pb.append(b)
        pe.append(e)
    pads = pb + pe
    x = ("x", _f(rng, xs), False)
    if opset < 11:
        return Case("Pad", opset, [x], {"pads": pads})
    ins: list[Any] = [x, ("p", _i(pads), True)]
    if use_axes:
        ins += [None, ("axes", _i([_axis(rng, a, r, True) for a in ax]), True)]
    return Case("Pad", opset, ins)


def g_tile(rng):
    opset = _pick(rng, [1, 6, 13])
    xs = _dims(rng, int(rng.integers(0 if opset >= 6 else 1, 4)))
    x = ("x", _f(rng, xs), False)
    if opset < 6:
        a = int(rng.integers(len(xs)))
        # Tile-1's tiles and axis are float tensors.
        t, av = np.array(float(rng.integers(0, 4)), np.float32), np.array(float(a), np.float32)
        return Case("Tile", opset, [x, ("t", t, True), ("a", av, True)])
    return Case("Tile", opset, [x, ("reps", _i([int(v) for v in rng.integers(0, 4, len(xs))]), True)])


def g_expand(rng):
    xs = [int(v) for v in rng.choice([1, 1, 2, 3], int(rng.integers(0, 4)))]
    extra = int(rng.integers(0, 3))
    target = _dims(rng, extra, 1, 3) + [int(rng.integers(1, 4)) if d == 1 else int(_pick(rng, [1, d])) for d in xs]
    if rng.random() < 0.3 and target:
        target = target[int(rng.integers(len(target))) :]  # a shorter target: the input's rank wins
    return Case("Expand", _pick(rng, [8, 13]), [("x", _f(rng, xs), False), ("s", _i(target), True)])


def g_one_hot(rng):
    opset = _pick(rng, [9, 11])
    depth = int(rng.integers(1, 5))
    ind = _indices(rng, _dims(rng, int(rng.integers(1, 3))), depth, opset >= 11)
    q = ind.ndim
    axis = int(rng.integers(-q - 1, q + 1))
    dv = _pick(rng, [np.array(depth, np.int64), np.array([depth], np.int64), np.array(depth + 0.7, np.float32)])
    ins = [("i", ind, False), ("d", dv, True), ("v", np.array([0.0, 1.0], np.float32), False)]
    return Case("OneHot", opset, ins, {"axis": axis})


def g_non_zero(rng):
    xs = _dims(rng, int(rng.integers(1, 4)), 0, 3)
    x = (rng.random(xs) < 0.5).astype(np.float32)
    return Case("NonZero", _pick(rng, [9, 13]), [("x", x, False)], expect=[(len(xs), 0 if 0 in xs else None)])


def g_compress(rng):
    xs = _dims(rng, int(rng.integers(1, 4)))
    r = len(xs)
    opset = _pick(rng, [9, 11])
    if rng.random() < 0.3:
        cond = rng.random(int(rng.integers(1, math.prod(xs) + 1))) < 0.5
        return Case("Compress", opset, [("x", _f(rng, xs), False), ("c", cond, False)], expect=[(None,)])
    a = int(rng.integers(r))
    cond = rng.random(int(rng.integers(1, xs[a] + 1))) < 0.5
    exp = tuple(None if j == a else d for j, d in enumerate(xs))
    return Case(
        "Compress",
        opset,
        [("x", _f(rng, xs), False), ("c", cond, False)],
        {"axis": _axis(rng, a, r, opset >= 11)},
        expect=[exp],
    )


def g_unique(rng):
    xs = _dims(rng, int(rng.integers(1, 4)))
    x = rng.integers(0, 3, xs).astype(np.float32)
    if rng.random() < 0.5:
        n = math.prod(xs)
        u = n if n <= 1 else None
        return Case("Unique", 11, [("x", x, False)], n_out=4, expect=[(u,), (u,), (n,), (u,)])
    a = int(rng.integers(len(xs)))
    n = xs[a]
    u = n if n <= 1 else None
    y = tuple(u if j == a else d for j, d in enumerate(xs))
    return Case(
        "Unique", 11, [("x", x, False)], {"axis": _axis(rng, a, len(xs), True)}, n_out=4, expect=[y, (u,), (n,), (u,)]
    )


def g_trilu(rng):
    ins: list[Any] = [("x", _f(rng, _dims(rng, int(rng.integers(2, 5)))), False)]
    if rng.random() < 0.5:
        ins.append(("k", _i(int(rng.integers(-2, 3))), False))
    return Case("Trilu", 14, ins, {"upper": int(rng.integers(0, 2))})


def g_center_crop_pad(rng):
    xs = _dims(rng, int(rng.integers(1, 4)), 1, 6)
    r = len(xs)
    attrs = {}
    ax = list(range(r))
    if rng.random() < 0.5:
        ax = [int(a) for a in rng.permutation(r)[: int(rng.integers(1, r + 1))]]
        attrs["axes"] = [_axis(rng, a, r, True) for a in ax]
    target = _i(_dims(rng, len(ax), 1, 7))
    return Case("CenterCropPad", 18, [("x", _f(rng, xs), False), ("s", target, True)], attrs)


def g_depth_space(rng):
    b = int(rng.integers(1, 4))
    if rng.random() < 0.5:
        opset = _pick(rng, [1, 11, 13])
        xs = [
            int(rng.integers(1, 3)),
            b * b * int(rng.integers(1, 3)),
            int(rng.integers(1, 4)),
            int(rng.integers(1, 4)),
        ]
        attrs: dict[str, Any] = {"blocksize": b}
        if opset >= 11 and rng.random() < 0.5:
            attrs["mode"] = _pick(rng, ["DCR", "CRD"])
        return Case("DepthToSpace", opset, [("x", _f(rng, xs), False)], attrs)
    xs = [int(rng.integers(1, 3)), int(rng.integers(1, 4)), b * int(rng.integers(1, 4)), b * int(rng.integers(1, 4))]
    return Case("SpaceToDepth", _pick(rng, [1, 13]), [("x", _f(rng, xs), False)], {"blocksize": b})


def g_reverse_sequence(rng):
    xs = _dims(rng, int(rng.integers(2, 4)))
    ba, ta = _pick(rng, [(1, 0), (0, 1)])
    lens = rng.integers(1, xs[ta] + 1, xs[ba]).astype(np.int64)
    return Case(
        "ReverseSequence", 10, [("x", _f(rng, xs), False), ("l", lens, False)], {"batch_axis": ba, "time_axis": ta}
    )


def g_top_k(rng):
    opset = _pick(rng, [1, 10, 11, 24])
    xs = _dims(rng, int(rng.integers(1, 4)))
    a = int(rng.integers(len(xs)))
    k = int(rng.integers(1, xs[a] + 1))
    attrs: dict[str, Any] = {"axis": _axis(rng, a, len(xs), True)} if a != len(xs) - 1 or rng.random() < 0.5 else {}
    x = ("x", _f(rng, xs), False)
    if opset < 10:
        return Case("TopK", opset, [x], {**attrs, "k": k}, n_out=2)
    if opset >= 11 and rng.random() < 0.5:
        attrs["largest"] = int(rng.integers(0, 2))
    return Case("TopK", opset, [x, ("K", _i([k]), True)], attrs, n_out=2)


GENERATORS = {
    "Reshape": g_reshape, "Flatten": g_flatten, "Transpose": g_transpose, "Concat": g_concat, "Split": g_split,
    "Squeeze": g_squeeze, "Unsqueeze": g_unsqueeze, "Slice": g_slice, "Gather": g_gather,
    "GatherElements": g_gather_elements, "GatherND": g_gather_nd, "ScatterElements": g_scatter_elements,
    "ScatterND": g_scatter_nd, "TensorScatter": g_tensor_scatter, "Pad": g_pad, "Tile": g_tile, "Expand": g_expand,
    "OneHot": g_one_hot, "NonZero": g_non_zero, "Compress": g_compress, "Unique": g_unique, "Trilu": g_trilu,
    "CenterCropPad": g_center_crop_pad, "DepthToSpace": g_depth_space, "ReverseSequence": g_reverse_sequence,
    "TopK": g_top_k,
}  # fmt: skip
SEEDS = 80


@pytest.mark.parametrize("op", sorted(GENERATORS))
def test_random_cases_match_the_runtime(op: str) -> None:
    rng = np.random.default_rng(sorted(GENERATORS).index(op) + 1)
    for _ in range(SEEDS):
        _check(GENERATORS[op](rng), rng)


# --- a chain as PyTorch exports it --------------------------------------------------------------


def _torch_chain(x_shape: list[Any], opset: int) -> ShapeInference:
    """``x.view(x.size(0), x.size(1), -1)``: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""

    def unsqueeze(src: str, dst: str) -> onnx.NodeProto:
        if opset >= 13:
            return h.make_node("Unsqueeze", [src, "zero_axes"], [dst])
        return h.make_node("Unsqueeze", [src], [dst], axes=[0])

    nodes = [
        h.make_node("Shape", ["x"], ["shape"]),
        h.make_node("Gather", ["shape", "i0"], ["d0"], axis=0),
        h.make_node("Gather", ["shape", "i1"], ["d1"], axis=0),
        unsqueeze("d0", "u0"),
        unsqueeze("d1", "u1"),
        h.make_node("Concat", ["u0", "u1", "minus_one"], ["target"], axis=0),
        h.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = [nh.from_array(_i(0), "i0"), nh.from_array(_i(1), "i1"), nh.from_array(_i([-1]), "minus_one")]
    if opset >= 13:
        inits.append(nh.from_array(_i([0]), "zero_axes"))
    g = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, x_shape)], [h.make_empty_tensor_value_info("y")], inits
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return _infer(m)


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_a_pytorch_view_chain_on_a_static_input_gives_a_static_reshape(opset: int) -> None:
    r = _torch_chain([2, 3, 4, 5], opset)
    assert r.shape("d0") == () and r.shape("u0") == (1,) and r.shape("target") == (3,)
    assert r.shape("y") == (2, 3, 20)


def test_the_chain_with_a_dynamic_batch_keeps_the_variable() -> None:
    # Shape(x) is not a constant once an extent is a variable, but its elements are known as extents and are
    # carried into the Reshape (data propagation, shape_ops/symbolic.py).
    r = _torch_chain(["N", 3, 4, 5], 13)
    assert r.shape("shape") == (4,) and r.shape("target") == (3,)
    assert r.shape("y") == ("N", 3, 20)
    # With an unknown extent the element is unknown: only what is certain is stated.
    r = _torch_chain([None, 3, 4, 5], 13)
    assert r.shape("y") == (None, 3, None)


# --- definitions' corners -----------------------------------------------------------------------

_FLOAT_INPUTS = {"x", "x0", "x1", "u", "c", "v", "l"}


def _node(
    op: str,
    opset: int,
    names: Sequence[str],
    decl: dict[str, Shape],
    consts: dict[str, Any] | None = None,
    attrs: dict[str, Any] | None = None,
    n_out: int = 1,
) -> ShapeInference:
    """Infer one node: ``names`` its inputs ("" omitted), ``decl`` declared graph inputs, ``consts`` initializers."""
    consts = consts or {}
    ins = [h.make_tensor_value_info(n, T.FLOAT if n in _FLOAT_INPUTS else T.INT64, s) for n, s in decl.items()]
    inits = [nh.from_array(np.asarray(v, dtype=np.int64), n) for n, v in consts.items()]
    outs = [f"y{i}" for i in range(n_out)]
    g = h.make_graph(
        [h.make_node(op, list(names), outs, **(attrs or {}))],
        "g",
        ins,
        [h.make_empty_tensor_value_info(o) for o in outs],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return infer_shapes(onnxcore.decode(ModelProto, m.SerializeToString()))


# (op, opset, input names, declared, constants, attributes, outputs, expected shape of each output)
_KNOWN = [
    # Reshape: 0 copies the input's extent, a variable too; -1 only from fixed extents.
    ("Reshape", 13, ["x", "s"], {"x": ["N", 3, 4]}, {"s": [0, 12]}, {}, 1, [("N", 12)]),
    # The copied N cancels: the -1 is 12, and N again where the fixed factors cancel too (nothing is
    # concluded about N itself, Clause 9.3).
    ("Reshape", 13, ["x", "s"], {"x": ["N", 3, 4]}, {"s": [0, -1]}, {}, 1, [("N", 12)]),
    ("Reshape", 13, ["x", "s"], {"x": ["N", 3, 4]}, {"s": [-1, 12]}, {}, 1, [("N", 12)]),
    ("Reshape", 13, ["x", "s"], {"x": ["N", 3, 4]}, {"s": [-1, 6]}, {}, 1, [(None, 6)]),
    ("Reshape", 13, ["x", "s"], {"x": ["N", "C", 4]}, {"s": [0, -1]}, {}, 1, [("N", None)]),
    ("Reshape", 13, ["x", "s"], {"x": [2, 3, 4]}, {"s": [0, 0, -1]}, {}, 1, [(2, 3, 4)]),
    ("Reshape", 13, ["x", "s"], {"x": [None, 4]}, {"s": [2, -1]}, {}, 1, [(2, None)]),
    ("Reshape", 14, ["x", "s"], {"x": [2, 0, 3]}, {"s": [0, 5]}, {"allowzero": 1}, 1, [(0, 5)]),
    ("Reshape", 14, ["x", "s"], {"x": [2, 3]}, {"s": [0, 3]}, {"allowzero": 0}, 1, [(2, 3)]),
    ("Reshape", 5, ["x", "s"], {"x": [2, 3], "s": [3]}, {}, {}, 1, [(None, None, None)]),
    ("Reshape", 1, ["x"], {"x": ["N", 6]}, {}, {"shape": [0, 2, 3]}, 1, [("N", 2, 3)]),
    # Dimension variables propagate where an output extent is an input extent, and only there.
    ("Flatten", 13, ["x"], {"x": ["N", 3, 4]}, {}, {"axis": 1}, 1, [("N", 12)]),
    ("Flatten", 13, ["x"], {"x": ["N", 3, 4]}, {}, {"axis": -1}, 1, [(None, 4)]),
    ("Flatten", 13, ["x"], {"x": [0, "N"]}, {}, {"axis": 0}, 1, [(1, 0)]),
    ("Transpose", 13, ["x"], {"x": ["N", 3, None]}, {}, {}, 1, [(None, 3, "N")]),
    ("Concat", 13, ["x0", "x1"], {"x0": ["N", 2], "x1": [None, 3]}, {}, {"axis": 1}, 1, [("N", 5)]),
    ("Concat", 13, ["x0", "x1"], {"x0": ["N", 2], "x1": [4, "T"]}, {}, {"axis": -1}, 1, [(4, None)]),
    ("Concat", 13, ["x0", "x1"], {"x0": ["T", 2], "x1": [0, 2]}, {}, {"axis": 0}, 1, [("T", 2)]),
    ("Split", 13, ["x"], {"x": ["N", 6]}, {}, {"axis": 1}, 2, [("N", 3), ("N", 3)]),
    ("Split", 13, ["x"], {"x": ["N", 6]}, {}, {"axis": 0}, 2, [(None, 6), (None, 6)]),
    ("Split", 18, ["x"], {"x": [7]}, {}, {"num_outputs": 3}, 3, [(3,), (3,), (1,)]),
    ("Split", 18, ["x", "split"], {"x": [5], "split": [2]}, {}, {}, 2, [(None,), (None,)]),
    ("Split", 1, ["x"], {"x": [2, 6]}, {}, {"axis": 1, "split": [2, 4]}, 2, [(2, 2), (2, 4)]),
    ("Squeeze", 13, ["x", "axes"], {"x": ["N", 1, 4]}, {"axes": [-2]}, {}, 1, [("N", 4)]),
    ("Squeeze", 13, ["x"], {"x": [1, 3, 1]}, {}, {}, 1, [(3,)]),
    ("Squeeze", 13, ["x"], {"x": ["N", 3, 1]}, {}, {}, 1, [None]),  # N may be 1
    ("Squeeze", 13, ["x", "axes"], {"x": [1, 3, 1]}, {"axes": []}, {}, 1, [(3,)]),
    ("Squeeze", 11, ["x"], {"x": [1, 3, 1]}, {}, {"axes": [0]}, 1, [(3, 1)]),
    ("Unsqueeze", 13, ["x", "axes"], {"x": ["N", 3]}, {"axes": [-1, 0]}, {}, 1, [(1, "N", 3, 1)]),
    ("Unsqueeze", 11, ["x"], {"x": ["N"]}, {}, {"axes": [1]}, 1, [("N", 1)]),
    # Slice: only the whole axis is certain of an extent not fixed; the clamping per Slice-13.
    ("Slice", 13, ["x", "st", "en"], {"x": ["N", 5]}, {"st": [0, 1], "en": [INT64_MAX, 4]}, {}, 1, [("N", 3)]),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax", "sp"],
        {"x": ["N", 5]},
        {"st": [-1], "en": [INT64_MIN], "ax": [0], "sp": [-1]},
        {},
        1,
        [("N", 5)],
    ),
    ("Slice", 13, ["x", "st", "en"], {"x": ["N", 5]}, {"st": [1], "en": [INT64_MAX]}, {}, 1, [(None, 5)]),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax", "sp"],
        {"x": [5]},
        {"st": [4], "en": [-100], "ax": [0], "sp": [-2]},
        {},
        1,
        [(3,)],
    ),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax", "sp"],
        {"x": [5]},
        {"st": [-1], "en": [-1], "ax": [0], "sp": [-1]},
        {},
        1,
        [(0,)],
    ),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax"],
        {"x": [6, 6]},
        {"st": [1, 2], "en": [5, 4], "ax": [0, 0]},
        {},
        1,
        [(None, 6)],
    ),
    ("Slice", 1, ["x"], {"x": [4, 5]}, {}, {"starts": [1, -2], "ends": [1000, -1]}, 1, [(3, 1)]),
    ("Gather", 13, ["x", "i"], {"x": ["N", 4, 5], "i": ["K", 2]}, {}, {"axis": 1}, 1, [("N", "K", 2, 5)]),
    ("Gather", 13, ["x", "i"], {"x": [3, 4], "i": []}, {}, {"axis": -1}, 1, [(3,)]),
    ("GatherElements", 13, ["x", "i"], {"x": ["N", 4], "i": [None, 2]}, {}, {"axis": 1}, 1, [(None, 2)]),
    ("GatherND", 12, ["x", "i"], {"x": ["B", 3, 4], "i": [None, 5, 1]}, {}, {"batch_dims": 1}, 1, [("B", 5, 4)]),
    ("GatherND", 13, ["x", "i"], {"x": [2, 3], "i": [4, None]}, {}, {}, 1, [None]),
    ("ScatterElements", 18, ["x", "i", "u"], {"x": ["N", 4], "i": [2, 2], "u": [2, 2]}, {}, {}, 1, [("N", 4)]),
    (
        "ScatterND",
        18,
        ["x", "i", "u"],
        {"x": [None, None, 4], "i": [3, 1], "u": [3, 5, None]},
        {},
        {},
        1,
        [(None, 5, 4)],
    ),
    (
        "TensorScatter",
        24,
        ["c", "u", "w"],
        {"c": [None, 8, 4], "u": [2, 3, None], "w": [None]},
        {},
        {"axis": 1},
        1,
        [(2, 8, 4)],
    ),
    ("Pad", 13, ["x", "p"], {"x": ["N", 3]}, {"p": [0, 1, 0, 2]}, {}, 1, [("N", 6)]),
    ("Pad", 13, ["x", "p"], {"x": ["N", 3]}, {"p": [1, 0, -1, 0]}, {}, 1, [("N", 3)]),
    ("Pad", 18, ["x", "p", "", "axes"], {"x": ["N", 3]}, {"p": [1, 1], "axes": [-1]}, {}, 1, [("N", 5)]),
    ("Pad", 2, ["x"], {"x": [2, 3]}, {}, {"pads": [0, 1, 0, 2]}, 1, [(2, 6)]),
    ("Tile", 13, ["x", "reps"], {"x": ["N", 3]}, {"reps": [1, 2]}, {}, 1, [("N", 6)]),
    ("Tile", 13, ["x", "reps"], {"x": ["N", 3]}, {"reps": [2, 0]}, {}, 1, [(None, 0)]),
    ("Expand", 13, ["x", "s"], {"x": ["N", 1]}, {"s": [1, 4]}, {}, 1, [("N", 4)]),
    ("Expand", 13, ["x", "s"], {"x": [3, 1]}, {"s": [2, 1, 1]}, {}, 1, [(2, 3, 1)]),
    ("Expand", 13, ["x", "s"], {"x": ["N"]}, {"s": [2, 5]}, {}, 1, [(2, 5)]),
    ("OneHot", 11, ["i", "d", "v"], {"i": ["N", 3], "v": [2]}, {"d": 10}, {"axis": 1}, 1, [("N", 10, 3)]),
    ("NonZero", 13, ["x"], {"x": ["N", 3]}, {}, {}, 1, [(2, None)]),
    ("NonZero", 13, ["x"], {"x": []}, {}, {}, 1, [(None, None)]),  # (0, N) stated, (1, N) given: unknown
    ("Compress", 11, ["x", "c"], {"x": ["N", 3], "c": [2]}, {}, {"axis": 1}, 1, [("N", None)]),
    ("Unique", 11, ["x"], {"x": ["N", 3]}, {}, {"axis": 0}, 4, [(None, 3), (None,), ("N",), (None,)]),
    ("Unique", 11, ["x"], {"x": ["N"]}, {}, {}, 4, [(None,), (None,), ("N",), (None,)]),
    ("Trilu", 14, ["x"], {"x": ["N", 3, 3]}, {}, {}, 1, [("N", 3, 3)]),
    ("CenterCropPad", 18, ["x", "s"], {"x": ["N", "H", "W"]}, {"s": [5, 7]}, {"axes": [1, 2]}, 1, [("N", 5, 7)]),
    ("DepthToSpace", 13, ["x"], {"x": ["N", 8, "H", 3]}, {}, {"blocksize": 2}, 1, [("N", 2, None, 6)]),
    ("SpaceToDepth", 13, ["x"], {"x": ["N", "C", 4, 6]}, {}, {"blocksize": 2}, 1, [("N", None, 2, 3)]),
    ("SpaceToDepth", 13, ["x"], {"x": ["N", "C", "H", 6]}, {}, {"blocksize": 1}, 1, [("N", "C", "H", 6)]),
    ("ReverseSequence", 10, ["x", "l"], {"x": [None, "B", 4], "l": [3]}, {}, {}, 1, [(None, 3, 4)]),
    ("TopK", 11, ["x", "K"], {"x": ["N", 10]}, {"K": [3]}, {}, 2, [("N", 3), ("N", 3)]),
    ("TopK", 1, ["x"], {"x": [10, "N"]}, {}, {"k": 3, "axis": 0}, 2, [(3, "N"), (3, "N")]),
]


@pytest.mark.parametrize(("op", "opset", "names", "decl", "consts", "attrs", "n_out", "expected"), _KNOWN)
def test_what_the_definitions_entail(op, opset, names, decl, consts, attrs, n_out, expected) -> None:
    r = _node(op, opset, names, decl, consts, attrs, n_out)
    assert not r.incompatibilities, [i.message for i in r.incompatibilities]
    assert [r.shape(f"y{i}") for i in range(n_out)] == expected


# Shape-like operands that are graph inputs (not constant): what is certain whatever they hold.
_NOT_CONSTANT = [
    ("Reshape", 13, ["x", "s"], {"x": [2, 3, 4], "s": [2]}, {}, 1, [(None, None)]),
    ("Reshape", 13, ["x", "s"], {"x": [2, 3, 4], "s": [None]}, {}, 1, [None]),
    ("Expand", 13, ["x", "s"], {"x": [3, 1, "N"], "s": [4]}, {}, 1, [(None, 3, None, None)]),
    ("Expand", 13, ["x", "s"], {"x": [3, 0], "s": [1]}, {}, 1, [(3, 0)]),
    ("Tile", 13, ["x", "reps"], {"x": [2, 0, "N"], "reps": [3]}, {}, 1, [(None, 0, None)]),
    ("Slice", 13, ["x", "st", "en", "ax"], {"x": ["N", 4, 5], "st": [1], "en": [1]}, {"ax": [1]}, 1, [("N", None, 5)]),
    ("Slice", 13, ["x", "st", "en"], {"x": ["N", 4, 5], "st": [2], "en": [2]}, {}, 1, [(None, None, 5)]),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax"],
        {"x": ["N", 4, 5], "ax": [1]},
        {"st": [0], "en": [2]},
        1,
        [(None, None, None)],
    ),
    ("Squeeze", 13, ["x", "axes"], {"x": [1, 3, 1], "axes": [1]}, {}, 1, [None]),
    ("Unsqueeze", 13, ["x", "axes"], {"x": ["N", 3], "axes": [2]}, {}, 1, [(None, None, None, None)]),
    ("Pad", 13, ["x", "p"], {"x": ["N", 3], "p": [4]}, {}, 1, [(None, None)]),
    ("Pad", 18, ["x", "p", "", "axes"], {"x": ["N", 3], "p": [2]}, {"axes": [1]}, 1, [("N", None)]),
    ("Split", 13, ["x", "split"], {"x": ["N", 6], "split": [2]}, {}, 2, [(None, 6), (None, 6)]),
    ("TopK", 11, ["x", "K"], {"x": ["N", 10], "K": [1]}, {}, 2, [("N", None), ("N", None)]),
    ("OneHot", 11, ["i", "d", "v"], {"i": ["N"], "d": [], "v": [2]}, {}, 1, [("N", None)]),
    ("CenterCropPad", 18, ["x", "s"], {"x": ["N", 4, 4], "s": [3]}, {}, 1, [(None, None, None)]),
]


@pytest.mark.parametrize(("op", "opset", "names", "decl", "consts", "n_out", "expected"), _NOT_CONSTANT)
def test_a_shape_like_operand_not_constant_leaves_what_is_certain(
    op, opset, names, decl, consts, n_out, expected
) -> None:
    r = _node(op, opset, names, decl, consts, {}, n_out)
    assert not r.incompatibilities
    assert [r.shape(f"y{i}") for i in range(n_out)] == expected


# --- contradictions (Clause 10.3): one incompatibility, at the node -------------------------------

_CONTRADICTIONS = [
    ("Reshape", 13, ["x", "s"], {"x": [2, 3]}, {"s": [4, 2]}, {}, 1, "cannot be reshaped"),
    ("Reshape", 13, ["x", "s"], {"x": [2, 3]}, {"s": [-1, -1]}, {}, 1, "more than one -1"),
    ("Reshape", 14, ["x", "s"], {"x": [0, 3]}, {"s": [0, -1]}, {"allowzero": 1}, 1, "both 0 and -1"),
    ("Reshape", 13, ["x", "s"], {"x": [0, 3]}, {"s": [0, -1]}, {}, 1, "cannot be inferred"),
    ("Reshape", 13, ["x", "s"], {"x": [2, 3]}, {"s": [0, 0, 0]}, {}, 1, "no extent"),
    ("Reshape", 13, ["x", "s"], {"x": ["N"]}, {"s": [-2]}, {}, 1, "below -1"),
    ("Flatten", 9, ["x"], {"x": [2, 3]}, {}, {"axis": -1}, 1, "out of range"),
    ("Flatten", 13, ["x"], {"x": [2, 3]}, {}, {"axis": 3}, 1, "out of range"),
    ("Transpose", 13, ["x"], {"x": [2, 3]}, {}, {"perm": [0, 0]}, 1, "not a permutation"),
    ("Concat", 13, ["x0", "x1"], {"x0": [2, 3], "x1": [2, 4]}, {}, {"axis": 0}, 1, "3 and 4 differ"),
    ("Concat", 13, ["x0", "x1"], {"x0": [2, 3], "x1": [2]}, {}, {"axis": 0}, 1, "ranks"),
    ("Concat", 4, ["x0"], {"x0": [2, 3]}, {}, {"axis": 2}, 1, "out of range"),
    ("Split", 13, ["x"], {"x": [5]}, {}, {}, 2, "equal parts"),
    ("Split", 13, ["x", "split"], {"x": [5]}, {"split": [2, 2]}, {}, 2, "do not sum"),
    ("Split", 11, ["x"], {"x": [5]}, {}, {"split": [5]}, 2, "1 split sizes for 2 outputs"),
    ("Split", 18, ["x"], {"x": [6]}, {}, {"num_outputs": 3}, 2, "num_outputs=3"),
    ("Split", 18, ["x"], {"x": [5]}, {}, {"num_outputs": 4}, 4, "cannot be split"),
    ("Split", 18, ["x"], {"x": [4]}, {}, {}, 2, "neither"),
    ("Squeeze", 13, ["x", "axes"], {"x": [2, 1]}, {"axes": [0]}, {}, 1, "not 1"),
    ("Squeeze", 11, ["x"], {"x": [2, 1]}, {}, {"axes": [2]}, 1, "out of range"),
    ("Unsqueeze", 13, ["x", "axes"], {"x": [2]}, {"axes": [0, 0]}, {}, 1, "repeat"),
    ("Unsqueeze", 13, ["x", "axes"], {"x": [2]}, {"axes": [2]}, {}, 1, "out of range"),
    (
        "Slice",
        13,
        ["x", "st", "en", "ax", "sp"],
        {"x": [4]},
        {"st": [0], "en": [2], "ax": [0], "sp": [0]},
        {},
        1,
        "step is 0",
    ),
    ("Slice", 13, ["x", "st", "en"], {"x": [4]}, {"st": [0], "en": [2, 3]}, {}, 1, "1 starts but 2 ends"),
    ("Slice", 10, ["x", "st", "en", "ax"], {"x": [4]}, {"st": [0], "en": [2], "ax": [1]}, {}, 1, "out of range"),
    ("Gather", 13, ["x", "i"], {"x": [2, 3], "i": [4]}, {}, {"axis": 2}, 1, "out of range"),
    ("Gather", 13, ["x", "i"], {"x": [], "i": [4]}, {}, {}, 1, "scalar"),
    ("GatherElements", 13, ["x", "i"], {"x": [2, 3], "i": [2]}, {}, {}, 1, "rank"),
    ("GatherND", 12, ["x", "i"], {"x": [2, 3], "i": [3, 1]}, {}, {"batch_dims": 1}, 1, "2 and 3 differ"),
    ("GatherND", 13, ["x", "i"], {"x": [2, 3], "i": [4, 3]}, {}, {}, 1, "exceed"),
    ("ScatterElements", 13, ["x", "i", "u"], {"x": [4, 4], "i": [2, 2], "u": [2, 3]}, {}, {}, 1, "2 and 3 differ"),
    ("ScatterND", 13, ["x", "i", "u"], {"x": [4, 5], "i": [3, 1], "u": [3, 6]}, {}, {}, 1, "differ"),
    ("TensorScatter", 24, ["c", "u"], {"c": [2, 4, 8], "u": [2, 6, 8]}, {}, {"axis": 1}, 1, "exceeds"),
    ("TensorScatter", 24, ["c", "u"], {"c": [2, 4, 8], "u": [2, 4, 8]}, {}, {"axis": 0}, 1, "batch axis"),
    ("Pad", 13, ["x", "p"], {"x": [2, 3]}, {"p": [0, 1, 0]}, {}, 1, "3 pads for 2 axes"),
    ("Pad", 13, ["x", "p"], {"x": [2]}, {"p": [-2, -1]}, {}, 1, "remove more"),
    ("Tile", 13, ["x", "reps"], {"x": [2, 3]}, {"reps": [2]}, {}, 1, "1 repeats for an input of rank 2"),
    ("Tile", 13, ["x", "reps"], {"x": [2]}, {"reps": [-1]}, {}, 1, "negative"),
    ("Expand", 13, ["x", "s"], {"x": [3]}, {"s": [2]}, {}, 1, "not broadcastable"),
    ("OneHot", 11, ["i", "d", "v"], {"i": [3], "v": [2]}, {"d": 4}, {"axis": 2}, 1, "out of range"),
    ("OneHot", 11, ["i", "d", "v"], {"i": [3], "v": [2]}, {"d": -4}, {}, 1, "negative"),
    ("Compress", 11, ["x", "c"], {"x": [3], "c": [1, 3]}, {}, {"axis": 0}, 1, "condition of rank 2"),
    ("Trilu", 14, ["x"], {"x": [3]}, {}, {}, 1, "rank >= 2"),
    ("CenterCropPad", 18, ["x", "s"], {"x": [3, 3]}, {"s": [2]}, {}, 1, "for 2 axes"),
    ("DepthToSpace", 13, ["x"], {"x": [1, 6, 2, 2]}, {}, {"blocksize": 2}, 1, "not divisible"),
    ("DepthToSpace", 13, ["x"], {"x": [1, 8, 2]}, {}, {"blocksize": 2}, 1, "rank 3"),
    ("SpaceToDepth", 13, ["x"], {"x": [1, 3, 5, 4]}, {}, {"blocksize": 2}, 1, "height 5"),
    ("ReverseSequence", 10, ["x", "l"], {"x": [4, 2], "l": [3]}, {}, {}, 1, "2 and 3 differ"),
    (
        "ReverseSequence",
        10,
        ["x", "l"],
        {"x": [4, 2], "l": [2]},
        {},
        {"batch_axis": 0, "time_axis": 0},
        1,
        "are not 0 and 1",
    ),
    ("TopK", 11, ["x", "K"], {"x": [2, 3]}, {"K": [4]}, {}, 2, "exceeds"),
    ("TopK", 11, ["x", "K"], {"x": [2, 3]}, {"K": [1, 2]}, {}, 2, "holds 2 values"),
]


@pytest.mark.parametrize(("op", "opset", "names", "decl", "consts", "attrs", "n_out", "message"), _CONTRADICTIONS)
def test_a_contradiction_is_one_incompatibility(op, opset, names, decl, consts, attrs, n_out, message) -> None:
    r = _node(op, opset, names, decl, consts, attrs, n_out)
    [inc] = r.incompatibilities
    assert inc.op_type == op and message in inc.message, inc.message
    assert all(r.shape(f"y{i}") is None for i in range(n_out))


def test_contradictions_are_only_between_fixed_extents() -> None:
    # The same nodes with a dimension variable or an unknown extent in the way are not contradictions.
    cases = [
        ("Concat", 13, ["x0", "x1"], {"x0": [2, "A"], "x1": [2, 4]}, {}, {"axis": 0}, 1),
        ("Split", 13, ["x"], {"x": ["N"]}, {}, {}, 2),
        ("Squeeze", 13, ["x", "axes"], {"x": ["N", 1]}, {"axes": [0]}, {}, 1),
        ("Reshape", 13, ["x", "s"], {"x": [None, 3]}, {"s": [4, 2]}, {}, 1),
        ("Expand", 13, ["x", "s"], {"x": ["N"]}, {"s": [2]}, {}, 1),
        ("DepthToSpace", 13, ["x"], {"x": [1, "C", 2, 2]}, {}, {"blocksize": 2}, 1),
        ("TopK", 11, ["x", "K"], {"x": [2, None]}, {"K": [4]}, {}, 2),
        ("GatherND", 12, ["x", "i"], {"x": ["B", 3], "i": [3, 1]}, {}, {"batch_dims": 1}, 1),
    ]
    for op, opset, names, decl, consts, attrs, n_out in cases:
        r = _node(op, opset, names, decl, consts, attrs, n_out)
        assert not r.incompatibilities, (op, [i.message for i in r.incompatibilities])
        assert all(r.shape(f"y{i}") is not None for i in range(n_out)) or op == "Squeeze"
