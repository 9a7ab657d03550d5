"""Type inference on the ONNX 1-3 node test cases: strip the declared output types, infer, compare."""

from __future__ import annotations

import onnxcore
from onnxcore.infer import infer
from onnxcore.types.typestr import type_string


def test_inferred_output_types_match_declared(node_cases):
    total = inferred = 0
    wrong: list[str] = []
    contradictions: list[str] = []
    unknown: list[str] = []
    for d in node_cases:
        model = onnxcore.load(d / "model.onnx")
        # with everything declared, inference must not contradict the model (Clause 9.4)
        r = infer(model)
        contradictions += [f"{d.name}: {m.message}" for m in r.mismatches]
        declared = [type_string(o.type) for o in model.graph.output]
        for o in model.graph.output:
            o.type = None
        model.graph.value_info = []
        r = infer(model)
        assert not r.mismatches
        got = r.type_strings["graph"]
        for o, want in zip(model.graph.output, declared):
            if want is None:
                continue
            total += 1
            t = got.get(o.name)
            if t is None:
                unknown.append(f"{d.name}/{o.name}")
            elif t != want:
                wrong.append(f"{d.name}/{o.name}: declared {want}, inferred {t}")
            else:
                inferred += 1
    print(f"\ninferred {inferred} of {total} declared output types of {len(node_cases)} node cases")
    assert not contradictions, contradictions[:10]
    assert not wrong, wrong[:10]
    assert total > 2000
    # every output of the current vectors is inferable; leave a little room for new operators
    assert inferred >= 0.99 * total, unknown[:20]


def test_node_views_cover_every_node(node_cases):
    # The validator's view: one NodeTypes per node (subgraph nodes included), inputs as seen.
    for d in node_cases[:200]:
        model = onnxcore.load(d / "model.onnx")
        r = infer(model)
        top = [n for n in r.nodes if n.graph == "graph"]
        assert len(top) == len(model.graph.node)
        for nt in top:
            assert len(nt.input_types) == len(nt.node.input)
            assert len(nt.output_types) == len(nt.node.output)
            assert r.node(nt.location) is nt
            for name, t in zip(nt.node.input, nt.input_types):
                if name:
                    assert t == r.type_strings["graph"].get(name)


def test_shipped_models_no_contradiction_and_outputs_inferred():
    import corpus

    total = inferred = 0
    for path in corpus.shipped_models():
        model = onnxcore.load(path)
        assert not infer(model).mismatches, path
        declared = {v.name: type_string(v.type) for v in list(model.graph.value_info) + list(model.graph.output)}
        model.graph.value_info = []
        for o in model.graph.output:
            o.type = None
        got = infer(model).type_strings["graph"]
        for name, want in declared.items():
            if want is None:
                continue
            total += 1
            if got.get(name) is not None:
                assert got[name] == want, (path, name)
                inferred += 1
    print(f"\ninferred {inferred} of {total} declared types of the shipped models")
    assert total > 100
    # only the outputs of ai.onnx.preview.training Gradient stay unknown (no rule can tell them)
    assert total - inferred <= 4
