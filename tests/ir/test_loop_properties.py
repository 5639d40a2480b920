"""Random canonical loops run by the interpreter agree with a plain-Python model of the Loop
docstring written here (NumPy arrays, explicit Python loops, none of tensorloop's kernels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from loop_models import (
    F64,
    I64,
    LimitReachedError,
    LoopSpec,
    build,
    loop_specs,
    make_inputs,
    reference,
)
from tensorloop.errors import LoopLimitError

SETTINGS = settings(max_examples=60, deadline=None)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@SETTINGS
@given(loop_specs())
def test_random_canonical_loops_match_the_docstring_model(spec: LoopSpec) -> None:
    g = build(spec)
    kw = {} if spec.max_iterations is None else {"max_iterations": spec.max_iterations}
    model = tl.Model(g, **kw)
    inputs = make_inputs(spec)
    try:
        want, trips = reference(spec, inputs)
    except LimitReachedError:
        with pytest.raises(LoopLimitError, match="random_loop"):
            model.run(inputs)
        return
    res = model.run(inputs, trace=["it"])
    got = [res[name] for name in model.output_names]
    assert len(got) == len(want)
    for k, (out, value, w) in enumerate(zip(got, g.outputs, want, strict=True)):
        assert out.dtype == w.dtype, f"output #{k}"
        assert out.shape == w.shape, f"output #{k}"
        np.testing.assert_allclose(out, w, rtol=1e-12, atol=1e-300, err_msg=f"output #{k}")
        assert value.type.accepts(out), f"output #{k}: {out.shape} is not {value.type}"
    assert [e.iteration for e in res.trace.get("it", [])] == [(i,) for i in range(trips)]
    assert [int(e.value) for e in res.trace.get("it", [])] == list(range(trips))


# --------------------------------------------------------------------------------------------
# builder loops against Python loops
# --------------------------------------------------------------------------------------------


@st.composite
def scan_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], int, bool, int]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    return shape, draw(st.integers(-rank, rank - 1)), draw(st.booleans()), draw(st.integers(0, 999))


@SETTINGS
@given(scan_cases())
def test_scan_matches_python_loop(case: tuple[tuple[int, ...], int, bool, int]) -> None:
    tl.reset()
    shape, axis, reverse, seed = case
    a = axis % len(shape)
    slice_shape = shape[:a] + shape[a + 1 :]
    xs = tl.placeholder(F64, shape, name="xs")
    c0 = tl.placeholder(F64, slice_shape, name="c0")

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        c2 = c * 0.5 + x
        return c2, (c2 - x * 2.0, x)

    c, (ys, echo) = tl.scan(step, c0, xs, axis=axis, reverse=reverse)
    m = tl.Model({"c": c, "ys": ys, "echo": echo})
    rng = np.random.default_rng(seed)
    xv, cv = rng.standard_normal(shape), rng.standard_normal(slice_shape)
    res = m.run({"xs": xv, "c0": cv})

    n = shape[a]
    want_ys = np.zeros(shape)
    carry = cv
    for k in reversed(range(n)) if reverse else range(n):
        x = xv[(slice(None),) * a + (k,)]
        carry = carry * 0.5 + x
        want_ys[(slice(None),) * a + (k,)] = carry - x * 2.0
    np.testing.assert_allclose(res["c"], carry, rtol=1e-12)
    np.testing.assert_allclose(res["ys"], want_ys, rtol=1e-12)
    np.testing.assert_array_equal(res["echo"], xv)
    assert res["ys"].shape == shape and res["echo"].shape == shape


@SETTINGS
@given(st.integers(-3, 6), st.integers(-3, 6), st.booleans(), st.floats(-2, 2))
def test_fori_loop_matches_python_for(lo: int, hi: int, as_tensors: bool, x0: float) -> None:
    tl.reset()
    lower: Any = tl.placeholder(I64, [], name="lo") if as_tensors else lo
    upper: Any = tl.placeholder(I64, [], name="hi") if as_tensors else hi

    def body(i: Any, s: tuple[Any, Any]) -> tuple[Any, Any]:
        v, k = s
        return v * 0.5 + tl.cast(i, F64), k * 3 + i

    v, k = tl.fori_loop(lower, upper, body, (tl.constant(np.float64(x0)), tl.constant(np.int64(1))))
    m = tl.Model({"v": v, "k": k})
    res = m.run({"lo": lo, "hi": hi} if as_tensors else {})
    v_, k_ = x0, 1
    for i in range(lo, hi):
        v_, k_ = v_ * 0.5 + i, k_ * 3 + i
    assert res["v"] == pytest.approx(v_, rel=1e-12, abs=1e-12)
    assert res["k"] == k_


@SETTINGS
@given(
    st.floats(0.1, 10.0),
    st.floats(-5.0, 200.0),
    st.sampled_from([1.5, 2.0, 3.0]),
    st.floats(0.0, 2.0),
)
def test_while_loop_matches_python_while(x0: float, limit: float, f: float, add: float) -> None:
    tl.reset()
    x = tl.placeholder(F64, [], name="x")
    lim = tl.placeholder(F64, [], name="lim")
    out_x, out_n, out_hist = tl.while_loop(
        lambda s: s[0] < lim,
        lambda s: (s[0] * f + add, s[1] + 1, s[2] + s[0]),
        (x, tl.constant(np.int64(0)), tl.constant(np.float64(0))),
    )
    res = tl.Model({"x_out": out_x, "n": out_n, "hist": out_hist}).run({"x": x0, "lim": limit})
    xv, n, hist = x0, 0, 0.0
    while xv < limit:
        xv, n, hist = xv * f + add, n + 1, hist + xv
    assert res["x_out"] == xv
    assert res["n"] == n
    assert res["hist"] == hist
