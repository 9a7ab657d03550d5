"""Every command of ``onnxcore`` exits non-zero when the work asked of it did not happen, with one line on standard
error and no traceback (issue 41 item 4): each is run as a user runs it, in a child process, on a failing input."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnxcore import encode
from onnxcore.build import helper
from onnxcore.cli import _parser
from onnxcore.cli.commands import _DEMO_INPUT, bundled_model_path

SRC = Path(__file__).resolve().parents[2] / "src"
MODEL = str(bundled_model_path())

# Commands with no input that could make them fail: demo runs the model bundled with the package.
NO_FAILING_INPUT = {"demo": "runs the bundled model on its bundled input: nothing of the user's to fail on"}


def _cases(tmp: Path) -> dict[str, list[list[str]]]:
    """Per command, argument lists on which it must fail."""
    corrupt = tmp / "corrupt.onnx"
    corrupt.write_bytes(Path(MODEL).read_bytes()[:-5])
    wrong_type = tmp / "x_int.npy"
    np.save(wrong_type, _DEMO_INPUT.astype(np.int32))  # the bundled model's input is float
    empty = tmp / "empty"
    empty.mkdir()
    odd = tmp / "odd.npy"
    np.save(odd, np.zeros((3, 7), np.float32))
    flowers = tmp / "flowers.npy"
    np.save(flowers, np.tile(_DEMO_INPUT, (2, 1)))
    # A model every task of which fails when it runs: a division by an input of zeros (integers).
    divide = tmp / "divide.onnx"
    divide.write_bytes(_divide_model())
    zeros = tmp / "zeros.npy"
    np.save(zeros, np.zeros((6, 3), np.int64))
    return {
        "check": [[str(tmp / "missing.onnx")], [MODEL, str(tmp / "missing.onnx")]],
        "inspect": [[str(corrupt)]],
        "run": [[MODEL, "--input", f"x={wrong_type}"], [str(corrupt), "--input", f"x={wrong_type}"]],
        "convert": [[MODEL, str(tmp / "out.onnx"), "--opset", "1"], [str(corrupt), str(tmp / "out2.onnx")]],
        "optimize": [[str(corrupt), str(tmp / "opt.onnx")], [MODEL, str(tmp / "opt2.onnx"), "--disable", "nope"]],
        "conformance": [[str(empty)]],
        "statement": [["--package", str(tmp / "no-such-package")]],
        "hash": [[str(corrupt)]],
        "warmup": [[str(corrupt)], [MODEL, str(divide)]],
        "print": [[str(corrupt)]],
        "report": [
            [MODEL, "-o", str(tmp / "r.html"), "--input", f"x={wrong_type}", "--profile"],
            [MODEL, "-o", str(tmp / "r2.html"), "--input", f"x={wrong_type}"],
            [str(corrupt), "-o", str(tmp / "r3.html")],
        ],
        "batch": [
            [MODEL, "--input", str(odd), "--output", str(tmp / "o.npy"), "--scheduler", "synchronous"],
            [MODEL, "--input", str(tmp / "missing.npy"), "--output", str(tmp / "o2.npy"), "--scheduler", "threads"],
            [MODEL, "--input", str(flowers), "--output", str(tmp / "o3.npy"), "--scheduler", "threads"],  # 2 outputs
            # Tasks failing on a local cluster of worker processes: the worker's own log stays silent.
            [str(divide), "--input", str(zeros), "--output", str(tmp / "o4.npy"), "--workers", "1"],
        ],
    }


def _divide_model() -> bytes:
    """y = 7 // x for int64 x [N, 3], as octets."""
    seven = helper.make_tensor("seven", 7, [1], [7])
    g = helper.make_graph(
        [helper.make_node("Div", ["seven", "x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", 7, ["N", 3])],
        [helper.make_tensor_value_info("y", 7, ["N", 3])],
        [seven],
    )
    return encode(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))


def _commands() -> list[str]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "onnxcore", *argv],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_every_command_has_a_failing_case(tmp_path: Path) -> None:
    assert set(_cases(tmp_path)) | set(NO_FAILING_INPUT) == set(_commands())


@pytest.mark.parametrize("command", sorted(set(_commands()) - set(NO_FAILING_INPUT)))
def test_a_failing_input_exits_non_zero_with_one_line(tmp_path: Path, command: str) -> None:
    if command == "batch":
        pytest.importorskip("dask", reason="onnxcore batch needs the dask extra")
        pytest.importorskip("pandas", reason="onnxcore batch needs the dask extra")
        pytest.importorskip("pyarrow", reason="onnxcore batch needs the dask extra")
    for args in _cases(tmp_path)[command]:
        proc = _run([command, *args], tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0, (args, proc.stdout, proc.stderr)
        assert len(lines) == 1, (args, proc.stderr)
        assert lines[0].startswith(f"onnxcore {command}: "), (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_check_of_a_corrupt_model_is_a_verdict_on_stdout(tmp_path: Path) -> None:
    # check did what it was asked: the model does not conform (E-DECODE), reported as every finding is, exit 1.
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(Path(MODEL).read_bytes()[:-5])
    proc = _run(["check", str(corrupt)], tmp_path)
    assert proc.returncode == 1 and "E-DECODE" in proc.stdout and proc.stderr == ""


def test_report_without_its_profile_keeps_the_page_and_says_why(tmp_path: Path) -> None:
    # The page is still written (its findings and graph are there), but the profile asked for was not made: exit 1.
    bad = tmp_path / "x_int.npy"
    np.save(bad, _DEMO_INPUT.astype(np.int32))
    out = tmp_path / "r.html"
    proc = _run(["report", MODEL, "-o", str(out), "--input", f"x={bad}", "--profile", "2"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert out.exists() and "Not profiled" in out.read_text(encoding="utf-8")
    (line,) = proc.stderr.strip().splitlines()
    assert "not profiled" in line and "InputError" in line and str(out) in line
    good = tmp_path / "x.npy"
    np.save(good, _DEMO_INPUT)
    ok = _run(["report", MODEL, "-o", str(tmp_path / "ok.html"), "--input", f"x={good}", "--profile", "2"], tmp_path)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr


def test_a_command_parser_is_the_full_parser_for_that_command() -> None:
    # `onnxcore COMMAND ...` builds only COMMAND's subparser (issue 42, item 3: the fourteen were 4 ms of every call):
    # its help and its parse are the full parser's; an unknown word gets the full parser (and its list of commands).
    from onnxcore.cli import _command_parser

    def sub_of(p: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
        return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))

    full = sub_of(_parser()).choices
    for name in _commands():
        only = sub_of(_command_parser([name])).choices
        assert list(only) == [name]
        assert only[name].format_help() == full[name].format_help(), name
    assert sorted(sub_of(_command_parser(["chek"])).choices) == _commands()
    assert sorted(sub_of(_command_parser(["--version"])).choices) == _commands()
    argv = ["check", "a.onnx", "b.onnx", "--fast", "--json"]
    assert vars(_command_parser(argv).parse_args(argv)) == vars(_parser().parse_args(argv))
