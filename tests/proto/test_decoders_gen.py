"""The precompiled decoders (``proto/decoders_gen.py``, issue 42 item 3): ``proto/decoder.py`` takes a class's decoder
code from that module when it holds the source it would compile, else compiles it; both decode alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import onnxcore
from onnxcore.proto import decoder, decoders_gen
from onnxcore.proto.decoder import MESSAGE_CLASSES

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((Path(onnxcore.__file__).resolve().parent / "data").glob("*.onnx"))[0]


def test_the_generated_module_is_what_the_tool_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_decoders.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_every_class_gets_its_precompiled_code() -> None:
    for name, cls in MESSAGE_CLASSES.items():
        made = decoder._make_decoder(cls)
        assert made.__code__.co_name == "decode_" + name.replace(".", "_"), name


def test_a_source_that_changed_is_compiled_and_decodes_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    data = BUNDLED.read_bytes()
    expected = onnxcore.encode(onnxcore.load(data))
    stale = {k: v + "# another version\n" for k, v in decoders_gen.SOURCES.items()}
    monkeypatch.setattr(decoders_gen, "SOURCES", stale)
    for cls in MESSAGE_CLASSES.values():
        made = decoder._make_decoder(cls)
        assert made.__code__.co_name == "decode", cls  # compiled here, not taken from the module
        monkeypatch.setitem(decoder._DECODERS, cls, made)
    assert onnxcore.encode(onnxcore.load(data)) == expected
