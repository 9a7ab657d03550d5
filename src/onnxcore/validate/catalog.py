"""The rule registry: each rule is a small function with a stable code, a severity and a clause.

Rules are registered explicitly with the :func:`rule` decorator, in the modules that
:mod:`onnxcore.validate.checker` imports by name; nothing is discovered by scanning globals. The
order of registration is the order in which rules run, and so the order of the findings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from onnxcore.validate.context import Context
from onnxcore.validate.report import ERROR, WARNING

__all__ = ["CheckRule", "CHECK_RULES", "rule", "RuleFunc", "rules_by_code"]

# A rule yields (location, message) pairs; the runner turns them into Findings.
RuleFunc = Callable[["Context"], Iterable[tuple[str, str]]]


@dataclasses.dataclass(frozen=True, slots=True)
class CheckRule:
    """A registered rule.

    Attributes:
        code: Stable code, ``E-...`` for errors and ``W-...`` for warnings.
        severity: ``"error"`` or ``"warning"``.
        clause: The clause of Part 1 it enforces.
        summary: One line saying what it detects (used for docs/validation.md).
        func: The check itself.
        full_only: Whether it runs only with ``full=True`` (the type checks need the
            operator definitions and inference).
    """

    code: str
    severity: str
    clause: str
    summary: str
    func: RuleFunc
    full_only: bool = False


CHECK_RULES: list[CheckRule] = []


def rule(code: str, clause: str, summary: str, *, full_only: bool = False) -> Callable[[RuleFunc], RuleFunc]:
    """Register the decorated function as the rule ``code``; the severity follows the code's prefix."""
    if code.startswith("E-"):
        severity = ERROR
    elif code.startswith("W-"):
        severity = WARNING
    else:
        raise ValueError(f"rule code {code!r} must start with E- or W-")

    def deco(func: RuleFunc) -> RuleFunc:
        if any(r.code == code for r in CHECK_RULES):
            raise ValueError(f"rule code {code!r} registered twice")
        CHECK_RULES.append(CheckRule(code, severity, clause, summary, func, full_only))
        return func

    return deco


def rules_by_code() -> dict[str, CheckRule]:
    """Every registered rule, by code."""
    return {r.code: r for r in CHECK_RULES}
