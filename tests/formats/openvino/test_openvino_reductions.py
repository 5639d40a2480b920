"""OpenVINO Reduce* and Range layers against the CPU plugin and the spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ops = pytest.importorskip("openvino.opset13")

from openvino import opset1  # noqa: E402
from openvino_layer_checks import check, const, rand_f32, run_path, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402

# -- reductions and ranges ------------------------------------------------------------------------

REDUCE = {
    "ReduceSum": ops.reduce_sum,
    "ReduceMean": ops.reduce_mean,
    "ReduceMax": ops.reduce_max,
    "ReduceMin": ops.reduce_min,
    "ReduceProd": ops.reduce_prod,
}


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reductions(name: str, keep: bool, tmp_path: Path) -> None:
    fn = REDUCE[name]
    x = (1 + 0.2 * rand_f32(3, 4, 5)).astype(np.float32)
    n = np.arange(-4, 5, dtype=np.int32).reshape(3, 3)
    check(
        lambda p, q: [
            fn(p, const([0, -1]), keep),
            fn(p, const(1, np.int32), keep),
            fn(q, const([1]), keep),
            fn(p, const([2, 0, 1]), keep),
        ],
        x,
        n,
        tmp_path=tmp_path,
        rtol=1e-5,
    )


def test_reduce_prod_of_empty_and_unit_axes(tmp_path: Path) -> None:
    check(
        lambda p: [ops.reduce_prod(p, const([1]), False), ops.reduce_prod(p, const([0, 2]), True)],
        rand_f32(1, 0, 3),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_over_no_axes_is_identity(name: str, tmp_path: Path) -> None:
    # OpenVINO's CPU plugin rejects empty axes; its spec and reference evaluator reduce nothing.
    x = ops.parameter([2, 3], np.float32, name="x")
    path = save_ir([REDUCE[name](x, const([], np.int64), True)], [x], tmp_path)
    data = rand_f32(2, 3)
    (got,) = tl.load(path).run({"x": data}).values()
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize(
    ("bounds", "dtype", "output_type"),
    [
        ((0.5, 5.0, 1.5), np.float32, "i32"),  # each bound is cast (truncated) first
        ((-2.5, 3.7, 1.9), np.float32, "i64"),
        ((1, 20, 3), np.int32, "i64"),
        ((4, -4, -3), np.int64, "f32"),
        ((0.0, 1.0, 0.25), np.float32, "f32"),
        ((10, 2, 1), np.int32, "i32"),  # empty
    ],
)
def test_range_4(bounds: tuple[float, ...], dtype: Any, output_type: str, tmp_path: Path) -> None:
    # With computed bounds the CPU plugin neither casts first nor yields an empty range (10..2
    # gives 8 entries), so constant bounds let OpenVINO's reference evaluator fold the result.
    start, stop, step = (ops.constant(np.array(b, dtype)) for b in bounds)
    path = save_ir([ops.range(start, stop, step, output_type)], [], tmp_path)
    run_path(path, {})


def test_range_4_with_computed_bounds(tmp_path: Path) -> None:
    start, stop, step = (np.array(b, np.int32) for b in (1, 20, 3))
    check(lambda a, b, c: ops.range(a, b, c, "i64"), start, stop, step, tmp_path=tmp_path)
    start, stop, step = (np.array(b, np.float32) for b in (4.0, -4.0, -3.0))
    check(lambda a, b, c: ops.range(a, b, c, "f32"), start, stop, step, tmp_path=tmp_path)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_range_0(dtype: Any, tmp_path: Path) -> None:
    start, stop, step = (np.array(b, dtype) for b in (1, 9, 2))
    check(opset1.range, start, stop, step, tmp_path=tmp_path)
