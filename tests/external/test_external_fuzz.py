"""Fuzzing the keys of a reference (Table 11): nothing but our errors, and nothing from outside."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from ext_helpers import SECRET, add_model, ext_tensor, floats, write_model
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import onnxcore
from onnxcore import ExternalDataError, OnnxCoreError
from onnxcore.external import load_external_data, verify_references

_PIECES = ["..", ".", "", "w.bin", "sub", "link", "outside", "secret.bin", "model.onnx", "/", "\\", "\x00", "C:"]
_KNOWN = [
    "w.bin",
    "sub/w.bin",
    "./sub//w.bin",
    "link/secret.bin",
    "secret.bin",
    "../outside/secret.bin",
    "sub/../w.bin",
    "model.onnx",
    "sub",
    "sub\\w.bin",
]
_locations = st.one_of(
    st.sampled_from(_KNOWN),
    st.sampled_from(_KNOWN),
    st.text(max_size=40),
    st.lists(st.sampled_from(_PIECES), max_size=6).map("/".join),
    st.lists(st.sampled_from(_PIECES), max_size=6).map("".join),
)
_numbers = st.one_of(
    st.integers(min_value=0, max_value=200).map(str),
    st.integers(min_value=0, max_value=200).map(str),
    st.integers(min_value=-(1 << 70), max_value=1 << 70).map(str),
    st.text(alphabet="0123456789-+ x_e.٣", max_size=30),
    st.text(max_size=10),
)
_checksums = st.one_of(st.text(alphabet="0123456789abcdefABCDEF", min_size=38, max_size=42), st.text(max_size=50))
_keys = st.sampled_from(["location", "offset", "length", "checksum", "basepath", "", "LOCATION"])


@st.composite
def _entries(draw: st.DrawFn) -> list[tuple[str, str]]:
    entries: list[tuple[str, str]] = []
    if draw(st.integers(0, 9)):
        entries.append(("location", draw(_locations)))
    if draw(st.booleans()):
        entries.append(("offset", draw(_numbers)))
    if draw(st.booleans()):
        entries.append(("length", draw(_numbers)))
    if draw(st.integers(0, 4)) == 0:
        entries.append(("checksum", draw(_checksums)))
    if draw(st.integers(0, 5)) == 0:
        entries.append((draw(_keys), draw(st.text(max_size=8))))
    return draw(st.permutations(entries))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "outside").mkdir()
    (root / "outside" / "secret.bin").write_bytes(SECRET * 4)
    model = root / "model"
    (model / "sub").mkdir(parents=True)
    (model / "w.bin").write_bytes(floats(50).tobytes())
    (model / "sub" / "w.bin").write_bytes(floats(10).tobytes())
    (model / "link").symlink_to(root / "outside", target_is_directory=True)
    (model / "secret.bin").symlink_to(root / "outside" / "secret.bin")
    write_model(model / "model.onnx", add_model([ext_tensor("w", [("location", "w.bin")], dims=(50,))]))
    return model


@functools.cache
def _inside_contents(model_dir: Path) -> list[bytes]:
    out = []
    for dirpath, _dirs, files in os.walk(model_dir):
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink() and p.is_file():
                out.append(p.read_bytes())
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=_entries())
def test_random_references_raise_only_our_errors(tree: Path, entries: list[tuple[str, str]]) -> None:
    model = add_model([ext_tensor("w", entries)])
    try:
        load_external_data(model, tree)
    except ExternalDataError as e:
        event(f"refused: {e.rule}")
        assert e.tensor == "w" and e.rule is not None
        assert SECRET.decode() not in str(e)
    else:
        event("resolved")
        raw = bytes(model.graph.initializer[0].raw_data)
        assert SECRET not in raw
        assert any(raw in blob for blob in _inside_contents(tree))  # only files below the directory
    errors = verify_references(add_model([ext_tensor("w", entries)]), tree)
    assert all(isinstance(e, ExternalDataError) for e in errors)
    assert len(errors) <= 1
    # Through the whole pipeline: encode (when the text is encodable), write, load by path.
    try:
        blob = onnxcore.encode(model)
    except OnnxCoreError:
        return
    path = tree.parent / "out" / "fuzz.onnx"  # beside the tree the references point into
    path.parent.mkdir(exist_ok=True)
    for name in ("w.bin", "model.onnx"):
        if not (path.parent / name).exists():
            (path.parent / name).write_bytes((tree / name).read_bytes())
    path.write_bytes(blob)
    try:
        onnxcore.load(path)
    except ExternalDataError:
        pass
