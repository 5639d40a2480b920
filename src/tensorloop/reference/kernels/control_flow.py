"""Reference kernels for Loop and If: the text of their docstrings, run literally."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ExecutionError, TensorloopError
from ...ir.branch import If
from ...ir.graph import Node
from ...ir.loop import Loop, Stacked, fixed_runs, result_types_for
from ...tensor.types import TensorType, Type, normalize_axis
from ..registry import KernelContext, kernel


@kernel("Loop")
def loop(ctx: KernelContext, *inputs: Any) -> tuple[Any, ...]:
    view = Loop(ctx.node)
    body, counts = view.body, view.counts
    sliced = [s.spec for s in view.sliced]
    stacked = [s.spec for s in view.stacked]
    max_trip_count, initial_condition, carried, sources, invariants = counts.split_inputs(inputs)

    axes = [
        normalize_axis(sl.axis, np.ndim(src), ctx.where)
        for src, sl in zip(sources, sliced, strict=True)
    ]
    bounds = [int(np.asarray(max_trip_count))] if max_trip_count is not None else []
    bounds += [np.shape(src)[a] for src, a in zip(sources, axes, strict=True)]
    cond = True if initial_condition is None else bool(np.asarray(initial_condition))
    if bounds and cond and not view.can_stop_early:  # certain trips: the budget holds them?
        ctx.state.plan_iterations(min(bounds) * (1 + fixed_runs(body)), ctx.where)
    i, per_iteration = 0, [[] for _ in stacked]  # type: tuple[int, list[list[Any]]]
    state = ctx.state
    state.hold(carried, ctx.where)  # the loop holds its carried values and its stacked rows
    while all(i < b for b in bounds) and cond:
        slices = [
            _row(src, a, np.shape(src)[a] - 1 - i if sl.reverse else i)
            for src, sl, a in zip(sources, sliced, axes, strict=True)
        ]
        with state.iteration(i, ctx.where):
            if slices:
                state.hold(slices, ctx.where)
            results = ctx.run_graph(body, [np.int64(i), *carried, *slices, *invariants])
            if slices:
                state.drop(slices)
        step = counts.split_results(results)
        cond = bool(np.asarray(step.continue_condition))
        state.hold(list(step.carried), ctx.where)
        state.drop(carried)
        carried = list(step.carried)
        for acc, y in zip(per_iteration, step.per_iteration, strict=True):
            state.add_stacked(int(getattr(y, "nbytes", 0)), ctx.where)
            state.hold(y, ctx.where)
            acc.append(y)
        i += 1
    state.drop(carried)
    for acc in per_iteration:
        state.drop(acc)
    state.loop_end(i)
    if stacked and not per_iteration[0]:
        return (*carried, *empty_stacked(ctx.node, carried, sources, invariants))
    outputs = [
        _stack(ctx.where, j, acc, st)
        for j, (acc, st) in enumerate(zip(per_iteration, stacked, strict=True))
    ]
    return (*carried, *outputs)


def _row(src: Any, axis: int, k: int) -> np.ndarray[Any, Any]:
    """Slice ``k`` of ``src`` on ``axis``: an array of its own, C-contiguous, of ``src``'s dtype,
    0-d where the slice is one element (where np.take and plain indexing give a NumPy scalar,
    or for a string tensor the Python ``str`` itself)."""
    view = np.asarray(src)[(slice(None),) * axis + (k, Ellipsis)]
    return np.array(view, order="C")


def empty_stacked(
    node: Node, carried: Sequence[Any], sources: Sequence[Any], invariants: Sequence[Any]
) -> list[np.ndarray[Any, Any]]:
    """The stacked outputs of a loop that ran zero trips (from its final carried values and its
    sliced and invariant inputs): empty along the stacked axis, the other dims from the body's
    types re-inferred with the shapes its parameters would have had."""
    view, where = Loop(node), node.describe()
    axes = [
        normalize_axis(s.spec.axis, np.ndim(src), where)
        for s, src in zip(view.sliced, sources, strict=True)
    ]
    types = _zero_trip_types(view, carried, sources, invariants, axes)
    if types is None:
        types = [s.result.type for s in view.stacked]
    return [_empty(where, s.spec, t) for s, t in zip(view.stacked, types, strict=True)]


def _zero_trip_types(
    view: Loop,
    carried: Sequence[Any],
    sources: Sequence[Any],
    invariants: Sequence[Any],
    axes: list[int],
) -> list[Type] | None:
    """Zero trips: the body never ran, so the stacked shapes come from its types, re-inferred
    with the concrete shapes its parameters would have had; None if that inference fails."""
    shapes = [
        (),
        *(_shape(c) for c in carried),
        *(tuple(np.delete(np.shape(src), a)) for src, a in zip(sources, axes, strict=True)),
        *(_shape(v) for v in invariants),
    ]
    param_types: list[Type] = []
    for param, shape in zip(view.body.inputs, shapes, strict=True):
        t = param.type
        param_types.append(t.with_shape(shape) if isinstance(t, TensorType) else t)
    try:
        types = result_types_for(view.body, param_types)
    except TensorloopError:
        return None
    return view.counts.split_results(types).per_iteration


def _stack(where: str, j: int, acc: list[Any], st: Stacked) -> np.ndarray[Any, Any]:
    axis = normalize_axis(st.axis, np.ndim(acc[0]) + 1, where)
    items = acc[::-1] if st.reverse else acc
    shapes = {np.shape(a) for a in items}
    if len(shapes) > 1:
        raise ExecutionError(
            f"{where}: per-iteration result #{j} changes shape between iterations "
            f"({', '.join(str(list(x)) for x in sorted(shapes))}), so it cannot be stacked"
        )
    return np.stack(items, axis=axis)


def _empty(where: str, st: Stacked, t: Type) -> np.ndarray[Any, Any]:
    assert isinstance(t, TensorType)
    if t.shape is None:
        return np.zeros((0,), t.dtype.numpy)
    # A dim still unknown is taken as 0, as onnxruntime does for unknown scan shapes.
    dims = [d if isinstance(d, int) else 0 for d in t.shape]
    dims.insert(normalize_axis(st.axis, len(dims) + 1, where), 0)
    return np.zeros(dims, t.dtype.numpy)


def _shape(value: Any) -> tuple[int, ...]:
    """A tensor's shape; () for a sequence or an optional, which bind no dims."""
    return np.shape(value) if isinstance(value, np.ndarray | np.generic) else ()


@kernel("If")
def if_(ctx: KernelContext, cond: Any, *captured: Any) -> tuple[Any, ...]:
    c = np.asarray(cond)
    if c.size != 1:
        raise ExecutionError(f"{ctx.where}: cond must hold one element, got shape {list(c.shape)}")
    branch = If(ctx.node).branch(bool(c.reshape(())))
    return tuple(ctx.run_graph(branch, list(captured)))
