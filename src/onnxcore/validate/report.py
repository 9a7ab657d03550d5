"""Findings and the report of a validation run (Clause 10.5)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from onnxcore.errors import ValidationError

__all__ = ["Finding", "Report", "ERROR", "WARNING"]

ERROR = "error"
WARNING = "warning"


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """One condition detected by the validator.

    Attributes:
        severity: ``"error"`` (the model does not conform) or ``"warning"`` (it conforms but relies
            on behaviour the spec leaves open, or uses something the spec discourages), Clause 10.5.
        code: The stable code of the rule that found it, e.g. ``"E-TOPO-ORDER"``.
        clause: The clause of Part 1 the condition breaks, e.g. ``"7.5"``.
        message: What is wrong, in words.
        location: A readable path to the offending item, e.g. ``graph/node[12] "conv1"/input[2]``.
    """

    severity: str
    code: str
    clause: str
    message: str
    location: str

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{self.severity} {self.code} (clause {self.clause}) {where}{self.message}"

    def to_dict(self) -> dict[str, str]:
        """The finding as a plain dict (the JSON form)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(slots=True)
class Report:
    """Every finding of one validation run, in the order the rules reported them.

    Attributes:
        findings: All findings, errors and warnings together.
        source: What was checked (a path, or ``"<model>"``), for display.
    """

    findings: list[Finding] = dataclasses.field(default_factory=list)
    source: str = "<model>"

    @property
    def errors(self) -> list[Finding]:
        """The findings of severity ``"error"``."""
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        """The findings of severity ``"warning"``."""
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        """Whether the model conforms: no error findings (warnings allowed)."""
        return not any(f.severity == ERROR for f in self.findings)

    def codes(self) -> set[str]:
        """The distinct codes reported."""
        return {f.code for f in self.findings}

    def raise_for_errors(self) -> None:
        """Raise :class:`onnxcore.ValidationError` (with this report as ``.report``) if there are errors."""
        errors = self.errors
        if errors:
            head = "; ".join(str(f) for f in errors[:3])
            more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
            raise ValidationError(f"model does not conform: {len(errors)} error(s): {head}{more}", self)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data: source, ok, counts and the findings."""
        return {
            "source": self.source,
            "ok": self.ok,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as a JSON document (see :meth:`to_dict`)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def __str__(self) -> str:
        n_err, n_warn = len(self.errors), len(self.warnings)
        status = "conforms" if n_err == 0 else "does not conform"
        lines = [f"{self.source}: {status} ({n_err} error(s), {n_warn} warning(s))"]
        lines.extend(f"  {f}" for f in self.findings)
        return "\n".join(lines)
