"""The tensor ops: type rules and reference kernels agree with NumPy and with ONNX semantics."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tensorloop.backends.reference.interpreter import Interpreter
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.ir.graph import Graph, Node
from tensorloop.tensor.dtypes import DType, dtype
from tensorloop.tensor.types import TensorType, tensor_type_of

FAST = settings(max_examples=60, deadline=None)
T = TensorType
I64_MAX = 2**63 - 1


class C:
    """An input fed by a Constant node, so that type rules can read its value."""

    def __init__(self, value: Any, dtype_: Any = np.int64) -> None:
        self.value = np.asarray(value, dtype_)


def dyn(x: np.ndarray) -> tuple[TensorType, np.ndarray]:
    """An array fed through a parameter of unknown dims, so only the kernel sees its shape."""
    return T(x.dtype, ["?"] * x.ndim), x


Input = np.ndarray | TensorType | C | tuple[TensorType, np.ndarray] | None


def build(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> Node:
    """A graph holding one ``op`` node; arrays and types become parameters, C values constants."""
    g = Graph()
    values = []
    for i, x in enumerate(inputs):
        if x is None:
            values.append(None)
        elif isinstance(x, C):
            values.append(g.add_node("Constant", [], {"value": x.value}).output)
        elif isinstance(x, tuple):
            values.append(g.add_input(f"x{i}", x[0]))
        else:
            values.append(
                g.add_input(f"x{i}", x if isinstance(x, TensorType) else tensor_type_of(x))
            )
    node = g.add_node(op, values, attrs or {})
    g.set_outputs(node.outputs)
    return node


def run(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
    """Run one ``op`` node; every output must fit the type its rule inferred."""
    node = build(op, inputs, attrs)
    assert node.graph is not None
    args = [
        x[1] if isinstance(x, tuple) else x for x in inputs if isinstance(x, np.ndarray | tuple)
    ]
    outs = Interpreter().run(node.graph, args)
    for value, out in zip(node.outputs, outs, strict=True):
        assert isinstance(value.type, TensorType) and value.type.accepts(out), (value.type, out)
    return outs


def run1(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> np.ndarray:
    (out,) = run(op, inputs, attrs)
    return out


def infer(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> list[str]:
    return [str(v.type) for v in build(op, inputs, attrs).outputs]


def floating(dt: Any) -> bool:
    return dtype(dt).is_float


def rand(shape: Sequence[int], dt: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    npd = dtype(dt).numpy
    if floating(npd):
        return rng.normal(0, 3, shape).astype(npd)
    if npd.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0 if npd.kind == "u" else -9, 10, shape).astype(npd)


def close(got: np.ndarray, want: np.ndarray, dt: Any = None) -> None:
    """Equal dtype and shape, values equal up to the precision of the element type."""
    want = np.asarray(want).astype(got.dtype if dt is None else dtype(dt).numpy)
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol = {"f16": 2e-3, "bf16": 1e-2, "f32": 2e-6, "f64": 1e-12}.get(dtype(got.dtype).short, 0)
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol
    )


NUMERIC = ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8"]
PAIRS = [((2, 3), (3,)), ((1, 3), (2, 1)), ((0, 3), (1, 3)), ((), (4,))]

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


# ---------------------------------------------------------------------------------------------
# Shapes


@pytest.mark.parametrize(
    ("shape", "target", "allowzero", "want"),
    [
        ((2, 3, 4), [0, -1], 0, (2, 12)),
        ((2, 3, 4), [-1], 0, (24,)),
        ((2, 3, 4), [4, 0, 2], 0, (4, 3, 2)),
        ((2, 3, 4), [4, 6], 1, (4, 6)),
        ((0, 3), [3, 0], 1, (3, 0)),
        ((0, 3), [0, 3], 0, (0, 3)),
        ((), [1, 1], 0, (1, 1)),
        ((1, 1), [], 0, ()),
    ],
)
def test_reshape(shape: Any, target: list[int], allowzero: int, want: tuple[int, ...]) -> None:
    x = rand(shape, "float32")
    attrs = {"allowzero": allowzero}
    static = run1("Reshape", [x, C(target)], attrs)
    dynamic = run1("Reshape", [x, np.array(target, np.int64)], attrs)
    for got in (static, dynamic):
        close(got, x.reshape(want))
    assert infer("Reshape", [x, C(target)], attrs) == [str(T("f32", want))]
    assert infer("Reshape", [x, T("i64", [len(target)])], attrs) == [
        str(T("f32", ["?"] * len(target)))
    ]


@pytest.mark.parametrize(
    ("shape", "target", "want"),
    [
        (["N", 3, 4], [0, -1], "f32[N,12]"),
        (["N", 3, 4], [-1, 12], "f32[N,12]"),
        (["N", 3, 4], [-1, 4], "f32[?,4]"),
        (["N", 3, 4], [0, 12], "f32[N,12]"),
        ([2, "N"], [-1], "f32[?]"),
        (["?", 6], [0, 2, -1], "f32[?,2,3]"),
        (["?", 6], [-1, 6], "f32[?,6]"),
        (None, [0, 5, -1], "f32[?,5,?]"),
        ([6, 4], [3, -1, 2], "f32[3,4,2]"),
    ],
)
def test_reshape_types(shape: Any, target: list[int], want: str) -> None:
    assert infer("Reshape", [T("f32", shape), C(target)]) == [want]


@pytest.mark.parametrize(
    ("shape", "target", "match"),
    [
        ([2, 3], [4], r"cannot reshape 6 elements into \[4\]"),
        ([2, 3], [-1, -1], "more than one -1"),
        ([2, 3], [-2, 3], "negative size"),
        ([2, 3], [0, 0, 0], "copies a dim"),
        (["N", 3], [0, 2], r"cannot reshape 3\*N elements into \[0, 2\]"),
        ([0, 3], [0, -1], "cannot infer the -1"),
    ],
)
def test_reshape_errors(shape: Any, target: list[int], match: str) -> None:
    with pytest.raises(GraphError, match=match):
        build("Reshape", [T("f32", shape), C(target)])
    if all(isinstance(d, int) for d in shape):
        with pytest.raises(ExecutionError, match=match):
            run("Reshape", [np.zeros(shape, np.float32), np.array(target, np.int64)])


@pytest.mark.parametrize("perm", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_transpose(perm: tuple[int, ...] | None) -> None:
    x = rand((2, 3, 4), "int64")
    attrs = {} if perm is None else {"perm": perm}
    close(run1("Transpose", [x], attrs), np.transpose(x, perm))
    dims = ["A", "B", "C"]
    order = perm or (2, 1, 0)
    assert infer("Transpose", [T("i64", dims)], attrs) == [
        f"i64[{','.join(dims[i] for i in order)}]"
    ]


def test_transpose_rejects_bad_perm() -> None:
    with pytest.raises(GraphError, match=r"perm \[0, 0\] is not a permutation of rank 2"):
        build("Transpose", [T("f32", [2, 3])], {"perm": (0, 0)})
    with pytest.raises(GraphError, match="not a permutation of rank 3"):
        build("Transpose", [T("f32", [2, 3, 4])], {"perm": [0, 1]})


@pytest.mark.parametrize(
    ("shape", "axes", "want"),
    [
        ((1, 3, 1), [0], (3, 1)),
        ((1, 3, 1), [-1, 0], (3,)),
        ((1, 3, 1), None, (3,)),
        ((1, 1), [], ()),
        ((2, 0, 1), [2], (2, 0)),
    ],
)
def test_squeeze(shape: Any, axes: list[int] | None, want: tuple[int, ...]) -> None:
    x = rand(shape, "float32")
    for ax in [None] if axes is None else [C(axes), np.array(axes, np.int64)]:
        close(run1("Squeeze", [x, ax]), x.reshape(want))
    assert infer("Squeeze", [x] if axes is None else [x, C(axes)]) == [str(T("f32", want))]


def test_squeeze_types_and_errors() -> None:
    assert infer("Squeeze", [T("f32", ["N", 1, 3]), C([1])]) == ["f32[N,3]"]
    assert infer("Squeeze", [T("f32", ["N", 1, 3])]) == ["f32[*]"]  # N might be 1
    assert infer("Squeeze", [T("f32", ["N", 1, 3]), T("i64", [1])]) == ["f32[?,?]"]
    with pytest.raises(GraphError, match=r"cannot squeeze axis 1 of f32\[1,3\]: its size is 3"):
        build("Squeeze", [T("f32", [1, 3]), C([1])])
    with pytest.raises(ExecutionError, match="cannot squeeze axis 1"):
        run("Squeeze", [np.zeros((1, 3)), np.array([1], np.int64)])
    with pytest.raises(GraphError, match=r"axes \[2\]: 2 is out of range for rank 2"):
        build("Squeeze", [T("f32", [1, 1]), C([2])])


@pytest.mark.parametrize(
    ("shape", "axes", "want"),
    [
        ((3,), [0], (1, 3)),
        ((3,), [-1], (3, 1)),
        ((2, 3), [0, 3], (1, 2, 3, 1)),
        ((), [0, 1], (1, 1)),
        ((2, 3), [1], (2, 1, 3)),
        ((2,), [2, 0], (1, 2, 1)),
    ],
)
def test_unsqueeze(shape: Any, axes: list[int], want: tuple[int, ...]) -> None:
    x = rand(shape, "int8")
    close(run1("Unsqueeze", [x, C(axes)]), x.reshape(want))
    close(run1("Unsqueeze", [x, np.array(axes, np.int64)]), x.reshape(want))
    assert infer("Unsqueeze", [x, C(axes)]) == [str(T("i8", want))]


def test_unsqueeze_types_and_errors() -> None:
    assert infer("Unsqueeze", [T("f32", ["N", 3]), C([0, -1])]) == ["f32[1,N,3,1]"]
    assert infer("Unsqueeze", [T("f32", ["N", 3]), T("i64", [2])]) == ["f32[?,?,?,?]"]
    with pytest.raises(GraphError, match="name an axis twice"):
        build("Unsqueeze", [T("f32", [3]), C([0, 0])])
    with pytest.raises(GraphError, match=r"input #1: expected a 1-D integer tensor, got f32\[1\]"):
        build("Unsqueeze", [T("f32", [3]), C([0], np.float32)])


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat(axis: int) -> None:
    parts = [rand((2, 3), "float64", 1), rand((2, 3), "float64", 2), rand((2, 3), "float64", 3)]
    if axis in (0, -2):
        parts[1] = rand((0, 3), "float64")
    close(run1("Concat", parts, {"axis": axis}), np.concatenate(parts, axis=axis))


def test_concat_types_and_errors() -> None:
    def concat(*shapes: Any, axis: int = 0) -> str:
        return infer("Concat", [T("f32", s) for s in shapes], {"axis": axis})[0]

    assert concat(["N", 3], [2, 3]) == "f32[?,3]"
    assert concat([4, "N"], [2, "N"], axis=0) == "f32[6,N]"
    assert concat([4, "N"], [2, 5], axis=0) == "f32[6,5]"
    assert concat([0, 3], ["N", 3]) == "f32[N,3]"
    assert concat([4, "N"], [2, "M"]) == "f32[6,?]"
    assert concat(None, [2, 3], axis=-1) == "f32[2,?]"
    with pytest.raises(GraphError, match=r"differ off the concat axis 0: \[2, 3\] vs \[2, 4\]"):
        concat([2, 3], [2, 4])
    with pytest.raises(GraphError, match="differ in rank"):
        concat([2, 3], [2])
    with pytest.raises(GraphError, match="must share one element type"):
        build("Concat", [T("f32", [1]), T("f64", [1])], {"axis": 0})
    with pytest.raises(ExecutionError, match="off the concat axis"):
        run("Concat", [dyn(np.zeros((2, 3))), dyn(np.zeros((2, 4)))], {"axis": 0})


@pytest.mark.parametrize(
    ("size", "parts", "want"),
    [(6, 3, [2, 2, 2]), (7, 3, [3, 3, 1]), (4, 3, [2, 2, 0]), (5, 1, [5]), (0, 2, [0, 0])],
)
def test_split_num_outputs(size: int, parts: int, want: list[int]) -> None:
    x = rand((2, size), "float32")
    outs = run("Split", [x], {"axis": -1, "num_outputs": parts})
    assert [o.shape[1] for o in outs] == want
    close(np.concatenate(outs, axis=1), x)
    assert infer("Split", [x], {"axis": 1, "num_outputs": parts}) == [f"f32[2,{n}]" for n in want]


def test_split_sizes_and_errors() -> None:
    x = rand((5, 2), "int32")
    for sizes in (C([1, 4]), np.array([1, 4], np.int64)):
        a, b = run("Split", [x, sizes])
        close(a, x[:1])
        close(b, x[1:])
    assert infer("Split", [T("i32", ["N", 2]), C([1, 0, 3])]) == [
        "i32[1,2]",
        "i32[0,2]",
        "i32[3,2]",
    ]
    assert infer("Split", [T("i32", ["N"])], {"num_outputs": 2}) == ["i32[?]", "i32[?]"]
    with pytest.raises(GraphError, match="exactly one of the split input and the num_outputs"):
        build("Split", [x])
    with pytest.raises(GraphError, match=r"split sizes \[1, 3\] sum to 4, but axis 0"):
        build("Split", [x, C([1, 3])])
    with pytest.raises(GraphError, match="cannot split 5 into 4 parts"):
        build("Split", [x], {"num_outputs": 4})
    with pytest.raises(ExecutionError, match=r"split sizes \[2, 2\] do not cut axis 0 of size 5"):
        run("Split", [x, np.array([2, 2], np.int64)])


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps", "want"),
    [
        ([1], [3], None, None, np.s_[1:3]),
        ([0, 1], [I64_MAX, -1], None, None, np.s_[:, 1:-1]),
        ([-1], [-I64_MAX], [1], [-1], np.s_[:, ::-1]),
        ([-10], [10], [-1], [2], np.s_[:, ::2]),
        ([3], [0], [0], [-2], np.s_[3:0:-2]),
        ([5], [1], [0], None, np.s_[5:1]),
        ([-100], [-100], [1], [-1], np.s_[:, 0:1]),  # ONNX clamps start to 0, not "before 0"
        ([2, 0], [3, 2], [1, 0], [1, 1], np.s_[0:2, 2:3]),
    ],
)
def test_slice(starts: Any, ends: Any, axes: Any, steps: Any, want: Any) -> None:
    x = rand((4, 5), "float32")
    extra = [axes, steps] if steps is not None else [axes] if axes is not None else []
    consts = [C(starts), C(ends), *[None if v is None else C(v) for v in extra]]
    dynamic = [None if v is None else np.array(v, np.int64) for v in [starts, ends, *extra]]
    close(run1("Slice", [x, *consts]), x[want])
    close(run1("Slice", [x, *dynamic]), x[want])
    assert infer("Slice", [x, *consts]) == [str(T("f32", x[want].shape))]


@FAST
@given(
    n=st.integers(0, 6),
    start=st.integers(-9, 9),
    end=st.integers(-9, 9) | st.sampled_from([I64_MAX, -I64_MAX]),
    step=st.integers(-3, 3).filter(bool),
)
def test_slice_matches_python_slicing(n: int, start: int, end: int, step: int) -> None:
    if step < 0:
        start = max(start, -n)  # below -n, Python means "before 0", ONNX clamps to 0
    x = np.arange(n, dtype=np.int64)
    got = run1("Slice", [x, C([start]), C([end]), None, C([step])])
    np.testing.assert_array_equal(got, x[start:end:step])


def test_slice_types() -> None:
    x = T("f32", ["N", "M", 4])
    full, rev = [C([0]), C([I64_MAX])], [C([-1]), C([-I64_MAX - 1]), C([0]), C([-1])]
    assert infer("Slice", [x, *full]) == ["f32[N,M,4]"]
    assert infer("Slice", [x, *rev]) == ["f32[N,M,4]"]
    assert infer("Slice", [x, C([1]), C([3]), C([2])]) == ["f32[N,M,2]"]
    assert infer("Slice", [x, C([1]), C([3]), C([1])]) == ["f32[N,?,4]"]
    assert infer("Slice", [x, T("i64", [1]), C([3]), C([2])]) == ["f32[N,M,?]"]
    assert infer("Slice", [x, C([0]), C([1]), T("i64", [1])]) == ["f32[?,?,?]"]
    with pytest.raises(GraphError, match=r"steps \[0\] hold a 0"):
        build("Slice", [x, C([0]), C([1]), None, C([0])])
    with pytest.raises(GraphError, match="differ in length"):
        build("Slice", [x, C([0, 1]), C([1])])
    with pytest.raises(ExecutionError, match="steps must be non-zero"):
        run("Slice", [np.zeros(3), *(np.array([v], np.int64) for v in (0, 3, 0, 0))])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(axis: int) -> None:
    x = rand((3, 4, 2), "float32")
    n = x.shape[axis]
    for indices in (np.array([[0, n - 1], [-1, -n]], np.int64), np.array(1, np.int32)):
        want = np.take(x, np.where(indices < 0, indices + n, indices), axis=axis)
        close(run1("Gather", [x, indices], {"axis": axis}), want)
    assert infer("Gather", [T("f32", ["A", "B"]), T("i64", ["K", 2])], {"axis": 1}) == [
        "f32[A,K,2]"
    ]
    with pytest.raises(ExecutionError, match=f"index {n} is out of range for axis"):
        run("Gather", [x, np.array([0, n], np.int64)], {"axis": axis})
    with pytest.raises(GraphError, match=r"input #1: expected an integer tensor, got f32\[2\]"):
        build("Gather", [x, T("f32", [2])])


@pytest.mark.parametrize(
    ("shape", "target"),
    [((3, 1), [2, 1, 4]), ((3, 1), [1]), ((1,), [0]), ((2, 1, 3), [2, 5, 1]), ((), [2, 2])],
)
def test_expand(shape: Any, target: list[int]) -> None:
    x = rand(shape, "int16")
    want = x * np.ones(target, np.int16)
    close(run1("Expand", [x, C(target)]), want)
    close(run1("Expand", [x, np.array(target, np.int64)]), want)
    assert infer("Expand", [x, C(target)]) == [str(T("i16", want.shape))]


def test_expand_types_and_errors() -> None:
    assert infer("Expand", [T("f32", ["N", 1]), C([1, 5])]) == ["f32[N,5]"]
    assert infer("Expand", [T("f32", [3, 1]), T("i64", [3])]) == ["f32[?,3,?]"]
    with pytest.raises(GraphError, match=r"shapes do not broadcast: \[3\] vs \[4\]"):
        build("Expand", [T("f32", [3]), C([4])])
    with pytest.raises(ExecutionError, match=r"cannot expand shape \[3\] to \[4\]"):
        run("Expand", [np.zeros(3), np.array([4], np.int64)])


@pytest.mark.parametrize(
    ("start", "end", "want"),
    [
        (0, None, [2, 3, 4]),
        (1, None, [3, 4]),
        (-1, None, [4]),
        (0, -1, [2, 3]),
        (5, None, []),
        (-9, 2, [2, 3]),
    ],
)
def test_shape_and_size(start: int, end: int | None, want: list[int]) -> None:
    x = np.zeros((2, 3, 4), np.uint8)
    got = run1("Shape", [x], {"start": start, "end": end})
    assert got.dtype == np.int64 and got.tolist() == want
    assert infer("Shape", [T("u8", ["N", 3, 4])], {"start": start, "end": end}) == [
        f"i64[{len(want)}]"
    ]
    assert run1("Size", [x]).tolist() == 24 and infer("Size", [x]) == ["i64[]"]
    assert infer("Shape", [T("u8", None)]) == ["i64[?]"]


def test_constant_of_shape() -> None:
    got = run1("ConstantOfShape", [C([2, 3])])
    assert got.dtype == np.float32 and got.shape == (2, 3) and not got.any()
    value = {"value": np.array([7], np.int64)}
    assert run1("ConstantOfShape", [np.array([2, 0], np.int64)], value).tolist() == [[], []]
    assert run1("ConstantOfShape", [C([], np.int64)], value).tolist() == 7
    assert infer("ConstantOfShape", [C([4, 1])], value) == ["i64[4,1]"]
    assert infer("ConstantOfShape", [T("i64", [3])]) == ["f32[?,?,?]"]
    with pytest.raises(GraphError, match="value must hold one element"):
        build("ConstantOfShape", [C([2])], {"value": np.zeros(2, np.float32)})
    with pytest.raises(ExecutionError, match="negative size"):
        run("ConstantOfShape", [np.array([-1], np.int64)])


@pytest.mark.parametrize(
    ("start", "limit", "delta", "dt"),
    [
        (0, 5, 1, "int64"),
        (1, 10, 3, "int32"),
        (10, 1, -3, "int16"),
        (5, 0, 1, "int64"),
        (0.0, 1.0, 0.25, "float32"),
        (1.0, -1.0, -0.3, "float64"),
        (0.5, 0.5, 1.0, "float32"),
        (0.0, 2.0, 0.5, "bfloat16"),
        (3.0, 0.0, -1.5, "float16"),
    ],
)
def test_range(start: Any, limit: Any, delta: Any, dt: str) -> None:
    n = max(math.ceil((limit - start) / delta), 0)
    npd = dtype(dt).numpy
    want = np.array([start + i * delta for i in range(n)], npd)
    scalars = [np.array(v, npd) for v in (start, limit, delta)]
    close(run1("Range", scalars), want)
    assert infer("Range", [C(v, npd) for v in (start, limit, delta)]) == [str(T(dt, [n]))]
    assert infer("Range", scalars) == [str(T(dt, ["?"]))]


def test_range_errors() -> None:
    with pytest.raises(ExecutionError, match="delta is 0"):
        run("Range", [np.array(v, np.int64) for v in (0, 5, 0)])
    with pytest.raises(GraphError, match="delta is 0"):
        build("Range", [C(v) for v in (0, 5, 0)])
    with pytest.raises(GraphError, match=r"input #2: expected a numeric scalar, got i64\[2\]"):
        build("Range", [C(0), C(5), C([1, 1])])
    with pytest.raises(ExecutionError, match=r"delta must hold one value, got shape \[2\]"):
        run("Range", [np.array(0), np.array(5), dyn(np.array([1, 1]))])
    # a one-element 1-D bound is read as its scalar, as onnxruntime does
    assert run1("Range", [np.array(0), np.array(5), np.array([2])]).tolist() == [0, 2, 4]
    with pytest.raises(GraphError, match="must share one element type"):
        build("Range", [C(0), C(5), C(1, np.int32)])


@pytest.mark.parametrize(
    ("values", "src", "to"),
    [
        ([1.7, -1.7, 0.0, 2.5], "float32", "int32"),
        ([0.0, 0.5, -2.0], "float64", "bool"),
        ([True, False], "bool", "float16"),
        ([300, -1, 7], "int32", "uint8"),
        ([1.0 / 3, 65504.0, 1e6], "float64", "float16"),
        ([1.0 / 3, -2.5], "float32", "bfloat16"),
        ([3, -4], "int8", "float64"),
    ],
)
def test_cast(values: list[Any], src: str, to: str) -> None:
    x = np.array(values, dtype(src).numpy)
    got = run1("Cast", [x], {"to": dtype(to)})
    want = np.trunc(x) if floating(x.dtype) and dtype(to).is_int else x
    assert got.dtype == dtype(to).numpy
    with np.errstate(over="ignore"):  # 1e6 is inf in f16
        np.testing.assert_array_equal(got, want.astype(dtype(to).numpy))
    assert infer("Cast", [T(src, ["N"])], {"to": dtype(to)}) == [f"{dtype(to).short}[N]"]


def test_cast_nan_to_int_is_quiet() -> None:
    assert run1("Cast", [np.array([np.nan, np.inf], np.float32)], {"to": DType.int32}).shape == (2,)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("dt", ["float32", "int64", "bfloat16"])
def test_pad(mode: str, dt: str) -> None:
    x = rand((3, 4), dt)
    pads = [1, 0, 2, 3]  # begin of axes 0, 1, then end of axes 0, 1
    want = np.pad(x, [(1, 2), (0, 3)], mode=mode)
    close(run1("Pad", [x, C(pads)], {"mode": mode}), want)
    close(run1("Pad", [x, np.array(pads, np.int64)], {"mode": mode}), want)
    assert infer("Pad", [x, C(pads)], {"mode": mode}) == [str(T(dt, (6, 7)))]


def test_pad_options() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fill = np.array(9, np.float32)
    close(
        run1("Pad", [x, C([2, 1]), fill, C([-1])]), np.pad(x, [(0, 0), (2, 1)], constant_values=9)
    )
    close(run1("Pad", [x, C([-1, 1, 0, -2])]), np.pad(x[1:, :2], [(0, 0), (1, 0)]))
    close(run1("Pad", [x, C([0, -5, 0, 3])]), np.zeros((3, 2), np.float32))  # crop past the pad
    assert infer("Pad", [T("f32", ["N", 4]), C([1, 1]), None, C([1])]) == ["f32[N,6]"]
    assert infer("Pad", [T("f32", ["N", 4]), C([1, 1]), None, C([0])]) == ["f32[?,4]"]
    assert infer("Pad", [T("f32", ["N", 4]), T("i64", [4])]) == ["f32[?,?]"]
    with pytest.raises(GraphError, match=r"pads \[1, 1\] has 2 values, expected 2 per axis: 4"):
        build("Pad", [x, C([1, 1])])
    with pytest.raises(GraphError, match="mode must be one of"):
        build("Pad", [x, C([1, 1, 1, 1])], {"mode": "mirror"})
    with pytest.raises(GraphError, match=r"input #2: expected a f32 scalar like data, got f64\[\]"):
        build("Pad", [x, C([1, 1, 1, 1]), np.float64(0)])
    with pytest.raises(ExecutionError, match="cannot pad axis 0, which is empty"):
        run("Pad", [np.zeros((0, 2)), np.array([1, 0, 0, 0], np.int64)], {"mode": "edge"})


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
    ],
)
def test_type_errors(op: str, inputs: list[Input], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(GraphError, match=match):
        build(op, inputs, attrs)
