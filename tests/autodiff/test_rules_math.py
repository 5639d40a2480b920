"""The vector-Jacobian rules of the elementwise, activation, variadic and reduction ops equal
central finite differences in float64 (``grad_check``), broadcast inputs included; the
conventions at the points where a derivative is undefined (kinks, ties, zeros) are the ones
``rules_math`` documents; and the rules build and run in float32 too."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorloop as tl
from grad_check import check_model, check_op
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.tensor.dtypes import dtype
from tensorloop.tensor.types import TensorType

FEW = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

Array = np.ndarray[Any, Any]


def uniform(lo: float, hi: float, shape: Sequence[int] = (3, 4), seed: int = 0) -> Array:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def normal(shape: Sequence[int] = (2, 3), seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def away(x: Array, *kinks: float, gap: float = 0.05) -> Array:
    """``x`` with every entry within ``gap`` of a kink moved ``2 * gap`` off it, so central
    differences never straddle one."""
    x = x.copy()
    for k in kinks:
        near = np.abs(x - k) < gap
        x[near] = k + np.where(x[near] >= k, 2 * gap, -2 * gap)
    return x


def signed(lo: float, hi: float, shape: Sequence[int] = (3, 4), seed: int = 0) -> Array:
    """Magnitudes in [lo, hi) with random signs."""
    sign = np.where(np.random.default_rng(seed + 1).random(shape) < 0.5, -1.0, 1.0)
    return sign * uniform(lo, hi, shape, seed)


# -- unary ops ----------------------------------------------------------------------------------
WIDE = uniform(-4, 4)  # both sides of every kink below

UNARY: list[tuple[str, Array, dict[str, Any]]] = [
    ("Abs", signed(0.1, 3), {}),
    ("Sqrt", uniform(0.2, 3), {}),
    ("Reciprocal", signed(0.3, 2), {}),
    ("Relu", away(WIDE, 0), {}),
    ("LeakyRelu", away(WIDE, 0), {}),
    ("LeakyRelu", away(WIDE, 0), {"alpha": 0.3}),
    ("Elu", away(WIDE, 0), {}),
    ("Elu", away(WIDE, 0), {"alpha": 0.5}),
    ("Selu", away(WIDE, 0), {}),
    ("Selu", away(WIDE, 0), {"alpha": 1.2, "gamma": 0.8}),
    ("Celu", WIDE, {}),
    ("Celu", WIDE, {"alpha": 2.0}),
    ("Softplus", WIDE, {}),
    ("Softsign", away(WIDE, 0), {}),
    ("Gelu", WIDE, {}),
    ("Gelu", WIDE, {"approximate": "none"}),
    ("Gelu", WIDE, {"approximate": "tanh"}),
    ("Erf", uniform(-2.5, 2.5), {}),
    ("Sin", WIDE, {}),
    ("Cos", WIDE, {}),
    ("Tan", uniform(-1.3, 1.3), {}),
    ("Asin", uniform(-0.95, 0.95), {}),
    ("Acos", uniform(-0.95, 0.95), {}),
    ("Atan", WIDE, {}),
    ("Sinh", uniform(-2, 2), {}),
    ("Cosh", away(uniform(-2, 2), 0), {}),
    ("Asinh", WIDE, {}),
    ("Acosh", uniform(1.05, 4), {}),
    ("Atanh", uniform(-0.95, 0.95), {}),
    ("HardSigmoid", away(WIDE, -2.5, 2.5), {}),
    ("HardSigmoid", away(WIDE, -4 / 3, 2), {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", away(uniform(-5, 5), -3, 3), {}),
    ("Swish", WIDE, {}),
    ("Swish", WIDE, {"alpha": 0.7}),
    ("Mish", WIDE, {}),
    ("ThresholdedRelu", away(WIDE, 1), {}),
    ("ThresholdedRelu", away(WIDE, -0.5), {"alpha": -0.5}),
    ("Shrink", away(WIDE, -0.5, 0.5), {}),
    ("Shrink", away(WIDE, -1, 1), {"bias": 0.3, "lambd": 1.0}),
    ("Exp", WIDE, {}),
    ("Log", uniform(0.2, 3), {}),
    ("Tanh", WIDE, {}),
    ("Sigmoid", WIDE, {}),
    ("Neg", WIDE, {}),
    ("Identity", WIDE, {}),
    # one operand only: the variadic ops are the identity
    ("Max", WIDE, {}),
    ("Min", WIDE, {}),
    ("Sum", WIDE, {}),
    ("Mean", WIDE, {}),
    ("Clip", WIDE, {}),
]


def _id(case: tuple[str, Array, dict[str, Any]]) -> str:
    op, _, attrs = case
    return op + "".join(f"-{k}={v}" for k, v in attrs.items())


@pytest.mark.parametrize("case", UNARY, ids=_id)
def test_unary(case: tuple[str, Array, dict[str, Any]]) -> None:
    op, x, attrs = case
    check_op(op, [x], attrs)


@pytest.mark.parametrize("case", UNARY, ids=_id)
def test_unary_float32_builds_and_agrees(case: tuple[str, Array, dict[str, Any]]) -> None:
    """The rules type their constants by the input: the same gradient in float32."""
    op, x, attrs = case
    wide = gradients(op, [x], attrs)
    narrow = gradients(op, [x.astype(np.float32)], attrs)
    assert narrow["x0"].dtype == np.float32
    np.testing.assert_allclose(narrow["x0"], wide["x0"], rtol=2e-4, atol=2e-5)


# -- broadcasting binary and variadic ops -------------------------------------------------------
def test_one_cotangent_for_two_inputs() -> None:
    """Sum gives both inputs the very same cotangent value: two results, each named."""
    check_op("Sum", [normal((2, 3)), normal((2, 3), seed=1)])


SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)), ((2, 3), ())]


@pytest.mark.parametrize(("sx", "sy"), SHAPE_PAIRS)
def test_pow(sx: tuple[int, ...], sy: tuple[int, ...]) -> None:
    check_op("Pow", [uniform(0.3, 2.5, sx), uniform(-2, 2, sy, seed=1)])


@pytest.mark.parametrize("p", [2.0, 3.0, -1.0, 0.5])
def test_pow_constant_exponent(p: float) -> None:
    x = signed(0.3, 2, (2, 3)) if p == round(p) else uniform(0.3, 2, (2, 3))
    check_op("Pow", [x, np.array(p)], constants={1: np.array(p)})


def test_pow_integer_exponent() -> None:
    x = signed(0.3, 2, (2, 3))
    check_op("Pow", [x, np.array([2, 3, -1], np.int64)])


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize(("sx", "sy"), SHAPE_PAIRS)
def test_variadic_pair(op: str, sx: tuple[int, ...], sy: tuple[int, ...]) -> None:
    check_op(op, [normal(sx), normal(sy, seed=1)])


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_three(op: str) -> None:
    check_op(op, [normal((2, 3)), normal((3,), seed=1), normal((2, 1), seed=2)])


@pytest.mark.parametrize("slope_shape", [(2, 3), (3,), (1,), (), (2, 1)])
def test_prelu(slope_shape: tuple[int, ...]) -> None:
    check_op("PRelu", [away(normal((2, 3)), 0), uniform(0.05, 0.5, slope_shape, seed=1)])


@pytest.mark.parametrize("bound_shape", [(), (1,)])
def test_clip_both_bounds(bound_shape: tuple[int, ...]) -> None:
    x = away(normal((3, 4)) * 2, -0.5, 0.7)
    lo, hi = np.full(bound_shape, -0.5), np.full(bound_shape, 0.7)
    check_op("Clip", [x, lo, hi])


def test_clip_lower_bound_only() -> None:
    x = away(normal((3, 4)), -0.2)
    check_op("Clip", [x, np.array(-0.2)])
    check_op("Clip", [x, np.array(-0.2), None], constants={2: None})


def test_clip_upper_bound_only() -> None:
    x = away(normal((3, 4)), 0.3)
    check_op("Clip", [x, None, np.array(0.3)], constants={1: None})


def test_clip_constant_bounds() -> None:
    x = away(normal((3, 4)), -0.5, 0.5)
    check_op("Clip", [x, np.array(-0.5), np.array(0.5)], constants={1: np.array(-0.5)})
    check_op(
        "Clip",
        [x, np.array(-0.5), np.array(0.5)],
        constants={1: np.array(-0.5), 2: np.array(0.5)},
    )


def test_clip_crossed_bounds() -> None:
    """min > max: the output is max everywhere, so max takes every cotangent."""
    x = away(normal((3, 4)), 0.5, -0.5)
    got = check_op("Clip", [x, np.array(0.5), np.array(-0.5)])
    np.testing.assert_array_equal(got["x0"], 0)
    np.testing.assert_array_equal(got["x1"], 0)


# -- running sums --------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(axis: int, exclusive: int, reverse: int) -> None:
    axes = np.array(axis, np.int64)
    check_op(
        "CumSum",
        [normal((3, 4)), axes],
        {"exclusive": exclusive, "reverse": reverse},
        constants={1: axes},
    )


def test_cumsum_axis_at_run_time() -> None:
    check_op("CumSum", [normal((3, 4)), np.array([1], np.int64)], {"reverse": 1})


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_prefix_sum(axis: int, reverse: int) -> None:
    check_op("PrefixSum", [normal((3, 4))], {"axis": axis, "reverse": reverse})


# -- reductions ----------------------------------------------------------------------------------
REDUCTIONS: dict[str, Callable[..., Array]] = {
    # (shape, seed) -> an input away from each reduction's kinks and poles
    "ReduceSum": normal,
    "ReduceMean": normal,
    "ReduceMax": normal,
    "ReduceMin": normal,
    "ReduceProd": lambda shape, seed=0: signed(0.5, 1.5, shape, seed),
    "ReduceL1": lambda shape, seed=0: signed(0.1, 2, shape, seed),
    "ReduceL2": normal,
    "ReduceSumSquare": normal,
    "ReduceLogSum": lambda shape, seed=0: uniform(0.2, 2, shape, seed),
    "ReduceLogSumExp": normal,
}
AXES: list[list[int] | None] = [None, [], [1], [-1], [0, 2], [2, 0, -2]]


def _axes_id(axes: list[int] | None) -> str:
    return "none" if axes is None else "axes" + "_".join(map(str, axes))


# (axes, noop_with_empty_axes): noop matters only where no axes are listed
AXES_NOOP = [(axes, 0) for axes in AXES] + [(None, 1), ([], 1)]


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize(
    ("axes", "noop"), AXES_NOOP, ids=[f"{_axes_id(a)}-noop{n}" for a, n in AXES_NOOP]
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduction(op: str, axes: list[int] | None, noop: int, keepdims: int) -> None:
    x = REDUCTIONS[op]((2, 3, 4))
    attrs = {"keepdims": keepdims, "noop_with_empty_axes": noop}
    if axes is None:
        check_op(op, [x], attrs)
    else:
        listed = np.array(axes, np.int64)
        check_op(op, [x, listed], attrs, constants={1: listed})


# (axes fed, noop_with_empty_axes, keepdims, the axes' length known when building or not)
RUN_TIME_AXES = [
    (axes, noop, keepdims, length)
    for axes, noop in [([1], 0), ([0, -1], 0), ([], 0), ([], 1)]
    for keepdims in (0, 1)
    for length in ("static", "symbolic")
    # this case is test_reduction_empty_axes_of_unknown_length
    if (axes, noop, keepdims, length) != ([], 0, 0, "symbolic")
]


def reduction_with_axes_fed(
    op: str, x: Array, attrs: Mapping[str, Any], length: int | str
) -> tl.Model:
    """``op`` of ``x`` over axes fed as input ``axes`` of ``length`` (an int or a symbol), to
    ``loss``: sum(y^2), whose cotangents (2y) differ from entry to entry. Nothing whose rule
    needs y's rank (Mul: Builder.sum_to), which may be unknown here, follows."""
    g = Graph("reduce")
    em = Emitter(g)
    xv = g.add_input("x", TensorType(dtype(x.dtype), x.shape))
    av = g.add_input("axes", TensorType(dtype(np.int64), (length,)))
    y = em.op(op, [xv, av], dict(attrs))
    loss = em.op("ReduceSumSquare", [y], {"keepdims": 0})
    g.outputs = [g.result_named(loss, "loss")]
    return tl.Model(g)


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize(
    ("axes", "noop", "keepdims", "length"),
    RUN_TIME_AXES,
    ids=[f"{_axes_id(a)}-noop{n}-keep{k}-{s}" for a, n, k, s in RUN_TIME_AXES],
)
def test_reduction_axes_at_run_time(
    op: str, axes: list[int], noop: int, keepdims: int, length: str
) -> None:
    """Axes fed as an input (of a known length, or not): the output's shape, even its rank,
    may be known only when running."""
    x = REDUCTIONS[op]((2, 3, 4))
    attrs = {"keepdims": keepdims, "noop_with_empty_axes": noop}
    model = reduction_with_axes_fed(op, x, attrs, len(axes) if length == "static" else "n")
    check_model(model, {"x": x, "axes": np.array(axes, np.int64)}, ["x"])


def test_reduction_empty_axes_of_unknown_length() -> None:
    """No axes, fed, keepdims=0: the output is a scalar, which the rule unsqueezes by the empty
    axes (the compiled backend's Unsqueeze of a scalar by no axes is the scalar)."""
    x = normal((2, 3, 4))
    model = reduction_with_axes_fed("ReduceSum", x, {"keepdims": 0}, "n")
    check_model(model, {"x": x, "axes": np.zeros(0, np.int64)}, ["x"])


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_prod_with_zeros(keepdims: int) -> None:
    """One zero in a slice: its entry takes the product of the rest, the others 0; two zeros:
    all 0. Central differences are exact here (the product is linear in each entry)."""
    x = signed(0.5, 1.5, (3, 4))
    x[0, 1] = 0.0
    x[1, 0] = x[1, 3] = 0.0
    axes = np.array([1], np.int64)
    got = check_op("ReduceProd", [x, axes], {"keepdims": keepdims}, constants={1: axes})
    assert got["x0"][0, 1] != 0
    np.testing.assert_array_equal(got["x0"][1], 0)
    check_op("ReduceProd", [x], {"keepdims": keepdims})


# -- Hypothesis: random broadcastable shapes ------------------------------------------------------
def _data(shape: tuple[int, ...], seed: int, lo: float = -2.0, hi: float = 2.0) -> Array:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


@FEW
@given(
    op=st.sampled_from(["Add", "Sub", "Mul", "Max", "Min", "Sum", "Mean"]),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_binary(op: str, shapes: Any, seed: int) -> None:
    sx, sy = shapes.input_shapes
    check_op(op, [_data(sx, seed), _data(sy, seed + 1)])


@FEW
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
    op=st.sampled_from(["Max", "Min", "Sum", "Mean"]),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_variadic(shapes: Any, op: str, seed: int) -> None:
    check_op(op, [_data(s, seed + k) for k, s in enumerate(shapes.input_shapes)])


@FEW
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_pow(shapes: Any, seed: int) -> None:
    sx, sy = shapes.input_shapes
    check_op("Pow", [_data(sx, seed, 0.3, 2.5), _data(sy, seed + 1)])


@FEW
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_broadcasting_prelu(data: st.DataObject, seed: int) -> None:
    sx = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    # a slope that broadcasts one way, to x: a suffix of x's shape, some dims made 1
    rank = data.draw(st.integers(0, len(sx)))
    ones = data.draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    slope = tuple(1 if one else d for one, d in zip(ones, sx[len(sx) - rank :], strict=True))
    check_op("PRelu", [away(_data(sx, seed), 0), _data(slope, seed + 1, 0.05, 0.5)])


@FEW
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_random_reductions(data: st.DataObject, seed: int) -> None:
    op = data.draw(st.sampled_from(sorted(REDUCTIONS)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    keepdims = data.draw(st.integers(0, 1))
    x = REDUCTIONS[op](shape, seed)
    listed = np.array(axes, np.int64)
    check_op(op, [x, listed], {"keepdims": keepdims}, constants={1: listed})


# -- conventions where the derivative is undefined -----------------------------------------------
def gradients(
    op: str,
    inputs: Sequence[Array | None],
    attrs: Mapping[str, Any] | None = None,
    constants: Mapping[int, Array | None] | None = None,
) -> dict[str, Array]:
    """d sum(op(inputs)) / d each float input fed (``x<k>``)."""
    g = Graph("conventions")
    em = Emitter(g)
    constants = dict(constants or {})
    values: list[Any] = []
    feeds: dict[str, Array] = {}
    for k, x in enumerate(inputs):
        if k in constants or x is None:
            c = constants.get(k)
            values.append(None if c is None else em.const(c))
            continue
        x = np.asarray(x)
        values.append(g.add_input(f"x{k}", TensorType(dtype(x.dtype), x.shape)))
        feeds[f"x{k}"] = x
    y = em.op(op, values, dict(attrs or {}))
    g.outputs = [g.result_named(em.op("ReduceSum", [y], {"keepdims": 0}), "loss")]
    wrt = [name for name, x in feeds.items() if x.dtype.kind == "f"]
    out = tl.grad(tl.Model(g), of="loss", wrt=wrt).run(feeds)
    return {name: np.asarray(out[f"{name}.grad"]) for name in wrt}


def test_max_min_ties_go_to_the_first() -> None:
    a = np.array([1.0, 2.0, 5.0, 0.0])
    b = np.array([1.0, 3.0, 5.0, 0.0])
    c = np.array([0.0, 3.0, 5.0, 0.0])
    got = gradients("Max", [a, b, c])
    np.testing.assert_array_equal(got["x0"], [1, 0, 1, 1])
    np.testing.assert_array_equal(got["x1"], [0, 1, 0, 0])
    np.testing.assert_array_equal(got["x2"], [0, 0, 0, 0])
    got = gradients("Min", [c, a])
    np.testing.assert_array_equal(got["x0"], [1, 0, 1, 1])
    np.testing.assert_array_equal(got["x1"], [0, 1, 0, 0])


def test_max_tie_with_a_broadcast_input() -> None:
    """A broadcast input tied with a full one takes the tied entries, summed."""
    got = gradients("Max", [np.array([2.0]), np.array([2.0, 1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(got["x0"], [3])
    np.testing.assert_array_equal(got["x1"], [0, 0, 0, 1])


def test_max_nan_goes_to_the_nan_input() -> None:
    got = gradients("Max", [np.array([1.0, 2.0]), np.array([np.nan, 0.0])])
    np.testing.assert_array_equal(got["x0"], [0, 1])
    np.testing.assert_array_equal(got["x1"], [1, 0])


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_ties_share_equally(op: str) -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0], [2.0, 2.0, 2.0]])
    x = x if op == "ReduceMax" else -x
    axes = np.array([1], np.int64)
    got = gradients(op, [x, axes], {"keepdims": 0}, constants={1: axes})
    want = [[0, 0.5, 0.5], [0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]]
    np.testing.assert_allclose(got["x0"], want, rtol=1e-15)


@pytest.mark.parametrize(
    ("op", "attrs", "want"),
    [
        ("Relu", {}, 0.0),
        ("Abs", {}, 0.0),
        ("LeakyRelu", {"alpha": 0.1}, 1.0),
        ("Elu", {"alpha": 0.5}, 0.5),  # the forward's branch at 0: alpha * exp(0)
        ("Selu", {"alpha": 2.0, "gamma": 1.5}, 3.0),
        ("Celu", {}, 1.0),
        ("Softsign", {}, 1.0),
        ("ThresholdedRelu", {"alpha": 0.0}, 0.0),
    ],
)
def test_derivative_at_zero(op: str, attrs: dict[str, Any], want: float) -> None:
    got = gradients(op, [np.zeros(3)], attrs)
    np.testing.assert_array_equal(got["x0"], want)


def test_prelu_at_zero_is_one() -> None:
    got = gradients("PRelu", [np.zeros(3), np.array([0.25])])
    np.testing.assert_array_equal(got["x0"], 1)
    np.testing.assert_array_equal(got["x1"], 0)


@pytest.mark.parametrize(
    ("op", "attrs", "kink", "want"),
    [
        ("Shrink", {"lambd": 0.5}, 0.5, 0.0),
        ("Shrink", {"lambd": 0.5}, -0.5, 0.0),
        ("HardSigmoid", {"alpha": 0.25, "beta": 0.5}, 2.0, 0.0),
        ("HardSigmoid", {"alpha": 0.25, "beta": 0.5}, -2.0, 0.0),
        ("HardSwish", {}, 3.0, 1.0),
        ("HardSwish", {}, -3.0, 0.0),
        ("ThresholdedRelu", {"alpha": 1.0}, 1.0, 0.0),
    ],
)
def test_derivative_at_a_kink(op: str, attrs: dict[str, Any], kink: float, want: float) -> None:
    got = gradients(op, [np.full(2, kink)], attrs)
    np.testing.assert_array_equal(got["x0"], want)


def test_clip_at_its_bounds_passes_through() -> None:
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    got = gradients("Clip", [x, np.array(-0.5), np.array(0.5)])
    np.testing.assert_array_equal(got["x0"], [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(got["x1"], 1)
    np.testing.assert_array_equal(got["x2"], 1)


def test_clip_equal_bounds() -> None:
    """lo == hi: each element's cotangent goes to exactly one of x, lo, hi."""
    x = np.array([-1.0, 0.0, 1.0])
    got = gradients("Clip", [x, np.array(0.0), np.array(0.0)])
    np.testing.assert_array_equal(got["x0"], [0, 1, 0])
    np.testing.assert_array_equal(got["x1"], 1)
    np.testing.assert_array_equal(got["x2"], 1)


def test_pow_at_zero_base() -> None:
    x = np.zeros(3)
    got = gradients("Pow", [x, np.array([2.0, 0.0, 1.0])])
    np.testing.assert_array_equal(got["x0"], [0, 0, 1])
    np.testing.assert_array_equal(got["x1"], [0, 0, 0])


def test_reduce_l2_at_zero_is_zero() -> None:
    got = gradients("ReduceL2", [np.zeros((2, 3))], {"keepdims": 0})
    np.testing.assert_array_equal(got["x0"], 0)


def test_reduce_sum_noop_without_axes() -> None:
    """noop_with_empty_axes=1 and no axes: ReduceSum is the identity, keepdims or not."""
    x = normal((2, 3))
    for keepdims in (0, 1):
        got = gradients("ReduceSum", [x], {"keepdims": keepdims, "noop_with_empty_axes": 1})
        np.testing.assert_array_equal(got["x0"], np.ones((2, 3)))


# -- other element types -------------------------------------------------------------------------
def _axis(k: int) -> Array:
    return np.array([k], np.int64)


F32: list[tuple[str, list[Array], dict[str, Any], dict[int, Array]]] = [
    ("Pow", [uniform(0.3, 2, (2, 3)), uniform(-1, 1, (3,), 1)], {}, {}),
    ("PRelu", [away(normal((2, 3)), 0), uniform(0.05, 0.5, (3,), 1)], {}, {}),
    ("Max", [normal((2, 3)), normal((3,), 1)], {}, {}),
    ("Min", [normal((2, 3)), normal((2, 1), 1)], {}, {}),
    ("Sum", [normal((2, 3)), normal((3,), 1)], {}, {}),
    ("Mean", [normal((2, 3)), normal((3,), 1), normal((1, 3), 2)], {}, {}),
    ("Clip", [away(normal((2, 3)), -0.5, 0.5), np.array(-0.5), np.array(0.5)], {}, {}),
    ("CumSum", [normal((3, 4)), _axis(1)], {"exclusive": 1}, {1: _axis(1)}),
] + [
    (op, [make((2, 3, 4)), _axis(1)], {"keepdims": 0}, {1: _axis(1)})
    for op, make in sorted(REDUCTIONS.items())
]


@pytest.mark.parametrize("case", F32, ids=[case[0] for case in F32])
def test_float32_builds_and_agrees(
    case: tuple[str, list[Array], dict[str, Any], dict[int, Array]],
) -> None:
    op, inputs, attrs, constants = case
    wide = gradients(op, inputs, attrs, constants)
    narrow = gradients(
        op, [x.astype(np.float32) if x.dtype.kind == "f" else x for x in inputs], attrs, constants
    )
    for name, want in wide.items():
        assert narrow[name].dtype == np.float32
        np.testing.assert_allclose(narrow[name], want, rtol=2e-4, atol=2e-5, err_msg=name)


def test_pow_exponent_of_another_float_type() -> None:
    """A float32 exponent on a float64 base: each cotangent has its input's type."""
    x, p = uniform(0.3, 2, (2, 3)), uniform(-1, 1, (3,), 1).astype(np.float32)
    got = gradients("Pow", [x, p])
    p64 = p.astype(np.float64)
    assert got["x0"].dtype == np.float64 and got["x1"].dtype == np.float32
    np.testing.assert_allclose(got["x0"], p64 * x ** (p64 - 1), rtol=1e-12)
    np.testing.assert_allclose(got["x1"], np.sum(x**p64 * np.log(x), axis=0), rtol=1e-6)
