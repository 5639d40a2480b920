"""Core detection ops written as OpenVINO layers: RoI pooling and align, priors, proposals,
detections.

The RoI poolings and aligns, PriorBox and PriorBoxClustered, Proposal, DetectionOutput and
GenerateProposals."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.detection import prior_ratios
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert


def _roi_align(net: NetBuilder, call: Call) -> list[Tensor]:
    mode = call.attrs["mode"]
    if mode == "max" and call.attrs["max_of"] != "samples":
        # OpenVINO takes the largest of 0 and the bilinear samples, not the largest corner.
        raise call.error(
            "OpenVINO's ROIAlign max mode takes the largest sample (max_of='samples'), not the "
            "largest weighted corner: not supported"
        )
    x, rois, indices = call.arg(0), call.arg(1), call.arg(2)
    half = call.attrs["coordinate_transformation_mode"] == "half_pixel"
    ratio, scale = int(call.attrs["sampling_ratio"]), float(call.attrs["spatial_scale"])
    oh, ow = int(call.attrs["output_height"]), int(call.attrs["output_width"])
    # half_pixel_for_nn is x * scale - 0.5 as core half_pixel; asymmetric is x * scale with
    # RoIs of at least one pixel, as core output_half_pixel.
    out = net.op(
        "ROIAlign",
        [x, rois, convert(net, indices, DType.int64)],
        call.out,
        "opset9",
        pooled_h=oh,
        pooled_w=ow,
        sampling_ratio=ratio,
        spatial_scale=scale,
        mode=mode,
        aligned_mode="half_pixel_for_nn" if half else "asymmetric",
    )
    if not half or ratio > 0 or mode == "max":
        return [out]
    # Adaptive sampling takes ceil(bin size) samples a bin: none for an empty RoI, whose bins
    # OpenVINO averages to 0 / 0 = NaN and the core op to 0.
    dt = rois.type.dtype
    n = UNKNOWN if rois.type.shape is None else rois.type.shape[0]
    pair = TensorType(dt, [n, 2])
    scaled = net.op(
        "Multiply", [rois, net.const(np.float64(scale), dt)], rois.type, auto_broadcast="numpy"
    )
    low, high = net.layer("VariadicSplit", [scaled, net.ints(1), net.ints([2, 2])], [pair, pair])
    extent = net.op("Subtract", [high, low], pair, auto_broadcast="numpy")
    per_bin = net.op(
        "Divide",
        [extent, net.const(np.array([ow, oh]), dt)],
        pair,
        auto_broadcast="numpy",
        m_pythondiv=True,
    )
    bins = net.op("Ceiling", [per_bin], pair)
    flags = TensorType(DType.bool, [n, 2])
    empty = net.op("Equal", [bins, net.const(np.float64(0), dt)], flags, auto_broadcast="numpy")
    anyway = net.op(
        "ReduceLogicalOr", [empty, net.ints([1])], TensorType(DType.bool, [n]), keep_dims=False
    )
    mask = net.op(
        "Reshape",
        [anyway, net.ints([-1, 1, 1, 1])],
        TensorType(DType.bool, [n, 1, 1, 1]),
        special_zero=False,
    )
    zero = net.const(np.float64(0), call.out.dtype)
    return [net.op("Select", [mask, zero, out], call.out, auto_broadcast="numpy")]


def _max_roi_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    ph, pw = (int(v) for v in call.attrs["pooled_shape"])
    return net.layer(
        "ROIPooling",
        [call.arg(0), call.arg(1)],
        call.outs,
        "opset2",
        output_size=f"{ph},{pw}",
        pooled_h=ph,
        pooled_w=pw,
        spatial_scale=float(call.attrs["spatial_scale"]),
        method="max",
    )


def _bilinear_roi_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    ph, pw = (int(v) for v in call.attrs["pooled_shape"])
    return net.layer(
        "ROIPooling",
        [call.arg(0), call.arg(1)],
        call.outs,
        "opset2",
        output_size=f"{ph},{pw}",
        pooled_h=ph,
        pooled_w=pw,
        spatial_scale=1.0,  # the bilinear method does not read it
        method="bilinear",
    )


def _ps_roi_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "PSROIPooling",
        [call.arg(0), call.arg(1)],
        call.outs,
        "opset1",
        output_dim=int(call.attrs["output_dim"]),
        group_size=int(call.attrs["group_size"]),
        spatial_scale=float(call.attrs["spatial_scale"]),
        mode=call.attrs["mode"],
        spatial_bins_x=int(call.attrs["spatial_bins_x"]),
        spatial_bins_y=int(call.attrs["spatial_bins_y"]),
    )


def _deformable_ps_roi_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "DeformablePSROIPooling",
        [t for t in call.ins if t is not None],
        call.outs,
        "opset1",
        output_dim=int(call.attrs["output_dim"]),
        spatial_scale=float(call.attrs["spatial_scale"]),
        group_size=int(call.attrs["group_size"]),
        mode="bilinear_deformable",
        spatial_bins_x=int(call.attrs["spatial_bins_x"]),
        spatial_bins_y=int(call.attrs["spatial_bins_y"]),
        trans_std=float(call.attrs["trans_std"]),
        part_size=int(call.attrs["part_size"]),
    )


def _roi_align_rotated(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "ROIAlignRotated",
        [call.arg(0), call.arg(1), convert(net, call.arg(2), DType.int64)],
        call.outs,
        "opset15",
        pooled_h=int(call.attrs["output_height"]),
        pooled_w=int(call.attrs["output_width"]),
        sampling_ratio=int(call.attrs["sampling_ratio"]),
        spatial_scale=float(call.attrs["spatial_scale"]),
        clockwise_mode=bool(call.attrs["clockwise"]),
    )


def _floats_text(values: Any) -> str:
    return ",".join(repr(float(v)) for v in values)


def _caffe_order(a: dict[str, Any]) -> list[int]:
    """Where each prior of a cell in min_max_aspect_ratios_order=false sits in the order=true
    list: per min size its square, then its aspect-ratio boxes before its max-size square."""
    others = len(prior_ratios(a["aspect_ratio"], bool(a["flip"]))) - 1
    per_size = len(a["fixed_ratio"]) or 1 + others
    fixed = sum(int(d) * int(d) * per_size for d in a["density"])
    order, start = list(range(fixed)), fixed
    mins = len(a["min_size"])
    for i in range(mins):
        maxed = int(len(a["max_size"]) > i)
        ratioed = others if a["scale_all_sizes"] or i == mins - 1 else 0
        after = start + 1 + maxed
        order += [start, *range(after, after + ratioed), *range(start + 1, after)]
        start = after + ratioed
    return order


def _prior_box(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    lists = ("min_size", "max_size", "aspect_ratio", "fixed_size", "fixed_ratio", "density")
    flags = ("flip", "clip", "scale_all_sizes")
    order = _caffe_order(a)
    # The CPU plugin compiles PriorBox-8 with min_max_aspect_ratios_order=false only over
    # constant sizes (docs/openvino.md): the other order is written as a Gather of each cell's
    # priors of order=true.
    reorder = not a["min_max_aspect_ratios_order"] and order != sorted(order)
    out = TensorType(DType.float32, [2, UNKNOWN]) if reorder else call.out
    y = net.op(
        "PriorBox",
        [call.arg(0), call.arg(1)],
        out,
        "opset8",
        **{key: _floats_text(a[key]) for key in lists},
        **{key: bool(a[key]) for key in flags},
        min_max_aspect_ratios_order=reorder or bool(a["min_max_aspect_ratios_order"]),
        step=float(a["step"]),
        offset=float(a["offset"]),
        variance=_floats_text(a["variance"]),
    )
    if not reorder:
        return [y]
    cells = TensorType(DType.float32, [2, UNKNOWN, len(order), 4])
    grid = net.op("Reshape", [y, net.ints([2, -1, len(order), 4])], cells, special_zero=False)
    moved = net.op("Gather", [grid, net.ints(order), net.ints(2)], cells, "opset8", batch_dims=0)
    return [net.op("Reshape", [moved, net.ints([2, -1])], call.out, special_zero=False)]


def _prior_box_clustered(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    return net.layer(
        "PriorBoxClustered",
        [call.arg(0), call.arg(1)],
        call.outs,
        "opset1",
        width=_floats_text(a["width"]),
        height=_floats_text(a["height"]),
        clip=bool(a["clip"]),
        step=0.0,
        step_w=float(a["step_w"]),
        step_h=float(a["step_h"]),
        offset=float(a["offset"]),
        variance=_floats_text(a["variance"]),
    )


def _proposal(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    return net.layer(
        "Proposal",
        [call.arg(0), call.arg(1), call.arg(2)],
        call.outs,
        "opset4",
        base_size=int(a["base_size"]),
        pre_nms_topn=int(a["pre_nms_topn"]),
        post_nms_topn=int(a["post_nms_topn"]),
        nms_thresh=float(a["nms_thresh"]),
        feat_stride=int(a["feat_stride"]),
        min_size=int(a["min_size"]),
        ratio=", ".join(repr(float(v)) for v in a["ratio"]),
        scale=", ".join(repr(float(v)) for v in a["scale"]),
        clip_before_nms=bool(a["clip_before_nms"]),
        clip_after_nms=bool(a["clip_after_nms"]),
        normalize=bool(a["normalize"]),
        box_size_scale=float(a["box_size_scale"]),
        box_coordinate_scale=float(a["box_coordinate_scale"]),
        framework=a["framework"],
    )


def _detection_output(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    flags = (
        "variance_encoded_in_target",
        "share_location",
        "clip_after_nms",
        "clip_before_nms",
        "decrease_label_id",
        "normalized",
    )
    return net.layer(
        "DetectionOutput",
        [t for t in call.ins if t is not None],
        call.outs,
        "opset8",
        background_label_id=int(a["background_label_id"]),
        top_k=int(a["top_k"]),
        keep_top_k=str(int(a["keep_top_k"])),
        code_type=f"caffe.PriorBoxParameter.{a['code_type'].upper()}",
        nms_threshold=float(a["nms_threshold"]),
        confidence_threshold=float(a["confidence_threshold"]),
        input_height=int(a["input_height"]),
        input_width=int(a["input_width"]),
        objectness_score=float(a["objectness_score"]),
        **{key: bool(a[key]) for key in flags},
    )


def _generate_proposals(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    # nms_eta is written as the spec has it; the CPU plugin ignores it (docs/openvino.md).
    return net.layer(
        "GenerateProposals",
        [call.arg(0), call.arg(1), call.arg(2), call.arg(3)],
        call.outs,
        "opset9",
        min_size=float(a["min_size"]),
        nms_threshold=float(a["nms_threshold"]),
        pre_nms_count=int(a["pre_nms_count"]),
        post_nms_count=int(a["post_nms_count"]),
        normalized=bool(a["normalized"]),
        nms_eta=float(a["nms_eta"]),
        roi_num_type="i64",
    )


EMITTERS: dict[str, Emitter] = {
    "RoiAlign": _roi_align,
    "MaxRoiPool": _max_roi_pool,
    "BilinearRoiPool": _bilinear_roi_pool,
    "PsRoiPool": _ps_roi_pool,
    "DeformablePsRoiPool": _deformable_ps_roi_pool,
    "RoiAlignRotated": _roi_align_rotated,
    "PriorBox": _prior_box,
    "PriorBoxClustered": _prior_box_clustered,
    "Proposal": _proposal,
    "DetectionOutput": _detection_output,
    "GenerateProposals": _generate_proposals,
}
"""Emitters of this family, by core op name."""
