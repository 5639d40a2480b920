"""``LoopObserver``: a run's observer is told of every loop iteration as it starts and of each
loop's end, with the same (path, iteration) sequence on every backend (conftest compares the
sequences of every observed run across backends too); it belongs to its run alone, and a run
without one plans no call of it."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.backends.base import get_backend
from tensorloop.errors import InputError, LoopLimitError, TensorloopError
from tensorloop.ir.parser import parse_graph
from tensorloop.reference.runtime import coerce_inputs, loop_label


def _jax_available() -> bool:
    try:
        get_backend("jax")
    except TensorloopError:
        return False
    return True


ON_HOST = "an observed run on jax places its loops on the compiled backend"
BACKENDS = [
    "reference",
    "compiled",
    "auto",
    pytest.param(
        "jax",
        marks=[
            pytest.mark.skipif(not _jax_available(), reason="no JAX"),
            pytest.mark.handoff(reason=ON_HOST),
        ],
    ),
]

Event = tuple[str, tuple[str, ...], int]


class Recorder(tl.LoopObserver):
    """Every event, in order; ``stop_at``: raise ``Stop`` on that iteration of any loop."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.events: list[Event] = []
        self.stop_at = stop_at

    def on_iteration(self, path: tuple[str, ...], iteration: int) -> None:
        if iteration == self.stop_at:
            raise StopError(path)
        self.events.append(("iteration", path, iteration))

    def on_loop_end(self, path: tuple[str, ...], trips: int) -> None:
        self.events.append(("end", path, trips))


class StopError(Exception):
    """An observer's way to stop a run."""


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _nested() -> tl.Model:
    """An outer scan over ``xs``; in each of its iterations a while loop doubles the element
    until it passes ``limit`` (a different number of trips each time)."""
    xs = tl.placeholder("float64", (3,), name="xs")
    limit = tl.placeholder("float64", [], name="limit")

    def outer(c: tl.Tensor, row: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        grown = tl.while_loop(lambda s: s < limit, lambda s: tl.name(s * 2.0, "twice"), row)
        return c + grown, grown

    c, grown = tl.scan(outer, tl.constant(np.float64(0)), xs)
    return tl.Model({"c": c, "grown": grown})


EARLY = """graph @early(%n: i64[], %s0: f64[], %limit: f64[]) {
  %go0 = Less(%s0, %limit) : bool[]
  %s, %ss = Loop(max_trip_count=%n, initial_condition=%go0, carried=[%s0], invariants=[%limit]) {body = graph @body(%i: i64[], %s_in: f64[], %lim: f64[]) {
    %two = Constant() {value = dense<f64[]>[2.0]} : f64[]
    %s_next = Mul(%s_in, %two) : f64[]
    %go = Less(%s_next, %lim) : bool[]
    return %go, %s_next, %s_in
  }, sliced = [], stacked = [Stacked(axis=0, reverse=false)]} : f64[], f64[?]
  return %s, %ss
}
"""  # noqa: E501
"""A loop bounded by ``n`` trips that stops early once ``s`` (doubled each trip) passes
``limit``."""


def _labels(model: tl.Model) -> list[str]:
    return [loop_label(n) for _, n in model.graph.walk() if n.op == "Loop"]


def _iterations(path: tuple[str, ...], trips: int) -> list[Event]:
    return [("iteration", path, i) for i in range(trips)] + [("end", path, trips)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nested_loop_is_observed_iteration_by_iteration(backend: str) -> None:
    model = _nested()
    outer, inner = _labels(model)
    seen = Recorder()
    xs = np.array([1.0, 30.0, 200.0])  # 7, 2 and 0 doublings to pass 100
    out = model.run({"xs": xs, "limit": 100.0}, backend=backend, observer=seen)
    np.testing.assert_allclose(out["grown"], [128.0, 120.0, 200.0])
    want: list[Event] = []
    for row, trips in enumerate((7, 2, 0)):
        want.append(("iteration", (outer,), row))
        want += _iterations((outer, inner), trips)
    want.append(("end", (outer,), 3))
    assert seen.events == want


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("n", "s0", "trips"),
    [(10, 1.0, 7), (3, 1.0, 3), (10, 500.0, 0), (0, 1.0, 0)],
    ids=["stops-early", "bound", "condition-false", "no-trips"],
)
def test_a_bounded_loop_that_stops_early(backend: str, n: int, s0: float, trips: int) -> None:
    model = tl.Model(parse_graph(EARLY))
    (label,) = _labels(model)
    seen = Recorder()
    out = model.run({"n": n, "s0": s0, "limit": 100.0}, backend=backend, observer=seen)
    assert len(out["ss"]) == trips
    assert seen.events == _iterations((label,), trips)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_iteration_limit_stops_before_the_observer_hears_of_the_trip(backend: str) -> None:
    model = tl.Model(parse_graph(EARLY))
    (label,) = _labels(model)
    seen = Recorder()
    with pytest.raises(LoopLimitError):
        model.run(
            {"n": 10, "s0": 1.0, "limit": 100.0},
            backend=backend,
            observer=seen,
            max_iterations=4,
        )
    assert seen.events == [("iteration", (label,), i) for i in range(4)]  # no end: it failed


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_observer_stops_the_run_by_raising(backend: str) -> None:
    model = _nested()
    with pytest.raises(StopError):
        model.run({"xs": np.ones(3), "limit": 100.0}, backend=backend, observer=Recorder(stop_at=3))


def test_a_traced_and_observed_run_does_both() -> None:
    model = _nested()
    outer, inner = _labels(model)
    seen = Recorder()
    xs = np.array([1.0, 30.0, 200.0])
    out = model.run({"xs": xs, "limit": 100.0}, trace=["twice"], observer=seen)
    assert len(seen.events) == 3 + (7 + 1) + (2 + 1) + (0 + 1) + 1
    assert out.trace["twice"].loops == [(outer, inner)]
    assert [e.iteration for e in out.trace["twice"]] == [
        *((0, i) for i in range(7)),
        *((1, i) for i in range(2)),
    ]


def _together(runs: list[Any]) -> list[Any]:
    """Call each of ``runs`` in its own thread, all released at once; their results."""
    barrier = threading.Barrier(len(runs))
    results: list[Any] = [None] * len(runs)
    errors: list[BaseException] = []

    def go(k: int) -> None:
        try:
            barrier.wait()
            results[k] = runs[k]()
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_each_run_has_its_own_observer(backend: str) -> None:
    """Two threads run one model (one plan) at once, each with its observer: each observer
    hears of its own run's iterations only."""
    model = tl.Model(parse_graph(EARLY))
    (label,) = _labels(model)
    model.run({"n": 10, "s0": 1.0, "limit": 100.0}, backend=backend)  # planned once, shared
    mine, yours = Recorder(), Recorder()
    limit = 1e300  # each run goes on to its bound: n trips

    def run(seen: Recorder, n: int) -> Any:
        return lambda: [
            model.session().run({"n": n, "s0": 1.0, "limit": limit}, backend=backend, observer=seen)
            for _ in range(5)
        ]

    _together([run(mine, 50), run(yours, 80)])
    assert mine.events == _iterations((label,), 50) * 5
    assert yours.events == _iterations((label,), 80) * 5


def test_a_run_without_an_observer_plans_no_call_of_one() -> None:
    model = _nested()
    feeds = {"xs": np.ones(3), "limit": 100.0}
    args = coerce_inputs(model.graph, feeds)
    executable = model.prepared("compiled")
    plain = executable.plan(args).source
    observed = executable.plan(args, observed=True).source
    assert "_on_iteration" not in plain and "observer" not in plain
    assert "_on_iteration = state.observer.on_iteration" in observed
    assert observed.count("_on_iteration(") == 2  # one call in each loop


@pytest.mark.skipif(not _jax_available(), reason="no JAX")
@pytest.mark.handoff(reason=ON_HOST)
def test_jax_places_the_loops_of_an_observed_run_on_the_compiled_backend() -> None:
    model = _nested()
    args = coerce_inputs(model.graph, {"xs": np.ones(3), "limit": 100.0})
    executable = model.prepared("jax")
    loops = [p for p in executable.placement(args, observed=True) if p.op == "Loop"]
    assert loops and all(p.device == "compiled" for p in loops)
    assert all("loop observer" in p.reason for p in loops)


def test_an_observer_must_be_one() -> None:
    model = _nested()
    with pytest.raises(InputError, match="LoopObserver"):
        model.run({"xs": np.ones(3), "limit": 100.0}, observer=object())  # type: ignore[arg-type]
