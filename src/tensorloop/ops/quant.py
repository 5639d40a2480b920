"""Quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
MatMulInteger, and BitCast (reinterpreting bits)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import Dim, TensorType, Type, normalize_axis
from .common import expect_one_of
from .linalg import matmul_dims

D = DType
QUANTIZED = frozenset(
    {D.uint8, D.int8, D.uint16, D.int16, D.uint4, D.int4, D.uint2, D.int2, D.float4e2m1}
    | {D.float8e4m3fn, D.float8e4m3fnuz, D.float8e5m2, D.float8e5m2fnuz}
)
"""The element types QuantizeLinear produces; DequantizeLinear reads these and int32."""
_SCALES = frozenset({D.float32, D.float16, D.bfloat16})
_8BIT = frozenset(
    {D.int8, D.uint8, D.float8e4m3fn, D.float8e4m3fnuz, D.float8e5m2, D.float8e5m2fnuz}
)

# Helpers shared with the reference kernels; they raise ValueError, re-raised by each side.


def quantized_type(zero: DType | None, output_dtype: DType | None) -> DType:
    """QuantizeLinear's result type: the zero point's, else ``output_dtype``, else uint8."""
    if zero is not None and output_dtype is not None and zero != output_dtype:
        raise ValueError(f"output_dtype {output_dtype} differs from the zero point's type {zero}")
    to = zero or output_dtype or DType.uint8
    if to not in QUANTIZED:
        raise ValueError(f"cannot quantize to {to}; expected one of {_names(QUANTIZED)}")
    return to


def param_layout(
    param: Sequence[Dim], data: Sequence[Dim], axis: int, block_size: int
) -> tuple[str, int]:
    """How a scale or zero point of dims ``param`` applies to data of dims ``data``: ("tensor",
    0), ("axis", a) or ("blocked", a). ValueError if the dims fit none of them."""
    if len(param) == 0 or (block_size <= 0 and list(param) == [1]):
        return "tensor", 0
    a = normalize_axis(axis, len(data), error=ValueError)
    if block_size <= 0:
        if len(param) != 1 or not _may_equal(param[0], data[a]):
            raise ValueError(
                f"a per-axis scale or zero point must be 1-D of the size of axis {a} "
                f"({data[a]}), got dims {list(param)}"
            )
        return "axis", a
    blocks, size = list(data), data[a]
    if isinstance(size, int):
        blocks[a] = -(-size // block_size)
    if not _dims_agree(param, blocks):
        raise ValueError(
            f"a blocked scale or zero point for dims {list(data)}, axis {a} and block_size "
            f"{block_size} must have dims {blocks}, got {list(param)}"
        )
    return "blocked", a


def _may_equal(p: Dim, d: Dim) -> bool:
    return p == d or not isinstance(p, int) or not isinstance(d, int)


def _dims_agree(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    """Same rank, and dims that may be equal (a symbolic dim may be anything)."""
    return len(a) == len(b) and all(_may_equal(x, y) for x, y in zip(a, b, strict=True))


def expand_param(
    param: np.ndarray[Any, Any], shape: tuple[int, ...], axis: int, block_size: int
) -> np.ndarray[Any, Any]:
    """A scale or zero point reshaped (blocks repeated) so that it broadcasts over ``shape``."""
    kind, a = param_layout(param.shape, shape, axis, block_size)
    if kind == "tensor":
        return param.reshape(())
    if kind == "axis":
        return param.reshape([-1 if i == a else 1 for i in range(len(shape))])
    return np.repeat(param, block_size, axis=a).take(np.arange(shape[a]), axis=a)


def _names(types: Collection[DType]) -> str:
    return ", ".join(sorted(str(t) for t in types))


def _check_params(ctx: InferContext, data: TensorType, indices: Sequence[int]) -> None:
    """The scale and zero point agree in dims and fit the data per axis, block_size."""
    params = [ctx.tensor(i) for i in indices if ctx.has(i)]
    if len(params) == 2 and None not in (params[0].shape, params[1].shape):
        a, b = params[0].shape, params[1].shape
        assert a is not None and b is not None
        per_tensor = all(len(s) == 0 or list(s) == [1] for s in (a, b))
        if not per_tensor and not _dims_agree(a, b):
            raise ctx.error(f"scale {params[0]} and zero point {params[1]} differ in dims")
    for p in params:
        if p.shape is not None and data.shape is not None:
            try:
                param_layout(p.shape, data.shape, ctx.attr("axis"), ctx.attr("block_size"))
            except ValueError as exc:
                raise ctx.error(str(exc)) from None


_GRANULARITY = {"axis": AttrSpec(int, 1), "block_size": AttrSpec(int, 0)}


@op(
    "QuantizeLinear",
    inputs=(2, 3),
    attrs={
        **_GRANULARITY,
        "output_dtype": AttrSpec(DType, None),
        "saturate": AttrSpec(int, 1),
        "precision": AttrSpec(DType, None),
    },
)
def _quantize_linear(ctx: InferContext) -> list[Type]:
    """y = saturate(round(x / y_scale) + y_zero_point), rounding to nearest even, to the
    zero point's type (else ``output_dtype``, else uint8); float8/float4 results follow Cast
    (``saturate``). The scale and zero point share dims: a scalar (per tensor), 1-D along
    ``axis`` (per axis) or x's dims with ``axis`` in ceil(size / block_size) blocks. The
    division is done in ``precision`` (default: the scale's type)."""
    x = expect_one_of(ctx, 0, {*_SCALES, D.int32}, "x")
    expect_one_of(ctx, 1, {*_SCALES, D.int32, D.float8e8m0}, "y_scale")
    zero = ctx.tensor(2).dtype if ctx.has(2) else None
    try:
        to = quantized_type(zero, ctx.attr("output_dtype"))
    except ValueError as exc:
        raise ctx.error(str(exc)) from None
    precision = ctx.attr("precision")
    if precision is not None and precision not in {*_SCALES, D.int32}:
        raise ctx.error(f"precision must be one of {_names({*_SCALES, D.int32})}, got {precision}")
    _check_params(ctx, x, (1, 2))
    return [x.with_dtype(to)]


@op(
    "DequantizeLinear",
    inputs=(2, 3),
    attrs={**_GRANULARITY, "output_dtype": AttrSpec(DType, None)},
)
def _dequantize_linear(ctx: InferContext) -> list[Type]:
    """y = (x - x_zero_point) * x_scale, computed in and typed as ``output_dtype`` (default:
    the scale's type). The scale and zero point apply per tensor, per axis or per block as in
    QuantizeLinear; the zero point has x's type."""
    x = expect_one_of(ctx, 0, {*QUANTIZED, D.int32}, "x")
    scale = expect_one_of(ctx, 1, {*_SCALES, D.float8e8m0}, "x_scale")
    if ctx.has(2):
        ctx.same_dtype(0, 2)
    out = ctx.attr("output_dtype") or scale.dtype
    if out not in _SCALES:
        raise ctx.error(f"output_dtype must be one of {_names(_SCALES)}, got {out}")
    _check_params(ctx, x, (1, 2))
    return [x.with_dtype(out)]


@op("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx: InferContext) -> list[Type]:
    """x quantized to uint8 over the range [min(x, 0), max(x, 0)]: y_scale = range / 255,
    y_zero_point = saturate(round(-min / y_scale)), y = saturate(round(x / y_scale) + zp)."""
    x = expect_one_of(ctx, 0, {D.float32}, "x")
    return [x.with_dtype(D.uint8), TensorType(D.float32, ()), TensorType(D.uint8, ())]


@op("MatMulInteger", inputs=(2, 4))
def _matmul_integer(ctx: InferContext) -> list[Type]:
    """(A - a_zero_point) @ (B - b_zero_point) in int32 (NumPy matmul shapes). A zero point is
    a scalar, per row of A (1-D of M, or [..., M, 1]) or per column of B."""
    a = expect_one_of(ctx, 0, {D.int8, D.uint8}, "A")
    b = expect_one_of(ctx, 1, {D.int8, D.uint8}, "B")
    for zero, data in ((2, 0), (3, 1)):
        if ctx.has(zero):
            ctx.same_dtype(data, zero)
    return [TensorType(D.int32, matmul_dims(ctx, a, b))]


@op("QLinearMatMul", inputs=8)
def _qlinear_matmul(ctx: InferContext) -> list[Type]:
    """Quantized a @ b: dequantize a and b (scale and zero point per tensor, per row of a or
    per column of b), multiply, quantize with y_scale and y_zero_point (whose type is y's)."""
    a = expect_one_of(ctx, 0, _8BIT, "a")
    b = expect_one_of(ctx, 3, _8BIT, "b")
    y = expect_one_of(ctx, 7, _8BIT, "y_zero_point")
    for i, what in ((1, "a_scale"), (4, "b_scale"), (6, "y_scale")):
        expect_one_of(ctx, i, _SCALES, what)
    ctx.same_dtype(1, 4, 6)
    ctx.same_dtype(0, 2)
    ctx.same_dtype(3, 5)
    return [TensorType(y.dtype, matmul_dims(ctx, a, b, (0, 3)))]


@op("BitCast", attrs={"to": AttrSpec(DType)})
def _bit_cast(ctx: InferContext) -> list[Type]:
    """The bits of each element reread as type ``to``, which must be as wide (little endian;
    strings are not allowed)."""
    x, to = ctx.tensor(0), ctx.attr("to")
    if DType.string in (x.dtype, to):
        raise ctx.error(f"cannot reinterpret the bits of strings: {x} to {to}")
    if x.dtype.bits != to.bits:
        raise ctx.error(f"{to} is {to.bits} bits wide, the input {x} has {x.dtype.bits}")
    return [x.with_dtype(to)]
