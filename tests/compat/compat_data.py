"""The corpus scripts' local data: what they would otherwise take from onnxruntime's package or a download.

onnxruntime's documentation examples call ``onnxruntime.datasets.get_example(name)``, which returns the path of a
model shipped inside the onnxruntime wheel. A swapped script must not need onnxruntime, so the corpus keeps copies
of those three models (``data/``, MIT licence, from onnxruntime 1.31.1's ``onnxruntime/datasets``) and the
scripts' import of ``get_example`` is edited to this module (each script's header says so). The runner puts this
directory on the scripts' ``PYTHONPATH``.
"""

from __future__ import annotations

import os

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def get_example(name: str) -> str:
    """Return the absolute path of a model of the corpus's data directory, as onnxruntime's ``get_example`` does.

    Args:
        name: The file name, e.g. ``"logreg_iris.onnx"``.

    Returns:
        The absolute path.

    Raises:
        FileNotFoundError: No such file in the data directory (onnxruntime raises the same).
    """
    full = os.path.join(DATA_DIR, name)
    if not os.path.exists(full):
        raise FileNotFoundError(f"Unable to find example '{name}'")
    return full
