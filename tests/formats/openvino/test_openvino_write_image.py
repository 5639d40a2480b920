"""Core ops written as OpenVINO layers (write_image.py), run by OpenVINO's CPU plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino_layer_checks import written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402
from tensorloop.tensor.dtypes import DType  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(11)


@pytest.fixture
def _fresh_builder() -> None:
    tl.reset()


def _ph(name: str, like: Array) -> Any:
    return tl.placeholder(like.dtype, like.shape, name=name)


def _rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


# -- GridSample -----------------------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_writer_grid_sample(mode: str, padding: str, align: int, tmp_path: Path) -> None:
    x = _rand(2, 3, 5, 6)
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    y = emit("GridSample", [_ph("x", x), _ph("grid", grid)], attrs)
    feeds = {"x": x, "grid": grid}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_grid_sample_3d_refused(tmp_path: Path) -> None:
    x, grid = _rand(1, 2, 3, 4, 5), _rand(1, 2, 2, 2, 3)
    y = emit("GridSample", [_ph("x", x), _ph("grid", grid)], {})
    with pytest.raises(FormatError, match="2-D images"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- RoiAlign -------------------------------------------------------------------------------------
ROIS = np.array(
    [[0.5, 1.0, 6.0, 5.5], [2.0, 2.0, 2.0, 2.0], [1.2, 0.3, 7.7, 7.9], [3.0, 1.0, 4.5, 6.0]],
    np.float32,
)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("coords", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
@pytest.mark.parametrize(("oh", "ow", "scale"), [(2, 3, 1.0), (3, 3, 0.5)])
def test_writer_roi_align(
    coords: str, ratio: int, oh: int, ow: int, scale: float, tmp_path: Path
) -> None:
    x = _rand(2, 3, 8, 9)
    indices = np.array([0, 1, 1, 0], np.int64)
    attrs = {
        "coordinate_transformation_mode": coords,
        "mode": "avg",
        "output_height": oh,
        "output_width": ow,
        "sampling_ratio": ratio,
        "spatial_scale": scale,
    }
    y = emit("RoiAlign", [_ph("x", x), _ph("rois", ROIS), _ph("indices", indices)], attrs)
    feeds = {"x": x, "rois": ROIS, "indices": indices}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_roi_align_max_refused(tmp_path: Path) -> None:
    x, indices = _rand(1, 2, 6, 6), np.zeros(4, np.int64)
    y = emit("RoiAlign", [_ph("x", x), _ph("rois", ROIS), _ph("i", indices)], {"mode": "max"})
    with pytest.raises(FormatError, match="max mode"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- MaxRoiPool -----------------------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("shape", "scale"), [((2, 2), 1.0), ((3, 2), 0.5), ((1, 4), 0.25)])
def test_writer_max_roi_pool(shape: tuple[int, int], scale: float, tmp_path: Path) -> None:
    x = _rand(2, 3, 8, 9)
    rois = np.array(
        [[0, 0.5, 1.0, 6.0, 5.5], [1, 2.0, 2.0, 2.0, 2.0], [1, 1.2, 0.3, 7.7, 7.9]], np.float32
    )
    attrs = {"pooled_shape": list(shape), "spatial_scale": scale}
    y = emit("MaxRoiPool", [_ph("x", x), _ph("rois", rois)], attrs)
    written_runs_alike(tl.Model({"y": y}), {"x": x, "rois": rois}, tmp_path)


# -- PsRoiPool, DeformablePsRoiPool, RoiAlignRotated ----------------------------------------------
PS_ROIS = np.array(
    [[0, 0.5, 1.0, 6.0, 5.5], [1, -2.5, 2.0, 3.0, 9.5], [1, 1.2, 0.3, 7.7, 7.9]], np.float32
)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("mode", "bins", "scale"), [("average", 1, 1.0), ("bilinear", 2, 0.1)])
def test_writer_ps_roi_pool(mode: str, bins: int, scale: float, tmp_path: Path) -> None:
    channels = 2 * (9 if mode == "average" else bins * bins)
    x = _rand(2, channels, 8, 9)
    attrs = {
        "mode": mode,
        "output_dim": 2,
        "group_size": 3,
        "spatial_scale": scale,
        "spatial_bins_x": bins,
        "spatial_bins_y": bins,
    }
    y = emit("PsRoiPool", [_ph("x", x), _ph("rois", PS_ROIS)], attrs)
    feeds = {"x": x, "rois": PS_ROIS}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("with_offsets", [False, True])
def test_writer_deformable_ps_roi_pool(with_offsets: bool, tmp_path: Path) -> None:
    x, offsets = _rand(2, 8, 8, 9), _rand(3, 4, 2, 2)
    attrs = {
        "output_dim": 2,
        "group_size": 2,
        "spatial_scale": 0.5,
        "spatial_bins_x": 2,
        "spatial_bins_y": 3,
        "trans_std": 0.2,
        "part_size": 2,
    }
    args, feeds = [_ph("x", x), _ph("rois", PS_ROIS)], {"x": x, "rois": PS_ROIS}
    if with_offsets:
        args.append(_ph("offsets", offsets))
        feeds["offsets"] = offsets
    y = emit("DeformablePsRoiPool", args, attrs)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("ratio", "clockwise"), [(0, 0), (2, 1)])
def test_writer_roi_align_rotated(ratio: int, clockwise: int, tmp_path: Path) -> None:
    x = _rand(2, 3, 8, 9)
    rois = np.array([[4.0, 3.0, 5.0, 2.0, 0.4], [1.0, 7.0, 6.0, 3.0, -2.0]], np.float32)
    indices = np.array([1, 0], np.int32)
    attrs = {
        "output_height": 2,
        "output_width": 3,
        "sampling_ratio": ratio,
        "spatial_scale": 1.0,
        "clockwise": clockwise,
    }
    y = emit("RoiAlignRotated", [_ph("x", x), _ph("rois", rois), _ph("i", indices)], attrs)
    feeds = {"x": x, "rois": rois, "i": indices}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("framework", ["", "tensorflow"])
def test_writer_proposal(framework: str, tmp_path: Path) -> None:
    scores = RNG.uniform(0, 1, (2, 8, 3, 4)).astype(np.float32)
    deltas = (RNG.standard_normal((2, 16, 3, 4)) * 0.3).astype(np.float32)
    image = np.array([50.0, 60.0, 1.0], np.float32)
    attrs = {
        "base_size": 16,
        "pre_nms_topn": 30,
        "post_nms_topn": 5,
        "nms_thresh": 0.7,
        "feat_stride": 16,
        "min_size": 4,
        "ratio": [0.5, 2.0],
        "scale": [1.0, 2.0],
        "clip_after_nms": 1,
        "normalize": 1,
        "framework": framework,
    }
    args = [_ph("scores", scores), _ph("deltas", deltas), _ph("image", image)]
    rois, probs = emit_node("Proposal", args, attrs)
    feeds = {"scores": scores, "deltas": deltas, "image": image}
    model = tl.Model({"rois": rois, "probs": probs})
    written_runs_alike(model, feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("code_type", ["corner", "center_size"])
def test_writer_detection_output(code_type: str, tmp_path: Path) -> None:
    centres = RNG.uniform(0.2, 0.8, (12, 2))
    sizes = RNG.uniform(0.1, 0.4, (12, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).reshape(-1)
    variance = np.resize(np.array([0.1, 0.1, 0.2, 0.2]), boxes.size)
    priors = np.stack([boxes, variance])[None].astype(np.float32)
    loc = (RNG.standard_normal((2, 12 * 3 * 4)) * 0.3).astype(np.float32)
    conf = RNG.uniform(0, 1, (2, 12 * 3)).astype(np.float32)
    attrs = {
        "code_type": code_type,
        "share_location": 0,
        "nms_threshold": 0.4,
        "confidence_threshold": 0.2,
        "top_k": 6,
        "keep_top_k": 9,
        "normalized": 1,
        "clip_after_nms": 1,
    }
    args = [_ph("loc", loc), _ph("conf", conf), _ph("priors", priors)]
    y = emit("DetectionOutput", args, attrs)
    feeds = {"loc": loc, "conf": conf, "priors": priors}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_generate_proposals(tmp_path: Path) -> None:
    ys, xs = np.meshgrid(np.arange(3) * 16.0, np.arange(4) * 16.0, indexing="ij")
    corners = np.stack([xs, ys, xs + 20, ys + 28], -1)[:, :, None, :]
    moved = corners + np.array([2.0, -3.0, 10.0, 5.0])
    anchors = np.concatenate([corners, moved], axis=2).astype(np.float32)
    info = np.array([[48.0, 64.0, 1.0]], np.float32)
    deltas = (RNG.standard_normal((1, 8, 3, 4)) * 0.3).astype(np.float32)
    scores = RNG.uniform(0, 1, (1, 2, 3, 4)).astype(np.float32)
    attrs = {
        "min_size": 2.0,
        "nms_threshold": 0.6,
        "pre_nms_count": 20,
        "post_nms_count": 8,
        "normalized": 0,
    }
    args = [_ph("info", info), _ph("anchors", anchors), _ph("deltas", deltas), _ph("s", scores)]
    rois, probs, counts = emit_node("GenerateProposals", args, attrs)
    feeds = {"info": info, "anchors": anchors, "deltas": deltas, "s": scores}
    model = tl.Model({"rois": rois, "probs": probs, "counts": counts})
    written_runs_alike(model, feeds, tmp_path, rtol=1e-5, atol=1e-5)


# -- QuantizeLinear / DequantizeLinear ------------------------------------------------------------
def _quant_params(zero_type: Any, per_axis: bool, scale_type: Any) -> tuple[Array, Array | None]:
    n = 3 if per_axis else 1
    scale = RNG.uniform(0.02, 0.3, n).astype(scale_type)
    zero = None
    if zero_type is not None:
        info = np.iinfo(zero_type)
        zero = RNG.integers(max(info.min, -20), min(info.max, 20), n, endpoint=True)
        zero = zero.astype(zero_type)
    if not per_axis:
        scale = scale.reshape(())
        zero = None if zero is None else zero.reshape(())
    return scale, zero


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_quantize_linear_refused(tmp_path: Path) -> None:
    """OpenVINO's CPU Divide is not correctly rounded: QuantizeLinear is refused."""
    x = _rand(2, 3)
    y = emit("QuantizeLinear", [_ph("x", x), tl.constant(np.float32(0.1))], {})
    with pytest.raises(FormatError, match="QuantizeLinear is not written"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


DEQUANT_CASES = {
    # name: (x dtype, has zero point, per axis, output dtype)
    "u8": (np.uint8, False, False, None),
    "u8-zero": (np.uint8, True, False, None),
    "i8-axis": (np.int8, True, True, None),
    "i16-axis": (np.int16, True, True, None),
    "u16": (np.uint16, True, False, None),
    "i8-f16-out": (np.int8, True, True, "float16"),
}


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(DEQUANT_CASES))
def test_writer_dequantize_linear(name: str, tmp_path: Path) -> None:
    x_type, has_zero, per_axis, out = DEQUANT_CASES[name]
    scale, zero = _quant_params(x_type if has_zero else None, per_axis, np.float32)
    info = np.iinfo(x_type)
    x = RNG.integers(info.min, info.max, (2, 3, 4), endpoint=True).astype(x_type)
    ins = [_ph("x", x), _ph("scale", scale)] + ([] if zero is None else [tl.constant(zero)])
    attrs: dict[str, Any] = {"axis": -2}
    if out is not None:
        attrs["output_dtype"] = DType(out)
    y = emit("DequantizeLinear", ins, attrs)
    feeds = {"x": x, "scale": scale}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-6, atol=0)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("case", ["blocked", "int32"])
def test_writer_dequantize_linear_refused(case: str, tmp_path: Path) -> None:
    q = np.arange(8, dtype=np.int32 if case == "int32" else np.int8).reshape(2, 4)
    scale = np.full((2, 2) if case == "blocked" else (), 0.1, np.float32)
    attrs: dict[str, Any] = {"axis": 1, "block_size": 2} if case == "blocked" else {}
    y = emit("DequantizeLinear", [_ph("q", q), tl.constant(scale)], attrs)
    match = "blocked" if case == "blocked" else "dequantizing i32"
    with pytest.raises(FormatError, match=match):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- DeformConv -----------------------------------------------------------------------------------
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
    x, w = _rand(1, 4, 6, 7), _rand(4, 4 // group, 3, 3)
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
    ins: list[Any] = [_ph("x", x), tl.constant(w), _ph("offsets", offsets)]
    feeds = {"x": x, "offsets": offsets}
    if has_bias or has_mask:
        ins.append(tl.constant(_rand(4)) if has_bias else None)
    if has_mask:
        mask = RNG.uniform(0, 1, (1, offset_group * 9, eh, ew)).astype(np.float32)
        ins.append(_ph("mask", mask))
        feeds["mask"] = mask
    y = emit("DeformConv", ins, attrs)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)
