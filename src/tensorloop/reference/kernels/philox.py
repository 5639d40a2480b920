"""Reference kernels of PhiloxUniform (RandomUniform-8) and PhiloxMultinomial (Multinomial-13):
OpenVINO's generators and conversions, bit for bit.

Philox-4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3") makes four words
a block from a 64-bit key and a 128-bit counter, here (block n, op seed); MT19937 (Matsumoto and
Nishimura) is NumPy's, given the state PyTorch's ``manual_seed`` or C++'s ``std::seed_seq``
makes. RandomUniform's conversions are those of OpenVINO's reference implementation, which the
spec describes: each f16 and bf16 operation rounds as OpenVINO's ``float16`` and ``bfloat16``
round (``ov_f16``, ``ov_bf16``: neither always to nearest even). Multinomial is its CPU plugin's.
Where the plugin departs from the reference (it computes f64, f16 and bf16 in f32 with a fused
multiply-add, and i64 in i32), docs/openvino.md lists it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ...ops.philox import (
    check_alignment,
    check_bounds,
    check_classes,
    check_seeds,
    sample_count,
    uniform_dims,
)
from ...tensor.dtypes import DType, from_numpy
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

_U32, _U64 = np.uint32, np.uint64
_MULTIPLIERS = (_U64(0xD2511F53), _U64(0xCD9E8D57))
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_ROUNDS = 10
_BLOCKS_A_CHUNK = 1 << 16
"""Blocks made at once: the rounds' temporaries stay a few MiB whatever the output."""
SKIP_PER_ELEMENT = 256
"""Blocks an execution of RandomUniform moves its stream on per element it drew (TensorFlow's
``ReserveRandomOutputs(n, 256)``; OpenVINO's CPU plugin moves it so, the reference implementation
by 256 a block instead)."""
_MT_WORDS = 624


def philox_blocks(key: int, counter: int, first: int, blocks: int) -> Array:
    """The words of ``blocks`` Philox-4x32-10 blocks, four uint32 a block: block j counts
    first + j in the low 64 bits of the 128-bit counter, carrying into its high 64 bits,
    ``counter``."""
    out = np.empty(4 * blocks, _U32)
    for start in range(0, blocks, _BLOCKS_A_CHUNK):
        size = min(_BLOCKS_A_CHUNK, blocks - start)
        base, carried = (first + start) % 2**64, (counter + (first + start) // 2**64) % 2**64
        n = _U64(base) + np.arange(size, dtype=_U64)  # wraps as the plugin's ++n does
        high = _U64(carried) + (n < _U64(base)).astype(_U64)
        out[4 * start : 4 * (start + size)] = _rounds(key, n, high)
    return out


def _rounds(key: int, n: Array, high: Array) -> Array:
    c0, c1 = n.astype(_U32), (n >> _U64(32)).astype(_U32)
    c2, c3 = high.astype(_U32), (high >> _U64(32)).astype(_U32)
    k0, k1 = key & 0xFFFFFFFF, key >> 32
    for r in range(_ROUNDS):
        p0, p1 = _MULTIPLIERS[0] * c0.astype(_U64), _MULTIPLIERS[1] * c2.astype(_U64)
        c0, c1, c2, c3 = (
            (p1 >> _U64(32)).astype(_U32) ^ c1 ^ _U32(k0),
            p1.astype(_U32),
            (p0 >> _U64(32)).astype(_U32) ^ c3 ^ _U32(k1),
            p0.astype(_U32),
        )
        if r < _ROUNDS - 1:  # the key moves on by Weyl steps between rounds
            k0, k1 = (k0 + _KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + _KEY_STEPS[1]) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=1).reshape(-1)


@lru_cache(maxsize=64)
def _torch_state(seed: int) -> tuple[int, ...]:
    """MT19937's state after PyTorch's ``manual_seed(seed)``: Knuth's initialisation of the
    low 32 bits of the seed."""
    state = [seed & 0xFFFFFFFF]
    for i in range(1, _MT_WORDS):
        prev = state[-1]
        state.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return tuple(state)


@lru_cache(maxsize=64)
def _seed_seq_state(*seeds: int) -> tuple[int, ...]:
    """MT19937's state after ``std::mt19937::seed(std::seed_seq{seeds...})``: the C++
    standard's seed_seq::generate over the seeds' low 32 bits ([rand.util.seedseq])."""
    mask = 0xFFFFFFFF
    v = [s & mask for s in seeds]
    n, s = _MT_WORDS, len(v)
    t = 11  # for n >= 623
    p, q, m = (n - t) // 2, (n - t) // 2 + t, max(s + 1, n)
    b = [0x8B8B8B8B] * n

    def mix(x: int) -> int:
        return x ^ (x >> 27)

    for k in range(m):
        r1 = (1664525 * mix(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & mask
        r2 = (r1 + (s if k == 0 else k % n + v[k - 1] if k <= s else k % n)) & mask
        b[(k + p) % n] = (b[(k + p) % n] + r1) & mask
        b[(k + q) % n] = (b[(k + q) % n] + r2) & mask
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * mix((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & mask)) & mask
        r4 = (r3 - k % n) & mask
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    if not b[0] & 0x80000000 and not any(b[1:]):
        b[0] = 0x80000000  # the standard's rule against an all-zero state
    return tuple(b)


def mt19937_words(state: tuple[int, ...], count: int) -> Array:
    """The first ``count`` outputs of MT19937 from ``state`` (the generator twists before its
    first output, as after seeding)."""
    generator = np.random.MT19937(0)
    generator.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state, _U32), "pos": _MT_WORDS},
    }
    return generator.random_raw(count).astype(_U32)


@dataclass
class PhiloxStream:
    """A tensorflow-aligned op's stream in one run, as OpenVINO's CPU plugin keeps it: the
    block ``n`` the next execution starts at, and ``counter`` (its high 64 bits once n has
    wrapped; 0 while the op seed stands in)."""

    n: int = 0
    counter: int = 0

    def draw(self, key: int, op_seed: int, blocks: int, elements: int) -> Array:
        """The next execution's words (``blocks`` blocks), moving the stream on by
        SKIP_PER_ELEMENT blocks for each of its ``elements``."""
        words = philox_blocks(key, self.counter or op_seed, self.n, blocks)
        skip = elements * SKIP_PER_ELEMENT
        moved = self.n + skip
        self.n = moved % 2**64
        if moved >= 2**64:
            self.counter = (self.counter + 1) % 2**64
        return words


# -- converting words to values -------------------------------------------------------------------


def ov_bf16(x: Any) -> Array:
    """f32 values rounded to bf16 as OpenVINO's ``bfloat16(float)`` rounds them (returned as
    exactly representable f32): the dropped half-ulp is kept only when the kept low bit is 1."""
    bits = np.asarray(x, np.float32).view(_U32).astype(_U64)
    kept = (bits + ((bits & _U64(0x10000)) >> _U64(1))) >> _U64(16)
    return (kept << _U64(16)).astype(_U32).view(np.float32)


def ov_f16(x: Any) -> Array:
    """f32 values rounded to f16 as OpenVINO's ``float16(float)`` rounds them: to nearest even,
    except where the rounding carries into the exponent of a value bound for f16's subnormals,
    which the carry then doubles."""
    iv = np.asarray(x, np.float32).view(_U32).astype(np.int64)
    sign, exponent, mantissa = iv & 0x80000000, iv & 0x7F800000, iv & 0x7FFFFF
    frac = mantissa << 3  # f16's mantissa in bits 16..25
    biased = (exponent >> 23) - 127 + 15
    frac = np.where(_rounds_up(frac), frac + 0x8000, frac)
    carried = (frac & 0x7C000000) != 0
    biased = biased + carried
    normal = (sign | (np.clip(biased, 0, 31) << 26) | np.where(carried, 0, frac & 0x03FF0000)) >> 16
    # Below f16's normals the significand is shifted from the exponent the carry has moved.
    shift = np.clip(1 - biased, 1, 63)
    full = 0x04000000 | (mantissa << 3)
    sticky = (full & np.where(biased < -30, 0xFFFFFFFF, (1 << shift) - 1)) != 0
    small = np.where(1 - biased > 31, 0, full >> shift) | sticky
    small = (sign | np.where(_rounds_up(small), small + 0x8000, small)) >> 16
    nan_frac = np.where((mantissa << 3) & 0x03FF0000, (mantissa << 3) & 0x03FF0000, 0x10000)
    special = (sign | 0x7C000000 | np.where(mantissa != 0, nan_frac, 0)) >> 16
    bits = np.select(
        [exponent == 0x7F800000, exponent == 0, biased > 30, biased > 0],
        [special, sign >> 16, (sign | 0x7C000000) >> 16, normal],
        small,
    )
    return np.asarray(bits).astype(np.uint16).view(np.float16)


def _rounds_up(frac: Array) -> Array:
    """Whether OpenVINO's float16 adds half an f16 ulp (bit 15) before truncating to bit 16:
    below half it then drops the rest, at a tie it rounds to even."""
    return np.asarray(((frac & 0x1FFFF) == 0x18000) | ((frac & 0x7FFF) != 0))


def _unit_f32(words: Array, bits: int) -> Array:
    """1.m - 1 in f32, m the low ``bits`` bits of each word as the high bits of the mantissa
    (23 for f32; 7 for bf16, whose mantissa is the f32's top 7 bits)."""
    mantissa = (words & _U32((1 << bits) - 1)) << _U32(23 - bits)
    return (mantissa | _U32(0x3F800000)).view(np.float32) - np.float32(1)


def _unit_f16(words: Array) -> Array:
    """1.m - 1 in f16, m the low 10 bits of each word."""
    bits = ((words & _U32(0x3FF)) | _U32(0x3C00)).astype(np.uint16)
    return bits.view(np.float16) - np.float16(1)


def _tensorflow_values(words: Array, dt: DType, lo: Any, hi: Any) -> Array:
    if dt is DType.float32:
        low, high = np.float32(lo), np.float32(hi)
        return _unit_f32(words, 23) * (high - low) + low
    if dt is DType.float16:  # each operation of OpenVINO's float16 rounds to f16
        low, span = np.float32(lo), ov_f16(np.float32(hi) - np.float32(lo)).astype(np.float32)
        scaled = ov_f16(_unit_f16(words).astype(np.float32) * span).astype(np.float32)
        return ov_f16(scaled + low)
    if dt is DType.bfloat16:
        low, high = np.float32(lo), np.float32(hi)
        return ov_bf16(ov_bf16(_unit_f32(words, 7) * ov_bf16(high - low)) + low)
    first, second = words[0::2].astype(_U64), words[1::2].astype(_U64)
    if dt is DType.float64:
        mantissa = ((first & _U64(0xFFFFF)) << _U64(32)) | second
        unit = (mantissa | _U64(0x3FF0000000000000)).view(np.float64) - 1.0
        return unit * (np.float64(hi) - np.float64(lo)) + np.float64(lo)
    if dt is DType.int32:
        return _modulo(words, lo, hi, 32)
    return _modulo((second << _U64(32)) | first, lo, hi, 64)


def _torch_values(words: Array, dt: DType, lo: Any, hi: Any) -> Array:
    if dt is DType.float32:
        unit = (words & _U32(0xFFFFFF)).astype(np.float32) * np.float32(2.0**-24)
        return unit * (np.float32(hi) - np.float32(lo)) + np.float32(lo)
    if dt is DType.float16:
        unit = (words & _U32(0x7FF)).astype(np.float32) * np.float32(2.0**-11)
        span = ov_f16(np.float32(hi) - np.float32(lo)).astype(np.float32)
        return ov_f16(unit * span + np.float32(lo))
    if dt is DType.bfloat16:
        unit = (words & _U32(0xFF)).astype(np.float32) * np.float32(2.0**-8)
        low, high = np.float32(lo), np.float32(hi)
        return ov_bf16(unit * ov_bf16(high - low) + low)
    if dt is DType.int32:
        return _modulo(words, lo, hi, 32)
    if dt is DType.int64 and _one_word_int64(lo, hi):
        return _modulo(words.astype(_U64), lo, hi, 64)
    first, second = words[0::2].astype(_U64), words[1::2].astype(_U64)
    joined = (first << _U64(32)) | second
    if dt is DType.int64:
        return _modulo(joined, lo, hi, 64)
    unit = (joined & _U64(2**53 - 1)).astype(np.float64) * 2.0**-53
    return unit * (np.float64(hi) - np.float64(lo)) + np.float64(lo)


def _one_word_int64(lo: Any, hi: Any) -> bool:
    """PyTorch draws an i64 from one word when both bounds fit uint32 (OpenVINO's test)."""
    return int(lo) <= 0xFFFFFFFF and int(hi) <= 0xFFFFFFFF


def _modulo(x: Array, lo: Any, hi: Any, bits: int) -> Array:
    """(x mod (hi - lo)) + lo in unsigned ``bits``-bit arithmetic, as C++ computes it on the
    unsigned word, then read as signed."""
    unsigned, signed = (_U32, np.int32) if bits == 32 else (_U64, np.int64)
    span = unsigned((int(hi) - int(lo)) % 2**bits)
    return ((x % span) + unsigned(int(lo) % 2**bits)).astype(unsigned).view(signed)


def _two_words(dt: DType, alignment: str, lo: Any, hi: Any) -> bool:
    """Whether each element of ``dt`` takes two words."""
    if alignment == "tensorflow":
        return dt in (DType.float64, DType.int64)
    return dt is DType.float64 or (dt is DType.int64 and not _one_word_int64(lo, hi))


@kernel("PhiloxUniform")
def _philox_uniform(ctx: KernelContext, shape: Array, low: Array, high: Array) -> Array:
    try:
        check_seeds(ctx.attrs)
        alignment = check_alignment(ctx.attrs)
        dims = uniform_dims(shape)
        check_bounds(low, high)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    dt = from_numpy(np.asarray(low))
    lo, hi = (np.asarray(v).reshape(-1)[0] for v in (low, high))
    if dt.is_float:
        lo, hi = float(lo), float(hi)
    count = math.prod(dims)
    words_each = 2 if _two_words(dt, alignment, lo, hi) else 1
    key, op_seed = ctx.attr("global_seed"), ctx.attr("op_seed")
    if alignment == "tensorflow":
        stream = ctx.state.generator(ctx.node, PhiloxStream)
        blocks = -(-count * words_each // 4)
        words = stream.draw(key, op_seed, blocks, count)[: count * words_each]
        convert = _tensorflow_values
    else:
        words = mt19937_words(_torch_state(key), count * words_each)
        convert = _torch_values
    with np.errstate(all="ignore"):  # a span past the type's range is inf, as in OpenVINO
        values = convert(words, dt, lo, hi)
    return np.asarray(values).astype(dt.numpy).reshape(dims)


# -- Multinomial ----------------------------------------------------------------------------------


def _first_at_least(cdf: Array, samples: Array) -> tuple[Array, Array]:
    """Per row, the first class whose CDF entry is at least each sample (rows [B, C], samples
    [B, S]), and whether one is: the first entry of the CDF's running maximum (NaN ignored) to
    reach the sample, found by a sorted search."""
    peaks = np.maximum.accumulate(np.where(np.isnan(cdf), -np.inf, cdf), axis=1)
    picks = np.stack(
        [np.searchsorted(row, s, side="left") for row, s in zip(peaks, samples, strict=True)]
    )
    classes = cdf.shape[1]
    found = picks < classes
    return np.minimum(picks, classes - 1), found


@kernel("PhiloxMultinomial")
def _philox_multinomial(ctx: KernelContext, probs: Array, num_samples: Array) -> Array:
    replace = bool(ctx.attr("with_replacement"))
    probs = np.asarray(probs)
    try:
        check_seeds(ctx.attrs)
        if probs.ndim != 2:
            raise ValueError(f"probs must be [batch, classes], got shape {list(probs.shape)}")
        samples = sample_count(num_samples)
        batch, classes = probs.shape
        check_classes(batch, classes, samples, replace)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    out_type = ctx.attr("convert_type").numpy
    if batch == 0 or samples == 0:
        return np.zeros((batch, samples), out_type)
    with np.errstate(all="ignore"):  # invalid probabilities give NaN, as in OpenVINO
        return _multinomial(ctx, probs, samples, replace).astype(out_type)


def _multinomial(ctx: KernelContext, probs: Array, samples: int, replace: bool) -> Array:
    batch, classes = probs.shape
    x = probs.astype(np.float32)
    if ctx.attr("log_probs"):
        x = np.exp(x.astype(np.float64)).astype(np.float32)  # e**x rounded once, as expf
    cdf = np.add.accumulate(x, axis=1, dtype=np.float32)
    cdf = cdf / np.maximum(cdf[:, -1:], np.finfo(np.float32).tiny)
    state = _seed_seq_state(ctx.attr("global_seed"), ctx.attr("op_seed"))
    words = mt19937_words(state, batch * samples)
    draws = (words.astype(np.float32) * np.float32(2.0**-32)).reshape(batch, samples)
    if replace:
        picks, _ = _first_at_least(cdf, draws)
        return picks
    out = np.empty((batch, samples), np.int64)
    classes_at = np.arange(classes)
    rows = np.arange(batch)
    for j in range(samples):
        pick, found = _first_at_least(cdf, draws[:, j : j + 1])
        pick, found = pick[:, 0], found[:, 0]
        out[:, j] = pick
        share = np.where(pick > 0, cdf[rows, pick] - cdf[rows, np.maximum(pick - 1, 0)], cdf[:, 0])
        share = share.astype(np.float32)[:, None]
        rest = np.float32(1) - share
        lowered = np.where(classes_at >= pick[:, None], cdf - share, cdf) / rest
        cdf = np.where(found[:, None], lowered, cdf).astype(np.float32)
    return out
