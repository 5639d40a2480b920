"""Interior layers of tensorloop.network against numpy versions of TensorRT's documented semantics.

Every layer kind and every enum member is built into a tiny network, run, and compared with an
independent numpy reference; every output's reported ``.shape``/``.dtype`` is checked against
the array the run produced. Build-time errors (``NetworkError`` at the call, and refused setting
changes that keep the old value) and dynamic (-1) dims are covered too. Where the builder
departs from TensorRT on purpose, docs/network.md says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from tensorloop import NetworkError
from tensorloop.errors import ExecutionError
from tensorloop.network import (
    ActivationType,
    ElementWiseOperation,
    ILayer,
    ITensor,
    MatrixOperation,
    Network,
    ReduceOperation,
    TopKOperation,
    UnaryOperation,
)
from tensorloop.network.layers import ACTIVATION_DEFAULTS

Array = np.ndarray[Any, Any]
EW = ElementWiseOperation
ACT = ActivationType
UN = UnaryOperation
MO = MatrixOperation
RED = ReduceOperation

RNG = np.random.default_rng(20240607)
_erf = np.vectorize(math.erf, otypes=[np.float64])


# -- helpers --------------------------------------------------------------------------------------
def check_typed(t: ITensor, arr: Array, *, exact: bool = True) -> None:
    """The tensor's reported dtype and shape describe the array a run produced (a -1 dim, only
    allowed when not ``exact``, matches any size)."""
    assert arr.dtype == t.dtype.numpy, f"{t.name}: reported {t.dtype}, ran {arr.dtype}"
    if exact:
        assert t.shape == arr.shape, f"{t.name}: reported {t.shape}, ran {arr.shape}"
    else:
        assert len(t.shape) == arr.ndim
        assert all(d in (-1, n) for d, n in zip(t.shape, arr.shape, strict=True)), (
            f"{t.name}: reported {t.shape}, ran {arr.shape}"
        )


def run(
    net: Network, outputs: Sequence[ITensor], feeds: dict[str, Array], *, exact: bool = True
) -> list[Array]:
    """Mark ``outputs``, lower, run once, check each output's typing; the arrays in order."""
    for t in outputs:
        net.mark_output(t)
    result = net.to_model().run(feeds)
    arrays = [np.asarray(result[t.name]) for t in outputs]
    for t, arr in zip(outputs, arrays, strict=True):
        check_typed(t, arr, exact=exact)
    return arrays


def unary_net(x: Array) -> tuple[Network, ITensor]:
    net = Network()
    return net, net.add_input("x", x.dtype, x.shape)


def const(net: Network, value: Array) -> ITensor:
    return net.add_constant(value.shape, value).get_output(0)


def ints(*values: int) -> Array:
    return np.array(values, np.int32)


def close(actual: Array, expected: Array, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


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


# -- activation -----------------------------------------------------------------------------------
def _gelu_tanh(x: Array) -> Array:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS: dict[ACT, Callable[[Array, float, float], Array]] = {
    ACT.RELU: lambda x, a, b: np.maximum(x, 0),
    ACT.SIGMOID: lambda x, a, b: 1 / (1 + np.exp(-x)),
    ACT.TANH: lambda x, a, b: np.tanh(x),
    ACT.LEAKY_RELU: lambda x, a, b: np.where(x >= 0, x, a * x),
    ACT.ELU: lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)),
    ACT.SELU: lambda x, a, b: b * np.where(x > 0, x, a * (np.exp(x) - 1)),
    ACT.SOFTSIGN: lambda x, a, b: x / (1 + np.abs(x)),
    ACT.SOFTPLUS: lambda x, a, b: a * np.log1p(np.exp(b * x)),
    ACT.CLIP: lambda x, a, b: np.maximum(a, np.minimum(b, x)),
    ACT.HARD_SIGMOID: lambda x, a, b: np.maximum(0, np.minimum(1, a * x + b)),
    ACT.SCALED_TANH: lambda x, a, b: a * np.tanh(b * x),
    ACT.THRESHOLDED_RELU: lambda x, a, b: np.where(x > a, x, 0),
    ACT.GELU_ERF: lambda x, a, b: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    ACT.GELU_TANH: lambda x, a, b: _gelu_tanh(x),
}
# alpha/beta a test sets (all exactly representable in float32, so thresholds compare exactly)
CUSTOM_ALPHA_BETA: dict[ACT, tuple[float, float]] = {
    ACT.LEAKY_RELU: (0.25, 0.0),
    ACT.ELU: (0.5, 0.0),
    ACT.SELU: (1.5, 2.0),
    ACT.SOFTPLUS: (2.0, 0.5),
    ACT.CLIP: (-0.5, 1.25),
    ACT.HARD_SIGMOID: (0.25, 0.375),
    ACT.SCALED_TANH: (1.5, 0.75),
    ACT.THRESHOLDED_RELU: (0.5, 0.0),
}
ACT_X = np.array(
    [[-6.0, -3.0, -1.5, -0.5, -0.25, 0.0], [0.25, 0.5, 1.0, 1.25, 2.5, 6.0]], np.float32
)


def test_every_activation_type_is_covered() -> None:
    assert set(ACTIVATIONS) == set(ACT)
    assert set(CUSTOM_ALPHA_BETA) == set(ACTIVATION_DEFAULTS)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("kind", list(ACT), ids=lambda k: k.name)
def test_activation_with_default_parameters(kind: ACT, dt: str) -> None:
    x = ACT_X.astype(dt)
    net, xt = unary_net(x)
    layer = net.add_activation(xt, kind)
    alpha, beta = ACTIVATION_DEFAULTS.get(kind, (0.0, 0.0))
    assert (layer.alpha, layer.beta) == (alpha, beta)
    assert layer.activation_type is kind
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    tol = 1e-5 if dt == "float32" else 4e-3
    close(out, ACTIVATIONS[kind](x.astype(np.float64), alpha, beta), rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", list(CUSTOM_ALPHA_BETA), ids=lambda k: k.name)
def test_activation_with_set_parameters(kind: ACT) -> None:
    net, x = unary_net(ACT_X)
    layer = net.add_activation(x, kind)
    alpha, beta = CUSTOM_ALPHA_BETA[kind]
    layer.alpha, layer.beta = alpha, beta
    (out,) = run(net, [layer.get_output(0)], {"x": ACT_X})
    close(out, ACTIVATIONS[kind](ACT_X.astype(np.float64), alpha, beta))


def test_activation_type_can_change() -> None:
    net, x = unary_net(ACT_X)
    layer = net.add_activation(x, ACT.RELU)
    layer.activation_type = ACT.TANH
    assert layer.activation_type is ACT.TANH
    (out,) = run(net, [layer.get_output(0)], {"x": ACT_X})
    close(out, np.tanh(ACT_X.astype(np.float64)))


# -- unary ----------------------------------------------------------------------------------------
_GENERAL = np.array([-2.5, -1.5, -0.75, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, 3.7], np.float32)
_POSITIVE = np.array([0.1, 0.5, 1.0, 2.0, 7.5], np.float32)
_UNIT = np.array([-0.9, -0.5, 0.0, 0.25, 0.8], np.float32)
_SPECIAL = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.0], np.float32)
# op -> (numpy reference, input)
UNARIES: dict[UN, tuple[Callable[[Array], Array], Array]] = {
    UN.EXP: (np.exp, _GENERAL),
    UN.LOG: (np.log, _POSITIVE),
    UN.SQRT: (np.sqrt, np.append(_POSITIVE, 0.0).astype(np.float32)),
    UN.RECIP: (np.reciprocal, np.array([-4.0, -0.5, 0.25, 2.0, 3.0], np.float32)),
    UN.ABS: (np.abs, _GENERAL),
    UN.NEG: (np.negative, _GENERAL),
    UN.SIN: (np.sin, _GENERAL),
    UN.COS: (np.cos, _GENERAL),
    UN.TAN: (np.tan, _UNIT),
    UN.SINH: (np.sinh, _GENERAL),
    UN.COSH: (np.cosh, _GENERAL),
    UN.ASIN: (np.arcsin, _UNIT),
    UN.ACOS: (np.arccos, _UNIT),
    UN.ATAN: (np.arctan, _GENERAL),
    UN.ASINH: (np.arcsinh, _GENERAL),
    UN.ACOSH: (np.arccosh, np.array([1.0, 1.5, 2.0, 10.0], np.float32)),
    UN.ATANH: (np.arctanh, _UNIT),
    UN.CEIL: (np.ceil, _GENERAL),
    UN.FLOOR: (np.floor, _GENERAL),
    UN.ERF: (_erf, _GENERAL),
    UN.NOT: (np.logical_not, np.array([True, False, True])),
    UN.SIGN: (np.sign, _GENERAL),
    UN.ROUND: (np.round, _GENERAL),  # TensorRT rounds halves to even, as numpy does
    UN.ISINF: (np.isinf, _SPECIAL),
    UN.ISNAN: (np.isnan, _SPECIAL),
}


def test_every_unary_operation_is_covered() -> None:
    assert set(UNARIES) == set(UN)


@pytest.mark.parametrize("op", list(UN), ids=lambda op: op.name)
def test_unary(op: UN) -> None:
    fn, x = UNARIES[op]
    net, xt = unary_net(x.reshape(1, -1))
    layer = net.add_unary(xt, op)
    assert layer.op is op
    (out,) = run(net, [layer.get_output(0)], {"x": x.reshape(1, -1)})
    expected = fn(x.astype(np.float64) if x.dtype.kind == "f" else x).reshape(1, -1)
    if expected.dtype == np.bool_:
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, expected)
    else:
        assert out.dtype == x.dtype
        close(out, expected)


def test_unary_round_halves_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6], np.float32)
    net, xt = unary_net(x)
    (out,) = run(net, [net.add_unary(xt, UN.ROUND).get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, [0, 2, 2, -0, -2, -2, 2, 3])


@pytest.mark.parametrize("op", [UN.ABS, UN.NEG, UN.SIGN], ids=lambda op: op.name)
def test_unary_int(op: UN) -> None:
    x = np.array([-5, -1, 0, 2, 9], np.int32)
    net, xt = unary_net(x)
    (out,) = run(net, [net.add_unary(xt, op).get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, UNARIES[op][0](x))


def test_unary_not_needs_bool_and_a_refused_op_keeps_the_old() -> None:
    x = np.array([1.0, -2.0], np.float32)
    net, xt = unary_net(x)
    with pytest.raises(NetworkError, match=r"unary layer .*Not.*bool"):
        net.add_unary(xt, UN.NOT)
    layer = net.add_unary(xt, UN.ABS)
    with pytest.raises(NetworkError, match="Not"):
        layer.op = UN.NOT
    assert layer.op is UN.ABS
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    np.testing.assert_array_equal(out, [1.0, 2.0])


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


# -- softmax --------------------------------------------------------------------------------------
def _softmax(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax(axis: int) -> None:
    x = rand(2, 3, 4) * 3
    net, xt = unary_net(x)
    layer = net.add_softmax(xt)
    layer.axes = 1 << axis
    assert layer.axes == 1 << axis
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    close(out, _softmax(x.astype(np.float64), axis))


@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 5)])
def test_softmax_default_is_the_last_axis(shape: tuple[int, ...]) -> None:
    # documented by ISoftMaxLayer; TensorRT's own default is axis max(0, rank - 3)
    x = rand(*shape)
    net, xt = unary_net(x)
    layer = net.add_softmax(xt)
    assert layer.axes is None
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    close(out, _softmax(x.astype(np.float64), -1))


@pytest.mark.parametrize(
    ("axes", "match"),
    [
        (0b011, r"softmax layer .*the axes bitmask must name one axis"),
        (0b111, r"must name one axis"),
        (0, r"must name one axis"),
        (0b1000, r"axes bitmask 0b1000 names an axis a rank-3 input lacks"),
    ],
)
def test_softmax_refused_axes_keep_the_old(axes: int, match: str) -> None:
    x = rand(2, 3, 4)
    net, xt = unary_net(x)
    layer = net.add_softmax(xt)
    layer.axes = 0b010
    with pytest.raises(NetworkError, match=match):
        layer.axes = axes
    assert layer.axes == 0b010
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    close(out, _softmax(x.astype(np.float64), 1))


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


# -- settings in general --------------------------------------------------------------------------
def _shuffle(net: Network, x: ITensor, dims: tuple[int, ...]) -> ILayer:
    layer = net.add_shuffle(x)
    layer.reshape_dims = dims
    return layer


SETTING_CASES: list[tuple[str, Callable[[Network, ITensor], ILayer], str, Any, str]] = [
    ("concat", lambda n, x: n.add_concatenation([x, x]), "axis", 5, r"axis 5 is out of range"),
    ("reduce", lambda n, x: n.add_reduce(x, RED.SUM, 1, True), "axes", 0, r"names no axis"),
    ("softmax", lambda n, x: n.add_softmax(x), "axes", 0b11, r"must name one axis"),
    ("gather", lambda n, x: n.add_gather(x, const(n, ints(0)), 0), "axis", 3, r"out of range"),
    ("topk", lambda n, x: n.add_topk(x, TopKOperation.MAX, 1, 1), "k", 9, r"k = 9"),
    ("shuffle", lambda n, x: _shuffle(n, x, (3, 2)), "reshape_dims", (5,), r"cannot reshape"),
    ("shuffle2", lambda n, x: _shuffle(n, x, (3, 2)), "second_transpose", (0,), r"permutation"),
    ("slice", lambda n, x: n.add_slice(x, (0, 0), (1, 1), (1, 1)), "start", (3, 0), r"bounds"),
    ("ew", lambda n, x: n.add_elementwise(x, x, EW.SUM), "op", EW.XOR, r"bool"),
    ("unary", lambda n, x: n.add_unary(x, UN.EXP), "op", UN.NOT, r"bool"),
    (
        "matmul",
        lambda n, x: n.add_matrix_multiply(x, MO.NONE, x, MO.TRANSPOSE),
        "op1",
        MO.NONE,
        r"inner dims",
    ),
]


@pytest.mark.parametrize(
    ("builder", "setting", "value", "match"),
    [case[1:] for case in SETTING_CASES],
    ids=[case[0] for case in SETTING_CASES],
)
def test_refused_setting_keeps_the_old_value_and_type(
    builder: Callable[[Network, ITensor], ILayer], setting: str, value: Any, match: str
) -> None:
    x = rand(2, 3)
    net, xt = unary_net(x)
    layer = builder(net, xt)
    old_value, old_types = getattr(layer, setting), [t.type for t in layer.outputs]
    with pytest.raises(NetworkError, match=match):
        setattr(layer, setting, value)
    assert getattr(layer, setting) == old_value
    assert [t.type for t in layer.outputs] == old_types
    arrays = run(net, layer.outputs, {"x": x})
    assert [a.shape for a in arrays] == [t.shape for t in layer.outputs]


# -- dynamic shapes -------------------------------------------------------------------------------
def test_dynamic_input_reports_minus_one() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 4, -1))
    assert x.shape == (-1, 4, -1)
    assert x.is_network_input


def test_dynamic_shapes_through_every_layer_kind() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 4))
    w = rand(4, 3)
    bias = rand(1, 4)
    idx = np.array([3, 0], np.int32)
    t: dict[str, ITensor] = {}
    t["sum"] = net.add_elementwise(x, const(net, bias), EW.SUM).get_output(0)
    t["gt"] = net.add_elementwise(
        x, const(net, np.zeros((1, 1), np.float32)), EW.GREATER
    ).get_output(0)
    t["act"] = net.add_activation(x, ACT.SCALED_TANH).get_output(0)
    t["unary"] = net.add_unary(x, UN.ABS).get_output(0)
    t["mm"] = net.add_matrix_multiply(x, MO.NONE, const(net, w), MO.NONE).get_output(0)
    t["mv"] = net.add_matrix_multiply(x, MO.VECTOR, const(net, w[None]), MO.NONE).get_output(0)
    sh = net.add_shuffle(x)
    sh.reshape_dims, sh.second_transpose = (0, 2, 2), (1, 0, 2)
    t["shuffle"] = sh.get_output(0)
    t["slice"] = net.add_slice(x, (0, 3), (1, 2), (1, -2)).get_output(0)
    t["concat"] = net.add_concatenation([x, x]).get_output(0)
    t["reduce"] = net.add_reduce(x, RED.AVG, 0b01, True).get_output(0)
    t["select"] = net.add_select(t["gt"], x, t["unary"]).get_output(0)
    t["gather"] = net.add_gather(x, const(net, idx), 1).get_output(0)
    t["identity"] = net.add_identity(x).get_output(0)
    t["cast"] = net.add_cast(x, "int32").get_output(0)
    sm = net.add_softmax(x)
    sm.axes = 0b01
    t["softmax"] = sm.get_output(0)
    topk = net.add_topk(x, TopKOperation.MAX, 2, 0b10)
    t["topk"], t["topk_idx"] = topk.get_output(0), topk.get_output(1)
    t["shape"] = net.add_shape(x).get_output(0)

    reported = {name: tensor.shape for name, tensor in t.items()}
    assert reported == {
        "sum": (-1, 4),
        "gt": (-1, 4),
        "act": (-1, 4),
        "unary": (-1, 4),
        "mm": (-1, 3),
        "mv": (-1, 3),
        "shuffle": (2, -1, 2),
        "slice": reported["slice"],  # TensorRT: (1, 2); checked below
        "concat": (-1, 4),
        "reduce": (1, 4),
        "select": (-1, 4),
        "gather": (-1, 2),
        "identity": (-1, 4),
        "cast": (-1, 4),
        "softmax": (-1, 4),
        "topk": (-1, 2),
        "topk_idx": (-1, 2),
        "shape": (2,),
    }
    assert reported["slice"][1] == 2
    assert reported["slice"][0] in (-1, 1)

    tensors = list(t.values())
    for tensor in tensors:
        net.mark_output(tensor)
    model = net.to_model()
    for n in (2, 5):
        xv = rand(n, 4)
        x64 = xv.astype(np.float64)
        result = model.run({"x": xv})
        got = {name: np.asarray(result[tensor.name]) for name, tensor in t.items()}
        for name, tensor in t.items():
            check_typed(tensor, got[name], exact=False)
        close(got["sum"], x64 + bias)
        np.testing.assert_array_equal(got["gt"], xv > 0)
        close(got["act"], np.tanh(x64))
        np.testing.assert_array_equal(got["unary"], np.abs(xv))
        close(got["mm"], x64 @ w, atol=1e-5)
        close(got["mv"], x64 @ w, atol=1e-5)
        np.testing.assert_array_equal(got["shuffle"], xv.reshape(n, 2, 2).transpose(1, 0, 2))
        np.testing.assert_array_equal(got["slice"], xv[0:1, [3, 1]])
        np.testing.assert_array_equal(got["concat"], np.concatenate([xv, xv]))
        close(got["reduce"], x64.mean(axis=0, keepdims=True))
        np.testing.assert_array_equal(got["select"], np.where(xv > 0, xv, np.abs(xv)))
        np.testing.assert_array_equal(got["gather"], xv[:, idx])
        np.testing.assert_array_equal(got["identity"], xv)
        np.testing.assert_array_equal(got["cast"], xv.astype(np.int32))
        close(got["softmax"], _softmax(x64, 0))
        np.testing.assert_array_equal(got["topk"], -np.sort(-xv, axis=1)[:, :2])
        np.testing.assert_array_equal(got["topk_idx"], np.argsort(-xv, axis=1)[:, :2])
        np.testing.assert_array_equal(got["shape"], [n, 4])


def test_dynamic_elementwise_broadcast_of_independent_dims() -> None:
    net = Network()
    a, b = net.add_input("a", "float32", (-1, 3)), net.add_input("b", "float32", (-1, 3))
    out_t = net.add_elementwise(a, b, EW.PROD).get_output(0)
    assert out_t.shape == (-1, 3)
    net.mark_output(out_t)
    model = net.to_model()
    for na, nb in [(4, 1), (1, 2), (3, 3)]:
        x, y = rand(na, 3), rand(nb, 3)
        out = np.asarray(model.run({"a": x, "b": y})[out_t.name])
        check_typed(out_t, out, exact=False)
        close(out, x.astype(np.float64) * y)


def test_dynamic_reduce_and_topk_over_a_dynamic_axis() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, -1))
    red = net.add_reduce(x, RED.MAX, 0b10, False).get_output(0)
    keep = net.add_reduce(x, RED.SUM, 0b11, True).get_output(0)
    sm = net.add_softmax(x).get_output(0)
    assert (red.shape, keep.shape, sm.shape) == ((3,), (1, 1), (3, -1))
    outs = [red, keep, sm]
    for o in outs:
        net.mark_output(o)
    model = net.to_model()
    for n in (1, 7):
        xv = rand(3, n)
        result = model.run({"x": xv})
        got = [np.asarray(result[o.name]) for o in outs]
        for o, g in zip(outs, got, strict=True):
            check_typed(o, g, exact=False)
        np.testing.assert_array_equal(got[0], xv.max(axis=1))
        close(got[1], xv.astype(np.float64).sum(keepdims=True), atol=1e-5)
        close(got[2], _softmax(xv.astype(np.float64), 1))


# -- network-level plumbing the layer tests rely on -----------------------------------------------
def test_network_errors_at_the_call() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2,))
    other = Network().add_input("y", "float32", (2,))
    with pytest.raises(NetworkError, match=r"already has an input named 'x'"):
        net.add_input("x", "float32", (3,))
    with pytest.raises(NetworkError, match=r"constant: 3 weights cannot fill shape \[2, 2\]"):
        net.add_constant((2, 2), np.zeros(3, np.float32))
    with pytest.raises(NetworkError, match=r"is not a tensor of this network"):
        net.add_unary(other, UN.EXP)
    layer = net.add_unary(x, UN.NEG)
    with pytest.raises(NetworkError, match=r"no output 1 \(it has 1\)"):
        layer.get_output(1)
    net.mark_output(layer.get_output(0))
    with pytest.raises(NetworkError, match=r"is already an output"):
        net.mark_output(layer.get_output(0))


def test_outputs_are_keyed_by_tensor_name() -> None:
    x = np.array([1.0, -2.0], np.float32)
    net, xt = unary_net(x)
    layer = net.add_unary(xt, UN.NEG)
    layer.get_output(0).name = "negated"
    net.mark_output(layer.get_output(0))
    result = net.to_model().run({"x": x})
    assert list(result) == ["negated"]
    np.testing.assert_array_equal(result["negated"], -x)
