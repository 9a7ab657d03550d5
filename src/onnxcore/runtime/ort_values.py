"""onnxruntime's ``OrtValue`` and ``IOBinding`` on the CPU, for :mod:`onnxcore.runtime.ort_api`.

An :class:`OrtValue` holds a value in the CPU's memory: a numpy array (made from a numpy array, it shares the
array's memory, as onnxruntime's CPU values do), or a list (a sequence) or a dict (a map) as a run returns them.
Only ``device_type='cpu'`` exists; another device is refused by name. An :class:`IOBinding` keeps the inputs and
outputs of a run: arrays, OrtValues, or CPU addresses (``buffer_ptr``, read and written in place through ctypes,
as onnxruntime does with them: the caller keeps that memory alive and sized).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.capi.onnxruntime_pybind11_state import Fail, InvalidArgument
from onnxcore.proto import TensorProto
from onnxcore.types import ElementType
from onnxcore.types.typestr import ELEM_NAMES

__all__ = ["IOBinding", "OrtValue", "check_device"]

_STRING = int(TensorProto.DataType.STRING)


def check_device(device_type: Any, where: str) -> None:
    """Refuse a device other than the CPU, by name.

    Raises:
        InvalidArgument: ``device_type`` is not ``'cpu'`` (in any case).
    """
    if str(device_type).lower() != "cpu":
        raise InvalidArgument(
            f"{where}: device_type {device_type!r} is not available in onnxcore, which evaluates on the CPU only "
            "(device_type='cpu')"
        )


def _elem_of_dtype(dtype: np.dtype[Any]) -> int:
    if dtype.kind in "OUS":
        return _STRING
    try:
        return int(ElementType.from_dtype(dtype))
    except Exception as exc:  # the types layer's own error for a dtype ONNX has no element type for
        raise InvalidArgument(f"numpy dtype {dtype} has no ONNX element type ({exc})") from None


def _dtype_of(element_type: Any) -> np.dtype[Any]:
    """A numpy dtype from onnxruntime's ``element_type``: a numpy type or dtype, or an ONNX element type tag."""
    if isinstance(element_type, int | np.integer) and not isinstance(element_type, bool):
        try:
            return np.dtype(ElementType(int(element_type)).np_dtype)
        except Exception:  # an unknown tag: refused below by name
            raise InvalidArgument(f"element type {element_type} is not an ONNX element type (Table 5)") from None
    try:
        return np.dtype(element_type)
    except TypeError:
        raise InvalidArgument(f"element_type {element_type!r} is neither a numpy type nor an ONNX tag") from None


def _type_string(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"tensor({ELEM_NAMES.get(_elem_of_dtype(value.dtype), 'undefined')})"
    if isinstance(value, list):
        return f"seq({_type_string(value[0])})" if value else "seq(tensor(undefined))"
    if isinstance(value, dict):
        if not value:
            return "map(undefined,tensor(undefined))"
        k, v = next(iter(value.items()))
        key = "string" if isinstance(k, str | bytes) else "int64"
        inner = _type_string(v) if isinstance(v, np.ndarray | list | dict) else ("tensor(float)")
        return f"map({key},{inner})"
    return "undefined"


class OrtValue:
    """A value on the CPU, as onnxruntime's ``OrtValue`` (module docstring).

    Make one with :meth:`ortvalue_from_numpy` or :meth:`ortvalue_from_shape_and_type`; runs with
    ``run_with_ort_values`` and ``IOBinding.get_outputs()`` return them.
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    @staticmethod
    def ortvalue_from_numpy(
        numpy_obj: Any, device_type: str = "cpu", device_id: int = 0, vendor_id: int = -1
    ) -> OrtValue:
        """An OrtValue of a numpy array, sharing its memory (a C-contiguous copy when it is not contiguous).

        Raises:
            InvalidArgument: a device other than the CPU, or not a numpy array.
        """
        check_device(device_type, "ortvalue_from_numpy")
        if not isinstance(numpy_obj, np.ndarray):
            raise InvalidArgument(f"ortvalue_from_numpy: expected a numpy array, got {type(numpy_obj).__name__}")
        _elem_of_dtype(numpy_obj.dtype)
        return OrtValue(np.ascontiguousarray(numpy_obj))

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data: Any, onnx_element_type: int) -> OrtValue:
        """An OrtValue of a numpy array holding ``onnx_element_type`` (an ONNX tag) in its memory.

        Raises:
            InvalidArgument: the array's item size differs from the element type's.
        """
        want = _dtype_of(onnx_element_type)
        arr = np.ascontiguousarray(data)
        if arr.dtype != want:
            if arr.dtype.itemsize != want.itemsize:
                raise InvalidArgument(
                    f"ortvalue_from_numpy_with_onnx_type: items of {arr.dtype} cannot hold element type "
                    f"{onnx_element_type} ({want})"
                )
            arr = arr.view(want)
        return OrtValue(arr)

    @staticmethod
    def ortvalue_from_shape_and_type(
        shape: Sequence[int],
        element_type: Any = np.float32,
        device_type: str = "cpu",
        device_id: int = 0,
        vendor_id: int = -1,
    ) -> OrtValue:
        """A new zero-filled OrtValue of ``shape`` and ``element_type`` (a numpy type or an ONNX tag).

        Raises:
            InvalidArgument: a device other than the CPU, a negative extent, an unknown element type.
        """
        check_device(device_type, "ortvalue_from_shape_and_type")
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise InvalidArgument(f"ortvalue_from_shape_and_type: negative extent in shape {dims}")
        return OrtValue(np.zeros(dims, dtype=_dtype_of(element_type)))

    def numpy(self) -> Any:
        """The value: the array itself for a tensor (writing into it writes into the OrtValue), a list for a
        sequence, a dict for a map."""
        return self._value

    def shape(self) -> list[int]:
        """The tensor's shape.

        Raises:
            InvalidArgument: the value is not a tensor.
        """
        if not isinstance(self._value, np.ndarray):
            raise InvalidArgument(f"shape(): the OrtValue holds a {_type_string(self._value)}, not a tensor")
        return list(self._value.shape)

    def data_type(self) -> str:
        """The value's type string: ``'tensor(float)'``, ``'seq(tensor(int64))'``, ``'map(string,tensor(float))'``."""
        return _type_string(self._value)

    def element_type(self) -> int:
        """The tensor's ONNX element type tag (``TensorProto.FLOAT`` is 1), as onnxruntime 1.31 gives it.

        Raises:
            InvalidArgument: the value is not a tensor.
        """
        if not isinstance(self._value, np.ndarray):
            raise InvalidArgument(f"element_type(): the OrtValue holds a {_type_string(self._value)}, not a tensor")
        return _elem_of_dtype(self._value.dtype)

    def device_name(self) -> str:
        """``'cpu'``."""
        return "cpu"

    def has_value(self) -> bool:
        """Whether it holds a value (an absent optional holds None)."""
        return self._value is not None

    def is_tensor(self) -> bool:
        """Whether it holds a tensor."""
        return isinstance(self._value, np.ndarray)

    def is_tensor_sequence(self) -> bool:
        """Whether it holds a sequence of tensors."""
        return isinstance(self._value, list)

    def is_sparse_tensor(self) -> bool:
        """False: sparse tensors are not OrtValues here."""
        return False

    def tensor_size_in_bytes(self) -> int:
        """The tensor's size in octets (for a STRING tensor, its references')."""
        return int(self._value.nbytes) if isinstance(self._value, np.ndarray) else 0

    def data_ptr(self) -> int:
        """The address of the tensor's first element (CPU memory).

        Raises:
            InvalidArgument: the value is not a tensor.
        """
        if not isinstance(self._value, np.ndarray):
            raise InvalidArgument("data_ptr(): the OrtValue does not hold a tensor")
        return int(self._value.ctypes.data)

    def update_inplace(self, np_arr: Any) -> None:
        """Copy ``np_arr`` into the tensor's memory.

        Raises:
            InvalidArgument: the value is not a tensor, or ``np_arr`` differs in dtype or element count.
        """
        value = self._value
        src = np.asarray(np_arr)
        if not isinstance(value, np.ndarray) or src.dtype != value.dtype or src.size != value.size:
            raise InvalidArgument(
                f"update_inplace: {src.dtype}{list(src.shape)} does not fit the OrtValue's {self.data_type()}"
            )
        value.reshape(-1)[...] = src.reshape(-1)

    def as_sparse_tensor(self) -> Any:
        """Not provided.

        Raises:
            InvalidArgument: always (the value is not a sparse tensor).
        """
        raise InvalidArgument("as_sparse_tensor(): the OrtValue does not hold a sparse tensor")

    def __repr__(self) -> str:
        return f"OrtValue({self.data_type()}, device='cpu')"


def _from_address(ptr: int, dtype: np.dtype[Any], shape: Sequence[int]) -> np.ndarray:
    """The array at a CPU address (memory the caller owns, as onnxruntime takes ``buffer_ptr``)."""
    if dtype.kind == "O":
        raise InvalidArgument("a STRING tensor cannot be bound by address; bind a numpy array or an OrtValue")
    dims = [int(d) for d in shape]
    count = int(np.prod(dims, dtype=np.int64))
    if count and not ptr:
        raise InvalidArgument("buffer_ptr is 0 (a null address)")
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(ptr))
    return np.frombuffer(memoryview(buf), dtype=dtype, count=count).reshape(dims)


class IOBinding:
    """The inputs and outputs of a run bound ahead of it (onnxruntime's ``IOBinding``), on the CPU only.

    Made by ``InferenceSession.io_binding()``; run with ``InferenceSession.run_with_iobinding``. An output bound
    to memory (an OrtValue or a ``buffer_ptr``) receives the run's result in place; an output bound by name only
    is a new OrtValue after each run.
    """

    def __init__(self, input_names: Sequence[str], output_names: Sequence[str], known: Callable[[str], bool]) -> None:
        self._input_names = list(input_names)
        self._output_names = list(output_names)
        self._known = known
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, OrtValue | None] = {}
        self._results: list[OrtValue] = []

    def _input(self, name: str) -> None:
        if name not in self._input_names:
            raise InvalidArgument(f"bind: {name!r} is not an input of the model; inputs: {self._input_names}")

    def _output(self, name: str) -> None:
        if not self._known(name):
            raise InvalidArgument(f"bind: {name!r} is not a value of the model; outputs: {self._output_names}")

    def bind_cpu_input(self, name: str, arr_on_cpu: Any) -> None:
        """Bind a value in the CPU's memory (a numpy array, a list, a dict) to an input."""
        self._input(name)
        self._inputs[name] = arr_on_cpu

    def bind_input(
        self,
        name: str,
        device_type: str,
        device_id: int,
        element_type: Any,
        shape: Sequence[int],
        buffer_ptr: int,
    ) -> None:
        """Bind the tensor at a CPU address to an input (read when the run starts).

        Raises:
            InvalidArgument: an unknown input, a device other than the CPU.
        """
        self._input(name)
        check_device(device_type, f"bind_input({name!r})")
        self._inputs[name] = _from_address(buffer_ptr, _dtype_of(element_type), shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        """Bind an OrtValue to an input."""
        self._input(name)
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"bind_ortvalue_input({name!r}): expected an OrtValue, got {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue.numpy()

    def bind_output(
        self,
        name: str,
        device_type: str = "cpu",
        device_id: int = 0,
        element_type: Any = None,
        shape: Sequence[int] | None = None,
        buffer_ptr: int | None = None,
    ) -> None:
        """Bind an output: by name (a new OrtValue each run), or to a tensor at a CPU address.

        Raises:
            InvalidArgument: an unknown output, a device other than the CPU, a ``buffer_ptr`` without
                ``element_type`` and ``shape``.
        """
        self._output(name)
        check_device(device_type, f"bind_output({name!r})")
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise InvalidArgument(f"bind_output({name!r}): a buffer_ptr needs its element_type and shape")
        self._outputs[name] = OrtValue(_from_address(buffer_ptr, _dtype_of(element_type), shape))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Bind an output to an OrtValue: the run writes its result into it (same dtype and shape)."""
        self._output(name)
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(
                f"bind_ortvalue_output({name!r}): expected an OrtValue, got {type(ortvalue).__name__}"
            )
        self._outputs[name] = ortvalue

    def clear_binding_inputs(self) -> None:
        """Forget the bound inputs."""
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        """Forget the bound outputs (and the last run's results)."""
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def get_outputs(self) -> list[OrtValue]:
        """The last run's outputs, in the order they were bound."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> list[OrtValue]:
        """The last run's outputs (a list: onnxruntime's vector type is a list here)."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[Any]:
        """Copies of the last run's outputs (numpy arrays; lists and dicts as they are)."""
        return [v.numpy().copy() if v.is_tensor() else v.numpy() for v in self._results]

    @property
    def bound_inputs(self) -> dict[str, Any]:
        """The bound inputs by name (the run's feeds)."""
        return dict(self._inputs)

    @property
    def bound_outputs(self) -> list[str]:
        """The bound output names, in order."""
        return list(self._outputs)

    def deliver(self, values: Sequence[Any]) -> None:
        """Keep a run's outputs (in :attr:`bound_outputs` order), writing each into its bound memory if any.

        Raises:
            Fail: a result whose dtype or shape differs from the memory bound for it.
        """
        results: list[OrtValue] = []
        for (name, target), value in zip(self._outputs.items(), values):
            if target is None:
                results.append(OrtValue(value))
                continue
            dest = target.numpy()
            if not isinstance(value, np.ndarray) or dest.dtype != value.dtype or dest.shape != value.shape:
                got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
                raise Fail(
                    f"output {name!r}: the run computed {got}, the bound memory is {dest.dtype}{list(dest.shape)}"
                )
            dest[...] = value
            results.append(target)
        self._results = results
