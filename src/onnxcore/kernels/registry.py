"""The kernel registry: one kernel per (domain, op_type, since_version), registered explicitly.

A kernel reads like its schema: inputs positional (``None`` for an input left unsupplied with an
empty name, absent for omitted trailing ones), attributes keyword-only with the defaults of the
operator definition. It returns one value or a tuple of values, one per formal output in order.

Binding (Clause 14.3, 14.4): a node of domain ``d`` in a model importing version ``m`` binds to
the operator definition with the greatest ``since_version <= m`` (see :mod:`onnxcore.defs`), and
then to the kernel registered for exactly that ``since_version``. A kernel therefore lists every
since_version whose semantics it implements, so that a changed definition is never evaluated
with an older kernel's semantics (Clause 4.4: nothing is approximated).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from onnxcore.defs.binding import canonical_domain

__all__ = ["KernelDef", "KernelContext", "NONDETERMINISTIC", "kernel", "lookup", "registered", "kernel_versions"]

# Operators of the default domain whose results are not a function of their inputs and attributes
# (Clause 8.5, 11.6): they draw random numbers. Never merged by the plan; the conformance runner checks
# only the type and shape of what they produce.
NONDETERMINISTIC: frozenset[str] = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"}
)

F = TypeVar("F", bound=Callable[..., Any])


class KernelContext:
    """What a kernel registered with ``context=True`` receives as its first argument.

    The limits in force are not part of it: a kernel reads them from :func:`onnxcore.limits.active_limits`
    (a session makes its own limits active for its runs and its plan-time folding).

    Attributes:
        node: The ``NodeProto`` being evaluated.
        since_version: The since_version of the definition the node is bound to.
        opset_version: The version of the node's domain the model imports.
        num_outputs: How many outputs the node declares (including empty names).
        outputs_requested: For each declared output, whether it has a non-empty name.
        input_types: The ``TypeProto`` of each input when statically known, else ``None``.
        run_subgraph: ``run_subgraph(graph, inputs, outer)`` evaluates a ``GraphProto`` attribute
            with positional ``inputs`` and the enclosing scope's values ``outer``; returns the
            graph's outputs as a list.
        rng: A ``numpy.random.Generator`` for operators that draw random numbers.
    """

    __slots__ = (
        "input_types",
        "node",
        "num_outputs",
        "opset_version",
        "outputs_requested",
        "rng",
        "run_subgraph",
        "since_version",
    )

    def __init__(
        self,
        node: Any,
        *,
        since_version: int,
        opset_version: int,
        num_outputs: int,
        outputs_requested: list[bool] | None = None,
        input_types: list[Any] | None = None,
        run_subgraph: Callable[..., list[Any]] | None = None,
        rng: Any = None,
    ) -> None:
        self.node = node
        self.since_version = since_version
        self.opset_version = opset_version
        self.num_outputs = num_outputs
        self.outputs_requested = outputs_requested if outputs_requested is not None else [True] * num_outputs
        self.input_types = input_types
        self.run_subgraph = run_subgraph
        self.rng = rng


class KernelDef:
    """A registered kernel."""

    __slots__ = ("context", "domain", "fn", "op_type", "since_version")

    def __init__(self, domain: str, op_type: str, since_version: int, fn: Callable[..., Any], context: bool) -> None:
        self.domain = domain
        self.op_type = op_type
        self.since_version = since_version
        self.fn = fn
        self.context = context

    def __repr__(self) -> str:
        d = self.domain or "ai.onnx"
        return f"KernelDef({d}::{self.op_type}-{self.since_version} -> {self.fn.__module__}.{self.fn.__qualname__})"


_REGISTRY: dict[tuple[str, str, int], KernelDef] = {}


def kernel(op_type: str, *since_versions: int, domain: str = "", context: bool = False) -> Callable[[F], F]:
    """Register the decorated function as the kernel of ``op_type`` at each of ``since_versions``.

    Args:
        op_type: Operator name.
        *since_versions: The since_version of every definition whose semantics the function
            implements exactly.
        domain: Operator domain (``""`` is the default domain ``ai.onnx``).
        context: Pass a :class:`KernelContext` as the first positional argument.

    Raises:
        ValueError: a (domain, op_type, since_version) registered twice, or no version given.
    """
    if not since_versions:
        raise ValueError(f"kernel {op_type}: give at least one since_version")
    dom = canonical_domain(domain)

    def deco(fn: F) -> F:
        for v in since_versions:
            key = (dom, op_type, v)
            if key in _REGISTRY:
                raise ValueError(f"kernel {dom or 'ai.onnx'}::{op_type}-{v} registered twice")
            _REGISTRY[key] = KernelDef(dom, op_type, v, fn, context)
        return fn

    return deco


def lookup(domain: str, op_type: str, since_version: int) -> KernelDef | None:
    """The kernel registered for exactly this definition, or ``None``."""
    _load_ops()
    return _REGISTRY.get((canonical_domain(domain), op_type, since_version))


def kernel_versions(domain: str, op_type: str) -> list[int]:
    """Since_versions with a kernel for (domain, op_type), ascending."""
    _load_ops()
    dom = canonical_domain(domain)
    return sorted(v for (d, o, v) in _REGISTRY if d == dom and o == op_type)


def registered() -> Iterator[KernelDef]:
    """Every registered kernel."""
    _load_ops()
    yield from list(_REGISTRY.values())


_loaded = False


def _load_ops() -> None:
    # Importing the op modules registers their kernels; the list is explicit (no scanning).
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Function-local on purpose: the family modules import this module to register their kernels, so the
    # package that lists them can only be imported once registration is first needed.
    from onnxcore.kernels import load_all

    load_all()
