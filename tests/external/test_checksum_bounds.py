"""A reference with a checksum to a huge file is refused before a single octet is hashed (Clauses 13.2, 13.3, 15.4).

Clause 13.3's digest covers the whole file, so hashing costs the file's size: the size bound
(``max_external_file_bytes``) and the range (offset plus length within the file) are checked first.
The files are sparse (``truncate``): a few GiB on paper, no block allocated.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import onnxcore
from onnxcore.external.resolve import Resolver

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ext_helpers import add_model, ext_tensor, ref, write_model

GIB = 1 << 30


@pytest.fixture
def no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("the file was hashed")

    monkeypatch.setattr(Resolver, "_sha1", refuse)


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def _model(tmp_path: Path, offset: int, length: int) -> Path:
    entries = [*ref("big.bin", offset, length), ("checksum", "0" * 40)]
    return write_model(tmp_path / "model.onnx", add_model([ext_tensor("w", entries)]))


@pytest.mark.usefixtures("no_hashing")
def test_a_file_above_the_size_bound_is_refused_before_hashing(tmp_path: Path) -> None:
    _sparse(tmp_path / "big.bin", 4 * GIB)
    path = _model(tmp_path, 0, 32)
    limits = dataclasses.replace(onnxcore.DEFAULT_LIMITS, max_external_file_bytes=GIB)
    with pytest.raises(onnxcore.ExternalDataError) as info:
        onnxcore.load(path, limits=limits)
    assert info.value.rule == "file-size-limit"
    assert isinstance(info.value, onnxcore.LimitError)
    report = onnxcore.check(path, limits=limits)
    assert report.errors and not any(f.code == "E-INTERNAL" for f in report.findings)


@pytest.mark.usefixtures("no_hashing")
@pytest.mark.parametrize(("offset", "length"), [(4 * GIB - 8, 32), (4 * GIB + 1, 32), (0, 4 * GIB + 1)])
def test_a_range_beyond_the_file_is_refused_before_hashing(tmp_path: Path, offset: int, length: int) -> None:
    _sparse(tmp_path / "big.bin", 4 * GIB)
    path = _model(tmp_path, offset, length)
    with pytest.raises(onnxcore.ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == "out-of-bounds"
    assert any(f.code.startswith("E-") for f in onnxcore.check(path).findings)


def test_within_bounds_the_whole_file_is_hashed(tmp_path: Path) -> None:
    """The bounds above are not a way around Clause 13.3: an in-range reference's digest is of the whole file."""
    data = bytes(range(32)) + b"tail of the file, outside the reference"
    (tmp_path / "big.bin").write_bytes(data)
    import hashlib

    whole = hashlib.sha1(data).hexdigest()
    part = hashlib.sha1(data[:32]).hexdigest()
    model = add_model([ext_tensor("w", [*ref("big.bin", 0, 32), ("checksum", part)])])
    path = write_model(tmp_path / "model.onnx", model)
    with pytest.raises(onnxcore.ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == "checksum-mismatch"
    write_model(path, add_model([ext_tensor("w", [*ref("big.bin", 0, 32), ("checksum", whole)])]))
    assert onnxcore.load(path).graph.initializer[0].name == "w"
