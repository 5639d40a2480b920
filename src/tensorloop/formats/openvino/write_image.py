"""Core ops written as OpenVINO image and detection (GridSample, DeformConv, RoiAlign, MaxRoiPool,
PsRoiPool, DeformablePsRoiPool, RoiAlignRotated, Proposal, DetectionOutput, GenerateProposals,
quantisation) layers; merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

import numpy as np

from ...ops.quant import param_layout
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert

_GRID_MODES = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}


def _grid_sample(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if x.rank != 4:
        raise call.error(
            f"OpenVINO's GridSample samples 2-D images [N, C, H, W] only, got {x.type}"
        )
    return net.layer(
        "GridSample",
        [x, call.arg(1)],
        call.outs,
        "opset9",
        align_corners=bool(call.attrs["align_corners"]),
        mode=_GRID_MODES[call.attrs["mode"]],
        padding_mode=call.attrs["padding_mode"],
    )


def _roi_align(net: NetBuilder, call: Call) -> list[Tensor]:
    if call.attrs["mode"] != "avg":
        # OpenVINO takes the largest bilinear sample; the core op the largest weighted corner.
        raise call.error("OpenVINO's ROIAlign max mode computes another maximum: not supported")
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
        mode="avg",
        aligned_mode="half_pixel_for_nn" if half else "asymmetric",
    )
    if not half or ratio > 0:
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


# -- quantisation ---------------------------------------------------------------------------------
_QUANT_INTS = frozenset({DType.int8, DType.uint8, DType.int16, DType.uint16})
"""What QuantizeLinear and DequantizeLinear are written for: the integers whose every value f32
holds and whose sums with a zero point f32 computes exactly."""


def _param(net: NetBuilder, call: Call, p: Tensor, data: Tensor, dt: DType) -> Tensor:
    """A scale or zero point as ``dt``, shaped to broadcast over ``data`` (per tensor or axis)."""
    if p.type.shape is None or data.type.shape is None:
        raise call.error("the scale, zero point and data need known ranks")
    try:
        kind, axis = param_layout(
            p.type.shape, data.type.shape, call.attrs["axis"], call.attrs["block_size"]
        )
    except ValueError as exc:
        raise call.error(str(exc)) from None
    if kind == "blocked":
        raise call.error("blocked quantisation (block_size > 0) is not written to OpenVINO")
    p = convert(net, p, dt)
    rank = len(data.type.shape)
    dims = [] if kind == "tensor" else [-1 if i == axis else 1 for i in range(rank)]
    if p.value is not None:
        return net.const(p.value.reshape(dims))
    length = p.type.shape[0] if p.type.shape else 1
    shape = TensorType(
        dt, [] if kind == "tensor" else [length if i == axis else 1 for i in range(rank)]
    )
    return net.op("Reshape", [p, net.ints(dims)], shape, special_zero=False)


def _quantize_linear(net: NetBuilder, call: Call) -> list[Tensor]:
    # round(x / scale) to nearest even needs a correctly rounded quotient: OpenVINO's CPU plugin
    # divides (f32 and f64 alike) with an error of an ulp, so values at or near a tie round the
    # other way. Not written rather than written differently.
    raise call.error(
        "QuantizeLinear is not written to OpenVINO: its CPU plugin's Divide is not correctly "
        "rounded, so x / scale at or near a tie would round to another integer"
    )


def _dequantize_linear(net: NetBuilder, call: Call) -> list[Tensor]:
    x, scale, zero = call.arg(0), call.arg(1), call.opt(2)
    if x.type.dtype not in _QUANT_INTS:
        raise call.error(
            f"dequantizing {x.type.dtype} is not written to OpenVINO (int8, uint8, int16, uint16)"
        )
    f32 = DType.float32
    shifted = convert(net, x, f32)  # exact, as is the difference below
    if zero is not None:
        z = _param(net, call, zero, x, f32)
        shifted = net.op("Subtract", [shifted, z], shifted.type, auto_broadcast="numpy")
    s = _param(net, call, scale, x, f32)
    y = net.op("Multiply", [shifted, s], shifted.type, auto_broadcast="numpy")
    return [convert(net, y, call.out.dtype)]


# -- deformable convolution ------------------------------------------------------------------------
def _deform_conv(net: NetBuilder, call: Call) -> list[Tensor]:
    """DeformableConvolution-8 with bilinear_interpolation_pad=true: samples read zeros around X,
    as the core op's do; the bias is added after."""
    x, w, offsets = call.arg(0), call.arg(1), call.arg(2)
    bias, mask = call.opt(3), call.opt(4)
    if x.rank is None or x.rank < 3:
        raise call.error(f"X needs a known rank of at least 3, got {x.type}")
    n = x.rank - 2
    pads = call.attrs["pads"] or [0] * (2 * n)
    ins = [x, offsets, w] + ([] if mask is None else [mask])
    y = net.op(
        "DeformableConvolution",
        ins,
        call.out,
        "opset8",
        strides=",".join(str(v) for v in call.attrs["strides"] or [1] * n),
        dilations=",".join(str(v) for v in call.attrs["dilations"] or [1] * n),
        pads_begin=",".join(str(v) for v in pads[:n]),
        pads_end=",".join(str(v) for v in pads[n:]),
        auto_pad="explicit",
        group=int(call.attrs["group"]),
        deformable_group=int(call.attrs["offset_group"]),
        bilinear_interpolation_pad=True,
    )
    if bias is None:
        return [y]
    column = bias.value.reshape([-1] + [1] * n) if bias.value is not None else None
    if column is None:
        b = net.op(
            "Reshape",
            [bias, net.ints([-1] + [1] * n)],
            bias.type.with_shape([UNKNOWN] + [1] * n),
            special_zero=False,
        )
    else:
        b = net.const(column)
    return [net.op("Add", [y, b], call.out, auto_broadcast="numpy")]


EMITTERS: dict[str, Emitter] = {
    "DeformConv": _deform_conv,
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "GridSample": _grid_sample,
    "RoiAlign": _roi_align,
    "MaxRoiPool": _max_roi_pool,
    "PsRoiPool": _ps_roi_pool,
    "DeformablePsRoiPool": _deformable_ps_roi_pool,
    "RoiAlignRotated": _roi_align_rotated,
    "Proposal": _proposal,
    "DetectionOutput": _detection_output,
    "GenerateProposals": _generate_proposals,
}
"""Emitters of this family, by core op name."""
