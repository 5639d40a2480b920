"""Shape ops (Reshape, Transpose, Squeeze, Concat, Split, Slice, Gather, Pad), Range, Cast."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

from onnx_oracle import one_node, ort_run, tensorloop_run
from ops_harness import FAST, I64_MAX, C, T, build, close, dyn, floating, infer, rand, run, run1
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.tensor.dtypes import DType, dtype

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


# Range's stash_type (ONNX opset 27): float16 and bfloat16 bounds are computed in float32
# (stash_type 1, the default) or float64 (11). The cases: one the two agree on; one where a
# running sum in float32 drifts from start + i * delta; two where float32 rounds
# (limit - start) / delta to a whole number, so the count is one short of float64's.
STASH_CASES = [
    (-3.0, 5.0, 0.375),
    (1000.0, 3000.0, 0.1),
    (0.0, 29488.0, 1.5654296875),
    (0.0, 15416.0, 0.51708984375),
]
STASH_TYPES = {1: np.float32, 11: np.float64}


def stashed_range(bounds: list[np.ndarray], stash_type: int) -> np.ndarray:
    """ONNX's function body for Range on float16/bfloat16 bounds, step by step: the bounds cast
    to the stash type, the count computed there, each element the one before plus delta (the
    body's Loop); the result is left in the stash type."""
    stash = STASH_TYPES[stash_type]
    start, limit, delta = (b.astype(stash) for b in bounds)
    n = max(int(np.ceil((limit - start) / delta)), 0)
    values, prev = [], start
    for _ in range(n):
        values.append(prev)
        prev = stash(prev + delta)
    return np.array(values, stash)


def _stash_attrs(stash_type: int | None) -> dict[str, int]:
    return {} if stash_type is None else {"stash_type": stash_type}


@pytest.mark.parametrize("case", STASH_CASES)
@pytest.mark.parametrize("stash_type", [None, 1, 11])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_range_computes_half_precision_in_the_stash_type(
    case: tuple[float, float, float], stash_type: int | None, dt: str
) -> None:
    npd = dtype(dt).numpy
    bounds = [np.array(v, npd) for v in case]
    want = stashed_range(bounds, stash_type or 1).astype(npd)
    attrs = _stash_attrs(stash_type)
    got = run1("Range", bounds, attrs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    assert infer("Range", [C(b, npd) for b in bounds], attrs) == [str(T(dt, [len(want)]))]


def test_the_stash_type_changes_half_precision_ranges() -> None:
    """The cases above tell float32 from float64: a count, and the values of a running sum."""
    bounds = [np.array(v, np.float16) for v in (0.0, 29488.0, 1.5654296875)]
    assert [len(run1("Range", bounds, {"stash_type": t})) for t in (1, 11)] == [18837, 18838]
    drift = [np.array(v, np.float16) for v in (1000.0, 3000.0, 0.1)]
    f32, f64 = (run1("Range", drift, {"stash_type": t}) for t in (1, 11))
    assert len(f32) == len(f64) and not np.array_equal(f32, f64)


def _onnxruntime_range(bounds: list[np.ndarray], attrs: dict[str, int]) -> np.ndarray:
    """onnxruntime's opset-27 Range, its output widened to float32 by a Cast (its Python API
    cannot hand out bfloat16 arrays)."""
    model = one_node("Range", bounds, attrs, opset=27, consts=(0, 1, 2))
    model.graph.node.append(helper.make_node("Cast", ["y0"], ["wide"], to=TensorProto.FLOAT))
    del model.graph.output[:]
    model.graph.output.append(helper.make_empty_tensor_value_info("wide"))
    try:
        (wide,) = ort_run(model, bounds)
    except Exception as exc:  # onnxruntime before 1.32 refuses opset 27 as "under development"
        if "Opset 27" not in str(exc):
            raise
        pytest.skip(f"this onnxruntime does not run opset 27: {str(exc).splitlines()[0][-120:]}")
    return wide


@pytest.mark.parametrize("case", STASH_CASES)
@pytest.mark.parametrize("stash_type", [None, 1, 11])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_range_with_a_stash_type_matches_onnxruntime(
    case: tuple[float, float, float], stash_type: int | None, dt: str
) -> None:
    npd = dtype(dt).numpy
    bounds = [np.array(v, npd) for v in case]
    attrs = _stash_attrs(stash_type)
    (got,) = tensorloop_run(one_node("Range", bounds, attrs, opset=27), bounds)
    want = _onnxruntime_range(bounds, attrs)
    assert got.dtype == npd and got.shape == want.shape
    same = got.astype(np.float32) == want
    if stash_type == 11:
        # onnxruntime narrows the float64 values through float32, rounding twice: a value just
        # off a tie between two neighbours of the narrow type can land on the other one
        wide = stashed_range(bounds, 11)
        same |= wide.astype(npd) != wide.astype(np.float32).astype(npd)
    assert same.all(), np.flatnonzero(~same)


def test_range_stash_type_errors() -> None:
    half = [C(v, np.float16) for v in (0, 5, 1)]
    for stash_type in (10, 16, 0):
        with pytest.raises(GraphError, match=r"stash_type must be 1 \(float32\) or 11"):
            build("Range", half, {"stash_type": stash_type})
    with pytest.raises(GraphError, match=r"stash_type must be 1 \(float32\) or 11"):
        build("Range", [T("f16", ()), T("f16", ()), T("f16", ())], {"stash_type": 10})
    # other element types are computed in their own type, whatever stash_type says
    for dt in (np.float32, np.int64):
        got = run1("Range", [np.array(v, dt) for v in (0, 5, 2)], {"stash_type": 10})
        assert got.tolist() == [0, 2, 4]


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
