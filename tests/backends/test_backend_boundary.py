"""The backend boundary: backends by name, prepared once, bodies run through the backend's
runner, constant folding through it, and runs from many threads at once."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.backends import RunState, backend_names, get_backend, register_backend
from tensorloop.backends.reference import ReferenceBackend
from tensorloop.errors import BackendError
from tensorloop.ir.graph import Graph, Node
from tensorloop.passes.fold_constants import FoldConstants
from tensorloop.reference import Interpreter
from tensorloop.tensor.types import Type


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _rnn() -> tl.Model:
    xs = tl.placeholder("float32", ("T", 4), name="xs")
    w = tl.constant(np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32) * 0.5)

    def step(h: tl.Tensor, x: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        h = tl.tanh(x @ w + h)
        return h, h

    h, hs = tl.scan(step, tl.constant(np.zeros(4, np.float32)), xs)
    return tl.Model({"h": h, "hs": hs})


class _Counting:
    """A backend that is the reference one, counting what passes through the boundary."""

    name = "counting"

    def __init__(self) -> None:
        self.prepared = 0
        self.evaluated: list[str] = []
        self.bodies = 0

    def prepare(self, graph: Graph, input_types: Sequence[Type] | None = None) -> Any:
        self.prepared += 1
        outer = self

        class _Interp(Interpreter):
            def run_graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
                outer.bodies += 1
                return super().run_graph(graph, args)

        class _Exe:
            def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
                state.start(graph)
                outer.bodies -= 1  # the top-level graph is not a body
                return _Interp(state=state).run_graph(graph, args)

        return _Exe()

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        self.evaluated.append(node.op)
        return ReferenceBackend().evaluate(node, inputs)


def test_backends_by_name() -> None:
    assert "reference" in backend_names()
    assert get_backend("reference") is get_backend("reference")
    assert get_backend("reference").name == "reference"
    with pytest.raises(BackendError, match=r"unknown backend 'tpu'; tensorloop has .*reference"):
        get_backend("tpu")
    with pytest.raises(BackendError, match="unknown backend 'tpu'"):
        tl.Model({"y": tl.placeholder("float32", (1,), name="x") + 1.0}, backend="tpu")
    with pytest.raises(BackendError, match="registered twice"):
        register_backend("reference", ReferenceBackend)


def test_a_model_prepares_once_per_backend_and_runs_loop_bodies_through_its_runner() -> None:
    counting = _Counting()
    model = _rnn()
    xs = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    want = model.run({"xs": xs}, backend="reference")  # the counting backend wraps it
    for _ in range(3):
        got = model.run({"xs": xs}, backend=counting)
        np.testing.assert_array_equal(got["hs"], want["hs"])
    assert counting.prepared == 1
    assert counting.bodies == 3 * 5  # one body run per iteration, through the backend's runner
    other = tl.Model(model.graph.clone(), backend=counting)
    np.testing.assert_array_equal(other.run({"xs": xs})["h"], want["h"])
    assert counting.prepared == 2


def test_load_selects_a_backend(tmp_path: Path) -> None:
    path = tmp_path / "m.tl"
    tl.save(_rnn(), path)
    model = tl.load(path, backend="reference")
    assert model.backend is get_backend("reference")
    with pytest.raises(BackendError, match="unknown backend 'nope'"):
        tl.load(path, backend="nope")


def test_fold_constants_evaluates_through_a_given_evaluator() -> None:
    counting = _Counting()
    c = tl.constant(np.array([1.0, 4.0], np.float32))
    x = tl.placeholder("float32", (2,), name="x")
    m = tl.Model({"y": tl.sqrt(c) + x})
    assert FoldConstants(counting.evaluate).run(m.graph).changed
    assert counting.evaluated == ["Sqrt"]
    np.testing.assert_array_equal(m.run({"x": np.zeros(2, np.float32)})["y"], [1.0, 2.0])


def test_runs_from_many_threads_match_sequential_runs() -> None:
    model = _rnn()
    rng = np.random.default_rng(3)
    feeds = [
        {"xs": rng.standard_normal((int(rng.integers(1, 9)), 4)).astype(np.float32)}
        for _ in range(32)
    ]
    sequential = [model.run(f, trace=["carried0"]) for f in feeds]
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda f: model.run(f, trace=["carried0"]), feeds))
    for want, got, f in zip(sequential, threaded, feeds, strict=True):
        np.testing.assert_array_equal(got["h"], want["h"])
        np.testing.assert_array_equal(got["hs"], want["hs"])
        assert len(got.trace["carried0"]) == len(f["xs"])  # each run keeps its own trace


def test_state_checks_the_iteration_limit() -> None:
    with pytest.raises(tl.GraphError, match="max_iterations must be >= 0"):
        RunState(max_iterations=-1)
    state = RunState(max_iterations=2)
    with state.iteration(1, "Loop 'l'"):
        assert state.path == (1,)
    assert state.path == ()
    limit = pytest.raises(tl.LoopLimitError, match="Loop 'l': still running after 2 iterations")
    with limit, state.iteration(2, "Loop 'l'"):
        pass


def _jax_or_skip() -> list[Any]:
    try:
        get_backend("jax")
    except tl.TensorloopError:
        return [pytest.param("jax", marks=pytest.mark.skip("jax is not installed"))]
    return ["jax"]


@pytest.mark.parametrize("backend", ["reference", "compiled", *_jax_or_skip()])
@pytest.mark.filterwarnings("error")  # NumPy's ComplexWarning: the imaginary part dropped
def test_complex_values_for_a_real_input_are_an_input_error(backend: str) -> None:
    x = tl.placeholder("float32", (2,), name="x")
    n = tl.placeholder("int64", (), name="n")
    model = tl.Model({"y": x * 2.0, "m": n + 1})
    ok = {"x": np.ones(2, np.float32), "n": np.int64(1)}
    for name, value, got in [
        ("x", [1 + 2j, 3.0], r"complex values \(complex128\[2\]\)"),
        ("x", [1 + 0j, 2], r"complex values \(complex128\[2\]\)"),
        ("x", np.array([1, 2], np.complex64), r"complex64 array of shape \[2\]"),
        ("n", 1j, r"complex values \(complex128\[\]\)"),
        ("n", 3 + 0j, r"complex values \(complex128\[\]\)"),
        ("n", np.complex128(1), r"complex128 array of shape \[\]"),
    ]:
        want = r"f32\[2\]" if name == "x" else r"i64\[\]"
        with pytest.raises(tl.InputError, match=rf"input '{name}': expected {want}, got {got}"):
            model.run({**ok, name: value}, backend=backend)
    np.testing.assert_array_equal(model.run(ok, backend=backend)["m"], 2)
