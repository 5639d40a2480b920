"""Value types: TensorType(dtype, shape) with static and symbolic dims; sequences, optionals."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from ..errors import GraphError
from .dtypes import DType, DTypeLike, dtype

Dim: TypeAlias = int | str
"""A dimension: a non-negative int, a symbolic name (``"N"``), or ``"?"`` for anonymous unknown."""

UNKNOWN = "?"


def _check_dim(d: object) -> Dim:
    if isinstance(d, bool) or not isinstance(d, int | str | np.integer):
        raise GraphError(f"a dimension must be an int or a symbol name, got {d!r}")
    if isinstance(d, str):
        if not d or not (d == UNKNOWN or d.replace("_", "a").isalnum()):
            raise GraphError(f"bad symbolic dimension name {d!r}")
        return d
    if int(d) < 0:
        raise GraphError(f"a dimension must be non-negative, got {d}")
    return int(d)


class Type:
    """Base of all value types."""

    def compatible(self, other: Type) -> bool:
        """True if a value of type ``other`` may flow where this type is expected."""
        raise NotImplementedError

    def join(self, other: Type) -> Type:
        """The most specific type that covers both (used to widen loop-carried types)."""
        raise NotImplementedError


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor's element type and shape; ``shape=None`` means the rank is unknown."""

    dtype: DType
    shape: tuple[Dim, ...] | None = ()

    def __init__(self, dtype_: DTypeLike, shape: Iterable[object] | None = ()) -> None:
        object.__setattr__(self, "dtype", dtype(dtype_))
        object.__setattr__(
            self, "shape", None if shape is None else tuple(_check_dim(d) for d in shape)
        )

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def static_shape(self) -> tuple[int, ...]:
        if self.shape is None or not self.is_static:
            raise GraphError(f"type {self} has no static shape")
        return tuple(int(d) for d in self.shape)

    def numel(self) -> int | None:
        if not self.is_static:
            return None
        return int(np.prod(self.static_shape, dtype=np.int64))

    def with_shape(self, shape: Iterable[object] | None) -> TensorType:
        return TensorType(self.dtype, shape)

    def with_dtype(self, dtype_: DTypeLike) -> TensorType:
        return TensorType(dtype_, self.shape)

    def compatible(self, other: Type) -> bool:
        if not isinstance(other, TensorType) or other.dtype != self.dtype:
            return False
        if self.shape is None or other.shape is None:
            return True
        if len(self.shape) != len(other.shape):
            return False
        return all(
            a == b or not isinstance(a, int) or not isinstance(b, int)
            for a, b in zip(self.shape, other.shape, strict=True)
        )

    def join(self, other: Type) -> Type:
        if isinstance(other, OptionalType):
            return other.join(self)
        if not isinstance(other, TensorType) or other.dtype != self.dtype:
            raise GraphError(f"cannot join {self} with {other}")
        if self.shape is None or other.shape is None or len(self.shape) != len(other.shape):
            return TensorType(self.dtype, None)
        return TensorType(
            self.dtype,
            [a if a == b else UNKNOWN for a, b in zip(self.shape, other.shape, strict=True)],
        )

    def accepts(self, array: np.ndarray[Any, Any]) -> bool:
        """True if a concrete array has this type (symbolic dims match anything)."""
        if np.dtype(array.dtype) != self.dtype.numpy:
            return False
        if self.shape is None:
            return True
        return array.ndim == len(self.shape) and all(
            not isinstance(d, int) or d == n for d, n in zip(self.shape, array.shape, strict=True)
        )

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.dtype.short}[*]"
        return f"{self.dtype.short}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self) -> str:
        return f"TensorType({self})"


@dataclass(frozen=True)
class SequenceType(Type):
    """An ordered list of tensors of one element type (ONNX sequences)."""

    element: Type

    def compatible(self, other: Type) -> bool:
        return isinstance(other, SequenceType) and self.element.compatible(other.element)

    def join(self, other: Type) -> Type:
        if isinstance(other, OptionalType):
            return other.join(self)
        if not isinstance(other, SequenceType):
            raise GraphError(f"cannot join {self} with {other}")
        return SequenceType(self.element.join(other.element))

    def __str__(self) -> str:
        return f"seq<{self.element}>"


@dataclass(frozen=True)
class OptionalType(Type):
    """A value that may be absent (ONNX optionals): at run time None, or the element's value.

    Since a present optional is its element's value, a value of the element type may flow where
    the optional is expected, and joining the two gives the optional.
    """

    element: Type

    def compatible(self, other: Type) -> bool:
        inner = other.element if isinstance(other, OptionalType) else other
        return self.element.compatible(inner)

    def join(self, other: Type) -> Type:
        inner = other.element if isinstance(other, OptionalType) else other
        return OptionalType(self.element.join(inner))

    def __str__(self) -> str:
        return f"opt<{self.element}>"


def tensor_type_of(array: np.ndarray[Any, Any] | np.generic) -> TensorType:
    """The exact static type of a concrete array."""
    return TensorType(array.dtype, np.shape(array))


def scalar(dtype_: DTypeLike) -> TensorType:
    return TensorType(dtype_, ())


def shape_str(shape: Sequence[Dim] | None) -> str:
    return "[*]" if shape is None else f"[{','.join(str(d) for d in shape)}]"


def normalize_axis(
    axis: int,
    rank: int,
    where: str = "",
    *,
    error: Callable[[str], Exception] = GraphError,
    allow_end: bool = False,
) -> int:
    """``axis`` in [-rank, rank) mapped to [0, rank) (``allow_end``: [-rank, rank] to
    [0, rank], for ops that split before an axis); otherwise ``error(message)`` is raised, the
    message naming ``where``. The one place that normalizes axes: type rules, kernels, formats
    and passes all call it, each passing the error type of its layer."""
    if not -rank <= axis < rank + allow_end:
        prefix = f"{where}: " if where else ""
        span = f"[{-rank}, {rank}]" if allow_end else f"for rank {rank}"
        raise error(f"{prefix}axis {axis} is out of range {span}")
    return axis + rank if axis < 0 else axis
