"""The README stays a landing page (issue 40): short, the fresh-machine commands as they were, links that resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

FRESH_MACHINE = [
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/onnxcore demo",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest",
]


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= 250


def test_fresh_machine_commands_are_unchanged() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.DOTALL)
    assert [b.strip() for b in blocks[:2]] == FRESH_MACHINE


def test_ci_runs_what_the_readme_says() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv .venv" in ci and ".venv/bin/python -m pytest" in ci and ".venv/bin/onnxcore demo" in ci
    assert "mkdocs build --strict" in ci
    extras = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'", ci)
    assert extras is not None and {"test", "docs"} <= set(extras[1].split(","))


def test_relative_links_resolve() -> None:
    anchors = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", README, re.M)
    }
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if target.startswith(("http://", "https://")):
            continue
        path, _, fragment = target.partition("#")
        if path:
            assert (ROOT / path).exists(), target
        elif fragment:
            assert fragment in anchors, target
