"""Adapters for changed semantics: the old elementwise broadcasting (``broadcast``/``axis``), the Softmax family's
2-D coercion (before 13), Cast's ``to`` (a string before 6), Constant's value attributes, BatchNormalization's
outputs, and the definitions whose meaning changed without a way to express it (refused both ways).
"""

from __future__ import annotations

import numpy as np

from onnxcore.convert.adapters import Refuse, adapter
from onnxcore.convert.version_step import Step, elem_of
from onnxcore.types import ElementType, from_array

__all__: list[str] = []

_BROADCAST_7 = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")
_COMMUTATIVE = frozenset({"Add", "Mul", "And", "Or", "Xor", "Equal"})


@adapter(_BROADCAST_7, 7, "up")
def broadcast_attributes_up(step: Step) -> None:
    """``broadcast=1`` with ``axis`` aligns B at ``axis`` of A; from 7 broadcasting aligns trailing axes (numpy).

    B is unsqueezed at its end so that its axes land where ``axis`` put them.
    """
    on = step.pop_attr("broadcast", 0)
    axis = step.pop_attr("axis")
    if not on or axis is None:
        return
    ra = step.require_rank(step.input(0), "to place B at axis")
    rb = step.require_rank(step.input(1), "to place B at axis")
    axis = axis + ra if axis < 0 else axis
    trailing = ra - axis - rb
    if trailing < 0:
        raise Refuse(f"B of rank {rb} does not fit at axis {axis} of A of rank {ra}")
    if trailing == 0:
        return
    b = step.input(1)
    shape = step.shape(b)
    new = step.new_value(f"{b}_aligned", step.type(b), None if shape is None else (*shape, *([1] * trailing)))
    step.emit("Unsqueeze", [b], [new], 1, axes=list(range(rb, rb + trailing)))
    step.set_inputs([step.input(0), new])


@adapter(_BROADCAST_7, 7, "down")
def broadcast_attributes_down(step: Step) -> None:
    """Before 7, shapes must be equal, or B broadcast onto A (``broadcast=1``, B a suffix of A's shape)."""
    a, b = step.static_shape(step.input(0)), step.static_shape(step.input(1))
    if a is None or b is None:
        raise Refuse("the inputs' shapes are not known, so the old broadcasting rule cannot be checked")
    if a == b:
        return
    if _suffix(b, a):
        step.set_attr("broadcast", 1)
        return
    if step.node.op_type in _COMMUTATIVE and _suffix(a, b):
        step.set_inputs([step.input(1), step.input(0)])
        step.set_attr("broadcast", 1)
        return
    raise Refuse(f"shapes {list(a)} and {list(b)} broadcast both ways, which the rule before version 7 cannot")


def _suffix(b: tuple[int, ...], a: tuple[int, ...]) -> bool:
    if int(np.prod(b)) == 1 and len(b) <= len(a):
        return True
    return len(b) <= len(a) and tuple(a[len(a) - len(b) :]) == b


@adapter(("Max", "Min", "Sum", "Mean"), 8, "down")
def variadic_broadcast_down(step: Step) -> None:
    """Before 8 the inputs of Max, Min, Sum and Mean have one shape (no broadcasting)."""
    shapes = [step.static_shape(x) for x in step.node.input if x]
    if len(shapes) <= 1:
        return
    if any(s is None for s in shapes) or len(set(shapes)) != 1:
        raise Refuse("the inputs' shapes are not all known and equal; broadcasting came with version 8")


@adapter("Gemm", 7, "up")
def gemm_broadcast_up(step: Step) -> None:
    """From Gemm-7, C always broadcasts."""
    step.pop_attr("broadcast")


@adapter("Gemm", 7, "down")
def gemm_broadcast_down(step: Step) -> None:
    """Before Gemm-7, C broadcasts only with ``broadcast=1``."""
    step.set_attr("broadcast", 1)


@adapter("PRelu", 7, "down")
def prelu_broadcast_down(step: Step) -> None:
    """Before PRelu-7, the slope has X's shape or one element."""
    x, s = step.static_shape(step.input(0)), step.static_shape(step.input(1))
    if x is None or s is None or not (s == x or int(np.prod(s)) == 1):
        raise Refuse("the slope broadcasts (PRelu-7); before, it has X's shape or one element")


_SOFTMAX = ("Softmax", "LogSoftmax", "Hardmax")


@adapter(_SOFTMAX, 13, "up")
def softmax_coercion_up(step: Step) -> None:
    """Before 13 the input is coerced to 2-D at ``axis`` (default 1); from 13 ``axis`` is one axis (default -1).

    The same thing is computed by flattening at ``axis``, applying along the last axis, and reshaping back.
    """
    x = step.input(0)
    rank = step.require_rank(x, "the 2-D coercion of version 1-11")
    axis = int(step.pop_attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        step.set_attr("axis", -1)
        return
    t = step.type(x)
    flat = step.new_value(f"{x}_2d", t)
    step.emit("Flatten", [x], [flat], 13, axis=axis)
    shape = step.new_value(f"{x}_shape", "tensor(int64)", (rank,))
    step.emit("Shape", [x], [shape], 13)
    y = step.node.output[0]
    out2 = step.new_value(f"{y}_2d", t)
    step.emit("Reshape", [out2, shape], [y], 13, after=True)
    step.node.input = [flat]
    step.node.output = [out2]
    step.set_attr("axis", -1)


@adapter(_SOFTMAX, 13, "down")
def softmax_coercion_down(step: Step) -> None:
    """From 13 ``axis`` is one axis; before, the same only along the last one (other axes are moved last)."""
    x = step.input(0)
    rank = step.require_rank(x, "to compare axis with the last axis")
    axis = int(step.pop_attr("axis", -1))
    axis = axis + rank if axis < 0 else axis
    step.set_attr("axis", rank - 1)
    if axis == rank - 1:
        return
    # Along another axis: move it last (Transpose), apply along the last axis, move it back.
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [perm.index(d) for d in range(rank)]
    t = step.type(x)
    moved = step.new_value(f"{x}_moved", t)
    step.emit("Transpose", [x], [moved], 1, perm=perm)
    y = step.node.output[0]
    out = step.new_value(f"{y}_moved", t)
    step.emit("Transpose", [out], [y], 1, after=True, perm=back)
    step.node.input = [moved]
    step.node.output = [out]


@adapter("Cast", 6, "up")
def cast_to_string_up(step: Step) -> None:
    """Cast-1's ``to`` is the element type's name; from 6 its number."""
    to = step.pop_attr("to")
    try:
        elem = ElementType[str(to).upper()]
    except KeyError:
        raise Refuse(f"Cast-1's to={to!r} names no element type") from None
    step.set_attr("to", int(elem))


@adapter("Cast", 6, "down")
def cast_to_string_down(step: Step) -> None:
    """Back to Cast-1's name."""
    to = step.pop_attr("to")
    try:
        name = ElementType(int(to)).name
    except ValueError:
        raise Refuse(f"to={to} is no element type") from None
    step.set_attr("to", name)


@adapter("Cast", 19, "down")
def cast_saturate_down(step: Step) -> None:
    """``saturate`` (19) concerns only the float8 types, which come with 19 too: dropped."""
    step.pop_attr("saturate")


_VALUE_KINDS = {
    "value_float": ElementType.FLOAT,
    "value_floats": ElementType.FLOAT,
    "value_int": ElementType.INT64,
    "value_ints": ElementType.INT64,
    "value_string": ElementType.STRING,
    "value_strings": ElementType.STRING,
}


@adapter("Constant", 12, "down")
def constant_value_kinds_down(step: Step) -> None:
    """Constant-12's ``value_*`` attributes become Constant-11's ``value`` tensor."""
    for name, elem in _VALUE_KINDS.items():
        if step.has_attr(name):
            v = step.pop_attr(name)
            step.set_attr(
                "value", from_array(np.array(v, dtype=object if elem == ElementType.STRING else None), elem_type=elem)
            )


@adapter("BatchNormalization", 14, "up")
def batchnorm_outputs_up(step: Step) -> None:
    """BatchNormalization-9's training outputs (mean, var, saved mean, saved var) have no counterpart in 14."""
    if any(step.node.output[1:]):
        raise Refuse("the training outputs of BatchNormalization-9 differ from BatchNormalization-14's")


@adapter("BatchNormalization", 14, "down")
def batchnorm_training_down(step: Step) -> None:
    """``training_mode=1`` (14) has no counterpart before 14."""
    if step.pop_attr("training_mode", 0) or any(step.node.output[1:]):
        raise Refuse("training_mode=1 (running statistics outputs) has no counterpart before BatchNormalization-14")


@adapter("GroupNormalization", 21, "up")
@adapter("GroupNormalization", 21, "down")
def group_norm_scale_changed(step: Step) -> None:
    """GroupNormalization-18's scale and bias are per group, -21's per channel: the same only with one channel
    per group."""
    x = step.static_shape(step.input(0))
    groups = step.attr("num_groups")
    if x is None or len(x) < 2 or groups != x[1]:
        raise Refuse("scale and bias are per group in 18 and per channel in 21 (equal only when groups = channels)")


@adapter("Scan", 9, "up")
@adapter("Scan", 9, "down")
def scan_batch_axis(step: Step) -> None:
    """Scan-8 has a batch axis and ``sequence_lens``; Scan-9 neither: not rewritten."""
    raise Refuse("Scan-8 iterates with a batch axis and sequence_lens, Scan-9 without: not rewritten")


@adapter(("ScatterElements", "ScatterND"), 18, "down")
def scatter_reduction_18_down(step: Step) -> None:
    """``reduction`` max and min came with 18."""
    if step.attr("reduction") in ("max", "min"):
        raise Refuse(f"reduction={step.attr('reduction')!r} has no counterpart before version 18")


@adapter("DFT", 20, "up")
def dft_axis_to_input(step: Step) -> None:
    """DFT-17's ``axis`` (default 1) moved to input 2 (default -2, counted in a rank with a last axis of 1 or 2)."""
    axis = int(step.pop_attr("axis", 1))
    inputs = [step.input(0), step.input(1)]
    inputs.append(step.constant(np.array(axis, dtype=np.int64), "axis", ElementType.INT64))
    step.set_inputs(inputs)


@adapter("DFT", 20, "down")
def dft_axis_to_attribute(step: Step) -> None:
    """DFT-20's ``axis`` input back to an attribute (a constant; a negative one needs the rank)."""
    axis = -2
    if step.input(2):
        axis = int(step.require_const(2, "axis").reshape(-1)[0])
    if axis < 0:
        axis += step.require_rank(step.input(0), "a negative axis")
    step.set_attr("axis", axis)
    step.set_inputs([step.input(0), step.input(1)])


@adapter(("AveragePool", "MaxPool", "LpPool"), 22, "up")
@adapter(("AveragePool", "MaxPool", "LpPool"), 22, "down")
def pool_ceil_window_22(step: Step) -> None:
    """From 22, a ``ceil_mode`` window that would start in the end padding is dropped: the same output only
    when no window starts there (checked on the known shape)."""
    if not step.attr("ceil_mode", 0):
        return
    x = step.static_shape(step.input(0))
    kernel = step.attr("kernel_shape")
    if x is None or not kernel or step.attr("auto_pad", "NOTSET") != "NOTSET":
        raise Refuse("ceil_mode=1 windows starting in the end padding are dropped from version 22 (shape not known)")
    n = len(kernel)
    strides = step.attr("strides") or [1] * n
    dil = step.attr("dilations") or [1] * n
    pads = step.attr("pads") or [0] * (2 * n)
    if len(x) != n + 2 or len(strides) != n or len(dil) != n or len(pads) != 2 * n or min(strides) < 1:
        raise Refuse("kernel_shape, strides, dilations and pads do not fit the input's spatial axes")
    for i in range(n):
        size = x[2 + i] + pads[i] + pads[i + n] - ((kernel[i] - 1) * dil[i] + 1)
        out = -(-size // strides[i]) + 1
        if (out - 1) * strides[i] >= x[2 + i] + pads[i]:
            raise Refuse("a ceil_mode=1 window starts in the end padding: dropped from version 22, kept before")


@adapter("Mod", 28, "down")
def mod_float_fmod0_down(step: Step) -> None:
    """``fmod=0`` on floating-point inputs is defined from Mod-28 only."""
    elem = elem_of(step.type(step.input(0)))
    if not step.attr("fmod", 0) and (elem is None or elem.is_float):
        raise Refuse("fmod=0 on floating-point inputs is defined from Mod-28 only")


@adapter("ConvTranspose", 11, "down")
def conv_transpose_output_shape_down(step: Step) -> None:
    """ConvTranspose-11 redefined how ``output_shape`` and SAME ``auto_pad`` place the padding."""
    if step.has_attr("output_shape") or step.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        raise Refuse("output_shape and SAME auto_pad place the padding differently before ConvTranspose-11")


@adapter("ConvTranspose", 11, "up")
def conv_transpose_output_shape_up(step: Step) -> None:
    """See the down adapter."""
    conv_transpose_output_shape_down(step)


@adapter("RoiAlign", 16, "up")
def roialign_coordinates_up(step: Step) -> None:
    """RoiAlign-10 computes what RoiAlign-16 calls ``output_half_pixel``."""
    step.set_attr("coordinate_transformation_mode", "output_half_pixel")


@adapter("RoiAlign", 16, "down")
def roialign_coordinates_down(step: Step) -> None:
    """Only ``output_half_pixel`` exists before RoiAlign-16."""
    mode = step.pop_attr("coordinate_transformation_mode", "half_pixel")
    if mode != "output_half_pixel":
        raise Refuse(f"coordinate_transformation_mode={mode!r} has no counterpart in RoiAlign-10")


@adapter("OneHot", 11, "down")
def onehot_negative_indices_down(step: Step) -> None:
    """OneHot-11 counts negative indices from the end; OneHot-9 gives them an all-off row."""
    indices = step.const(0)
    if indices is None or (indices < 0).any():
        raise Refuse("negative indices count from the end only from OneHot-11 (indices not known to be >= 0)")
    axis = int(step.attr("axis", -1))
    if axis < 0:
        step.set_attr("axis", axis + indices.ndim + 1)


@adapter(("QuantizeLinear", "DequantizeLinear"), 13, "down")
def quantize_per_axis_down(step: Step) -> None:
    """Per-axis scales (a 1-D scale, ``axis``) came with version 13; before, the scale is a scalar."""
    scale = step.shape(step.input(1))
    if scale is None or len(scale) != 0:
        raise Refuse("a per-axis (non-scalar) scale has no counterpart before version 13")
    step.pop_attr("axis")


_GRID_MODES = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}


@adapter("GridSample", 20, "down")
def grid_sample_modes_down(step: Step) -> None:
    """GridSample-20 renamed the modes (``linear``, ``cubic``) and admits volumetric inputs."""
    rank = step.require_rank(step.input(0), "GridSample-16 takes 4-D inputs only")
    if rank != 4:
        raise Refuse(f"a rank-{rank} input has no counterpart in GridSample-16 (4-D only)")
    mode = step.attr("mode", "linear")
    if mode not in _GRID_MODES:
        raise Refuse(f"mode {mode!r} is not one of GridSample-20's ({', '.join(_GRID_MODES)})")
    step.set_attr("mode", _GRID_MODES[mode])


@adapter("GridSample", 20, "up")
def grid_sample_modes_up(step: Step) -> None:
    """GridSample-16's ``bilinear``/``bicubic`` are GridSample-20's ``linear``/``cubic``."""
    back = {v: k for k, v in _GRID_MODES.items()}
    mode = step.attr("mode", "bilinear")
    if mode not in back:
        raise Refuse(f"mode {mode!r} is not one of GridSample-16's ({', '.join(back)})")
    step.set_attr("mode", back[mode])


@adapter("Shape", 15, "down")
def shape_start_end_down(step: Step) -> None:
    """Shape-15's ``start``/``end`` take a slice of the shape: before 15, a Slice after the whole shape."""
    start, end = step.pop_attr("start"), step.pop_attr("end")
    if start is None and end is None:
        return
    y = step.node.output[0]
    whole = step.new_value(f"{y}_whole", "tensor(int64)")
    i64 = ElementType.INT64
    starts = step.constant(np.array([start or 0], dtype=np.int64), "start", i64)
    ends = step.constant(np.array([np.iinfo(np.int64).max if end is None else end], dtype=np.int64), "end", i64)
    axes = step.constant(np.array([0], dtype=np.int64), "axes", i64)
    step.emit("Slice", [whole, starts, ends, axes], [y], 13, after=True)
    step.node.output = [whole]


@adapter("Constant", 9, "down")
def constant_types_down(step: Step) -> None:
    """Constant-1 holds floating-point tensors only: in a graph another value becomes an initializer read
    through Identity (the same value under the same name)."""
    value = step.attr("value")
    elem = step.type(step.node.output[0])
    if value is None or elem in ("tensor(float)", "tensor(double)", "tensor(float16)"):
        return
    if step.ctx.in_function:
        raise Refuse(f"Constant-1 holds floating-point tensors only, not {elem} (and a function has no initializers)")
    name = step.constant(value, "value")
    step.node.attribute = []
    step.node.op_type = "Identity"
    step.node.input = [name]


@adapter("PRelu", 7, "up")
def prelu_channel_slope_up(step: Step) -> None:
    """Before PRelu-7 a 1-D slope of C values applies per channel (axis 1); from 7 it broadcasts from the
    trailing axes: the slope is unsqueezed after its axis when that is what aligns it."""
    x, s = step.static_shape(step.input(0)), step.static_shape(step.input(1))
    if s is None or len(s) != 1 or s[0] == 1:
        return
    if x is None:
        raise Refuse("the shapes are not known, so how the slope aligns (channel or trailing) is not either")
    if len(x) >= 2 and x[-1] != s[0] and x[1] == s[0]:
        slope = step.input(1)
        new = step.new_value(f"{slope}_channel", step.type(slope), (s[0], *([1] * (len(x) - 2))))
        step.emit("Unsqueeze", [slope], [new], 1, axes=list(range(1, len(x) - 1)))
        step.set_inputs([step.input(0), new])
