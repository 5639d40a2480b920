"""OpenVINO image layers (read_image.py: Interpolate-1/4/11, GridSample, Col2Im,
ExtractImagePatches, the NV12/I420 colour conversions) vs. the CPU plugin, and the core Resize,
GridSample and Col2Im written back (write_image.py), run by the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset3, opset8, opset9, opset10, opset11, opset15  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    const,
    ph,
    rand_f32,
    tl_const,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

RNG = np.random.default_rng(7)


# -- GridSample, Col2Im, ExtractImagePatches and the colour conversions ----------------------------


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


# -- the writer: Col2Im ----------------------------------------------------------------------------


COL2IM_CASES = {
    # name: (channels, image, block, attrs)
    "plain": (2, (4, 5), (2, 2), {}),
    "strided": (1, (6, 7), (3, 2), {"strides": [2, 1], "pads": [1, 0, 1, 1]}),
    "dilated": (3, (7, 6), (2, 3), {"dilations": [2, 1], "strides": [1, 2]}),
}


def _col2im_positions(image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]) -> int:
    pads = attrs.get("pads", [0] * 4)
    dil, strides = attrs.get("dilations", [1, 1]), attrs.get("strides", [1, 1])
    count = 1
    for d in range(2):
        span = image[d] + pads[d] + pads[d + 2] - dil[d] * (block[d] - 1) - 1
        count *= span // strides[d] + 1
    return count


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(COL2IM_CASES))
def test_writer_col2im(name: str, tmp_path: Path) -> None:
    c, image, block, attrs = COL2IM_CASES[name]
    x = rand_f32(2, c * block[0] * block[1], _col2im_positions(image, block, attrs), rng=RNG)
    y = emit("Col2Im", [ph("x", x), tl_const(image), tl_const(block)], attrs)
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_col2im_3d_refused(tmp_path: Path) -> None:
    x = rand_f32(1, 8, 8, rng=RNG)
    y = emit("Col2Im", [ph("x", x), tl_const([3, 3, 3]), tl_const([2, 2, 2])])
    with pytest.raises(tl.FormatError, match="two spatial axes"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- the writer: GridSample ------------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_writer_grid_sample(mode: str, padding: str, align: int, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 5, 6, rng=RNG)
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    y = emit("GridSample", [ph("x", x), ph("grid", grid)], attrs)
    feeds = {"x": x, "grid": grid}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_grid_sample_3d_refused(tmp_path: Path) -> None:
    x, grid = rand_f32(1, 2, 3, 4, 5, rng=RNG), rand_f32(1, 2, 2, 2, 3, rng=RNG)
    y = emit("GridSample", [ph("x", x), ph("grid", grid)], {})
    with pytest.raises(FormatError, match="2-D images"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- Interpolate, read, and Resize, written --------------------------------------------------------
COORDINATES = [
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "align_corners",
]


NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _interpolate(
    version: int, x: Any, calc: str, values: list[Any], axes: list[int] | None, **attrs: Any
) -> Any:
    given = const(values, np.int64 if calc == "sizes" else np.float32)
    axes_node = None if axes is None else const(axes)
    if version == 11:
        return opset11.interpolate(x, given, shape_calculation_mode=calc, axes=axes_node, **attrs)
    other = const([1.0] * len(values), np.float32) if calc == "sizes" else const([1] * len(values))
    sizes, scales = (given, other) if calc == "sizes" else (other, given)
    return opset10.interpolate(
        x, sizes, scales, shape_calculation_mode=calc, axes=axes_node, **attrs
    )


X4 = rand_f32(2, 4, 7, 6)


@pytest.mark.parametrize("version", [4, 11])
@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "linear_onnx", "cubic"])
def test_interpolate_modes(version: int, ctm: str, mode: str, tmp_path: Path) -> None:
    x = rand_f32(1, 2, 5, 6)
    nearest = [*NEAREST, "simple"] if mode == "nearest" else NEAREST[:1]
    check(
        lambda x: (
            [
                _interpolate(
                    version,
                    x,
                    "sizes",
                    [9, 4],
                    [2, 3],
                    mode=mode,
                    coordinate_transformation_mode=ctm,
                    nearest_mode=nm,
                )
                for nm in nearest
            ]
            + [
                _interpolate(
                    version,
                    x,
                    "scales",
                    [2.0, 0.5],
                    [2, 3],
                    mode=mode,
                    coordinate_transformation_mode=ctm,
                    cube_coeff=-0.5,
                ),
                _interpolate(
                    version,
                    x,
                    "scales",
                    [0.7, 0.45],
                    [2, 3],
                    mode=mode,
                    coordinate_transformation_mode=ctm,
                ),
                _interpolate(
                    version,
                    x,
                    "scales",
                    [1.0, 1.0, 1.5, 2.0],
                    None,
                    mode=mode,
                    coordinate_transformation_mode=ctm,
                    pads_begin=[0, 0, 1, 0],
                    pads_end=[0, 0, 0, 2],
                ),
            ]
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("align", [False, True])
def test_interpolate_v1(mode: str, align: bool, tmp_path: Path) -> None:
    x = rand_f32(1, 2, 5, 6)

    def build(x: Any) -> Any:
        attrs = {"axes": [2, 3], "mode": mode, "align_corners": align}
        padded = {**attrs, "pads_begin": [0, 0, 1, 0], "pads_end": [0, 0, 0, 2]}
        return [
            opset1.interpolate(x, const([9, 4]), attrs),
            opset1.interpolate(x, const([3, 13]), padded),
            opset1.interpolate(x, const([7]), {**attrs, "axes": [3]}),
        ]

    check(build, x, tmp_path=tmp_path, rtol=1e-4, atol=1e-5)


def test_interpolate_left_out_cases_are_errors(tmp_path: Path) -> None:
    x = rand_f32(1, 2, 5, 6)
    two = const([2.0], np.float32)
    for build, message in [
        (
            lambda x: opset11.interpolate(
                x, two, "linear", "scales", axes=const([2]), antialias=True
            ),
            "antialias",
        ),
        (
            lambda x: opset11.interpolate(x, two, "bilinear_pillow", "scales", axes=const([2])),
            "bilinear_pillow",
        ),
        (
            lambda x: opset1.interpolate(x, const([4, 4]), {"axes": [2, 3], "mode": "area"}),
            "area",
        ),
    ]:
        with pytest.raises(tl.FormatError, match=message):
            check(build, x, tmp_path=tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_write_resize(ctm: str, mode: str, tmp_path: Path) -> None:
    x = ph("x", X4)
    empty = tl.constant(np.zeros(0, np.float32))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm, "cubic_coeff_a": -0.5}
    outs = {
        "sizes": emit(
            "Resize", [x, None, empty, tl.constant(np.array([9, 4]))], {**attrs, "axes": [2, 3]}
        ),
        "scales": emit(
            "Resize", [x, None, tl.constant(np.array([1, 1, 2, 0.5], np.float32))], attrs
        ),
    }
    for nm in NEAREST if mode == "nearest" else []:
        outs[nm] = emit(
            "Resize",
            [x, None, None, tl.constant(np.array([5, 11]))],
            {**attrs, "axes": [-2, -1], "nearest_mode": nm},
        )
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)
