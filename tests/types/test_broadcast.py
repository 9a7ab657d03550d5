"""Broadcasting (Clause 6.6) over fixed extents, dimension variables and unknown extents."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxcore
from onnxcore import ShapeError
from onnxcore.types import Dim, Shape, broadcast_shapes, unidirectional_broadcast


def test_spec_examples_6_6_2() -> None:
    assert broadcast_shapes((2, 3, 4, 5), ()) == (2, 3, 4, 5)
    assert broadcast_shapes((1, 4, 5), (2, 3, 1, 1)) == (2, 3, 4, 5)
    assert broadcast_shapes((3, 4, 5), (2, 1, 1, 1)) == (2, 3, 4, 5)
    assert onnxcore.broadcast_shapes is broadcast_shapes


def test_incompatible() -> None:
    with pytest.raises(ShapeError):
        broadcast_shapes((2, 3), (4, 3))
    with pytest.raises(ShapeError):
        broadcast_shapes((0,), (2,))
    assert broadcast_shapes((0,), (1,)) == (0,)


def test_unidirectional_6_6_3() -> None:
    assert unidirectional_broadcast((2, 3, 4, 5), (5,)) == (2, 3, 4, 5)
    assert unidirectional_broadcast((2, 3, 4, 5), (3, 1, 5)) == (2, 3, 4, 5)
    with pytest.raises(ShapeError):  # not symmetric
        unidirectional_broadcast((5,), (2, 3, 4, 5))
    with pytest.raises(ShapeError):
        unidirectional_broadcast((2, 3), (1, 2))
    with pytest.raises(ShapeError):  # A's 1 does not stretch
        unidirectional_broadcast((1, 3), (2, 3))


def test_dimension_variables_6_6_4() -> None:
    assert broadcast_shapes(("N", 3), (3,)) == ("N", 3)
    assert broadcast_shapes(("N", 3), ("N", 1)) == ("N", 3)
    assert broadcast_shapes(("N", 3), (1, 3)) == ("N", 3)
    with pytest.raises(ShapeError, match="not known"):  # never assumed equal to an extent
        broadcast_shapes(("N",), (4,))
    with pytest.raises(ShapeError, match="not known"):  # a variable equals only itself
        broadcast_shapes(("N",), ("M",))
    assert unidirectional_broadcast(("N", 3), ("N", 1)) == ("N", 3)
    with pytest.raises(ShapeError):
        unidirectional_broadcast(("N",), (2,))
    with pytest.raises(ShapeError):
        unidirectional_broadcast((2,), ("N",))


def test_unknown_extents_sound_rule() -> None:
    assert broadcast_shapes((None,), (1,)) == (None,)  # 1 or the unknown extent: unknown
    assert broadcast_shapes((None,), (5,)) == (5,)  # evaluation either fails or gives 5
    assert broadcast_shapes((None,), ("N",)) == ("N",)
    assert broadcast_shapes((None,), (None,)) == (None,)
    assert broadcast_shapes((None, 3), (2, 1, 1)) == (2, None, 3)
    assert unidirectional_broadcast((None, 3), (4, 1)) == (4, 3)
    assert unidirectional_broadcast((2, 3), (None, None)) == (2, 3)


def test_accepts_dims_and_shapes() -> None:
    assert broadcast_shapes(Shape(2, "N"), [Dim(1), Dim("N", "DATA_BATCH")]) == (2, "N")


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


@settings(max_examples=300, deadline=None)
@given(shapes, shapes)
def test_unknowns_are_sound(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    """Replacing extents by None never makes a broadcastable pair fail, and the result agrees with
    numpy's wherever it is known."""
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        return
    a2 = tuple(None if i % 2 == 0 else d for i, d in enumerate(a))
    got = broadcast_shapes(a2, b)
    assert len(got) == len(expected)
    assert all(g is None or g == e for g, e in zip(got, expected, strict=True))
