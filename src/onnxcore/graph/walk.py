"""The one walker over a bound model's scope tree, with enter and exit callbacks.

Iterative (Clause 15.2): a model nested as deep as its limits allow never exhausts the Python stack. A scope's
subgraphs are visited in node order, then attribute order, between its ``enter`` and its ``exit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from onnxcore.graph.bound import Scope

__all__ = ["walk_scopes"]


def walk_scopes(
    roots: Iterable[Scope],
    *,
    enter: Callable[[Scope], bool | None] | None = None,
    exit: Callable[[Scope], None] | None = None,
) -> None:
    """Visit each root and the subgraphs below it, depth first.

    Args:
        roots: The scopes to start from (e.g. ``[bound.main()]`` or ``bound.scopes`` of kind ``function``).
        enter: Called before a scope's subgraphs; returning ``False`` skips them (and their ``exit``).
        exit: Called after a scope's subgraphs.
    """
    stack: list[tuple[Scope, bool]] = [(s, False) for s in reversed(list(roots))]
    while stack:
        scope, done = stack.pop()
        if done:
            if exit is not None:
                exit(scope)
            continue
        if enter is not None and enter(scope) is False:
            continue
        stack.append((scope, True))
        children = [child for ref in scope.nodes for _seg, _attr, child in ref.subgraphs]
        stack.extend((c, False) for c in reversed(children))
