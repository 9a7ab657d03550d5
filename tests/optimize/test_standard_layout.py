"""merge_layout_ops (runtime/optimize/standard/layout.py, issue 39 item 2): consecutive Transpose, Reshape, Squeeze
and Unsqueeze merged, equal to onnxruntime on the original for dimension variables of several sizes (1 included);
the traps (a 0 copying an extent, an extent that may be 1, an intermediate read twice) are left alone."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import merge_layout_ops

RNG = np.random.default_rng(5)
MERGE = [Rewrite("merge_layout_ops", merge_layout_ops, 1)]


def _model(nodes: list, x_shape: list, y_shape: list | int, *, inits: tuple = (), opset: int = 13,
           outputs: tuple[str, ...] = ("y",), tail: bool = True) -> object:  # fmt: skip
    """x -> nodes -> y (then, with ``tail``, ``Neg(y) -> z`` so that ``y`` is an intermediate); a rank for
    ``y_shape`` declares the outputs with dimension variables of that rank."""
    if isinstance(y_shape, int):
        y_shape = [f"d{i}" for i in range(y_shape)]
    nodes = list(nodes)
    outs = list(outputs)
    if tail:
        nodes.append(h.make_node("Neg", ["y"], ["z"]))
        outs = ["z" if o == "y" else o for o in outs]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
        [h.make_tensor_value_info(o, TP.FLOAT, y_shape if o in ("y", "z") else ["N", 24]) for o in outs],
        list(inits),
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _ints(name: str, v: list[int]) -> object:
    return nh.from_array(np.asarray(v, np.int64), name)


def _feeds(shape: list, sizes: tuple[int, ...] = (1, 3)) -> list[dict[str, np.ndarray]]:
    out = []
    for n in sizes:
        dims = [n if isinstance(d, str) else d for d in shape]
        out.append({"x": RNG.standard_normal(dims).astype(np.float32)})
    return out


def test_transposes_compose() -> None:
    nodes = [h.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1], name="t1"),
             h.make_node("Transpose", ["t"], ["y"], perm=[0, 2, 1, 3], name="t2")]  # fmt: skip
    out, fired = rewrite_and_compare(_model(nodes, ["N", 2, 3, 4], ["N", 4, 3, 2]), _feeds(["N", 2, 3, 4]), MERGE)
    assert fired and ops(out) == ["Transpose", "Neg"]
    assert out.graph.node[0].name == "t1+t2" and list(out.graph.node[0].attribute[0].ints) == [0, 3, 2, 1]


@pytest.mark.parametrize("tail", [True, False])
def test_transposes_that_cancel_are_removed(tail: bool) -> None:
    # The default perm (the reversal) twice: read from the known rank. As an intermediate the pair goes; as the
    # graph output an Identity keeps its name.
    nodes = [h.make_node("Transpose", ["x"], ["t"]), h.make_node("Transpose", ["t"], ["y"])]
    out, _ = rewrite_and_compare(_model(nodes, ["N", 5, 3], ["N", 5, 3], tail=tail), _feeds(["N", 5, 3]), MERGE)
    assert ops(out) == (["Neg"] if tail else ["Identity"])


def test_three_transposes_merge_into_one() -> None:
    nodes = [h.make_node("Transpose", ["x"], ["a"], perm=[1, 0, 2]),
             h.make_node("Transpose", ["a"], ["b"], perm=[2, 0, 1]),
             h.make_node("Transpose", ["b"], ["y"], perm=[0, 2, 1])]  # fmt: skip
    out, _ = rewrite_and_compare(_model(nodes, ["N", 2, 3], 3), _feeds(["N", 2, 3]), MERGE)
    assert ops(out) == ["Transpose", "Neg"]


@pytest.mark.parametrize("opset", [13, 14])
def test_reshapes_merge(opset: int) -> None:
    nodes = [h.make_node("Reshape", ["x", "s1"], ["r"]), h.make_node("Reshape", ["r", "s2"], ["y"])]
    m = _model(nodes, ["N", 4, 6], 3, inits=(_ints("s1", [0, 24]), _ints("s2", [-1, 3, 8])), opset=opset)
    out, _ = rewrite_and_compare(m, _feeds(["N", 4, 6]), MERGE)
    assert ops(out) == ["Reshape", "Neg"] and list(out.graph.node[0].input) == ["x", "s2"]


def test_reshape_with_allowzero_keeps_its_literal_zero() -> None:
    # With allowzero=1 a 0 is an extent of 0, not a copy: the second shape alone decides.
    nodes = [h.make_node("Reshape", ["x", "s1"], ["r"], allowzero=1),
             h.make_node("Reshape", ["r", "s2"], ["y"], allowzero=1)]  # fmt: skip
    m = _model(nodes, [0, 3, 4], [0, 12], inits=(_ints("s1", [3, 0, 4]), _ints("s2", [0, 12])), opset=14)
    out, _ = rewrite_and_compare(m, [{"x": np.zeros((0, 3, 4), np.float32)}], MERGE)
    assert ops(out) == ["Reshape", "Neg"]
    assert [a.i for a in out.graph.node[0].attribute if a.name == "allowzero"] == [1]


def test_reshape_traps_are_left_alone() -> None:
    # A 0 in the second shape copies an extent of the first's output, which x does not have there.
    copying = _model([h.make_node("Reshape", ["x", "s1"], ["r"]), h.make_node("Reshape", ["r", "s2"], ["y"])],
                     ["N", 4, 6], 4, inits=(_ints("s1", [-1, 2, 12]), _ints("s2", [0, 0, 3, 4])))  # fmt: skip
    # The first Reshape's output is read twice.
    shared = _model([h.make_node("Reshape", ["x", "s1"], ["r"]), h.make_node("Reshape", ["r", "s2"], ["y"]),
                     h.make_node("Relu", ["r"], ["q"])], ["N", 4, 6], 2,
                    inits=(_ints("s1", [-1, 24]), _ints("s2", [-1, 6])), outputs=("y", "q"))  # fmt: skip
    for m in (copying, shared):
        out, fired = rewrite(m, MERGE)
        assert fired == [] and ops(out).count("Reshape") == 2


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("first", ["Squeeze", "Unsqueeze", "Flatten"])
def test_a_reshape_reads_through_a_shape_only_operator(opset: int, first: str) -> None:
    # The dynamo exporter's unbind: Squeeze of the sliced head, then Reshape. The elements keep their order, so the
    # Reshape of x gives the same; axes as attributes before 13, as an input from 13.
    axes = {"Squeeze": [1], "Unsqueeze": [0]}.get(first)
    if axes is None:
        node, inits = h.make_node(first, ["x"], ["r"], axis=2), ()
    elif opset >= 13:
        node, inits = h.make_node(first, ["x", "ax"], ["r"]), (_ints("ax", axes),)
    else:
        node, inits = h.make_node(first, ["x"], ["r"], axes=axes), ()
    reshape = h.make_node("Reshape", ["r", "s"], ["y"])
    m = _model([node, reshape], ["N", 1, 4, 6], 3, inits=(*inits, _ints("s", [-1, 3, 8])), opset=opset)
    out, fired = rewrite_and_compare(m, _feeds(["N", 1, 4, 6]), MERGE)
    assert fired and ops(out) == ["Reshape", "Neg"] and list(out.graph.node[0].input) == ["x", "s"]


def test_a_squeeze_before_a_copying_reshape_is_kept() -> None:
    # A 0 in the target copies an extent of the Squeeze's output (4 at axis 1), which x has not there (1).
    m = _model([h.make_node("Squeeze", ["x", "ax"], ["r"]), h.make_node("Reshape", ["r", "s"], ["y"])],
               ["N", 1, 4, 6], 3, inits=(_ints("ax", [1]), _ints("s", [-1, 0, 6])))  # fmt: skip
    out, fired = rewrite_and_compare(m, _feeds(["N", 1, 4, 6]), MERGE)
    assert fired == [] and ops(out) == ["Squeeze", "Reshape", "Neg"]


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [[1], [-1], [0, 3]])
def test_unsqueeze_then_squeeze_of_the_same_axes_is_removed(opset: int, axes: list[int]) -> None:
    def node(op: str, i: str, o: str) -> object:
        if opset >= 13:
            return h.make_node(op, [i, "axes"], [o])
        return h.make_node(op, [i], [o], axes=axes)

    inits = (_ints("axes", axes),) if opset >= 13 else ()
    m = _model([node("Unsqueeze", "x", "u"), node("Squeeze", "u", "y")], ["N", 3], ["N", 3], inits=inits,
               opset=opset)  # fmt: skip
    out, _ = rewrite_and_compare(m, _feeds(["N", 3]), MERGE)
    assert ops(out) == ["Neg"]


def test_squeeze_then_unsqueeze_only_where_the_extent_is_one() -> None:
    nodes = [h.make_node("Squeeze", ["x", "a"], ["s"]), h.make_node("Unsqueeze", ["s", "a"], ["y"])]
    one = _model(nodes, ["N", 1, 4], ["N", 1, 4], inits=(_ints("a", [1]),))
    out, _ = rewrite_and_compare(one, _feeds(["N", 1, 4]), MERGE)
    assert ops(out) == ["Neg"]
    # A dimension variable that may be 1 (the Squeeze raises on the other sizes): left alone.
    maybe = _model(nodes, ["N", "S", 4], ["N", 1, 4], inits=(_ints("a", [1]),))
    out, fired = rewrite(maybe, MERGE)
    assert fired == [] and ops(out) == ["Squeeze", "Unsqueeze", "Neg"]


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(("a", "b"), [([0], [2]), ([1], [0]), ([-1], [1, -1]), ([0, 2], [1])])
def test_unsqueezes_merge(opset: int, a: list[int], b: list[int]) -> None:
    def node(i: str, o: str, axes: list[int], name: str) -> object:
        if opset >= 13:
            return h.make_node("Unsqueeze", [i, name], [o])
        return h.make_node("Unsqueeze", [i], [o], axes=axes)

    inits = (_ints("a", a), _ints("b", b)) if opset >= 13 else ()
    m = _model([node("x", "u", a, "a"), node("u", "y", b, "b")], ["N", 3], 2 + len(a) + len(b), inits=inits,
               opset=opset)  # fmt: skip
    out, _ = rewrite_and_compare(m, _feeds(["N", 3]), MERGE)
    assert ops(out) == ["Unsqueeze", "Neg"]


def _two_readers(second_op: str) -> object:
    # The dynamo exporter's arange unsqueezed once, then twice more along different axes (BERT's position ids).
    nodes = [h.make_node("Unsqueeze", ["x", "a"], ["u"]), h.make_node("Unsqueeze", ["u", "b"], ["y"]),
             h.make_node(second_op, ["u", "c"] if second_op == "Unsqueeze" else ["u"], ["q"])]  # fmt: skip
    g = h.make_graph(
        [*nodes, h.make_node("Neg", ["y"], ["z"])],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3])],
        [
            h.make_tensor_value_info("z", TP.FLOAT, ["a", "b", "c", "d"]),
            h.make_tensor_value_info("q", TP.FLOAT, ["e", "f", "g", "h"][: 4 if second_op == "Unsqueeze" else 3]),
        ],
        [_ints("a", [0]), _ints("b", [1]), *([_ints("c", [3])] if second_op == "Unsqueeze" else [])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_a_first_read_by_two_unsqueezes_merges_into_each() -> None:
    out, fired = rewrite_and_compare(_two_readers("Unsqueeze"), _feeds(["N", 3]), MERGE)
    assert fired and ops(out) == ["Unsqueeze", "Unsqueeze", "Neg"]
    assert all(n.input[0] == "x" for n in out.graph.node[:2])


def test_a_first_also_read_by_another_operator_stays() -> None:
    out, _ = rewrite_and_compare(_two_readers("Relu"), _feeds(["N", 3]), MERGE)
    assert ops(out) == ["Unsqueeze", "Unsqueeze", "Relu", "Neg"]
    assert [n.input[0] for n in out.graph.node[:3]] == ["x", "u", "u"]
