"""MatMul, Gemm, Inverse, reductions, ArgMax, CumSum and Softmax vs. NumPy; type errors shared
by ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ops_harness import C, Input, T, build, close, floating, infer, rand, run, run1
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.tensor.dtypes import dtype

# ---------------------------------------------------------------------------------------------
# Linear algebra


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((1, 2, 3), (4, 3, 5)),
        ((2, 1, 2, 3), (3, 3, 2)),
        ((0, 3), (3, 2)),
    ],
)
@pytest.mark.parametrize("dt", ["float32", "float16", "int32"])
def test_matmul(sa: tuple[int, ...], sb: tuple[int, ...], dt: str) -> None:
    a, b = rand(sa, dt, 1), rand(sb, dt, 2)
    wide = np.float64 if floating(a.dtype) else np.int64
    close(run1("MatMul", [a, b]), np.matmul(a.astype(wide), b.astype(wide)))


@pytest.mark.parametrize(
    ("sa", "sb", "want"),
    [
        (["B", "M", "K"], ["K", "N"], "f32[B,M,N]"),
        (["M", "K"], ["K"], "f32[M]"),
        (["K"], [2, "K", 5], "f32[2,5]"),
        ([1, "M", 4], ["B", 4, 6], "f32[B,M,6]"),
        (None, [3, 4], "f32[*]"),
    ],
)
def test_matmul_types(sa: Any, sb: Any, want: str) -> None:
    assert infer("MatMul", [T("f32", sa), T("f32", sb)]) == [want]


@pytest.mark.parametrize("c_shape", [None, (), (4,), (2, 1), (1, 4), (2, 4)])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None) -> None:
    a = rand((2, 3)[:: -1 if trans_a else 1], "float32", 1)
    b = rand((3, 4)[:: -1 if trans_b else 1], "float32", 2)
    c = None if c_shape is None else rand(c_shape, "float32", 3)
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": 0.5, "beta": 2.0}
    a2, b2 = a.astype(np.float64), b.astype(np.float64)
    want = 0.5 * (a2.T if trans_a else a2) @ (b2.T if trans_b else b2)
    close(run1("Gemm", [a, b, c], attrs), want if c is None else want + 2.0 * c)


def test_gemm_integers_and_types() -> None:
    a, b = rand((2, 3), "int64", 1), rand((3, 2), "int64", 2)
    close(run1("Gemm", [a, b, np.int64(7) * np.ones(2, np.int64)]), a @ b + 7)
    assert infer("Gemm", [T("f32", ["M", "K"]), T("f32", ["N", "K"])], {"transB": 1}) == [
        "f32[M,N]"
    ]


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 1, 5, 5), (0, 2, 2), (2, 0, 0)])
@pytest.mark.parametrize("dt", ["float64", "float32", "float16", "bfloat16"])
def test_inverse(shape: tuple[int, ...], dt: str) -> None:
    n = shape[-1]
    x = (rand(shape, "float64", 3) + 3 * np.eye(n)).astype(dtype(dt).numpy)
    got = run1("Inverse", [x])
    assert got.dtype == x.dtype and got.shape == x.shape
    close(got, np.linalg.inv(x.astype(np.float64)))


def test_inverse_of_singular_matrices_is_nan() -> None:
    singular = [[1, 2, 3], [2, 4, 6], [0, 0, 1]]
    x = np.stack([np.eye(3), singular, np.zeros((3, 3))]).astype(np.float32)
    got = run1("Inverse", [x])
    np.testing.assert_array_equal(got[0], np.eye(3))
    assert np.isnan(got[1:]).all()


@pytest.mark.parametrize(
    ("shape", "want"),
    [(["B", "N", "N"], "f32[B,N,N]"), (None, "f32[*]"), ([2, 3, 3], "f32[2,3,3]")],
)
def test_inverse_types(shape: Any, want: str) -> None:
    assert infer("Inverse", [T("f32", shape)]) == [want]


# ---------------------------------------------------------------------------------------------
# Reductions


REDUCE_REFS: dict[str, Callable[..., Any]] = {
    "ReduceSum": np.sum,
    "ReduceMean": np.mean,
    "ReduceMax": np.max,
    "ReduceMin": np.min,
}


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axes", [None, [0], [-1], [0, 2], [2, -2, 0]])
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "int32", "uint8"])
@pytest.mark.parametrize("op", list(REDUCE_REFS))
def test_reductions(op: str, dt: str, axes: list[int] | None, keepdims: int) -> None:
    x = rand((2, 3, 4), dt)
    axis = None if axes is None else tuple(axes)
    want = REDUCE_REFS[op](x.astype(np.float64), axis=axis, keepdims=bool(keepdims))
    if op == "ReduceMean" and not floating(x.dtype):
        want = np.trunc(want)
    elif op == "ReduceSum" and not floating(x.dtype):
        want = np.sum(x, axis=axis, keepdims=bool(keepdims)).astype(x.dtype)  # wraps
    ins: list[Input] = [x] if axes is None else [x, C(axes)]
    close(run1(op, ins, {"keepdims": keepdims}), want)
    if axes is not None:
        close(run1(op, [x, np.array(axes, np.int64)], {"keepdims": keepdims}), want)
    assert infer(op, ins, {"keepdims": keepdims}) == [str(T(dt, np.shape(want)))]


def test_reductions_of_empty_sets() -> None:
    f, i, b = np.zeros((0, 2), np.float32), np.zeros((0, 2), np.int8), np.zeros((0, 2), bool)
    axis0 = C([0])
    assert run1("ReduceMax", [f, axis0]).tolist() == [[-np.inf, -np.inf]]
    assert run1("ReduceMin", [i, axis0], {"keepdims": 0}).tolist() == [127, 127]
    assert run1("ReduceMax", [b, axis0], {"keepdims": 0}).tolist() == [False, False]
    assert run1("ReduceSum", [i, axis0], {"keepdims": 0}).tolist() == [0, 0]
    assert np.isnan(run1("ReduceMean", [f, axis0])).all()
    assert run1("ReduceMean", [i, C([1])], {"keepdims": 0}).shape == (0,)
    with pytest.raises(ExecutionError, match="empty set of integers"):
        run("ReduceMean", [i, axis0])


def test_reduction_axes_options() -> None:
    x = rand((2, 3), "float64")
    empty = C([], np.int64)
    close(run1("ReduceSum", [x, empty], {"noop_with_empty_axes": 1}), x)
    close(run1("ReduceSum", [x, empty], {"keepdims": 0}), np.sum(x))
    close(run1("ReduceSum", [x], {"noop_with_empty_axes": 1}), x)
    close(run1("ReduceMean", [np.array([-7, 2], np.int32)]), [-2])  # -2.5 truncates toward 0
    assert infer("ReduceSum", [T("f64", ["N", 1, 3]), C([-1])]) == ["f64[N,1,1]"]
    assert infer("ReduceSum", [T("f64", ["N", 1, 3]), T("i64", [1])]) == ["f64[?,1,?]"]
    dyn = {"keepdims": 0}
    assert infer("ReduceSum", [T("f64", ["N", 1, 3]), T("i64", [2])], dyn) == ["f64[?]"]
    assert infer("ReduceSum", [T("f64", ["N", 1, 3]), T("i64", ["K"])], dyn) == ["f64[*]"]
    with pytest.raises(GraphError, match=r"axes \[0, -2\] name an axis twice"):
        build("ReduceSum", [x, C([0, -2])])
    with pytest.raises(ExecutionError, match=r"axes \[5\]: 5 is out of range for rank 2"):
        run("ReduceMax", [x, np.array([5], np.int64)])
    with pytest.raises(GraphError, match=r"input #0: expected a numeric tensor, got bool\[2\]"):
        build("ReduceSum", [np.zeros(2, bool)])


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("last", [0, 1])
def test_argmax(axis: int, keepdims: int, last: int) -> None:
    x = np.array([[1, 5, 5], [7, 0, 7]], np.float32)
    x = np.stack([x, x[::-1]], axis=-1)  # (2, 3, 2) with ties along every axis
    attrs = {"axis": axis, "keepdims": keepdims, "select_last_index": last}
    moved = np.moveaxis(x, axis, -1)
    want = np.empty(moved.shape[:-1], np.int64)
    for idx in np.ndindex(*moved.shape[:-1]):
        row = list(moved[idx])
        hits = [k for k, v in enumerate(row) if v == max(row)]
        want[idx] = hits[-1] if last else hits[0]
    want = np.expand_dims(want, axis) if keepdims else want
    close(run1("ArgMax", [x], attrs), want)
    with pytest.raises(GraphError, match="is empty"):
        build("ArgMax", [T("f32", [0, 2])])


@pytest.mark.parametrize(
    ("exclusive", "reverse", "want"),
    [(0, 0, [1, 3, 6, 10]), (1, 0, [0, 1, 3, 6]), (0, 1, [10, 9, 7, 4]), (1, 1, [9, 7, 4, 0])],
)
@pytest.mark.parametrize("dt", ["int32", "float32", "uint8", "bfloat16"])
def test_cumsum(exclusive: int, reverse: int, want: list[int], dt: str) -> None:
    attrs = {"exclusive": exclusive, "reverse": reverse}
    x = np.array([1, 2, 3, 4], dtype(dt).numpy)
    close(run1("CumSum", [x, C(0)], attrs), want)
    grid = np.stack([x, 10 * x])  # (2, 4): sum along axis 1 (= -1)
    close(
        run1("CumSum", [grid, np.array([-1], np.int32)], attrs),
        np.stack([want, np.multiply(10, want)]),
    )
    close(run1("CumSum", [np.zeros((2, 0), x.dtype), C(1)], attrs), np.zeros((2, 0)))


def test_cumsum_errors() -> None:
    with pytest.raises(GraphError, match=r"input #1: expected an integer scalar, got i64\[2\]"):
        build("CumSum", [T("f32", [3]), C([0, 0])])
    with pytest.raises(GraphError, match="axis 1 is out of range for rank 1"):
        build("CumSum", [T("f32", [3]), C(1)])
    with pytest.raises(ExecutionError, match="axis -2 is out of range for rank 1"):
        run("CumSum", [np.zeros(3), np.array(-2, np.int64)])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_softmax(axis: int, dt: str) -> None:
    x = rand((2, 3, 4), dt)
    x[0, 0, 0] = 50  # large, but no overflow
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=axis, keepdims=True))
    close(run1("Softmax", [x], {"axis": axis}), e / e.sum(axis=axis, keepdims=True))
    assert infer("Softmax", [T(dt, ["N", 3])]) == [f"{dtype(dt).short}[N,3]"]


# ---------------------------------------------------------------------------------------------
# Type errors shared across ops


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "match"),
    [
        ("Add", [T("f32", [3]), T("f32", [4])], {}, r"shapes do not broadcast: \[3\] vs \[4\]"),
        ("Add", [T("f32", [3]), T("i32", [3])], {}, r"must share one element type, got f32, i32"),
        ("Add", [T("bool", [3]), T("bool", [3])], {}, r"input #0: expected a numeric tensor"),
        ("Neg", [T("u8", [3])], {}, r"input #0: expected a signed numeric tensor, got u8\[3\]"),
        ("Sqrt", [T("i32", [3])], {}, r"expected a floating-point tensor, got i32\[3\]"),
        ("And", [T("f32", [3]), T("bool", [3])], {}, r"input #0: expected a bool tensor"),
        ("Less", [T("bool", [3]), T("bool", [3])], {}, r"expected a numeric tensor, got bool"),
        ("Where", [T("i32", [3]), T("f32", [3]), T("f32", [3])], {}, "expected a bool tensor"),
        ("MatMul", [T("f32", [2, 3]), T("f32", [4, 5])], {}, r"inner dims do not match"),
        ("MatMul", [T("f32", []), T("f32", [3])], {}, r"input #0: expected at least 1 dim"),
        ("Gemm", [T("f32", [2, 3, 1]), T("f32", [3, 4])], {}, r"expected a 2-D numeric tensor"),
        ("Gemm", [T("f32", [2, 3]), T("f32", [3, 4]), T("f32", [2])], {}, "does not broadcast"),
        ("Gemm", [T("f32", [2, 3]), T("f32", [2, 4])], {"transA": 0}, "inner dims do not match"),
        ("Softmax", [T("f32", [3])], {"axis": 1}, "axis 1 is out of range for rank 1"),
        ("Gather", [T("f32", [3])], {"axis": 0}, r"expected 2 inputs, got 1"),
        ("Concat", [T("f32", [3])], {}, "missing required attribute 'axis'"),
        ("Cast", [T("f32", [3])], {"to": "int32"}, "attribute 'to' expected DType"),
        ("ReduceMax", [T("f32", [3]), C([1])], {}, r"axes \[1\]: 1 is out of range"),
        ("Inverse", [T("f32", [2, 3])], {}, r"matrices must be square, got f32\[2,3\]"),
        ("Inverse", [T("f32", [3])], {}, r"expected \[\*, M, M\] matrices"),
        ("Inverse", [T("i32", [3, 3])], {}, r"input #0 \(matrices\): expected one of"),
    ],
)
def test_type_errors(op: str, inputs: list[Input], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(GraphError, match=match):
        build(op, inputs, attrs)
