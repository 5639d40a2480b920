"""The optimizers' NumPy updates against optax's formulas, written out by hand in float64."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorloop as tl
from tensorloop import train

Arrays = dict[str, np.ndarray]


def run(opt: train.Optimizer, params: Arrays, grads: list[Arrays]) -> tuple[Arrays, Arrays]:
    state = opt.init(params)
    for g in grads:
        updates, state = opt.update(g, state, params)
        params = train.apply_updates(params, updates)
    return params, state


def sgd_reference(
    params: Arrays, grads: list[Arrays], lr: float, momentum: float, nesterov: bool
) -> Arrays:
    out = {}
    for name, p in params.items():
        trace = np.zeros_like(p)
        for g in (step[name] for step in grads):
            trace = g + momentum * trace
            direction = g + momentum * trace if nesterov else trace
            p = p - lr * direction
        out[name] = p
    return out


def adam_reference(
    params: Arrays, grads: list[Arrays], lr: float, b1: float, b2: float, eps: float, wd: float
) -> Arrays:
    out = {}
    for name, p in params.items():
        m, v = np.zeros_like(p), np.zeros_like(p)
        for t, g in enumerate((step[name] for step in grads), start=1):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g**2
            m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
            p = p - lr * (m_hat / (np.sqrt(v_hat) + eps) + wd * p)
        out[name] = p
    return out


def problems(dtype: Any) -> st.SearchStrategy[tuple[Arrays, list[Arrays]]]:
    """Two parameters (a matrix and a vector) and the gradients of 1-4 steps."""
    floats = st.floats(-4, 4, width=32)

    def arrays(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
        return hnp.arrays(dtype, shape, elements=floats)

    def one(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> st.SearchStrategy[Any]:
        step = st.fixed_dictionaries({"w": arrays(shapes[0]), "b": arrays(shapes[1])})
        return st.tuples(step, st.lists(step, min_size=1, max_size=4))

    shapes = st.tuples(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3), st.just((3,)))
    return shapes.flatmap(one)


def assert_close(actual: Arrays, expected: Arrays, rtol: float, atol: float) -> None:
    assert sorted(actual) == sorted(expected)
    for name in expected:
        assert actual[name].dtype == expected[name].dtype
        np.testing.assert_allclose(actual[name], expected[name], rtol=rtol, atol=atol)


@settings(max_examples=25, deadline=None)
@given(
    problems(np.float64),
    st.floats(1e-3, 1.0),
    st.sampled_from([0.0, 0.5, 0.9]),
    st.booleans(),
)
def test_sgd_matches_optax_formula(
    problem: tuple[Arrays, list[Arrays]], lr: float, momentum: float, nesterov: bool
) -> None:
    params, grads = problem
    got, state = run(train.sgd(lr, momentum, nesterov), params, grads)
    assert_close(got, sgd_reference(params, grads, lr, momentum, nesterov), 1e-12, 1e-12)
    assert int(state[train.COUNT]) == len(grads)
    assert ("w/trace" in state) == (momentum != 0)


@settings(max_examples=25, deadline=None)
@given(
    problems(np.float64),
    st.floats(1e-3, 0.5),
    st.floats(0.0, 0.99),
    st.floats(0.5, 0.9999),
    st.sampled_from([1e-8, 1e-3]),
    st.sampled_from([None, 0.0, 1e-2, 0.5]),
)
def test_adam_and_adamw_match_optax_formula(
    problem: tuple[Arrays, list[Arrays]],
    lr: float,
    b1: float,
    b2: float,
    eps: float,
    wd: float | None,
) -> None:
    params, grads = problem
    opt = train.adam(lr, b1, b2, eps) if wd is None else train.adamw(lr, b1, b2, eps, wd)
    got, state = run(opt, params, grads)
    expected = adam_reference(params, grads, lr, b1, b2, eps, wd or 0.0)
    assert_close(got, expected, 1e-10, 1e-12)
    assert sorted(state) == ["b/m", "b/v", "count", "w/m", "w/v"]
    m = (1 - b1) * sum(b1 ** (len(grads) - k) * g["w"] for k, g in enumerate(grads, 1))
    np.testing.assert_allclose(state["w/m"], m, rtol=1e-10, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(problems(np.float32))
def test_float32_params_stay_float32_and_near_the_float64_result(
    problem: tuple[Arrays, list[Arrays]],
) -> None:
    params, grads = problem
    got, state = run(train.adamw(0.05), params, grads)
    wide = {k: v.astype(np.float64) for k, v in params.items()}
    wide_grads = [{k: v.astype(np.float64) for k, v in g.items()} for g in grads]
    expected = adam_reference(wide, wide_grads, 0.05, 0.9, 0.999, 1e-8, 1e-2)
    for name in params:
        assert got[name].dtype == np.float32
        assert state[f"{name}/m"].dtype == state[f"{name}/v"].dtype == np.float32
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-5)
    assert state[train.COUNT].dtype == np.int32


def test_adam_first_step_moves_each_weight_by_the_learning_rate() -> None:
    params = {"w": np.array([1.0, -2.0, 3.0])}
    grads = {"w": np.array([0.5, -4.0, 1e-3])}
    opt = train.adam(0.1, eps=0.0)
    updates, state = opt.update(grads, opt.init(params), params)
    np.testing.assert_allclose(updates["w"], [-0.1, 0.1, -0.1], rtol=1e-12)
    np.testing.assert_allclose(state["w/m"], 0.1 * grads["w"])
    np.testing.assert_allclose(state["w/v"], 0.001 * grads["w"] ** 2)


def test_sgd_momentum_by_hand() -> None:
    params, g = {"w": np.array([1.0])}, {"w": np.array([2.0])}
    for nesterov, moves in ((False, [-0.2, -0.38]), (True, [-0.38, -0.542])):
        opt = train.sgd(0.1, momentum=0.9, nesterov=nesterov)
        state, taken = opt.init(params), []
        for _ in range(2):
            updates, state = opt.update(g, state, params)
            taken.append(float(updates["w"][0]))
        assert taken == pytest.approx(moves)


def test_adamw_decays_weights_without_gradient() -> None:
    params = {"w": np.array([2.0, -4.0])}
    opt = train.adamw(0.1, weight_decay=0.5)
    updates, _ = opt.update({"w": np.zeros(2)}, opt.init(params), params)
    np.testing.assert_allclose(updates["w"], -0.1 * 0.5 * params["w"])
    assert math.isclose(float(train.apply_updates(params, updates)["w"][0]), 1.9)


def test_update_names_what_is_missing() -> None:
    opt = train.adam(0.1)
    params = {"w": np.ones(2)}
    with pytest.raises(tl.InputError, match="grads lack 'w'"):
        opt.update({}, opt.init(params), params)
    with pytest.raises(tl.InputError, match="state lack 'w/m', 'w/v'"):
        opt.update(params, {train.COUNT: np.zeros((), np.int32)}, params)
