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

from openvino import opset2, opset3, opset8, opset9, opset14, opset15, opset16  # noqa: E402
from openvino_layer_checks import check, const, rand_f32, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402

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


# -- deformable convolution ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strides", "pads", "dilations", "group", "dgroup", "masked"),
    [
        ([1, 1], ([0, 0], [0, 0]), [1, 1], 1, 1, False),
        ([2, 1], ([1, 0], [0, 2]), [1, 2], 2, 2, True),
        ([1, 2], ([1, 1], [1, 1]), [2, 1], 1, 2, True),
    ],
)
def test_deformable_convolution_v8(
    strides: list[int], pads: Any, dilations: list[int], group: int, dgroup: int, masked: bool,
    tmp_path: Path,
) -> None:  # fmt: skip
    x = rand_f32(2, 4, 6, 7)
    w = rand_f32(6, 4 // group, 3, 2)
    out = [
        (s + pads[0][i] + pads[1][i] - dilations[i] * (k - 1) - 1) // strides[i] + 1
        for i, (s, k) in enumerate(zip((6, 7), (3, 2), strict=True))
    ]
    offsets = (RNG.standard_normal((2, dgroup * 6 * 2, *out)) * 2).astype(np.float32)
    arrays = [x, offsets]
    if masked:
        arrays.append(RNG.uniform(0, 1, (2, dgroup * 6, *out)).astype(np.float32))

    def build(x: Any, off: Any, *mask: Any) -> Any:
        return opset8.deformable_convolution(
            x, off, ops.constant(w), strides, *pads, dilations, mask[0] if mask else None,
            "explicit", group, dgroup, True,
        )  # fmt: skip

    check(build, *arrays, tmp_path=tmp_path, rtol=1e-4, atol=1e-4)


# -- attention -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "scale", "causal"),
    [(None, None, False), ("bool", None, False), ("float", 0.3, False), (None, 0.5, True),
     ("bool", None, True)],
)  # fmt: skip
def test_scaled_dot_product_attention(
    mask: str | None, scale: float | None, causal: bool, tmp_path: Path
) -> None:
    q, k, v = rand_f32(2, 3, 4, 5), rand_f32(2, 3, 6, 5), rand_f32(2, 3, 6, 7)
    arrays = [q, k, v]
    if mask == "bool":
        m = RNG.uniform(0, 1, (4, 6)) < 0.7
        m[:, 0] = True
        arrays.append(m)
    elif mask == "float":
        arrays.append(rand_f32(2, 1, 4, 6))

    def build(q: Any, k: Any, v: Any, *m: Any) -> Any:
        s = None if scale is None else const(scale, np.float32)
        return ops.scaled_dot_product_attention(q, k, v, m[0] if m else None, s, causal)

    check(build, *arrays, tmp_path=tmp_path, rtol=1e-4, atol=1e-5)


# -- adaptive pooling ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "out", "index"),
    [((2, 3, 7), [3], "i32"), ((1, 2, 5, 7), [3, 4], "i32"), ((1, 2, 4, 5, 6), [2, 3, 4], "i32"),
     ((1, 1, 6, 6), [6, 6], "i32"), ((1, 2, 3, 5), [5, 7], "i32")],
)  # fmt: skip
def test_adaptive_pools(shape: tuple[int, ...], out: list[int], index: str, tmp_path: Path) -> None:
    def build(x: Any) -> Any:
        mp = opset8.adaptive_max_pool(x, const(out), index)
        return [opset8.adaptive_avg_pool(x, const(out)), mp.output(0), mp.output(1)]

    check(build, rand_f32(*shape), tmp_path=tmp_path, rtol=1e-5, atol=1e-6)


def test_adaptive_max_pool_i64_indices(tmp_path: Path) -> None:
    """The CPU plugin cannot run i64 indices: they are checked against the i32 ones."""
    x = rand_f32(1, 2, 5, 7)
    p = ops.parameter(x.shape, np.float32, name="x0")
    outs = [opset8.adaptive_max_pool(p, const([3, 4]), t).output(1) for t in ("i64", "i32")]
    path = save_ir(outs, [p], tmp_path)
    got = list(tl.load(path).run({"x0": x}).values())
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32
    np.testing.assert_array_equal(got[0], got[1])
    check(
        lambda x: opset8.adaptive_max_pool(x, const([3, 4]), "i32").output(1), x, tmp_path=tmp_path
    )


# -- patches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sizes", "strides", "rates", "auto_pad"),
    [([2, 2], [1, 1], [1, 1], "valid"), ([3, 2], [2, 3], [1, 2], "valid"),
     ([3, 3], [2, 2], [1, 1], "same_upper"), ([2, 3], [3, 2], [2, 1], "same_lower")],
)  # fmt: skip
def test_extract_image_patches(
    sizes: list[int], strides: list[int], rates: list[int], auto_pad: str, tmp_path: Path
) -> None:
    check(
        lambda x: opset3.extract_image_patches(x, sizes, strides, rates, auto_pad),
        rand_f32(2, 3, 7, 8),
        tmp_path=tmp_path,
    )


# -- segments --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", ["ZERO", "LOWEST"])
@pytest.mark.parametrize("num", [None, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_segment_max(fill: str, num: int | None, dtype: Any, tmp_path: Path) -> None:
    data = (RNG.standard_normal((7, 3)) * 10).astype(dtype)
    ids = np.array([0, 0, 2, 2, 2, 3, 5], np.int32)
    count = None if num is None else const(num, np.int32)
    check(lambda d, i: opset16.segment_max(d, i, count, fill), data, ids, tmp_path=tmp_path)


# -- colour conversion -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nv12", "i420"])
@pytest.mark.parametrize("bgr", [False, True])
@pytest.mark.parametrize("planes", [1, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_colour_conversion(kind: str, bgr: bool, planes: int, dtype: Any, tmp_path: Path) -> None:
    n, h, w = 2, 4, 6
    y = RNG.integers(0, 256, (n, h, w, 1)).astype(dtype)
    fn = getattr(opset8, f"{kind}_to_{'bgr' if bgr else 'rgb'}")
    if kind == "nv12":
        uv = RNG.integers(0, 256, (n, h // 2, w // 2, 2)).astype(dtype)
        flat = np.concatenate([y, uv.reshape(n, h // 2, w, 1)], axis=1)
        arrays = [y, uv]
    else:
        u, v = (RNG.integers(0, 256, (n, h // 2, w // 2, 1)).astype(dtype) for _ in range(2))
        rest = np.concatenate([u.reshape(n, -1), v.reshape(n, -1)], axis=1)
        flat = np.concatenate([y, rest.reshape(n, h // 2, w, 1)], axis=1)
        arrays = [y, u, v]
    if planes == 1:
        check(fn, flat, tmp_path=tmp_path, rtol=1e-5, atol=1e-3)
    else:
        check(lambda *p: fn(*p), *arrays, tmp_path=tmp_path, rtol=1e-5, atol=1e-3)
