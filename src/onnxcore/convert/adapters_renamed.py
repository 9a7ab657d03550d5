"""Renamed and replaced operators: Upsample <-> Resize, Scatter <-> ScatterElements, and Resize's own changes.

Upsample-10 and Scatter-11 are deprecated (Clause 14.5): moving up to them, the node becomes the operator
that replaced them; moving down below the replacement's first version, the node becomes the old operator.
"""

from __future__ import annotations

import numpy as np

from onnxcore.convert.adapters import Refuse, adapter
from onnxcore.convert.version_step import Step

__all__: list[str] = []


@adapter("Upsample", 9, "up")
def upsample_scales_to_input(step: Step) -> None:
    """Upsample-7's ``scales`` attribute became input 1."""
    scales = step.pop_attr("scales")
    step.set_inputs([step.input(0), step.constant(np.array(scales, dtype=np.float32), "scales")])


@adapter("Upsample", 9, "down")
def upsample_scales_to_attribute(step: Step) -> None:
    """``scales`` back to an attribute (a constant)."""
    scales = step.require_const(1, "scales")
    step.set_attr("scales", [float(s) for s in scales.reshape(-1)], attr_type=6)
    step.set_inputs([step.input(0)])


@adapter("Upsample", 7, "down")
def upsample_7_down(step: Step) -> None:
    """Upsample-1 (experimental) took ``width_scale``/``height_scale``: not rewritten."""
    raise Refuse("Upsample-1 is an experimental definition with other attributes: not rewritten")


@adapter("Upsample", 10, "up")
def upsample_becomes_resize(step: Step) -> None:
    """Upsample-10 is deprecated; Resize-10 has the same inputs, attribute and meaning."""
    step.node.op_type = "Resize"


@adapter("Resize", 10, "down")
def resize_becomes_upsample(step: Step) -> None:
    """Before 10 there is no Resize: Upsample-9 has the same inputs, attribute and meaning."""
    step.node.op_type = "Upsample"


@adapter("Resize", 11, "up")
def resize_roi_up(step: Step) -> None:
    """Resize-11 adds ``roi`` (input 1) and the coordinate modes; Resize-10's are ``asymmetric`` with ``floor``."""
    step.set_inputs([step.input(0), step.constant(np.zeros(0, dtype=np.float32), "roi"), step.input(1)])
    step.set_attr("coordinate_transformation_mode", "asymmetric")
    if step.attr("mode", "nearest") == "nearest":
        step.set_attr("nearest_mode", "floor")


@adapter("Resize", 11, "down")
def resize_roi_down(step: Step) -> None:
    """Back to Resize-10: only the asymmetric coordinates, floor rounding, nearest or linear, from scales."""
    coord = step.pop_attr("coordinate_transformation_mode", "half_pixel")
    mode = step.attr("mode", "nearest")
    nearest = step.pop_attr("nearest_mode", "round_prefer_floor")
    step.pop_attr("cubic_coeff_a")
    step.pop_attr("extrapolation_value")
    if coord != "asymmetric":
        raise Refuse(f"coordinate_transformation_mode={coord!r}: Resize-10 computes only 'asymmetric'")
    if mode not in ("nearest", "linear"):
        raise Refuse(f"mode={mode!r} has no counterpart in Resize-10")
    if mode == "nearest" and nearest != "floor":
        raise Refuse(f"nearest_mode={nearest!r}: Resize-10 rounds with 'floor'")
    if step.pop_attr("exclude_outside", 0):
        raise Refuse("exclude_outside=1 has no counterpart in Resize-10")
    if step.input(3):
        raise Refuse("output sizes (input 3) have no counterpart in Resize-10, which takes scales")
    step.set_inputs([step.input(0), step.input(2)])


@adapter("Resize", 13, "down")
def resize_roi_required(step: Step) -> None:
    """Resize-11 requires ``roi`` and ``scales``: an omitted one becomes an empty constant."""
    inputs = [step.input(k) for k in range(4)]
    if not inputs[1]:
        inputs[1] = step.constant(np.zeros(0, dtype=np.float32), "roi")
    if not inputs[2]:
        inputs[2] = step.constant(np.zeros(0, dtype=np.float32), "scales")
    step.set_inputs(inputs)


@adapter("Resize", 19, "down")
def resize_symmetric_down(step: Step) -> None:
    """``half_pixel_symmetric`` came with Resize-19."""
    if step.attr("coordinate_transformation_mode") == "half_pixel_symmetric":
        raise Refuse("coordinate_transformation_mode='half_pixel_symmetric' has no counterpart before Resize-19")


@adapter("Scatter", 11, "up")
def scatter_becomes_scatter_elements(step: Step) -> None:
    """Scatter-11 is deprecated; ScatterElements-11 is the same operator."""
    step.node.op_type = "ScatterElements"


@adapter("ScatterElements", 11, "down")
def scatter_elements_becomes_scatter(step: Step) -> None:
    """Before 11 there is no ScatterElements: Scatter-9 is the same (with a non-negative axis)."""
    axis = int(step.attr("axis", 0))
    if axis < 0:
        rank = step.require_rank(step.input(0), "negative axes came with version 11")
        step.set_attr("axis", axis + rank)
    step.node.op_type = "Scatter"


@adapter("Resize", 18, "down")
def resize_axes_down(step: Step) -> None:
    """Resize-18's ``axes``: before, scales or sizes list every axis (1.0, or the input's extent, elsewhere)."""
    axes = step.pop_attr("axes")
    if step.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise Refuse("keep_aspect_ratio_policy other than 'stretch' has no counterpart before Resize-18")
    if axes is None:
        return
    x = step.input(0)
    rank = step.require_rank(x, "to write scales or sizes for every axis")
    axes = [a + rank if a < 0 else a for a in axes]
    inputs = [step.input(k) for k in range(4)]
    if inputs[2]:
        given = step.require_const(2, "scales").reshape(-1)
        full = np.ones(rank, dtype=np.float32)
        full[axes] = given
        inputs[2] = step.constant(full, "scales")
    if inputs[3]:
        given_sizes = step.require_const(3, "sizes").reshape(-1)
        shape = step.static_shape(x)
        if shape is None:
            raise Refuse("sizes for some axes need the input's other extents, which are not known")
        sizes = np.array(shape, dtype=np.int64)
        sizes[axes] = given_sizes
        inputs[3] = step.constant(sizes, "sizes")
    step.set_inputs(inputs)
