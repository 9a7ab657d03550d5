"""Editing a model's interface as onnx's utilities do: a sub-model between named values, an added output
dimension, the dimensions of the inputs and outputs.

``extract_model`` is ``onnx.utils.extract_model`` (files in, file out; :func:`extract_model_proto` works on a
message), ``expand_out_dim``/``expand_out_dim_graph`` are ``onnx.compose``'s, ``update_inputs_outputs_dims`` is
``onnx.tools.update_model_dims``'s. The names and arguments are onnx's; the results are onnxcore's messages.
What the sub-model keeps is decided by the one extraction rule of composition
(:func:`onnxcore.build.compose.extract_graph`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from onnxcore.build.compose import CompositionError, extract_graph
from onnxcore.build.helper import make_node, make_tensor, make_tensor_value_info
from onnxcore.errors import OnnxCoreError
from onnxcore.infer import annotate
from onnxcore.io import load, save
from onnxcore.proto.bridge import as_message
from onnxcore.proto.message import adopt_lists, copy_message
from onnxcore.proto.messages import GraphProto, ModelProto, TensorProto, TensorShapeProto, ValueInfoProto
from onnxcore.validate import check

__all__ = [
    "DimensionError",
    "expand_out_dim",
    "expand_out_dim_graph",
    "extract_model",
    "extract_model_proto",
    "update_inputs_outputs_dims",
]


class DimensionError(OnnxCoreError, ValueError):
    """A dimension that cannot be set as asked (a ``ValueError``, as onnx raises)."""


# ------------------------------------------------------------------------------------------- extract


def _named_infos(g: GraphProto) -> dict[str, ValueInfoProto]:
    # What onnx's extractor looks names up in: value_info, then inputs, then outputs (a later one wins).
    out = {v.name: v for v in g.value_info}
    out.update((v.name, v) for v in g.input)
    out.update((v.name, v) for v in g.output)
    return out


def extract_model_proto(model: ModelProto | Any, input_names: Sequence[str], output_names: Sequence[str]) -> ModelProto:
    """The sub-model of ``model`` that computes ``output_names`` from ``input_names`` (a new model).

    Inputs and outputs may be any values with a declared type (graph inputs and outputs, ``value_info``
    entries); the model-local functions the kept nodes call are kept; as onnx's extractor, ``value_info`` lists
    every typed value the kept nodes use (inputs and outputs too) and the producer is ``onnx.utils.extract_model``.

    Raises:
        CompositionError: a name without a declared type, or outputs that need a graph input not kept (a
            ``ValueError``).
    """
    src = as_message(model, ModelProto, "extract_model")
    if src.graph is None:
        raise CompositionError("extract_model: the model has no graph")
    infos = _named_infos(src.graph)
    missing = [n for n in (*input_names, *output_names) if n not in infos]
    if missing:
        raise CompositionError(
            f"extract_model: the following names were not found in value_infos: {', '.join(missing)}"
        )
    g = copy_message(src.graph)
    extract_graph(g, list(input_names), list(output_names), "extracted")
    g.name = "Extracted from {" + src.graph.name + "}"
    g.input = [copy_message(infos[n]) for n in input_names]
    g.output = [copy_message(infos[n]) for n in output_names]
    # As onnx's extractor: every typed value the kept nodes read or write, the inputs and outputs included.
    used = {n for node in g.node for n in (*node.input, *node.output)}
    g.value_info = [copy_message(v) for name, v in infos.items() if name in used]
    called = {(n.domain, n.op_type) for n in g.node}
    functions = []
    pending = [f for f in src.functions if (f.domain, f.name) in called]
    seen: set[tuple[str, str]] = set()
    while pending:
        f = pending.pop(0)
        if (f.domain, f.name) in seen:
            continue
        seen.add((f.domain, f.name))
        functions.append(copy_message(f))
        inner = {(n.domain, n.op_type) for n in f.node}
        pending.extend(h for h in src.functions if (h.domain, h.name) in inner)
    return adopt_lists(
        ModelProto(
            ir_version=src.ir_version,
            opset_import=[copy_message(o) for o in src.opset_import],
            producer_name="onnx.utils.extract_model",
            graph=g,
            functions=functions,
        )
    )


def extract_model(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    input_names: list[str],
    output_names: list[str],
    check_model: bool = True,
    infer_shapes: bool = True,
) -> None:
    """Write to ``output_path`` the sub-model of the model at ``input_path`` between the named values.

    As ``onnx.utils.extract_model``: with ``infer_shapes`` the intermediate values get their inferred types
    first (so any of them can be an input or output), with ``check_model`` both models are validated
    (:func:`onnxcore.check`; a :class:`~onnxcore.errors.ValidationError` on error findings).

    Raises:
        CompositionError: an empty or duplicated name list, a missing path, a name without a type (``ValueError``).
        ValidationError: ``check_model`` and a model has error findings.
    """
    if not os.path.exists(input_path):
        raise CompositionError(f"extract_model: invalid input model path: {os.fspath(input_path)!r}")
    if not output_path:
        raise CompositionError("extract_model: the output model path is empty")
    for what, names in (("input", input_names), ("output", output_names)):
        if not names:
            raise CompositionError(f"extract_model: the {what} names are empty")
        if len(names) != len(set(names)):
            raise CompositionError(f"extract_model: duplicate names among the {what} names")
    if check_model:
        check(input_path).raise_for_errors()
    model = load(input_path)
    if infer_shapes:
        model = annotate(model)
    save(extract_model_proto(model, input_names, output_names), output_path)
    if check_model:
        check(output_path).raise_for_errors()


# ------------------------------------------------------------------------------------------- output dimension


def expand_out_dim_graph(graph: GraphProto | Any, dim_idx: int, inplace: bool | None = False) -> GraphProto:
    """Give every output of ``graph`` an extra dimension of extent 1 at ``dim_idx`` (an ``Unsqueeze`` each).

    As ``onnx.compose.expand_out_dim_graph``: the values that were outputs are renamed ``<name>_collapsed_dim_<k>``
    and each output becomes an ``Unsqueeze`` of it by one shared ``Constant`` axis. One difference: an output
    dimension declared by a parameter keeps it (onnx declares such a dimension as 0).

    Args:
        graph: The graph (onnxcore's, or onnx's: then always copied).
        dim_idx: Where the dimension goes; negative counts from the back.
        inplace: Change ``graph`` itself rather than a copy.
    """
    src = as_message(graph, GraphProto, "expand_out_dim_graph")
    g = src if inplace else copy_message(src)
    suffix = f"_collapsed_dim_{dim_idx}"
    outputs = {v.name for v in g.output}
    for node in g.node:
        node.output = [n + suffix if n in outputs else n for n in node.output]
        node.input = [n + suffix if n in outputs else n for n in node.input]
    axis = g.name + "_expand_out_dim_idx"
    value = make_tensor(f"{axis}-value", TensorProto.INT64, [1], [dim_idx])
    g.node.append(make_node("Constant", [], [axis], name=f"{axis}-constant", value=value))
    new_outputs = []
    for o in g.output:
        g.node.append(make_node("Unsqueeze", [o.name + suffix, axis], [o.name], name=f"unsqueeze-{o.name}"))
        tensor = o.type.tensor_type if o.type is not None else None
        # A dimension parameter stays a parameter (onnx's writes its dim_value, 0).
        dims: list[Any] = (
            [
                d.dim_param if d.has("dim_param") else d.dim_value if d.has("dim_value") else None
                for d in tensor.shape.dim
            ]
            if tensor is not None and tensor.shape is not None
            else []
        )
        dims.insert(dim_idx, 1)
        new_outputs.append(make_tensor_value_info(o.name, tensor.elem_type if tensor is not None else 0, dims))
    g.output = new_outputs
    return adopt_lists(g)


def _dim(d: TensorShapeProto.Dimension) -> int | str | None:
    return d.dim_param if d.has("dim_param") else d.dim_value if d.has("dim_value") else None


def expand_out_dim(model: ModelProto | Any, dim_idx: int, inplace: bool | None = False) -> ModelProto:
    """:func:`expand_out_dim_graph` on the model's graph (``onnx.compose.expand_out_dim``)."""
    src = as_message(model, ModelProto, "expand_out_dim")
    m = src if inplace else copy_message(src)
    if m.graph is None:
        raise CompositionError("expand_out_dim: the model has no graph")
    expand_out_dim_graph(m.graph, dim_idx, inplace=True)
    return m


# ------------------------------------------------------------------------------------------- dimensions


def _dim_params(values: Sequence[ValueInfoProto]) -> set[str]:
    return {
        d.dim_param
        for v in values
        if v.type is not None and v.type.tensor_type is not None and v.type.tensor_type.shape is not None
        for d in v.type.tensor_type.shape.dim
        if d.has("dim_param")
    }


def _set_dim(v: ValueInfoProto, j: int, dim: Any, taken: set[str]) -> None:
    tensor = v.type.tensor_type if v.type is not None else None
    if tensor is None or tensor.shape is None or j >= len(tensor.shape.dim):
        raise DimensionError(f"update_inputs_outputs_dims: {v.name!r} has no declared dimension {j}")
    d: TensorShapeProto.Dimension = tensor.shape.dim[j]
    if isinstance(dim, bool) or not isinstance(dim, int | str):
        raise TypeError(f"Only int or str is accepted as dimension value, incorrect type: {type(dim)}")
    if isinstance(dim, str):
        d.clear_field("dim_value")
        d.dim_param = dim
        d.mark_present("dim_param")
    elif dim >= 0:
        if d.has("dim_value") and d.dim_value != dim:
            raise DimensionError(
                f"Unable to set dimension value to {dim} for axis {j} of {v.name}. "
                f"Contradicts existing dimension value {d.dim_value}."
            )
        d.clear_field("dim_param")
        d.dim_value = dim
        d.mark_present("dim_value")
    else:
        param = f"{v.name}_{j}"
        if param in taken:
            raise DimensionError(
                f"Unable to generate unique dim_param for axis {j} of {v.name}. "
                "Please manually provide a dim_param value."
            )
        d.clear_field("dim_value")
        d.dim_param = param
        d.mark_present("dim_param")


def update_inputs_outputs_dims(
    model: ModelProto | Any, input_dims: Mapping[str, list[Any]], output_dims: Mapping[str, list[Any]]
) -> ModelProto:
    """Set the dimensions of the graph's inputs and outputs, in place, and validate the model.

    As ``onnx.tools.update_model_dims.update_inputs_outputs_dims``: a non-negative int sets a dimension's
    value (refused when it contradicts the value declared), a string its parameter, a negative int the
    parameter ``<name>_<axis>``. Every input and output must be named in the dictionaries.

    Args:
        model: The model: onnxcore's is changed in place and returned; onnx's is converted (a new model).
        input_dims: Input name -> its dimensions.
        output_dims: Output name -> its dimensions.

    Raises:
        KeyError: an input or output the dictionaries do not name (as onnx raises).
        DimensionError: a contradicting value, a generated parameter already in use, an axis not declared.
        ValidationError: the model has error findings afterwards.
    """
    m = as_message(model, ModelProto, "update_inputs_outputs_dims")
    g = m.graph
    if g is None:
        raise CompositionError("update_inputs_outputs_dims: the model has no graph")
    taken = _dim_params([*g.input, *g.output, *g.value_info])
    for values, dims in ((g.input, input_dims), (g.output, output_dims)):
        for v in values:
            for j, dim in enumerate(dims[v.name]):
                _set_dim(v, j, dim, taken)
    check(m).raise_for_errors()
    return m
