"""Layouts: strides, sizes, extents and their predicates agree with NumPy and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_checks import FAST, Order, apply_random_views, make_base, orders, shapes

from tensorloop.tensor.layout import Layout, LayoutError, LayoutIndexError, TensorView

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
