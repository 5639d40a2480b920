"""Reference kernels of ONNX's random ops (``ops/random_std.py``): libstdc++'s engine and
distributions as onnxruntime's Linux build runs them, in NumPy, bit for bit.

The engine, ``minstd_rand0`` (Park and Miller: x <- 16807 x mod 2**31 - 1), jumps ahead in one
step: the k-th word after x is x * 16807**k mod 2**31 - 1, so a whole tensor's words are one
vector product with the powers of 16807. The distributions are libstdc++'s:
``generate_canonical`` (one word a float32, two a float64), ``uniform_real_distribution``,
``normal_distribution`` (Marsaglia's polar method, its rejections decided for a batch of
candidate pairs at once) and Multinomial's inverse CDF (onnxruntime's own, over a
``uniform_real_distribution<double>``). The polar method's logarithm is the C library's
``logf``/``log``, called per accepted pair as onnxruntime's compiled code calls it: glibc's
``logf`` is not correctly rounded (even the float64 log rounded to float differs from it in about
1 value in 100), and glibc picks an FMA build of it on CPUs with FMA, which onnxruntime then
runs too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import zlib
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ...ops.random_std import DRAWN_TYPES, drawn_dims, sampled_dims
from ...tensor.dtypes import DType, from_numpy
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

MODULUS = 2**31 - 1
MULTIPLIER = 16807
_RANGE = MODULUS - 1  # the engine's max - min + 1: its words are 1 .. 2**31 - 2
_RANGE_F32 = np.float32(_RANGE)  # 2**31: the range rounded to float, as libstdc++ rounds it
_RANGE2_F64 = float(_RANGE * _RANGE)  # the product exact in long double, then rounded
_BELOW_ONE = {
    np.dtype(np.float32): np.nextafter(np.float32(1), np.float32(0)),
    np.dtype(np.float64): np.nextafter(1.0, 0.0),
}


def engine_seed(seed: float) -> int:
    """The 32-bit seed onnxruntime gives its engine for the float attribute ``seed``:
    ``gsl::narrow_cast<uint32_t>(seed)`` as GCC compiles it on x86-64 (truncation toward zero to
    int64, where NaN and values beyond int64 give INT64_MIN; then the low 32 bits)."""
    with np.errstate(over="ignore"):
        value = float(np.float32(seed))
    if not math.isfinite(value) or not -(2.0**63) <= value < 2.0**63:
        return 0
    return int(value) & 0xFFFFFFFF


_CHUNK = 1 << 16
"""Values drawn at once: the words and temporaries stay a few MiB whatever the output."""
MAX_WORDS = 4 * _CHUNK
"""The most words one ``peek`` gives (a chunk of float64 normal pairs: four words a pair)."""


@cache
def _powers() -> Array:
    """16807**k mod 2**31 - 1 for k = 1 .. MAX_WORDS (int64; products stay below 2**62), made
    by doubling: the second half is the first times 16807**half."""
    powers = np.array([MULTIPLIER], np.int64)
    while powers.size < MAX_WORDS:
        powers = np.concatenate([powers, powers * powers[-1] % MODULUS])
    powers = powers[:MAX_WORDS]
    powers.setflags(write=False)
    return powers


class MinStd:
    """``std::minstd_rand0`` (libstdc++'s ``default_random_engine``): its state is its last
    word. Seeding with s starts it at s mod 2**31 - 1, or 1 where that is 0."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed % MODULUS or 1

    def peek(self, count: int) -> Array:
        """The next ``count`` (at most MAX_WORDS) words, int64, leaving the engine where it is."""
        return self.state * _powers()[:count] % MODULUS

    def take(self, count: int) -> Array:
        """The next ``count`` words; the engine moves past them."""
        words = self.peek(count)
        if count:
            self.state = int(words[-1])
        return words


def canonical(words: Array, dt: np.dtype[Any]) -> Array:
    """``generate_canonical<T, digits of T>`` of ``words``: a value in [0, 1) per word (float32)
    or per two words (float64: the first the low part, the second times 2**31 - 2, the sum over
    (2**31 - 2)**2, each step rounded to double as libstdc++ computes it)."""
    low = words - 1
    if dt == np.float32:
        values = low.astype(np.float32) / _RANGE_F32
    else:
        pairs = low.reshape(-1, 2).astype(np.float64)
        values = (pairs[:, 0] + pairs[:, 1] * float(_RANGE)) / _RANGE2_F64
    below: Array = np.minimum(values, _BELOW_ONE[np.dtype(dt)])  # 1 becomes the float below
    return below


def _words_each(dt: np.dtype[Any]) -> int:
    return 1 if dt == np.float32 else 2


def uniform(engine: MinStd, count: int, dt: np.dtype[Any], low: float, high: float) -> Array:
    """``uniform_real_distribution<T>(low, high)``: canonical * (high - low) + low in T, the
    bounds the float attributes converted to T."""
    lo, hi = dt.type(np.float32(low)), dt.type(np.float32(high))  # ONNX's float attributes
    span = hi - lo
    out = np.empty(count, dt)
    for start in range(0, count, _CHUNK):
        n = min(_CHUNK, count - start)
        out[start : start + n] = canonical(engine.take(n * _words_each(dt)), dt) * span + lo
    return out


@cache
def _c_logf() -> Callable[[float], float] | None:
    """The C library's ``logf`` (what onnxruntime's kernel calls), or None where ctypes finds no
    C math library."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name).logf
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


def c_log(values: Array) -> Array:
    """The natural log of each value as the C library computes it: ``log`` for float64 (CPython's
    ``math.log`` is the C library's), ``logf`` for float32 (through ctypes; where there is no
    C math library, the float64 log rounded to float32, which can differ in the last bit)."""
    if values.dtype == np.float64:
        return np.fromiter(map(math.log, values.tolist()), np.float64, values.size)
    logf = _c_logf()
    if logf is None:
        return np.log(values.astype(np.float64)).astype(np.float32)
    return np.fromiter(map(logf, values.tolist()), np.float32, values.size)


def normal(engine: MinStd, count: int, dt: np.dtype[Any], mean: float, scale: float) -> Array:
    """``normal_distribution<T>(mean, scale)``, a fresh one (no spare value) drawing ``count``
    values: accepted polar pairs give y m then x m. Candidate pairs are drawn a batch at a time
    from a peek at the engine, which then moves past the last pair used."""
    one, two = dt.type(1), dt.type(2)
    pairs = -(-count // 2)
    per_pair = 2 * _words_each(dt)
    parts: list[Array] = []
    found = 0
    while found < pairs:
        wanted = pairs - found
        tried = min(_CHUNK, wanted * 4 // 3 + 16)  # 78.5 % of the candidates are accepted
        words = engine.peek(tried * per_pair)
        u = canonical(words, dt).reshape(tried, 2)
        x, y = two * u[:, 0] - one, two * u[:, 1] - one
        r2 = x * x + y * y
        accepted = np.flatnonzero((r2 <= one) & (r2 != 0))[:wanted]
        used = int(accepted[-1]) + 1 if accepted.size == wanted else tried
        engine.state = int(words[used * per_pair - 1])
        x, y, r2 = x[accepted], y[accepted], r2[accepted]
        m = np.sqrt(-two * c_log(r2) / r2)
        parts.append(np.stack([y * m, x * m], axis=1).reshape(-1))
        found += accepted.size
    values = np.concatenate(parts)[:count] if parts else np.zeros(0, dt)
    scaled: Array = values * dt.type(np.float32(scale)) + dt.type(np.float32(mean))
    return scaled


def _engine(ctx: KernelContext) -> MinStd:
    """This run's engine of the node: seeded with ``seed``, or, without one, with the CRC-32 of
    the node's name (a reproducible stream where onnxruntime seeds from the clock)."""
    seed = ctx.attr("seed")
    start = engine_seed(seed) if seed is not None else zlib.crc32(ctx.node.name.encode("utf-8"))
    return ctx.state.generator(ctx.node, lambda: MinStd(start))  # type: ignore[no-any-return]


def _drawn_type(ctx: KernelContext, given: Any = None) -> DType:
    """The element type the node makes: ``dtype``, else the input's (the Like forms)."""
    dt = ctx.attr("dtype")
    if dt is None:
        dt = from_numpy(np.asarray(given))
    return dt  # type: ignore[no-any-return]


def _draw(ctx: KernelContext, dims: tuple[int, ...], dt: DType) -> Array:
    """RandomUniform's or RandomNormal's values (by the node's op) of ``dims`` and type ``dt``:
    float16 and bfloat16 draw float32 values, rounded once."""
    draw_dt = np.dtype(np.float64 if dt == DType.float64 else np.float32)
    count = math.prod(dims)
    engine = _engine(ctx)
    if ctx.node.op.startswith("RandomUniform"):
        values = uniform(engine, count, draw_dt, ctx.attr("low"), ctx.attr("high"))
    else:
        values = normal(engine, count, draw_dt, ctx.attr("mean"), ctx.attr("scale"))
    return values.astype(dt.numpy).reshape(dims)


@kernel("RandomUniform", "RandomNormal")
def _random(ctx: KernelContext) -> Array:
    try:
        dims = drawn_dims(ctx.attrs)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    return _draw(ctx, dims, ctx.attr("dtype"))


@kernel("RandomUniformLike", "RandomNormalLike")
def _random_like(ctx: KernelContext, x: Any) -> Array:
    shape = tuple(np.shape(x))
    dt = _drawn_type(ctx, x)
    if dt not in DRAWN_TYPES:
        raise fail(ctx, f"the values' type must be float16, bfloat16, float32 or float64, not {dt}")
    return _draw(ctx, shape, dt)


@kernel("Bernoulli")
def _bernoulli(ctx: KernelContext, p: Array) -> Array:
    p = np.asarray(p)
    draw_dt = np.dtype(np.float64 if p.dtype == np.float64 else np.float32)
    u = uniform(_engine(ctx), p.size, draw_dt, 0.0, 1.0).astype(p.dtype).reshape(p.shape)
    return (u < p).astype(_drawn_type(ctx, p).numpy)


@kernel("Multinomial")
def _multinomial(ctx: KernelContext, x: Array) -> Array:
    x = np.asarray(x)
    try:
        batch, count = sampled_dims(x.shape, ctx.attrs)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    logits = x.astype(np.float64)
    finite = np.isfinite(logits)
    lowest = float(np.finfo(np.float32).min)  # onnxruntime's start: a row of no finite logit
    top = np.where(finite, logits, -np.inf).max(axis=1, initial=lowest)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.where(finite, np.exp(logits - top[:, None]), 0.0)
    cdf = np.cumsum(weights, axis=1)  # in order, as onnxruntime's running total
    engine = _engine(ctx)
    out = np.empty((batch, count), ctx.attr("dtype").numpy)
    for row in range(batch):
        for start in range(0, count, _CHUNK):
            n = min(_CHUNK, count - start)
            u = canonical(engine.take(2 * n), np.dtype(np.float64))
            out[row, start : start + n] = np.searchsorted(cdf[row], u * cdf[row, -1], "right")
    return out
