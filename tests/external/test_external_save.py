"""Writing external data: save with a data file, idempotence, atomicity, externalize / internalize."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ext_helpers import EXTERNAL, add_model, ext_tensor, floats, ref, write_model

import onnxcore
from onnxcore import ExternalDataError, TensorProto
from onnxcore.external import ReferenceRule, externalize, internalize, is_resolved, write
from onnxcore.external.tensor_walk import iter_tensors
from onnxcore.proto.decoder import NanBits

F = TensorProto.DataType


def _entries(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _model(sizes: list[int]) -> onnxcore.ModelProto:
    ts = [
        TensorProto(name=f"w{i}", data_type=F.FLOAT, dims=[n], raw_data=floats(n, 1000 * i).tobytes())
        for i, n in enumerate(sizes)
    ]
    return add_model(ts, (sizes[0],))


def test_save_external_layout(tmp_path: Path) -> None:
    model = _model([1000, 10, 300])  # 4000, 40 and 1200 octets
    path = tmp_path / "m.onnx"
    onnxcore.save(model, path, external_data=True)
    data = (tmp_path / "m.onnx.data").read_bytes()
    on_disk = onnxcore.load(path, external_data=False)
    w0, w1, w2 = on_disk.graph.initializer
    assert _entries(w0) == {"location": "m.onnx.data", "offset": "0", "length": "4000"}
    assert _entries(w2) == {"location": "m.onnx.data", "offset": "4096", "length": "1200"}  # aligned
    assert w1.data_location != EXTERNAL and w1.has("raw_data")  # below the threshold
    assert not w0.has("raw_data") and not w2.has("raw_data")
    assert data[:4000] == floats(1000).tobytes() and data[4096:5296] == floats(300, 2000).tobytes()
    assert len(data) == 5296
    # The in-memory model was not changed.
    assert all(t.data_location != EXTERNAL for t in model.graph.initializer)
    loaded = onnxcore.load(path)
    for a, b in zip(loaded.graph.initializer, model.graph.initializer):
        assert bytes(a.raw_data) == bytes(b.raw_data)


def test_save_location_threshold_align_checksum(tmp_path: Path) -> None:
    model = _model([256, 256])
    (tmp_path / "sub").mkdir()
    path = tmp_path / "m.onnx"
    onnxcore.save(
        model, path, external_data=True, location="sub/weights.bin", size_threshold=1024, align=64, checksum=True
    )
    data = (tmp_path / "sub" / "weights.bin").read_bytes()
    digest = hashlib.sha1(data).hexdigest()
    entries = [_entries(t) for t in onnxcore.load(path, external_data=False).graph.initializer]
    assert entries == [
        {"location": "sub/weights.bin", "offset": "0", "length": "1024", "checksum": digest},
        {"location": "sub/weights.bin", "offset": "1024", "length": "1024", "checksum": digest},
    ]
    assert onnxcore.load(path).graph.initializer[1].raw_data.tobytes() == floats(256, 1000).tobytes()


@pytest.mark.parametrize("location", ["../w.bin", "/tmp/w.bin", "", "m.onnx"])
def test_save_refuses_bad_locations(tmp_path: Path, location: str) -> None:
    with pytest.raises(ExternalDataError):
        onnxcore.save(_model([1024]), tmp_path / "m.onnx", external_data=True, location=location)
    assert not (tmp_path / "m.onnx").exists()


def test_typed_storage_goes_out_as_raw_little_endian(tmp_path: Path) -> None:
    f = TensorProto(name="f", data_type=F.FLOAT, dims=[512], float_data=floats(512).tolist())
    i = TensorProto(name="i", data_type=F.INT64, dims=[256], int64_data=list(range(-128, 128)))
    h = TensorProto(name="h", data_type=F.FLOAT16, dims=[600], int32_data=[0x3C00] * 600)
    s = TensorProto(name="s", data_type=F.STRING, dims=[300], string_data=[b"abcdefgh"] * 300)
    small = TensorProto(name="k", data_type=F.INT32, dims=[3], int32_data=[1, 2, 3])
    path = tmp_path / "m.onnx"
    onnxcore.save(add_model([f, i, h, s, small]), path, external_data=True)
    out = {t.name: t for t in onnxcore.load(path).graph.initializer}
    assert all(out[n].data_location == EXTERNAL for n in "fih")
    assert np.array_equal(np.frombuffer(out["f"].raw_data, "<f4"), floats(512))
    assert np.frombuffer(out["i"].raw_data, "<i8").tolist() == list(range(-128, 128))
    assert np.array_equal(np.frombuffer(out["h"].raw_data, "<f2"), np.ones(600, "<f2"))
    assert out["s"].string_data == [b"abcdefgh"] * 300 and out["s"].data_location != EXTERNAL
    assert out["k"].int32_data == [1, 2, 3]


def test_typed_nan_payload_kept(tmp_path: Path) -> None:
    bits = np.full(300, 0x7FA00001, dtype="<u4")
    # A signalling NaN as the decoder gives it (Python floats would quiet it).
    t = TensorProto(name="n", data_type=F.FLOAT, dims=[300], float_data=[NanBits(0x7FA00001)] * 300)
    raw = onnxcore.decode(TensorProto, onnxcore.encode(t))
    assert isinstance(raw.float_data[0], NanBits)
    path = tmp_path / "m.onnx"
    onnxcore.save(add_model([raw]), path, external_data=True)
    got = np.frombuffer(onnxcore.load(path).graph.initializer[0].raw_data, "<u4")
    assert np.array_equal(got, bits)


def test_saving_twice_never_appends(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnxcore.save(_model([4096, 4096]), path, external_data=True)
    big = (tmp_path / "m.onnx.data").stat().st_size
    onnxcore.save(_model([2048]), path, external_data=True)
    assert (tmp_path / "m.onnx.data").read_bytes() == floats(2048).tobytes()
    assert big > 2048 * 4
    first = path.read_bytes(), (tmp_path / "m.onnx.data").read_bytes()
    onnxcore.save(onnxcore.load(path), path, external_data=True)
    assert (path.read_bytes(), (tmp_path / "m.onnx.data").read_bytes()) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]  # no temporaries left


def test_saving_over_the_file_the_views_map(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnxcore.save(_model([1 << 18, 1 << 18]), path, external_data=True)  # 2 MiB: mapped
    model = onnxcore.load(path)
    assert is_resolved(model.graph.initializer[0])
    # Same path, new layout (alignment changes every offset): the old file stays mapped.
    onnxcore.save(model, path, external_data=True, align=1 << 16, checksum=True)
    again = onnxcore.load(path)
    for i, t in enumerate(again.graph.initializer):
        assert np.array_equal(np.frombuffer(t.raw_data, "<f4"), floats(1 << 18, 1000 * i))
        assert np.array_equal(np.frombuffer(model.graph.initializer[i].raw_data, "<f4"), floats(1 << 18, 1000 * i))


def test_interrupted_save_leaves_the_old_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.onnx"
    onnxcore.save(_model([1024]), path, external_data=True)
    old = path.read_bytes(), (tmp_path / "m.onnx.data").read_bytes()

    for fail_at in (1, 2):  # the data rename, then the model rename
        calls: list[str] = []
        real = os.replace

        def flaky(
            a: str, b: str, fail_at: int = fail_at, calls: list[str] = calls, real: Callable[[str, str], None] = real
        ) -> None:
            calls.append(b)
            if len(calls) == fail_at:
                raise OSError(28, "No space left on device")
            real(a, b)

        monkeypatch.setattr(write.os, "replace", flaky)
        with pytest.raises(OSError):
            onnxcore.save(_model([1024, 2048]), path, external_data=True)
        monkeypatch.setattr(write.os, "replace", real)
        # The old model file is intact and no temporary is left, whichever rename failed.
        assert path.read_bytes() == old[0]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
        if fail_at == 1:
            assert (tmp_path / "m.onnx.data").read_bytes() == old[1]
            assert bytes(onnxcore.load(path).graph.initializer[0].raw_data) == floats(1024).tobytes()
    # Failing at the model rename is the documented window: the data file is already the new one.
    assert len((tmp_path / "m.onnx.data").read_bytes()) == 4096 + 8192


def test_save_inline_and_unresolved(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    onnxcore.save(_model([1024]), src / "m.onnx", external_data=True)
    # Resolved -> written inline by default.
    onnxcore.save(onnxcore.load(src / "m.onnx"), tmp_path / "inline.onnx")
    inline = onnxcore.load((tmp_path / "inline.onnx").read_bytes())
    t = inline.graph.initializer[0]
    assert t.data_location != EXTERNAL and not t.external_data and bytes(t.raw_data) == floats(1024).tobytes()
    # Unresolved -> references written as they are (nothing to read them from)...
    lazy = onnxcore.load(src / "m.onnx", external_data=False)
    onnxcore.save(lazy, src / "same.onnx")
    assert onnxcore.load(src / "same.onnx", external_data=False) == lazy
    # ...and refused where contents are needed.
    with pytest.raises(ExternalDataError) as info:
        onnxcore.save(lazy, tmp_path / "x.onnx", external_data=True)
    assert info.value.rule == ReferenceRule.UNRESOLVED
    with pytest.raises(ExternalDataError) as info:
        internalize(lazy)
    assert info.value.rule == ReferenceRule.UNRESOLVED


def test_save_refuses_external_with_inline_contents(tmp_path: Path) -> None:
    t = ext_tensor("w", ref("w.bin"))
    t.raw_data = floats(8).tobytes()
    with pytest.raises(ExternalDataError) as info:
        onnxcore.save(add_model([t]), tmp_path / "m.onnx")
    assert info.value.rule == ReferenceRule.INLINE_AND_EXTERNAL


def test_externalize_and_internalize_in_memory(tmp_path: Path) -> None:
    model = _model([1024, 8, 2048])
    out, parts = externalize(model, location="w.bin", align=16, checksum=True)
    blob = b"".join(bytes(p) for p in parts)
    assert model == _model([1024, 8, 2048])  # unchanged
    refs = {t.name: _entries(t) for _, t in iter_tensors(out) if t.data_location == EXTERNAL}
    digest = hashlib.sha1(blob).hexdigest()
    assert refs == {
        "w0": {"location": "w.bin", "offset": "0", "length": "4096", "checksum": digest},
        "w2": {"location": "w.bin", "offset": "4096", "length": "8192", "checksum": digest},
    }
    # Written out by hand, the pair loads back.
    (tmp_path / "w.bin").write_bytes(blob)
    onnxcore.save(out, tmp_path / "m.onnx")
    loaded = onnxcore.load(tmp_path / "m.onnx")
    back = internalize(loaded)
    assert back == model
    assert all(is_resolved(t) for t in loaded.graph.initializer if t.name != "w1")


def test_written_files_have_ordinary_permissions(tmp_path: Path) -> None:
    onnxcore.save(_model([1024]), tmp_path / "m.onnx", external_data=True)
    mask = os.umask(0o022)
    os.umask(mask)
    for name in ("m.onnx", "m.onnx.data"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask


def test_reloaded_model_file_round_trip_is_byte_exact(tmp_path: Path) -> None:
    write_model(tmp_path / "a.onnx", add_model([ext_tensor("w", ref("w.bin"))]))
    (tmp_path / "w.bin").write_bytes(floats(8).tobytes())
    lazy = onnxcore.load(tmp_path / "a.onnx", external_data=False)
    onnxcore.save(lazy, tmp_path / "b.onnx")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_raw_data_as_a_typed_memoryview_counts_octets(tmp_path: Path) -> None:
    a = floats(300)  # 1200 octets, but len(memoryview(a)) == 300
    t = TensorProto(name="w", data_type=F.FLOAT, dims=[300], raw_data=memoryview(a))
    onnxcore.save(add_model([t], (300,)), tmp_path / "m.onnx", external_data=True)
    got = onnxcore.load(tmp_path / "m.onnx").graph.initializer[0]
    assert _entries(got)["length"] == "1200"
    assert np.array_equal(np.frombuffer(got.raw_data, "<f4"), a)


@pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="needs copy_file_range")
@pytest.mark.parametrize("replaced", [False, True])
def test_resaving_mapped_views_copies_in_kernel_from_the_same_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replaced: bool
) -> None:
    n = 1 << 18  # 1 MiB per tensor: mapped
    src = tmp_path / "src"
    src.mkdir()
    onnxcore.save(_model([n, n]), src / "m.onnx", external_data=True)
    model = onnxcore.load(src / "m.onnx")
    if replaced:
        # Someone replaces the data file after load: the views still show the old inode, and the
        # copy must come from them, not from whatever the path names now.
        other = src / "other"
        other.write_bytes(b"\xff" * (2 * 4 * n + 4096))
        os.replace(other, src / "m.onnx.data")
    copied: list[int] = []
    real = os.copy_file_range

    def spy(*a: int) -> int:
        copied.append(a[2])
        return real(*a)

    monkeypatch.setattr(write.os, "copy_file_range", spy)
    onnxcore.save(model, tmp_path / "m.onnx", external_data=True, align=64)
    monkeypatch.setattr(write.os, "copy_file_range", real)
    assert (sum(copied) == 2 * 4 * n) != replaced
    again = onnxcore.load(tmp_path / "m.onnx")
    for i, t in enumerate(again.graph.initializer):
        assert np.array_equal(np.frombuffer(t.raw_data, "<f4"), floats(n, 1000 * i))
