"""Every example of the README and of the documentation pages runs (issue 40).

Each page's Python blocks run in order in one namespace, in a directory holding the models they name
(``conftest.py``); each command line of its shell blocks is an ``onnxcore`` command whose exit code is checked. A
block that must not run says so with ``<!-- docs-test: skip REASON -->`` (see ``examples.py``). The fixture page
``fixtures/broken.md`` shows that a broken example fails the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from examples import ExampleError, blocks, commands, run_page

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _runnable(path: Path) -> bool:
    return any(b.lang in {"python", "py", "python3", "sh", "bash", "console", "shell"} for b in blocks(path))


@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, example_dir: Path) -> None:
    outcome = run_page(page)
    assert outcome.ran or outcome.skipped


def test_readme_examples_are_run() -> None:
    """The README's tour runs (load, check, run, build, convert, report, batch; batch where the dask extra is
    installed): only the commands that install into a new venv or start a server are left out."""
    readme = blocks(ROOT / "README.md")
    python = [b for b in readme if b.lang == "python"]
    assert len(python) >= 7 and all(b.marker is None or b.marker == ("requires", "dask.dataframe") for b in python)
    skipped = [b for b in readme if b.marker and b.marker[0] == "skip"]
    assert all("venv" in b.code or "mkdocs" in b.code for b in skipped), [b.where for b in skipped]


def test_broken_python_example_fails(example_dir: Path) -> None:
    page = FIXTURES / "broken.md"
    with pytest.raises(ExampleError, match=r"broken\.md:\d+: the Python example fails: NameError"):
        run_page(page)


def test_failing_command_fails(example_dir: Path) -> None:
    with pytest.raises(ExampleError, match=r"broken_cli\.md:\d+: `onnxcore check missing\.onnx` exited with 2"):
        run_page(FIXTURES / "broken_cli.md")


def test_other_shell_lines_need_a_marker(example_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\npip install onnxcore\n```\n", encoding="utf-8")
    with pytest.raises(ExampleError, match="is not an onnxcore command"):
        run_page(page)
    page.write_text("<!-- docs-test: skip installs a package -->\n```sh\npip install onnxcore\n```\n", encoding="utf-8")
    assert [reason for _, reason in run_page(page).skipped] == ["installs a package"]


def test_skip_needs_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: skip -->\n```python\n1/0\n```\n", encoding="utf-8")
    with pytest.raises(ExampleError, match="must say why"):
        run_page(page)


def test_blocks_and_commands_are_read_as_written(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n1. a list item:\n\n   ```python\n   x = 1\n   ```\n\n<!-- docs-test: exit 1 -->\n"
        "```sh\n$ onnxcore check a.onnx \\\n    --json   # a comment\nonnxcore hash 'b c.onnx'\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.lang, b.line, b.code) for b in found[:1]] == [("python", 5, "x = 1\n")]
    assert found[1].marker == ("exit", "1")
    assert commands(found[1]) == [["onnxcore", "check", "a.onnx", "--json"], ["onnxcore", "hash", "b c.onnx"]]
