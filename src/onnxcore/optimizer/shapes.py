"""``optimize(input_shapes=...)``: the graph inputs' declared shapes fixed before the passes run.

Without ``input_shapes`` the result keeps every dimension variable, and shape arithmetic is resolved only where the
variables allow (Clause 6.5.2: a variable may take any extent). Given a shape for an input, its declared shape is
fixed to it: each dimension variable of that input becomes the given extent, everywhere the graph's inputs,
outputs and ``value_info`` name it (one name is one extent, Clause 7.1), so shape arithmetic over those extents
folds to constants (``fold_shape_values``, ``resolve_reshape_targets``, folding). The proof then runs at these
shapes.

A shape that contradicts the declaration (another rank, another fixed extent, one variable given two extents) is
refused with the input and the axis named. Only the declarations are touched; the model's messages are not changed
(the graph and the rewritten value infos are new messages sharing everything else).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onnxcore.errors import InputError
from onnxcore.proto import ModelProto, TensorShapeProto, ValueInfoProto
from onnxcore.proto.message import copy_message, shallow_copy

__all__ = ["fix_input_shapes"]


def _dims(vi: ValueInfoProto) -> list[TensorShapeProto.Dimension] | None:
    """The declared dimensions of a tensor value, or None where no shape is declared."""
    t = vi.type
    tt = None if t is None or t.WhichOneof("value") != "tensor_type" else t.tensor_type
    shape = None if tt is None else tt.shape
    return None if shape is None else list(shape.dim)


def _bind(name: str, vi: ValueInfoProto | None, shape: Sequence[int], bound: dict[str, int]) -> None:
    """Record the extents ``shape`` gives input ``name``'s dimension variables; refuse a contradiction."""
    if vi is None or vi.type is None or vi.type.WhichOneof("value") != "tensor_type":
        raise InputError(f"optimize: input_shapes[{name!r}]: {name!r} is not a tensor input of the graph")
    if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
        raise InputError(f"optimize: input_shapes[{name!r}] = {list(shape)}: extents must be whole numbers >= 0")
    dims = _dims(vi)
    if dims is None:
        return
    if len(dims) != len(shape):
        raise InputError(
            f"optimize: input_shapes[{name!r}] = {list(shape)} has rank {len(shape)}; the input declares rank "
            f"{len(dims)}"
        )
    for axis, (d, want) in enumerate(zip(dims, shape)):
        kind = d.WhichOneof("value")
        if kind == "dim_value" and d.dim_value != want:
            raise InputError(f"optimize: input_shapes[{name!r}] = {list(shape)}: axis {axis} is declared {d.dim_value}")
        if kind == "dim_param" and d.dim_param:
            earlier = bound.setdefault(d.dim_param, want)
            if earlier != want:
                raise InputError(
                    f"optimize: input_shapes: dimension variable {d.dim_param!r} is given {earlier} and {want}"
                )


def _fixed(vi: ValueInfoProto, shape: Sequence[int] | None, bound: Mapping[str, int]) -> ValueInfoProto:
    """``vi`` with ``shape`` as its declared shape, or its bound variables replaced; ``vi`` itself if unchanged."""
    dims = _dims(vi)
    if shape is None and not any(d.WhichOneof("value") == "dim_param" and d.dim_param in bound for d in dims or ()):
        return vi
    out = copy_message(vi)
    tt = out.type.tensor_type if out.type is not None else None
    assert tt is not None  # a tensor value: _dims found its shape, or _bind checked its type
    if shape is not None:
        tt.shape = TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=int(e)) for e in shape])
        return out
    assert tt.shape is not None
    for d in tt.shape.dim:
        if d.WhichOneof("value") == "dim_param" and d.dim_param in bound:
            d.dim_value = bound[d.dim_param]
    return out


def fix_input_shapes(model: ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> ModelProto:
    """``model`` with the declared shapes of its graph inputs fixed to ``input_shapes`` (module docstring).

    Args:
        model: The model (not changed).
        input_shapes: Graph input name -> its shape.

    Returns:
        A model sharing ``model``'s messages but the graph and the value infos whose shapes changed.

    Raises:
        InputError: a name that is no graph input, or a shape that contradicts the declared one.
    """
    graph = model.graph
    if graph is None or not input_shapes:
        return model
    declared = {vi.name: vi for vi in graph.input}
    unknown = sorted(set(input_shapes) - set(declared))
    if unknown:
        raise InputError(f"optimize: input_shapes names no graph input: {unknown}; the inputs: {sorted(declared)}")
    bound: dict[str, int] = {}
    for name, shape in input_shapes.items():
        _bind(name, declared[name], list(shape), bound)
    new_graph = shallow_copy(graph)
    # Each list of its own class (protobuf's add), as a decoded graph has.
    new_graph.input = type(graph.input)(_fixed(vi, input_shapes.get(vi.name), bound) for vi in graph.input)
    new_graph.output = type(graph.output)(_fixed(vi, None, bound) for vi in graph.output)
    new_graph.value_info = type(graph.value_info)(_fixed(vi, None, bound) for vi in graph.value_info)
    out = shallow_copy(model)
    out.graph = new_graph
    return out
