"""OpenVINO's random ops: PhiloxUniform (RandomUniform-8) and PhiloxMultinomial (Multinomial-13).

Both draw from 32-bit words made from the op's seeds, as OpenVINO draws them (the generators
and the conversions are in ``reference/kernels/philox.py``); ``docs/openvino.md`` says where
they match OpenVINO's CPU plugin and where its reference implementation instead.

The helpers below check what the type rules and the kernels both check (seeds, the alignment,
the bounds, the output's size); they raise ValueError, which each side reports as its own error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, expect_one_of, reported, static_length

ALIGNMENTS = ("tensorflow", "pytorch")
"""RandomUniform's ``alignment``: Philox-4x32-10 words as TensorFlow converts them, or MT19937
words as PyTorch does (OpenVINO's name for the attribute, though PyTorch's is no Philox)."""

UNIFORM_TYPES = frozenset(
    {DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int32, DType.int64}
)
"""The element types RandomUniform-8 draws."""

INDEX_TYPES = frozenset({DType.int32, DType.int64})
"""Multinomial-13's ``convert_type``s, and the types of the size inputs of both ops."""

MAX_SEED = 2**64 - 1
"""Seeds are OpenVINO's uint64 attributes."""


def check_seeds(attrs: Mapping[str, Any]) -> None:
    """ValueError unless ``global_seed`` and ``op_seed`` are uint64 values."""
    for key in ("global_seed", "op_seed"):
        seed = attrs[key]
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"{key} must be in [0, 2**64), got {seed}")


def check_alignment(attrs: Mapping[str, Any]) -> str:
    """The ``alignment`` attribute, checked to be one of ALIGNMENTS."""
    alignment = str(attrs["alignment"])
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment must be one of {', '.join(ALIGNMENTS)}, got {alignment!r}")
    return alignment


def uniform_dims(shape: Any) -> tuple[int, ...]:
    """The output dims RandomUniform's ``shape`` input asks for; ValueError for a negative one."""
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if any(d < 0 for d in dims):
        raise ValueError(f"shape {list(dims)} holds a negative size")
    return dims


def check_bounds(low: Any, high: Any) -> None:
    """ValueError unless ``low < high`` (the range ``[low, high)`` holds a value)."""
    lo, hi = np.asarray(low).reshape(-1), np.asarray(high).reshape(-1)
    if lo.size != 1 or hi.size != 1:
        raise ValueError(f"minval and maxval must hold one value each, got {lo.size} and {hi.size}")
    exact = lo.dtype.kind in "iu"  # i64 bounds compared as integers, not rounded to f64
    low, high = (int(v[0]) for v in (lo, hi)) if exact else (float(v[0]) for v in (lo, hi))
    if not low < high:  # NaN fails too
        raise ValueError(f"minval {lo[0]} must be less than maxval {hi[0]}")


def sample_count(num_samples: Any) -> int:
    """Multinomial's ``num_samples`` input as a count; ValueError unless one value, >= 0."""
    count = np.asarray(num_samples).reshape(-1)
    if count.size != 1:
        raise ValueError(f"num_samples must hold one value, got {count.size}")
    samples = int(count[0])
    if samples < 0:
        raise ValueError(f"num_samples must not be negative, got {samples}")
    return samples


def check_classes(batch: Dim, classes: Dim, samples: int, with_replacement: bool) -> None:
    """ValueError where ``classes`` cannot give ``samples`` draws a row: none at all, or, without
    replacement, fewer classes than samples (an unknown dim passes)."""
    if not isinstance(classes, int):
        return
    if not with_replacement and samples > classes:
        raise ValueError(
            f"without replacement, num_samples ({samples}) cannot exceed the classes ({classes})"
        )
    if isinstance(batch, int) and batch > 0 and samples and not classes:
        raise ValueError("probs has no classes to sample from")


def multinomial_dims(
    probs: Sequence[int], num_samples: Any, with_replacement: bool
) -> tuple[int, int]:
    """Multinomial's output dims [batch, num_samples] for probs of dims ``probs``; ValueError
    where the kernel refuses (``sample_count``, ``check_classes``)."""
    if len(probs) != 2:
        raise ValueError(f"probs must be [batch, classes], got {len(probs)} dims")
    samples = sample_count(num_samples)
    check_classes(int(probs[0]), int(probs[1]), samples, with_replacement)
    return int(probs[0]), samples


def _one_value(ctx: InferContext, index: int, what: str) -> TensorType:
    """Input ``index`` as a scalar or a one-element 1-D tensor."""
    t = ctx.tensor(index)
    if t.shape is not None and t.shape not in ((), (1,), (UNKNOWN,)):
        raise ctx.error(f"input #{index} ({what}): expected a scalar or one value, got {t}")
    return t


_SEEDS = {
    "global_seed": AttrSpec(int, 0, "the Philox key (MT19937's seed with alignment pytorch)"),
    "op_seed": AttrSpec(int, 0, "the Philox counter's high word (unused with pytorch)"),
}


@op(
    "PhiloxUniform",
    inputs=3,
    attrs={**_SEEDS, "alignment": AttrSpec(str, "tensorflow", "tensorflow or pytorch")},
)
def _philox_uniform(ctx: InferContext) -> list[Type]:
    """Values drawn uniformly from ``[minval, maxval)``, of ``shape``: OpenVINO's RandomUniform-8.
    ``minval`` and ``maxval`` (scalars or one value, minval < maxval) give the element type:
    f16, bf16, f32, f64, i32 or i64.

    With ``alignment`` tensorflow (the default) the words are Philox-4x32-10's, keyed by
    ``global_seed``, its counter ``op_seed`` in the high 64 bits and a block number n in the
    low ones: element i takes word i % 4 of block n0 + i // 4 (f64 and i64 take two words each,
    two elements a block). A float is 1.m - 1 with m the word's low mantissa bits (f32 23, f16
    10, bf16 7, f64 20 of the first word and the 32 of the second), then x * (maxval - minval) +
    minval in the element type (each f16 and bf16 operation rounded as OpenVINO's float16 and
    bfloat16 round); an integer is (x mod (maxval - minval)) + minval, x the word (i64: the
    second word high, the first low). With ``alignment`` pytorch the words are MT19937's,
    seeded with the low 32 bits of ``global_seed`` (``op_seed`` unused), converted as PyTorch
    converts them: the low 24 bits times 2**-24 (f16 11, bf16 8, f64 53 of the first word high
    and the second low), then scaled in f32 and rounded once to the type (f64 in f64); i64
    bounds both within uint32 take one word, else two.

    A run starts every op's stream at its seeds. With tensorflow, each execution moves the
    stream on by 256 blocks an element (TensorFlow's skip), so a loop's trips draw new values;
    with pytorch, every execution draws from the seed again. Seeds 0/0 (nondeterministic in
    OpenVINO) draw these same streams with key 0, counter 0 (MT19937 seeded with 0)."""
    with reported(ctx):
        check_seeds(ctx.attrs)
        check_alignment(ctx.attrs)
    spec = expect(ctx, 0, "int", rank=1)
    expect_one_of(ctx, 0, INDEX_TYPES, "shape")
    lo, hi = _one_value(ctx, 1, "minval"), _one_value(ctx, 2, "maxval")
    dt = ctx.same_dtype(1, 2)
    if dt not in UNIFORM_TYPES:
        names = ", ".join(sorted(d.value for d in UNIFORM_TYPES))
        raise ctx.error(f"minval and maxval must be one of {names}, got {lo} and {hi}")
    low, high = ctx.const(1), ctx.const(2)
    if low is not None and high is not None:
        with reported(ctx):
            check_bounds(low, high)
    dims = ctx.const_ints(0)
    if dims is None:
        n = static_length(spec)
        return [TensorType(dt, None if n is None else [UNKNOWN] * n)]
    with reported(ctx):
        return [TensorType(dt, uniform_dims(dims))]


@op(
    "PhiloxMultinomial",
    inputs=2,
    attrs={
        **_SEEDS,
        "convert_type": AttrSpec(DType, DType.int64, "the indices' type: int32 or int64"),
        "with_replacement": AttrSpec(int, 1, "1: a class may be drawn again"),
        "log_probs": AttrSpec(int, 0, "1: probs holds log-probabilities"),
    },
)
def _philox_multinomial(ctx: InferContext) -> list[Type]:
    """``num_samples`` class indices per row of ``probs`` [batch, classes], each drawn with the
    row's probabilities: OpenVINO's Multinomial-13, as its CPU plugin computes it.

    In f32 whatever the probs' type: with ``log_probs`` each value becomes e**x; the running
    sums of a row (its CDF), divided by the last one (at least the smallest normal f32), are
    compared with samples u = f32(w) / 2**32 of MT19937 words w, the generator seeded through
    C++'s ``std::seed_seq`` with the low 32 bits of ``global_seed`` and ``op_seed``, the samples
    taken row by row. A sample picks the first class whose CDF is at least u (the last class if
    none is, as only invalid probabilities allow). Without ``with_replacement`` each pick then
    removes its class: its share p of the CDF is subtracted from its entry and the ones after,
    and the CDF divided by 1 - p, so num_samples must not pass the classes.

    Every execution draws from the seeds again, in a loop too (as OpenVINO does); seeds 0/0
    (nondeterministic in OpenVINO) seed the generator with 0/0."""
    with reported(ctx):
        check_seeds(ctx.attrs)
    probs = expect(ctx, 0, "float", rank=2)
    count = _one_value(ctx, 1, "num_samples")
    if count.dtype not in INDEX_TYPES:
        raise ctx.error(f"input #1 (num_samples): expected int32 or int64, got {count}")
    out_type = ctx.attr("convert_type")
    if out_type not in INDEX_TYPES:
        raise ctx.error(f"convert_type must be int32 or int64, got {out_type}")
    batch: Dim = UNKNOWN if probs.shape is None else probs.shape[0]
    classes: Dim = UNKNOWN if probs.shape is None else probs.shape[1]
    given = ctx.const(1)
    if given is None:
        return [TensorType(out_type, [batch, UNKNOWN])]
    with reported(ctx):
        samples = sample_count(given)
        check_classes(batch, classes, samples, bool(ctx.attr("with_replacement")))
    return [TensorType(out_type, [batch, samples])]
