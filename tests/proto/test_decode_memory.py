"""Decoding costs memory in proportion to the octets (issue 29).

A repeated field of empty entries (two octets each) used to cost hundreds of octets of memory per input
octet. A decode budget charges every message and list it makes and refuses what would cost more than
``DECODE_BYTES_PER_OCTET`` x octets + ``DECODE_BYTES_BASE``.
Peak memory is measured in a child process (VmHWM after resetting it through /proc/self/clear_refs).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnxcore
from onnxcore.proto.decoder import DECODE_BYTES_BASE, DECODE_BYTES_PER_OCTET, MESSAGE_CLASSES, decode_message
from onnxcore.proto.message import Message
from onnxcore.wire.varint import encode_varint
from tests.corpus import onnx_data_dir

ROOT = Path(__file__).resolve().parents[2]
N = 1 << 19  # the default max_repeated_messages


def _ld(tag: int, body: bytes) -> bytes:
    return encode_varint(tag << 3 | 2) + encode_varint(len(body)) + body


def _rep(tag: int, n: int = N) -> bytes:
    return _ld(tag, b"") * n


def _graph(body: bytes) -> bytes:
    return _ld(7, body)  # ModelProto.graph


# Files of N empty entries of one repeated message field, by the field's path. Each cost more than the bound
# before issue 29's change (measured peak per input octet: node 229, initializer 504, attribute 325, a
# function's node 229, functions 222, attribute tensors 504, attribute graphs 325).
HOSTILE = {
    "graph.node": _graph(_rep(1)),
    "graph.initializer": _graph(_rep(5)),
    "graph.node.attribute": _graph(_ld(1, _rep(5))),
    "functions.node": _ld(25, _rep(7)),
    "functions": _rep(25),
    "graph.node.attribute.tensors": _graph(_ld(1, _ld(5, _rep(10)))),
    "graph.node.attribute.graphs": _graph(_ld(1, _ld(5, _rep(11)))),
}
# Fields whose empty entries cost less (76 octets per input octet before): over the bound only for a larger
# file, 2**21 entries in one field (max_repeated_messages lifted, max_messages at its default).
HOSTILE_LARGE = {
    "graph.value_info": _graph(_rep(13, 1 << 21)),
    "graph.input": _graph(_rep(11, 1 << 21)),
}

_CHILD = r"""
import sys
import onnxcore
data = open(sys.argv[1], "rb").read()
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
limits = onnxcore.Limits(max_repeated_messages=None) if sys.argv[2] == "large" else None
try:
    onnxcore.load(data, limits=limits)
    outcome = "loaded"
except onnxcore.DecodeLimitError as e:
    outcome = "refused: " + str(e)
print(status("VmHWM") - base)
print(outcome)
"""


def _peak_of_load(path: Path, large: bool = False) -> tuple[int, str]:
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-c", _CHILD, str(path), "large" if large else "default"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=True)
    peak, outcome = out.stdout.split("\n", 1)
    return int(peak), outcome.strip()


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc/self/clear_refs")
@pytest.mark.parametrize("field", sorted(HOSTILE) + sorted(HOSTILE_LARGE))
def test_peak_memory_of_a_field_of_empty_entries_is_bounded(field: str, tmp_path: Path) -> None:
    large = field in HOSTILE_LARGE
    data = HOSTILE_LARGE[field] if large else HOSTILE[field]
    path = tmp_path / "hostile.onnx"
    path.write_bytes(data)
    peak, outcome = _peak_of_load(path, large)
    bound = DECODE_BYTES_PER_OCTET * len(data) + DECODE_BYTES_BASE
    assert peak <= bound, f"{field}: peak {peak / 2**20:.1f} MiB for {len(data)} octets, bound {bound / 2**20:.1f}"
    if outcome != "loaded":
        # Refused by the budget (a DecodeLimitError naming the field path), never by running out.
        assert "octets of memory" in outcome and field.split(".")[-1] in outcome, outcome


_SPECS = [(name, cls) for name, cls in MESSAGE_CLASSES.items() if any(f.repeated for f in cls._SPEC.fields)]


@pytest.mark.parametrize(("name", "cls"), _SPECS, ids=[n for n, _ in _SPECS])
def test_an_empty_decoded_message_equals_a_built_one(name: str, cls: type[Message]) -> None:
    # Every message kind with a repeated field: decoded from no octets it is the built empty message, and
    # its repeated fields are lists of its own.
    msg = decode_message(cls, b"")
    assert msg == cls() and decode_message(cls, b"") == msg
    assert onnxcore.encode(msg) == b""
    fname = next(f.name for f in cls._SPEC.fields if f.repeated)
    lst = getattr(msg, fname)
    assert lst == [] and lst is not getattr(cls(), fname) and not msg.has(fname)


def test_budget_refusal_names_the_field_path() -> None:
    with pytest.raises(onnxcore.DecodeLimitError, match=r"64 per input octet") as info:
        onnxcore.load(HOSTILE["graph.node.attribute"])
    assert "graph.node[0].attribute" in str(info.value)
    # Limits.unlimited() lifts the budget with the counts.
    model = onnxcore.load(HOSTILE["graph.node.attribute"], limits=onnxcore.Limits.unlimited())
    assert len(model.graph.node[0].attribute) == N


def test_decoded_empty_entries_behave_as_built_ones() -> None:
    data = _graph(_rep(1, 3) + _ld(1, _ld(1, b"x") + _ld(5, b"")))
    model = onnxcore.load(data)
    node = model.graph.node[0]
    # An absent repeated field reads as an empty list, and that list is the field's own.
    assert node.input == [] and not node.has("input")
    node.input.append("a")
    assert model.graph.node[0].input == ["a"] and node.has("input")
    assert model.graph.node[1] == onnxcore.NodeProto()
    assert model.graph.node[3] == onnxcore.NodeProto(input=["x"], attribute=[onnxcore.AttributeProto()])
    # Encoding a decoded message reproduces the octets.
    fresh = onnxcore.load(data)
    assert onnxcore.encode(fresh) == data
    assert copy.deepcopy(fresh) == fresh and onnxcore.encode(copy.deepcopy(fresh)) == data
    # Mutation, then encode: the change is written.
    fresh.graph.node[2].output = ["y"]
    fresh.graph.node[1].metadata_props = [onnxcore.StringStringEntryProto(key="k", value="v")]
    again = onnxcore.load(onnxcore.encode(fresh))
    assert again.graph.node[2].output == ["y"] and again == fresh
    assert again.graph.node[1].metadata_props[0].key == "k"
    with pytest.raises(AttributeError):
        _ = node.no_such_field  # type: ignore[attr-defined]


def _light_models() -> list[Path]:
    return sorted((onnx_data_dir() / "light").glob("*.onnx"))


@pytest.mark.parametrize("path", _light_models()[:3], ids=lambda p: p.stem)
def test_light_zoo_models_round_trip_and_run(path: Path) -> None:
    import onnx  # the reference decoder, for the differential check

    data = path.read_bytes()
    model = onnxcore.load(data)
    assert onnxcore.encode(model) == data
    assert onnx.load_from_string(onnxcore.encode(model)) == onnx.load_from_string(data)
    assert model == onnxcore.load(data)
    report = onnxcore.check(model)
    assert not report.errors, report.errors
    model.graph.doc_string = "changed"
    assert onnx.load_from_string(onnxcore.encode(model)).graph.doc_string == "changed"


def test_a_light_zoo_model_runs_as_onnxruntime_does() -> None:
    ort = pytest.importorskip("onnxruntime")
    from tests.corpus import light_model_input

    # shufflenet: logits small enough for float32 to give every engine the same Softmax (squeezenet's are about
    # 7e9, where it depends on the BLAS's summation order; tests/kernels/test_light_models.py).
    path = onnx_data_dir() / "light" / "light_shufflenet.onnx"
    name, x = light_model_input(path)
    got = onnxcore.Session(onnxcore.load(path)).run(None, {name: x})[0]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = sess.run(None, {name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    assert json.dumps(got.shape) == json.dumps(want.shape)


def test_packed_and_unpacked_elements_concatenate_in_every_list_form() -> None:
    # Clause 12.3.3: both forms of a repeated number field, in any order, add up. TensorProto.dims has its list
    # made with the message, AttributeProto.ints is made at its first element: the generic (packed) path and
    # the inline (unpacked) one must append to the same list in both cases.
    dims = onnxcore.load(_graph(_ld(5, bytes([0x08, 2, 0x0A, 2, 3, 4, 0x08, 5])))).graph.initializer[0].dims
    assert dims == [2, 3, 4, 5]
    attr = bytes([0x40, 2, 0x42, 2, 3, 4, 0x40, 5])  # ints (tag 8): unpacked 2, packed [3, 4], unpacked 5
    ints = onnxcore.load(_graph(_ld(1, _ld(5, attr)))).graph.node[0].attribute[0].ints
    assert ints == [2, 3, 4, 5]
    for data in (bytes([0x0A, 2, 3, 4, 0x08, 5]), bytes([0x08, 5, 0x0A, 2, 3, 4])):
        want = [3, 4, 5] if data[0] == 0x0A else [5, 3, 4]
        assert onnxcore.decode(onnxcore.TensorProto, data).dims == want
