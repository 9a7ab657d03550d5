"""The report page in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

On the light zoo, a model with If and Loop, a model with findings and a 1,000-node transformer: the page loads with
no console error and no network request; the node boxes in the DOM are the graph's nodes (initializers folded);
clicking a node shows its attributes and shapes; a finding's link outlines its node; the search box finds a node
by name; no two node boxes overlap. A screenshot of each page is written to the test's temporary directory.
Skipped, saying why, without Chromium or Playwright (``.ci/run`` installs both).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import corpus
import onnx
import pytest
import report_models
from chromium import ARGS, CHROMIUM

import onnxcore
from onnxcore.reporting import report

LIGHT = sorted((corpus.onnx_data_dir() / "light").glob("light_*.onnx"))

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (extra 'report')")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; or ONNXCORE_CHROMIUM)", allow_module_level=True)

# Boxes whose rectangles overlap, measured in the page (screen pixels at 1:1 zoom).
_OVERLAPS = """() => {
  const r = [...document.querySelectorAll('#canvas g.node > rect, #canvas g.io > rect, #canvas g.cluster > rect')]
    .map(e => e.getBoundingClientRect()).map(b => [b.left, b.top, b.right, b.bottom]);
  r.sort((a, b) => a[0] - b[0]);
  const bad = [];
  for (let i = 0; i < r.length; i++) {
    for (let j = i + 1; j < r.length && r[j][0] < r[i][2] - 0.01; j++) {
      if (r[j][1] < r[i][3] - 0.01 && r[i][1] < r[j][3] - 0.01) bad.push([r[i], r[j]]);
    }
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except sync_api.Error as e:  # installed but unable to start here (no display libraries, ...)
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {str(e).splitlines()[0]}")
        yield b
        b.close()


class Page:
    """A report opened in the browser, recording console errors and every request."""

    def __init__(self, browser: Any, html: str, path: Path) -> None:
        path.write_text(html, encoding="utf-8")
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.as_uri()
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def eval(self, js: str, arg: Any = None) -> Any:
        return self.page.evaluate(js, arg)

    def boxes(self) -> int:
        return int(self.eval("document.querySelectorAll('#canvas g.node').length"))

    def check_clean(self) -> None:
        assert not self.errors, self.errors
        assert [u for u in self.requests if u != self.url] == [], "the page fetched something"

    def check_no_overlaps(self) -> None:
        self.eval("document.getElementById('reset').click()")
        assert self.eval(_OVERLAPS) == []

    def info(self) -> dict[str, Any]:
        return dict(self.eval("onnxcoreReport.info"))

    def click_node(self, key: str) -> str:
        """Reveal and click node ``key``; the panel's text."""
        self.eval("k => onnxcoreReport.reveal(k)", key)
        self.page.locator(f'#canvas g.node[data-id="{key}"]').first.click(force=True)
        return str(self.page.inner_text("#panel"))

    def search(self, text: str) -> list[str]:
        self.page.fill("#search", text)
        return list(self.eval("[...document.querySelectorAll('#results button')].map(b => b.dataset.id)"))

    def shot(self, path: Path) -> None:
        self.eval("onnxcoreReport.fit(false)")
        self.page.locator("#graph").screenshot(path=str(path))
        assert path.stat().st_size > 1000


def _check_node_panel(p: Page, key: str) -> None:
    node = p.info()[key]
    text = p.click_node(key)
    assert node["op"] in text
    for name, value in node["attrs"]:
        assert name in text and value.split(",")[0] in text
    for _formal, name, shape, _origin in node["inputs"]:
        if name:
            assert name in text and shape in text
    for _formal, name, shape in node["outputs"]:
        assert name in text and shape in text
    assert p.eval(f"document.querySelector('#canvas g.node[data-id=\"{key}\"]').classList.contains('selected')")


def _check_search(p: Page, key: str) -> None:
    name = p.info()[key]["name"]
    found = p.search(name)
    assert found and found[0] == key, (name, found[:3])
    p.page.click(f'#results button[data-id="{key}"]')
    assert p.eval(f"document.querySelector('#canvas g.node[data-id=\"{key}\"]').classList.contains('hit')")


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: p.stem)
def test_light_zoo_page(browser: Any, path: Path, tmp_path: Path) -> None:
    p = Page(browser, report(path), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == len(onnx.load(str(path), load_external_data=False).graph.node)
    info = p.info()
    conv = next(k for k, v in info.items() if v.get("op") == "Conv" and v["attrs"])
    _check_node_panel(p, conv)
    named = next(k for k, v in reversed(info.items()) if v.get("kind") == "node" and v["name"])
    _check_search(p, named)
    p.check_no_overlaps()
    p.shot(tmp_path / f"{path.stem}.png")
    p.check_clean()


def test_if_and_loop_expand_in_place(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.if_loop_model())
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 2  # If and Loop; their bodies are folded until expanded
    p.check_no_overlaps()
    p.eval("document.querySelectorAll('#canvas g.node').forEach(g => onnxcoreReport.expand(g))")
    assert p.boxes() == 6  # + then_add, else_mul, body_cond, body_add
    p.check_no_overlaps()
    info = p.info()
    body_add = next(k for k, v in info.items() if v.get("name") == "body_add")
    text = p.click_node(body_add)
    assert "float[N,4]" in text and "outer scope" in text  # x comes from the enclosing graph
    loop = next(k for k, v in info.items() if v.get("name") == "repeat")
    _check_node_panel(p, loop)
    p.shot(tmp_path / "if_loop.png")
    # Collapsing puts everything back where it was.
    p.eval("document.querySelectorAll('#canvas g.node').forEach(g => onnxcoreReport.collapse(g))")
    assert p.boxes() == 2
    p.check_no_overlaps()
    # The search reaches a node inside a collapsed body, expanding it.
    _check_search(p, body_add)
    p.check_clean()


def test_findings_link_to_their_nodes(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.findings_model())
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 4
    links = p.page.locator("a.flink")
    assert links.count() == len(onnxcore.check(model).findings) == 2
    for i in range(links.count()):
        link = links.nth(i)
        key = link.get_attribute("data-node")
        link.click()
        outlined = p.eval("[...document.querySelectorAll('#canvas g.outlined')].map(g => g.dataset.id)")
        assert outlined == [key]
        assert p.info()[key]["name"] in ("mixed_add", "orphan_relu")
    # Wheel zooms about the pointer, a drag pans.
    transform = "document.getElementById('viewport').getAttribute('transform')"
    box = p.page.locator("#canvas").bounding_box()
    p.page.mouse.move(box["x"] + 50, box["y"] + 50)
    before = p.eval(transform)
    p.page.mouse.wheel(0, -300)
    zoomed = p.eval(transform)
    assert zoomed != before and float(zoomed.split("scale(")[1].rstrip(")")) > float(before.split("scale(")[1][:-1])
    p.page.mouse.down()
    p.page.mouse.move(box["x"] + 150, box["y"] + 90, steps=5)
    p.page.mouse.up()
    panned = p.eval(transform)
    assert panned != zoomed and panned.split("scale(")[1] == zoomed.split("scale(")[1]
    orphan = next(k for k, v in p.info().items() if v.get("name") == "orphan_relu")
    assert "E-VALUE-UNDEFINED" in p.click_node(orphan)
    p.check_no_overlaps()
    p.shot(tmp_path / "findings.png")
    p.check_clean()


def test_a_thousand_node_transformer(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.transformer_model(1000))
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 1000
    info = p.info()
    soft = next(k for k, v in info.items() if v.get("op") == "Softmax")
    _check_node_panel(p, soft)
    assert "float[B,4,S,S]" in p.click_node(soft)
    _check_search(p, soft)
    p.check_no_overlaps()
    p.shot(tmp_path / "transformer.png")
    p.check_clean()


def test_a_profiled_page_colours_nodes_by_time(browser: Any, tmp_path: Path) -> None:
    path = LIGHT[0]
    p = Page(browser, report(path, profile=1), tmp_path / "report.html")
    p.check_clean()
    p.page.select_option("#colour", "time")
    fills = p.eval("[...document.querySelectorAll('#canvas g.node > rect')].map(r => r.style.fill)")
    assert len(set(fills)) > 2  # a range of heat colours
    assert p.page.locator("svg.bars rect.bar").count() > 0
    p.shot(tmp_path / "profile.png")
    p.check_clean()


@pytest.mark.slow
def test_a_fifty_thousand_node_chain_opens_collapsed(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.chain_model(50_000))
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 0
    clusters = int(p.eval("document.querySelectorAll('#canvas g.cluster').length"))
    assert 0 < clusters <= 2500
    p.eval("onnxcoreReport.expand(document.querySelector('#canvas g.cluster'))")
    assert 0 < p.boxes() <= 50_000 // clusters + 1
    found = p.search("n49999")
    assert found
    p.page.click(f'#results button[data-id="{found[0]}"]')
    assert p.eval(f"!!document.querySelector('#canvas g.node[data-id=\"{found[0]}\"]')")
    p.check_no_overlaps()
    p.shot(tmp_path / "chain.png")
    p.check_clean()


def test_scan_body_and_function_bodies_expand_in_place(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.scan_function_model())
    assert onnxcore.check(model).errors == []
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 3
    info = p.info()
    call_one = next(k for k, v in info.items() if v.get("name") == "call_one")
    assert "model-local function local:Double" in p.click_node(call_one)
    p.eval("document.querySelectorAll('#canvas g.node').forEach(g => onnxcoreReport.expand(g))")
    assert p.boxes() == 3 + 2 + 1 + 1  # the Scan body, and the function body under each call
    p.check_no_overlaps()
    rows = p.click_node(next(k for k, v in info.items() if v.get("name") == "scan_add"))
    assert "float[4]" in rows
    # The function body's node, searched for from a collapsed page, is shown under the first call.
    p.eval("document.querySelectorAll('#canvas g.node').forEach(g => onnxcoreReport.collapse(g))")
    assert p.boxes() == 3
    body = next(k for k, v in info.items() if v.get("name") == "double_add")
    assert info[body]["path"] == [call_one]
    _check_search(p, body)
    p.shot(tmp_path / "scan_function.png")
    p.check_clean()


def test_hostile_names_stay_text(browser: Any, tmp_path: Path) -> None:
    # Names are untrusted: markup in them must neither run nor fetch anything, and must read back as written.
    evil = "</script><img src=x onerror=console.error(1)>\"'&<b>"
    vi = onnx.helper.make_tensor_value_info
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", [evil], ["out"], name=evil)],
        evil,
        [vi(evil, onnx.TensorProto.FLOAT, [2])],
        [vi("out", onnx.TensorProto.FLOAT, [2])],
    )
    model = onnxcore.from_onnx(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]))
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.eval("document.querySelectorAll('img').length") == 0
    assert p.boxes() == 1
    key = next(k for k, v in p.info().items() if v.get("kind") == "node")
    assert evil in p.click_node(key)
    found = p.search(evil)
    assert found[0] == key  # the node first, then the graph input of the same name
    assert found == [key] + [k for k, v in p.info().items() if v.get("kind") == "input"]
    p.check_clean()


def test_nested_subgraphs_expand_and_collapse(browser: Any, tmp_path: Path) -> None:
    model = onnxcore.from_onnx(report_models.nested_model())
    p = Page(browser, report(model), tmp_path / "report.html")
    p.check_clean()
    assert p.boxes() == 4
    geometry = "[...document.querySelectorAll('#canvas g[data-b]')].map(g => g.dataset.id + '@' + g.dataset.b)"
    start = p.eval(geometry)
    info = p.info()
    key = {v["name"]: k for k, v in info.items() if v.get("kind") == "node"}
    sel = "document.querySelector('#canvas g.node[data-id=\"{}\"]')"
    p.eval(f"onnxcoreReport.expand({sel.format(key['outer_loop'])})")
    assert p.boxes() == 6
    p.check_no_overlaps()
    p.eval(f"onnxcoreReport.expand({sel.format(key['inner_if'])})")
    assert p.boxes() == 9  # the If's branches inside the Loop's body
    assert p.eval("document.querySelectorAll('#canvas path.edge:not([d])').length") == 0  # every edge drawn
    p.check_no_overlaps()
    # The outer frame grew with the inner one: the node after the loop is still below everything in it.
    bottom = p.eval(
        "Math.max(...[...document.querySelectorAll('#canvas g.frame-g g.node > rect')]"
        ".map(r => r.getBoundingClientRect().bottom))"
    )
    after_top = p.eval(f"{sel.format(key['after'])}.querySelector('rect').getBoundingClientRect().top")
    assert after_top > bottom
    p.shot(tmp_path / "nested.png")
    p.eval(f"onnxcoreReport.collapse({sel.format(key['inner_if'])})")
    assert p.boxes() == 6
    p.check_no_overlaps()
    p.eval(f"onnxcoreReport.collapse({sel.format(key['outer_loop'])})")
    assert p.boxes() == 4
    end = p.eval(geometry)
    assert [g.split("@")[0] for g in end] == [g.split("@")[0] for g in start]
    for a, b in zip(end, start):  # back where everything was
        assert [float(x) for x in a.split("@")[1].split(",")] == pytest.approx(
            [float(x) for x in b.split("@")[1].split(",")]
        )
    p.check_clean()
