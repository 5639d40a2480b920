"""Loop and If lowered to XLA: ``lax.scan``, ``lax.while_loop`` and ``lax.cond``.

A Loop whose trip count is static and which nothing can stop early (``Loop.trips_given``,
with the source lengths tracing knows) is a ``lax.scan`` (its sliced sources scanned along
their axis, its per-iteration results stacked by the scan). Every other Loop is a
``lax.while_loop`` whose state is the iteration, the fault code, the condition, the carried
values and one buffer per stacked result, preallocated to the loop's trip bound
(``Loop.bound_given``), or to a capacity that grows: a loop that would outrun its buffers
stops, reports a ``grow`` fault, and the executable compiles again with the capacity doubled.
Such a loop's stacked outputs leave the island as ``DynamicStack`` (the buffer and the count),
cut to length on the way out. The iteration limit is a run-time operand; a loop that would pass
it stops and reports a ``limit`` fault, which the executable raises as the reference does. A
while loop cannot be interrupted from outside XLA, so a run with a deadline runs the nodes
holding one on the compiled backend (``uninterruptible``); a scan's trips are static and few.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir.branch import If
from ...ir.graph import Node
from ...ir.loop import Loop, Stacked, fixed_runs
from ...tensor.types import TensorType, normalize_axis
from .lowering import ConstantPool, Fault, JaxValue, LowerContext, lower_graph, lowers

MAX_SCAN_TRIPS = 1_000_000
"""A static trip count above this runs as a while loop, so the iteration limit can stop it."""

INITIAL_CAPACITY = 64
"""Stacked buffers of a loop with no static trip bound start this long (then double)."""


@dataclass(frozen=True)
class DynamicStack:
    """A stacked output whose length is known only at run time: ``buffer`` holds the
    per-iteration results on axis 0, ``count`` of them valid; ``spec`` says where they go."""

    buffer: JaxValue
    count: JaxValue
    spec: Stacked

    def finish(self) -> JaxValue:
        """The output itself (outside the compiled program, where lengths may vary)."""
        import jax.numpy as jnp
        from jax import lax

        out = lax.slice_in_dim(self.buffer, 0, int(self.count), axis=0)
        if self.spec.reverse:
            out = jnp.flip(out, axis=0)
        axis = normalize_axis(self.spec.axis, out.ndim, "stacked output")
        return jnp.moveaxis(out, 0, axis) if axis else out


def _scanned(trips: int | None) -> int | None:
    """``trips`` if a loop that runs them lowers to a ``lax.scan``, else None."""
    return trips if trips is not None and trips <= MAX_SCAN_TRIPS else None


def scan_trips(view: Loop) -> int | None:
    """The trips of a loop that lowers to a ``lax.scan`` (its trip count known from the static
    types, ``Loop.trips_given``, and at most ``MAX_SCAN_TRIPS``), or None for a
    ``lax.while_loop`` (or a scan whose lengths only tracing knows)."""
    lengths = view.static_lengths
    return None if lengths is None else _scanned(view.trips_given(lengths))


def uninterruptible(node: Node) -> bool:
    """Whether XLA would run ``node`` for long with no way to stop it: it is or holds (in any
    body or branch) a loop lowered to a ``lax.while_loop``, or scans nested to more than
    ``MAX_SCAN_TRIPS`` trips in all. Nothing outside XLA can stop a compiled program, so a
    run with a deadline leaves such nodes to the compiled backend, which checks the deadline
    every iteration."""
    stack = [(node, 1)]
    while stack:
        n, trips = stack.pop()
        if n.op == "Loop":
            own = scan_trips(Loop(n))
            if own is None or trips * own > MAX_SCAN_TRIPS:
                return True
            trips *= max(own, 1)
        stack += [(inner, trips) for sub in n.subgraphs.values() for inner in sub.nodes]
    return False


@lowers("Loop")
def _loop(ctx: LowerContext, node: Node, attrs: dict[str, Any], *inputs: JaxValue) -> list[Any]:

    view = Loop(node)
    trip, cond0, carried, sources, invariants = view.counts.split_inputs(inputs)
    axes = [
        normalize_axis(s.spec.axis, src.ndim, node.describe())
        for s, src in zip(view.sliced, sources, strict=True)
    ]
    lengths = [int(src.shape[a]) for src, a in zip(sources, axes, strict=True)]
    where = node.describe()
    constants: ConstantPool = ctx.constants
    trips = _scanned(view.trips_given(lengths))
    if trips is not None and trips * (1 + fixed_runs(view.body)) > MAX_SCAN_TRIPS:
        trips = None  # nested scans of so many trips in all: a while loop the budget can stop
    if trips is not None:
        return _scan(ctx, view, trips, carried, sources, axes, invariants, constants, where)
    bound = view.bound_given(lengths)
    return _while(ctx, view, bound, trip, cond0, carried, sources, axes, invariants, constants)


def _body_fn(
    ctx: LowerContext, view: Loop, invariants: list[JaxValue], constants: ConstantPool
) -> Any:
    """The body as a function ``(code, count, i, carried, slices) -> (code, count, cond,
    carried, ys)``: ``count`` the iterations made at every depth, this one included."""

    def run(
        code: JaxValue, count: JaxValue, i: JaxValue, carried: list[Any], slices: list[Any]
    ) -> Any:
        inner = ctx.child(code, count)
        results = lower_graph(inner, view.body, [i, *carried, *slices, *invariants], constants)
        step = view.counts.split_results(results)
        cond = step.continue_condition
        return inner.code, inner.count, cond, list(step.carried), list(step.per_iteration)

    return run


def _scan(
    ctx: LowerContext,
    view: Loop,
    n: int,
    carried: list[JaxValue],
    sources: list[JaxValue],
    axes: list[int],
    invariants: list[JaxValue],
    constants: ConstantPool,
    where: str,
) -> list[Any]:
    import jax.numpy as jnp
    from jax import lax

    xs = []
    for src, s, a in zip(sources, view.sliced, axes, strict=True):
        x = jnp.moveaxis(src, a, 0) if a else src
        x = jnp.flip(x, axis=0) if s.spec.reverse else x
        xs.append(lax.slice_in_dim(x, 0, n, axis=0))
    run = _body_fn(ctx, view, invariants, constants)
    # More trips than the limit allows, or than the budget of iterations in all: the compiled
    # backend reruns the island and stops at the limit, or at an error of an earlier
    # iteration, in the reference's order.
    ctx.deopt_unless(jnp.int64(n) <= ctx.limit, view.node)
    ctx.deopt_unless(n <= (ctx.budget - ctx.count) // (1 + fixed_runs(view.body)), view.node)

    def step(state: Any, slices: Any) -> Any:
        i, code, count, values = state
        code, count, _, values, ys = run(code, count + 1, i, values, list(slices))
        return (i + 1, code, count, values), ys

    start = (jnp.int64(0), ctx.code, ctx.count, list(carried))
    (_, code, count, final), ys = lax.scan(step, start, xs, length=n)
    ctx.code, ctx.count = code, count
    outputs = []
    for y, st in zip(ys, view.stacked, strict=True):
        y = jnp.flip(y, axis=0) if st.spec.reverse else y
        axis = normalize_axis(st.spec.axis, y.ndim, where)
        outputs.append(jnp.moveaxis(y, 0, axis) if axis else y)
    return [*final, *outputs]


def _while(
    ctx: LowerContext,
    view: Loop,
    bound: int | None,
    trip: JaxValue,
    cond0: JaxValue,
    carried: list[JaxValue],
    sources: list[JaxValue],
    axes: list[int],
    invariants: list[JaxValue],
    constants: ConstantPool,
) -> list[Any]:
    import jax.numpy as jnp
    from jax import lax

    node, where = view.node, view.node.describe()
    lengths = [int(src.shape[a]) for src, a in zip(sources, axes, strict=True)]
    stacked = view.stacked
    growing = bool(stacked) and bound is None
    capacity = ctx.capacities.get(node, INITIAL_CAPACITY) if growing else (bound or 0)
    buffers = []
    for st in stacked:
        t = st.result.type
        assert isinstance(t, TensorType) and t.shape is not None
        # At least one row: a bound of 0 runs no trip, but the step writing row i is traced.
        buffers.append(jnp.zeros((max(capacity, 1), *t.shape), t.dtype.numpy))
    run = _body_fn(ctx, view, invariants, constants)
    start = jnp.asarray(True) if cond0 is None else jnp.asarray(cond0).reshape(()).astype(bool)

    def in_bounds(i: JaxValue) -> JaxValue:
        ok = jnp.asarray(True)
        if trip is not None:
            ok = ok & (i < jnp.asarray(trip).reshape(()).astype(jnp.int64))
        for n in lengths:
            ok = ok & (i < n)
        return ok

    if not view.can_stop_early and (trip is not None or lengths):
        # Certain trips (a run-time trip count too): more than the budget holds hands the
        # island on, whose compiled backend refuses the loop before it starts.
        trips = jnp.asarray(min(lengths)) if lengths else jnp.int64(2**62)
        if trip is not None:
            trips = jnp.minimum(trips, jnp.asarray(trip).reshape(()).astype(jnp.int64))
        per_trip = 1 + fixed_runs(view.body)
        ctx.deopt_unless(trips <= (ctx.budget - ctx.count) // per_trip, node)

    def keep_going(state: Any) -> JaxValue:
        i, code, count, cond, _, _ = state
        go = (code == 0) & cond & in_bounds(i) & (i < ctx.limit) & (count < ctx.budget)
        return go & (i < capacity) if stacked else go

    def step(state: Any) -> Any:
        i, code, count, _, values, bufs = state
        slices = []
        for src, s, a, n in zip(sources, view.sliced, axes, lengths, strict=True):
            if n == 0:  # the loop never runs; XLA cannot index an empty axis even untaken
                slices.append(jnp.zeros(src.shape[:a] + src.shape[a + 1 :], src.dtype))
                continue
            idx = n - 1 - i if s.spec.reverse else i
            slices.append(lax.dynamic_index_in_dim(src, idx, axis=a, keepdims=False))
        code, count, cond, values, ys = run(code, count + 1, i, values, slices)
        bufs = [
            lax.dynamic_update_index_in_dim(b, jnp.asarray(y).astype(b.dtype), i, axis=0)
            for b, y in zip(bufs, ys, strict=True)
        ]
        return i + 1, code, count, jnp.asarray(cond).reshape(()).astype(bool), values, bufs

    state = (jnp.int64(0), ctx.code, ctx.count, start, list(carried), buffers)
    i, code, count, cond, final, bufs = lax.while_loop(keep_going, step, state)
    wants_more = (code == 0) & cond & in_bounds(i)
    ctx.code, ctx.count = code, count
    ctx.fail_unless(~(wants_more & (i >= ctx.limit)), Fault("limit", where, node))
    # Out of budget: the compiled backend reruns the island and stops where the reference does
    # (the loop path in its error).
    ctx.deopt_unless(~(wants_more & (count >= ctx.budget)), node)
    if growing:
        ctx.fail_unless(~(wants_more & (i >= capacity)), Fault("grow", where, node))
    outputs: list[Any] = []
    for b, st in zip(bufs, stacked, strict=True):
        out_type = st.output.type
        if isinstance(out_type, TensorType) and out_type.is_static:
            b = b[:capacity]  # a bound of 0 still allocated one row, which is no output
            y = jnp.flip(b, axis=0) if st.spec.reverse else b
            axis = normalize_axis(st.spec.axis, y.ndim, where)
            # The declared rows are a claim the trips may break (an early exit, a hand-typed
            # file): then the compiled backend judges the island, as the reference does.
            ctx.deopt_unless(i == out_type.static_shape[axis], node)
            outputs.append(jnp.moveaxis(y, 0, axis) if axis else y)
        else:
            outputs.append(DynamicStack(b, i, st.spec))
    return [*final, *outputs]


@lowers("If")
def _if(ctx: LowerContext, node: Node, attrs: dict[str, Any], *inputs: JaxValue) -> list[Any]:
    import jax.numpy as jnp
    from jax import lax

    view = If(node)
    cond, *captured = inputs
    constants: ConstantPool = ctx.constants

    def branch(graph: Any) -> Any:
        def run(code: JaxValue, count: JaxValue, args: list[JaxValue]) -> Any:
            inner = ctx.child(code, count)
            return inner.code, inner.count, lower_graph(inner, graph, args, constants)

        return run

    pred = jnp.asarray(cond).reshape(()).astype(bool)
    code, count, outs = lax.cond(
        pred,
        branch(view.then_branch),
        branch(view.else_branch),
        ctx.code,
        ctx.count,
        list(captured),
    )
    ctx.code, ctx.count = code, count
    return list(outs)


__all__ = [
    "INITIAL_CAPACITY",
    "MAX_SCAN_TRIPS",
    "DynamicStack",
    "scan_trips",
    "uninterruptible",
]
