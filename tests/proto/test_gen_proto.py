"""The committed proto/annex_b.py and proto/messages.py are what tools/gen_proto.py generates from the spec."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from onnxcore.proto import annex_b, messages

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gen_proto.py"


def _gen_proto() -> ModuleType:
    if not TOOL.exists():
        pytest.skip("tools/gen_proto.py is not next to the tests (installed package)")
    spec = importlib.util.spec_from_file_location("gen_proto", TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_proto", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    mod = _gen_proto()
    if not mod.SPEC.exists():
        pytest.skip(f"the spec text is not on this machine ({mod.SPEC})")
    return mod


def test_committed_files_are_what_the_tool_generates(gen):
    built = gen.build(gen.SPEC.read_text(encoding="utf-8"))
    assert set(built) == {Path(annex_b.__file__).resolve(), Path(messages.__file__).resolve()}
    for path, src in built.items():
        assert path.read_text(encoding="utf-8") == src, f"{path.name} is stale: run python tools/gen_proto.py"


def test_check_mode_passes_on_the_committed_files(gen, capsys):
    assert gen.main(["--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_check_mode_fails_on_a_stale_file(gen, tmp_path, monkeypatch, capsys):
    stale = tmp_path / "annex_b.py"
    stale.write_text(Path(annex_b.__file__).read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(gen, "OUT", stale)
    assert gen.main(["--check"]) == 1
    assert "annex_b.py is stale" in capsys.readouterr().err
    assert stale.read_text(encoding="utf-8").endswith("# edited by hand\n")  # --check writes nothing


def test_check_mode_writes_nothing_and_fails_without_the_output(gen, tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "MESSAGES_OUT", tmp_path / "messages.py")
    assert gen.main(["--check"]) == 1
    assert not (tmp_path / "messages.py").exists()
