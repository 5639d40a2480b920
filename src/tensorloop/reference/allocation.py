"""The size of what an op is about to allocate, for ops whose output size comes from data.

``output_shape(node, attrs, inputs)`` predicts, from run-time inputs and without allocating, the
shape of the largest output of the ops whose output can be far larger than their inputs (a
target shape read from a tensor, repeats, a range, pads, scales, a depth, broadcasting, a
product): every backend checks that against ``Limits.max_tensor_bytes`` before the kernel or
inline code runs (``check_outputs``). A prediction that fails (inputs the op will refuse) is
None: the kernel then reports its own error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.graph import Node
from ..tensor.types import TensorType
from .runtime import RunState

Shape = tuple[int, ...]
Predictor = Callable[[dict[str, Any], Sequence[Any]], Shape | None]

_PREDICTORS: dict[str, Predictor] = {}


def _predicts(*ops: str) -> Callable[[Predictor], Predictor]:
    def register(fn: Predictor) -> Predictor:
        for name in ops:
            _PREDICTORS[name] = fn
        return fn

    return register


def predicted(op: str) -> bool:
    """Whether ``op``'s output size is checked before it runs."""
    return op in _PREDICTORS


def output_shape(node: Node, attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    """The shape ``node`` would allocate for its largest output on ``inputs``, or None."""
    fn = _PREDICTORS.get(node.op)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            shape = fn(attrs, inputs)
    except Exception:  # inputs the kernel will refuse: its error names the fault
        return None
    return None if shape is None else tuple(max(int(d), 0) for d in shape)


def check_outputs(
    state: RunState, node: Node, attrs: dict[str, Any], inputs: Sequence[Any]
) -> None:
    """Refuse to run ``node`` if its output would pass ``state.limits`` (``ResourceLimitError``
    naming the node, the requested shape and bytes, and the limit)."""
    shape = output_shape(node, attrs, inputs)
    if shape is None:
        return
    t = node.outputs[0].type if node.outputs else None
    dtype = t.dtype if isinstance(t, TensorType) else None
    state.check_tensor(shape, dtype, f"{node.describe()} output #0")


def _shape(x: Any) -> Shape:
    return tuple(np.shape(x))


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _broadcast(*shapes: Sequence[int]) -> Shape:
    """NumPy broadcasting of ``shapes``, unchecked (a mismatch is the kernel's to report)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, d in enumerate(s, rank - len(s)):
            out[k] = out[k] if d == 1 else (d if out[k] == 1 else max(out[k], d))
    return tuple(out)


@_predicts(
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Min", "Max", "Sum", "Mean", "Where", "Equal",
    "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitShift",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "PRelu", "StringConcat",
)  # fmt: skip
def _broadcasting(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _broadcast(*(_shape(x) for x in inputs if x is not None))


@_predicts("ConstantOfShape")
def _constant_of_shape(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return tuple(_ints(inputs[0]))


@_predicts("Expand")
def _expand(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _broadcast(_shape(inputs[0]), _ints(inputs[1]))


@_predicts("Tile")
def _tile(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, repeats = _shape(inputs[0]), _ints(inputs[1])
    return tuple(d * r for d, r in zip(x, repeats, strict=False))


@_predicts("Range")
def _range(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    start, limit, delta = (float(np.asarray(x).reshape(-1)[0]) for x in inputs[:3])
    if delta == 0 or not all(map(math.isfinite, (start, limit, delta))):
        return None
    return (max(math.ceil((limit - start) / delta), 0),)


@_predicts("Pad")
def _pad(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x = list(_shape(inputs[0]))
    pads = _ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else []
    axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else range(len(x))
    axes = [a + len(x) if a < 0 else a for a in axes]
    if len(pads) != 2 * len(axes):
        return None
    for k, a in enumerate(axes):
        x[a] += pads[k] + pads[k + len(axes)]
    return tuple(x)


@_predicts("Resize", "Upsample")
def _resize(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x = _shape(inputs[0])
    sizes = inputs[3] if len(inputs) > 3 else None
    if sizes is not None and np.size(sizes):
        target = _ints(sizes)
        return tuple(target) if len(target) == len(x) else None
    scales = inputs[2] if len(inputs) > 2 else (inputs[1] if len(inputs) == 2 else None)
    if scales is None or not np.size(scales):
        return None
    factors = [float(v) for v in np.asarray(scales).reshape(-1)]
    if len(factors) != len(x) or not all(map(math.isfinite, factors)):
        return None
    return tuple(math.floor(d * f) for d, f in zip(x, factors, strict=True))


@_predicts("OneHot")
def _one_hot(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return (*_shape(inputs[0]), abs(int(np.asarray(inputs[1]).reshape(-1)[0])))


@_predicts("MatMul", "MatMulInteger")
def _matmul(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    a, b = _shape(inputs[0]), _shape(inputs[1])
    if len(a) < 2 or len(b) < 2:
        return None
    return (*_broadcast(a[:-2], b[:-2]), a[-2], b[-1])


@_predicts("Gemm")
def _gemm(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    a, b = _shape(inputs[0]), _shape(inputs[1])
    if len(a) != 2 or len(b) != 2:
        return None
    return (a[0] if not attrs.get("transA") else a[1], b[1] if not attrs.get("transB") else b[0])


@_predicts("Concat")
def _concat(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    shapes = [_shape(x) for x in inputs if x is not None]
    if not shapes or not shapes[0]:
        return None
    axis = int(attrs.get("axis", 0))
    axis = axis + len(shapes[0]) if axis < 0 else axis
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes if len(s) > axis)
    return tuple(out)


@_predicts("Gather")
def _gather(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    data, indices = _shape(inputs[0]), _shape(inputs[1])
    if not data:
        return None
    axis = int(attrs.get("axis", 0))
    axis = axis + len(data) if axis < 0 else axis
    return (*data[:axis], *indices, *data[axis + 1 :])


@_predicts("EyeLike", "RandomNormalLike", "RandomUniformLike")
def _like(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _shape(inputs[0])


@_predicts("HannWindow", "HammingWindow", "BlackmanWindow")
def _window(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return (int(np.asarray(inputs[0]).reshape(-1)[0]),)


@_predicts("MelWeightMatrix")
def _mel(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    bins, length = (int(np.asarray(x).reshape(-1)[0]) for x in inputs[:2])
    return (length // 2 + 1, bins)


@_predicts("CenterCropPad")
def _crop_pad(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x, target = list(_shape(inputs[0])), _ints(inputs[1])
    axes = attrs.get("axes") or range(len(x))
    axes = [a + len(x) if a < 0 else a for a in axes]
    if len(axes) != len(target):
        return None
    for a, t in zip(axes, target, strict=True):
        x[a] = t
    return tuple(x)


@_predicts("MaxUnpool")
def _max_unpool(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    if len(inputs) > 2 and inputs[2] is not None:
        return tuple(_ints(inputs[2]))
    return None


@_predicts("Col2Im")
def _col2im(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x, image, block = _shape(inputs[0]), _ints(inputs[1]), _ints(inputs[2])
    return (x[0], x[1] // max(math.prod(block), 1), *image) if len(x) >= 2 else None


__all__ = ["check_outputs", "output_shape", "predicted"]
