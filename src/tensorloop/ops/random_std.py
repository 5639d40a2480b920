"""ONNX's random ops, drawn as onnxruntime's CPU kernels draw them: RandomUniform, RandomNormal,
their Like forms, Bernoulli and Multinomial.

onnxruntime draws with C++'s ``std::default_random_engine`` and standard distributions; its Linux
build gets them from libstdc++ (the engine is ``minstd_rand0``). ``reference/kernels/random_std.py``
holds that engine and those distributions; ``docs/onnx.md`` says how the values compare with
onnxruntime's (equal to the first run of a fresh session, bit for bit).

Streams: a run starts each op's engine at its seed; every execution of the op (a loop's trip)
draws on from where the last one stopped, with a fresh distribution (as onnxruntime's kernel,
which keeps its engine between calls, so a run equals a fresh session's first run). Without a
``seed`` the engine is seeded with the CRC-32 of the node's name (the ONNX reader names an
unnamed random node after its first output): reproducible, unlike onnxruntime's, which seeds
from the clock, so such values are not comparable with onnxruntime's.

The helpers below check what the type rules, the kernels and the allocation predictions all
check; they raise ValueError, which each side reports as its own error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, expect_one_of, reported

DRAWN_TYPES = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})
"""The element types RandomUniform, RandomNormal and their Like forms make, and the types of
Bernoulli's probabilities and Multinomial's logits."""

BERNOULLI_TYPES = DRAWN_TYPES | {
    DType.bool, DType.int8, DType.int16, DType.int32, DType.int64,
    DType.uint8, DType.uint16, DType.uint32, DType.uint64,
}  # fmt: skip
"""The element types Bernoulli's output may have (its ``dtype``)."""

INDEX_TYPES = frozenset({DType.int32, DType.int64})
"""Multinomial's output types (its ``dtype``)."""

_SEED = AttrSpec(
    (float, int), None, "the engine's seed (a float, truncated); none: one derived from the name"
)
_FLOAT = (float, int)


def drawn_dims(attrs: Mapping[str, Any]) -> tuple[int, ...]:
    """RandomUniform's and RandomNormal's output dims, their ``shape`` attribute; ValueError for a
    negative size."""
    dims = tuple(int(d) for d in attrs["shape"])
    if any(d < 0 for d in dims):
        raise ValueError(f"attribute 'shape' {list(dims)} holds a negative size")
    return dims


def sample_size(attrs: Mapping[str, Any]) -> int:
    """Multinomial's ``sample_size``; ValueError unless at least 1 (onnxruntime's rule)."""
    count = int(attrs["sample_size"])
    if count < 1:
        raise ValueError(f"attribute 'sample_size' must be at least 1, got {count}")
    return count


def sampled_dims(logits: Sequence[int], attrs: Mapping[str, Any]) -> tuple[int, int]:
    """Multinomial's output dims [batch, sample_size] for logits of dims ``logits``; ValueError
    for logits that are not [batch, classes] with a class."""
    if len(logits) != 2:
        raise ValueError(f"input #0: expected [batch, classes] logits, got {len(logits)} dims")
    if logits[1] < 1:
        raise ValueError("input #0: the logits hold no class to draw")
    return int(logits[0]), sample_size(attrs)


def _float_dtype(ctx: InferContext, dt: DType | None, given: TensorType | None) -> DType:
    """The drawn type: ``dtype`` if given, else the input's (the Like forms); a float type."""
    if dt is None and given is not None:
        if given.dtype not in DRAWN_TYPES:
            raise ctx.error(
                f"input #0 is {given}: without 'dtype' the values take the input's type, which "
                "must be a float type (float16, bfloat16, float32, float64)"
            )
        return given.dtype
    if dt not in DRAWN_TYPES:
        raise ctx.error(
            f"attribute 'dtype': expected float16, bfloat16, float32 or float64, got {dt}"
        )
    return dt


_UNIFORM = {"high": AttrSpec(_FLOAT, 1.0), "low": AttrSpec(_FLOAT, 0.0), "seed": _SEED}
_NORMAL = {"mean": AttrSpec(_FLOAT, 0.0), "scale": AttrSpec(_FLOAT, 1.0), "seed": _SEED}
_SHAPE = {"shape": AttrSpec((tuple, list), doc="the output's dims")}
_DTYPE = {"dtype": AttrSpec(DType, DType.float32)}


@op("RandomUniform", inputs=0, attrs={**_UNIFORM, **_SHAPE, **_DTYPE})
def _random_uniform(ctx: InferContext) -> list[Type]:
    """Values of ``shape`` drawn uniformly from [low, high), of type ``dtype``.

    The engine is ``minstd_rand0`` (x <- 16807 x mod 2**31 - 1), seeded with ``seed`` as
    onnxruntime converts the float: truncated toward zero to 64 bits, the low 32 kept (NaN and
    values beyond int64 give 0), then x0 = that mod 2**31 - 1, or 1 where it is 0. A float32
    value is (w - 1) / 2**31 of one word w (libstdc++'s ``generate_canonical``; 1 becomes the
    float below it), a float64 one ((w1 - 1) + (w2 - 1) * (2**31 - 2)) / (2**31 - 2)**2 of two;
    then u * (high - low) + low in the type. float16 and bfloat16 draw float32 values and round
    them once. Element i takes the i-th value, in row-major order."""
    with reported(ctx):
        dims = drawn_dims(ctx.attrs)
    return [TensorType(_float_dtype(ctx, ctx.attr("dtype"), None), dims)]


@op("RandomNormal", inputs=0, attrs={**_NORMAL, **_SHAPE, **_DTYPE})
def _random_normal(ctx: InferContext) -> list[Type]:
    """Values of ``shape`` drawn from the normal distribution (mean, scale), of type ``dtype``:
    libstdc++'s ``normal_distribution``, Marsaglia's polar method. Pairs x = 2 u1 - 1,
    y = 2 u2 - 1 of uniform values (RandomUniform's, in the type) are drawn until
    0 < r2 = x**2 + y**2 <= 1; then m = sqrt(-2 log(r2) / r2) gives y m and, next, x m (a pair's
    second value is dropped when the output's count is odd); each value v becomes
    v * scale + mean, all in the type (log is the C library's logf or log). float16 and bfloat16
    draw float32 values and round them once."""
    with reported(ctx):
        dims = drawn_dims(ctx.attrs)
    return [TensorType(_float_dtype(ctx, ctx.attr("dtype"), None), dims)]


@op("RandomUniformLike", attrs={**_UNIFORM, "dtype": AttrSpec(DType, None)})
def _random_uniform_like(ctx: InferContext) -> list[Type]:
    """RandomUniform's values with the input's shape (its values are not read), of type
    ``dtype`` (default: the input's, which must then be a float type)."""
    t = ctx.tensor(0)
    return [TensorType(_float_dtype(ctx, ctx.attr("dtype"), t), t.shape)]


@op("RandomNormalLike", attrs={**_NORMAL, "dtype": AttrSpec(DType, None)})
def _random_normal_like(ctx: InferContext) -> list[Type]:
    """RandomNormal's values with the input's shape (its values are not read), of type
    ``dtype`` (default: the input's, which must then be a float type)."""
    t = ctx.tensor(0)
    return [TensorType(_float_dtype(ctx, ctx.attr("dtype"), t), t.shape)]


@op("Bernoulli", attrs={"dtype": AttrSpec(DType, None), "seed": _SEED})
def _bernoulli(ctx: InferContext) -> list[Type]:
    """1 with probability p, else 0, for each probability p of the input, of type ``dtype``
    (default: the input's): 1 where u < p, u the uniform value RandomUniformLike draws from
    [0, 1) in the input's type. (ONNX's function body for the op, which onnxruntime runs, tests
    u > p instead: 1 with probability 1 - p, against the spec's text; docs/onnx.md.)"""
    p = expect_one_of(ctx, 0, DRAWN_TYPES, "probabilities")
    dt = ctx.attr("dtype") or p.dtype
    if dt not in BERNOULLI_TYPES:
        raise ctx.error(f"attribute 'dtype': Bernoulli cannot make {dt}")
    return [TensorType(dt, p.shape)]


@op(
    "Multinomial",
    attrs={
        "dtype": AttrSpec(DType, DType.int32, "the indices' type: int32 or int64"),
        "sample_size": AttrSpec(int, 1, "samples a row (at least 1)"),
        "seed": _SEED,
    },
)
def _multinomial(ctx: InferContext) -> list[Type]:
    """``sample_size`` class indices per row of the logits [batch, classes], drawn with
    probabilities softmax(row), as onnxruntime draws them: in float64, a row's running sums c of
    e**(x - max) over its finite logits (a non-finite logit's class is never drawn); each sample
    is the number of sums <= u * c[-1], u a float64 uniform value (two words), the samples of a
    row drawn in order, row after row (a row with no finite logit gives index ``classes``)."""
    x = expect(ctx, 0, "float", rank=2)
    expect_one_of(ctx, 0, DRAWN_TYPES, "logits")
    dt = ctx.attr("dtype")
    if dt not in INDEX_TYPES:
        raise ctx.error(f"attribute 'dtype': expected int32 or int64, got {dt}")
    with reported(ctx):
        count = sample_size(ctx.attrs)
    batch: Dim = UNKNOWN
    if x.shape is not None:
        batch, classes = x.shape
        if classes == 0:
            raise ctx.error(f"input #0: the logits {x} hold no class to draw")
    return [TensorType(dt, [batch, count])]
