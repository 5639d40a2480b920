"""Core indexing ops written as OpenVINO layers: slices, gathers, scatters, index generators.

Slices, gathers, scatters, the index-generating ops (OneHot, EyeLike, NonZero, Unique) and
ReverseSequence."""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .write_net import (
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    dim_of,
    gather,
    scalar,
    shape_of,
)


def _slice(net: NetBuilder, call: Call) -> list[Tensor]:
    data, starts, ends = call.arg(0), call.arg(1), call.arg(2)
    axes, steps = call.opt(3), call.opt(4)
    if steps is None:  # OpenVINO's Slice needs steps: ones, as many as starts
        length = None if starts.type.shape is None else starts.type.shape[0]
        if isinstance(length, int):
            steps = net.const(np.ones(length, starts.type.dtype.numpy))
        else:
            one = net.const(1, starts.type.dtype)
            steps = net.op(
                "Broadcast", [one, shape_of(net, starts)], starts.type, "opset3", mode="numpy"
            )
    ins = [data, starts, ends, steps] + ([] if axes is None else [axes])
    return [net.op("Slice", ins, call.out, "opset8")]


# The core scatter reductions by OpenVINO's names (ScatterNDUpdate-15, ScatterElementsUpdate-12).
_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


def _scatter_nd(net: NetBuilder, call: Call) -> list[Tensor]:
    reduction: str = call.attrs["reduction"]
    ins = [call.arg(0), call.arg(1), call.arg(2)]
    if reduction == "none":
        return [net.op("ScatterNDUpdate", ins, call.out, "opset4")]
    return [net.op("ScatterNDUpdate", ins, call.out, "opset15", reduction=_REDUCTIONS[reduction])]


def _scatter_elements(net: NetBuilder, call: Call) -> list[Tensor]:
    data = call.arg(0)
    axis = call.normalize_axis(call.attrs["axis"], data.rank)
    ins = [data, call.arg(1), call.arg(2), net.ints(axis)]
    reduction = _REDUCTIONS[call.attrs["reduction"]]
    return [
        net.op(
            "ScatterElementsUpdate",
            ins,
            call.out,
            "opset12",
            reduction=reduction,
            use_init_val=True,
        )
    ]


def _gather_nd(net: NetBuilder, call: Call) -> list[Tensor]:
    ins = [call.arg(0), call.arg(1)]
    return [net.op("GatherND", ins, call.out, "opset8", batch_dims=call.attrs["batch_dims"])]


def _gather_elements(net: NetBuilder, call: Call) -> list[Tensor]:
    data, indices = call.arg(0), call.arg(1)
    axis = call.normalize_axis(call.attrs["axis"], data.rank)
    ds, ix = data.type.shape, indices.type.shape
    same = (
        ds is not None
        and ix is not None
        and all(
            isinstance(d, int) and d == e
            for i, (d, e) in enumerate(zip(ds, ix, strict=True))
            if i != axis
        )
    )
    if same or data.rank == 1:
        return [net.op("GatherElements", [data, indices], call.out, "opset6", axis=axis)]
    # ONNX lets indices be shorter than the data off the axis; OpenVINO wants them equal. (The
    # CPU plugin drops a Slice of the data before a GatherElements, so the indices are padded
    # with zeros to the data's extent instead, and the result cut back to theirs.)
    if data.rank is None:
        raise call.error("GatherElements needs data of known rank")
    r = data.rank
    others = [i for i in range(r) if i != axis]
    keep = net.const(np.array([0 if i == axis else 1 for i in range(r)], np.int64))
    vec = TensorType(DType.int64, [r])
    grow = net.op(
        "Subtract", [shape_of(net, data), shape_of(net, indices)], vec, auto_broadcast="numpy"
    )
    grow = net.op("Multiply", [grow, keep], vec, auto_broadcast="numpy")
    zero = net.const(np.zeros((), indices.type.dtype.numpy))
    full = indices.type.with_shape(
        None
        if ds is None or ix is None
        else [e if i == axis else d for i, (d, e) in enumerate(zip(ds, ix, strict=True))]
    )
    padded = net.op(
        "Pad", [indices, net.ints([0] * r), grow, zero], full, "opset12", pad_mode="constant"
    )
    wide = net.op(
        "GatherElements", [data, padded], full.with_dtype(call.out.dtype), "opset6", axis=axis
    )
    n = len(others)
    ends = gather(net, shape_of(net, indices), net.ints(others), 0, TensorType(DType.int64, [n]))
    ins = [wide, net.ints([0] * n), ends, net.ints([1] * n), net.ints(others)]
    return [net.op("Slice", ins, call.out, "opset8")]


def _one_hot(net: NetBuilder, call: Call) -> list[Tensor]:
    indices, depth, values = call.arg(0), call.arg(1), call.arg(2)
    if not indices.type.dtype.is_int:
        raise call.error(f"OpenVINO's OneHot takes integer indices, not {indices.type.dtype}")
    if not depth.type.dtype.is_int:
        if depth.value is None:
            raise call.error(f"OpenVINO's OneHot takes an integer depth, not {depth.type.dtype}")
        depth = net.const(np.asarray(depth.value).astype(np.int64))
    depth = scalar(net, depth)
    off_on = [_element(net, values, i) for i in (0, 1)]
    rank = None if indices.rank is None else indices.rank + 1
    axis = call.normalize_axis(call.attrs["axis"], rank)
    # negative_indices_mode="normalize": a negative index counts from the end, as ONNX's does.
    return [
        net.op(
            "OneHot",
            [indices, depth, off_on[1], off_on[0]],
            call.out,
            "opset16",
            axis=axis,
            negative_indices_mode="normalize",
        )
    ]


def _element(net: NetBuilder, vector: Tensor, i: int) -> Tensor:
    if vector.value is not None:
        return net.const(np.asarray(vector.value).reshape(-1)[i])
    return gather(net, vector, net.ints(i), 0, vector.type.with_shape(()))


def _eye_like(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if call.out.dtype in (DType.bool, DType.string):
        raise call.error(f"OpenVINO's Eye makes no {call.out.dtype.value} matrices")
    rows, cols = dim_of(net, x, 0), dim_of(net, x, 1)
    ins = [rows, cols, net.ints(call.attrs["k"])]
    return [net.op("Eye", ins, call.out, "opset9", output_type=call.out.dtype)]


def _non_zero(net: NetBuilder, call: Call) -> list[Tensor]:
    if call.arg(0).rank == 0:
        raise call.error("OpenVINO's NonZero of a scalar differs from ONNX's ([1, n] vs [0, n])")
    return [net.op("NonZero", [call.arg(0)], call.out, "opset3", output_type=DType.int64)]


def _reverse_sequence(net: NetBuilder, call: Call) -> list[Tensor]:
    ins = [call.arg(0), call.arg(1)]
    return [
        net.op(
            "ReverseSequence",
            ins,
            call.out,
            batch_axis=call.attrs["batch_axis"],
            seq_axis=call.attrs["time_axis"],
        )
    ]


def _unique(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    ins = [x]
    if call.attrs["axis"] is not None:
        ins.append(net.ints(call.normalize_axis(call.attrs["axis"], x.rank)))
    return net.layer(
        "Unique",
        ins,
        call.outs,
        "opset10",
        sorted=bool(call.attrs["sorted"]),
        index_element_type=DType.int64,
        count_element_type=DType.int64,
    )


EMITTERS: dict[str, Emitter] = {
    "Slice": _slice,
    "Gather": lambda net, call: [
        gather(net, call.arg(0), call.arg(1), call.attrs["axis"], call.out)
    ],
    "GatherND": _gather_nd,
    "GatherElements": _gather_elements,
    "ScatterND": _scatter_nd,
    "ScatterElements": _scatter_elements,
    "OneHot": _one_hot,
    "EyeLike": _eye_like,
    "NonZero": _non_zero,
    "Unique": _unique,
    "ReverseSequence": _reverse_sequence,
}
"""Emitters of this family, by core op name."""
