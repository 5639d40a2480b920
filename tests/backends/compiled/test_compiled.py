"""The compiled backend's own guarantees: threads, one plan per input signature, growing
stacked outputs, carried values changing shape, traces, iteration limits and errors as the
reference has them, deep nesting, random loops. Beyond conftest's check that every run agrees
with the reference, these check exact messages, which path ran (the plan, or the reference
after a deoptimisation) and what the generated code looks like."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from backend_agreement import assert_same_outputs, assert_same_trace
from loop_models import LimitReachedError, LoopSpec, T, build, hand_built_loop, loop_specs
from loop_models import add_loop as _loop
from loop_models import make_inputs as spec_inputs
from loop_models import reference as docstring_model
from tensorloop import Graph, Stacked, TensorType
from tensorloop.backends import compiled
from tensorloop.backends.compiled import CompiledExecutable, codegen, support
from tensorloop.errors import ExecutionError, LoopLimitError, TensorloopError
from tensorloop.ir.emit import Emitter
from tensorloop.ir.loop import ITERATION_TYPE
from tensorloop.reference import Interpreter
from tensorloop.reference.runtime import RunState, coerce_inputs

F32, F64, I64, BOOL = "float32", "float64", "int64", "bool"


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _graphs_run_by_interpreters_of(module: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the graphs that ``module``'s reference interpreters run, from now on."""
    seen: list[str] = []

    class Recording(Interpreter):
        def run_graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
            seen.append(graph.name)
            return super().run_graph(graph, args)

    monkeypatch.setattr(module, "Interpreter", Recording)
    return seen


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Graphs the compiled executable handed to the reference interpreter (deoptimisations)."""
    return _graphs_run_by_interpreters_of(compiled, monkeypatch)


def _executable(model: tl.Model) -> CompiledExecutable:
    exe = model.prepared("compiled")
    assert isinstance(exe, CompiledExecutable)
    return exe


def _reference(model: tl.Model, inputs: Any, trace: Sequence[str] = ()) -> tuple[Any, RunState]:
    """The reference's outputs (by name) and run state, its run made directly: not through
    ``Model.run``, so the compiled backend does not run again (as conftest's check has it)."""
    state = RunState(
        variables=dict(model.state),
        max_iterations=model.max_iterations,
        trace_names=frozenset(trace),
    )
    values = model.prepared("reference").run(coerce_inputs(model.graph, inputs), state)
    return dict(zip(model.output_names, values, strict=True)), state


def _both(model: tl.Model, inputs: Any, trace: Sequence[str] = ()) -> tl.Outputs:
    """The compiled run (made once), checked against the reference's outputs and trace."""
    want, state = _reference(model, inputs, trace)
    got = model.run(inputs, backend="compiled", trace=trace)
    assert_same_outputs(got, want, "compiled vs reference")
    assert_same_trace(got.trace, state.trace, "compiled vs reference")
    return got


def _errors(model: tl.Model, inputs: Any) -> TensorloopError:
    """The compiled run's error, checked to be the reference's: same class, same message."""
    with pytest.raises(TensorloopError) as want:
        _reference(model, inputs)
    with pytest.raises(TensorloopError) as got:
        model.run(inputs, backend="compiled")
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)
    return got.value


# -- models ---------------------------------------------------------------------------------------
def _streaming_rnn() -> tl.Model:
    """h <- tanh(x W + h U) over xs: f32[T, 3], h kept across runs (a persistent tensor), and
    a count of the runs."""
    rng = np.random.default_rng(5)
    wx, wh = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.5
    h = tl.persistent_tensor(np.zeros(4, np.float32), name="h")
    runs = tl.persistent_tensor(np.int64(0), name="runs")
    tl.assign(runs, runs + 1)  # before the loop: a deoptimised run must not count twice
    xs = tl.placeholder(F32, ["T", 3], name="xs")
    wx_t, wh_t = tl.constant(wx.astype(np.float32)), tl.constant(wh.astype(np.float32))

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        new = tl.tanh(x @ wx_t + c @ wh_t)
        return new, (new, tl.reduce_sum(new))

    last, (hs, sums) = tl.scan(step, h, xs)
    tl.assign(h, last)
    return tl.Model({"hs": hs, "sums": sums, "runs_before": runs})


def _geometric(stacked: Sequence[Stacked]) -> tl.Model:
    """A loop with neither trip count nor sliced input: v <- 1.25 v + 1 (f64[3]) while
    max(v) < limit (computed in the body; ``go`` is the initial condition). Stacks the new v,
    [i, 2i] and the old v, as ``stacked`` says."""
    g = Graph("geometric")
    v0, limit = g.add_input("v0", T(F64, 3)), g.add_input("limit", T(F64))
    go = g.add_input("go", T(BOOL))
    body = Graph("grow_body")
    i, v = body.add_input("i", ITERATION_TYPE), body.add_input("v", T(F64, 3))
    lim = body.add_input("lim", T(F64))
    em = Emitter(body)
    nxt = em.op("Add", [em.op("Mul", [v, em.const(np.float64(1.25))]), em.const(np.float64(1.0))])
    keep = em.op("Less", [em.op("ReduceMax", [nxt], {"keepdims": 0}), lim])
    fi = em.op("Cast", [i], {"to": tl.DType.float64})
    pair = em.op("Mul", [fi, em.const(np.array([1.0, 2.0]))])
    body.set_outputs([keep, nxt, nxt, pair, v])
    g.set_outputs(_loop(g, body, [None, go, v0, limit], 1, stacked, "grow"))
    return tl.Model(g)


def _geometric_in_python(v0: np.ndarray, limit: float) -> tuple[np.ndarray, list[Any]]:
    v, go = v0, True
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while go:
        nxt = v * 1.25 + 1.0
        go = bool(nxt.max() < limit)
        rows.append((nxt, np.array([1.0, 2.0]) * len(rows), v))
        v = nxt
    return v, rows


def _growing(stack: str = "") -> tl.Model:
    """v <- concat(v, [i]) and w <- last three of concat(w, [i]): carried values whose shapes
    change between iterations. ``stack`` "v" stacks v too (which cannot work), "square"
    stacks reshape(v, [2, 2]) (which works while v has four elements)."""
    g = Graph("growing")
    n, v0 = g.add_input("n", T(I64)), g.add_input("v0", T(F64, "?"))
    body = Graph("grow_body")
    i = body.add_input("i", ITERATION_TYPE)
    v, w = body.add_input("v", T(F64, "?")), body.add_input("w", T(F64, "?"))
    em = Emitter(body)
    piece = em.op("Reshape", [em.op("Cast", [i], {"to": tl.DType.float64}), em.ints([1])])
    grown = em.op("Concat", [v, piece], {"axis": 0})
    window = em.op(
        "Slice", [em.op("Concat", [w, piece], {"axis": 0}), em.ints([-3]), em.ints([99])]
    )
    ys = [em.op("Reshape", [grown, em.ints([2, 2])]) if stack == "square" else grown]
    ys = ys if stack else []
    body.set_outputs([em.const(np.bool_(True)), grown, window, *ys])
    outs = _loop(g, body, [n, None, v0, v0], 2, [Stacked(0)] * len(ys), "grow")
    total = Emitter(g).op("ReduceSum", [outs[0]], {"keepdims": 0}, output_name="total")
    g.set_outputs([*outs[:2], total, *outs[2:]])
    return tl.Model(g)


# -- 1. threads -----------------------------------------------------------------------------------
def test_a_loaded_stateful_model_run_from_8_threads_matches_sequential_runs(tmp_path: Path) -> None:
    path = tmp_path / "rnn.tl"
    tl.save(_streaming_rnn(), path)
    rng = np.random.default_rng(11)
    tasks = []
    for _ in range(40):  # each task: one session, its chunks run in order (the state carries)
        lengths = rng.integers(0, 9, size=int(rng.integers(1, 4)))
        tasks.append([rng.standard_normal((int(t), 3)).astype(np.float32) for t in lengths])

    def work(model: tl.Model, chunks: list[np.ndarray]) -> list[Any]:
        session = model.session()
        outs = [session.run({"xs": c}) for c in chunks]
        return [*(o["hs"] for o in outs), *(o["sums"] for o in outs), *session.state.values()]

    sequential_model, threaded_model = tl.load(path), tl.load(path)
    sequential = [work(sequential_model, t) for t in tasks]
    with ThreadPoolExecutor(max_workers=8) as pool:  # plans for new lengths made concurrently
        threaded = list(pool.map(lambda t: work(threaded_model, t), tasks))
    for want, got in zip(sequential, threaded, strict=True):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    signatures = {len(c) for t in tasks for c in t}
    executable = _executable(threaded_model)
    assert len(executable._plans) <= len(signatures)  # at most one plan per signature
    # past the first few lengths, one plan with the length left open (made once, shared)
    assert [p is not None for p in executable._generic.values()] == [True]
    assert threaded_model.state["runs"] == 0  # the default session untouched


def test_a_stateless_model_shares_model_run_across_8_threads() -> None:
    model = tl.Model(hand_built_loop("T"))  # early exit, reversed slice, two stacked axes
    rng = np.random.default_rng(12)
    feeds: list[dict[str, Any]] = [
        {
            "xs": rng.uniform(0, 4, (4, int(rng.integers(0, 10)), 6)).astype(np.float32),
            "trip": np.int32(rng.integers(-1, 12)),
            "go": np.bool_(rng.random() < 0.9),
        }
        for _ in range(64)
    ]
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(model.run, feeds))
    sequential = [model.run(f) for f in feeds]
    assert any(
        0 < len(o["stacked0"]) < min(f["xs"].shape[1], f["trip"])
        for o, f in zip(sequential, feeds, strict=True)
    )
    for want, got in zip(sequential, threaded, strict=True):
        assert list(got) == list(want)
        for name in want:
            assert got[name].shape == want[name].shape
            np.testing.assert_array_equal(got[name], want[name])
    executable = _executable(model)
    assert len(executable._plans) <= len({f["xs"].shape for f in feeds})
    assert [p is not None for p in executable._generic.values()] == [True]  # the length open


# -- 2. plans per signature -----------------------------------------------------------------------
def _flat_sum() -> tl.Model:
    """sum of xs: f32[T, 4] element by element, the trip count being size(xs) (symbolic)."""
    xs = tl.placeholder(F32, ("T", 4), name="xs")
    flat = tl.reshape(xs, [-1])
    total = tl.fori_loop(
        0, tl.size(xs), lambda i, c: c + tl.gather(flat, i), tl.constant(np.float32(0))
    )
    return tl.Model({"total": total})


def test_one_plan_per_input_signature_reused_across_runs() -> None:
    model = _flat_sum()
    exe = _executable(model)
    a, b = np.ones((3, 4), np.float32), np.arange(20, dtype=np.float32).reshape(5, 4)
    assert _both(model, {"xs": a})["total"] == 12.0
    assert len(exe._plans) == 1
    model.run({"xs": a + 1})  # other values, same signature
    assert len(exe._plans) == 1
    assert _both(model, {"xs": b})["total"] == 190.0
    assert len(exe._plans) == 2
    assert exe.plan([a]) is exe.plan([a + 2])
    assert exe.plan([a]) is not exe.plan([b])
    model.run({"xs": a}, trace=["carried0"])  # a traced run plans the unoptimised graph
    assert len(exe._plans) == 3


def test_symbolic_dims_are_bound_in_each_plan() -> None:
    model = _flat_sum()
    exe = _executable(model)
    small, large = (exe.plan([np.zeros((t, 4), np.float32)]).source for t in (3, 5))
    # size(xs) folded to the trip count, reshape(-1) to the concrete length: no Size at run time
    assert re.search(r"^\s*n_\w+ = 12$", small, re.M) and ".reshape((12,))" in small
    assert re.search(r"^\s*n_\w+ = 20$", large, re.M) and ".reshape((20,))" in large
    assert "Size" not in small + large


def test_max_plans_bounds_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "MAX_PLANS", 2)
    monkeypatch.setattr(compiled, "GENERIC_AFTER", 100)  # every size its own plan
    model = _flat_sum()
    exe = _executable(model)
    feeds = [np.full((t, 4), t, np.float32) for t in (1, 2, 3, 4)]
    first = exe.plan([feeds[0]])
    for x in feeds:
        assert _both(model, {"xs": x})["total"] == 4 * len(x) * len(x)
        assert len(exe._plans) <= 2
    assert len(exe._plans) == 2
    assert exe.plan([feeds[3]]) is exe.plan([feeds[3]])  # the newest kept
    assert exe.plan([feeds[0]]) is not first  # the oldest planned away, planned anew
    assert _both(model, {"xs": feeds[0]})["total"] == 4.0


# -- 3. stacked outputs ---------------------------------------------------------------------------
@pytest.fixture
def grows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A tiny first buffer for stacked outputs; lists the row counts each growth started from."""
    monkeypatch.setattr(support, "STACK_START_BYTES", 8)
    seen: list[int] = []
    original = support.stack_grow

    def counted(state: RunState, buffer: np.ndarray, where: str) -> np.ndarray:
        seen.append(len(buffer))
        return original(state, buffer, where)

    monkeypatch.setattr(support, "stack_grow", counted)
    return seen


STACKINGS = {
    "axis 0": (Stacked(0), Stacked(0), Stacked(0)),
    "reversed, axes 1 and -1": (Stacked(1, reverse=True), Stacked(-1), Stacked(0, reverse=True)),
}


@pytest.mark.parametrize("specs", list(STACKINGS.values()), ids=list(STACKINGS))
@pytest.mark.parametrize("limit", [2.0, 60.0, 1e9])
def test_a_loop_of_unknown_length_stacks_past_its_first_buffer(
    limit: float, specs: tuple[Stacked, ...], grows: list[int], fallbacks: list[str]
) -> None:
    model = _geometric(specs)
    v0 = np.array([0.5, -1.0, 0.25])
    res = _both(model, {"v0": v0, "limit": limit, "go": True})
    v, rows = _geometric_in_python(v0, limit)
    final, *stacked = (res[n] for n in model.output_names)
    np.testing.assert_array_equal(final, v)
    for j, (out, spec) in enumerate(zip(stacked, specs, strict=True)):
        items = [r[j] for r in rows]
        want = np.stack(items[::-1] if spec.reverse else items, axis=spec.axis)
        assert out.shape == want.shape
        np.testing.assert_array_equal(out, want)
    assert fallbacks == []  # the plan's own buffers, no deoptimisation
    # each of the three buffers started at one row (no bound is known) and doubled as needed
    doublings = (len(rows) - 1).bit_length()
    assert grows == [2**k for k in range(doublings) for _ in range(3)]


def test_a_scan_longer_than_its_first_buffer(grows: list[int], fallbacks: list[str]) -> None:
    xs = tl.placeholder(F64, ("T", 2), name="xs")
    c, ys = tl.scan(lambda c, x: (c * 0.5 + x, (c, x * 2.0)), tl.constant(np.zeros(2)), xs)
    model = tl.Model({"c": c, "ys": ys[0], "xs2": ys[1]})
    xv = np.random.default_rng(3).standard_normal((100, 2))
    res = _both(model, {"xs": xv})
    np.testing.assert_array_equal(res["xs2"], xv * 2.0)
    assert grows == [16, 16, 32, 32, 64, 64]  # two outputs, from 16 rows (the minimum) to 128
    assert fallbacks == []


def test_zero_trip_loops_give_empty_stacked_outputs_of_the_right_shapes() -> None:
    model = _geometric(STACKINGS["reversed, axes 1 and -1"])
    v0 = np.array([0.5, -1.0, 0.25])
    res = _both(model, {"v0": v0, "limit": 100.0, "go": False})
    final, ys, pairs, before = (res[n] for n in model.output_names)
    np.testing.assert_array_equal(final, v0)
    assert (ys.shape, pairs.shape, before.shape) == ((3, 0), (2, 0), (0, 3))
    assert ys.dtype == pairs.dtype == before.dtype == np.float64
    xs = tl.placeholder(F32, (2, "T", 3), name="xs")
    init = tl.constant(np.ones((2, 3), np.float32))
    c, (ys2, sums) = tl.scan(lambda c, x: (c + x, (x * c, tl.reduce_sum(x, 0))), init, xs, axis=1)
    scan = tl.Model({"c": c, "ys": ys2, "sums": sums})
    res = _both(scan, {"xs": np.zeros((2, 0, 3), np.float32)})
    assert res["ys"].shape == (2, 0, 3) and res["sums"].shape == (3, 0)
    assert res["ys"].dtype == res["sums"].dtype == np.float32
    np.testing.assert_array_equal(res["c"], np.ones((2, 3)))


@pytest.mark.handoff("a stacked result changing shape deoptimises")
def test_a_stacked_result_changing_shape_is_the_references_error(
    grows: list[int], fallbacks: list[str]
) -> None:
    model = _growing("v")
    got = _errors(model, {"n": 3, "v0": [-1.0]})
    assert isinstance(got, ExecutionError) and "changes shape" in str(got)
    assert fallbacks[:1] == ["growing"]  # the plan handed the run to the reference
    (handoff,) = got.handoffs  # and said so, on the error
    assert (handoff.source, handoff.target, handoff.stage) == ("compiled", "reference", "run")
    assert handoff.reason.endswith("a stacked result changes shape")
    # one iteration has nothing to disagree with: the plan answers itself
    fallbacks.clear()
    res = _both(model, {"n": 1, "v0": [-1.0]})
    np.testing.assert_array_equal(res[model.output_names[3]], [[-1.0, 0.0]])
    assert fallbacks == []


# -- 4. carried values whose shapes change --------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_carried_values_whose_shapes_change(n: int, fallbacks: list[str]) -> None:
    model = _growing()
    res = _both(model, {"n": n, "v0": [-1.0]})
    v, w, total = (res[name] for name in model.output_names)
    want = np.array([-1.0, *range(n)])
    np.testing.assert_array_equal(v, want)
    np.testing.assert_array_equal(w, want[-3:])
    assert total == want.sum()
    assert fallbacks == []


# -- 5. trace and max_iterations ------------------------------------------------------------------
def _nested() -> tl.Model:
    """for row in x: for v in row: p = v * (total + 1); acc += p; total += acc."""
    x = tl.placeholder(F64, ("N", 4), name="x")

    def outer(total: Any, row: Any) -> tuple[Any, Any]:
        def inner(acc: Any, v: Any) -> tuple[Any, Any]:
            p = tl.name(v * (total + 1.0), "p")
            return acc + p, p

        acc, ps = tl.scan(inner, tl.constant(np.float64(0)), row)
        return tl.name(total + acc, "total_next"), ps

    total, ps = tl.scan(outer, tl.constant(np.float64(0)), x)
    return tl.Model({"total": total, "ps": ps})


def test_trace_of_nested_loops_matches_the_reference() -> None:
    model = _nested()
    xv = np.arange(12.0).reshape(3, 4) / 7
    res = _both(model, {"x": xv}, trace=["p", "total_next", "iteration_1"])
    assert [e.iteration for e in res.trace["p"]] == [(i, j) for i in range(3) for j in range(4)]
    assert [e.iteration for e in res.trace["total_next"]] == [(i,) for i in range(3)]
    total, want = 0.0, []
    for row in xv:
        acc = 0.0
        for v in row:
            want.append(v * (total + 1.0))
            acc += want[-1]
        total += acc
    np.testing.assert_allclose([float(e.value) for e in res.trace["p"]], want, rtol=1e-12)
    assert [int(e.value) for e in res.trace["iteration_1"]] == [0, 1, 2, 3] * 3  # the inner's


def test_traced_values_have_the_references_types() -> None:
    """A trace holds the same kind of value on either backend (an array, or NumPy scalar)."""
    model = _nested()
    names = ["iteration", "iteration_1", "carried0", "x0", "p", "total_next", "total", "ps"]
    _, state = _reference(model, {"x": np.ones((2, 4))}, names)
    got = model.run({"x": np.ones((2, 4))}, backend="compiled", trace=names)

    def kinds(trace: dict[str, list[tl.TraceEntry]]) -> dict[str, list[str]]:
        return {name: [type(e.value).__name__ for e in trace[name]] for name in names}

    assert kinds(got.trace) == kinds(state.trace)


def test_recording_costs_nothing_when_nothing_is_traced() -> None:
    model = _nested()
    exe = _executable(model)
    args = [np.ones((2, 4))]
    plain = exe.plan(args).source
    assert "_record" not in plain and "state.path" not in plain and "state.record" not in plain
    traced = exe.plan(args, frozenset({"p"})).source
    assert "_record('p'" in traced and "state.path" in traced


def _runaway(nested: bool) -> tl.Model:
    x = tl.placeholder(F64, (3,), name="x")

    def forever(v: Any) -> Any:
        return tl.while_loop(lambda s: s > -1.0, lambda s: s + 1.0, v)

    if nested:
        _, ys = tl.scan(lambda c, xi: (c, forever(xi)), tl.constant(np.float64(0)), x)
        return tl.Model({"ys": ys}, max_iterations=25)
    return tl.Model({"y": forever(tl.reduce_sum(x))}, max_iterations=25)


@pytest.mark.parametrize("nested", [False, True])
def test_max_iterations_stops_a_runaway_loop_with_the_references_message(
    nested: bool, fallbacks: list[str]
) -> None:
    got = _errors(_runaway(nested), {"x": [1.0, 2.0, 3.0]})
    assert isinstance(got, LoopLimitError)
    assert "Loop 'while'" in str(got) and "after 25 iterations" in str(got)
    assert fallbacks == []  # the plan's own limit check raised it


# -- 6. errors stay clear -------------------------------------------------------------------------
def _gather_in_loop(scalar_index: bool) -> tl.Model:
    xs = tl.placeholder(F64, ("N",), name="xs")
    k = tl.placeholder(I64, (), name="k")

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        i = c[1] + k
        picked = tl.gather(xs, i if scalar_index else tl.unsqueeze(i, 0))
        return (c[0] + tl.reduce_sum(picked) * x, c[1] + 1), picked

    (total, _), picked = tl.scan(step, (tl.constant(np.float64(0)), tl.constant(np.int64(0))), xs)
    return tl.Model({"total": total, "picked": picked})


@pytest.mark.handoff("an index out of range deoptimises")
@pytest.mark.parametrize("scalar_index", [True, False])
def test_an_index_out_of_range_in_a_body_is_the_references_error(scalar_index: bool) -> None:
    model = _gather_in_loop(scalar_index)
    xv = np.arange(5.0)
    res = _both(model, {"xs": xv, "k": -5})  # in range: -5..-1
    np.testing.assert_array_equal(res["picked"].reshape(-1), xv)
    for k in (1, -6, 100):
        got = _errors(model, {"xs": xv, "k": k})
        assert isinstance(got, ExecutionError) and "Gather" in str(got)
        assert "out of range for axis 0 of size 5" in str(got)


def _rows_model() -> tl.Model:
    """X[t] as ONNX exporters write it: Gather(xs, iteration) of an invariant xs: f64[N, 3], at
    most 6 trips, stopping once the running sum of tanh(2 X[t]) reaches ``lim``."""
    g = Graph("rows")
    xs, lim = g.add_input("xs", T(F64, "N", 3)), g.add_input("lim", T(F64))
    body = Graph("rows_body")
    i, acc = body.add_input("i", ITERATION_TYPE), body.add_input("acc", T(F64))
    x, lim_in = body.add_input("x", T(F64, "N", 3)), body.add_input("l", T(F64))
    em = Emitter(body)
    row = em.op("Gather", [x, i], {"axis": 0})
    y = em.op("Tanh", [em.op("Mul", [row, em.const(np.float64(2.0))])])
    total = em.op("Add", [acc, em.op("ReduceSum", [y], {"keepdims": 0})])
    body.set_outputs([em.op("Less", [total, lim_in]), total, y, row])
    outer = Emitter(g)
    inputs = [outer.const(np.int64(6)), None, outer.const(np.float64(0)), xs, lim]
    stacked = [Stacked(0), Stacked(-1, reverse=True)]
    g.set_outputs(_loop(g, body, inputs, 1, stacked, "rows"))
    return tl.Model(g)


@pytest.mark.handoff("an index out of range deoptimises")
@pytest.mark.parametrize("n", [0, 3, 6, 8])
def test_rows_indexed_by_the_iteration_agree_in_range_and_out(n: int) -> None:
    model = _rows_model()
    xv = np.random.default_rng(n).uniform(0, 1, (n, 3))
    for lim in (1.0, 100.0):  # an early stop, or none (the index may run past the rows)
        t, acc = 0, 0.0
        while t < 6 and t < n:
            acc, t = acc + np.tanh(2 * xv[t]).sum(), t + 1
            if acc >= lim:
                break
        else:
            if t < 6:  # the reference reports the index past the end
                got = _errors(model, {"xs": xv, "lim": lim})
                assert f"index {n} is out of range for axis 0 of size {n}" in str(got)
                continue
        res = _both(model, {"xs": xv, "lim": lim})
        np.testing.assert_array_equal(res[model.output_names[2]], xv[:t][::-1].T)


@pytest.mark.handoff("a reshape NumPy refuses at run time deoptimises")
def test_a_bad_reshape_in_a_body_is_the_references_error(fallbacks: list[str]) -> None:
    model = _growing("square")
    res = _both(model, {"n": 1, "v0": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(res[model.output_names[3]], [[[1.0, 2.0], [3.0, 0.0]]])
    assert fallbacks == [] and res.handoffs == ()
    got = _errors(model, {"n": 2, "v0": [1.0, 2.0, 3.0]})
    assert isinstance(got, ExecutionError) and "Reshape" in str(got)
    assert fallbacks[:1] == ["growing"]  # numpy's error handed the run to the reference
    assert [h.reason.split(":")[0] for h in got.handoffs] == ["Reshape"]


@pytest.mark.handoff("stack_grow made to deoptimise")
def test_a_deoptimised_run_is_the_references_run_done_once(
    monkeypatch: pytest.MonkeyPatch, fallbacks: list[str]
) -> None:
    """Deoptimising half-way through a loop: no trace entry or variable update of the
    abandoned attempt survives; the reference's run is the answer."""

    def deoptimize(state: RunState, buffer: np.ndarray, where: str) -> np.ndarray:
        raise support.Deoptimize(where, "no room to grow (this test's)")

    monkeypatch.setattr(support, "STACK_START_BYTES", 8)
    monkeypatch.setattr(support, "stack_grow", deoptimize)
    model = _streaming_rnn()
    xs = np.random.default_rng(4).standard_normal((40, 3)).astype(np.float32)
    mine, theirs = model.session(), model.session()
    for runs, chunk in enumerate((xs[:30], xs[30:]), 1):  # 30 rows outrun 16; 10 do not
        fallbacks.clear()
        got = mine.run({"xs": chunk}, backend="compiled", trace=["carried0"])
        want = theirs.run({"xs": chunk}, backend="reference", trace=["carried0"])
        assert fallbacks[:1] == (["model"] if len(chunk) > 16 else [])
        assert [h.stage for h in got.handoffs] == (["run"] if len(chunk) > 16 else [])
        assert_same_outputs(got, want, "compiled vs reference")
        assert_same_trace(got.trace, want.trace, "compiled vs reference")
        assert len(got.trace["carried0"]) == len(chunk)
        assert sorted(mine.state) == sorted(theirs.state) == ["h", "runs"]
        np.testing.assert_array_equal(mine.state["h"], theirs.state["h"])
        np.testing.assert_array_equal(mine.state["h"], got["hs"][-1])
        assert mine.state["runs"] == theirs.state["runs"] == runs


# -- 7. fallbacks: nesting deeper than the plan inlines -------------------------------------------
@pytest.mark.handoff("bodies nested deeper than MAX_NESTING")
def test_loops_nested_deeper_than_max_nesting_run_through_the_reference_kernel(
    monkeypatch: pytest.MonkeyPatch, fallbacks: list[str]
) -> None:
    depth = codegen.MAX_NESTING + 2
    kernel_runs = _graphs_run_by_interpreters_of(support, monkeypatch)
    x = tl.placeholder(F64, (), name="x")
    trips = [2 if level in (1, 2, 3, depth) else 1 for level in range(depth + 1)]

    def nest(level: int, v: Any) -> Any:
        if level == 0:
            return tl.name(v * 0.5 + 1.0, "leaf")
        body = lambda i, c: nest(level - 1, c + tl.cast(i, F64))  # noqa: E731
        return tl.fori_loop(0, trips[level], body, v)

    model = tl.Model({"y": nest(depth, x)})
    res = _both(model, {"x": 3.0}, trace=["leaf"])
    paths: list[tuple[int, ...]] = []

    def python(level: int, v: float, path: tuple[int, ...]) -> float:
        if level == 0:
            paths.append(path)
            return v * 0.5 + 1.0
        for i in range(trips[level]):
            v = python(level - 1, v + i, (*path, i))
        return v

    assert res["y"] == pytest.approx(python(depth, 3.0, ()), rel=1e-12)
    assert [e.iteration for e in res.trace["leaf"]] == paths and len(paths) == 16
    assert len(paths[0]) == depth
    assert fallbacks == [] and kernel_runs  # the deep loops ran in the reference kernel
    source = _executable(model).plan([np.asarray(3.0)]).source
    assert source.count("while ") == codegen.MAX_NESTING and "k_Loop" in source
    # decided while planning: on every run's outputs, and in the placement
    (handoff,) = res.handoffs
    assert (handoff.source, handoff.target, handoff.stage) == ("compiled", "reference", "plan")
    assert "MAX_NESTING" in handoff.reason
    placed = model.placement({"x": 3.0}, backend="compiled")
    assert [p.device for p in placed] == ["compiled", "reference"]
    assert placed[1].node == handoff.nodes[0] and placed[1].reason == handoff.reason


# -- 8. random loops ------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(loop_specs())
def test_random_loops_on_compiled_match_the_docstring_model(spec: LoopSpec) -> None:
    limit = tl.DEFAULT_MAX_ITERATIONS if spec.max_iterations is None else spec.max_iterations
    model = tl.Model(build(spec), max_iterations=limit)
    inputs = spec_inputs(spec)
    try:
        want, trips = docstring_model(spec, inputs)
    except LimitReachedError:
        got = _errors(model, inputs)
        assert isinstance(got, LoopLimitError) and "random_loop" in str(got)
        return
    res = _both(model, inputs)
    for k, (name, w) in enumerate(zip(model.output_names, want, strict=True)):
        out = res[name]
        assert out.dtype == w.dtype and out.shape == w.shape, f"output #{k}"
        np.testing.assert_allclose(out, w, rtol=1e-12, atol=1e-300, err_msg=f"output #{k}")
    traced = _both(model, inputs, trace=["it", *(["bc0"] if spec.carried_exprs else [])])
    assert_same_outputs(traced, res, "traced vs plain")
    assert [e.iteration for e in traced.trace.get("it", [])] == [(i,) for i in range(trips)]


def test_a_loop_left_with_nothing_to_compute_still_keeps_the_iteration_limit() -> None:
    # After loop_prefix_sums the scan's loop computes nothing; only max_iterations can still
    # stop the run, and it must, with the reference's error.
    xs = tl.placeholder("float64", ("n", 3), name="xs")
    acc0 = tl.placeholder("float64", (3,), name="acc0")
    last, sums = tl.scan(lambda a, x: (a + x, a + x), acc0, xs)
    feed = {"xs": np.arange(12.0).reshape(4, 3), "acc0": np.zeros(3)}
    for limit, fails in ((4, False), (3, True)):
        model = tl.Model({"last": last, "sums": sums}, max_iterations=limit)
        source = _executable(model).plan(coerce_inputs(model.graph, feed)).source
        assert "np.cumsum(" in source and "while" not in source
        if fails:
            assert str(_errors(model, feed)).endswith(
                "still running after 3 iterations "
                "(max_iterations); raise the limit if "
                "the loop is meant to run longer"
            )
        else:
            got = model.run(feed)
            np.testing.assert_array_equal(got["sums"], np.cumsum(feed["xs"], axis=0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum_inline_is_the_references_bit_for_bit(dtype: str, reverse: int) -> None:
    rng = np.random.default_rng(3)
    data = (rng.standard_normal((50, 7)) * 100).astype(dtype)  # int8 sums wrap
    g = Graph("main")
    x = g.add_input("x", TensorType(dtype, (50, 7)))
    em = Emitter(g)
    axis = em.op("Constant", [], {"value": np.array(0, np.int64)})
    g.set_outputs([em.op("CumSum", [x, axis], {"reverse": reverse})])
    model = tl.Model(g)
    assert "np.cumsum(" in _executable(model).plan([data]).source
    (name,) = model.output_names
    want, _ = _reference(model, {"x": data})
    np.testing.assert_array_equal(model.run({"x": data})[name], want[name])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 4, 8), (1, 64, 256), (5, 513, 129), (2, 10, 4, 200, 300)])
def test_matmul_and_gemm_templates_are_the_references_bit_for_bit(
    dtype: str, shape: tuple[int, ...]
) -> None:
    """The templates make the reference kernels' BLAS calls: a stack of matrices times a matrix
    is np.matmul's one product per matrix (one GEMM over all their rows sums in another order
    for some sizes), and Gemm's constant transposed weights stay a view (BLAS sums a contiguous
    copy in another order). On OpenBLAS each differs in hundreds of elements at these sizes."""
    *lead, k, n = shape
    rng = np.random.default_rng(5)
    x = rng.standard_normal((*lead, k)).astype(dtype)
    weights = rng.standard_normal((n, k)).astype(dtype)
    g = Graph("main")
    xv = g.add_input("x", TensorType(dtype, x.shape))
    em = Emitter(g)
    w = em.const(weights)
    if len(lead) == 1:
        y = em.op("Gemm", [xv, w], {"transB": 1})
    else:
        y = em.op("MatMul", [xv, em.const(np.ascontiguousarray(weights.T))])
    g.set_outputs([y])
    model = tl.Model(g)
    source = _executable(model).plan([x]).source
    assert "weights_t" in source if len(lead) == 1 else "@" in source
    (name,) = model.output_names
    want, _ = _reference(model, {"x": x})
    np.testing.assert_array_equal(model.run({"x": x})[name], want[name])


@pytest.mark.handoff("an index out of range deoptimises")
def test_a_bad_index_into_a_constant_is_the_runs_error_not_the_plans() -> None:
    # Views of constants are taken while planning; one that fails must fail the run, with the
    # reference's error, not the planning.
    g = Graph("main")
    x = g.add_input("x", TensorType("float32", (2,)))
    em = Emitter(g)
    table = em.op("Constant", [], {"value": np.ones((3, 2), np.float32)})
    index = em.op("Constant", [], {"value": np.array(5, np.int64)})
    g.set_outputs([em.op("Add", [em.op("Gather", [table, index], {"axis": 0}), x])])
    model = tl.Model(g)
    error = _errors(model, {"x": np.zeros(2, np.float32)})
    assert isinstance(error, ExecutionError) and "out of range" in str(error)


def test_a_graph_the_backend_fails_to_plan_is_an_error_not_a_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(graph: Graph, *options: Any) -> Any:
        raise RecursionError("planning blew up")

    monkeypatch.setattr(compiled, "generate", broken)
    model = tl.Model(hand_built_loop("T"))
    feed = {
        "xs": np.linspace(0, 4, 4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6),
        "trip": np.int32(4),
        "go": np.bool_(True),
    }
    with pytest.raises(RecursionError, match="planning blew up"):  # a bug: never hidden
        model.run(feed)


_CLIP_VALUES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 6.0, 7.25, -3e38, 3e38, 1e-45]
_INT_BOUNDS = [None, -9, -1, 0, 3, 6, 9]


@st.composite
def _clip_cases(draw: Any) -> tuple[str, Any, Any]:
    dtype = draw(st.sampled_from(["float32", "float64", "int32", "int64"]))
    bounds = [*_CLIP_VALUES, None] if dtype.startswith("float") else _INT_BOUNDS
    return dtype, draw(st.sampled_from(bounds)), draw(st.sampled_from(bounds))


@settings(max_examples=60, deadline=None)
@given(_clip_cases())
def test_clip_inline_gives_the_kernels_bits(case: tuple[str, Any, Any]) -> None:
    # The hard-swish of convolutional front ends (Clip(x + 1, 0, 6)), inline and in place.
    dtype, lo, hi = case
    np_dtype = np.dtype(dtype)
    g = Graph("clip")
    x = g.add_input("x", TensorType(dtype, [4, len(_CLIP_VALUES)]))
    em = Emitter(g)
    bounds = [None if b is None else em.const(np.asarray(b, np_dtype)) for b in (lo, hi)]
    shifted = em.op("Add", [x, em.const(np.asarray(1, np_dtype))])  # a temporary: in place
    g.set_outputs([em.op("Clip", [shifted, *bounds])])
    model = tl.Model(g)
    base = np.asarray(_CLIP_VALUES, np.float64)
    rows = np.stack([base, -base, base * 0.5, base + 2])
    with np.errstate(all="ignore"):
        data = rows.astype(np_dtype) if np_dtype.kind == "f" else np.nan_to_num(rows).clip(-9, 9)
    feeds = {"x": np.asarray(data, np_dtype)}
    want = model.run(feeds, backend="reference")[g.outputs[0].name]
    got = model.run(feeds, backend="compiled")[g.outputs[0].name]
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if lo is not None or hi is not None:
        source = _executable(model).plan([feeds["x"]]).source
        assert "k_Clip" not in source  # inline, not the kernel's call
