"""The comparator every backend is held to (backend_agreement): results that are wrong fail it,
whatever their dtype, and the laws of its ULP distance hold."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from backend_agreement import (
    BIT_EXACT,
    JAX,
    JAX_NARROW,
    JAX_VS_REFERENCE,
    assert_same_outputs,
    assert_same_trace,
    assert_same_value,
    is_float,
    pair_of,
    tolerance,
    ulp,
    ulp_distance,
)
from tensorloop.reference.runtime import TraceEntry

COMPILED = ("compiled", "reference")
PAIRS = {"compiled vs reference": COMPILED, "jax vs reference": JAX_VS_REFERENCE}

F8 = [
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e4m3fnuz),
    np.dtype(ml_dtypes.float8_e5m2),
    np.dtype(ml_dtypes.float8_e5m2fnuz),
]
F4 = np.dtype(ml_dtypes.float4_e2m1fn)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
NARROW = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), *F8]
FLOATS = [np.dtype(np.float64), np.dtype(np.float32), *NARROW, F4, E8M0]
# every value here is exact in each of NARROW and none is 0, so -want and zeros differ from it
WANT = [0.5, 1.0, 1.5, 2.0, 3.0, -4.0, 12.0, -0.75]


def agrees(got: Any, want: Any, backends: tuple[str, str]) -> bool:
    try:
        assert_same_value(got, want, "test", backends=backends)
    except AssertionError:
        return False
    return True


def each_fails(got: np.ndarray, want: np.ndarray, backends: tuple[str, str]) -> None:
    """Every element of ``got`` on its own fails against ``want``'s."""
    for g, w in zip(got, want, strict=True):
        assert not agrees(np.array([g]), np.array([w]), backends), (g, w, want.dtype, backends)


def step(x: np.ndarray, k: int, up: bool = True) -> np.ndarray:
    """``x`` moved ``k`` representable values of its dtype up (or down)."""
    top = float(ml_dtypes.finfo(x.dtype).max)
    target = np.full_like(x, top if up else -top)
    for _ in range(k):
        x = np.nextafter(x, target)
    return x


# -- the counter-examples the old law (rtol 1, atol max|want|) let through ------------------------
@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
@pytest.mark.parametrize("dtype", NARROW, ids=str)
def test_negated_zeroed_and_shifted_narrow_floats_fail(
    dtype: np.dtype[Any], backends: tuple[str, str]
) -> None:
    want = np.array(WANT, dtype)
    each_fails(-want, want, backends)
    each_fails(np.zeros_like(want), want, backends)
    # + 0.99 is within a ULP of the float8s from 2 up (e5m2's spacing at 4 is 1): there, no fail
    small = want if dtype.itemsize == 2 else want[np.abs(want.astype(np.float64)) < 2]
    each_fails((small.astype(np.float64) + 0.99).astype(dtype), small, backends)


@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
def test_negated_zeroed_and_shifted_float4_fails(backends: tuple[str, str]) -> None:
    want = np.array([0.5, 1.0, 1.5, 2.0, 3.0, -4.0, 6.0, -0.5], F4)
    each_fails(-want, want, backends)
    # float4 is so narrow that 0 is one ULP from ±0.5, and + 0.99 one ULP from 1.5 up (2.49 and
    # 2.5 round to 2, 3.99 to 4): those are no counter-examples
    magnitude = np.abs(want.astype(np.float64))
    each_fails(np.zeros_like(want[magnitude > 0.5]), want[magnitude > 0.5], backends)
    small = want[magnitude <= 1]
    each_fails((small.astype(np.float64) + 0.99).astype(F4), small, backends)


@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
def test_e8m0_powers_of_two_off_by_a_factor_fail(backends: tuple[str, str]) -> None:
    want = np.array([2.0**-20, 0.5, 1.0, 4.0, 2.0**30], E8M0)
    each_fails((want.astype(np.float64) * 4).astype(E8M0), want, backends)
    each_fails((want.astype(np.float64) / 4).astype(E8M0), want, backends)


@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
def test_small_values_are_not_measured_against_the_arrays_largest(
    backends: tuple[str, str],
) -> None:
    want = np.array([1e6, 100, -50], np.float32)
    assert not agrees(np.array([1e6, 1, 0.001], np.float32), want, backends)
    each_fails(np.array([1e6, 1, 0.001], np.float32)[1:], want[1:], backends)
    # and a hundred ULPs of the small element fail next to a huge one, on the jax law too
    want = np.array([1e30, 1.0], np.float32)
    got = want.copy()
    got[1] = step(want[1:], 100)[0]
    assert not agrees(got, want, backends)


# -- units in the last place, per pair of backends ------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_one_ulp_fails_compiled_and_passes_jax(dtype: np.dtype[Any]) -> None:
    want = np.array([0.5, 1.0, 3.0, 4.0] if dtype != E8M0 else [0.5, 1.0, 4.0, 2.0**-10], dtype)
    got = step(want, 1)
    assert (got != want).all()
    each_fails(got, want, COMPILED)
    assert agrees(got, want, JAX_VS_REFERENCE)


@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32), *NARROW], ids=str)
def test_jax_fails_just_past_its_bound(dtype: np.dtype[Any]) -> None:
    bound = tolerance(JAX_VS_REFERENCE, dtype)
    k = int(bound.ulps)
    # values whose ULPs exceed the floor, in binades with room for k + 1 steps up
    want = np.array([96.0, -192.0], dtype)
    assert agrees(step(want, k), want, JAX_VS_REFERENCE)
    assert (ulp_distance(step(want, k + 1), want) == k + 1).all()
    each_fails(step(want, k + 1), want, JAX_VS_REFERENCE)


@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32), *NARROW], ids=str)
def test_the_jax_floor_is_ulps_at_one_never_the_arrays_largest(dtype: np.dtype[Any]) -> None:
    bound = tolerance(JAX_VS_REFERENCE, dtype)
    eps = float(ml_dtypes.finfo(dtype).eps)
    tiny = float(ml_dtypes.finfo(dtype).smallest_normal) * 2**4
    # a result that cancels to near zero: inside the floor passes, past it fails
    want = np.array([tiny, -tiny], dtype)
    inside = (want.astype(np.float64) + bound.floor_ulps * eps * 0.75).astype(dtype)
    outside = (want.astype(np.float64) + (bound.floor_ulps + 2) * eps).astype(dtype)
    if bound.floor_ulps:
        assert agrees(inside, want, JAX_VS_REFERENCE)
    each_fails(outside, want, JAX_VS_REFERENCE)
    # next to a large element, still the floor of 1.0's ULPs
    big = np.array([100.0, tiny], dtype)
    got = np.array([100.0, outside[0]], dtype)
    assert not agrees(got, big, JAX_VS_REFERENCE)


def test_the_narrowest_floats_have_no_floor_for_jax() -> None:
    assert JAX_NARROW.floor_ulps == 0
    for dtype in [*F8, F4, E8M0]:
        assert tolerance(JAX_VS_REFERENCE, dtype) == JAX_NARROW


def test_bounds_per_pair() -> None:
    for dtype in FLOATS:
        assert tolerance(COMPILED, dtype) == BIT_EXACT
        assert tolerance(("reference", "compiled"), dtype).bit_exact
        assert tolerance(None, dtype).bit_exact
        assert not tolerance(("reference", "jax"), dtype).bit_exact
        assert not tolerance(("auto", "reference"), dtype).bit_exact
    assert set(JAX) == {"float64", "float32", "float16", "bfloat16"}


def test_the_pair_is_read_from_where() -> None:
    assert pair_of("jax vs reference: output 'y'") == ("jax", "reference")
    assert pair_of("reference vs compiled: variable 'v'") == ("reference", "compiled")
    assert pair_of("auto vs reference (xla tier): output 'h'") == ("auto", "reference")
    assert pair_of("Conv: output '0'") is None
    assert pair_of("jaxx vs reference") is None
    assert pair_of("traced vs plain") is None
    got, want = np.array([1.0], np.float32), step(np.array([1.0], np.float32), 1)
    assert_same_value(got, want, "jax vs reference: output 'y'")
    with pytest.raises(AssertionError, match="bit-exact"):
        assert_same_value(got, want, "compiled vs reference: output 'y'")
    with pytest.raises(AssertionError, match="bit-exact"):  # no pair named: the strictest law
        assert_same_value(got, want, "Conv: output '0'")
    assert_same_value(got, want, "Conv: output '0'", backends=JAX_VS_REFERENCE)


@pytest.mark.parametrize("dtype", [d for d in FLOATS if d != E8M0], ids=str)
def test_zero_and_the_subnormals_share_the_smallest_spacing(dtype: np.dtype[Any]) -> None:
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    zero = np.array([0.0], dtype)
    assert ulp_distance(np.array([tiny], dtype), zero)[0] == 1
    assert ulp_distance(np.array([-tiny], dtype), np.array([tiny], dtype))[0] == 2
    assert ulp_distance(zero, np.array([2 * tiny], dtype))[0] == 2


def test_a_result_far_too_small_is_far_in_ulps_even_without_mantissa_bits() -> None:
    # measured at want's magnitude, every e8m0 value below want would be under one ULP from it
    want, got = np.array([1.0], E8M0), np.array([2.0**-10], E8M0)
    assert ulp_distance(got, want)[0] == 2**10 - 1
    assert ulp_distance(want, got)[0] == 2**10 - 1
    assert not agrees(got, want, JAX_VS_REFERENCE)


# -- NaN, infinities, signed zeros ----------------------------------------------------------------
@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32), *NARROW], ids=str)
def test_nan_matches_only_nan(dtype: np.dtype[Any], backends: tuple[str, str]) -> None:
    want = np.array([np.nan, 1.0, np.nan], dtype)
    assert agrees(want.copy(), want, backends)
    assert agrees(np.array([-np.nan, 1.0, np.nan], dtype), want, backends)  # sign, payload: any
    each_fails(np.array([1.0, np.nan, 0.0], dtype), want, backends)
    with pytest.raises(AssertionError, match="NaN at different positions"):
        assert_same_value(np.array([0.0, 1.0, np.nan], dtype), want, "x", backends=backends)


@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
@pytest.mark.parametrize("dtype", [np.dtype(np.float64), np.dtype(np.float32), *NARROW], ids=str)
def test_infinities_match_exactly(dtype: np.dtype[Any], backends: tuple[str, str]) -> None:
    info = ml_dtypes.finfo(dtype)
    if not np.isinf(np.array(np.inf, dtype).astype(np.float64)):
        pytest.skip(f"{dtype} has no infinity")
    want = np.array([np.inf, -np.inf, float(info.max)], dtype)
    assert agrees(want.copy(), want, backends)
    each_fails(np.array([-np.inf, np.inf, np.inf], dtype), want, backends)
    each_fails(
        np.array([float(info.max), -float(info.max), -float(info.max)], dtype), want, backends
    )


@pytest.mark.parametrize(
    "dtype", [np.dtype(np.float64), np.dtype(np.float32), *NARROW[:3]], ids=str
)
def test_the_sign_of_zero_is_bit_exact_but_no_ulp_distance(dtype: np.dtype[Any]) -> None:
    pos, neg = np.array([0.0, 1.0], dtype), np.array([-0.0, 1.0], dtype)
    with pytest.raises(AssertionError, match="bit-exact"):
        assert_same_value(neg, pos, "x", backends=COMPILED)
    with pytest.raises(AssertionError, match="bit-exact"):
        assert_same_value(pos, neg, "x", backends=COMPILED)
    assert agrees(neg, pos, JAX_VS_REFERENCE)
    assert ulp_distance(neg, pos)[0] == 0


# -- everything but floats: exactly ---------------------------------------------------------------
@pytest.mark.parametrize("backends", PAIRS.values(), ids=PAIRS.keys())
def test_integers_bools_and_strings_are_exact(backends: tuple[str, str]) -> None:
    for dtype in [np.int64, np.uint8, np.int32, ml_dtypes.int4, ml_dtypes.uint2]:
        want = np.array([1, 0, 1], dtype)
        assert not is_float(want.dtype)
        assert agrees(want.copy(), want, backends)
        each_fails(np.array([0, 1, 0], dtype), want, backends)
    assert not agrees(np.array([2**62 + 1]), np.array([2**62]), backends)  # no float64 rounding
    assert not agrees(np.array([True, False]), np.array([True, True]), backends)
    strings = np.array(["a", "b"], dtype=object)
    assert agrees(strings.copy(), strings, backends)
    assert not agrees(np.array(["a", "c"], dtype=object), strings, backends)


def test_complex_values_agree_per_component() -> None:
    want = np.array([1.0 + 1e-30j, -2.0 + 3.0j], np.complex64)
    imag = want.copy()
    imag.imag = step(want.imag.copy(), 1)
    with pytest.raises(AssertionError, match="imaginary part"):
        assert_same_value(imag, want, "x", backends=COMPILED)
    assert agrees(imag, want, JAX_VS_REFERENCE)
    # the tiny imaginary part is measured at its own magnitude's ULP, not the real part's
    tiny = want.copy()
    tiny.imag[0] = 1e-20
    assert agrees(tiny, want, JAX_VS_REFERENCE)  # within the floor, as for any near-zero result
    far = want.copy()
    far.real[1] = -2.5
    with pytest.raises(AssertionError, match="real part"):
        assert_same_value(far, want, "x", backends=JAX_VS_REFERENCE)


def test_types_dtypes_shapes_and_sequences_must_match() -> None:
    a = np.array([1.0, 2.0], np.float32)
    with pytest.raises(AssertionError, match="dtype"):
        assert_same_value(a.astype(np.float64), a, "x", backends=JAX_VS_REFERENCE)
    with pytest.raises(AssertionError, match="shape"):
        assert_same_value(a[None], a, "x", backends=JAX_VS_REFERENCE)
    with pytest.raises(AssertionError, match="want a ndarray"):
        assert_same_value(np.float32(1.0), np.array(1.0, np.float32), "x")
    with pytest.raises(AssertionError, match="sequence"):
        assert_same_value([a], [a, a], "x")
    assert_same_value([a, None], [a.copy(), None], "x")
    with pytest.raises(AssertionError, match=r"x\[1\]"):
        assert_same_value([a, a], [a, a + 1], "x")


def test_outputs_and_traces_follow_the_same_law() -> None:
    want = {"y": np.array([1.0, 2.0], np.float32)}
    off = {"y": step(want["y"], 1)}
    assert_same_outputs(off, want, "jax vs reference")
    with pytest.raises(AssertionError, match="output 'y'"):
        assert_same_outputs(off, want, "compiled vs reference")
    with pytest.raises(AssertionError, match="outputs"):
        assert_same_outputs({"z": want["y"]}, want, "compiled vs reference")
    trace = {"h": [TraceEntry((0,), want["y"], ("loop",))]}
    moved = {"h": [TraceEntry((0,), off["y"], ("loop",))]}
    assert_same_trace(moved, trace, "jax vs reference")
    with pytest.raises(AssertionError, match="trace of 'h'"):
        assert_same_trace(moved, trace, "compiled vs reference")


# -- the laws of the distance ---------------------------------------------------------------------
def _bits(dtype: np.dtype[Any]) -> int:
    return 4 if dtype == F4 else 8 * dtype.itemsize


def _from_bits(pattern: int, dtype: np.dtype[Any]) -> np.ndarray:
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    return np.array([pattern], unsigned).view(dtype)


@st.composite
def floats_by_bits(draw: st.DrawFn) -> tuple[np.dtype[Any], np.ndarray]:
    """A float dtype and one value of it from any bit pattern: NaNs, infinities, subnormals,
    signed zeros and every other value its bits can hold."""
    dtype = draw(st.sampled_from(FLOATS))
    return dtype, _from_bits(draw(st.integers(0, 2 ** _bits(dtype) - 1)), dtype)


@given(floats_by_bits(), st.sampled_from(list(PAIRS.values())))
def test_every_value_agrees_with_itself(value: Any, backends: tuple[str, str]) -> None:
    _, x = value
    assert_same_value(x.copy(), x, "x", backends=backends)


@given(floats_by_bits(), st.integers(0, 2**64 - 1))
def test_bit_exact_passes_exactly_when_the_bits_match_or_both_are_nan(
    value: Any, other: int
) -> None:
    dtype, x = value
    y = _from_bits(other % 2 ** _bits(dtype), dtype)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    same = bool(np.isnan(xf).all() and np.isnan(yf).all()) or x.tobytes() == y.tobytes()
    assert agrees(y, x, COMPILED) == same


@example(
    (np.dtype(ml_dtypes.float8_e4m3fn), np.array([0.03125], ml_dtypes.float8_e4m3fn)), 32, False
)
@given(floats_by_bits(), st.integers(0, 64), st.booleans())
def test_k_steps_within_a_binade_are_k_ulps(value: Any, k: int, up: bool) -> None:
    dtype, x = value
    xf = x.astype(np.float64)
    assume(np.isfinite(xf).all())
    moved = x
    for _ in range(k):  # one representable value at a time, each a new one
        before, moved = moved, step(moved, 1, up)
        assume(not np.array_equal(before, moved, equal_nan=True))
        mf = moved.astype(np.float64)
        assume(np.isfinite(mf).all())
        # every step within the binade: the same spacing all the way (a walk that
        # leaves it and comes back, as -x from x across zero, has coarser ends)
        assume((ulp(mf, dtype) == ulp(xf, dtype)).all())
    assert ulp_distance(moved, x)[0] == k
    assert ulp_distance(x, moved)[0] == k
    assert agrees(moved, x, COMPILED) == (k == 0)


@given(floats_by_bits(), st.integers(0, 2**64 - 1))
def test_the_distance_is_zero_exactly_for_equal_values_and_unchanged_by_negation(
    value: Any, other: int
) -> None:
    dtype, x = value
    y = _from_bits(other % 2 ** _bits(dtype), dtype)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    assume(np.isfinite(xf).all() and np.isfinite(yf).all())
    d = ulp_distance(y, x)[0]
    assert (d == 0) == bool((xf == yf).all())
    assert d >= 0
    if bool(np.isfinite(-xf).all()) and dtype != E8M0:  # e8m0 has no negative values
        assert ulp_distance(-y, -x)[0] == d
