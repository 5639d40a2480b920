"""Writes through views land where NumPy's do; r-tensors refuse them; reads are safe copies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_checks import FAST, Order, apply_random_views, make_base, orders, shapes

from tensorloop.errors import GraphError
from tensorloop.tensor.layout import Layout, LayoutError, TensorView

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
