"""The facts about a Loop's trips that ir/loop.py works out for every backend and pass:
``always_continues``, ``always_starts``, ``can_stop_early``, ``constant_trip_count``,
``trip_count_is_dynamic``, ``static_lengths``, ``bound_given``, ``trips_given``, and the
static ``trip_bound`` and ``static_trip_count`` they make up."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from loop_ir_builders import BOOL, F32, I64, T, body_graph, const, loop, op

from tensorloop import Graph, Sliced
from tensorloop.ir.loop import Loop, least_bound, true_constant

ABSENT, RUNTIME = "absent", "runtime"


def make(
    trip: Any = ABSENT,
    cond: Any = ABSENT,
    continues: Any = True,
    sources: tuple[tuple[int | str, ...], ...] = (),
    axis: int = 0,
) -> Loop:
    """A Loop: ``trip`` and ``cond`` absent, a constant, or a graph input (``RUNTIME``);
    ``continues`` a constant or ``RUNTIME`` (computed from the iteration); one sliced source of
    each shape in ``sources``, sliced on ``axis``."""
    g = Graph("g")
    trip_v = None
    if trip == RUNTIME:
        trip_v = g.add_input("n", T(I64))
    elif trip != ABSENT:
        trip_v = const(g, trip, I64, "n")
    cond_v = None
    if cond == RUNTIME:
        cond_v = g.add_input("c", T(BOOL))
    elif cond != ABSENT:
        cond_v = const(g, cond, BOOL, "c")
    srcs = [g.add_input(f"s{k}", T(F32, *shape)) for k, shape in enumerate(sources)]
    params = [("i", T(I64))]
    for k, shape in enumerate(sources):
        rest = shape[:axis] + shape[axis + 1 :] if axis >= 0 else shape[:axis]
        params.append((f"x{k}", T(F32, *rest)))
    body, ps = body_graph("body", *params)
    if continues == RUNTIME:
        go = op(body, "Less", ps[0], const(body, 3, I64, "three"))
    else:
        go = const(body, continues, BOOL, "go")
    body.set_outputs([go])
    outs = loop(
        g,
        body,
        trip=trip_v,
        cond=cond_v,
        sources=srcs,
        sliced=[Sliced(axis) for _ in srcs],
    )
    g.set_outputs(outs)
    (node,) = [n for n in g.nodes if n.op == "Loop"]
    return Loop(node)


@pytest.mark.parametrize(
    ("cond", "continues", "starts", "always", "early"),
    [
        (ABSENT, True, True, True, False),
        (True, True, True, True, False),
        (False, True, False, True, True),
        (RUNTIME, True, False, True, True),
        (ABSENT, False, True, False, True),
        (ABSENT, RUNTIME, True, False, True),
        (True, RUNTIME, True, False, True),
    ],
)
def test_conditions(cond: Any, continues: Any, starts: bool, always: bool, early: bool) -> None:
    view = make(trip=5, cond=cond, continues=continues)
    assert view.always_starts is starts
    assert view.always_continues is always
    assert view.can_stop_early is early


@pytest.mark.parametrize(
    ("trip", "constant", "dynamic"),
    [(ABSENT, None, False), (7, 7, False), (0, 0, False), (-3, 0, False), (RUNTIME, None, True)],
)
def test_trip_count(trip: Any, constant: int | None, dynamic: bool) -> None:
    view = make(trip=trip)
    assert view.constant_trip_count == constant
    assert view.trip_count_is_dynamic is dynamic


def test_static_lengths_read_only_the_sliced_axis() -> None:
    assert make(sources=((4, 2), (6, "d"))).static_lengths == [4, 6]
    assert make(sources=(("d", 2),)).static_lengths is None
    assert make(sources=((3, 5),), axis=-1).static_lengths == [5]
    assert make().static_lengths == []


def test_bounds_and_trips_given_lengths() -> None:
    assert least_bound(None, []) is None
    assert least_bound(4, []) == 4
    assert least_bound(None, [6, 3]) == 3
    assert least_bound(2, [6, 3]) == 2
    counted = make(trip=5, sources=(("d",),))
    assert counted.bound_given([3]) == 3
    assert counted.bound_given([9]) == 5
    assert counted.trips_given([9]) == 5
    # A trip count only the run knows still lets the lengths bound the loop, not count it.
    dynamic = make(trip=RUNTIME, sources=(("d",),))
    assert dynamic.bound_given([4]) == 4
    assert dynamic.trips_given([4]) is None
    assert make(trip=RUNTIME).bound_given([]) is None
    stoppable = make(trip=5, continues=RUNTIME)
    assert stoppable.bound_given([]) == 5
    assert stoppable.trips_given([]) is None
    assert make(cond=True, sources=(("d",),)).trips_given([8]) == 8


@pytest.mark.parametrize(
    ("kw", "bound", "count"),
    [
        ({"trip": 5}, 5, 5),
        ({"trip": 5, "sources": ((3,),)}, 3, 3),
        ({"sources": ((4,), (6,))}, 4, 4),
        ({"sources": (("d",),)}, None, None),
        ({"trip": RUNTIME, "sources": ((4,),)}, None, None),
        ({"trip": 5, "continues": RUNTIME}, 5, None),
        ({"trip": 5, "cond": RUNTIME}, 5, None),
        # A given initial condition, even a constant true one, leaves the count to the run in
        # static types (trips_given counts it).
        ({"trip": 5, "cond": True}, 5, None),
        ({}, None, None),
    ],
)
def test_static_bound_and_count(kw: dict[str, Any], bound: int | None, count: int | None) -> None:
    view = make(**kw)
    assert view.trip_bound == bound
    assert view.static_trip_count == count
    lengths = view.static_lengths
    if lengths is not None and not view.trip_count_is_dynamic:
        assert view.bound_given(lengths) == bound


def test_true_constant() -> None:
    g = Graph("g")
    assert true_constant(const(g, True, BOOL))
    assert not true_constant(const(g, False, BOOL))
    assert not true_constant(const(g, np.array([True, True]), BOOL))
    assert not true_constant(g.add_input("c", T(BOOL)))
    assert not true_constant(None)
