"""Inline code for the ops loops spend their time in: one template per op, or None to call the
reference kernel.

A template sees the node, its resolved attributes and one ``Operand`` per input (the local that
holds it, its planned type, its value if a Constant made it) and returns one Python expression
per output. The expressions compute exactly what the reference kernels compute, on the same
NumPy functions in the same order, so results agree bit for bit; where that needs a fact the
plan does not have (a dtype the kernel widens, an axis of unknown size), the template declines.
Indexing that may fail (an index out of range) fails with a Python exception, which hands the
run to the reference for its error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ir.graph import Node
from ...ops.reduce import PREFIX_SUM_DTYPES
from ...ops.shape import reshape_dims, slice_bounds, split_sizes
from ...tensor.dtypes import DType
from ...tensor.numerics import NATIVE_FLOATS, accumulates_wide, accumulator_dtype
from ...tensor.types import TensorType, Type

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Operand:
    expr: str
    type: Type | None
    const: Array | None = None

    @property
    def tensor(self) -> TensorType | None:
        return self.type if isinstance(self.type, TensorType) else None

    @property
    def rank(self) -> int | None:
        t = self.tensor
        return None if t is None else t.rank

    def dim(self, axis: int) -> int | None:
        t = self.tensor
        if t is None or t.shape is None:
            return None
        d = t.shape[axis]
        return d if isinstance(d, int) else None

    def ints(self) -> list[int] | None:
        return None if self.const is None else [int(v) for v in self.const.reshape(-1)]


Bind = Callable[[Any, str], str]
"""``bind(obj, hint)``: a global name the generated code reads ``obj`` by."""
Template = Callable[[Node, dict[str, Any], list[Operand | None], Bind], list[str] | None]

_TEMPLATES: dict[str, Template] = {}

# The floats NumPy computes in directly (numerics.NATIVE_FLOATS): the reference widens the
# narrower ones (float16, bfloat16, the float8s, float4: numerics.WIDENED) to float32 first and
# rounds their float64 totals back through numerics.round_to, which these expressions do not, so
# the templates decline them and the reference kernel runs.
_FLOATS = NATIVE_FLOATS
_INTS = frozenset(
    {DType.int8, DType.int16, DType.int32, DType.int64}
    | {DType.uint8, DType.uint16, DType.uint32, DType.uint64}
)
_NUMBERS = _FLOATS | _INTS


def template(*ops: str) -> Callable[[Template], Template]:
    def register(fn: Template) -> Template:
        for name in ops:
            _TEMPLATES[name] = fn
        return fn

    return register


def inline(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    """The expressions computing ``node``'s outputs, or None to call its kernel."""
    fn = _TEMPLATES.get(node.op)
    return None if fn is None else fn(node, attrs, ins, bind)


def _dtypes(ins: Sequence[Operand | None], allowed: frozenset[DType]) -> bool:
    """All inputs present tensors of one dtype from ``allowed``."""
    types = [None if o is None else o.tensor for o in ins]
    if any(t is None for t in types):
        return False
    dtypes = {t.dtype for t in types if t is not None}
    return len(dtypes) == 1 and dtypes <= allowed


_BOOL = frozenset({DType.bool})
# op: (the dtypes all its inputs share, the expression over its inputs {0}, {1})
_SIMPLE: dict[str, tuple[frozenset[DType], str]] = {
    "Add": (_NUMBERS, "({0} + {1})"),
    "Sub": (_NUMBERS, "({0} - {1})"),
    "Mul": (_NUMBERS, "({0} * {1})"),
    "Div": (_FLOATS, "({0} / {1})"),  # integer division truncates: the kernel's job
    "Min": (_NUMBERS, "np.minimum({0}, {1})"),
    "Max": (_NUMBERS, "np.maximum({0}, {1})"),
    "Neg": (_NUMBERS, "(-{0})"),
    "Abs": (_NUMBERS, "np.abs({0})"),
    "Relu": (_NUMBERS, "np.maximum({0}, 0)"),
    "Sqrt": (_FLOATS, "np.sqrt({0})"),
    "Exp": (_FLOATS, "np.exp({0})"),
    "Log": (_FLOATS, "np.log({0})"),
    "Tanh": (_FLOATS, "np.tanh({0})"),
    "Sigmoid": (_FLOATS, "(1 / (1 + np.exp(-{0})))"),
    "Equal": (_NUMBERS | _BOOL, "({0} == {1})"),
    "Less": (_NUMBERS, "({0} < {1})"),
    "Greater": (_NUMBERS, "({0} > {1})"),
    "LessOrEqual": (_NUMBERS, "({0} <= {1})"),
    "GreaterOrEqual": (_NUMBERS, "({0} >= {1})"),
    "And": (_BOOL, "np.logical_and({0}, {1})"),
    "Or": (_BOOL, "np.logical_or({0}, {1})"),
    "Xor": (_BOOL, "np.logical_xor({0}, {1})"),
    "Not": (_BOOL, "np.logical_not({0})"),
}


@template(*_SIMPLE)
def _simple(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    allowed, form = _SIMPLE[node.op]
    arity = 2 if "{1}" in form else 1
    if len(ins) != arity or not _dtypes(ins, allowed):
        return None
    return [form.format(*(o.expr for o in ins if o is not None))]


@template("MatMul")
def _matmul(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    if not _dtypes(ins, _FLOATS):
        return None
    a, b = ins
    assert a is not None and b is not None
    # The reference's np.matmul, a stack of matrices included: one GEMM over all of a stack's
    # rows would sum in BLAS's other order for other sizes (OpenBLAS picks its kernels by shape).
    return [f"({_canonical(a, a.expr, bind)} @ {_canonical(b, b.expr, bind)})"]


def _canonical(o: Operand, expr: str, bind: Bind, transposed: bool = False) -> str:
    """``expr`` (``o``, transposed if so) as the reference's products take it, in rows
    (``reference.kernels.linalg.canonical``): a constant laid out once, here; anything else
    made C-contiguous at run time (a copy only where it is not)."""
    if o.const is not None:
        value = o.const.T if transposed else o.const
        contiguous = np.ascontiguousarray(value)
        contiguous.setflags(write=False)
        return bind(contiguous, "weights_t" if transposed else "weights")
    return f"np.ascontiguousarray({expr}.T)" if transposed else f"np.ascontiguousarray({expr})"


@template("Gemm")
def _gemm(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    parts = _gemm_parts(attrs, ins, bind)
    if parts is None:
        return None
    x, y, alpha, term = parts
    product = f"({x} @ {y})" if alpha is None else f"({alpha} * ({x} @ {y}))"
    return [product if term is None else f"({product} + {term})"]


def _gemm_parts(
    attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> tuple[str, str, str | None, str | None] | None:
    """Gemm as ``alpha * (x @ y) + term``: (x, y, alpha or None for 1, term or None), as the
    reference kernel computes it (unit factors skipped)."""
    present = [o for o in ins if o is not None]
    if not _dtypes(present, _FLOATS) or len(ins) < 2 or ins[0] is None or ins[1] is None:
        return None
    a, b = ins[0], ins[1]
    x = _canonical(a, a.expr, bind, bool(attrs["transA"]))
    y = _canonical(b, b.expr, bind, bool(attrs["transB"]))  # weights: laid out once, here
    alpha, beta = attrs["alpha"], attrs["beta"]
    factor = None if alpha == 1 else bind(alpha, "alpha")
    c = ins[2] if len(ins) > 2 else None
    if c is None:
        return x, y, factor, None
    return x, y, factor, c.expr if beta == 1 else f"({bind(beta, 'beta')} * {c.expr})"


@template("Clip")
def _clip(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    bounds = _clip_bounds(ins, bind)
    if bounds is None:
        return None
    x, lo, hi = bounds
    expr = x if lo is None else f"np.maximum({x}, {lo})"
    return [expr if hi is None else f"np.minimum({expr}, {hi})"]


def _clip_bounds(
    ins: list[Operand | None], bind: Bind
) -> tuple[str, str | None, str | None] | None:
    """Clip as the reference kernel computes it: np.maximum with the lower bound, then
    np.minimum with the upper, each a one-element constant of the data's (native) type; None
    where the bounds are not such constants or neither is given."""
    x = ins[0]
    if x is None or not _dtypes([x], _NUMBERS):
        return None
    bound: list[str | None] = []
    for o in (*ins[1:], None, None)[:2]:
        if o is None:
            bound.append(None)
            continue
        if o.const is None or o.const.size != 1 or not _dtypes([x, o], _NUMBERS):
            return None
        bound.append(bind(np.asarray(o.const).reshape(()), "bound"))
    lo, hi = bound
    return None if lo is None and hi is None else (x.expr, lo, hi)


@template("Where")
def _where(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    cond, x, y = ins
    if cond is None or not _dtypes([cond], frozenset({DType.bool})):
        return None
    if not _dtypes([x, y], _NUMBERS | {DType.bool}):
        return None
    assert x is not None and y is not None
    return [f"np.where({cond.expr}, {x.expr}, {y.expr})"]


def _axis(axis: int, rank: int | None) -> int | None:
    if rank is None or not -rank <= axis < rank:
        return None
    return axis + rank if axis < 0 else axis


def _index(rank: int, axis: int, item: str) -> str:
    """An indexing suffix selecting ``item`` on ``axis`` of a rank-``rank`` tensor."""
    return "[" + ", ".join([":"] * axis + [item]) + "]"


@template("Gather")
def _gather(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data, idx = ins
    if data is None or idx is None or idx.tensor is None or idx.rank != 0:
        return None
    if not idx.tensor.dtype.is_int:
        return None
    axis = _axis(attrs["axis"], data.rank)
    if axis is None or data.rank is None:
        return None
    # A scalar index selects one slice, a view; out of range is an IndexError (the reference
    # reports it).
    return [f"{data.expr}{_index(data.rank, axis, f'int({idx.expr})')}"]


@template("Slice")
def _slice(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data = ins[0]
    if data is None or data.rank is None or any(o is not None and o.const is None for o in ins[1:]):
        return None
    starts, ends = ins[1].ints(), ins[2].ints()  # type: ignore[union-attr]
    if starts is None or ends is None:
        return None
    axes = list(range(len(starts))) if len(ins) < 4 or ins[3] is None else ins[3].ints()
    steps = [1] * len(starts) if len(ins) < 5 or ins[4] is None else ins[4].ints()
    if axes is None or steps is None or not len(starts) == len(ends) == len(axes) == len(steps):
        return None
    index: list[slice] = [slice(None)] * data.rank
    for a, s, e, step in zip(axes, starts, ends, steps, strict=True):
        axis = _axis(a, data.rank)
        dim = None if axis is None else data.dim(axis)
        if axis is None or dim is None or step == 0:
            return None
        lo, hi, _ = slice_bounds(dim, s, e, step)
        index[axis] = slice(lo, None if hi < 0 else hi, step)
    return [f"{data.expr}[{bind(tuple(index), 'slice')}]"]


@template("Split")
def _split(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data = ins[0]
    if data is None or data.rank is None:
        return None
    axis = _axis(attrs["axis"], data.rank)
    dim = None if axis is None else data.dim(axis)
    if axis is None or dim is None:
        return None
    sizes_in = ins[1] if len(ins) > 1 else None
    if sizes_in is None:
        try:
            lengths = split_sizes(dim, attrs["num_outputs"])
        except (ValueError, TypeError, ZeroDivisionError):
            return None
    else:
        lengths = sizes_in.ints()  # type: ignore[assignment]
        if lengths is None or any(n < 0 for n in lengths) or sum(lengths) != dim:
            return None
    if len(lengths) != len(node.outputs):
        return None
    out, start = [], 0
    for n in lengths:
        out.append(f"{data.expr}{_index(data.rank, axis, f'{start}:{start + n}')}")
        start += n
    return out


@template("Concat")
def _concat(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    ranks = {o.rank for o in ins if o is not None}
    if any(o is None for o in ins) or len(ranks) != 1 or not _dtypes(ins, _NUMBERS | {DType.bool}):
        return None
    (rank,) = ranks
    axis = _axis(attrs["axis"], rank)
    if axis is None:
        return None
    items = ", ".join(o.expr for o in ins if o is not None)
    return [f"np.concatenate(({items},), axis={axis})"]


@template("Transpose")
def _transpose(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    (data,) = ins
    perm = attrs["perm"]
    if data is None or data.rank is None:
        return None
    if perm is None:
        return [f"{data.expr}.transpose()"]
    if sorted(perm) != list(range(data.rank)):
        return None
    return [f"{data.expr}.transpose({tuple(int(p) for p in perm)!r})"]


@template("Unsqueeze")
def _unsqueeze(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data, axes_in = ins
    axes = None if axes_in is None else axes_in.ints()
    if data is None or data.rank is None or axes is None:
        return None
    rank = data.rank + len(axes)
    normalized = {_axis(a, rank) for a in axes}
    if None in normalized or len(normalized) != len(axes):
        return None
    if rank == 0:  # a scalar and no axes: the scalar itself (``v[]`` is no Python)
        return [data.expr]
    items = ["None" if d in normalized else ":" for d in range(rank)]
    return [f"{data.expr}[{', '.join(items)}]"]


@template("Squeeze")
def _squeeze(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data = ins[0]
    axes_in = ins[1] if len(ins) > 1 else None
    if data is None or data.rank is None:
        return None
    if axes_in is None:
        axes = [d for d in range(data.rank) if data.dim(d) == 1]
        if any(data.dim(d) is None for d in range(data.rank)):
            return None
    else:
        listed = axes_in.ints()
        if listed is None:
            return None
        axes = [a for a in (_axis(x, data.rank) for x in listed) if a is not None]
        if len(axes) != len(listed) or any(data.dim(a) != 1 for a in axes):
            return None
    items = ["0" if d in axes else ":" for d in range(data.rank)]
    return [f"{data.expr}[{', '.join(items)}]" if items else data.expr]


@template("Reshape")
def _reshape(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    data, shape = ins
    target = None if shape is None else shape.ints()
    if data is None or target is None or data.tensor is None:
        return None
    src = data.tensor.shape
    try:
        dims = reshape_dims(src, target, bool(attrs["allowzero"]))
    except ValueError:
        return None
    if all(isinstance(d, int) for d in dims):
        return [f"{data.expr}.reshape({tuple(int(d) for d in dims)!r})"]
    if target.count(-1) <= 1 and 0 not in target:
        return [f"{data.expr}.reshape({tuple(target)!r})"]  # numpy's -1 is ONNX's -1
    return None


# -- in place: the same computations written into a preallocated buffer -----------------------
_UFUNCS = {
    "Add": "np.add",
    "Sub": "np.subtract",
    "Mul": "np.multiply",
    "Div": "np.divide",
    "Min": "np.minimum",
    "Max": "np.maximum",
    "Equal": "np.equal",
    "Less": "np.less",
    "Greater": "np.greater",
    "LessOrEqual": "np.less_equal",
    "GreaterOrEqual": "np.greater_equal",
    "And": "np.logical_and",
    "Or": "np.logical_or",
    "Xor": "np.logical_xor",
    "Not": "np.logical_not",
    "Neg": "np.negative",
    "Abs": "np.abs",
    "Sqrt": "np.sqrt",
    "Exp": "np.exp",
    "Log": "np.log",
    "Tanh": "np.tanh",
}


def inline_into(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], out: str, bind: Bind
) -> list[str] | None:
    """Statements computing ``node``'s one output into buffer ``out`` (of the output's static
    shape and dtype) exactly as ``inline`` computes it, or None if ``node`` has no such form.
    The buffer never overlaps an input (the buffer plan sees to it)."""
    if inline(node, attrs, ins, bind) is None:  # the same dtype conditions as the inline form
        return None
    args = ", ".join(o.expr for o in ins if o is not None)
    if node.op == "MatMul":
        a, b = ins
        assert a is not None and b is not None
        x, y = _canonical(a, a.expr, bind), _canonical(b, b.expr, bind)
        return [f"np.matmul({x}, {y}, out={out})"]
    if node.op in _UFUNCS and len(ins) == (1 if _UFUNCS[node.op] in _ONE_INPUT else 2):
        return [f"{_UFUNCS[node.op]}({args}, out={out})"]
    if node.op == "Relu":
        return [f"np.maximum({args}, 0, out={out})"]
    if node.op == "Clip":
        bounds = _clip_bounds(ins, bind)
        assert bounds is not None
        x, lo, hi = bounds
        lines = [] if lo is None else [f"np.maximum({x}, {lo}, out={out})"]
        if hi is not None:
            lines.append(f"np.minimum({x if lo is None else out}, {hi}, out={out})")
        return lines
    if node.op == "Gemm":
        parts = _gemm_parts(attrs, ins, bind)
        assert parts is not None
        x, y, alpha, term = parts
        if alpha is not None:
            return None
        lines = [f"np.matmul({x}, {y}, out={out})"]
        return lines if term is None else [*lines, f"np.add({out}, {term}, out={out})"]
    if node.op == "Sigmoid":  # 1 / (1 + exp(-x)), one rounding per step as inline's
        return [
            f"np.negative({args}, out={out})",
            f"np.exp({out}, out={out})",
            f"np.add(1, {out}, out={out})",
            f"np.divide(1, {out}, out={out})",
        ]
    return None


_ONE_INPUT = frozenset(
    {"np.logical_not", "np.negative", "np.abs", "np.sqrt", "np.exp", "np.log", "np.tanh"}
)


@template("CumSum")
def _cumsum(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    # The reference accumulates in numerics.accumulator_dtype and rounds (or wraps) back once:
    # floats in float64, converted first here (NumPy's casting accumulate is 4x slower), integers
    # in NumPy's default integer, which np.cumsum picks itself.
    data, axis_in = ins
    axis = None if axis_in is None else axis_in.ints()
    if data is None or data.rank is None or axis is None or len(axis) != 1:
        return None
    if attrs["exclusive"] or not _dtypes([data], _NUMBERS):
        return None
    a = _axis(axis[0], data.rank)
    if a is None:
        return None
    assert data.tensor is not None
    dtype = bind(data.tensor.dtype.numpy, "dtype")
    acc = accumulator_dtype(data.tensor.dtype)
    x = f"{data.expr}.astype(np.{acc.name})" if accumulates_wide(data.tensor.dtype) else data.expr
    if attrs["reverse"]:
        return [f"np.flip(np.cumsum(np.flip({x}, {a}), axis={a}), {a}).astype({dtype})"]
    return [f"np.cumsum({x}, axis={a}).astype({dtype})"]


@template("PrefixSum")
def _prefix_sum(
    node: Node, attrs: dict[str, Any], ins: list[Operand | None], bind: Bind
) -> list[str] | None:
    # The reference kernel's own call: np.cumsum in the input's type, one add per element.
    data = ins[0] if len(ins) == 1 else None
    if data is None or data.rank is None or not _dtypes([data], PREFIX_SUM_DTYPES):
        return None
    a = _axis(attrs["axis"], data.rank)
    if a is None:
        return None
    assert data.tensor is not None
    dtype = bind(data.tensor.dtype.numpy, "dtype")
    if attrs["reverse"]:
        return [f"np.flip(np.cumsum(np.flip({data.expr}, {a}), axis={a}, dtype={dtype}), {a})"]
    return [f"np.cumsum({data.expr}, axis={a}, dtype={dtype})"]
