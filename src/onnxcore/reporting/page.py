"""The report page: one HTML document with everything inlined (style, script, data, drawings).

Nothing is fetched when the page opens: no font, no script, no image from anywhere. The drawings of subgraphs,
function bodies and clusters are kept as text (``<script type="text/x-svg">``) and put into the drawing only
when expanded, so a large model's page opens with the top-level drawing alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from importlib import resources
from typing import Any

from onnxcore.reporting.collect import Gathered
from onnxcore.reporting.families import FAMILY_COLOURS
from onnxcore.reporting.svg import arrow_defs, drawing_svg, svg_style

__all__ = ["render_page"]

# Nothing may be fetched: inline style and script only, images only as data: URLs.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _asset(name: str) -> str:
    return (resources.files("onnxcore.reporting") / "assets" / name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: every ``<`` written ``\\u003c`` (the same string to a JSON reader),
    so that neither ``</script`` nor ``<!--`` from a hostile name (which with a ``<script`` after it keeps the
    element open past its end tag, HTML's double-escaped script state) reaches the HTML parser."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _table(rows: list[list[str]], head: list[str]) -> str:
    h = "".join(f"<th>{escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _summary_html(s: dict[str, Any]) -> str:
    facts = [
        ["IR version", str(s["ir_version"])],
        ["operator sets", ", ".join(f"{d} {v}" for d, v in s["opsets"]) or "none"],
        ["producer", s["producer"] or "(none)"],
        ["graph", s["graph_name"] or "(unnamed)"],
        ["nodes", f"{s['nodes']} in the top-level graph, {s['all_nodes']} in all"],
        ["subgraphs / functions", f"{s['subgraphs']} / {s['functions']}"],
        ["parameters", f"{s['parameters']:,} elements in {s['initializers']} initializers"],
        ["weight bytes", f"{s['weight_bytes']:,}"],
        ["canonical hash (SHA-256)", s["hash"]],
    ]
    out = ['<table class="facts">']
    out += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts]
    out.append("</table>")
    out.append("<h3>Inputs</h3>" + _table([[n, t] for n, t in s["inputs"]], ["name", "type and shape"]))
    out.append("<h3>Outputs</h3>" + _table([[n, t] for n, t in s["outputs"]], ["name", "type and shape"]))
    if s["by_type"]:
        rows = [[t, f"{c:,}", f"{e:,}", f"{b:,}"] for t, c, e, b in s["by_type"]]
        out.append("<h3>Weights by element type</h3>" + _table(rows, ["element type", "tensors", "elements", "bytes"]))
    if s["external"]:
        rows = [[f, f"{n}", f"{r:,}", "missing" if z is None else f"{z:,}"] for f, n, r, z in s["external"]]
        head = ["external data file", "tensors", "bytes referenced", "file size"]
        out.append("<h3>External data</h3>" + _table(rows, head))
    return "".join(out)


def _findings_html(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "<p>No findings: the validator found nothing to report.</p>"
    out = ['<ol class="findings">']
    for i, f in enumerate(findings):
        link = (
            f' <a href="#" class="flink" data-node="{escape(f["node"])}" data-f="{i}">show the node</a>'
            if f["node"]
            else ""
        )
        out.append(
            f'<li class="{escape(f["severity"])}"><b>{escape(f["severity"])} {escape(f["code"])}</b> '
            f'(clause {escape(f["clause"])}) <span class="loc">{escape(f["location"])}</span>: '
            f"{escape(f['message'])}{link}</li>"
        )
    out.append("</ol>")
    return "".join(out)


def _profile_html(p: dict[str, Any] | None) -> str:
    if p is None:
        return "<p>Not profiled (give <code>--profile</code> or <code>--input</code>).</p>"
    if p.get("error"):
        return f"<p>Not profiled: {escape(p['error'])}</p>"
    per_op: list[tuple[str, float]] = p["per_op"]
    total = p["total"] or 1e-30
    top = max((t for _o, t in per_op), default=0.0) or 1e-30
    bar_h, label_w, bar_w = 18, 230, 420
    rows = []
    for i, (op, t) in enumerate(per_op[:40]):
        y = i * (bar_h + 4)
        w = max(1.0, bar_w * t / top)
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(op)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 13}">{t * 1e3:.3f} ms ({t / total:.1%})</text>'
        )
    height = len(rows) * (bar_h + 4) + 4
    chart = (
        f'<svg class="bars" width="{label_w + bar_w + 160}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )
    head = (
        f"<p>{total * 1e3:.3f} ms per run (the sum of {p['steps']} plan steps, mean of {p['runs']} runs; inputs: "
        f"{escape(p['inputs'])}). A step that fused several nodes is shown as <i>Op+Op (fused)</i>; its time "
        "colours each node it fused. Choose <i>colour: time</i> above the drawing for the heat colours.</p>"
    )
    return head + chart


def _optimization_html(o: Mapping[str, Any]) -> str:
    """What ``onnxcore.optimize`` did (``OptimizeReport.to_json()``): sizes, passes, the proof, operators."""
    fired = ", ".join(f"{k} \u00d7{v}" for k, v in o.get("fired", {}).items()) or "none"
    shapes = "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) or "no inputs" for s in o.get("verify_shapes", []))
    n_sets = len(o.get("verify_shapes", []))
    largest = float(o.get("max_error", 0.0))
    proof = (
        f"verified on {n_sets} input sets ({shapes}); largest error {largest:.3g}"
        if o.get("verified")
        else ("not verified")
    )
    facts = [
        ["nodes", f"{o.get('nodes_before', 0):,} \u2192 {o.get('nodes_after', 0):,}"],
        ["bytes (with external data)", f"{o.get('size_before', 0):,} \u2192 {o.get('size_after', 0):,}"],
        ["passes fired", fired],
        ["proof", proof],
    ]
    if "annotations_kept" in o:
        kept, dropped = o.get("annotations_kept", 0), o.get("annotations_dropped", 0)
        facts.append(["shape annotations", f"{kept:,} kept, {dropped:,} left out (never a larger file)"])
    if o.get("failed_pass"):
        facts.append(["failed pass", str(o["failed_pass"])])
    out = ['<table class="facts">']
    out += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts]
    out.append("</table>")
    before, after = o.get("ops_before", {}), o.get("ops_after", {})
    rows = [[op, str(before.get(op, 0)), str(after.get(op, 0))] for op in sorted(set(before) | set(after))]
    out.append("<h3>Operators</h3>" + _table(rows, ["operator", "before", "after"]))
    return "".join(out)


def render_page(
    title: str,
    summary: dict[str, Any],
    g: Gathered,
    profile: dict[str, Any] | None,
    optimization: Mapping[str, Any] | None = None,
) -> str:
    """The whole HTML document (with an Optimization section when ``optimization`` is given)."""
    opt_link = ' <a href="#optimization">Optimization</a>' if optimization is not None else ""
    opt_section = (
        f'<section id="optimization"><h2>Optimization</h2>{_optimization_html(optimization)}</section>'
        if optimization is not None
        else ""
    )
    main = g.drawings[g.main]
    templates = "".join(
        f'<script type="text/x-svg" id="d-{escape(k)}">{drawing_svg(d, paths=False)}</script>'
        for k, d in g.drawings.items()
        if k != g.main
    )
    data = {"info": g.info, "findings": g.findings, "main": g.main, "colours": FAMILY_COLOURS}
    legend = "".join(f'<span class="sw" style="background:{c}"></span>{escape(k)} ' for k, c in FAMILY_COLOURS.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}"><link rel="icon" href="data:,">
<title>{escape(title)}: onnxcore report</title>
<style>{_asset("report.css")}
{svg_style()}</style></head>
<body>
<header><h1>{escape(title)}</h1><nav><a href="#summary">Summary</a> <a href="#graph">Graph</a>
<a href="#findings">Findings ({len(g.findings)})</a> <a href="#profile">Profile</a>{opt_link}</nav></header>
<section id="summary"><h2>Summary</h2>{_summary_html(summary)}</section>
<section id="graph"><h2>Graph</h2>
<div class="toolbar"><input id="search" type="search" placeholder="search nodes, values, operators" autocomplete="off">
<span id="hits"></span>
<label>colour: <select id="colour"><option value="family">operator family</option>
<option value="time"{"" if profile and not profile.get("error") else " disabled"}>time</option></select></label>
<span id="heat" hidden>time per run: <span class="grad"></span> <span id="heatmax"></span>; grey: no step
(folded at plan time)</span>
<button id="fit" type="button">fit</button> <button id="reset" type="button">1:1</button>
<span class="legend">{legend}</span></div>
<div id="results"></div>
<div class="stage"><svg id="canvas" xmlns="http://www.w3.org/2000/svg">{arrow_defs()}
<g id="viewport">{drawing_svg(main)}</g></svg>
<aside id="panel"><p class="hint">Click a node to see its attributes, bound operator, shapes and findings.
Drag to pan, wheel to zoom; <b>+</b> expands a subgraph, a function body or a cluster in place.</p></aside></div>
</section>
<section id="findings"><h2>Findings</h2>{_findings_html(g.findings)}</section>
<section id="profile"><h2>Profile</h2>{_profile_html(profile)}</section>
{opt_section}
<footer>Made by onnxcore; self-contained, nothing is fetched.</footer>
<script type="application/json" id="data">{_script_json(data)}</script>
{templates}
<script>{_asset("report.js")}</script>
</body></html>
"""
