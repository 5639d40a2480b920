"""Reference kernels for MatMul, Gemm and Inverse."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, fail


def canonical(x: Array) -> Array:
    """``x`` as a MatMul operand: C-contiguous (a copy only where it is not).

    BLAS picks its kernel, and so the order of its sums, by the operands' memory layout: a
    transposed view of weights rounds otherwise than the same values laid out in rows (and
    runs several times slower). Every product takes its operands in rows, so its result is a
    function of their values alone, whatever view or copy holds them: a backend may lay a
    constant out once, ahead of time (the compiled backend's plan does), and get these bits."""
    return np.ascontiguousarray(x)


@kernel("MatMul")
def matmul(ctx: KernelContext, a: Any, b: Any) -> Array:
    x, y = canonical(widen(a)), canonical(widen(b))
    with np.errstate(all="ignore"):  # inf * 0 inside a product is NaN, as IEEE says
        return np.asarray(np.matmul(x, y)).astype(np.asarray(a).dtype)


@kernel("Gemm")
def gemm(ctx: KernelContext, a: Any, b: Any, c: Any = None) -> Array:
    x, y = widen(a), widen(b)
    x, y = x.T if ctx.attr("transA") else x, y.T if ctx.attr("transB") else y
    x, y = canonical(x), canonical(y)
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    with np.errstate(all="ignore"):
        # Unit factors are skipped so integer products stay exact rather than pass through floats.
        out = x @ y if alpha == 1 else alpha * (x @ y)
        if c is not None:
            out = out + (widen(c) if beta == 1 else beta * widen(c))
        return np.asarray(out).astype(np.asarray(a).dtype)


@kernel("Inverse")
def inverse(ctx: KernelContext, data: Any) -> Array:
    x = np.asarray(data)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise fail(ctx, f"expected [*, M, M] matrices, got shape {list(x.shape)}")
    # float64 throughout: the result is rounded once, to the input's type.
    wide = x.astype(np.float64)
    try:
        return np.linalg.inv(wide).astype(x.dtype)
    except np.linalg.LinAlgError:  # some matrix is singular: invert one at a time
        pass
    flat = wide.reshape(-1, *x.shape[-2:])
    out = np.full_like(flat, np.nan)
    for i, matrix in enumerate(flat):
        with contextlib.suppress(np.linalg.LinAlgError):  # singular: stays NaN
            out[i] = np.linalg.inv(matrix)
    return out.reshape(x.shape).astype(x.dtype)
