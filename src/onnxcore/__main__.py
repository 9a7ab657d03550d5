"""``python -m onnxcore``: the same as the ``onnxcore`` command."""

from __future__ import annotations

import sys

from onnxcore.cli import main

sys.exit(main())
