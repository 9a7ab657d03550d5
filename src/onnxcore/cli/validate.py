"""``onnxcore check MODEL [--json]``: validate a model file and print the report.

Exit status: 0 when the model has no error finding, 1 when it has, 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import sys

from onnxcore.errors import OnnxCoreError
from onnxcore.validate.runner import check

__all__ = ["main", "build_parser"]


def build_parser(prog: str = "onnxcore check") -> argparse.ArgumentParser:
    """The argument parser of the ``check`` command."""
    p = argparse.ArgumentParser(prog=prog, description="Validate an ONNX model (Clause 10) and report every finding.")
    p.add_argument("model", help="path to the .onnx file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--fast", action="store_true", help="skip the type checks (full=False)")
    p.add_argument("--errors-only", action="store_true", help="omit warnings from the text report")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``onnxcore check``; returns the exit status (0 ok, 1 errors, 2 unreadable file)."""
    args = build_parser().parse_args(argv)

    try:
        report = check(args.model, full=not args.fast)
    except (OnnxCoreError, OSError) as e:
        print(f"onnxcore check: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(report.to_json())
    elif args.errors_only:
        lines = str(report).splitlines()
        print("\n".join([lines[0], *(f"  {f}" for f in report.errors)]))
    else:
        print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
