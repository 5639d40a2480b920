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


def _binop(op: str) -> Callable[[TensorLike, TensorLike], Tensor]:
    def fn(a: TensorLike, b: TensorLike) -> Tensor:
        return _binary(op, a, b)

    fn.__doc__ = f"Element-wise {op}, with NumPy broadcasting."
    return fn


neg, abs, sqrt, exp, log = (_unary(o) for o in ("Neg", "Abs", "Sqrt", "Exp", "Log"))
sigmoid, tanh, relu, logical_not = (_unary(o) for o in ("Sigmoid", "Tanh", "Relu", "Not"))
identity = _unary("Identity")
add, sub, mul, div, pow = (_binop(o) for o in ("Add", "Sub", "Mul", "Div", "Pow"))
equal, less, greater = (_binop(o) for o in ("Equal", "Less", "Greater"))
less_equal, greater_equal = _binop("LessOrEqual"), _binop("GreaterOrEqual")
logical_and, logical_or, logical_xor = (_binop(o) for o in ("And", "Or", "Xor"))
matmul = _binop("MatMul")


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
    return emit("Transpose", [as_tensor(x)], {} if perm is None else {"perm": tuple(perm)})


def squeeze(x: TensorLike, axes: Sequence[int] | None = None) -> Tensor:
    return emit("Squeeze", [as_tensor(x), None if axes is None else _ints(axes)])


def unsqueeze(x: TensorLike, axes: Sequence[int] | int) -> Tensor:
    return emit("Unsqueeze", [as_tensor(x), _ints([axes] if isinstance(axes, int) else axes)])


def concat(xs: Sequence[TensorLike], axis: int = 0) -> Tensor:
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
    idx = indices if isinstance(indices, Tensor) else constant(np.asarray(indices, np.int64))
    return emit("Gather", [as_tensor(x), idx], {"axis": axis})


def expand(x: TensorLike, shape: Sequence[int] | Tensor) -> Tensor:
    return emit("Expand", [as_tensor(x), _ints(shape)])


def shape_of(x: TensorLike) -> Tensor:
    """The shape of ``x`` as an int64 vector."""
    return emit("Shape", [as_tensor(x)])


def size(x: TensorLike) -> Tensor:
    return emit("Size", [as_tensor(x)])


def full(shape: Sequence[int] | Tensor, value: Any, dtype: DTypeLike = "float32") -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (ConstantOfShape)."""
    fill = np.asarray([value], dtype=_np(dtype))
    return emit("ConstantOfShape", [_ints(shape)], {"value": fill})


def _np(d: DTypeLike) -> Any:
    return dtype(d).numpy


def arange(start: TensorLike, limit: TensorLike, delta: TensorLike = 1) -> Tensor:
    s = as_tensor(start)
    return emit("Range", [s, as_tensor(limit, s.dtype), as_tensor(delta, s.dtype)])


def cast(x: TensorLike, to: DTypeLike) -> Tensor:
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
    return emit("ArgMax", [as_tensor(x)], {"axis": axis, "keepdims": int(keepdims)})


def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    attrs = {"exclusive": int(exclusive), "reverse": int(reverse)}
    return emit("CumSum", [as_tensor(x), constant(np.int64(axis))], attrs)
