"""Reference kernels for Loop and If: the text of their docstrings, run literally."""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ExecutionError, LoopLimitError
from ....ir.control_flow import LoopLayout, Sliced, Stacked, normalize_axis
from ....ir.graph import Graph
from ....tensor.types import TensorType, Type
from ..registry import KernelContext, kernel


@kernel("Loop")
def loop(
    ctx: KernelContext, max_trip_count: Any, initial_condition: Any, *rest: Any
) -> tuple[Any, ...]:
    body: Graph = ctx.attr("body")
    sliced: tuple[Sliced, ...] = ctx.attr("sliced")
    stacked: tuple[Stacked, ...] = ctx.attr("stacked")
    layout = LoopLayout.of(ctx.node)
    k, s = layout.num_carried, layout.num_sliced
    carried, sources, invariants = list(rest[:k]), rest[k : k + s], list(rest[k + s :])
    interp = ctx.interpreter

    axes = [
        normalize_axis(sl.axis, np.ndim(src), ctx.where)
        for src, sl in zip(sources, sliced, strict=True)
    ]
    bounds = [int(np.asarray(max_trip_count))] if max_trip_count is not None else []
    bounds += [np.shape(src)[a] for src, a in zip(sources, axes, strict=True)]
    cond = True if initial_condition is None else bool(np.asarray(initial_condition))
    i, per_iteration = 0, [[] for _ in stacked]  # type: tuple[int, list[list[Any]]]
    outer_path = interp.path
    while all(i < b for b in bounds) and cond:
        if i >= interp.max_iterations:
            raise LoopLimitError(
                f"{ctx.where}: still running after {interp.max_iterations} iterations "
                "(max_iterations); raise the limit if the loop is meant to run longer"
            )
        slices = [
            np.take(src, np.shape(src)[a] - 1 - i if sl.reverse else i, axis=a)
            for src, sl, a in zip(sources, sliced, axes, strict=True)
        ]
        interp.path = (*outer_path, i)
        try:
            results = interp.run_graph(body, [np.int64(i), *carried, *slices, *invariants])
        finally:
            interp.path = outer_path
        cond = bool(np.asarray(results[0]))
        carried = results[1 : 1 + k]
        for acc, y in zip(per_iteration, results[1 + k :], strict=True):
            acc.append(y)
        i += 1
    # Zero trips: the body never ran, so stacked shapes come from its types, with symbolic
    # dims bound from the shapes the body parameters would have had.
    param_shapes = [
        (),
        *(np.shape(c) for c in rest[:k]),
        *(tuple(np.delete(np.shape(src), a)) for src, a in zip(sources, axes, strict=True)),
        *(np.shape(v) for v in invariants),
    ]
    outputs = [
        _stack(ctx, j, acc, st, body.outputs[r].type, _bind_symbols(body, param_shapes))
        for j, (acc, st, r) in enumerate(
            zip(per_iteration, stacked, layout.per_iteration_results(), strict=True)
        )
    ]
    return (*carried, *outputs)


def _stack(
    ctx: KernelContext, j: int, acc: list[Any], st: Stacked, t: Type, bindings: dict[str, int]
) -> np.ndarray[Any, Any]:
    if acc:
        axis = normalize_axis(st.axis, np.ndim(acc[0]) + 1, ctx.where)
        items = acc[::-1] if st.reverse else acc
        shapes = {np.shape(a) for a in items}
        if len(shapes) > 1:
            raise ExecutionError(
                f"{ctx.where}: per-iteration result #{j} changes shape between iterations "
                f"({', '.join(str(list(x)) for x in sorted(shapes))}), so it cannot be stacked"
            )
        return np.stack(items, axis=axis)
    assert isinstance(t, TensorType)
    if t.shape is None:
        return np.zeros((0,), t.dtype.numpy)
    # A dim neither static nor bound is taken as 0, as onnxruntime does for unknown scan shapes.
    dims = [d if isinstance(d, int) else bindings.get(d, 0) for d in t.shape]
    dims.insert(normalize_axis(st.axis, len(dims) + 1, ctx.where), 0)
    return np.zeros(dims, t.dtype.numpy)


def _bind_symbols(body: Graph, shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """Symbolic dims of the body's parameter types bound to concrete sizes."""
    bindings: dict[str, int] = {}
    for param, shape in zip(body.inputs, shapes, strict=True):
        t = param.type
        if isinstance(t, TensorType) and t.shape is not None and len(shape) == len(t.shape):
            for d, n in zip(t.shape, shape, strict=True):
                if isinstance(d, str) and d != "?":
                    bindings.setdefault(d, int(n))
    return bindings


@kernel("If")
def if_(ctx: KernelContext, cond: Any, *captured: Any) -> tuple[Any, ...]:
    c = np.asarray(cond)
    if c.size != 1:
        raise ExecutionError(f"{ctx.where}: cond must hold one element, got shape {list(c.shape)}")
    branch: Graph = ctx.attr("then_branch") if bool(c.reshape(())) else ctx.attr("else_branch")
    return tuple(ctx.interpreter.run_graph(branch, list(captured)))
