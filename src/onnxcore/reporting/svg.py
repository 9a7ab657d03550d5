"""SVG markup of a laid-out :class:`~onnxcore.reporting.collect.Drawing` (the page's graph, and ``--format svg``).

Each element carries its coordinates as data (``data-b`` for a box: x, y, width, height; ``data-p`` for an edge's
points and a label's anchor) so the page's script can move them when a node is expanded in place.
"""

from __future__ import annotations

from html import escape

from onnxcore.reporting.collect import Drawing, DrawNode
from onnxcore.reporting.families import FAMILY_COLOURS

__all__ = ["drawing_svg", "standalone_svg", "svg_style"]

_LABEL_MAX = 30


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def svg_style() -> str:
    """The drawing's CSS: family colours and the shapes of boxes, edges and labels."""
    fams = "\n".join(f".fam-{k} > rect {{ fill: {v}; }}" for k, v in FAMILY_COLOURS.items())
    return (
        ".node > rect, .cluster > rect { stroke: #444; stroke-width: 1; rx: 4px; }\n"
        ".io > rect { fill: #fff; stroke: #666; stroke-dasharray: 0; rx: 16px; }\n"
        ".cluster > rect { fill: #e9eef7; stroke-dasharray: 4 2; }\n"
        "text { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12px; fill: #111; }\n"
        "text.sub, text.fold { font-size: 10px; fill: #444; }\n"
        "text.t { font-weight: bold; }\n"
        "path.edge { fill: none; stroke: #777; stroke-width: 1.1; marker-end: url(#arrow); }\n"
        "text.elabel { font-size: 9px; fill: #555; }\n"
        ".exp > rect { fill: #fff; stroke: #333; rx: 2px; } .exp > text { font-size: 11px; font-weight: bold; }\n"
        ".frame { fill: #fbfbf4; stroke: #999; stroke-dasharray: 5 3; }\n"
        "text.caption { font-size: 10px; fill: #666; }\n" + fams + "\n"
    )


def _box(node: DrawNode, x: float, y: float) -> str:
    cls = {"op": "node", "io": "io", "cluster": "cluster"}[node.kind]
    w, h = node.width, node.height
    parts = [
        f'<g class="{cls} fam-{node.colour_family}" data-id="{escape(node.key)}" '
        f'data-b="{_n(x)},{_n(y)},{_n(w)},{_n(h)}" transform="translate({_n(x)},{_n(y)})">',
        f'<rect width="{_n(w)}" height="{_n(h)}"/>',
    ]
    title = node.title if len(node.title) <= 40 else node.title[:39] + "…"
    if node.kind == "io":
        parts.append(f'<text class="t" x="{_n(w / 2)}" y="15" text-anchor="middle">{escape(title)}</text>')
        sub = node.sub if len(node.sub) <= 40 else node.sub[:39] + "…"
        parts.append(f'<text class="sub" x="{_n(w / 2)}" y="28" text-anchor="middle">{escape(sub)}</text>')
    else:
        parts.append(f'<text class="t" x="{_n(w / 2)}" y="17" text-anchor="middle">{escape(title)}</text>')
        y0 = 17.0
        if node.sub:
            y0 += 16
            sub = node.sub if len(node.sub) <= 40 else node.sub[:39] + "…"
            parts.append(f'<text class="sub" x="{_n(w / 2)}" y="{_n(y0)}" text-anchor="middle">{escape(sub)}</text>')
        for line in node.lines:
            y0 += 16
            text = line if len(line) <= 40 else line[:39] + "…"
            parts.append(f'<text class="fold" x="8" y="{_n(y0)}">{escape(text)}</text>')
    if node.expand:
        keys = " ".join(k for _c, k in node.expand)
        caps = "|".join(c for c, _k in node.expand)
        parts.append(
            f'<g class="exp" data-x="{escape(keys)}" data-c="{escape(caps)}" transform="translate({_n(w - 18)},3)">'
            '<rect width="15" height="15"/><text x="7.5" y="12" text-anchor="middle">+</text></g>'
        )
    parts.append("</g>")
    return "".join(parts)


def drawing_svg(d: Drawing, *, paths: bool = True) -> str:
    """One drawing as an SVG group (``<g class="drawing">``), in its own coordinates from (0, 0).

    Args:
        d: The drawing.
        paths: Write each edge's ``d`` attribute; without it (the page's folded drawings, a third smaller) the
            page's script draws the path from ``data-p`` when the drawing is expanded.
    """
    lay = d.layout
    assert lay is not None
    out = [f'<g class="drawing" data-d="{escape(d.key)}" data-w="{_n(lay.width)}" data-h="{_n(lay.height)}">']
    out.append('<g class="edges">')
    labels: list[str] = []
    # One label per value, just below the box producing it, on the first segment of one of its edges; a node with
    # several outputs staggers them.
    placed: dict[tuple[int, str], bool] = {}
    per_source: dict[int, int] = {}
    for e, pts in zip(d.edges, lay.edges):
        if len(pts) < 2:
            continue
        data = " ".join(f"{_n(x)},{_n(y)}" for x, y in pts)
        path = ' d="M' + " L".join(f"{_n(x)} {_n(y)}" for x, y in pts) + '"' if paths else ""
        ends = f'data-s="{escape(d.nodes[e.src].key)}" data-t="{escape(d.nodes[e.dst].key)}"'
        out.append(f'<path class="edge" data-v="{escape(e.value)}" {ends} data-p="{data}"{path}/>')
        if e.label and (e.src, e.value) not in placed:
            placed[(e.src, e.value)] = True
            k = per_source[e.src] = per_source.get(e.src, -1) + 1
            (x1, y1), (x2, y2) = pts[0], pts[1]
            ly = y1 + min(12 + 10 * k, (y2 - y1) * 0.8)
            lx = x1 + (x2 - x1) * (ly - y1) / (y2 - y1 or 1) + 4
            text = e.label if len(e.label) <= _LABEL_MAX else e.label[: _LABEL_MAX - 1] + "…"
            labels.append(
                f'<text class="elabel" data-s="{escape(d.nodes[e.src].key)}" data-p="{_n(lx)},{_n(ly)}" '
                f'x="{_n(lx)}" y="{_n(ly)}">'
                f"<title>{escape(e.value)}: {escape(e.label)}</title>{escape(text)}</text>"
            )
    out.append("</g>")
    out.append('<g class="labels">' + "".join(labels) + "</g>")
    out.append('<g class="nodes">')
    for node, x, y in zip(d.nodes, lay.x, lay.y):
        out.append(_box(node, x, y))
    out.append("</g></g>")
    return "".join(out)


def arrow_defs() -> str:
    """The arrowhead marker the edges end with."""
    return (
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>'
    )


def standalone_svg(d: Drawing) -> str:
    """The drawing alone as an SVG document (``--format svg``), subgraphs shown collapsed."""
    lay = d.layout
    assert lay is not None
    w, h = _n(lay.width), _n(lay.height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">'
        f"<style>{svg_style()}</style>{arrow_defs()}"
        f'<rect width="{w}" height="{h}" fill="#fff"/>{drawing_svg(d)}</svg>\n'
    )
