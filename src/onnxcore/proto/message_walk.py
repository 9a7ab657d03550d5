"""One walk over every message nested in a message, driven by Annex B (Clause 12, Annex B).

Which fields hold messages comes from :data:`onnxcore.proto.spec.MESSAGE_SPECS`, not from a list of
places written by hand, so a tensor in an attribute of a node of a function of a subgraph is found as
surely as an initializer. The walk is iterative: a model nested deeper than the interpreter stack
(Clause 15.4) is walked without recursion.

The validator walks every message (:data:`MESSAGE_FIELDS`); external data walks only the fields that
can lead to a ``TensorProto`` (``message_fields("TensorProto")``, with ``prune``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

from onnxcore.proto.decoder import MESSAGE_CLASSES
from onnxcore.proto.message import Message
from onnxcore.proto.messages import AttributeProto, GraphProto, NodeProto
from onnxcore.proto.spec import MESSAGE_SPECS

__all__ = ["MESSAGE_FIELDS", "Entry", "FieldPlan", "MessageWalk", "message_fields", "walk_messages"]

# For each record class, its fields that hold messages: ``(field name, repeated)`` in table order.
FieldPlan = Mapping[type[Message], tuple[tuple[str, bool], ...]]
# A message met by the walk: ``(message, parent entry or -1, field name in the parent, index or -1)``.
Entry = tuple[Message, int, str, int]


def message_fields(reaching: str | None = None) -> dict[type[Message], tuple[tuple[str, bool], ...]]:
    """For each record class, its message fields in table order (Annex B).

    Args:
        reaching: An Annex B message name: keep only the fields through which a message of that
            type can be reached (the walk then never enters a branch that cannot hold one).
    """
    reaches = set(MESSAGE_SPECS)
    if reaching is not None:
        reaches = {reaching}
        changed = True
        while changed:
            changed = False
            for name, spec in MESSAGE_SPECS.items():
                if name not in reaches and any(f.kind == "message" and f.type in reaches for f in spec.fields):
                    reaches.add(name)
                    changed = True
    return {
        MESSAGE_CLASSES[name]: tuple(
            (f.name, f.repeated) for f in spec.fields if f.kind == "message" and f.type in reaches
        )
        for name, spec in MESSAGE_SPECS.items()
    }


MESSAGE_FIELDS: dict[type[Message], tuple[tuple[str, bool], ...]] = message_fields()
# The node shortcut of walk_messages relies on these (Annex B); fail loudly if the schema ever changes.
assert MESSAGE_FIELDS[GraphProto][0] == ("node", True)
assert {f for f, _ in MESSAGE_FIELDS[AttributeProto]} >= {"g", "graphs"}


class MessageWalk:
    """What :func:`walk_messages` met.

    Attributes:
        entries: Every message met, as :data:`Entry`, the root first. The children of a message
            are consecutive entries, recorded when their parent is visited.
        by_class: Entry indexes by record class, in entry order (an object met again is left out).
        repeated: Entries of an object met before (with ``unique``): recorded, not entered again.
        order: With ``visit_order``, the visited entries in document order (pre-order, fields in
            table order).
    """

    __slots__ = ("by_class", "entries", "order", "repeated")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.by_class: dict[type, list[int]] = {}
        self.repeated: list[int] = []
        self.order: list[int] = []


def _live(msg: Message, fields: FieldPlan) -> bool:
    # Whether a planned field of ``msg`` holds anything (a message without one leads nowhere).
    for name, _ in fields.get(type(msg), ()):
        if getattr(msg, name):
            return True
    return False


def _emptiness(fields: tuple[tuple[str, bool], ...]) -> tuple[Callable[[Any], Any], tuple[Any, ...]]:
    """A getter of these fields of a message as one tuple (one C-level call), and that tuple when
    none holds anything: comparing the two tells whether the message leads anywhere."""
    names = [f for f, _ in fields]
    empty: tuple[Any, ...] = tuple([] if repeated else None for _, repeated in fields)
    if not names:
        return (lambda m: ()), ()
    if len(names) == 1:
        # attrgetter of one name gives the value itself, not a 1-tuple: name it twice.
        return attrgetter(names[0], names[0]), empty * 2
    return attrgetter(*names), empty


def _leads_nowhere(
    msg: Message, fields: FieldPlan, cache: dict[type, tuple[Callable[[Any], Any], tuple[Any, ...]]]
) -> bool:
    # None of the followed fields of ``msg`` holds anything (the getters are made once per class).
    e = cache.get(type(msg))
    if e is None:
        e = cache[type(msg)] = _emptiness(fields.get(type(msg), ()))
    return bool(e[0](msg) == e[1])


def walk_messages(
    root: Message,
    fields: FieldPlan = MESSAGE_FIELDS,
    *,
    unique: bool = False,
    prune: bool = False,
    max_nesting: int | None = None,
    visit_order: bool = False,
) -> MessageWalk:
    """Walk the messages nested in ``root`` along ``fields``, recording each with its parent.

    The nodes of a graph are most of a model: they are recorded without a trip through the stack,
    and visited only when they hold messages.

    Args:
        root: The message to start from (entry 0).
        fields: Which message fields to follow, by record class (:func:`message_fields`).
        unique: Enter each message object once; an object met again is recorded in
            :attr:`MessageWalk.repeated` only (a code-built model that contains itself cannot loop).
        prune: Leave out a message none of whose followed fields holds anything (a node: none of
            whose attributes does), unless no field of its class is followed (a target, such as
            a ``TensorProto`` when walking towards tensors). For targets that a node holds only
            through its attributes.
        max_nesting: Do not enter the subgraphs (``g``, ``graphs``) of attributes nested deeper
            than this many subgraph levels (Clause 15.4): a hostile depth costs no more than the
            limit allows.
        visit_order: Record :attr:`MessageWalk.order` (left empty otherwise).

    Returns:
        The entries, by class, repeated objects and visiting order.

    Raises:
        ValueError: ``prune`` with ``unique``, or with ``fields`` that follow a node's fields other
            than ``attribute``.
    """
    walk = MessageWalk()
    entries = walk.entries
    by_class = walk.by_class
    repeated = walk.repeated
    order = walk.order
    seen: set[int] = {id(root)}
    entries.append((root, -1, "", -1))
    by_class.setdefault(type(root), []).append(0)
    node_entries = by_class.setdefault(NodeProto, [])
    node_fields = fields.get(NodeProto, ())
    if prune and unique:
        raise ValueError("prune and unique do not combine")
    if prune and node_fields not in ((), (("attribute", True),)):
        raise ValueError("prune walks towards messages that a node holds only through its attributes")
    node_values, node_empty = _emptiness(node_fields)
    attr_values, attr_empty = _emptiness(fields.get(AttributeProto, ()))
    get = fields.get
    by_class_of = by_class.setdefault
    emptiness: dict[type, tuple[Callable[[Any], Any], tuple[Any, ...]]] = {}
    # (entry, subgraph depth)
    stack = [(0, 0)]
    while stack:
        i, depth = stack.pop()
        if visit_order:
            order.append(i)
        msg = entries[i][0]
        plan = get(type(msg), ())
        if not plan:
            continue
        pushed: list[tuple[int, int]] = []
        if type(msg) is GraphProto:
            # A node cannot enclose itself except through a graph, which is guarded below.
            nodes = msg.node
            if prune:
                # Look through the attributes here: most nodes hold nothing the walk is after.
                for k in range(len(nodes)):
                    for a in nodes[k].attribute:
                        if attr_values(a) != attr_empty:
                            break
                    else:
                        continue
                    j = len(entries)
                    entries.append((nodes[k], i, "node", k))
                    node_entries.append(j)
                    pushed.append((j, depth))
            else:
                # Every node recorded, those holding messages entered: iterators over the node list, no Python
                # step per node (a 50,000-node graph is most of a validator's walk).
                n_nodes = len(nodes)
                j0 = len(entries)
                js = range(j0, j0 + n_nodes)
                entries.extend(zip(nodes, repeat(i, n_nodes), repeat("node", n_nodes), range(n_nodes)))
                node_entries.extend(js)
                pushed.extend(zip(compress(js, map(node_empty.__ne__, map(node_values, nodes))), repeat(depth)))
            plan = plan[1:]
        sub_depth = depth
        if type(msg) is AttributeProto:
            sub_depth += 1
            if max_nesting is not None and sub_depth > max_nesting:
                plan = tuple(f for f in plan if f[0] not in ("g", "graphs"))
        for fname, is_repeated in plan:
            v = getattr(msg, fname)
            if is_repeated:
                if not v:
                    continue
                children: Any = enumerate(v)
            elif v is not None:
                children = ((-1, v),)
            else:
                continue
            if unique:
                for k, c in children:
                    if id(c) in seen:
                        repeated.append(len(entries))
                        entries.append((c, i, fname, k))
                        continue
                    seen.add(id(c))
                    j = len(entries)
                    entries.append((c, i, fname, k))
                    by_class_of(type(c), []).append(j)
                    pushed.append((j, sub_depth))
            else:
                for k, c in children:
                    if prune and get(type(c)) and _leads_nowhere(c, fields, emptiness):
                        continue
                    j = len(entries)
                    entries.append((c, i, fname, k))
                    by_class_of(type(c), []).append(j)
                    pushed.append((j, sub_depth))
        pushed.reverse()
        stack.extend(pushed)
    return walk
