"""com.microsoft MurmurHash3 against onnxruntime and scikit-learn, and scikit-learn's FeatureHasher converted by
skl2onnx run end to end: onnxcore's hashes equal onnxruntime's bit for bit, and the hashed features equal
scikit-learn's."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from kernels.contrib import both, run_ort_model, run_ours_model
from onnxcore.defs import get_schema
from onnxcore.errors import EvaluationError
from onnxcore.kernels import run
from onnxcore.kernels.registry import lookup

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

STRINGS = np.array(["", "a", "ab", "abc", "abcd", "hello world", "café", "Ωmega naïve", "x" * 37], dtype=object)
KEYS = {
    "int32": np.array([0, 1, -1, -5, 123456, 2**31 - 1, -(2**31)], dtype=np.int32),
    "uint32": np.array([0, 1, 5, 2**32 - 1, 2**31], dtype=np.uint32),
    "int64": np.array([0, 1, -5, 2**40 + 3, -(2**63)], dtype=np.int64),
    "uint64": np.array([0, 7, 2**64 - 1], dtype=np.uint64),
    "float32": np.array([0.0, -0.0, 1.5, -2.25, np.inf, 3.4e38], dtype=np.float32),
    "float64": np.array([0.0, 1.5, -1e300, np.pi], dtype=np.float64),
    "string": STRINGS,
}


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("seed", [0, 1, 42, -1, 2**31])
@pytest.mark.parametrize("positive", [0, 1])
def test_murmurhash3_against_onnxruntime(kind: str, seed: int, positive: int) -> None:
    x = KEYS[kind]
    ours, theirs = both("MurmurHash3", [x], 1, {"seed": seed, "positive": positive})
    assert ours[0].dtype == theirs[0].dtype == (np.uint32 if positive else np.int32)
    np.testing.assert_array_equal(ours[0], theirs[0])


def test_murmurhash3_defaults_and_shape() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4) - 6
    ours, theirs = both("MurmurHash3", [x], 1)  # positive 1, seed 0
    assert ours[0].shape == (3, 4) and ours[0].dtype == np.uint32
    np.testing.assert_array_equal(ours[0], theirs[0])
    empty = run("MurmurHash3", 1, np.zeros((0, 2), dtype=object), domain="com.microsoft")[0]
    assert empty.shape == (0, 2) and empty.dtype == np.uint32


@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_murmurhash3_equals_scikit_learn(seed: int) -> None:
    murmurhash3_32 = pytest.importorskip("sklearn.utils").murmurhash3_32
    for positive in (True, False):
        got = run("MurmurHash3", 1, STRINGS, domain="com.microsoft", seed=seed, positive=int(positive))[0]
        assert got.tolist() == [murmurhash3_32(s, seed=seed, positive=positive) for s in STRINGS]
        ints = KEYS["int32"]
        got = run("MurmurHash3", 1, ints, domain="com.microsoft", seed=seed, positive=int(positive))[0]
        assert got.tolist() == [murmurhash3_32(int(i), seed=seed, positive=positive) for i in ints]


def test_murmurhash3_kernel_follows_its_definition() -> None:
    schema = get_schema("MurmurHash3", 1, "com.microsoft")
    assert schema.origin == "onnxruntime"
    assert [p.name for p in schema.inputs] == ["X"] and [p.name for p in schema.outputs] == ["Y"]
    assert set(schema.type_constraints["T2"]) == {"tensor(uint32)", "tensor(int32)"}
    kernel_def = lookup("com.microsoft", "MurmurHash3", 1)
    assert kernel_def is not None
    params = inspect.signature(kernel_def.fn).parameters
    assert set(schema.attributes) == {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    for name, attr in schema.attributes.items():
        assert attr.default is not None and params[name].default == attr.default.i, name


def test_murmurhash3_refusals() -> None:
    with pytest.raises(EvaluationError, match="element type"):
        run("MurmurHash3", 1, np.array([1], dtype=np.int16), domain="com.microsoft")
    with pytest.raises(EvaluationError, match="positive"):
        run("MurmurHash3", 1, np.array([1], dtype=np.int32), domain="com.microsoft", positive=2)


def _hasher_model(alternate_sign: bool, n_features: int) -> tuple[Any, Any]:
    sklearn_fe = pytest.importorskip("sklearn.feature_extraction")
    skl2onnx = pytest.importorskip("skl2onnx")
    from skl2onnx.common.data_types import StringTensorType

    rows = [["cat", "dog"], ["dog", "café"], ["", "x" * 20], ["Ωmega", "cat"], ["bird", "bird"]]
    hasher = sklearn_fe.FeatureHasher(
        n_features=n_features, input_type="string", alternate_sign=alternate_sign, dtype=np.float32
    )
    expected = hasher.fit_transform(rows).toarray()
    model = skl2onnx.to_onnx(hasher, initial_types=[("X", StringTensorType([None, 2]))], target_opset=17)
    assert any(n.op_type == "MurmurHash3" for n in model.graph.node)
    return model, (np.array(rows, dtype=object), expected)


@pytest.mark.parametrize("alternate_sign", [False, True])
@pytest.mark.parametrize("n_features", [8, 2**10])
def test_feature_hasher_converted_by_skl2onnx(alternate_sign: bool, n_features: int) -> None:
    model, (x, expected) = _hasher_model(alternate_sign, n_features)
    ours = run_ours_model(model, {"X": x})
    theirs = run_ort_model(model, {"X": x})
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(np.asarray(ours[0]), expected)
