"""The size of what an op is about to allocate, for ops whose output size comes from data.

``output_shapes(node, attrs, inputs)`` predicts, from run-time inputs and without allocating,
the shape of each output of the ops whose output can be far larger than their inputs (a target
shape read from a tensor, repeats, a range, pads, scales, a depth, an equation, strides and
kernels, broadcasting, a product, a reduction over an empty axis): every backend checks those
against ``Limits.max_tensor_bytes`` before the kernel or inline code runs (``check_outputs``).
A prediction that fails (inputs the op will refuse) is None: the kernel then reports its own
error. ``output_bytes`` is the total of a prediction, for a budget of a whole run.

Every registered op is in one of four sets, and ``tests/reference/test_allocation_coverage.py``
walks the op registry to keep it so (and checks each claim on the ops' test cases):

- predicted (``predicted(op)``): each output's shape exactly, before the kernel runs. A few ops
  with data-dependent outputs (NMS rows, Unique's values) predict only some outputs (None for
  the others) and are also in ``BOUNDED_BY_INPUTS``, which then bounds the rest;
- ``BOUNDED_BY_INPUTS``: the outputs (those not predicted) take at most ``bound_factor(op)``
  times the bytes of the inputs, plus ``BOUND_SLACK`` (a shape vector, a count, a scalar);
- ``CONTROL_FLOW``: Loop and If, whose bodies' ops are accounted one by one;
- ``HELD``: ops that allocate nothing, handing out a tensor already held (a Constant's value,
  checked at load; a variable's stored value).

Bytes are counted as ``limits.nbytes`` counts them: 8 a string element (the characters of
strings are not counted anywhere).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..ir.graph import Node, Value
from ..ir.opdef import infer_types
from ..limits import nbytes
from ..ops.image import resize_plan
from ..ops.image_codec import image_header
from ..ops.math import parse_einsum
from ..ops.philox import multinomial_dims, uniform_dims
from ..ops.random_std import drawn_dims, sampled_dims
from ..ops.shape import range_length, range_stash
from ..ops.signal import dft_axis, dft_length
from ..ops.trees import ensemble_outputs, ensemble_rows
from ..ops.window import transpose_out_shape, window
from ..tensor.dtypes import DType, from_numpy
from ..tensor.types import TensorType
from .runtime import RunState

Shape = tuple[int, ...]
Prediction = Shape | list[Shape | None] | None
"""A predictor's answer: the one output's shape (of output #0), or a shape (None: not
predicted) per output, or None where the inputs are ones the kernel will refuse."""
Predictor = Callable[[dict[str, Any], Sequence[Any]], Prediction]

_PREDICTORS: dict[str, Predictor] = {}


def _predicts(*ops: str) -> Callable[[Predictor], Predictor]:
    def register(fn: Predictor) -> Predictor:
        for name in ops:
            _PREDICTORS[name] = fn
        return fn

    return register


CONTROL_FLOW = frozenset({"Loop", "If"})
"""Ops that run bodies: their own outputs are their bodies' values (each op in a body is
predicted or bounded when it runs), and the loops' stacked outputs are counted against
``Limits.max_stacked_bytes`` as they grow."""

HELD = frozenset({"Constant", "ReadVariable"})
"""Ops that allocate nothing: a Constant's value (checked against the limits at load) and a
variable's stored value (given by the caller or stored by Assign from a tensor of a run)."""

BOUND_FACTOR = 8
"""The bytes a bounded op's outputs may take per byte of its inputs: a cast from a 1-byte type
(bool, int8, float8) to an 8-byte one (int64, float64, a string pointer) multiplies by 8."""

BOUND_SLACK = 1024
"""Bytes a bounded op may add whatever its inputs: a shape vector (8 bytes a dim, at most
``max_rank`` = 64 dims by default), a count, a scalar statistic, an empty string."""

BOUNDED_BY_INPUTS = frozenset(
    {
        # elementwise, one output of the input's shape (a dtype at most 8 times as wide)
        "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceil", "Celu",
        "Clip", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish",
        "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal", "Relu",
        "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign",
        "Sqrt", "Swish", "Tan", "Tanh", "ThresholdedRelu", "Binarizer", "RegexFullMatch",
        "LabelEncoder", "Cast", "CastLike", "BitCast", "QuantizeLinear", "DequantizeLinear",
        "DynamicQuantizeLinear", "RotaryEmbedding", "SwiGLU", "Trilu", "Dropout",
        "RandomUniformLike", "RandomNormalLike", "Bernoulli",  # ops/random_std.py
        # along an axis, or per matrix, keeping the input's shape
        "Softmax", "LogSoftmax", "Hardmax", "CumSum", "CumProd", "PrefixSum", "Inverse",
        "BatchNormalization", "GroupNormalization", "InstanceNormalization", "LRN",
        "LpNormalization", "MeanVarianceNormalization", "RMSNormalization",
        "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "Adagrad", "Adam", "Momentum",
        # the input's elements, rearranged, a part of them, or a copy with some replaced
        "Identity", "Check", "Assign", "Flatten", "Reshape", "Squeeze", "Unsqueeze",
        "Transpose", "Slice", "Split", "DepthToSpace", "SpaceToDepth", "Compress",
        "ReverseSequence", "GatherElements", "ScatterElements", "ScatterND", "TensorScatter",
        "StringNormalizer", "StringTensorPack",
        # sizes: a shape vector or a count
        "Shape", "Size", "SequenceLength", "OptionalHasElement",
        # sequences and optionals: the tensors they hold
        "SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt",
        "ConcatFromSequence", "SplitToSequence", "Optional", "OptionalGetElement",
        # data-dependent rows, at most one a score or an input slice (the outputs of
        # MulticlassNms, MatrixNms and Unique an empty input could make large are predicted)
        "GenerateProposals", "NonMaxSuppression", "NmsRotated", "MulticlassNms", "MatrixNms",
        "Unique",
    }
)  # fmt: skip
"""Ops whose outputs (those not predicted) take at most ``bound_factor(op)`` times their
inputs' bytes, plus ``BOUND_SLACK``: no target shape, depth, pad or product of theirs comes from
data or attributes, and no output outgrows an empty input."""

WIDER_BOUNDS: Mapping[str, int] = {
    # Rows of (batch, class, box) int64 and (batch, class, score) float64: 48 bytes a row, at
    # most one row a score, which may be a 1-byte float8.
    "NonMaxSuppression": 48,
    # Rows of int64 indices [3] and scores [3] of the scores' type: 24 + 3 bytes a 1-byte score.
    "NmsRotated": 27,
    # Rows [6] of the boxes' type and their int64 index: 6 + 8 bytes a 1-byte score.
    "MulticlassNms": 14,
    "MatrixNms": 14,
    # The distinct values (at most the input) and their first index and count (int64 each, at
    # most one a byte of input); the inverse indices, one an input slice, are predicted.
    "Unique": 17,
}
"""``bound_factor`` of the bounded ops whose outputs may pass ``BOUND_FACTOR`` times their
inputs' bytes: each a reviewed worst case."""


def predicted(op: str) -> bool:
    """Whether (some of) ``op``'s outputs have their size checked before it runs."""
    return op in _PREDICTORS


def bound_factor(op: str) -> int | None:
    """How many times its inputs' bytes the outputs of ``op`` that are not predicted may take
    (plus ``BOUND_SLACK``), or None if ``op`` is not in ``BOUNDED_BY_INPUTS``."""
    if op not in BOUNDED_BY_INPUTS:
        return None
    return WIDER_BOUNDS.get(op, BOUND_FACTOR)


def output_shapes(
    node: Node, attrs: dict[str, Any], inputs: Sequence[Any]
) -> list[Shape | None] | None:
    """The shape of each output ``node`` would allocate on ``inputs`` (None for an output not
    predicted), or None if its op is not predicted or the kernel will refuse these inputs."""
    fn = _PREDICTORS.get(node.op)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            got = fn(attrs, inputs)
    except Exception:  # inputs the kernel will refuse: its error names the fault
        return None
    if got is None:
        return None
    shapes = got if isinstance(got, list) else [got]
    count = len(node.outputs)
    shapes = [*shapes[:count], *[None] * (count - len(shapes))]
    return [None if s is None else tuple(max(int(d), 0) for d in s) for s in shapes]


def _dtype(value: Value) -> DType | None:
    t = value.type
    return t.dtype if isinstance(t, TensorType) else None


def output_bytes(node: Node, attrs: dict[str, Any], inputs: Sequence[Any]) -> int | None:
    """The bytes of ``node``'s predicted outputs on ``inputs`` together (``limits.nbytes``), or
    None if nothing is predicted."""
    shapes = output_shapes(node, attrs, inputs)
    if shapes is None or all(s is None for s in shapes):
        return None
    return sum(
        nbytes(s, _dtype(v)) for s, v in zip(shapes, node.outputs, strict=True) if s is not None
    )


def output_shape(node: Node, attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    """The shape ``node`` would allocate for its largest predicted output on ``inputs``, or
    None."""
    shapes = output_shapes(node, attrs, inputs)
    sized = [
        (nbytes(s, _dtype(v)), s)
        for s, v in zip(shapes or (), node.outputs, strict=True)
        if s is not None
    ]
    return max(sized, key=lambda pair: pair[0])[1] if sized else None


ROOM_CHECKED = 1 << 16
"""Predicted outputs of more bytes than this are checked against the bytes the run has left
(``Limits.max_run_bytes``) before the op runs; smaller ones as they are made."""


def check_outputs(
    state: RunState, node: Node, attrs: dict[str, Any], inputs: Sequence[Any]
) -> None:
    """Refuse to run ``node`` if one of its predicted outputs would pass ``state.limits``
    (``ResourceLimitError`` naming the node and output, the requested shape and bytes, and the
    limit)."""
    shapes = output_shapes(node, attrs, inputs)
    if shapes is None:
        return
    limits, total = state.limits, 0
    for k, (shape, value) in enumerate(zip(shapes, node.outputs, strict=True)):
        if shape is None:
            continue
        dtype = _dtype(value)
        size = nbytes(shape, dtype)
        if size > limits.max_tensor_bytes or len(shape) > limits.max_rank:
            state.check_tensor(shape, dtype, f"{node.describe()} output #{k}")  # raises
        total += size
    if total > ROOM_CHECKED:  # smaller outputs are counted as they are made (RunState.hold)
        state.check_room(total, f"{node.describe()}'s outputs")


def _shape(x: Any) -> Shape:
    return tuple(np.shape(x))


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _int(x: Any) -> int:
    """The one value of a scalar (or one-element) input."""
    (value,) = np.asarray(x).reshape(-1)
    return int(value)


def _given(inputs: Sequence[Any], index: int) -> bool:
    return index < len(inputs) and inputs[index] is not None


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is outside rank {rank}")
    return axis + rank if axis < 0 else axis


def _broadcast(*shapes: Sequence[int]) -> Shape:
    """NumPy broadcasting of ``shapes``, unchecked (a mismatch is the kernel's to report)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, d in enumerate(s, rank - len(s)):
            out[k] = out[k] if d == 1 else (d if out[k] == 1 else max(out[k], d))
    return tuple(out)


# --- Target shapes, repeats, ranges and pads read from data -----------------------------------


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
def _range(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    # As the kernel counts: in the inputs' type (float16 and bfloat16 in their stash type), in
    # Python ints for integers, so that no count of an int64 range is rounded.
    start, limit, delta = (np.asarray(x).reshape(()) for x in inputs[:3])
    stash = range_stash(from_numpy(start), int(attrs.get("stash_type", 1))).numpy
    return (range_length(*(np.asarray(v, stash) for v in (start, limit, delta))),)


@_predicts("Pad")
def _pad(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x = list(_shape(inputs[0]))
    pads = _ints(inputs[1]) if _given(inputs, 1) else []
    axes = _ints(inputs[3]) if _given(inputs, 3) else range(len(x))
    axes = [a + len(x) if a < 0 else a for a in axes]
    if len(pads) != 2 * len(axes):
        return None
    for k, a in enumerate(axes):
        x[a] += pads[k] + pads[k + len(axes)]
    return tuple(x)


@_predicts("Resize")
def _resize(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    # Exactly one of scales (#2) and sizes (#3) is given, an empty tensor counting as absent;
    # on the listed axes, under keep_aspect_ratio_policy, as the kernel resizes.
    x = _shape(inputs[0])
    scales = inputs[2] if _given(inputs, 2) and np.size(inputs[2]) else None
    sizes = inputs[3] if _given(inputs, 3) and np.size(inputs[3]) else None
    if (scales is None) == (sizes is None):
        raise ValueError("give exactly one of scales and sizes")
    axes = attrs.get("axes")
    listed = [_axis(a, len(x)) for a in (range(len(x)) if axes is None else axes)]
    factors = None if scales is None else [float(v) for v in np.asarray(scales).reshape(-1)]
    out, _ = resize_plan(
        x,
        listed,
        factors,
        None if sizes is None else _ints(sizes),
        attrs.get("keep_aspect_ratio_policy", "stretch"),
    )
    return tuple(out)


@_predicts("OneHot")
def _one_hot(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    indices = _shape(inputs[0])
    axis = int(attrs.get("axis", -1))
    axis = _axis(axis, len(indices) + 1)
    return (*indices[:axis], _int(inputs[1]), *indices[axis:])


@_predicts("EyeLike")
def _like(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _shape(inputs[0])


@_predicts("HannWindow", "HammingWindow", "BlackmanWindow")
def _window(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return (_int(inputs[0]),)


@_predicts("MelWeightMatrix")
def _mel(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    bins, length = (_int(x) for x in inputs[:2])
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


# --- Products: the output has dims of several inputs --------------------------------------------


def _matmul_shape(a: Shape, b: Shape) -> Shape:
    """NumPy's ``a @ b``: a 1-D operand gains a unit axis, dropped from the result."""
    if not a or not b:
        raise ValueError("matmul of a scalar")
    sa = (1, *a) if len(a) == 1 else a
    sb = (*b, 1) if len(b) == 1 else b
    rows = (sa[-2],) if len(a) > 1 else ()
    cols = (sb[-1],) if len(b) > 1 else ()
    return (*_broadcast(sa[:-2], sb[:-2]), *rows, *cols)


@_predicts("MatMul", "MatMulInteger")
def _matmul(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _matmul_shape(_shape(inputs[0]), _shape(inputs[1]))


@_predicts("QLinearMatMul")
def _qlinear_matmul(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return _matmul_shape(_shape(inputs[0]), _shape(inputs[3]))


@_predicts("Gemm")
def _gemm(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    a, b = _shape(inputs[0]), _shape(inputs[1])
    if len(a) != 2 or len(b) != 2:
        return None
    return (a[0] if not attrs.get("transA") else a[1], b[1] if not attrs.get("transB") else b[0])


@_predicts("Einsum")
def _einsum(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    # Each label's size (a size of 1 broadcasts), the '...' axes broadcast together.
    def refuse(message: str) -> ValueError:
        return ValueError(message)

    terms, output = parse_einsum(attrs["equation"], len(inputs), refuse)
    labels: dict[str, int] = {}
    ellipses: list[Shape] = []
    for term, x in zip(terms, inputs, strict=True):
        shape = _shape(x)
        letters = term.replace("...", "")
        extra = len(shape) - len(letters)
        at = term.find("...")
        if extra < 0 or (extra and at < 0):
            raise ValueError(f"term '{term}' does not fit a rank of {len(shape)}")
        if at >= 0:
            ellipses.append(shape[at : at + extra])
            shape = shape[:at] + shape[at + extra :]
        for letter, d in zip(letters, shape, strict=True):
            labels[letter] = d if labels.get(letter, 1) == 1 else labels[letter]
    before, dots, after = output.partition("...")
    broadcast = _broadcast(*ellipses) if dots else ()
    return (*(labels[c] for c in before), *broadcast, *(labels[c] for c in after))


@_predicts("Concat")
def _concat(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    shapes = [_shape(x) for x in inputs if x is not None]
    if not shapes or not shapes[0]:
        return None
    axis = _axis(int(attrs.get("axis", 0)), len(shapes[0]))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes if len(s) > axis)
    return tuple(out)


@_predicts("Gather")
def _gather(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    data, indices = _shape(inputs[0]), _shape(inputs[1])
    if not data:
        return None
    axis = _axis(int(attrs.get("axis", 0)), len(data))
    return (*data[:axis], *indices, *data[axis + 1 :])


@_predicts("GatherND")
def _gather_nd(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    data, indices = _shape(inputs[0]), _shape(inputs[1])
    b = int(attrs.get("batch_dims", 0))
    return (*indices[:-1], *data[b + indices[-1] :])


@_predicts("ArrayFeatureExtractor")
def _array_feature_extractor(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, n = _shape(inputs[0]), int(np.size(inputs[1]))
    return (1, n) if len(x) == 1 else (*x[:-1], n)


@_predicts("AffineGrid")
def _affine_grid(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    size = _ints(inputs[1])
    return (size[0], *size[2:], len(size) - 2)


@_predicts("GridSample")
def _grid_sample(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, grid = _shape(inputs[0]), _shape(inputs[1])
    return (x[0], x[1], *grid[1:-1])


# --- Sliding windows: strides, pads, dilations and kernels from attributes --------------------


def _windowed(attrs: dict[str, Any], x: Shape, channels: int, kernel: Sequence[int]) -> Shape:
    """(N, channels, *spatial out) of a window of ``kernel`` sliding over ``x``."""
    if len(kernel) != len(x) - 2:
        raise ValueError(f"a kernel of {len(kernel)} dims over {x}")
    win = window(attrs, kernel)
    return (x[0], channels, *(win.along(i, d)[0] for i, d in enumerate(x[2:])))


def _conv_kernel(attrs: dict[str, Any], w: Shape) -> list[int]:
    given = attrs.get("kernel_shape")
    return [int(v) for v in given] if given is not None else list(w[2:])


@_predicts("Conv", "ConvInteger", "DeformConv")
def _conv(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, w = _shape(inputs[0]), _shape(inputs[1])
    return _windowed(attrs, x, w[0], _conv_kernel(attrs, w))


@_predicts("QLinearConv")
def _qlinear_conv(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, w = _shape(inputs[0]), _shape(inputs[3])
    return _windowed(attrs, x, w[0], _conv_kernel(attrs, w))


@_predicts("ConvTranspose")
def _conv_transpose(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, w = _shape(inputs[0]), _shape(inputs[1])
    kernel = _conv_kernel(attrs, w)
    geometry = transpose_out_shape(attrs, kernel, x[2:])
    return (x[0], w[1] * int(attrs.get("group", 1)), *(g[0] for g in geometry))


@_predicts("AveragePool", "LpPool", "MaxPool")
def _pool(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    x = _shape(inputs[0])
    y = _windowed(attrs, x, x[1], [int(v) for v in attrs["kernel_shape"]])
    return [y, y]  # MaxPool's indices have its values' shape


@_predicts("MaxUnpool")
def _max_unpool(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    if _given(inputs, 2):
        return tuple(_ints(inputs[2]))
    x, kernel = _shape(inputs[0]), [int(v) for v in attrs["kernel_shape"]]
    win, n = window(attrs, kernel), len(kernel)
    spatial = [
        (d - 1) * win.strides[i] + kernel[i] - win.pads[i] - win.pads[i + n]
        for i, d in enumerate(x[2:])
    ]
    return (*x[:2], *spatial)


@_predicts("Col2Im")
def _col2im(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape | None:
    x, image, block = _shape(inputs[0]), _ints(inputs[1]), _ints(inputs[2])
    return (x[0], x[1] // max(math.prod(block), 1), *image) if len(x) >= 2 else None


# --- Reductions: an empty reduced axis gives an output larger than the input --------------------


@_predicts("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = _shape(inputs[0])
    return (*x[:2], *[1] * (len(x) - 2))


@_predicts(
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
)  # fmt: skip
def _reduce(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = _shape(inputs[0])
    axes = [_axis(a, len(x)) for a in (_ints(inputs[1]) if _given(inputs, 1) else [])]
    if not axes:
        if attrs.get("noop_with_empty_axes"):
            return x
        axes = list(range(len(x)))
    if attrs.get("keepdims", 1):
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


@_predicts("ArgMax", "ArgMin")
def _arg_extreme(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = list(_shape(inputs[0]))
    axis = _axis(int(attrs.get("axis", 0)), len(x))
    if attrs.get("keepdims", 1):
        x[axis] = 1
    else:
        del x[axis]
    return tuple(x)


@_predicts("LayerNormalization")
def _layer_norm(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    x = _shape(inputs[0])
    axis = _axis(int(attrs.get("axis", -1)), len(x))
    kept = (*x[:axis], *[1] * (len(x) - axis))
    return [x, kept, kept]


@_predicts("Det")
def _det(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = _shape(inputs[0])
    if len(x) < 2:
        raise ValueError("Det of fewer than 2 dims")
    return x[:-2]


# --- Signals: lengths, frames and bins from inputs ----------------------------------------------


@_predicts("DFT")
def _dft(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = _shape(inputs[0])
    inverse, onesided = int(attrs.get("inverse", 0)), int(attrs.get("onesided", 0))
    given = _int(inputs[1]) if _given(inputs, 1) else None
    a = dft_axis(_int(inputs[2]) if _given(inputs, 2) else -2, len(x))
    out = [*x[:-1], 1 if onesided and inverse else 2]
    out[a] = cast(int, dft_length(inverse, onesided, x[a], given)[1])
    return tuple(out)


@_predicts("STFT")
def _stft(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x, hop = _shape(inputs[0]), _int(inputs[1])
    if _given(inputs, 3):
        size = _int(inputs[3])
    else:
        size = x[1] if not _given(inputs, 2) else _shape(inputs[2])[0]
    if hop < 1 or not 1 <= size <= x[1]:
        raise ValueError(f"frame_step {hop} and frame_length {size} do not fit {x[1]} samples")
    bins = size // 2 + 1 if attrs.get("onesided", 1) else size
    return (x[0], (x[1] - size) // hop + 1, bins, 2)


# --- Data-dependent counts, read from the data without allocating its result ------------------


@_predicts("NonZero")
def _nonzero(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    x = np.asarray(inputs[0])
    return (x.ndim, int(np.count_nonzero(x)))


@_predicts("TopK")
def _topk(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    x = list(_shape(inputs[0]))
    x[_axis(int(attrs.get("axis", -1)), len(x))] = _int(inputs[1])
    return [tuple(x), tuple(x)]


@_predicts("Unique")
def _unique(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    # Only the inverse indices, one an input slice, which an empty input of many (empty) slices
    # makes far larger than it; the other outputs are bounded (BOUNDED_BY_INPUTS).
    x, axis = _shape(inputs[0]), attrs.get("axis")
    rows = math.prod(x) if axis is None else x[_axis(int(axis), len(x))]
    return [None, None, (rows,), None]


@_predicts("SparseFillEmptyRows")
def _sparse_fill_empty_rows(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    # Every entry, and one more a row of dense_shape that holds none.
    indices, rows = np.asarray(inputs[2]), _ints(inputs[1])[0]
    if indices.ndim != 2 or indices.shape[1] != 2:
        raise ValueError("indices must be [M, 2]")
    present = np.unique(indices[:, 0]).size
    entries = indices.shape[0] + rows - present
    return [(entries, 2), (entries,), (rows,)]


@_predicts("StringSplit")
def _string_split(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    x = np.asarray(inputs[0])
    delimiter, maxsplit = attrs.get("delimiter") or None, attrs.get("maxsplit")
    most = -1 if maxsplit is None else int(maxsplit)
    if delimiter is None:
        counts = [len(s.split(None, most)) for s in x.reshape(-1)]
    else:
        limit = math.inf if most < 0 else most
        counts = [int(min(s.count(delimiter), limit)) + 1 for s in x.reshape(-1)]
    return [(*x.shape, max(counts, default=0)), x.shape]


@_predicts("StringTensorUnpack")
def _string_tensor_unpack(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    x = np.asarray(inputs[0])
    total = sum(
        len(s) if s.isascii() else len(s.encode("utf-8", "surrogateescape"))
        for s in x.reshape(-1).tolist()
    )
    return [x.shape, x.shape, (total,)]


@_predicts("ImageDecoder")
def _image_decoder(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    # From the stream's header: an image's pixels can be far more than its encoded bytes.
    return image_header(np.asarray(inputs[0]), attrs["pixel_format"])


@_predicts("TreeEnsemble", "TreeEnsembleRegressor", "TreeEnsembleClassifier")
def _tree_ensemble(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
    rows, (width, labelled) = ensemble_rows(np.shape(inputs[0])), ensemble_outputs(attrs)
    return [(rows,), (rows, width)] if labelled else [(rows, width)]


@_predicts("PhiloxUniform")
def _philox_uniform(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return uniform_dims(inputs[0])


@_predicts("PhiloxMultinomial")
def _philox_multinomial(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    replace = bool(attrs.get("with_replacement", 1))
    return multinomial_dims(_shape(inputs[0]), inputs[1], replace)


@_predicts("RandomUniform", "RandomNormal")
def _random_std(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return drawn_dims(attrs)


@_predicts("Multinomial")
def _multinomial(attrs: dict[str, Any], inputs: Sequence[Any]) -> Shape:
    return sampled_dims(_shape(inputs[0]), attrs)


# --- Ops typed by their type rule on the run-time shapes and values -----------------------------
# Shapes read from several inputs and many attributes (heads, caches, RoIs, pooled sizes, top-k
# counts): the op's own type rule, fed the inputs' exact types and their values as constants,
# gives its outputs' exact shapes (an output it cannot make static is not predicted).


class _Known:
    """A run-time input as a type rule sees a value: its exact type, its data a constant."""

    __slots__ = ("constant", "type")

    def __init__(self, x: Any) -> None:
        self.constant = np.asarray(x)
        self.type = TensorType(from_numpy(self.constant), self.constant.shape)


def _typed_by_rule(op: str) -> Predictor:
    def predict(attrs: dict[str, Any], inputs: Sequence[Any]) -> list[Shape | None]:
        known = [None if x is None else _Known(x) for x in inputs]
        types = infer_types(op, cast(list[Value | None], known), attrs)
        return [
            t.static_shape if isinstance(t, TensorType) and t.is_static else None for t in types
        ]

    return predict


for _op in (
    "Attention", "FlexAttention", "LinearAttention", "CausalConvWithState", "RoiAlign",
    "RoiAlignRotated", "MaxRoiPool", "BilinearRoiPool", "PsRoiPool", "DeformablePsRoiPool",
    "Proposal", "PriorBox", "PriorBoxClustered", "DetectionOutput", "MulticlassNms", "MatrixNms",
    "TfIdfVectorizer",
):  # fmt: skip
    _PREDICTORS[_op] = _typed_by_rule(_op)


__all__ = [
    "BOUNDED_BY_INPUTS",
    "BOUND_FACTOR",
    "BOUND_SLACK",
    "CONTROL_FLOW",
    "HELD",
    "WIDER_BOUNDS",
    "bound_factor",
    "check_outputs",
    "output_bytes",
    "output_shape",
    "output_shapes",
    "predicted",
]
