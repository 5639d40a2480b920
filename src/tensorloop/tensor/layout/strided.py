"""Layout: where an n-d index lies in one linear buffer, and the views that are new Layouts."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .arguments import Scalar, as_int, as_ints, normalize_axes, normalize_axis
from .errors import LayoutError, LayoutIndexError
from .padded import PaddedView
from .strides import column_major_strides, linear_extent, nocopy_reshape_strides, row_major_strides


@dataclass(frozen=True, init=False)
class Layout:
    """How an n-d index maps to a linear element index: ``offset + dot(strides, index)``.

    ``sizes`` are the allocated extents per axis (``>= shape``): padding for alignment lives
    in the gap between them. Views keep the sizes of axes they pass through unchanged and use the
    view's own shape for axes they alter, since the allocation's padding no longer applies there.
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    sizes: tuple[int, ...]

    def __init__(
        self,
        shape: Iterable[object],
        strides: Iterable[object],
        offset: object = 0,
        sizes: Iterable[object] | None = None,
    ) -> None:
        shape_ = as_ints(shape, "a dimension")
        strides_ = as_ints(strides, "a stride")
        offset_ = as_int(offset, "the offset")
        sizes_ = shape_ if sizes is None else as_ints(sizes, "an allocated size")
        if len(strides_) != len(shape_):
            raise LayoutError(
                f"expected {len(shape_)} strides for shape {shape_}, "
                f"got {len(strides_)}: {strides_}"
            )
        if len(sizes_) != len(shape_):
            raise LayoutError(
                f"expected {len(shape_)} sizes for shape {shape_}, got {len(sizes_)}: {sizes_}"
            )
        if any(n < 0 for n in shape_):
            raise LayoutError(f"dimensions must be non-negative, got shape {shape_}")
        if any(z < n for z, n in zip(sizes_, shape_, strict=True)):
            raise LayoutError(f"allocated sizes {sizes_} must be >= shape {shape_} on every axis")
        if offset_ < 0:
            raise LayoutError(f"the offset must be non-negative, got {offset_}")
        if math.prod(shape_) > 0:
            lo, _ = linear_extent(shape_, strides_, offset_)
            if lo < 0:
                raise LayoutError(
                    f"shape {shape_} with strides {strides_} at offset {offset_} reaches linear "
                    f"index {lo}; every element must land at a non-negative index"
                )
        object.__setattr__(self, "shape", shape_)
        object.__setattr__(self, "strides", strides_)
        object.__setattr__(self, "offset", offset_)
        object.__setattr__(self, "sizes", sizes_)

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def row_major(cls, shape: Iterable[object], sizes: Iterable[object] | None = None) -> Layout:
        """Dense C-order layout; strides are partial products of ``sizes`` from the right."""
        shape_ = as_ints(shape, "a dimension")
        sizes_ = shape_ if sizes is None else as_ints(sizes, "an allocated size")
        if len(sizes_) != len(shape_):
            raise LayoutError(f"expected {len(shape_)} sizes for shape {shape_}, got {sizes_}")
        return cls(shape_, row_major_strides(sizes_), 0, sizes_)

    @classmethod
    def column_major(cls, shape: Iterable[object], sizes: Iterable[object] | None = None) -> Layout:
        """Dense Fortran-order layout; strides are partial products of ``sizes`` from the left."""
        shape_ = as_ints(shape, "a dimension")
        sizes_ = shape_ if sizes is None else as_ints(sizes, "an allocated size")
        if len(sizes_) != len(shape_):
            raise LayoutError(f"expected {len(shape_)} sizes for shape {shape_}, got {sizes_}")
        return cls(shape_, column_major_strides(sizes_), 0, sizes_)

    # -- queries ------------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def linear_index(self, index: Iterable[object]) -> int:
        """The buffer position of ``index``; each component must be in ``0 <= i < shape``."""
        idx = as_ints(index, "an index component")
        if len(idx) != self.rank:
            raise LayoutIndexError(f"expected an index of rank {self.rank}, got {idx}")
        for axis, (i, n) in enumerate(zip(idx, self.shape, strict=True)):
            if not 0 <= i < n:
                raise LayoutIndexError(
                    f"index {i} is out of bounds for axis {axis} of size {n} (shape {self.shape})"
                )
        return self.offset + sum(i * s for i, s in zip(idx, self.strides, strict=True))

    def extent(self) -> tuple[int, int]:
        """Half-open range ``[lo, hi)`` of linear indices the elements occupy (empty if no data)."""
        if self.numel == 0:
            return self.offset, self.offset
        return linear_extent(self.shape, self.strides, self.offset)

    def span(self) -> int:
        """Buffer elements from the lowest to the highest addressed element, inclusive."""
        lo, hi = self.extent()
        return hi - lo

    def storage_size(self) -> int:
        """Minimum buffer length (from index 0) that holds every element and the size padding."""
        needed = self.extent()[1] if self.numel else 0
        if math.prod(self.sizes) > 0:
            # Padding beyond the last element is still part of the allocation.
            needed = max(needed, linear_extent(self.sizes, self.strides, self.offset)[1])
        return needed

    @property
    def is_contiguous(self) -> bool:
        """Dense row-major: elements fill ``[offset, offset + numel)`` in C order (NumPy's rule)."""
        return self._dense_in_order(reversed(range(self.rank)))

    @property
    def is_column_major_contiguous(self) -> bool:
        """Dense column-major: elements fill ``[offset, offset + numel)`` in Fortran order."""
        return self._dense_in_order(range(self.rank))

    def _dense_in_order(self, axes: Iterable[int]) -> bool:
        if self.numel == 0:
            return True
        expected = 1
        for k in axes:
            n = self.shape[k]
            # A length-1 axis never moves, so its stride is irrelevant (as in NumPy).
            if n == 1:
                continue
            if self.strides[k] != expected:
                return False
            expected *= n
        return True

    @property
    def is_dense(self) -> bool:
        """No gaps and no aliasing: the elements occupy exactly ``span() == numel`` positions.

        Any axis order and stride signs qualify; this is what a single linear walk needs.
        """
        if self.numel == 0:
            return True
        moving = sorted((abs(s), n) for n, s in zip(self.shape, self.strides, strict=True) if n > 1)
        expected = 1
        for s, n in moving:
            if s != expected:
                return False
            expected *= n
        return True

    @property
    def has_broadcast(self) -> bool:
        """Whether several indices alias one element through a zero stride."""
        if self.numel == 0:
            return False
        return any(s == 0 and n > 1 for n, s in zip(self.shape, self.strides, strict=True))

    def same_linear_order(self, other: Layout) -> bool:
        """Same shape and the same strides on every axis that moves: offsets may differ.

        Then index ``i`` sits at ``self.offset + d(i)`` and ``other.offset + d(i)`` for one
        displacement ``d``, so one integer can address matching elements of both.
        """
        if self.shape != other.shape:
            return False
        if self.numel == 0:
            return True
        return all(
            a == b or n == 1
            for n, a, b in zip(self.shape, self.strides, other.strides, strict=True)
        )

    def can_flatten_with(self, other: Layout) -> bool:
        """Whether both tensors can be walked pairwise with one integer iterator.

        Needs the same linear order and no gaps in either; elements are then paired correctly
        even though the walk may visit them in a different order than n-d indexing.
        """
        return self.same_linear_order(other) and self.is_dense and other.is_dense

    def flatten(self, order: Literal["C", "storage"] = "C") -> Layout:
        """A 1-D layout over the same elements.

        ``"C"`` keeps row-major element order (``reshape(-1)``, so it needs a copy-free
        reshape). ``"storage"`` walks the buffer upwards from the lowest element with stride 1,
        which only requires :attr:`is_dense`; pair it with another layout only when
        :meth:`can_flatten_with` holds.
        """
        if order == "C":
            return self.reshape((self.numel,))
        if order == "storage":
            if not self.is_dense:
                raise LayoutError(
                    f"cannot flatten shape {self.shape} with strides {self.strides} in storage "
                    f"order: it is not dense (span {self.span()} for {self.numel} elements)"
                )
            return Layout((self.numel,), (1,), self.extent()[0])
        raise LayoutError(f"unknown flatten order {order!r} (expected 'C' or 'storage')")

    # -- simple views -------------------------------------------------------------------------

    def reshape(self, new_shape: int | Iterable[object]) -> Layout:
        """The same elements in row-major order under a new shape, without copying.

        One ``-1`` is inferred; a bare int means a 1-D shape. Raises :class:`LayoutError` when
        the strides cannot express the new shape (e.g. merging axes of a transposed view);
        materialise a copy first.
        """
        if isinstance(new_shape, int | np.integer):
            new_shape = (new_shape,)
        target = self._infer_shape(new_shape)
        if target == self.shape:
            return self
        if self.numel == 0:
            return Layout(target, row_major_strides(target), self.offset)
        strides = nocopy_reshape_strides(self.shape, self.strides, target)
        if strides is None:
            raise LayoutError(
                f"cannot reshape a view of shape {self.shape} with strides {self.strides} into "
                f"{target} without copying; materialise it (TensorView.copy()) first"
            )
        return Layout(target, strides, self.offset)

    def _infer_shape(self, new_shape: Iterable[object]) -> tuple[int, ...]:
        dims = as_ints(new_shape, "a dimension")
        unknown = [k for k, d in enumerate(dims) if d == -1]
        if len(unknown) > 1:
            raise LayoutError(f"only one dimension may be -1, got shape {dims}")
        if any(d < -1 for d in dims):
            raise LayoutError(f"dimensions must be non-negative or -1, got shape {dims}")
        if unknown:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self.numel % known:
                raise LayoutError(
                    f"cannot infer the -1 in {dims} for {self.numel} elements (shape {self.shape})"
                )
            dims = tuple(self.numel // known if d == -1 else d for d in dims)
        if math.prod(dims) != self.numel:
            raise LayoutError(
                f"cannot reshape shape {self.shape} ({self.numel} elements) into {dims} "
                f"({math.prod(dims)} elements)"
            )
        return dims

    def slice(
        self,
        starts: Sequence[int | None],
        stops: Sequence[int | None] | None = None,
        steps: Sequence[int | None] | None = None,
        axes: Sequence[int] | None = None,
    ) -> Layout:
        """Python-style ``start:stop:step`` per axis (negative indices and steps allowed).

        ``axes`` defaults to the leading ``len(starts)`` axes; other axes are kept whole.
        """
        count = len(starts)
        stops_: list[int | None] = [None] * count if stops is None else list(stops)
        steps_: list[int | None] = [None] * count if steps is None else list(steps)
        axes_ = tuple(range(count)) if axes is None else normalize_axes(axes, self.rank)
        if not len(stops_) == len(steps_) == len(axes_) == count:
            raise LayoutError(
                f"slice needs one start, stop and step per axis: got {count} starts, "
                f"{len(stops_)} stops, {len(steps_)} steps for axes {axes_}"
            )
        if count > self.rank:
            raise LayoutError(f"{count} slices given for a tensor of rank {self.rank}")
        shape, strides, sizes = list(self.shape), list(self.strides), list(self.sizes)
        offset = self.offset
        for axis, start, stop, step in zip(axes_, starts, stops_, steps_, strict=True):
            py = builtins.slice(
                None if start is None else as_int(start, "a slice start"),
                None if stop is None else as_int(stop, "a slice stop"),
                None if step is None else as_int(step, "a slice step"),
            )
            if py.step == 0:
                raise LayoutError(f"slice step must be non-zero on axis {axis}")
            n = shape[axis]
            first, _, step_ = py.indices(n)
            length = len(range(*py.indices(n)))
            if length == n and step_ == 1:
                continue
            # An empty result touches no element, so leave the offset where it is valid.
            if length > 0:
                offset += first * strides[axis]
            shape[axis] = length
            strides[axis] *= step_
            sizes[axis] = length
        return Layout(shape, strides, offset, sizes)

    def transpose(self, perm: Sequence[int] | None = None) -> Layout:
        """Axis ``k`` of the result is axis ``perm[k]`` here; default reverses the axes."""
        if perm is None:
            perm_ = tuple(reversed(range(self.rank)))
        else:
            perm_ = normalize_axes(perm, self.rank)
            if len(perm_) != self.rank:
                raise LayoutError(
                    f"transpose needs a permutation of {self.rank} axes, got {tuple(perm)}"
                )
        return Layout(
            (self.shape[k] for k in perm_),
            (self.strides[k] for k in perm_),
            self.offset,
            (self.sizes[k] for k in perm_),
        )

    def broadcast(self, shape: Iterable[object]) -> Layout:
        """NumPy broadcasting to ``shape``: new leading axes and stretched 1s get stride 0."""
        target = as_ints(shape, "a dimension")
        if any(d < 0 for d in target):
            raise LayoutError(f"dimensions must be non-negative, got shape {target}")
        lead = len(target) - self.rank
        if lead < 0:
            raise LayoutError(
                f"cannot broadcast shape {self.shape} to the lower-rank shape {target}"
            )
        strides = [0] * lead
        sizes = list(target[:lead])
        for k, (n, s, z) in enumerate(zip(self.shape, self.strides, self.sizes, strict=True)):
            want = target[lead + k]
            if n == want:
                strides.append(s)
                sizes.append(z)
            elif n == 1:
                strides.append(0)
                sizes.append(want)
            else:
                raise LayoutError(
                    f"cannot broadcast shape {self.shape} to {target}: axis {k} has size {n}, "
                    f"expected 1 or {want}"
                )
        return Layout(target, strides, self.offset, sizes)

    def squeeze(self, axes: Iterable[object] | None = None) -> Layout:
        """Drop length-1 axes: the given ones (each must have size 1) or all of them."""
        if axes is None:
            drop = {k for k, n in enumerate(self.shape) if n == 1}
        else:
            drop = set(normalize_axes(axes, self.rank))
            for k in sorted(drop):
                if self.shape[k] != 1:
                    raise LayoutError(
                        f"cannot squeeze axis {k} of size {self.shape[k]} (expected size 1) "
                        f"in shape {self.shape}"
                    )
        keep = [k for k in range(self.rank) if k not in drop]
        return Layout(
            (self.shape[k] for k in keep),
            (self.strides[k] for k in keep),
            self.offset,
            (self.sizes[k] for k in keep),
        )

    def unsqueeze(self, axes: Iterable[object]) -> Layout:
        """Insert length-1 axes at the given positions of the result (like ``np.expand_dims``)."""
        given = tuple(axes)
        out_rank = self.rank + len(given)
        new = set(normalize_axes(given, out_rank))
        shape: list[int] = []
        strides: list[int] = []
        sizes: list[int] = []
        rest = iter(zip(self.shape, self.strides, self.sizes, strict=True))
        for k in range(out_rank):
            if k in new:
                shape.append(1)
                strides.append(0)
                sizes.append(1)
            else:
                n, s, z = next(rest)
                shape.append(n)
                strides.append(s)
                sizes.append(z)
        # Any stride is correct on a length-1 axis; the one a dense layout would have keeps
        # equal views comparing equal. Right to left, so a run of new axes builds on final values.
        for pos in sorted(new, reverse=True):
            after = pos + 1
            strides[pos] = strides[after] * shape[after] if after < out_rank else 1
        return Layout(shape, strides, self.offset, sizes)

    def index(self, axis: int, i: int) -> Layout:
        """Fix ``axis`` at position ``i`` (negative counts from the end) and drop it.

        This is the view a loop takes of a sliced input on iteration ``i``.
        """
        ax = normalize_axis(axis, self.rank)
        n = self.shape[ax]
        pos = as_int(i, "an index")
        if not -n <= pos < n:
            raise LayoutIndexError(
                f"index {pos} is out of bounds for axis {ax} of size {n} (shape {self.shape})"
            )
        if pos < 0:
            pos += n
        return Layout(
            self.shape[:ax] + self.shape[ax + 1 :],
            self.strides[:ax] + self.strides[ax + 1 :],
            self.offset + pos * self.strides[ax],
            self.sizes[:ax] + self.sizes[ax + 1 :],
        )

    # -- complex views ------------------------------------------------------------------------

    def pad(
        self, before: Iterable[object], after: Iterable[object], fill: Scalar = 0
    ) -> PaddedView:
        """Pad (or, with negative amounts, crop) each axis; outside the source reads ``fill``.

        Cropping is folded into a slice of this layout, so the result always pads by
        non-negative amounts around a simple view.
        """
        b = as_ints(before, "a pad amount")
        a = as_ints(after, "a pad amount")
        if not len(b) == len(a) == self.rank:
            raise LayoutError(
                f"pad needs {self.rank} amounts before and after, got {len(b)} and {len(a)}"
            )
        starts: list[int | None] = []
        stops: list[int | None] = []
        for k, (n, pb, pa) in enumerate(zip(self.shape, b, a, strict=True)):
            crop_b, crop_a = max(-pb, 0), max(-pa, 0)
            if crop_b + crop_a > n:
                raise LayoutError(
                    f"pads ({pb}, {pa}) on axis {k} crop {crop_b + crop_a} elements but the "
                    f"axis has only {n}"
                )
            starts.append(crop_b)
            stops.append(n - crop_a)
        source = self.slice(starts, stops, [1] * self.rank)
        return PaddedView(source, tuple(max(p, 0) for p in b), tuple(max(p, 0) for p in a), fill)
