"""Shared by the loop passes: replace a Loop node by one with other roles, through Loop.build."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GraphError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Value
from ..ir.loop import Carried, Loop, StackedOutput


def _given(value: Value | None, what: str, loop: Loop) -> Value:
    if value is None:
        raise GraphError(f"{loop.node.describe()}: {what} is missing")
    return value


def rebuild_loop(
    graph: Graph,
    loop: Loop,
    body: Graph,
    *,
    carried: Sequence[Carried],
    invariants: Sequence[Value],
    stacked: Sequence[StackedOutput],
) -> Loop:
    """Replace ``loop`` in ``graph`` by a Loop with ``body`` that keeps the trip count,
    condition and sliced sources and has these carried values, invariants and stacked outputs.
    Kept outputs keep their names and consumers; the outputs of dropped roles must be unused."""
    new = Loop.build(
        Emitter(graph, anchor=loop.node),
        body,
        max_trip_count=loop.trip_count,
        initial_condition=loop.condition,
        carried=[_given(c.initial, "a carried initial value", loop) for c in carried],
        sliced=[(_given(s.source, "a sliced source", loop), s.spec) for s in loop.sliced],
        invariants=invariants,
        stacked=[s.spec for s in stacked],
        name=loop.name,
    )
    old = [c.final for c in carried] + [s.output for s in stacked]
    for before, after in zip(old, new.outputs, strict=True):
        graph.replace(before, after)
    graph.erase(loop.node)
    return new
