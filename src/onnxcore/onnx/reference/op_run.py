"""``onnx.reference.op_run.OpRun``: the base class of a user's operator, run as an onnxcore custom kernel.

A subclass names its domain (``op_domain``) and implements ``_run(self, *inputs, **attributes)`` returning a tuple
of outputs; the operator's type is the class's name. :class:`onnxcore.onnx.reference.ReferenceEvaluator` enters
each class given as ``new_ops`` in a :class:`onnxcore.kernels.KernelSet` (Clause 14.3: a custom domain's operator
binds to the kernel of the greatest since_version not above the imported version, here 1).
"""

from __future__ import annotations

from typing import Any

from onnxcore.proto.messages import NodeProto

__all__ = ["OpRun", "RuntimeTypeError"]


class RuntimeTypeError(RuntimeError):
    """Raised by onnx's operators for an unexpected input type (kept for scripts that catch it by name)."""


class OpRun:
    """A user's operator: subclass it, set ``op_domain`` (the domain of the nodes it runs), implement ``_run``.

    An instance holds the node's attributes as its own attributes while it runs, as onnx's does.
    """

    op_domain = ""

    def __init__(self, onnx_node: NodeProto | None = None, run_params: dict[str, Any] | None = None, **_: Any) -> None:
        self.onnx_node = onnx_node
        self.run_params = dict(run_params or {})

    def _run(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        raise NotImplementedError(f"{type(self).__name__}._run is not implemented")

    def run(self, *args: Any, **attributes: Any) -> tuple[Any, ...]:
        """Call ``_run`` with the inputs and the node's attributes; the outputs as a tuple."""
        out = self._run(*args, **attributes)
        return out if isinstance(out, tuple) else (out,)

    @classmethod
    def op_type(cls) -> str:
        """The operator's type: the class's name."""
        return cls.__name__
