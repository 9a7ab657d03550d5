"""``onnxcore check MODEL...``: validate model files and print their reports (the arguments: cli/__init__.py).

Exit status: the worst over the models: 2 when a file cannot be read, 1 when a model has an error
finding, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from onnxcore.cli.files import sniff
from onnxcore.errors import OnnxCoreError
from onnxcore.io import load
from onnxcore.validate.checker import check
from onnxcore.validate.report import Report

__all__ = ["check_models", "cmd_check"]


def _check_one(path: str, *, full: bool, allow_outside: bool) -> Report:
    if allow_outside:
        # The opt-in of Clause 15.3: resolve the references here; what fails to load is checked from the
        # file as usual, so that its report says why.
        try:
            model = load(path, allow_outside=True)
        except (OSError, OnnxCoreError):
            return check(path, full=full)
        report = check(model, full=full)
        report.source = path
        return report
    return check(path, full=full)


def check_models(
    paths: list[str],
    *,
    as_json: bool = False,
    full: bool = True,
    errors_only: bool = False,
    allow_outside: bool = False,
) -> int:
    """Validate each file of ``paths`` and print its report, named by its file.

    A file that does not decode and looks like something else (a NumPy array, text, an image) is said
    to be no ONNX model first, before the findings.

    Args:
        paths: The model files.
        as_json: Print the report as JSON (one model: the report; several: a list of reports).
        full: Run the type checks too.
        errors_only: Omit warnings from the text report.
        allow_outside: Let external data lie outside the model directory (Clause 15.3).

    Returns:
        The worst exit status: 2 a file cannot be read, 1 a model has errors, 0 otherwise.
    """
    worst = 0
    docs: list[dict[str, Any]] = []
    for i, path in enumerate(paths):
        try:
            report = _check_one(path, full=full, allow_outside=allow_outside)
        except (OnnxCoreError, OSError) as e:
            text = str(e).strip()
            print(f"onnxcore check: {path}: {text.splitlines()[0] if text else type(e).__name__}", file=sys.stderr)
            worst = 2
            continue
        # Only a file that does not even decode is compared with other formats.
        decoded = not any(c.startswith("E-DECODE") for c in report.codes())
        kind = None if decoded else sniff(path)
        worst = max(worst, 0 if report.ok else 1)
        if as_json:
            doc = report.to_dict()
            if kind is not None:
                doc["not_onnx"] = f"looks like {kind}"
            docs.append(doc)
            continue
        if i:
            print()
        if kind is not None:
            print(f"{path}: not an ONNX model: looks like {kind}")
        if errors_only:
            lines = str(report).splitlines()
            print("\n".join([lines[0], *(f"  {f}" for f in report.errors)]))
        else:
            print(report)
    if as_json and len(paths) > 1:
        print(json.dumps(docs, indent=2, ensure_ascii=False))
    elif as_json and docs:
        print(json.dumps(docs[0], indent=2, ensure_ascii=False))
    return worst


def cmd_check(args: argparse.Namespace) -> int:
    """Validate models; exit 0 without errors, 1 with errors, 2 if one is unreadable (the worst of them)."""
    return check_models(
        args.model,
        as_json=args.json,
        full=not args.fast,
        errors_only=args.errors_only,
        allow_outside=args.allow_outside,
    )
