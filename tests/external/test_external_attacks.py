"""The attack suite: one model directory per threat of Table 14 and per rule of Clauses 13.2, 13.3, 15.3.

Layout of every case: ``tmp/outside/secret.bin`` holds :data:`SECRET`; ``tmp/model/`` holds the
model and whatever the attack plants. Each case asserts the rule that refuses it, through
``onnxcore.load`` and through ``verify_references`` (what the validator reports), and that no
octet of the outside file comes back (not in a tensor, not in an error message).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ext_helpers import SECRET, add_model, ext_tensor, floats, ref, write_model

import onnxcore
from onnxcore import ExternalDataError, LimitError, Limits
from onnxcore.external import ReferenceRule, resolve, verify_references

pytestmark = pytest.mark.skipif(not resolve.HAVE_DIR_FD, reason="POSIX openat semantics")


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(SECRET)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    return model_dir, outside / "secret.bin"


def _model(model_dir: Path, entries: list[tuple[str, str]], **kw: object) -> Path:
    return write_model(model_dir / "model.onnx", add_model([ext_tensor("w", entries, **kw)]))  # type: ignore[arg-type]


def _refused(
    path: Path, rule: ReferenceRule, location: str | None, *, tensor: str = "w", **load_kw: object
) -> ExternalDataError:
    """Assert load and verify_references both refuse with ``rule``; return the load error."""
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path, **load_kw)  # type: ignore[arg-type]
    err = info.value
    assert err.rule == rule, str(err)
    assert err.tensor == tensor
    assert err.location == location
    assert rule.value in str(err) and tensor in str(err)
    assert SECRET.decode() not in str(err)
    # The validator's view: the same refusal, listed, without changing the model.
    model = onnxcore.load(path, external_data=False)
    found = verify_references(model, path.parent)
    assert [e.rule for e in found] == [rule]
    assert not model.graph.initializer[0].has("raw_data")
    return err


# -- Table 14: path traversal ------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    ["../outside/secret.bin", "sub/../../outside/secret.bin", "..\\outside\\secret.bin", "./../outside/secret.bin"],
)
def test_parent_component_refused(layout: tuple[Path, Path], location: str) -> None:
    model_dir, _secret = layout
    (model_dir / "sub").mkdir()
    _refused(_model(model_dir, ref(location)), ReferenceRule.LOCATION_PARENT, location)


def test_absolute_path_refused(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    _refused(_model(model_dir, ref(str(secret))), ReferenceRule.LOCATION_ABSOLUTE, str(secret))


@pytest.mark.parametrize("location", ["C:\\outside\\secret.bin", "\\\\server\\share\\x", "c:secret.bin"])
def test_windows_absolute_forms_refused(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, location: str
) -> None:
    model_dir, _secret = layout
    _refused(_model(model_dir, ref(location)), ReferenceRule.LOCATION_ABSOLUTE, location)
    # Even allowed outside, a form that is not absolute here is never opened from the working directory.
    monkeypatch.chdir(model_dir)
    Path(location).write_bytes(b"\0" * 32)  # on POSIX this is a file name like any other, in the cwd
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(model_dir / "model.onnx", allow_outside=True)
    assert info.value.rule == ReferenceRule.LOCATION_ABSOLUTE


def test_allow_outside_is_the_explicit_opt_in(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    for location in ["../outside/secret.bin", str(secret)]:
        path = _model(model_dir, ref(location))
        with pytest.raises(ExternalDataError):
            onnxcore.load(path)
        model = onnxcore.load(path, allow_outside=True)
        assert bytes(model.graph.initializer[0].raw_data) == SECRET


# -- Table 14: symbolic link traversal ---------------------------------------------------------


def test_symlink_file_refused(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    (model_dir / "w.bin").symlink_to(secret)
    err = _refused(_model(model_dir, ref("w.bin")), ReferenceRule.SYMLINK, "w.bin")
    assert "symbolic link" in str(err)


def test_symlink_directory_component_refused(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    (model_dir / "sub").symlink_to(secret.parent, target_is_directory=True)
    err = _refused(_model(model_dir, ref("sub/secret.bin")), ReferenceRule.SYMLINK, "sub/secret.bin")
    assert "'sub'" in str(err)


def test_symlink_deeper_component_refused(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    (model_dir / "a").mkdir()
    (model_dir / "a" / "b").symlink_to(secret.parent, target_is_directory=True)
    _refused(_model(model_dir, ref("a/b/secret.bin")), ReferenceRule.SYMLINK, "a/b/secret.bin")


def test_symlink_inside_the_directory_also_refused(layout: tuple[Path, Path]) -> None:
    # Clause 15.3: a reference whose path or any component of it is a symbolic link, wherever it points.
    model_dir, _secret = layout
    (model_dir / "real.bin").write_bytes(floats(8).tobytes())
    (model_dir / "w.bin").symlink_to("real.bin")
    _refused(_model(model_dir, ref("w.bin")), ReferenceRule.SYMLINK, "w.bin")


# -- Table 14: hard link exposure --------------------------------------------------------------


def test_hard_link_to_outside_file_refused(layout: tuple[Path, Path]) -> None:
    model_dir, secret = layout
    os.link(secret, model_dir / "w.bin")
    err = _refused(_model(model_dir, ref("w.bin")), ReferenceRule.HARDLINK, "w.bin")
    assert "2 hard links" in str(err)


# -- Clause 13.2 / 15.4: offset and length -----------------------------------------------------


@pytest.fixture
def data_dir(layout: tuple[Path, Path]) -> Path:
    model_dir, _ = layout
    (model_dir / "w.bin").write_bytes(floats(8).tobytes())  # 32 octets
    return model_dir


@pytest.mark.parametrize(
    ("offset", "length", "rule"),
    [
        (0, 64, ReferenceRule.OUT_OF_BOUNDS),  # length beyond the file
        (100, None, ReferenceRule.OUT_OF_BOUNDS),  # offset beyond the file
        (16, 32, ReferenceRule.OUT_OF_BOUNDS),  # the range ends beyond the file
        ((1 << 63) - 1, 8, ReferenceRule.OVERFLOW),  # offset + length overflows int64
        (1 << 64, None, ReferenceRule.OVERFLOW),  # offset alone does not fit
        (0, 1 << 70, ReferenceRule.OVERFLOW),
    ],
)
def test_range_refused_before_anything_is_mapped(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, offset: int, length: int | None, rule: ReferenceRule
) -> None:
    mapped: list[int] = []
    real_contents = resolve.Resolver._contents

    def spy(self: resolve.Resolver, *a: object) -> memoryview:
        mapped.append(1)
        return real_contents(self, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve.Resolver, "_contents", spy)
    _refused(_model(data_dir, ref("w.bin", offset, length)), rule, "w.bin")
    assert mapped == []


@pytest.mark.parametrize(
    ("key", "value"), [("offset", "-1"), ("offset", " 1"), ("offset", "0x10"), ("length", "1e3"), ("length", "٣")]
)
def test_malformed_integers_refused(data_dir: Path, key: str, value: str) -> None:
    rule = ReferenceRule.OFFSET_INVALID if key == "offset" else ReferenceRule.LENGTH_INVALID
    _refused(_model(data_dir, [("location", "w.bin"), (key, value)]), rule, "w.bin")


def test_exact_range_accepted(data_dir: Path) -> None:
    path = _model(data_dir, ref("w.bin", 16, 16), dims=(4,))
    model = onnxcore.load(path)
    assert np.frombuffer(model.graph.initializer[0].raw_data, "<f4").tolist() == [4.0, 5.0, 6.0, 7.0]


# -- Table 11: keys ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["basepath", "Location", "", "location "])
def test_unknown_key_refused(data_dir: Path, key: str) -> None:
    _refused(_model(data_dir, [("location", "w.bin"), (key, "x")]), ReferenceRule.KEY_UNKNOWN, "w.bin")


def test_duplicate_key_refused(data_dir: Path) -> None:
    _refused(
        _model(data_dir, [("location", "w.bin"), ("offset", "0"), ("offset", "4")]),
        ReferenceRule.KEY_DUPLICATE,
        "w.bin",
    )


def test_missing_location_refused(data_dir: Path) -> None:
    _refused(_model(data_dir, [("offset", "0")]), ReferenceRule.LOCATION_MISSING, None)


@pytest.mark.parametrize("location", ["", ".", "./", "//"])
def test_empty_location_refused(data_dir: Path, location: str) -> None:
    rule = ReferenceRule.LOCATION_ABSOLUTE if location.startswith("/") else ReferenceRule.LOCATION_EMPTY
    _refused(_model(data_dir, ref(location)), rule, location)


def test_nul_in_location_refused(data_dir: Path) -> None:
    _refused(_model(data_dir, ref("w.bin\x00../../x")), ReferenceRule.LOCATION_INVALID, "w.bin\x00../../x")


def test_inline_and_external_refused(data_dir: Path) -> None:
    t = ext_tensor("w", ref("w.bin"))
    t.raw_data = floats(8).tobytes()
    path = write_model(data_dir / "model.onnx", add_model([t]))
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == ReferenceRule.INLINE_AND_EXTERNAL
    assert [e.rule for e in verify_references(onnxcore.load(path, external_data=False), data_dir)] == [
        ReferenceRule.INLINE_AND_EXTERNAL
    ]


# -- Clause 13.3: checksum ---------------------------------------------------------------------


def test_checksum_verified(data_dir: Path) -> None:
    good = hashlib.sha1((data_dir / "w.bin").read_bytes()).hexdigest()
    model = onnxcore.load(_model(data_dir, [*ref("w.bin"), ("checksum", good.upper())]))
    assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), floats(8))


def test_checksum_mismatch_refused(data_dir: Path) -> None:
    bad = hashlib.sha1(b"something else").hexdigest()
    err = _refused(_model(data_dir, [*ref("w.bin"), ("checksum", bad)]), ReferenceRule.CHECKSUM_MISMATCH, "w.bin")
    assert bad in str(err)


@pytest.mark.parametrize("value", ["", "abc", "z" * 40, "sha256:" + "0" * 64])
def test_checksum_malformed_refused(data_dir: Path, value: str) -> None:
    _refused(_model(data_dir, [*ref("w.bin"), ("checksum", value)]), ReferenceRule.CHECKSUM_INVALID, "w.bin")


# -- Other file kinds --------------------------------------------------------------------------


def test_missing_file(layout: tuple[Path, Path]) -> None:
    model_dir, _ = layout
    _refused(_model(model_dir, ref("nope.bin")), ReferenceRule.NOT_FOUND, "nope.bin")


def test_directory_is_not_a_file(layout: tuple[Path, Path]) -> None:
    model_dir, _ = layout
    (model_dir / "d").mkdir()
    _refused(_model(model_dir, ref("d")), ReferenceRule.NOT_REGULAR, "d")


def test_file_used_as_directory(data_dir: Path) -> None:
    _refused(_model(data_dir, ref("w.bin/x")), ReferenceRule.NOT_DIRECTORY, "w.bin/x")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_fifo_refused_without_blocking(layout: tuple[Path, Path]) -> None:
    model_dir, _ = layout
    os.mkfifo(model_dir / "w.bin")
    _refused(_model(model_dir, ref("w.bin")), ReferenceRule.NOT_REGULAR, "w.bin")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_reached_with_allow_outside_still_refused(layout: tuple[Path, Path]) -> None:
    model_dir, _ = layout
    path = _model(model_dir, ref("/dev/zero", 0, 32))
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path, allow_outside=True)
    assert info.value.rule == ReferenceRule.NOT_REGULAR


def test_file_size_limit_is_a_limit_error(data_dir: Path) -> None:
    path = _model(data_dir, ref("w.bin"))
    with pytest.raises(LimitError) as info:
        onnxcore.load(path, limits=Limits(max_external_file_bytes=16))
    assert isinstance(info.value, ExternalDataError)
    assert info.value.rule == ReferenceRule.FILE_SIZE_LIMIT
    with pytest.raises(LimitError):
        onnxcore.load(path, limits=Limits(max_tensor_bytes=16))


# -- Clause 15.3: the file opened is the file checked (swap between check and open) ----------


def _swap_before_open(monkeypatch: pytest.MonkeyPatch, name: str, swap: Callable[[], None]) -> list[str]:
    """Run ``swap`` right before the open of component ``name``, after its lstat check."""
    calls: list[str] = []
    real = resolve._open_at

    def racing_open(dir_fd: int, component: str, flags: int) -> int:
        if component == name and not calls:
            calls.append(component)
            swap()
        return real(dir_fd, component, flags)

    monkeypatch.setattr(resolve, "_open_at", racing_open)
    return calls


def test_file_swapped_for_symlink_between_check_and_open(
    data_dir: Path, layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, secret = layout
    path = _model(data_dir, ref("w.bin"))
    target = data_dir / "w.bin"

    def swap() -> None:
        target.unlink()
        target.symlink_to(secret)

    calls = _swap_before_open(monkeypatch, "w.bin", swap)
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert calls == ["w.bin"]  # the swap did happen after the check
    assert info.value.rule == ReferenceRule.SYMLINK
    assert "between the check and the open" in str(info.value)
    assert SECRET.decode() not in str(info.value)


def test_file_replaced_by_another_between_check_and_open(
    data_dir: Path, layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, secret = layout
    path = _model(data_dir, ref("w.bin"))
    target = data_dir / "w.bin"

    def swap() -> None:
        # A regular file with one link, but not the one checked (say, a copy of the secret).
        other = data_dir / "other.bin"
        other.write_bytes(secret.read_bytes())
        os.replace(other, target)

    _swap_before_open(monkeypatch, "w.bin", swap)
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == ReferenceRule.IDENTITY


def test_directory_swapped_for_symlink_between_check_and_open(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir, secret = layout
    (model_dir / "sub").mkdir()
    (model_dir / "sub" / "secret.bin").write_bytes(b"\0" * 32)
    path = _model(model_dir, ref("sub/secret.bin"))

    def swap() -> None:
        os.rename(model_dir / "sub", model_dir / "old-sub")
        (model_dir / "sub").symlink_to(secret.parent, target_is_directory=True)

    _swap_before_open(monkeypatch, "sub", swap)
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == ReferenceRule.SYMLINK


def test_hard_link_made_between_check_and_open(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The link count is taken from fstat of the descriptor read, not from the earlier lstat.
    path = _model(data_dir, ref("w.bin"))
    _swap_before_open(monkeypatch, "w.bin", lambda: os.link(data_dir / "w.bin", data_dir.parent / "elsewhere.bin"))
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == ReferenceRule.HARDLINK


# -- Our policy for a model directory reached through symbolic links ---------------------------


def test_model_directory_reached_through_symlink_is_accepted(tmp_path: Path) -> None:
    # The cache layout: the model directory itself is reached through a link above it. It is
    # resolved once with realpath; everything below it is then checked component by component.
    real = tmp_path / "store" / "models--x" / "rev"
    real.mkdir(parents=True)
    (real / "w.bin").write_bytes(floats(8).tobytes())
    write_model(real / "model.onnx", add_model([ext_tensor("w", ref("w.bin"))]))
    (tmp_path / "current").symlink_to(real, target_is_directory=True)
    model = onnxcore.load(tmp_path / "current" / "model.onnx")
    assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), floats(8))


def test_hf_style_symlinked_data_file_needs_allow_outside(tmp_path: Path) -> None:
    # Hugging Face snapshots hold symbolic links into a blobs directory: the data file itself is
    # a link, which Clause 15.3 refuses by default; allow_outside=True is the explicit opt-in.
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "abc123").write_bytes(floats(8).tobytes())
    snap = tmp_path / "snapshots" / "rev"
    snap.mkdir(parents=True)
    (snap / "model.onnx_data").symlink_to(Path("..", "..", "blobs", "abc123"))
    path = write_model(snap / "model.onnx", add_model([ext_tensor("w", ref("model.onnx_data"))]))
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path)
    assert info.value.rule == ReferenceRule.SYMLINK
    model = onnxcore.load(path, allow_outside=True)
    assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), floats(8))


# -- A model from octets resolves nothing relative to the working directory --------------------


def test_bytes_without_base_dir_never_uses_cwd(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _model(data_dir, ref("w.bin"))
    monkeypatch.chdir(data_dir)  # the file *is* in the working directory
    with pytest.raises(ExternalDataError) as info:
        onnxcore.load(path.read_bytes())
    assert info.value.rule == ReferenceRule.NO_BASE_DIR
    model = onnxcore.load(path.read_bytes(), base_dir=data_dir)
    assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), floats(8))
    # Unresolved, octets are fine to load; verifying them without a directory reports it.
    lazy = onnxcore.load(path.read_bytes(), external_data=False)
    assert [e.rule for e in verify_references(lazy, None)] == [ReferenceRule.NO_BASE_DIR]


# -- The path-based fallback (platforms without openat) applies the same rules -----------------


@pytest.mark.parametrize("attack", ["symlink-file", "symlink-dir", "hardlink", "missing", "good"])
def test_fallback_without_openat(layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, attack: str) -> None:
    model_dir, secret = layout
    monkeypatch.setattr(resolve, "HAVE_DIR_FD", False)
    location = {"symlink-dir": "sub/secret.bin", "missing": "nope.bin"}.get(attack, "w.bin")
    if attack == "symlink-file":
        (model_dir / "w.bin").symlink_to(secret)
    elif attack == "symlink-dir":
        (model_dir / "sub").symlink_to(secret.parent, target_is_directory=True)
    elif attack == "hardlink":
        os.link(secret, model_dir / "w.bin")
    elif attack == "good":
        (model_dir / "w.bin").write_bytes(floats(8).tobytes())
    path = _model(model_dir, ref(location))
    if attack == "good":
        model = onnxcore.load(path)
        assert np.array_equal(np.frombuffer(model.graph.initializer[0].raw_data, "<f4"), floats(8))
        return
    rule = {
        "symlink-file": ReferenceRule.SYMLINK,
        "symlink-dir": ReferenceRule.SYMLINK,
        "hardlink": ReferenceRule.HARDLINK,
    }.get(attack, ReferenceRule.NOT_FOUND)
    _refused(path, rule, location)
