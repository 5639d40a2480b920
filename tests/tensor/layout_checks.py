"""Layout test helpers: base tensors, NumPy comparisons and the same random views on both."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tensorloop.errors import GraphError
from tensorloop.tensor.layout import TensorView

FAST = settings(max_examples=100, deadline=None)

shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)
Order = Literal["C", "F"]
orders: st.SearchStrategy[Order] = st.sampled_from(["C", "F"])


def make_base(shape: tuple[int, ...], order: Order) -> tuple[np.ndarray, TensorView]:
    """A NumPy array and a TensorView with identical storage order and values."""
    a = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    a = np.array(a, order=order)
    t = TensorView.from_numpy(a, order=order)
    return a, t


def np_offset(view: np.ndarray, base: np.ndarray) -> int:
    """Element offset of a NumPy view's first element from its base's first element."""
    delta = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    assert delta % base.itemsize == 0
    return int(delta) // base.itemsize


def assert_same_view(t: TensorView, v: np.ndarray, base: np.ndarray) -> None:
    """Values, shape, and (where NumPy pins them down) strides, offset and contiguity agree."""
    assert t.shape == v.shape
    got = t.to_numpy()
    assert got.shape == v.shape
    np.testing.assert_array_equal(got, v)
    assert got.flags.c_contiguous and got.flags.writeable
    if v.size:
        assert t.offset == np_offset(v, base)
        for n, s, ns in zip(t.shape, t.strides, v.strides, strict=True):
            if n > 1:
                assert s * v.itemsize == ns
    assert t.layout.is_contiguous == v.flags.c_contiguous
    assert t.layout.is_column_major_contiguous == v.flags.f_contiguous


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def draw_reshape_target(data: st.DataObject, numel: int) -> tuple[int, ...]:
    if numel == 0:
        rank = data.draw(st.integers(1, 4))
        dims = data.draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank))
        dims[data.draw(st.integers(0, rank - 1))] = 0
    else:
        rank = data.draw(st.integers(0 if numel == 1 else 1, 4))
        dims = [1] * rank
        for f in prime_factors(numel):
            dims[data.draw(st.integers(0, rank - 1))] *= f
    if rank and data.draw(st.booleans()):
        k = data.draw(st.integers(0, rank - 1))
        if math.prod(d for j, d in enumerate(dims) if j != k) != 0:
            dims[k] = -1
    return tuple(dims)


def apply_random_views(
    data: st.DataObject,
    a: np.ndarray,
    t: TensorView,
    *,
    writable: bool,
    steps: int = 4,
) -> tuple[np.ndarray, TensorView]:
    """Apply the same random chain of views to a NumPy array and a TensorView."""
    v = a
    kinds = ["slice", "transpose", "squeeze", "unsqueeze", "index", "reshape", "getitem"]
    if not writable:
        kinds.append("broadcast")
    for _ in range(data.draw(st.integers(1, steps))):
        kind = data.draw(st.sampled_from(kinds))
        rank = v.ndim
        if kind == "slice":
            starts, stops, steps_ = [], [], []
            for n in v.shape:
                bound = st.none() | st.integers(-n - 2, n + 2)
                starts.append(data.draw(bound))
                stops.append(data.draw(bound))
                steps_.append(data.draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])))
            key: tuple[Any, ...] = tuple(slice(*x) for x in zip(starts, stops, steps_, strict=True))
            # The trailing ellipsis keeps NumPy returning a view, even at rank 0.
            v, t = v[(*key, ...)], t.slice(starts, stops, steps_)
        elif kind == "transpose":
            perm = data.draw(st.permutations(range(rank)))
            v, t = np.transpose(v, perm), t.transpose(perm)
        elif kind == "squeeze":
            ones = [k for k, n in enumerate(v.shape) if n == 1]
            if data.draw(st.booleans()):
                v, t = np.squeeze(v), t.squeeze()
            else:
                axes = data.draw(
                    st.lists(st.sampled_from(ones), unique=True) if ones else st.just([])
                )
                v, t = np.squeeze(v, axis=tuple(axes)), t.squeeze(axes)
        elif kind == "unsqueeze":
            if rank >= 5:
                continue
            count = data.draw(st.integers(1, 2))
            out_rank = rank + count

            def normalized(x: int, r: int = out_rank) -> int:
                return x % r

            axes = data.draw(
                st.lists(
                    st.integers(-out_rank, out_rank - 1),
                    min_size=count,
                    max_size=count,
                    unique_by=normalized,
                )
            )
            v, t = np.expand_dims(v, tuple(axes)), t.unsqueeze(axes)
        elif kind == "index":
            live = [k for k, n in enumerate(v.shape) if n > 0]
            if not live:
                continue
            axis = data.draw(st.sampled_from(live))
            n = v.shape[axis]
            i = data.draw(st.integers(-n, n - 1))
            v = v[(slice(None),) * axis + (i, ...)]
            t = t.index(axis - rank if data.draw(st.booleans()) else axis, i)
        elif kind == "reshape":
            target = draw_reshape_target(data, v.size)
            try:
                nv = np.reshape(v, target, copy=False)
            except ValueError:
                with pytest.raises(GraphError, match="without copying"):
                    t.reshape(target)
                continue
            v, t = nv, t.reshape(target)
        elif kind == "getitem":
            key = draw_key(data, v.shape)
            nv = v[key]
            if not isinstance(nv, np.ndarray):
                continue
            got = t[key]
            assert isinstance(got, TensorView)
            v, t = nv, got
        else:  # broadcast
            if rank >= 5 or v.size > 100:
                continue
            lead = data.draw(st.lists(st.integers(0, 3), max_size=1))
            tail = [data.draw(st.integers(0, 3)) if n == 1 else n for n in v.shape]
            target = tuple(lead + tail)
            v, t = np.broadcast_to(v, target), t.broadcast(target)
        if writable:
            assert not t.read_only
    return v, t


def draw_key(data: st.DataObject, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A NumPy-style key of ints, slices and at most one ellipsis."""
    items: list[Any] = []
    for n in shape:
        if n > 0 and data.draw(st.booleans()):
            items.append(data.draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n - 1, n + 1)
            step = st.none() | st.sampled_from([-2, -1, 1, 2])
            items.append(slice(data.draw(bound), data.draw(bound), data.draw(step)))
    # Leave out a run of axes: trailing ones implicitly, or any run via an ellipsis.
    lo = data.draw(st.integers(0, len(items)))
    hi = data.draw(st.integers(lo, len(items)))
    if data.draw(st.booleans()):
        return (*items[:lo], Ellipsis, *items[hi:])
    return tuple(items[:lo])
