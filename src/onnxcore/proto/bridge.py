"""The onnx package's messages at our entry points: one conversion, by the octets (Clause 12).

onnxcore never imports onnx (nor protobuf). An object of onnx's is recognised by duck typing: it has
``SerializeToString`` and its class a protobuf ``DESCRIPTOR``, whose full name (``onnx.ModelProto``,
``onnx.TypeProto.Tensor``) names the Annex B message to decode its octets into. Every public entry point
that takes a message calls :func:`as_message` once at its start, so a user of onnx can hand us
``onnx.ModelProto`` (or ``TensorProto``, ``GraphProto``, ...) as they are.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard, TypeVar, overload

from onnxcore.errors import MessageTypeError
from onnxcore.proto.decoder import DEFAULT_MAX_DEPTH, MESSAGE_CLASSES, decode_message
from onnxcore.proto.encoder import encode_message
from onnxcore.proto.message import Message

__all__ = ["OnnxMessage", "as_message", "from_onnx", "is_onnx_message", "onnx_message_name", "to_onnx"]

M = TypeVar("M", bound=Message)
Expected = type[Message] | tuple[type[Message], ...]


class OnnxMessage(Protocol):
    """What our entry points ask of the onnx package's messages (for type checking): their octets."""

    def SerializeToString(self) -> bytes:  # protobuf's name
        """The message's octets (Clause 12)."""
        ...


def is_onnx_message(obj: object) -> TypeGuard[OnnxMessage]:
    """Whether ``obj`` looks like a protobuf message (onnx's): ``SerializeToString`` and a ``DESCRIPTOR``."""
    return (
        not isinstance(obj, Message)
        and callable(getattr(obj, "SerializeToString", None))
        and hasattr(type(obj), "DESCRIPTOR")
    )


def onnx_message_name(obj: object) -> str:
    """The Annex B name of a protobuf message (or message class): ``"ModelProto"``, ``"TypeProto.Tensor"``.

    The descriptor's full name less its package (``onnx.`` for onnx, another for a build of onnx with
    its own namespace); the class's own name when the descriptor says nothing usable.
    """
    cls = obj if isinstance(obj, type) else type(obj)
    desc: Any = getattr(cls, "DESCRIPTOR", None)
    full = getattr(desc, "full_name", None)
    if isinstance(full, str) and full:
        package = getattr(getattr(desc, "file", None), "package", "")
        if isinstance(package, str) and package and full.startswith(package + "."):
            return full[len(package) + 1 :]
        return full
    return cls.__name__


def _names(expected: Expected) -> str:
    classes = expected if isinstance(expected, tuple) else (expected,)
    names = [c._SPEC.name for c in classes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _refuse(obj: object, expected: Expected | None, caller: str | None) -> MessageTypeError:
    who = f"{caller} expects" if caller else "expected"
    want = f"a {_names(expected)}" if expected is not None else "an ONNX message"
    got = f"onnx's {onnx_message_name(obj)}" if is_onnx_message(obj) else type(obj).__name__
    return MessageTypeError(f"{who} {want} (onnxcore's or the onnx package's), got {got}")


@overload
def as_message(obj: object, expected: type[M], caller: str | None = None) -> M: ...
@overload
def as_message(
    obj: object, expected: tuple[type[Message], ...] | None = None, caller: str | None = None
) -> Message: ...
def as_message(obj: object, expected: Expected | None = None, caller: str | None = None) -> Message:
    """``obj`` as one of our messages: ours pass through (the same object), onnx's are decoded.

    Args:
        obj: An onnxcore message, or a protobuf message of the onnx package.
        expected: The message class (or classes) the caller takes; None takes any.
        caller: The public function's name, for the error message.

    Raises:
        MessageTypeError: ``obj`` is neither, or not of ``expected`` (the message names both); a
            ``TypeError`` and an ``OnnxCoreError``.
        DecodeError: the octets of an onnx object do not decode (they always should).
    """
    if isinstance(obj, Message):
        if expected is not None and not isinstance(obj, expected):
            raise _refuse(obj, expected, caller)
        return obj
    if not is_onnx_message(obj):
        raise _refuse(obj, expected, caller)
    cls = MESSAGE_CLASSES.get(onnx_message_name(obj))
    if cls is None or (expected is not None and not issubclass(cls, expected)):
        raise _refuse(obj, expected, caller)
    data = obj.SerializeToString()
    return decode_message(cls, data, max_depth=DEFAULT_MAX_DEPTH)


@overload
def from_onnx(obj: object, expected: type[M]) -> M: ...
@overload
def from_onnx(obj: object, expected: tuple[type[Message], ...] | None = None) -> Message: ...
def from_onnx(obj: object, expected: Expected | None = None) -> Message:
    """Convert an onnx package message (``onnx.ModelProto``, ``onnx.TensorProto``, ...) to onnxcore's.

    The object's octets (``SerializeToString``) are decoded into our class of the same Annex B name,
    so the result is a copy: changing it does not change the onnx object. One of our own messages
    is returned as it is. onnx itself is never imported.

    Args:
        obj: A message of the onnx package (or of onnxcore).
        expected: The class (or classes) of ours that ``obj`` must convert to, e.g.
            ``onnxcore.ModelProto``; None accepts any Annex B message.

    Returns:
        The onnxcore message.

    Raises:
        MessageTypeError: ``obj`` is not an ONNX message, or not of the ``expected`` class (a
            ``TypeError``).

    Example:
        >>> model = onnxcore.from_onnx(onnx.load("model.onnx"))  # doctest: +SKIP
    """
    return as_message(obj, expected, "from_onnx")


@overload
def to_onnx(msg: object, cls: None = None) -> bytes: ...
@overload
def to_onnx(msg: object, cls: type[Any]) -> Any: ...
def to_onnx(msg: object, cls: type[Any] | None = None) -> Any:
    """Our message for the onnx package: its octets, or an object of onnx's class ``cls``.

    onnxcore never imports onnx (not even at call time), so by default the result is the octets
    that ``onnx.load_from_string`` (or ``onnx.ModelProto.FromString``) reads. Given the onnx class,
    e.g. ``to_onnx(model, onnx.ModelProto)``, it returns that class's object, parsed from the octets.

    Args:
        msg: An onnxcore message (an onnx object is accepted too, and converted through its octets).
        cls: A protobuf message class of the onnx package with the same Annex B name as ``msg``.

    Returns:
        ``bytes``, or an object of ``cls``.

    Raises:
        TypeError: ``msg`` is not a message, or ``cls`` is not a protobuf class of the same name.
        EncodeError: ``msg`` holds a value that cannot be encoded.

    Example:
        >>> onnx_model = onnx.load_from_string(onnxcore.to_onnx(model))  # doctest: +SKIP
        >>> onnx_model = onnxcore.to_onnx(model, onnx.ModelProto)  # doctest: +SKIP
    """
    ours = as_message(msg, None, "to_onnx")
    data = encode_message(ours)
    if cls is None:
        return data
    parse = getattr(cls, "FromString", None)
    if not callable(parse) or not hasattr(cls, "DESCRIPTOR"):
        raise MessageTypeError(f"to_onnx: cls must be a protobuf message class such as onnx.ModelProto, got {cls!r}")
    name = onnx_message_name(cls)
    if name != ours._SPEC.name:
        raise MessageTypeError(f"to_onnx: cannot make onnx's {name} from a {ours._SPEC.name}")
    return parse(data)
