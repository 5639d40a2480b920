"""ONNX converters for older opsets of the image ops: Upsample, Resize up to opset 10, RoiAlign
without the half-pixel shift, GridSample's old mode names."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir.graph import Value
from .convert import NodeContext, converter

Outputs = Sequence[Value | None]


@converter("Resize", since=11)
@converter("RoiAlign", since=16)
@converter("GridSample", since=20)
def _newest(ctx: NodeContext) -> Outputs:
    """Opsets whose meaning the core op has: the node as it is."""
    return ctx.same_default()


def _legacy_resize(ctx: NodeContext, scales: Value | np.ndarray) -> Outputs:
    """Resize as opsets up to 10 meant it (and Upsample): asymmetric coordinates; nearest rounds
    down on an axis being enlarged and up on one being shrunk, as ONNX Runtime does, so such
    axes are resized by separate nodes."""
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"mode must be nearest or linear, got {mode!r}")
    x, attrs = ctx.input(0), {"mode": mode, "coordinate_transformation_mode": "asymmetric"}
    if isinstance(scales, Value) and scales.constant is not None:
        scales = np.asarray(scales.constant)
    if mode == "linear":
        given = ctx.const(scales, "float32") if isinstance(scales, np.ndarray) else scales
        return [ctx.op1("Resize", [x, None, given], attrs)]
    if isinstance(scales, np.ndarray):
        values = scales.astype(np.float32).reshape(-1)
        up: Value = ctx.const(np.maximum(values, 1), "float32")
        down = ctx.const(np.minimum(values, 1), "float32") if np.any(values < 1) else None
    else:
        one = ctx.const(np.float32(1))
        up, down = ctx.op1("Max", [scales, one]), ctx.op1("Min", [scales, one])
    out = ctx.op1("Resize", [x, None, up], {**attrs, "nearest_mode": "floor"})
    if down is not None:
        out = ctx.op1("Resize", [out, None, down], {**attrs, "nearest_mode": "ceil"})
    return [out]


@converter("Upsample", since=7)
def _upsample_attr(ctx: NodeContext) -> Outputs:
    """Upsample in opsets 7-8 takes its scales as an attribute."""
    return _legacy_resize(ctx, np.asarray(ctx.attr("scales"), np.float32))


@converter("Upsample", since=9)
@converter("Resize", since=10)
def _upsample(ctx: NodeContext) -> Outputs:
    """Upsample from opset 9 and Resize in opset 10 take their scales as input #1."""
    return _legacy_resize(ctx, ctx.input(1, "scales"))


@converter("RoiAlign", since=10)
def _roi_align_legacy(ctx: NodeContext) -> Outputs:
    """RoiAlign before opset 16 did not shift coordinates by half a pixel."""
    attrs = {**ctx.attrs, "coordinate_transformation_mode": "output_half_pixel"}
    return [ctx.op1("RoiAlign", ctx.inputs, attrs)]


@converter("GridSample", since=16)
def _grid_sample_legacy(ctx: NodeContext) -> Outputs:
    """GridSample before opset 20 named its modes bilinear and bicubic."""
    mode = ctx.attr("mode", "bilinear")
    attrs = {**ctx.attrs, "mode": {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)}
    return [ctx.op1("GridSample", ctx.inputs, attrs)]
