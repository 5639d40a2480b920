"""Reference kernels for MatMul and Gemm."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import KernelContext, kernel
from .elementwise import Array, widen


@kernel("MatMul")
def matmul(ctx: KernelContext, a: Any, b: Any) -> Array:
    with np.errstate(all="ignore"):  # inf * 0 inside a product is NaN, as IEEE says
        return np.asarray(np.matmul(widen(a), widen(b))).astype(np.asarray(a).dtype)


@kernel("Gemm")
def gemm(ctx: KernelContext, a: Any, b: Any, c: Any = None) -> Array:
    x, y = widen(a), widen(b)
    x, y = x.T if ctx.attr("transA") else x, y.T if ctx.attr("transB") else y
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    with np.errstate(all="ignore"):
        # Unit factors are skipped so integer products stay exact rather than pass through floats.
        out = x @ y if alpha == 1 else alpha * (x @ y)
        if c is not None:
            out = out + (widen(c) if beta == 1 else beta * widen(c))
        return np.asarray(out).astype(np.asarray(a).dtype)
