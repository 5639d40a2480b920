"""OpenVINO's remaining layer types (shuffles, space/batch, type promotion, slice scatter, grid
sampling, col2im, deformable convolution, attention, adaptive pooling, patches, CTC decoding,
segments, colour conversion) read by tensorloop vs. the CPU plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset2, opset3, opset9, opset14, opset15  # noqa: E402
from openvino_layer_checks import check, const, rand_f32  # noqa: E402

RNG = np.random.default_rng(7)

# -- shuffles --------------------------------------------------------------------------------------


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


# -- type promotion --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "scalar", "unsafe"),
    [
        (np.float32, np.float16, False, False),
        (np.int8, np.uint8, False, True),
        (np.int32, np.uint8, False, False),
        (np.int64, np.int8, True, False),
        (np.int32, np.float32, False, True),
        (np.int16, np.float32, False, False),
        (np.uint16, np.int32, False, False),
        (np.uint32, np.int16, False, True),
        (np.bool_, np.int64, False, False),
        (np.int64, np.uint64, False, True),
        (np.int64, np.float16, True, True),
        (np.int8, np.int64, True, True),
        (np.float64, np.int32, False, False),
    ],
)
def test_convert_promote_types(a: Any, b: Any, scalar: bool, unsafe: bool, tmp_path: Path) -> None:
    x0 = (RNG.integers(0, 5, (2, 3))).astype(a)
    x1 = np.array(3, dtype=b) if scalar else (RNG.integers(0, 5, (2, 3))).astype(b)
    outs = check(
        lambda p, q: [
            ops.reshape(o, const([-1]), False)  # a layer of its own, not the input passed on
            for o in opset14.convert_promote_types(p, q, unsafe, scalar).outputs()
        ],
        x0,
        x1,
        tmp_path=tmp_path,
    )
    assert len(outs) == 2


# -- slice scatter ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "stop", "step", "axes", "upd"),
    [
        ([1], [3], [1], [1], (4, 2, 5)),
        ([0, 4], [4, 0], [2, -2], [0, 2], (2, 3, 2)),
        ([-1, 0], [-100, 3], [-1, 1], None, (4, 3, 5)),
    ],
)
def test_slice_scatter(
    start: list[int], stop: list[int], step: list[int], axes: Any, upd: Any, tmp_path: Path
) -> None:
    ax = None if axes is None else const(axes)
    check(
        lambda x, u: opset15.slice_scatter(x, u, const(start), const(stop), const(step), ax),
        rand_f32(4, 3, 5),
        rand_f32(*upd),
        tmp_path=tmp_path,
    )


# -- image ops -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(mode: str, padding: str, align: bool, tmp_path: Path) -> None:
    grid = RNG.uniform(-1.3, 1.3, (2, 3, 4, 2)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    check(
        lambda x, g: opset9.grid_sample(x, g, attrs),
        rand_f32(2, 3, 5, 6),
        grid,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("batched", "size", "kernel", "strides", "dilations", "pads"),
    [
        (True, [4, 5], [2, 2], [1, 1], [1, 1], ([0, 0], [0, 0])),
        (False, [6, 5], [2, 3], [2, 1], [1, 2], ([1, 0], [1, 2])),
    ],
)
def test_col2im(
    batched: bool, size: list[int], kernel: list[int], strides: list[int],
    dilations: list[int], pads: Any, tmp_path: Path,
) -> None:  # fmt: skip
    blocks = [
        (size[i] + pads[0][i] + pads[1][i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
        for i in range(2)
    ]
    shape = (3 * kernel[0] * kernel[1], blocks[0] * blocks[1])
    x = rand_f32(2, *shape) if batched else rand_f32(*shape)
    check(
        lambda x: opset15.col2im(x, const(size), const(kernel), strides, dilations, *pads),
        x,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-6,
    )
