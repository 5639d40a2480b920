"""The numeric rules every backend follows: which type an operation computes in, which type a
sum, product or mean accumulates in, and how a wide result rounds back once. The reference
kernels define them; the compiled backend's templates and the JAX lowerings read them from here,
so a change to one rule changes all three.

Which types are floats is ``DType.is_float``'s answer (``is_float``), never NumPy's kind letter:
ml_dtypes files float8e5m2 under kind ``"f"`` but bfloat16, the other float8s and float4 under
``"V"``, with the 4- and 2-bit integers.

* **Widening.** The floats narrower than float32 (``WIDENED``: float16, bfloat16, the float8s
  and float4) compute in float32 and round back once per operation: NumPy's own arithmetic on
  them is partial or lossy (ml_dtypes' loops round after every step of a kernel), and one
  float32 operation rounded to the narrow type is the correctly rounded narrow result for
  ``+ - * /`` and ``sqrt`` (float32 has more than twice their precision plus two bits, and
  holds all their values), but for float8e8m0's results below float32's normal range, 2**-126:
  float32 flushes them to 0 below 2**-149 (NaN as float8e8m0, which has no 0) and ml_dtypes
  rounds float32's subnormals up. float32, float64 and the integers compute in themselves.
* **Accumulation.** A sum, product, mean or running total (ReduceSum, ReduceProd, ReduceL1,
  ReduceL2, ReduceMean, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, CumSum, CumProd)
  accumulates every float in float64 and rounds once at the end (``round_to``); the narrow
  floats' terms (``|x|``, ``x * x``) are computed in float64 too (``lift``), where they are
  exact. bool and the signed integers accumulate in int64 and the unsigned ones in uint64
  (NumPy's default for an integer sum, which wraps back to the same result as summing in the
  narrow type); the 4- and 2-bit integers in their own type, as NumPy does for them.
* **Rounding once.** ml_dtypes and XLA convert float64 to bfloat16, the float8s and float4
  through float32, rounding twice; ``round_to`` rounds the float64 value to float32 *to odd*
  first, which makes the second rounding the correct rounding of the float64 value (float8e8m0
  it rounds from float64 itself: ml_dtypes rounds float32's subnormals, its least binade, up).

The rules are functions of an element type: a ``DType``, a NumPy dtype or scalar type (JAX's
dtypes are NumPy's), or a DType name. ``widen``, ``lift`` and ``round_to`` apply them to an
array of any array namespace with NumPy's API (``numpy``, ``jax.numpy``).
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .dtypes import DType, DTypeLike, dtype

Array = Any
"""An array of some array namespace (a NumPy or a JAX array)."""

FLOATS: frozenset[DType] = frozenset(d for d in DType if d.is_float)
"""The float types: ``DType.is_float``, whatever kind letter NumPy gives them."""

NATIVE_FLOATS: frozenset[DType] = frozenset({DType.float32, DType.float64})
"""The float types NumPy computes in directly, with no widening and no ml_dtypes loop: an
expression over them is the reference kernel's expression, rounding for rounding."""

WIDENED: frozenset[DType] = FLOATS - NATIVE_FLOATS
"""The element types that compute in float32 and round back once per operation: the floats
narrower than float32 (float16, bfloat16, the float8s, float4)."""

COMPUTE: np.dtype[Any] = np.dtype(np.float32)
"""The type the ``WIDENED`` types compute in."""

WIDE_ACCUMULATING: frozenset[DType] = FLOATS
"""The types whose sums, products and means accumulate in float64: every float."""

_FLOATS_NUMPY = frozenset(d.numpy for d in FLOATS)
_WIDENED_NUMPY = frozenset(d.numpy for d in WIDENED)
_FLOAT64 = np.dtype(np.float64)
_INT64 = np.dtype(np.int64)
_UINT64 = np.dtype(np.uint64)
_BITS32 = np.dtype(np.uint32)
_E8M0 = DType.float8e8m0.numpy


def _numpy(dt: DTypeLike) -> np.dtype[Any]:
    """``dt`` as a NumPy dtype (a DType by its NumPy equivalent, a name by its DType)."""
    if isinstance(dt, DType):
        return dt.numpy
    if isinstance(dt, str):
        return dtype(dt).numpy
    return np.dtype(dt)


def is_float(dt: DTypeLike) -> bool:
    """Whether ``dt`` is a float type (``FLOATS``): ``DType.is_float`` for the types tensorloop
    knows, False for any other NumPy dtype (complex, object, strings)."""
    return _numpy(dt) in _FLOATS_NUMPY


def is_widened(dt: DTypeLike) -> bool:
    """Whether ``dt`` computes in float32 (``COMPUTE``) and rounds back once per operation."""
    return _numpy(dt) in _WIDENED_NUMPY


def compute_dtype(dt: DTypeLike) -> np.dtype[Any]:
    """The NumPy dtype an elementwise operation on ``dt`` values computes in: float32 for the
    ``WIDENED`` floats, ``dt`` itself for every other type."""
    npd = _numpy(dt)
    return COMPUTE if npd in _WIDENED_NUMPY else npd


def accumulates_wide(dt: DTypeLike) -> bool:
    """Whether the sums, products and means of ``dt`` values accumulate in float64: whether
    ``dt`` is a float (``is_float``)."""
    return is_float(dt)


def accumulator_dtype(dt: DTypeLike) -> np.dtype[Any]:
    """The NumPy dtype a sum, product, mean or running total of ``dt`` values accumulates in:
    float64 for every float; int64 for bool and the signed integers and uint64 for the unsigned
    ones (NumPy's default, which wraps back to the narrow type's own result); the 4- and 2-bit
    integers in themselves, as NumPy picks for them."""
    npd = _numpy(dt)
    if is_float(npd):
        return _FLOAT64
    if npd.kind in "bi":
        return _INT64
    if npd.kind == "u":
        return _UINT64
    return npd


@overload
def widen(x: Any) -> np.ndarray[Any, Any]: ...
@overload
def widen(x: Any, xp: Any) -> Array: ...
def widen(x: Any, xp: Any = np) -> Array:
    """``x`` as an array of namespace ``xp`` (``numpy`` or ``jax.numpy``), in the type it
    computes in: the ``WIDENED`` floats lifted to float32, any other type unchanged."""
    a = xp.asarray(x)
    return a.astype(COMPUTE) if a.dtype in _WIDENED_NUMPY else a


@overload
def lift(x: Any) -> np.ndarray[Any, Any]: ...
@overload
def lift(x: Any, xp: Any) -> Array: ...
def lift(x: Any, xp: Any = np) -> Array:
    """``x`` as the reductions take it: the ``WIDENED`` floats lifted to float64 (their
    accumulator), in which their absolute values, squares and products of a few are exact
    (float32 would flush the squares of bfloat16's and float8e8m0's least values to zero); any
    other type unchanged (float32 squares round in float32, as NumPy's ``x * x`` does)."""
    a = xp.asarray(x)
    return a.astype(_FLOAT64) if a.dtype in _WIDENED_NUMPY else a


def round_to(x: Any, dt: DTypeLike, xp: Any = np) -> Array:
    """``x`` converted to ``dt`` with one rounding: a float64 ``x`` to a ``WIDENED`` float
    rounds correctly (through float32 rounded to odd, as ml_dtypes and XLA convert through
    float32); any other conversion is ``astype``'s (NumPy's and XLA's float64 to float32 round
    once already; integers wrap, NaN and values out of an integer type's range are undefined).
    Past the narrow type's range the value is inf, or NaN for the types without an inf (float4
    saturates), as ml_dtypes converts."""
    a = xp.asarray(x)
    to = _numpy(dt)
    if to == _E8M0 and a.dtype == _FLOAT64:
        return _e8m0(a, xp)
    if to in _WIDENED_NUMPY and a.dtype == _FLOAT64:
        a = f32_round_to_odd(a, xp)
    with np.errstate(over="ignore", invalid="ignore"):
        return a.astype(to)


def f32_round_to_odd(x: Array, xp: Any = np) -> Array:
    """float64 ``x`` rounded to float32 toward zero, the last bit set where that was inexact:
    float32 has at least two more bits than any narrow float, so rounding this once more is the
    correct rounding of ``x``."""
    with np.errstate(over="ignore"):
        nearest = x.astype(COMPUTE)
    back = nearest.astype(_FLOAT64)
    inexact = xp.isfinite(x) & (back != x)
    bits = nearest.view(_BITS32)
    # One step toward zero undoes a rounding away from it: sign and magnitude are separate bits.
    one = xp.asarray(1, _BITS32)
    bits = xp.where(inexact & (xp.abs(back) > xp.abs(x)), bits - one, bits)
    bits = xp.where(inexact, bits | one, bits)
    return xp.asarray(bits, _BITS32).view(COMPUTE)


def _e8m0(x: Array, xp: Any) -> Array:
    """float64 ``x`` rounded to float8e8m0, the powers of two 2**-127 .. 2**127: to the nearest,
    a tie (1.5 times a power) up, as ml_dtypes rounds a normal float32; below the least, to it;
    NaN past 1.5 * 2**127 and for 0, negatives, inf and NaN, as ml_dtypes converts them."""
    finite = xp.isfinite(x) & (x > 0)
    mantissa, exponent = xp.frexp(xp.where(finite, x, 1.0))  # x = m * 2**e, 0.5 <= m < 1
    code = xp.where(mantissa >= 0.75, exponent, exponent - 1) + 127
    code = xp.where(finite & (code <= 254), xp.maximum(code, 0), 255)
    return xp.asarray(code, np.uint8).view(_E8M0)


__all__ = [
    "COMPUTE",
    "FLOATS",
    "NATIVE_FLOATS",
    "WIDENED",
    "WIDE_ACCUMULATING",
    "accumulates_wide",
    "accumulator_dtype",
    "compute_dtype",
    "f32_round_to_odd",
    "is_float",
    "is_widened",
    "lift",
    "round_to",
    "widen",
]
