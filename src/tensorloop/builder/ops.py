"""Ops as functions on builder tensors: ``tl.matmul``, ``tl.tanh``, ``tl.reduce_sum``, ..."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..tensor.dtypes import DTypeLike, dtype
from .tracing import Tensor, TensorLike, _binary, as_tensor, constant, emit, emit_node


def _unary(op: str) -> Callable[[TensorLike], Tensor]:
    def fn(x: TensorLike) -> Tensor:
        return emit(op, [as_tensor(x)])

    fn.__name__ = op.lower()
    fn.__doc__ = f"Element-wise {op}."
    return fn


def _binop(op: str, doc: str | None = None) -> Callable[[TensorLike, TensorLike], Tensor]:
    def fn(a: TensorLike, b: TensorLike) -> Tensor:
        return _binary(op, a, b)

    fn.__doc__ = doc or f"Element-wise {op}, with NumPy broadcasting."
    return fn


neg, abs, sqrt, exp, log = (_unary(o) for o in ("Neg", "Abs", "Sqrt", "Exp", "Log"))
sigmoid, tanh, relu, logical_not = (_unary(o) for o in ("Sigmoid", "Tanh", "Relu", "Not"))
identity = _unary("Identity")
add, sub, mul, div, pow = (_binop(o) for o in ("Add", "Sub", "Mul", "Div", "Pow"))
equal, less, greater = (_binop(o) for o in ("Equal", "Less", "Greater"))
less_equal, greater_equal = _binop("LessOrEqual"), _binop("GreaterOrEqual")
logical_and, logical_or, logical_xor = (_binop(o) for o in ("And", "Or", "Xor"))
matmul = _binop(
    "MatMul",
    "Matrix product ``a @ b`` (ONNX MatMul): NumPy matmul semantics, so 1-D operands act as "
    "vectors and leading dims broadcast as a batch.",
)


def minimum(*xs: TensorLike) -> Tensor:
    """Element-wise minimum of any number of tensors."""
    return _variadic("Min", xs)


def maximum(*xs: TensorLike) -> Tensor:
    """Element-wise maximum of any number of tensors."""
    return _variadic("Max", xs)


def _variadic(op: str, xs: Sequence[TensorLike]) -> Tensor:
    like = next((x.dtype for x in xs if isinstance(x, Tensor)), None)
    return emit(op, [as_tensor(x, like) for x in xs])


def where(cond: TensorLike, x: TensorLike, y: TensorLike) -> Tensor:
    """``x`` where ``cond`` holds, else ``y``."""
    like = x.dtype if isinstance(x, Tensor) else y.dtype if isinstance(y, Tensor) else None
    return emit("Where", [as_tensor(cond), as_tensor(x, like), as_tensor(y, like)])


def softmax(x: TensorLike, axis: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (default the last), the ONNX Softmax op."""
    return emit("Softmax", [as_tensor(x)], {"axis": axis})


def gemm(
    a: TensorLike,
    b: TensorLike,
    c: TensorLike | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    trans_a: bool = False,
    trans_b: bool = False,
) -> Tensor:
    """``alpha * op(a) @ op(b) + beta * c``."""
    attrs = {"alpha": alpha, "beta": beta, "transA": int(trans_a), "transB": int(trans_b)}
    ta = as_tensor(a)
    return emit("Gemm", [ta, as_tensor(b), None if c is None else as_tensor(c, ta.dtype)], attrs)


def _ints(values: Sequence[int] | TensorLike) -> Tensor:
    if isinstance(values, Tensor):
        return values
    return constant(np.asarray(values, dtype=np.int64))


def reshape(x: TensorLike, shape: Sequence[int] | Tensor) -> Tensor:
    """Reshape; ``0`` copies the input dim and ``-1`` is inferred."""
    return emit("Reshape", [as_tensor(x), _ints(shape)])


def transpose(x: TensorLike, perm: Sequence[int] | None = None) -> Tensor:
    """``x`` with its axes permuted: output axis ``i`` is input axis ``perm[i]``; no ``perm``
    reverses the axes (ONNX Transpose)."""
    return emit("Transpose", [as_tensor(x)], {} if perm is None else {"perm": tuple(perm)})


def squeeze(x: TensorLike, axes: Sequence[int] | None = None) -> Tensor:
    """``x`` without the size-1 dims at ``axes`` (negative counts from the end); no ``axes``
    drops every size-1 dim (ONNX Squeeze)."""
    return emit("Squeeze", [as_tensor(x), None if axes is None else _ints(axes)])


def unsqueeze(x: TensorLike, axes: Sequence[int] | int) -> Tensor:
    """``x`` with size-1 dims inserted so that they sit at ``axes`` of the output (an int: one
    axis; negative counts from the output's end) (ONNX Unsqueeze)."""
    return emit("Unsqueeze", [as_tensor(x), _ints([axes] if isinstance(axes, int) else axes)])


def concat(xs: Sequence[TensorLike], axis: int = 0) -> Tensor:
    """The tensors ``xs`` joined end to end along ``axis``; their other dims must agree (ONNX
    Concat)."""
    return emit("Concat", [as_tensor(x) for x in xs], {"axis": axis})


def split(x: TensorLike, sizes: Sequence[int] | int, axis: int = 0) -> list[Tensor]:
    """Split into ``sizes`` parts (an int: that many equal parts)."""
    if isinstance(sizes, int):
        return emit_node("Split", [as_tensor(x)], {"axis": axis, "num_outputs": sizes})
    return emit_node("Split", [as_tensor(x), _ints(sizes)], {"axis": axis})


def slice(
    x: TensorLike,
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
) -> Tensor:
    """ONNX Slice: negative indices count from the end; negative steps walk backwards."""
    ins: list[Tensor | None] = [as_tensor(x), _ints(starts), _ints(ends)]
    ins += [None if axes is None else _ints(axes), None if steps is None else _ints(steps)]
    return emit("Slice", ins)


def gather(x: TensorLike, indices: TensorLike, axis: int = 0) -> Tensor:
    """The entries of ``x`` along ``axis`` picked by the integer ``indices`` (negative counts
    from the end); that axis is replaced by the indices' dims (ONNX Gather)."""
    idx = indices if isinstance(indices, Tensor) else constant(np.asarray(indices, np.int64))
    return emit("Gather", [as_tensor(x), idx], {"axis": axis})


def expand(x: TensorLike, shape: Sequence[int] | Tensor) -> Tensor:
    """``x`` broadcast with ``shape`` by NumPy's rules (a 1 in ``shape`` keeps ``x``'s dim, so the
    result may be larger than ``shape``) (ONNX Expand)."""
    return emit("Expand", [as_tensor(x), _ints(shape)])


def shape_of(x: TensorLike) -> Tensor:
    """The shape of ``x`` as an int64 vector."""
    return emit("Shape", [as_tensor(x)])


def size(x: TensorLike) -> Tensor:
    """The number of elements of ``x`` as an int64 scalar (ONNX Size)."""
    return emit("Size", [as_tensor(x)])


def full(shape: Sequence[int] | Tensor, value: Any, dtype: DTypeLike = "float32") -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (ConstantOfShape)."""
    fill = np.asarray([value], dtype=_np(dtype))
    return emit("ConstantOfShape", [_ints(shape)], {"value": fill})


def _np(d: DTypeLike) -> Any:
    return dtype(d).numpy


def arange(start: TensorLike, limit: TensorLike, delta: TensorLike = 1) -> Tensor:
    """The 1-D tensor ``start, start + delta, ...`` up to but excluding ``limit`` (ONNX Range).
    The three scalars share one element type: Python numbers for ``limit`` and ``delta`` take
    ``start``'s."""
    s = as_tensor(start)
    return emit("Range", [s, as_tensor(limit, s.dtype), as_tensor(delta, s.dtype)])


def cast(x: TensorLike, to: DTypeLike) -> Tensor:
    """``x`` converted to element type ``to`` by ONNX's conversion rules (ONNX Cast)."""
    return emit("Cast", [as_tensor(x)], {"to": dtype(to)})


def pad(x: TensorLike, pads: Sequence[int], value: Any = 0, mode: str = "constant") -> Tensor:
    """Pad with ``pads = [begin_0, ..., begin_n, end_0, ..., end_n]`` (ONNX order)."""
    t = as_tensor(x)
    return emit("Pad", [t, _ints(pads), as_tensor(value, t.dtype)], {"mode": mode})


def _reduce(op: str) -> Callable[..., Tensor]:
    def fn(
        x: TensorLike, axes: Sequence[int] | int | None = None, keepdims: bool = False
    ) -> Tensor:
        ax = None if axes is None else _ints([axes] if isinstance(axes, int) else axes)
        return emit(op, [as_tensor(x), ax], {"keepdims": int(keepdims)})

    fn.__doc__ = f"{op} over ``axes`` (all axes when None)."
    return fn


reduce_sum, reduce_mean = _reduce("ReduceSum"), _reduce("ReduceMean")
reduce_max, reduce_min = _reduce("ReduceMax"), _reduce("ReduceMin")


def argmax(x: TensorLike, axis: int = 0, keepdims: bool = False) -> Tensor:
    """The int64 index of the largest entry along ``axis`` (the first one on ties), that axis
    dropped unless ``keepdims`` (ONNX ArgMax)."""
    return emit("ArgMax", [as_tensor(x)], {"axis": axis, "keepdims": int(keepdims)})


def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Running sums of ``x`` along ``axis`` (ONNX CumSum): ``exclusive`` leaves each entry out of
    its own sum; ``reverse`` sums from the end."""
    attrs = {"exclusive": int(exclusive), "reverse": int(reverse)}
    return emit("CumSum", [as_tensor(x), constant(np.int64(axis))], attrs)
