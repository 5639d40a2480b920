"""Shared by the loop passes: replace a Loop node by one with other roles, through Loop.build."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import GraphError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Value
from ..ir.loop import Carried, Loop, Sliced, Stacked, StackedOutput


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


@dataclass
class LoopRoles:
    """A loop's roles as values, to edit and rebuild it with ``rebuild_roles``: each carried
    value as (initial, param, next, final output; None for one the edit adds), each sliced and
    invariant input with its parameter, each stacked result with its record and output."""

    trip: Value | None
    condition: Value | None
    carried: list[tuple[Value, Value, Value, Value | None]]
    sliced: list[tuple[Value, Sliced, Value]]
    invariants: list[tuple[Value, Value]]
    continue_condition: Value
    stacked: list[tuple[Value, Stacked, Value]]


def loop_roles(loop: Loop) -> LoopRoles:
    """``loop``'s roles, read through its view."""

    return LoopRoles(
        loop.trip_count,
        loop.condition,
        [
            (_given(c.initial, "a carried initial value", loop), c.param, c.next, c.final)
            for c in loop.carried
        ],
        [(_given(s.source, "a sliced source", loop), s.spec, s.param) for s in loop.sliced],
        [(_given(i.value, "an invariant", loop), i.param) for i in loop.invariants],
        loop.continue_condition,
        [(s.result, s.spec, s.output) for s in loop.stacked],
    )


def rebuild_roles(graph: Graph, loop: Loop, roles: LoopRoles, dropped: dict[Value, Value]) -> Loop:
    """``loop`` rebuilt with ``roles`` (its body's parameters and results set to them): each
    output that roles keep takes the new loop's, a carried output it no longer has is replaced
    by ``dropped[output]``, and a carried value the edit added (final None) has no old one."""
    body = loop.body
    body.inputs = [
        loop.iteration,
        *[c[1] for c in roles.carried],
        *[s[2] for s in roles.sliced],
        *[i[1] for i in roles.invariants],
    ]
    body.outputs = [roles.continue_condition, *[c[2] for c in roles.carried]]
    body.outputs += [s[0] for s in roles.stacked]
    old = loop.node
    new = Loop.build(
        Emitter(graph, anchor=old),
        body,
        max_trip_count=roles.trip,
        initial_condition=roles.condition,
        carried=[c[0] for c in roles.carried],
        sliced=[(s[0], s[1]) for s in roles.sliced],
        invariants=[i[0] for i in roles.invariants],
        stacked=[s[1] for s in roles.stacked],
        name=loop.name,
    )
    kept = [c[3] for c in roles.carried] + [s[2] for s in roles.stacked]
    for before, after in zip(kept, new.outputs, strict=True):
        if before is not None:
            graph.replace(before, after)
    for before, value in dropped.items():
        graph.replace(before, value)
    graph.erase(old)
    return new
