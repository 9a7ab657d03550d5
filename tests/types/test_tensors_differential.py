"""Differential tests of to_array/from_array against onnx.numpy_helper and onnx.helper.make_tensor
(Clause 6.3.4, Table 7): every element type, raw and typed storage, both directions, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gen import random_array, same_bits

from onnxcore import TensorError, decode, encode
from onnxcore.proto import TensorProto
from onnxcore.types import ElementType, from_array, to_array

onnx = pytest.importorskip("onnx")
numpy_helper = pytest.importorskip("onnx.numpy_helper")
helper = pytest.importorskip("onnx.helper")

E = ElementType
ALL = list(ElementType)
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (4, 3, 2), (257,)]


def _onnx_to_array(t: Any) -> np.ndarray[Any, Any]:
    arr = numpy_helper.to_array(t)
    if arr.dtype == object:  # onnx decodes STRING as UTF-8 str; ours are octet strings (Clause 6.4)
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [s.encode("utf-8") for s in arr.reshape(-1)]
        return out
    return arr


def _ours_to_onnx(t: TensorProto) -> Any:
    o = onnx.TensorProto()
    o.ParseFromString(bytes(encode(t)))
    return o


def _onnx_to_ours(o: Any) -> TensorProto:
    return decode(TensorProto, o.SerializeToString())


def _sample(et: ElementType, shape: tuple[int, ...], seed: int) -> np.ndarray[Any, Any]:
    n = int(np.prod(shape))
    return random_array(et, n, np.random.default_rng(seed)).reshape(shape)


@pytest.mark.parametrize("et", ALL, ids=lambda e: e.name)
@pytest.mark.parametrize("raw", [True, False], ids=["raw", "typed"])
def test_ours_to_onnx(et: ElementType, raw: bool) -> None:
    """Our from_array, encoded, read by onnx.numpy_helper.to_array gives the same array."""
    for i, shape in enumerate(SHAPES):
        arr = _sample(et, shape, i)
        t = from_array(arr, "x", raw=raw)
        assert t.data_type == int(et)
        assert list(t.dims) == list(shape)
        if raw and et is not E.STRING:
            assert t.has("raw_data")
        got = _onnx_to_array(_ours_to_onnx(t))
        assert same_bits(got, arr), (et, shape, got, arr)


@pytest.mark.parametrize("et", ALL, ids=lambda e: e.name)
def test_onnx_from_array_to_ours(et: ElementType) -> None:
    """Tensors made by onnx.numpy_helper.from_array (raw storage) read back by our to_array."""
    for i, shape in enumerate(SHAPES):
        arr = _sample(et, shape, 100 + i)
        src = arr if et is not E.STRING else np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(arr)
        if et is E.STRING and arr.size == 0:
            src = np.empty(shape, dtype=object)
        o = numpy_helper.from_array(src, "x")
        got = to_array(_onnx_to_ours(o))
        assert same_bits(got, arr), (et, shape, got, arr)


def _typed_values(arr: np.ndarray[Any, Any], et: ElementType) -> Any:
    if et is E.STRING:
        return [bytes(b) for b in arr.reshape(-1)]
    return arr.reshape(-1)


@pytest.mark.parametrize("et", ALL, ids=lambda e: e.name)
def test_onnx_make_tensor_typed_to_ours(et: ElementType) -> None:
    """Tensors made by onnx.helper.make_tensor in typed storage (Table 7) read back by our to_array."""
    for i, shape in enumerate(SHAPES):
        arr = _sample(et, shape, 200 + i)
        if et in (E.FLOAT8E4M3FN, E.FLOAT8E4M3FNUZ, E.FLOAT8E5M2, E.FLOAT8E5M2FNUZ, E.FLOAT8E8M0):
            # make_tensor converts float8 values (saturating, rounding up for E8M0); give it the
            # values it would keep: finite ones, and for E8M0 only the encodings make_tensor reproduces.
            arr = np.where(np.isfinite(arr.astype(np.float32)), arr, np.zeros((), dtype=arr.dtype)).astype(arr.dtype)
        o = helper.make_tensor("x", int(et), list(shape), _typed_values(arr, et), raw=False)
        assert not o.HasField("raw_data")
        ours = _onnx_to_ours(o)
        got = to_array(ours)
        expect = _onnx_to_array(o)
        assert same_bits(got, expect), (et, shape, got, expect)
        # and the typed fields we write are the ones onnx writes
        mine = from_array(got, "x", raw=False)
        assert _ours_to_onnx(mine).SerializeToString() == o.SerializeToString()


@pytest.mark.parametrize("et", [e for e in ALL if e is not E.STRING], ids=lambda e: e.name)
def test_onnx_make_tensor_raw_to_ours(et: ElementType) -> None:
    """Raw storage written by onnx.helper.make_tensor(raw=True) from the same array (STRING has none)."""
    for i, shape in enumerate(SHAPES):
        arr = _sample(et, shape, 300 + i)
        o = helper.make_tensor("x", int(et), list(shape), arr, raw=True)
        ours = from_array(arr, "x")
        assert bytes(ours.raw_data) == o.raw_data, (et, shape)
        assert same_bits(to_array(_onnx_to_ours(o)), arr)


def test_zero_copy_view() -> None:
    """Raw data of a decoded tensor is a read-only view into the encoded octets (no copy)."""
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    data = bytes(encode(from_array(arr, "w")))
    t = decode(TensorProto, data)
    out = to_array(t)
    assert not out.flags.writeable
    assert not out.flags.owndata
    assert np.shares_memory(out, np.frombuffer(t.raw_data, dtype=np.uint8))
    assert same_bits(out, arr)


def test_scalar_is_0d_array() -> None:
    t = from_array(np.float64(2.5), "s")
    assert list(t.dims) == []
    out = to_array(t)
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float64 and out[()] == 2.5


@pytest.mark.parametrize("raw", [True, False])
def test_size_mismatch_names_tensor_and_sizes(raw: bool) -> None:
    t = from_array(np.arange(6, dtype=np.int32), "bad", raw=raw)
    t.dims = [7]
    with pytest.raises(TensorError, match=r"'bad'.*(24|6).*(28|7)"):
        to_array(t)


def test_narrow_size_mismatch() -> None:
    t = from_array(np.zeros(7, dtype=E.INT4.np_dtype), "n4")
    assert len(t.raw_data) == 4
    t.dims = [9]  # needs 5 octets
    with pytest.raises(TensorError, match=r"'n4'.*4 octets.*needs 5"):
        to_array(t)


@pytest.mark.parametrize("tag", [0, 29, 1000, -1])
def test_bad_element_type(tag: int) -> None:
    t = TensorProto(name="t", dims=[1], data_type=tag, raw_data=b"\0")
    with pytest.raises(TensorError, match="'t'"):
        to_array(t)


def test_segment_refused() -> None:
    t = from_array(np.zeros(2, dtype=np.float32), "seg")
    t.segment = TensorProto.Segment(begin=0, end=2)
    with pytest.raises(TensorError, match="segment"):
        to_array(t)


def test_external_data_delegated(tmp_path: Any) -> None:
    """A tensor whose contents are EXTERNAL (Clause 13) is read through onnxcore.external."""
    from onnxcore.proto import StringStringEntryProto

    ext = pytest.importorskip("onnxcore.external")
    if not hasattr(ext, "read_external_tensor_bytes"):
        t = TensorProto(name="ext", dims=[2], data_type=int(E.FLOAT), data_location=1)
        with pytest.raises(TensorError, match="external data"):
            to_array(t)
        return
    arr = np.array([[1.5, -2.0, 3.0]], dtype=np.float32)
    (tmp_path / "w.bin").write_bytes(b"\0" * 8 + arr.tobytes())
    t = TensorProto(
        name="ext",
        dims=[1, 3],
        data_type=int(E.FLOAT),
        data_location=TensorProto.DataLocation.EXTERNAL,
        external_data=[
            StringStringEntryProto(key="location", value="w.bin"),
            StringStringEntryProto(key="offset", value="8"),
            StringStringEntryProto(key="length", value="12"),
        ],
    )
    assert same_bits(to_array(t, base_dir=str(tmp_path)), arr)
    t.dims = [1, 4]  # 12 octets on disk, 16 needed
    with pytest.raises(TensorError, match=r"'ext'.*12 octets.*needs 16"):
        to_array(t, base_dir=str(tmp_path))


def test_raw_and_typed_both_refused() -> None:
    t = from_array(np.zeros(2, dtype=np.float32), "both")
    t.float_data = [0.0, 0.0]
    with pytest.raises(TensorError, match="both"):
        to_array(t)


def test_wrong_typed_field_refused() -> None:
    t = TensorProto(name="w", dims=[2], data_type=int(E.FLOAT16), float_data=[1.0, 2.0])
    with pytest.raises(TensorError, match="float_data"):
        to_array(t)


def test_typed_value_out_of_range_refused() -> None:
    t = TensorProto(name="r", dims=[1], data_type=int(E.INT8), int32_data=[200])
    with pytest.raises(TensorError, match="200"):
        to_array(t)


def test_strings_are_octets() -> None:
    """Clause 6.4: STRING elements are octet strings; non-UTF-8 octets round trip unchanged."""
    arr = np.array([b"\xff\xfe", b"", "\u00e9".encode()], dtype=object)
    t = decode(TensorProto, bytes(encode(from_array(arr, "s"))))
    out = to_array(t)
    assert out.dtype == object and out.tolist() == arr.tolist()
    assert from_array(np.array(["\u00e9"]), "u").string_data == ["\u00e9".encode()]


def test_elem_type_conversion_only_when_exact() -> None:
    t = from_array(np.array([1, -8, 7]), elem_type=E.INT4)
    assert to_array(t).tolist() == [1, -8, 7]
    with pytest.raises(TensorError):
        from_array(np.array([9]), elem_type=E.INT4)
    with pytest.raises(TensorError):
        from_array(np.array([0.1]), elem_type=E.FLOAT16)


@pytest.mark.parametrize("dims", [[0, 2**62, 2**62], [2**62, 2**62], [0, 2**63 - 1, 4]])
@pytest.mark.parametrize("tag", [1, 8, 22])
def test_hostile_dims_give_tensor_error(dims: list[int], tag: int) -> None:
    for kw in ({"raw_data": b""}, {}):
        t = TensorProto(name="h", dims=dims, data_type=tag, **kw)  # type: ignore[arg-type]
        try:
            out = to_array(t)
        except TensorError:
            continue
        assert out.size == 0
