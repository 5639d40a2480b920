"""The canonical Loop, mode by mode, against expectations written here in plain Python/NumPy.

Half the tests build the IR by hand (Graph/add_node) so that every port of the Loop is exercised
directly; the other half go through the builder (tl.scan / while_loop / fori_loop / cond).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked, TensorType, Value
from tensorloop.errors import ExecutionError, GraphError, LoopLimitError, VerificationError
from tensorloop.ir.verify import verify
from tensorloop.tensor.dtypes import DType

F32, F64, I64, BOOL = "float32", "float64", "int64", "bool"


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


# --------------------------------------------------------------------------------------------
# helpers for hand-built IR
# --------------------------------------------------------------------------------------------


def T(dtype: str, *shape: int | str) -> TensorType:
    return TensorType(dtype, shape)


def const(g: Graph, value: Any, dtype: str | None = None, name: str = "") -> Value:
    data = np.asarray(value, dtype=dtype)
    return g.add_node("Constant", [], {"value": data}, output_names=[name or "c"]).output


def op(g: Graph, name: str, *inputs: Value | None, out: str = "", **attrs: Any) -> Value:
    return g.add_node(name, list(inputs), attrs, output_names=[out] if out else None).output


def loop(
    g: Graph,
    body: Graph,
    *,
    trip: Value | None = None,
    cond: Value | None = None,
    carried: Sequence[Value] = (),
    sources: Sequence[Value] = (),
    sliced: Sequence[Sliced] = (),
    invariants: Sequence[Value] = (),
    stacked: Sequence[Stacked] = (),
    name: str = "",
) -> list[Value]:
    node = g.add_node(
        "Loop",
        [trip, cond, *carried, *sources, *invariants],
        {
            "body": body,
            "num_carried": len(carried),
            "sliced": tuple(sliced),
            "stacked": tuple(stacked),
        },
        name=name,
    )
    return node.outputs


def run(g: Graph, inputs: Any = (), **kw: Any) -> list[Any]:
    """Run ``g`` (verified by Model) and return its outputs in order."""
    model = tl.Model(g, **kw)
    res = model.run(inputs)
    return [res[n] for n in model.output_names]


def body_graph(name: str, *params: tuple[str, TensorType]) -> tuple[Graph, list[Value]]:
    b = Graph(name)
    return b, [b.add_input(n, t) for n, t in params]


def true_(g: Graph) -> Value:
    return const(g, True, BOOL, "true")


def as_f64(g: Graph, v: Value) -> Value:
    return op(g, "Cast", v, to=DType.float64)


def loop_nodes(graph: Graph) -> list[Any]:
    return [n for _, n in graph.walk() if n.op == "Loop"]


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
# nesting and trace
# --------------------------------------------------------------------------------------------


def test_nested_two_deep_reads_outer_carried_as_invariant() -> None:
    """for row in X: for v in row: inner += v * outer_total; outer_total += inner."""
    g = Graph("main")
    x = g.add_input("x", T(F64, 3, 4))
    ob, (_, total, row) = body_graph("outer", ("i", T(I64)), ("total", T(F64)), ("row", T(F64, 4)))
    ib, (_, acc, v, tot) = body_graph(
        "inner", ("j", T(I64)), ("acc", T(F64)), ("v", T(F64)), ("tot", T(F64))
    )
    prod = op(ib, "Mul", v, op(ib, "Add", tot, const(ib, 1.0, F64)), out="prod")
    ib.set_outputs([true_(ib), op(ib, "Add", acc, prod), prod])
    inner_acc, prods = loop(
        ob,
        ib,
        carried=[const(ob, 0.0, F64)],
        sources=[row],
        sliced=[Sliced(0)],
        invariants=[total],
        stacked=[Stacked(0)],
        name="inner",
    )
    ob.set_outputs([true_(ob), op(ob, "Add", total, inner_acc), prods])
    g.set_outputs(
        loop(
            g,
            ob,
            carried=[const(g, 0.0, F64)],
            sources=[x],
            sliced=[Sliced(0)],
            stacked=[Stacked(0)],
            name="outer",
        )
    )
    xv = np.arange(12.0).reshape(3, 4) / 7
    res = tl.Model(g).run({"x": xv}, trace=["prod"])
    total_, want_prods, entries = 0.0, np.zeros((3, 4)), []
    for i in range(3):
        acc_ = 0.0
        for j in range(4):
            p = xv[i, j] * (total_ + 1.0)
            want_prods[i, j] = p
            entries.append(((i, j), p))
            acc_ += p
        total_ += acc_
    final, prods_out = (res[v.name] for v in g.outputs)
    np.testing.assert_allclose(final, total_, rtol=1e-12)
    np.testing.assert_allclose(prods_out, want_prods, rtol=1e-12)
    assert [e.iteration for e in res.trace["prod"]] == [path for path, _ in entries]
    np.testing.assert_allclose([float(e.value) for e in res.trace["prod"]], [p for _, p in entries])


def test_nested_three_deep_trace_paths() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F64, 2, 3, 4))
    outer, (_, total, plane) = body_graph(
        "outer", ("i", T(I64)), ("total", T(F64)), ("plane", T(F64, 3, 4))
    )
    middle, (_, m, row, tot_m) = body_graph(
        "middle", ("j", T(I64)), ("m", T(F64)), ("row", T(F64, 4)), ("tot_m", T(F64))
    )
    inner, (_, acc, v, tot_i, m_i) = body_graph(
        "inner", ("k", T(I64)), ("acc", T(F64)), ("v", T(F64)), ("tot_i", T(F64)), ("m_i", T(F64))
    )
    p = op(inner, "Add", op(inner, "Add", v, tot_i), m_i, out="p")
    inner.set_outputs([true_(inner), op(inner, "Add", acc, p)])
    (inner_acc,) = loop(
        middle,
        inner,
        carried=[const(middle, 0.0, F64)],
        sources=[row],
        sliced=[Sliced(0)],
        invariants=[tot_m, m],
        name="inner",
    )
    middle.set_outputs([true_(middle), op(middle, "Add", m, inner_acc)])
    (m_final,) = loop(
        outer,
        middle,
        carried=[const(outer, 0.0, F64)],
        sources=[plane],
        sliced=[Sliced(0)],
        invariants=[total],
        name="middle",
    )
    outer.set_outputs([true_(outer), op(outer, "Add", total, m_final)])
    g.set_outputs(
        loop(g, outer, carried=[const(g, 0.0, F64)], sources=[x], sliced=[Sliced(0)], name="outer")
    )
    xv = np.random.default_rng(2).standard_normal((2, 3, 4))
    res = tl.Model(g).run({"x": xv}, trace=["p", "k"])
    total_, want = 0.0, []
    for i in range(2):
        m_ = 0.0
        for j in range(3):
            acc_ = 0.0
            for k in range(4):
                p_ = xv[i, j, k] + total_ + m_
                want.append(((i, j, k), p_))
                acc_ += p_
            m_ += acc_
        total_ += m_
    np.testing.assert_allclose(res[g.outputs[0].name], total_, rtol=1e-12)
    assert [e.iteration for e in res.trace["p"]] == [w for w, _ in want]
    np.testing.assert_allclose([float(e.value) for e in res.trace["p"]], [v for _, v in want])
    # the iteration parameter itself is traced with the same paths
    assert [int(e.value) for e in res.trace["k"]] == [w[2] for w, _ in want]
    assert [e.iteration for e in res.trace["k"]] == [w for w, _ in want]


def test_trace_of_unknown_name_is_an_input_error() -> None:
    g = Graph("main")
    b, (i,) = body_graph("body", ("i", T(I64)))
    b.set_outputs([true_(b), i])
    g.set_outputs(loop(g, b, trip=const(g, 2, I64), stacked=[Stacked(0)]))
    with pytest.raises(tl.InputError, match="nope"):
        tl.Model(g).run({}, trace=["nope"])


# --------------------------------------------------------------------------------------------
# carried values whose shape changes, per-iteration shape change
# --------------------------------------------------------------------------------------------


def _growing(stack_it: bool) -> Graph:
    """v <- concat(v, [float(i)]): a carried vector growing by one each iteration."""
    g = Graph("main")
    n = g.add_input("n", T(I64))
    v0 = g.add_input("v0", T(F64, 1))
    b, (i, v) = body_graph("body", ("i", T(I64)), ("v", T(F64, "?")))
    piece = op(b, "Reshape", as_f64(b, i), const(b, [1], I64))
    grown = op(b, "Concat", v, piece, axis=0)
    outs = [true_(b), grown, grown] if stack_it else [true_(b), grown]
    b.set_outputs(outs)
    stacked = [Stacked(0)] if stack_it else []
    g.set_outputs(loop(g, b, trip=n, carried=[v0], stacked=stacked, name="grow"))
    return g


@pytest.mark.parametrize("n", [0, 1, 4])
def test_carried_shape_grows(n: int) -> None:
    g = _growing(stack_it=False)
    (v,) = run(g, {"n": n, "v0": np.array([-1.0])})
    np.testing.assert_array_equal(v, [-1.0, *range(n)])
    assert str(g.outputs[0].type) == "f64[?]"


def test_per_iteration_result_changing_shape_is_an_execution_error() -> None:
    g = _growing(stack_it=True)
    with pytest.raises(ExecutionError, match=r"Loop 'grow'.*changes shape"):
        run(g, {"n": 3, "v0": np.array([-1.0])})
    # one iteration has nothing to disagree with
    v, vs = run(g, {"n": 1, "v0": np.array([-1.0])})
    np.testing.assert_array_equal(v, [-1.0, 0.0])
    np.testing.assert_array_equal(vs, [[-1.0, 0.0]])


# --------------------------------------------------------------------------------------------
# If inside a loop, a loop inside If
# --------------------------------------------------------------------------------------------


def test_if_inside_loop() -> None:
    """acc += |x_i| through If(x_i < 0, acc - x_i, acc + x_i)."""
    g = Graph("main")
    x = g.add_input("x", T(F32, 6))
    b, (_, acc, s) = body_graph("body", ("i", T(I64)), ("acc", T(F32)), ("s", T(F32)))
    then_b, (ta, ts) = body_graph("then", ("a", T(F32)), ("s", T(F32)))
    then_b.set_outputs([op(then_b, "Sub", ta, ts)])
    else_b, (ea, es) = body_graph("else", ("a", T(F32)), ("s", T(F32)))
    else_b.set_outputs([op(else_b, "Add", ea, es)])
    neg = op(b, "Less", s, const(b, 0.0, F32))
    (nxt,) = b.add_node("If", [neg, acc, s], {"then_branch": then_b, "else_branch": else_b}).outputs
    b.set_outputs([true_(b), nxt, neg])
    g.set_outputs(
        loop(
            g,
            b,
            carried=[const(g, 0.0, F32)],
            sources=[x],
            sliced=[Sliced(0)],
            stacked=[Stacked(0)],
        )
    )
    xv = np.array([1.5, -2.0, 0.0, -0.25, 4.0, -8.0], np.float32)
    total, negs = run(g, {"x": xv})
    want = np.float32(0)
    for v in xv:
        want = want - v if v < 0 else want + v
    assert total == want == np.float32(15.75)
    np.testing.assert_array_equal(negs, xv < 0)


@pytest.mark.parametrize("pred", [True, False])
def test_loop_inside_if(pred: bool) -> None:
    g = Graph("main")
    p = g.add_input("p", T(BOOL))
    x = g.add_input("x", T(F64, 2))
    n = g.add_input("n", T(I64))
    then_b, (tx, tn) = body_graph("then", ("x", T(F64, 2)), ("n", T(I64)))
    lb, (_, v) = body_graph("double", ("i", T(I64)), ("v", T(F64, 2)))
    lb.set_outputs([true_(lb), op(lb, "Mul", v, const(lb, 2.0, F64))])
    (doubled,) = loop(then_b, lb, trip=tn, carried=[tx], name="double")
    then_b.set_outputs([doubled])
    else_b, (ex, _en) = body_graph("else", ("x", T(F64, 2)), ("n", T(I64)))
    else_b.set_outputs([ex])  # a branch may yield its parameter unchanged
    g.set_outputs(
        g.add_node("If", [p, x, n], {"then_branch": then_b, "else_branch": else_b}).outputs
    )
    xv = np.array([1.0, -3.0])
    (out,) = run(g, {"p": pred, "x": xv, "n": 5})
    np.testing.assert_array_equal(out, xv * 32 if pred else xv)


# --------------------------------------------------------------------------------------------
# max_iterations
# --------------------------------------------------------------------------------------------


def _runaway() -> Graph:
    g = Graph("main")
    b, (_, c) = body_graph("body", ("i", T(I64)), ("c", T(I64)))
    b.set_outputs([true_(b), op(b, "Add", c, const(b, 1, I64))])
    g.set_outputs(loop(g, b, carried=[const(g, 0, I64)], name="runaway"))
    return g


def test_max_iterations_stops_runaway_loop() -> None:
    with pytest.raises(LoopLimitError, match=r"Loop 'runaway'.*25"):
        run(_runaway(), max_iterations=25)


def test_max_iterations_allows_exactly_that_many() -> None:
    g = Graph("main")
    n = g.add_input("n", T(I64))
    b, (_, c) = body_graph("body", ("i", T(I64)), ("c", T(I64)))
    b.set_outputs([true_(b), op(b, "Add", c, const(b, 1, I64))])
    g.set_outputs(loop(g, b, trip=n, carried=[const(g, 0, I64)], name="bounded"))
    (c,) = run(g, {"n": 7}, max_iterations=7)
    assert c == 7
    with pytest.raises(LoopLimitError, match="bounded"):
        run(g, {"n": 8}, max_iterations=7)


def test_max_iterations_is_a_run_time_error_subclass() -> None:
    assert issubclass(LoopLimitError, ExecutionError)


# --------------------------------------------------------------------------------------------
# verifier errors
# --------------------------------------------------------------------------------------------


def _rnn_like(yield_type_len: int, name: str = "rnn") -> Graph:
    g = Graph("main")
    h0 = g.add_input("h0", T(F32, 3))
    b, _params = body_graph("body", ("i", T(I64)), ("h", T(F32, 3)))
    nxt = const(b, np.ones(yield_type_len), F32)
    b.set_outputs([true_(b), nxt])
    g.set_outputs(loop(g, b, trip=const(g, 2, I64), carried=[h0], name=name))
    return g


def test_verify_carried_type_mismatch() -> None:
    verify(_rnn_like(3))  # the well-formed variant passes
    with pytest.raises(
        VerificationError,
        match=r"carried #0 of loop 'rnn': body yields f32\[4\], expected f32\[3\]",
    ):
        verify(_rnn_like(4))
    with pytest.raises(VerificationError, match=r"carried #0 of loop 'rnn'"):
        tl.Model(_rnn_like(4))


def test_verify_carried_initial_value_mismatch() -> None:
    g = Graph("main")
    h0 = g.add_input("h0", T(F32, 5))
    b, (_, h) = body_graph("body", ("i", T(I64)), ("h", T(F32, 3)))
    b.set_outputs([true_(b), h])
    g.set_outputs(loop(g, b, carried=[h0], trip=const(g, 1, I64), name="rnn"))
    with pytest.raises(
        VerificationError, match=r"carried #0 of loop 'rnn': initial value is f32\[5\]"
    ):
        verify(g)


def _arity_body() -> Graph:
    b, (_i,) = body_graph("body", ("i", T(I64)))  # missing the carried parameter
    b.set_outputs([true_(b)])
    return b


def test_verify_wrong_body_arity() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 3))
    body = _arity_body()
    # bypass inference to reach the verifier with the malformed node
    node = g.add_node(
        "Loop",
        [None, None, x],
        {"body": body, "num_carried": 1},
        name="L",
        output_types=[T(F32, 3)],
    )
    g.set_outputs(node.outputs)
    with pytest.raises(
        VerificationError,
        match=r"Loop 'L'.*body has 1 parameters and 1 results, expected 2 "
        r"\(iteration, 1 carried, 0 sliced, 0 invariant\) and 2",
    ):
        verify(g)


def test_add_node_with_wrong_body_arity_raises_graph_error() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 3))
    with pytest.raises(GraphError, match="Loop 'L'"):
        g.add_node("Loop", [None, None, x], {"body": _arity_body(), "num_carried": 1}, name="L")


def test_verify_non_bool_conditions() -> None:
    g = Graph("main")
    b, (_i, c) = body_graph("body", ("i", T(I64)), ("c", T(F32)))
    b.set_outputs([c, c])  # continue_condition is f32
    g.set_outputs(loop(g, b, cond=const(g, 1.0, F32), carried=[const(g, 1.0, F32)], name="L"))
    with pytest.raises(VerificationError) as info:
        verify(g)
    msg = str(info.value)
    assert "body result 'continue_condition': expected bool[], got f32[]" in msg
    assert "initial_condition: expected bool[], got f32[]" in msg


def test_verify_non_integer_trip_count() -> None:
    g = Graph("main")
    b, (_i,) = body_graph("body", ("i", T(I64)))
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, trip=g.add_input("n", T(F32)), name="L"))
    with pytest.raises(VerificationError, match=r"max_trip_count: expected an integer scalar"):
        verify(g)


def test_verify_iteration_parameter_type() -> None:
    g = Graph("main")
    b, (_i,) = body_graph("body", ("i", T("int32")))
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, trip=const(g, 1, I64), name="L"))
    with pytest.raises(
        VerificationError, match=r"parameter 'iteration': expected i64\[\], got i32"
    ):
        verify(g)


@pytest.mark.parametrize("axis", [2, -3])
def test_verify_sliced_axis_out_of_range(axis: int) -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 2, 3))
    b, (_i, _s) = body_graph("body", ("i", T(I64)), ("s", T(F32, 3)))
    b.set_outputs([true_(b)])
    node = g.add_node(
        "Loop",
        [None, None, x],
        {"body": b, "sliced": (Sliced(axis),)},
        name="L",
        output_types=[],
    )
    g.set_outputs(node.outputs)
    with pytest.raises(
        VerificationError, match=rf"sliced #0 of loop 'L': axis {axis} is out of range"
    ):
        verify(g)
    # Built the ordinary way, the error surfaces as a GraphError at once or at verification.
    g2 = Graph("main")
    x2 = g2.add_input("x", T(F32, 2, 3))
    with pytest.raises(GraphError, match="out of range"):
        g2.set_outputs(loop(g2, b, sources=[x2], sliced=[Sliced(axis)], name="L"))
        verify(g2)


def test_verify_sliced_parameter_type() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 2, 3))
    b, (_i, _s) = body_graph("body", ("i", T(I64)), ("s", T(F32, 2)))  # slice on axis 0 is f32[3]
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, sources=[x], sliced=[Sliced(0)], name="L"))
    with pytest.raises(VerificationError, match=r"sliced #0 of loop 'L'.*expected f32\[3\]"):
        verify(g)


def test_verify_body_must_be_closed() -> None:
    g = Graph("main")
    outer = g.add_input("outer", T(F32))
    b, (_i, c) = body_graph("body", ("i", T(I64)), ("c", T(F32)))
    b.set_outputs([true_(b), op(b, "Add", c, outer)])  # uses an outer value directly
    g.set_outputs(loop(g, b, trip=const(g, 1, I64), carried=[outer], name="L"))
    with pytest.raises(VerificationError, match="bodies are closed"):
        verify(g)


# --------------------------------------------------------------------------------------------
# the builder: tl.scan, tl.while_loop, tl.fori_loop, tl.cond
# --------------------------------------------------------------------------------------------


def model_loops(model: tl.Model) -> list[Any]:
    return [n for n in model.graph.nodes if n.op == "Loop"]


class TestScan:
    def test_scan_cumsum_with_pytree_carry_and_xs(self) -> None:
        xs = tl.placeholder(F64, [5, 2], name="xs")
        zs = tl.placeholder(F64, [5], name="zs")

        def step(carry: dict[str, Any], x: tuple[Any, Any]) -> tuple[Any, Any]:
            row, z = x
            total, count = carry["total"], carry["count"]
            new = {"total": total + row * z, "count": count + 1.0}
            return new, (new["total"], row - z)

        init = {"total": tl.constant(np.zeros(2)), "count": tl.constant(np.float64(0))}
        final, (totals, diffs) = tl.scan(step, init, (xs, zs))
        assert set(final) == {"total", "count"}
        m = tl.Model(
            {"total": final["total"], "count": final["count"], "totals": totals, "d": diffs}
        )
        rng = np.random.default_rng(3)
        xv, zv = rng.standard_normal((5, 2)), rng.standard_normal(5)
        res = m.run({"xs": xv, "zs": zv})
        total, want_totals, want_d = np.zeros(2), [], []
        for k in range(5):
            total = total + xv[k] * zv[k]
            want_totals.append(total)
            want_d.append(xv[k] - zv[k])
        np.testing.assert_allclose(res["total"], total, rtol=1e-12)
        assert res["count"] == 5.0
        np.testing.assert_allclose(res["totals"], want_totals, rtol=1e-12)
        np.testing.assert_array_equal(res["d"], want_d)

    @pytest.mark.parametrize("reverse", [False, True])
    @pytest.mark.parametrize("axis", [0, 1, -1])
    def test_scan_axis_and_reverse(self, axis: int, reverse: bool) -> None:
        xs = tl.placeholder(F64, [3, 4], name="xs")
        slice_len = 4 if axis == 0 else 3
        final, ys = tl.scan(
            lambda c, x: (c * 2.0 + x, c + x),
            tl.constant(np.zeros(slice_len)),
            xs,
            axis=axis,
            reverse=reverse,
        )
        res = tl.Model({"c": final, "ys": ys}).run({"xs": np.arange(12.0).reshape(3, 4)})
        xv = np.arange(12.0).reshape(3, 4)
        xm = np.moveaxis(xv, axis, 0)
        order = range(len(xm) - 1, -1, -1) if reverse else range(len(xm))
        c, ys_ = np.zeros(slice_len), [None] * len(xm)
        for k in order:
            ys_[k] = c + xm[k]
            c = c * 2 + xm[k]
        np.testing.assert_array_equal(res["c"], c)
        # ys[i] pairs with xs[i] along the scanned axis, also when reversed
        np.testing.assert_array_equal(res["ys"], np.stack(ys_, axis=axis))

    def test_scan_with_length_and_no_xs(self) -> None:
        c, ys = tl.scan(lambda c, _: (c * 3.0, c), tl.constant(np.float64(1.0)), None, length=4)
        res = tl.Model({"c": c, "ys": ys}).run()
        assert res["c"] == 81.0
        np.testing.assert_array_equal(res["ys"], [1.0, 3.0, 9.0, 27.0])

    def test_reverse_scan_with_length_only(self) -> None:
        c, ys = tl.scan(
            lambda c, _: (c * 2.0 + 1.0, c),
            tl.constant(np.float64(0)),
            None,
            length=4,
            reverse=True,
        )
        res = tl.Model({"c": c, "ys": ys}).run()
        want, c_ = [0.0] * 4, 0.0
        for k in reversed(range(4)):  # visited last to first; ys[k] pairs with step k
            want[k] = c_
            c_ = c_ * 2 + 1
        assert res["c"] == c_ == 15.0
        np.testing.assert_array_equal(res["ys"], want)

    def test_scan_zero_length(self) -> None:
        xs = tl.placeholder(F32, [0, 3], name="xs")
        c, ys = tl.scan(lambda c, x: (c + x, x * 2.0), tl.constant(np.ones(3, np.float32)), xs)
        res = tl.Model({"c": c, "ys": ys}).run({"xs": np.zeros((0, 3), np.float32)})
        np.testing.assert_array_equal(res["c"], np.ones(3))
        assert res["ys"].shape == (0, 3) and res["ys"].dtype == np.float32

    def test_identity_scan_returns_xs_even_when_empty(self) -> None:
        xs = tl.placeholder(F32, ["T", "N"], name="xs")
        _, ys = tl.scan(lambda c, x: (c, x), tl.constant(np.float32(0)), xs)
        m = tl.Model({"ys": ys})
        for t in (3, 0):
            xv = np.arange(t * 5, dtype=np.float32).reshape(t, 5)
            np.testing.assert_array_equal(m.run({"xs": xv})["ys"], xv)
            assert m.run({"xs": xv})["ys"].shape == (t, 5)

    def test_captured_outer_tensors_become_invariants(self) -> None:
        xs = tl.placeholder(F32, [4, 2], name="xs")
        scale = tl.placeholder(F32, [2], name="scale")
        bias = tl.placeholder(F32, [], name="bias")
        k = tl.constant(np.float32(10.0))  # constants are copied into the body, not passed

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            y = x * scale + bias + scale * k  # scale captured twice, once as an invariant
            return c + y, y

        c, ys = tl.scan(step, tl.constant(np.zeros(2, np.float32)), xs)
        m = tl.Model({"c": c, "ys": ys})
        (node,) = model_loops(m)
        # trip, cond, 1 carried, 1 sliced, 2 invariants (scale, bias)
        assert len(node.inputs) == 2 + 1 + 1 + 2
        assert node.inputs[0] is None and node.inputs[1] is None
        assert {v.name for v in node.inputs[4:]} == {"scale", "bias"}
        assert len(node.attrs["body"].inputs) == 1 + 1 + 1 + 2
        xv = np.arange(8, dtype=np.float32).reshape(4, 2)
        sv, bv = np.array([0.5, -1.0], np.float32), np.float32(0.25)
        res = m.run({"xs": xv, "scale": sv, "bias": bv})
        want_ys = xv * sv + bv + sv * np.float32(10)
        np.testing.assert_allclose(res["ys"], want_ys, rtol=1e-6)
        np.testing.assert_allclose(res["c"], want_ys.sum(axis=0), rtol=1e-6)

    def test_nested_scan_captures_from_two_levels_up(self) -> None:
        w = tl.placeholder(F64, [3], name="w")
        xs = tl.placeholder(F64, [2, 4, 3], name="xs")

        def outer(c: Any, plane: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * w  # w lives two levels up
                return c2 + y, y

            c_in, ys = tl.scan(inner, c, plane)
            return c_in, ys

        c, yss = tl.scan(outer, tl.constant(np.zeros(3)), xs)
        m = tl.Model({"c": c, "yss": yss})
        (outer_node,) = model_loops(m)
        (inner_node,) = [n for n in outer_node.attrs["body"].nodes if n.op == "Loop"]
        assert len(outer_node.inputs) == 2 + 1 + 1 + 1  # w is an invariant of the outer loop
        assert len(inner_node.inputs) == 2 + 1 + 1 + 1  # and, through it, of the inner loop
        rng = np.random.default_rng(4)
        wv, xv = rng.standard_normal(3), rng.standard_normal((2, 4, 3))
        res = m.run({"w": wv, "xs": xv})
        np.testing.assert_allclose(res["yss"], xv * wv, rtol=1e-12)
        np.testing.assert_allclose(res["c"], (xv * wv).sum(axis=(0, 1)), rtol=1e-12)

    def test_nested_scan_uses_a_two_levels_up_value_twice(self) -> None:
        w = tl.placeholder(F64, [3], name="w")
        xs = tl.placeholder(F64, [2, 4, 3], name="xs")

        def outer(c: Any, plane: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * w + w
                return c2 + y, y

            return tl.scan(inner, c, plane)

        c, yss = tl.scan(outer, tl.constant(np.zeros(3)), xs)
        m = tl.Model({"c": c, "yss": yss})
        wv, xv = np.array([1.0, 2.0, 3.0]), np.ones((2, 4, 3))
        res = m.run({"w": wv, "xs": xv})
        np.testing.assert_allclose(res["yss"], xv * wv + wv)

    def test_trace_body_value_through_builder(self) -> None:
        xs = tl.placeholder(F64, [2, 3], name="xs")
        names: list[str] = []

        def outer(c: Any, row: Any) -> tuple[Any, Any]:
            def inner(c2: Any, v: Any) -> tuple[Any, Any]:
                y = v * 2.0 + c
                names.append(y.name)
                return c2 + y, y

            c2, _ = tl.scan(inner, tl.constant(np.float64(0)), row)
            return c + c2, c2

        c, _ = tl.scan(outer, tl.constant(np.float64(0)), xs)
        m = tl.Model({"c": c})
        xv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        res = m.run({"xs": xv}, trace=[names[-1]])
        want, c_ = [], 0.0
        for i in range(2):
            c2_ = 0.0
            for j in range(3):
                y = xv[i, j] * 2 + c_
                want.append(((i, j), y))
                c2_ += y
            c_ += c2_
        assert res["c"] == c_
        entries = res.trace[names[-1]]
        assert [(e.iteration, float(e.value)) for e in entries] == want


class TestWhileAndFori:
    def test_while_loop_with_dict_state(self) -> None:
        x0 = tl.placeholder(F64, [], name="x0")
        init = {"x": x0, "n": tl.constant(np.int64(0))}
        out = tl.while_loop(
            lambda s: s["x"] < 100.0, lambda s: {"x": s["x"] * 3.0 + 1.0, "n": s["n"] + 1}, init
        )
        m = tl.Model({"x": out["x"], "n": out["n"]})
        for x0v in (1.0, 50.0, 150.0, 0.0):
            res = m.run({"x0": x0v})
            x, n = x0v, 0
            while x < 100:
                x, n = x * 3 + 1, n + 1
            assert (res["x"], res["n"]) == (x, n)
            assert res["n"].dtype == np.int64

    def test_while_loop_growing_carried_vector(self) -> None:
        """The builder widens f32[1] to f32[?] when the body grows the carried vector."""
        init = (tl.constant(np.zeros(1, np.float32)), tl.constant(np.int64(0)))

        def body(s: tuple[Any, Any]) -> tuple[Any, Any]:
            v, k = s
            return tl.concat([v, tl.reshape(tl.cast(k, F32), [1])]), k + 1

        v, k = tl.while_loop(lambda s: s[1] < 5, body, init)
        res = tl.Model({"v": v, "k": k}).run()
        np.testing.assert_array_equal(res["v"], [0.0, 0.0, 1.0, 2.0, 3.0, 4.0])
        assert res["k"] == 5

    @pytest.mark.parametrize(("lo", "hi"), [(0, 5), (2, 6), (3, 3), (5, 1), (-2, 2)])
    def test_fori_loop_with_tuple_state(self, lo: int, hi: int) -> None:
        init = (tl.constant(np.float64(1.0)), tl.constant(np.zeros(2)))

        def body(i: Any, s: tuple[Any, Any]) -> tuple[Any, Any]:
            a, v = s
            fi = tl.cast(i, F64)
            return a * 2.0 + fi, v + tl.concat([tl.reshape(fi, [1]), tl.reshape(a, [1])])

        a, v = tl.fori_loop(lo, hi, body, init)
        res = tl.Model({"a": a, "v": v}).run()
        a_, v_ = 1.0, np.zeros(2)
        for i in range(lo, hi):
            a_, v_ = a_ * 2 + i, v_ + np.array([i, a_])
        assert res["a"] == a_
        np.testing.assert_array_equal(res["v"], v_)

    @pytest.mark.parametrize(("lo", "hi"), [(0, 4), (3, 7), (5, 2)])
    def test_fori_loop_tensor_bounds(self, lo: int, hi: int) -> None:
        lower = tl.placeholder(I64, [], name="lower")
        upper = tl.placeholder(I64, [], name="upper")
        out = tl.fori_loop(lower, upper, lambda i, acc: acc * 10 + i, tl.constant(np.int64(0)))
        res = tl.Model({"out": out}).run({"lower": lo, "upper": hi})
        want = 0
        for i in range(lo, hi):
            want = want * 10 + i
        assert res["out"] == want

    def test_fori_loop_int_lower_int32_upper(self) -> None:
        upper = tl.placeholder("int32", [], name="upper")
        out = tl.fori_loop(0, upper, lambda i, acc: acc + tl.cast(i, F64), tl.constant(0.0, F64))
        res = tl.Model({"out": out}).run({"upper": np.int32(4)})
        assert res["out"] == 6.0

    def test_fori_loop_body_sees_lower_offset(self) -> None:
        out = tl.fori_loop(
            3,
            6,
            lambda i, acc: tl.concat([acc, tl.reshape(i, [1])]),
            tl.constant(np.zeros(0, np.int64)),
        )
        res = tl.Model({"out": out}).run()
        np.testing.assert_array_equal(res["out"], [3, 4, 5])

    def test_builder_loop_limit(self) -> None:
        out = tl.while_loop(lambda x: x > -1.0, lambda x: x + 1.0, tl.constant(np.float64(0)))
        m = tl.Model({"out": out}, max_iterations=50)
        with pytest.raises(LoopLimitError, match="50"):
            m.run()


class TestCondAndLoops:
    def test_cond_inside_scan(self) -> None:
        xs = tl.placeholder(F32, [6], name="xs")
        thresh = tl.placeholder(F32, [], name="thresh")

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            # thresh captured by one branch only, two levels up from the branch body
            y = tl.cond(x < 0.0, lambda: -x, lambda: x * thresh)
            return c + y, y

        c, ys = tl.scan(step, tl.constant(np.float32(0)), xs)
        res = tl.Model({"c": c, "ys": ys}).run(
            {"xs": np.array([1.0, -2.0, 3.0, -4.0, 0.0, 5.0], np.float32), "thresh": 2.0}
        )
        xv = np.array([1.0, -2.0, 3.0, -4.0, 0.0, 5.0], np.float32)
        want = np.where(xv < 0, -xv, xv * np.float32(2.0))
        np.testing.assert_array_equal(res["ys"], want)
        assert res["c"] == want.sum()

    @pytest.mark.parametrize("p", [True, False])
    def test_scan_inside_cond(self, p: bool) -> None:
        pred = tl.placeholder(BOOL, [], name="pred")
        xs = tl.placeholder(F64, [4], name="xs")

        def cumsum() -> Any:
            return tl.scan(lambda c, x: (c + x, c + x), tl.constant(np.float64(0)), xs)[1]

        out = tl.cond(pred, cumsum, lambda: xs * -1.0)
        xv = np.array([1.0, 2.0, 3.0, 4.0])
        res = tl.Model({"out": out}).run({"pred": p, "xs": xv})
        np.testing.assert_array_equal(res["out"], np.cumsum(xv) if p else -xv)

    def test_max_iterations_inside_nested_loop(self) -> None:
        xs = tl.placeholder(F64, [3], name="xs")

        def step(c: Any, x: Any) -> tuple[Any, Any]:
            inner = tl.while_loop(lambda v: v < x, lambda v: v + 1.0, c)
            return inner, inner

        c, _ = tl.scan(step, tl.constant(np.float64(0)), xs)
        m = tl.Model({"c": c}, max_iterations=10)
        np.testing.assert_array_equal(m.run({"xs": [3.0, 5.0, 9.0]})["c"], 9.0)
        with pytest.raises(LoopLimitError):
            m.run({"xs": [3.0, 50.0, 9.0]})


class TestStreamingRNN:
    H, D = 3, 2

    def _build(self) -> tuple[tl.Model, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(5)
        wx = rng.standard_normal((self.D, self.H)).astype(np.float32)
        wh = (rng.standard_normal((self.H, self.H)) * 0.5).astype(np.float32)
        state = tl.persistent_tensor(np.zeros(self.H, np.float32), name="h")
        xs = tl.placeholder(F32, ["T", self.D], name="xs")
        wx_t, wh_t = tl.constant(wx), tl.constant(wh)

        def step(h: Any, x: Any) -> tuple[Any, Any]:
            h2 = tl.tanh(tl.matmul(x, wx_t) + tl.matmul(h, wh_t))
            return h2, h2

        h_last, hs = tl.scan(step, state, xs)
        tl.assign(state, h_last)
        return tl.Model({"hs": hs}), wx, wh

    @staticmethod
    def _reference(h: np.ndarray, xs: np.ndarray, wx: np.ndarray, wh: np.ndarray) -> np.ndarray:
        out = []
        for x in xs:
            h = np.tanh(x @ wx + h @ wh)
            out.append(h)
        return np.array(out, np.float32).reshape(len(xs), len(h))

    def test_state_carries_across_runs_and_resets(self) -> None:
        m, wx, wh = self._build()
        seq = np.random.default_rng(6).standard_normal((7, self.D)).astype(np.float32)
        full = self._reference(np.zeros(self.H, np.float32), seq, wx, wh)
        a = m.run({"xs": seq[:3]})["hs"]
        b = m.run({"xs": seq[3:]})["hs"]
        np.testing.assert_allclose(np.concatenate([a, b]), full, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.state["h"], full[-1], rtol=1e-5, atol=1e-6)
        # an empty chunk leaves the state alone
        empty = m.run({"xs": np.zeros((0, self.D), np.float32)})["hs"]
        assert empty.shape == (0, self.H)
        np.testing.assert_allclose(m.state["h"], full[-1], rtol=1e-5, atol=1e-6)
        m.reset_state()
        np.testing.assert_array_equal(m.state["h"], np.zeros(self.H))
        again = m.run({"xs": seq[:3]})["hs"]
        np.testing.assert_array_equal(again, a)

    def test_persistent_tensor_captured_by_a_body(self) -> None:
        """A persistent tensor read inside the body is an invariant; its update lands after."""
        bias = tl.persistent_tensor(np.ones(2, np.float32), name="bias")
        xs = tl.placeholder(F32, [3, 2], name="xs")
        c, ys = tl.scan(
            lambda c, x: (c + x + bias, x * bias), tl.constant(np.zeros(2, np.float32)), xs
        )
        tl.assign(bias, bias * 2.0)
        m = tl.Model({"c": c, "ys": ys})
        (node,) = model_loops(m)
        assert len(node.inputs) == 2 + 1 + 1 + 1  # the bias read is one invariant input
        xv = np.arange(6, dtype=np.float32).reshape(3, 2)
        b = np.ones(2, np.float32)
        for _ in range(3):
            res = m.run({"xs": xv})
            np.testing.assert_array_equal(res["ys"], xv * b)
            np.testing.assert_array_equal(res["c"], xv.sum(axis=0) + 3 * b)
            b = b * 2
            np.testing.assert_array_equal(m.state["bias"], b)

    def test_sessions_are_independent(self) -> None:
        m, wx, wh = self._build()
        seq = np.random.default_rng(7).standard_normal((4, self.D)).astype(np.float32)
        m.run({"xs": seq})
        after_default = m.state["h"].copy()
        s = m.session()
        np.testing.assert_array_equal(s.state["h"], np.zeros(self.H))
        hs = s.run({"xs": seq[:2]})["hs"]
        np.testing.assert_allclose(
            hs, self._reference(np.zeros(self.H, np.float32), seq[:2], wx, wh), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_array_equal(m.state["h"], after_default)  # default session untouched
        s2 = m.session()
        hs2 = s2.run({"xs": seq[:2]})["hs"]
        np.testing.assert_array_equal(hs2, hs)
        s.reset()
        np.testing.assert_array_equal(s.state["h"], np.zeros(self.H))
        np.testing.assert_array_equal(s.run({"xs": seq[:2]})["hs"], hs)
