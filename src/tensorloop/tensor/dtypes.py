"""Element types: the closed set tensorloop knows, with NumPy equivalents and short names."""

from __future__ import annotations

import builtins
import enum
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import GraphError


class DType(enum.Enum):
    """An element type. The value is the canonical long name.

    The narrow floats and the 4- and 2-bit integers are ml_dtypes' NumPy types, one element per
    byte in memory (ONNX packs the sub-byte ones only in serialized tensors). ``string`` tensors
    are NumPy object arrays holding Python ``str``.
    """

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
    float8e4m3fn = "float8e4m3fn"
    float8e4m3fnuz = "float8e4m3fnuz"
    float8e5m2 = "float8e5m2"
    float8e5m2fnuz = "float8e5m2fnuz"
    float8e8m0 = "float8e8m0"
    float4e2m1 = "float4e2m1"
    int4 = "int4"
    uint4 = "uint4"
    int2 = "int2"
    uint2 = "uint2"
    string = "string"

    _np: np.dtype[Any]
    """NumPy's dtype, set on each member below: read on every run, so no enum hash per read."""

    @property
    def numpy(self) -> np.dtype[Any]:
        return self._np

    @property
    def short(self) -> str:
        return _SHORT[self]

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (sub-byte types take a whole byte; strings a pointer)."""
        return int(self.numpy.itemsize)

    @property
    def bits(self) -> int:
        """The width of one element as ONNX packs it: 4 for int4, 2 for int2, ... (0: string)."""
        return _BITS.get(self, 8 * self.itemsize)

    @property
    def is_float(self) -> builtins.bool:
        return self in _FLOATS

    @property
    def is_int(self) -> builtins.bool:
        return bool(self.value.startswith(("int", "uint")))

    @property
    def is_numeric(self) -> builtins.bool:
        """A number type: neither bool nor string."""
        return self.is_float or self.is_int

    @property
    def is_signed(self) -> builtins.bool:
        """True if the type holds negative numbers (float8e8m0 holds only powers of two > 0)."""
        return (self.is_float and self is not DType.float8e8m0) or self.value.startswith("int")

    def __repr__(self) -> str:
        return f"DType.{self.value}"

    def __str__(self) -> str:
        return self.short


# The ml_dtypes type of each type NumPy lacks; the rest are NumPy's own, named like the DType.
_ML_DTYPES: dict[DType, type] = {
    DType.bfloat16: ml_dtypes.bfloat16,
    DType.float8e4m3fn: ml_dtypes.float8_e4m3fn,
    DType.float8e4m3fnuz: ml_dtypes.float8_e4m3fnuz,
    DType.float8e5m2: ml_dtypes.float8_e5m2,
    DType.float8e5m2fnuz: ml_dtypes.float8_e5m2fnuz,
    DType.float8e8m0: ml_dtypes.float8_e8m0fnu,
    DType.float4e2m1: ml_dtypes.float4_e2m1fn,
    DType.int4: ml_dtypes.int4,
    DType.uint4: ml_dtypes.uint4,
    DType.int2: ml_dtypes.int2,
    DType.uint2: ml_dtypes.uint2,
    DType.string: object,
}
_TO_NUMPY: dict[DType, np.dtype[Any]] = {d: np.dtype(_ML_DTYPES.get(d, d.value)) for d in DType}
for _member, _dtype in _TO_NUMPY.items():
    object.__setattr__(_member, "_np", _dtype)
_FLOATS = frozenset(
    {
        DType.float16,
        DType.bfloat16,
        DType.float32,
        DType.float64,
        DType.float8e4m3fn,
        DType.float8e4m3fnuz,
        DType.float8e5m2,
        DType.float8e5m2fnuz,
        DType.float8e8m0,
        DType.float4e2m1,
    }
)
_BITS: dict[DType, int] = {
    DType.float4e2m1: 4,
    DType.int4: 4,
    DType.uint4: 4,
    DType.int2: 2,
    DType.uint2: 2,
    DType.string: 0,
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
    DType.float8e4m3fn: "f8e4m3fn",
    DType.float8e4m3fnuz: "f8e4m3fnuz",
    DType.float8e5m2: "f8e5m2",
    DType.float8e5m2fnuz: "f8e5m2fnuz",
    DType.float8e8m0: "f8e8m0",
    DType.float4e2m1: "f4e2m1",
    DType.int4: "i4",
    DType.uint4: "u4",
    DType.int2: "i2",
    DType.uint2: "u2",
    DType.string: "str",
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
        hint = " (string tensors are object arrays of str)" if npd.kind in "US" else ""
        raise GraphError(f"unsupported element type {npd} (from {value!r}){hint}")
    return found


def from_numpy(array: np.ndarray[Any, Any] | np.generic) -> DType:
    """The DType of a NumPy array or scalar."""
    return dtype(array.dtype)


def int_range(dt: DType) -> tuple[int, int]:
    """The smallest and largest value of integer type ``dt``."""
    if dt.is_signed:
        return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
    return 0, (1 << dt.bits) - 1


def float_max(dt: DType) -> float:
    """The largest finite value of float type ``dt``."""
    return float(ml_dtypes.finfo(dt.numpy).max)  # type: ignore[no-untyped-call]


def string_array(items: Sequence[str], shape: Sequence[int] | None = None) -> np.ndarray[Any, Any]:
    """A string tensor: an object array holding ``items`` (one element each), of ``shape``."""
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out.reshape(len(items) if shape is None else tuple(shape))
