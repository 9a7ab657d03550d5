"""Broadcasting (Clause 6.6) over fixed extents, dimension variables and unknown extents: one rule, shared by
the public API and shape inference (the position on 6.6.4 is in ``onnxcore.types.broadcast``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxcore
from onnxcore import ShapeError
from onnxcore.infer import infer_shapes
from onnxcore.proto.messages import (
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.types import Dim, Shape, broadcast_shapes, unidirectional_broadcast
from onnxcore.types.valuetypes import Extent

INCOMPATIBLE = "incompatible"

# Clause 6.6.4 as taken: (A, B, the result of broadcasting them multidirectionally).
MULTIDIRECTIONAL: list[tuple[tuple[Extent, ...], tuple[Extent, ...], tuple[Extent, ...] | str]] = [
    # equal extents give that extent
    ((3,), (3,), (3,)),
    (("N",), ("N",), ("N",)),
    ((0,), (0,), (0,)),
    # 1 and X give X
    ((1,), (5,), (5,)),
    ((1,), (0,), (0,)),
    ((1,), ("N",), ("N",)),
    ((1,), (None,), (None,)),
    (("N", 3), (3,), ("N", 3)),  # left-padding with 1
    (("N", 3), ("N", 1), ("N", 3)),
    # a variable and a fixed extent other than 1 give that extent (the only one evaluation can succeed with)
    (("N",), (3,), (3,)),
    (("N",), (0,), (0,)),
    (("N", "M"), (4, 5), (4, 5)),
    # two different variables: unknown (either may be 1)
    (("N",), ("M",), (None,)),
    # an unknown against a fixed extent other than 1: that extent, as for a variable
    ((None,), (5,), (5,)),
    # an unknown against a variable or an unknown: unknown
    ((None,), ("N",), (None,)),
    ((None,), (None,), (None,)),
    ((None, 3), (2, 1, 1), (2, None, 3)),
    # two different fixed extents, neither 1: no evaluation can succeed
    ((2,), (3,), INCOMPATIBLE),
    ((0,), (2,), INCOMPATIBLE),
    (("N", 2), ("N", 3), INCOMPATIBLE),
]

# (A, B, the result of broadcasting B unidirectionally to A): A's shape, refined where only one extent can succeed.
UNIDIRECTIONAL: list[tuple[tuple[Extent, ...], tuple[Extent, ...], tuple[Extent, ...] | str]] = [
    ((2, 3, 4, 5), (5,), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (3, 1, 5), (2, 3, 4, 5)),
    (("N", 3), ("N", 1), ("N", 3)),
    (("N",), (2,), (2,)),  # A's variable faces a fixed 2: the evaluation succeeds only if it is 2
    ((None, 3), (4, 1), (4, 3)),
    ((2,), ("N",), (2,)),  # B's variable is 1 or 2: A's extent
    (("N",), ("M",), ("N",)),  # the result has A's extent whatever B's is
    ((1,), ("N",), (1,)),
    ((None,), ("N",), (None,)),
    ((2, 3), (None, None), (2, 3)),
    ((5,), (2, 3, 4, 5), INCOMPATIBLE),  # not symmetric: B's rank exceeds A's
    ((2, 3), (1, 2), INCOMPATIBLE),
    ((1, 3), (2, 3), INCOMPATIBLE),  # A's 1 does not stretch
]


def _dim(e: Extent) -> TensorShapeProto.Dimension:
    if e is None:
        return TensorShapeProto.Dimension()
    if isinstance(e, str):
        return TensorShapeProto.Dimension(dim_param=e)
    return TensorShapeProto.Dimension(dim_value=e)


def _value(name: str, shape: Sequence[Extent] | None) -> ValueInfoProto:
    dims = None if shape is None else TensorShapeProto(dim=[_dim(e) for e in shape])
    return ValueInfoProto(name=name, type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=1, shape=dims)))


def _inferred(op_type: str, a: Sequence[Extent], b: Sequence[Extent]) -> tuple[Extent, ...] | str | None:
    """The shape inference gives ``op_type(a, b)`` (Clause 9), or INCOMPATIBLE when it finds the node contradictory."""
    graph = GraphProto(
        name="g",
        node=[NodeProto(op_type=op_type, input=["a", "b"], output=["y"])],
        input=[_value("a", a), _value("b", b)],
        output=[_value("y", None)],
    )
    model = ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=21)], graph=graph)
    result = infer_shapes(model)
    if result.incompatibilities:
        return INCOMPATIBLE
    return result.shape("y")


def _inferred_add(a: Sequence[Extent], b: Sequence[Extent]) -> tuple[Extent, ...] | str | None:
    return _inferred("Add", a, b)


def _public(a: Sequence[Extent], b: Sequence[Extent]) -> tuple[Extent, ...] | str:
    try:
        return broadcast_shapes(a, b)
    except ShapeError:
        return INCOMPATIBLE


@pytest.mark.parametrize(("a", "b", "expected"), MULTIDIRECTIONAL)
def test_multidirectional_table(a: tuple[Extent, ...], b: tuple[Extent, ...], expected: object) -> None:
    assert _public(a, b) == expected
    assert _public(b, a) == expected  # multidirectional broadcasting is symmetric


@pytest.mark.parametrize(("a", "b", "expected"), MULTIDIRECTIONAL)
def test_shape_inference_of_add_agrees(a: tuple[Extent, ...], b: tuple[Extent, ...], expected: object) -> None:
    assert _inferred_add(a, b) == expected
    assert _inferred_add(b, a) == expected


def test_a_variable_against_a_fixed_extent_agrees_with_inference() -> None:
    """The case that used to differ: the public API refused it while inference gave (3,)."""
    assert broadcast_shapes(("N",), (3,)) == (3,) == _inferred_add(("N",), (3,))
    assert onnxcore.broadcast_shapes(("N", 1), (1, 3)) == ("N", 3) == _inferred_add(("N", 1), (1, 3))


@pytest.mark.parametrize(("a", "b", "expected"), UNIDIRECTIONAL)
def test_unidirectional_table(a: tuple[Extent, ...], b: tuple[Extent, ...], expected: object) -> None:
    if expected == INCOMPATIBLE:
        with pytest.raises(ShapeError):
            unidirectional_broadcast(a, b)
    else:
        assert unidirectional_broadcast(a, b) == expected


@pytest.mark.parametrize(("x", "slope", "expected"), UNIDIRECTIONAL)
def test_shape_inference_of_prelu_agrees(x: tuple[Extent, ...], slope: tuple[Extent, ...], expected: object) -> None:
    """PRelu's slope broadcasts unidirectionally to X (PRelu-7 onwards): inference applies the same rule."""
    assert _inferred("PRelu", x, slope) == expected


def test_spec_examples_6_6_2() -> None:
    assert broadcast_shapes((2, 3, 4, 5), ()) == (2, 3, 4, 5)
    assert broadcast_shapes((1, 4, 5), (2, 3, 1, 1)) == (2, 3, 4, 5)
    assert broadcast_shapes((3, 4, 5), (2, 1, 1, 1)) == (2, 3, 4, 5)
    assert onnxcore.broadcast_shapes is broadcast_shapes


def test_three_shapes_and_the_message() -> None:
    assert broadcast_shapes(("N",), ("M",), (3,)) == (3,)  # both variables must be 1 or 3
    assert broadcast_shapes(("N",), (None,), (1,)) == (None,)
    with pytest.raises(ShapeError, match=r"axis 0: extents 3 and 4 are neither equal nor 1 \(Clause 6.6.2\)"):
        broadcast_shapes(("N",), (3,), (4,))


def test_accepts_dims_and_shapes() -> None:
    assert broadcast_shapes(Shape(2, "N"), [Dim(1), Dim("N", "DATA_BATCH")]) == (2, "N")
    assert unidirectional_broadcast(Shape("N", 3), [Dim(4), 1]) == (4, 3)
    with pytest.raises(ShapeError, match="unknown rank"):
        broadcast_shapes(None, (2,))  # type: ignore[arg-type]


extents = st.integers(min_value=0, max_value=4)
shapes = st.lists(extents, min_size=0, max_size=4).map(tuple)


@settings(max_examples=300, deadline=None)
@given(st.lists(shapes, min_size=1, max_size=4))
def test_fixed_extents_match_numpy(ss: list[tuple[int, ...]]) -> None:
    try:
        expected = np.broadcast_shapes(*ss)
    except ValueError:
        with pytest.raises(ShapeError):
            broadcast_shapes(*ss)
        return
    assert broadcast_shapes(*ss) == expected


def _symbolic(shape: tuple[int, ...], mask: int, unknown: bool) -> tuple[Extent, ...]:
    """``shape`` with the extents that ``mask`` selects replaced by unknown, or by a variable named after the extent
    (so that one variable always stands for one extent, Clause 6.5.2)."""
    return tuple((None if unknown else f"d{d}") if mask >> i & 1 else d for i, d in enumerate(shape))


@settings(max_examples=300, deadline=None)
@given(shapes, shapes, st.integers(0, 15), st.integers(0, 15), st.booleans())
def test_static_result_is_sound(a: tuple[int, ...], b: tuple[int, ...], ma: int, mb: int, unknown: bool) -> None:
    """Hiding extents behind variables or unknowns never refuses shapes that broadcast at evaluation, and every
    extent stated is the one the evaluation gives (a variable being the extent it is named after)."""
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        return
    got = broadcast_shapes(_symbolic(a, ma, unknown), _symbolic(b, mb, unknown))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g is None or g == e or g == f"d{e}"


@settings(max_examples=300, deadline=None)
@given(shapes, st.integers(0, 4), st.integers(0, 15), st.integers(0, 15), st.booleans(), st.data())
def test_unidirectional_static_result_is_sound(
    a: tuple[int, ...], drop: int, ma: int, mb: int, unknown: bool, data: st.DataObject
) -> None:
    """Likewise for B unidirectionally broadcast to A: B is a suffix of A with some extents made 1."""
    suffix = a[min(drop, len(a)) :]
    b = tuple(1 if data.draw(st.booleans()) else d for d in suffix)
    got = unidirectional_broadcast(_symbolic(a, ma, unknown), _symbolic(b, mb, unknown))
    assert len(got) == len(a)
    for g, e in zip(got, a, strict=True):
        assert g is None or g == e or g == f"d{e}"
