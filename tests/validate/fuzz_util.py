"""Random field mutations of Annex B messages, for the never-raises tests of the validator."""

from __future__ import annotations

import random
from typing import Any

from onnxcore.proto import MESSAGE_CLASSES, MESSAGE_SPECS
from onnxcore.proto.message import Message

_STRINGS = ["", "x", "y", "w", "s", "c", "ai.onnx", "com.example", "Add", "If", "alpha", "\u00e9", "a" * 300]
_INTS = [0, 1, -1, 2, 3, 7, 8, 14, 21, 28, 29, 99, -(2**63), 2**63 - 1, 2**31, 10**12]


def messages(root: Message) -> list[Message]:
    """Every message reachable from ``root`` (pre-order)."""
    out: list[Message] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append(m)
        for f in m._SPEC.fields:
            if f.kind != "message":
                continue
            v = getattr(m, f.name)
            if f.repeated:
                stack.extend(v)
            elif v is not None:
                stack.append(v)
    return out


def _value(rng: random.Random, f: Any, pool: list[Message]) -> Any:
    if f.kind == "message":
        cls = MESSAGE_CLASSES[f.type]
        same = [m for m in pool if type(m) is cls]
        pick = rng.choice(same) if same and rng.random() < 0.5 else cls()
        if f.repeated:
            return [pick] * rng.randint(0, 2)
        return None if rng.random() < 0.3 else pick
    if f.type in ("string",):
        v: Any = rng.choice(_STRINGS)
    elif f.type == "bytes":
        v = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
    elif f.type in ("float", "double"):
        v = rng.choice([0.0, 1.5, -2.0, float("nan"), float("inf")])
    elif f.type == "uint64":
        v = rng.choice([0, 1, 2**64 - 1])
    else:
        v = rng.choice(_INTS)
    if f.repeated:
        return [v] * rng.randint(0, 5) if f.type != "bytes" else [v]
    return v


def mutate(root: Message, rng: random.Random, n: int = 3) -> None:
    """Apply ``n`` random field changes anywhere in ``root`` (in place)."""
    for _ in range(n):
        pool = messages(root)
        msg = rng.choice(pool)
        spec = MESSAGE_SPECS[msg._SPEC.name]
        f = rng.choice(spec.fields)
        if rng.random() < 0.2:
            msg.clear_field(f.name)
            continue
        try:
            setattr(msg, f.name, _value(rng, f, pool))
        except (TypeError, ValueError):
            pass
