"""PaddedView: a complex view that shows a layout's elements inside and a fill value around them."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .arguments import Scalar, as_ints
from .errors import LayoutError, LayoutIndexError

if TYPE_CHECKING:
    from .strided import Layout


@dataclass(frozen=True)
class PaddedView:
    """A complex view: ``y[i] = x[i - before]`` inside the source region, ``fill`` elsewhere.

    The selection function picks between the source tensor and a constant tensor; ``source``
    is the (already cropped) layout of ``x`` and the pads are non-negative.
    """

    source: Layout
    before: tuple[int, ...]
    after: tuple[int, ...]
    fill: Scalar = 0

    def __post_init__(self) -> None:
        rank = self.source.rank
        if len(self.before) != rank or len(self.after) != rank:
            raise LayoutError(
                f"expected {rank} pads before and after, got {self.before} and {self.after}"
            )
        if any(p < 0 for p in self.before + self.after):
            raise LayoutError(
                f"a PaddedView's pads must be non-negative (crop with Layout.pad), "
                f"got {self.before} and {self.after}"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(
            b + n + a for b, n, a in zip(self.before, self.source.shape, self.after, strict=True)
        )

    @property
    def rank(self) -> int:
        return self.source.rank

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def interior(self) -> tuple[builtins.slice, ...]:
        """Where the source lands inside the padded result, as slices usable on an array."""
        return tuple(
            builtins.slice(b, b + n) for b, n in zip(self.before, self.source.shape, strict=True)
        )

    def translate(self, index: Iterable[object]) -> tuple[int, ...] | None:
        """``f(i)``: the source index of ``index``, or None where the fill value shows."""
        idx = as_ints(index, "an index component")
        shape = self.shape
        if len(idx) != len(shape):
            raise LayoutIndexError(f"expected an index of rank {len(shape)}, got {idx}")
        for axis, (i, n) in enumerate(zip(idx, shape, strict=True)):
            if not 0 <= i < n:
                raise LayoutIndexError(
                    f"index {i} is out of bounds for axis {axis} of size {n} (shape {shape})"
                )
        inner = tuple(i - b for i, b in zip(idx, self.before, strict=True))
        if all(0 <= j < n for j, n in zip(inner, self.source.shape, strict=True)):
            return inner
        return None

    def linear_index(self, index: Iterable[object]) -> int | None:
        """The buffer position behind ``index``, or None where the fill value shows."""
        inner = self.translate(index)
        return None if inner is None else self.source.linear_index(inner)
