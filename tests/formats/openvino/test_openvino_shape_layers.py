"""OpenVINO shape layers (read_shape.py: reshape, (un)squeeze, concat, split, transpose, ShapeOf,
broadcast, pad, Range and the block rearrangements) vs. the CPU plugin, and DepthToSpace and
SpaceToDepth written back (write_shape.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset2, opset3, opset12, opset15  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    const,
    edit_ir,
    ph,
    rand_f32,
    run_path,
    save_ir,
    tl_const,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402

# -- matrices and shapes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "special_zero"),
    [([0, -1], True), ([4, 0, 1, -1], True), ([6, -1], False), ([2, 2, 6], False), ([-1], True)],
)
def test_reshape_special_zero(shape: list[int], special_zero: bool, tmp_path: Path) -> None:
    check(lambda p: ops.reshape(p, const(shape), special_zero), rand_f32(4, 6), tmp_path=tmp_path)


def test_reshape_by_a_computed_shape(tmp_path: Path) -> None:
    check(
        lambda p, q: ops.reshape(p, ops.shape_of(q), False),
        rand_f32(4, 6),
        rand_f32(3, 8),
        tmp_path=tmp_path,
    )


def test_squeeze_unsqueeze(tmp_path: Path) -> None:
    x = rand_f32(1, 3, 1, 2)
    check(
        lambda p: [
            opset15.squeeze(p),
            ops.squeeze(p, const([0, -2])),
            ops.squeeze(p, const(2)),
            ops.squeeze(p, const([0, 1])),  # axis 1 is not 1: skipped since OpenVINO 2024.3
            ops.squeeze(p, const([1])),
            ops.unsqueeze(p, const([0, -1])),
            ops.unsqueeze(p, const(1)),
            ops.unsqueeze(p, const([2, 2])),  # a repeated axis counts once
        ],
        x,
        tmp_path=tmp_path,
    )


def test_concat_split_transpose_shape_of(tmp_path: Path) -> None:
    check(
        lambda a, b: [
            ops.concat([a, b, a], -1),
            *ops.split(b, const(1), 3).outputs(),
            *ops.split(a, const(-3, np.int32), 2).outputs(),
            ops.transpose(a, const([2, 0, 1])),
            ops.transpose(a, const([], np.int64)),
            ops.shape_of(a),
            opset3.shape_of(b, "i32"),
            opset1.shape_of(b),
        ],
        rand_f32(2, 3, 4),
        rand_f32(2, 3, 1),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    ("axis", "lengths"),
    [(1, [2, 3, 1]), (1, [2, -1, 1]), (-1, [-1, 4]), (0, [0, 2]), (2, [1, 1, 0, 3])],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_variadic_split(axis: int, lengths: list[int], dynamic: bool, tmp_path: Path) -> None:
    check(
        lambda p: ops.variadic_split(p, const(axis), const(lengths, np.int32)).outputs(),
        rand_f32(2, 6, 5),
        tmp_path=tmp_path,
        dynamic=dynamic,
    )


def test_variadic_split_with_computed_lengths(tmp_path: Path) -> None:
    lengths = np.array([2, -1, 1], np.int64)
    check(
        lambda p, n: ops.variadic_split(p, const(1), n).outputs(),
        rand_f32(2, 6),
        lengths,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    ("version", "data_shape", "target", "mapping", "mode"),
    [
        (opset3, (3, 1), [2, 3, 4], None, "NUMPY"),
        (opset1, (4,), [2, 3, 4], None, "NUMPY"),
        (opset3, (3, 1), [1, 4], None, "BIDIRECTIONAL"),
        (opset3, (2, 1, 4), [3, 1], None, "BIDIRECTIONAL"),
        (opset3, (3,), [2, 3, 4], [1], "EXPLICIT"),
        (opset1, (2, 4), [2, 3, 4], [0, 2], "EXPLICIT"),
    ],
)
def test_broadcast(
    version: Any,
    data_shape: tuple[int, ...],
    target: list[int],
    mapping: list[int] | None,
    mode: str,
    tmp_path: Path,
) -> None:
    def build(p: Any) -> Any:
        axes = None if mapping is None else const(mapping)
        return version.broadcast(p, const(target), axes, mode)

    check(build, rand_f32(*data_shape), tmp_path=tmp_path)


@pytest.mark.parametrize("version", [opset1, opset12])
@pytest.mark.parametrize(
    ("begins", "ends", "mode"),
    [
        ([1, 0, 2], [0, 3, 1], "constant"),
        ([0, 2, 1], [1, 0, 2], "edge"),
        ([1, 2, 0], [2, 1, 3], "reflect"),
        ([0, 0, 0], [0, 0, 0], "constant"),
    ],
)
def test_pad_layer(
    version: Any, begins: list[int], ends: list[int], mode: str, tmp_path: Path
) -> None:
    value = const(2.5, np.float32) if mode == "constant" else None
    check(
        lambda p: version.pad(p, const(begins), const(ends), mode, value),
        rand_f32(3, 4, 5),
        tmp_path=tmp_path,
    )


def test_pad_12_crops_with_negative_pads(tmp_path: Path) -> None:
    check(
        lambda p: opset12.pad(p, const([-1, 2, 0]), const([1, -2, -1]), "constant"),
        rand_f32(3, 4, 5),
        tmp_path=tmp_path,
    )


def _numpy_symmetric(x: Any, begins: list[int], ends: list[int]) -> Any:
    """numpy.pad(mode="symmetric") by the positive pads, then cropped by the negative ones."""
    pads = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
    grown = np.pad(x, pads, "symmetric")
    crops = zip(begins, ends, grown.shape, strict=True)
    return grown[tuple(slice(max(-b, 0), n - max(-e, 0)) for b, e, n in crops)]


@pytest.mark.parametrize("version", [opset1, opset12])
@pytest.mark.parametrize(
    ("begins", "ends"),
    [
        ([1, 0, 2], [0, 3, 1]),
        ([3, 4, 5], [3, 4, 5]),  # a pad as long as its axis mirrors all of it
        ([-1, 2, 0], [2, -3, -1]),  # cropping one side, mirroring the other
        ([-2, 0, 5], [2, 0, -4]),
    ],
)
def test_pad_symmetric(version: Any, begins: list[int], ends: list[int], tmp_path: Path) -> None:
    x = rand_f32(3, 4, 5)
    got = check(
        lambda p: version.pad(p, const(begins), const(ends), "symmetric"), x, tmp_path=tmp_path
    )
    (out,) = got.values()
    np.testing.assert_array_equal(out, _numpy_symmetric(x, begins, ends))


def test_pad_symmetric_dynamic_dims(tmp_path: Path) -> None:
    """Unknown dims are fine on the axes only cropped or left alone."""
    check(
        lambda p: opset12.pad(p, const([0, -1, 0]), const([0, 0, -2]), "symmetric"),
        rand_f32(2, 3, 4),
        tmp_path=tmp_path,
        dynamic=True,
        write=False,
    )


def test_pad_symmetric_refusals(tmp_path: Path) -> None:
    p = ops.parameter([-1, 4], np.float32, name="x0")
    path = save_ir([opset12.pad(p, const([1, 0]), const([0, 0]), "symmetric")], [p], tmp_path)
    with pytest.raises(tl.FormatError, match=r"axis 0 of .* to be static"):
        tl.load(path)
    # OpenVINO refuses a symmetric pad longer than its axis: so does tensorloop.
    p = ops.parameter([3, 4], np.float32, name="x0")
    path = save_ir([opset12.pad(p, const([0, 0]), const([0, 5]), "constant")], [p], tmp_path)
    edit_ir(path, 'pad_mode="constant"', 'pad_mode="symmetric"')
    with pytest.raises(tl.FormatError, match="pads 0 / 5 exceed axis 1"):
        tl.load(path)


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
)
def test_pad_symmetric_is_numpys(shape: list[int], data: Any) -> None:
    """The law: Pad symmetric with pads within the axis is numpy.pad(mode="symmetric"), then
    cropped by the negative pads."""
    begins = [data.draw(st.integers(-n + 1, n)) for n in shape]
    ends = [
        data.draw(st.integers(-(n - max(-b, 0)) + 1, n)) for n, b in zip(shape, begins, strict=True)
    ]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    p = ops.parameter(shape, np.float32, name="x0")
    with tempfile.TemporaryDirectory() as tmp:
        path = save_ir([opset12.pad(p, const(begins), const(ends), "symmetric")], [p], Path(tmp))
        (out,) = tl.load(path).run({"x0": x}).values()
    np.testing.assert_array_equal(out, _numpy_symmetric(x, begins, ends))


# -- block rearrangements: ShuffleChannels, SpaceToBatch, BatchToSpace -----------------------------
@pytest.mark.parametrize(
    ("shape", "axis", "group"), [((1, 6, 2, 2), 1, 3), ((2, 3, 8), -1, 4), ((4, 5), 0, 2)]
)
def test_shuffle_channels(shape: tuple[int, ...], axis: int, group: int, tmp_path: Path) -> None:
    check(lambda x: opset3.shuffle_channels(x, axis, group), rand_f32(*shape), tmp_path=tmp_path)


@pytest.mark.parametrize(
    ("shape", "block", "begin", "end"),
    [
        ((1, 2, 4, 6), [1, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0]),
        ((2, 3, 3, 5), [1, 1, 2, 2], [0, 0, 1, 0], [0, 0, 0, 1]),
        ((1, 4, 3), [1, 2, 3], [0, 0, 1], [0, 0, 2]),
    ],
)
def test_space_to_batch_and_back(
    shape: tuple[int, ...], block: list[int], begin: list[int], end: list[int], tmp_path: Path
) -> None:
    def build(x: Any) -> Any:
        s2b = opset2.space_to_batch(x, const(block), const(begin), const(end))
        return [s2b, opset2.batch_to_space(s2b, const(block), const(begin), const(end))]

    check(build, rand_f32(*shape), tmp_path=tmp_path)


def test_batch_to_space_crops(tmp_path: Path) -> None:
    check(
        lambda x: opset2.batch_to_space(x, const([1, 2, 3]), const([0, 1, 2]), const([0, 0, 1])),
        rand_f32(12, 2, 3),
        tmp_path=tmp_path,
    )


# -- DepthToSpace and SpaceToDepth, read and written -----------------------------------------------


X4 = rand_f32(2, 4, 7, 6)


@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("shape", [(2, 8, 4, 6), (2, 4, 6), (1, 16, 2, 4, 6)])
def test_depth_to_space_and_back(mode: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    check(
        lambda x: [ops.depth_to_space(x, mode, 2), ops.space_to_depth(x, mode, 2)],
        rand_f32(*shape),
        tmp_path=tmp_path,
    )


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_write_blocks(mode: str, tmp_path: Path) -> None:
    x = ph("x", X4[:, :, :6])
    outs = {
        "d2s": emit("DepthToSpace", [x], {"blocksize": 2, "mode": mode}),
        "s2d": emit("SpaceToDepth", [x], {"blocksize": 2, "mode": mode}),
    }
    written_runs_alike(tl.Model(outs), {"x": X4[:, :, :6]}, tmp_path)


# -- Range -----------------------------------------------------------------------------------------
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


# -- Tile and Flatten, written ---------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
def test_write_tile_and_flatten(tmp_path: Path) -> None:
    data = rand_f32(2, 3, 4)
    x = ph("x", data, ("N", 3, 4))
    outs = {
        "tile": emit("Tile", [x, tl_const([1, 2, 3])]),
        "tile0": emit("Tile", [x, tl_const([2, 0, 1])]),
        "flat": emit("Flatten", [x], {"axis": 2}),
        "flat0": emit("Flatten", [x], {"axis": 0}),
        "flat3": emit("Flatten", [x], {"axis": -3}),
    }
    written_runs_alike(tl.Model(outs), {"x": data}, tmp_path)
