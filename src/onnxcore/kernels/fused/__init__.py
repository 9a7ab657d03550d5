"""The plan's fused kernels: what a plan-time rewrite (``onnxcore.runtime.optimize``) puts in place of the nodes it
fuses (Clause 8.2), each a kernel of the private domain :data:`FUSED_DOMAIN`, version 1.

A fused kernel computes exactly what the plan computed for the nodes it replaces, bit for bit (the graph's own
semantics, not those of any published operator: they are not com.microsoft nodes). It is registered with the
explicit ``@kernel`` decorator and bound as any kernel of a domain without definitions is (Clause 16.1: the
greatest since_version not above the imported one); its ``prepare=`` hook (registered with
``prepare_constants=True``) sees the node's constant inputs and its attributes once, when the plan is made, and
returns the step the plan calls directly on every run. Its attributes are plan-time Python values (constant arrays,
the kernels of the nodes as written for inputs the fused form does not take); each kernel runs alone through
``kernels.run(op, 1, *inputs, domain="onnxcore.fused", **attributes)``.

The compiled loops of ``kernels.accel`` are called from kernels only: the fused kernels here and the operator
families.

The family modules are listed explicitly; :func:`onnxcore.kernels.load_all` imports them.
"""

from __future__ import annotations

__all__ = ["FUSED_DOMAIN", "FUSED_FAMILIES", "FUSED_VERSION"]

FUSED_DOMAIN = "onnxcore.fused"
"""The private domain of the plan's fused kernels (never written into a model)."""

FUSED_VERSION = 1
"""The one since_version of every fused kernel."""

# The modules of this subpackage that register kernels, imported in this order by onnxcore.kernels.load_all.
FUSED_FAMILIES: tuple[str, ...] = (
    "shape",
    "affine",
    "elementwise",
    "conv",
    "pattern",
    "linear",
    "rows",
    "rotary",
    "scan",
    "forests",
    "lanes",
)
