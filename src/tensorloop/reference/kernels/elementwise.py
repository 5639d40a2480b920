"""Reference kernels for the elementwise ops, plus helpers the other kernel modules share."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import ExecutionError
from ...tensor import numerics
from ...tensor.numerics import round_to, widen
from ...tensor.types import normalize_axis
from ..registry import Kernel, KernelContext, kernel

Array = np.ndarray[Any, Any]


def fail(ctx: KernelContext, message: str) -> ExecutionError:
    return ExecutionError(f"{ctx.where}: {message}")


def axis_in(ctx: KernelContext, axis: int, rank: int) -> int:
    """``axis`` mapped into [0, rank), or this node's ExecutionError."""
    return normalize_axis(axis, rank, ctx.where, error=ExecutionError)


def is_float(dt: np.dtype[Any]) -> bool:
    """Whether the kernels treat ``dt`` as a float: ``numerics.is_float``, ``DType.is_float``'s
    answer (every float8, float4 and bfloat16 included), never NumPy's kind letter."""
    return numerics.is_float(dt)


def _sigmoid(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


def _relu(x: Array) -> Array:
    return np.maximum(x, 0)


# Each computes on widened inputs; the result is cast back to the first input's type or bool.
_SAME_TYPE: dict[str, Callable[..., Any]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Min": lambda *xs: functools.reduce(np.minimum, xs),
    "Max": lambda *xs: functools.reduce(np.maximum, xs),
    "Neg": np.negative,
    "Abs": np.abs,
    "Relu": _relu,
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Log": np.log,
    "Sigmoid": _sigmoid,
    "Tanh": np.tanh,
}
_TO_BOOL: dict[str, Callable[..., Any]] = {
    "Equal": np.equal,
    "Less": np.less,
    "Greater": np.greater,
    "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
    "Not": np.logical_not,
}


def _elementwise(fn: Callable[..., Any], to_bool: bool) -> Kernel:
    def run(ctx: KernelContext, *xs: Any) -> Array:
        result_type = np.dtype(bool) if to_bool else np.asarray(xs[0]).dtype
        with np.errstate(all="ignore"):  # inf and NaN are IEEE results here, not faults
            return np.asarray(fn(*map(widen, xs))).astype(result_type)

    return run


for _name, _fn in _SAME_TYPE.items():
    kernel(_name)(_elementwise(_fn, to_bool=False))
for _name, _fn in _TO_BOOL.items():
    kernel(_name)(_elementwise(_fn, to_bool=True))


@kernel("Div")
def div(ctx: KernelContext, a: Any, b: Any) -> Array:
    result_type = np.asarray(a).dtype
    a, b = widen(a), widen(b)
    if is_float(a.dtype):
        with np.errstate(all="ignore"):  # x/0 is ±inf or NaN
            return np.asarray(np.divide(a, b)).astype(result_type)
    if np.any(b == 0):
        raise fail(ctx, "integer division by zero")
    # fmod's remainder takes the dividend's sign, so a - fmod(a, b) is an exact multiple of b and
    # dividing it truncates toward zero, as C and ONNX do. INT_MIN / -1 wraps around.
    with np.errstate(over="ignore"):
        return np.asarray((a - np.fmod(a, b)) // b).astype(a.dtype)


@kernel("Pow")
def pow_(ctx: KernelContext, x: Any, y: Any) -> Array:
    x, y = np.asarray(x), np.asarray(y)
    if is_float(x.dtype):
        with np.errstate(all="ignore"):
            real = np.power(x.astype(np.float64), y.astype(np.float64))
            return np.asarray(round_to(real, x.dtype))  # rounded once, float8s included
    if is_float(y.dtype):
        with np.errstate(all="ignore"):
            real = np.asarray(np.power(x.astype(np.float64), y.astype(np.float64)))
        if not np.all(np.isfinite(real)):
            raise fail(ctx, "an integer base to a float power gave a non-finite result")
        with np.errstate(invalid="ignore"):  # out of range for the type: as undefined as in C
            return real.astype(x.dtype)
    # Integer ** integer: exact (wrapping) for exponents >= 0; below 0 only |x| = 1 is non-zero.
    wide = np.int64 if x.dtype.kind == "i" else np.uint64
    negative = y < 0
    if np.any(negative & (x == 0)):
        raise fail(ctx, "integer 0 raised to a negative power (division by zero)")
    powered = np.power(x.astype(wide), np.where(negative, 0, y).astype(wide))
    odd = (y % 2) != 0
    reciprocal = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(wide)
    return np.asarray(np.where(negative, reciprocal, powered)).astype(x.dtype)


@kernel("Where")
def where(ctx: KernelContext, cond: Any, x: Any, y: Any) -> Array:
    return np.asarray(np.where(cond, x, y)).astype(np.asarray(x).dtype)
