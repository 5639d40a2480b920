"""Helpers for the network layer tests: run a tiny network, check each output's reported type."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorloop.network import (
    ActivationType,
    ElementWiseOperation,
    ITensor,
    MatrixOperation,
    Network,
    ReduceOperation,
    UnaryOperation,
)

Array = np.ndarray[Any, Any]
EW = ElementWiseOperation
ACT = ActivationType
UN = UnaryOperation
MO = MatrixOperation
RED = ReduceOperation

RNG = np.random.default_rng(20240607)
erf = np.vectorize(math.erf, otypes=[np.float64])


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


# -- softmax --------------------------------------------------------------------------------------
def softmax_reference(x: Array, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
