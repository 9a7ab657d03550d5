"""Run one single-node ONNX 1-3 case directly through our kernel registry (test helper).

Loading uses the onnx package as an oracle so kernels can be tested before the Session exists;
the Session-based conformance runner supersedes this for multi-node cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _attr_value(a: Any) -> Any:
    import onnx
    from onnx import helper, numpy_helper

    from onnxcore import decode
    from onnxcore.proto import GraphProto

    v = helper.get_attribute_value(a)
    t = a.type
    A = onnx.AttributeProto
    if t == A.STRING:
        return v.decode("utf-8")
    if t == A.STRINGS:
        return [s.decode("utf-8") for s in v]
    if t == A.TENSOR:
        return numpy_helper.to_array(v)
    if t == A.TENSORS:
        return [numpy_helper.to_array(x) for x in v]
    if t == A.GRAPH:
        return decode(GraphProto, v.SerializeToString())
    if t == A.INTS:
        return list(v)
    if t == A.FLOATS:
        return list(v)
    return v


def _load_value(path: Path, type_proto: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    data = path.read_bytes()
    which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if which == "map_type":
        mp = onnx.MapProto()
        mp.ParseFromString(data)
        return numpy_helper.to_dict(mp)
    if which == "optional_type":
        op = onnx.OptionalProto()
        op.ParseFromString(data)
        return numpy_helper.to_optional(op)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    arr = numpy_helper.to_array(t)
    if arr.dtype == object:
        arr = np.array([s.encode("utf-8") if isinstance(s, str) else s for s in arr.ravel()], dtype=object).reshape(
            arr.shape
        )
    return arr


def run_single_node_case(case_dir: Path) -> tuple[list[Any], list[Any]] | None:
    """Evaluate a single-node case with our kernel; return (actual, expected) or None if unsupported."""
    import onnx

    from onnxcore.kernels.registry import KernelContext, lookup

    model = onnx.load(str(case_dir / "model.onnx"))
    if len(model.graph.node) != 1:
        return None
    node = model.graph.node[0]
    opset = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
    version = opset.get(node.domain, 0)
    schema = onnx.defs.get_schema(node.op_type, version, node.domain)
    k = lookup(node.domain, node.op_type, schema.since_version)
    if k is None:
        return None
    ds = case_dir / "test_data_set_0"
    inputs_vi = list(model.graph.input)
    outputs_vi = list(model.graph.output)
    feeds = [_load_value(ds / f"input_{i}.pb", vi.type) for i, vi in enumerate(inputs_vi)]
    expected = [_load_value(ds / f"output_{i}.pb", vi.type) for i, vi in enumerate(outputs_vi)]
    by_name = {vi.name: v for vi, v in zip(inputs_vi, feeds)}
    args = [by_name[n] if n else None for n in node.input]
    attrs = {a.name: _attr_value(a) for a in node.attribute}
    if k.context:
        # GRAPH attributes run through onnxcore.Session (the subgraph's own inputs only, no outer scope).
        graphs = {id(attrs[a.name]): a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}

        def run_subgraph(graph: Any, inputs: list[Any], outer: Any = None) -> list[Any]:
            import onnxcore

            g = graphs[id(graph)]
            m = onnx.helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
            return list(onnxcore.Session(m.SerializeToString()).run(None, dict(zip([i.name for i in g.input], inputs))))

        from onnxcore import decode
        from onnxcore.proto import NodeProto

        ctx = KernelContext(
            decode(NodeProto, node.SerializeToString()),
            since_version=schema.since_version,
            opset_version=version,
            num_outputs=len(node.output),
            outputs_requested=[bool(o) for o in node.output],
            run_subgraph=run_subgraph,
        )
        out = k.fn(ctx, *args, **attrs)
    else:
        out = k.fn(*args, **attrs)
    if not isinstance(out, tuple | list) or (
        isinstance(out, list) and len(outputs_vi) == 1 and outputs_vi[0].type.HasField("sequence_type")
    ):
        out = (out,)
    present = [i for i, o in enumerate(node.output) if o]
    actual = [out[i] for i in present]
    return actual, expected


def assert_close(actual: Any, expected: Any, rtol: float = 1e-3, atol: float = 1e-7) -> None:
    """Compare as the conformance runner does (onnxcore.conformance.compare): NaN equal to NaN, exact for
    ints/bools/strings, two ulps relative for element types narrower than float32."""
    from onnxcore.conformance.compare import compare_values

    if isinstance(actual, tuple):
        actual = list(actual)
    c = compare_values(actual, expected, rtol=rtol, atol=atol)
    assert c.ok, f"{c.reason} (at {c.where}, max abs {c.max_abs}, max rel {c.max_rel})"
