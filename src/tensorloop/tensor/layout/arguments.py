"""Argument types and checks shared by layouts and views: scalars, indices, ints and axes."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from types import EllipsisType
from typing import Any, TypeAlias

import numpy as np

from ..types import normalize_axis as _normalize
from .errors import LayoutError, LayoutIndexError

NDArray: TypeAlias = np.ndarray[Any, np.dtype[Any]]
Scalar: TypeAlias = bool | int | float
Index: TypeAlias = (
    int | builtins.slice | EllipsisType | tuple[int | builtins.slice | EllipsisType, ...]
)


def as_int(value: object, what: str) -> int:
    # bool is an int subclass, but True as a dimension or stride is always a caller bug.
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise LayoutError(f"{what} must be an int, got {value!r}")
    return int(value)


def as_ints(values: Iterable[object], what: str) -> tuple[int, ...]:
    if isinstance(values, int | np.integer):
        raise LayoutError(f"{what} must be a sequence of ints, got the scalar {values!r}")
    return tuple(as_int(v, what) for v in values)


def normalize_axis(axis: object, rank: int, what: str = "axis") -> int:
    a = as_int(axis, what)
    expected = f" (expected {-rank}..{rank - 1})"
    return _normalize(a, rank, error=lambda message: LayoutError(message + expected))


def normalize_axes(axes: Iterable[object], rank: int) -> tuple[int, ...]:
    given = tuple(axes)
    out = tuple(normalize_axis(a, rank) for a in given)
    if len(set(out)) != len(out):
        raise LayoutError(f"repeated axis in {given} (rank {rank})")
    return out


def normalize_index(index: Iterable[object], shape: tuple[int, ...]) -> tuple[int, ...]:
    index = as_ints(index, "an index component")
    if len(index) != len(shape):
        raise LayoutIndexError(f"expected an index of rank {len(shape)}, got {tuple(index)}")
    out = []
    for axis, (i, n) in enumerate(zip(index, shape, strict=True)):
        if not -n <= i < n:
            raise LayoutIndexError(
                f"index {i} is out of bounds for axis {axis} of size {n} (shape {shape})"
            )
        out.append(i + n if i < 0 else i)
    return tuple(out)
