"""Shape rules of :mod:`onnxcore.infer.shape_ops.linalg` (Clause 9) against the shapes the node actually has.

Each case is one small graph run on random data (onnxruntime where it has the operator, else
:class:`onnxcore.Session`). It is inferred three times: with every input extent fixed (the inferred shape
must be the actual one, in full unless the definition leaves an extent to the data), with every extent a
dimension variable of its own (every extent stated must be the actual one, a variable only where it takes
that value: Clause 9.3), and with every extent unknown. No valid case may report an incompatibility; the
contradictory nodes at the end report exactly one, and the runtime refuses them too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore.infer import shape_step
from onnxcore.infer.shapes import infer_shapes
from onnxcore.proto.messages import ModelProto

ML, TRAINING = "ai.onnx.ml", "ai.onnx.preview.training"
REDUCE_OPS = [
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare",
]  # fmt: skip


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_step, "STRICT", True)


@dataclass
class Case:
    """A graph to infer and run.

    Attributes:
        id: The test id.
        nodes: The graph's nodes.
        feeds: A value for every graph input and constant (initializer).
        opsets: Domain -> imported version.
        outputs: The tensor outputs compared.
        consts: Feeds stored as initializers (their values are statically known).
        partial: Outputs whose extents the definition leaves to data: compared for consistency only.
        runtime: "ort" or "onnxcore".
        fixed: Graph inputs declared with their static shape in every mode.
        extra_outputs: Outputs run but not compared (sequences, maps).
    """

    id: str
    nodes: list[onnx.NodeProto]
    feeds: dict[str, Any]
    opsets: dict[str, int]
    outputs: list[str]
    consts: frozenset[str] = frozenset()
    partial: frozenset[str] = frozenset()
    runtime: str = "ort"
    fixed: frozenset[str] = frozenset()
    extra_outputs: list[str] = field(default_factory=list)


def _elem(v: Any) -> int:
    a = np.asarray(v)
    return T.STRING if a.dtype == object else h.np_dtype_to_tensor_dtype(a.dtype)


def _input(name: str, v: Any, mode: str) -> onnx.ValueInfoProto:
    if isinstance(v, dict):  # a map(int64, float)
        return h.make_value_info(name, h.make_map_type_proto(T.INT64, h.make_tensor_type_proto(T.FLOAT, None)))
    shape = np.asarray(v).shape
    dims: list[Any] = list(shape)
    if mode == "sym":
        dims = [f"{name}_{i}" for i in range(len(shape))]
    elif mode == "unknown":
        dims = [None] * len(shape)
    return h.make_tensor_value_info(name, _elem(v), dims)


def _onnx_model(case: Case, mode: str) -> onnx.ModelProto:
    modes = {n: "static" if n in case.fixed else mode for n in case.feeds}
    inputs = [_input(n, v, modes[n]) for n, v in case.feeds.items() if n not in case.consts]
    inits = [numpy_helper.from_array(np.asarray(case.feeds[n]), n) for n in case.consts]
    outs = [onnx.ValueInfoProto(name=n) for n in case.outputs + case.extra_outputs]
    g = h.make_graph(case.nodes, "g", inputs, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in case.opsets.items()])
    m.ir_version = 10
    return m


def _infer(case: Case, mode: str) -> tuple[dict[str, Any], list[str]]:
    m = onnxcore.decode(ModelProto, _onnx_model(case, mode).SerializeToString())
    r = infer_shapes(m)
    return {n: r.shape(n) for n in case.outputs}, [i.message for i in r.incompatibilities]


def _run(case: Case) -> dict[str, tuple[int, ...]]:
    data = _onnx_model(case, "static").SerializeToString()
    feeds = {n: v for n, v in case.feeds.items() if n not in case.consts}
    if case.runtime == "ort":
        sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        res = sess.run(None, feeds)
    else:
        s = onnxcore.Session(data, check=False)
        names = case.outputs + case.extra_outputs
        res = s.run(None, feeds)
    got = dict(zip(names, res))
    return {n: tuple(np.asarray(got[n]).shape) for n in case.outputs}


def _consistent(inferred: Any, actual: tuple[int, ...], env: dict[str, int]) -> bool:
    """Every extent stated is the actual one (a variable: the value it takes in this run)."""
    if inferred is None:
        return True
    if len(inferred) != len(actual):
        return False
    return all(d is None or (env.get(d) if isinstance(d, str) else d) == a for d, a in zip(inferred, actual))


def _check(case: Case) -> None:
    actual = _run(case)
    static, bad = _infer(case, "static")
    assert not bad, bad
    for n in case.outputs:
        if n in case.partial:
            assert _consistent(static[n], actual[n], {}), (n, static[n], actual[n])
        else:
            assert static[n] == actual[n], (n, static[n], actual[n])
    env = {
        f"{name}_{i}": d
        for name, v in case.feeds.items()
        if not isinstance(v, dict)
        for i, d in enumerate(np.asarray(v).shape)
    }
    for mode in ("sym", "unknown"):
        inferred, bad = _infer(case, mode)
        assert not bad, (mode, bad)
        for n in case.outputs:
            assert _consistent(inferred[n], actual[n], env), (mode, n, inferred[n], actual[n])
            # The ranks of the inputs are still stated, and so is the rank of every output.
            assert inferred[n] is not None or n in case.partial, (mode, n)


def _f(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asarray(rng.random(shape, dtype=np.float32) + np.float32(0.5))


def _i64(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=np.int64)


def _strings(rng: np.random.Generator, *shape: int) -> np.ndarray:
    words = ["a b", "x", "c d e", "", "x y"]
    return np.array([words[int(i)] for i in rng.integers(0, len(words), int(np.prod(shape)))], object).reshape(shape)


# --- case generators ------------------------------------------------------------------------------


def _broadcastable(rng: random.Random, shape: list[int]) -> list[int]:
    """A shape multidirectionally broadcastable with ``shape``: a suffix, some extents replaced by 1."""
    tail = shape[len(shape) - rng.randint(0, len(shape)) :]
    return [1 if rng.random() < 0.3 else d for d in tail]


def matmul_cases() -> Iterator[Case]:
    rng, nrng = random.Random(1), np.random.default_rng(1)
    for k in range(90):
        ra, rb = rng.randint(1, 4), rng.randint(1, 4)
        batch = [rng.randint(1, 3) for _ in range(max(ra, rb) - 2)]
        op = ("MatMul", "MatMulInteger", "QLinearMatMul")[k % 3]
        m, kk, n = rng.randint(1, 4), rng.randint(0 if op == "MatMul" else 1, 4), rng.randint(1, 4)
        ba = _broadcastable(rng, batch)[: max(0, ra - 2)] if ra > 2 else []
        bb = batch[len(batch) - max(0, rb - 2) :] if rb > 2 else []
        a = [kk] if ra == 1 else [*ba, m, kk]
        b = [kk] if rb == 1 else [*[1 if rng.random() < 0.3 else d for d in bb], kk, n]
        if op == "MatMul":
            feeds = {"a": _f(nrng, *a), "b": _f(nrng, *b)}
            node = h.make_node("MatMul", ["a", "b"], ["y"])
            opset = (9, 13)[k % 2]
        elif op == "MatMulInteger":
            feeds = {"a": np.ones(a, np.uint8), "b": np.ones(b, np.uint8)}
            node, opset = h.make_node("MatMulInteger", ["a", "b"], ["y"]), 10
        else:
            sc, zp = np.array(0.5, np.float32), np.array(1, np.uint8)
            feeds = {"a": np.ones(a, np.uint8), "sa": sc, "za": zp, "b": np.ones(b, np.uint8), "sb": sc, "zb": zp}
            feeds |= {"sy": sc, "zy": zp}
            node = h.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
            opset = (10, 21)[k % 2]
        # With K = 0 onnxruntime drops the broadcast batch extents ((2,1,1,0) x (1,2,0,3) gives (2,1,1,3),
        # numpy.matmul (2,2,1,3)): those products run on onnxcore.
        runtime = "onnxcore" if kk == 0 else "ort"
        yield Case(f"{op}{opset}-{a}x{b}", [node], feeds, {"": opset}, ["y"], runtime=runtime)


def gemm_cases() -> Iterator[Case]:
    rng, nrng = random.Random(2), np.random.default_rng(2)
    for k in range(72):
        m, kk, n = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4)
        ta, tb = rng.randint(0, 1), rng.randint(0, 1)
        opset = (7, 9, 11, 13)[k % 4]
        c = rng.choice([[m, n], [n], [1, n], [m, 1], [1], [], None])
        if c is None and opset < 11:
            c = [m, n]
        feeds = {"a": _f(nrng, *([kk, m] if ta else [m, kk])), "b": _f(nrng, *([n, kk] if tb else [kk, n]))}
        if c is not None:
            feeds["c"] = _f(nrng, *c)
        node = h.make_node("Gemm", list(feeds), ["y"], transA=ta, transB=tb, alpha=0.5)
        yield Case(f"Gemm{opset}-t{ta}{tb}-{m}x{kk}x{n}-c{c}", [node], feeds, {"": opset}, ["y"])
    for opset, bc, c in ((1, 0, [2, 4]), (6, 0, [2, 4]), (6, 1, [4]), (6, 1, [2, 1]), (1, 1, [1])):
        feeds = {"a": _f(nrng, 3, 2), "b": _f(nrng, 3, 4), "c": _f(nrng, *c)}
        node = h.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, broadcast=bc)
        yield Case(f"Gemm{opset}-broadcast{bc}-c{c}", [node], feeds, {"": opset}, ["y"], runtime="onnxcore")


EINSUM = [
    "ij,jk->ik", "ij,jk", "bij,bjk->bik", "...ij,...jk->...ik", "...ij,...jk", "i...j,jk->...ik", "ii->i", "ii",
    "ij->ji", "ij->", "i,i", "i,j->ij", "bhqd,bhkd->bhqk", "ab...,b->a...", "...i->...", "Ab,bC->AC",
    "ij,jk,kl->il", "i,i->", "...,...->...", "bij,jk", "ji", ",i->i",
]  # fmt: skip


def einsum_cases() -> Iterator[Case]:
    rng, nrng = random.Random(3), np.random.default_rng(3)
    for eq in EINSUM:
        for k in range(6):
            lhs = eq.split("->")[0]
            size = {c: rng.randint(1, 4) for c in sorted(set(lhs)) if c.isalpha()}
            v = k % 3  # 0: Einsum-28, 1: plain, 2: letters broadcasting against 1
            ell = [rng.randint(1, 3) for _ in range(rng.randint(0, 2) if v else 2)]
            feeds = {}
            for t, term in enumerate(lhs.split(",")):
                head, dots, tail = term.partition("...")
                diag = {c for c in term if term.count(c) > 1}

                # A letter may broadcast against 1 (not on a diagonal, which needs equal extents).
                dims = [1 if v == 2 and c not in diag and rng.random() < 0.3 else size[c] for c in head + tail]
                e = [1 if rng.random() < 0.3 else d for d in ell] if dots else []
                feeds[f"x{t}"] = _f(nrng, *dims[: len(head)], *e, *dims[len(head) :])
            node = h.make_node("Einsum", list(feeds), ["y"], equation=eq)
            # Einsum-28 (a type change only) is newer than onnxruntime's operator sets.
            runtime = "ort" if v else "onnxcore"
            yield Case(f"Einsum-{eq}-{k}", [node], feeds, {"": 12 if v else 28}, ["y"], runtime=runtime)


def _axes_subset(rng: random.Random, rank: int) -> list[int]:
    axes = rng.sample(range(rank), rng.randint(0, rank))
    return [a - rank if rng.random() < 0.5 else a for a in axes]


def reduce_cases() -> Iterator[Case]:
    rng, nrng = random.Random(4), np.random.default_rng(4)
    for op in REDUCE_OPS:
        new = 13 if op == "ReduceSum" else 18
        for k in range(16):
            rank = rng.choice([0, 1, 2, 3, 4, 3])
            x = _f(nrng, *[rng.randint(1, 4) for _ in range(rank)])
            keep = rng.randint(0, 1)
            axes = _axes_subset(rng, rank)
            if k % 4 == 0:  # the attribute form
                opset = (1, 11, new - 1 if new == 18 else 11, 11)[k // 4]
                node = h.make_node(op, ["x"], ["y"], keepdims=keep)
                if axes or k == 4:  # k == 4: the attribute set, possibly to an empty list
                    node.attribute.append(h.make_attribute("axes", axes, attr_type=onnx.AttributeProto.INTS))
                yield Case(f"{op}{opset}-{list(x.shape)}-{axes}-k{keep}", [node], {"x": x}, {"": opset}, ["y"])
                continue
            noop = rng.randint(0, 1)
            mode = ("const", "const", "input", "omitted", "empty-input")[k % 5]
            feeds: dict[str, Any] = {"x": x}
            if mode != "omitted":
                feeds["axes"] = _i64([] if mode == "empty-input" else axes)
            node = h.make_node(op, list(feeds), ["y"], keepdims=keep, noop_with_empty_axes=noop)
            consts = frozenset({"axes"}) if mode == "const" else frozenset()
            partial = frozenset({"y"}) if mode == "input" else frozenset()
            cid = f"{op}{new}-{list(x.shape)}-{mode}{axes}-k{keep}-n{noop}"
            fixed = frozenset({"axes"}) if mode == "empty-input" else frozenset()  # its length tells it is empty
            yield Case(cid, [node], feeds, {"": new}, ["y"], consts=consts, partial=partial, fixed=fixed)


def axis_op_cases() -> Iterator[Case]:
    rng, nrng = random.Random(5), np.random.default_rng(5)
    for k in range(96):
        rank = rng.randint(1, 4)
        x = _f(nrng, *[rng.randint(1, 4) for _ in range(rank)])
        axis = rng.randint(-rank, rank - 1)
        op = ("ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax", "CumSum", "CumProd", "Det")[k % 8]
        if op in ("ArgMax", "ArgMin"):
            opset = (1, 11, 12, 13)[k % 4]
            axis = abs(axis) % rank if opset == 1 else axis
            node = h.make_node(op, ["x"], ["y"], axis=axis, keepdims=rng.randint(0, 1))
            yield Case(f"{op}{opset}-{list(x.shape)}-{axis}", [node], {"x": x}, {"": opset}, ["y"])
        elif op in ("Softmax", "LogSoftmax", "Hardmax"):
            opset = (1, 11, 13)[k % 3]
            axis = abs(axis) % rank if opset == 1 else axis
            node = h.make_node(op, ["x"], ["y"], axis=axis)
            yield Case(f"{op}{opset}-{list(x.shape)}-{axis}", [node], {"x": x}, {"": opset}, ["y"])
        elif op in ("CumSum", "CumProd"):
            opset = 26 if op == "CumProd" else (11, 14)[k % 2]
            consts = frozenset({"axis"}) if k % 3 else frozenset()
            node = h.make_node(op, ["x", "axis"], ["y"], exclusive=rng.randint(0, 1), reverse=rng.randint(0, 1))
            feeds = {"x": x, "axis": _i64(axis)}
            yield Case(f"{op}{opset}-{list(x.shape)}-{axis}", [node], feeds, {"": opset}, ["y"], consts=consts)
        else:
            m = rng.randint(1, 4)
            x = _f(nrng, *[rng.randint(1, 3) for _ in range(rng.randint(0, 2))], m, m)
            opset = (11, 22)[k % 2]
            yield Case(f"Det{opset}-{list(x.shape)}", [h.make_node("Det", ["x"], ["y"])], {"x": x}, {"": opset}, ["y"])


def dft_cases() -> Iterator[Case]:
    rng, nrng = random.Random(6), np.random.default_rng(6)
    for k in range(120):
        opset = (17, 20)[k % 2]
        rank = rng.randint(3, 4)
        x = _f(nrng, *[rng.randint(1, 6) for _ in range(rank - 1)], rng.randint(1, 2))
        inverse, onesided = rng.randint(0, 1), rng.randint(0, 1)
        if onesided and x.shape[-1] == 2 - inverse:
            continue  # RFFT takes real input only, IRFFT complex input only
        a = rng.randint(0, rank - 2)
        axis = a - rank if rng.random() < 0.5 else a
        feeds: dict[str, Any] = {"x": x}
        consts: set[str] = set()
        length_mode = rng.choice(["omitted", "const", "input"])
        if length_mode != "omitted":
            feeds["n"] = _i64(rng.randint(2, 9))
            consts |= {"n"} if length_mode == "const" else set()
        attrs = {"inverse": inverse, "onesided": onesided}
        ins = list(feeds)
        axis_mode = rng.choice(["omitted", "const", "input"])
        if opset == 17:
            attrs |= {"axis": axis} if axis_mode != "omitted" else {}
            if axis_mode == "omitted" and x.ndim < 3:
                continue
        elif axis_mode != "omitted":
            ins = ["x", ins[1] if len(ins) > 1 else "", "axis"]
            feeds["axis"] = _i64(axis)
            consts |= {"axis"} if axis_mode == "const" else set()
        partial = frozenset({"y"}) if "input" in (length_mode, axis_mode if opset == 20 else "") else frozenset()
        node = h.make_node("DFT", ins, ["y"], **attrs)
        cid = f"DFT{opset}-{list(x.shape)}-ax{axis_mode}{axis}-n{length_mode}-i{inverse}o{onesided}"
        yield Case(cid, [node], feeds, {"": opset}, ["y"], consts=frozenset(consts), partial=partial)


def stft_cases() -> Iterator[Case]:
    rng, nrng = random.Random(7), np.random.default_rng(7)
    for k in range(48):
        length, fl = rng.randint(8, 30), rng.randint(2, 8)
        s = _f(nrng, rng.randint(1, 3), length, *([] if k % 5 == 0 else [rng.randint(1, 2)]))
        feeds: dict[str, Any] = {"s": s, "step": _i64(rng.randint(1, 4))}
        consts = {"step"}
        window, fmode = rng.choice(["omitted", "input", "const"]), rng.choice(["omitted", "input", "const"])
        if window == "omitted" and fmode == "omitted":
            fmode = "const"
        ins = ["s", "step", "w" if window != "omitted" else ""]
        if window != "omitted":
            feeds["w"] = _f(nrng, fl)
            consts |= {"w"} if window == "const" else set()
        if fmode != "omitted":
            ins.append("fl")
            feeds["fl"] = _i64(fl)
            consts |= {"fl"} if fmode == "const" else set()
        node = h.make_node("STFT", ins, ["y"], onesided=rng.randint(0, 1))
        partial = frozenset({"y"}) if fmode == "input" and window == "omitted" else frozenset()
        cid = f"STFT-{list(s.shape)}-w{window}-fl{fmode}{fl}"
        yield Case(cid, [node], feeds, {"": 17}, ["y"], consts=frozenset(consts), partial=partial)
    # Neither window nor frame_length: the frame is the whole signal (onnxruntime refuses this form).
    node = h.make_node("STFT", ["s", "step"], ["y"], onesided=0)
    feeds = {"s": _f(nrng, 2, 12, 1), "step": _i64(3)}
    yield Case("STFT-whole-signal", [node], feeds, {"": 17}, ["y"], consts=frozenset({"step"}), runtime="onnxcore")


def window_cases() -> Iterator[Case]:
    nrng = np.random.default_rng(8)
    for op in ("BlackmanWindow", "HammingWindow", "HannWindow"):
        node = h.make_node(op, ["n"], ["y"], periodic=0)
        yield Case(f"{op}-input", [node], {"n": _i64(10)}, {"": 17}, ["y"], partial=frozenset({"y"}))
        # Too large to be folded by the kernel: the rule reads the constant size.
        yield Case(f"{op}-const", [node], {"n": _i64(70_000)}, {"": 17}, ["y"], consts=frozenset({"n"}))
    node = h.make_node("MelWeightMatrix", ["bins", "n", "rate", "lo", "hi"], ["y"])
    feeds = {"bins": _i64(8), "n": _i64(16), "rate": _i64(8000), "lo": np.array(0, np.float32)}
    feeds["hi"] = np.array(4000, np.float32)
    yield Case("Mel-const", [node], feeds, {"": 17}, ["y"], consts=frozenset({"bins", "n", "lo"}))
    yield Case("Mel-input", [node], feeds, {"": 17}, ["y"], consts=frozenset({"n"}), partial=frozenset({"y"}))
    del nrng


def text_cases() -> Iterator[Case]:
    rng, nrng = random.Random(9), np.random.default_rng(9)
    for k in range(8):
        a = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
        b = _broadcastable(rng, a) if k % 2 else a
        feeds = {"a": _strings(nrng, *a), "b": _strings(nrng, *b)}
        if k % 3 == 0:
            feeds = {"a": feeds["b"], "b": feeds["a"]}
        node = h.make_node("StringConcat", ["a", "b"], ["y"])
        yield Case(f"StringConcat-{a}-{b}", [node], feeds, {"": 20}, ["y"])
        x = _strings(nrng, *[rng.randint(0, 3) for _ in range(rng.randint(0, 3))])
        node = h.make_node("StringSplit", ["x"], ["y", "z"], **({"delimiter": " "} if k % 2 else {}))
        yield Case(f"StringSplit-{list(x.shape)}", [node], {"x": x}, {"": 20}, ["y", "z"], partial=frozenset({"y"}))
        node = h.make_node("RegexFullMatch", ["x"], ["y"], pattern="a.*")
        yield Case(f"RegexFullMatch-{list(x.shape)}", [node], {"x": x}, {"": 20}, ["y"])
        c = rng.randint(1, 4)
        x = _strings(nrng, *([c] if k % 2 else [1, c]))
        stop = {"stopwords": ["x"]} if k % 4 < 2 else {}
        # locale C: onnxruntime cannot construct its default en_US locale everywhere.
        node = h.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER", locale="C", **stop)
        partial = frozenset({"y"}) if stop else frozenset()
        yield Case(f"StringNormalizer-{list(x.shape)}-{stop}", [node], {"x": x}, {"": 10}, ["y"], partial=partial)
        x = nrng.integers(0, 5, [rng.randint(1, 6)] if k % 2 else [rng.randint(1, 3), rng.randint(1, 6)])
        idx = rng.sample(range(8), 3)
        attrs = dict(ngram_counts=[0, 2], ngram_indexes=idx, pool_int64s=[1, 2, 1, 2], max_skip_count=1)
        node = h.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=2, **attrs)
        yield Case(f"TfIdf-{list(x.shape)}-{idx}", [node], {"x": x.astype(np.int64)}, {"": 9}, ["y"])


def optional_sequence_cases() -> Iterator[Case]:
    nrng = np.random.default_rng(10)
    nodes = [
        h.make_node("Optional", ["x"], ["o"]),
        h.make_node("OptionalHasElement", ["o"], ["has"]),
        h.make_node("OptionalGetElement", ["o"], ["y"]),
        h.make_node("OptionalGetElement", ["x"], ["z"]),
    ]
    yield Case("Optional", nodes, {"x": _f(nrng, 2, 3)}, {"": 18}, ["has", "y", "z"], partial=frozenset({"y"}))
    nodes = [
        h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
        h.make_node("SequenceLength", ["s"], ["n"]),
        h.make_node("SequenceAt", ["s", "pos"], ["t"]),
        h.make_node("SequenceInsert", ["s", "a"], ["s2"]),
        h.make_node("SequenceErase", ["s2"], ["s3"]),
        h.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=0),
        h.make_node("SplitToSequence", ["a"], ["s4"], axis=1),
        h.make_node("SequenceLength", ["s4"], ["n2"]),
        h.make_node("SequenceEmpty", [], ["s5"]),
        h.make_node("SequenceLength", ["s5"], ["n3"]),
    ]
    feeds = {"a": _f(nrng, 2, 3), "b": _f(nrng, 4, 3), "pos": _i64(1)}
    yield Case("Sequences", nodes, feeds, {"": 24}, ["n", "t", "cat", "n2", "n3"], partial=frozenset({"t", "cat"}))


def _tree(prefix: str, targets: list[int], **extra: Any) -> dict[str, Any]:
    """One tree: the root splits on feature 0, two leaves voting for ``targets``."""
    return {
        "nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [0, 0, 0],
        "nodes_values": [0.5, 0.0, 0.0], "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
        "nodes_truenodeids": [1, 0, 0], "nodes_falsenodeids": [2, 0, 0], f"{prefix}_treeids": [0, 0],
        f"{prefix}_nodeids": [1, 2], f"{prefix}_ids": targets, f"{prefix}_weights": [0.3, 0.7], **extra,
    }  # fmt: skip


def ml_cases() -> Iterator[Case]:
    rng, nrng = random.Random(11), np.random.default_rng(11)

    def ml(cid: str, op: str, x: Any, outs: list[str], version: int = 3, **attrs: Any) -> Case:
        node = h.make_node(op, ["x"], outs, domain=ML, **attrs)
        extra = [o for o in outs if o == "map"]
        return Case(cid, [node], {"x": x}, {"": 17, ML: version}, [o for o in outs if o != "map"], extra_outputs=extra)

    for k in range(12):
        f = rng.randint(1, 4)
        x = _f(nrng, *([f] if k % 3 == 0 else [rng.randint(1, 4), f]))
        rows, labels = rng.choice([(1, 2), (1, 0), (2, 2), (2, 3), (3, 3)])
        attrs: dict[str, Any] = {"coefficients": list(nrng.random(rows * f)), "intercepts": list(nrng.random(rows))}
        if labels:
            attrs |= (
                {"classlabels_ints": list(range(labels))} if k % 2 else {"classlabels_strings": list("abc")[:labels]}
            )
        yield ml(f"LinearClassifier-{list(x.shape)}-{rows}-{labels}", "LinearClassifier", x, ["y", "z"], **attrs)
        t = rng.randint(1, 3)
        coef = list(nrng.random(t * f))
        yield ml(f"LinearRegressor-{list(x.shape)}-{t}", "LinearRegressor", x, ["y"], coefficients=coef, targets=t)
        # SVMs (with kernel_params: onnxruntime requires them).
        classes = rng.randint(1, 4)
        svm: dict[str, Any] = {"classlabels_ints": list(range(classes)), "kernel_params": [0.1, 0.0, 3.0]}
        if k % 2 and classes > 1:
            vpc = [2] * classes
            nv = sum(vpc)
            svm |= {"vectors_per_class": vpc, "support_vectors": list(nrng.random(nv * f)), "kernel_type": "RBF"}
            svm |= {"coefficients": list(nrng.random((classes - 1) * nv)), "rho": list(nrng.random(classes * 3))}
        else:
            svm |= {"coefficients": list(nrng.random(classes * f)), "rho": [0.1]}
        if k % 4 >= 2:
            svm |= {"prob_a": list(nrng.random(classes * 3)), "prob_b": list(nrng.random(classes * 3))}
        yield ml(f"SVMClassifier-{list(x.shape)}-{classes}-{k}", "SVMClassifier", x, ["y", "z"], **svm)
        sv = {"coefficients": list(nrng.random(2)), "support_vectors": list(nrng.random(2 * f)), "n_supports": 2}
        yield ml(f"SVMRegressor-{list(x.shape)}", "SVMRegressor", x, ["y"], rho=[0.1], kernel_params=[0.1, 0, 3], **sv)
        classes = rng.randint(1, 3)
        x2 = x if x.ndim == 2 else x[None]  # onnxruntime's inference wants [N, F] for the tree ensembles
        tree = _tree("class", [0, classes - 1], classlabels_int64s=list(range(classes)))
        yield ml(f"TreeEnsembleClassifier-{list(x2.shape)}-{classes}", "TreeEnsembleClassifier", x2, ["y", "z"], **tree)
        tree = _tree("target", [0, t - 1], n_targets=t)
        yield ml(f"TreeEnsembleRegressor-{list(x2.shape)}-{t}", "TreeEnsembleRegressor", x2, ["y"], **tree)
        te = {
            "tree_roots": [0], "nodes_featureids": [0], "nodes_modes": numpy_helper.from_array(np.zeros(1, np.uint8)),
            "nodes_splits": numpy_helper.from_array(np.array([0.5], np.float32)), "nodes_truenodeids": [0],
            "nodes_falsenodeids": [1], "nodes_trueleafs": [1], "nodes_falseleafs": [1], "leaf_targetids": [0, t - 1],
            "leaf_weights": numpy_helper.from_array(np.array([0.3, 0.7], np.float32)), "n_targets": t,
        }  # fmt: skip
        yield ml(f"TreeEnsemble-{list(x2.shape)}-{t}", "TreeEnsemble", x2, ["y"], version=5, **te)
        yield ml(f"Normalizer-{list(x.shape)}", "Normalizer", x, ["y"], norm=("MAX", "L1", "L2")[k % 3])
        yield ml(f"ZipMap-{list(x.shape)}", "ZipMap", _f(nrng, 2, 3), ["map"], classlabels_int64s=[1, 2, 3])
        # Feature transforms of any rank.
        xs = _f(nrng, *[rng.randint(1, 3) for _ in range(rng.randint(1, 3))])
        yield ml(f"Scaler-{list(xs.shape)}", "Scaler", xs, ["y"], scale=[2.0], offset=[0.5])
        yield ml(f"Binarizer-{list(xs.shape)}", "Binarizer", xs, ["y"], threshold=0.7)
        yield ml(
            f"Imputer-{list(xs.shape)}", "Imputer", xs, ["y"], imputed_value_floats=[1.0], replaced_value_float=0.5
        )
        xi = nrng.integers(0, 4, xs.shape).astype(np.int64)
        le = {"keys_int64s": [1, 2], "values_int64s": [5, 6]}
        yield ml(f"LabelEncoder{2 + 2 * (k % 2)}-{list(xs.shape)}", "LabelEncoder", xi, ["y"], 2 + 2 * (k % 2), **le)
        yield ml(
            f"CategoryMapper-{list(xs.shape)}", "CategoryMapper", xi, ["y"], cats_int64s=[1, 2], cats_strings=["a", "b"]
        )
        cats = {"cats_int64s": [0, 1, 2]} if k % 2 else {"cats_strings": ["a", "b"]}
        xo = xi if k % 2 else np.where(xi % 2 == 1, "a", "c").astype(object)
        yield ml(f"OneHotEncoder-{list(xs.shape)}", "OneHotEncoder", xo, ["y"], **cats)
        y = _i64(nrng.integers(0, xs.shape[-1], [rng.randint(1, 3) for _ in range(rng.randint(0, 2))]))
        node = h.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain=ML)
        yield Case(f"AFE-{list(xs.shape)}-{list(y.shape)}", [node], {"x": xs, "i": y}, {"": 17, ML: 3}, ["y"])
        n = rng.randint(1, 3)
        parts = [_f(nrng, n, rng.randint(1, 3)) for _ in range(rng.randint(1, 3))]
        if k % 3 == 0:
            parts = [p[0] for p in parts]
        dims = [rng.randint(1, 4) for _ in parts]
        feeds = {f"x{i}": p for i, p in enumerate(parts)}
        node = h.make_node("FeatureVectorizer", list(feeds), ["y"], domain=ML, inputdimensions=dims)
        yield Case(f"FeatureVectorizer-{[p.shape for p in parts]}-{dims}", [node], feeds, {"": 17, ML: 3}, ["y"])
    mp = {1: 1.0, 3: 2.0, 7: 0.5}
    yield ml("DictVectorizer", "DictVectorizer", mp, ["y"], int64_vocabulary=[1, 2, 3, 5])
    node = h.make_node("CastMap", ["x"], ["y"], domain=ML)
    yield Case("CastMap-dense", [node], {"x": mp}, {"": 17, ML: 3}, ["y"], partial=frozenset({"y"}))
    yield ml("CastMap-sparse", "CastMap", mp, ["y"], map_form="SPARSE", max_map=10)


def training_cases() -> Iterator[Case]:
    rng, nrng = random.Random(12), np.random.default_rng(12)
    kinds = {"Adagrad": 3, "Adam": 4, "Momentum": 3}
    for k in range(12):
        op = ("Adagrad", "Adam", "Momentum")[k % 3]
        count = 1 + k % 2
        feeds: dict[str, Any] = {"r": np.array(0.1, np.float32), "t": _i64(1)}
        for i in range(count):
            shape = [rng.randint(1, 3) for _ in range(rng.randint(0, 3))]
            for kind in range(kinds[op]):
                feeds[f"k{kind}_{i}"] = _f(nrng, *(_broadcastable(rng, shape) if k >= 6 else shape))
        order = ["r", "t"] + [f"k{kind}_{i}" for kind in range(kinds[op]) for i in range(count)]
        outs = [f"o{j}" for j in range((kinds[op] - 1) * count)]
        attrs = {"mode": "standard", "alpha": 0.9, "beta": 0.1, "norm_coefficient": 0.0} if op == "Momentum" else {}
        node = h.make_node(op, order, outs, domain=TRAINING, **attrs)
        opsets = {"": 17, TRAINING: 1}
        yield Case(f"{op}-{k}", [node], {n: feeds[n] for n in order}, opsets, outs, runtime="onnxcore")


ALL_CASES = [
    *matmul_cases(), *gemm_cases(), *einsum_cases(), *reduce_cases(), *axis_op_cases(), *dft_cases(),
    *stft_cases(), *window_cases(), *text_cases(), *optional_sequence_cases(), *ml_cases(), *training_cases(),
]  # fmt: skip


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_inferred_shapes_are_the_actual_ones(case: Case) -> None:
    _check(case)


def test_every_operator_is_covered() -> None:
    from onnxcore.infer import shape_ops
    from onnxcore.infer.shape_core import SHAPE_RULES

    shape_ops.load_all()  # inference imports rule families as it meets their operators; this test reads the table
    # The families of this file's cases (their rules' modules); Trilu and TopK are covered by test_shapes_tensor,
    # and four rules of other modules are covered here.
    here = ("linalg", "reduction", "signal", "text", "ml", "ml_linear", "ml_tree", "training")
    modules = {f"onnxcore.infer.shape_ops.{m}" for m in here}
    ours = {key for key, fn in SHAPE_RULES.items() if fn.__module__ in modules} - {("", "Trilu"), ("", "TopK")}
    ours |= {("", "QLinearMatMul"), ("", "OptionalGetElement"), ("", "OptionalHasElement"), ("", "SequenceLength")}
    tested = {(n.domain, n.op_type) for c in ALL_CASES for n in c.nodes}
    assert ours - tested == {(TRAINING, "Gradient")}  # tested below: it needs the enclosing graph


# --- dimension variables --------------------------------------------------------------------------


def _one(op: str, inputs: dict[str, Any], opsets: dict[str, int], outs: int = 1, **attrs: Any) -> Any:
    """Infer one node whose inputs are declared with the given shapes (``n``, ``ax``, ``st``: int64)."""
    node = h.make_node(op, list(inputs), [f"y{k}" for k in range(outs)], domain=attrs.pop("domain", ""), **attrs)
    elem = {"n": T.INT64, "ax": T.INT64, "st": T.INT64, "s": T.STRING}
    vis = [h.make_tensor_value_info(n, elem.get(n, T.FLOAT), s) for n, s in inputs.items()]
    g = h.make_graph([node], "g", vis, [onnx.ValueInfoProto(name=o) for o in node.output])
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets.items()])
    return infer_shapes(onnxcore.decode(ModelProto, m.SerializeToString()))


@pytest.mark.parametrize(
    ("op", "attrs", "inputs", "opset", "expected"),
    [
        ("MatMul", {}, {"a": ["N", 2, 3], "b": [3, "M"]}, 13, ("N", 2, "M")),
        ("MatMul", {}, {"a": ["K"], "b": ["B", "K", 4]}, 13, ("B", 4)),
        ("MatMul", {}, {"a": [1, 2, 3], "b": ["B", 3, 4]}, 13, ("B", 2, 4)),
        ("MatMul", {}, {"a": ["A", 2, 3], "b": ["B", 3, 4]}, 13, (None, 2, 4)),  # A, B: not concluded equal
        ("Gemm", {"transA": 1}, {"a": ["K", "M"], "b": ["K", None], "c": [5]}, 13, ("M", 5)),
        ("Gemm", {}, {"a": None, "b": [3, "N"]}, 13, (None, "N")),
        ("Einsum", {"equation": "bij,bjk->bik"}, {"a": ["B", 2, 3], "b": ["B", 3, "K"]}, 12, ("B", 2, "K")),
        # An unknown extent may be a 1 broadcast against B, or B may be 1: the batch is unknown.
        ("Einsum", {"equation": "bij,bjk->bik"}, {"a": ["B", 2, 3], "b": [None, 3, 4]}, 12, (None, 2, 4)),
        ("Einsum", {"equation": "...ij,jk"}, {"a": ["S", 1, 2, 3], "b": [3, 4]}, 12, ("S", 1, 2, 4)),
        ("Einsum", {"equation": "...i,...i->...i"}, {"a": ["S", 1], "b": None}, 12, (None, None)),
        ("ReduceMean", {"axes": [1]}, {"x": ["N", "C", 5]}, 13, ("N", 1, 5)),
        ("ReduceSum", {}, {"x": ["N", 1, 5], "ax": [1]}, 13, (None, 1, None)),
        ("ReduceSum", {"keepdims": 0}, {"x": ["N", 5], "ax": [1]}, 13, None),
        ("ReduceMax", {"noop_with_empty_axes": 1}, {"x": ["N", 5], "ax": [0]}, 18, ("N", 5)),
        ("ArgMax", {"axis": -1, "keepdims": 0}, {"x": ["N", "T", 5]}, 13, ("N", "T")),
        ("Softmax", {}, {"x": ["N", "T", 5]}, 13, ("N", "T", 5)),
        ("DFT", {"onesided": 1}, {"x": ["N", 16, 1]}, 17, ("N", 9, 2)),
        ("DFT", {}, {"x": ["N", "T", 1], "": None, "ax": []}, 20, ("N", "T", 2)),
        ("DFT", {}, {"x": ["N", "T", 1], "n": [], "ax": []}, 20, (None, None, 2)),
        ("STFT", {"onesided": 0}, {"x": ["B", "L", 1], "st": []}, 17, ("B", 1, "L", 2)),
        ("StringSplit", {}, {"s": ["N", 2]}, 20, ("N", 2, None)),
        ("HannWindow", {}, {"n": []}, 17, (None,)),
    ],
)
def test_dimension_variables_propagate(op, attrs, inputs, opset, expected) -> None:
    r = _one(op, inputs, {"": opset}, **attrs)
    assert r.shape("y0") == expected
    assert not r.incompatibilities


@pytest.mark.parametrize(
    ("op", "attrs", "expected"),
    [
        ("LinearClassifier", {"coefficients": [1.0] * 6, "intercepts": [0.0], "classlabels_ints": [3, 4]}, 2),
        ("LinearClassifier", {"coefficients": [1.0] * 6, "classlabels_ints": [3, 4, 5]}, None),  # F unknown
        ("SVMClassifier", {"classlabels_ints": [0, 1, 2, 3], "vectors_per_class": [1] * 4}, 6),
        ("TreeEnsembleClassifier", {"classlabels_strings": ["a", "b", "c"]}, 3),
    ],
)
def test_ml_batch_variable(op, attrs, expected) -> None:
    r = _one(op, {"x": ["N", None]}, {"": 17, ML: 3}, outs=2, domain=ML, **attrs)
    assert r.shape("y0") == ("N",) and r.shape("y1") == ("N", expected)


def test_gradient_outputs_stay_unknown() -> None:
    nodes = [
        h.make_node("Mul", ["x", "x"], ["y"]),
        h.make_node("Gradient", ["x"], ["dx"], domain=TRAINING, xs=["x"], y="y"),
    ]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2])], [onnx.ValueInfoProto(name="dx")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(TRAINING, 1)])
    r = infer_shapes(onnxcore.decode(ModelProto, m.SerializeToString()))
    assert r.shape("dx") is None and not r.incompatibilities and not r.unruled


# --- contradictions ---------------------------------------------------------------------------------


def _ones(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.ones(shape, dtype)


TFIDF = {
    "mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0, "ngram_counts": [0],
    "ngram_indexes": [0], "pool_int64s": [1],
}  # fmt: skip

# (id, operator, attributes, feeds (inputs in order), opset): each contradicts its definition.
BAD = [
    ("MatMul-inner", "MatMul", {}, {"a": _ones(2, 3), "b": _ones(4, 5)}, 13),
    ("MatMul-batch", "MatMul", {}, {"a": _ones(2, 1, 3), "b": _ones(3, 3, 4)}, 13),
    ("MatMul-scalar", "MatMul", {}, {"a": _ones(), "b": _ones(3)}, 13),
    ("MatMul-1d", "MatMul", {}, {"a": _ones(2), "b": _ones(3)}, 13),
    ("Gemm-K", "Gemm", {"transB": 1}, {"a": _ones(2, 3), "b": _ones(4, 2)}, 13),
    ("Gemm-C", "Gemm", {}, {"a": _ones(2, 3), "b": _ones(3, 4), "c": _ones(3, 1)}, 13),
    ("Gemm-C-rank", "Gemm", {}, {"a": _ones(2, 3), "b": _ones(3, 4), "c": _ones(1, 2, 4)}, 13),
    ("Einsum-letter", "Einsum", {"equation": "ij,jk->ik"}, {"a": _ones(2, 3), "b": _ones(2, 4)}, 12),
    ("Einsum-rank", "Einsum", {"equation": "ij->i"}, {"a": _ones(2, 3, 4)}, 12),
    ("Einsum-ellipses", "Einsum", {"equation": "...i,...i->...i"}, {"a": _ones(2, 3, 4), "b": _ones(3, 4)}, 12),
    ("Einsum-terms", "Einsum", {"equation": "ij->i"}, {"a": _ones(2, 3), "b": _ones(2, 3)}, 12),
    ("ReduceSum-axis", "ReduceSum", {"axes": [2]}, {"x": _ones(2, 3)}, 11),
    ("ArgMax-axis", "ArgMax", {"axis": -3}, {"x": _ones(2, 3)}, 13),
    ("Softmax-axis", "Softmax", {"axis": 3}, {"x": _ones(2, 3, 4)}, 13),
    ("Det-square", "Det", {}, {"x": _ones(2, 3, 4)}, 22),
    ("DFT-last-axis", "DFT", {"axis": 2}, {"x": _ones(2, 5, 1)}, 17),
    ("DFT-components", "DFT", {"axis": 1}, {"x": _ones(2, 5, 3)}, 17),
    ("StringNormalizer-rows", "StringNormalizer", {}, {"x": np.array([["a"], ["b"]], object)}, 10),
    ("TfIdf-rank", "TfIdfVectorizer", TFIDF, {"x": _ones(1, 2, 3, dtype=np.int64)}, 9),
    # Outside the definitions: onnxruntime's kernels run these, but it refuses the model once the shapes
    # are declared (onnx's inference agrees), and so does onnxcore's kernel for all but the DFT ones.
    ("Gemm-1d-A", "Gemm", {}, {"a": _ones(3), "b": _ones(3, 4)}, 13),
    ("ReduceSum-scalar-axis", "ReduceSum", {"axes": [0]}, {"x": _ones()}, 11),
    ("ArgMax-scalar", "ArgMax", {}, {"x": _ones()}, 13),
    ("Softmax-scalar", "Softmax", {}, {"x": _ones()}, 13),
    ("Einsum-empty-ellipsis", "Einsum", {"equation": "...i,...i->...i"}, {"a": _ones(2, 3), "b": _ones(3)}, 12),
    ("DFT-rfft-complex", "DFT", {"onesided": 1}, {"x": _ones(2, 6, 2)}, 17),
    ("DFT-irfft-real", "DFT", {"onesided": 1, "inverse": 1}, {"x": _ones(2, 6, 1)}, 20),
]  # fmt: skip


@pytest.mark.parametrize(("cid", "op", "attrs", "feeds", "opset"), BAD, ids=[b[0] for b in BAD])
def test_contradictions_are_reported_once_and_the_runtime_refuses_them(cid, op, attrs, feeds, opset) -> None:
    case = Case(cid, [h.make_node(op, list(feeds), ["y"], **attrs)], feeds, {"": opset}, ["y"])
    _, bad = _infer(case, "static")
    assert len(bad) == 1, bad
    with pytest.raises(Exception):  # noqa: B017  (onnxruntime raises its own error types)
        _run(case)


ADAM = {"r": np.array(0.1, np.float32), "t": _i64(1), "x": _ones(2, 3), "g": _ones(3, 2), "v": _ones(2, 3)}

# (id, operator, feeds (inputs in order), constant feeds, opsets): checked with onnxcore's kernels.
BAD_CONSTANT = [
    ("CumSum-scalar", "CumSum", {"x": _ones(), "a": _i64(0)}, set(), {"": 14}),
    ("CumSum-axis", "CumSum", {"x": _ones(2, 3), "a": _i64(2)}, {"a"}, {"": 14}),
    ("STFT-window", "STFT", {"s": _ones(1, 9, 1), "st": _i64(2), "w": _ones(5), "fl": _i64(4)}, {"st", "fl"}, {"": 17}),
    ("Gemm6-C", "Gemm", {"a": _ones(2, 3), "b": _ones(3, 4), "c": _ones(4)}, set(), {"": 6}),
    ("Adam-broadcast", "Adam", ADAM | {"h": _ones(2, 3)}, set(), {"": 17, TRAINING: 1}),
]  # fmt: skip


@pytest.mark.parametrize(("cid", "op", "feeds", "consts", "opsets"), BAD_CONSTANT, ids=[b[0] for b in BAD_CONSTANT])
def test_contradictions_with_constant_inputs(cid, op, feeds, consts, opsets) -> None:
    outs = ["x2", "v2", "h2"] if op == "Adam" else ["y"]
    node = h.make_node(op, list(feeds), outs, domain=TRAINING if op == "Adam" else "")
    case = Case(cid, [node], feeds, opsets, outs, consts=frozenset(consts), runtime="onnxcore")
    _, bad = _infer(case, "static")
    assert len(bad) == 1, bad
    with pytest.raises(Exception):  # noqa: B017
        _run(case)


def test_agrees_with_onnx_where_both_infer_a_static_shape() -> None:
    """onnx's own inference, on the default-domain cases where it infers a whole static shape."""
    compared, diverged = 0, []
    for case in (c for c in ALL_CASES if set(c.opsets) == {""}):
        m = onnx.shape_inference.infer_shapes(_onnx_model(case, "static"))
        theirs = {o.name: o.type.tensor_type.shape for o in m.graph.output if o.type.tensor_type.HasField("shape")}
        ours, _ = _infer(case, "static")
        for n in case.outputs:
            s = theirs.get(n)
            if s is None or not all(d.HasField("dim_value") for d in s.dim) or ours[n] is None or None in ours[n]:
                continue
            compared += 1
            if ours[n] != tuple(d.dim_value for d in s.dim):
                diverged.append(case.id)
    # onnx's Einsum takes a letter's first extent where onnxruntime (and numpy) broadcast a 1 against another.
    assert all(c.startswith("Einsum") and c.endswith(("-2", "-5")) for c in diverged), diverged
    assert compared > 500
