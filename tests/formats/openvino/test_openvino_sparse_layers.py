"""OpenVINO's "SparseFillEmptyRows" (opset 16; read_sparse.py, write_sparse.py) vs. the CPU plugin
and the spec: read, written back and read again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset16  # noqa: E402
from openvino_layer_checks import check, check_exactly, compile_cpu, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.errors import ExecutionError, TensorloopError  # noqa: E402

Array = np.ndarray[Any, Any]


def _fill_empty_rows(values: Array, shape: list[int], indices: Array, default: Any) -> list[Array]:
    """The spec's answer, written out: entries sorted by (row, column), a default per empty row."""
    rows = shape[0]
    present = {int(r) for r in indices[:, 0]}
    empty = [r for r in range(rows) if r not in present]
    entries = [((int(i[0]), int(i[1])), v) for i, v in zip(indices, values.tolist(), strict=True)]
    entries += [((r, 0), default) for r in empty]
    entries.sort(key=lambda entry: entry[0])
    return [
        np.array([p for p, _ in entries], dtype=indices.dtype).reshape(-1, 2),
        np.array([v for _, v in entries], dtype=values.dtype),
        np.array([r in empty for r in range(rows)], dtype=bool),
    ]


SPARSE_CASES = [
    # values, dense_shape, indices
    pytest.param([1, 2, 3, 4], [5, 6], [[0, 1], [0, 3], [2, 0], [3, 1]], id="spec-example"),
    pytest.param([1, 2], [4, 4], [[3, 0], [3, 3]], id="empty-at-start"),
    pytest.param([1, 2], [4, 3], [[0, 2], [1, 0]], id="empty-at-end"),
    pytest.param([1, 2, 3], [3, 2], [[0, 1], [1, 1], [2, 0]], id="none-empty"),
    pytest.param([5, 6, 7, 8], [4, 7], [[3, 1], [0, 3], [2, 6], [0, 1]], id="unsorted-rows"),
    pytest.param([1, 2, 3, 4, 5], [3, 6], [[2, 5], [2, 1], [0, 3], [2, 0], [0, 1]], id="unsorted"),
    pytest.param([9], [6, 1], [[2, 0]], id="one-column"),
    pytest.param([1, 2], [1, 5], [[0, 4], [0, 0]], id="one-row"),
]


@pytest.mark.parametrize("index_type", [np.int64, np.int32])
@pytest.mark.parametrize("value_type", [np.float32, np.int32, np.uint8, np.int64])
@pytest.mark.parametrize(("values", "dense_shape", "indices"), SPARSE_CASES)
def test_sparse_fill_empty_rows(
    values: list[int],
    dense_shape: list[int],
    indices: list[list[int]],
    value_type: Any,
    index_type: Any,
    tmp_path: Path,
) -> None:
    arrays = (
        np.array(values, value_type),
        np.array(dense_shape, index_type),
        np.array(indices, index_type),
        np.array(42, value_type),
    )
    got = check(
        lambda v, s, i, d: [opset16.sparse_fill_empty_rows(v, s, i, d).output(k) for k in range(3)],
        *arrays,
        tmp_path=tmp_path,
    )
    want = _fill_empty_rows(arrays[0], dense_shape, arrays[2], 42)
    for ours, theirs in zip(got.values(), want, strict=True):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("value_type", [np.float16, np.int8, np.bool_])
def test_sparse_fill_empty_rows_of_other_value_types(value_type: Any, tmp_path: Path) -> None:
    values = np.array([1, 0, 1], value_type)
    default = np.array(1, value_type)
    arrays = (values, np.array([5, 3]), np.array([[4, 2], [1, 0], [1, 2]]), default)
    check(
        lambda v, s, i, d: [opset16.sparse_fill_empty_rows(v, s, i, d).output(k) for k in range(3)],
        *arrays,
        tmp_path=tmp_path,
    )


def test_sparse_fill_empty_rows_with_a_constant_dense_shape_and_dynamic_entries(
    tmp_path: Path,
) -> None:
    """A constant dense_shape gives the indicator a static length (OpenVINO declares it too)."""
    values = opset16.parameter([-1], np.float32, name="v")
    indices = opset16.parameter([-1, 2], np.int64, name="i")
    default = opset16.parameter([], np.float32, name="d")
    dense = opset16.constant(np.array([4, 5], np.int64))
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    feeds: dict[str, Array] = {
        "v": np.array([1.5, -2.0, 3.0], np.float32),
        "i": np.array([[2, 4], [0, 0], [2, 1]], np.int64),
        "d": np.array(-1.0, np.float32),
    }
    path = save_ir([node.output(k) for k in range(3)], [values, indices, default], tmp_path)
    assert tl.load(path).graph.outputs[2].type == tl.TensorType("bool", [4])
    check_exactly(
        [node.output(k) for k in range(3)], [values, indices, default], feeds, tmp_path / "c"
    )


def test_sparse_fill_empty_rows_with_no_entries(tmp_path: Path) -> None:
    """No entries at all: every row gets the default. (The CPU plugin fails on empty Parameter
    tensors here, "ptr is Null", so the entries are constants.)"""
    values = opset16.constant(np.zeros(0, np.float32))
    indices = opset16.constant(np.zeros((0, 2), np.int64))
    dense = opset16.parameter([2], np.int64, name="s")
    default = opset16.parameter([], np.float32, name="d")
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    feeds: dict[str, Array] = {"s": np.array([3, 4], np.int64), "d": np.array(5.0, np.float32)}
    got = check_exactly([node.output(k) for k in range(3)], [dense, default], feeds, tmp_path)
    out_indices, out_values, empty = got.values()
    assert out_indices.tolist() == [[0, 0], [1, 0], [2, 0]]
    assert out_values.tolist() == [5.0, 5.0, 5.0] and empty.all()


@pytest.mark.parametrize(
    ("indices", "message"),
    [([[0, 0], [5, 0]], r"index \[5, 0\] lies outside dense_shape \[2, 4\]"),
     ([[0, 4], [1, 0]], r"index \[0, 4\] lies outside"),
     ([[0, -1], [1, 0]], r"index \[0, -1\] lies outside")],
)  # fmt: skip
def test_sparse_fill_empty_rows_refuses_indices_outside_the_dense_shape(
    indices: list[list[int]], message: str, tmp_path: Path
) -> None:
    """As the CPU plugin does ("Sparse tensor index out of bounds") where the shapes are
    dynamic; where they are static it checks nothing (2026.4: a row outside is dropped, a column
    outside kept) and returns what tensorloop refuses to make up."""
    arrays = (np.array([1.0, 2.0], np.float32), np.array([2, 4]), np.array(indices))
    feeds = {f"x{i}": a for i, a in enumerate(arrays)} | {"x3": np.array(0.0, np.float32)}
    for dynamic in (True, False):
        params = [
            opset16.parameter([-1] * a.ndim if dynamic else list(a.shape), a.dtype, name=f"x{i}")
            for i, a in enumerate(arrays)
        ]
        params.append(opset16.parameter([], np.float32, name="x3"))
        node = opset16.sparse_fill_empty_rows(*params)
        path = save_ir([node.output(k) for k in range(3)], params, tmp_path / str(dynamic))
        with pytest.raises(ExecutionError, match=message):
            tl.load(path).run(feeds)
        if dynamic:
            with pytest.raises(RuntimeError, match="out of bounds"):
                compile_cpu(path)(feeds)
        else:
            assert len(compile_cpu(path)(feeds)) == 3


def test_sparse_fill_empty_rows_refuses_string_values(tmp_path: Path) -> None:
    """The spec's values are numeric (the CPU plugin returns garbage indices for strings)."""
    values = opset16.parameter([2], ov.Type.string, name="v")
    dense = opset16.parameter([2], np.int64, name="s")
    indices = opset16.parameter([2, 2], np.int64, name="i")
    default = opset16.parameter([], ov.Type.string, name="d")
    node = opset16.sparse_fill_empty_rows(values, dense, indices, default)
    path = save_ir([node.output(k) for k in range(3)], [values, dense, indices, default], tmp_path)
    with pytest.raises(TensorloopError, match="expected numbers or bools"):
        tl.load(path)
