"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.image_decoder`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    ShapeContext,
    ShapeT,
    shape_rule,
)

__all__: list[str] = []


@shape_rule("ImageDecoder")
def _image_decoder(ctx: ShapeContext) -> list[ShapeT | None]:
    # ImageDecoder-20: (H, W, C), C = 3 for RGB and BGR, 1 for Grayscale; H and W depend on the data.
    c = {"RGB": 3, "BGR": 3, "Grayscale": 1}.get(ctx.attr("pixel_format", "RGB"))
    return [None if c is None else (None, None, c)]
