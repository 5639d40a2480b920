"""Reference kernels for element conversion and quantization: ONNX Cast's conversion rules (used by
Cast and CastLike), QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
MatMulInteger and BitCast."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ...ops.quant import expand_param, quantized_type
from ...tensor.dtypes import DType, dtype, float_max, int_range, string_array
from ...tensor.numerics import f32_round_to_odd
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_NUMPY_FLOATS = frozenset({DType.float16, DType.float32, DType.float64})
# The float types ``saturate`` governs: those with an inf or NaN to overflow into.
SATURABLE = frozenset(
    {DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz}
)
# Sources whose values float32 may not hold exactly.
_WIDE = frozenset({np.dtype(t) for t in (np.float64, np.int32, np.uint32, np.int64, np.uint64)})
_E8M0_MIN, _E8M0_MAX = 2.0**-127, 2.0**127


# -- Cast's conversion rules ------------------------------------------------------------------
def convert(x: Array, to: DType, saturate: bool = True, round_mode: str = "up") -> Array:
    """``x`` converted to ``to`` by ONNX Cast's rules; ValueError for a string that is no number."""
    src = dtype(x.dtype)
    if src is to:
        return x.copy()
    if to is DType.string:
        return _format(x, src)
    if src is DType.string:
        return _parse(x, to, saturate, round_mode)
    plain = _plain(x)
    if to is DType.bool:
        return np.asarray(plain != 0)
    if to.is_int:
        return _to_int(plain, to)
    if to is DType.float8e8m0:
        return _to_e8m0(plain.astype(_F64), saturate, round_mode)
    if to in _NUMPY_FLOATS:  # NumPy's own floats round correctly from any of the plain types
        with np.errstate(over="ignore"):
            return plain.astype(to.numpy)
    # ml_dtypes rounds to its narrow floats from float32 (from float64 it goes through float32,
    # rounding twice). Rounding to odd on the way to float32 keeps the final rounding exact.
    narrow = f32_round_to_odd(plain.astype(_F64)) if plain.dtype in _WIDE else plain.astype(_F32)
    if saturate and to in SATURABLE:
        limit = float_max(to)
        narrow = np.clip(narrow, -limit, limit)
    with np.errstate(over="ignore", invalid="ignore"):
        return narrow.astype(to.numpy)


def _plain(x: Array) -> Array:
    """``x`` in a NumPy-native type that holds its values exactly (ml_dtypes ones widened)."""
    dt = dtype(x.dtype)
    if dt.is_float and dt not in _NUMPY_FLOATS:
        return x.astype(_F32)
    if dt.is_int and dt.bits < 8:
        return x.astype(np.int8 if dt.is_signed else np.uint8)
    return x


def _to_int(plain: Array, to: DType) -> Array:
    """Floats truncate (NaN, inf and out of range are undefined); integers keep the low bits."""
    if dtype(plain.dtype).is_float:
        with np.errstate(invalid="ignore"):
            if to.bits >= 8:
                return plain.astype(to.numpy)
            plain = np.where(np.isfinite(plain), np.trunc(plain), 0).astype(np.int64)
    if to.bits >= 8:
        return plain.astype(to.numpy)
    low = plain.astype(np.int64) & ((1 << to.bits) - 1)
    if to.is_signed:
        low = np.where(low >= 1 << (to.bits - 1), low - (1 << to.bits), low)
    return low.astype(to.numpy)


def _to_e8m0(x: Array, saturate: bool, round_mode: str) -> Array:
    """Powers of two 2**-127 .. 2**127: ``x`` rounds up, down or to nearest (ties up) in value.
    An ``x`` outside that range (0 and negatives included) saturates, or is NaN without."""
    mantissa, exponent = np.frexp(np.where(np.isfinite(x), x, 0))  # x = m * 2**e, 0.5 <= m < 1
    if round_mode == "up":
        exponent = np.where(mantissa > 0.5, exponent, exponent - 1)
    elif round_mode == "down":
        exponent = exponent - 1
    else:
        exponent = np.where(mantissa >= 0.75, exponent, exponent - 1)
    code = exponent.astype(np.int64) + 127
    nan = np.uint8(0xFF)
    with np.errstate(invalid="ignore"):
        under, over = x < _E8M0_MIN, x > _E8M0_MAX
    code = np.where(under, 0 if saturate else nan, np.where(over, 254 if saturate else nan, code))
    code = np.where(np.isnan(x), nan, code)
    return np.asarray(code, dtype=np.uint8).view(DType.float8e8m0.numpy)


def _format_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "INF" if v > 0 else "-INF"
    return f"{v:.8g}"


def _format(x: Array, src: DType) -> Array:
    """Numbers as text: ints exactly, bools as 1 and 0, floats as C's %.8g (as onnxruntime)."""
    if src is DType.bool:
        items = ["1" if v else "0" for v in x.reshape(-1).tolist()]
    elif src.is_int:
        items = [str(int(v)) for v in x.reshape(-1).tolist()]
    else:
        items = [_format_float(v) for v in _plain(x).astype(_F64).reshape(-1).tolist()]
    return string_array(items, x.shape)


_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_NUMBER = re.compile(
    r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?|nan)\s*", re.IGNORECASE
)


def _read_float(text: object) -> float:
    if not isinstance(text, str) or not _NUMBER.fullmatch(text):
        raise ValueError(f"cannot read {text!r} as a number")
    return float(text)


def _read_int(text: object) -> int:
    """An integer literal exactly; a decimal or scientific one truncated toward zero."""
    if isinstance(text, str) and _INTEGER.fullmatch(text):
        return int(text)
    value = _read_float(text)
    if not math.isfinite(value):
        raise ValueError(f"cannot read {text!r} as an integer")
    return int(value)


def _parse(x: Array, to: DType, saturate: bool, round_mode: str) -> Array:
    items = x.reshape(-1).tolist()
    if to.is_float:
        floats = np.array([_read_float(s) for s in items], dtype=_F64).reshape(x.shape)
        return convert(floats, to, saturate, round_mode)
    ints = [_read_int(s) for s in items]
    if to is DType.bool:
        return np.array([v != 0 for v in ints], dtype=bool).reshape(x.shape)
    # The low 64 bits, from which the integer rules keep as many as ``to`` has.
    low = np.array([v % (1 << 64) for v in ints], dtype=np.uint64).reshape(x.shape)
    return _to_int(low, to)


# -- quantization -----------------------------------------------------------------------------
def _arithmetic(dt: DType) -> DType:
    """The float type that arithmetic of precision ``dt`` is done in (int32: float64, exact;
    float8e8m0, which holds only powers of two: float32)."""
    if dt in _NUMPY_FLOATS or dt is DType.bfloat16:
        return dt
    return DType.float64 if dt is DType.int32 else DType.float32


def _divide_in(x: Array, scale: Array, dt: DType) -> Array:
    """x / scale in precision ``dt``: both rounded to it, the quotient computed in float32
    (float64 for float64) and rounded to it once, which is exact for a division."""
    wide = _F64 if dt is DType.float64 else _F32
    a, b = (_plain(convert(v, dt)).astype(wide) for v in (x, scale))
    with np.errstate(all="ignore"):
        out = np.asarray(np.divide(a, b))
    return out if out.dtype == dt.numpy else _plain(convert(out, dt))


def _quantize(values: Array, zero: Array | None, to: DType, saturate: bool) -> Array:
    """``values`` (the unrounded x / scale) plus ``zero`` as element type ``to``: integers round
    to nearest even and saturate; floats follow Cast."""
    if to.is_int:
        lo, hi = int_range(to)
        with np.errstate(invalid="ignore"):
            q = np.rint(values.astype(_F64))
            if zero is not None:
                q = q + _plain(zero).astype(_F64)
            return np.clip(q, lo, hi).astype(to.numpy)
    total = values.astype(_F64)
    if zero is not None:
        total = total + _plain(zero).astype(_F64)
    return convert(total, to, saturate)


def _param(ctx: KernelContext, p: Array, shape: tuple[int, ...]) -> Array:
    try:
        return expand_param(p, shape, ctx.attr("axis"), ctx.attr("block_size"))
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None


@kernel("QuantizeLinear")
def quantize_linear(ctx: KernelContext, x: Any, scale: Any, zero: Any = None) -> Array:
    x, scale = np.asarray(x), np.asarray(scale)
    zero = None if zero is None else np.asarray(zero)
    try:
        to = quantized_type(None if zero is None else dtype(zero.dtype), ctx.attr("output_dtype"))
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    precision = _arithmetic(ctx.attr("precision") or dtype(scale.dtype))
    ratio = _divide_in(x, _param(ctx, scale, x.shape), precision)
    zero = None if zero is None else _param(ctx, zero, x.shape)
    return _quantize(ratio, zero, to, bool(ctx.attr("saturate")))


@kernel("DequantizeLinear")
def dequantize_linear(ctx: KernelContext, x: Any, scale: Any, zero: Any = None) -> Array:
    x, scale = np.asarray(x), np.asarray(scale)
    out: DType = ctx.attr("output_dtype") or dtype(scale.dtype)
    shifted = _plain(x).astype(np.float64 if dtype(x.dtype).is_float else np.int64)
    if zero is not None:
        shifted = shifted - _param(ctx, _plain(np.asarray(zero)), x.shape).astype(shifted.dtype)
    # The difference is exact; onnxruntime rounds it to the output type only with the product.
    wide = _F64 if out is DType.float64 else _F32
    with np.errstate(all="ignore"):
        y = shifted.astype(wide) * _plain(_param(ctx, scale, x.shape)).astype(wide)
    return convert(np.asarray(y), out)


@kernel("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: KernelContext, x: Any) -> tuple[Array, Array, Array]:
    x = np.asarray(x, dtype=np.float32)
    zero32 = np.float32(0)
    lo = min(zero32, np.min(x)) if x.size else zero32
    hi = max(zero32, np.max(x)) if x.size else zero32
    # An all-zero x has no range; a scale of 1 (as onnxruntime takes) quantizes it to zeros.
    scale = np.float32((hi - lo) / np.float32(255)) or np.float32(1)
    with np.errstate(all="ignore"):
        zero = np.clip(np.rint(-lo / scale), 0, 255)
        y = np.clip(np.rint(x / scale) + zero, 0, 255)
    return y.astype(np.uint8), np.asarray(scale, np.float32), np.asarray(zero).astype(np.uint8)


def _rowwise(p: Array, operand: Array) -> Array:
    """A 1-D per-row parameter of the left operand as a column, so it broadcasts over its rows."""
    return p.reshape(-1, 1) if p.ndim == 1 and operand.ndim >= 2 else p


def _centred(x: Array, zero: Array | None, row: bool) -> Array:
    """``x - zero`` exactly: in int64 for integers, float64 for the 8-bit floats."""
    wide = np.float64 if dtype(x.dtype).is_float else np.int64
    out = _plain(x).astype(wide)
    if zero is None:
        return out
    z = _plain(zero).astype(wide)
    return out - (_rowwise(z, x) if row else z)


@kernel("MatMulInteger")
def matmul_integer(
    ctx: KernelContext, a: Any, b: Any, a_zero: Any = None, b_zero: Any = None
) -> Array:
    a, b = np.asarray(a), np.asarray(b)
    a_zero = None if a_zero is None else np.asarray(a_zero)
    b_zero = None if b_zero is None else np.asarray(b_zero)
    product = np.matmul(_centred(a, a_zero, row=True), _centred(b, b_zero, row=False))
    return np.asarray(product).astype(np.int32)  # int32 accumulation wraps, as the spec allows


@kernel("QLinearMatMul")
def qlinear_matmul(
    ctx: KernelContext,
    a: Any,
    a_scale: Any,
    a_zero: Any,
    b: Any,
    b_scale: Any,
    b_zero: Any,
    y_scale: Any,
    y_zero: Any,
) -> Array:
    a, b, y_zero = np.asarray(a), np.asarray(b), np.asarray(y_zero)
    acc = np.matmul(
        _centred(a, np.asarray(a_zero), row=True), _centred(b, np.asarray(b_zero), row=False)
    )
    scales = [_plain(np.asarray(s)).astype(_F32) for s in (a_scale, b_scale, y_scale)]
    multiplier = _rowwise(scales[0], a) * scales[1] / scales[2]
    with np.errstate(all="ignore"):
        real = acc.astype(_F32) * multiplier
    return _quantize(real, y_zero, dtype(y_zero.dtype), saturate=True)


@kernel("BitCast")
def bit_cast(ctx: KernelContext, x: Any) -> Array:
    x, to = np.asarray(x), ctx.attr("to")
    src = dtype(x.dtype)
    if src.bits < 8:  # only the low bits of each byte belong to a 4- or 2-bit element
        x = (x.view(np.uint8) & np.uint8((1 << src.bits) - 1)).view(x.dtype)
    out = x.view(to.numpy)
    return np.asarray(out != 0) if to is DType.bool else out.copy()
