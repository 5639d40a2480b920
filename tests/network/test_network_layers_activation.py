"""Network Activation, Unary and SoftMax layers: every type and parameter vs. numpy references."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from network_layer_checks import ACT, UN, Array, close, erf, rand, run, softmax_reference, unary_net

from tensorloop import NetworkError
from tensorloop.network.layers import ACTIVATION_DEFAULTS


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
    ACT.GELU_ERF: lambda x, a, b: 0.5 * x * (1 + erf(x / math.sqrt(2))),
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
    UN.ERF: (erf, _GENERAL),
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


# -- softmax ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax(axis: int) -> None:
    x = rand(2, 3, 4) * 3
    net, xt = unary_net(x)
    layer = net.add_softmax(xt)
    layer.axes = 1 << axis
    assert layer.axes == 1 << axis
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    close(out, softmax_reference(x.astype(np.float64), axis))


@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 5)])
def test_softmax_default_is_the_last_axis(shape: tuple[int, ...]) -> None:
    # documented by ISoftMaxLayer; TensorRT's own default is axis max(0, rank - 3)
    x = rand(*shape)
    net, xt = unary_net(x)
    layer = net.add_softmax(xt)
    assert layer.axes is None
    (out,) = run(net, [layer.get_output(0)], {"x": x})
    close(out, softmax_reference(x.astype(np.float64), -1))


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
    close(out, softmax_reference(x.astype(np.float64), 1))
