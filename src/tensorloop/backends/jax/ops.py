"""Lowerings of the elementwise, matrix and core tensor ops; the other families live in
``ops_*.py`` beside it and register when this module is imported. Each computes what the
reference kernel computes (``backends/reference/kernels``), in the same order of rounding where
that is observable: narrow floats widened to float32 and rounded back, integer division
truncated, products rounded before they are added (``LowerContext.round_product``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir.graph import Node
from ...tensor import numerics
from .lowering import JaxValue, LowerContext, lowers


def widen(x: JaxValue) -> JaxValue:
    """``x`` as a JAX array in the type it computes in (``numerics.widen`` over jax.numpy)."""
    return numerics.widen(x, jnp)


def is_float(x: JaxValue) -> bool:
    return bool(jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating))


_BITS = {
    np.dtype(np.float32): (jnp.uint32, 0x7F800000),
    np.dtype(np.float64): (jnp.uint64, 0x7FF << 52),
}


def deopt_on_subnormal(ctx: LowerContext, node: Node, *xs: JaxValue) -> None:
    """XLA's CPU runtime flushes subnormal floats to zero (inputs and results): where that
    changes an answer by more than a rounding (a floor, a sign, a remainder, an index), an
    island given one deoptimizes. Narrow floats are checked once widened to float32."""
    for x in xs:
        bits = _BITS.get(np.dtype(x.dtype)) if x is not None else None
        if bits is None:
            continue
        uint, exponent = bits
        raw = lax.bitcast_convert_type(x, uint)
        magnitude = raw & ~(np.array(1, uint) << (8 * x.dtype.itemsize - 1))
        ctx.deopt_unless((magnitude == 0) | ((raw & np.array(exponent, uint)) != 0), node)


def _same_type(fn: Callable[..., JaxValue]) -> Callable[..., list[JaxValue]]:
    def lower(ctx: LowerContext, node: Node, attrs: dict[str, Any], *xs: JaxValue) -> list[Any]:
        dtype = jnp.asarray(xs[0]).dtype
        return [jnp.asarray(fn(*map(widen, xs))).astype(dtype)]

    return lower


def _to_bool(fn: Callable[..., JaxValue]) -> Callable[..., list[JaxValue]]:
    def lower(ctx: LowerContext, node: Node, attrs: dict[str, Any], *xs: JaxValue) -> list[Any]:
        return [jnp.asarray(fn(*map(widen, xs))).astype(bool)]

    return lower


def _log(x: JaxValue) -> JaxValue:
    """log, subnormal inputs included: XLA runs with denormals-are-zero, so its log takes them
    for 0 (-inf) where NumPy's does not. A positive subnormal is ``bits * 2**-k`` for its bit
    pattern read as an integer (k = 1074 for float64, 149 for float32), so its log is
    ``log(bits) - k log 2``, computed on the integer, which no flushing touches."""
    if x.dtype not in (jnp.float32, jnp.float64):
        return jnp.log(x)
    wide = x.dtype == jnp.float64
    ints, k = (jnp.int64, 1074) if wide else (jnp.int32, 149)
    bits = lax.bitcast_convert_type(x, ints)
    smallest_normal = np.asarray(np.finfo(x.dtype).smallest_normal).view(ints).item()
    subnormal = (bits > 0) & (bits < smallest_normal)
    scaled = jnp.log(bits.astype(x.dtype)) - jnp.asarray(k * np.log(2), x.dtype)
    return jnp.where(subnormal, scaled, jnp.log(x))


def _sigmoid(x: JaxValue) -> JaxValue:
    return 1 / (1 + jnp.exp(-x))


_SAME_TYPE: dict[str, Callable[..., JaxValue]] = {
    "Add": jnp.add,
    "Sub": jnp.subtract,
    "Min": lambda *xs: functools.reduce(jnp.minimum, xs),
    "Max": lambda *xs: functools.reduce(jnp.maximum, xs),
    "Neg": jnp.negative,
    "Abs": jnp.abs,
    "Relu": lambda x: jnp.maximum(x, jnp.zeros((), x.dtype)),
    "Sqrt": jnp.sqrt,
    "Exp": jnp.exp,
    "Log": lambda x: _log(x),
    "Sigmoid": _sigmoid,
    "Tanh": jnp.tanh,
}
_TO_BOOL: dict[str, Callable[..., JaxValue]] = {
    "Equal": jnp.equal,
    "Less": jnp.less,
    "Greater": jnp.greater,
    "LessOrEqual": jnp.less_equal,
    "GreaterOrEqual": jnp.greater_equal,
    "And": jnp.logical_and,
    "Or": jnp.logical_or,
    "Xor": jnp.logical_xor,
    "Not": jnp.logical_not,
}
for _name, _fn in _SAME_TYPE.items():
    lowers(_name)(_same_type(_fn))
for _name, _fn in _TO_BOOL.items():
    lowers(_name)(_to_bool(_fn))


@lowers("Mul")
def _mul(ctx: LowerContext, node: Node, attrs: dict[str, Any], a: Any, b: Any) -> list[Any]:
    dtype = jnp.asarray(a).dtype
    return [ctx.round_product(widen(a) * widen(b)).astype(dtype)]


@lowers("Div")
def _div(ctx: LowerContext, node: Node, attrs: dict[str, Any], a: Any, b: Any) -> list[Any]:
    dtype = jnp.asarray(a).dtype
    a, b = widen(a), widen(b)
    if is_float(a):
        deopt_on_subnormal(ctx, node, b)  # x / subnormal is finite; XLA divides by zero
        return [(a / b).astype(dtype)]
    ctx.deopt_unless(b != 0, node)  # the reference names the division by zero
    safe = jnp.where(b == 0, jnp.ones((), b.dtype), b)
    return [lax.div(*jnp.broadcast_arrays(a, safe.astype(a.dtype))).astype(dtype)]


@lowers("Identity")
def _identity(ctx: LowerContext, node: Node, attrs: dict[str, Any], x: Any) -> list[Any]:
    return [x]


@lowers("Where")
def _where(
    ctx: LowerContext, node: Node, attrs: dict[str, Any], c: Any, x: Any, y: Any
) -> list[Any]:
    return [jnp.where(c, x, y).astype(jnp.asarray(x).dtype)]


def _matmul_f(a: JaxValue, b: JaxValue) -> JaxValue:
    dtype = jnp.asarray(a).dtype
    if numerics.is_widened(dtype):
        return jnp.matmul(widen(a), widen(b)).astype(dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        return jnp.matmul(a, b, preferred_element_type=dtype)
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


@lowers("MatMul")
def _matmul(ctx: LowerContext, node: Node, attrs: dict[str, Any], a: Any, b: Any) -> list[Any]:
    return [_matmul_f(a, b)]


@lowers("Gemm")
def _gemm(
    ctx: LowerContext, node: Node, attrs: dict[str, Any], a: Any, b: Any, c: Any = None
) -> list[Any]:
    dtype = jnp.asarray(a).dtype
    x = a.T if attrs["transA"] else a
    y = b.T if attrs["transB"] else b
    out = widen(_matmul_f(x, y))
    if attrs["alpha"] != 1:
        out = ctx.round_product(out * np.asarray(attrs["alpha"], out.dtype))
    if c is not None:
        term = widen(c)
        if attrs["beta"] != 1:
            term = ctx.round_product(term * np.asarray(attrs["beta"], term.dtype))
        out = out + term
    return [out.astype(dtype)]


__all__ = ["deopt_on_subnormal", "is_float", "widen"]
