"""Tensors over one linear buffer: TensorView (l-tensor or read-only r-tensor) and PaddedTensor."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from ..dtypes import DType, DTypeLike, dtype
from ..dtypes import from_numpy as _dtype_of
from .arguments import Index, NDArray, Scalar, as_int, normalize_index
from .errors import LayoutError, LayoutIndexError
from .padded import PaddedView
from .strided import Layout


def _root(array: NDArray) -> object:
    # Follow NumPy's view chain so buffers that are views of one allocation compare equal.
    base: object = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


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
        pos = self._layout.linear_index(normalize_index(index, self.shape))
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
                expanded.append(as_int(k, "an index"))
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
        pos = self._view.linear_index(normalize_index(index, self.shape))
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
