"""Reference kernels for Constant, Identity, Check, ReadVariable and Assign."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ExecutionError
from ..registry import KernelContext, kernel


@kernel("Constant")
def constant(ctx: KernelContext) -> np.ndarray[Any, Any]:
    value: np.ndarray[Any, Any] = ctx.attr("value")
    return value


@kernel("Identity")
def identity(ctx: KernelContext, x: Any) -> Any:
    return x


@kernel("Check")
def check(ctx: KernelContext, ok: Any, *values: Any) -> Any:
    if not np.all(ok):
        raise ExecutionError(f"{ctx.where}: {ctx.attr('message')}")
    return values[0] if len(values) == 1 else tuple(values)


@kernel("ReadVariable")
def read_variable(ctx: KernelContext) -> np.ndarray[Any, Any]:
    name = ctx.attr("variable")
    try:
        return ctx.state.variables[name]
    except KeyError:
        raise ExecutionError(f"{ctx.where}: no variable '{name}' in this run") from None


@kernel("Assign")
def assign(ctx: KernelContext, value: np.ndarray[Any, Any]) -> None:
    name = ctx.attr("variable")
    current = ctx.state.variables.get(name)
    if current is not None and (current.shape != value.shape or current.dtype != value.dtype):
        raise ExecutionError(
            f"{ctx.where}: variable '{name}' holds {current.dtype}{list(current.shape)}, "
            f"assigned {value.dtype}{list(value.shape)}"
        )
    stored = np.array(value, copy=True)
    stored.setflags(write=False)  # ReadVariable hands this array out without copying
    ctx.state.variables[name] = stored
