"""The encoders prepared once per node (issue 42, item 2): a session's prepared look-up gives what the operator
definitions say, element by element, for repeated keys (the last wins), NaN keys, unknown values and empty inputs;
ZipMap's maps hold one distinct float32 0-d value per cell. Expected values are computed here with plain Python
dicts, independently of the kernels' look-up."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.kernels import registry
from onnxcore.kernels.call import run

ML = "ai.onnx.ml"


def _prepared(op: str, version: int, **attrs: Any) -> Any:
    kdef = registry.lookup(ML, op, version)
    assert kdef is not None and kdef.prepare is not None, f"{op}-{version} is prepared once per node"
    return registry.prepared_call(kdef, attrs)


def _both(op: str, version: int, x: np.ndarray, **attrs: Any) -> list[np.ndarray]:
    """The reference kernel (``kernels.run``) and the prepared function, each on ``x``."""
    return [run(op, version, x, domain=ML, **attrs)[0], _prepared(op, version, **attrs)(x)]


def _strings(*values: str) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode() for v in values]
    return out


def test_label_encoder_strings_to_ints_last_repeated_key_wins():
    keys, values = ["a", "b", "a", "c"], [1, 2, 3, 4]
    table = dict(zip(keys, values))  # Python's dict: the last "a" wins
    x = _strings("a", "c", "zz", "b", "a").reshape(1, 5)
    expected = np.array([[table.get(v.decode(), -7) for v in x.ravel()]], dtype=np.int64)
    for got in _both("LabelEncoder", 2, x, keys_strings=keys, values_int64s=values, default_int64=-7):
        assert got.dtype == np.int64 and got.shape == (1, 5)
        np.testing.assert_array_equal(got, expected)


def test_label_encoder_floats_with_a_nan_key_and_strings_out():
    keys = [0.5, float("nan"), 2.0, 0.5]
    values = ["half", "nan", "two", "HALF"]
    x = np.array([0.5, np.nan, 3.0, 2.0], dtype=np.float32)
    expected = [b"HALF", b"nan", b"none", b"two"]
    for got in _both("LabelEncoder", 4, x, keys_floats=keys, values_strings=values, default_string="none"):
        assert got.dtype == object
        assert list(got) == expected


@pytest.mark.parametrize("n", [1, 5, 32, 33, 200])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_label_encoder_integer_keys_few_elements_and_many(n: int, dtype: str) -> None:
    """Integer keys to float values (an isolation forest's leaf to its path length): up to 32 elements are looked
    up in a dict, more by a sorted search; both give the definition's values, the last repeated key winning, the
    default for an absent key (negative ones too)."""
    keys = [3, -2, 7, 3, 40, 0]
    values = [0.5, 1.5, -2.25, 9.0, 4.0, 0.0]
    table = dict(zip(keys, values))
    x = np.random.default_rng(n).integers(-4, 42, n).astype(dtype).reshape(n, 1)
    expected = np.array([[table.get(int(v), -1.5)] for v in x.ravel()], dtype=np.float32)
    for got in _both("LabelEncoder", 2, x, keys_int64s=keys, values_floats=values, default_float=-1.5):
        assert got.dtype == np.float32 and got.shape == (n, 1)
        np.testing.assert_array_equal(got, expected)


def test_category_mapper_both_directions_and_an_empty_input():
    attrs = {"cats_strings": ["x", "y", "z"], "cats_int64s": [7, 8, 9], "default_int64": -1, "default_string": "?"}
    for got in _both("CategoryMapper", 1, _strings("z", "w", "x"), **attrs):
        np.testing.assert_array_equal(got, np.array([9, -1, 7]))
    for got in _both("CategoryMapper", 1, np.array([[8, 10]], dtype=np.int64), **attrs):
        assert got.shape == (1, 2) and list(got.ravel()) == [b"y", b"?"]
    for got in _both("CategoryMapper", 1, _strings()[:0], **attrs):
        assert got.shape == (0,)


def test_label_encoder_1_both_directions():
    attrs = {"classes_strings": ["p", "q"], "default_int64": 5, "default_string": "D"}
    for got in _both("LabelEncoder", 1, _strings("q", "r", "p"), **attrs):
        np.testing.assert_array_equal(got, [1, 5, 0])
    for got in _both("LabelEncoder", 1, np.array([1, 2, -1, 0], dtype=np.int64), **attrs):
        assert list(got) == [b"q", b"D", b"D", b"p"]


@pytest.mark.parametrize("zeros", [1, 0])
def test_one_hot_encoder_strings_and_numbers(zeros: int):
    cats = ["red", "green", "blue"]
    x = _strings("blue", "red", "mauve", "green").reshape(2, 2)
    expected = np.array([[[v.decode() == c for c in cats] for v in row] for row in x], np.float32)
    if zeros:
        for got in _both("OneHotEncoder", 1, x, cats_strings=cats, zeros=zeros):
            assert got.dtype == np.float32 and got.shape == (2, 2, 3)
            np.testing.assert_array_equal(got, expected)
    else:
        with pytest.raises(Exception, match="not among the categories"):
            run("OneHotEncoder", 1, x, domain=ML, cats_strings=cats, zeros=0)
        with pytest.raises(Exception, match="not among the categories"):
            _prepared("OneHotEncoder", 1, cats_strings=cats, zeros=0)(x)
    # Numbers are truncated to integers before the look-up.
    xn = np.array([2.7, -1.0, 5.0], dtype=np.float32)
    for got in _both("OneHotEncoder", 1, xn, cats_int64s=[5, 2], zeros=1):
        np.testing.assert_array_equal(got, [[0, 1], [0, 0], [1, 0]])


def test_zip_map_values_are_distinct_float32_cells_not_views_of_the_input():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    out = run("ZipMap", 1, x, domain=ML, classlabels_int64s=[10, 20, 30])[0]
    assert len(out) == 4
    for row, m in zip(x, out):
        assert list(m) == [10, 20, 30]
        for v, cell in zip(row, m.values()):
            # numpy's float32 scalar: a 0-d float32 value of its own, which no caller can write through
            assert type(cell) is np.float32 and cell.shape == () and cell.dtype == np.float32
            assert cell == v
    x[0, 0] = 99.0  # the maps do not see the input changed after the call
    assert out[0][10] == 0.0


def test_zip_map_of_one_row_and_of_any_layout_or_type_keeps_its_own_float32_scores():
    from onnxcore.kernels.ml_maps import ScoreMaps, zip_map

    base = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    for x in (base[:1].astype(np.float32), base.astype(np.float32).T.copy().T, base, base[0], base[:, ::-1]):
        want = np.array(x, dtype=np.float32).reshape(-1, 3)  # (a copy)
        out = zip_map(x, classlabels_int64s=[1, 2, 3])
        assert isinstance(out, ScoreMaps) and len(out) == want.shape[0]
        assert out.scores.flags.c_contiguous and out.scores.dtype == np.float32
        assert out.scores.tobytes() == want.tobytes() and out.labels == [1, 2, 3]
        assert [[type(c) for c in m.values()] for m in out] == [[np.float32] * 3] * len(out)
        assert [list(m.values()) for m in out] == want.tolist()
        if x.dtype == np.float32:
            x[...] = -1.0  # a copy of the scores: the maps and scores do not see the input changed
            assert [list(m.values()) for m in out] == want.tolist() and out.scores.tobytes() == want.tobytes()
