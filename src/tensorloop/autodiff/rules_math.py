"""Vector-Jacobian rules of the elementwise and math ops (arithmetic, activations,
reductions). Each rule returns one cotangent per input; inputs broadcast by an op get their
cotangent summed back to their shape (``Builder.sum_to``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..ir.graph import Node, Value, constant_ints, static_type
from ..ir.opdef import get_opdef
from ..tensor.types import TensorType
from .core import Builder, Rule, differentiable, vjp


def _ct(cts: list[Value | None]) -> Value:
    ct = cts[0]
    assert ct is not None
    return ct


@vjp("Identity")
def _identity(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [cts[0]]


@vjp("Add")
def _add(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, (x, y), where = _ct(cts), node.inputs, node.describe()
    assert x is not None and y is not None
    return [b.sum_to(ct, x, where), b.sum_to(ct, y, where)]


@vjp("Sub")
def _sub(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, (x, y), where = _ct(cts), node.inputs, node.describe()
    assert x is not None and y is not None
    return [b.sum_to(ct, x, where), b.sum_to(b.neg(ct), y, where)]


@vjp("Mul")
def _mul(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, (x, y), where = _ct(cts), node.inputs, node.describe()
    assert x is not None and y is not None
    return [b.sum_to(b.mul(ct, y), x, where), b.sum_to(b.mul(ct, x), y, where)]


@vjp("Div")
def _div(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, (x, y), where = _ct(cts), node.inputs, node.describe()
    assert x is not None and y is not None
    dx = b.op("Div", [ct, y])
    dy = b.neg(b.mul(dx, node.outputs[0]))  # -ct * x / y**2 = -(ct / y) * (x / y)
    return [b.sum_to(dx, x, where), b.sum_to(dy, y, where)]


@vjp("Neg")
def _neg(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [b.neg(_ct(cts))]


@vjp("Tanh")
def _tanh(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    y = node.outputs[0]
    one = b.const(1, y)
    return [b.mul(_ct(cts), b.op("Sub", [one, b.mul(y, y)]))]


@vjp("Sigmoid")
def _sigmoid(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    y = node.outputs[0]
    one = b.const(1, y)
    return [b.mul(_ct(cts), b.mul(y, b.op("Sub", [one, y])))]


@vjp("Exp")
def _exp(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [b.mul(_ct(cts), node.outputs[0])]


@vjp("Log")
def _log(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = node.inputs[0]
    assert x is not None
    return [b.op("Div", [_ct(cts), x])]


@vjp("MatMul")
def _matmul(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, (x, y), where = _ct(cts), node.inputs, node.describe()
    assert x is not None and y is not None
    rx, ry = b.rank(x, where), b.rank(y, where)
    if rx == 1 or ry == 1:
        xs = x if rx > 1 else b.op("Unsqueeze", [x, b.ints([0])])
        ys = y if ry > 1 else b.op("Unsqueeze", [y, b.ints([-1])])
        cs = ct
        if rx == 1:
            cs = b.op("Unsqueeze", [cs, b.ints([-2])])
        if ry == 1:
            cs = b.op("Unsqueeze", [cs, b.ints([-1])])
        dx = b.op("MatMul", [cs, _t(b, ys)])
        dy = b.op("MatMul", [_t(b, xs), cs])
        if rx == 1:
            dx = b.op("Squeeze", [dx, b.ints([-2])])
        if ry == 1:
            dy = b.op("Squeeze", [dy, b.ints([-1])])
        return [b.sum_to(dx, x, where), b.sum_to(dy, y, where)]
    dx = b.op("MatMul", [ct, _t(b, y)])
    dy = b.op("MatMul", [_t(b, x), ct])
    return [b.sum_to(dx, x, where), b.sum_to(dy, y, where)]


def _t(b: Builder, x: Value) -> Value:
    """``x`` with its last two axes swapped."""
    rank = b.rank(x, "MatMul")
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return b.op("Transpose", [x], perm=perm)


# -- helpers -----------------------------------------------------------------------------------
def _in(node: Node, k: int = 0) -> Value:
    v = node.inputs[k]
    assert v is not None
    return v


def _opt(node: Node, k: int) -> Value | None:
    """Optional input ``k`` of ``node``: None where it is left out."""
    return node.inputs[k] if k < len(node.inputs) else None


def _attrs(node: Node) -> dict[str, Any]:
    """``node``'s attributes with the op's defaults filled in."""
    return get_opdef(node.op).resolve_attrs(node.attrs, node.describe())


def _c(b: Builder, value: float, like: Value) -> Value:
    return b.const(value, like)


def _where(b: Builder, cond: Value, a: Value, other: Value) -> Value:
    return b.op("Where", [cond, a, other])


def _masked(b: Builder, cond: Value, ct: Value) -> Value:
    """``ct`` where ``cond`` holds, else 0 (never NaN where ``ct`` is off the mask)."""
    return _where(b, cond, ct, _c(b, 0, ct))


def _minus(b: Builder, x: Value, y: Value) -> Value:
    return b.op("Sub", [x, y])


def _over(b: Builder, x: Value, y: Value) -> Value:
    return b.op("Div", [x, y])


def _float_of(b: Builder, mask: Value, like: Value) -> Value:
    """A bool ``mask`` as 0s and 1s of ``like``'s dtype."""
    return b.op("Cast", [mask], to=like.tensor_type.dtype)


def _unary(fn: Callable[[Builder, Value, Value, dict[str, Any]], Value]) -> Rule:
    """The rule of a unary elementwise op from ``fn(b, x, y, attrs)``: dy/dx, elementwise."""

    def rule(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
        return [b.mul(_ct(cts), fn(b, _in(node), node.outputs[0], _attrs(node)))]

    return rule


def _square(b: Builder, x: Value) -> Value:
    return b.mul(x, x)


def _one_minus_square(b: Builder, x: Value) -> Value:
    """1 - x^2 as (1 - x)(1 + x): exact near |x| = 1, where 1 - x*x cancels."""
    one = _c(b, 1, x)
    return b.mul(_minus(b, one, x), b.op("Add", [one, x]))


def _rsqrt(b: Builder, x: Value) -> Value:
    return b.op("Reciprocal", [b.op("Sqrt", [x])])


# -- unary maths ------------------------------------------------------------------------------
# Each is dy/dx as a function of the input x and the output y (the output where it is the
# derivative, as for Exp, Tanh and Sigmoid above).
_DERIVATIVES: dict[str, Callable[[Builder, Value, Value, dict[str, Any]], Value]] = {
    # |x|' = sign(x): 0 at 0, as JAX and PyTorch have it
    "Abs": lambda b, x, y, a: b.op("Sign", [x]),
    "Sin": lambda b, x, y, a: b.op("Cos", [x]),
    "Cos": lambda b, x, y, a: b.neg(b.op("Sin", [x])),
    "Tan": lambda b, x, y, a: b.op("Add", [_c(b, 1, y), _square(b, y)]),
    "Sinh": lambda b, x, y, a: b.op("Cosh", [x]),
    "Cosh": lambda b, x, y, a: b.op("Sinh", [x]),
    "Asin": lambda b, x, y, a: _rsqrt(b, _one_minus_square(b, x)),
    "Acos": lambda b, x, y, a: b.neg(_rsqrt(b, _one_minus_square(b, x))),
    "Atan": lambda b, x, y, a: b.op("Reciprocal", [b.op("Add", [_c(b, 1, x), _square(b, x)])]),
    "Asinh": lambda b, x, y, a: _rsqrt(b, b.op("Add", [_square(b, x), _c(b, 1, x)])),
    # 1 / sqrt((x - 1)(x + 1)): exact near 1, where x*x - 1 cancels
    "Acosh": lambda b, x, y, a: _rsqrt(
        b, b.mul(_minus(b, x, _c(b, 1, x)), b.op("Add", [x, _c(b, 1, x)]))
    ),
    "Atanh": lambda b, x, y, a: b.op("Reciprocal", [_one_minus_square(b, x)]),
    # 2 / sqrt(pi) * exp(-x^2)
    "Erf": lambda b, x, y, a: b.mul(
        _c(b, 2 / math.sqrt(math.pi), x), b.op("Exp", [b.neg(_square(b, x))])
    ),
    "Reciprocal": lambda b, x, y, a: b.neg(_square(b, y)),
    # d log(1 + e^x) = sigmoid(x)
    "Softplus": lambda b, x, y, a: b.op("Sigmoid", [x]),
    # d x / (1 + |x|) = 1 / (1 + |x|)^2
    "Softsign": lambda b, x, y, a: b.op(
        "Reciprocal", [_square(b, b.op("Add", [_c(b, 1, x), b.op("Abs", [x])]))]
    ),
    # d x sigmoid(alpha x) = s + alpha x s (1 - s), s = sigmoid(alpha x)
    "Swish": lambda b, x, y, a: _swish(b, x, float(a["alpha"])),
    # d x tanh(sp(x)) = t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x))
    "Mish": lambda b, x, y, a: _mish(b, x),
}


def _swish(b: Builder, x: Value, alpha: float) -> Value:
    s = b.op("Sigmoid", [b.mul(x, _c(b, alpha, x))])
    rest = b.mul(b.mul(x, _c(b, alpha, x)), b.mul(s, _minus(b, _c(b, 1, s), s)))
    return b.op("Add", [s, rest])


def _mish(b: Builder, x: Value) -> Value:
    t = b.op("Tanh", [b.op("Softplus", [x])])
    rest = b.mul(b.mul(x, _minus(b, _c(b, 1, t), b.mul(t, t))), b.op("Sigmoid", [x]))
    return b.op("Add", [t, rest])


for _name, _fn in _DERIVATIVES.items():
    vjp(_name)(_unary(_fn))


@vjp("Sqrt")
def _sqrt(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    y = node.outputs[0]
    return [_over(b, _ct(cts), b.op("Add", [y, y]))]  # ct / (2 sqrt(x))


@vjp("Pow")
def _pow(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, p, where = _ct(cts), _in(node, 0), _in(node, 1), node.describe()
    y = node.outputs[0]
    dt = x.tensor_type.dtype
    pf = p if p.tensor_type.dtype == dt else b.op("Cast", [p], to=dt)
    zero = _c(b, 0, x)
    # d x^p / dx = p x^(p - 1), taken as 0 where p = 0 (as JAX: 0 * 0^-1 would be NaN)
    slope = b.mul(pf, b.op("Pow", [x, _minus(b, pf, _c(b, 1, x))]))
    slope = _where(b, b.op("Equal", [pf, zero]), zero, slope)
    dx = b.sum_to(b.mul(ct, slope), x, where)
    if not differentiable(p):
        return [dx, None]
    # d x^p / dp = x^p log x, with log 0 taken as 0 (as JAX: 0^p is flat in p for p > 0)
    safe = _where(b, b.op("Equal", [x, zero]), _c(b, 1, x), x)
    dp = b.mul(ct, b.mul(y, b.op("Log", [safe])))
    if p.tensor_type.dtype != dt:
        dp = b.op("Cast", [dp], to=p.tensor_type.dtype)
    return [dx, b.sum_to(dp, p, where)]


# -- piecewise activations --------------------------------------------------------------------
# At a kink the derivative is the one of the branch the forward takes there (as JAX's
# definitions give), except Relu, whose derivative at 0 is 0 (JAX and PyTorch agree).
@vjp("Relu")
def _relu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    return [_masked(b, b.op("Greater", [x, _c(b, 0, x)]), _ct(cts))]


@vjp("LeakyRelu")
def _leaky_relu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x = _ct(cts), _in(node)
    alpha = float(_attrs(node)["alpha"])
    neg = b.mul(ct, _c(b, alpha, ct))
    return [_where(b, b.op("GreaterOrEqual", [x, _c(b, 0, x)]), ct, neg)]  # 1 at 0


@vjp("PRelu")
def _prelu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, slope, where = _ct(cts), _in(node, 0), _in(node, 1), node.describe()
    below = b.op("Less", [x, _c(b, 0, x)])  # 1 at 0, the branch the forward takes
    dx = _where(b, below, b.mul(ct, slope), ct)
    dslope = _masked(b, below, b.mul(ct, x))
    return [dx, b.sum_to(dslope, slope, where)]


@vjp("ThresholdedRelu")
def _thresholded_relu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    alpha = float(_attrs(node)["alpha"])
    return [_masked(b, b.op("Greater", [x, _c(b, alpha, x)]), _ct(cts))]


@vjp("Elu", "Selu")
def _elu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """x > 0: 1, else alpha exp(x) (times gamma for Selu). exp(x) itself, not y + alpha, which
    cancels for x far below 0."""
    ct, x, attrs = _ct(cts), _in(node), _attrs(node)
    alpha = float(attrs["alpha"])
    gamma = float(attrs.get("gamma", 1.0))
    inner = b.mul(b.op("Exp", [x]), _c(b, alpha * gamma, x))
    outer = ct if node.op == "Elu" else b.mul(ct, _c(b, gamma, ct))
    return [_where(b, b.op("Greater", [x, _c(b, 0, x)]), outer, b.mul(ct, inner))]


@vjp("Celu")
def _celu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """x > 0: 1, else exp(x / alpha) (both 1 at 0)."""
    ct, x = _ct(cts), _in(node)
    alpha = float(_attrs(node)["alpha"])
    inner = b.op("Exp", [_over(b, x, _c(b, alpha, x))])
    return [_where(b, b.op("Greater", [x, _c(b, 0, x)]), ct, b.mul(ct, inner))]


@vjp("HardSigmoid")
def _hard_sigmoid(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """alpha where 0 < alpha x + beta < 1 (strictly: 0 on the flat parts and their ends, as
    PyTorch's hardsigmoid)."""
    ct, y = _ct(cts), node.outputs[0]
    alpha = float(_attrs(node)["alpha"])
    inside = _open_unit(b, y)
    return [_masked(b, inside, b.mul(ct, _c(b, alpha, ct)))]


def _open_unit(b: Builder, y: Value) -> Value:
    """Where 0 < y < 1."""
    return b.op("And", [b.op("Greater", [y, _c(b, 0, y)]), b.op("Less", [y, _c(b, 1, y)])])


@vjp("HardSwish")
def _hard_swish(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """x h(x), h = HardSigmoid(alpha=1/6, beta=1/2): h + x/6 where 0 < h < 1, else h (0 below
    -3, 1 above 3, and so at -3 and 3 too)."""
    ct, x = _ct(cts), _in(node)
    h = b.op("HardSigmoid", [x], alpha=1 / 6, beta=0.5)
    sixth = _masked(b, _open_unit(b, h), _over(b, x, _c(b, 6, x)))
    return [b.mul(ct, b.op("Add", [h, sixth]))]


@vjp("Shrink")
def _shrink(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """1 where |x| > lambd, else 0 (at ±lambd too: the forward's 0 branch)."""
    x = _in(node)
    lambd = float(_attrs(node)["lambd"])
    outside = b.op(
        "Or",
        [b.op("Less", [x, _c(b, -lambd, x)]), b.op("Greater", [x, _c(b, lambd, x)])],
    )
    return [_masked(b, outside, _ct(cts))]


@vjp("Gelu")
def _gelu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x = _ct(cts), _in(node)
    half, one = _c(b, 0.5, x), _c(b, 1, x)
    if _attrs(node)["approximate"] == "tanh":
        # y = x/2 (1 + t), t = tanh(k (x + c x^3)):
        # dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 c x^2)
        k, c = math.sqrt(2 / math.pi), 0.044715
        x2 = b.mul(x, x)
        inner = b.mul(_c(b, k, x), b.op("Add", [x, b.mul(_c(b, c, x), b.mul(x2, x))]))
        t = b.op("Tanh", [inner])
        dinner = b.mul(_c(b, k, x), b.op("Add", [one, b.mul(_c(b, 3 * c, x), x2)]))
        rest = b.mul(b.mul(half, x), b.mul(_minus(b, one, b.mul(t, t)), dinner))
        slope = b.op("Add", [b.mul(half, b.op("Add", [one, t])), rest])
        return [b.mul(ct, slope)]
    # y = x Phi(x): dy/dx = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    cdf = b.mul(half, b.op("Add", [one, b.op("Erf", [_over(b, x, _c(b, math.sqrt(2), x))])]))
    pdf = b.mul(
        b.op("Exp", [b.mul(b.mul(x, x), _c(b, -0.5, x))]),
        _c(b, 1 / math.sqrt(2 * math.pi), x),
    )
    return [b.mul(ct, b.op("Add", [cdf, b.mul(x, pdf)]))]


@vjp("Clip")
def _clip(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """min(hi, max(x, lo)). Each element's cotangent goes to one of x, lo, hi: to x where
    lo <= x <= hi (inclusive, as PyTorch's clamp), else to hi where hi < lo (hi wins, as in
    the forward) or x > hi, else to lo (x < lo). PyTorch gives neither bound a gradient where
    lo == hi and x < lo; here lo takes it."""
    ct, x, where = _ct(cts), _in(node), node.describe()
    lo, hi = _opt(node, 1), _opt(node, 2)
    conds = []
    if lo is not None:
        conds.append(b.op("GreaterOrEqual", [x, lo]))
    if hi is not None:
        conds.append(b.op("LessOrEqual", [x, hi]))
    if not conds:
        return [ct, None, None]
    inside = conds[0] if len(conds) == 1 else b.op("And", conds)
    out: list[Value | None] = [_masked(b, inside, ct), None, None]
    if lo is not None and differentiable(lo):
        below = b.op("Less", [x, lo])
        if hi is not None:
            below = b.op("And", [below, b.op("LessOrEqual", [lo, hi])])
        out[1] = b.sum_to(_masked(b, below, ct), lo, where)
    if hi is not None and differentiable(hi):
        above = b.op("Greater", [x, hi])
        if lo is not None:
            above = b.op("Or", [above, b.op("Less", [hi, lo])])
        out[2] = b.sum_to(_masked(b, above, ct), hi, where)
    return out


# -- variadic ----------------------------------------------------------------------------------
@vjp("Sum")
def _sum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, where = _ct(cts), node.describe()
    return [b.sum_to(ct, x, where) for x in map(_in_value, node.inputs)]


@vjp("Mean")
def _mean(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, where = _ct(cts), node.describe()
    share = _over(b, ct, _c(b, len(node.inputs), ct))
    return [b.sum_to(share, x, where) for x in map(_in_value, node.inputs)]


def _in_value(v: Value | None) -> Value:
    assert v is not None
    return v


@vjp("Max", "Min")
def _max_min(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """Each element's cotangent goes to the first input (in input order) equal to the result
    there, or the first NaN one where the result is NaN: ties are not split (unlike JAX's
    ``maximum``, which halves them), so exactly one input takes each element."""
    ct, y, where = _ct(cts), node.outputs[0], node.describe()
    xs = [_in_value(v) for v in node.inputs]
    if len(xs) == 1:
        return [ct]
    out: list[Value | None] = []
    taken: Value | None = None
    for k, x in enumerate(xs):
        hit = b.op("Or", [b.op("Equal", [x, y]), b.op("IsNaN", [x])])
        first = hit if taken is None else b.op("And", [hit, b.op("Not", [taken])])
        if k < len(xs) - 1:
            taken = hit if taken is None else b.op("Or", [taken, hit])
        out.append(b.sum_to(_masked(b, first, ct), x, where))
    return out


# -- running sums ------------------------------------------------------------------------------
@vjp("CumSum")
def _cumsum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """The transpose of a running sum is the running sum the other way (exclusive stays)."""
    attrs = _attrs(node)
    back = b.op(
        "CumSum",
        [_ct(cts), _in(node, 1)],
        exclusive=int(attrs["exclusive"]),
        reverse=1 - int(bool(attrs["reverse"])),
    )
    return [back, None]


@vjp("PrefixSum")
def _prefix_sum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    attrs = _attrs(node)
    back = b.op(
        "CumSum", [_ct(cts), b.ints(int(attrs["axis"]))], reverse=1 - int(bool(attrs["reverse"]))
    )
    return [back]


# -- reductions --------------------------------------------------------------------------------
# A reduction's rule works on its cotangent (and output) "kept": with the reduced axes as
# size-1 dims (``_kept``), which broadcasts against the input. No axes (or an empty constant
# list) reduces everything to a scalar, which broadcasts as it is, or with noop_with_empty_axes
# reduces nothing, where the output has the input's shape already. Axes known only at run time
# go through Unsqueeze, which leaves a value as it is for an empty list: right in both cases.
def _kept(b: Builder, node: Node, v: Value) -> Value:
    axes = _opt(node, 1)
    if _attrs(node)["keepdims"] or axes is None or _no_axes(axes):
        return v
    return b.op("Unsqueeze", [v, axes])


def _no_axes(axes: Value) -> bool:
    """Whether ``axes`` is known to list no axis: an empty constant, or typed of length 0."""
    t = static_type(axes)
    return constant_ints(axes) == [] or (t is not None and t.shape == (0,))


def _reduce_kept(b: Builder, node: Node, op: str, v: Value) -> Value:
    """``op`` over ``node``'s axes, as ``node`` reduces them, keeping them as size-1 dims."""
    axes = _opt(node, 1)
    noop = int(_attrs(node)["noop_with_empty_axes"])
    return b.op(op, [v] if axes is None else [v, axes], keepdims=1, noop_with_empty_axes=noop)


def _expand(b: Builder, v: Value, x: Value) -> Value:
    return b.op("Expand", [v, b.shape(x)])


@vjp("ReduceSum")
def _reduce_sum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    return [_expand(b, _kept(b, node, _ct(cts)), x), None]


@vjp("ReduceMean")
def _reduce_mean(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x, y = _in(node), node.outputs[0]
    spread = _expand(b, _kept(b, node, _ct(cts)), x)
    xt, yt = static_type(x), static_type(y)
    if xt is not None and yt is not None:
        n, m = _elements(xt), _elements(yt)
        count = _c(b, n / m if m else 1, x)  # the entries each output sums over
    else:
        dt = x.tensor_type.dtype
        count = _over(
            b,
            b.op("Cast", [b.op("Size", [x])], to=dt),
            b.op("Cast", [b.op("Size", [y])], to=dt),
        )
    return [_over(b, spread, count), None]


def _elements(t: TensorType) -> int:
    return math.prod(int(d) for d in t.shape or ())


@vjp("ReduceMax", "ReduceMin")
def _reduce_max_min(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """Shared equally among the entries equal to the result (JAX's convention for ties), NaN
    entries counting as equal to a NaN result."""
    x = _in(node)
    y = _kept(b, node, node.outputs[0])
    hit = b.op("Or", [b.op("Equal", [x, y]), b.op("IsNaN", [x])])
    count = _reduce_kept(b, node, "ReduceSum", _float_of(b, hit, x))
    share = _over(b, _kept(b, node, _ct(cts)), count)
    return [_masked(b, hit, share), None]  # Where broadcasts the share to x's shape


@vjp("ReduceProd")
def _reduce_prod(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """The product of the other entries, without dividing by a zero: with p the product of the
    non-zero entries, p / x where no entry is 0, p at the one 0 where there is one, else 0."""
    x = _in(node)
    ct = _kept(b, node, _ct(cts))
    zero, one = _c(b, 0, x), _c(b, 1, x)
    is_zero = b.op("Equal", [x, zero])
    p = _reduce_kept(b, node, "ReduceProd", _where(b, is_zero, one, x))
    zeros = _reduce_kept(b, node, "ReduceSum", _float_of(b, is_zero, x))
    at_zero = _where(b, b.op("Equal", [zeros, one]), p, zero)
    elsewhere = _where(b, b.op("Equal", [zeros, zero]), _over(b, p, x), zero)
    return [b.mul(_where(b, is_zero, at_zero, elsewhere), ct), None]


@vjp("ReduceL1")
def _reduce_l1(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    return [b.mul(b.op("Sign", [x]), _kept(b, node, _ct(cts))), None]  # sign(0) = 0


@vjp("ReduceL2")
def _reduce_l2(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """x / |x|, and 0 where the norm is 0 (as PyTorch's norm; JAX gives NaN there)."""
    x = _in(node)
    y = _kept(b, node, node.outputs[0])
    ct = _kept(b, node, _ct(cts))
    grad = b.mul(x, _over(b, ct, y))
    return [_where(b, b.op("Equal", [y, _c(b, 0, y)]), _c(b, 0, x), grad), None]


@vjp("ReduceSumSquare")
def _reduce_sum_square(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    return [b.mul(b.op("Add", [x, x]), _kept(b, node, _ct(cts))), None]


@vjp("ReduceLogSum")
def _reduce_log_sum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x = _in(node)
    total = _reduce_kept(b, node, "ReduceSum", x)
    return [_expand(b, _over(b, _kept(b, node, _ct(cts)), total), x), None]


@vjp("ReduceLogSumExp")
def _reduce_log_sum_exp(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """The softmax of x over the axes: exp(x - y)."""
    x = _in(node)
    y = _kept(b, node, node.outputs[0])
    return [b.mul(b.op("Exp", [_minus(b, x, y)]), _kept(b, node, _ct(cts))), None]
