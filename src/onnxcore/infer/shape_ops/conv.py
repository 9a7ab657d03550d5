"""Shape rules (Clause 9) of the operators whose kernels are in :mod:`onnxcore.kernels.conv`.

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import ShapeContext, ShapeT, shape_rule
from onnxcore.infer.shape_ops.windows import _conv_out

__all__: list[str] = []


@shape_rule("Conv")
def _conv(ctx: ShapeContext) -> list[ShapeT | None]:
    # Conv-1/11/22: SAME_* gives ceil(in / stride) (the text of Conv-1 says "match the input", which is the
    # same at stride 1; every runtime and the later text use the ceil form).
    return [_conv_out(ctx, 0, 1, 2)]
