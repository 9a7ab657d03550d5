"""Writing an optimized model: atomically, its external data beside it (Clause 13).

A model that had external data, or whose serialized size reaches :data:`EXTERNAL_FROM` (protobuf's 2 GiB limit,
which other readers keep), is written with its tensors of 1 KiB or more in one data file beside the output
(``<name>.data``). Tensors the optimizer did not touch are still views of the source's memory-mapped files: they are
copied file to file (``copy_file_range`` where the platform has it), never loaded whole, and the output never refers
to the source's files. Both files go to temporaries renamed into place, the model last, so a failure leaves no
partial file (:func:`onnxcore.save`).
"""

from __future__ import annotations

import os

from onnxcore.external import has_external_tensors
from onnxcore.io import save
from onnxcore.proto import ModelProto
from onnxcore.runtime.rewrite_model import model_size

__all__ = ["EXTERNAL_FROM", "save_optimized"]

EXTERNAL_FROM = (1 << 31) - (1 << 20)
"""Serialized bytes from which a model is written with external data even if it had none (2 GiB, less room)."""


def save_optimized(model: ModelProto, path: str | os.PathLike[str], *, external: bool | None = None) -> bool:
    """Write ``model`` to ``path`` atomically (module docstring); whether its data went to an external file.

    Args:
        model: The model (its external tensors resolved, as :func:`onnxcore.load` gives them, or inline).
        path: The output file; the data file is ``<path>.data`` beside it.
        external: Force external data on or off; None decides as the module docstring says.

    Raises:
        OSError: the files cannot be written (nothing is left at ``path``).
    """
    if external is None:
        external = has_external_tensors(model) or model_size(model) >= EXTERNAL_FROM
    if external:
        save(model, path, external_data=True, location=f"{os.path.basename(os.fspath(path))}.data")
    else:
        save(model, path)
    return external
