"""Reshape without copying, contiguity, flattening and one-integer walks over paired layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_checks import FAST, Order, apply_random_views, make_base, orders, shapes

from tensorloop.errors import GraphError
from tensorloop.tensor.layout import Layout, LayoutError, TensorView

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
