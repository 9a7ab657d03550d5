"""The layered layout without a browser: no two boxes overlap, crossings on graphs whose answer is known, and the
report's drawings of the light zoo and the test models (box count = node count, initializers folded)."""

from __future__ import annotations

import itertools
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import corpus
import onnx
import pytest
import report_models

import onnxcore
from onnxcore.graph import bind
from onnxcore.infer import infer_both
from onnxcore.reporting import count_crossings, layered_layout, report, segment_crossings
from onnxcore.reporting.collect import NODE_BUDGET, gather

LIGHT = sorted((corpus.onnx_data_dir() / "light").glob("light_*.onnx"))


def _overlaps(boxes: list[tuple[float, float, float, float]]) -> list[tuple[int, int]]:
    """Pairs of (x, y, w, h) boxes whose interiors intersect."""
    out = []
    for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
        if a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]:
            out.append((i, j))
    return out


def _random_dag(n: int, m: int, seed: int) -> tuple[list[tuple[float, float]], list[tuple[int, int]]]:
    rng = random.Random(seed)
    sizes = [(rng.uniform(40, 160), rng.uniform(20, 60)) for _ in range(n)]
    edges = []
    for _ in range(m):
        a, b = sorted(rng.sample(range(n), 2))
        edges.append((a, b))
    return sizes, edges


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_have_no_overlapping_boxes_and_edges_join_their_ends(seed: int) -> None:
    sizes, edges = _random_dag(60, 110, seed)
    lay = layered_layout(sizes, edges)
    boxes = [(x, y, w, h) for (w, h), x, y in zip(sizes, lay.x, lay.y)]
    assert not _overlaps(boxes)
    for (u, v), pts in zip(edges, lay.edges):
        assert pts[0] == pytest.approx((lay.x[u] + sizes[u][0] / 2, lay.y[u] + sizes[u][1]))
        assert pts[-1] == pytest.approx((lay.x[v] + sizes[v][0] / 2, lay.y[v]))
        assert all(a[1] < b[1] for a, b in itertools.pairwise(pts)), "edges go down, layer by layer"
    assert lay.width >= max(x + w for x, (w, _h) in zip(lay.x, sizes))


def test_a_tree_is_drawn_without_crossings() -> None:
    # A binary tree given in a scrambled node order: 0 is the root.
    edges = [(0, 2), (0, 1), (1, 4), (1, 3), (2, 6), (2, 5), (3, 7), (5, 8), (4, 9), (6, 10)]
    lay = layered_layout([(60, 30)] * 11, edges)
    assert lay.crossings == 0
    assert segment_crossings(lay.edges) == 0


def test_complete_bipartite_crossings_are_the_known_minimum() -> None:
    # K(m, n) between two layers crosses C(m,2) * C(n,2) times whatever the order.
    for m, n in ((2, 2), (3, 3), (2, 4)):
        edges = [(a, m + b) for a in range(m) for b in range(n)]
        lay = layered_layout([(50, 30)] * (m + n), edges)
        want = (m * (m - 1) // 2) * (n * (n - 1) // 2)
        assert lay.crossings == want
        assert segment_crossings(lay.edges) == want


def test_crossing_reduction_untangles_a_twisted_ladder() -> None:
    # Two chains whose rungs are given crossed: a0->b1, a1->b0 at every step; a planar drawing exists.
    n = 6
    edges = []
    for i in range(n - 1):
        edges += [(2 * i, 2 * i + 3), (2 * i + 1, 2 * i + 2)]
    order = [[0, 1]] + [[2 * i + 2, 2 * i + 3] for i in range(n - 1)]
    down: list[list[int]] = [[] for _ in range(2 * n)]
    for a, b in edges:
        down[a].append(b)
    assert count_crossings(order, down) > 0  # the order as given crosses
    lay = layered_layout([(40, 20)] * (2 * n), edges)
    assert lay.crossings == 0
    assert segment_crossings(lay.edges) == 0


def test_cycles_and_back_edges_are_laid_out() -> None:
    lay = layered_layout([(40, 20)] * 3, [(0, 1), (1, 2), (2, 0), (1, 1)])
    assert len(lay.edges) == 4 and lay.edges[3] == []
    # The edge against the order (2 -> 0) is laid out reversed and drawn back from 2 to 0.
    assert lay.edges[2][0] == pytest.approx((lay.x[2] + 20, lay.y[2]))
    assert lay.edges[2][-1] == pytest.approx((lay.x[0] + 20, lay.y[0] + 20))
    assert not _overlaps([(x, y, 40, 20) for x, y in zip(lay.x, lay.y)])


def _drawn(model: onnxcore.ModelProto):  # type: ignore[no-untyped-def]
    bound = bind(model)
    types, shapes = infer_both(model, bound=bound)
    return gather(bound, types, shapes, onnxcore.check(model, bound=bound))


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: p.stem)
def test_light_zoo_drawing_has_one_box_per_node_and_no_overlaps(path: Path) -> None:
    ours = onnxcore.load(path)
    g = _drawn(ours)
    d = g.drawings[g.main]
    ops = [n for n in d.nodes if n.kind == "op"]
    theirs = onnx.load(str(path), load_external_data=False)
    assert len(ops) == len(theirs.graph.node)
    inits = {t.name for t in theirs.graph.initializer}
    ios = [n.title for n in d.nodes if n.kind == "io"]
    # Initializers are folded (also those IR version 3 lists among the graph inputs).
    assert not set(ios) & inits
    outputs = {o.name for o in theirs.graph.output}
    assert set(ios) == {i.name for i in theirs.graph.input if i.name not in inits} | outputs
    assert d.layout is not None
    assert not _overlaps([(x, y, n.width, n.height) for n, x, y in zip(d.nodes, d.layout.x, d.layout.y)])


def test_edges_are_labelled_with_inferred_shapes_and_dimension_variables() -> None:
    g = _drawn(onnxcore.from_onnx(report_models.transformer_model()))
    d = g.drawings[g.main]
    labels = {e.label for e in d.edges}
    assert "float[B,S,32]" in labels  # the variables B and S are kept through the encoder
    assert "float[B,4,S,S]" in labels  # the attention scores: heads from the Reshape, S from both sides
    assert sum(1 for n in d.nodes if n.kind == "op") == 1000


def test_the_svg_alone_is_well_formed_and_has_the_boxes() -> None:
    text = report(onnxcore.from_onnx(report_models.if_loop_model()), format="svg")
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2000/svg}"
    boxes = [g for g in root.iter(f"{ns}g") if (g.get("class") or "").startswith("node ")]
    assert [b.get("class") for b in boxes] == ["node fam-control", "node fam-control"]


def test_a_large_scope_is_drawn_as_clusters_within_the_budget() -> None:
    n = NODE_BUDGET + 500
    g = _drawn(onnxcore.from_onnx(report_models.chain_model(n)))
    top = g.drawings[g.main]
    clusters = [b for b in top.nodes if b.kind == "cluster"]
    assert clusters and len(top.nodes) <= NODE_BUDGET
    inside = sum(sum(1 for b in g.drawings[b.expand[0][1]].nodes if b.kind == "op") for b in clusters)
    assert inside == n
