"""Functional loops in the shape JAX users know: scan, while_loop, fori_loop and cond."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError
from ..ir.branch import If
from ..ir.graph import Graph, Value
from ..ir.loop import CONDITION_TYPE, ITERATION_TYPE, Loop, Sliced, Stacked
from ..tensor.types import TensorType, Type, normalize_axis
from .pytree import PyTree, flatten, unflatten
from .tracing import (
    Frame,
    Tensor,
    TraceBody,
    as_tensor,
    constant,
    current_frame,
    emit,
    emit_node,
)

_MAX_WIDENINGS = 4


def _tensors(leaves: Sequence[Any]) -> list[Tensor]:
    return [as_tensor(x) for x in leaves]


class _Body:
    """A traced body: its frame, the outer values it captured (in parameter order), its results."""

    def __init__(self, frame: Frame, results: list[Value]) -> None:
        self.frame = frame
        self.results = results
        params = set(frame.graph.inputs)
        self.captured = [outer for outer, inner in frame.captures.items() if inner in params]

    @property
    def graph(self) -> Graph:
        return self.frame.graph


def _trace(
    name: str,
    param_types: Sequence[tuple[str, Type]],
    fn: Callable[[list[Tensor]], list[Any]],
) -> _Body:
    with TraceBody(name) as frame:
        params = [Tensor(frame.graph.add_input(n, t)) for n, t in param_types]
        results = [frame.capture(as_tensor(r).value) for r in fn(params)]
        frame.graph.set_outputs(results)
    return _Body(frame, results)


def _trace_carried(
    what: str,
    name: str,
    fixed_before: Sequence[tuple[str, Type]],
    carried: Sequence[Tensor],
    fixed_after: Sequence[tuple[str, Type]],
    fn: Callable[[list[Tensor]], list[Any]],
    first_carried_result: int,
) -> _Body:
    """Trace a loop body, widening carried types whose shape the body changes, then re-tracing."""
    types: list[Type] = [c.type for c in carried]
    for _ in range(_MAX_WIDENINGS):
        ports = [*fixed_before, *((f"carried{j}", t) for j, t in enumerate(types)), *fixed_after]
        body = _trace(name, ports, fn)
        yielded = body.results[first_carried_result : first_carried_result + len(types)]
        widened = False
        for j, (t, v) in enumerate(zip(types, yielded, strict=True)):
            if t.compatible(v.type):
                continue
            if (
                isinstance(t, TensorType)
                and isinstance(v.type, TensorType)
                and (t.dtype == v.type.dtype)
            ):
                types[j] = t.join(v.type)
                widened = True
            else:
                raise GraphError(f"carried #{j} of {what}: body yields {v.type}, expected {t}")
        if not widened:
            return body
    raise GraphError(f"{what}: carried types did not settle after {_MAX_WIDENINGS} re-traces")


def _true() -> Tensor:
    return constant(np.bool_(True))


def scan(
    fn: Callable[[Any, Any], tuple[Any, Any]],
    init: PyTree,
    xs: PyTree = None,
    axis: int = 0,
    reverse: bool = False,
    length: int | None = None,
) -> tuple[Any, Any]:
    """``carry, y = fn(carry, x)`` for each slice ``x`` of ``xs`` along ``axis``; ys stacked there.

    With ``reverse=True`` the slices are visited last to first and ``ys[i]`` still pairs with
    ``xs[i]``. ``xs=None`` needs ``length``. Returns ``(final_carry, stacked_ys)``.
    """
    carry_leaves, carry_tree = flatten(init)
    carried = _tensors(carry_leaves)
    x_leaves, x_tree = flatten(xs)
    sources = _tensors(x_leaves)
    if not sources and length is None:
        raise GraphError("tl.scan needs xs or length")
    slice_ports: list[tuple[str, Type]] = []
    for j, src in enumerate(sources):
        t = src.value.tensor_type
        if t.shape is None:
            raise GraphError(f"tl.scan: xs leaf #{j} has unknown rank; its axis cannot be sliced")
        a = normalize_axis(axis, len(t.shape), f"tl.scan: xs leaf #{j} of type {t}")
        if length is not None and isinstance(t.shape[a], int) and t.shape[a] != length:
            raise GraphError(
                f"tl.scan: length={length} but xs leaf #{j} has {t.shape[a]} elements on axis {a}"
            )
        slice_ports.append((f"x{j}", TensorType(t.dtype, t.shape[:a] + t.shape[a + 1 :])))
    lengths = {
        d
        for src in sources
        if (shape := src.value.tensor_type.shape) is not None
        for d in [shape[normalize_axis(axis, len(shape))]]
        if isinstance(d, int)
    }
    if len(lengths) > 1:
        raise GraphError(
            f"tl.scan: xs leaves have different lengths {sorted(lengths)} on axis {axis}; "
            "they must all be scanned together"
        )
    y_tree: list[Any] = []

    def body_fn(params: list[Tensor]) -> list[Any]:
        k = len(carried)
        c = unflatten(carry_tree, params[1 : 1 + k])
        x = unflatten(x_tree, params[1 + k : 1 + k + len(sources)])
        out = fn(c, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise GraphError("tl.scan: fn must return a pair (new_carry, y)")
        new_leaves, new_tree = flatten(out[0])
        if new_tree != carry_tree:
            raise GraphError(
                f"tl.scan: fn returned a carry of structure {new_tree}, expected {carry_tree}"
            )
        y_leaves, tree = flatten(out[1])
        y_tree[:] = [tree]
        return [_true(), *new_leaves, *y_leaves]

    body = _trace_carried(
        "tl.scan", "scan_body", [("iteration", ITERATION_TYPE)], carried, slice_ports, body_fn, 1
    )
    num_y = len(body.results) - 1 - len(carried)
    trip = None if length is None else constant(np.int64(length))
    outs = _emit_loop(
        trip,
        None,
        carried,
        sources,
        body,
        sliced=(Sliced(axis, reverse),) * len(sources),
        stacked=(Stacked(axis, reverse),) * num_y,
    )
    return (unflatten(carry_tree, outs[: len(carried)]), unflatten(y_tree[0], outs[len(carried) :]))


def while_loop(cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], init: PyTree) -> Any:
    """``while cond_fn(val): val = body_fn(val)``; returns the final ``val``."""
    leaves, tree = flatten(init)
    carried = _tensors(leaves)
    first = _condition(cond_fn(unflatten(tree, carried)), "tl.while_loop: cond_fn")

    def body(params: list[Tensor]) -> list[Any]:
        new_leaves, new_tree = flatten(body_fn(unflatten(tree, params[1:])))
        if new_tree != tree:
            raise GraphError(
                f"tl.while_loop: body_fn returned structure {new_tree}, expected {tree}"
            )
        new = _tensors(new_leaves)
        return [_condition(cond_fn(unflatten(tree, new)), "tl.while_loop: cond_fn"), *new]

    traced = _trace_carried(
        "tl.while_loop", "while_body", [("iteration", ITERATION_TYPE)], carried, [], body, 1
    )
    return unflatten(tree, _emit_loop(None, first, carried, [], traced))


def fori_loop(
    lower: int | Tensor, upper: int | Tensor, body_fn: Callable[[Any, Any], Any], init: PyTree
) -> Any:
    """``for i in range(lower, upper): val = body_fn(i, val)``; returns the final ``val``."""
    leaves, tree = flatten(init)
    carried = _tensors(leaves)
    if isinstance(lower, int) and isinstance(upper, int):
        trip = constant(np.int64(max(upper - lower, 0)))
    else:
        like = upper.dtype if isinstance(upper, Tensor) else None
        lo = as_tensor(lower, like)
        hi = as_tensor(upper, lo.dtype)
        trip = emit("Cast", [as_tensor(hi - lo)], {"to": ITERATION_TYPE.dtype})
    index_dtype = lower.dtype if isinstance(lower, Tensor) else ITERATION_TYPE.dtype

    def body(params: list[Tensor]) -> list[Any]:
        i = params[0]
        if index_dtype != ITERATION_TYPE.dtype:
            i = emit("Cast", [i], {"to": index_dtype})
        if not (isinstance(lower, int) and lower == 0):
            i = i + lower
        new_leaves, new_tree = flatten(body_fn(i, unflatten(tree, params[1:])))
        if new_tree != tree:
            raise GraphError(
                f"tl.fori_loop: body_fn returned structure {new_tree}, expected {tree}"
            )
        return [_true(), *new_leaves]

    traced = _trace_carried(
        "tl.fori_loop", "fori_body", [("iteration", ITERATION_TYPE)], carried, [], body, 1
    )
    return unflatten(tree, _emit_loop(trip, None, carried, [], traced))


def cond(
    pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], *operands: Any
) -> Any:
    """``true_fn(*operands) if pred else false_fn(*operands)``, both branches traced (If)."""
    p = _condition(pred, "tl.cond: pred")
    ops = _tensors(operands)
    ports = [(f"operand{j}", t.type) for j, t in enumerate(ops)]
    trees: list[Any] = []

    def branch(fn: Callable[..., Any]) -> Callable[[list[Tensor]], list[Any]]:
        def run(params: list[Tensor]) -> list[Any]:
            out_leaves, tree = flatten(fn(*params))
            trees.append(tree)
            return out_leaves

        return run

    then_b = _trace("then_branch", ports, branch(true_fn))
    else_b = _trace("else_branch", ports, branch(false_fn))
    if trees[0] != trees[1]:
        raise GraphError(f"tl.cond: branches return different structures {trees[0]} and {trees[1]}")
    captured = list(dict.fromkeys([*then_b.captured, *else_b.captured]))
    for b in (then_b, else_b):
        _align_params(b, len(ops), captured)
    outs = emit_node(
        "If", *If.operands(p, then_b.graph, else_b.graph, [*ops, *map(Tensor, captured)])
    )
    return unflatten(trees[0], outs)


def _align_params(body: _Body, num_fixed: int, captured: list[Value]) -> None:
    """Give a branch one parameter per captured value, in the shared order both branches use."""
    g = body.graph
    inner = {outer: body.frame.captures[outer] for outer in body.captured}
    params = [inner.get(v) or g.add_input(v.name, v.type) for v in captured]
    g.inputs = [*g.inputs[:num_fixed], *params]


def _condition(x: Any, what: str) -> Tensor:
    t = as_tensor(np.asarray(x, np.bool_) if isinstance(x, bool | np.bool_) else x)
    if not CONDITION_TYPE.compatible(t.type):
        raise GraphError(f"{what} must be a bool scalar, got {t.type}")
    return t


def _emit_loop(
    trip: Tensor | None,
    first: Tensor | None,
    carried: Sequence[Tensor],
    sources: Sequence[Tensor],
    body: _Body,
    sliced: tuple[Sliced, ...] = (),
    stacked: tuple[Stacked, ...] = (),
) -> list[Tensor]:
    inputs, attrs = Loop.operands(
        body.graph,
        max_trip_count=trip,
        initial_condition=first,
        carried=carried,
        sliced=list(zip(sources, sliced, strict=True)),
        invariants=[Tensor(v) for v in body.captured],
        stacked=stacked,
    )
    # Named after its body ("scan_body" -> "scan", made unique) so errors say which loop it is.
    name = current_frame().graph.unique_name(body.graph.name.removesuffix("_body"))
    return emit_node("Loop", inputs, attrs, name=name)
