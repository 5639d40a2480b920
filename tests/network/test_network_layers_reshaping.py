"""Network Shuffle, Slice, Concatenation, Gather and Shape layers, static and dynamic."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from network_layer_checks import EW, UN, Array, check_typed, const, ints, rand, run, unary_net

from tensorloop import NetworkError
from tensorloop.errors import ExecutionError
from tensorloop.network import Network


# -- shuffle --------------------------------------------------------------------------------------
def _reshape_reference(x: Array, dims: Sequence[int], zero_is_placeholder: bool) -> Array:
    """TensorRT reshape dims: a 0 copies the input dim (placeholder mode), one -1 is inferred."""
    real = [x.shape[i] if d == 0 and zero_is_placeholder else d for i, d in enumerate(dims)]
    if -1 in real:
        known = math.prod(d for d in real if d != -1)
        real[real.index(-1)] = x.size // known
    assert math.prod(real) == x.size
    return x.reshape(real)


@pytest.mark.parametrize(
    ("first", "dims", "second"),
    [
        ((2, 0, 1), None, None),
        (None, (0, -1), None),
        (None, (6, 4), None),
        (None, (-1, 0, 2), None),  # the 0 copies input dim 1
        (None, (2, 3, 0, 1), None),  # the 0 copies input dim 2
        ((1, 0, 2), (0, -1), None),  # the 0 copies a dim of the first transpose's result
        ((2, 1, 0), (0, 0, 2), None),
        (None, (6, 4), (1, 0)),
        ((0, 2, 1), (2, 2, -1), (2, 0, 1)),
        (None, None, (1, 2, 0)),
        (None, (24,), None),
    ],
)
def test_shuffle_static(
    first: tuple[int, ...] | None, dims: tuple[int, ...] | None, second: tuple[int, ...] | None
) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    net, xt = unary_net(x)
    layer = net.add_shuffle(xt)
    layer.first_transpose, layer.reshape_dims, layer.second_transpose = first, dims, second
    expected = x if first is None else np.transpose(x, first)
    if dims is not None:
        expected = _reshape_reference(expected, dims, True)
    if second is not None:
        expected = np.transpose(expected, second)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("source", ["input", "layer"])
def test_shuffle_without_settings_is_identity(source: str) -> None:
    x = rand(2, 3)
    net, xt = unary_net(x)
    outputs = []
    if source == "layer":
        xt = net.add_unary(xt, UN.NEG).get_output(0)
        outputs.append(xt)
    layer = net.add_shuffle(xt)
    assert layer.zero_is_placeholder is True
    outputs.append(layer.get_output(0))
    arrays = run(net, outputs, {"x": x})
    np.testing.assert_array_equal(arrays[-1], -x if source == "layer" else x)


def test_shuffle_zero_is_placeholder_false_makes_a_zero_dim() -> None:
    x = np.zeros((2, 0, 3), np.float32)
    net, xt = unary_net(x)
    layer = net.add_shuffle(xt)
    layer.zero_is_placeholder = False
    layer.reshape_dims = (0, 5)
    assert layer.get_output(0).shape == (0, 5)
    # with the placeholder the 0 would copy dim 0 (2): 10 elements from 0, refused, old kept
    with pytest.raises(NetworkError, match=r"shuffle layer .*Reshape"):
        layer.zero_is_placeholder = True
    assert layer.zero_is_placeholder is False
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    assert out.shape == (0, 5)


def test_shuffle_refused_zero_is_placeholder_keeps_the_old() -> None:
    x = rand(2, 3)
    net, xt = unary_net(x)
    layer = net.add_shuffle(xt)
    layer.reshape_dims = (0, 3)  # the 0 copies dim 0: (2, 3)
    with pytest.raises(NetworkError, match=r"cannot reshape 6 elements into \[0, 3\]"):
        layer.zero_is_placeholder = False  # (0, 3) taken literally holds no elements
    assert layer.zero_is_placeholder is True
    assert layer.reshape_dims == (0, 3)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize(
    ("setting", "value", "match"),
    [
        ("reshape_dims", (7,), r"shuffle layer .*cannot reshape 24 elements into \[7\]"),
        ("reshape_dims", (-1, -1), r"shuffle layer"),
        ("first_transpose", (0, 0, 1), r"perm \[0, 0, 1\] is not a permutation"),
        ("first_transpose", (1, 0), r"shuffle layer .*Transpose"),
        ("second_transpose", (1, 0), r"shuffle layer .*Transpose"),
    ],
)
def test_shuffle_errors_keep_the_old_setting(setting: str, value: Any, match: str) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    net, xt = unary_net(x)
    layer = net.add_shuffle(xt)
    layer.reshape_dims = (4, 3, 2)
    old = getattr(layer, setting)
    with pytest.raises(NetworkError, match=match):
        setattr(layer, setting, value)
    assert getattr(layer, setting) == old
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x.reshape(4, 3, 2))


@pytest.mark.parametrize("shape_dtype", ["int32", "int64"])
def test_shuffle_dynamic_reshape_from_a_shape_tensor(shape_dtype: str) -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 6))
    spec = net.add_input("spec", shape_dtype, (3,))
    layer = net.add_shuffle(x)
    with pytest.raises(NetworkError, match=r"perm \[0, 2, 1\] is not a permutation of rank 2"):
        layer.second_transpose = (0, 2, 1)  # the reshape is not set yet: the result is rank 2
    layer.set_input(1, spec)
    layer.second_transpose = (0, 2, 1)
    out_t = layer.get_output(0)
    assert len(out_t.shape) == 3
    net.mark_output(out_t)
    model = net.to_model()
    for n, dims in [(2, (0, 3, -1)), (5, (-1, 2, 3)), (4, (0, 6, 1))]:
        data = np.arange(n * 6, dtype=np.float32).reshape(n, 6)
        out = np.asarray(model.run({"x": data, "spec": np.array(dims, shape_dtype)})[out_t.name])
        expected = np.transpose(_reshape_reference(data, dims, True), (0, 2, 1))
        check_typed(out_t, out, exact=False)
        np.testing.assert_array_equal(out, expected)


def test_shuffle_dynamic_reshape_to_another_tensors_shape() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1,))
    like = net.add_input("like", "float32", (-1, -1))
    layer = net.add_shuffle(x)
    layer.set_input(1, net.add_shape(like).get_output(0))
    out_t = layer.get_output(0)
    net.mark_output(out_t)
    model = net.to_model()
    for rows, cols in [(2, 3), (4, 1)]:
        data = np.arange(rows * cols, dtype=np.float32)
        feeds = {"x": data, "like": np.zeros((rows, cols), np.float32)}
        out = np.asarray(model.run(feeds)[out_t.name])
        check_typed(out_t, out, exact=False)
        np.testing.assert_array_equal(out, data.reshape(rows, cols))


# -- slice ----------------------------------------------------------------------------------------
def _slice_reference(x: Array, start: Sequence[int], size: Sequence[int], stride: Sequence[int]):
    """TensorRT: out[i] = in[start + i * stride] on every axis (all of it in bounds)."""
    index = [s + np.arange(n) * k for s, n, k in zip(start, size, stride, strict=True)]
    for idx, d in zip(index, x.shape, strict=True):
        assert ((idx >= 0) & (idx < d)).all(), "the reference reads in bounds only"
    return x[np.ix_(*index)]


SLICES = [
    ((6,), (1,), (3,), (2,)),
    ((6,), (0,), (6,), (1,)),
    ((6,), (5,), (3,), (-2,)),
    ((6,), (5,), (6,), (-1,)),
    ((6,), (4,), (5,), (-1,)),
    ((6,), (3,), (0,), (1,)),
    ((7,), (0,), (3,), (3,)),
    ((4, 5), (3, 1), (2, 2), (-2, 3)),
    ((4, 5), (0, 4), (4, 5), (1, -1)),
    ((4, 5), (1, 0), (3, 0), (1, 1)),
    ((2, 3, 4), (1, 2, 3), (1, 3, 2), (-1, -1, -3)),
]


@pytest.mark.parametrize(("in_shape", "start", "size", "stride"), SLICES)
def test_slice_static(
    in_shape: tuple[int, ...],
    start: tuple[int, ...],
    size: tuple[int, ...],
    stride: tuple[int, ...],
) -> None:
    x = np.arange(math.prod(in_shape), dtype=np.float32).reshape(in_shape)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, start, size, stride)
    assert (layer.start, layer.shape, layer.stride) == (start, size, stride)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, _slice_reference(x, start, size, stride))


def test_slice_stride_zero_of_shape_one() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (1, 2), (1, 1), (0, 0))
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, [[5.0]])


def test_slice_stride_zero_broadcasts() -> None:
    x = np.arange(4, dtype=np.float32)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (2,), (3,), (0,))
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    ("start", "size", "stride", "match"),
    [
        ((6, 0), (1, 1), (1, 1), r"axis 0 reads elements 6 to 6 of 6; a slice must stay in bounds"),
        ((-1, 0), (1, 1), (1, 1), r"axis 0 reads elements -1 to -1 of 6"),
        ((0, 1), (1, 4), (1, 1), r"axis 1 reads elements 1 to 4 of 4"),
        ((1, 0), (3, 1), (-1, 1), r"axis 0 reads elements 1 to -1 of 6"),
        ((0, 0), (3, 1), (3, 1), r"axis 0 reads elements 0 to 6 of 6"),
        ((0,), (1,), (1,), r"start \[0\] has 1 entries for a rank-2 input"),
        ((0, 0), (1, 1, 1), (1, 1), r"shape \[1, 1, 1\] has 3 entries for a rank-2 input"),
        ((0, 0), (1, 1), (1,), r"stride \[1\] has 1 entries"),
        ((0, 0), (-1, 1), (1, 1), r"axis 0 has negative shape -1"),
    ],
)
def test_slice_errors(
    start: tuple[int, ...], size: tuple[int, ...], stride: tuple[int, ...], match: str
) -> None:
    net = Network()
    x = net.add_input("x", "float32", (6, 4))
    with pytest.raises(NetworkError, match=match):
        net.add_slice(x, start, size, stride)
    assert net.num_layers == 0


def test_slice_refused_setting_keeps_the_old() -> None:
    x = np.arange(6, dtype=np.float32)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (0,), (3,), (2,))
    with pytest.raises(NetworkError, match="reads elements 2 to 6 of 6"):
        layer.start = (2,)
    with pytest.raises(NetworkError, match="must stay in bounds"):
        layer.shape = (4,)
    with pytest.raises(NetworkError, match="entries for a rank-1 input"):
        layer.stride = (1, 1)
    assert (layer.start, layer.shape, layer.stride) == ((0,), (3,), (2,))
    layer.stride = (1,)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_slice_dynamic_start_shape_stride(index_dtype: str) -> None:
    x = np.arange(40, dtype=np.float32).reshape(8, 5)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (0, 0), (1, 1), (1, 1))
    names = ("start", "size", "stride")
    for i, name in enumerate(names, start=1):
        layer.set_input(i, net.add_input(name, index_dtype, (2,)))
    assert layer.num_inputs == 4
    out_t = layer.get_output(0)
    net.mark_output(out_t)
    model = net.to_model()
    cases = [
        ((1, 0), (3, 5), (2, 1)),
        ((7, 4), (4, 2), (-2, -3)),
        ((6, 2), (7, 1), (-1, 1)),
        ((0, 0), (8, 5), (1, 1)),
        ((3, 1), (0, 2), (1, 2)),
    ]
    for start, size, stride in cases:
        values = (np.array(v, index_dtype) for v in (start, size, stride))
        feeds = {"x": x, **dict(zip(names, values, strict=True))}
        out = np.asarray(model.run(feeds)[out_t.name])
        check_typed(out_t, out, exact=False)
        np.testing.assert_array_equal(out, _slice_reference(x, start, size, stride))


def test_slice_dynamic_start_only_keeps_static_shape_and_stride() -> None:
    x = np.arange(10, dtype=np.float32)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (9,), (3,), (-2,))
    layer.set_input(1, net.add_input("start", "int32", (1,)))
    out_t = layer.get_output(0)
    net.mark_output(out_t)
    model = net.to_model()
    for s in (4, 9, 7):
        out = np.asarray(model.run({"x": x, "start": ints(s)})[out_t.name])
        check_typed(out_t, out, exact=False)
        np.testing.assert_array_equal(out, _slice_reference(x, (s,), (3,), (-2,)))


def test_slice_dynamic_size_without_dynamic_start() -> None:
    x = np.arange(10, dtype=np.float32)
    net, xt = unary_net(x)
    layer = net.add_slice(xt, (1,), (2,), (2,))
    layer.set_input(2, net.add_input("size", "int32", (1,)))
    (out,) = run(net, [layer.get_output(0)], {"x": x, "size": ints(4)}, exact=False)
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0, 7.0])


def test_slice_of_a_dynamic_input() -> None:
    net = Network()
    xt = net.add_input("x", "float32", (-1, 4))
    layer = net.add_slice(xt, (1, 3), (2, 2), (1, -2))
    out_t = layer.get_output(0)
    assert out_t.shape[1] == 2
    net.mark_output(out_t)
    model = net.to_model()
    for n in (3, 6):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        out = np.asarray(model.run({"x": x})[out_t.name])
        check_typed(out_t, out, exact=False)
        np.testing.assert_array_equal(out, _slice_reference(x, (1, 3), (2, 2), (1, -2)))


def test_slice_out_of_bounds_at_run_time_is_an_error() -> None:
    net = Network()
    xt = net.add_input("x", "float32", (-1,))
    out_t = net.add_slice(xt, (0,), (3,), (1,)).get_output(0)
    net.mark_output(out_t)
    with pytest.raises(ExecutionError):
        net.to_model().run({"x": np.arange(2, dtype=np.float32)})


# -- concatenation --------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concatenation(axis: int) -> None:
    sizes = (1, 2, 3)
    arrays = []
    for i, n in enumerate(sizes):
        shape = [2, 3, 4]
        shape[axis] = n
        arrays.append(np.full(shape, i, np.float32) + rand(*shape))
    net = Network()
    inputs = [net.add_input(f"x{i}", "float32", a.shape) for i, a in enumerate(arrays)]
    # typed at creation with axis 0, so inputs that differ elsewhere go in after the axis is set
    layer = net.add_concatenation([inputs[0]] * len(inputs))
    assert layer.axis == 0
    layer.axis = axis
    for i, t in enumerate(inputs):
        layer.set_input(i, t)
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    (out,) = run(net, [layer.get_output(0)], feeds)
    np.testing.assert_array_equal(out, np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("dt", ["int32", "bool"])
def test_concatenation_of_one_and_other_dtypes(dt: str) -> None:
    a = (np.arange(6).reshape(2, 3) % 2).astype(dt)
    net, xt = unary_net(a)
    two = net.add_concatenation([xt, xt])
    two.axis = 1
    (out1, out2) = run(
        net, [net.add_concatenation([xt]).get_output(0), two.get_output(0)], {"x": a}
    )
    np.testing.assert_array_equal(out1, a)
    np.testing.assert_array_equal(out2, np.concatenate([a, a], axis=1))


def test_concatenation_axis_set_after_adding() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2, 3)), net.add_input("b", "float32", (2, 4))
    layer = net.add_concatenation([a, b])
    layer.axis = 1
    assert layer.get_output(0).shape == (2, 7)


def test_concatenation_default_axis_is_trts() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (1, 2, 3, 4)), net.add_input("b", "float32", (1, 5, 3, 4))
    assert net.add_concatenation([a, b]).axis == 1


def test_concatenation_needs_an_input() -> None:
    with pytest.raises(NetworkError, match=r"needs at least one input"):
        Network().add_concatenation([])


@pytest.mark.parametrize(
    ("second", "match"),
    [
        (("float32", (2, 4)), r"inputs differ off the concat axis 0"),
        (("float32", (2, 3, 1)), r"ranks \[2, 3\]"),
        (("int32", (2, 3)), r"must share one element type"),
    ],
)
def test_concatenation_errors_wait_for_the_first_use(
    second: tuple[str, tuple[int, ...]], match: str
) -> None:
    # TensorRT code sets the axis after adding the layer, so a bad layer is refused when its
    # output is first used, or by validate()
    net = Network()
    a, b = net.add_input("a", "float32", (2, 3)), net.add_input("b", *second)
    layer = net.add_concatenation([a, b])
    with pytest.raises(NetworkError, match=match):
        _ = layer.get_output(0).shape
    with pytest.raises(NetworkError, match=match):
        net.add_identity(layer.get_output(0))
    net.mark_output(layer.get_output(0))
    with pytest.raises(NetworkError, match=match):
        net.validate()


def test_concatenation_refused_axis_keeps_the_old() -> None:
    x, y = rand(2, 3), rand(2, 4)
    net = Network()
    a, b = net.add_input("a", "float32", x.shape), net.add_input("b", "float32", y.shape)
    layer = net.add_concatenation([a, a])
    layer.axis = 1
    layer.set_input(1, b)
    with pytest.raises(NetworkError, match=r"concatenation layer .*axis 5 is out of range"):
        layer.axis = 5
    with pytest.raises(NetworkError, match=r"inputs differ off the concat axis 0"):
        layer.axis = 0
    assert layer.axis == 1
    with pytest.raises(NetworkError, match=r"cannot set input 2; it takes inputs 0 to 1"):
        layer.set_input(2, a)
    (out,) = run(net, [layer.get_output(0)], {"a": x, "b": y})
    np.testing.assert_array_equal(out, np.concatenate([x, y], axis=1))


# -- gather ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather(axis: int, index_dtype: str) -> None:
    x = rand(3, 4, 5)
    idx = np.array([[2, 0], [1, 2], [0, 0]], index_dtype)
    net, xt = unary_net(x)
    layer = net.add_gather(xt, const(net, idx), axis)
    assert layer.axis == axis
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    # TensorRT DEFAULT mode: data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    assert out.shape == (*x.shape[:axis], *idx.shape, *x.shape[axis + 1 :])
    np.testing.assert_array_equal(out, np.take(x, idx, axis=axis))


def test_gather_scalar_index_drops_the_axis() -> None:
    x = rand(3, 4)
    net, xt = unary_net(x)
    (out,) = run(
        net, [net.add_gather(xt, const(net, np.array(2, np.int32)), 1).get_output(0)], {"x": x}
    )
    np.testing.assert_array_equal(out, x[:, 2])


def test_gather_refused_axis_keeps_the_old() -> None:
    x = rand(3, 4)
    net, xt = unary_net(x)
    idx = const(net, ints(1, 0))
    with pytest.raises(NetworkError, match=r"gather layer .*axis 2 is out of range for rank 2"):
        net.add_gather(xt, idx, 2)
    layer = net.add_gather(xt, idx, 1)
    with pytest.raises(NetworkError, match=r"axis 4 is out of range"):
        layer.axis = 4
    assert layer.axis == 1
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x[:, [1, 0]])


# -- shape ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("declared", "shapes"),
    [
        ((-1,), [(3,), (5,)]),
        ((-1, 3, -1), [(2, 3, 4), (1, 3, 7)]),
        ((-1, -1, 5), [(1, 0, 5), (4, 2, 5)]),
    ],
)
def test_shape(declared: tuple[int, ...], shapes: list[tuple[int, ...]]) -> None:
    net = Network()
    xt = net.add_input("x", "float32", declared)
    assert xt.shape == declared
    out_t = net.add_shape(xt).get_output(0)
    assert out_t.shape == (len(shapes[0]),)
    assert out_t.dtype.numpy == np.int64
    net.mark_output(out_t)
    model = net.to_model()
    for shape in shapes:
        out = np.asarray(model.run({"x": np.zeros(shape, np.float32)})[out_t.name])
        check_typed(out_t, out)
        np.testing.assert_array_equal(out, shape)


@pytest.mark.parametrize("kind", ["shape", "elementwise"])
def test_folded_outputs_keep_their_names(kind: str) -> None:
    x = np.zeros((2, 3), np.float32)
    net, xt = unary_net(x)
    if kind == "shape":
        out_t = net.add_shape(xt).get_output(0)
        expected = np.array([2, 3])
    else:
        c = const(net, np.array([1.0, 2.0], np.float32))
        out_t = net.add_elementwise(c, c, EW.SUM).get_output(0)
        expected = np.array([2.0, 4.0], np.float32)
    (out,) = run(net, [out_t], {"x": x})
    np.testing.assert_array_equal(out, expected)
