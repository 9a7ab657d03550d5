"""Data propagation (Clause 9.3): the elements of Shape of a tensor with dimension variables, carried through
Gather, Slice, Concat, Unsqueeze, Squeeze, Cast and Identity into Reshape, Expand and ConstantOfShape."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore.infer import annotate, infer_shapes, shape_step
from onnxcore.proto.messages import ModelProto


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_step, "STRICT", True)


def _c(name: str, v: object) -> object:
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _model(nodes: list, inputs: list, outputs: list[str], inits: list, opset: int) -> ModelProto:
    outs = [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs]
    g = h.make_graph(nodes, "g", inputs, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return onnxcore.decode(ModelProto, m.SerializeToString())


def _exporter_chain(opset: int) -> ModelProto:
    """What exporters write for ``x.reshape(x.shape[0], x.shape[1], -1)`` and friends."""
    unsq = {"axes": [0]} if opset < 13 else {}
    ax = [] if opset < 13 else ["ax0"]
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
        h.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
        h.make_node("Unsqueeze", ["d0", *ax], ["u0"], **unsq),
        h.make_node("Unsqueeze", ["d1", *ax], ["u1"], **unsq),
        h.make_node("Concat", ["u0", "u1", "m1"], ["t"], axis=0),
        h.make_node("Reshape", ["x", "t"], ["y"]),
        h.make_node("Slice", ["s", "st", "en"], ["s2"]),
        h.make_node("Cast", ["s2"], ["s3"], to=T.INT64),
        h.make_node("ConstantOfShape", ["s3"], ["z"]),
        h.make_node("Expand", ["b", "s"], ["e"]),
        h.make_node("Gather", ["s", "last"], ["dl"], axis=0),  # a negative index
        h.make_node("Unsqueeze", ["dl", *ax], ["ul"], **unsq),
        h.make_node("Concat", ["ul", "m1"], ["t2"], axis=0),
        h.make_node("Reshape", ["x", "t2"], ["w"]),  # the last extent first: could be 0 at run time
    ]
    inputs = [
        h.make_tensor_value_info("x", T.FLOAT, ["N", "S", 4, 5]),
        h.make_tensor_value_info("b", T.FLOAT, [1, 1, 1, 5]),
    ]
    inits = [_c("i0", 0), _c("i1", 1), _c("ax0", [0]), _c("m1", [-1]), _c("st", [1]), _c("en", [3]), _c("last", -1)]
    return _model(nodes, inputs, ["y", "z", "e", "w"], inits, opset)


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_variables_survive_an_exporters_shape_arithmetic(opset: int) -> None:
    m = _exporter_chain(opset)
    r = infer_shapes(m)
    assert not r.incompatibilities
    assert r.shape("y") == ("N", "S", 20)
    assert r.shape("z") == ("S", 4)
    assert r.shape("e") == ("N", "S", 4, 5)
    assert r.shape("w") == (5, None)  # 5 at position 0 is fixed; the -1 needs N*S
    # Substituting the variables gives what a run produces.
    for n, s in ((2, 3), (1, 7)):
        x = np.zeros((n, s, 4, 5), np.float32)
        b = np.ones((1, 1, 1, 5), np.float32)
        got = onnxcore.Session(annotate(m)).run(None, {"x": x, "b": b})  # annotate states the outputs' ranks
        env = {"N": n, "S": s}
        for name, arr in zip(["y", "z", "e", "w"], got):
            shape = r.shape(name)
            assert shape is not None and len(shape) == arr.ndim
            for d, a in zip(shape, arr.shape):
                assert d is None or env.get(d, d) == a  # type: ignore[arg-type]


def test_a_variable_where_the_input_has_another_extent_is_not_concluded() -> None:
    # Reshape(y, [N, -1]) with y of shape (M, 6): N could be 0 at run time, which copies M.
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Slice", ["s", "z0", "o1"], ["n"]),
        h.make_node("Concat", ["n", "m1"], ["t"], axis=0),
        h.make_node("Reshape", ["y", "t"], ["r"]),
    ]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, ["N", 2]), h.make_tensor_value_info("y", T.FLOAT, ["M", 6])]
    m = _model(nodes, inputs, ["r"], [_c("z0", [0]), _c("o1", [1]), _c("m1", [-1])], 17)
    r = infer_shapes(m)
    assert r.shape("n") == (1,) and r.shape("r") == (None, None)
    # allowzero=1: the target's extents are taken as they are.
    nodes[-1] = h.make_node("Reshape", ["y", "t"], ["r"], allowzero=1)
    r = infer_shapes(_model(nodes, inputs, ["r"], [_c("z0", [0]), _c("o1", [1]), _c("m1", [-1])], 17))
    assert r.shape("r") == ("N", None)


def test_squeeze_slice_backwards_and_a_float_cast_stop_nothing_they_should_not() -> None:
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Slice", ["s", "st", "en", "ax", "neg"], ["rev"]),  # reversed: [C, B, A]
        h.make_node("ConstantOfShape", ["rev"], ["z"]),
        h.make_node("Slice", ["s", "z0", "o1"], ["first"]),
        h.make_node("Squeeze", ["first", "ax"], ["sc"]),
        h.make_node("Unsqueeze", ["sc", "ax"], ["back"]),
        h.make_node("ConstantOfShape", ["back"], ["z1"]),
        h.make_node("Cast", ["s"], ["sf"], to=T.FLOAT),
        h.make_node("Cast", ["sf"], ["si"], to=T.INT64),
        h.make_node("ConstantOfShape", ["si"], ["z2"]),
    ]
    inits = [_c("st", [-1]), _c("en", [-(2**63)]), _c("ax", [0]), _c("neg", [-1]), _c("z0", [0]), _c("o1", [1])]
    m = _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["A", "B", "C"])], ["z", "z1", "z2"], inits, 21)
    r = infer_shapes(m)
    assert r.shape("z") == ("C", "B", "A")
    assert r.shape("z1") == ("A",)
    assert r.shape("z2") == (None, None, None)  # through float the elements are not followed


def _random_shape_program(rng: np.random.Generator, rank: int) -> tuple[list, list, list[str], list[int]]:
    """Random exporter-style arithmetic on Shape(x): picks, slices, concatenations, then a Reshape of x to a
    target of the same element count, a ConstantOfShape and an Expand."""
    nodes: list = [h.make_node("Shape", ["x"], ["s"])]
    inits: list = []
    k = 0

    def const(v: object) -> str:
        nonlocal k
        k += 1
        inits.append(_c(f"c{k}", v))
        return f"c{k}"

    def fresh() -> str:
        nonlocal k
        k += 1
        return f"v{k}"

    # Pieces of 1-D int64 tensors whose elements are extents of x, in some order.
    pieces = []
    order = list(rng.permutation(rank))
    i = 0
    while i < rank:
        n = int(rng.integers(1, rank - i + 1))
        idx = order[i : i + n]
        i += n
        kind = rng.integers(0, 3)
        out = fresh()
        if kind == 0 or n > 1:  # a gather of several extents
            nodes.append(h.make_node("Gather", ["s", const(list(map(int, idx)))], [out], axis=0))
        elif kind == 1:  # one extent as a scalar, unsqueezed back
            sc, unsq = fresh(), out
            nodes.append(h.make_node("Gather", ["s", const(int(idx[0]))], [sc], axis=0))
            nodes.append(h.make_node("Unsqueeze", [sc, const([0])], [unsq]))
        else:  # a slice of one element, through a Cast and an Identity
            a, b = fresh(), fresh()
            nodes.append(h.make_node("Slice", ["s", const([int(idx[0])]), const([int(idx[0]) + 1])], [a]))
            nodes.append(h.make_node("Cast", [a], [b], to=T.INT64))
            nodes.append(h.make_node("Identity", [b], [out]))
        pieces.append(out)
    nodes.append(h.make_node("Concat", pieces, ["perm_shape"], axis=0))
    # A Reshape to the permuted extents (same element count), one with a -1, a ConstantOfShape, an Expand.
    nodes.append(h.make_node("Reshape", ["x", "perm_shape"], ["y_perm"]))
    nodes.append(h.make_node("Concat", [pieces[0], const([-1])], ["head_rest"], axis=0))
    nodes.append(h.make_node("Reshape", ["x", "head_rest"], ["y_rest"]))
    nodes.append(h.make_node("ConstantOfShape", ["perm_shape"], ["y_fill"]))
    nodes.append(h.make_node("Expand", ["one", "s"], ["y_expand"]))
    return nodes, inits, ["y_perm", "y_rest", "y_fill", "y_expand"], [int(j) for j in order]


@pytest.mark.parametrize("seed", range(40))
def test_random_shape_programs_agree_with_runs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    names = ["A", "B", "C", "D"][:rank]
    # Each extent is a variable or a fixed number; a variable may repeat.
    dims: list[int | str] = [
        str(rng.choice(names)) if rng.random() < 0.6 else int(rng.integers(1, 4)) for _ in range(rank)
    ]
    nodes, inits, outs, order = _random_shape_program(rng, rank)
    inputs = [h.make_tensor_value_info("x", T.FLOAT, dims), h.make_tensor_value_info("one", T.FLOAT, [1])]
    m = _model(nodes, inputs, outs, inits, 18)
    r = infer_shapes(m)
    assert not r.incompatibilities and not r.mismatches
    for _ in range(2):
        env = {n: int(rng.integers(1, 4)) for n in names}
        concrete = [env[d] if isinstance(d, str) else d for d in dims]
        got = onnxcore.Session(annotate(m)).run(
            None, {"x": np.zeros(concrete, np.float32), "one": np.ones(1, np.float32)}
        )
        for name, arr in zip(outs, got):
            shape = r.shape(name)
            assert shape is not None and len(shape) == arr.ndim, (name, shape, arr.shape)
            for d, a in zip(shape, arr.shape):
                assert d is None or env.get(d, d) == a, (name, dims, shape, arr.shape)  # type: ignore[arg-type]
    # What must be known is known. The fill and the expand keep every extent. The Reshape keeps a variable only
    # where x has the same one at that position (anywhere else it could be 0 at run time, which copies x's
    # extent instead), and every fixed extent.
    permuted = tuple(dims[j] for j in order)
    assert r.shape("y_fill") == permuted
    assert r.shape("y_expand") == tuple(dims)
    expected = tuple(e if isinstance(e, int) or dims[i] == e else None for i, e in enumerate(permuted))
    assert r.shape("y_perm") == expected
