"""Gradients through every loop form equal central finite differences (float64): random
canonical loops (trip counts, conditions, reverse slices, stacked axes: ``loop_models``),
while loops whose trip count comes from data, nested loops, Ifs inside loops, zero trips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorloop as tl
from grad_check import check_model, numeric_grad
from loop_models import build, loop_specs, make_inputs
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.tensor.types import TensorType


def with_loss(graph: Graph, max_iterations: int | None = None) -> tl.Model:
    """``graph`` with one more output ``loss``: sum(y * y) / 2 + 0.3 * sum(y) over its float
    outputs y (cotangents that vary from element to element)."""
    em = Emitter(graph)
    total = None
    for out in list(graph.outputs):
        t = out.type
        if not (isinstance(t, TensorType) and t.dtype.is_float):
            continue
        sq = em.op("ReduceSum", [em.op("Mul", [out, out])], {"keepdims": 0})
        lin = em.op("ReduceSum", [out], {"keepdims": 0})
        c_half, c_lin = em.const(np.float64(0.5)), em.const(np.float64(0.3))
        term = em.op("Add", [em.op("Mul", [sq, c_half]), em.op("Mul", [lin, c_lin])])
        total = term if total is None else em.op("Add", [total, term])
    if total is None:
        total = em.const(np.float64(0.0))
    graph.outputs = [*graph.outputs, graph.result_named(total, "loss")]
    return tl.Model(graph, max_iterations=max_iterations)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop_specs(), st.sampled_from([None, 1, 2, 3, "sqrt"]))
def test_random_loops_match_finite_differences(spec: Any, checkpoint: Any) -> None:
    """Every loop form, every memory option (``checkpoint``: store all, every k-th, sqrt)."""
    model = with_loss(build(spec), 20 if spec.max_iterations is None else spec.max_iterations)
    inputs = make_inputs(spec)
    try:
        model.run(inputs)
    except tl.LoopLimitError:
        return  # the forward fails; so does its gradient (checked below)
    wrt = [k for k, v in inputs.items() if np.asarray(v).dtype.kind == "f"]
    if not wrt:
        return
    check_model(model, inputs, wrt, rtol=1e-6, atol=1e-8, checkpoint=checkpoint)


def test_a_loop_past_its_limit_fails_in_the_gradient_too() -> None:
    xs = tl.placeholder("float64", (3,), name="x")
    v, _ = tl.while_loop(
        lambda s: tl.constant(np.bool_(True)),
        lambda s: (s[0] * 0.5, s[1]),
        (xs, tl.constant(np.int64(0))),
    )
    model = tl.Model({"loss": tl.reduce_sum(v, keepdims=False)}, max_iterations=5)
    grads = tl.grad(model, of="loss", wrt=["x"])
    with pytest.raises(tl.LoopLimitError):
        grads.run({"x": np.ones(3)})


def _while_model() -> tl.Model:
    """v -> 1.5 v + tanh(v) * w while sum(v) < limit: a trip count that comes from the data."""
    x = tl.placeholder("float64", (3,), name="x")
    w = tl.placeholder("float64", (3,), name="w")
    limit = tl.placeholder("float64", (), name="limit")

    def body(state: Any) -> Any:
        v, n = state
        return v * 1.5 + tl.tanh(v) * w, n + 1

    v, n = tl.while_loop(lambda s: tl.reduce_sum(s[0]) < limit, body, (x, tl.constant(np.int64(0))))
    return tl.Model({"loss": tl.reduce_sum(v * v, keepdims=False), "n": n})


@pytest.mark.parametrize("limit", [0.0, 3.0, 40.0])
def test_a_while_loop_with_a_data_dependent_trip_count(limit: float) -> None:
    tl.reset()
    model = _while_model()
    inputs = {"x": np.array([0.3, 0.2, 0.4]), "w": np.array([0.5, -0.2, 0.1]), "limit": limit}
    trips = int(model.run(inputs)["n"])
    assert trips == {0.0: 0, 3.0: trips, 40.0: trips}[limit]
    check_model(model, inputs, ["x", "w"], rtol=1e-6, atol=1e-8)


def test_nested_loops_and_an_if_in_a_loop() -> None:
    tl.reset()
    xs = tl.placeholder("float64", ("T", 2), name="xs")
    w = tl.placeholder("float64", (2, 2), name="w")

    def inner(i: Any, v: Any) -> Any:
        return tl.tanh(v @ w) + tl.cast(i, "float64") * 0.1

    def step(h: Any, x: Any) -> Any:
        h2 = tl.fori_loop(0, 3, inner, h + x)
        h3 = tl.cond(tl.reduce_sum(x) > 0, lambda a: a * 2.0, lambda a: tl.tanh(a) * 0.5, h2)
        return h3, h3

    h, hs = tl.scan(step, tl.constant(np.zeros(2)), xs)
    model = tl.Model({"loss": tl.reduce_sum(hs * hs, keepdims=False) + tl.reduce_sum(h)})
    rng = np.random.default_rng(3)
    inputs = {"xs": rng.standard_normal((4, 2)), "w": rng.standard_normal((2, 2)) * 0.5}
    check_model(model, inputs, ["xs", "w"], rtol=1e-6, atol=1e-8)


def test_zero_trips_pass_the_final_cotangent_to_the_initial_value() -> None:
    tl.reset()
    model = _while_model()
    inputs = {"x": np.array([1.0, 2.0, 3.0]), "w": np.ones(3), "limit": np.float64(-1.0)}
    grads = tl.grad(model, of="loss", wrt=["x", "w"]).run(inputs)
    np.testing.assert_array_equal(grads["x.grad"], 2 * inputs["x"])
    np.testing.assert_array_equal(grads["w.grad"], np.zeros(3))


def test_numeric_grad_is_an_oracle() -> None:
    """The finite-difference oracle itself, on a function whose gradient is known."""
    got = numeric_grad(lambda f: float(np.sum(f["x"] ** 3)), {"x": np.array([1.0, -2.0])}, "x")
    np.testing.assert_allclose(got, [3.0, 12.0], rtol=1e-6)


@pytest.mark.parametrize("checkpoint", [1, 2, 3, 7, "sqrt"])
def test_checkpointed_while_and_nested_loops(checkpoint: Any) -> None:
    """A while loop whose trips come from data, and a loop nested in a scan, checkpointed
    (the segment loops of the outer loop hold the inner one)."""
    tl.reset()
    model = _while_model()
    inputs = {"x": np.array([0.3, 0.2, 0.4]), "w": np.array([0.5, -0.2, 0.1]), "limit": 40.0}
    check_model(model, inputs, ["x", "w"], rtol=1e-6, atol=1e-8, checkpoint=checkpoint)
    tl.reset()
    xs = tl.placeholder("float64", ("T", 2), name="xs")
    w = tl.placeholder("float64", (2, 2), name="w")

    def step(h: Any, x: Any) -> Any:
        h2 = tl.fori_loop(0, 2, lambda i, v: tl.tanh(v @ w), h + x)
        return h2, h2 * x

    h, ys = tl.scan(step, tl.constant(np.zeros(2)), xs, reverse=True)
    nested = tl.Model({"loss": tl.reduce_sum(ys * ys, keepdims=False) + tl.reduce_sum(h)})
    rng = np.random.default_rng(5)
    feeds = {"xs": rng.standard_normal((7, 2)), "w": rng.standard_normal((2, 2)) * 0.5}
    check_model(nested, feeds, ["xs", "w"], rtol=1e-6, atol=1e-8, checkpoint=checkpoint)


def test_checkpoint_per_loop_and_a_bad_option() -> None:
    tl.reset()
    model = _while_model()
    loop = next(n for n in model.graph.nodes if n.op == "Loop")
    inputs = {"x": np.array([0.3, 0.2, 0.4]), "w": np.array([0.5, -0.2, 0.1]), "limit": 40.0}
    check_model(model, inputs, ["x", "w"], per_loop={loop.name: 2})
    with pytest.raises(tl.GradientError, match="checkpoint must be None, an int k or 'sqrt'"):
        tl.grad(model, of="loss", wrt=["x"], checkpoint="binomial")


@pytest.mark.parametrize("checkpoint", [None, 2])
def test_a_gradient_nobody_asked_for_is_not_computed(checkpoint: Any) -> None:
    """With respect to the weights only, the backward loop stacks no cotangent of the sequence
    (it would hold a whole-length array for nothing)."""
    tl.reset()
    xs = tl.placeholder("float64", ("T", 2), name="xs")
    w = tl.placeholder("float64", (2, 2), name="w")
    _, hs = tl.scan(
        lambda h, x: (tl.tanh(x @ w + h), tl.tanh(x @ w + h)), tl.constant(np.zeros(2)), xs
    )
    model = tl.Model({"loss": tl.reduce_sum(hs * hs, keepdims=False)})
    grads = tl.grad(model, of="loss", wrt=["w"], checkpoint=checkpoint)
    backward = [n for n in grads.graph.nodes if n.op == "Loop" and "grad" in tl.Loop(n).body.name]
    assert backward
    for node in backward:
        assert not tl.Loop(node).stacked
        assert all(s.source is not xs.value for s in tl.Loop(node).sliced)
    feeds = {"xs": np.linspace(-1, 1, 8).reshape(4, 2), "w": np.eye(2) * 0.7}
    check_model(model, feeds, ["w"], rtol=1e-6, atol=1e-8, checkpoint=checkpoint)
