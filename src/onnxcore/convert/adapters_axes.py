"""Adapters for values that moved between attributes and inputs, and for negative axes (admitted from 11).

Attribute -> input (moving up): the value becomes a constant (an initializer, or a ``Constant`` node in a
function body). Input -> attribute (moving down): accepted only when the input is a constant known at
conversion time, else the node is refused naming the input.
"""

from __future__ import annotations

import numpy as np

from onnxcore.convert.adapters import Refuse, adapter
from onnxcore.convert.version_step import Step, elem_of
from onnxcore.types import ElementType

__all__: list[str] = []

I64 = ElementType.INT64

_REDUCE_18 = (
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSumSquare",
)


def _ints(v: np.ndarray) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _axes_to_input(step: Step, *, index: int = 1, name: str = "axes") -> None:
    """Attribute ``name`` becomes input ``index`` (omitted when the attribute was)."""
    axes = step.pop_attr(name)
    inputs = [step.input(k) for k in range(max(len(step.node.input), index))]
    if axes is not None:
        inputs[index:index] = [step.constant(np.array(axes, dtype=np.int64), name, I64)]
    step.set_inputs(inputs)


def _axes_to_attr(step: Step, *, index: int = 1, name: str = "axes") -> None:
    """Input ``index`` becomes attribute ``name`` (it must be a constant; omitted stays omitted)."""
    if step.input(index):
        value = step.require_const(index, name)
        step.set_attr(name, _ints(value), attr_type=7)
    inputs = list(step.node.input)
    if index < len(inputs):
        del inputs[index]
    step.set_inputs(inputs)


@adapter("ReduceSum", 13, "up")
@adapter(_REDUCE_18, 18, "up")
@adapter(("Squeeze", "Unsqueeze"), 13, "up")
def axes_attribute_to_input(step: Step) -> None:
    """``axes`` moved from an attribute to the second input."""
    _axes_to_input(step)


@adapter("ReduceSum", 13, "down")
@adapter(_REDUCE_18, 18, "down")
def reduce_axes_input_to_attribute(step: Step) -> None:
    """``axes`` back to an attribute; an empty constant means "all axes" unless ``noop_with_empty_axes``."""
    if step.input(1):
        value = step.require_const(1, "axes")
        if value.size == 0:
            if step.attr("noop_with_empty_axes", 0):
                raise Refuse("noop_with_empty_axes=1 has no counterpart before version 13/18")
            step.set_inputs([step.input(0)])
            return
    _axes_to_attr(step)


@adapter(("Squeeze", "Unsqueeze"), 13, "down")
def squeeze_axes_input_to_attribute(step: Step) -> None:
    """``axes`` back to an attribute (a constant)."""
    _axes_to_attr(step)


def _normalize(step: Step, name: str, rank: int | None, what: str) -> None:
    value = step.attr(name)
    if value is None:
        return
    values = value if isinstance(value, list) else [value]
    if all(v >= 0 for v in values):
        return
    if rank is None:
        raise Refuse(f"negative {name} {values} needs the rank of the input, which is not known ({what})")
    fixed = [v + rank if v < 0 else v for v in values]
    step.set_attr(name, fixed if isinstance(value, list) else fixed[0], attr_type=7 if isinstance(value, list) else 2)


_AXIS_11 = (
    "ArgMax",
    "ArgMin",
    "Compress",
    "Concat",
    "Flatten",
    "Gather",
    "Hardmax",
    "LogSoftmax",
    "Softmax",
    "Split",
    "TopK",
)


@adapter(_AXIS_11, 11, "down")
def negative_axis_down(step: Step) -> None:
    """Negative ``axis`` is admitted from version 11: before, it is written counted from the front."""
    _normalize(step, "axis", step.rank(step.input(0)), "negative axes came with version 11")


@adapter(("ReduceSum", "ReduceSumSquare", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"), 11, "down")
@adapter(("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "Squeeze"), 11, "down")
def negative_axes_down(step: Step) -> None:
    """Negative ``axes`` are admitted from version 11."""
    _normalize(step, "axes", step.rank(step.input(0)), "negative axes came with version 11")


@adapter("Unsqueeze", 11, "down")
def unsqueeze_negative_axes_down(step: Step) -> None:
    """Unsqueeze's negative axes count in the output's rank."""
    r = step.rank(step.input(0))
    axes = step.attr("axes") or []
    _normalize(step, "axes", None if r is None else r + len(axes), "negative axes came with version 11")


@adapter("Split", 13, "up")
def split_attribute_to_input(step: Step) -> None:
    """``split`` moved from an attribute to the second input."""
    _axes_to_input(step, name="split")


@adapter("Split", 13, "down")
def split_input_to_attribute(step: Step) -> None:
    """``split`` back to an attribute (a constant)."""
    _axes_to_attr(step, name="split")


@adapter("Split", 18, "down")
def split_num_outputs_down(step: Step) -> None:
    """``num_outputs`` (18) splits into ceil-sized parts; before, parts are equal or listed in ``split``."""
    n = step.pop_attr("num_outputs")
    if n is None or step.input(1):
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise Refuse(f"num_outputs={n!r} is not a positive count")
    shape = step.shape(step.input(0))
    axis = int(step.attr("axis", 0))
    if shape is not None and not -len(shape) <= axis < len(shape):
        raise Refuse(f"axis={axis} is out of range for rank {len(shape)}")
    if shape is None or not isinstance(shape[axis], int):
        raise Refuse("num_outputs needs the split axis' extent, which is not known")
    dim = int(shape[axis])
    if dim % n == 0:
        return
    part = -(-dim // n)
    sizes = [part] * (dim // part) + ([dim % part] if dim % part else [])
    if len(sizes) != n:
        raise Refuse(f"num_outputs={n} over an extent of {dim} gives {len(sizes)} parts")
    step.set_inputs([step.input(0), step.constant(np.array(sizes, dtype=np.int64), "split", I64)])


@adapter("Pad", 2, "up")
def pad_paddings_renamed(step: Step) -> None:
    """Pad-1's ``paddings`` is Pad-2's ``pads``."""
    step.rename_attr("paddings", "pads")


@adapter("Pad", 2, "down")
def pad_pads_renamed(step: Step) -> None:
    """Pad-2's ``pads`` is Pad-1's ``paddings``."""
    step.rename_attr("pads", "paddings")


@adapter("Pad", 11, "up")
def pad_attributes_to_inputs(step: Step) -> None:
    """``pads`` and ``value`` moved to inputs 1 and 2."""
    pads = step.pop_attr("pads")
    value = step.pop_attr("value")
    x = step.input(0)
    inputs = [x, step.constant(np.array(pads or [], dtype=np.int64), "pads", I64)]
    if value:
        elem = elem_of(step.type(x))
        if elem is None:
            raise Refuse("the input's type is not known, so the pad value's type is not either")
        inputs.append(step.constant(np.array(value).astype(elem.np_dtype), "value", elem))
    step.set_inputs(inputs)


@adapter("Pad", 11, "down")
def pad_inputs_to_attributes(step: Step) -> None:
    """``pads`` and ``constant_value`` back to attributes (constants)."""
    pads = step.require_const(1, "pads")
    step.set_attr("pads", _ints(pads), attr_type=7)
    if step.input(2):
        value = step.require_const(2, "constant_value")
        step.set_attr("value", float(value.reshape(-1)[0]))
    step.set_inputs([step.input(0)])


@adapter("Pad", 18, "down")
def pad_axes_down(step: Step) -> None:
    """Pad-18's ``axes`` input: before, ``pads`` lists every axis."""
    if not step.input(3):
        return
    axes = _ints(step.require_const(3, "axes"))
    pads = _ints(step.require_const(1, "pads"))
    rank = step.require_rank(step.input(0), "to write pads for every axis")
    full = [0] * (2 * rank)
    for i, a in enumerate(axes):
        a = a + rank if a < 0 else a
        full[a] = pads[i]
        full[a + rank] = pads[i + len(axes)]
    step.set_inputs([step.input(0), step.constant(np.array(full, dtype=np.int64), "pads", I64), step.input(2)])


@adapter("Pad", 19, "down")
def pad_wrap_down(step: Step) -> None:
    """``mode="wrap"`` came with Pad-19."""
    if step.attr("mode") == "wrap":
        raise Refuse('mode="wrap" has no counterpart before Pad-19')


@adapter("Slice", 10, "up")
def slice_attributes_to_inputs(step: Step) -> None:
    """``starts``, ``ends``, ``axes`` moved to inputs 1-3 (``steps``, input 4, is new)."""
    starts, ends, axes = step.pop_attr("starts"), step.pop_attr("ends"), step.pop_attr("axes")
    if starts is None or ends is None:
        raise Refuse("Slice-1 requires the starts and ends attributes; the node has not both")
    inputs = [
        step.input(0),
        step.constant(np.array(starts, dtype=np.int64), "starts", I64),
        step.constant(np.array(ends, dtype=np.int64), "ends", I64),
    ]
    if axes is not None:
        inputs.append(step.constant(np.array(axes, dtype=np.int64), "axes", I64))
    step.set_inputs(inputs)


@adapter("Slice", 10, "down")
def slice_inputs_to_attributes(step: Step) -> None:
    """Inputs back to attributes (constants); steps other than 1 have no counterpart."""
    if step.input(4):
        steps = step.require_const(4, "steps")
        if any(s != 1 for s in _ints(steps)):
            raise Refuse(f"steps {_ints(steps)} have no counterpart before Slice-10")
    step.set_attr("starts", _ints(step.require_const(1, "starts")), attr_type=7)
    step.set_attr("ends", _ints(step.require_const(2, "ends")), attr_type=7)
    if step.input(3):
        step.set_attr("axes", _ints(step.require_const(3, "axes")), attr_type=7)
    step.set_inputs([step.input(0)])


@adapter("Slice", 11, "down")
def slice_negative_axes_down(step: Step) -> None:
    """Negative axes are admitted from Slice-11."""
    if not step.input(3):
        return
    axes = _ints(step.require_const(3, "axes"))
    if all(a >= 0 for a in axes):
        return
    rank = step.require_rank(step.input(0), "negative axes came with Slice-11")
    inputs = list(step.node.input)
    inputs[3] = step.constant(np.array([a + rank if a < 0 else a for a in axes], dtype=np.int64), "axes", I64)
    step.set_inputs(inputs)


@adapter("Clip", 11, "up")
def clip_attributes_to_inputs(step: Step) -> None:
    """``min`` and ``max`` moved to inputs 1 and 2 (of the input's type)."""
    lo, hi = step.pop_attr("min"), step.pop_attr("max")
    x = step.input(0)
    elem = elem_of(step.type(x))
    if elem is None and (lo is not None or hi is not None):
        raise Refuse("the input's type is not known, so the bounds' type is not either")
    inputs = [x, "", ""]
    if lo is not None and elem is not None:
        inputs[1] = step.constant(np.array(lo).astype(elem.np_dtype), "min", elem)
    if hi is not None and elem is not None:
        inputs[2] = step.constant(np.array(hi).astype(elem.np_dtype), "max", elem)
    step.set_inputs(inputs)


@adapter("Clip", 11, "down")
def clip_inputs_to_attributes(step: Step) -> None:
    """Bounds back to attributes (constants)."""
    if step.input(1):
        step.set_attr("min", float(step.require_const(1, "min").reshape(-1)[0]))
    if step.input(2):
        step.set_attr("max", float(step.require_const(2, "max").reshape(-1)[0]))
    step.set_inputs([step.input(0)])


@adapter("TopK", 10, "up")
def topk_attribute_to_input(step: Step) -> None:
    """``k`` moved to input 1 (a one-element int64 tensor)."""
    k = step.pop_attr("k")
    step.set_inputs([step.input(0), step.constant(np.array([k], dtype=np.int64), "k", I64)])


@adapter("TopK", 10, "down")
def topk_input_to_attribute(step: Step) -> None:
    """``k`` back to an attribute (a constant)."""
    step.set_attr("k", int(step.require_const(1, "k").reshape(-1)[0]))
    step.set_inputs([step.input(0)])


@adapter("Reshape", 5, "up")
def reshape_attribute_to_input(step: Step) -> None:
    """``shape`` moved to input 1."""
    shape = step.pop_attr("shape")
    step.set_inputs([step.input(0), step.constant(np.array(shape or [], dtype=np.int64), "shape", I64)])


@adapter("Reshape", 5, "down")
def reshape_input_to_attribute(step: Step) -> None:
    """``shape`` back to an attribute (a constant)."""
    step.set_attr("shape", _ints(step.require_const(1, "shape")), attr_type=7)
    step.set_inputs([step.input(0)])


@adapter("Dropout", 12, "up")
def dropout_ratio_to_input(step: Step) -> None:
    """``ratio`` moved to input 1 (a float scalar); inference mode stays the default."""
    ratio = step.pop_attr("ratio")
    if ratio is not None:
        step.set_inputs([step.input(0), step.constant(np.array(ratio, dtype=np.float32), "ratio")])


@adapter("Dropout", 12, "down")
def dropout_ratio_to_attribute(step: Step) -> None:
    """``ratio`` back to an attribute; ``training_mode`` must be absent or a constant false."""
    if step.input(2):
        mode = step.require_const(2, "training_mode")
        if bool(mode.reshape(-1)[0]):
            raise Refuse("training_mode=true has no counterpart before Dropout-12")
    if step.input(1):
        step.set_attr("ratio", float(step.require_const(1, "ratio").reshape(-1)[0]))
    step.set_inputs([step.input(0)])


@adapter(("Dropout", "BatchNormalization"), 7, "down")
def is_test_down(step: Step) -> None:
    """Before version 7 the default was training mode (``is_test=0``): write ``is_test=1``."""
    step.set_attr("is_test", 1)


@adapter(("Dropout", "BatchNormalization"), 7, "up")
def is_test_up(step: Step) -> None:
    """From version 7 these operators compute inference mode only: ``is_test=0`` (training) is refused."""
    if not step.pop_attr("is_test", 0) and (step.node.op_type == "BatchNormalization" or len(step.node.output) > 1):
        raise Refuse("is_test=0 (training mode) has no counterpart from version 7")


@adapter("Split", 18, "up")
def split_num_outputs_up(step: Step) -> None:
    """Split-18 needs ``split`` or ``num_outputs``: equal parts become ``num_outputs`` (the same when the extent
    divides, which Split-13 requires)."""
    if not step.input(1):
        step.set_attr("num_outputs", len(step.node.output))


@adapter("Dropout", 10, "up")
@adapter("Dropout", 10, "down")
def dropout_mask_type(step: Step) -> None:
    """The mask output is of the data's type before Dropout-10 and bool from 10: dropped when nothing reads it."""
    if len(step.node.output) > 1 and step.node.output[1]:
        if step.node.output[1] in step.ctx.used:
            raise Refuse("the mask output changes type (T before 10, bool from 10) and is read")
        step.node.output = step.node.output[:1]
