"""The canonical Loop, mode by mode, on hand-built IR: zero trips, sliced/stacked axes, bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from loop_ir_builders import BOOL, F32, F64, I64, T, as_f64, body_graph, const, loop, op, run, true_

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


# --------------------------------------------------------------------------------------------
# hand-built IR: the loop modes
# --------------------------------------------------------------------------------------------


class TestModes:
    def _counted(self) -> Graph:
        """acc <- acc * 2 + inv + iteration, stacking acc after each step and the iteration."""
        g = Graph("main")
        n = g.add_input("n", T(I64))
        acc0 = g.add_input("acc0", T(F64, 2))
        inv = g.add_input("inv", T(F64, 2))
        b, (i, acc, w) = body_graph("body", ("i", T(I64)), ("acc", T(F64, 2)), ("w", T(F64, 2)))
        two = const(b, 2.0, F64)
        nxt = op(b, "Add", op(b, "Add", op(b, "Mul", acc, two), w), as_f64(b, i))
        b.set_outputs([true_(b), nxt, nxt, i])
        outs = loop(
            g, b, trip=n, carried=[acc0], invariants=[inv], stacked=[Stacked(0), Stacked(0)]
        )
        g.set_outputs(outs)
        return g

    @pytest.mark.parametrize("n", [0, 1, 2, 5])
    def test_counted(self, n: int) -> None:
        acc0, inv = np.array([1.0, -2.0]), np.array([0.5, 3.0])
        final, accs, its = run(self._counted(), {"n": np.int64(n), "acc0": acc0, "inv": inv})
        acc, want_accs = acc0.copy(), []
        for i in range(n):
            acc = acc * 2 + inv + i
            want_accs.append(acc)
        np.testing.assert_array_equal(final, acc)
        np.testing.assert_array_equal(accs, np.array(want_accs).reshape(n, 2))
        np.testing.assert_array_equal(its, np.arange(n, dtype=np.int64))
        assert its.dtype == np.int64
        assert accs.shape == (n, 2)

    def test_trip_count_may_be_int32(self) -> None:
        g = Graph("main")
        n = g.add_input("n", T("int32"))
        b, (i,) = body_graph("body", ("i", T(I64)))
        b.set_outputs([true_(b), i])
        g.set_outputs(loop(g, b, trip=n, stacked=[Stacked(0)]))
        (its,) = run(g, {"n": np.int32(4)})
        np.testing.assert_array_equal(its, [0, 1, 2, 3])

    def _doubling(self, initial: str) -> Graph:
        """x <- 2x while x < limit: the condition is computed in the body.

        initial: "outside" computes initial_condition as x0 < limit (a while loop),
        "true" passes a constant True (a do-while loop)."""
        g = Graph("main")
        x0 = g.add_input("x0", T(F64))
        limit = g.add_input("limit", T(F64))
        b, (_, x, lim) = body_graph("body", ("i", T(I64)), ("x", T(F64)), ("lim", T(F64)))
        x2 = op(b, "Mul", x, const(b, 2.0, F64))
        b.set_outputs([op(b, "Less", x2, lim), x2, x2])
        first = op(g, "Less", x0, limit) if initial == "outside" else const(g, True, BOOL)
        g.set_outputs(
            loop(g, b, cond=first, carried=[x0], invariants=[limit], stacked=[Stacked(0)])
        )
        return g

    @pytest.mark.parametrize(("x0", "limit"), [(1.0, 10.0), (100.0, 10.0), (3.0, 3.0), (0.25, 5.0)])
    def test_while(self, x0: float, limit: float) -> None:
        final, seen = run(self._doubling("outside"), {"x0": x0, "limit": limit})
        x, want = x0, []
        while x < limit:
            x = x * 2
            want.append(x)
        assert final == x
        np.testing.assert_array_equal(seen, np.array(want, np.float64))

    @pytest.mark.parametrize(("x0", "limit"), [(1.0, 10.0), (100.0, 10.0), (3.0, 3.0)])
    def test_do_while(self, x0: float, limit: float) -> None:
        final, seen = run(self._doubling("true"), {"x0": x0, "limit": limit})
        x, want = x0, []
        while True:
            x = x * 2
            want.append(x)
            if not x < limit:
                break
        assert final == x
        np.testing.assert_array_equal(seen, np.array(want, np.float64))
        assert len(seen) >= 1  # the body always runs once

    @pytest.mark.parametrize("k", [0, 1, 6])
    def test_infinite_loop_breaks_on_body_condition(self, k: int) -> None:
        """No trip count and no initial condition: only continue_condition stops it."""
        g = Graph("main")
        b, (i,) = body_graph("body", ("i", T(I64)))
        b.set_outputs([op(b, "Less", i, const(b, k, I64)), i])
        g.set_outputs(loop(g, b, stacked=[Stacked(0)]))
        (its,) = run(g)
        want, i_ = [], 0
        while True:
            want.append(i_)
            go = i_ < k
            i_ += 1
            if not go:
                break
        np.testing.assert_array_equal(its, want)

    def test_iteration_parameter_counts_from_zero(self) -> None:
        g = Graph("main")
        b, (i, c) = body_graph("body", ("i", T(I64)), ("c", T(I64)))
        # c <- c * 10 + i: records the order in which iterations ran
        nxt = op(b, "Add", op(b, "Mul", c, const(b, 10, I64)), i)
        b.set_outputs([true_(b), nxt, i])
        g.set_outputs(
            loop(g, b, trip=const(g, 5, I64), carried=[const(g, 7, I64)], stacked=[Stacked(0)])
        )
        final, its = run(g)
        assert final == 701234
        np.testing.assert_array_equal(its, np.arange(5))


# --------------------------------------------------------------------------------------------
# zero trips
# --------------------------------------------------------------------------------------------


def _zero_trip_graph(mode: str) -> tuple[Graph, dict[str, Any]]:
    """carried c: f32[2]; sliced src f32[L,3] on axis 0; stacked y = s + s on axis 1 and c on 0."""
    g = Graph("main")
    c0 = g.add_input("c0", T(F32, 2))
    length = 0 if mode == "empty_source" else 4
    src = g.add_input("src", T(F32, length, 3))
    b, (_, c, s) = body_graph("body", ("i", T(I64)), ("c", T(F32, 2)), ("s", T(F32, 3)))
    c_next = op(b, "Add", c, const(b, [1.0, 1.0], F32))
    b.set_outputs([true_(b), c_next, op(b, "Add", s, s), c_next])
    trip = cond = None
    if mode == "trip0":
        trip = const(g, 0, I64)
    elif mode == "trip_negative":
        trip = const(g, -3, I64)
    elif mode == "cond_false":
        cond = const(g, False, BOOL)
    outs = loop(
        g,
        b,
        trip=trip,
        cond=cond,
        carried=[c0],
        sources=[src],
        sliced=[Sliced(0)],
        stacked=[Stacked(1), Stacked(0, reverse=True)],
    )
    g.set_outputs(outs)
    inputs = {"c0": np.array([5.0, 6.0], np.float32), "src": np.ones((length, 3), np.float32)}
    return g, inputs


@pytest.mark.parametrize("mode", ["trip0", "trip_negative", "cond_false", "empty_source"])
def test_zero_trips(mode: str) -> None:
    g, inputs = _zero_trip_graph(mode)
    c, ys, cs = run(g, inputs)
    np.testing.assert_array_equal(c, inputs["c0"])
    assert c.dtype == np.float32
    assert ys.shape == (3, 0) and ys.dtype == np.float32
    assert cs.shape == (0, 2) and cs.dtype == np.float32


def test_zero_trips_with_runtime_trip_count() -> None:
    g = Graph("main")
    n = g.add_input("n", T(I64))
    x = g.add_input("x", T(F64, 2, 3))
    b, (_, xx) = body_graph("body", ("i", T(I64)), ("xx", T(F64, 2, 3)))
    b.set_outputs([true_(b), xx, xx])
    g.set_outputs(loop(g, b, trip=n, carried=[x], stacked=[Stacked(2)]))
    for k in (0, -1):
        xv = np.arange(6.0).reshape(2, 3)
        final, ys = run(g, {"n": k, "x": xv})
        np.testing.assert_array_equal(final, xv)
        assert ys.shape == (2, 3, 0)


def test_zero_trips_symbolic_dims_bound_from_sliced_source() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, "T", "N"))
    b, (_, s) = body_graph("body", ("i", T(I64)), ("s", T(F32, "N")))
    b.set_outputs([true_(b), s])
    g.set_outputs(loop(g, b, sources=[x], sliced=[Sliced(0)], stacked=[Stacked(0)]))
    for length in (2, 0):
        xv = np.arange(length * 5, dtype=np.float32).reshape(length, 5)
        (ys,) = run(g, {"x": xv})
        np.testing.assert_array_equal(ys, xv)  # stacking the slices rebuilds the source
        assert ys.shape == (length, 5)


# --------------------------------------------------------------------------------------------
# sliced sources, stacked outputs, invariants, bounds
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_sliced_every_axis(axis: int, reverse: bool) -> None:
    shape = (2, 3, 4)
    a = axis % 3
    slice_shape = tuple(d for k, d in enumerate(shape) if k != a)
    g = Graph("main")
    x = g.add_input("x", T(F64, *shape))
    acc0 = g.add_input("acc0", T(F64, *slice_shape))
    b, (_i, acc, s) = body_graph(
        "body", ("i", T(I64)), ("acc", T(F64, *slice_shape)), ("s", T(F64, *slice_shape))
    )
    # acc <- acc * 3 + s: order-sensitive, so a wrong visiting order shows
    nxt = op(b, "Add", op(b, "Mul", acc, const(b, 3.0, F64)), s)
    b.set_outputs([true_(b), nxt, s])
    g.set_outputs(
        loop(
            g,
            b,
            carried=[acc0],
            sources=[x],
            sliced=[Sliced(axis, reverse)],
            stacked=[Stacked(0)],
        )
    )
    xv = np.random.default_rng(0).standard_normal(shape)
    final, seen = run(g, {"x": xv, "acc0": np.zeros(slice_shape)})
    order = range(shape[a] - 1, -1, -1) if reverse else range(shape[a])
    want_slices = [xv[(slice(None),) * a + (k,)] for k in order]
    acc = np.zeros(slice_shape)
    for s_ in want_slices:
        acc = acc * 3 + s_
    np.testing.assert_allclose(final, acc, rtol=1e-12)
    np.testing.assert_array_equal(seen, np.stack(want_slices))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_stacked_every_axis(axis: int, reverse: bool) -> None:
    """Per-iteration values of shape (2, 3) stacked on each axis of the rank-3 result."""
    g = Graph("main")
    v0 = g.add_input("v0", T(F64, 2, 3))
    b, (i, v) = body_graph("body", ("i", T(I64)), ("v", T(F64, 2, 3)))
    nxt = op(b, "Add", op(b, "Mul", v, const(b, 0.5, F64)), as_f64(b, i))
    b.set_outputs([true_(b), nxt, nxt])
    g.set_outputs(loop(g, b, trip=const(g, 4, I64), carried=[v0], stacked=[Stacked(axis, reverse)]))
    v0v = np.arange(6.0).reshape(2, 3)
    final, ys = run(g, {"v0": v0v})
    items, v_ = [], v0v
    for k in range(4):
        v_ = v_ * 0.5 + k
        items.append(v_)
    if reverse:
        items = items[::-1]
    want = np.stack(items, axis=axis)
    np.testing.assert_array_equal(final, v_)
    np.testing.assert_array_equal(ys, want)
    assert g.outputs[1].type.accepts(ys)  # the inferred type agrees with what ran


def test_invariants_are_the_same_every_iteration() -> None:
    g = Graph("main")
    a = g.add_input("a", T(F32, 3))
    bb = g.add_input("bb", T(F32))
    b, (_, c, ia, ib) = body_graph(
        "body", ("i", T(I64)), ("c", T(F32, 3)), ("ia", T(F32, 3)), ("ib", T(F32))
    )
    nxt = op(b, "Add", op(b, "Mul", c, ib), ia)
    b.set_outputs([true_(b), nxt])
    g.set_outputs(
        loop(g, b, trip=const(g, 3, I64), carried=[const(g, np.zeros(3), F32)], invariants=[a, bb])
    )
    av, bv = np.array([1.0, 2.0, 3.0], np.float32), np.float32(2.0)
    res = tl.Model(g).run({"a": av, "bb": bv}, trace=["ia", "ib"])
    c_ = np.zeros(3, np.float32)
    for _ in range(3):
        c_ = c_ * bv + av
    np.testing.assert_array_equal(res[g.outputs[0].name], c_)
    assert [e.iteration for e in res.trace["ia"]] == [(0,), (1,), (2,)]
    for e in res.trace["ia"]:
        np.testing.assert_array_equal(e.value, av)
    assert [float(e.value) for e in res.trace["ib"]] == [2.0, 2.0, 2.0]


@pytest.mark.parametrize(("trip", "expected_trips"), [(None, 3), (10, 3), (3, 3), (2, 2), (0, 0)])
def test_bounded_by_shortest_source_and_trip_count(trip: int | None, expected_trips: int) -> None:
    g = Graph("main")
    xa = g.add_input("xa", T(F64, 2, 5))  # length 5 on axis 1, visited in reverse
    xb = g.add_input("xb", T(F64, 3, 2))  # length 3 on axis 0
    b, (i, sa, sb) = body_graph("body", ("i", T(I64)), ("sa", T(F64, 2)), ("sb", T(F64, 2)))
    b.set_outputs([true_(b), i, op(b, "Sub", sa, sb)])
    n = None if trip is None else const(g, trip, I64)
    g.set_outputs(
        loop(
            g,
            b,
            trip=n,
            sources=[xa, xb],
            sliced=[Sliced(1, reverse=True), Sliced(0)],
            stacked=[Stacked(0), Stacked(0)],
        )
    )
    rng = np.random.default_rng(1)
    av, bv = rng.standard_normal((2, 5)), rng.standard_normal((3, 2))
    its, diffs = run(g, {"xa": av, "xb": bv})
    np.testing.assert_array_equal(its, np.arange(expected_trips))
    want = [av[:, 4 - k] - bv[k] for k in range(expected_trips)]
    np.testing.assert_array_equal(diffs, np.array(want).reshape(expected_trips, 2))
    assert g.outputs[0].type.accepts(its)


# --------------------------------------------------------------------------------------------
# what a slice is: an array of its own, every backend alike
# --------------------------------------------------------------------------------------------
STRING_ROWS = """\
graph @main(%xs: str[3]) {
  %ys = Loop(sliced=[%xs]) {body = graph @body(%i: i64[], %x: str[]) {
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    %y = Cast(%x) {to = i64} : i64[]
    return %t, %y
  }, sliced = [Sliced(axis=0, reverse=REVERSE)], stacked = [Stacked(axis=0, reverse=false)]} : i64[3]
  return %ys
}"""  # noqa: E501


@pytest.mark.parametrize("reverse", ["false", "true"])
def test_a_slice_of_a_rank_1_string_tensor_is_a_string_tensor(reverse: str) -> None:
    # Each row of str[3] is a str[] tensor (a 0-d object array), not the Python str that
    # indexing gives: Cast read it as an unsupported "<U1" array. conftest compares every run
    # on every backend.
    from tensorloop.ir.parser import parse_graph
    from tensorloop.tensor.dtypes import string_array

    model = tl.Model(parse_graph(STRING_ROWS.replace("REVERSE", reverse)))
    got = model.run({"xs": string_array(["1", "20", "-3"], (3,))})["ys"]
    want = np.array([1, 20, -3] if reverse == "false" else [-3, 20, 1], np.int64)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64
    with pytest.raises(tl.ExecutionError, match="Cast: cannot read 'abc' as a number"):
        model.run({"xs": string_array(["1", "abc", "2"], (3,))})


def test_rows_of_a_source_sliced_on_a_later_axis_multiply_as_the_reference() -> None:
    # A row of xs[:, t] lies strided in memory; NumPy's MatMul rounds a strided vector
    # differently (another BLAS kernel), so every backend hands the body the reference's
    # C-contiguous row. conftest compares the compiled backend with the reference bit for bit.
    from tensorloop.ir.parser import parse_graph

    text = """\
graph @main(%xs: f32[256,8], %w: f32[256,300]) {
  %ys = Loop(sliced=[%xs], invariants=[%w]) {body = graph @body(%i: i64[], %x: f32[256], %wb: f32[256,300]) {
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    %y = MatMul(%x, %wb) : f32[300]
    return %t, %y
  }, sliced = [Sliced(axis=1, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[8,300]
  return %ys
}"""  # noqa: E501
    rng = np.random.default_rng(0)  # positive values of order one: sums that do not cancel
    feed = {
        "xs": rng.uniform(0.5, 1.5, (256, 8)).astype(np.float32),
        "w": rng.uniform(0.5, 1.5, (256, 300)).astype(np.float32),
    }
    ys = tl.Model(parse_graph(text)).run(feed)["ys"]
    want = np.stack([np.ascontiguousarray(feed["xs"][:, t]) @ feed["w"] for t in range(8)])
    np.testing.assert_array_equal(ys, want)
