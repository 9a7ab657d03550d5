"""resolve_reshape_targets (runtime/optimize/standard/reshape.py, issue 39 item 2): a Reshape's target computed from
shapes becomes a constant that says the same for every extent of the dimension variables (0 copies, one -1), equal
to onnxruntime on the original with the variables at 1 and larger; targets the shapes do not tell are left alone."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import resolve_reshape_targets

RNG = np.random.default_rng(13)
RESOLVE = [Rewrite("resolve_reshape_targets", resolve_reshape_targets, 1)]


def _i(name: str, v: list[int] | int) -> object:
    return nh.from_array(np.asarray(v, np.int64), name)


def _model(nodes: list, inits: list, x_shape: list, y_rank: int, *, extra_outputs: tuple[str, ...] = ()) -> object:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
        [h.make_tensor_value_info("y", TP.FLOAT, [f"y{i}" for i in range(y_rank)]),
         *(h.make_tensor_value_info(o, TP.INT64, ["k"]) for o in extra_outputs)],
        inits,
    )  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def _heads(source: str = "x", **reshape_attrs: object) -> list:
    """The exporter's ``x.view(x.size()[:-1] + (4, 8))``: Shape, two Gathers, Unsqueezes, Concat, Reshape."""
    return [
        h.make_node("Shape", [source], ["s"]),
        h.make_node("Gather", ["s", "i0"], ["g0"], axis=0),
        h.make_node("Gather", ["s", "i1"], ["g1"], axis=0),
        h.make_node("Unsqueeze", ["g0", "ax"], ["u0"]),
        h.make_node("Unsqueeze", ["g1", "ax"], ["u1"]),
        h.make_node("Concat", ["u0", "u1", "four", "eight"], ["t"], axis=0),
        h.make_node("Reshape", ["x", "t"], ["y"], name="reshape", **reshape_attrs),
    ]


HEAD_INITS = [_i("i0", 0), _i("i1", 1), _i("ax", [0]), _i("four", [4]), _i("eight", [8])]


def _feeds(sizes: tuple[tuple[int, int], ...] = ((1, 1), (2, 5))) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal((b, s, 32)).astype(np.float32)} for b, s in sizes]


def _target(m: object) -> list[int]:
    (node,) = [n for n in m.graph.node if n.op_type == "Reshape"]
    (t,) = [t for t in m.graph.initializer if t.name == node.input[1]]
    return nh.to_array(t).tolist()


@pytest.mark.parametrize("x_shape", [["batch", "seq", 32], [None, None, 32]])
def test_heads_split_becomes_a_constant_target(x_shape: list) -> None:
    # Named variables, or extents nothing names: both are the data's own extents at the same positions.
    out, fired = rewrite_and_compare(_model(_heads(), HEAD_INITS, x_shape, 4), _feeds(), RESOLVE)
    assert fired and ops(out) == ["Reshape"] and _target(out) == [0, 0, 4, 8]
    assert out.graph.node[0].name == "reshape"


def test_an_extent_at_another_position_becomes_minus_one() -> None:
    # [8, N, 4] from x [N, 4, 8]: N is not x's extent at position 1, every other element is fixed.
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["g0"], axis=0),
             h.make_node("Concat", ["eight", "g0", "four"], ["t"], axis=0),
             h.make_node("Reshape", ["x", "t"], ["y"])]  # fmt: skip
    inits = [_i("i0", [0]), _i("four", [4]), _i("eight", [8])]
    out, _ = rewrite_and_compare(_model(nodes, inits, ["N", 4, 8], 3), [
        {"x": RNG.standard_normal((n, 4, 8)).astype(np.float32)} for n in (1, 3)], RESOLVE)  # fmt: skip
    assert _target(out) == [8, -1, 4]


def test_allowzero_copies_nothing() -> None:
    # With allowzero=1 a 0 is an extent of 0: the batch becomes the one -1 instead (every other element fixed).
    nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["g0"], axis=0),
             h.make_node("Concat", ["g0", "four", "eight"], ["t"], axis=0),
             h.make_node("Reshape", ["x", "t"], ["y"], allowzero=1)]  # fmt: skip
    inits = [_i("i0", [0]), _i("four", [4]), _i("eight", [8])]
    feeds = [{"x": RNG.standard_normal((n, 32)).astype(np.float32)} for n in (0, 1, 3)]
    out, _ = rewrite_and_compare(_model(nodes, inits, ["N", 32], 3), feeds, RESOLVE)
    assert _target(out) == [-1, 4, 8]


def test_shape_nodes_read_elsewhere_stay() -> None:
    m = _model(_heads(), HEAD_INITS, ["batch", "seq", 32], 4, extra_outputs=("s",))
    out, _ = rewrite_and_compare(m, _feeds(), RESOLVE)
    assert ops(out) == ["Shape", "Reshape"]


@pytest.mark.parametrize("case", ["two open", "literal zero", "allowzero two copies", "not followed"])
def test_targets_the_shapes_do_not_tell_are_left_alone(case: str) -> None:
    nodes, inits = _heads(), list(HEAD_INITS)
    if case == "two open":
        # Both extents from y's shape, a value whose extents x does not share position for position.
        nodes = [h.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]), *_heads("xt")]
    elif case == "literal zero":
        inits[3] = _i("four", [0])  # a 0 in the target: the original copies x's extent 2 there
    elif case == "allowzero two copies":
        nodes = _heads(allowzero=1)  # with allowzero the copies cannot be 0; two would be -1
    elif case == "not followed":
        nodes[5] = h.make_node("Concat", ["u0", "u1", "four", "eight"], ["t0"], axis=0)
        nodes.insert(6, h.make_node("Abs", ["t0"], ["t"]))  # Abs is not followed
    out, fired = rewrite(_model(nodes, inits, ["batch", "seq", 32], 4), RESOLVE)
    assert fired == [] and "Shape" in ops(out), case
