from __future__ import annotations
from typing import Any
def load_results() -> Any:
    return {}
def render(results: Any) -> str:
    return "# Performance\n"
