"""Element types: the closed set tensorloop knows, with NumPy equivalents and short names."""

from __future__ import annotations

import builtins
import enum
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import GraphError


class DType(enum.Enum):
    """An element type. The value is the canonical long name."""

    bool = "bool"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"

    @property
    def numpy(self) -> np.dtype[Any]:
        return _TO_NUMPY[self]

    @property
    def short(self) -> str:
        return _SHORT[self]

    @property
    def itemsize(self) -> int:
        return int(self.numpy.itemsize)

    @property
    def is_float(self) -> builtins.bool:
        return self in (DType.float16, DType.bfloat16, DType.float32, DType.float64)

    @property
    def is_int(self) -> builtins.bool:
        return self.value.startswith(("int", "uint"))

    @property
    def is_signed(self) -> builtins.bool:
        return self.is_float or self.value.startswith("int")

    def __repr__(self) -> str:
        return f"DType.{self.value}"

    def __str__(self) -> str:
        return self.short


_TO_NUMPY: dict[DType, np.dtype[Any]] = {
    d: np.dtype(ml_dtypes.bfloat16) if d is DType.bfloat16 else np.dtype(d.value) for d in DType
}
_SHORT: dict[DType, str] = {
    DType.bool: "bool",
    DType.int8: "i8",
    DType.int16: "i16",
    DType.int32: "i32",
    DType.int64: "i64",
    DType.uint8: "u8",
    DType.uint16: "u16",
    DType.uint32: "u32",
    DType.uint64: "u64",
    DType.float16: "f16",
    DType.bfloat16: "bf16",
    DType.float32: "f32",
    DType.float64: "f64",
}
_BY_NAME: dict[str, DType] = {
    **{d.value: d for d in DType},
    **{s: d for d, s in _SHORT.items()},
}
_FROM_NUMPY: dict[np.dtype[Any], DType] = {v: k for k, v in _TO_NUMPY.items()}

DTypeLike = DType | str | np.dtype[Any] | type


def dtype(value: DTypeLike) -> DType:
    """Coerce a DType, a long or short name, a NumPy dtype or a scalar type to a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        npd = np.dtype(value)
    except TypeError:
        raise GraphError(f"unknown element type {value!r}") from None
    found = _FROM_NUMPY.get(npd)
    if found is None:
        raise GraphError(f"unsupported element type {npd} (from {value!r})")
    return found


def from_numpy(array: np.ndarray[Any, Any] | np.generic) -> DType:
    """The DType of a NumPy array or scalar."""
    return dtype(array.dtype)
