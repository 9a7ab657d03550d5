"""Shape inference (Clause 9) through sequences and optionals: a sequence holds the shape its elements share."""

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


def _check(nodes: list, x_shape: list, outputs: dict[str, tuple | None], inits: list = (), opset: int = 21) -> None:
    """Infer, compare with the expected shapes, then run and compare each stated extent with the result."""
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, x_shape)],
        [h.make_tensor_value_info(n, T.FLOAT, None) for n in outputs],
        list(inits),
    )
    m = onnxcore.decode(ModelProto, h.make_model(g, opset_imports=[h.make_opsetid("", opset)]).SerializeToString())
    r = infer_shapes(m)
    assert not r.incompatibilities and not r.mismatches
    assert {n: r.shape(n) for n in outputs} == outputs
    x = np.arange(int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    got = onnxcore.Session(annotate(m)).run(None, {"x": x})
    for (name, shape), arr in zip(outputs.items(), got):
        assert shape is not None and len(shape) == arr.ndim
        assert all(d is None or d == a for d, a in zip(shape, arr.shape)), (name, shape, arr.shape)


@pytest.mark.parametrize(
    ("split", "attrs", "element"),
    [
        (None, {"axis": 1}, (2, 1, 4)),
        (None, {"axis": 1, "keepdims": 0}, (2, 4)),
        (2, {"axis": 2}, (2, 6, 2)),  # 4 = 2 + 2
        (3, {"axis": 2}, (2, 6, None)),  # 3 and 1
        ([3, 3], {"axis": 1}, (2, 3, 4)),
        ([1, 5], {"axis": 1}, (2, None, 4)),
    ],
)
def test_split_to_sequence_and_back(split: object, attrs: dict, element: tuple) -> None:
    inits = [] if split is None else [_c("split", split)]
    # Rejoined along the split axis: its extent is the pieces' total, which inference does not add up.
    new_axis = 0 if attrs.get("keepdims", 1) else 1
    nodes = [
        h.make_node("SplitToSequence", ["x"] + ([] if split is None else ["split"]), ["seq"], **attrs),
        h.make_node("SequenceAt", ["seq", "zero"], ["first"]),
        h.make_node("ConcatFromSequence", ["seq"], ["rejoined"], axis=attrs["axis"], new_axis=new_axis),
    ]
    rejoined = tuple(None if i == attrs["axis"] else d for i, d in enumerate([2, 6, 4]))
    _check(nodes, [2, 6, 4], {"first": element, "rejoined": rejoined}, [*inits, _c("zero", 0)])


def test_construct_insert_and_concatenate() -> None:
    nodes = [
        h.make_node("Relu", ["x"], ["a"]),
        h.make_node("Neg", ["x"], ["b"]),
        h.make_node("SequenceConstruct", ["a", "b"], ["seq"]),
        h.make_node("Slice", ["x", "s0", "s1", "ax"], ["c"]),  # a narrower element: extent 2 of 3
        h.make_node("SequenceInsert", ["seq", "c"], ["seq2"]),
        h.make_node("SequenceAt", ["seq", "zero"], ["at"]),
        h.make_node("SequenceAt", ["seq2", "zero"], ["at2"]),
        h.make_node("ConcatFromSequence", ["seq2"], ["cat"], axis=1),
        h.make_node("SequenceErase", ["seq2"], ["seq3"]),
        h.make_node("SequenceAt", ["seq3", "zero"], ["at3"]),
    ]
    inits = [_c("s0", [0]), _c("s1", [2]), _c("ax", [1]), _c("zero", 0)]
    _check(nodes, [4, 3], {"at": (4, 3), "at2": (4, None), "cat": (4, None), "at3": (4, None)}, inits)


def test_optional_of_a_tensor_keeps_its_shape() -> None:
    nodes = [
        h.make_node("Optional", ["x"], ["o"]),
        h.make_node("OptionalGetElement", ["o"], ["y"]),
    ]
    _check(nodes, [2, 5], {"y": (2, 5)}, opset=18)


def test_sequence_map_walks_its_body_per_element() -> None:
    # SequenceMap (ONNX 1-2): the body sees one element of each sequence input and each tensor input whole;
    # each output is a sequence of what the body makes of the elements.
    body = h.make_graph(
        [h.make_node("Transpose", ["e"], ["o1"], perm=[2, 0, 1]), h.make_node("Add", ["e", "b"], ["o2"])],
        "body",
        [h.make_tensor_value_info("e", T.FLOAT, None), h.make_tensor_value_info("b", T.FLOAT, None)],
        [h.make_tensor_value_info("o1", T.FLOAT, None), h.make_tensor_value_info("o2", T.FLOAT, None)],
    )
    nodes = [
        h.make_node("SplitToSequence", ["x", "two"], ["seq"], axis=1),
        h.make_node("SequenceMap", ["seq", "t"], ["m1", "m2"], body=body),
        h.make_node("SequenceAt", ["m1", "zero"], ["first"]),
        h.make_node("SequenceAt", ["m2", "zero"], ["second"]),
    ]
    t = numpy_helper.from_array(np.ones((1, 1, 4), np.float32), "t")
    _check(nodes, [2, 6, 4], {"first": (4, 2, 2), "second": (2, 2, 4)}, [_c("two", 2), _c("zero", 0), t])
