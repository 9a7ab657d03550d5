"""A model loaded from a path keeps its weights in the mapped file, and writers copy them file to file.

``raw_data`` of a single file's tensor is a view of the mapping (no octet read at load), the mapped-file registry
tells which file and offset a view shows, the writer's output is byte for byte the plain encoder's while copying
those views with ``copy_file_range``, and a file changed under its mapping is refused or not copied from (our
position, :mod:`onnxcore.external.mapped`). Lean memory (:mod:`onnxcore.external.spill`): large constants stay views
and large new ones go to a spill file.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pytest
from ext_helpers import add_model

import onnxcore
from onnxcore import TensorProto
from onnxcore.errors import ModelFileError
from onnxcore.external import write
from onnxcore.external.mapped import file_range, release_pages
from onnxcore.external.spill import SPILL_FROM, lean_memory, spill_constant
from onnxcore.graph.attributes import constant_array

F = TensorProto.DataType
N = 1 << 18  # floats per tensor: 1 MiB, above the writer's file-to-file threshold


def _weights() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal(N).astype(np.float32) for _ in range(2)]


def _single_file(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    ws = _weights()
    # A name of odd length first: the raw octets then start at an offset that is not a multiple of 4 (misaligned,
    # as a protobuf writer's framing leaves most weights of a single file).
    ts = [TensorProto(name=f"w{i}x" * (i + 1), data_type=F.FLOAT, dims=[N], raw_data=w.tobytes()) for i, w in
          enumerate(ws)]  # fmt: skip
    path = tmp_path / "m.onnx"
    onnxcore.save(add_model(ts, (N,)), path)
    return path, ws


def test_raw_data_of_a_loaded_file_is_a_view_of_the_mapping_at_its_offset(tmp_path: Path) -> None:
    path, ws = _single_file(tmp_path)
    model = onnxcore.load(path)
    octets = path.read_bytes()
    for t, w in zip(model.graph.initializer, ws, strict=True):
        raw = t.raw_data
        # Not a copy: a view whose buffer is the read-only mapping of the file (its pages are read when used).
        assert isinstance(raw, memoryview) and isinstance(raw.obj, mmap.mmap) and raw.readonly
        rng = file_range(raw)
        assert rng is not None and rng.file.path == os.path.realpath(path) and rng.length == w.nbytes
        assert octets[rng.offset : rng.offset + rng.length] == w.tobytes()
    # Misaligned for float32 (the reason a session copies it, and the optimizer does not).
    assert any(file_range(t.raw_data).offset % 4 for t in model.graph.initializer)  # type: ignore[union-attr]


def test_a_view_of_octets_or_of_an_unregistered_buffer_has_no_file(tmp_path: Path) -> None:
    path, _ = _single_file(tmp_path)
    from_octets = onnxcore.load(path.read_bytes())
    assert all(file_range(t.raw_data) is None for t in from_octets.graph.initializer)
    assert file_range(memoryview(bytes(100))) is None


@pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="needs copy_file_range")
@pytest.mark.parametrize("external", [False, True])
def test_the_writer_copies_mapped_views_file_to_file_byte_identical_to_the_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, external: bool
) -> None:
    path, ws = _single_file(tmp_path)
    model = onnxcore.load(path)
    copied: list[int] = []
    real = os.copy_file_range

    def spy(*a: int) -> int:
        copied.append(a[2])
        return real(*a)

    monkeypatch.setattr(write.os, "copy_file_range", spy)
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    onnxcore.save(model, out, external_data=external)
    monkeypatch.setattr(write.os, "copy_file_range", real)
    assert sum(copied) == 2 * 4 * N  # both weights went file to file, nothing else did
    # The same model held in memory (bytes, no mapping) written by the plain encoder / writer.
    plain = onnxcore.load(path.read_bytes())
    for t in plain.graph.initializer:
        t.raw_data = bytes(t.raw_data)
    ref = tmp_path / "ref" / "m.onnx"
    ref.parent.mkdir()
    onnxcore.save(plain, ref, external_data=external)
    assert out.read_bytes() == ref.read_bytes()
    if external:
        assert (out.parent / "m.onnx.data").read_bytes() == (ref.parent / "m.onnx.data").read_bytes()
    else:
        assert out.read_bytes() == onnxcore.encode(plain) == path.read_bytes()
    again = onnxcore.load(out)
    for t, w in zip(again.graph.initializer, ws, strict=True):
        np.testing.assert_array_equal(onnxcore.to_array(t), w)


def test_a_file_truncated_under_its_mapping_is_refused_not_read(tmp_path: Path) -> None:
    path, _ = _single_file(tmp_path)
    model = onnxcore.load(path)
    os.truncate(path, 1000)  # reading the mapping past 1000 octets now would fault
    with pytest.raises(ModelFileError, match="truncated"):
        onnxcore.save(model, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_a_file_replaced_by_rename_is_not_copied_from(tmp_path: Path) -> None:
    path, ws = _single_file(tmp_path)
    model = onnxcore.load(path)
    other = tmp_path / "other"
    other.write_bytes(b"\xff" * path.stat().st_size)
    os.replace(other, path)  # a new inode: the mapping still shows the old one
    onnxcore.save(model, tmp_path / "out.onnx")
    again = onnxcore.load(tmp_path / "out.onnx")
    for t, w in zip(again.graph.initializer, ws, strict=True):
        np.testing.assert_array_equal(onnxcore.to_array(t), w)


def test_lean_memory_keeps_large_misaligned_views_and_spills_large_new_constants(tmp_path: Path) -> None:
    big = np.frombuffer(bytes(SPILL_FROM + 4), np.uint8)[1:-3].view(np.float32)  # misaligned, read-only
    assert not big.flags.aligned
    assert constant_array(big) is not big  # a session copies it once, aligned
    small = np.arange(10, dtype=np.float32)
    with lean_memory(tmp_path):
        assert constant_array(big) is big  # the optimizer does not
        assert spill_constant(small) is small
        value = np.arange(SPILL_FROM // 4, dtype=np.float32).reshape(-1, 1024)
        spilled = spill_constant(value)
        assert spilled is not value and not spilled.flags.writeable
        np.testing.assert_array_equal(spilled, value)
        # An unlinked file in the directory given: nothing is left there.
        assert list(tmp_path.iterdir()) == []
        t = onnxcore.from_array(spilled, "w")  # a view of the spill file, not a copy
        rng = file_range(t.raw_data)
        assert rng is not None and rng.file.fd is not None and rng.length == value.nbytes
        assert spill_constant(spilled) is spilled  # already a file's view
    assert spill_constant(value) is value  # outside lean memory: as it is
    release_pages(spilled)  # drops resident pages only: the values stay
    np.testing.assert_array_equal(spilled, value)
    np.testing.assert_array_equal(onnxcore.to_array(t).reshape(value.shape), value)


def test_from_array_copies_a_writable_or_unmapped_array() -> None:
    a = np.arange(8, dtype=np.float32)
    assert isinstance(onnxcore.from_array(a, "a").raw_data, bytes)
    ro = np.frombuffer(a.tobytes(), np.float32)
    assert isinstance(onnxcore.from_array(ro, "ro").raw_data, bytes)
