"""Core shape ops written as OpenVINO layers: reshapes, splits, broadcasts, tiles, pads, shapes.

Reshapes, (un)squeezes, transposes, concatenation, splits, broadcasts, tiles, pads, block
rearrangements, and shapes and ranges made from them."""

from __future__ import annotations

import math

import numpy as np

from ...ops.shape import INT64_MAX, split_sizes
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import (
    I64,
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    attr,
    binary,
    dim_of,
    gather,
    same_layer,
    scalar,
    shape_of,
)


def _squeeze(net: NetBuilder, call: Call) -> list[Tensor]:
    axes = call.opt(1)
    if axes is not None and axes.value is not None and axes.value.size == 0:
        axes = None  # both mean "every axis of size 1"
    ins = [call.arg(0)] if axes is None else [call.arg(0), axes]
    return [net.op("Squeeze", ins, call.out)]


def _transpose(net: NetBuilder, call: Call) -> list[Tensor]:
    perm = call.attrs["perm"]
    x = call.arg(0)
    if x.value is not None:
        # A constant is written transposed. Left to OpenVINO, a MatMul over Transpose(c) reads
        # c with transpose_b, and the CPU plugin (2026.4) then packs c's weights once for every
        # MatMul over c, transposed or not: one of them multiplies by the wrong matrix (the
        # gradient of x @ c needs both). docs/openvino.md
        return [net.const(np.transpose(x.value, None if perm is None else list(perm)))]
    # An empty order makes OpenVINO reverse the axes, ONNX's default, whatever the rank.
    order = net.ints([] if perm is None else list(perm))
    return [net.op("Transpose", [call.arg(0), order], call.out)]


def _flatten(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if x.rank is None:
        raise call.error("Flatten needs an input of known rank")
    axis: int = call.attrs["axis"]
    axis += x.rank if axis < 0 else 0  # in [-rank, rank]
    if not 0 <= axis <= x.rank:
        raise call.error(f"axis {call.attrs['axis']} is out of range for rank {x.rank}")
    shape = x.type.shape
    assert shape is not None
    static = [d for d in shape if isinstance(d, int)]
    if len(static) == len(shape):
        dims = [math.prod(static[:axis]), math.prod(static[axis:])]
        target = net.ints(dims)
    else:
        full = shape_of(net, x)
        parts = []
        for lo, hi in ((0, axis), (axis, x.rank)):
            if lo == hi:
                parts.append(net.ints([1]))
                continue
            piece = net.op(
                "Slice",
                [full, net.ints([lo]), net.ints([hi]), net.ints([1]), net.ints([0])],
                TensorType(DType.int64, [hi - lo]),
                "opset8",
            )
            parts.append(
                net.op("ReduceProd", [piece, net.ints([0])], I64.with_shape([1]), keep_dims=True)
            )
        target = net.op("Concat", parts, TensorType(DType.int64, [2]), axis=0)
    return [net.op("Reshape", [x, target], call.out, special_zero=False)]


def _split(net: NetBuilder, call: Call) -> list[Tensor]:
    x, sizes = call.arg(0), call.opt(1)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    if sizes is None:
        parts: int = call.attrs["num_outputs"]
        dim = None if x.type.shape is None else x.type.shape[axis]
        if isinstance(dim, int) and dim % parts == 0:
            return net.layer("Split", [x, net.ints(axis)], call.outs, num_splits=parts)
        if isinstance(dim, int):
            sizes = net.ints(split_sizes(dim, parts))
        else:  # ONNX's rule at run time: ceil(dim / parts) each, the rest (-1) last
            n = dim_of(net, x, axis)
            total = binary(net, "Add", n, net.ints(parts - 1), np.add)
            chunk = net.op(
                "Divide", [total, net.ints(parts)], I64, auto_broadcast="numpy", m_pythondiv=False
            )
            vec = TensorType(DType.int64, [parts - 1])
            head = net.op("Broadcast", [chunk, net.ints([parts - 1])], vec, "opset3", mode="numpy")
            sizes = net.op("Concat", [head, net.ints([-1])], vec.with_shape([parts]), axis=0)
    return net.layer("VariadicSplit", [x, net.ints(axis), sizes], call.outs)


def _blocks(type_: str) -> Emitter:
    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        mode = "blocks_first" if call.attrs["mode"] == "DCR" else "depth_first"
        return [
            net.op(type_, [call.arg(0)], call.out, mode=mode, block_size=call.attrs["blocksize"])
        ]

    return emit


# -- shapes and ranges -----------------------------------------------------------------------------
def _shape(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    start, end = call.attrs["start"], call.attrs["end"]
    full = shape_of(net, x)
    if start == 0 and end is None:
        return [full]
    # Python's slice clamping is ONNX Slice's for step 1.
    stop = net.ints([INT64_MAX if end is None else end])
    ins = [full, net.ints([start]), stop, net.ints([1]), net.ints([0])]
    return [net.op("Slice", ins, call.out, "opset8")]


def _size(net: NetBuilder, call: Call) -> list[Tensor]:
    dims = shape_of(net, call.arg(0))
    return [net.op("ReduceProd", [dims, net.ints([0])], call.out, keep_dims=False)]


def _constant_of_shape(net: NetBuilder, call: Call) -> list[Tensor]:
    fill = net.const(np.asarray(call.attrs["value"]).reshape(()))
    return [net.op("Broadcast", [fill, call.arg(0)], call.out, "opset3", mode="numpy")]


# -- pads ------------------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad(net: NetBuilder, call: Call) -> list[Tensor]:
    x, pads, value, axes = call.arg(0), call.arg(1), call.opt(2), call.opt(3)
    mode: str = call.attrs["mode"]
    begins, ends = _pad_amounts(net, call, x, pads, axes)
    if mode == "wrap":
        return [_wrap(net, call, x, begins, ends)]
    ins = [x, begins, ends]
    if mode == "constant" and value is not None:  # OpenVINO rejects a pad value in other modes
        ins.append(scalar(net, value))
    return [net.op("Pad", ins, call.out, "opset12", pad_mode=_PAD_MODES[mode])]


def _pad_amounts(
    net: NetBuilder, call: Call, x: Tensor, pads: Tensor, axes: Tensor | None
) -> tuple[Tensor, Tensor]:
    """ONNX's pads [begins..., ends...] over ``axes`` as OpenVINO's begins and ends per axis."""
    if axes is None:
        if pads.value is not None:
            half = pads.value.size // 2
            return net.const(pads.value[:half]), net.const(pads.value[half:])
        vec = pads.type.with_shape([UNKNOWN])
        a, b = net.layer("Split", [pads, net.ints(0)], [vec, vec], num_splits=2)
        return a, b
    if axes.value is None or x.rank is None:
        raise call.error("pads over listed axes need constant axes and a known rank")
    if pads.value is None:  # computed pads scattered into zeros at the listed axes
        listed = [call.normalize_axis(int(a), x.rank, "pad axis") for a in axes.value.reshape(-1)]
        vec = pads.type.with_shape([len(listed)])
        halves = net.layer("Split", [pads, net.ints(0)], [vec, vec], num_splits=2)
        full = pads.type.with_shape([x.rank])
        zeros, at = net.const(np.zeros(x.rank, pads.type.dtype.numpy)), net.ints(listed)
        begin, end = (
            net.op("ScatterUpdate", [zeros, at, h, net.ints(0)], full, "opset3") for h in halves
        )
        return begin, end
    begins, ends = np.zeros(x.rank, pads.value.dtype), np.zeros(x.rank, pads.value.dtype)
    listed = [call.normalize_axis(int(a), x.rank, "pad axis") for a in axes.value.reshape(-1)]
    begins[listed], ends[listed] = np.split(pads.value.reshape(-1), 2)
    return net.const(begins), net.const(ends)


def _wrap(net: NetBuilder, call: Call, x: Tensor, begins: Tensor, ends: Tensor) -> Tensor:
    """Pad mode "wrap" (OpenVINO has none): gather indices (-begin .. dim+end) mod dim per axis."""
    if begins.value is None or ends.value is None:
        raise call.error('pad mode "wrap" needs constant pads')
    vector = TensorType(DType.int64, [UNKNOWN])
    for axis, (b, e) in enumerate(zip(begins.value.tolist(), ends.value.tolist(), strict=True)):
        if b == 0 and e == 0:
            continue
        n = dim_of(net, x, axis)
        if n.value is not None:
            indices = net.ints((np.arange(-b, int(n.value) + e) % max(int(n.value), 1)).tolist())
        else:
            stop = net.op("Add", [n, net.ints(e)], I64, auto_broadcast="numpy")
            span = net.op(
                "Range",
                [net.ints(-b), stop, net.ints(1)],
                vector,
                "opset4",
                output_type=DType.int64,
            )
            indices = net.op("FloorMod", [span, n], vector, auto_broadcast="numpy")
        shape = x.type.shape
        d = shape[axis] if shape is not None else UNKNOWN
        grown = d + b + e if isinstance(d, int) else UNKNOWN
        out = (
            x.type
            if shape is None
            else x.type.with_shape((*shape[:axis], grown, *shape[axis + 1 :]))
        )
        x = gather(net, x, indices, axis, out)
    return x


EMITTERS: dict[str, Emitter] = {
    "Reshape": same_layer("Reshape", special_zero=lambda call: not call.attrs["allowzero"]),
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": same_layer("Unsqueeze"),
    "Transpose": _transpose,
    "Concat": same_layer("Concat", axis=attr("axis")),
    "Split": _split,
    "Expand": same_layer("Broadcast", "opset3", mode="bidirectional"),
    "Tile": lambda net, call: [net.op("Tile", [call.arg(0), call.arg(1)], call.out)],
    "Pad": _pad,
    "DepthToSpace": _blocks("DepthToSpace"),
    "SpaceToDepth": _blocks("SpaceToDepth"),
    "Shape": _shape,
    "Size": _size,
    "ConstantOfShape": _constant_of_shape,
    "Range": same_layer("Range", "opset4", output_type=lambda call: call.out.dtype),
}
"""Emitters of this family, by core op name."""
