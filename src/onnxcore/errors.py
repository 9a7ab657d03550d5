"""The exception hierarchy of onnxcore: every error we raise derives from :class:`OnnxCoreError`."""

from __future__ import annotations

__all__ = [
    "OnnxCoreError",
    "OnnxCoreWarning",
    "OutputShapeWarning",
    "ValidationWarning",
    "DecodeError",
    "EncodeError",
    "LimitError",
    "RunTimeoutError",
    "RunCancelledError",
    "DecodeLimitError",
    "TensorError",
    "ShapeError",
    "ValidationError",
    "ExternalDataError",
    "ExternalDataLimitError",
    "ExternalDataFileNotFoundError",
    "ExternalDataIsADirectoryError",
    "ExternalDataPermissionError",
    "MessageTypeError",
    "ModelFileError",
    "ModelFileNotFoundError",
    "ModelIsADirectoryError",
    "ModelPermissionError",
    "file_error",
    "InputError",
    "UnsupportedOperatorError",
    "EvaluationError",
    "UnknownOperatorError",
    "KernelNotFoundError",
    "KernelRegistrationError",
    "AdapterRegistrationError",
    "ConversionError",
    "OptimizeError",
    "Refusal",
]


class OnnxCoreError(Exception):
    """Root of every exception onnxcore raises on purpose."""


class DecodeError(OnnxCoreError, ValueError):
    """Malformed octets (Clause 12).

    Attributes:
        offset: Byte offset in the input where decoding failed.
        path: Field path from the root message, e.g. ``ModelProto.graph.node[12].attribute[0]``.
        reason: The rule that was broken, without location.
    """

    def __init__(self, reason: str, offset: int, path: str = "") -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.reason} (byte offset {self.offset}{where})"

    def add_parent(self, segment: str) -> None:
        """Prefix the field path with an enclosing segment while the error unwinds."""
        if not self.path:
            self.path = segment
        elif self.path.startswith("["):
            self.path = segment + self.path
        else:
            self.path = f"{segment}.{self.path}"
        self.args = (self._render(),)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.reason, self.offset, self.path))


class MessageTypeError(OnnxCoreError, TypeError):
    """An entry point was given an object that is not the message it takes (nor the onnx package's one)."""


class ModelFileError(OnnxCoreError, OSError):
    """A model file cannot be read: the message names the path.

    The three common causes are also the built-in exceptions Python raises for them, so
    ``except FileNotFoundError`` catches a missing model as it would with ``open``. ``errno``,
    ``strerror`` and ``filename`` are those of the underlying ``OSError``.
    """

    def __init__(self, message: str, errno: int | None = None, filename: str | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.strerror = message
        self.filename = filename

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.errno, self.filename))


class ModelFileNotFoundError(ModelFileError, FileNotFoundError):
    """The model file does not exist (a ``FileNotFoundError``)."""


class ModelIsADirectoryError(ModelFileError, IsADirectoryError):
    """The model path is a directory (an ``IsADirectoryError``)."""


class ModelPermissionError(ModelFileError, PermissionError):
    """The model file may not be read (a ``PermissionError``)."""


class EncodeError(OnnxCoreError, ValueError):
    """A message cannot be encoded (a value out of range for its field, a wrong type)."""


class LimitError(OnnxCoreError):
    """A documented resource limit was exceeded (Clause 15.4): a refusal, not a crash."""


class RunTimeoutError(LimitError, TimeoutError):
    """A run went past its deadline (``Session.run(..., timeout=)``) and was stopped (Clause 15.4)."""


class RunCancelledError(OnnxCoreError):
    """A run was cancelled from outside (``RunOptions.terminate``, or a ``cancel`` callable returning true)."""


class DecodeLimitError(DecodeError, LimitError):
    """Decoding refused because a resource limit (nesting depth, message size) was exceeded."""


class TensorError(OnnxCoreError, ValueError):
    """A tensor's contents disagree with its type and dims, or cannot be converted."""


class ShapeError(OnnxCoreError, ValueError):
    """Shapes that are not broadcastable, or otherwise incompatible (Clause 6.6)."""


class ValidationError(OnnxCoreError):
    """A model has error findings (Clause 10); ``.report`` holds them all."""

    def __init__(self, message: str, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class ExternalDataError(OnnxCoreError):
    """An external data reference was refused (Clauses 13, 15.3).

    Attributes:
        tensor: Name (or, for an unnamed tensor, the field path) of the tensor holding the reference.
        location: The ``location`` value of the reference, as written in the model (None if absent).
        rule: Identifier of the rule that refused it, e.g. ``"location-parent"`` or ``"symlink"``
            (the values of :class:`onnxcore.external.ReferenceRule`).
    """

    def __init__(
        self, message: str, *, tensor: str | None = None, location: str | None = None, rule: str | None = None
    ) -> None:
        super().__init__(message)
        self.tensor = tensor
        self.location = location
        self.rule = rule

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_external_error,
            (type(self), self.args[0] if self.args else "", self.tensor, self.location, self.rule),
        )


class ExternalDataLimitError(ExternalDataError, LimitError):
    """An external data file exceeds a documented resource limit (Clause 15.4)."""


class ExternalDataFileNotFoundError(ExternalDataError, FileNotFoundError):
    """A referenced external data file does not exist (a ``FileNotFoundError`` too)."""


class ExternalDataIsADirectoryError(ExternalDataError, IsADirectoryError):
    """A referenced external data location is a directory (an ``IsADirectoryError`` too)."""


class ExternalDataPermissionError(ExternalDataError, PermissionError):
    """A referenced external data file may not be read (a ``PermissionError`` too)."""


def file_error(exc: OSError, message: str, filename: str | None = None) -> ModelFileError:
    """The error of ours for a model file that cannot be read, also the built-in ``exc`` is an instance of.

    Args:
        exc: The ``OSError`` the read raised.
        message: Our message (naming the path).
        filename: The path (``exc.filename`` when None).
    """
    name = filename if filename is not None else exc.filename if isinstance(exc.filename, str) else None
    cls: type[ModelFileError] = ModelFileError
    if isinstance(exc, FileNotFoundError):
        cls = ModelFileNotFoundError
    elif isinstance(exc, IsADirectoryError):
        cls = ModelIsADirectoryError
    elif isinstance(exc, PermissionError):
        cls = ModelPermissionError
    return cls(message, exc.errno, name)


def _rebuild_external_error(
    cls: type[ExternalDataError], message: str, tensor: str | None, location: str | None, rule: str | None
) -> ExternalDataError:
    return cls(message, tensor=tensor, location=location, rule=rule)


class InputError(OnnxCoreError, ValueError):
    """A feed does not match the declared type or rank of a graph input."""


class UnsupportedOperatorError(OnnxCoreError):
    """Operators that have neither a kernel nor a function body (Clause 4.4, 16.1)."""

    def __init__(self, message: str, operators: list[tuple[str, str, int]] | None = None) -> None:
        super().__init__(message)
        self.operators = operators or []


class EvaluationError(OnnxCoreError):
    """An error inside a kernel, re-raised naming the node."""


class UnknownOperatorError(OnnxCoreError, LookupError):
    """No operator definition binds (domain, op_type) at the version asked for (Clause 14.3)."""


class KernelNotFoundError(UnsupportedOperatorError):
    """An operator that is defined, but that no kernel evaluates (Clause 4.4)."""


class KernelRegistrationError(OnnxCoreError, ValueError):
    """A kernel registration refused: its key already registered with another function and no ``replace=True``,
    no version given, or (in a kernel set) a version no definition has."""


class AdapterRegistrationError(OnnxCoreError, ValueError):
    """An operator set conversion adapter refused at registration: its key registered twice, or a version that is
    no since_version of the operator (the adapter would never be asked, Clause 14.3)."""


class Refusal:
    """One node an operator set conversion cannot rewrite (Clause 14): where, what and why.

    Attributes:
        location: The node's location (``graph/node[3] "name"``, ``functions[0] "d:f"/node[1]``).
        op_type: The operator, qualified by its domain when not ``ai.onnx``.
        from_version: The version of the definition the node binds to before conversion.
        to_version: The operator set version asked for.
        reason: Why the node cannot be expressed at ``to_version``.
    """

    __slots__ = ("from_version", "location", "op_type", "reason", "to_version")

    def __init__(self, location: str, op_type: str, from_version: int, to_version: int, reason: str) -> None:
        self.location = location
        self.op_type = op_type
        self.from_version = from_version
        self.to_version = to_version
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.location} ({self.op_type}-{self.from_version} -> opset {self.to_version}): {self.reason}"

    def __repr__(self) -> str:
        return f"Refusal({str(self)!r})"


class ConversionError(OnnxCoreError, ValueError):
    """An operator set conversion refused: every node that blocks it, all at once (nothing was rewritten).

    Attributes:
        refusals: One :class:`Refusal` per blocking node, in walk order.
    """

    def __init__(self, message: str, refusals: list[Refusal] | None = None) -> None:
        self.refusals = list(refusals or [])
        lines = [message] + [f"  {r}" for r in self.refusals]
        super().__init__("\n".join(lines))


class OptimizeError(OnnxCoreError, ValueError):
    """``onnxcore.optimize`` could not prove its result computes what the model computes (nothing is written).

    Attributes:
        pass_name: The pass whose switching off made the result agree (found by bisection), or None when no
            single pass is to blame (the model could not be evaluated, or the result does not conform).
    """

    def __init__(self, message: str, pass_name: str | None = None) -> None:
        super().__init__(message)
        self.pass_name = pass_name


class OnnxCoreWarning(UserWarning):
    """Base class of the warnings onnxcore issues (through :mod:`warnings`): something worth a word, not a refusal."""


class OutputShapeWarning(OnnxCoreWarning):
    """A graph output whose computed shape contradicts the shape the graph declares for it (Clause 9.4: a
    contradiction is reported; the result is still returned, as onnxruntime does, with a warning)."""


class ValidationWarning(OnnxCoreWarning):
    """Error findings (Clause 10) that the onnxruntime façade runs a model despite, as onnxruntime does: a graph
    output declared without a type or shape, a declared shape that contradicts the inferred one (Clause 9.4). The
    message names their codes; :class:`onnxcore.Session` refuses such models (its strict default)."""
