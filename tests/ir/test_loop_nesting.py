"""Nested loops and traces, growing carried values, If/Loop nesting and max_iterations."""

from __future__ import annotations

import numpy as np
import pytest
from loop_ir_builders import BOOL, F32, F64, I64, T, as_f64, body_graph, const, loop, op, run, true_

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked
from tensorloop.errors import ExecutionError, LoopLimitError


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


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


@pytest.mark.handoff("a stacked result changing shape deoptimises")
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
