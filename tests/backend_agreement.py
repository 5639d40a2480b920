"""How two backends' results are compared: the law every backend obeys against the reference.

Floats agree by *units in the last place*, element by element, in each value's own dtype:

* The distance of ``got`` from ``want`` is ``|got - want| / ulp``, both converted to float64
  (exact for every dtype narrower than float64; for float64 the difference of two close values
  is exact, Sterbenz), where ``ulp`` is the spacing of ``want``'s dtype at the smaller of the
  two magnitudes: ``2 ** (max(exponent, minexp) - nmant)`` from ``ml_dtypes.finfo``, so
  float16, bfloat16, the float8s and float4 are measured at their own precision. Moving a value
  by k steps of its dtype within its binade is a distance of exactly k; across binades the
  distance is at least the number of steps (the spacing only grows with the magnitude). The
  smaller magnitude, rather than ``want``'s own, makes the distance symmetric (conftest's
  ``want`` is whichever backend ran second) and keeps a result that is far too small from
  reading as under one ULP: with ``want``'s spacing, every value below ``want`` is within one
  ULP of it in float8e8m0, which has no mantissa bits. Nothing is ever scaled by an array's
  largest value.
* NaN matches NaN (any sign or payload) and nothing else: NaNs sit at the same positions.
  ±inf matches only itself.
* Bit-exact (0 ULP) also compares the sign of zero: ``-0.0`` against ``0.0`` fails. A ULP
  bound (> 0) treats them as distance 0 (``|-0 - 0| = 0``).
* Complex values are compared per component (real and imaginary parts in the component dtype).
* Integers (int4 and int2 too), bools and strings are exactly equal.

Each pair of backends has its allowed distance (:func:`tolerance`):

* ``compiled`` against ``reference``, and any pair without ``jax``: **bit-exact**. The compiled
  backend's templates make the reference kernels' NumPy (and BLAS) calls with the same dtypes,
  shapes and strides in the same order, and every pass preserves values exactly, so any
  difference is a bug: a template that sums in another order (one GEMM over a stack of
  matrices, a contiguous copy of transposed weights: both sum in another order on OpenBLAS) or
  a pass that does (a float MatMul batched out of a loop, a prefix sum accumulated in another
  type).
* ``jax`` (or ``auto``, which runs on XLA once compiled) against anything: :data:`JAX`, per
  dtype. XLA evaluates exp, log, tanh, erf, atanh, ... with its own approximations, a few ULPs
  from NumPy's, and sums dot products, convolutions and reductions in its own order; loops
  carry those differences from one iteration to the next. The bound has two parts:

  - ``ulps``, relative: float32 and float64 2**4 ULPs. One transcendental op differs by up to
    about 4 ULPs (XLA's float32 exp, log, tanh and NumPy's SIMD ones are each within about two
    of the correctly rounded result), and the suite chains a few per step over a handful of
    loop iterations (an RNN cell: a matmul, a sigmoid, a tanh); measured, once the floor
    below excuses the cancellations: 3 ULPs of float32 and 3 of float64 at most, over every
    jax run of ``tests/backends`` with ``TENSORLOOP_JAX_SAMPLE=1`` and the sampled ones of the
    rest of the suite. float16 and bfloat16 are computed in
    float32 on both sides and rounded once per op, so they differ by a ULP of their own where
    the float32 results straddle a rounding boundary: 2**2 (measured: 1). The float8s and
    float4 (:data:`JAX_NARROW`): 1 ULP, no floor.
  - ``floor_ulps``, absolute, in ULPs of the dtype *at 1.0* (``floor_ulps * eps``): where a
    result cancels towards zero (a convolution or attention score summing order-one products
    to almost nothing, gelu or atanh of a small argument), a difference of a few ULPs in the
    order-one terms is a difference of as many ULPs at 1.0 in the result, whose own ULP may be
    millions of times smaller. The suite's inputs are of order one, so the floor is 2**4 ULPs
    at 1.0 for float32 and float64 (measured: 12 for float32, from a convolution; 10 for
    float64, from atanh), 2 for float16 and bfloat16. It is never scaled by an array's
    largest value: ``[1e6, 1, 0.001]`` against ``[1e6, 100, -50]`` fails.

The pair comes from the ``backends`` argument or, when that is left out, from the start of
``where``: conftest's messages begin ``"<backend> vs <backend>"``. A ``where`` that names no
pair gets the strictest law, bit-exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from tensorloop.reference.runtime import TraceEntry


@dataclass(frozen=True)
class Tolerance:
    """What two float results may differ by, elementwise: ``ulps`` ULPs (:func:`ulp_distance`),
    or else at most ``floor_ulps`` ULPs of the dtype at 1.0 (``floor_ulps * eps``) absolutely.
    Both 0: bit-exact, the sign of zero included."""

    ulps: float = 0.0
    floor_ulps: float = 0.0

    @property
    def bit_exact(self) -> bool:
        return self.ulps == 0 and self.floor_ulps == 0


BIT_EXACT = Tolerance()

JAX: dict[str, Tolerance] = {
    "float64": Tolerance(ulps=2.0**4, floor_ulps=2.0**4),
    "float32": Tolerance(ulps=2.0**4, floor_ulps=2.0**4),
    "float16": Tolerance(ulps=2.0**2, floor_ulps=2.0),
    "bfloat16": Tolerance(ulps=2.0**2, floor_ulps=2.0),
}
"""What jax may differ from the reference by, per dtype: see the module docstring."""

JAX_NARROW = Tolerance(ulps=1.0)
"""The float8s and float4: one ULP of their own precision, no floor."""

BACKENDS = ("reference", "compiled", "jax", "auto")
XLA_BACKENDS = ("jax", "auto")
"""Backends whose results may come from XLA (``auto`` runs on XLA once its compile is done)."""
JAX_VS_REFERENCE = ("jax", "reference")
_PAIR = re.compile(r"^\s*(\w+) vs (\w+)\b")


def pair_of(where: str) -> tuple[str, str] | None:
    """The two backends ``where`` names at its start (``"jax vs reference: output 'y'"``)."""
    found = _PAIR.match(where)
    if found is None or not {found[1], found[2]} <= set(BACKENDS):
        return None
    return found[1], found[2]


def tolerance(backends: Sequence[str] | None, dtype: np.dtype[Any]) -> Tolerance:
    """The allowed distance between ``backends``' results of float ``dtype``."""
    if backends is None or not set(backends) & set(XLA_BACKENDS):
        return BIT_EXACT
    return JAX.get(np.dtype(dtype).name, JAX_NARROW)


def is_float(dtype: np.dtype[Any]) -> bool:
    """True for NumPy's floats and ml_dtypes' (which NumPy files under kind ``V``)."""
    if dtype.kind == "f":
        return True
    if dtype.kind != "V":
        return False
    try:
        ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    except ValueError:  # int4, int2, ...
        return False
    return True


def ulp(value: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The spacing of float ``dtype`` at the magnitude of each (finite) element of ``value``, as
    float64: ``2 ** (max(exponent, minexp) - nmant)``, the same across the subnormals and zero."""
    info = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    v = np.asarray(value, np.float64)
    _, exponent = np.frexp(v)  # |v| = m 2**e, m in [0.5, 1); frexp(0) gives e = 0
    exponent = np.where(v == 0, int(info.minexp), np.maximum(exponent - 1, int(info.minexp)))
    return np.ldexp(1.0, exponent - int(info.nmant))


def ulp_distance(got: Any, want: Any) -> np.ndarray[Any, Any]:
    """``|got - want|`` in ULPs of ``want``'s dtype at the smaller of the two magnitudes,
    elementwise, as float64: 0 where they are equal (``-0.0`` and ``0.0`` too), NaN where both
    are NaN, inf where one is NaN or inf and the other is not the same."""
    w = np.asarray(want)
    g = np.asarray(got).astype(np.float64)
    wf = w.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(g) & np.isfinite(wf)
        low = np.where(finite, np.minimum(np.abs(g), np.abs(wf)), 0.0)
        out = np.where(finite, np.abs(g - wf) / ulp(low, w.dtype), np.inf)
        out = np.where(g == wf, 0.0, out)
    return np.where(np.isnan(g) & np.isnan(wf), np.nan, out)


def _components(a: np.ndarray[Any, Any]) -> list[tuple[str, np.ndarray[Any, Any]]]:
    if a.dtype.kind == "c":
        return [(" (real part)", a.real), (" (imaginary part)", a.imag)]
    return [("", a)]


def _show(a: np.ndarray[Any, Any], at: tuple[int, ...]) -> str:
    return repr(a[at].item() if a.dtype.kind != "V" else float(a[at]))


def assert_floats_agree(got: Any, want: Any, where: str, allowed: Tolerance) -> None:
    """Float arrays of one dtype and shape agree elementwise within ``allowed``."""
    g, w = np.asarray(got), np.asarray(want)
    gf, wf = g.astype(np.float64), w.astype(np.float64)
    gnan, wnan = np.isnan(gf), np.isnan(wf)
    if not np.array_equal(gnan, wnan):
        at = tuple(int(i) for i in np.argwhere(gnan != wnan)[0])
        raise AssertionError(
            f"{where}: NaN at different positions ({int((gnan != wnan).sum())} of {w.size}); "
            f"first at {at}: got {_show(g, at)}, want {_show(w, at)}"
        )
    dist = np.nan_to_num(ulp_distance(g, w), nan=0.0)
    if allowed.bit_exact:
        zero_sign = (gf == 0) & (wf == 0) & (np.signbit(gf) != np.signbit(wf))
        bad = (dist > 0) | zero_sign
        law = "bit-exact (0 ULP, sign of zero included)"
    else:
        eps = float(ml_dtypes.finfo(w.dtype).eps)  # type: ignore[no-untyped-call]
        with np.errstate(invalid="ignore", over="ignore"):
            near = np.where(np.isfinite(gf) & np.isfinite(wf), np.abs(gf - wf), np.inf)
        bad = (dist > allowed.ulps) & (near > allowed.floor_ulps * eps)
        law = f"within {allowed.ulps:g} ULP or {allowed.floor_ulps:g} ULP at 1.0"
    if bad.any():
        worst = np.where(bad, dist, -1.0)
        at = tuple(int(i) for i in np.unravel_index(int(np.argmax(worst)), w.shape))
        raise AssertionError(
            f"{where}: {int(bad.sum())} of {w.size} {w.dtype} elements differ, want {law}; "
            f"worst {float(worst[at]):.6g} ULP at {at}: got {_show(g, at)}, want {_show(w, at)}"
        )


def assert_same_value(
    got: Any, want: Any, where: str, *, backends: Sequence[str] | None = None
) -> None:
    """``got`` agrees with ``want`` by the law of ``backends`` (default: the pair ``where``
    starts with, else bit-exact): same type, dtype, shape, and values as the module docstring
    says. Sequences (lists) agree element by element; None only with None."""
    if backends is None:
        backends = pair_of(where)
    if isinstance(want, list):
        assert isinstance(got, list), f"{where}: got {type(got).__name__}, want a sequence"
        assert len(got) == len(want), f"{where}: sequence of {len(got)}, want {len(want)}"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_value(g, w, f"{where}[{k}]", backends=backends)
        return
    if want is None:
        assert got is None, f"{where}: got {type(got).__name__}, want none"
        return
    g, w = np.asarray(got), np.asarray(want)
    assert type(got) is type(want), (
        f"{where}: got a {type(got).__name__}, want a {type(want).__name__}"
    )
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, want {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape}, want {w.shape}"
    if w.dtype.kind == "c" or is_float(w.dtype):
        for (part, gc), (_, wc) in zip(_components(g), _components(w), strict=True):
            assert_floats_agree(gc, wc, where + part, tolerance(backends, wc.dtype))
    else:
        np.testing.assert_array_equal(g, w, err_msg=where, strict=True)


def assert_same_outputs(
    got: Mapping[str, Any],
    want: Mapping[str, Any],
    where: str,
    *,
    backends: Sequence[str] | None = None,
) -> None:
    assert list(got) == list(want), f"{where}: outputs {list(got)}, want {list(want)}"
    for name in want:
        assert_same_value(got[name], want[name], f"{where}: output '{name}'", backends=backends)


def assert_same_trace(
    got: Mapping[str, list[TraceEntry]],
    want: Mapping[str, list[TraceEntry]],
    where: str,
    *,
    backends: Sequence[str] | None = None,
) -> None:
    assert sorted(got) == sorted(want), f"{where}: traced {sorted(got)}, want {sorted(want)}"
    for name, entries in want.items():
        paths = [(e.loop, e.iteration) for e in got[name]]
        want_paths = [(e.loop, e.iteration) for e in entries]
        assert paths == want_paths, f"{where}: trace of '{name}' differs"
        for g, w in zip(got[name], entries, strict=True):
            assert_same_value(
                g.value,
                w.value,
                f"{where}: trace of '{name}' at {w.iteration}",
                backends=backends,
            )
