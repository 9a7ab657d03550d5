"""Headless Chromium for the browser tests (the report's, ``tests/report/``, and the site's, ``tests/docs/``).

Debian's ``chromium`` package driven by Playwright (the ``report`` extra); ``ONNXCORE_CHROMIUM`` names another
build. Tests skip, saying why, where either is missing or the browser does not start.
"""

from __future__ import annotations

import os

CHROMIUM = os.environ.get("ONNXCORE_CHROMIUM", "/usr/bin/chromium")  # Debian's package; another build by path
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
