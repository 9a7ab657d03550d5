"""The output types of a model-local function for given input types and attributes
(``onnx.shape_inference.infer_function_output_types``), by the one inference of Clause 9.

The function is called once, in a model made for the question: its inputs typed as given, the call carrying the
attributes, the function's own imports and its domain imported; the answer is what inference states for the
call's outputs (:func:`onnxcore.infer.annotate`: type and, where known, shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnxcore.build.compose import CompositionError
from onnxcore.defs.binding import canonical_domain
from onnxcore.infer import annotate
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import adopt_lists, copy_message
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TypeProto,
    ValueInfoProto,
)

__all__ = ["infer_function_output_types"]

# The IR version of the model made for the question: functions need IR 8 or later (Table 12).
_IR = 10


def infer_function_output_types(
    function: FunctionProto | Any, input_types: Sequence[TypeProto | Any], attributes: Sequence[AttributeProto | Any]
) -> list[TypeProto]:
    """The type of each output of ``function`` called on inputs of ``input_types`` with ``attributes``.

    Args:
        function: The function (onnxcore's or onnx's).
        input_types: One TypeProto per formal input, in order.
        attributes: The call's attributes.

    Returns:
        One TypeProto per formal output; an empty TypeProto where inference cannot tell.

    Raises:
        CompositionError: more input types than the function has inputs (a ``ValueError``).
    """
    f = copy_message(as_message(function, FunctionProto, "infer_function_output_types"))
    types = [as_message(t, TypeProto, "infer_function_output_types") for t in input_types]
    if len(types) > len(f.input):
        raise CompositionError(
            f"infer_function_output_types: {len(types)} input types for the {len(f.input)} inputs of {f.name}"
        )
    ins = [f"in_{k}" for k in range(len(types))]
    outs = [f"out_{k}" for k in range(len(f.output))]
    # The call's outputs are intermediate values (each read by an Identity), so inference states them in
    # value_info with type and shape.
    ends = [NodeProto(op_type="Identity", input=[o], output=[f"end_{k}"]) for k, o in enumerate(outs)]
    call = NodeProto(
        op_type=f.name,
        domain=f.domain,
        input=ins,
        output=outs,
        attribute=[copy_message(as_message(a, AttributeProto, "infer_function_output_types")) for a in attributes],
    )
    imports = {canonical_domain(o.domain): o.version for o in f.opset_import}
    imports.setdefault(canonical_domain(f.domain), 1)
    graph = GraphProto(
        name="infer_function_output_types",
        node=[call, *ends],
        input=[ValueInfoProto(name=n, type=copy_message(t)) for n, t in zip(ins, types)],
        output=[ValueInfoProto(name=f"end_{k}") for k in range(len(outs))],
    )
    model = ModelProto(
        ir_version=_IR,
        opset_import=[OperatorSetIdProto(domain=d, version=v) for d, v in imports.items()],
        graph=graph,
        functions=[f],
    )
    annotated = annotate(model)
    assert annotated.graph is not None
    found = {v.name: v.type for v in annotated.graph.value_info}
    # A list that prints as protobuf's (each type in its text format), as onnx's answer does.
    return TypeProto._List(adopt_lists(found.get(n) or TypeProto()) for n in outs)
