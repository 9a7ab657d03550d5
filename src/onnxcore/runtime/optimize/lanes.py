"""Isomorphic sibling nodes given one ``Lanes`` step per group (Clause 8.2; the kernels, and why their values are
the nodes' bit for bit, are in ``onnxcore.kernels.fused.lanes``).

Groups are found level by level (a node's level is one more than the greatest level of the nodes making its
inputs). Nodes of one level join a group when :func:`~onnxcore.kernels.fused.lanes.lane_kind` admits them and
they have:

- one operator, domain, version, bound step and attributes (a fused elementwise graph: one program, but for the
  single-value constants of its affine chains);
- one output, no subgraph, no value read from an enclosing scope;
- at each input position: one shared value; or constants of one type and shape (where the kind lets them differ,
  else one value); or lane ``i`` of one earlier group, for the node that is lane ``i`` (every lane of that group
  read exactly once); or distinct outputs of one node (gathered);
- something that differs between them (else they are repeats, which common-subexpression elimination merges);
- and there are at least :data:`MIN_LANES` of them.

No group can hold two nodes one of which depends on the other, nor can groups depend on each other in a circle:
every path goes from a lower level to a higher one, and a group's nodes share one level. Each group's step takes
the place of its last node (every input is then made); the nodes are then put in an order where each reads values
made before it, keeping the graph's order otherwise.

Readers of a group's value: a ``Sum``/``Max``/``Min`` of all its lanes in order becomes a ``LaneFold`` step; a
``Concat`` whose operands are lanes of groups becomes a ``LaneConcat`` step; any other reader reads the lane's view,
which the group's step returns under the lane's own name.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.kernels.fused.lanes import (
    GATHER,
    LANES,
    SHARED,
    STACKED,
    lane_kind,
    program_token,
    stackable_input,
    value_token,
)
from onnxcore.kernels.registry import lookup, prepared_function
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["MANY_LANES", "MIN_LANES", "stack_lanes"]

MIN_LANES = 4
"""Nodes a group needs: below, the stacking and views cost about what the calls they save cost."""

MANY_LANES = 16
"""Lanes from which a group that no other group, Concat or fold reads is given a step all the same."""

_FOLDS = {"Sum": np.add, "Max": np.maximum, "Min": np.minimum}
_JOINS = frozenset((*_FOLDS, "Concat"))
# Fused steps that hold no constant and compute the same for operands of any shape (a Cast's route per pair of
# types): the first lane's step computes the stacked value too.
_GENERIC_STEPS = frozenset(("ElementwiseGraph", "SameTypeCast"))


_Member = tuple[int, list[str]]  # a node of a bucket: its index and how it reads each input position


class _Group:
    __slots__ = ("k", "members", "name", "specs")

    def __init__(self, members: list[int], name: str, specs: list[str]) -> None:
        self.members, self.name, self.specs, self.k = members, name, specs, len(members)


def stack_lanes(graph: PlanGraph) -> list[PlanNode]:
    """Give each group of lanes (module docstring) one ``Lanes`` step, and the readers of all of a group's lanes
    their ``LaneFold``/``LaneConcat`` step."""
    nodes = list(graph.nodes)
    counts: dict[tuple[str, str], int] = {}
    for bn in nodes:
        key = (bn.node.domain, bn.node.op_type)
        counts[key] = counts.get(key, 0) + 1
    if max(counts.values(), default=0) < MIN_LANES:
        return nodes
    const = graph.const
    level = _levels(nodes, graph.producer)
    by_level: dict[int, list[int]] = {}
    for j in range(len(nodes)):
        by_level.setdefault(level[j], []).append(j)
    lane_of: dict[str, tuple[int, int]] = {}  # value -> (group, lane)
    groups: list[_Group] = []
    used: set[str] = set()
    for lv in sorted(by_level):
        buckets: dict[Any, list[_Member]] = {}
        for j in by_level[lv]:
            got = _signature(nodes[j], const, lane_of)
            if got is not None:
                key, specs = got
                buckets.setdefault(key, []).append((j, specs))
        for key, bucket in buckets.items():
            for members in _partitions(bucket, nodes):
                group = _group(key[0], key[2], members, groups, nodes, const, lane_of)
                if group is None:
                    continue
                g = len(groups)
                group.name = _fresh(f"{nodes[group.members[0]].outputs[0]}\x00lanes", used, graph)
                groups.append(group)
                for i, j in enumerate(group.members):
                    lane_of[nodes[j].outputs[0]] = (g, i)
    groups = _worth_it(groups, nodes, lane_of, graph.readers)
    if not groups:
        return nodes
    return _rewrite(graph, nodes, groups, lane_of)


def _worth_it(
    groups: list[_Group], nodes: Sequence[PlanNode], lane_of: dict[str, tuple[int, int]], readers: dict[str, list[int]]
) -> list[_Group]:
    """The groups that repay their step: those that later groups read, or that read an earlier group, or whose lanes
    a Concat or a fold reads; a group with none of these (one level of siblings, each lane then a view for its own
    readers) only with :data:`MANY_LANES` lanes or more, and without gathering its lanes' values (the copy into the
    stacked operand costs about what a lane's call does). Lanes of the groups left are numbered again in
    ``lane_of``."""
    read: set[int] = set()
    for grp in groups:
        for p, sp in enumerate(grp.specs):
            if sp == LANES:
                read.add(lane_of[nodes[grp.members[0]].inputs[p]][0])
    keep = []
    for g, grp in enumerate(groups):
        if g in read or LANES in grp.specs:
            keep.append(g)
            continue
        joined = any(
            nodes[r].node.op_type in _JOINS
            for j in grp.members
            for r in readers.get(nodes[j].outputs[0], ())
            if nodes[r].node.domain in ("", "ai.onnx")
        )
        if joined or (grp.k >= MANY_LANES and GATHER not in grp.specs):
            keep.append(g)
    if len(keep) == len(groups):
        return groups
    renumber = {g: n for n, g in enumerate(keep)}
    for name, (g, i) in list(lane_of.items()):
        if g in renumber:
            lane_of[name] = (renumber[g], i)
        else:
            del lane_of[name]
    return [groups[g] for g in keep]


def _levels(nodes: Sequence[PlanNode], producer: dict[str, int]) -> list[int]:
    level = [0] * len(nodes)
    for j, bn in enumerate(nodes):
        lv = 0
        for n in (*bn.inputs, *bn.outer):
            p = producer.get(n) if n else None
            if p is not None and p < j:
                lv = max(lv, level[p] + 1)
        level[j] = lv
    return level


def _fresh(base: str, used: set[str], graph: PlanGraph) -> str:
    name, n = base, 0
    while name in used or name in graph.producer or name in graph.const or name in graph.sources:
        n += 1
        name = f"{base}{n}"
    used.add(name)
    return name


def _signature(
    bn: PlanNode, const: dict[str, Any], lane_of: dict[str, tuple[int, int]]
) -> tuple[Any, list[str]] | None:
    """(bucket key, per-position spec) of a node that may be a lane, else None."""
    node = bn.node
    if bn.call is None or bn.outer or len(bn.outputs) != 1 or not bn.outputs[0] or not bn.inputs:
        return None
    if any(a.g is not None or a.graphs for a in node.attribute):
        return None
    kind = lane_kind(node.domain, node.op_type, bn.step_kernel, [f.node.op_type for f in bn.fused])
    if kind is None:
        return None
    positions: list[Any] = []
    specs: list[str] = []
    for p, name in enumerate(bn.inputs):
        if not name:
            positions.append(("",))
            specs.append("")
        elif name in const:
            c = const[name]
            if not isinstance(c, np.ndarray):
                return None
            if stackable_input(kind, node.op_type, p):
                positions.append((STACKED, c.dtype.str, c.shape))
                specs.append(STACKED)
            else:
                positions.append((SHARED, value_token(c) if c.size <= 64 else name))
                specs.append(SHARED)
        elif name in lane_of:
            positions.append((LANES, lane_of[name][0]))
            specs.append(LANES)
        else:
            # (a value made by a node: shared when the lanes read one, gathered when each reads its own; which one
            # is decided per bucket, so the key holds neither)
            positions.append((GATHER,))
            specs.append(GATHER)
    step: Any = bn.step_kernel
    if step == "ElementwiseGraph":
        program = program_token(bn.step_attrs.get("program", ()))
        if program is None:
            return None
        step = (step, program)
    key = (kind, node.domain, node.op_type, bn.since, step, value_token(bn.kw), tuple(positions))
    return key, specs


def _partitions(bucket: list[_Member], nodes: Sequence[PlanNode]) -> list[list[_Member]]:
    """A bucket's nodes split by the values they share: at each position holding a value a node made, a value
    that two or more of them read is shared by those (the position is SHARED for them), one read by one alone is
    that lane's own (GATHER)."""
    if len(bucket) < MIN_LANES:
        return []
    specs = bucket[0][1]
    made = [p for p, sp in enumerate(specs) if sp == GATHER]
    if not made:
        return [bucket]
    readers: dict[tuple[int, str], int] = {}
    for j, _s in bucket:
        for p in made:
            key = (p, nodes[j].inputs[p])
            readers[key] = readers.get(key, 0) + 1
    parts: dict[tuple[str, ...], list[_Member]] = {}
    for j, sp in bucket:
        names = tuple(n if readers[(p, n := nodes[j].inputs[p])] > 1 else "" for p in made)
        own = list(sp)
        for p, n in zip(made, names):
            own[p] = SHARED if n else GATHER
        parts.setdefault(names, []).append((j, own))
    return [m for m in parts.values() if len(m) >= MIN_LANES]


def _group(
    kind: str,
    op_type: str,
    members: list[_Member],
    groups: list[_Group],
    nodes: Sequence[PlanNode],
    const: dict[str, Any],
    lane_of: dict[str, tuple[int, int]],
) -> _Group | None:
    """The group these nodes of one bucket make, lanes in order, or None."""
    if len(members) < MIN_LANES:
        return None
    specs = members[0][1]
    ordered = [j for j, _s in members]
    reads = [p for p, sp in enumerate(specs) if sp == LANES]
    for p in reads:
        # lanes in the order of the lanes they read, where they read each lane of a group once (no copy then)
        src = {j: lane_of[nodes[j].inputs[p]] for j in ordered}
        if sorted(i for _g, i in src.values()) == list(range(groups[src[ordered[0]][0]].k)):
            ordered.sort(key=lambda j: src[j][1])
            break
    # the operand these kinds stack must differ between the lanes (a Concat's or an elementwise node's any one)
    varying = [sp in (STACKED, LANES, GATHER) for sp in specs]
    if kind in ("shape", "axis") and op_type != "Concat" and not varying[0]:
        return None
    if kind == "shape" and specs[0] != LANES:
        return None  # (a view of each lane costs less than gathering them to reshape one)
    if kind == "take" and varying[0] == varying[1]:
        return None
    # something differs between the lanes: a value they read, a constant, or a fused graph's chain constants
    if LANES not in specs and GATHER not in specs:
        differs = any(
            len({value_token(const[nodes[j].inputs[p]]) for j in ordered}) > 1
            for p, sp in enumerate(specs)
            if sp == STACKED
        )
        if not differs:
            programs = {program_token(nodes[j].step_attrs.get("program", ()), constants=True) for j in ordered}
            if len(programs) < 2:
                return None
    return _Group(ordered, "", specs)


def _rewrite(
    graph: PlanGraph,
    nodes: list[PlanNode],
    groups: list[_Group],
    lane_of: dict[str, tuple[int, int]],
) -> list[PlanNode]:
    const = graph.const
    member = {j: g for g, grp in enumerate(groups) for j in grp.members}
    # Readers that take a whole group: a fold of every lane in order, a Concat of lanes.
    folds: dict[int, PlanNode] = {}
    for j, bn in enumerate(nodes):
        if j in member or bn.call is None or bn.outer or len(bn.outputs) != 1:
            continue
        node = bn.node
        if node.domain not in ("", "ai.onnx") or bn.step_kernel or bn.fused:
            continue
        ins = bn.inputs
        if not ins or any(not n for n in ins):
            continue
        if node.op_type in _FOLDS and all(n in lane_of for n in ins):
            g = lane_of[ins[0]][0]
            read = [lane_of[n][1] for n in ins]
            if all(lane_of[n][0] == g for n in ins) and sorted(read) == list(range(groups[g].k)):
                kdef = lookup(node.domain, node.op_type, bn.since)
                if kdef is not None:
                    folds[j] = fused_node(bn, "LaneFold", [groups[g].name], list(bn.outputs), const, may_tuple=False,
                                          ufunc=_FOLDS[node.op_type], order=read, kernel=kdef.fn,
                                          attrs=dict(bn.kw))  # fmt: skip
        elif node.op_type == "Concat" and isinstance(bn.kw.get("axis"), int) and any(n in lane_of for n in ins):
            kdef = lookup(node.domain, node.op_type, bn.since)
            if kdef is None:
                continue
            args: list[str] = []
            runs: list[list[int] | None] = []
            for n in ins:
                at = lane_of.get(n)
                if at is None:
                    args.append(n)
                    runs.append(None)
                    continue
                g, i = at
                last = runs[-1] if runs else None
                if last is not None and args[-1] == groups[g].name:
                    last.append(i)
                else:
                    args.append(groups[g].name)
                    runs.append([i])
            if len(args) < len(ins):
                folds[j] = fused_node(bn, "LaneConcat", args, list(bn.outputs), const, may_tuple=False, runs=runs,
                                      axis=bn.kw["axis"], kernel=kdef.fn, attrs=dict(bn.kw))  # fmt: skip
    # The lanes some other node reads as a value of its own (not as its lane of a group, not through a fold).
    outside: set[str] = set()
    for j, bn in enumerate(nodes):
        if j in folds:
            continue
        mine = member.get(j)
        for p, n in enumerate(bn.inputs):
            if n in lane_of and (mine is None or groups[mine].specs[p] != LANES):
                outside.add(n)
        outside.update(n for n in bn.outer if n in lane_of)
    outputs = set(graph.outputs) | set(graph.aliases) | set(graph.aliases.values()) | graph.outer_reads
    steps: dict[int, PlanNode] = {}
    for grp in groups:
        first = nodes[grp.members[0]]
        bn0 = first
        node = bn0.node
        kind = lane_kind(node.domain, node.op_type, bn0.step_kernel, [f.node.op_type for f in bn0.fused])
        assert kind is not None
        fn, kw = _stacked_call(bn0)
        inputs: list[str] = []
        specs: list[tuple[str, Any]] = []
        for p, sp in enumerate(grp.specs):
            names = [nodes[j].inputs[p] for j in grp.members]
            if sp == SHARED:
                inputs.append(names[0])
                specs.append((SHARED, None))
            elif sp == STACKED:
                specs.append((STACKED, [const[n] for n in names]))
            elif sp == "":
                specs.append(("", None))
            elif sp == LANES:
                g = lane_of[names[0]][0]
                inputs.append(groups[g].name)
                src = [lane_of[n][1] for n in names]
                # (which lane of the group each lane reads: None when lane i reads lane i of all of them)
                specs.append((LANES, None if src == list(range(groups[g].k)) else src))
            else:
                inputs.extend(names)
                specs.append((GATHER, None))
        lane_outs = [nodes[j].outputs[0] for j in grp.members]
        views = [i for i, o in enumerate(lane_outs) if o in outside or o in outputs]
        outs = [grp.name, *[lane_outs[i] for i in views]]
        lanes = [(nodes[j].call, dict(nodes[j].kw)) for j in grp.members]
        axes_input = (
            kind == "axis" and node.op_type != "Concat" and node.op_type.startswith("Reduce") and bn0.since >= 18
        )
        steps[grp.members[-1]] = fused_node(
            bn0, "Lanes", inputs, outs, const, absorbed=[nodes[j] for j in grp.members[1:]], may_tuple=True,
            kind=kind, operator=node.op_type, fn=fn, attrs=kw, specs=specs, lanes=lanes, views=views,
            axes_input=axes_input,
        )  # fmt: skip
    out: list[PlanNode] = []
    order: list[int] = []
    for j, bn in enumerate(nodes):
        if j in steps:
            out.append(steps[j])
        elif j in member:
            continue
        else:
            out.append(folds.get(j, bn))
        order.append(j)
    return _topological(out, order, graph)


def _stacked_call(bn: PlanNode) -> tuple[Any, dict[str, Any]]:
    """What computes a group's stacked value: a fused elementwise graph's, a Cast's or an ML encoder's own step (each
    computes the same for any operands), else the operator's kernel."""
    assert bn.call is not None
    if bn.step_kernel in _GENERIC_STEPS or prepared_function(bn.call) is not None:
        return bn.call, dict(bn.kw)
    kdef = lookup(bn.node.domain, bn.node.op_type, bn.since)
    if kdef is None or kdef.context:
        return bn.call, dict(bn.kw)
    return kdef.fn, dict(bn.kw)


def _topological(nodes: list[PlanNode], order: list[int], graph: PlanGraph) -> list[PlanNode]:
    """``nodes`` in an order where each reads values made before it, the given order kept otherwise."""
    made_by: dict[str, int] = {o: k for k, bn in enumerate(nodes) for o in bn.outputs if o}
    for alias, target in graph.aliases.items():
        if target in made_by:
            made_by.setdefault(alias, made_by[target])
    waits = [0] * len(nodes)
    readers: dict[int, list[int]] = {}
    for k, bn in enumerate(nodes):
        deps = {made_by[n] for n in (*bn.inputs, *bn.outer) if n and n in made_by and made_by[n] != k}
        waits[k] = len(deps)
        for d in deps:
            readers.setdefault(d, []).append(k)
    ready = [(order[k], k) for k in range(len(nodes)) if not waits[k]]
    heapq.heapify(ready)
    out: list[PlanNode] = []
    while ready:
        _o, k = heapq.heappop(ready)
        out.append(nodes[k])
        for r in readers.get(k, ()):
            waits[r] -= 1
            if not waits[r]:
                heapq.heappush(ready, (order[r], r))
    if len(out) != len(nodes):  # (cannot happen: groups keep to one level; kept as the graph was, to be safe)
        return list(graph.nodes)
    return out
