"""Reference kernels for the training ops: one optimizer step, computed in the inputs' type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.training import OPTIMIZERS
from ..registry import KernelContext, kernel

Array = np.ndarray[Any, Any]
Step = Callable[[KernelContext, float, int, dict[str, Array]], list[Array]]


def _adagrad(ctx: KernelContext, r: float, t: int, x: dict[str, Array]) -> list[Array]:
    rate = r / (1 + t * ctx.attr("decay_factor"))
    g = ctx.attr("norm_coefficient") * x["X"] + x["G"]
    h = x["H"] + g * g
    return [x["X"] - rate * g / (np.sqrt(h) + ctx.attr("epsilon")), h]


def _adam(ctx: KernelContext, r: float, t: int, x: dict[str, Array]) -> list[Array]:
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    g = ctx.attr("norm_coefficient") * x["X"] + x["G"]
    v = alpha * x["V"] + (1 - alpha) * g
    h = beta * x["H"] + (1 - beta) * g * g
    rate = r * np.sqrt(1 - beta**t) / (1 - alpha**t) if t > 0 else r
    moved = x["X"] - rate * v / (np.sqrt(h) + ctx.attr("epsilon"))
    return [(1 - ctx.attr("norm_coefficient_post")) * moved, v, h]


def _momentum(ctx: KernelContext, r: float, t: int, x: dict[str, Array]) -> list[Array]:
    alpha = ctx.attr("alpha")
    g = ctx.attr("norm_coefficient") * x["X"] + x["G"]
    v = alpha * x["V"] + (ctx.attr("beta") if t > 0 else 1) * g
    direction = g + alpha * v if ctx.attr("mode") == "nesterov" else v
    return [x["X"] - r * direction, v]


_STEPS: dict[str, Step] = {"Adagrad": _adagrad, "Adam": _adam, "Momentum": _momentum}


def _optimizer_kernel(name: str) -> None:
    kinds, outs, _, _ = OPTIMIZERS[name]
    step = _STEPS[name]

    def run(ctx: KernelContext, r: Array, t: Array, *tensors: Array) -> tuple[Array, ...]:
        n = len(tensors) // len(kinds)
        results = [
            step(ctx, float(r), int(t), {k: tensors[j * n + i] for j, k in enumerate(kinds)})
            for i in range(n)
        ]
        # Outputs are grouped by kind: every X_new, then every V_new, then every H_new.
        return tuple(
            np.asarray(results[i][j]).astype(tensors[i].dtype)
            for j in range(len(outs))
            for i in range(n)
        )

    kernel(name)(run)


for _name in OPTIMIZERS:
    _optimizer_kernel(_name)
