"""Layouts and views agree with NumPy indexing, element for element and byte for byte."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorloop.errors import GraphError
from tensorloop.tensor.layout import (
    Layout,
    LayoutError,
    LayoutIndexError,
    PaddedTensor,
    PaddedView,
    TensorView,
)

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


# -- layouts ----------------------------------------------------------------------------------


def test_spec_stride_example() -> None:
    assert Layout.row_major((5, 3, 2)).strides == (6, 2, 1)
    assert Layout.column_major((5, 3, 2)).strides == (1, 5, 15)
    # Strides come from the allocated sizes, not the shape.
    padded = Layout.row_major((4, 3, 1), sizes=(5, 3, 2))
    assert padded.strides == (6, 2, 1)
    assert padded.storage_size() == 30
    assert not padded.is_contiguous
    assert Layout.column_major((4, 3, 1), sizes=(5, 3, 2)).strides == (1, 5, 15)


def test_transpose_permutes_strides_shape_and_sizes() -> None:
    lay = Layout.row_major((4, 3, 1), sizes=(5, 3, 2))
    tr = lay.transpose((2, 0, 1))
    assert tr.shape == (1, 4, 3) and tr.strides == (1, 6, 2) and tr.sizes == (2, 5, 3)
    assert tr.linear_index((0, 3, 2)) == lay.linear_index((3, 2, 0))


def test_linear_index_bounds_checked() -> None:
    lay = Layout.row_major((2, 3))
    assert lay.linear_index((1, 2)) == 5
    with pytest.raises(LayoutIndexError, match=r"index 3 is out of bounds for axis 1 of size 3"):
        lay.linear_index((0, 3))
    with pytest.raises(IndexError):
        lay.linear_index((-1, 0))
    with pytest.raises(LayoutIndexError, match="rank 2"):
        lay.linear_index((0,))


def test_layout_validation() -> None:
    with pytest.raises(LayoutError, match="expected 2 strides"):
        Layout((2, 3), (1,))
    with pytest.raises(LayoutError, match=">= shape"):
        Layout((2, 3), (3, 1), 0, (2, 2))
    with pytest.raises(LayoutError, match="non-negative"):
        Layout((2,), (-1,), 0)
    with pytest.raises(LayoutError, match="must be an int"):
        Layout((2.0,), (1,))
    assert Layout((2,), (-1,), 1).extent() == (0, 2)


@FAST
@given(shape=shapes, data=st.data())
def test_row_and_column_major_match_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    sizes = tuple(n + data.draw(st.integers(0, 2)) for n in shape)
    for lay, alloc in (
        (Layout.row_major(shape, sizes), np.zeros(sizes, dtype=np.int64, order="C")),
        (Layout.column_major(shape, sizes), np.zeros(sizes, dtype=np.int64, order="F")),
    ):
        assert lay.strides == tuple(s // 8 for s in alloc.strides) or alloc.size == 0
        assert lay.storage_size() == alloc.size
    dense_c, dense_f = Layout.row_major(shape), Layout.column_major(shape)
    assert dense_c.is_contiguous and dense_f.is_column_major_contiguous
    assert dense_c.is_dense and dense_f.is_dense
    ref = np.zeros(shape, dtype=np.int64)
    assert dense_c.is_column_major_contiguous == ref.flags.f_contiguous
    assert dense_f.is_contiguous == np.asfortranarray(ref).flags.c_contiguous


@FAST
@given(shape=shapes)
def test_column_major_tensor_matches_fortran_array(shape: tuple[int, ...]) -> None:
    a = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    t = TensorView.from_numpy(a, order="F")
    np.testing.assert_array_equal(t.buffer, np.asfortranarray(a).ravel(order="K"))
    np.testing.assert_array_equal(t.buffer, a.ravel(order="F"))
    np.testing.assert_array_equal(t.to_numpy(), a)
    f = np.array(a, order="F")  # asfortranarray would promote rank 0 to rank 1
    for n, s, ns in zip(t.shape, t.strides, f.strides, strict=True):
        assert n <= 1 or f.size == 0 or s * 8 == ns
    assert t.layout.is_column_major_contiguous
    assert t.copy("F").buffer.tolist() == t.buffer.tolist()


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_extent_span_and_density_match_brute_force(
    shape: tuple[int, ...], order: Order, data: st.DataObject
) -> None:
    a, t = make_base(shape, order)
    _, t = apply_random_views(data, a, t, writable=False)
    lay = t.layout
    # Over a buffer holding 0, 1, 2, ... every element reads back its own linear index.
    probe = TensorView(np.arange(len(t.buffer)), lay, read_only=True).to_numpy().ravel()
    assert lay.numel == probe.size
    if probe.size:
        assert lay.extent() == (probe.min(), probe.max() + 1)
        assert lay.span() == probe.max() - probe.min() + 1
        assert lay.storage_size() >= probe.max() + 1
        dense = np.unique(probe).size == probe.size == lay.span()
        assert lay.is_dense == dense
        assert lay.has_broadcast == (np.unique(probe).size < probe.size)
    else:
        assert lay.span() == 0 and lay.is_dense


@st.composite
def raw_layouts(draw: st.DrawFn, shape: tuple[int, ...], like: Layout | None = None) -> Layout:
    """Arbitrary strides (negative and zero too), each axis possibly copied from ``like``."""
    strides = []
    for k in range(len(shape)):
        if like is not None and draw(st.booleans()):
            strides.append(like.strides[k])
        else:
            strides.append(draw(st.integers(-4, 4)))
    low = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s < 0)
    offset = -low + draw(st.integers(0, 3)) if math.prod(shape) else draw(st.integers(0, 3))
    return Layout(shape, strides, offset)


@FAST
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple), data=st.data())
def test_raw_layout_predicates_match_brute_force(
    shape: tuple[int, ...], data: st.DataObject
) -> None:
    x = data.draw(raw_layouts(shape))
    y = data.draw(raw_layouts(shape, like=x))
    size = max(x.storage_size(), y.storage_size(), 1)
    px = TensorView(np.arange(size), x, read_only=True).to_numpy()
    py = TensorView(np.arange(size), y, read_only=True).to_numpy()
    # Equal strides on moving axes <=> the two index maps differ by a constant.
    assert x.same_linear_order(y) == (px.size == 0 or np.unique(px - py).size == 1)
    assert x.can_flatten_with(y) == (x.same_linear_order(y) and x.is_dense and y.is_dense)
    if px.size:
        assert x.storage_size() == px.max() + 1
        assert x.is_dense == (np.unique(px).size == px.size == px.max() - px.min() + 1)
    ref = np.lib.stride_tricks.as_strided(
        np.arange(size, dtype=np.int64)[x.offset :] if px.size else np.zeros(1, np.int64),
        shape=shape,
        strides=[s * 8 for s in x.strides],
    )
    assert x.is_contiguous == ref.flags.c_contiguous
    assert x.is_column_major_contiguous == ref.flags.f_contiguous
    if x.is_contiguous:
        flat = x.flatten()
        assert flat.same_linear_order(Layout.row_major((x.numel,))) and flat.offset == x.offset


# -- views agree with NumPy -------------------------------------------------------------------


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_view_chains_match_numpy(shape: tuple[int, ...], order: Order, data: st.DataObject) -> None:
    a, t = make_base(shape, order)
    v, tv = apply_random_views(data, a, t, writable=False, steps=5)
    assert_same_view(tv, v, a)
    assert tv.is_view_of(t)


@FAST
@given(shape=shapes, data=st.data())
def test_slices_match_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a, t = make_base(shape, "C")
    starts, stops, steps = [], [], []
    for n in shape:
        starts.append(data.draw(st.none() | st.integers(-n - 3, n + 3)))
        stops.append(data.draw(st.none() | st.integers(-n - 3, n + 3)))
        steps.append(data.draw(st.none() | st.integers(-4, 4).filter(bool)))
    key: tuple[Any, ...] = tuple(slice(*x) for x in zip(starts, stops, steps, strict=True))
    assert_same_view(t.slice(starts, stops, steps), a[(*key, ...)], a)
    # The same slices addressed through explicit axes, in reverse order.
    axes = list(reversed(range(len(shape))))
    rev = t.slice(starts[::-1], stops[::-1], steps[::-1], axes=axes)
    assert rev.layout == t.slice(starts, stops, steps).layout


@FAST
@given(shape=shapes, data=st.data())
def test_getitem_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a, t = make_base(shape, "C")
    key = draw_key(data, shape)
    want = a[key]
    got = t[key]
    if isinstance(want, np.ndarray):
        assert isinstance(got, TensorView)
        assert_same_view(got, want, a)
    else:
        assert not isinstance(got, TensorView)
        assert got == want


@FAST
@given(shape=shapes, data=st.data())
def test_reshape_of_contiguous_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a, t = make_base(shape, "C")
    target = draw_reshape_target(data, a.size)
    assert_same_view(t.reshape(target), a.reshape(target), a)
    assert t.reshape(target).layout.is_contiguous


@FAST
@given(shape=shapes, data=st.data())
def test_broadcast_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a, t = make_base(shape, "C")
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    tail = [data.draw(st.integers(0, 4)) if n == 1 else n for n in shape]
    target = (*lead, *tail)
    b = t.broadcast(target)
    assert_same_view(b, np.broadcast_to(a, target), a)
    assert b.read_only == b.layout.has_broadcast


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_index_matches_numpy(shape: tuple[int, ...], order: Order, data: st.DataObject) -> None:
    live = [k for k, n in enumerate(shape) if n > 0]
    if not live:
        return
    a, t = make_base(shape, order)
    axis = data.draw(st.sampled_from(live))
    i = data.draw(st.integers(-shape[axis], shape[axis] - 1))
    assert_same_view(t.index(axis, i), a[(slice(None),) * axis + (i, ...)], a)


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_padding_matches_np_pad(shape: tuple[int, ...], order: Order, data: st.DataObject) -> None:
    a, t = make_base(shape, order)
    v, tv = apply_random_views(data, a, t, writable=False, steps=2)
    before, after = [], []
    for n in v.shape:
        b = data.draw(st.integers(-n, 3))
        before.append(b)
        after.append(data.draw(st.integers(-(n - max(-b, 0)), 3)))
    fill = data.draw(st.integers(-9, -1))
    p = tv.pad(before, after, fill=fill)
    crop = tuple(
        slice(max(-b, 0), n - max(-e, 0)) for n, b, e in zip(v.shape, before, after, strict=True)
    )
    pads = [(max(b, 0), max(e, 0)) for b, e in zip(before, after, strict=True)]
    # np.pad rejects an empty pad list, so rank 0 (nothing to pad) is compared directly.
    want = np.pad(v[crop], pads, mode="constant", constant_values=fill) if pads else v.copy()
    assert p.shape == want.shape
    np.testing.assert_array_equal(p.to_numpy(), want)
    assert p.read_only and p.is_view_of(t)
    # Element reads follow the selection function: source inside, fill outside.
    for idx in list(np.ndindex(*want.shape))[:20]:
        assert p[idx] == want[idx]
        inside = p.view.translate(idx) is not None
        assert inside == all(
            b <= i < b + n for i, b, n in zip(idx, p.view.before, p.view.source.shape, strict=True)
        )


def test_padded_view_is_a_complex_view() -> None:
    a = np.arange(6.0).reshape(2, 3)
    t = TensorView.from_numpy(a)
    p = t.pad([1, -1], [0, 2], fill=7.5)
    assert isinstance(p, PaddedTensor) and isinstance(p.view, PaddedView)
    assert p.shape == (3, 4)
    assert p.view.translate((0, 0)) is None
    assert p.view.translate((1, 0)) == (0, 0)
    assert p.view.linear_index((2, 1)) == 5
    assert p[0, 0] == 7.5 and p[2, 1] == 5.0 and p[-1, -1] == 7.5
    np.testing.assert_array_equal(
        p.to_numpy(), np.pad(a[:, 1:], [(1, 0), (0, 2)], constant_values=7.5)
    )
    c = p.copy()
    assert not c.read_only and not c.is_view_of(t)
    with pytest.raises(LayoutError, match="crop 4 elements but the axis has only 3"):
        t.pad([0, -2], [0, -2])
    with pytest.raises(LayoutError, match="non-negative"):
        PaddedView(t.layout, (-1, 0), (0, 0))
    with pytest.raises(IndexError):
        p[3, 0]


# -- writes -----------------------------------------------------------------------------------


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_writes_through_views_match_numpy(
    shape: tuple[int, ...], order: Order, data: st.DataObject
) -> None:
    a, t = make_base(shape, order)
    v, tv = apply_random_views(data, a, t, writable=True)
    assert np.shares_memory(v, a) or v.size == 0
    values = -1 - np.arange(v.size, dtype=np.int64).reshape(v.shape)
    v[...] = values
    tv.assign(values)
    np.testing.assert_array_equal(t.to_numpy(), a)
    np.testing.assert_array_equal(t.buffer, a.ravel(order="K"))
    if v.size:
        idx = tuple(data.draw(st.integers(-n, n - 1)) for n in v.shape)
        v[idx] = 1000
        tv[idx] = 1000
        np.testing.assert_array_equal(t.to_numpy(), a)
        assert tv[idx] == 1000
    # A broadcast scalar assignment through __setitem__ with an ellipsis.
    v[...] = 5
    tv[...] = 5
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_assign_broadcasts_and_checks_shape() -> None:
    t = TensorView.from_numpy(np.zeros((2, 3)))
    t.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.to_numpy(), [[1, 2, 3], [1, 2, 3]])
    t[1] = 9
    np.testing.assert_array_equal(t.to_numpy(), [[1, 2, 3], [9, 9, 9]])
    t[:, ::-2] = TensorView.from_numpy(np.array([[10.0, 20.0]]))
    np.testing.assert_array_equal(t.to_numpy(), [[20, 2, 10], [20, 9, 10]])
    with pytest.raises(LayoutError, match=r"shape \(4,\) to a tensor of shape \(2, 3\)"):
        t.assign(np.zeros(4))


def test_assign_from_overlapping_view_of_itself() -> None:
    a = np.arange(6)
    t = TensorView.from_numpy(a)
    t[1:] = t[:-1]
    a[1:] = a[:-1]
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_padded_allocation_leaves_padding_alone() -> None:
    t = TensorView.allocate((2, 3), "f32", sizes=(4, 5), fill=-1)
    assert len(t.buffer) == 20 and t.dtype.short == "f32"
    t.assign(np.arange(6).reshape(2, 3))
    ref = np.full((4, 5), -1, dtype=np.float32)
    ref[:2, :3] = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(t.buffer, ref.ravel())
    f = TensorView.allocate((2, 3), "i32", sizes=(3, 4), order="F")
    assert f.strides == (1, 3) and len(f.buffer) == 12


def test_r_tensors_reject_writes() -> None:
    t = TensorView.from_numpy(np.arange(6).reshape(2, 3))
    for r in (
        t.as_read_only(),
        t.as_read_only().transpose(),
        TensorView.from_numpy(np.arange(3), read_only=True),
        t[0].broadcast((4, 3)),
    ):
        assert r.read_only
        with pytest.raises(GraphError, match="r-tensor"):
            r.assign(0)
        with pytest.raises(GraphError, match="r-tensor"):
            r[...] = 0
    p = t.pad([1, 1], [1, 1])
    with pytest.raises(GraphError, match="r-tensor"):
        p.assign(0)
    with pytest.raises(GraphError, match="r-tensor"):
        p[0, 0] = 1
    np.testing.assert_array_equal(t.to_numpy(), np.arange(6).reshape(2, 3))
    # Broadcasting without aliasing (only adding a length-1 axis) keeps an l-tensor.
    assert not t.broadcast((1, 2, 3)).read_only
    with pytest.raises(LayoutError, match="zero strides"):
        TensorView(t.buffer, Layout((4,), (0,)))


def test_to_numpy_is_a_safe_copy() -> None:
    t = TensorView.from_numpy(np.arange(4))
    out = t.to_numpy()
    out[0] = 99
    assert t[0] == 0
    src = np.arange(4)
    TensorView.from_numpy(src).assign(7)
    assert src.tolist() == [0, 1, 2, 3]


# -- reshape, flatten and linear walks --------------------------------------------------------


def test_reshape_of_non_contiguous_view_raises() -> None:
    t = TensorView.from_numpy(np.arange(6).reshape(2, 3))
    tr = t.transpose()
    with pytest.raises(GraphError, match=r"cannot reshape a view of shape \(3, 2\) with strides"):
        tr.reshape((6,))
    with pytest.raises(GraphError, match="without copying"):
        tr.flatten()
    np.testing.assert_array_equal(tr.copy().reshape(-1).to_numpy(), [0, 3, 1, 4, 2, 5])
    # Splitting an axis never needs a copy, even in a transposed view.
    np.testing.assert_array_equal(
        t[:, ::2].transpose().reshape((2, 1, 2)).to_numpy(),
        np.arange(6).reshape(2, 3)[:, ::2].T.reshape(2, 1, 2),
    )
    with pytest.raises(LayoutError, match="only one dimension may be -1"):
        t.reshape((-1, -1))
    with pytest.raises(LayoutError, match=r"\(6 elements\) into \(4,\) \(4 elements\)"):
        t.reshape((4,))


def test_contiguity_and_flatten() -> None:
    t = TensorView.from_numpy(np.arange(24).reshape(2, 3, 4))
    assert t.layout.is_contiguous and not t.layout.is_column_major_contiguous
    flat = t.flatten()
    assert flat.shape == (24,) and flat.strides == (1,) and flat.is_view_of(t)
    tr = t.transpose((2, 1, 0))
    assert tr.layout.is_column_major_contiguous and not tr.layout.is_contiguous
    assert tr.layout.is_dense
    assert tr.flatten("storage").to_numpy().tolist() == list(range(24))
    sliced = t[:, 1:]
    assert not sliced.layout.is_dense
    with pytest.raises(LayoutError, match="not dense"):
        sliced.flatten("storage")
    rev = t[::-1, :, ::-1]
    assert rev.layout.is_dense and not rev.layout.is_contiguous
    assert sorted(rev.flatten("storage").to_numpy().tolist()) == list(range(24))
    assert Layout.row_major((1, 0, 3)).is_contiguous


def test_can_flatten_with() -> None:
    x = TensorView.from_numpy(np.arange(6.0).reshape(2, 3)).transpose()
    y = TensorView.from_numpy(np.arange(6.0).reshape(2, 3) * 10).transpose()
    c = TensorView.from_numpy(np.arange(6.0).reshape(3, 2) * 10)
    assert x.layout.same_linear_order(y.layout) and x.layout.can_flatten_with(y.layout)
    assert not x.layout.same_linear_order(c.layout)
    assert x.shape == c.shape and not x.layout.can_flatten_with(c.layout)
    padded = TensorView.allocate((3, 2), "f64", sizes=(3, 4))
    assert not padded.layout.is_dense and not padded.layout.can_flatten_with(c.layout)
    assert not x.layout.same_linear_order(Layout.row_major((2, 3)))
    # Only strides of length-1 axes may differ; offsets never matter.
    assert Layout((2, 1), (1, 5), 3).same_linear_order(Layout((2, 1), (1, 0), 0))
    assert not Layout((3, 2), (2, 1)).same_linear_order(Layout((3, 2), (2, 3)))


@FAST
@given(shape=shapes, order=orders, data=st.data())
def test_one_integer_walk_pairs_elements(
    shape: tuple[int, ...], order: Order, data: st.DataObject
) -> None:
    a, x = make_base(shape, order)
    _, y = make_base(shape, order)
    y.assign(y.to_numpy() * 100)
    z = TensorView.from_numpy(np.zeros(shape, dtype=np.int64), order=order)
    vx, x_view = apply_random_views(data, a, x, writable=True, steps=3)
    # The same layout over y's and z's equally shaped buffers.
    y_view = TensorView(y.buffer, x_view.layout)
    z_view = TensorView(z.buffer, x_view.layout)
    assert x_view.layout.same_linear_order(y_view.layout)
    if x_view.layout.is_dense:
        assert x_view.layout.can_flatten_with(z_view.layout)
        diff = y_view.flatten("storage").to_numpy() - x_view.flatten("storage").to_numpy()
        z_view.flatten("storage").assign(diff)
        np.testing.assert_array_equal(z_view.to_numpy(), y_view.to_numpy() - vx)
    else:
        assert not x_view.layout.can_flatten_with(y_view.layout)


# -- identity, errors, misc -------------------------------------------------------------------


def test_is_view_of_and_base() -> None:
    a = np.arange(12).reshape(3, 4)
    t = TensorView.from_numpy(a)
    u = TensorView.from_numpy(a)
    v = t.transpose()[1:, ::2].unsqueeze([0])
    assert v.is_view_of(t) and t.is_view_of(v)
    assert not u.is_view_of(t)
    assert v.base.shape == (12,) and v.base.is_view_of(t)
    assert v.base.buffer is t.buffer
    assert TensorView(t.buffer[2:], Layout.row_major((3,))).is_view_of(t)


def test_axis_and_shape_errors_name_expected_and_actual() -> None:
    lay = Layout.row_major((2, 1, 3))
    with pytest.raises(LayoutError, match=r"cannot squeeze axis 0 of size 2 \(expected size 1\)"):
        lay.squeeze([0])
    with pytest.raises(LayoutError, match=r"axis 3 is out of range for rank 3 \(expected -3..2\)"):
        lay.transpose((0, 1, 3))
    with pytest.raises(LayoutError, match="permutation of 3 axes"):
        lay.transpose((0, 1))
    with pytest.raises(LayoutError, match="repeated axis"):
        lay.transpose((0, 0, 1))
    with pytest.raises(LayoutError, match=r"axis 2 has size 3, expected 1 or 4"):
        lay.broadcast((2, 5, 4))
    with pytest.raises(LayoutError, match="lower-rank"):
        lay.broadcast((3,))
    with pytest.raises(LayoutError, match="step must be non-zero"):
        lay.slice([None], [None], [0])
    with pytest.raises(LayoutIndexError, match="index 2 is out of bounds for axis 0 of size 2"):
        lay.index(0, 2)
    with pytest.raises(LayoutError, match="1-D NumPy array"):
        TensorView(np.zeros((2, 2)), Layout.row_major((2, 2)))
    with pytest.raises(LayoutError, match="buffer has only 3 elements"):
        TensorView(np.zeros(3), Layout.row_major((2, 2)))
    with pytest.raises(GraphError):
        TensorView.from_numpy(np.zeros(2, dtype=np.complex64))
    t = TensorView.from_numpy(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        t[2]


def test_rank_zero_tensors() -> None:
    t = TensorView.from_numpy(np.float32(2.5))
    assert t.shape == () and t[()] == np.float32(2.5)
    assert t.to_numpy().shape == ()
    t[()] = 4
    assert t.item() == 4
    u = t.unsqueeze([0, -1])
    assert u.shape == (1, 1) and u.squeeze().shape == ()
    assert t.reshape((1, 1, 1)).to_numpy().tolist() == [[[4.0]]]
    with pytest.raises(TypeError):
        len(t)
