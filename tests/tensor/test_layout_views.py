"""Views (slice, index, reshape, broadcast, pad, getitem) agree with NumPy; identity, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_checks import (
    FAST,
    Order,
    apply_random_views,
    assert_same_view,
    draw_key,
    draw_reshape_target,
    make_base,
    orders,
    shapes,
)

from tensorloop.errors import GraphError
from tensorloop.tensor.layout import (
    Layout,
    LayoutError,
    LayoutIndexError,
    PaddedTensor,
    PaddedView,
    TensorView,
)

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
