"""OpenVINO image layers (read_image.py: Interpolate-1/4/11, GridSample, Col2Im,
ExtractImagePatches, the NV12/I420 colour conversions) vs. the CPU plugin, and the core Resize,
GridSample and Col2Im written back (write_image.py), run by the plugin."""

from __future__ import annotations

import math
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
    compile_cpu,
    const,
    ph,
    rand_f32,
    save_ir,
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
    for build, message in [
        (  # one axis grows, one shrinks: OpenVINO narrows the growing axis's filter
            lambda x: opset11.interpolate(
                x,
                const([2.0, 0.5], np.float32),
                "linear",
                "scales",
                axes=const([2, 3]),
                antialias=True,
            ),
            "narrows the filter",
        ),
        (
            lambda x: opset11.interpolate(
                x, const([2, 2, 2], np.float32), "bilinear_pillow", "scales", axes=const([1, 2, 3])
            ),
            "the \\(H, W\\) axes only",
        ),
        (
            lambda x: opset1.interpolate(x, const([4, 4]), {"axes": [2, 3], "mode": "area"}),
            "area",
        ),
    ]:
        with pytest.raises(tl.FormatError, match=message):
            check(build, x, tmp_path=tmp_path)


# -- the Pillow modes and linear with antialias ----------------------------------------------------
def _pillow_weights(n: int, m: int, mode: str, a: float) -> Any:
    """Pillow's [m, n] resampling matrix, as OpenVINO's spec and reference define it: scale
    n / m, the filter (triangle, or Keys' cubic with ``a``) widened by the scale when shrinking,
    over the taps [round(centre - support), round(centre + support)) on the input, normalized."""
    support = 1.0 if mode == "bilinear_pillow" else 2.0
    scale = n / m
    stretch = max(scale, 1.0)

    def filt(d: float) -> float:
        d = abs(d)
        if support == 1.0:
            return max(1.0 - d, 0.0)
        if d < 1:
            return ((a + 2) * d - (a + 3)) * d * d + 1
        return (((d - 5) * d + 8) * d - 4) * a if d < 2 else 0.0

    w = np.zeros((m, n))
    for o in range(m):
        centre = (o + 0.5) * scale
        lo = max(int(centre - support * stretch + 0.5), 0)
        hi = min(int(centre + support * stretch + 0.5), n)
        for j in range(lo, hi):
            w[o, j] = filt((j + 0.5 - centre) / stretch)
        w[o] /= w[o].sum()
    return w


def _pillow_oracle(x: Any, sizes: list[int], axes: list[int], mode: str, a: float) -> Any:
    """The Pillow modes, W (axes[-1]) first, in f64; integers rounded half away from zero and
    saturated after each pass."""
    y = x.astype(np.float64)
    for axis, size in reversed(list(zip(axes, sizes, strict=True))):
        w = _pillow_weights(y.shape[axis], size, mode, a)
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, axis, 0), axes=(1, 0)), 0, axis)
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            y = np.clip(np.sign(y) * np.floor(np.abs(y) + 0.5), info.min, info.max)
    return y.astype(x.dtype)


def _pillow(
    version: int, x: Any, mode: str, calc: str, values: list[Any], axes: list[int], **attrs: Any
) -> Any:
    return _interpolate(version, x, calc, values, axes, mode=mode, cube_coeff=-0.5, **attrs)


@pytest.mark.parametrize("version", [11])
@pytest.mark.parametrize("mode", ["bilinear_pillow", "bicubic_pillow"])
def test_interpolate_pillow(version: int, mode: str, tmp_path: Path) -> None:
    """Down, up, both, non-integer factors, scales whose product is not whole (Pillow's scale
    is input / output whatever the scales say), pads, and the axes listed W first."""
    x = rand_f32(2, 3, 9, 11, rng=RNG)
    got = check(
        lambda x: [
            _pillow(version, x, mode, "sizes", [3, 4], [2, 3]),
            _pillow(version, x, mode, "sizes", [20, 23], [2, 3]),
            _pillow(version, x, mode, "sizes", [4, 30], [2, 3]),
            _pillow(version, x, mode, "scales", [0.45, 0.7], [2, 3]),
            _pillow(version, x, mode, "scales", [2.5, 1.3], [2, 3]),
            _pillow(version, x, mode, "sizes", [5, 4], [3, 2]),
            _pillow(version, x, mode, "sizes", [7], [3]),
            _pillow(
                version,
                x,
                mode,
                "sizes",
                [4, 5],
                [2, 3],
                pads_begin=[0, 0, 1, 0],
                pads_end=[0, 0, 0, 2],
            ),
        ],
        x,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=2e-6,
    )
    first = next(iter(got.values()))
    np.testing.assert_allclose(
        first, _pillow_oracle(x, [3, 4], [2, 3], mode, -0.5), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("mode", ["bilinear_pillow", "bicubic_pillow"])
def test_interpolate_pillow_channels_last(mode: str, tmp_path: Path) -> None:
    check(
        lambda x: [
            _pillow(11, x, mode, "sizes", [4, 13], [1, 2]),
            _pillow(11, x, mode, "scales", [1.5, 0.5], [1, 2]),
        ],
        rand_f32(2, 9, 7, 3, rng=RNG),
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=2e-6,
    )


@pytest.mark.parametrize("mode", ["bilinear_pillow", "bicubic_pillow"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_interpolate_pillow_integers(mode: str, dtype: Any, tmp_path: Path) -> None:
    """Integer images are resampled W then H, each pass rounded half away from zero and
    saturated. Where the exact sum is a tie k + 1/2, rounding noise decides: the plugin's sums
    in f32, tensorloop's taps placed in f32 and summed in f64, and the spec's f64 may round it
    apart, so values may differ by one, and rarely do."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (1, 2, 9, 11), endpoint=True).astype(dtype)
    sizes = [[4, 5], [20, 23], [3, 30]]
    got = check(
        lambda x: [_pillow(11, x, mode, "sizes", s, [2, 3]) for s in sizes],
        x,
        tmp_path=tmp_path,
        rtol=0,
        atol=1,
    )
    for out, s in zip(got.values(), sizes, strict=True):
        want = _pillow_oracle(x, s, [2, 3], mode, -0.5)
        apart = np.abs(out.astype(np.int64) - want.astype(np.int64))
        assert apart.max() <= 1 and (apart != 0).mean() < 0.05


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_interpolate_pillow_written_as_onnx(dtype: Any, tmp_path: Path) -> None:
    """The Pillow modes are core ops ONNX has (Resize with antialias and exclude_outside, and
    for integers the rounding between passes): ONNX Runtime runs the written model alike."""
    ort = pytest.importorskip("onnxruntime")
    x = (RNG.uniform(0, 255, (1, 2, 9, 11))).astype(dtype)
    p = ops.parameter(x.shape, dtype, name="x0")
    outs = [
        _pillow(11, p, mode, "sizes", [4, 17], [2, 3])
        for mode in ("bilinear_pillow", "bicubic_pillow")
    ]
    model = tl.load(save_ir(outs, [p], tmp_path))
    ours = model.run({"x0": x})
    tl.save(model, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    theirs = session.run(None, {"x0": x})
    for name, got in zip(model.output_names, theirs, strict=True):
        assert got.dtype == ours[name].dtype
        np.testing.assert_allclose(got, ours[name], rtol=1e-5, atol=1e-5)


def test_interpolate_bicubic_pillow_takes_cube_coeff(tmp_path: Path) -> None:
    """The spec (and OpenVINO's reference) weigh bicubic_pillow with cube_coeff; the CPU plugin
    always uses -0.5. tensorloop follows the spec, pinned here by the spec's algorithm; an image
    of int8 likewise (within one at ties)."""
    rng = np.random.default_rng(11)
    for x in (rand_f32(1, 2, 9, 11, rng=rng), rng.integers(-128, 128, (1, 2, 9, 11))):
        x = x.astype(np.int8) if x.dtype.kind == "i" else x
        p = ops.parameter(x.shape, x.dtype, name="x0")
        y = _interpolate(11, p, "sizes", [4, 17], [2, 3], mode="bicubic_pillow", cube_coeff=-0.75)
        model = tl.load(save_ir([y], [p], tmp_path))
        (got,) = model.run({"x0": x}).values()
        want = _pillow_oracle(x, [4, 17], [2, 3], "bicubic_pillow", -0.75)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 if x.dtype.kind == "f" else 1)
    with pytest.raises(tl.FormatError, match=r"bicubic_pillow with -0\.5"):
        tl.save(model, tmp_path / "w.xml")


def _linear_antialias_oracle(x: Any, scales: list[float], axes: list[int], ctm: str) -> Any:
    """OpenVINO's linear mode with antialias, as its spec writes it: every axis's triangle
    scaled by its scale a (when any axis shrinks), over the taps within ceil(2 / a) of the
    rounded coordinate that lie on the input, normalized."""
    y = x.astype(np.float64)
    for axis, s in zip(axes, scales, strict=True):
        n = x.shape[axis]
        m = math.floor(np.float32(s) * np.float32(n))
        w = np.zeros((m, n))
        for o in range(m):
            c = {
                "half_pixel": (o + 0.5) / s - 0.5,
                "asymmetric": o / s,
                "align_corners": 0.0 if m == 1 else o * (n - 1) / (m - 1),
            }[ctm]
            r = math.ceil(2 / s)
            for j in range(round(c) - r, round(c) + r + 1):
                if 0 <= j < n:
                    w[o, j] = max(0.0, 1 - abs(s * (c - j)))
            w[o] /= w[o].sum()
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, axis, 0), axes=(1, 0)), 0, axis)
    return y.astype(x.dtype)


@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners"])
def test_interpolate_linear_antialias(ctm: str, tmp_path: Path) -> None:
    """Over 5-D data the CPU plugin antialiases as the spec says: compared with it and written
    back. Over 4-D data it ignores antialias: tensorloop follows the spec, pinned by it."""
    x5 = rand_f32(1, 2, 6, 10, 10, rng=RNG)
    scales = [0.5, 0.5, 0.4]
    got = check(
        lambda x: _interpolate(
            11,
            x,
            "scales",
            scales,
            [2, 3, 4],
            mode="linear",
            antialias=True,
            coordinate_transformation_mode=ctm,
        ),
        x5,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=2e-6,
        write=ctm != "align_corners",
    )
    (out,) = got.values()
    np.testing.assert_allclose(
        out, _linear_antialias_oracle(x5, scales, [2, 3, 4], ctm), rtol=1e-6, atol=1e-6
    )
    x4 = rand_f32(2, 3, 10, 10, rng=RNG)
    p = ops.parameter(x4.shape, np.float32, name="x0")
    y = _interpolate(
        11,
        p,
        "scales",
        [0.6, 0.3],
        [2, 3],
        mode="linear",
        antialias=True,
        coordinate_transformation_mode=ctm,
    )
    model = tl.load(save_ir([y], [p], tmp_path))
    (got4,) = model.run({"x0": x4}).values()
    want = _linear_antialias_oracle(x4, [0.6, 0.3], [2, 3], ctm)
    np.testing.assert_allclose(got4, want, rtol=1e-6, atol=1e-6)
    if ctm == "half_pixel":  # scales that divide evenly: bilinear_pillow computes the same
        written_runs_alike(model, {"x0": x4}, tmp_path, rtol=1e-5, atol=2e-6)
    else:
        with pytest.raises(tl.FormatError, match="computes alike"):
            tl.save(model, tmp_path / "w.xml")


def test_interpolate_v1_linear_antialias(tmp_path: Path) -> None:
    """Interpolate-1 as OpenVINO reads it (Interpolate-4, asymmetric over the spatial axes of
    4-D data) with the spec's antialias, which the CPU plugin ignores below rank 5: pinned."""
    x = rand_f32(2, 3, 10, 10, rng=RNG)
    p = ops.parameter(x.shape, np.float32, name="x0")
    attrs = {"axes": [2, 3], "mode": "linear", "antialias": True, "align_corners": False}
    y = opset1.interpolate(p, const([5, 4]), attrs)
    (got,) = tl.load(save_ir([y], [p], tmp_path)).run({"x0": x}).values()
    want = _linear_antialias_oracle(x, [0.5, 0.4], [2, 3], "asymmetric")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


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


# -- antialias outside shrinking linear mode -------------------------------------------------------
ANTIALIAS_CASES = [("scales", [0.5, 0.4]), ("sizes", [4, 17]), ("scales", [2.0, 1.5]),
                   ("scales", [0.6, 2.0])]  # fmt: skip
"""Shrinking both axes, shrinking one and growing the other (by sizes), growing both, and
shrinking one while growing the other (by scales)."""


@pytest.mark.parametrize(
    ("version", "mode"),
    [(v, m) for v in (4, 11) for m in ("nearest", "linear_onnx", "cubic")]
    + [(11, "bilinear_pillow"), (11, "bicubic_pillow")],
)
def test_interpolate_antialias_outside_linear_mode(version: int, mode: str, tmp_path: Path) -> None:
    """antialias changes mode 'linear' alone: the spec's algorithm (Interpolate-4's) reads it in
    linear interpolation only, and Interpolate-11's says the Pillow modes ignore it (they widen
    their filter when shrinking whatever it says). The CPU plugin and OpenVINO's reference
    implementation ignore it too. Each case with antialias and without: alike the plugin,
    written back, and equal to each other."""
    x = rand_f32(1, 2, 10, 12, rng=RNG)
    coeff = -0.5 if mode == "bicubic_pillow" else -0.75  # the plugin's bicubic_pillow is -0.5
    got = check(
        lambda x: [
            _interpolate(
                version, x, calc, values, [2, 3], mode=mode, antialias=aa, cube_coeff=coeff
            )
            for calc, values in ANTIALIAS_CASES
            for aa in (True, False)
        ],
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )
    assert (tmp_path / "m.xml").read_text().count('antialias="true"') == len(ANTIALIAS_CASES)
    outs = list(got.values())
    for with_antialias, without in zip(outs[::2], outs[1::2], strict=True):
        np.testing.assert_array_equal(with_antialias, without)


def test_interpolate_linear_antialias_with_no_axis_shrinking(tmp_path: Path) -> None:
    """Where no axis shrinks, the spec's linear mode does not antialias (nor does OpenVINO's
    reference implementation), and over 4-D data the CPU plugin does not; over 5-D data the
    plugin narrows each growing axis's triangle to 1 / scale all the same (pinned here).
    tensorloop follows the spec: the plugin's run without antialias, written back alike."""
    x = rand_f32(1, 2, 4, 10, 12, rng=RNG)
    p = ops.parameter(x.shape, np.float32, name="x0")
    outs = [
        _interpolate(11, p, "scales", [2.0, 1.5], [3, 4], mode="linear", antialias=aa)
        for aa in (True, False)
    ]
    path = save_ir(outs, [p], tmp_path)
    model = tl.load(path)
    ours = list(model.run({"x0": x}).values())
    theirs = [np.asarray(v) for v in compile_cpu(path)({"x0": x}).values()]
    np.testing.assert_array_equal(ours[0], ours[1])
    np.testing.assert_allclose(ours[0], theirs[1], rtol=1e-5, atol=2e-6)
    narrowed = _linear_antialias_oracle(x, [2.0, 1.5], [3, 4], "half_pixel")
    np.testing.assert_allclose(theirs[0], narrowed, rtol=1e-5, atol=2e-6)
    assert np.abs(theirs[0] - theirs[1]).max() > 0.1
    written_runs_alike(model, {"x0": x}, tmp_path, rtol=1e-5, atol=2e-6)
