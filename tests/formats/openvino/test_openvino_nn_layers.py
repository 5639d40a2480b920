"""OpenVINO convolution (binary and deformable too), pooling, normalisation and attention layers
(read_nn.py) vs. the CPU plugin and, where the plugin strays from it, the spec; and the core ops
write_nn.py writes, run by the plugin."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset2, opset5, opset6, opset8, opset12, opset14, opset16  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    const,
    edit_ir,
    ph,
    rand_f32,
    run_path,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

RNG = np.random.default_rng(7)


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


def _normalize_l2(x: Any, axes: list[int], eps: float, mode: str) -> Any:
    """NormalizeL2 with ``eps_mode``, set on the node: OpenVINO's builder hands the mode over as
    an attribute "mode", which the node does not have, so its eps_mode would stay "add"."""
    node = ops.normalize_l2(x, const(axes), eps, mode)
    node.set_attribute("eps_mode", mode)
    return node


@pytest.mark.parametrize("axes", [[1], [2, 3], [0, 1, 2, 3]])
@pytest.mark.parametrize("mode", ["add", "max"])
def test_normalize_l2(axes: list[int], mode: str, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4, 5)
    x[0, :, 0, 0] = 0
    check(
        lambda x: _normalize_l2(x, axes, 1e-2, mode),
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


# -- the writer: tensorloop models saved as IR, run by OpenVINO -----------------------------------


X4 = rand_f32(2, 4, 7, 6, rng=np.random.default_rng(4))  # not the import order's draw


@pytest.mark.usefixtures("_fresh_builder")
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
    rng = np.random.default_rng(zlib.crc32(repr(attrs).encode()))  # not the tests' order's
    w, b = rand_f32(8, 4 // group, 3, 2, rng=rng), rand_f32(8, rng=rng)
    x = ph("x", X4)
    outs = {
        "y": emit("Conv", [x, tl.constant(w), tl.constant(b)], attrs),
        "nobias": emit("Conv", [x, tl.constant(w)], attrs),
    }
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
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
    rng = np.random.default_rng(zlib.crc32(repr(attrs).encode()))  # not the tests' order's
    w = rand_f32(4, 6 // group, 3, 3, rng=rng)
    b = rand_f32(w.shape[1] * group, rng=rng)
    x = ph("x", X4)
    outs = {"y": emit("ConvTranspose", [x, tl.constant(w), tl.constant(b)], attrs)}
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
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
    x = ph("x", X4)
    values, index = emit_node("MaxPool", [x], attrs)
    outs = {"max": values, "index": index}
    outs["dilated"] = emit_node("MaxPool", [x], {**attrs, "dilations": [1, 2]})[0]
    outs["avg"] = emit("AveragePool", [x], attrs)
    outs["avg_pads"] = emit("AveragePool", [x], {**attrs, "count_include_pad": 1})
    outs["gavg"] = emit("GlobalAveragePool", [x])
    outs["gmax"] = emit("GlobalMaxPool", [x])
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_write_normalizations(tmp_path: Path) -> None:
    x = ph("x", X4)
    s, b, m = rand_f32(4), rand_f32(4), rand_f32(4)
    v = np.abs(rand_f32(4)) + 0.1
    bn = emit_node(
        "BatchNormalization",
        [x, tl.constant(s), tl.constant(b), tl.constant(m), tl.constant(v)],
        {"epsilon": 1e-3},
    )
    outs = {"bn": bn[0]}
    outs["lrn"] = emit("LRN", [x], {"size": 3, "alpha": 0.5, "beta": 0.75, "bias": 2.0})
    outs["inorm"] = emit(
        "InstanceNormalization", [x, tl.constant(s), tl.constant(b)], {"epsilon": 1e-3}
    )
    y, mean, inv = emit_node("LayerNormalization", [x, tl.constant(rand_f32(7, 6))], {"axis": 2})
    outs |= {"lnorm": y, "mean": mean, "inv": inv}
    outs["lnorm_b"] = emit_node(
        "LayerNormalization",
        [x, tl.constant(rand_f32(6)), tl.constant(rand_f32(6))],
        {"epsilon": 0.1},
    )[0]
    outs["mvn"] = emit("MeanVarianceNormalization", [x])
    outs["mvn1"] = emit("MeanVarianceNormalization", [x], {"axes": [1, -1]})
    written_runs_alike(tl.Model(outs), {"x": X4}, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
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
    x = ph("x", X4)
    ins: list[Any] = [x]
    if extra:
        scale = 1.5 if extra == ["odd"] else 2.0
        ins += [None, tl.constant(np.array([1, 1, scale, 2], np.float32))]
    y = emit_node(op, ins, attrs)[0]
    with pytest.raises(tl.FormatError, match=message):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- DeformableConvolution, ScaledDotProductAttention and the adaptive pools -----------------------


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


@pytest.mark.parametrize(
    ("version", "strides", "pads", "dilations", "group", "dgroup", "masked"),
    [
        ("v1", [1, 1], ([0, 0], [0, 0]), [1, 1], 1, 1, False),
        ("v1", [2, 1], ([1, 0], [0, 2]), [1, 2], 2, 2, False),
        ("v8", [1, 1], ([1, 1], [1, 1]), [1, 1], 1, 1, False),
        ("v8", [2, 1], ([1, 0], [0, 2]), [1, 2], 2, 2, True),
        ("v8", [1, 2], ([1, 1], [1, 1]), [2, 1], 1, 2, True),
    ],
)
def test_deformable_convolution_without_the_interpolation_pad(
    version: str, strides: list[int], pads: Any, dilations: list[int], group: int, dgroup: int,
    masked: bool, tmp_path: Path,
) -> None:  # fmt: skip
    """bilinear_interpolation_pad=false (v1's only way, v8's default): samples off X read 0,
    samples past the last pixel read it."""
    x = rand_f32(2, 4, 6, 7)
    w = rand_f32(6, 4 // group, 3, 2)
    out = [
        (s + pads[0][i] + pads[1][i] - dilations[i] * (k - 1) - 1) // strides[i] + 1
        for i, (s, k) in enumerate(zip((6, 7), (3, 2), strict=True))
    ]
    offsets = (RNG.standard_normal((2, dgroup * 6 * 2, *out)) * 2.5).astype(np.float32)
    offsets[0, :4] = np.float32(0.5)  # halfway between pixels, past the far edge for some taps
    arrays = [x, offsets]
    if masked:
        arrays.append(RNG.uniform(0, 1, (2, dgroup * 6, *out)).astype(np.float32))

    def build(x: Any, off: Any, *mask: Any) -> Any:
        if version == "v1":
            return opset1.deformable_convolution(
                x, off, ops.constant(w), strides, *pads, dilations, "explicit", group, dgroup
            )
        return opset8.deformable_convolution(
            x, off, ops.constant(w), strides, *pads, dilations, mask[0] if mask else None,
            "explicit", group, dgroup, False,
        )  # fmt: skip

    got = check(build, *arrays, tmp_path=tmp_path, rtol=1e-4, atol=1e-4)
    # The pad matters here: the same model with it gives other results.
    model = tl.load(tmp_path / "m.xml")
    (node,) = [n for n in model.graph.nodes if n.op == "DeformConv"]
    assert node.attrs["bilinear_interpolation_pad"] == 0
    node.attrs["bilinear_interpolation_pad"] = 1
    padded = model.run({f"x{i}": a for i, a in enumerate(arrays)})
    assert not np.allclose(next(iter(padded.values())), next(iter(got.values())))


def test_deformable_convolution_sample_past_the_edge_reads_the_edge(tmp_path: Path) -> None:
    """A 1x1 filter of 1 shows the samples themselves: off X 0; within X bilinear; between the
    last pixel and the edge, the last pixel (the pad would blend it with 0)."""
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)
    shifts = [(0.0, 0.0), (0.5, 0.5), (2.5, 0.0), (0.0, 3.5), (-1.5, 0.0), (0.0, -1.0), (3.0, 0.0)]
    offsets = np.zeros((1, 2, 3, 4), np.float32)
    for k, (dy, dx) in enumerate(shifts):
        offsets[0, 0].flat[k], offsets[0, 1].flat[k] = dy, dx
    w = np.ones((1, 1, 1, 1), np.float32)
    got = check(
        lambda x, off: opset8.deformable_convolution(
            x, off, ops.constant(w), [1, 1], [0, 0], [0, 0], [1, 1]
        ),
        x,
        offsets,
        tmp_path=tmp_path,
    )
    flat = next(iter(got.values())).reshape(-1)
    # taps at (0,0)+(0,0); (0,1)+(.5,.5); (0,2)+(2.5,0); (0,3)+(0,3.5); (1,0)+(-1.5,0);
    # (1,1)+(0,-1); (1,2)+(3,0); the rest unmoved.
    want = [1.0, (2 + 3 + 6 + 7) / 4, 11.0, 0.0, 0.0, 5.0, 0.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    np.testing.assert_allclose(flat, want, rtol=1e-6)


def test_onnx_writer_refuses_deformable_convolution_without_the_pad(tmp_path: Path) -> None:
    x, off = rand_f32(1, 2, 5, 5), rand_f32(1, 8, 4, 4)
    w = ops.constant(rand_f32(3, 2, 2, 2))
    params = [ops.parameter(a.shape, np.float32, name=f"x{i}") for i, a in enumerate((x, off))]
    out = opset1.deformable_convolution(*params[:2], w, [1, 1], [0, 0], [0, 0], [1, 1])
    path = save_ir([out], params, tmp_path)
    with pytest.raises(
        FormatError, match="'bilinear_interpolation_pad' = 0 does not exist in DeformConv"
    ):
        tl.save(tl.load(path), tmp_path / "m.onnx")


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


# -- the writer: Group, RMS and Lp normalisation, Dropout ------------------------------------------


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_writer_group_normalization(groups: int, tmp_path: Path) -> None:
    x, scale, bias = rand_f32(2, 6, 3, 4, rng=RNG), rand_f32(6, rng=RNG), rand_f32(6, rng=RNG)
    p = ph("x", x)
    attrs = {"num_groups": groups, "epsilon": 1e-3}
    outs = {"y": emit("GroupNormalization", [p, tl.constant(scale), tl.constant(bias)], attrs)}
    half = x.astype(np.float16)
    h = ph("h", half)
    hs, hb = tl.constant(scale.astype(np.float16)), tl.constant(bias.astype(np.float16))
    outs["half"] = emit("GroupNormalization", [h, hs, hb], attrs)
    feeds = {"x": x, "h": half}
    written_runs_alike(tl.Model(outs), feeds, tmp_path, rtol=2e-3, atol=5e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_writer_rms_normalization(axis: int, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 5, rng=RNG)
    scale = rand_f32(*x.shape[axis:], rng=RNG)
    p = ph("x", x)
    attrs = {"axis": axis, "epsilon": 1e-4}
    outs = {"y": emit("RMSNormalization", [p, tl.constant(scale)], attrs)}
    half = x.astype(np.float16)
    h = ph("h", half)
    outs["half"] = emit(
        "RMSNormalization", [h, tl.constant(scale.astype(np.float16))], {**attrs, "stash_type": 1}
    )
    written_runs_alike(tl.Model(outs), {"x": x, "h": half}, tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("p", "axis"), [(1, -1), (2, -1), (2, 0), (1, 1)])
def test_writer_lp_normalization(p: int, axis: int, tmp_path: Path) -> None:
    x = rand_f32(3, 4, 5, rng=RNG)
    x[1, :, 2] = 0  # zero norms along axis 1
    x[2, 3, :] = 0  # and along the last axis
    x[:, 0, 0] = 0  # and along axis 0
    q = ph("x", x)
    y = emit("LpNormalization", [q], {"p": p, "axis": axis})
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dropout(tmp_path: Path) -> None:
    x = rand_f32(3, 4, rng=RNG)
    p = ph("x", x)
    y, mask = emit_node("Dropout", [p, tl.constant(np.float32(0.3))])
    off, off_mask = emit_node(
        "Dropout", [p, tl.constant(np.float32(0.5)), tl.constant(np.array(False))]
    )
    zero, _ = emit_node("Dropout", [p, tl.constant(np.float32(0)), tl.constant(np.array(True))])
    outs = {"y": y, "mask": mask, "off": off, "off_mask": off_mask, "zero": zero}
    written_runs_alike(tl.Model(outs), {"x": x}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dropout_training_refused(tmp_path: Path) -> None:
    x = rand_f32(3, 4, rng=RNG)
    ins = [ph("x", x), tl.constant(np.float32(0.5)), tl.constant(np.array(True))]
    y, _ = emit_node("Dropout", ins)
    with pytest.raises(tl.FormatError, match="no random dropout"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- the writer: DeformConv ------------------------------------------------------------------------
DEFORM_CASES = {
    # name: (group, offset_group, strides, pads, dilations, bias, mask)
    "plain": (1, 1, [1, 1], [0, 0, 0, 0], [1, 1], False, False),
    "bias-mask": (1, 1, [1, 1], [1, 1, 1, 1], [1, 1], True, True),
    "groups": (2, 2, [2, 1], [1, 0, 0, 1], [1, 2], True, False),
}


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(DEFORM_CASES))
def test_writer_deform_conv(name: str, tmp_path: Path) -> None:
    group, offset_group, strides, pads, dilations, has_bias, has_mask = DEFORM_CASES[name]
    x, w = rand_f32(1, 4, 6, 7, rng=RNG), rand_f32(4, 4 // group, 3, 3, rng=RNG)
    eh = (6 + pads[0] + pads[2] - dilations[0] * 2 - 1) // strides[0] + 1
    ew = (7 + pads[1] + pads[3] - dilations[1] * 2 - 1) // strides[1] + 1
    offsets = (RNG.standard_normal((1, offset_group * 9 * 2, eh, ew)) * 1.5).astype(np.float32)
    attrs = {
        "group": group,
        "offset_group": offset_group,
        "strides": strides,
        "pads": pads,
        "dilations": dilations,
        "kernel_shape": [3, 3],
    }
    ins: list[Any] = [ph("x", x), tl.constant(w), ph("offsets", offsets)]
    feeds = {"x": x, "offsets": offsets}
    if has_bias or has_mask:
        ins.append(tl.constant(rand_f32(4, rng=RNG)) if has_bias else None)
    if has_mask:
        mask = RNG.uniform(0, 1, (1, offset_group * 9, eh, ew)).astype(np.float32)
        ins.append(ph("mask", mask))
        feeds["mask"] = mask
    y = emit("DeformConv", ins, attrs)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)


# -- BinaryConvolution -----------------------------------------------------------------------------
def _palindromic_bits(*shape: int) -> Array:
    """Random 0/1 weights whose every packed byte reads the same from either end: the CPU plugin
    takes a byte's bits low to high, the IR (and OpenVINO's reference) high to low."""
    count = int(np.prod(shape))
    half = RNG.integers(0, 2, ((count + 7) // 8, 4))
    bits = np.concatenate([half, half[:, ::-1]], axis=1).reshape(-1)[:count]
    return bits.reshape(shape).astype(np.uint8)


def _binary_conv_spec(
    x: Array,
    w: Array,
    strides: list[int],
    begin: list[int],
    end: list[int],
    dil: list[int],
    pv: float,
) -> Array:
    """The spec's xnor-popcount, 2 * popcount(xnor) - bits, of the input bits x > 0 padded with
    pad_value's bit (1 for 1, else 0)."""
    bits = np.pad(
        x > 0, [(0, 0), (0, 0), *zip(begin, end, strict=True)], constant_values=bool(pv == 1)
    )
    m, _, *kernel = w.shape
    n = bits.shape[0]
    out_dims = [
        (bits.shape[2 + i] - (kernel[i] - 1) * dil[i] - 1) // strides[i] + 1
        for i in range(len(kernel))
    ]
    out = np.zeros((n, m, *out_dims), np.float32)
    for index in np.ndindex(*out_dims):
        window = tuple(
            slice(o * s, o * s + (k - 1) * d + 1, d)
            for o, s, k, d in zip(index, strides, kernel, dil, strict=True)
        )
        patch = bits[(slice(None), slice(None), *window)]  # n, c, k...
        same = patch[:, None] == w.astype(bool)[None]  # n, m, c, k...
        popcount = same.reshape(n, m, -1).sum(-1)
        out[(slice(None), slice(None), *index)] = 2 * popcount - same[0, 0].size
    return out


BINARY_CASES = [
    # (input shape, out channels, kernel, strides, pads_begin, pads_end, dilations, pad_value)
    ((1, 8, 5, 5), 4, (3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 1.0),
    ((2, 16, 6, 7), 3, (3, 2), [2, 1], [0, 1], [2, 0], [1, 2], -1.0),
    ((1, 8, 6, 6), 2, (1, 1), [1, 1], [0, 0], [0, 0], [1, 1], 0.0),
    ((1, 24, 7, 9), 5, (3, 3), [2, 3], [2, 0], [1, 2], [2, 1], 0.5),
    ((3, 8, 4, 4), 2, (2, 2), [1, 1], [1, 0], [0, 1], [1, 1], 2.0),
]


@pytest.mark.parametrize("zero_one", [True, False], ids=["bits", "floats"])
@pytest.mark.parametrize("case", range(len(BINARY_CASES)))
def test_binary_convolution(case: int, zero_one: bool, tmp_path: Path) -> None:
    shape, m, kernel, strides, begin, end, dil, pv = BINARY_CASES[case]
    x = rand_f32(*shape)
    if zero_one:
        x = (x > 0).astype(np.float32)
    w = _palindromic_bits(m, shape[1], *kernel)

    def build(p: Any) -> Any:
        weights = opset16.constant(w, dtype=ov.Type.u1)
        mode = "xnor-popcount"
        return opset1.binary_convolution(p, weights, strides, begin, end, dil, mode, pv)

    (got,) = check(build, x, tmp_path=tmp_path).values()
    np.testing.assert_array_equal(got, _binary_conv_spec(x, w, strides, begin, end, dil, pv))


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower", "valid"])
def test_binary_convolution_auto_pad(auto_pad: str, tmp_path: Path) -> None:
    x = rand_f32(1, 8, 5, 6)
    w = _palindromic_bits(3, 8, 3, 2)

    def build(p: Any) -> Any:
        weights = opset16.constant(w, dtype=ov.Type.u1)
        return opset1.binary_convolution(
            p, weights, [2, 2], [0, 0], [0, 0], [1, 1], "xnor-popcount", 1.0, auto_pad
        )

    check(build, x, tmp_path=tmp_path)


def test_binary_convolution_follows_the_spec_bit_order(tmp_path: Path) -> None:
    """Any weights and channel counts: the IR's bits are read high to low, as OpenVINO writes
    and its reference reads them (the CPU plugin reads them low to high)."""
    x = rand_f32(2, 3, 5, 5)
    w = RNG.integers(0, 2, (4, 3, 3, 3)).astype(np.uint8)
    w[0, 0, 0, :2] = [1, 0]  # not a palindrome
    p = opset16.parameter(x.shape, np.float32, name="x0")
    layer = opset1.binary_convolution(
        p, opset16.constant(w, dtype=ov.Type.u1), [1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    assert 'element_type="u1" shape="4, 3, 3, 3" offset="0" size="14"' in path.read_text()
    (ours,) = tl.load(path).run({"x0": x}).values()
    want = _binary_conv_spec(x, w, [1, 1], [1, 1], [1, 1], [1, 1], 0)
    np.testing.assert_array_equal(ours, want)
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    assert not np.array_equal(theirs, want)


def test_u1_packs_the_first_element_in_the_high_bit(tmp_path: Path) -> None:
    """The u1 layout the kernel's bits follow: OpenVINO's Python API packs a u1 Constant's first
    element into bit 7 (its element-iterator tests pack 0,0,0,1,0,1,1,0 as 0x16), its CPU plugin's
    Convert reads them back so, and tensorloop reads them so; only the plugin's BinaryConvolution
    kernel reads each byte from bit 0 (the spec's result with every weight byte reversed)."""
    bits = np.array([0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1], np.uint8)
    as_u1 = opset16.constant(bits.reshape(2, 8, 1, 1), dtype=ov.Type.u1)
    path = save_ir([opset16.convert(as_u1, "u8")], [], tmp_path)
    assert path.with_suffix(".bin").read_bytes() == bytes([0x16, 0xB3])
    (theirs,) = compile_cpu(path)({}).values()
    assert theirs.reshape(-1).tolist() == bits.tolist()
    (ours,) = tl.load(path).run({}).values()
    assert ours.reshape(-1).tolist() == bits.tolist()

    x = rand_f32(1, 8, 3, 3)
    p = opset16.parameter(x.shape, np.float32, name="x0")
    layer = opset1.binary_convolution(
        p, as_u1, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 1.0
    )
    path = save_ir([layer], [p], tmp_path / "conv")
    want = _binary_conv_spec(x, bits.reshape(2, 8, 1, 1), [1, 1], [0, 0], [0, 0], [1, 1], 1.0)
    (ours,) = tl.load(path).run({"x0": x}).values()
    np.testing.assert_array_equal(ours, want)
    reversed_bytes = np.unpackbits(np.packbits(bits), bitorder="little").reshape(2, 8, 1, 1)
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    np.testing.assert_array_equal(
        theirs, _binary_conv_spec(x, reversed_bytes, [1, 1], [0, 0], [0, 0], [1, 1], 1.0)
    )


def test_binary_convolution_pads_zero_bits_for_pad_value_0(tmp_path: Path) -> None:
    """The spec's pad value 0 is a 0 bit, counted as -1 in the window; the CPU plugin leaves
    the padding out of the count (a zero-padded convolution of the ±1 values)."""
    x = rand_f32(1, 8, 4, 4)
    w = _palindromic_bits(2, 8, 3, 3)
    p = opset16.parameter(x.shape, np.float32, name="x0")
    layer = opset1.binary_convolution(
        p, opset16.constant(w, dtype=ov.Type.u1), [1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    (ours,) = tl.load(path).run({"x0": x}).values()
    np.testing.assert_array_equal(ours, _binary_conv_spec(x, w, [1, 1], [1, 1], [1, 1], [1, 1], 0))
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    signs, kernel = np.where(x > 0, 1.0, -1.0), np.where(w == 1, 1.0, -1.0)
    padded = np.pad(signs, [(0, 0), (0, 0), (1, 1), (1, 1)])
    zero_padded = np.zeros_like(ours)
    for i, j in np.ndindex(4, 4):
        patch = padded[0, :, i : i + 3, j : j + 3]
        zero_padded[0, :, i, j] = (patch[None] * kernel).reshape(2, -1).sum(-1)
    np.testing.assert_array_equal(theirs, zero_padded)


def test_a_u1_constant_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    p = opset16.parameter([1, 8, 3, 3], np.float32, name="x0")
    weights = opset16.constant(np.ones((2, 8, 1, 1), np.uint8), dtype=ov.Type.u1)
    layer = opset1.binary_convolution(
        p, weights, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    edit_ir(path, 'offset="0" size="2"', 'offset="0" size="3"')
    with pytest.raises(FormatError, match=r"size=3 bytes does not match .* u1 \(1 bit\) = 2 bytes"):
        tl.load(path)


@pytest.mark.parametrize("mode", ["add", "max"])
def test_normalize_l2_eps_mode_about_eps(mode: str, tmp_path: Path) -> None:
    """eps_mode "add" divides by sqrt(sum + eps) and "max" by sqrt(max(sum, eps)), the sum of
    squares taken over the axes: over slices whose sums lie on both sides of eps the two differ
    everywhere. Each is the spec's formula, alike the CPU plugin, and written back."""
    x = rand_f32(2, 6, 3, rng=RNG) * np.geomspace(0.01, 1.0, 6, dtype=np.float32)[:, None]
    eps = 0.05
    p = ops.parameter(x.shape, np.float32, name="x0")
    path = save_ir([_normalize_l2(p, [2], eps, mode)], [p], tmp_path)
    assert f'eps_mode="{mode}"' in path.read_text()
    (got,) = run_path(path, {"x0": x}, rtol=1e-5, atol=1e-6).values()
    total = np.square(x.astype(np.float64)).sum(2, keepdims=True)
    assert (total < eps).any() and (total > eps).any()
    want = x / np.sqrt(total + eps if mode == "add" else np.maximum(total, eps))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
