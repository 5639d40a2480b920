"""Elementwise ops: arithmetic, unary, comparison, logic, Where, Pow and broadcasting vs. NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ops_harness import FAST, NUMERIC, PAIRS, T, close, floating, infer, rand, run1
from tensorloop.errors import ExecutionError
from tensorloop.tensor.dtypes import dtype

# ---------------------------------------------------------------------------------------------
# Elementwise


@pytest.mark.parametrize("shapes", PAIRS)
@pytest.mark.parametrize("dt", NUMERIC)
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("Add", np.add),
        ("Sub", np.subtract),
        ("Mul", np.multiply),
        ("Max", np.maximum),
        ("Min", np.minimum),
    ],
)
def test_binary_arithmetic(op: str, ref: Callable[..., Any], dt: str, shapes: Any) -> None:
    a, b = rand(shapes[0], dt, 1), rand(shapes[1], dt, 2)
    wide = np.float64 if floating(a.dtype) else a.dtype  # wrapping integers stay narrow
    close(run1(op, [a, b]), ref(a.astype(wide), b.astype(wide)))


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint8"])
def test_integer_div_truncates_toward_zero(dt: str) -> None:
    a = np.array([7, -7, 7, -7, 6, 0, -1], dt if dt != "uint8" else np.int64)
    b = np.array([2, 2, -2, -2, 3, 5, 4], a.dtype)
    keep = (a >= 0) & (b > 0) if dt == "uint8" else np.ones(len(a), bool)
    a, b = a[keep].astype(dt), b[keep].astype(dt)
    pairs = zip(a.tolist(), b.tolist(), strict=True)
    want = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in pairs]
    close(run1("Div", [a, b]), np.array(want))


def test_integer_div_edge_cases() -> None:
    lowest = np.array([-128], np.int8)
    assert run1("Div", [lowest, np.array([-1], np.int8)]).tolist() == [-128]  # wraps, no warning
    with pytest.raises(ExecutionError, match="integer division by zero"):
        run1("Div", [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_float_div_and_log_give_ieee_specials_without_warnings(dt: str) -> None:
    x = np.array([1.0, -1.0, 0.0], dt)
    got = run1("Div", [x, np.zeros(3, dt)])
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    logs = run1("Log", [np.array([0.0, -1.0, 1.0], dt)])
    assert logs[0] == -np.inf and np.isnan(logs[1]) and logs[2] == 0
    assert np.isnan(run1("Sqrt", [np.array([-1.0], dt)])[0])
    assert run1("Exp", [np.array([1e4], dt)])[0] == np.inf
    assert run1("Sigmoid", [np.array([-1e4, 1e4], dt)]).tolist() == [0.0, 1.0]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("Sqrt", np.sqrt),
        ("Exp", np.exp),
        ("Log", np.log),
        ("Tanh", np.tanh),
        ("Sigmoid", _sigmoid),
        ("Neg", np.negative),
        ("Abs", np.abs),
        ("Relu", lambda x: np.maximum(x, 0)),
    ],
)
def test_unary_float(op: str, ref: Callable[..., Any], dt: str) -> None:
    x = np.abs(rand((3, 4), dt)) + 0.5 if op in ("Sqrt", "Log") else rand((3, 4), dt)
    x = x.astype(dtype(dt).numpy)
    assert infer(op, [T(dt, ["N", 4])]) == [f"{dtype(dt).short}[N,4]"]
    close(run1(op, [x]), ref(x.astype(np.float64)))


@pytest.mark.parametrize("dt", ["int8", "int64"])
def test_unary_integer(dt: str) -> None:
    x = np.array([-3, 0, 5, np.iinfo(dt).min], dt)
    assert run1("Neg", [x]).tolist() == [3, 0, -5, np.iinfo(dt).min]  # two's-complement wrap
    assert run1("Abs", [x]).tolist() == [3, 0, 5, np.iinfo(dt).min]
    assert run1("Relu", [x]).tolist() == [0, 0, 5, 0]


@pytest.mark.parametrize("shapes", PAIRS)
@pytest.mark.parametrize("dt", ["float32", "int32", "uint8", "bfloat16"])
@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("Equal", np.equal),
        ("Less", np.less),
        ("Greater", np.greater),
        ("LessOrEqual", np.less_equal),
        ("GreaterOrEqual", np.greater_equal),
    ],
)
def test_comparisons(op: str, ref: Callable[..., Any], dt: str, shapes: Any) -> None:
    a, b = rand(shapes[0], dt, 3), rand(shapes[1], dt, 3)  # one seed: some ties
    close(run1(op, [a, b]), ref(a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize(
    ("op", "ref"),
    [("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor), ("Equal", np.equal)],
)
def test_logic(op: str, ref: Callable[..., Any]) -> None:
    a, b = rand((2, 1, 3), "bool", 1), rand((4, 1), "bool", 2)
    close(run1(op, [a, b]), ref(a, b))
    close(run1("Not", [a]), ~a)


def test_variadic_min_max_and_nan() -> None:
    a = np.array([[1.0, np.nan, 3.0]], np.float32)
    b, c = np.array([[2.0], [0.5]], np.float32), np.float32(2.5) * np.ones(3, np.float32)
    assert infer("Max", [a, b, c]) == ["f32[2,3]"]
    close(run1("Max", [a, b, c]), np.maximum(np.maximum(a, b), c))
    close(run1("Min", [a, b, c]), np.minimum(np.minimum(a, b), c))
    assert np.isnan(run1("Max", [a])[0, 1])
    close(run1("Min", [b]), b)


def test_where() -> None:
    cond = np.array([[True], [False]])
    x, y = rand((1, 3), "int16", 1), rand((2, 1, 1), "int16", 2)
    assert infer("Where", [cond, x, y]) == ["i16[2,2,3]"]
    close(run1("Where", [cond, x, y]), np.where(cond, x, y))
    assert infer("Where", [T("bool", ["N", 1]), T("f32", [3]), T("f32", ["N", 3])]) == ["f32[N,3]"]


def test_pow() -> None:
    x = np.array([2.0, 4.0, -8.0, 0.0], np.float32)
    close(run1("Pow", [x, np.array([3.0, 0.5, 2.0, -1.0], np.float32)]), [8, 2, 64, np.inf])
    close(run1("Pow", [x, np.array([2], np.int64)]), x.astype(np.float64) ** 2)
    assert infer("Pow", [T("f16", ["N"]), T("i64", [])]) == ["f16[N]"]
    bf16 = x.astype(dtype("bf16").numpy)
    close(run1("Pow", [bf16, np.array([2.0], np.float32)]), x.astype(np.float64) ** 2)
    base = np.array([2, -2, 1, -1, -1, 3, 5], np.int32)
    exponent = np.array([3, 3, -4, -3, -2, -1, 0], np.int64)
    assert run1("Pow", [base, exponent]).tolist() == [8, -8, 1, -1, 1, 0, 1]
    assert run1("Pow", [np.array([9], np.int64), np.array([0.5], np.float32)]).tolist() == [3]
    with pytest.raises(ExecutionError, match="0 raised to a negative power"):
        run1("Pow", [np.array([0], np.int32), np.array([-1], np.int32)])


@FAST
@given(data=st.data())
def test_broadcasting_matches_numpy(data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3))
    op, ref = data.draw(
        st.sampled_from([("Add", np.add), ("Mul", np.multiply), ("Less", np.less)])
        | st.sampled_from([("Max", np.maximum), ("Equal", np.equal), ("Div", np.divide)])
    )
    elements = st.integers(-50, 50).filter(bool)  # no zero divisors
    a, b = (data.draw(hnp.arrays(np.int32, s, elements=elements)) for s in shapes.input_shapes)
    got = run1(op, [a, b])
    assert got.shape == shapes.result_shape
    if op == "Div":
        np.testing.assert_array_equal(got, np.trunc(a / b).astype(np.int32))
    else:
        np.testing.assert_array_equal(got, ref(a, b))


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (["N", 3], [1, 3], "f32[N,3]"),
        (["N", 1], [1, "M"], "f32[N,M]"),
        (["N"], ["M"], "f32[?]"),
        (["N"], [1], "f32[N]"),
        (["N"], [5], "f32[5]"),
        (None, [3], "f32[*]"),
        ([2, "?", 1], [4], "f32[2,?,4]"),
    ],
)
def test_broadcast_types(a: Any, b: Any, want: str) -> None:
    assert infer("Add", [T("f32", a), T("f32", b)]) == [want]
    assert infer("Less", [T("f32", a), T("f32", b)]) == [want.replace("f32", "bool")]
