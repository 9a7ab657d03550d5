"""The kernel registry: one kernel per (domain, op_type, since_version), registered explicitly.

A kernel reads like its schema: inputs positional (``None`` for an input left unsupplied with an
empty name, absent for omitted trailing ones), attributes keyword-only with the defaults of the
operator definition. It returns one value or a tuple of values, one per formal output in order.

Binding (Clause 14.3, 14.4): a node of domain ``d`` in a model importing version ``m`` binds to
the operator definition with the greatest ``since_version <= m`` (see :mod:`onnxcore.defs`), and
then to the kernel registered for exactly that ``since_version``. A kernel therefore lists every
since_version whose semantics it implements, so that a changed definition is never evaluated
with an older kernel's semantics (Clause 4.4: nothing is approximated).

The registry (:func:`kernel`) is process-wide: every session sees its kernels. A :class:`KernelSet` holds kernels
that only the sessions given it see (``Session(model, custom_ops=...)``); at the same key it wins over the registry.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from importlib import import_module
from typing import Any, TypeVar

from onnxcore.defs.binding import canonical_domain, extension_versions, known_domains, schema_versions
from onnxcore.errors import KernelRegistrationError, OnnxCoreError
from onnxcore.kernels.kernel_index import KERNEL_MODULES

__all__ = [
    "NONDETERMINISTIC",
    "NO_FOLD",
    "KernelContext",
    "KernelDef",
    "KernelSet",
    "kernel",
    "custom_domain_kernel",
    "kernel_versions",
    "lookup",
    "prepared_call",
    "prepared_function",
    "registered",
    "unregister",
]

# Operators of the default domain whose results are not a function of their inputs and attributes
# (Clause 8.5, 11.6): they draw random numbers. Never merged by the plan; the conformance runner checks
# only the type and shape of what they produce.
NONDETERMINISTIC: frozenset[str] = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"}
)

# Operators no constant folder evaluates (inference's values, infer/known_values.py; a plan's folding,
# runtime/optimize/fold.py), whatever their inputs:
# * the NONDETERMINISTIC ones, and Dropout, which draws its mask at random in training mode: their results are not
#   functions of the inputs, so one folded draw would stand for every run;
# * operators whose cost a small input does not bound, which would let a model make its own validation (or its
#   session's creation) hang: a regular expression can backtrack exponentially, an image stream of a few kilobytes
#   can hold millions of pixels. A run evaluates them when asked, under the session's limits.
NO_FOLD: frozenset[str] = NONDETERMINISTIC | {"Dropout", "RegexFullMatch", "ImageDecoder"}

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
        rng: A ``numpy.random.Generator`` for operators that draw random numbers. Given as a function returning
            one (a session's, made on its first draw), it is called on the first read.
    """

    __slots__ = (
        "_rng",
        "input_types",
        "node",
        "num_outputs",
        "opset_version",
        "outputs_requested",
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
        self._rng = rng

    @property
    def rng(self) -> Any:
        """The generator (see the class's attributes); ``None`` when the caller gave none."""
        r = self._rng
        if callable(r):
            r = self._rng = r()
        return r

    @rng.setter
    def rng(self, value: Any) -> None:
        self._rng = value


class KernelDef:
    """A registered kernel.

    Attributes:
        prepare: ``prepare(**attributes)`` returns a function of the node's inputs alone that computes what
            ``fn(*inputs, **attributes)`` computes, with the work that depends on the attributes only (a tree
            ensemble's tables, an SVM's support vectors) done once; ``None`` for most kernels. A plan calls it
            once per node (:func:`prepared_call`).
        prepare_constants: ``prepare`` also sees the node's constant inputs: it is called as
            ``prepare(constants, **attributes)``, ``constants`` holding one entry per input (its value when the
            plan knows it before any run, else None), and returns what the plan calls in the kernel's place,
            with the node's inputs and the keywords the plan passes (:func:`prepared_call`).
    """

    __slots__ = ("context", "domain", "fn", "op_type", "prepare", "prepare_constants", "since_version")

    def __init__(
        self,
        domain: str,
        op_type: str,
        since_version: int,
        fn: Callable[..., Any],
        context: bool,
        prepare: Callable[..., Callable[..., Any]] | None = None,
        prepare_constants: bool = False,
    ) -> None:
        self.domain = domain
        self.op_type = op_type
        self.since_version = since_version
        self.fn = fn
        self.context = context
        self.prepare = prepare
        self.prepare_constants = prepare_constants

    def __repr__(self) -> str:
        d = self.domain or "ai.onnx"
        return f"KernelDef({d}::{self.op_type}-{self.since_version} -> {_name(self.fn)})"


def _name(fn: Callable[..., Any]) -> str:
    # Any callable can be a kernel (a functools.partial has no qualified name).
    qualname = getattr(fn, "__qualname__", None)
    return f"{getattr(fn, '__module__', None)}.{qualname}" if qualname else repr(fn)


_PACKAGE = "onnxcore.kernels."

KernelKey = tuple[str, str, int]
"""(canonical domain, op_type, since_version): what one kernel is registered for."""

_REGISTRY: dict[KernelKey, KernelDef] = {}

# Which module registered each built-in kernel (the module whose body applied the decorator), read by the tool that
# writes the operator -> module index (kernels/kernel_index.py) and by the test holding that index to the registry.
_ORIGIN: dict[KernelKey, str] = {}


def _same_definition(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    # A function defined again by the same code (a notebook cell or a module re-run) is a new object with the same
    # module and qualified name: that is a re-definition, not a clash.
    return a is b or (
        getattr(a, "__module__", None) == getattr(b, "__module__", None)
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None) is not None
    )


def _add(
    table: dict[KernelKey, KernelDef],
    where: str,
    op_type: str,
    since_versions: tuple[int, ...],
    domain: str,
    fn: Callable[..., Any],
    context: bool,
    replace: bool,
    prepare: Callable[..., Callable[..., Any]] | None = None,
    prepare_constants: bool = False,
) -> None:
    """Enter ``fn`` in ``table`` at each version; all or nothing (a clash at one version adds none)."""
    dom = canonical_domain(domain)
    keys = [(dom, op_type, v) for v in since_versions]
    for key in keys:
        old = table.get(key)
        if old is not None and not replace and not _same_definition(old.fn, fn):
            raise KernelRegistrationError(
                f"{where}kernel {dom or 'ai.onnx'}::{op_type}-{key[2]} is already registered "
                f"({_name(old.fn)}); pass replace=True to replace it deliberately"
            )
    for key in keys:
        table[key] = KernelDef(dom, op_type, key[2], fn, context, prepare, prepare_constants)


def _check_versions(op_type: str, since_versions: tuple[int, ...]) -> None:
    if not since_versions:
        raise KernelRegistrationError(f"kernel {op_type}: give at least one since_version")
    bad = [v for v in since_versions if not isinstance(v, int) or isinstance(v, bool) or v < 1]
    if bad:
        raise KernelRegistrationError(f"kernel {op_type}: since_versions are integers from 1, got {bad}")


def kernel(
    op_type: str,
    *since_versions: int,
    domain: str = "",
    context: bool = False,
    replace: bool = False,
    prepare: Callable[..., Callable[..., Any]] | None = None,
    prepare_constants: bool = False,
) -> Callable[[F], F]:
    """Register the decorated function, process-wide, as the kernel of ``op_type`` at each of ``since_versions``.

    Every session sees it. For a kernel only one session sees, use a :class:`KernelSet` (``Session(...,
    custom_ops=...)``).

    A second registration of the same (domain, op_type, since_version) is refused, unless it is a re-definition
    (a function of the same ``__module__`` and ``__qualname__``: a notebook cell or a module run again; a lambda's
    qualname is ``<lambda>``, so any lambda of the same module counts as one) or ``replace=True`` says the
    replacement is deliberate. Sessions already created keep the kernels they were bound to.

    Args:
        op_type: Operator name.
        *since_versions: The since_version of every definition whose semantics the function
            implements exactly.
        domain: Operator domain (``""`` is the default domain ``ai.onnx``).
        context: Pass a :class:`KernelContext` as the first positional argument.
        replace: Replace whatever kernel is registered for these keys (a built-in one too, in every session).
        prepare: For a kernel whose attributes need work before any input can be evaluated (a tree ensemble
            compiled into tables): ``prepare(**attributes)`` returns a function of the inputs alone, equal to
            the kernel for those attributes. A session calls it once per node when it binds the node and
            evaluates the node with the result; the kernel itself (``kernels.run``, a direct call) stays the
            reference and typically is ``prepare(**attributes)(*inputs)``. An :class:`OnnxCoreError` from
            ``prepare`` leaves the node to the kernel, so a bad attribute is reported when the node runs, as
            without ``prepare``. Not for context kernels.
        prepare_constants: ``prepare`` also sees the node's constant inputs (the plan's fused kernels, whose
            weights are prepared once per node): it is called ``prepare(constants, **attributes)`` with one entry
            per input (the value when it is a constant of the plan, else None) and returns what the plan calls in
            the kernel's place, as it calls a kernel (the inputs, then the keywords the plan node passes).

    Raises:
        KernelRegistrationError: a (domain, op_type, since_version) already registered with another function
            and no ``replace``, or no version given. Nothing is registered then.
    """
    _check_versions(op_type, since_versions)
    if prepare is not None and context:
        raise KernelRegistrationError(f"kernel {op_type}: prepare is for kernels without context")
    if prepare_constants and prepare is None:
        raise KernelRegistrationError(f"kernel {op_type}: prepare_constants needs a prepare function")

    origin = str(sys._getframe(1).f_globals.get("__name__", ""))

    def deco(fn: F) -> F:
        builtin = str(getattr(fn, "__module__", None) or "").startswith(_PACKAGE)
        if not builtin:
            # A kernel from outside the package is checked against the built-ins (and replaces one only if they are
            # there first): load them now, not after it. The package's own families register while loading.
            _load_ops()
        _add(_REGISTRY, "", op_type, since_versions, domain, fn, context, replace, prepare, prepare_constants)
        if builtin and origin.startswith(_PACKAGE):
            dom = canonical_domain(domain)
            for v in since_versions:
                _ORIGIN[(dom, op_type, v)] = origin
        return fn

    return deco


def unregister(op_type: str, *since_versions: int, domain: str = "") -> list[KernelDef]:
    """Remove the process-wide kernels of ``op_type`` at ``since_versions`` (a built-in one too).

    Meant for tests and interactive work; sessions already created keep the kernels they were bound to. Register
    a removed :class:`KernelDef` again with ``kernel(d.op_type, d.since_version, domain=d.domain,
    context=d.context)(d.fn)``.

    Returns:
        The removed kernels, one per version.

    Raises:
        KernelRegistrationError: no version given, or one of them has no kernel (nothing is removed then).
    """
    _check_versions(op_type, since_versions)
    _load_ops()
    dom = canonical_domain(domain)
    keys = [(dom, op_type, v) for v in since_versions]
    missing = [k[2] for k in keys if k not in _REGISTRY]
    if missing:
        raise KernelRegistrationError(f"unregister: no kernel {dom or 'ai.onnx'}::{op_type} at versions {missing}")
    return [_REGISTRY.pop(k) for k in keys]


class KernelSet:
    """Kernels that only the sessions given them see: ``Session(model, custom_ops=ks)``, ``kernels.run(...,
    custom_ops=ks)``.

    Filled with the same decorator as the process-wide registry::

        ops = KernelSet()

        @ops.kernel("Scale", 1, domain="com.me")
        def scale(x, *, factor=2.0):
            return x * np.asarray(factor, x.dtype)

        Session(model, custom_ops=ops)

    Binding is the process-wide one (Clause 14.3, 16.1) over the union of both, and at the same (domain,
    op_type, since_version) the set's kernel wins:

    * a custom domain (the main use): the kernel of the greatest since_version not above the imported version,
      from the set or the registry;
    * a standard operator: the kernel for exactly the since_version of the definition the node binds to. A set
      that has one replaces the built-in kernel in the sessions given the set, and only there (a deliberate
      override); a set refuses a version that is no since_version of the operator, which would never bind.

    A model-local function of the same name still takes precedence over any kernel (Clause 8.4). A session reads
    the set when it is created: kernels added later reach only later sessions.
    """

    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[KernelKey, KernelDef] = {}

    def kernel(
        self,
        op_type: str,
        *since_versions: int,
        domain: str = "",
        context: bool = False,
        replace: bool = False,
        prepare: Callable[..., Callable[..., Any]] | None = None,
    ) -> Callable[[F], F]:
        """Add the decorated function to this set as the kernel of ``op_type`` at each of ``since_versions``.

        The arguments and the rules on a second addition are those of :func:`kernel`, for this set alone.

        Raises:
            KernelRegistrationError: as :func:`kernel`; or, in a domain onnxcore defines, an operator it does not
                define or a version that is not one of its since_versions.
        """
        _check_versions(op_type, since_versions)
        dom = canonical_domain(domain)
        if dom in {canonical_domain(d) for d in known_domains()}:
            # onnxruntime's extensions of the domain are definitions too (SimplifiedLayerNormalization-1); a
            # com.microsoft kernel is never refused (a custom-op library may add operators to that domain).
            defined = sorted(schema_versions(op_type, dom) + extension_versions(op_type, dom))
            label = f"{dom or 'ai.onnx'}::{op_type}"
            if not defined:
                raise KernelRegistrationError(
                    f"KernelSet: {label} is not defined (Clause 14.3): give a custom operator a domain of its own"
                )
            bad = [v for v in since_versions if v not in defined]
            if bad:
                raise KernelRegistrationError(
                    f"KernelSet: {label} has no definition with since_version {bad}; its since_versions: {defined}"
                )

        def deco(fn: F) -> F:
            _add(self._table, "KernelSet: ", op_type, since_versions, dom, fn, context, replace, prepare)
            return fn

        return deco

    def lookup(self, domain: str, op_type: str, since_version: int) -> KernelDef | None:
        """This set's kernel for exactly (domain, op_type, since_version), or ``None``."""
        return self._table.get((canonical_domain(domain), op_type, since_version))

    def versions(self, domain: str, op_type: str) -> list[int]:
        """Since_versions with a kernel in this set for (domain, op_type), ascending."""
        dom = canonical_domain(domain)
        return sorted(v for (d, o, v) in self._table if d == dom and o == op_type)

    def __iter__(self) -> Iterator[KernelDef]:
        return iter(list(self._table.values()))

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"KernelSet({sorted(self._table)!r})"


def lookup(domain: str, op_type: str, since_version: int, custom_ops: KernelSet | None = None) -> KernelDef | None:
    """The kernel for exactly this definition, or ``None``: ``custom_ops``' if it has one, else the registry's."""
    if custom_ops is not None:
        kdef = custom_ops.lookup(domain, op_type, since_version)
        if kdef is not None:
            return kdef
    dom = canonical_domain(domain)
    _load_for(dom, op_type)
    return _REGISTRY.get((dom, op_type, since_version))


def kernel_versions(domain: str, op_type: str, custom_ops: KernelSet | None = None) -> list[int]:
    """Since_versions with a kernel for (domain, op_type) in the registry or ``custom_ops``, ascending."""
    dom = canonical_domain(domain)
    _load_for(dom, op_type)
    found = {v for (d, o, v) in _REGISTRY if d == dom and o == op_type}
    if custom_ops is not None:
        found.update(custom_ops.versions(dom, op_type))
    return sorted(found)


def custom_domain_kernel(
    domain: str, op_type: str, version: int, custom_ops: KernelSet | None = None
) -> KernelDef | None:
    """The kernel a node of a domain without definitions binds to (Clause 16.1): the one registered with the
    greatest since_version not above the imported ``version``, or ``None``."""
    versions = [v for v in kernel_versions(domain, op_type, custom_ops) if v <= version]
    return lookup(domain, op_type, versions[-1], custom_ops) if versions else None


class _Prepared:
    """A node's prepared function, called as a plan calls a kernel (its attributes, already used, are ignored)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *inputs: Any, **_attributes: Any) -> Any:
        return self.fn(*inputs)


def prepared_function(call: Callable[..., Any]) -> Callable[..., Any] | None:
    """The node's prepared function behind ``call`` when ``call`` is :func:`prepared_call`'s wrapper (which ignores
    the attributes a plan passes), else None: a compiled plan calls it directly, with the inputs alone."""
    return call.fn if type(call) is _Prepared else None


def prepared_call(
    kdef: KernelDef, attributes: dict[str, Any], constants: Sequence[Any] | None = None
) -> Callable[..., Any]:
    """What a plan calls for a node bound to ``kdef`` with these attribute values: the kernel, or (for a kernel
    registered with ``prepare``) its prepared function, which takes the same arguments and ignores the attributes.
    A kernel registered with ``prepare_constants`` is prepared with ``constants`` too (one entry per input: its
    value when constant, else None; all None when not given) and its prepared function is returned as it is, called
    by the plan directly. A preparation that fails with an :class:`OnnxCoreError` leaves the kernel (the error is
    raised when it runs); so does one refusing the attributes it is given (a TypeError: a model's node of such a
    kernel's domain that lacks one)."""
    if kdef.prepare is None or kdef.context:
        return kdef.fn
    if kdef.prepare_constants:
        try:
            return kdef.prepare(tuple(constants or ()), **attributes)
        except (OnnxCoreError, TypeError):
            return kdef.fn
    try:
        return _Prepared(kdef.prepare(**attributes))
    except OnnxCoreError:
        return kdef.fn


def registered() -> Iterator[KernelDef]:
    """Every registered kernel."""
    _load_ops()
    yield from list(_REGISTRY.values())


_loaded = False
_loaded_ops: set[tuple[str, str]] = set()


def _load_for(domain: str, op_type: str) -> None:
    """Import the family modules that register kernels of (canonical ``domain``, ``op_type``), as the generated
    index (:mod:`onnxcore.kernels.kernel_index`) lists them: a session imports the families its model's operators
    use, not all of them (issue 42, item 3). An operator the index does not list has no built-in kernel."""
    if _loaded:
        return
    key = (domain, op_type)
    if key in _loaded_ops:
        return
    for name in KERNEL_MODULES.get(key, ()):
        import_module(name)
    _loaded_ops.add(key)


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
