"""OpenVINO convolution, pooling, normalisation, quantisation and resize layers vs. the CPU
plugin, and the writer's emitters for their core ops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset2, opset5, opset6, opset8, opset10, opset11, opset12, opset14  # noqa: E402
from openvino_layer_checks import check, const, rand_f32, written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402

# -- convolutions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strides", "pads", "dilations", "auto_pad"),
    [
        ([1, 1], ([0, 0], [0, 0]), [1, 1], "explicit"),
        ([2, 1], ([1, 0], [2, 1]), [1, 2], "explicit"),
        ([2, 2], ([0, 0], [0, 0]), [1, 1], "same_upper"),
        ([2, 3], ([0, 0], [0, 0]), [1, 1], "same_lower"),
        ([1, 2], ([3, 3], [3, 3]), [2, 1], "valid"),
    ],
)
def test_convolution(
    strides: list[int], pads: Any, dilations: list[int], auto_pad: str, tmp_path: Path
) -> None:
    w = rand_f32(4, 3, 3, 2)
    check(
        lambda x: opset1.convolution(x, ops.constant(w), strides, *pads, dilations, auto_pad),
        rand_f32(2, 3, 7, 8),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("rank", [1, 3])
def test_convolution_other_ranks_and_group(rank: int, tmp_path: Path) -> None:
    k = [2] * rank
    w = rand_f32(3, 2, 2, *k)  # 3 groups of 2 outputs, 2 inputs each
    w2 = rand_f32(4, 6, *k)
    x = rand_f32(1, 6, *[5] * rank)
    ones, zeros = [1] * rank, [0] * rank
    check(
        lambda x: [
            opset1.group_convolution(x, ops.constant(w), ones, ones, zeros, ones),
            opset1.convolution(x, ops.constant(w2), [2] * rank, ones, zeros, ones),
        ],
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("strides", "pads", "extra", "auto_pad", "out"),
    [
        ([1, 1], ([0, 0], [0, 0]), [0, 0], "explicit", None),
        ([2, 3], ([1, 0], [0, 2]), [1, 2], "explicit", None),
        ([2, 2], ([0, 0], [0, 0]), [0, 0], "valid", None),
        ([2, 2], ([1, 0], [0, 2]), [0, 0], "same_upper", None),
        ([2, 3], ([0, 0], [0, 0]), [0, 0], "same_lower", None),
        ([2, 2], ([0, 0], [0, 0]), [0, 0], "explicit", [8, 9]),
        ([2, 2], ([1, 0], [0, 2]), [0, 1], "explicit", [8, 9]),
        ([2, 2], ([0, 0], [0, 0]), [0, 0], "valid", [7, 9]),
        ([1, 2], ([0, 0], [0, 0]), [0, 0], "same_upper", [4, 7]),
        ([2, 2], ([0, 0], [0, 0]), [1, 0], "same_upper", [8, 9]),
        ([2, 2], ([0, 0], [0, 0]), [0, 0], "same_lower", [8, 9]),
    ],
)
def test_convolution_backprop_data(
    strides: list[int], pads: Any, extra: list[int], auto_pad: str, out: Any, tmp_path: Path
) -> None:
    w = rand_f32(3, 2, 3, 3)
    wg = rand_f32(3, 1, 2, 3, 3)

    def build(x: Any) -> Any:
        shape = None if out is None else const(out)
        return [
            opset1.convolution_backprop_data(
                x, ops.constant(w), strides, shape, *pads, [1, 1], auto_pad, extra
            ),
            opset1.group_convolution_backprop_data(
                x, ops.constant(wg), strides, shape, *pads, [1, 1], auto_pad, extra
            ),
        ]

    check(build, rand_f32(2, 3, 4, 5), tmp_path=tmp_path, rtol=1e-4, atol=1e-5)


# -- pooling --------------------------------------------------------------------------------------

POOLS = [
    # strides, pads_begin, pads_end, kernel, rounding, auto_pad
    ([1, 1], [0, 0], [0, 0], [2, 2], "floor", "explicit"),
    ([2, 2], [1, 0], [0, 1], [3, 2], "floor", "explicit"),
    ([2, 2], [0, 0], [0, 0], [2, 2], "ceil", "explicit"),
    ([2, 2], [0, 0], [1, 1], [2, 2], "ceil", "explicit"),
    ([2, 3], [0, 0], [0, 0], [3, 2], "floor", "same_upper"),
    ([2, 3], [0, 0], [0, 0], [3, 2], "floor", "same_lower"),
    ([2, 2], [1, 1], [1, 1], [2, 2], "floor", "valid"),
]


@pytest.mark.parametrize("pool", POOLS)
def test_max_pool_v1(pool: Any, tmp_path: Path) -> None:
    s, pb, pe, k, r, a = pool
    check(lambda x: opset1.max_pool(x, s, pb, pe, k, r, a), rand_f32(2, 3, 6, 7), tmp_path=tmp_path)


@pytest.mark.parametrize("pool", POOLS)
@pytest.mark.parametrize("exclude", [True, False])
def test_avg_pool_v1(pool: Any, exclude: bool, tmp_path: Path) -> None:
    s, pb, pe, k, r, a = pool
    check(
        lambda x: opset1.avg_pool(x, s, pb, pe, k, exclude, r, a),
        rand_f32(2, 3, 6, 7),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("opset", [opset8, opset14])
@pytest.mark.parametrize("axis", [0, 2, -2])
@pytest.mark.parametrize("rounding", ["floor", "ceil", "ceil_torch"])
def test_max_pool_indices(opset: Any, axis: int, rounding: str, tmp_path: Path) -> None:
    if rounding == "ceil_torch" and opset is opset8:
        pytest.skip("MaxPool-8 has no ceil_torch")

    def build(x: Any) -> Any:
        pool = opset.max_pool(
            x, [2, 2], [1, 2], [0, 0], [1, 1], [2, 3], rounding, "explicit", "i32", axis
        )
        return [pool.output(0), pool.output(1)]

    check(build, rand_f32(2, 3, 6, 7), tmp_path=tmp_path)


@pytest.mark.parametrize("rounding", ["floor", "ceil", "ceil_torch"])
@pytest.mark.parametrize("exclude", [True, False])
def test_avg_pool_v14(rounding: str, exclude: bool, tmp_path: Path) -> None:
    check(
        lambda x: opset14.avg_pool(x, [2, 2], [0, 1], [1, 1], [2, 2], exclude, rounding),
        rand_f32(1, 2, 5, 6),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


# -- normalisations -------------------------------------------------------------------------------


@pytest.mark.parametrize("across", [True, False])
@pytest.mark.parametrize("variance", [True, False])
def test_mvn_v1(across: bool, variance: bool, tmp_path: Path) -> None:
    check(
        lambda x: opset2.mvn(x, across, variance, 1e-3),
        rand_f32(2, 3, 4, 5),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("axes", [[2, 3], [1], [-1, 1]])
@pytest.mark.parametrize("mode", ["inside_sqrt", "outside_sqrt"])
def test_mvn_v6(axes: list[int], mode: str, tmp_path: Path) -> None:
    check(
        lambda x: [
            opset6.mvn(x, const(axes), True, 0.01, mode),
            opset6.mvn(x, const(axes, np.int32), False, 0.01, mode),
        ],
        rand_f32(2, 3, 4, 5),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("axes", [[1], [2, 3], [0, 1, 2, 3]])
@pytest.mark.parametrize("mode", ["add", "max"])
def test_normalize_l2(axes: list[int], mode: str, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4, 5)
    x[0, :, 0, 0] = 0
    check(
        lambda x: ops.normalize_l2(x, const(axes), 1e-2, mode),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("axes", [[1], [2, 3]])
@pytest.mark.parametrize("size", [3, 4])
def test_lrn(axes: list[int], size: int, tmp_path: Path) -> None:
    check(
        lambda x: opset1.lrn(x, const(axes), 0.5, 0.75, 2.0, size),
        rand_f32(2, 5, 4, 5),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


def test_batch_norm_inference_v1_and_v5(tmp_path: Path) -> None:
    g, b, m = rand_f32(3), rand_f32(3), rand_f32(3)
    v = np.abs(rand_f32(3)) + 0.1
    c = [ops.constant(a) for a in (g, b, m, v)]
    check(
        lambda x: [
            opset1.batch_norm_inference(x, c[0], c[1], c[2], c[3], 1e-3),
            opset5.batch_norm_inference(x, c[0], c[1], c[2], c[3], 1e-3),
        ],
        rand_f32(2, 3, 4, 5),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


def test_grn_and_group_normalization(tmp_path: Path) -> None:
    s, b = rand_f32(4), rand_f32(4)
    check(
        lambda x: [
            opset1.grn(x, 0.5),
            opset12.group_normalization(x, ops.constant(s), ops.constant(b), 2, 1e-3),
        ],
        rand_f32(2, 4, 3, 5),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


# -- quantisation and blocks ----------------------------------------------------------------------


@pytest.mark.parametrize("levels", [2, 16, 256])
def test_fake_quantize(levels: int, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4) * 2
    lo = np.array([-1.0, -0.5, 0.2], np.float32).reshape(1, 3, 1)
    hi = np.array([1.0, 1.5, 0.3], np.float32).reshape(1, 3, 1)
    check(
        lambda x: ops.fake_quantize(
            x,
            ops.constant(lo),
            ops.constant(hi),
            const(-2.0, np.float32),
            const(3.0, np.float32),
            levels,
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("shape", [(2, 8, 4, 6), (2, 4, 6), (1, 16, 2, 4, 6)])
def test_depth_to_space_and_back(mode: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    check(
        lambda x: [ops.depth_to_space(x, mode, 2), ops.space_to_depth(x, mode, 2)],
        rand_f32(*shape),
        tmp_path=tmp_path,
    )


# -- resize ---------------------------------------------------------------------------------------

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


# -- the writer: tensorloop models saved as IR, run by OpenVINO -----------------------------------


@pytest.fixture
def fresh() -> None:
    tl.reset()


def _ph(name: str, a: Any) -> Any:
    return tl.placeholder(a.dtype, a.shape, name=name)


def _c(a: Any) -> Any:
    return tl.constant(np.asarray(a))


X4 = rand_f32(2, 4, 7, 6)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER", "strides": [2, 3]},
        {"auto_pad": "VALID", "group": 2},
        {"group": 4, "pads": [1, 1, 1, 1]},
    ],
)
def test_write_conv(attrs: dict[str, Any], tmp_path: Path) -> None:
    group = attrs.get("group", 1)
    w, b = rand_f32(8, 4 // group, 3, 2), rand_f32(8)
    x = _ph("x", X4)
    outs = {
        "y": emit("Conv", [x, _c(w), _c(b)], attrs),
        "nobias": emit("Conv", [x, _c(w)], attrs),
    }
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"strides": [2, 3], "pads": [1, 0, 0, 2], "output_padding": [1, 2]},
        {"strides": [2, 2], "output_shape": [15, 13]},
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
        {"auto_pad": "SAME_LOWER", "strides": [2, 3], "group": 2},
        {"auto_pad": "VALID", "group": 4, "dilations": [2, 1]},
    ],
)
def test_write_conv_transpose(attrs: dict[str, Any], tmp_path: Path) -> None:
    group = attrs.get("group", 1)
    w = rand_f32(4, 6 // group, 3, 3)
    b = rand_f32(w.shape[1] * group)
    x = _ph("x", X4)
    outs = {"y": emit("ConvTranspose", [x, _c(w), _c(b)], attrs)}
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [2, 2]},
        {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]},
        {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1, "pads": [0, 0, 1, 1]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"kernel_shape": [2, 3], "strides": [2, 3], "auto_pad": "SAME_LOWER"},
        {"kernel_shape": [2, 2], "auto_pad": "VALID", "strides": [3, 2]},
    ],
)
def test_write_pools(attrs: dict[str, Any], tmp_path: Path) -> None:
    x = _ph("x", X4)
    values, index = emit_node("MaxPool", [x], attrs)
    outs = {"max": values, "index": index}
    outs["dilated"] = emit_node("MaxPool", [x], {**attrs, "dilations": [1, 2]})[0]
    outs["avg"] = emit("AveragePool", [x], attrs)
    outs["avg_pads"] = emit("AveragePool", [x], {**attrs, "count_include_pad": 1})
    outs["gavg"] = emit("GlobalAveragePool", [x])
    outs["gmax"] = emit("GlobalMaxPool", [x])
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("fresh")
def test_write_normalizations(tmp_path: Path) -> None:
    x = _ph("x", X4)
    s, b, m = rand_f32(4), rand_f32(4), rand_f32(4)
    v = np.abs(rand_f32(4)) + 0.1
    bn = emit_node("BatchNormalization", [x, _c(s), _c(b), _c(m), _c(v)], {"epsilon": 1e-3})
    outs = {"bn": bn[0]}
    outs["lrn"] = emit("LRN", [x], {"size": 3, "alpha": 0.5, "beta": 0.75, "bias": 2.0})
    outs["inorm"] = emit("InstanceNormalization", [x, _c(s), _c(b)], {"epsilon": 1e-3})
    y, mean, inv = emit_node("LayerNormalization", [x, _c(rand_f32(7, 6))], {"axis": 2})
    outs |= {"lnorm": y, "mean": mean, "inv": inv}
    outs["lnorm_b"] = emit_node(
        "LayerNormalization", [x, _c(rand_f32(6)), _c(rand_f32(6))], {"epsilon": 0.1}
    )[0]
    outs["mvn"] = emit("MeanVarianceNormalization", [x])
    outs["mvn1"] = emit("MeanVarianceNormalization", [x], {"axes": [1, -1]})
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_write_blocks(mode: str, tmp_path: Path) -> None:
    x = _ph("x", X4[:, :, :6])
    outs = {
        "d2s": emit("DepthToSpace", [x], {"blocksize": 2, "mode": mode}),
        "s2d": emit("SpaceToDepth", [x], {"blocksize": 2, "mode": mode}),
    }
    written_runs_alike(tl.Model(outs), {"x": X4[:, :, :6]}, tmp_path)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("ctm", COORDINATES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_write_resize(ctm: str, mode: str, tmp_path: Path) -> None:
    x = _ph("x", X4)
    empty = _c(np.zeros(0, np.float32))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm, "cubic_coeff_a": -0.5}
    outs = {
        "sizes": emit("Resize", [x, None, empty, _c(np.array([9, 4]))], {**attrs, "axes": [2, 3]}),
        "scales": emit("Resize", [x, None, _c(np.array([1, 1, 2, 0.5], np.float32))], attrs),
    }
    for nm in NEAREST if mode == "nearest" else []:
        outs[nm] = emit(
            "Resize",
            [x, None, None, _c(np.array([5, 11]))],
            {**attrs, "axes": [-2, -1], "nearest_mode": nm},
        )
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize(
    ("op", "attrs", "extra", "message"),
    [
        ("LRN", {"size": 4}, [], "even size"),
        ("MaxPool", {"kernel_shape": [2, 2], "storage_order": 1}, [], "storage_order"),
        ("AveragePool", {"kernel_shape": [2, 2], "dilations": [2, 2]}, [], "dilations"),
        (
            "Resize",
            {"coordinate_transformation_mode": "half_pixel_symmetric"},
            ["scales"],
            "half_pixel_symmetric",
        ),
        ("Resize", {"antialias": 1, "mode": "linear"}, ["scales"], "antialias"),
        ("Resize", {"coordinate_transformation_mode": "align_corners"}, ["odd"], "align_corners"),
    ],
)
def test_write_left_out_cases_are_errors(
    op: str, attrs: dict[str, Any], extra: list[str], message: str, tmp_path: Path
) -> None:
    x = _ph("x", X4)
    ins: list[Any] = [x]
    if extra:
        scale = 1.5 if extra == ["odd"] else 2.0
        ins += [None, _c(np.array([1, 1, scale, 2], np.float32))]
    y = emit_node(op, ins, attrs)[0]
    with pytest.raises(tl.FormatError, match=message):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


def test_fake_quantize_reversed_scalar_range(tmp_path: Path) -> None:
    # Below min(low, high) gives output_low, above the max output_high, as the spec says.
    x = np.linspace(-1, 1, 21).astype(np.float32)
    f = ops.constant
    check(
        lambda x: ops.fake_quantize(
            x, f(np.float32(0.2)), f(np.float32(-0.3)), f(np.float32(-2)), f(np.float32(3)), 16
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-6,
    )
