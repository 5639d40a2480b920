"""Strided tensor layouts and views over one linear buffer: l-tensors, r-tensors, padding."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Literal, TypeAlias

import numpy as np

from ..errors import GraphError
from .dtypes import DType, DTypeLike, dtype
from .dtypes import from_numpy as _dtype_of

__all__ = [
    "Index",
    "Layout",
    "LayoutError",
    "LayoutIndexError",
    "PaddedTensor",
    "PaddedView",
    "Scalar",
    "TensorView",
]

NDArray: TypeAlias = np.ndarray[Any, np.dtype[Any]]
Scalar: TypeAlias = bool | int | float
Index: TypeAlias = (
    int | builtins.slice | EllipsisType | tuple[int | builtins.slice | EllipsisType, ...]
)


class LayoutError(GraphError):
    """A layout or view request that cannot be honoured (bad shape, axis, stride or write)."""


class LayoutIndexError(LayoutError, IndexError):
    """An index outside a tensor's bounds.

    Also an IndexError so that Python's sequence protocols (and callers used to NumPy) see the
    usual exception type.
    """


def _as_int(value: object, what: str) -> int:
    # bool is an int subclass, but True as a dimension or stride is always a caller bug.
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise LayoutError(f"{what} must be an int, got {value!r}")
    return int(value)


def _as_ints(values: Iterable[object], what: str) -> tuple[int, ...]:
    if isinstance(values, int | np.integer):
        raise LayoutError(f"{what} must be a sequence of ints, got the scalar {values!r}")
    return tuple(_as_int(v, what) for v in values)


def _normalize_axis(axis: object, rank: int, what: str = "axis") -> int:
    a = _as_int(axis, what)
    if not -rank <= a < rank:
        raise LayoutError(
            f"{what} {a} is out of range for rank {rank} (expected {-rank}..{rank - 1})"
        )
    return a + rank if a < 0 else a


def _normalize_axes(axes: Iterable[object], rank: int) -> tuple[int, ...]:
    given = tuple(axes)
    out = tuple(_normalize_axis(a, rank) for a in given)
    if len(set(out)) != len(out):
        raise LayoutError(f"repeated axis in {given} (rank {rank})")
    return out


def _row_major_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    return tuple(strides)


def _column_major_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    strides = [1] * len(sizes)
    for k in range(1, len(sizes)):
        strides[k] = strides[k - 1] * sizes[k - 1]
    return tuple(strides)


def _extent(shape: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    lo = hi = offset
    for n, s in zip(shape, strides, strict=True):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + 1


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
        shape_ = _as_ints(shape, "a dimension")
        strides_ = _as_ints(strides, "a stride")
        offset_ = _as_int(offset, "the offset")
        sizes_ = shape_ if sizes is None else _as_ints(sizes, "an allocated size")
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
            lo, _ = _extent(shape_, strides_, offset_)
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
        shape_ = _as_ints(shape, "a dimension")
        sizes_ = shape_ if sizes is None else _as_ints(sizes, "an allocated size")
        if len(sizes_) != len(shape_):
            raise LayoutError(f"expected {len(shape_)} sizes for shape {shape_}, got {sizes_}")
        return cls(shape_, _row_major_strides(sizes_), 0, sizes_)

    @classmethod
    def column_major(cls, shape: Iterable[object], sizes: Iterable[object] | None = None) -> Layout:
        """Dense Fortran-order layout; strides are partial products of ``sizes`` from the left."""
        shape_ = _as_ints(shape, "a dimension")
        sizes_ = shape_ if sizes is None else _as_ints(sizes, "an allocated size")
        if len(sizes_) != len(shape_):
            raise LayoutError(f"expected {len(shape_)} sizes for shape {shape_}, got {sizes_}")
        return cls(shape_, _column_major_strides(sizes_), 0, sizes_)

    # -- queries ------------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def linear_index(self, index: Iterable[object]) -> int:
        """The buffer position of ``index``; each component must be in ``0 <= i < shape``."""
        idx = _as_ints(index, "an index component")
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
        return _extent(self.shape, self.strides, self.offset)

    def span(self) -> int:
        """Buffer elements from the lowest to the highest addressed element, inclusive."""
        lo, hi = self.extent()
        return hi - lo

    def storage_size(self) -> int:
        """Minimum buffer length (from index 0) that holds every element and the size padding."""
        needed = self.extent()[1] if self.numel else 0
        if math.prod(self.sizes) > 0:
            # Padding beyond the last element is still part of the allocation.
            needed = max(needed, _extent(self.sizes, self.strides, self.offset)[1])
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
            return Layout(target, _row_major_strides(target), self.offset)
        strides = _nocopy_reshape_strides(self.shape, self.strides, target)
        if strides is None:
            raise LayoutError(
                f"cannot reshape a view of shape {self.shape} with strides {self.strides} into "
                f"{target} without copying; materialise it (TensorView.copy()) first"
            )
        return Layout(target, strides, self.offset)

    def _infer_shape(self, new_shape: Iterable[object]) -> tuple[int, ...]:
        dims = _as_ints(new_shape, "a dimension")
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
        axes_ = tuple(range(count)) if axes is None else _normalize_axes(axes, self.rank)
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
                None if start is None else _as_int(start, "a slice start"),
                None if stop is None else _as_int(stop, "a slice stop"),
                None if step is None else _as_int(step, "a slice step"),
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
            perm_ = _normalize_axes(perm, self.rank)
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
        target = _as_ints(shape, "a dimension")
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
            drop = set(_normalize_axes(axes, self.rank))
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
        new = set(_normalize_axes(given, out_rank))
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
        ax = _normalize_axis(axis, self.rank)
        n = self.shape[ax]
        pos = _as_int(i, "an index")
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
        b = _as_ints(before, "a pad amount")
        a = _as_ints(after, "a pad amount")
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


def _nocopy_reshape_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], target: tuple[int, ...]
) -> tuple[int, ...] | None:
    """Strides that express ``target`` over the same row-major elements, or None.

    Follows NumPy's ``_attempt_nocopy_reshape``: split both shapes into runs with equal
    products; each run of old axes must be contiguous with respect to itself.
    """
    old = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    out = [0] * len(target)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(target) and oi < len(old):
        np_, op = target[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= target[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            out[nk - 1] = out[nk] * target[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(target)):
        out[nk] = last
    return tuple(out)


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
        idx = _as_ints(index, "an index component")
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


def _root(array: NDArray) -> object:
    # Follow NumPy's view chain so buffers that are views of one allocation compare equal.
    base: object = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


def _normalize_index(index: Iterable[object], shape: tuple[int, ...]) -> tuple[int, ...]:
    index = _as_ints(index, "an index component")
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


class TensorView:
    """A tensor as a strided view of a 1-D buffer: an l-tensor, or an r-tensor if read-only.

    Every view method returns another TensorView over the same buffer; nothing is copied
    until :meth:`to_numpy` or :meth:`copy`.
    """

    __slots__ = ("_buffer", "_layout", "_read_only")

    def __init__(self, buffer: NDArray, layout: Layout, *, read_only: bool = False) -> None:
        if not isinstance(buffer, np.ndarray) or buffer.ndim != 1:
            got = f"an array of rank {buffer.ndim}" if isinstance(buffer, np.ndarray) else buffer
            raise LayoutError(f"a tensor's buffer must be a 1-D NumPy array, got {got!r}")
        _dtype_of(buffer)  # rejects element types tensorloop does not know
        if layout.numel and layout.extent()[1] > len(buffer):
            raise LayoutError(
                f"layout {layout} reaches linear index {layout.extent()[1] - 1} but the buffer "
                f"has only {len(buffer)} elements"
            )
        if not read_only and layout.has_broadcast:
            raise LayoutError(
                f"a layout with zero strides aliases elements (strides {layout.strides}, shape "
                f"{layout.shape}); it can only back a read-only r-tensor"
            )
        if not read_only and not buffer.flags.writeable:
            raise LayoutError("an l-tensor needs a writeable buffer; pass read_only=True")
        self._buffer = buffer
        self._layout = layout
        self._read_only = read_only

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_numpy(
        cls,
        array: NDArray | np.generic | Scalar,
        *,
        read_only: bool = False,
        order: Literal["C", "F"] = "C",
    ) -> TensorView:
        """A tensor over a private copy of ``array``, stored row-major (C) or column-major (F)."""
        arr = np.asarray(array)
        if order not in ("C", "F"):
            raise LayoutError(f"unknown storage order {order!r} (expected 'C' or 'F')")
        buffer = arr.flatten(order=order)  # flatten always copies, so callers keep their array
        layout = Layout.row_major(arr.shape) if order == "C" else Layout.column_major(arr.shape)
        return cls(buffer, layout, read_only=read_only)

    @classmethod
    def allocate(
        cls,
        shape: Iterable[object],
        dtype_: DTypeLike,
        *,
        sizes: Iterable[object] | None = None,
        order: Literal["C", "F"] = "C",
        fill: Scalar = 0,
    ) -> TensorView:
        """A fresh l-tensor filled with ``fill``; ``sizes`` adds padding for alignment."""
        if order not in ("C", "F"):
            raise LayoutError(f"unknown storage order {order!r} (expected 'C' or 'F')")
        make = Layout.row_major if order == "C" else Layout.column_major
        layout = make(shape, sizes)
        buffer = np.full(layout.storage_size(), fill, dtype=dtype(dtype_).numpy)
        return cls(buffer, layout)

    # -- properties ---------------------------------------------------------------------------

    @property
    def buffer(self) -> NDArray:
        return self._buffer

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def dtype(self) -> DType:
        return _dtype_of(self._buffer)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._layout.shape

    @property
    def strides(self) -> tuple[int, ...]:
        return self._layout.strides

    @property
    def offset(self) -> int:
        return self._layout.offset

    @property
    def rank(self) -> int:
        return self._layout.rank

    @property
    def numel(self) -> int:
        return self._layout.numel

    @property
    def base(self) -> TensorView:
        """The whole buffer as a 1-D tensor: the memory every view here indexes into."""
        return TensorView(
            self._buffer, Layout.row_major((len(self._buffer),)), read_only=self._read_only
        )

    def is_view_of(self, other: TensorView | PaddedTensor) -> bool:
        """Whether both index into the same buffer (so writes to one can show in the other)."""
        return _root(self._buffer) is _root(other.buffer)

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a rank-0 tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        kind = "r-tensor" if self._read_only else "l-tensor"
        return (
            f"TensorView({kind} {self.dtype.short}{list(self.shape)}, "
            f"strides={self.strides}, offset={self.offset})"
        )

    # -- reading and writing ------------------------------------------------------------------

    def _strided(self, writeable: bool) -> NDArray:
        """A NumPy view with this layout; callers must not let it escape when writeable."""
        if self.numel == 0:
            return np.empty(self.shape, dtype=self._buffer.dtype)
        step = self._buffer.strides[0]
        return np.lib.stride_tricks.as_strided(
            self._buffer[self.offset :],
            shape=self.shape,
            strides=tuple(s * step for s in self.strides),
            writeable=writeable,
        )

    def to_numpy(self) -> NDArray:
        """A fresh C-contiguous array holding this tensor's values."""
        return np.array(self._strided(writeable=False), copy=True, order="C")

    def copy(self, order: Literal["C", "F"] = "C") -> TensorView:
        """A new l-tensor with its own dense buffer (turns an r-tensor into an l-tensor)."""
        return TensorView.from_numpy(self._strided(writeable=False), order=order)

    def item(self, index: Sequence[int] = ()) -> Any:
        """The element at a full integer index (negative components count from the end)."""
        pos = self._layout.linear_index(_normalize_index(index, self.shape))
        return self._buffer[pos]

    def _resolve(self, key: Index) -> tuple[Layout, bool]:
        """The layout ``key`` selects, and whether it names a single element."""
        items = key if isinstance(key, tuple) else (key,)
        n_ellipsis = sum(1 for k in items if k is Ellipsis)
        if n_ellipsis > 1:
            raise LayoutIndexError("an index can only have a single ellipsis ('...')")
        explicit = len(items) - n_ellipsis
        if explicit > self.rank:
            raise LayoutIndexError(
                f"too many indices for a tensor of rank {self.rank}: got {explicit}"
            )
        full = builtins.slice(None)
        expanded: list[int | builtins.slice] = []
        for k in items:
            if k is Ellipsis:
                expanded.extend([full] * (self.rank - explicit))
            elif isinstance(k, builtins.slice):
                expanded.append(k)
            else:
                expanded.append(_as_int(k, "an index"))
        expanded.extend([full] * (self.rank - len(expanded)))
        slice_axes = [a for a, k in enumerate(expanded) if isinstance(k, builtins.slice)]
        slices = [k for k in expanded if isinstance(k, builtins.slice)]
        layout = self._layout.slice(
            [s.start for s in slices],
            [s.stop for s in slices],
            [s.step for s in slices],
            axes=slice_axes,
        )
        # Fix integer axes from the back so earlier axis numbers stay valid.
        for axis in reversed(range(self.rank)):
            k = expanded[axis]
            if not isinstance(k, builtins.slice):
                layout = layout.index(axis, k)
        is_element = n_ellipsis == 0 and not slices
        return layout, is_element

    def __getitem__(self, key: Index) -> TensorView | Any:
        """An element for a full integer index, else a view (ints, slices and one ``...``)."""
        layout, is_element = self._resolve(key)
        if is_element:
            return self._buffer[layout.offset]
        return self._view(layout)

    def __setitem__(self, key: Index, value: object) -> None:
        layout, _ = self._resolve(key)
        self._view(layout).assign(value)

    def assign(self, value: object) -> None:
        """Write ``value`` (broadcast to this shape) through the layout into the buffer."""
        if self._read_only:
            raise LayoutError(
                f"cannot assign to an r-tensor: {self!r} is read-only (expected an l-tensor)"
            )
        src = value.to_numpy() if isinstance(value, TensorView | PaddedTensor) else value
        src_arr = np.asarray(src)
        try:
            src_arr = np.broadcast_to(src_arr, self.shape)
        except ValueError:
            raise LayoutError(
                f"cannot assign a value of shape {src_arr.shape} to a tensor of shape "
                f"{self.shape} (expected a shape that broadcasts to it)"
            ) from None
        if self.numel == 0:
            return
        # Reading everything first keeps overlapping source and target views correct.
        self._strided(writeable=True)[...] = np.array(src_arr, dtype=self._buffer.dtype)

    # -- views --------------------------------------------------------------------------------

    def _view(self, layout: Layout, read_only: bool | None = None) -> TensorView:
        return TensorView(
            self._buffer, layout, read_only=self._read_only if read_only is None else read_only
        )

    def as_read_only(self) -> TensorView:
        """The same elements as an r-tensor."""
        return self._view(self._layout, read_only=True)

    def reshape(self, new_shape: int | Iterable[object]) -> TensorView:
        return self._view(self._layout.reshape(new_shape))

    def flatten(self, order: Literal["C", "storage"] = "C") -> TensorView:
        return self._view(self._layout.flatten(order))

    def slice(
        self,
        starts: Sequence[int | None],
        stops: Sequence[int | None] | None = None,
        steps: Sequence[int | None] | None = None,
        axes: Sequence[int] | None = None,
    ) -> TensorView:
        return self._view(self._layout.slice(starts, stops, steps, axes))

    def transpose(self, perm: Sequence[int] | None = None) -> TensorView:
        return self._view(self._layout.transpose(perm))

    def broadcast(self, shape: Iterable[object]) -> TensorView:
        """A broadcast view; it is an r-tensor when elements become aliased."""
        layout = self._layout.broadcast(shape)
        return self._view(layout, read_only=self._read_only or layout.has_broadcast)

    def squeeze(self, axes: Iterable[object] | None = None) -> TensorView:
        return self._view(self._layout.squeeze(axes))

    def unsqueeze(self, axes: Iterable[object]) -> TensorView:
        return self._view(self._layout.unsqueeze(axes))

    def index(self, axis: int, i: int) -> TensorView:
        return self._view(self._layout.index(axis, i))

    def pad(
        self, before: Iterable[object], after: Iterable[object], fill: Scalar = 0
    ) -> PaddedTensor:
        """A read-only padded (negative: cropped) view; fill positions have no storage."""
        return PaddedTensor(self._buffer, self._layout.pad(before, after, fill))


class PaddedTensor:
    """An r-tensor over a :class:`PaddedView`: buffer values inside, the fill value outside.

    It is never assignable, since the fill positions have nowhere to store a value.
    """

    __slots__ = ("_buffer", "_view")

    def __init__(self, buffer: NDArray, view: PaddedView) -> None:
        self._buffer = buffer
        self._view = view
        # Validates the buffer and the source layout in one place.
        TensorView(buffer, view.source, read_only=True)

    @property
    def buffer(self) -> NDArray:
        return self._buffer

    @property
    def view(self) -> PaddedView:
        return self._view

    @property
    def read_only(self) -> bool:
        return True

    @property
    def dtype(self) -> DType:
        return _dtype_of(self._buffer)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._view.shape

    @property
    def rank(self) -> int:
        return self._view.rank

    @property
    def numel(self) -> int:
        return self._view.numel

    @property
    def source(self) -> TensorView:
        """The (cropped) region of the buffer that shows through, as an r-tensor."""
        return TensorView(self._buffer, self._view.source, read_only=True)

    def is_view_of(self, other: TensorView | PaddedTensor) -> bool:
        return _root(self._buffer) is _root(other.buffer)

    def __repr__(self) -> str:
        return (
            f"PaddedTensor(r-tensor {self.dtype.short}{list(self.shape)}, "
            f"before={self._view.before}, after={self._view.after}, fill={self._view.fill!r})"
        )

    def to_numpy(self) -> NDArray:
        out = np.full(self.shape, self._view.fill, dtype=self._buffer.dtype)
        out[self._view.interior()] = self.source.to_numpy()
        return out

    def copy(self, order: Literal["C", "F"] = "C") -> TensorView:
        """Materialise as a new l-tensor."""
        return TensorView.from_numpy(self.to_numpy(), order=order)

    def item(self, index: Sequence[int] = ()) -> Any:
        pos = self._view.linear_index(_normalize_index(index, self.shape))
        if pos is None:
            return self._buffer.dtype.type(self._view.fill)
        return self._buffer[pos]

    def __getitem__(self, index: int | tuple[int, ...]) -> Any:
        """The element at a full integer index (padded tensors have no further views)."""
        return self.item((index,) if isinstance(index, int) else index)

    def __setitem__(self, index: object, value: object) -> None:
        self.assign(value)

    def assign(self, value: object) -> None:
        raise LayoutError(
            f"cannot assign to a padded view: {self!r} is an r-tensor (expected an l-tensor); "
            "copy() it first"
        )
