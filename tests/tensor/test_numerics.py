"""The numeric rules every backend reads (tensor/numerics.py): which type an operation computes
in, which type a sum accumulates in, how a float64 result rounds back once, the law that makes
widening exact, and the laws the reference kernels follow by them: every float (bfloat16, the
float8s and float4 included, whatever NumPy's kind letter) is a float, and a reduction whose
float64 accumulation is exact gives the exact result rounded once to the input's type."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from ops_harness import C, run1
from tensorloop.ir.graph import Graph
from tensorloop.tensor import numerics
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import tensor_type_of

Array = np.ndarray[Any, Any]
NUMERIC = [d for d in DType if d.is_numeric]
FLOATS = [d for d in DType if d.is_float]
NARROW = [d for d in FLOATS if d.bits <= 16]
"""The floats narrower than float32, each of whose values the oracle below can list."""
SMALL = [d for d in NARROW if d.bits <= 8]
"""The float8s and float4: few enough values to check every one."""
F8E4M3FN = DType.float8e4m3fn


# -- the rules, type by type -------------------------------------------------------------------
@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_the_floats_narrower_than_float32_are_widened(dt: DType) -> None:
    widened = dt.is_float and dt.bits < 32
    assert numerics.is_widened(dt) is widened
    assert numerics.is_widened(dt.numpy) is widened
    assert numerics.is_widened(dt.value) is widened
    assert numerics.is_widened(dt.short) is widened
    assert numerics.compute_dtype(dt) == (np.dtype(np.float32) if widened else dt.numpy)
    assert (dt in numerics.WIDENED) is widened


def test_the_float_sets() -> None:
    assert {d for d in DType if d.is_float} == numerics.FLOATS
    assert {DType.float32, DType.float64} == numerics.NATIVE_FLOATS
    assert numerics.FLOATS - numerics.NATIVE_FLOATS == numerics.WIDENED
    assert numerics.FLOATS == numerics.WIDE_ACCUMULATING
    # NumPy's kind letter is no guide: ml_dtypes files float8e5m2 under "f", its other floats
    # under "V" (as it does its 4- and 2-bit integers).
    by_kind = {d for d in DType if d.numpy.kind == "f"}
    assert by_kind == {DType.float16, DType.float32, DType.float64, DType.float8e5m2}
    for dt in DType:
        for form in (dt, dt.numpy, dt.value, dt.short):
            assert numerics.is_float(form) is dt.is_float
            assert numerics.accumulates_wide(form) is dt.is_float
    for other in (np.complex64, object, np.dtype("U3"), np.dtype("S2")):
        assert not numerics.is_float(other)


ACCUMULATORS = {
    DType.bool: np.int64,
    DType.int8: np.int64,
    DType.int16: np.int64,
    DType.int32: np.int64,
    DType.int64: np.int64,
    DType.uint8: np.uint64,
    DType.uint16: np.uint64,
    DType.uint32: np.uint64,
    DType.uint64: np.uint64,
    **{d: np.float64 for d in FLOATS},
}


@pytest.mark.parametrize("dt", [DType.bool, *NUMERIC], ids=str)
def test_accumulator_dtype(dt: DType) -> None:
    # Every float in float64; the 4- and 2-bit integers accumulate in themselves.
    want = np.dtype(ACCUMULATORS.get(dt, dt.numpy))
    assert numerics.accumulator_dtype(dt) == want
    assert numerics.accumulator_dtype(dt.numpy) == want


@pytest.mark.parametrize("dt", [d for d in [DType.bool, *NUMERIC] if not d.is_float], ids=str)
def test_an_integer_accumulator_is_numpys_own_choice(dt: DType) -> None:
    """For bool and the integers the rule names what NumPy picks anyway, so a kernel passing it
    explicitly computes what NumPy's default computed."""
    x = np.arange(-7, 9).reshape(4, 4) % (3 if dt.bits <= 2 else 7)
    if not dt.is_signed:
        x = np.abs(x)
    a = (x > 2) if dt is DType.bool else x.astype(dt.numpy)
    acc = numerics.accumulator_dtype(dt)
    for fn in (np.sum, np.prod, np.cumsum, np.cumprod):
        with np.errstate(all="ignore"):
            default, explicit = fn(a, axis=1), fn(a, axis=1, dtype=acc)
        assert default.dtype == explicit.dtype == acc, fn.__name__
        assert default.tobytes() == explicit.tobytes(), fn.__name__


# -- widen, lift and round_to over an array namespace ------------------------------------------
def test_widen_lifts_only_the_narrow_floats() -> None:
    for dt in [DType.bool, *NUMERIC]:
        a = np.zeros((2, 3), dt.numpy)
        w = numerics.widen(a)
        assert w.dtype == numerics.compute_dtype(dt)
        if not numerics.is_widened(dt):
            assert w is a  # no copy
    assert numerics.widen(1.5).dtype == np.float64  # anything np.asarray takes
    assert numerics.widen([np.float16(1.5)]).dtype == np.float32
    assert numerics.widen(np.ones(2, ml_dtypes.float8_e4m3fn)).dtype == np.float32


def test_lift_takes_the_narrow_floats_to_float64() -> None:
    for dt in [DType.bool, *NUMERIC]:
        a = np.ones((2, 3), dt.numpy)
        w = numerics.lift(a)
        assert w.dtype == (np.float64 if numerics.is_widened(dt) else dt.numpy), dt
        if not numerics.is_widened(dt):
            assert w is a
    # bfloat16's least value squares to 2**-266: zero in float32, exact in float64.
    least = np.array(2.0**-133, ml_dtypes.bfloat16)
    assert numerics.lift(least) ** 2 == 2.0**-266


def test_round_to_rounds_once_where_astype_rounds_twice() -> None:
    # 1.125 is the midpoint of float8e5m2's 1 and 1.25; float32 cannot hold 2**-30 beside it.
    x = np.array([1.125 + 2**-30, -(1.125 + 2**-30), 1.125, 1.375])
    e5m2 = ml_dtypes.float8_e5m2
    assert x.astype(e5m2).astype(np.float64).tolist() == [1, -1, 1, 1.5]  # twice: ties to even
    assert numerics.round_to(x, DType.float8e5m2).astype(np.float64).tolist() == [
        1.25,
        -1.25,
        1,
        1.5,
    ]
    bf16 = np.array([1 + 2**-8 + 2**-40])  # just above bfloat16's midpoint of 1 and 1 + 2**-7
    assert numerics.round_to(bf16, DType.bfloat16).astype(np.float64) == 1 + 2**-7
    # Types other than the narrow floats convert as astype does.
    assert numerics.round_to(np.array([2.5, 300.0]), np.int16).tolist() == [2, 300]
    assert numerics.round_to(np.array([1 + 2**-40]), DType.float32) == np.float32(1)


def _near_midpoints(dt: DType) -> st.SearchStrategy[float]:
    """float64 values at, just off or far off a midpoint of two neighbouring ``dt`` values."""
    values, _ = _finite(dt)

    @st.composite
    def draw(draw: Any) -> float:
        i = draw(st.integers(0, len(values) - 2))
        mid = (values[i] + values[i + 1]) / 2
        scale = abs(mid) or values[i + 1] - values[i]
        offset = draw(st.sampled_from([0, -1, 1])) * scale / 2 ** draw(st.integers(20, 60))
        return float(mid + offset)

    return draw()


@pytest.mark.parametrize("dt", NARROW, ids=str)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_to_rounds_float64_correctly(dt: DType, data: st.DataObject) -> None:
    x = data.draw(_near_midpoints(dt))
    got = numerics.round_to(np.array(x), dt)
    assert _same(_real(got), correctly_rounded(dt, _exactly(Fraction(x)))), x


def test_round_to_over_jax_numpy_is_numpys() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = pytest.importorskip("jax.numpy")
    x = np.array([1 + 2**-8 + 2**-40, 1 + 2**-8, -(1 + 2**-8 + 2**-40), 1e-50, 3e38, 1e300])
    for dt in (DType.float16, DType.bfloat16):
        got = np.asarray(jax.jit(lambda v, d=dt: numerics.round_to(v, d, jnp))(x))
        want = numerics.round_to(x, dt)
        assert got.dtype == want.dtype == dt.numpy
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_widen_over_jax_numpy() -> None:
    jnp = pytest.importorskip("jax.numpy")
    for dt in (DType.float16, DType.bfloat16, DType.float32, DType.int8):
        x = np.array([0.5, -2.0, 3.0]).astype(dt.numpy)
        w = numerics.widen(x, jnp)
        assert not isinstance(w, np.ndarray)
        assert w.dtype == numerics.compute_dtype(dt)
        np.testing.assert_array_equal(np.asarray(w), numerics.widen(x), strict=True)


# -- the oracle: exact values rounded once -----------------------------------------------------
Compare = Callable[[Fraction], int]
"""``compare(v)``: the sign of ``q - v`` for the exact quantity ``q`` being rounded."""

_HAS_INF = frozenset({DType.float16, DType.bfloat16, DType.float8e5m2})


def _narrow(dt: DType, pattern: int) -> Array:
    """The ``dt`` value of bit pattern ``pattern`` (float4 takes a byte's low four bits)."""
    return np.array(pattern, np.uint16 if dt.bits == 16 else np.uint8).view(dt.numpy)


@cache
def _finite(dt: DType) -> tuple[list[Fraction], list[int]]:
    """Every finite value of narrow ``dt``, increasing (one zero), and the bits of each."""
    bits = np.arange(1 << dt.bits, dtype=np.uint32).astype(np.uint16 if dt.bits == 16 else np.uint8)
    with np.errstate(invalid="ignore"):  # the NaNs, left out below
        values = bits.view(dt.numpy).astype(np.float64)
    keep = np.isfinite(values) & ~((values == 0) & np.signbit(values))
    order = np.argsort(values[keep], kind="stable")
    return (
        [Fraction(float(v)) for v in values[keep][order]],
        [int(b) for b in bits[keep][order]],
    )


def correctly_rounded(dt: DType, compare: Compare, guess: float = 0.0) -> float:
    """The exact quantity ``compare`` describes, rounded to the nearest ``dt`` value (ties to
    the even one, max + half an ulp included, which overflows where max is odd; float8e8m0, all
    powers of two, ties up), past the range as ml_dtypes converts: inf where the type has one,
    else NaN (float4 saturates). float32 and float64 need ``guess``, a float64 within an ulp of
    the quantity."""
    if dt in numerics.NATIVE_FLOATS:
        return _native(dt, compare, guess)
    values, bits = _finite(dt)
    e8m0 = dt is DType.float8e8m0
    if e8m0 and compare(Fraction(0)) <= 0:
        return math.nan  # no zero, no negatives
    top = values[-1]
    past = top * Fraction(3, 2) if e8m0 else top + (top - values[-2]) / 2
    for sign in (1, -1):
        side = sign * compare(sign * past)
        if side > 0 or (side == 0 and (e8m0 or bits[-1] % 2)):  # a tie: to even, or up
            if dt is DType.float4e2m1:
                return float(sign * top)
            return sign * math.inf if dt in _HAS_INF else math.nan
    lo_i, hi_i = 0, len(values)  # the first value above q
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        if compare(values[mid]) < 0:
            hi_i = mid
        else:
            lo_i = mid + 1
    if lo_i == 0:
        return float(values[0])
    if lo_i == len(values) or compare(values[lo_i - 1]) == 0:
        return float(values[lo_i - 1])
    lo, hi = values[lo_i - 1], values[lo_i]
    side = compare((lo + hi) / 2)
    if side == 0:
        return float(hi if e8m0 or bits[lo_i - 1] % 2 else lo)
    return float(lo if side < 0 else hi)


def _native(dt: DType, compare: Compare, guess: float) -> float:
    """``correctly_rounded`` for float32 and float64, between the neighbours of ``guess``."""
    kind, uint = (np.float32, np.uint32) if dt is DType.float32 else (np.float64, np.uint64)
    top = Fraction(float(np.finfo(kind).max))
    past = top + (top - Fraction(float(np.nextafter(np.finfo(kind).max, kind(0))))) / 2
    for sign in (1, -1):
        if sign * compare(sign * past) >= 0:
            return sign * math.inf
    with np.errstate(over="ignore"):
        grid = [kind(guess)]
    if np.isinf(grid[0]):
        grid = [np.copysign(np.finfo(kind).max, grid[0]).astype(kind)]
    for _ in range(2):
        grid = [np.nextafter(grid[0], kind(-np.inf)), *grid, np.nextafter(grid[-1], kind(np.inf))]
    exact = [Fraction(float(v)) for v in grid]
    assert compare(exact[0]) >= 0 >= compare(exact[-1]), "guess is too far off"
    for i in range(len(grid) - 1):
        a, b, fa, fb = grid[i], grid[i + 1], exact[i], exact[i + 1]
        if compare(fa) >= 0 >= compare(fb):
            if compare(fa) == 0 or compare(fb) == 0:
                return float(a if compare(fa) == 0 else b)
            side = compare((fa + fb) / 2)
            if side == 0:
                return float(a if int(np.asarray(a).view(uint)) % 2 == 0 else b)
            return float(a if side < 0 else b)
    raise AssertionError("unreachable")


def _exactly(q: Fraction) -> Compare:
    return lambda v: (q > v) - (q < v)


def _root_of(a: Fraction) -> Compare:
    """sqrt(a) for a >= 0, compared through squares."""
    return lambda v: 1 if v < 0 else (a > v * v) - (a < v * v)


def _real(x: Array) -> float:
    """A narrow float as a Python float (NaN as NaN, quietly)."""
    with np.errstate(invalid="ignore"):
        return float(np.asarray(x).astype(np.float64))


def _same(got: float, want: float) -> bool:
    return got == want or (math.isnan(got) and math.isnan(want))


def test_the_oracle_rounds_ties_to_even_and_overflows() -> None:
    f16 = DType.float16
    assert correctly_rounded(f16, _exactly(Fraction(2049))) == 2048  # tie: 2048 is even
    assert correctly_rounded(f16, _exactly(Fraction(2051))) == 2052  # tie: 2052 is even
    assert correctly_rounded(f16, _exactly(Fraction(65519))) == 65504
    assert correctly_rounded(f16, _exactly(Fraction(65520))) == math.inf  # max + half an ulp
    assert correctly_rounded(f16, _exactly(Fraction(-65520))) == -math.inf
    assert correctly_rounded(f16, _exactly(Fraction(1, 3))) == float(np.float16(1 / 3))
    assert correctly_rounded(f16, _root_of(Fraction(2))) == float(np.float16(math.sqrt(2)))
    assert math.isnan(correctly_rounded(F8E4M3FN, _exactly(Fraction(465))))  # no inf: NaN
    assert correctly_rounded(F8E4M3FN, _exactly(Fraction(464))) == 448  # the tie: 448 is even
    assert correctly_rounded(DType.float4e2m1, _exactly(Fraction(-100))) == -6  # saturates
    e8m0 = DType.float8e8m0
    assert correctly_rounded(e8m0, _exactly(Fraction(3))) == 4  # ties up
    assert correctly_rounded(e8m0, _exactly(Fraction(1, 10**50))) == 2.0**-127
    assert math.isnan(correctly_rounded(e8m0, _exactly(Fraction(0))))
    f32, f64 = DType.float32, DType.float64
    third = Fraction(1, 3)
    assert correctly_rounded(f32, _exactly(third), 1 / 3) == float(np.float32(1 / 3))
    assert correctly_rounded(f64, _exactly(third), 1 / 3) == 1 / 3
    tie = Fraction(1) + Fraction(1, 2**24)  # float32's midpoint of 1 and 1 + 2**-23
    assert correctly_rounded(f32, _exactly(tie), 1.0) == 1.0


# -- the law: one float32 operation rounded back is the correctly rounded narrow result --------
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


@pytest.mark.parametrize("dt", NARROW, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_widened_arithmetic_rounds_correctly(dt: DType, op: str, data: st.DataObject) -> None:
    patterns = st.integers(0, (1 << dt.bits) - 1)
    a, b = _narrow(dt, data.draw(patterns)), _narrow(dt, data.draw(patterns))
    if not (math.isfinite(_real(a)) and math.isfinite(_real(b))):
        return
    fa, fb = Fraction(_real(a)), Fraction(_real(b))
    if op == "/" and fb == 0:
        return
    exact = BINARY[op](fa, fb)
    if dt is DType.float8e8m0 and 0 < exact < Fraction(2) ** -126:
        return  # float32 flushes it, or ml_dtypes rounds its subnormal up (see numerics)
    with np.errstate(all="ignore"):
        got = BINARY[op](numerics.widen(a), numerics.widen(b)).astype(dt.numpy)
    want = correctly_rounded(dt, _exactly(exact))
    assert _same(_real(got), want), (float(fa), op, float(fb))


@pytest.mark.parametrize("dt", NARROW, ids=str)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_widened_square_root_rounds_correctly(dt: DType, data: st.DataObject) -> None:
    a = _narrow(dt, data.draw(st.integers(0, (1 << dt.bits) - 1)))
    if not math.isfinite(_real(a)) or _real(a) < 0:
        return
    got = np.sqrt(numerics.widen(a)).astype(dt.numpy)
    assert _real(got) == correctly_rounded(dt, _root_of(Fraction(_real(a))))


# -- the kernels: floats by DType.is_float, never by NumPy's kind letter -----------------------
def _reference(op: str, inputs: list[Array | C], attrs: dict[str, Any] | None = None) -> Array:
    """One ``op`` node run by ``Model.run`` on the reference backend, which the suite's law
    also runs on the compiled backend (and, sampled, jax), bit for bit."""
    g = Graph()
    values: list[Any] = []
    args: list[Array] = []
    for x in inputs:
        if isinstance(x, C):
            values.append(g.add_node("Constant", [], {"value": x.value}).output)
        else:
            values.append(g.add_input(f"x{len(args)}", tensor_type_of(x)))
            args.append(x)
    g.set_outputs(g.add_node(op, values, attrs or {}).outputs)
    (out,) = tl.Model(g).run(args, backend="reference").values()
    return np.asarray(out)


def test_reduce_sum_of_float8_accumulates_in_float64() -> None:
    """Forty float8e4m3fn 0.1875s sum to 7.5 exactly. Accumulated in float8 (the old rule: its
    NumPy kind is "V", not "f") the total stalled at 4, where 4 + 0.1875 rounds back to 4."""
    x = np.full(40, 0.1875, ml_dtypes.float8_e4m3fn)
    assert _reference("ReduceSum", [x], {"keepdims": 0}) == 7.5
    assert _reference("ReduceMean", [x], {"keepdims": 0}) == 0.1875  # was 0: integer division
    assert _reference("CumSum", [x, C(0)])[-1] == 7.5
    halves = np.full(12, 0.5, ml_dtypes.float4_e2m1fn)  # in float4, 4 + 0.5 rounds back to 4
    assert _reference("ReduceSum", [halves], {"keepdims": 0}) == 6


def test_pow_and_div_of_float8_are_float_operations() -> None:
    """float8e4m3fn took the integer paths: 1.5 ** 2 was 1 and 2 ** 0.5 was 1; 1 / 3 was 0 and
    x / 0 an error."""
    f8 = ml_dtypes.float8_e4m3fn
    x, y = np.array([1.5, 2, -3], f8), np.array([2, 0.5, 2], f8)
    got = _reference("Pow", [x, y]).astype(np.float64)
    assert got.tolist() == [2.25, 1.375, 9]  # 1.375: float8e4m3fn's nearest to sqrt(2)
    quotient = _reference("Div", [np.array([1, -1, 0], f8), np.array([3, 0, 0], f8)])
    assert quotient.dtype == f8
    assert quotient[0] == 0.34375 and np.isnan(quotient[1:].astype(np.float64)).all()  # no inf
    e8m0 = ml_dtypes.float8_e8m0fnu
    assert _reference("Div", [np.array([1], e8m0), np.array([4], e8m0)]) == 0.25


_UNARY: dict[str, Callable[[Array], Array]] = {
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Tanh": np.tanh,
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "Abs": np.abs,
}


@pytest.mark.parametrize("dt", SMALL, ids=str)
@pytest.mark.parametrize("op", list(_UNARY))
def test_unary_kernels_of_every_float8_value_round_once(dt: DType, op: str) -> None:
    """Every value of every float8 and float4: the float64 result rounded once (computed in
    float32 and rounded once, as widened; ml_dtypes' own loops round each step of Sigmoid)."""
    x = _narrow(dt, np.arange(1 << dt.bits))  # type: ignore[arg-type]
    with np.errstate(all="ignore"):
        want = numerics.round_to(_UNARY[op](x.astype(np.float64)), dt).astype(np.float64)
    got = run1(op, [x]).astype(np.float64)
    assert ((got == want) | (np.isnan(got) & np.isnan(want))).all()


# -- the reductions: the exact result, rounded once --------------------------------------------
def _precision(dt: DType) -> int:
    return int(ml_dtypes.finfo(dt.numpy).nmant) + 1  # type: ignore[no-untyped-call]


@cache
def _pool(dt: DType) -> tuple[Array, Array]:
    """The finite values of narrow ``dt`` as float64 (one zero), with the binade of each."""
    values = np.array([float(v) for v in _finite(dt)[0]])
    binade = np.floor(np.log2(np.where(values == 0, 1, np.abs(values))))
    return values, binade


@st.composite
def exact_terms(
    draw: Any, dt: DType, most: int, span: int, positive: bool = False, highest: int = 60
) -> Array:
    """1 to ``most`` finite ``dt`` values (zeros among them), the magnitudes of the others
    within ``span`` binades, below 2**``highest``. float32 and float64 values have 12
    significant bits (their squares are exact in their own type). Each sum of them is exact in
    float64 when ``span`` + precision + log2(most) <= 53 (the caller's choice); past the type's
    range the reference rounds as ml_dtypes converts, and so does the oracle."""
    n = draw(st.integers(1, most))
    if dt in numerics.NATIVE_FLOATS:
        lo = draw(st.integers(-60, highest - span))
        ks = draw(st.lists(st.integers(-(2**12) + 1, 2**12 - 1), min_size=n, max_size=n))
        es = draw(st.lists(st.integers(lo - 11, lo + span - 12), min_size=n, max_size=n))
        values = np.array([math.ldexp(k, e) for k, e in zip(ks, es, strict=True)])
    else:
        pool, binade = _pool(dt)
        low, high = int(binade.min()), int(binade.max())
        lo = draw(st.integers(low, max(low, min(high + 1, highest) - span)))
        chosen = pool[(pool == 0) | ((binade >= lo) & (binade < lo + span))]
        values = np.array(draw(st.lists(st.sampled_from(chosen.tolist()), min_size=n, max_size=n)))
    if positive:
        values = np.abs(values)
    x = values.astype(dt.numpy)
    assert (x.astype(np.float64) == values).all()
    return x


def _sum_span(dt: DType) -> int:
    return 53 - min(_precision(dt), 12) - 6  # 32 terms: 5 bits, and one to spare


def _square_span(dt: DType) -> int:
    return (53 - 6) // 2 - min(_precision(dt), 12)


def _fractions(x: Array) -> list[Fraction]:
    return [Fraction(float(v)) for v in x.astype(np.float64)]


def _check_rounded_once(dt: DType, got: Array, compare: Compare, guess: float) -> None:
    want = correctly_rounded(dt, compare, guess)
    assert _same(_real(got), want), (_real(got), want)


# op: (the largest term count, the span, positive terms, the exact result, a float64 near it)
_Exact = Callable[[list[Fraction]], tuple[Compare, float]]


def _total(q: Fraction) -> tuple[Compare, float]:
    return _exactly(q), float(q)


def _squares(v: list[Fraction]) -> Fraction:
    return sum((a * a for a in v), Fraction(0))


def _root(v: list[Fraction]) -> float:
    return math.sqrt(_squares(v))


REDUCTIONS: dict[str, tuple[int, Callable[[DType], int], bool, _Exact]] = {
    "ReduceSum": (32, _sum_span, False, lambda v: _total(sum(v, Fraction(0)))),
    "ReduceL1": (32, _sum_span, False, lambda v: _total(sum(map(abs, v), Fraction(0)))),
    "ReduceMean": (32, _sum_span, False, lambda v: _total(sum(v, Fraction(0)) / len(v))),
    "ReduceMax": (32, _sum_span, False, lambda v: _total(max(v))),
    "ReduceMin": (32, _sum_span, False, lambda v: _total(min(v))),
    "ReduceSumSquare": (32, _square_span, False, lambda v: _total(_squares(v))),
    "ReduceL2": (32, _square_span, False, lambda v: (_root_of(_squares(v)), _root(v))),
    "ReduceLogSum": (
        32,
        _sum_span,
        True,
        lambda v: _total(Fraction(float(np.log(float(sum(v, Fraction(0))))))),
    ),
}


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(REDUCTIONS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reductions_round_the_exact_result_once(dt: DType, op: str, data: st.DataObject) -> None:
    """For values whose float64 accumulation is exact, a reduction is the exact result rounded
    once to the input's type (ReduceLogSum: the log, in float64, of the exact sum)."""
    most, span, positive, exact = REDUCTIONS[op]
    x = data.draw(exact_terms(dt, most, span(dt), positive))
    values = _fractions(x)
    if op == "ReduceLogSum" and sum(values) <= 0:
        return
    got = run1(op, [x], {"keepdims": 0})
    assert got.dtype == dt.numpy and got.shape == ()
    compare, guess = exact(values)
    _check_rounded_once(dt, got, compare, guess)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reduce_prod_rounds_the_exact_product_once(dt: DType, data: st.DataObject) -> None:
    most = min(8, 48 // min(_precision(dt), 12))  # every partial product exact in float64
    x = data.draw(exact_terms(dt, most, 8))
    product = math.prod(_fractions(x), start=Fraction(1))
    _check_rounded_once(dt, run1("ReduceProd", [x], {"keepdims": 0}), *_total(product))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("reverse", [0, 1])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_cumsum_rounds_each_exact_total_once(dt: DType, reverse: int, data: st.DataObject) -> None:
    x = data.draw(exact_terms(dt, 32, _sum_span(dt)))
    got = run1("CumSum", [x, C(0)], {"reverse": reverse})
    values = _fractions(x)
    if reverse:
        values = values[::-1]
    totals = [sum(values[: i + 1], Fraction(0)) for i in range(len(values))]
    if reverse:
        totals = totals[::-1]
    for y, total in zip(got, totals, strict=True):
        _check_rounded_once(dt, y, *_total(total))


@pytest.mark.parametrize("dt", FLOATS, ids=str)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_reduce_log_sum_exp_is_its_float64_value_rounded_once(
    dt: DType, data: st.DataObject
) -> None:
    """log(sum(exp(x))) has no exact value to compare with: the reference's is the float64 one
    rounded once (the narrow floats computed in float64; float32's exp rounds in float32)."""
    x = data.draw(exact_terms(dt, 16, 4, highest=9))
    values = x.astype(np.float64)
    top = float(values.max())
    if not math.isfinite(top) or top > 600:
        return
    log_sum = math.log(math.fsum(math.exp(v - top) for v in values))
    value = top + log_sum
    slack = (abs(top) + abs(log_sum)) * (2**-20 if dt is DType.float32 else 2**-44)
    low = correctly_rounded(dt, _exactly(Fraction(value - slack)), value - slack)
    high = correctly_rounded(dt, _exactly(Fraction(value + slack)), value + slack)
    got = _real(run1("ReduceLogSumExp", [x], {"keepdims": 0}))
    assert low <= got <= high or (math.isnan(got) and math.isnan(low) and math.isnan(high))


@pytest.mark.parametrize("dt", NARROW, ids=str)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_sum_just_off_a_midpoint_rounds_away_from_it(dt: DType, data: st.DataObject) -> None:
    """lo + half an ulp + tiny: the exact sum is just past the midpoint of lo and the next
    value, which float32 cannot tell from the midpoint itself (rounding through it, as ml_dtypes
    converts float64, would tie to even)."""
    values, _ = _finite(dt)
    positive = [v for v in values if v > 0]
    i = data.draw(st.integers(0, len(positive) - 2))
    lo, hi = positive[i], positive[i + 1]
    tiny = lo / 2 ** data.draw(st.integers(25, 40)) * data.draw(st.sampled_from([1, -1]))
    terms = data.draw(st.permutations([lo, (hi - lo) / 2, tiny]))
    with np.errstate(invalid="ignore"):
        x = np.array([float(t) for t in terms]).astype(dt.numpy)
        held = x.astype(np.float64)
    if not np.isfinite(held).all() or _fractions(x) != terms:
        return  # half an ulp or tiny is no dt value (below its least, say)
    want = correctly_rounded(dt, _exactly(sum(terms, Fraction(0))))
    assert _real(run1("ReduceSum", [x], {"keepdims": 0})) == want
    assert _real(run1("CumSum", [x, C(0)])[-1]) == want
