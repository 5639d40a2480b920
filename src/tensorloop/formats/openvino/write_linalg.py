"""Core linear-algebra ops written as OpenVINO layers: MatMul, Gemm, Einsum, Inverse and Trilu."""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert, dim_of, same_layer, scalar


def _gemm(net: NetBuilder, call: Call) -> list[Tensor]:
    alpha, beta = float(call.attrs["alpha"]), float(call.attrs["beta"])
    dt = call.out.dtype
    # Integer Gemm with fractional factors scales in f64 and truncates back, as tensorloop does.
    work = dt if dt.is_float or (alpha.is_integer() and beta.is_integer()) else DType.float64
    # A constant operand is written transposed rather than read with transpose_a/_b: the CPU
    # plugin (2026.4) packs a constant's weights once for every MatMul over it, whether that
    # MatMul transposes it or not (docs/openvino.md).
    operands, flags = [], []
    for t, flag in ((call.arg(0), call.attrs["transA"]), (call.arg(1), call.attrs["transB"])):
        if flag and t.value is not None and t.value.ndim == 2:
            operands.append(net.const(t.value.T))
            flags.append(False)
        else:
            operands.append(t)
            flags.append(bool(flag))
    y = net.op("MatMul", operands, call.out, transpose_a=flags[0], transpose_b=flags[1])
    y = convert(net, y, work)
    if alpha != 1:
        y = net.op("Multiply", [y, net.const(alpha, work)], y.type, auto_broadcast="numpy")
    c = call.opt(2)
    if c is not None:
        c = convert(net, c, work)
        if beta != 1:
            c = net.op("Multiply", [c, net.const(beta, work)], c.type, auto_broadcast="numpy")
        y = net.op("Add", [y, c], y.type, auto_broadcast="numpy")
    return [convert(net, y, dt)]


def _einsum(net: NetBuilder, call: Call) -> list[Tensor]:
    ins = [t for t in call.ins if t is not None]
    equation = str(call.attrs["equation"]).replace(" ", "")
    return [net.op("Einsum", ins, call.out, "opset7", equation=equation)]


def _trilu(net: NetBuilder, call: Call) -> list[Tensor]:
    """OpenVINO has no Trilu: keep x where column - row >= k (upper) or <= k (lower), else 0."""
    x = call.arg(0)
    if x.rank is None:
        raise call.error("Trilu needs an input of known rank")
    k = call.opt(1)
    diag = net.ints(0) if k is None else scalar(net, convert(net, k, DType.int64))
    vector = TensorType(DType.int64, [UNKNOWN])
    grid = TensorType(DType.int64, [UNKNOWN, UNKNOWN])

    def positions(axis: int) -> Tensor:
        n = dim_of(net, x, axis)
        return net.op(
            "Range", [net.ints(0), n, net.ints(1)], vector, "opset4", output_type=DType.int64
        )

    rows = net.op("Unsqueeze", [positions(x.rank - 2), net.ints([1])], grid)
    offset = net.op("Subtract", [positions(x.rank - 1), rows], grid, auto_broadcast="numpy")
    pair = [offset, diag] if call.attrs["upper"] else [diag, offset]
    side = net.op("Subtract", pair, grid, auto_broadcast="numpy")
    keep = net.op(
        "GreaterEqual", [side, net.ints(0)], grid.with_dtype(DType.bool), auto_broadcast="numpy"
    )
    zero = net.const(np.zeros((), x.type.dtype.numpy))
    return [net.op("Select", [keep, x, zero], call.out, auto_broadcast="numpy")]


EMITTERS: dict[str, Emitter] = {
    "MatMul": same_layer("MatMul", transpose_a=False, transpose_b=False),
    "Gemm": _gemm,
    "Einsum": _einsum,
    "Inverse": same_layer("Inverse", "opset14", adjoint=False),
    "Trilu": _trilu,
}
"""Emitters of this family, by core op name."""
