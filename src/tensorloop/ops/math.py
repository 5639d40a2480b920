"""Maths and activation ops: unary functions, bit ops, Mod, Clip, PRelu, variadic Sum/Mean,
LogSoftmax/Hardmax, CumProd, Det, Einsum, Trilu and EyeLike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import broadcast_dims, elementwise, expect, norm_axis
from .elementwise import Rule
from .reduce import running


def _f(default: float) -> AttrSpec:
    return AttrSpec((float, int), default)


_ALPHA_1 = {"alpha": _f(1.0)}

# name: (inputs, element kind of every input, result is bool, attributes, meaning). Float
# attributes take an int too, as ONNX writers sometimes store a whole number as one.
_TABLE: dict[str, tuple[int | tuple[int, None], str, bool, Mapping[str, AttrSpec], str]] = {
    "Acos": (1, "float", False, {}, "Arc cosine; NaN outside [-1, 1]."),
    "Acosh": (1, "float", False, {}, "Inverse hyperbolic cosine; NaN below 1."),
    "Asin": (1, "float", False, {}, "Arc sine; NaN outside [-1, 1]."),
    "Asinh": (1, "float", False, {}, "Inverse hyperbolic sine."),
    "Atan": (1, "float", False, {}, "Arc tangent."),
    "Atanh": (1, "float", False, {}, "Inverse hyperbolic tangent; ±inf at ±1, NaN beyond."),
    "Cos": (1, "float", False, {}, "Cosine."),
    "Cosh": (1, "float", False, {}, "Hyperbolic cosine."),
    "Sin": (1, "float", False, {}, "Sine."),
    "Sinh": (1, "float", False, {}, "Hyperbolic sine."),
    "Tan": (1, "float", False, {}, "Tangent."),
    "Erf": (1, "float", False, {}, "The error function 2/sqrt(pi) * integral of exp(-t^2), 0..x."),
    "Floor": (1, "float", False, {}, "The greatest integer not above x."),
    "Ceil": (1, "float", False, {}, "The least integer not below x."),
    "Round": (1, "float", False, {}, "The nearest integer; halves go to the even one."),
    "Sign": (1, "numeric", False, {}, "-1, 0 or 1 by the sign of x (NaN stays NaN)."),
    "Reciprocal": (1, "float", False, {}, "1 / x."),
    "IsNaN": (1, "float8", True, {}, "True where x is NaN."),
    "IsInf": (
        1,
        "float8",
        True,
        {"detect_negative": AttrSpec(int, 1), "detect_positive": AttrSpec(int, 1)},
        "True where x is +inf (if detect_positive) or -inf (if detect_negative).",
    ),
    "Softplus": (1, "float", False, {}, "log(1 + exp(x))."),
    "Softsign": (1, "float", False, {}, "x / (1 + |x|)."),
    "Elu": (1, "float", False, _ALPHA_1, "x for x > 0, else alpha * (exp(x) - 1)."),
    "Selu": (
        1,
        "float",
        False,
        {"alpha": _f(1.67326319217681884765625), "gamma": _f(1.05070102214813232421875)},
        "gamma * x for x > 0, else gamma * alpha * (exp(x) - 1).",
    ),
    "Celu": (1, "float", False, _ALPHA_1, "max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."),
    "LeakyRelu": (
        1,
        "float",
        False,
        {"alpha": _f(0.00999999977648258209228515625)},
        "x for x >= 0, else alpha * x.",
    ),
    "ThresholdedRelu": (1, "float", False, _ALPHA_1, "x for x > alpha, else 0."),
    "HardSigmoid": (
        1,
        "float",
        False,
        {"alpha": _f(0.20000000298023223876953125), "beta": _f(0.5)},
        "max(0, min(1, alpha * x + beta)).",
    ),
    "HardSwish": (1, "float", False, {}, "x * max(0, min(1, x / 6 + 1/2))."),
    "Mish": (1, "float", False, {}, "x * tanh(log(1 + exp(x)))."),
    "Gelu": (
        1,
        "float",
        False,
        {"approximate": AttrSpec(str, "none")},
        "x/2 * (1 + erf(x / sqrt(2))); approximate='tanh' uses "
        "x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).",
    ),
    "Swish": (1, "float", False, _ALPHA_1, "x * sigmoid(alpha * x)."),
    "Shrink": (
        1,
        "numeric",
        False,
        {"bias": _f(0.0), "lambd": _f(0.5)},
        "x + bias for x < -lambd, x - bias for x > lambd, else 0.",
    ),
    "BitwiseNot": (1, "int", False, {}, "Every bit of x flipped."),
    "BitwiseAnd": (2, "int", False, {}, "Bitwise a & b, broadcast NumPy-style."),
    "BitwiseOr": (2, "int", False, {}, "Bitwise a | b, broadcast NumPy-style."),
    "BitwiseXor": (2, "int", False, {}, "Bitwise a ^ b, broadcast NumPy-style."),
    "BitShift": (
        2,
        "int",
        False,
        {"direction": AttrSpec(str)},
        "x shifted by y bits, direction 'LEFT' or 'RIGHT' (arithmetic for signed x); a shift "
        "below 0 or of the type's width or more leaves only the sign fill: -1 for a right shift "
        "of a negative x, else 0.",
    ),
    "Mod": (
        2,
        "numeric",
        False,
        {"fmod": AttrSpec(int, 0)},
        "a - floor(a / b) * b (the sign of b, as Python's %); fmod=1 gives a - trunc(a / b) * b "
        "(the sign of a, as C's fmod). An integer 0 divisor fails; a float one gives NaN.",
    ),
    "Sum": ((1, None), "float", False, {}, "The sum of all inputs, broadcast NumPy-style."),
    "Mean": ((1, None), "float", False, {}, "The mean of all inputs, broadcast NumPy-style."),
}

# The element types the ONNX schemas of these ops admit, each with the broader kind ``expect``
# checks first: the 8- to 64-bit numbers, and for IsNaN/IsInf the float8 types too.
_FLOATS = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})
_INTS = frozenset(d for d in DType if d.is_int and d.bits >= 8)
_FLOAT8 = frozenset(
    {DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz}
)
_ADMITTED: dict[str, tuple[str, frozenset[DType]]] = {
    "float": ("float", _FLOATS),
    "float8": ("float", _FLOATS | _FLOAT8),
    "int": ("int", _INTS),
    "numeric": ("numeric", _FLOATS | _INTS),
    "any": ("any", _FLOATS | _INTS | {DType.bool}),
}


def typed(ctx: InferContext, index: int, kind: str, rank: int | None = None) -> TensorType:
    """Input ``index`` as a tensor of element ``kind`` (see _ADMITTED) and ``rank``."""
    broad, admitted = _ADMITTED[kind]
    t = expect(ctx, index, broad, rank)
    if t.dtype not in admitted:
        raise ctx.error(f"input #{index}: {ctx.opdef.name} is not defined for {t.dtype}, got {t}")
    return t


# Attributes that take one of a few values: (op, attribute) -> the values.
_CHOICES: dict[tuple[str, str], tuple[object, ...]] = {
    ("Gelu", "approximate"): ("none", "tanh"),
    ("BitShift", "direction"): ("LEFT", "RIGHT"),
    ("Mod", "fmod"): (0, 1),
}


def _broadcasting(name: str, kind: str, to_bool: bool, doc: str) -> Rule:
    def rule(ctx: InferContext) -> list[Type]:
        for i in range(len(ctx)):
            typed(ctx, i, kind)
        for (owner, key), allowed in _CHOICES.items():
            if owner == name and ctx.attr(key) not in allowed:
                wanted = " or ".join(repr(a) for a in allowed)
                raise ctx.error(f"attribute '{key}' expected {wanted}, got {ctx.attr(key)!r}")
        return elementwise(ctx, result_dtype=DType.bool if to_bool else None)

    rule.__doc__ = doc
    return rule


for _name, (_inputs, _kind, _to_bool, _attrs, _doc) in _TABLE.items():
    op(_name, inputs=_inputs, attrs=_attrs)(_broadcasting(_name, _kind, _to_bool, _doc))


@op("PRelu", inputs=2)
def _prelu(ctx: InferContext) -> list[Type]:
    """x for x >= 0, else slope * x; ``slope`` broadcasts one way, to x's shape."""
    x, slope = typed(ctx, 0, "numeric"), typed(ctx, 1, "numeric")
    ctx.same_dtype(0, 1)
    joint = broadcast_dims(ctx, [x.shape, slope.shape])
    if joint is not None and x.shape is not None:
        grows = len(joint) > len(x.shape) or any(
            isinstance(j, int) and isinstance(d, int) and j != d
            for j, d in zip(joint, x.shape, strict=True)
        )
        if grows:
            raise ctx.error(f"input #1: slope {slope} does not broadcast to x {x}")
    return [x]


def _scalar(ctx: InferContext, index: int, kind: str) -> TensorType:
    """Input ``index`` as a one-element tensor: a scalar, or 1-D of length 1."""
    t = expect(ctx, index, kind)
    dims = t.shape or ()
    if len(dims) > 1 or any(isinstance(d, int) and d != 1 for d in dims):
        raise ctx.error(f"input #{index}: expected a scalar, got {t}")
    return t


@op("Clip", inputs=(1, 3))
def _clip(ctx: InferContext) -> list[Type]:
    """``input`` limited to [min, max]: min(max, max(input, min)), so max wins when min > max.
    ``min`` and ``max`` are optional scalars; left out, that side is unbounded."""
    t = typed(ctx, 0, "numeric")
    bounds = [i for i in (1, 2) if ctx.has(i)]
    for i in bounds:
        _scalar(ctx, i, "numeric")
    ctx.same_dtype(0, *bounds)
    return [t]


def _along_axis(doc: str) -> Rule:
    def rule(ctx: InferContext) -> list[Type]:
        t = typed(ctx, 0, "float")
        if t.shape is not None:
            norm_axis(ctx, ctx.attr("axis"), len(t.shape))
        return [t]

    rule.__doc__ = doc
    return rule


op("LogSoftmax", attrs={"axis": AttrSpec(int, -1)})(
    _along_axis("log(softmax(x)) along ``axis``: x - max - log(sum(exp(x - max))).")
)
op("Hardmax", attrs={"axis": AttrSpec(int, -1)})(
    _along_axis("1 at the first largest entry along ``axis``, 0 elsewhere.")
)


@op("CumProd", inputs=2, attrs={"exclusive": AttrSpec(int, 0), "reverse": AttrSpec(int, 0)})
def _cumprod(ctx: InferContext) -> list[Type]:
    """Running products of ``x`` along the axis held by the integer scalar ``axis``; exclusive=1
    leaves each entry out of its own product, reverse=1 multiplies from the end."""
    return running(ctx, typed(ctx, 0, "numeric"))


@op("Det")
def _det(ctx: InferContext) -> list[Type]:
    """The determinant of each square matrix in the last two axes of a [*, M, M] tensor."""
    t = typed(ctx, 0, "float")
    if t.shape is None:
        return [t]
    if len(t.shape) < 2:
        raise ctx.error(f"input #0: expected [*, M, M] matrices, got {t}")
    m, n = t.shape[-2:]
    if isinstance(m, int) and isinstance(n, int) and m != n:
        raise ctx.error(f"input #0: matrices must be square, got {t}")
    return [t.with_shape(t.shape[:-2])]


@op("Einsum", inputs=(1, None), attrs={"equation": AttrSpec(str)})
def _einsum(ctx: InferContext) -> list[Type]:
    """Einstein summation by ``equation`` ('ij,jk->ik'): each term names an input's axes, labels
    missing from the output are summed over, '...' stands for broadcast axes. Without '->' the
    output is the broadcast axes, then the labels used once in ASCII order."""
    for i in range(len(ctx)):
        typed(ctx, i, "numeric")
    dt = ctx.same_dtype(*range(len(ctx)))
    terms, output = parse_einsum(ctx.attr("equation"), len(ctx), ctx.error)
    shapes = [ctx.tensor(i).shape for i in range(len(ctx))]
    if any(s is None for s in shapes):
        return [TensorType(dt, None)]
    labels: dict[str, Dim] = {}
    ellipses: list[tuple[Dim, ...]] = []
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        assert shape is not None
        letters = term.replace("...", "")
        extra = len(shape) - len(letters)
        if extra < 0 or (extra > 0 and "..." not in term):
            raise ctx.error(f"term '{term}' does not fit input #{i} of rank {len(shape)}")
        at = term.find("...")
        if at >= 0:
            ellipses.append(shape[at : at + extra])
            shape = shape[:at] + shape[at + extra :]
        for letter, d in zip(letters, shape, strict=True):
            labels[letter] = _same_label(ctx, letter, labels.get(letter, 1), d)
    broadcast = list(broadcast_dims(ctx, ellipses) or ())
    if "..." not in output and broadcast:
        raise ctx.error(f"equation '{ctx.attr('equation')}' has no '...' in its output")
    before, _, after = output.partition("...")
    dims = [labels[c] for c in before]
    if "..." in output:
        dims += broadcast
    dims += [labels[c] for c in after]
    return [TensorType(dt, dims)]


def _same_label(ctx: InferContext, letter: str, a: Dim, b: Dim) -> Dim:
    """The size of a label seen with sizes ``a`` and ``b``; a size of 1 broadcasts."""
    if a == 1 or a == b:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise ctx.error(f"label '{letter}' has two sizes, {a} and {b}")
    return UNKNOWN


def parse_einsum(equation: str, count: int, error: Any) -> tuple[list[str], str]:
    """The input terms and the output term of an einsum equation, spaces dropped and the implicit
    output spelled out; ``error(message)`` makes the exception raised for a malformed one."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise error(f"equation '{equation}' has {len(terms)} terms for {count} inputs")
    for term in [*terms, rhs]:
        rest = term.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in rest):
            raise error(f"equation '{equation}': bad term '{term}'")
    used = "".join(terms).replace("...", "")
    if arrow:
        unknown = sorted(set(rhs.replace("...", "")) - set(used))
        if unknown or len(set(rhs.replace("...", ""))) != len(rhs.replace("...", "")):
            raise error(f"equation '{equation}': output '{rhs}' repeats or invents a label")
        return terms, rhs
    once = sorted(c for c in set(used) if used.count(c) == 1)
    ellipsis = "..." if any("..." in t for t in terms) else ""
    return terms, ellipsis + "".join(once)


@op("Trilu", inputs=(1, 2), attrs={"upper": AttrSpec(int, 1)})
def _trilu(ctx: InferContext) -> list[Type]:
    """The upper (upper=1: column - row >= k) or lower (column - row <= k) triangle of each
    matrix in the last two axes, the rest zero; ``k`` is an optional int64 scalar (default 0)."""
    t = ctx.tensor(0)
    if t.rank is not None and t.rank < 2:
        raise ctx.error(f"input #0: expected [*, N, M] matrices, got {t}")
    if ctx.has(1):
        _scalar(ctx, 1, "int")
    return [t]


@op("EyeLike", attrs={"dtype": AttrSpec(DType, None), "k": AttrSpec(int, 0)})
def _eye_like(ctx: InferContext) -> list[Type]:
    """A matrix of ``input``'s shape with ones on diagonal ``k`` (above the main one if k > 0)
    and zeros elsewhere, of element type ``dtype`` (default: the input's)."""
    t = typed(ctx, 0, "any", rank=2)
    dt = ctx.attr("dtype") or t.dtype
    if dt not in _ADMITTED["any"][1]:
        raise ctx.error(f"attribute 'dtype': EyeLike cannot make {dt}")
    return [t.with_dtype(dt)]
