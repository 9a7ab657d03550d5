"""The documentation site, built and looked at (issue 40).

Built once per session with ``mkdocs build --strict`` (warnings as errors) and served on the loopback: every
public name of ``onnxcore`` and of each public subpackage's ``__all__`` is in the API reference's index and has
its entry; the CLI reference has every command; a crawl of the site from its landing page finds no broken
internal link; headless Chromium (as the report's browser tests drive it) opens the landing page, the API entry
of ``Session`` and the search, which finds ``InferenceSession``. Skipped, saying why, without the ``docs`` extra
(MkDocs) or without Playwright and Chromium.
"""

from __future__ import annotations

import ast
import functools
import html.parser
import http.server
import importlib
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import ARGS, CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

pytest.importorskip("mkdocs", reason="MkDocs is not installed (extra 'docs')")
pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings-python is not installed (extra 'docs')")


class _Links(html.parser.HTMLParser):
    """The links (``href``, ``src``) and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append(value)


def _parse(text: str) -> _Links:
    parser = _Links()
    parser.feed(text)
    return parser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with warnings as errors."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return out


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    """The built site over HTTP on the loopback (the search loads its index with fetch, which file:// refuses)."""
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def public_all() -> dict[str, list[str]]:
    """``__all__`` of onnxcore and of every public subpackage (no part of its name starting with ``_``), read by
    importing each; a package whose optional dependencies are missing is read from its source instead."""
    out: dict[str, list[str]] = {}
    for init in sorted((SRC / "onnxcore").rglob("__init__.py")):
        parts = init.parent.relative_to(SRC).parts
        if any(p.startswith("_") for p in parts):
            continue
        name = ".".join(parts)
        try:
            module = importlib.import_module(name)
        except ImportError as e:
            if (e.name or "").startswith("onnxcore"):
                raise
            tree = ast.parse(init.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                    out[name] = list(ast.literal_eval(node.value))
            continue
        if hasattr(module, "__all__"):
            out[name] = list(module.__all__)
    return out


def test_api_reference_has_every_public_name(site: Path) -> None:
    packages = public_all()
    expected = {f"{package}.{name}" for package, names in packages.items() for name in names}
    assert "onnxcore.Session" in expected and "onnxcore.runtime.InferenceSession" in expected
    index = _parse((site / "reference" / "index.html").read_text(encoding="utf-8"))
    listed: dict[str, str] = {}
    for link in index.links:
        page, _, fragment = link.partition("#")
        # An entry (the headings' own anchors have no dot; a package's anchor, linked from a summary that names
        # the package, is no entry).
        if fragment.startswith("onnxcore.") and (fragment in expected or fragment not in packages):
            listed[fragment] = page
    assert set(listed) == expected, (
        f"missing from the index: {sorted(expected - set(listed))[:20]}; "
        f"not public: {sorted(set(listed) - expected)[:20]}"
    )
    pages: dict[Path, set[str]] = {}
    for fragment, page in listed.items():
        path = (site / "reference" / urllib.parse.unquote(page) / "index.html").resolve()
        if path not in pages:
            pages[path] = _parse(path.read_text(encoding="utf-8")).ids
        assert fragment in pages[path], f"{fragment}: no entry on {page}"


def test_cli_reference_has_every_command(site: Path) -> None:
    from onnxcore.cli import _parser  # the parser the page was generated from

    commands = next(a.choices for a in _parser()._actions if a.choices and a.dest == "command")
    text = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for name, parser in commands.items():
        assert f"onnxcore {name}</code>" in text, name
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and action.help != "==SUPPRESS==":
                    assert option in text, f"onnxcore {name} {option}"


def test_crawl_finds_no_broken_link(server: str) -> None:
    seen: set[str] = set()
    ids: dict[str, set[str]] = {}
    anchors: list[tuple[str, str, str]] = []  # (page linking, page linked, fragment)
    broken: list[str] = []
    queue = [server]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = response.read()
                kind = response.headers.get_content_type()
        except urllib.error.HTTPError as e:
            broken.append(f"{url}: {e.code}")
            continue
        if kind != "text/html":
            continue
        page = _parse(body.decode("utf-8"))
        ids[url] = page.ids
        for link in page.links:
            target = urllib.parse.urljoin(url, link)
            if not target.startswith(server):
                continue  # outside links are not the site's to keep
            base, _, fragment = target.partition("#")
            if fragment:
                anchors.append((url, base, urllib.parse.unquote(fragment)))
            if base not in seen:
                queue.append(base)
    assert not broken, broken
    assert len(ids) >= 30, sorted(ids)  # the guide, the topics, the reference, ...
    missing = [f"{src} -> {dst}#{frag}" for src, dst, frag in anchors if dst in ids and frag not in ids[dst]]
    assert not missing, missing[:20]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright for Python is not installed (extra 'report')"
    )
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or ONNXCORE_CHROMIUM)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except sync_api.Error as e:  # installed but unable to start here (no display libraries, ...)
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {str(e).splitlines()[0]}")
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A browser page recording console errors, failed requests and any request off this machine (the site
    fetches nothing from elsewhere: no web fonts, no analytics)."""
    p = browser.new_page(viewport={"width": 1300, "height": 900})
    p.errors = []
    p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    p.on("response", lambda r: p.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    p.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1:", "data:")) else p.errors.append(r.url))
    yield p
    p.close()


def test_landing_page_renders(page: Any, server: str, tmp_path: Path) -> None:
    page.goto(server)
    page.wait_for_load_state("load")
    assert "onnxcore" in page.title()
    assert page.locator("article h1").first.inner_text().strip().startswith("onnxcore")
    nav = page.locator("nav.md-nav--primary").inner_text()
    for section in ("User guide", "API reference", "Performance"):
        assert section in nav
    assert page.locator("article pre code").count() >= 2  # the install command and the first run
    page.screenshot(path=str(tmp_path / "landing.png"))
    assert not page.errors, page.errors


def test_session_api_page_renders(page: Any, server: str, tmp_path: Path) -> None:
    page.goto(server + "reference/onnxcore/#onnxcore.Session")
    page.wait_for_load_state("load")
    heading = page.locator('[id="onnxcore.Session"]')
    assert heading.is_visible()
    assert "Session" in heading.inner_text()
    entry = page.locator('[id="onnxcore.Session"] + div').inner_text()
    assert "model_or_path" in entry and "threads" in entry  # the signature and the documented arguments
    assert page.locator('[id="onnxcore.Session.run"]').count() == 1  # its methods, each with its entry
    page.screenshot(path=str(tmp_path / "session.png"))
    assert not page.errors, page.errors


def test_search_finds_inference_session(page: Any, server: str) -> None:
    page.goto(server)
    page.wait_for_load_state("load")
    search = page.locator("input.md-search__input")
    search.click()  # the header's search box (at this width it is shown, not behind an icon)
    # The index loads in a web worker; a query typed before it is ready may be dropped, so wait for it.
    page.wait_for_function(
        "() => !/Initializing/i.test(document.querySelector('.md-search-result__meta')?.textContent ?? 'x')",
        timeout=90_000,
    )
    search.press_sequentially("InferenceSession", delay=20)  # typed: the search listens to the keys
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=60_000)
    hits = [(results.nth(i).get_attribute("href") or "", results.nth(i).inner_text()) for i in range(results.count())]
    assert any("reference/" in href and "InferenceSession" in text for href, text in hits), hits[:10]
    assert not page.errors, page.errors
