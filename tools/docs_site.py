"""MkDocs hook: the pages of the documentation site that are generated from the code at build time.

- ``reference/``: one page per public package (``onnxcore`` and each subpackage whose dotted name has no part
  starting with ``_`` and that defines ``__all__``), each name of its ``__all__`` rendered by mkdocstrings from
  the docstrings, and an index listing every name. A package added to the source appears on the next build.
- ``reference/cli.md``: every ``onnxcore`` command, its arguments and their help, read from the argument parser
  the command itself uses (so the page cannot drift from ``onnxcore COMMAND --help``).
- ``changelog.md``: the repository's ``CHANGELOG.md``.

The docstrings name other objects with Sphinx's roles (``:class:`KernelSet```); each becomes a link to the
object's entry where the reference has one, and plain code otherwise.

Listed in ``mkdocs.yml`` under ``hooks``; nothing here is imported by the package.
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def _static_all(init: Path) -> list[str] | None:
    """The literal ``__all__`` of a module's source, or None when it has none (or it is not a literal)."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(v) for v in value]
    return None


def public_packages(src: Path = SRC) -> dict[str, list[str]]:
    """Every public package of onnxcore with its ``__all__``, in dotted-name order.

    Public: no part of the dotted name starts with ``_``, and ``__init__.py`` assigns ``__all__``. Read from the
    source, without importing (the optional extras need not be installed to build the site); an ``__all__`` that
    is not a literal list is read by importing the package.
    """
    out: dict[str, list[str]] = {}
    for init in sorted((src / "onnxcore").rglob("__init__.py")):
        parts = init.parent.relative_to(src).parts
        if any(p.startswith("_") for p in parts):
            continue
        name = ".".join(parts)
        text = init.read_text(encoding="utf-8")
        if "__all__" not in text:
            continue
        names = _static_all(init)
        if names is None:
            names = list(importlib.import_module(name).__all__)
        out[name] = names
    return dict(sorted(out.items()))


def _page_path(package: str) -> str:
    return f"reference/{package}.md"


def _api_page(package: str, names: list[str]) -> str:
    lines = [
        f"# `{package}`",
        "",
        f"::: {package}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "",
    ]
    for name in names:
        lines += [
            f"::: {package}.{name}",
            "    options:",
            "      show_root_full_path: true",
            "      heading_level: 2",
            "",
        ]
    return "\n".join(lines)


def _summary(package: str, src: Path = SRC) -> str:
    """The first line of a package's docstring, read from its source."""
    init = src.joinpath(*package.split("."), "__init__.py")
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _index_page(packages: dict[str, list[str]]) -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings at every build: one page per public package, every name of its `__all__`.",
        "A name exported by several packages is documented under each of them.",
        "",
    ]
    for package, names in packages.items():
        page = f"{package}.md"
        links = ", ".join(f"[`{n}`]({page}#{package}.{n})" for n in names)
        lines += [f"## [`{package}`]({page})", "", _summary(package), "", links, ""]
    return "\n".join(lines)


def _sub_parsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """Each command's parser and its one-line help (as ``onnxcore --help`` lists it)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            metavar = parser._get_formatter()._format_args(action, action.dest.upper())
            spelling = ", ".join(f"`{o}{(' ' + metavar) if metavar else ''}`" for o in action.option_strings)
        else:
            spelling = f"`{parser._get_formatter()._format_args(action, action.dest.upper())}`"
        help_text = action.help or ""
        if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
            help_text += f" (one of: {', '.join(f'`{c}`' for c in action.choices)})"
        if action.default not in (None, False, argparse.SUPPRESS, [], "") and action.option_strings:
            help_text += f" (default: `{action.default}`)"
        rows.append(f"| {_cell(spelling)} | {_cell(help_text)} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def cli_page() -> str:
    """The command-line reference, from ``onnxcore``'s own argument parser."""
    from onnxcore import cli  # the package being documented; imported only when the page is built

    # argparse wraps usage lines at the terminal's width: a fixed one, so that every build writes the same page.
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = cli._parser()
        lines = [
            "# Command-line reference",
            "",
            "Generated from the `onnxcore` command's argument parser at every build; `onnxcore COMMAND --help`",
            "prints the same. For what the commands are for, with examples, see [the command line](../guide/cli.md).",
            "",
            parser.description or "",
            "",
            "```text",
            parser.format_usage().strip(),
            "```",
            "",
            parser.epilog or "",
            "",
        ]
        for name, (sub, summary) in _sub_parsers(parser).items():
            lines += [f"## `onnxcore {name}`", "", summary, ""]
            if sub.description:
                lines += [sub.description, ""]
            lines += ["```text", sub.format_usage().strip(), "```", ""]
            lines += _arguments_table(sub)
            if sub.epilog:
                lines += [sub.epilog, ""]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(lines)


def _add(files: Files, config: MkDocsConfig, path: str, content: str) -> None:
    files.append(File.generated(config, path, content=content))


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Add the generated API pages to the navigation, under "API reference"."""
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    packages = public_packages()
    for entry in config.nav or []:
        if isinstance(entry, dict) and "API reference" in entry:
            entry["API reference"] = [
                {"Index": "reference/index.md"},
                *({p: _page_path(p)} for p in packages),
                {"Command line": "reference/cli.md"},
            ]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Generate the reference, CLI and changelog pages."""
    packages = public_packages()
    _add(files, config, "reference/index.md", _index_page(packages))
    for package, names in packages.items():
        _add(files, config, _page_path(package), _api_page(package, names))
    _add(files, config, "reference/cli.md", cli_page())
    _add(files, config, "changelog.md", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    return files


_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):<code>([^<]*)</code>")


def _role_link(match: re.Match[str]) -> str:
    target = html.unescape(match[1]).lstrip("~.")
    # An optional cross-reference: mkdocs-autorefs links it when some page documents the name, and leaves the
    # code as it is (with no warning) when none does, e.g. a private module's function.
    return f'<autoref identifier="{html.escape(target)}" optional>{match[0][match[0].index("<code>") :]}</autoref>'


def on_page_content(content: str, page: Page, **kwargs: Any) -> str:
    """The docstrings' Sphinx roles as cross-references."""
    return _ROLE.sub(_role_link, content)
