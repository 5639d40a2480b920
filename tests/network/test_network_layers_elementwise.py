"""Network Constant, Identity, ElementWise, Select and Cast layers vs. numpy references."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from network_layer_checks import EW, RNG, Array, close, const, rand, run, unary_net

from tensorloop import NetworkError
from tensorloop.network import Network


# -- constant and identity ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "weights",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.arange(4, dtype=np.int32),
        np.array(2.5, np.float32),
        np.array([[True, False]]),
        np.arange(6, dtype=np.int64).reshape(3, 2, 1),
    ],
    ids=["f32-2d", "i32-1d", "scalar", "bool", "i64-3d"],
)
def test_constant(weights: Array) -> None:
    net = Network()
    layer = net.add_constant(weights.shape, weights.ravel())
    assert layer.shape == weights.shape
    np.testing.assert_array_equal(layer.weights, weights)
    (out,) = run(net, [layer.get_output(0)], {})
    np.testing.assert_array_equal(out, weights)


def test_constant_weights_are_copied_and_frozen() -> None:
    net = Network()
    w = np.ones(3, np.float32)
    layer = net.add_constant((3,), w)
    w[0] = 7.0
    assert layer.weights[0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        layer.weights[0] = 5.0


@pytest.mark.parametrize("dt", ["float32", "int32", "bool", "int64"])
def test_identity(dt: str) -> None:
    x = (np.arange(6).reshape(2, 3) % 2).astype(dt)
    net, xt = unary_net(x)
    (out,) = run(net, [net.add_identity(xt).get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x)


# -- elementwise ----------------------------------------------------------------------------------
FLOAT_EW: dict[EW, Callable[[Array, Array], Array]] = {
    EW.SUM: np.add,
    EW.PROD: np.multiply,
    EW.MAX: np.maximum,
    EW.MIN: np.minimum,
    EW.SUB: np.subtract,
    EW.DIV: np.divide,
    EW.POW: np.power,
    EW.FLOOR_DIV: lambda a, b: np.floor(a / b),
}
INT_EW: dict[EW, Callable[[Array, Array], Array]] = {
    EW.SUM: np.add,
    EW.PROD: np.multiply,
    EW.MAX: np.maximum,
    EW.MIN: np.minimum,
    EW.SUB: np.subtract,
    EW.FLOOR_DIV: np.floor_divide,  # rounds toward -inf: -7 // 2 == -4, 7 // -2 == -4
}
COMPARE_EW: dict[EW, Callable[[Array, Array], Array]] = {
    EW.EQUAL: np.equal,
    EW.GREATER: np.greater,
    EW.LESS: np.less,
}
BOOL_EW: dict[EW, Callable[[Array, Array], Array]] = {
    EW.AND: np.logical_and,
    EW.OR: np.logical_or,
    EW.XOR: np.logical_xor,
}


def test_every_elementwise_operation_is_covered() -> None:
    assert set(FLOAT_EW) | set(COMPARE_EW) | set(BOOL_EW) == set(EW)


def _elementwise(op: EW, a: Array, b: Array) -> Array:
    net = Network()
    at, bt = net.add_input("a", a.dtype, a.shape), net.add_input("b", b.dtype, b.shape)
    layer = net.add_elementwise(at, bt, op)
    assert layer.op is op
    (out,) = run(net, [layer.get_output(0)], {"a": a, "b": b})
    return out


@pytest.mark.parametrize("op", list(FLOAT_EW), ids=lambda op: op.name)
def test_elementwise_float_broadcasts_equal_ranks(op: EW) -> None:
    a = RNG.uniform(-4, 4, (2, 1, 3)).astype(np.float32)
    b = RNG.uniform(0.5, 3, (1, 4, 3)).astype(np.float32) * np.array([1, -1, 1], np.float32)
    if op is EW.POW:
        a = np.abs(a) + 0.25
    out = _elementwise(op, a, b)
    assert out.shape == (2, 4, 3)
    close(out, FLOAT_EW[op](a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize("dt", ["int32", "int64"])
@pytest.mark.parametrize("op", list(INT_EW), ids=lambda op: op.name)
def test_elementwise_int(op: EW, dt: str) -> None:
    a = np.array([[7, -7, 7, -7, 0, 6, -6, 1]], dt)
    b = np.array([[2], [-2], [3]], dt)
    out = _elementwise(op, a, b)
    np.testing.assert_array_equal(out, INT_EW[op](a, b))


def test_elementwise_int_div_of_non_negatives() -> None:
    a, b = np.array([7, 6, 0, 9], np.int32), np.array([2, 3, 5, 10], np.int32)
    np.testing.assert_array_equal(_elementwise(EW.DIV, a, b), [3, 2, 0, 0])


def test_floor_div_float_rounds_toward_minus_infinity() -> None:
    a = np.array([7.5, -7.5, 7.5, -7.5, 6.0, -0.5], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 4.0], np.float32)
    np.testing.assert_array_equal(_elementwise(EW.FLOOR_DIV, a, b), [3, -4, -4, 3, 2, -1])


@pytest.mark.parametrize("dt", ["float32", "int32"])
@pytest.mark.parametrize("op", list(COMPARE_EW), ids=lambda op: op.name)
def test_elementwise_comparisons_give_bool(op: EW, dt: str) -> None:
    a = np.array([[1, 2, 3, 4]], dt)
    b = np.array([[3], [2]], dt)
    out = _elementwise(op, a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, COMPARE_EW[op](a, b))


@pytest.mark.parametrize("op", list(BOOL_EW), ids=lambda op: op.name)
def test_elementwise_logical(op: EW) -> None:
    a = np.array([[False, True, False, True]])
    b = np.array([[False], [True]])
    np.testing.assert_array_equal(_elementwise(op, a, b), BOOL_EW[op](a, b))


@pytest.mark.parametrize("op", list(BOOL_EW), ids=lambda op: op.name)
def test_elementwise_logical_needs_bool(op: EW) -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2,)), net.add_input("b", "float32", (2,))
    with pytest.raises(NetworkError, match=r"elementwise layer .*expected a bool tensor"):
        net.add_elementwise(a, b, op)


def test_elementwise_different_ranks_is_an_error() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2, 3)), net.add_input("b", "float32", (3,))
    with pytest.raises(NetworkError, match=r"ranks \[2, 1\].*equal rank"):
        net.add_elementwise(a, b, EW.SUM)
    assert net.num_layers == 0  # the refused layer is not kept


def test_elementwise_different_dtypes_is_an_error() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2,)), net.add_input("b", "int32", (2,))
    with pytest.raises(NetworkError, match=r"types \['float32', 'int32'\].*cast layer"):
        net.add_elementwise(a, b, EW.SUM)


def test_elementwise_incompatible_dims_is_an_error() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (2, 3)), net.add_input("b", "float32", (2, 4))
    with pytest.raises(NetworkError, match=r"elementwise layer"):
        net.add_elementwise(a, b, EW.SUM)


def test_elementwise_op_change_retypes_and_a_refused_one_keeps_the_old() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (3,)), net.add_input("b", "float32", (3,))
    layer = net.add_elementwise(a, b, EW.SUM)
    layer.op = EW.LESS
    assert layer.get_output(0).dtype.numpy == np.bool_
    with pytest.raises(NetworkError, match="expected a bool tensor"):
        layer.op = EW.AND
    assert layer.op is EW.LESS
    x, y = np.array([1, 5, 3], np.float32), np.array([2, 2, 3], np.float32)
    (out,) = run(net, [layer.get_output(0)], {"a": x, "b": y})
    np.testing.assert_array_equal(out, x < y)


def test_set_input_refused_keeps_the_old_input() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (3,)), net.add_input("b", "float32", (3,))
    c = net.add_input("c", "float32", (1, 3))
    layer = net.add_elementwise(a, b, EW.SUB)
    with pytest.raises(NetworkError, match="ranks"):
        layer.set_input(1, c)
    assert layer.get_input(1) is b
    with pytest.raises(NetworkError, match="cannot set input 2"):
        layer.set_input(2, a)
    with pytest.raises(NetworkError, match="depends on its own output"):
        layer.set_input(0, layer.get_output(0))
    assert layer.get_input(0) is a
    x, y = np.array([1, 5, 3], np.float32), np.array([2, 2, 3], np.float32)
    feeds = {"a": x, "b": y, "c": y[None]}  # an unused input is still an input of the model
    (out,) = run(net, [layer.get_output(0)], feeds)
    np.testing.assert_array_equal(out, x - y)


# -- select ---------------------------------------------------------------------------------------
def test_select_broadcasts_equal_ranks() -> None:
    cond = np.array([[[True, False, True]], [[False, False, True]]])  # (2, 1, 3)
    a, b = rand(1, 4, 3), rand(2, 4, 1)
    net = Network()
    ct = net.add_input("c", "bool", cond.shape)
    at, bt = net.add_input("a", "float32", a.shape), net.add_input("b", "float32", b.shape)
    layer = net.add_select(ct, at, bt)
    (out,) = run(net, [layer.get_output(0)], {"c": cond, "a": a, "b": b})
    np.testing.assert_array_equal(out, np.where(cond, a, b))


def test_select_of_ints() -> None:
    cond = np.array([True, False, False, True])
    net = Network()
    ct = net.add_input("c", "bool", (4,))
    a = const(net, np.arange(4, dtype=np.int32))
    b = const(net, -np.arange(4, dtype=np.int32))
    (out,) = run(net, [net.add_select(ct, a, b).get_output(0)], {"c": cond})
    np.testing.assert_array_equal(out, [0, -1, -2, 3])


def test_select_errors() -> None:
    net = Network()
    c, c1 = net.add_input("c", "bool", (2, 3)), net.add_input("c1", "bool", (3,))
    a, f = net.add_input("a", "float32", (2, 3)), net.add_input("f", "float32", (2, 3))
    i = net.add_input("i", "int32", (2, 3))
    with pytest.raises(NetworkError, match=r"select layer .*ranks \[1, 2, 2\]"):
        net.add_select(c1, a, f)
    with pytest.raises(NetworkError, match=r"select layer .*expected a bool tensor"):
        net.add_select(f, a, f)
    with pytest.raises(NetworkError, match=r"select layer"):
        net.add_select(c, a, i)


# -- cast -----------------------------------------------------------------------------------------
CASTS = [
    ("float32", "int32", np.array([1.2, 4.5, 5.6, 9.99, -1.7, -0.2, 0.0], np.float32)),
    ("float32", "int64", np.array([1.2, -3.9, 7.0], np.float32)),
    ("float32", "float16", np.array([0.5, -2.25, 1000.0], np.float32)),
    ("float32", "bool", np.array([0.0, 0.5, -2.0, 0.0], np.float32)),
    ("int32", "float32", np.array([-3, 0, 7], np.int32)),
    ("int32", "int64", np.array([-3, 0, 2**31 - 1], np.int32)),
    ("int64", "int32", np.array([-3, 0, 12345], np.int64)),
    ("int32", "bool", np.array([0, 2, -1], np.int32)),
    ("bool", "float32", np.array([True, False, True])),
    ("bool", "int32", np.array([False, True])),
    ("float16", "float32", np.array([0.5, -2.25, 3.0], np.float16)),
]


@pytest.mark.parametrize(("src", "dst", "x"), CASTS, ids=[f"{s}-{d}" for s, d, _ in CASTS])
def test_cast(src: str, dst: str, x: Array) -> None:
    net, xt = unary_net(x)
    layer = net.add_cast(xt, dst)
    assert layer.get_output(0).dtype.numpy == np.dtype(dst)
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    # floats to ints truncate toward zero (TensorRT's operator docs: 4.5 -> 4, 5.6 -> 5)
    np.testing.assert_array_equal(out, x.astype(dst))


def test_cast_to_type_can_change() -> None:
    x = np.array([1.5, -2.5], np.float32)
    net, xt = unary_net(x)
    layer = net.add_cast(xt, "int32")
    layer.to_type = "float16"
    assert layer.get_output(0).dtype.numpy == np.float16
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, x.astype(np.float16))
