"""Network MatrixMultiply, Reduce and TopK layers vs. numpy references, errors included."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from network_layer_checks import MO, RED, RNG, Array, close, rand, run, unary_net

from tensorloop import NetworkError
from tensorloop.network import Network, TopKOperation

# -- matrix multiply ------------------------------------------------------------------------------
# TensorRT: NONE is a matrix, TRANSPOSE a transposed matrix, VECTOR makes the last dim a vector
# (every other dim is batch); written as einsum subscripts for input 0 (m x k) and input 1 (k x n)
_MM_SUBSCRIPTS = (
    {MO.NONE: "mk", MO.TRANSPOSE: "km", MO.VECTOR: "k"},
    {MO.NONE: "kn", MO.TRANSPOSE: "nk", MO.VECTOR: "k"},
)


def _matmul_reference(a: Array, op0: MO, b: Array, op1: MO) -> Array:
    rows = "" if op0 is MO.VECTOR else "m"
    cols = "" if op1 is MO.VECTOR else "n"
    spec = f"...{_MM_SUBSCRIPTS[0][op0]},...{_MM_SUBSCRIPTS[1][op1]}->...{rows}{cols}"
    return np.einsum(spec, a.astype(np.float64), b.astype(np.float64))


def _shape_for(
    op: MO, which: int, batch: tuple[int, ...], sizes: dict[str, int]
) -> tuple[int, ...]:
    return (*batch, *(sizes[c] for c in _MM_SUBSCRIPTS[which][op]))


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)], ids=["no-batch", "batch1", "batch2"])
@pytest.mark.parametrize("op1", list(MO), ids=lambda op: op.name)
@pytest.mark.parametrize("op0", list(MO), ids=lambda op: op.name)
def test_matrix_multiply(op0: MO, op1: MO, batch: tuple[int, ...]) -> None:
    m, k, n = 3, 4, 5
    a = rand(*_shape_for(op0, 0, batch, {"m": m, "k": k}))
    b = rand(*_shape_for(op1, 1, batch, {"k": k, "n": n}))
    net = Network()
    at, bt = net.add_input("a", "float32", a.shape), net.add_input("b", "float32", b.shape)
    layer = net.add_matrix_multiply(at, op0, bt, op1)
    assert (layer.op0, layer.op1) == (op0, op1)
    (out,) = run(net, [layer.get_output(0)], {"a": a, "b": b})
    expected = _matmul_reference(a, op0, b, op1)
    rows = () if op0 is MO.VECTOR else (m,)
    cols = () if op1 is MO.VECTOR else (n,)
    assert expected.shape == (*batch, *rows, *cols)
    close(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("op0", "shape0", "op1", "shape1", "out_shape"),
    [
        (MO.NONE, (1, 3, 4), MO.NONE, (2, 4, 5), (2, 3, 5)),
        (MO.NONE, (2, 1, 3, 4), MO.TRANSPOSE, (1, 6, 5, 4), (2, 6, 3, 5)),
        (MO.VECTOR, (3, 4), MO.NONE, (1, 4, 5), (3, 5)),
        (MO.NONE, (1, 2, 4), MO.VECTOR, (3, 4), (3, 2)),
        (MO.VECTOR, (1, 4), MO.VECTOR, (3, 4), (3,)),
    ],
)
def test_matrix_multiply_broadcasts_batch_dims(
    op0: MO, shape0: tuple[int, ...], op1: MO, shape1: tuple[int, ...], out_shape: tuple[int, ...]
) -> None:
    a, b = rand(*shape0), rand(*shape1)
    net = Network()
    at, bt = net.add_input("a", "float32", a.shape), net.add_input("b", "float32", b.shape)
    (out,) = run(net, [net.add_matrix_multiply(at, op0, bt, op1).get_output(0)], {"a": a, "b": b})
    assert out.shape == out_shape
    close(out, _matmul_reference(a, op0, b, op1), atol=1e-5)


@pytest.mark.parametrize(
    ("shape0", "op0", "shape1", "op1", "match"),
    [
        ((3,), MO.NONE, (3, 4), MO.NONE, r"ranks \[1, 2\] are too small.*\['NONE', 'NONE'\]"),
        ((2, 3, 4), MO.NONE, (4, 5), MO.NONE, r"different batch ranks"),
        ((3, 4), MO.VECTOR, (4, 5), MO.NONE, r"different batch ranks"),
        ((3, 4), MO.NONE, (3, 5), MO.NONE, r"MatMul: inner dims do not match"),
        ((3, 4), MO.TRANSPOSE, (4, 5), MO.NONE, r"inner dims do not match"),
        ((2, 3, 4), MO.NONE, (3, 4, 5), MO.NONE, r"matrix_multiply layer"),
    ],
)
def test_matrix_multiply_errors(
    shape0: tuple[int, ...], op0: MO, shape1: tuple[int, ...], op1: MO, match: str
) -> None:
    net = Network()
    a, b = net.add_input("a", "float32", shape0), net.add_input("b", "float32", shape1)
    with pytest.raises(NetworkError, match=match):
        net.add_matrix_multiply(a, op0, b, op1)


def test_matrix_multiply_dtypes_must_agree() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2, 3)), net.add_input("b", "int32", (3, 2))
    with pytest.raises(NetworkError, match=r"types \['float32', 'int32'\]"):
        net.add_matrix_multiply(a, MO.NONE, b, MO.NONE)


def test_matrix_multiply_refused_op_change_keeps_the_old() -> None:
    a, b = rand(3, 4), rand(4, 5)
    net = Network()
    at, bt = net.add_input("a", "float32", a.shape), net.add_input("b", "float32", b.shape)
    layer = net.add_matrix_multiply(at, MO.NONE, bt, MO.NONE)
    with pytest.raises(NetworkError, match="different batch ranks"):
        layer.op0 = MO.VECTOR
    assert layer.op0 is MO.NONE
    assert layer.get_output(0).shape == (3, 5)
    (out,) = run(net, [layer.get_output(0)], {"a": a, "b": b})
    close(out, a.astype(np.float64) @ b, atol=1e-5)


# -- reduce ---------------------------------------------------------------------------------------
REDUCES: dict[RED, Callable[..., Array]] = {
    RED.SUM: np.sum,
    RED.PROD: np.prod,
    RED.MAX: np.max,
    RED.MIN: np.min,
    RED.AVG: np.mean,
}


def test_every_reduce_operation_is_covered() -> None:
    assert set(REDUCES) == set(RED)


@pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])
@pytest.mark.parametrize("mask", [0b001, 0b010, 0b100, 0b101, 0b111])
@pytest.mark.parametrize("op", list(RED), ids=lambda op: op.name)
def test_reduce(op: RED, mask: int, keep_dims: bool) -> None:
    x = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    net, xt = unary_net(x)
    layer = net.add_reduce(xt, op, mask, keep_dims)
    assert (layer.op, layer.axes, layer.keep_dims) == (op, mask, keep_dims)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    axes = tuple(a for a in range(3) if mask >> a & 1)
    close(out, REDUCES[op](x.astype(np.float64), axis=axes, keepdims=keep_dims))


@pytest.mark.parametrize("op", [RED.SUM, RED.PROD, RED.MAX, RED.MIN], ids=lambda op: op.name)
def test_reduce_int(op: RED) -> None:
    x = np.array([[3, -1, 4], [1, -5, 9]], np.int32)
    net, xt = unary_net(x)
    (out,) = run(net, [net.add_reduce(xt, op, 0b10, False).get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, REDUCES[op](x, axis=1))


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (0, r"reduce layer .*the axes bitmask names no axis"),
        (0b1000, r"axes bitmask 0b1000 names an axis a rank-3 input lacks"),
        (0b1001, r"names an axis a rank-3 input lacks"),
        (-1, r"names an axis a rank-3 input lacks"),
    ],
)
def test_reduce_bad_axes(mask: int, match: str) -> None:
    x = rand(2, 3, 4)
    net, xt = unary_net(x)
    with pytest.raises(NetworkError, match=match):
        net.add_reduce(xt, RED.SUM, mask, True)
    layer = net.add_reduce(xt, RED.MAX, 0b10, False)
    with pytest.raises(NetworkError, match=match):
        layer.axes = mask
    assert layer.axes == 0b10
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x.max(axis=1))


# -- topk -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", list(TopKOperation), ids=lambda op: op.name)
def test_topk(op: TopKOperation, axis: int, k: int) -> None:
    x = (RNG.permutation(24).reshape(4, 6) - 10).astype(np.float32)  # no ties
    net, xt = unary_net(x)
    layer = net.add_topk(xt, op, k, 1 << axis)
    assert (layer.op, layer.k, layer.axes) == (op, k, 1 << axis)
    assert layer.num_outputs == 2
    values, indices = run(net, [layer.get_output(0), layer.get_output(1)], {"x": x})
    order = np.argsort(-x if op is TopKOperation.MAX else x, axis=axis, kind="stable")
    expected_idx = np.take(order, np.arange(k), axis=axis)
    assert indices.dtype == np.int32
    np.testing.assert_array_equal(indices, expected_idx)
    np.testing.assert_array_equal(values, np.take_along_axis(x, expected_idx, axis=axis))


def test_topk_of_ints() -> None:
    x = np.array([[5, -2, 9, 0]], np.int32)
    net, xt = unary_net(x)
    layer = net.add_topk(xt, TopKOperation.MIN, 2, 0b10)
    values, indices = run(net, [layer.get_output(0), layer.get_output(1)], {"x": x})
    np.testing.assert_array_equal(values, [[-2, 0]])
    np.testing.assert_array_equal(indices, [[1, 3]])


@pytest.mark.parametrize(
    ("setting", "value", "match"),
    [
        ("axes", 0b11, r"topk layer .*the axes bitmask must name one axis"),
        ("axes", 0, r"must name one axis"),
        ("axes", 0b100, r"names an axis a rank-2 input lacks"),
        ("k", 7, r"k = 7 is out of range for axis 1"),
    ],
)
def test_topk_refused_settings_keep_the_old(setting: str, value: int, match: str) -> None:
    x = rand(4, 6)
    net, xt = unary_net(x)
    with pytest.raises(NetworkError, match=match):
        kwargs = {"k": 2, "axes": 0b10, setting: value}
        net.add_topk(xt, TopKOperation.MAX, kwargs["k"], kwargs["axes"])
    layer = net.add_topk(xt, TopKOperation.MAX, 2, 0b10)
    with pytest.raises(NetworkError, match=match):
        setattr(layer, setting, value)
    assert (layer.k, layer.axes) == (2, 0b10)
    values, _ = run(net, [layer.get_output(0), layer.get_output(1)], {"x": x})
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1)[:, :2])
