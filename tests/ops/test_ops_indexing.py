"""The indexing ops agree with onnxruntime on one-node models, and keep their laws."""

from __future__ import annotations

from functools import partial
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from onnx_oracle import infer, run_core
from onnx_oracle import same_as_onnxruntime as oracle_same
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.tensor.types import TensorType

FAST = settings(max_examples=40, deadline=None)
RNG = np.random.default_rng(7)
TOLERANCE = {"float16": (2e-3, 2e-3), "float32": (1e-4, 2e-5), "float64": (1e-9, 1e-12)}
same_as_onnxruntime = partial(oracle_same, opset=22, tolerance=TOLERANCE)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


T = TensorType

# --- Gathers and scatters ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64, np.bool_])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_matches_onnxruntime(dtype: Any, axis: int) -> None:
    data = (randn(3, 4, 5) * 5).astype(dtype)
    n = data.shape[axis]
    idx = RNG.integers(-n, n, size=(2, 3, 4))
    same_as_onnxruntime("GatherElements", [data, idx.astype(np.int32)], {"axis": axis})


@FAST
@given(
    hnp.arrays(np.int16, hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)),
    st.data(),
)
def test_gather_elements_is_take_along_axis(data: np.ndarray, draw: st.DataObject) -> None:
    axis = draw.draw(st.integers(-data.ndim, data.ndim - 1))
    n = data.shape[axis]
    idx = draw.draw(hnp.arrays(np.int64, data.shape, elements=st.integers(-n, n - 1)))
    (got,) = run_core("GatherElements", [data, idx], axis=axis)
    np.testing.assert_array_equal(got, np.take_along_axis(data, idx % n, axis=axis))


@pytest.mark.parametrize(
    ("data_shape", "idx_shape", "batch_dims"),
    [
        ((4, 5), (3, 2), 0),
        ((4, 5, 6), (2, 3, 1), 0),
        ((2, 3, 4), (2, 5, 1), 1),
        ((2, 3, 4, 5), (2, 3, 2), 2),
    ],
)
def test_gather_nd_matches_onnxruntime(
    data_shape: tuple[int, ...], idx_shape: tuple[int, ...], batch_dims: int
) -> None:
    data = randn(*data_shape)
    k = idx_shape[-1]
    sizes = np.array(data_shape[batch_dims : batch_dims + k])
    idx = (RNG.random(idx_shape) * sizes).astype(np.int64) - sizes * RNG.integers(0, 2, idx_shape)
    same_as_onnxruntime("GatherND", [data, idx], {"batch_dims": batch_dims})
    assert infer(
        "GatherND", [T("f32", data_shape), T("i64", idx_shape)], batch_dims=batch_dims
    ) == [f"f32[{','.join(map(str, (*idx_shape[:-1], *data_shape[batch_dims + k :])))}]"]


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_elements_matches_onnxruntime(reduction: str, dtype: Any) -> None:
    data = (randn(4, 5) * 4).astype(dtype)
    if reduction == "none":  # distinct targets: the result does not depend on the order
        idx = np.stack([RNG.permutation(4)[:3] for _ in range(5)], axis=1)
    else:
        idx = RNG.integers(-4, 4, size=(3, 5))
    updates = (randn(3, 5) * 4).astype(dtype)
    same_as_onnxruntime(
        "ScatterElements", [data, idx, updates], {"axis": 0, "reduction": reduction}, opset=18
    )


def test_scatter_of_opset_10_is_scatter_elements() -> None:
    data, idx = randn(3, 4), ints(1, 0, 2, 1).reshape(1, 4)
    same_as_onnxruntime("Scatter", [data, idx, randn(1, 4)], {"axis": 0}, opset=10)
    same_as_onnxruntime(
        "Scatter", [data, ints(3, 0, 1).reshape(3, 1), randn(3, 1)], {"axis": 1}, opset=10
    )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_matches_onnxruntime(reduction: str) -> None:
    data = randn(4, 3, 2)
    idx = ints(2, 0, -1, 1).reshape(4, 1) if reduction == "none" else ints(1, 2, 1, -1, 1, 2)
    idx = idx.reshape(-1, 1) if reduction == "none" else idx.reshape(3, 2)
    updates = randn(*idx.shape[:-1], *data.shape[idx.shape[-1] :])
    same_as_onnxruntime("ScatterND", [data, idx, updates], {"reduction": reduction}, opset=18)


@FAST
@given(st.data())
def test_scatter_nd_then_gather_nd_round_trips(draw: st.DataObject) -> None:
    shape = draw.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    k = draw.draw(st.integers(1, len(shape)))
    cells = [tuple(c) for c in np.ndindex(*shape[:k])]
    picked = draw.draw(
        st.lists(st.sampled_from(cells), min_size=1, max_size=len(cells), unique=True)
    )
    idx = np.array(picked, np.int64).reshape(len(picked), k)
    data = RNG.integers(-50, 50, size=shape).astype(np.int32)
    updates = RNG.integers(-50, 50, size=(len(picked), *shape[k:])).astype(np.int32)
    (scattered,) = run_core("ScatterND", [data, idx, updates])
    (back,) = run_core("GatherND", [scattered, idx])
    np.testing.assert_array_equal(back, updates)
    untouched = np.ones(shape[:k], bool)
    untouched[tuple(idx.T)] = False
    np.testing.assert_array_equal(scattered[untouched], data[untouched])


@FAST
@given(st.data())
def test_scatter_elements_then_gather_elements_round_trips(draw: st.DataObject) -> None:
    rows, cols = draw.draw(st.integers(1, 5)), draw.draw(st.integers(1, 5))
    take = draw.draw(st.integers(1, rows))
    idx = np.stack([RNG.permutation(rows)[:take] for _ in range(cols)], axis=1)
    data, updates = randn(rows, cols), randn(take, cols)
    (scattered,) = run_core("ScatterElements", [data, idx, updates], axis=0)
    (back,) = run_core("GatherElements", [scattered, idx], axis=0)
    np.testing.assert_array_equal(back, updates)


def test_out_of_range_indices_are_errors() -> None:
    with pytest.raises(ExecutionError, match=r"index 3 .* out of range for size 3"):
        run_core("GatherElements", [randn(3, 2), ints(0, 3).reshape(2, 1)], axis=0)
    with pytest.raises(ExecutionError, match="out of range"):
        run_core("GatherND", [randn(3, 2), ints(0, -4).reshape(1, 2)])
    with pytest.raises(GraphError, match="updates f32\\[3,2\\] must have shape \\[2, 2\\]"):
        run_core("ScatterND", [randn(3, 2), ints(0, 1).reshape(2, 1), randn(3, 2)])
    with pytest.raises(GraphError, match="reduction must be one of"):
        run_core("ScatterND", [randn(3), ints(0).reshape(1, 1), randn(1)], reduction="sum")


def _tensor_scatter_by_loops(
    past: np.ndarray, update: np.ndarray, starts: np.ndarray, axis: int, circular: bool
) -> np.ndarray:
    """The pseudocode of the ONNX TensorScatter spec, verbatim."""
    out = past.copy()
    for prefix in np.ndindex(past.shape[:axis]):
        for s in range(update.shape[axis]):
            pos = starts[prefix[0]] + s
            if circular:
                pos %= past.shape[axis]
            out[(*prefix, pos)] = update[(*prefix, s)]
    return out


@pytest.mark.parametrize(("axis", "mode"), [(-2, "linear"), (1, "circular"), (2, "circular")])
def test_tensor_scatter_follows_the_spec(axis: int, mode: str) -> None:
    past, update = randn(2, 3, 6, 4), randn(2, 3, 6, 4)
    a = axis % 4
    update = np.take(update, range(2), axis=a)
    starts = ints(1, 4) if mode == "linear" else ints(5, 2)
    if mode == "linear":
        starts = np.minimum(starts, past.shape[a] - 2)
    (got,) = run_core("TensorScatter", [past, update, starts], axis=axis, mode=mode)
    np.testing.assert_array_equal(
        got, _tensor_scatter_by_loops(past, update, starts, a, mode == "circular")
    )
    (first,) = run_core("TensorScatter", [past, update], axis=axis, mode=mode)
    np.testing.assert_array_equal(
        first, _tensor_scatter_by_loops(past, update, ints(0, 0), a, False)
    )
    with pytest.raises(ExecutionError, match="writes reach positions"):
        run_core("TensorScatter", [past, update, ints(0, past.shape[a] - 1)], axis=axis)
    with pytest.raises(GraphError, match="axis must not be 0"):
        infer("TensorScatter", [T("f32", [2, 3]), T("f32", [2, 3])], axis=0)


# --- Tile, NonZero, TopK, OneHot, Compress, Unique ----------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.uint8])
def test_tile_matches_onnxruntime(dtype: Any) -> None:
    data = (randn(2, 3) > 0).astype(dtype)
    same_as_onnxruntime("Tile", [data, ints(3, 2)])
    got = same_as_onnxruntime("Tile", [data, ints(0, 1)], consts=(1,))[0]
    assert got.shape == (0, 3)


def test_tile_types() -> None:
    assert infer("Tile", [T("f32", ["N", 3, "M"]), ("c", ints(1, 2, 0))]) == ["f32[N,6,0]"]
    assert infer("Tile", [T("f32", ["N", 3]), T("i64", [2])]) == ["f32[?,?]"]
    with pytest.raises(GraphError, match="repeats has 3 values"):
        infer("Tile", [T("f32", [2, 3]), T("i64", [3])])


@pytest.mark.parametrize(
    "data",
    [
        np.array([[0, 1.5], [2, 0]], np.float32),
        np.array([[[True, False]], [[True, True]]]),
        np.zeros((2, 0), np.int64),
    ],
)
def test_nonzero_matches_onnxruntime(data: np.ndarray) -> None:
    same_as_onnxruntime("NonZero", [data])
    assert infer("NonZero", [T("f32", [2, "N"])]) == ["i64[2,?]"]


def test_nonzero_of_a_scalar_has_no_rows() -> None:
    # The spec's [0, N] for a scalar (onnxruntime answers NumPy's [1, N]).
    assert run_core("NonZero", [np.array(3, np.int32)])[0].shape == (0, 1)
    assert run_core("NonZero", [np.array(0.0, np.float32)])[0].shape == (0, 0)


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.float64])
def test_topk_matches_onnxruntime_with_ties_lower_index_first(
    largest: int, axis: int, dtype: Any
) -> None:
    data = RNG.integers(0, 4, size=(4, 5, 3)).astype(dtype)  # many ties
    same_as_onnxruntime(
        "TopK", [data, ints(3)], {"axis": axis, "largest": largest}, opset=24, outputs=2
    )


def test_topk_of_opset_1_takes_k_as_attribute() -> None:
    data = randn(3, 6)
    same_as_onnxruntime("TopK", [data], {"k": 2, "axis": 1}, opset=9, outputs=2)


@FAST
@given(hnp.arrays(np.int8, st.integers(1, 9), elements=st.integers(-3, 3)), st.data())
def test_topk_is_a_stable_sort_prefix(data: np.ndarray, draw: st.DataObject) -> None:
    k = draw.draw(st.integers(0, len(data)))
    for largest in (1, 0):
        values, indices = run_core("TopK", [data, ("c", ints(k))], largest=largest)
        order = np.argsort(-data.astype(int) if largest else data, kind="stable")[:k]
        np.testing.assert_array_equal(indices, order)
        np.testing.assert_array_equal(values, data[order])


def test_topk_types_and_errors() -> None:
    assert infer("TopK", [T("f32", ["N", 9]), ("c", ints(4))]) == ["f32[N,4]", "i64[N,4]"]
    assert infer("TopK", [T("f32", ["N", 9]), T("i64", [1])], axis=0) == ["f32[?,9]", "i64[?,9]"]
    with pytest.raises(GraphError, match="k = 10 is out of range"):
        infer("TopK", [T("f32", [2, 9]), ("c", ints(10))])
    with pytest.raises(ExecutionError, match="K = \\[4\\] must be one value in \\[0, 3\\]"):
        run_core("TopK", [randn(3), ints(4)])


@pytest.mark.parametrize("axis", [-1, 0, 1, -3])
def test_onehot_matches_onnxruntime(axis: int) -> None:
    indices = ints(0, 3, -1, 7, -5, 2).reshape(2, 3)  # -5 and 7 are out of range for depth 5
    values = np.array([-1.5, 4.0], np.float32)
    same_as_onnxruntime("OneHot", [indices, np.array(5.0, np.float32), values], {"axis": axis})
    got = same_as_onnxruntime(
        "OneHot", [indices.astype(np.float32), ints(5), ints(0, 1)], {"axis": axis}, consts=(1,)
    )[0]
    assert got.shape[axis] == 5


def test_onehot_types() -> None:
    values = T("f16", [2])
    assert infer("OneHot", [T("i32", ["N", 3]), ("c", ints(6)), values], axis=1) == ["f16[N,6,3]"]
    assert infer("OneHot", [T("i32", ["N"]), T("i64", []), values]) == ["f16[N,?]"]


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_matches_onnxruntime(axis: int | None) -> None:
    data = randn(3, 4)
    condition = np.array([True, False, True], bool)
    attrs = {} if axis is None else {"axis": axis}
    same_as_onnxruntime("Compress", [data, condition], attrs)
    with pytest.raises(ExecutionError, match="condition selects position"):
        run_core("Compress", [randn(2), np.array([False, False, True])], axis=0)


@pytest.mark.parametrize("sorted_", [1, 0])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique_matches_onnxruntime(sorted_: int, axis: int | None) -> None:
    data = RNG.integers(0, 3, size=(4, 3)).astype(np.float32)
    data[2] = data[0]
    attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
    same_as_onnxruntime("Unique", [data], attrs, outputs=4)


@FAST
@given(hnp.arrays(np.int8, hnp.array_shapes(max_dims=3, max_side=4), elements=st.integers(-2, 2)))
def test_unique_without_axis_is_numpy_unique(data: np.ndarray) -> None:
    y, first, inverse, counts = run_core("Unique", [data])
    want = np.unique(data, return_index=True, return_inverse=True, return_counts=True)
    for got, expected in zip((y, first, inverse, counts), want, strict=True):
        np.testing.assert_array_equal(got, expected.reshape(-1))
    y, first, inverse, counts = run_core("Unique", [data], sorted=0)
    np.testing.assert_array_equal(y[inverse], data.reshape(-1))
    assert list(first) == sorted(first) and counts.sum() == data.size


def test_unique_types() -> None:
    assert infer("Unique", [T("f32", [2, "N"])]) == ["f32[?]", "i64[?]", "i64[?]", "i64[?]"]
    assert infer("Unique", [T("f32", [2, 3])]) == ["f32[?]", "i64[?]", "i64[6]", "i64[?]"]
    assert infer("Unique", [T("f32", [2, 3])], axis=1) == [
        "f32[2,?]",
        "i64[?]",
        "i64[3]",
        "i64[?]",
    ]


def test_unique_handles_narrow_floats() -> None:
    data = np.array([2, 1, 2, 0.5], ml_dtypes.bfloat16)
    y, first, inverse, counts = run_core("Unique", [data])
    assert y.dtype == data.dtype and y.astype(np.float32).tolist() == [0.5, 1, 2]
    assert first.tolist() == [3, 1, 0] and inverse.tolist() == [2, 1, 2, 0]
    assert counts.tolist() == [1, 1, 2]


# --- Data movement -------------------------------------------------------------------------------


@pytest.mark.parametrize(("batch_axis", "time_axis"), [(1, 0), (0, 1)])
def test_reverse_sequence_matches_onnxruntime(batch_axis: int, time_axis: int) -> None:
    data = randn(4, 5, 2) if batch_axis == 1 else randn(5, 4, 2)
    lens = ints(4, 1, 0, 3, 2)
    attrs = {"batch_axis": batch_axis, "time_axis": time_axis}
    same_as_onnxruntime("ReverseSequence", [data, np.maximum(lens, 1)], attrs)
    (got,) = run_core("ReverseSequence", [data, lens], **attrs)
    lanes = [np.take(got, b, axis=batch_axis) for b in range(5)]
    np.testing.assert_array_equal(lanes[2], np.take(data, 2, axis=batch_axis))  # length 0


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_matches_onnxruntime(mode: str) -> None:
    same_as_onnxruntime("DepthToSpace", [randn(2, 8, 3, 2)], {"blocksize": 2, "mode": mode})


def test_space_to_depth_matches_onnxruntime() -> None:
    same_as_onnxruntime("SpaceToDepth", [randn(2, 3, 4, 6)], {"blocksize": 2})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_inverts_depth_to_space(mode: str) -> None:
    data = randn(2, 3, 6, 9)
    (deep,) = run_core("SpaceToDepth", [data], blocksize=3, mode=mode)
    assert deep.shape == (2, 27, 2, 3)
    (back,) = run_core("DepthToSpace", [deep], blocksize=3, mode=mode)
    np.testing.assert_array_equal(back, data)
    assert infer("SpaceToDepth", [T("f32", ["N", 3, 6, 9])], blocksize=3) == ["f32[N,27,2,3]"]
    assert infer("DepthToSpace", [T("f32", ["N", 27, "H", 3])], blocksize=3) == ["f32[N,3,?,9]"]
    with pytest.raises(GraphError, match="multiples of blocksize 4"):
        infer("SpaceToDepth", [T("f32", [1, 3, 6, 8])], blocksize=4)


@pytest.mark.parametrize(
    ("shape", "target", "axes"),
    [((5, 6), (3, 9), None), ((4, 7, 3), (6, 4), (0, 1)), ((4, 7, 3), (2, 8), (-1, 0))],
)
def test_center_crop_pad_matches_onnxruntime(
    shape: tuple[int, ...], target: tuple[int, ...], axes: tuple[int, ...] | None
) -> None:
    attrs = {} if axes is None else {"axes": list(axes)}
    same_as_onnxruntime("CenterCropPad", [randn(*shape), ints(*target)], attrs, opset=18)
    types = infer("CenterCropPad", [T("f32", shape), ("c", ints(*target))], **attrs)
    got = run_core("CenterCropPad", [randn(*shape), ints(*target)], **attrs)[0]
    assert types == [f"f32[{','.join(map(str, got.shape))}]"]


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten_matches_onnxruntime(axis: int) -> None:
    same_as_onnxruntime("Flatten", [randn(2, 3, 4)], {"axis": axis} if axis != 3 else {"axis": 3})


def test_flatten_types() -> None:
    assert infer("Flatten", [T("f32", ["N", 3, 4])]) == ["f32[N,12]"]
    assert infer("Flatten", [T("f32", ["N", 1, "M"])], axis=2) == ["f32[N,M]"]
    assert infer("Flatten", [T("f32", ["N", 2, "M"])], axis=2) == ["f32[?,M]"]
    assert infer("Flatten", [T("f32", None)]) == ["f32[?,?]"]
    with pytest.raises(GraphError, match="axis 4 is out of range"):
        infer("Flatten", [T("f32", [2, 3, 4])], axis=4)
