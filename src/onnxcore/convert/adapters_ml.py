"""Adapters of ai.onnx.ml: LabelEncoder-1's class list and LabelEncoder-2's key/value pairs.

The other ai.onnx.ml changes are attributes added with defaults (TreeEnsembleClassifier/Regressor-3's
``*_as_tensor``, LabelEncoder-4's tensor attributes) and type sets, which the generic step reconciles; the
definitions first published at 5 (TreeEnsemble) have no earlier form and are refused below 5.
"""

from __future__ import annotations

from onnxcore.convert.adapters import Refuse, adapter
from onnxcore.convert.version_step import Step

__all__: list[str] = []

ML = "ai.onnx.ml"


@adapter("LabelEncoder", 2, "up", domain=ML)
def label_encoder_classes_up(step: Step) -> None:
    """LabelEncoder-1 maps ``classes_strings[i]`` to ``i`` (string input) or ``i`` to it (int64 input); from 2
    the map is written out as keys and values."""
    classes = step.pop_attr("classes_strings") or []
    index = list(range(len(classes)))
    if step.type(step.input(0)) == "tensor(string)":
        step.set_attr("keys_strings", classes, attr_type=8)
        step.set_attr("values_int64s", index, attr_type=7)
        step.pop_attr("default_string")
        if not step.has_attr("default_int64"):
            step.set_attr("default_int64", -1)
    elif step.type(step.input(0)) == "tensor(int64)":
        step.set_attr("keys_int64s", index, attr_type=7)
        step.set_attr("values_strings", classes, attr_type=8)
        step.pop_attr("default_int64")
        if not step.has_attr("default_string"):
            step.set_attr("default_string", "_Unused")
    else:
        raise Refuse("the input's type is not known, so the direction of LabelEncoder-1's map is not either")


@adapter("LabelEncoder", 2, "down", domain=ML)
def label_encoder_classes_down(step: Step) -> None:
    """Back to LabelEncoder-1: only a string <-> index map over 0..n-1 is expressible."""
    ks, vi = step.pop_attr("keys_strings"), step.pop_attr("values_int64s")
    ki, vs = step.pop_attr("keys_int64s"), step.pop_attr("values_strings")
    step.pop_attr("default_float")
    if ks is not None and vi is not None and ki is None and vs is None and vi == list(range(len(ks))):
        step.set_attr("classes_strings", ks, attr_type=8)
        step.pop_attr("default_string")
    elif ki is not None and vs is not None and ks is None and vi is None and ki == list(range(len(vs))):
        step.set_attr("classes_strings", vs, attr_type=8)
        step.pop_attr("default_int64")
    else:
        raise Refuse("only a map between strings and their positions 0..n-1 is expressible in LabelEncoder-1")
    if step.has_attr("keys_floats") or step.has_attr("values_floats"):
        raise Refuse("float keys or values have no counterpart in LabelEncoder-1")
