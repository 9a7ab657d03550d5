"""What an adapter works with: the node being rewritten, the scope it lives in, and helpers.

A :class:`ScopeContext` is built once per scope (graph, subgraph or model-local function body): the types and
shapes inference found (Clause 9), the constants known at conversion time (initializers and ``Constant``
outputs of the scope and of the scopes enclosing it), the names in use, and where new constants go (an
initializer in a graph, a ``Constant`` node in a function body, which has no initializers). A :class:`Step` is
one node moving between two consecutive definitions of its operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.build.helper import make_attribute
from onnxcore.convert.adapters import Direction, Refuse
from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.attributes import attribute_value
from onnxcore.proto.messages import AttributeProto, NodeProto, TensorProto
from onnxcore.types import ElementType, from_array, to_array

__all__ = ["Emitted", "ScopeContext", "Step", "TYPE_OF_NAME", "elem_of", "type_of_elem"]

Emitted = tuple[NodeProto, int]
"""A helper node and the operator set version whose form it is written in (converted on to the target)."""

TYPE_OF_NAME: dict[str, ElementType] = {e.type_name: e for e in ElementType if e.type_name}


def elem_of(type_str: str | None) -> ElementType | None:
    """The element type of a tensor type string (``"tensor(float)"``), None for anything else."""
    if not type_str or not type_str.startswith("tensor(") or not type_str.endswith(")"):
        return None
    return TYPE_OF_NAME.get(type_str[7:-1])


def type_of_elem(e: ElementType) -> str:
    """``tensor(<name>)`` of an element type."""
    return f"tensor({e.type_name})"


class ScopeContext:
    """One scope's facts for its nodes' conversion.

    Attributes:
        domain: The domain being converted (``""`` for ai.onnx).
        target: The operator set version of ``domain`` asked for.
        path: The scope's location (``graph``, ``graph/node[3] "loop"/body``, ``functions[0] "d:f"``).
        types: Value name -> type string, of this scope and the enclosing ones.
        shapes: Value name -> shape (extents; None where unknown), as inference found it.
        constants: Value name -> tensor known at conversion time (initializer or ``Constant`` value).
        names: Every value and node name in use in the model (new names avoid them).
        in_function: Whether the scope is a model-local function body (constants become ``Constant`` nodes).
        new_initializers: Initializers to add to the scope's graph once the whole conversion succeeded.
        ir_version: The model's IR version (below 4 an initializer is also a graph input).
        used: Every value name read by a node or declared as a graph output, anywhere in the model.
    """

    __slots__ = (
        "constants",
        "domain",
        "in_function",
        "ir_version",
        "names",
        "new_initializers",
        "path",
        "shapes",
        "target",
        "types",
        "used",
    )

    def __init__(
        self,
        *,
        domain: str,
        target: int,
        path: str,
        types: dict[str, str],
        shapes: dict[str, tuple[Any, ...]],
        constants: dict[str, TensorProto],
        names: set[str],
        in_function: bool,
        ir_version: int,
    ) -> None:
        self.domain = domain
        self.target = target
        self.path = path
        self.types = types
        self.shapes = shapes
        self.constants = constants
        self.names = names
        self.in_function = in_function
        self.new_initializers: list[TensorProto] = []
        self.ir_version = ir_version
        self.used: set[str] = set()

    def fresh(self, base: str) -> str:
        """A name used nowhere in the model, made from ``base``."""
        stem = base or "v"
        n = 0
        name = stem
        while name in self.names:
            n += 1
            name = f"{stem}_{n}"
        self.names.add(name)
        return name


class Step:
    """A node moving from one definition of its operator to the next one (``up``) or the previous one
    (``down``). Adapters edit :attr:`node` and queue helper nodes in :attr:`before` / :attr:`after`.

    Attributes:
        node: The node (a copy; the model's own node is never edited).
        ctx: Its scope's :class:`ScopeContext`.
        src: The definition the node is in the form of now.
        dst: The definition it is moved to (None when the operator has no earlier definition).
        direction: ``"up"`` or ``"down"``.
        version: The ``since_version`` of the newer definition of the pair.
        before: Helper nodes to place before the node, each with the version it is written for.
        after: Helper nodes to place after it.
    """

    __slots__ = ("after", "before", "ctx", "direction", "dst", "node", "src", "version")

    def __init__(
        self, node: NodeProto, ctx: ScopeContext, src: OpSchema, dst: OpSchema | None, direction: Direction
    ) -> None:
        self.node = node
        self.ctx = ctx
        self.src = src
        self.dst = dst
        self.direction = direction
        self.version = src.since_version if direction == "down" else (dst.since_version if dst else 0)
        self.before: list[Emitted] = []
        self.after: list[Emitted] = []

    # -- attributes -------------------------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The Python value of attribute ``name`` (``str`` for STRING), or ``default`` when absent."""
        for a in self.node.attribute:
            if a.name == name:
                if a.ref_attr_name:
                    raise Refuse(f"attribute {name!r} refers to the function's attribute {a.ref_attr_name!r}")
                return attribute_value(a)
        return default

    def has_attr(self, name: str) -> bool:
        """Whether the node sets attribute ``name``."""
        return any(a.name == name for a in self.node.attribute)

    def set_attr(self, name: str, value: Any, attr_type: int | None = None) -> None:
        """Set attribute ``name`` (replacing any value it had)."""
        new = make_attribute(name, value, attr_type=attr_type)
        self.node.attribute = [a for a in self.node.attribute if a.name != name] + [new]

    def pop_attr(self, name: str, default: Any = None) -> Any:
        """Remove attribute ``name`` and return its value (``default`` when absent)."""
        value = self.attr(name, default)
        self.node.attribute = [a for a in self.node.attribute if a.name != name]
        return value

    def rename_attr(self, old: str, new: str) -> None:
        """Give attribute ``old`` the name ``new`` (no-op when absent)."""
        out = []
        for a in self.node.attribute:
            if a.name == old:
                b = AttributeProto()
                for field in AttributeProto._SPEC.fields:
                    setattr(b, field.name, getattr(a, field.name))
                b._present = a._present
                b.name = new
                a = b
            out.append(a)
        self.node.attribute = out

    # -- inputs -----------------------------------------------------------------------------------------
    def input(self, k: int) -> str:
        """The name of actual input ``k`` (``""`` when omitted or absent)."""
        return self.node.input[k] if k < len(self.node.input) else ""

    def set_inputs(self, names: Sequence[str]) -> None:
        """Replace the inputs, dropping trailing omitted ones (Clause 7.3.3)."""
        out = list(names)
        while out and not out[-1]:
            out.pop()
        self.node.input = out

    def const(self, k: int) -> np.ndarray | None:
        """The value of input ``k`` when it is known at conversion time, else None (also when omitted)."""
        name = self.input(k)
        t = self.ctx.constants.get(name) if name else None
        return None if t is None else np.asarray(to_array(t))

    def require_const(self, k: int, what: str) -> np.ndarray:
        """:meth:`const`, refusing when the value is not known at conversion time."""
        v = self.const(k)
        if v is None:
            raise Refuse(
                f"input {k} ({what}, {self.input(k)!r}) becomes an attribute and is not a constant known at "
                "conversion time (an initializer or a Constant)"
            )
        return v

    def constant(self, value: Any, base: str, elem_type: ElementType | None = None) -> str:
        """A new constant holding ``value``: an initializer in a graph, a ``Constant`` node in a function."""
        name = self.ctx.fresh(f"{self.node.name or self.node.op_type}_{base}")
        t = from_array(np.asarray(value), name, elem_type=elem_type)
        self.ctx.constants[name] = t
        self.ctx.types[name] = type_of_elem(ElementType(t.data_type))
        self.ctx.shapes[name] = tuple(int(d) for d in t.dims)
        if self.ctx.in_function:
            node = NodeProto(op_type="Constant", output=[name], attribute=[make_attribute("value", t)])
            self.before.append((node, 9))  # Constant-9 admits every element type
        else:
            self.ctx.new_initializers.append(t)
        return name

    # -- types and shapes -------------------------------------------------------------------------------
    def type(self, name: str) -> str | None:
        """The type string of value ``name``, when inference knows it."""
        return self.ctx.types.get(name) if name else None

    def shape(self, name: str) -> tuple[Any, ...] | None:
        """The shape of value ``name`` (extents may be None or a variable name), when its rank is known."""
        return self.ctx.shapes.get(name) if name else None

    def rank(self, name: str) -> int | None:
        """The rank of value ``name``, when known."""
        s = self.shape(name)
        return None if s is None else len(s)

    def require_rank(self, name: str, why: str) -> int:
        """:meth:`rank`, refusing when it is unknown."""
        r = self.rank(name)
        if r is None:
            raise Refuse(f"the rank of {name!r} is not known at conversion time ({why})")
        return r

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        """The shape of ``name`` when every extent is a known number."""
        s = self.shape(name)
        if s is None or not all(isinstance(d, int) for d in s):
            return None
        return tuple(int(d) for d in s)

    # -- helper nodes -----------------------------------------------------------------------------------
    def emit(
        self, op: str, inputs: Sequence[str], outputs: Sequence[str], version: int, *, after: bool = False, **attrs: Any
    ) -> None:
        """Queue a helper node written in the form of ``op`` at operator set ``version`` (it is converted on to
        the target like any node)."""
        node = NodeProto(
            op_type=op,
            input=list(inputs),
            output=list(outputs),
            attribute=[make_attribute(k, v) for k, v in attrs.items()],
        )
        (self.after if after else self.before).append((node, version))

    def new_value(self, base: str, type_str: str | None, shape: tuple[Any, ...] | None = None) -> str:
        """A fresh value name, with its type (and shape) recorded for the steps that follow."""
        name = self.ctx.fresh(base)
        if type_str:
            self.ctx.types[name] = type_str
        if shape is not None:
            self.ctx.shapes[name] = shape
        return name

    def refuse(self, reason: str) -> Refuse:
        """The refusal to raise (``raise step.refuse(...)``)."""
        return Refuse(reason)
