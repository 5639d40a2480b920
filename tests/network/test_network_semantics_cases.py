"""Hand-worked loop networks (spec examples, zero trips, bad runs): model and tensorloop agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from network_semantics_model import Array, InvalidRunError, LazySequences

from tensorloop.errors import ExecutionError, NetworkError
from tensorloop.network import (
    ElementWiseOperation,
    ILoop,
    ITensor,
    LoopOutput,
    Network,
    ReduceOperation,
    TripLimit,
)

# --------------------------------------------------------------------------------------------
# hand-worked cases: the spec's own examples, zero-trip loops and invalid runs, checked against
# both the model (so it is seen to say what the spec says) and tensorloop
# --------------------------------------------------------------------------------------------
SPEC_MATRIX = np.array([[2, 3, 5], [4, 6, 8]], np.float32)


def int32(net: Network, value: int) -> ITensor:
    return net.add_constant((), np.int32(value)).get_output(0)


def row_loop(
    count: int | None = None,
    count_as_input: bool = False,
    stop: int | None = None,
    length: int = 3,
) -> Network:
    """Over the rows of x (2, 3): a running sum (LAST_VALUE) and the rows (CONCATENATE and
    REVERSE, on axis 0 and 1). A COUNT limit of ``count``; a WHILE limit i < ``stop``."""
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    if count is not None:
        c = net.add_input("count", "int32", ()) if count_as_input else int32(net, count)
        loop.add_trip_limit(c, TripLimit.COUNT)
    if stop is not None:
        i = loop.add_recurrence(int32(net, 0))
        step = net.add_elementwise(i.get_output(0), int32(net, 1), ElementWiseOperation.SUM)
        i.set_input(1, step.get_output(0))
        less = net.add_elementwise(i.get_output(0), int32(net, stop), ElementWiseOperation.LESS)
        loop.add_trip_limit(less.get_output(0), TripLimit.WHILE)
    row = loop.add_iterator(x).get_output(0)
    total = loop.add_recurrence(net.add_constant((3,), np.ones(3, np.float32)).get_output(0))
    added = net.add_elementwise(total.get_output(0), row, ElementWiseOperation.SUM)
    total.set_input(1, added.get_output(0))
    outs = [loop.add_loop_output(total.get_output(0), LoopOutput.LAST_VALUE)]
    for kind, axis in [("CONCATENATE", 0), ("REVERSE", 0), ("CONCATENATE", 1), ("REVERSE", 1)]:
        outs.append(loop.add_loop_output(row, LoopOutput[kind], axis))
        outs[-1].set_input(1, int32(net, length))
    for i, out in enumerate(outs):
        out.get_output(0).name = ["total", "cat0", "rev0", "cat1", "rev1"][i]
        net.mark_output(out.get_output(0))
    return net


def model_outputs(net: Network, feeds: dict[str, Array]) -> dict[str, Array]:
    lazy = LazySequences(feeds)
    return {t.name: lazy.value(t, {}) for t in map(net.get_output, range(net.num_outputs))}


def both_ways(net: Network, feeds: dict[str, Array]) -> dict[str, Array]:
    """The outputs by the model, after checking tensorloop agrees."""
    want = model_outputs(net, feeds)
    got = net.to_model().run(feeds)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    return want


def test_the_spec_examples() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    loop.add_trip_limit(int32(net, 2), TripLimit.COUNT)
    rows = loop.add_iterator(x).get_output(0)
    columns = loop.add_iterator(x, axis=1, reverse=True).get_output(0)  # the last two
    for i, (t, kind, axis, length) in enumerate(
        [(rows, "CONCATENATE", 0, 2), (rows, "CONCATENATE", 1, 2), (columns, "CONCATENATE", 0, 3)]
    ):
        out = loop.add_loop_output(t, LoopOutput[kind], axis)
        out.set_input(1, int32(net, length))
        out.get_output(0).name = f"out{i}"
        net.mark_output(out.get_output(0))
    lazy = LazySequences({"x": SPEC_MATRIX})
    got = net.to_model().run({"x": SPEC_MATRIX})
    expected = [SPEC_MATRIX, SPEC_MATRIX.T, np.array([[5, 8], [3, 6], [0, 0]], np.float32)]
    for i, want in enumerate(expected):
        np.testing.assert_array_equal(lazy.value(net.get_output(i), {}), want)
        np.testing.assert_array_equal(got[f"out{i}"], want)


@pytest.mark.parametrize(("count", "stop"), [(2, None), (None, 2), (2, 7)])
def test_a_two_trip_loop_with_padding(count: int | None, stop: int | None) -> None:
    out = both_ways(row_loop(count, stop=stop, length=3), {"x": SPEC_MATRIX})
    zero = np.zeros(3, np.float32)
    np.testing.assert_array_equal(out["total"], [7, 10, 14])
    np.testing.assert_array_equal(out["cat0"], [*SPEC_MATRIX, zero])
    np.testing.assert_array_equal(out["rev0"], [zero, SPEC_MATRIX[1], SPEC_MATRIX[0]])
    np.testing.assert_array_equal(out["rev1"], np.flip(out["cat1"], 1))


@pytest.mark.parametrize(("count", "stop"), [(0, None), (None, 0), (0, 2), (2, 0)])
def test_a_zero_trip_loop(count: int | None, stop: int | None) -> None:
    out = both_ways(row_loop(count, stop=stop, length=2), {"x": SPEC_MATRIX})
    np.testing.assert_array_equal(out["total"], np.ones(3, np.float32))  # the initial value
    for name, shape in [("cat0", (2, 3)), ("rev0", (2, 3)), ("cat1", (3, 2)), ("rev1", (3, 2))]:
        np.testing.assert_array_equal(out[name], np.zeros(shape, np.float32))


@pytest.mark.parametrize(
    ("loop", "count", "error"),
    [
        ({"count": 3}, None, NetworkError),  # three rows of two, known when building
        ({"count": 3, "count_as_input": True}, 3, ExecutionError),
        ({"stop": 3}, None, ExecutionError),
        ({"count": 2, "length": 1}, None, NetworkError),  # a length below the trip count
        ({"stop": 2, "length": 1}, None, ExecutionError),
    ],
)
def test_an_invalid_run_is_an_error(loop: dict[str, Any], count: int | None, error: type) -> None:
    net = row_loop(**loop)
    feeds = {"x": SPEC_MATRIX} if count is None else {"x": SPEC_MATRIX, "count": np.int32(count)}
    with pytest.raises(InvalidRunError):
        model_outputs(net, feeds)
    with pytest.raises(error):
        net.to_model().run(feeds)


# --------------------------------------------------------------------------------------------
# corner cases where tensorloop once disagreed with the spec
# --------------------------------------------------------------------------------------------
def test_a_while_limit_can_stop_a_loop_before_a_constant_count_overruns() -> None:
    # n = min(5, least n with i_n < 1 false) = 1: one row of the two is read, which is valid
    # (with the count as an input tensorloop agrees and runs it)
    out = both_ways(row_loop(5, stop=1, length=2), {"x": SPEC_MATRIX})
    np.testing.assert_array_equal(out["cat0"], [SPEC_MATRIX[0], np.zeros(3, np.float32)])


def test_a_loop_reading_its_own_output_is_refused() -> None:
    net = Network()
    loop = net.add_loop()
    loop.add_trip_limit(int32(net, 2), TripLimit.COUNT)
    rec = loop.add_recurrence(net.add_constant((), np.float32(0)).get_output(0))
    rec.set_input(1, rec.get_output(0))
    last = loop.add_loop_output(rec.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
    again = loop.add_loop_output(last, LoopOutput.CONCATENATE)  # a cycle through the loop
    again.set_input(1, int32(net, 2))
    net.mark_output(again.get_output(0))
    with pytest.raises(NetworkError, match="depends on an output of loop 'loop_1' itself"):
        net.to_model()


# The lowering computes a WHILE limit's X_{i+1} at the end of iteration i, before it knows it is
# needed, and X_0 before the loop. The spec evaluates lazily: what that value reads is invalid
# only where the value is needed.
def counter(net: Network, loop: ILoop) -> ITensor:
    i = loop.add_recurrence(int32(net, 0))
    step = net.add_elementwise(i.get_output(0), int32(net, 1), ElementWiseOperation.SUM)
    i.set_input(1, step.get_output(0))
    return i.get_output(0)


def total(net: Network, t: ITensor, rank: int) -> ITensor:
    return net.add_reduce(t, ReduceOperation.SUM, (1 << rank) - 1, False).get_output(0)


def above(net: Network, t: ITensor, floor: float) -> ITensor:
    low = net.add_constant((), np.float32(floor)).get_output(0)
    return net.add_elementwise(t, low, ElementWiseOperation.GREATER).get_output(0)


def nested_overrun_after_the_count(reads: str) -> Network:
    """An outer loop with a COUNT limit (input "count") and a WHILE limit reading a loop nested
    in it, which runs i trips on outer iteration i (i is the outer counter). On iteration 2 the
    nested loop would overrun: ``reads="iterator"``: its iterator over the one row of y runs
    out; ``reads="stacked"``: its CONCATENATE output has length 1."""
    net = Network()
    y = net.add_input("y", "float32", (1, 3))
    outer = net.add_loop()
    outer.add_trip_limit(net.add_input("count", "int32", ()), TripLimit.COUNT)
    i = counter(net, outer)
    inner = net.add_loop()
    inner.add_trip_limit(i, TripLimit.COUNT)
    acc = inner.add_recurrence(net.add_constant((3,), np.zeros(3, np.float32)).get_output(0))
    row = inner.add_iterator(y).get_output(0) if reads == "iterator" else acc.get_output(0)
    added = net.add_elementwise(acc.get_output(0), row, ElementWiseOperation.SUM)
    acc.set_input(1, added.get_output(0))
    if reads == "iterator":
        seen = inner.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
        rank = 1
    else:
        out = inner.add_loop_output(added.get_output(0), LoopOutput.CONCATENATE)
        out.set_input(1, int32(net, 1))
        seen, rank = out.get_output(0), 2
    outer.add_trip_limit(above(net, total(net, seen, rank), -100), TripLimit.WHILE)
    trips = outer.add_loop_output(i, LoopOutput.LAST_VALUE).get_output(0)
    trips.name = "trips"
    net.mark_output(trips)
    return net


@pytest.mark.parametrize("reads", ["iterator", "stacked"])
def test_a_while_limit_is_not_read_when_the_count_stops_the_loop(reads: str) -> None:
    # n = min(count, least n with X_n false): with count 2 and X_0, X_1 true, n = 2 whatever
    # X_2 is, so X_2 is not needed and the nested loop's overrun on iteration 2 never happens
    net = nested_overrun_after_the_count(reads)
    y = np.ones((1, 3), np.float32)
    assert int(both_ways(net, {"y": y, "count": np.int32(2)})["trips"]) == 2
    feeds = {"y": y, "count": np.int32(3)}  # X_2 is needed: the overrun is an error
    with pytest.raises(InvalidRunError):
        model_outputs(net, feeds)
    with pytest.raises(ExecutionError):
        net.to_model().run(feeds)


def nested_loop_reading_the_outer_row() -> Network:
    """An outer loop over the two rows of x while i < 2 and the last value of a nested loop is
    above -100. The nested loop runs m trips (an input) and carries the outer row: its last
    value is zeros for m = 0, the row otherwise. Outputs: the trips, and that last value on the
    last trip."""
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    outer = net.add_loop()
    row = outer.add_iterator(x).get_output(0)
    i = counter(net, outer)
    inner = net.add_loop()
    inner.add_trip_limit(net.add_input("m", "int32", ()), TripLimit.COUNT)
    zeros = net.add_constant((3,), np.zeros(3, np.float32)).get_output(0)
    carried = inner.add_recurrence(zeros)
    carried.set_input(1, row)
    seen = inner.add_loop_output(carried.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
    less = net.add_elementwise(i, int32(net, 2), ElementWiseOperation.LESS).get_output(0)
    more = above(net, total(net, seen, 1), -100)
    go_on = net.add_elementwise(less, more, ElementWiseOperation.AND).get_output(0)
    outer.add_trip_limit(go_on, TripLimit.WHILE)
    kept = outer.add_recurrence(zeros)
    kept.set_input(1, seen)
    for name, t in [("trips", i), ("seen", kept.get_output(0))]:
        out = outer.add_loop_output(t, LoopOutput.LAST_VALUE).get_output(0)
        out.name = name
        net.mark_output(out)
    return net


def test_a_nested_loop_that_runs_no_trips_reads_nothing_its_body_reads() -> None:
    # X_2 = (2 < 2) and (the nested loop's last value on outer iteration 2 > -100). With m = 0
    # that last value is the recurrence's initial value: the body, which reads row x[2], past
    # the end, never runs, so X_2 is false and n = 2. With m = 1 X_2 reads x[2]: an error.
    net = nested_loop_reading_the_outer_row()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = both_ways(net, {"x": x, "m": np.int32(0)})
    assert int(out["trips"]) == 2
    np.testing.assert_array_equal(out["seen"], np.zeros(3, np.float32))
    feeds = {"x": x, "m": np.int32(1)}
    with pytest.raises(InvalidRunError):
        model_outputs(net, feeds)
    with pytest.raises(ExecutionError, match="ran out of slices"):
        net.to_model().run(feeds)


def test_a_while_limit_is_not_read_before_a_zero_count() -> None:
    # n = min(0, ...) = 0: X_0, which reads the first slice of an empty x, is not needed
    net = Network()
    x = net.add_input("x", "float32", (-1,))
    loop = net.add_loop()
    loop.add_trip_limit(net.add_input("count", "int32", ()), TripLimit.COUNT)
    row = loop.add_iterator(x).get_output(0)
    loop.add_trip_limit(above(net, row, -100), TripLimit.WHILE)
    trips = loop.add_loop_output(counter(net, loop), LoopOutput.LAST_VALUE).get_output(0)
    trips.name = "trips"
    net.mark_output(trips)
    empty = np.zeros(0, np.float32)
    assert int(both_ways(net, {"x": empty, "count": np.int32(0)})["trips"]) == 0
    feeds = {"x": empty, "count": np.int32(1)}
    with pytest.raises(InvalidRunError):
        model_outputs(net, feeds)
    with pytest.raises(ExecutionError, match="has length 0"):
        net.to_model().run(feeds)
