"""Budgets for a whole run: ``Limits.max_total_iterations`` counts the body runs of every loop
at every depth, on every backend (inside XLA islands too), and refuses up front a loop whose
trips, with those of the loops inside it, are certain to pass it."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop.backends.base import get_backend
from tensorloop.errors import FallbackWarning, LoopLimitError, ResourceLimitError, TensorloopError
from tensorloop.reference import Interpreter
from tensorloop.reference.runtime import RunState

_ORIGINAL_RUN = tl.Session.run  # before the suite-wide hook reruns each run on other backends


def _backends() -> list[str]:
    try:
        get_backend("jax")
    except TensorloopError:
        return ["reference", "compiled"]
    return ["reference", "compiled", "jax"]


BACKENDS = _backends()
HANDING_ON = [
    pytest.param(b, marks=pytest.mark.handoff("jax leaves growing shapes and sequences on"))
    if b == "jax"
    else b
    for b in BACKENDS
]
"""BACKENDS, where jax hands what only the run can size (growing shapes, sequences) on."""


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run on the one backend it names, not rerun by the suite's hook on the others."""
    monkeypatch.setattr(tl.Session, "run", _ORIGINAL_RUN)


def nested(trips: list[int], stop_at: float | None = None) -> tl.Model:
    """Loops nested ``len(trips)`` deep, the outermost first, each ``fori_loop`` of its trips
    around the next, the innermost adding 1; ``stop_at``: the outermost is a while loop that
    runs until the sum passes it instead (a data-dependent exit)."""
    x = tl.placeholder("float32", (2,), name="x")

    def level(depth: int) -> Any:
        if depth == len(trips):
            return lambda h: h + 1.0
        inner = level(depth + 1)
        return lambda h: tl.fori_loop(0, trips[depth], lambda i, g: inner(g), h)

    if stop_at is None:
        y = level(0)(x)
    else:
        y = tl.while_loop(lambda c: tl.reduce_sum(c) < stop_at, level(1), x)
    return tl.Model({"y": y})


class Count(tl.LoopObserver):
    def __init__(self) -> None:
        self.iterations = 0

    def on_iteration(self, path: tuple[str, ...], iteration: int) -> None:
        self.iterations += 1


def body_runs(model: tl.Model, feeds: dict[str, Any]) -> int:
    """Every body run of every loop of one reference run, as its observer counts them."""
    count = Count()
    model.run(feeds, backend="reference", observer=count)
    return count.iterations


X = {"x": np.zeros(2, np.float32)}


@pytest.mark.usefixtures("direct")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trips=st.lists(st.integers(0, 5), min_size=1, max_size=3),
    stop_at=st.none() | st.floats(1.0, 60.0),
    budget=st.integers(0, 150),
)
def test_a_run_passes_exactly_when_its_body_runs_fit_the_budget(
    trips: list[int], stop_at: float | None, budget: int
) -> None:
    # a while loop's body must add something, or it never ends
    model = nested(trips if stop_at is None else [0, *(max(t, 1) for t in trips)], stop_at)
    runs = body_runs(model, X)
    expected = model.run(X, backend="reference")["y"] if runs <= 10_000 else None
    for backend in BACKENDS:
        limited = tl.Model(model.graph, limits=tl.Limits(max_total_iterations=budget))
        if runs <= budget:
            got = limited.run(X, backend=backend)["y"]
            np.testing.assert_array_equal(got, expected, err_msg=backend)
        else:
            warns = pytest.warns(FallbackWarning) if backend == "jax" else nullcontext()
            with warns, pytest.raises(LoopLimitError, match=r"Limits\.max_total_iterations"):
                limited.run(X, backend=backend)


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", BACKENDS)
def test_three_nested_loops_of_a_thousand_are_refused_before_they_start(backend: str) -> None:
    model = nested([1000, 1000, 1000])
    started = time.perf_counter()
    with pytest.raises(LoopLimitError) as info:
        if backend == "jax":  # XLA's island hands the loop on: the compiled backend refuses it
            with pytest.warns(tl.errors.FallbackWarning):
                model.run(X, backend=backend)
        else:
            model.run(X, backend=backend)
    assert time.perf_counter() - started < 20  # jax compiles first; no body runs
    message = str(info.value)
    assert "would make 1001001000 loop iterations" in message
    assert "more than the limit of 10000000 in all (Limits.max_total_iterations)" in message
    assert re.search(r"\(loop path fori\w*\)", message)


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_dependent_loop_is_stopped_where_the_budget_runs_out(backend: str) -> None:
    model = tl.Model(nested([0, 10], stop_at=1e9).graph, limits=tl.Limits(max_total_iterations=999))
    with pytest.raises(LoopLimitError) as info:
        if backend == "jax":
            with pytest.warns(tl.errors.FallbackWarning):
                model.run(X, backend=backend)
        else:
            model.run(X, backend=backend)
    # 90 trips of the while loop, each with its 10 inner ones, make 990; the 91st makes 991
    # and its inner loop, certain to make 10 more, is refused before it starts
    message = str(info.value)
    assert "would make 10 loop iterations" in message and "991 made before it" in message
    assert re.search(r"\(loop path while\w* > fori\w*\)", message)


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", ["compiled", *(["jax"] if "jax" in BACKENDS else [])])
def test_three_nested_loops_of_a_hundred_still_run(backend: str) -> None:
    # 100 + 100**2 + 100**3 body runs, well inside the default budget (the reference, at some
    # ten microseconds a body run, is left the smaller control below)
    y = nested([100, 100, 100]).run(X, backend=backend)["y"]
    np.testing.assert_array_equal(y, np.full(2, 1e6, np.float32))


@pytest.mark.usefixtures("direct")
def test_nested_loops_run_on_the_reference_within_the_budget() -> None:
    y = nested([20, 20, 20]).run(X, backend="reference")["y"]
    np.testing.assert_array_equal(y, np.full(2, 8000, np.float32))


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_run_keeps_its_own_count(backend: str) -> None:
    # each run needs 4 + 16 = 20 body runs, exactly the budget: a shared count would fail some
    model = tl.Model(nested([4, 4]).graph, limits=tl.Limits(max_total_iterations=20))
    sequential = [model.run(X, backend=backend)["y"] for _ in range(3)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: model.run(X, backend=backend)["y"], range(16)))
    for y in (*sequential, *results):
        np.testing.assert_array_equal(y, np.full(2, 16, np.float32))
    tight = tl.Model(model.graph, limits=tl.Limits(max_total_iterations=19))
    with pytest.raises(LoopLimitError):
        tight.run(X, backend=backend if backend != "jax" else "compiled")


def test_the_budget_is_validated_and_has_a_safe_default() -> None:
    assert tl.Limits().max_total_iterations == 10_000_000
    for bad in (-1, 1.5, True):
        with pytest.raises(tl.errors.GraphError, match="max_total_iterations"):
            tl.Limits(max_total_iterations=bad)  # type: ignore[arg-type]


# -- the run's live bytes ------------------------------------------------------------------


def doubling(carried: int, steps: int) -> tl.Model:
    """``carried`` tensors of 1 KiB, each doubled by a Concat every one of ``steps`` trips: each
    stays under the per-tensor limit while together they pass the run's."""
    x = tl.placeholder("float32", (256,), name="x")
    outs = tl.fori_loop(
        0,
        steps,
        lambda i, cs: tuple(tl.concat([c, c], axis=0) for c in cs),
        tuple(x * float(k) for k in range(carried)),
    )
    return tl.Model({f"y{k}": tl.reduce_sum(o) for k, o in enumerate(outs)})


def growing_sequence(row: int) -> tl.Model:
    """An ONNX Loop of ``n`` trips (an input) that inserts a fresh float32[row] (the trip's
    number, expanded) into a carried sequence every trip."""
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            helper.make_node("Expand", ["fi", "shape"], ["fresh"]),
            helper.make_node("SequenceInsert", ["seq_in", "fresh"], ["seq_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None),
        ],
        [helper.make_tensor("shape", TensorProto.INT64, [1], [row])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
            helper.make_node("Loop", ["n", "", "empty"], ["seq"], body=body),
            helper.make_node("SequenceLength", ["seq"], ["count"]),
        ],
        "grow",
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("count", TensorProto.INT64, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return tl.load(model)


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", HANDING_ON)
def test_carried_tensors_that_grow_together_are_stopped_by_the_run_budget(backend: str) -> None:
    limits = tl.Limits(max_tensor_bytes=64 << 20, max_run_bytes=256 << 20)
    model = tl.Model(doubling(10, 30).graph, limits=limits)
    with pytest.raises(ResourceLimitError, match=r"more than the limit of 256 MiB .*max_run_bytes"):
        model.run(X256, backend=backend)
    control = tl.Model(doubling(10, 10).graph, limits=limits)  # 10 MiB in all: it runs
    outputs = control.run(X256, backend=backend)
    assert float(outputs["y1"]) == 1024 * 256


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", HANDING_ON)
def test_a_sequence_grown_in_a_loop_is_stopped_by_the_run_budget(backend: str) -> None:
    model = growing_sequence(1 << 18)  # 1 MiB a trip
    model.limits = tl.Limits(max_run_bytes=64 << 20)
    with pytest.raises(ResourceLimitError, match=r"Limits\.max_run_bytes"):
        model.run({"n": np.int64(1000)}, backend=backend)  # a GiB in all
    assert int(model.run({"n": np.int64(40)}, backend=backend)["count"]) == 40


X256 = {"x": np.ones(256, np.float32)}


def test_a_reference_run_lets_go_of_every_byte_it_held() -> None:
    for model, feeds in ((doubling(3, 6), X256), (nested([3, 2]), X)):
        interpreter = Interpreter(state=RunState(limits=model.limits))
        args = [feeds[name] for name in model.input_names]
        interpreter.run(model.graph, args)
        assert interpreter.state.live_bytes == 0 and not interpreter.state._held
        assert interpreter.state.peak_bytes > 0


def test_a_view_counts_the_buffer_it_views_once() -> None:
    state = RunState(limits=tl.Limits(max_run_bytes=4096))
    a = np.zeros(1024, np.float32)
    state.hold(a, "a")
    state.hold(a[1:], "view")
    state.hold([a, a.reshape(32, 32)], "sequence")
    assert state.live_bytes == 4096
    with pytest.raises(ResourceLimitError, match="max_run_bytes"):
        state.hold(np.zeros(1, np.float32), "one more")
    state.drop(a)
    state.drop(a[1:])
    state.drop([a, a])
    assert state.live_bytes == 0
