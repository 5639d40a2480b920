"""tensorloop.network: the TensorRT spec's loop examples, every validation rule, run-time errors,
nesting, and the lowered models run by onnxruntime and OpenVINO."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.network import (
    ElementWiseOperation,
    ILoop,
    ITensor,
    LoopOutput,
    Network,
    TripLimit,
)
from tensorloop.passes import unroll_loops

E = ElementWiseOperation
SPEC_MATRIX = np.array([[2, 3, 5], [4, 6, 8]], np.float32)


def const(net: Network, value: Any, dt: Any = np.float32) -> ITensor:
    data = np.asarray(value, dt)
    return net.add_constant(data.shape, data).get_output(0)


def count(loop: ILoop, net: Network, n: int) -> None:
    loop.add_trip_limit(const(net, n, np.int32), TripLimit.COUNT)


def stacked(
    net: Network, loop: ILoop, t: ITensor, length: int | ITensor, kind: LoopOutput, axis: int = 0
) -> ITensor:
    out = loop.add_loop_output(t, kind, axis)
    out.set_input(1, const(net, length, np.int32) if isinstance(length, int) else length)
    return out.get_output(0)


def run(net: Network, **inputs: Any) -> list[np.ndarray[Any, Any]]:
    result = net.to_model().run(inputs)
    return [result[net.get_output(i).name] for i in range(net.num_outputs)]


# -- the spec's examples --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("axis", "reverse", "slices"),
    [
        (0, False, [[2, 3, 5], [4, 6, 8]]),
        (1, False, [[2, 4], [3, 6], [5, 8]]),
        (0, True, [[4, 6, 8], [2, 3, 5]]),
        (1, True, [[5, 8], [3, 6], [2, 4]]),
    ],
)
def test_iterator_delivers_the_spec_slices(axis: int, reverse: bool, slices: list[Any]) -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, len(slices))
    it = loop.add_iterator(x, axis, reverse)
    assert it.get_output(0).shape == (len(slices[0]),)
    net.mark_output(stacked(net, loop, it.get_output(0), len(slices), LoopOutput.CONCATENATE))
    (got,) = run(net, x=SPEC_MATRIX)
    np.testing.assert_array_equal(got, np.array(slices, np.float32))


@pytest.mark.parametrize("axis", [0, 1])
def test_concatenate_stacks_on_the_spec_axis(axis: int) -> None:
    # {a,b,c} then {d,e,f}: axis 0 gives [[a,b,c],[d,e,f]], axis 1 gives [[a,d],[b,e],[c,f]]
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, 2)
    row = loop.add_iterator(x).get_output(0)
    out = stacked(net, loop, row, 2, LoopOutput.CONCATENATE, axis)
    net.mark_output(out)
    assert out.shape == ((2, 3) if axis == 0 else (3, 2))
    (got,) = run(net, x=SPEC_MATRIX)
    np.testing.assert_array_equal(got, SPEC_MATRIX if axis == 0 else SPEC_MATRIX.T)


def test_concatenate_pads_and_reverse_puts_the_padding_first() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, 2)
    row = loop.add_iterator(x).get_output(0)
    net.mark_output(stacked(net, loop, row, 4, LoopOutput.CONCATENATE))
    net.mark_output(stacked(net, loop, row, 3, LoopOutput.REVERSE))
    net.mark_output(stacked(net, loop, row, 3, LoopOutput.REVERSE, axis=1))
    cat, rev, rev1 = run(net, x=SPEC_MATRIX)
    zeros = np.zeros((1, 3), np.float32)
    np.testing.assert_array_equal(cat, np.concatenate([SPEC_MATRIX, zeros, zeros]))
    np.testing.assert_array_equal(rev, np.concatenate([zeros, SPEC_MATRIX[::-1]]))
    np.testing.assert_array_equal(rev1, np.concatenate([zeros, SPEC_MATRIX[::-1]]).T)


def for_loop(limit_kind: str = "while") -> Network:
    """for (int32_t i = j; i < limit; i += k), built as the spec builds it; outputs every i and
    the last value."""
    net = Network()
    j = net.add_input("j", "int32", ())
    k = net.add_input("k", "int32", ())
    limit = net.add_input("limit", "int32", ())
    loop = net.add_loop()
    rec = loop.add_recurrence(j)
    i = rec.get_output(0)
    rec.set_input(1, net.add_elementwise(i, k, E.SUM).get_output(0))
    loop.add_trip_limit(net.add_elementwise(i, limit, E.LESS).get_output(0), TripLimit.WHILE)
    if limit_kind == "both":
        loop.add_trip_limit(net.add_input("n", "int32", ()), TripLimit.COUNT)
    net.mark_output(stacked(net, loop, i, 6, LoopOutput.CONCATENATE))
    net.mark_output(loop.add_loop_output(i, LoopOutput.LAST_VALUE).get_output(0))
    return net


@pytest.mark.parametrize(
    ("j", "k", "limit", "values", "last"),
    [(1, 3, 10, [1, 4, 7], 10), (11, 3, 10, [], 11), (0, 2, 12, [0, 2, 4, 6, 8, 10], 12)],
)
def test_for_recurrence_of_the_spec(
    j: int, k: int, limit: int, values: list[int], last: int
) -> None:
    all_i, last_i = run(for_loop(), j=np.int32(j), k=np.int32(k), limit=np.int32(limit))
    np.testing.assert_array_equal(all_i, values + [0] * (6 - len(values)))
    assert all_i.dtype == np.int32 and int(last_i) == last


def test_both_limits_stop_at_whichever_comes_first() -> None:
    net = for_loop("both")
    args = {"j": np.int32(0), "k": np.int32(1), "limit": np.int32(4)}
    all_i, last = run(net, **args, n=np.int32(2))
    np.testing.assert_array_equal(all_i, [0, 1, 0, 0, 0, 0])
    assert int(last) == 2
    all_i, last = run(net, **args, n=np.int32(5))
    np.testing.assert_array_equal(all_i, [0, 1, 2, 3, 0, 0])
    assert int(last) == 4


def test_length_below_the_trip_count_is_a_run_time_error() -> None:
    with pytest.raises(tl.ExecutionError, match=r"length .* is less than the number of iter"):
        run(for_loop(), j=np.int32(0), k=np.int32(1), limit=np.int32(7))


def test_length_below_a_static_trip_count_is_refused_when_building() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, 2)
    net.mark_output(stacked(net, loop, loop.add_iterator(x).get_output(0), 1, LoopOutput.REVERSE))
    with pytest.raises(tl.NetworkError, match="has length 1, less than the loop's 2 iterations"):
        net.to_model()


# -- iterators and bounds -------------------------------------------------------------------------
def running_sum(n: int | None, dynamic: bool = False) -> Network:
    """The sum of x's rows over n trips; n=None makes the count an input "n"."""
    net = Network()
    x = net.add_input("x", "float32", (-1, 3) if dynamic else (4, 3))
    loop = net.add_loop()
    if n is None:
        loop.add_trip_limit(net.add_input("n", "int32", ()), TripLimit.COUNT)
    else:
        count(loop, net, n)
    acc = loop.add_recurrence(const(net, np.zeros(3)))
    total = net.add_elementwise(acc.get_output(0), loop.add_iterator(x).get_output(0), E.SUM)
    acc.set_input(1, total.get_output(0))
    net.mark_output(loop.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    return net


def test_iterator_past_static_bounds_is_refused_when_building() -> None:
    with pytest.raises(tl.NetworkError, match=r"would read 5 slices along axis 0 .* which has 4"):
        running_sum(5).to_model()


def test_iterator_past_bounds_at_run_time_is_an_error() -> None:
    net = running_sum(None)
    model = net.to_model()
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    for trips in (0, 3, 4):
        out = model.run({"x": data, "n": np.int32(trips)})
        np.testing.assert_allclose(out[net.get_output(0).name], data[:trips].sum(0))
    with pytest.raises(tl.ExecutionError, match="ran out of slices along axis 0 before the trip"):
        model.run({"x": data, "n": np.int32(5)})


def test_iterator_of_a_dynamic_length_is_checked_at_run_time() -> None:
    model = running_sum(3, dynamic=True).to_model()
    data = np.ones((5, 3), np.float32)
    name = model.output_names[0]
    np.testing.assert_allclose(model.run({"x": data})[name], [3, 3, 3])
    with pytest.raises(tl.ExecutionError, match="ran out of slices"):
        model.run({"x": data[:2]})


def while_over_rows(threshold_reads_row: bool) -> Network:
    """Sum rows while the running sum (or, reading the iterator, the current row) stays below a
    threshold."""
    net = Network()
    x = net.add_input("x", "float32", (-1,))
    limit = net.add_input("limit", "float32", ())
    loop = net.add_loop()
    v = loop.add_iterator(x).get_output(0)
    acc = loop.add_recurrence(const(net, 0.0))
    total = net.add_elementwise(acc.get_output(0), v, E.SUM).get_output(0)
    acc.set_input(1, total)
    watched = v if threshold_reads_row else acc.get_output(0)
    loop.add_trip_limit(net.add_elementwise(watched, limit, E.LESS).get_output(0), TripLimit.WHILE)
    net.mark_output(loop.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    return net


def test_while_limit_on_a_recurrence_may_stop_on_the_last_slice() -> None:
    model = while_over_rows(False).to_model()
    name = model.output_names[0]
    x = np.array([1, 2, 3], np.float32)
    assert float(model.run({"x": x, "limit": np.float32(2.5)})[name]) == 3  # stops after 2
    assert float(model.run({"x": x, "limit": np.float32(5.5)})[name]) == 6  # X_3 false: fine
    with pytest.raises(tl.ExecutionError, match="ran out of slices"):
        model.run({"x": x, "limit": np.float32(100)})  # would go on past the third slice


def test_while_limit_that_reads_the_iterator_needs_the_slice_after_the_last_trip() -> None:
    model = while_over_rows(True).to_model()
    name = model.output_names[0]
    x = np.array([1, 2, 9, 1], np.float32)
    assert float(model.run({"x": x, "limit": np.float32(5)})[name]) == 3  # X_2 = (9 < 5) false
    with pytest.raises(tl.ExecutionError, match="ran out of slices"):
        model.run({"x": x, "limit": np.float32(50)})  # X_4 would read x[4]
    with pytest.raises(tl.ExecutionError, match="has length 0"):
        model.run({"x": x[:0], "limit": np.float32(50)})  # X_0 reads x[0]


def test_endless_while_loop_hits_the_iteration_limit() -> None:
    net = Network()
    loop = net.add_loop()
    rec = loop.add_recurrence(const(net, 0, np.int32))
    rec.set_input(
        1, net.add_elementwise(rec.get_output(0), const(net, 1, np.int32), E.SUM).get_output(0)
    )
    loop.add_trip_limit(const(net, True, np.bool_), TripLimit.WHILE)
    net.mark_output(loop.add_loop_output(rec.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    with pytest.raises(tl.LoopLimitError):
        net.to_model(max_iterations=50).run({})


# -- invariants and nesting -----------------------------------------------------------------------
def test_invariants_are_replicated() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    w = net.add_input("w", "float32", (2,))
    loop = net.add_loop()
    count(loop, net, 3)
    scaled = net.add_elementwise(loop.add_iterator(x).get_output(0), w, E.PROD).get_output(0)
    net.mark_output(stacked(net, loop, scaled, 3, LoopOutput.CONCATENATE))
    net.mark_output(stacked(net, loop, w, 3, LoopOutput.CONCATENATE))  # ⟨w, w, w⟩
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    ws = np.array([2, -1], np.float32)
    got, copies = run(net, x=xs, w=ws)
    np.testing.assert_array_equal(got, xs * ws)
    np.testing.assert_array_equal(copies, np.stack([ws] * 3))


def nested_row_sums(inner_count: ITensor | None = None) -> Network:
    """An outer loop over rows; an inner loop sums each row; the outer loop stacks the sums."""
    net = Network()
    x = net.add_input("x", "float32", (3, 4))
    outer = net.add_loop()
    count(outer, net, 3)
    row = outer.add_iterator(x).get_output(0)
    inner = net.add_loop()
    if inner_count is None:
        count(inner, net, 4)
    else:
        inner.add_trip_limit(inner_count, TripLimit.COUNT)
    acc = inner.add_recurrence(const(net, 0.0))
    total = net.add_elementwise(acc.get_output(0), inner.add_iterator(row).get_output(0), E.SUM)
    acc.set_input(1, total.get_output(0))
    row_sum = inner.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
    net.mark_output(stacked(net, outer, row_sum, 3, LoopOutput.CONCATENATE))
    return net


def test_nesting_is_inferred_from_data_flow() -> None:
    net = nested_row_sums()
    model = net.to_model()
    (outer_node,) = [n for n in model.graph.nodes if n.op == "Loop"]
    body = outer_node.attrs["body"]
    assert [n.op for n in body.nodes].count("Loop") == 1  # the inner loop sits in the body
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(model.run({"x": x})[model.output_names[0]], x.sum(1))


def test_loops_that_read_each_others_interiors_are_rejected() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    a, b = net.add_loop(), net.add_loop()
    count(a, net, 3)
    count(b, net, 3)
    ra = a.add_recurrence(const(net, np.zeros(2)))
    rb = b.add_recurrence(const(net, np.zeros(2)))
    xa = a.add_iterator(x).get_output(0)
    xb = b.add_iterator(x).get_output(0)
    # each recurrence's next value reads the other loop's interior
    ra.set_input(1, net.add_elementwise(ra.get_output(0), xb, E.SUM).get_output(0))
    rb.set_input(1, net.add_elementwise(rb.get_output(0), xa, E.SUM).get_output(0))
    net.mark_output(a.add_loop_output(ra.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    with pytest.raises(tl.NetworkError, match="'loop_1' and 'loop_2' are not cleanly nested"):
        net.validate()


def test_a_layer_mixing_two_unrelated_loops_is_rejected() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    a, b = net.add_loop(), net.add_loop()
    count(a, net, 3)
    count(b, net, 3)
    xa, xb = a.add_iterator(x).get_output(0), b.add_iterator(x).get_output(0)
    net.add_elementwise(xa, xb, E.SUM)  # neither loop reads it, so neither nests the other
    net.mark_output(stacked(net, a, xa, 3, LoopOutput.CONCATENATE))
    net.mark_output(stacked(net, b, xb, 3, LoopOutput.CONCATENATE))
    with pytest.raises(tl.NetworkError, match="mixes values from loops 'loop_1' and 'loop_2'"):
        net.validate()


def test_a_loop_reading_another_loops_interior_is_nested_in_it() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    a, b = net.add_loop(), net.add_loop()
    count(a, net, 3)
    count(b, net, 3)
    mixed = net.add_elementwise(
        a.add_iterator(x).get_output(0), b.add_iterator(x).get_output(0), E.SUM
    )
    # a's output reads b's interior, so a is nested in b and a's output is inside b
    net.mark_output(stacked(net, a, mixed.get_output(0), 3, LoopOutput.CONCATENATE))
    with pytest.raises(tl.NetworkError, match="'loop_output_1_output' is computed inside loop 'l"):
        net.validate()


def test_inner_trip_count_may_come_from_the_outer_loop() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 4))
    n = net.add_input("n", "int32", (3,))
    outer = net.add_loop()
    count(outer, net, 3)
    row = outer.add_iterator(x).get_output(0)
    inner = net.add_loop()
    inner.add_trip_limit(outer.add_iterator(n).get_output(0), TripLimit.COUNT)
    acc = inner.add_recurrence(const(net, 0.0))
    total = net.add_elementwise(acc.get_output(0), inner.add_iterator(row).get_output(0), E.SUM)
    acc.set_input(1, total.get_output(0))
    row_sum = inner.add_loop_output(acc.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
    net.mark_output(stacked(net, outer, row_sum, 3, LoopOutput.CONCATENATE))
    x_ = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = run(net, x=x_, n=np.array([1, 4, 0], np.int32))
    np.testing.assert_array_equal(got, [x_[0, :1].sum(), x_[1].sum(), 0])


# -- validation: each rule ------------------------------------------------------------------------
def test_back_edge_anywhere_but_a_recurrence_second_input_is_refused() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2,))
    add = net.add_elementwise(x, x, E.SUM)
    mul = net.add_elementwise(add.get_output(0), x, E.PROD)
    with pytest.raises(tl.NetworkError, match="only back edge TensorRT allows"):
        add.set_input(1, mul.get_output(0))
    assert add.get_input(1) is x  # refused and undone


def test_recurrence_initial_value_from_inside_its_loop_is_refused() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    loop = net.add_loop()
    count(loop, net, 3)
    rec = loop.add_recurrence(const(net, np.zeros(2)))
    rec.set_input(1, rec.get_output(0))
    inside = net.add_unary(loop.add_iterator(x).get_output(0), tl.network.UnaryOperation.NEG)
    rec.set_input(0, inside.get_output(0))
    net.mark_output(loop.add_loop_output(rec.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    with pytest.raises(tl.NetworkError, match="initial value must come from outside the loop"):
        net.validate()


def test_recurrence_initial_value_from_its_own_output_is_a_cycle() -> None:
    net = Network()
    loop = net.add_loop()
    rec = loop.add_recurrence(const(net, 0.0))
    neg = net.add_unary(rec.get_output(0), tl.network.UnaryOperation.NEG)
    with pytest.raises(tl.NetworkError, match="only back edge TensorRT allows"):
        rec.set_input(0, neg.get_output(0))


def test_last_value_of_a_non_recurrence_is_refused() -> None:
    net = Network()
    x = net.add_input("x", "float32", (3, 2))
    loop = net.add_loop()
    row = loop.add_iterator(x).get_output(0)
    with pytest.raises(tl.NetworkError, match="LAST_VALUE output's input must be the output of a"):
        loop.add_loop_output(row, LoopOutput.LAST_VALUE)
    other = net.add_loop().add_recurrence(const(net, 0.0))
    with pytest.raises(tl.NetworkError, match="recurrence layer of loop 'loop_1'"):
        loop.add_loop_output(other.get_output(0), LoopOutput.LAST_VALUE)


@pytest.mark.parametrize("kind", list(TripLimit))
def test_two_limits_of_one_kind_are_refused(kind: TripLimit) -> None:
    net = Network()
    loop = net.add_loop()
    value = const(net, 3, np.int32) if kind is TripLimit.COUNT else const(net, True, np.bool_)
    loop.add_trip_limit(value, kind)
    with pytest.raises(tl.NetworkError, match=f"already has a {kind.name} trip limit"):
        loop.add_trip_limit(value, kind)


def test_loop_without_a_limit_is_refused() -> None:
    net = Network()
    loop = net.add_loop()
    rec = loop.add_recurrence(const(net, 0.0))
    rec.set_input(1, rec.get_output(0))
    net.mark_output(loop.add_loop_output(rec.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    with pytest.raises(tl.NetworkError, match="loop 'loop_1' has no trip limit"):
        net.to_model()


def test_recurrence_without_a_second_input_is_refused() -> None:
    net = Network()
    loop = net.add_loop()
    count(loop, net, 2)
    rec = loop.add_recurrence(const(net, 0.0))
    net.mark_output(loop.add_loop_output(rec.get_output(0), LoopOutput.LAST_VALUE).get_output(0))
    with pytest.raises(tl.NetworkError, match="has no second input; set the next value"):
        net.validate()


def test_recurrence_next_value_of_another_shape_is_refused() -> None:
    net = Network()
    loop = net.add_loop()
    rec = loop.add_recurrence(const(net, np.zeros(2)))
    with pytest.raises(tl.NetworkError, match=r"is f32\[3\], but input 0 .* is f32\[2\]"):
        rec.set_input(1, const(net, np.zeros(3)))


@pytest.mark.parametrize(
    ("value", "shown"),
    [(np.float32(1), "f32[]"), (np.array([True]), "bool[1]"), (np.int32(1), "i32[]")],
)
def test_while_limit_must_be_a_0d_bool(value: Any, shown: str) -> None:
    net = Network()
    bad = net.add_constant(np.shape(value), value).get_output(0)
    with pytest.raises(tl.NetworkError, match=rf"WHILE limit's input is {re.escape(shown)}, exp"):
        net.add_loop().add_trip_limit(bad, TripLimit.WHILE)


def test_count_limit_must_be_a_0d_int() -> None:
    net = Network()
    with pytest.raises(tl.NetworkError, match="COUNT limit's input is f32"):
        net.add_loop().add_trip_limit(const(net, 3.0), TripLimit.COUNT)


def test_iterator_axis_out_of_range_is_refused() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    with pytest.raises(tl.NetworkError, match="axis 2 is out of range for rank 2"):
        loop.add_iterator(x, axis=2)
    it = loop.add_iterator(x, axis=1)
    with pytest.raises(tl.NetworkError, match="axis 5 is out of range"):
        it.axis = 5
    assert it.axis == 1 and it.get_output(0).shape == (2,)


def test_concatenate_needs_a_length_from_outside() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, 2)
    row = loop.add_iterator(x).get_output(0)
    out = loop.add_loop_output(row, LoopOutput.CONCATENATE)
    net.mark_output(out.get_output(0))
    with pytest.raises(tl.NetworkError, match="CONCATENATE but has no length"):
        net.validate()
    rec = loop.add_recurrence(const(net, 2, np.int32))
    rec.set_input(1, rec.get_output(0))
    out.set_input(1, rec.get_output(0))
    with pytest.raises(tl.NetworkError, match="loop output's length must come from outside"):
        net.validate()


def test_network_output_inside_a_loop_is_refused() -> None:
    net = Network()
    x = net.add_input("x", "float32", (2, 3))
    loop = net.add_loop()
    count(loop, net, 2)
    net.mark_output(loop.add_iterator(x).get_output(0))
    with pytest.raises(tl.NetworkError, match="computed inside loop 'loop_1'; values leave"):
        net.validate()


def test_every_broken_rule_is_listed() -> None:
    net = Network()
    first, second = net.add_loop(), net.add_loop()
    first.add_recurrence(const(net, 0.0))
    second.add_recurrence(const(net, 0.0))
    with pytest.raises(tl.NetworkError, match="breaks 4 rules") as info:
        net.validate()
    assert str(info.value).count("no trip limit") == 2
    assert str(info.value).count("no second input") == 2


# -- other backends and formats ------------------------------------------------------------------
def test_unrolled_model_matches_the_rolled_one() -> None:
    model = nested_row_sums().to_model()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    rolled = model.run({"x": x})[model.output_names[0]]
    graph = model.graph.clone()
    unroll_loops(graph)
    assert not any(n.op == "Loop" for _, n in graph.walk())
    unrolled = tl.Model(graph).run({"x": x})[model.output_names[0]]
    np.testing.assert_array_equal(unrolled, rolled)  # the same adds in the same order


FORMAT_CASES = {
    "for_loop": (
        for_loop,
        {"j": np.int32(1), "k": np.int32(3), "limit": np.int32(10)},
    ),
    "nested": (nested_row_sums, {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}),
    "while_over_rows": (
        lambda: while_over_rows(False),
        {"x": np.array([1, 2, 3, 4], np.float32), "limit": np.float32(3.5)},
    ),
}


@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
def test_onnxruntime_runs_the_saved_model(case: str, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    build, inputs = FORMAT_CASES[case]
    model = build().to_model()
    expected = model.run(inputs)
    tl.save(model, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    got = session.run(model.output_names, {k: np.asarray(v) for k, v in inputs.items()})
    for name, value in zip(model.output_names, got, strict=True):
        np.testing.assert_allclose(value, expected[name], rtol=1e-6)


@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
def test_openvino_runs_the_saved_ir(case: str, tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    build, inputs = FORMAT_CASES[case]
    model = build().to_model()
    expected = model.run(inputs)
    tl.save(model, tmp_path / "m.xml")
    compiled = ov.Core().compile_model(str(tmp_path / "m.xml"), "CPU")
    result = compiled({k: np.asarray(v) for k, v in inputs.items()})
    for name in model.output_names:
        np.testing.assert_allclose(result[compiled.output(name)], expected[name], rtol=1e-6)


def test_check_op_fails_with_its_message_and_passes_values_through(tmp_path: Path) -> None:
    x = tl.placeholder("float32", (2,), name="x")
    from tensorloop.builder.tracing import emit

    checked = emit("Check", [tl.greater(x, 0.0), x], {"message": "x must be positive"})
    model = tl.Model({"y": checked * 2.0})
    np.testing.assert_array_equal(model.run({"x": np.float32([1, 2])})["y"], [2, 4])
    with pytest.raises(tl.ExecutionError, match="x must be positive"):
        model.run({"x": np.float32([1, -2])})
    with pytest.raises(tl.GraphError, match="expected bool"):
        emit("Check", [x, x], {"message": "ok is not a bool"})
    ort = pytest.importorskip("onnxruntime")
    tl.save(model, tmp_path / "m.onnx")  # ONNX has no assertion: the value passes through
    (y,) = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": np.float32([1, -2])})
    np.testing.assert_array_equal(y, [2, -4])


def test_constant_length_is_kept_in_the_type_when_the_trips_are_dynamic() -> None:
    net = Network()
    x = net.add_input("x", "float32", (-1, 3))
    rows = net.add_gather(net.add_shape(x).get_output(0), const(net, 0, np.int32), 0)
    loop = net.add_loop()
    loop.add_trip_limit(net.add_cast(rows.get_output(0), "int32").get_output(0), TripLimit.COUNT)
    out = stacked(net, loop, loop.add_iterator(x).get_output(0), 5, LoopOutput.REVERSE)
    net.mark_output(out)
    model = net.to_model()
    assert out.shape == (5, 3) and str(model.graph.outputs[0].type) == "f32[5,3]"
    got = model.run({"x": np.ones((2, 3), np.float32)})[out.name]
    np.testing.assert_array_equal(got, np.concatenate([np.zeros((3, 3)), np.ones((2, 3))]))
