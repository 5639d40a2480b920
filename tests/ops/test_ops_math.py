"""The maths and activation ops agree with onnxruntime on one-node models, and keep their laws."""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnx.backend.test.case.node as node_cases
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper

from onnx_oracle import assert_close, infer, is_float, one_node, ort_run, tensorloop_run
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.formats.onnx.backend import check_case
from tensorloop.ir.graph import Graph
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.dtypes import dtype
from tensorloop.tensor.types import TensorType, tensor_type_of

FAST = settings(max_examples=60, deadline=None)
ORT_OPSET = 26  # the newest onnxruntime 1.31 loads; newer node tests use the ONNX test data
FLOATS = ("float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
# rtol, atol by the element type the oracle computes in.
TOLERANCE = {
    "float16": (4e-3, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    # onnxruntime computes some f64 kernels (Shrink, Sin, ...) through f32
    "float64": (1e-6, 1e-9),
}


def np_dtype(name: str) -> np.dtype[Any]:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def wider_types(dt: np.dtype[Any]) -> list[type]:
    """Element types onnxruntime more often has kernels for, in which ``dt``'s values (the small
    ones these tests use) are exact."""
    if is_float(dt):
        return [np.float32]
    return {"i": [np.int64, np.float32], "u": [np.uint64, np.int64, np.float32]}.get(
        dt.kind, [np.int64]
    )


def oracle(
    op: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any], opset: int
) -> tuple[np.ndarray, str]:
    """onnxruntime's answer and the float type it computed in. Where it has no kernel for the
    element type, the inputs of that type run lifted to a wider one and the answer is cast back:
    exact for integers (wrapping is the same), one rounding for the narrow floats."""
    first = next(x for x in inputs if x is not None)
    try:
        return ort_run(one_node(op, inputs, attrs, opset=opset), inputs)[0], str(first.dtype)
    except Exception as exc:
        failure = exc
    for wide_type in wider_types(first.dtype):
        wide = [x if x is None or x.dtype != first.dtype else x.astype(wide_type) for x in inputs]
        try:
            (y,) = ort_run(one_node(op, wide, attrs, opset=opset), wide)
        except Exception:
            continue
        if y.dtype != bool and "dtype" not in attrs:
            with np.errstate(all="ignore"):
                y = y.astype(first.dtype)
        return y, "float32"
    raise failure


def run(
    op: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any], opset: int
) -> np.ndarray:
    """tensorloop's output of one ``op`` node."""
    return tensorloop_run(one_node(op, inputs, attrs, opset=opset), inputs)[0]


def same_as_onnxruntime(
    op: str,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    opset: int = ORT_OPSET,
) -> np.ndarray:
    attrs = attrs or {}
    got = run(op, inputs, attrs, opset)
    want, computed_in = oracle(op, inputs, attrs, opset)
    assert_close(got, want, TOLERANCE, computed_in)
    return got


RNG = np.random.default_rng(7)
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, 1.5, 2.5, -0.5, -2.5]


def floats(dt: str, lo: float, hi: float, shape: Sequence[int] = (3, 4)) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(np_dtype(dt))


def ints(dt: str, shape: Sequence[int] = (3, 4), lo: int = -50, hi: int = 50) -> np.ndarray:
    info = np.iinfo(np_dtype(dt))
    return RNG.integers(max(lo, info.min), min(hi, info.max), size=shape, endpoint=True).astype(dt)


# -- unary maths and activations ---------------------------------------------------------------

# op, attributes, input range, whether IEEE specials (and halves) join the input
UNARY: list[tuple[str, dict[str, Any], tuple[float, float], bool]] = [
    ("Acos", {}, (-1, 1), False),
    ("Acosh", {}, (1, 6), False),
    ("Asin", {}, (-1, 1), False),
    ("Asinh", {}, (-5, 5), False),
    ("Atan", {}, (-5, 5), True),
    ("Atanh", {}, (-0.99, 0.99), False),
    ("Cos", {}, (-6, 6), False),
    ("Cosh", {}, (-5, 5), False),
    ("Sin", {}, (-6, 6), False),
    ("Sinh", {}, (-5, 5), False),
    ("Tan", {}, (-1.4, 1.4), False),
    ("Erf", {}, (-4, 4), True),
    ("Floor", {}, (-5, 5), True),
    ("Ceil", {}, (-5, 5), True),
    ("Round", {}, (-5, 5), True),
    ("Sign", {}, (-5, 5), True),
    ("Reciprocal", {}, (0.2, 5), True),
    ("IsNaN", {}, (-5, 5), True),
    ("IsInf", {}, (-5, 5), True),
    ("IsInf", {"detect_negative": 0}, (-5, 5), True),
    ("IsInf", {"detect_positive": 0}, (-5, 5), True),
    ("Softplus", {}, (-8, 8), False),
    ("Softsign", {}, (-8, 8), False),
    ("Elu", {}, (-4, 4), False),
    ("Elu", {"alpha": 0.5}, (-4, 4), False),
    ("Selu", {}, (-4, 4), False),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, (-4, 4), False),
    ("Celu", {}, (-4, 4), False),
    ("Celu", {"alpha": 2.0}, (-4, 4), False),
    ("LeakyRelu", {}, (-4, 4), False),
    ("LeakyRelu", {"alpha": 0.2}, (-4, 4), False),
    ("ThresholdedRelu", {}, (-4, 4), False),
    ("ThresholdedRelu", {"alpha": 0.5}, (-4, 4), False),
    ("HardSigmoid", {}, (-6, 6), False),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (-6, 6), False),
    ("HardSwish", {}, (-6, 6), False),
    ("Mish", {}, (-6, 6), False),
    ("Gelu", {}, (-5, 5), False),
    ("Gelu", {"approximate": "tanh"}, (-5, 5), False),
    ("Shrink", {}, (-3, 3), False),
    ("Shrink", {"bias": 1.5, "lambd": 1.0}, (-3, 3), False),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize(
    ("op", "attrs", "span", "specials"), UNARY, ids=[f"{u[0]}{u[1] or ''}" for u in UNARY]
)
def test_unary_float_ops_match_onnxruntime(
    op: str, attrs: dict[str, Any], span: tuple[float, float], specials: bool, dt: str
) -> None:
    x = floats(dt, *span, shape=(24,))
    if specials:
        x[: len(SPECIALS)] = SPECIALS
    if op == "Sign":  # onnxruntime gives 0 for NaN; NaN in, NaN out (checked below) is kept
        x[np.isnan(x)] = 1
    same_as_onnxruntime(op, [x], attrs)


@pytest.mark.parametrize("dt", FLOATS)
def test_sign_of_nan_is_nan(dt: str) -> None:
    x = np.array([np.nan, -3, 0], np_dtype(dt))
    got = run("Sign", [x], {}, ORT_OPSET).astype(np.float64)
    np.testing.assert_array_equal(got, [np.nan, -1, 0])


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize(
    ("op", "attrs"),
    [("Sign", {}), ("Shrink", {}), ("Shrink", {"bias": 2.0, "lambd": 3.0}), ("BitwiseNot", {})],
)
def test_unary_integer_ops_match_onnxruntime(op: str, attrs: dict[str, Any], dt: str) -> None:
    same_as_onnxruntime(op, [ints(dt)], attrs)


def test_swish_is_x_times_sigmoid_of_alpha_x() -> None:
    # onnxruntime 1.31 has no Swish kernel: its defining formula runs there instead.
    x = floats("float32", -6, 6)
    nodes = [
        helper.make_node("Constant", [], ["a"], value_float=1.7),
        helper.make_node("Mul", ["x0", "a"], ["ax"]),
        helper.make_node("Sigmoid", ["ax"], ["s"]),
        helper.make_node("Mul", ["x0", "s"], ["y"]),
    ]
    xi = helper.make_tensor_value_info("x0", onnx.TensorProto.FLOAT, x.shape)
    graph = helper.make_graph(nodes, "swish", [xi], [helper.make_empty_tensor_value_info("y")])
    formula = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)], ir_version=10)
    got = run("Swish", [x], {"alpha": 1.7}, 24)
    np.testing.assert_allclose(got, ort_run(formula, [x])[0], rtol=1e-5, atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, 16, elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_erf_is_within_a_few_ulp_of_math_erf(x: np.ndarray) -> None:
    got = run("Erf", [x], {}, ORT_OPSET)
    want = np.array([math.erf(v) for v in x.tolist()])
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=1e-300)


@pytest.mark.parametrize(
    "dt", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2]
)
@pytest.mark.parametrize(
    ("op", "attrs"), [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_positive": 0})]
)
def test_isnan_and_isinf_take_float8(dt: type, op: str, attrs: dict[str, Any]) -> None:
    # Some float8 types have no inf (it saturates to NaN or the largest value); the f32 value of
    # each element decides, checked by onnxruntime.
    x = np.array([0, np.nan, np.inf, -np.inf, 3, -448], dt)
    got = run(op, [x], attrs, ORT_OPSET)
    np.testing.assert_array_equal(got, same_as_onnxruntime(op, [x.astype(np.float32)], attrs))


@FAST
@given(hnp.arrays(np.float64, 16, elements=st.floats(-1e6, 1e6)))
def test_round_takes_halves_to_even_like_python(x: np.ndarray) -> None:
    x = np.concatenate([x, np.round(x) + 0.5])
    got = run("Round", [x], {}, ORT_OPSET)
    np.testing.assert_array_equal(got, [float(round(v)) for v in x.tolist()])


# -- binary and variadic elementwise ops -------------------------------------------------------


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_ops_match_onnxruntime(op: str, dt: str) -> None:
    info = np.iinfo(np_dtype(dt))
    lo, hi = max(info.min, -(2**62)), min(info.max, 2**62)
    same_as_onnxruntime(op, [ints(dt, (2, 3, 4), lo, hi), ints(dt, (4,), lo, hi)])


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dt", UNSIGNED)
def test_unsigned_bit_shifts_match_onnxruntime(direction: str, dt: str) -> None:
    bits = np_dtype(dt).itemsize * 8
    x = ints(dt, (3, 4), 0, 2**62)
    y = ints(dt, (4,), 0, bits - 1)  # in range: wider lifted shifts keep the same low bits
    same_as_onnxruntime("BitShift", [x, y], {"direction": direction})


@FAST
@given(
    st.sampled_from(SIGNED + UNSIGNED),
    st.sampled_from(["LEFT", "RIGHT"]),
    st.lists(st.integers(-(2**63), 2**64 - 1), min_size=8, max_size=8),
    st.lists(st.integers(-70, 70), min_size=8, max_size=8),
)
def test_bit_shift_is_multiplying_or_flooring_by_a_power_of_two(
    dt: str, direction: str, xs: list[int], ys: list[int]
) -> None:
    info = np.iinfo(np_dtype(dt))
    bits = np_dtype(dt).itemsize * 8
    x = np.array([min(max(v, int(info.min)), int(info.max)) for v in xs], dt)
    y = np.array([max(v, 0) if info.min == 0 else v for v in ys]).astype(dt)
    got = run("BitShift", [x, y], {"direction": direction}, 28)
    want = []
    for a, b in zip(x.tolist(), y.tolist(), strict=True):
        if not 0 <= b < bits:
            want.append(-1 if direction == "RIGHT" and a < 0 else 0)
        else:
            want.append(wrap(a << b, dt) if direction == "LEFT" else a >> b)
    np.testing.assert_array_equal(got, np.array(want, dt))


def wrap(value: int, dt: str) -> int:
    """``value`` modulo 2**bits, read back as the integer type ``dt`` reads those bits."""
    bits = np_dtype(dt).itemsize * 8
    value %= 1 << bits
    return value - (1 << bits) if np_dtype(dt).kind == "i" and value >> (bits - 1) else value


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dt", INTS)
def test_integer_mod_matches_onnxruntime(fmod: int, dt: str) -> None:
    a = ints(dt, (3, 4), -100, 100)
    b = ints(dt, (4,), -9, 9)
    b[b == 0] = 3
    same_as_onnxruntime("Mod", [a, b], {"fmod": fmod})


@pytest.mark.parametrize("dt", FLOATS)
def test_float_fmod_matches_onnxruntime(dt: str) -> None:
    a, b = floats(dt, -20, 20), floats(dt, 0.5, 6, (4,)) * np.array([1, -1, 1, -1], np_dtype(dt))
    same_as_onnxruntime("Mod", [a, b], {"fmod": 1})


@FAST
@given(
    st.integers(0, 1),
    st.lists(st.floats(width=64), min_size=6, max_size=6),
    st.lists(st.floats(width=64), min_size=6, max_size=6),
)
def test_float_mod_is_python_percent_or_c_fmod(fmod: int, xs: list[float], ys: list[float]) -> None:
    got = run("Mod", [np.array(xs), np.array(ys)], {"fmod": fmod}, 28)
    for g, a, b in zip(got.tolist(), xs, ys, strict=True):
        try:
            want = math.fmod(a, b) if fmod else a % b
        except (ZeroDivisionError, ValueError):
            want = math.nan  # a 0 divisor or an infinite dividend
        assert g == want or (math.isnan(g) and math.isnan(want)), (a, b, g, want)
        if g == 0 and not math.isnan(want):
            assert math.copysign(1, g) == math.copysign(1, want)


def test_integer_mod_by_zero_fails() -> None:
    with pytest.raises(ExecutionError, match="modulo by zero"):
        run("Mod", [np.array([3, 4]), np.array([1, 0])], {}, ORT_OPSET)


@pytest.mark.parametrize("dt", [*FLOATS, "int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("slope_shape", [(5,), (4, 1), (1,), (3, 4, 5), ()])
def test_prelu_matches_onnxruntime(dt: str, slope_shape: tuple[int, ...]) -> None:
    if np_dtype(dt).kind == "u":
        x, slope = ints(dt, (3, 4, 5), 0, 50), ints(dt, slope_shape, 0, 5)
    elif np_dtype(dt).kind == "i":
        x, slope = ints(dt, (3, 4, 5)), ints(dt, slope_shape, -5, 5)
    else:
        x, slope = floats(dt, -5, 5, (3, 4, 5)), floats(dt, -1, 1, slope_shape)
    same_as_onnxruntime("PRelu", [x, slope])


def test_prelu_slope_must_broadcast_one_way() -> None:
    with pytest.raises(GraphError, match=r"slope f32\[2,4\] does not broadcast to x f32\[4\]"):
        infer("PRelu", [TensorType("f32", [4]), TensorType("f32", [2, 4])])


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("bounds", [(-2, 3), (None, 3), (-2, None), (None, None), (3, -2)])
def test_clip_matches_onnxruntime(dt: str, bounds: tuple[int | None, int | None]) -> None:
    x = floats(dt, -5, 5) if is_float(np_dtype(dt)) else ints(dt, lo=-5, hi=5)
    lo, hi = (None if b is None else np.array(b).astype(np_dtype(dt)) for b in bounds)
    if np_dtype(dt).kind == "u" and lo is not None:
        lo = np.array(1, dt)
    same_as_onnxruntime("Clip", [x, lo, hi])


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", ["Sum", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(3, 4), (4,)], [(2, 1, 4), (3, 1), (1,)]])
def test_sum_and_mean_match_onnxruntime(op: str, dt: str, shapes: list[tuple[int, ...]]) -> None:
    same_as_onnxruntime(op, [floats(dt, -5, 5, s) for s in shapes])


# -- ops along an axis, matrices, einsum -------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", ["LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_log_softmax_and_hardmax_match_onnxruntime(op: str, axis: int, dt: str) -> None:
    x = floats(dt, -30, 30, (2, 3, 4))
    if op == "Hardmax":
        x = np.round(x / 10).astype(x.dtype)  # ties: the first largest entry wins
    same_as_onnxruntime(op, [x], {"axis": axis})


@pytest.mark.parametrize("dt", [*FLOATS, *INTS])
@pytest.mark.parametrize(
    ("exclusive", "reverse", "axis"), [(0, 0, 0), (1, 0, -1), (0, 1, 1), (1, 1, -2)]
)
def test_cumprod_matches_onnxruntime(dt: str, exclusive: int, reverse: int, axis: int) -> None:
    x = floats(dt, 0.5, 2, (3, 5)) if is_float(np_dtype(dt)) else ints(dt, (3, 5), -3, 3)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    same_as_onnxruntime("CumProd", [x, np.array(axis, np.int64)], attrs)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2), (1, 1)])
def test_det_matches_onnxruntime(dt: str, shape: tuple[int, ...]) -> None:
    same_as_onnxruntime("Det", [floats(dt, -2, 2, shape)])


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ij->", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("ba", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (2, 3, 3, 4)]),
    ("bi,bi,bi->b", [(2, 3), (2, 3), (2, 3)]),
]


@pytest.mark.parametrize("dt", [*FLOATS, *INTS])
@pytest.mark.parametrize(("equation", "shapes"), EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_onnxruntime(equation: str, shapes: list[tuple[int, ...]], dt: str) -> None:
    xs = [floats(dt, -2, 2, s) if is_float(np_dtype(dt)) else ints(dt, s, -5, 5) for s in shapes]
    same_as_onnxruntime("Einsum", xs, {"equation": equation})


@pytest.mark.parametrize(
    ("equation", "explicit"),
    [(" i j , j k -> k i ", "ij,jk->ki"), ("Ab,bc", "Ab,bc->Ac"), ("zB,Bc,ca", "zB,Bc,ca->az")],
)
def test_einsum_spaces_and_implicit_outputs(equation: str, explicit: str) -> None:
    # onnxruntime refuses both spaces and upper-case labels in an implicit output, which the
    # spec allows; the implicit output is the labels used once, upper case first.
    xs = [floats("float32", -2, 2, (2, 3)), floats("float32", -2, 2, (3, 4))]
    if explicit.count(",") == 2:
        xs.append(floats("float32", -2, 2, (4, 2)))
    got = run("Einsum", xs, {"equation": equation}, ORT_OPSET)
    np.testing.assert_array_equal(got, np.einsum(explicit, *xs))


@pytest.mark.parametrize("dt", [*FLOATS, *INTS, "bool"])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
@pytest.mark.parametrize("shape", [(2, 4, 3), (0, 2)])
def test_trilu_matches_onnxruntime(dt: str, upper: int, k: int | None, shape: Any) -> None:
    x = RNG.integers(0, 9, shape).astype(np_dtype(dt))
    same_as_onnxruntime("Trilu", [x, None if k is None else np.array(k)], {"upper": upper})


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_of_strings_blanks_what_it_drops(upper: int) -> None:
    # onnxruntime has no string Trilu: the kept places come from the codes 1..n it keeps.
    codes = np.arange(1, 13).reshape(3, 4)
    words = np.array([f"w{c}" for c in codes.reshape(-1)], dtype=object).reshape(3, 4)
    k = np.array(1)
    kept = same_as_onnxruntime("Trilu", [codes, k], {"upper": upper}) != 0
    got = run("Trilu", [words, k], {"upper": upper}, ORT_OPSET)
    np.testing.assert_array_equal(got, np.where(kept, words, ""))


@pytest.mark.parametrize("dt", [*FLOATS, *INTS, "bool"])
@pytest.mark.parametrize("attrs", [{}, {"k": 1}, {"k": -2, "dtype": onnx.TensorProto.INT64}])
@pytest.mark.parametrize("shape", [(3, 4), (4, 2)])
def test_eye_like_matches_onnxruntime(dt: str, attrs: dict[str, Any], shape: Any) -> None:
    same_as_onnxruntime("EyeLike", [np.zeros(shape, np_dtype(dt))], attrs)


@FAST
@given(
    hnp.arrays(np.int32, hnp.array_shapes(min_dims=2, max_dims=4, max_side=5)),
    st.integers(-6, 6),
)
def test_upper_and_lower_triangles_add_up(x: np.ndarray, k: int) -> None:
    kk = np.array(k, np.int64)
    upper = run("Trilu", [x, kk], {"upper": 1}, ORT_OPSET)
    lower = run("Trilu", [x, kk - 1], {"upper": 0}, ORT_OPSET)
    np.testing.assert_array_equal(upper + lower, x)
    assert not np.any((upper != 0) & (lower != 0))


# -- old opsets, through the ONNX adapters -----------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize(
    ("opset", "axis"), [(7, None), (7, 0), (7, 2), (7, 3), (11, 1), (11, -1), (11, -3)]
)
def test_old_softmax_family_sees_a_matrix(opset: int, op: str, axis: int | None) -> None:
    x = np.round(floats("float32", -3, 3, (2, 3, 2, 2)))
    same_as_onnxruntime(op, [x], {} if axis is None else {"axis": axis}, opset)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("dims", [["N", "C", "H"], [2, "C", "H"], ["N", 3, 4]])
def test_old_softmax_family_with_dims_known_only_when_running(op: str, dims: list[Any]) -> None:
    x = np.round(floats("float32", -3, 3, (2, 3, 4)))
    model = one_node(op, [x], {"axis": 1}, opset=11)
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("x0", 1, dims))
    (got,) = tensorloop_run(model, [x])
    (want,) = ort_run(one_node(op, [x], {"axis": 1}, opset=11), [x])
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("opset", [7, 10])
@pytest.mark.parametrize("attrs", [{"min": -1.0, "max": 2.5}, {"min": 0.5}, {"max": -0.5}, {}])
def test_old_clip_takes_its_bounds_from_attributes(opset: int, attrs: dict[str, float]) -> None:
    same_as_onnxruntime("Clip", [floats("float32", -4, 4)], attrs, opset)


# -- type rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "types", "attrs", "want"),
    [
        ("Einsum", [("f32", ["N", 3]), ("f32", [3, "M"])], {"equation": "ij,jk->ik"}, "f32[N,M]"),
        ("Einsum", [("f32", [2, 3])], {"equation": "ij"}, "f32[2,3]"),
        ("Einsum", [("f32", [2, 3])], {"equation": "ji"}, "f32[3,2]"),
        ("Einsum", [("i8", [5, 1, 2, 3]), ("i8", [4, 3])], {"equation": "...j,kj"}, "i8[5,1,2,4]"),
        ("Einsum", [("f32", [4, "?"]), ("f32", [4])], {"equation": "ij,i->j"}, "f32[?]"),
        ("Einsum", [("f32", None)], {"equation": "ij->j"}, "f32[*]"),
        ("Det", [("f64", ["B", 3, 3])], {}, "f64[B]"),
        ("EyeLike", [("f32", [3, 4])], {"dtype": "i64"}, "i64[3,4]"),
        ("IsInf", [("f16", [2, "N"])], {}, "bool[2,N]"),
        ("Mean", [("f32", [2, 1]), ("f32", [3]), ("f32", [])], {}, "f32[2,3]"),
        ("Clip", [("u8", [4]), None, ("u8", [])], {}, "u8[4]"),
        ("CumProd", [("i32", [4, 5]), ("i64", [])], {}, "i32[4,5]"),
        ("Trilu", [("bool", [2, 3, 3])], {}, "bool[2,3,3]"),
    ],
)
def test_type_rules(op: str, types: list[Any], attrs: dict[str, Any], want: str) -> None:
    attrs = {k: dtype(v) if k == "dtype" else v for k, v in attrs.items()}
    got = infer(op, [None if t is None else TensorType(*t) for t in types], attrs)
    assert ", ".join(got) == want


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        ("Gelu", [("f32", [2])], {"approximate": "erf"}, "expected 'none' or 'tanh', got 'erf'"),
        ("BitShift", [("u8", [2])] * 2, {"direction": "UP"}, "expected 'LEFT' or 'RIGHT'"),
        ("Mod", [("i32", [2])] * 2, {"fmod": 2}, "attribute 'fmod' expected 0 or 1, got 2"),
        ("Erf", [("i32", [2])], {}, "input #0: expected a floating-point tensor, got i32[2]"),
        ("Erf", [("f8e4m3fn", [2])], {}, "Erf is not defined for f8e4m3fn, got f8e4m3fn[2]"),
        ("BitwiseNot", [("i4", [2])], {}, "BitwiseNot is not defined for i4"),
        ("EyeLike", [("f32", [2, 2])], {"dtype": "str"}, "EyeLike cannot make str"),
        ("BitwiseAnd", [("f32", [2])] * 2, {}, "expected an integer tensor, got f32[2]"),
        ("Sum", [("f32", [2]), ("f64", [2])], {}, "must share one element type"),
        ("Clip", [("f32", [2]), ("f32", [2])], {}, "input #1: expected a scalar, got f32[2]"),
        ("Det", [("f32", [2, 3])], {}, "matrices must be square, got f32[2,3]"),
        ("Det", [("f32", [3])], {}, "expected [*, M, M] matrices, got f32[3]"),
        ("Trilu", [("f32", [3])], {}, "expected [*, N, M] matrices, got f32[3]"),
        ("EyeLike", [("f32", [3, 3, 3])], {}, "expected a 2-D tensor, got f32[3,3,3]"),
        ("Hardmax", [("f32", [3, 3])], {"axis": 2}, "axis 2 is out of range for rank 2"),
        ("Einsum", [("f32", [2])], {"equation": "i,j"}, "has 2 terms for 1 inputs"),
        ("Einsum", [("f32", [2, 3])], {"equation": "i"}, "term 'i' does not fit input #0"),
        ("Einsum", [("f32", [2]), ("f32", [3])], {"equation": "i,i"}, "label 'i' has two sizes"),
        ("Einsum", [("f32", [2])], {"equation": "i->j"}, "repeats or invents a label"),
        ("Einsum", [("f32", [2])], {"equation": "1->"}, "bad term '1'"),
        ("Einsum", [("f32", [2, 3])], {"equation": "...i->i"}, "has no '...' in its output"),
    ],
)
def test_type_rule_errors(op: str, types: list[Any], attrs: dict[str, Any], message: str) -> None:
    attrs = {k: dtype(v) if k == "dtype" else v for k, v in attrs.items()}
    with pytest.raises(GraphError, match=message.replace("[", r"\[").replace("*", r"\*")):
        infer(op, [TensorType(*t) for t in types], attrs)


def test_kernels_check_what_types_could_not() -> None:
    g = Graph()
    x = g.add_input("x", TensorType("f32", ["?", "?"]))
    g.set_outputs(g.add_node("Det", [x], {}).outputs)
    with pytest.raises(ExecutionError, match=r"expected \[\*, M, M\] matrices, got shape \[2, 3\]"):
        Interpreter().run(g, [np.zeros((2, 3), np.float32)])
    bounds = [np.zeros(2, np.float32), tensor_type_of(np.zeros(2, np.float32))]
    g = Graph()
    v, lo = g.add_input("v", bounds[1]), g.add_input("lo", TensorType("f32", ["?"]))
    g.set_outputs(g.add_node("Clip", [v, lo], {}).outputs)
    with pytest.raises(ExecutionError, match="min must hold one value, got shape"):
        Interpreter().run(g, [bounds[0], bounds[0]])


# -- ONNX node tests onnxruntime cannot check (newer than it, or no kernel there) ----------------


def onnx_node_cases(*modules: str) -> list[Any]:
    """The ONNX node test cases that ``modules`` of onnx.backend.test.case.node define; importing
    just those is far quicker than collect_testcases, which builds all of them."""
    for name in modules:
        importlib.import_module(f"onnx.backend.test.case.node.{name}")
    return [
        c
        for c in node_cases._NodeTestCases
        if c.name.startswith(tuple(f"test_{m}" for m in modules))
    ]


NEWER_THAN_ORT = [
    c
    for c in onnx_node_cases("swish", "celu", "bitshift", "mod")
    if not c.name.endswith("_expanded")
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", NEWER_THAN_ORT, ids=[str(c.name) for c in NEWER_THAN_ORT])
def test_onnx_node_cases_beyond_onnxruntime(case: Any) -> None:
    check_case(case)
