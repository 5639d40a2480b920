"""Vector-Jacobian rules of the neural-network ops (convolution, pooling, normalisation,
softmax, attention, Gemm).

The sliding-window ops differentiate through one another: a Conv's gradient with respect to X
is a ConvTranspose of the cotangent by W (pads and output_padding chosen so that it lands on X's
positions exactly), with respect to W a Conv of X by the cotangent with strides and dilations
swapped (batch and channel axes traded, groups kept apart); a ConvTranspose's are the same the
other way round. Average pools are a ConvTranspose by a kernel of ones, max pools scatter to
their Indices. The normalisations share one backward pass (``_normalized``)."""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import GradientError
from ..ir.graph import Node, Value
from ..ir.opdef import get_opdef
from ..ops.math import parse_einsum
from ..ops.window import Window, transpose_out_shape, window
from ..tensor.dtypes import DType
from ..tensor.types import normalize_axis
from .core import Builder, differentiable, vjp


def _ct(cts: list[Value | None]) -> Value:
    ct = cts[0]
    assert ct is not None
    return ct


def _in(node: Node, index: int) -> Value | None:
    """Input ``index`` of ``node``, None when it is left out."""
    return node.inputs[index] if index < len(node.inputs) else None


def _req(node: Node, index: int) -> Value:
    value = _in(node, index)
    assert value is not None
    return value


def _attrs(node: Node) -> dict[str, Any]:
    """The node's attributes with the op's defaults filled in."""
    return get_opdef(node.op).resolve_attrs(node.attrs, node.describe())


def _like(b: Builder, x: Value, like: Value) -> Value:
    """``x`` cast to ``like``'s element type (unchanged when it has it)."""
    if x.tensor_type.dtype == like.tensor_type.dtype:
        return x
    return b.op("CastLike", [x, like])


def _dims(b: Builder, x: Value, start: int = 0, end: int | None = None) -> list[int] | Value:
    """``x``'s dims [start:end]: a list where they are known, else a Shape of ``x``."""
    shape = x.tensor_type.shape
    if shape is not None:
        part = list(shape[start:end])
        if all(isinstance(d, int) for d in part):
            return [int(d) for d in part]
    attrs: dict[str, Any] = {"start": start} if start else {}
    if end is not None:
        attrs["end"] = end
    return b.op("Shape", [x], **attrs)


def _vec(b: Builder, *parts: int | list[int] | Value) -> Value:
    """A 1-D int64 shape made of ints, lists of ints and 1-D int64 values, in order."""
    pieces: list[list[int] | Value] = []
    for part in parts:
        if isinstance(part, int):
            part = [part]
        if isinstance(part, list) and pieces and isinstance(pieces[-1], list):
            pieces[-1] = [*pieces[-1], *part]
        else:
            pieces.append(part)
    if len(pieces) == 1:
        return b.ints(pieces[0]) if isinstance(pieces[0], list) else pieces[0]
    return b.op("Concat", [b.ints(p) if isinstance(p, list) else p for p in pieces], axis=0)


def _shape(b: Builder, x: Value, start: int = 0) -> Value:
    """``x``'s dims from ``start`` on, as a 1-D int64 value."""
    return _vec(b, _dims(b, x, start))


def _reshape_as(b: Builder, v: Value, x: Value) -> Value:
    """``v`` laid out in ``x``'s shape."""
    if v.type == x.type:
        return v
    return b.op("Reshape", [v, _shape(b, x)])


def _count(b: Builder, x: Value, axes: Sequence[int]) -> Value:
    """How many entries of ``x`` the ``axes`` hold together: a scalar of ``x``'s type."""
    shape = x.tensor_type.shape
    assert shape is not None
    dims = [shape[a] for a in axes]
    if all(isinstance(d, int) for d in dims):
        return b.const(math.prod(int(d) for d in dims), x)
    picked = b.op("Gather", [b.op("Shape", [x]), b.ints(list(axes))], axis=0)
    return _like(b, b.op("ReduceProd", [picked], keepdims=0), x)


def _sum(b: Builder, v: Value, axes: Sequence[int], keep: bool = False) -> Value:
    return b.op("ReduceSum", [v, b.ints(list(axes))], keepdims=int(keep))


def _mean(b: Builder, v: Value, axes: Sequence[int]) -> Value:
    return b.op("ReduceMean", [v, b.ints(list(axes))], keepdims=1)


def _channel(b: Builder, v: Value, rank: int) -> Value:
    """A per-channel vector (C) shaped to broadcast along axis 1 of a rank-``rank`` tensor."""
    if rank <= 2:
        return v
    return b.op("Unsqueeze", [v, b.ints(list(range(1, rank - 1)))])


def _not_channel(rank: int) -> list[int]:
    """Every axis but the channel axis 1."""
    return [0, *range(2, rank)]


def _swap01(b: Builder, x: Value, rank: int) -> Value:
    return b.op("Transpose", [x], perm=[1, 0, *range(2, rank)])


def _stash(b: Builder, x: Value, stash_type: int) -> Value:
    """``x`` in the type the op computes its statistics in (float32 for stash_type=1)."""
    if stash_type == 1 and x.tensor_type.dtype != DType.float32:
        return b.op("Cast", [x], to=DType.float32)
    return x


def _rsqrt(b: Builder, v: Value, epsilon: float) -> Value:
    """1 / sqrt(v + epsilon)."""
    return b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [v, b.const(epsilon, v)])])])


# --- Gemm, softmax ------------------------------------------------------------------------------


def _gemm_attrs(alpha: float, trans_a: int, trans_b: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if alpha != 1:
        attrs["alpha"] = alpha
    if trans_a:
        attrs["transA"] = 1
    if trans_b:
        attrs["transB"] = 1
    return attrs


@vjp("Gemm")
def _gemm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # Y = alpha * A' @ B' + beta * C, A' = A^T if transA, B' = B^T if transB.
    ct, a, y, c = _ct(cts), _req(node, 0), _req(node, 1), _in(node, 2)
    at = _attrs(node)
    alpha, beta = float(at["alpha"]), float(at["beta"])
    ta, tb = int(at["transA"]), int(at["transB"])
    if ta:  # dA = alpha * B' @ ct^T
        da = b.op("Gemm", [y, ct], **_gemm_attrs(alpha, tb, 1))
    else:  # dA = alpha * ct @ B'^T
        da = b.op("Gemm", [ct, y], **_gemm_attrs(alpha, 0, 1 - tb))
    if tb:  # dB = alpha * ct^T @ A'
        dy = b.op("Gemm", [ct, a], **_gemm_attrs(alpha, 1, ta))
    else:  # dB = alpha * A'^T @ ct
        dy = b.op("Gemm", [a, ct], **_gemm_attrs(alpha, 1 - ta, 0))
    dc = None
    if c is not None:
        scaled = ct if beta == 1 else b.mul(ct, b.const(beta, ct))
        dc = b.sum_to(scaled, c, node.describe())
    return [da, dy, dc]


@vjp("Softmax")
def _softmax(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, y = _ct(cts), node.outputs[0]
    axes = [int(_attrs(node)["axis"])]
    dot = _sum(b, b.mul(ct, y), axes, keep=True)
    return [b.mul(y, b.op("Sub", [ct, dot]))]


@vjp("LogSoftmax")
def _log_softmax(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, y = _ct(cts), node.outputs[0]
    axes = [int(_attrs(node)["axis"])]
    total = _sum(b, ct, axes, keep=True)
    return [b.op("Sub", [ct, b.mul(b.op("Exp", [y]), total)])]


# --- Convolutions -------------------------------------------------------------------------------


def _kernel(node: Node, w: Value | None, attrs: dict[str, Any], n: int) -> list[int]:
    """The kernel's spatial shape: kernel_shape, else W's trailing dims."""
    if attrs.get("kernel_shape") is not None:
        return [int(v) for v in attrs["kernel_shape"]]
    shape = None if w is None else w.tensor_type.shape
    if shape is None or not all(isinstance(d, int) for d in shape[2:]):
        raise GradientError(f"{node.describe()}: the gradient needs the kernel's static shape")
    return [int(d) for d in shape[2:]]


def _window(node: Node, attrs: dict[str, Any], kernel: Sequence[int]) -> Window:
    try:
        return window(attrs, kernel)
    except ValueError as exc:
        raise GradientError(f"{node.describe()}: {exc}") from None


def _spatial(x: Value) -> list[int] | None:
    """X's spatial sizes (after N and C) when all are known."""
    shape = x.tensor_type.shape
    assert shape is not None
    if not all(isinstance(d, int) for d in shape[2:]):
        return None
    return [int(d) for d in shape[2:]]


def _pads_of(node: Node, win: Window, x: Value, n: int) -> tuple[list[int], list[int]]:
    """A window op's (begin pads, end pads) over X: from its geometry where X's spatial sizes
    are known, else from its pads (the SAME_* pads need the sizes)."""
    sizes = _spatial(x)
    if sizes is not None:
        try:
            geo = [win.along(i, d) for i, d in enumerate(sizes)]
        except ValueError as exc:
            raise GradientError(f"{node.describe()}: {exc}") from None
        return [g[1] for g in geo], [g[2] for g in geo]
    if win.auto_pad == "VALID":
        return [0] * n, [0] * n
    if win.auto_pad != "NOTSET":
        raise GradientError(
            f"{node.describe()}: the gradient of auto_pad {win.auto_pad} needs X's spatial "
            "sizes, unknown here"
        )
    return list(win.pads[:n]), list(win.pads[n:])


def _window_attrs(win: Window, group: int = 1) -> dict[str, Any]:
    """The strides, dilations and group of a Conv or ConvTranspose over ``win`` (defaults left
    out)."""
    attrs: dict[str, Any] = {}
    if any(s != 1 for s in win.strides):
        attrs["strides"] = list(win.strides)
    if any(d != 1 for d in win.dilations):
        attrs["dilations"] = list(win.dilations)
    if group != 1:
        attrs["group"] = group
    return attrs


def _swapped_attrs(win: Window, group: int, begins: list[int], ends: list[int]) -> dict[str, Any]:
    """A Conv's attributes with the window's strides and dilations swapped (the weight
    gradients' convolutions)."""
    attrs: dict[str, Any] = {"pads": [*begins, *ends]}
    if any(d != 1 for d in win.dilations):
        attrs["strides"] = list(win.dilations)
    if any(s != 1 for s in win.strides):
        attrs["dilations"] = list(win.strides)
    if group != 1:
        attrs["group"] = group
    return attrs


def _spread(
    b: Builder,
    ct: Value,
    w: Value,
    win: Window,
    group: int,
    begins: list[int],
    outs: list[int],
    sizes: list[int],
) -> Value:
    """The adjoint of a sliding window over X of spatial ``sizes`` (pads ``begins`` before it)
    that gave ``ct`` (``outs`` positions): ``ct`` spread back through the kernel ``w`` by a
    ConvTranspose, whose full result (position j: padded position j) is cropped to X's
    positions, zero where the windows never reached."""
    n = len(sizes)
    ends, extras, late = [0] * n, [0] * n, [0] * n
    for i in range(n):
        full = win.strides[i] * (outs[i] - 1) + win.span(i)
        extra = sizes[i] + begins[i] - full  # what X has past the full result (< 0: crop)
        if extra < 0:
            ends[i] = -extra
        elif extra < win.strides[i]:
            extras[i] = extra  # output_padding must stay below the stride
        else:
            late[i] = extra
    attrs = _window_attrs(win, group)
    attrs["pads"] = [*begins, *ends]
    if any(extras):
        attrs["output_padding"] = extras
    dx = b.op("ConvTranspose", [ct, w], **attrs)
    if any(late):
        dx = b.op("Pad", [dx, b.ints([0] * (n + 2) + [0, 0, *late])])
    return dx


def _conv_dx(
    b: Builder, x: Value, ct: Value, w: Value, win: Window, group: int, begins: list[int]
) -> Value:
    """Conv's gradient with respect to X: the cotangent spread back through W."""
    n = len(win.kernel)
    sizes, outs = _spatial(x), _spatial(ct)
    if sizes is not None and outs is not None:
        return _spread(b, ct, w, win, group, begins, outs, sizes)
    # Sizes known at run time only: the full result and then some (output_padding stride - 1
    # reaches past X's end), sliced to X's sizes.
    attrs = _window_attrs(win, group)
    attrs["pads"] = [*begins, *[0] * n]
    if any(s > 1 for s in win.strides):
        attrs["output_padding"] = [s - 1 for s in win.strides]
    full = b.op("ConvTranspose", [ct, w], **attrs)
    ends = b.op("Shape", [x], start=2)
    return b.op("Slice", [full, b.ints([0] * n), ends, b.ints(list(range(2, n + 2)))])


def _first(b: Builder, v: Value, kernel: list[int], known: list[int] | None) -> Value:
    """``v`` (a weight gradient whose spatial dims may run past the kernel's) cut to ``kernel``;
    ``known``: its spatial dims where they are known."""
    if known == kernel:
        return v
    n = len(kernel)
    return b.op("Slice", [v, b.ints([0] * n), b.ints(kernel), b.ints(list(range(2, n + 2)))])


def _grouped_rows(b: Builder, v: Value, group: int, rank: int) -> Value:
    """(N, C, *D) as (C/group, group * N, *D): the channels of a group next to one another as
    a batch of group * N rows (group 1: a transpose)."""
    if group == 1:
        return _swap01(b, v, rank)
    split = b.op("Reshape", [v, _vec(b, _dims(b, v, 0, 1), [group, -1], _dims(b, v, 2))])
    moved = b.op("Transpose", [split], perm=[2, 1, 0, *range(3, rank + 1)])
    return b.op("Reshape", [moved, _vec(b, [0, -1], _dims(b, v, 2))])


@vjp("Conv")
def _conv(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, w, bias = _ct(cts), _req(node, 0), _req(node, 1), _in(node, 2)
    where = node.describe()
    rank = b.rank(x, where)
    n = rank - 2
    at = _attrs(node)
    kernel = _kernel(node, w, at, n)
    win = _window(node, at, kernel)
    group = int(at["group"])
    begins, ends = _pads_of(node, win, x, n)
    dx = _conv_dx(b, x, ct, w, win, group, begins)
    # dW[m, c, k] = sum over n, o of ct[n, m, o] * X[n, g(m) * C/g + c, o * s + k * d - pad]: a
    # Conv of X's channels of each group (as the batch) by ct (as the kernel, N its inputs).
    sizes, outs = _spatial(x), _spatial(ct)
    known = None
    if sizes is not None and outs is not None:
        ends = list(ends)
        known = []
        for i in range(n):
            slack = sizes[i] + begins[i] + ends[i] - (outs[i] - 1) * win.strides[i] - win.span(i)
            cut = min(slack, ends[i])  # end pads no window reads
            ends[i] -= cut
            known.append(kernel[i] + (slack - cut) // win.dilations[i])
    rows = _grouped_rows(b, x, group, rank)
    taps = b.op("Conv", [rows, _swap01(b, ct, rank)], **_swapped_attrs(win, group, begins, ends))
    dw = _swap01(b, _first(b, taps, kernel, known), rank)
    db = None if bias is None else _sum(b, ct, _not_channel(rank))
    return [dx, dw, db]


@vjp("ConvTranspose")
def _conv_transpose(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, w, bias = _ct(cts), _req(node, 0), _req(node, 1), _in(node, 2)
    where = node.describe()
    rank = b.rank(x, where)
    n = rank - 2
    at = _attrs(node)
    kernel = _kernel(node, w, at, n)
    win = _window(node, at, kernel)
    group = int(at["group"])
    extra = [0] * n if at["output_padding"] is None else [int(v) for v in at["output_padding"]]
    sizes = _spatial(x)
    if sizes is not None:
        try:
            geo = transpose_out_shape(at, kernel, sizes)
        except ValueError as exc:
            raise GradientError(f"{where}: {exc}") from None
        begins, crops = [g[1] for g in geo], [g[2] for g in geo]
    elif at["output_shape"] is None and win.auto_pad in ("NOTSET", "VALID"):
        pads = [0] * (2 * n) if win.auto_pad == "VALID" else list(win.pads)
        begins, crops = pads[:n], pads[n:]
    else:
        raise GradientError(
            f"{where}: the gradient of output_shape or auto_pad {win.auto_pad} needs X's "
            "spatial sizes, unknown here"
        )
    # The full result has stride * (D - 1) + output_padding + span positions, Y those from
    # begins on: its adjoint is a Conv of ct padded back to the full result (the end pads the
    # windows read; past them, what output_padding added beyond the crop gives no windows).
    ends = [max(0, c - e) for c, e in zip(crops, extra, strict=True)]
    over = [max(0, e - c) for c, e in zip(crops, extra, strict=True)]
    conv = _window_attrs(win, group)
    conv["pads"] = [*begins, *ends]
    dx = b.op("Conv", [ct, w], **conv)
    if any(o >= s for o, s in zip(over, win.strides, strict=True)):
        dx = b.op("Slice", [dx, b.ints([0] * n), _shape(b, x, 2), b.ints(list(range(2, rank)))])
    # dW[c, m, k] = sum over n, i of X[n, c, i] * ct[n, g(c) * M/g + m, i * s + k * d - begin].
    rows = _grouped_rows(b, ct, group, rank)
    taps = b.op("Conv", [rows, _swap01(b, x, rank)], **_swapped_attrs(win, group, begins, ends))
    known = None
    if all(o < d for o, d in zip(over, win.dilations, strict=True)):
        known = kernel
    dw = _swap01(b, _first(b, taps, kernel, known), rank)
    db = None if bias is None else _sum(b, ct, _not_channel(rank))
    return [dx, dw, db]


# --- Pooling ------------------------------------------------------------------------------------


def _pool_geometry(node: Node, x: Value) -> tuple[Window, list[tuple[int, int, int]], list[int]]:
    """A pool's window, its (output size, begin pad, end pad) per spatial axis and X's spatial
    sizes, which the gradient needs known."""
    at = _attrs(node)
    win = _window(node, at, [int(v) for v in at["kernel_shape"]])
    sizes = _spatial(x)
    if sizes is None:
        raise GradientError(f"{node.describe()}: the gradient needs X's spatial sizes")
    try:
        geo = [win.along(i, d) for i, d in enumerate(sizes)]
    except ValueError as exc:
        raise GradientError(f"{node.describe()}: {exc}") from None
    return win, geo, sizes


def _pool_spread(
    b: Builder, ct: Value, x: Value, win: Window, geo: list[tuple[int, int, int]], sizes: list[int]
) -> Value:
    """The adjoint of a window sum over each channel of X: ``ct`` spread back over X."""
    outs = [g[0] for g in geo]
    planes = b.op("Reshape", [ct, b.ints([-1, 1, *outs])])
    ones = b.em.const(np.ones((1, 1, *win.kernel), ct.tensor_type.dtype.numpy))
    spread = _spread(b, planes, ones, win, 1, [g[1] for g in geo], outs, sizes)
    return _reshape_as(b, spread, x)


def _pool_counts(win: Window, geo: list[tuple[int, int, int]], sizes: list[int], pad: bool) -> Any:
    """How many positions each AveragePool window divides by (as its kernel does)."""
    counts = np.ones(())
    for i, (out, begin, end) in enumerate(geo):
        need = (out - 1) * win.strides[i] + win.span(i)
        valid = np.zeros(max(begin + sizes[i] + end, need))
        if pad:
            valid[: begin + sizes[i] + end] = 1
        else:
            valid[begin : begin + sizes[i]] = 1
        taps = np.arange(win.kernel[i]) * win.dilations[i]
        starts = np.arange(out) * win.strides[i]
        per = valid[starts[:, None] + taps[None, :]].sum(-1)
        counts = np.multiply.outer(counts, per)
    return counts


@vjp("AveragePool")
def _average_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x = _ct(cts), _req(node, 0)
    win, geo, sizes = _pool_geometry(node, x)
    counts = _pool_counts(win, geo, sizes, bool(_attrs(node)["count_include_pad"]))
    # a window wholly in the pads reads nothing of X (and averages to NaN): no gradient
    with np.errstate(divide="ignore"):
        inverse = np.where(counts > 0, 1 / np.maximum(counts, 1), 0)
    scaled = b.mul(ct, b.const(inverse, ct))
    return [_pool_spread(b, scaled, x, win, geo, sizes)]


@vjp("LpPool")
def _lp_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # y = (sum |x|^p)^(1/p) per window: dx = spread(ct * y^(1-p)) * sign(x) |x|^(p-1)
    ct, x, y = _ct(cts), _req(node, 0), node.outputs[0]
    win, geo, sizes = _pool_geometry(node, x)
    p = int(_attrs(node)["p"])
    scaled = b.mul(ct, _power(b, y, 1 - p))
    return [b.mul(_pool_spread(b, scaled, x, win, geo, sizes), _lp_slope(b, x, p))]


def _power(b: Builder, v: Value, p: int) -> Value:
    if p == 0:
        return b.ones_like(v)
    if p == 1:
        return v
    if p == -1:
        return b.op("Reciprocal", [v])
    return b.op("Pow", [v, b.const(p, v)])


def _lp_slope(b: Builder, x: Value, p: int) -> Value:
    """d|x|^p / dx / p = sign(x) |x|^(p-1)."""
    if p == 1:
        return b.op("Sign", [x])
    if p == 2:
        return x
    return b.mul(b.op("Sign", [x]), _power(b, b.op("Abs", [x]), p - 1))


@vjp("MaxPool")
def _max_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x = _ct(cts), _req(node, 0)
    indices = node.outputs[1]
    if _attrs(node)["storage_order"]:  # column-major indices: ask for row-major ones
        indices = b.ops("MaxPool", [x], **{**node.attrs, "storage_order": 0})[1]
    flat = b.ints([-1])
    zeros = b.zeros_like(b.op("Reshape", [x, flat]))
    dx = b.op(
        "ScatterElements",
        [zeros, b.op("Reshape", [indices, flat]), b.op("Reshape", [ct, flat])],
        axis=0,
        reduction="add",
    )
    return [_reshape_as(b, dx, x)]


@vjp("GlobalAveragePool")
def _global_average_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x = _ct(cts), _req(node, 0)
    rank = b.rank(x, node.describe())
    scaled = b.op("Div", [ct, _count(b, x, range(2, rank))])
    return [b.op("Expand", [scaled, _shape(b, x)])]


@vjp("GlobalMaxPool")
def _global_max_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # the gradient splits evenly between the entries that tie for the maximum
    ct, x, y = _ct(cts), _req(node, 0), node.outputs[0]
    rank = b.rank(x, node.describe())
    hit = b.op("Where", [b.op("Equal", [x, y]), b.const(1, x), b.const(0, x)])
    ties = _sum(b, hit, range(2, rank), keep=True)
    return [b.mul(hit, b.op("Div", [ct, ties]))]


@vjp("GlobalLpPool")
def _global_lp_pool(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, y = _ct(cts), _req(node, 0), node.outputs[0]
    p = int(_attrs(node)["p"])
    return [b.mul(b.mul(ct, _power(b, y, 1 - p)), _lp_slope(b, x, p))]


# --- Normalizations -----------------------------------------------------------------------------


def _normalized(b: Builder, g: Value, xhat: Value, inv: Value, axes: Sequence[int]) -> Value:
    """The gradient with respect to x of xhat = (x - mean) * inv over ``axes`` (inv = 1 /
    sqrt(var + epsilon)), given g, the gradient with respect to xhat."""
    centered = b.op("Sub", [g, _mean(b, g, axes)])
    along = b.mul(xhat, _mean(b, b.mul(g, xhat), axes))
    return b.mul(inv, b.op("Sub", [centered, along]))


@vjp("BatchNormalization")
def _batch_norm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x, scale, bias, mean, var = (_req(node, i) for i in range(5))
    where = node.describe()
    rank = b.rank(x, where)
    at = _attrs(node)
    eps, momentum = float(at["epsilon"]), float(at["momentum"])
    red = _not_channel(rank)
    ct, ct_mean, ct_var = cts[0], cts[1], cts[2]
    s = _channel(b, _like(b, scale, x), rank)
    dx = dscale = dbias = dmean = dvar = None
    if at["training_mode"]:
        # batch statistics; running_mean/var = input * momentum + batch statistic * (1 - m)
        mu = _mean(b, x, red)
        centered = b.op("Sub", [x, mu])
        inv = _rsqrt(b, _mean(b, b.mul(centered, centered), red), eps)
        xhat = b.mul(centered, inv)
        if ct is not None:
            dx = _normalized(b, b.mul(ct, s), xhat, inv, red)
        rest = b.const(1 - momentum, x)
        extra = None  # d(running statistics) / dx
        if ct_mean is not None:
            extra = _channel(b, b.mul(_like(b, ct_mean, x), rest), rank)
        if ct_var is not None:
            term = b.mul(_channel(b, b.mul(_like(b, ct_var, x), rest), rank), centered)
            extra = b.add(extra, b.add(term, term))
        if extra is not None:
            dx = b.add(dx, b.op("Div", [b.op("Expand", [extra, _shape(b, x)]), _count(b, x, red)]))
        keep = b.const(momentum, mean)
        dmean = None if ct_mean is None else b.mul(ct_mean, keep)
        dvar = None if ct_var is None else b.mul(ct_var, keep)
    else:
        mu = _channel(b, _like(b, mean, x), rank)
        inv = _rsqrt(b, _like(b, var, x), eps)
        xhat = b.mul(b.op("Sub", [x, mu]), _channel(b, inv, rank))
        if ct is not None:
            dx = b.mul(ct, _channel(b, b.mul(_like(b, scale, x), inv), rank))
        dmean, dvar = ct_mean, ct_var  # running_mean/var are the inputs, passed through
    if ct is not None:
        dbias = _sum(b, ct, red)
        dscale = _sum(b, b.mul(ct, xhat), red)
        if not at["training_mode"]:
            # y = (x - mean) * inv * scale + B: d/dmean = -scale * inv, d/dvar its xhat * inv / 2
            slope = b.mul(_like(b, scale, x), inv)
            dmean = b.add(dmean, _like(b, b.neg(b.mul(dbias, slope)), mean))
            half = b.mul(b.mul(slope, inv), b.const(-0.5, x))
            dvar = b.add(dvar, _like(b, b.mul(dscale, half), var))
        dscale, dbias = _like(b, dscale, scale), _like(b, dbias, bias)
    return [dx, dscale, dbias, dmean, dvar]


def _axis(node: Node, b: Builder, x: Value, axis: int) -> int:
    rank = b.rank(x, node.describe())
    return normalize_axis(axis, rank, node.describe(), error=GradientError)


@vjp("LayerNormalization")
def _layer_norm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x, scale, bias = _req(node, 0), _req(node, 1), _in(node, 2)
    where = node.describe()
    rank = b.rank(x, where)
    axis = _axis(node, b, x, int(_attrs(node)["axis"]))
    axes = list(range(axis, rank))
    ct, ct_mean, ct_inv = cts[0], cts[1], cts[2]
    mu, inv = node.outputs[1], node.outputs[2]  # the statistics, in the stash type
    xs = _like(b, x, mu)
    xhat = b.mul(b.op("Sub", [xs, mu]), inv)
    dx = dscale = dbias = None
    if ct is not None:
        dx = _normalized(b, _like(b, b.mul(ct, scale), xs), xhat, inv, axes)
        dscale = b.sum_to(b.mul(ct, _like(b, xhat, x)), scale, where)
        dbias = None if bias is None else b.sum_to(ct, bias, where)
    # Mean = mean(x), InvStdDev = 1 / sqrt(var + eps): d/dx are 1 / n and -inv^2 * xhat / n
    extra = None if ct_mean is None else _like(b, ct_mean, xs)
    if ct_inv is not None:
        slope = b.mul(b.mul(_like(b, ct_inv, xs), inv), inv)
        extra = b.add(extra, b.neg(b.mul(slope, xhat)))
    if extra is not None:
        spread = b.op("Div", [b.op("Expand", [extra, _shape(b, xs)]), _count(b, xs, axes)])
        dx = b.add(dx, spread)
    return [None if dx is None else _like(b, dx, x), dscale, dbias]


def _statistics(b: Builder, x: Value, axes: Sequence[int], eps: float) -> tuple[Value, Value]:
    """(xhat, inv): x normalized over ``axes`` and 1 / sqrt(var + eps), keeping those axes."""
    centered = b.op("Sub", [x, _mean(b, x, axes)])
    inv = _rsqrt(b, _mean(b, b.mul(centered, centered), axes), eps)
    return b.mul(centered, inv), inv


@vjp("InstanceNormalization")
def _instance_norm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, scale = _ct(cts), _req(node, 0), _req(node, 1)
    rank = b.rank(x, node.describe())
    axes = list(range(2, rank))
    xhat, inv = _statistics(b, x, axes, float(_attrs(node)["epsilon"]))
    dx = _normalized(b, b.mul(ct, _channel(b, scale, rank)), xhat, inv, axes)
    red = _not_channel(rank)
    return [dx, _sum(b, b.mul(ct, xhat), red), _sum(b, ct, red)]


@vjp("GroupNormalization")
def _group_norm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, scale = _ct(cts), _req(node, 0), _req(node, 1)
    rank = b.rank(x, node.describe())
    at = _attrs(node)
    groups = b.ints([0, int(at["num_groups"]), -1])  # (N, groups, the rest)
    xs = _stash(b, x, int(at["stash_type"]))
    xhat, inv = _statistics(b, b.op("Reshape", [xs, groups]), [2], float(at["epsilon"]))
    g = b.op("Reshape", [_like(b, b.mul(ct, _channel(b, scale, rank)), xs), groups])
    dx = _reshape_as(b, _like(b, _normalized(b, g, xhat, inv, [2]), x), x)
    xhat_x = _reshape_as(b, _like(b, xhat, x), x)
    red = _not_channel(rank)
    return [dx, _sum(b, b.mul(ct, xhat_x), red), _sum(b, ct, red)]


@vjp("RMSNormalization")
def _rms_norm(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # y = x * r * scale, r = 1 / sqrt(mean(x^2) + eps): dx = r g - x r^3 mean(g x), g = ct scale
    ct, x, scale = _ct(cts), _req(node, 0), _req(node, 1)
    where = node.describe()
    rank = b.rank(x, where)
    at = _attrs(node)
    axes = list(range(_axis(node, b, x, int(at["axis"])), rank))
    xs = _stash(b, x, int(at["stash_type"]))
    r = _rsqrt(b, _mean(b, b.mul(xs, xs), axes), float(at["epsilon"]))
    g = _like(b, b.mul(ct, scale), xs)
    along = b.mul(b.mul(xs, b.mul(r, b.mul(r, r))), _mean(b, b.mul(g, xs), axes))
    dx = _like(b, b.op("Sub", [b.mul(r, g), along]), x)
    dscale = b.sum_to(b.mul(ct, _like(b, b.mul(xs, r), ct)), scale, where)
    return [dx, dscale]


@vjp("Dropout")
def _dropout(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # y = x * mask / (1 - ratio) in training, x otherwise (the mask is then all true)
    ct, x = _ct(cts), _req(node, 0)
    ratio, training = _in(node, 1), _in(node, 2)
    if training is None:
        return [ct]
    one, zero = b.const(1, x), b.const(0, x)
    rate = b.const(0.5, x) if ratio is None else _like(b, ratio, x)
    kept = b.op("Div", [one, b.op("Sub", [one, rate])])  # 1 / (1 - ratio)
    gain = b.op("Where", [training, kept, one])
    dx = b.op("Where", [node.outputs[1], b.mul(ct, gain), zero])
    dratio = None
    if ratio is not None:
        # in training dy/dratio = y / (1 - ratio), the mask held fixed (it is piecewise constant)
        slope = b.mul(b.op("ReduceSum", [b.mul(ct, node.outputs[0])], keepdims=0), kept)
        dratio = _reshape_as(b, _like(b, b.op("Where", [training, slope, zero]), ratio), ratio)
    return [dx, dratio, None]


# --- Einsum -------------------------------------------------------------------------------------


@vjp("Einsum")
def _einsum(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """Each input's gradient is the Einsum of the others and the cotangent into its own term.
    A label the term repeats (a diagonal) is renamed past its first place and tied to it by an
    identity matrix; labels no other operand has are read off a ones tensor of the input's
    shape; the dims the input broadcast are summed back (``sum_to``)."""
    ct, where = _ct(cts), node.describe()
    inputs = [v for v in node.inputs if v is not None]
    equation = str(node.attrs["equation"])
    terms, output = parse_einsum(equation, len(inputs), lambda m: GradientError(f"{where}: {m}"))
    terms, output = _spelled_out(b, node, inputs, terms, output)
    free = [c for c in string.ascii_letters if c not in set("".join(terms) + output)]
    grads: list[Value | None] = []
    for i, x in enumerate(inputs):
        operands = [v for j, v in enumerate(inputs) if j != i] + [ct]
        spec = [t for j, t in enumerate(terms) if j != i] + [output]
        term = ""
        for at, label in enumerate(terms[i]):
            if label not in term:
                term += label
                continue
            if not free:
                raise GradientError(f"{where}: too many labels to name the diagonals")
            fresh = free.pop()
            operands.append(_eye(b, x, at))
            spec.append(label + fresh)
            term += fresh
        if not _sized(terms[i], x, spec, operands):
            operands.append(b.ones_like(x))
            spec.append(term)
        grad = b.op("Einsum", operands, equation=",".join(spec) + "->" + term)
        grads.append(b.sum_to(grad, x, where))
    return grads


def _sized(term: str, x: Value, spec: Sequence[str], operands: Sequence[Value]) -> bool:
    """Whether ``operands`` (``spec``) give each label of ``x``'s ``term`` x's size, or a size
    that sums back to it (x's is 1)."""
    seen: dict[str, set[Any]] = {}
    for labels, v in zip(spec, operands, strict=True):
        shape = v.tensor_type.shape
        for k, label in enumerate(labels):
            seen.setdefault(label, set()).add(None if shape is None else shape[k])
    shape = x.tensor_type.shape
    assert shape is not None
    return all(d == 1 or d in seen.get(label, ()) for label, d in zip(term, shape, strict=True))


def _eye(b: Builder, x: Value, axis: int) -> Value:
    """The identity matrix of the size of ``x``'s ``axis``, in ``x``'s type."""
    dims = _dims(b, x, axis, axis + 1)
    if isinstance(dims, list):
        return b.const(np.eye(dims[0]), x)
    count = b.op("Reshape", [dims, b.ints([])])
    steps = b.op("Range", [b.ints(0), count, b.ints(1)])
    same = b.op("Equal", [b.op("Unsqueeze", [steps, b.ints([1])]), steps])
    return b.op("Where", [same, b.const(1, x), b.const(0, x)])


def _spelled_out(
    b: Builder, node: Node, inputs: Sequence[Value], terms: list[str], output: str
) -> tuple[list[str], str]:
    """The terms with each '...' replaced by labels of their own (the broadcast axes, aligned
    at the end as NumPy aligns them)."""
    if not any("..." in t for t in [*terms, output]):
        return terms, output
    where = node.describe()
    used = set("".join(terms) + output)
    free = [c for c in string.ascii_letters if c not in used]
    extra = [
        b.rank(x, where) - len(t.replace("...", "")) for x, t in zip(inputs, terms, strict=True)
    ]
    width = max([e for e, t in zip(extra, terms, strict=True) if "..." in t], default=0)
    if width > len(free):
        raise GradientError(f"{where}: too many broadcast axes to name")
    labels = "".join(free[:width])
    spelled = [
        t.replace("...", labels[width - e :] if e else "")
        for t, e in zip(terms, extra, strict=True)
    ]
    return spelled, output.replace("...", labels)


# --- Losses -------------------------------------------------------------------------------------


def _nll(
    b: Builder, node: Node, logp: Value, ct: Value | None
) -> tuple[Value | None, Value | None]:
    """NegativeLogLikelihoodLoss's gradients with respect to the log-probabilities ``logp``
    (N, C, d...) and the weights (None where there is no cotangent ``ct`` of the loss)."""
    if ct is None:
        return None, None
    target, weight = _req(node, 1), _in(node, 2)
    where = node.describe()
    rank = b.rank(logp, where)
    at = _attrs(node)
    classes = _dims(b, logp, 1, 2)
    if isinstance(classes, list):
        labels = b.em.const(np.arange(classes[0]), target.tensor_type.dtype)
    else:
        count = b.op("Reshape", [classes, b.ints([])])
        labels = _like(b, b.op("Range", [b.ints(0), count, b.ints(1)]), target)
    labels = b.op("Reshape", [labels, b.ints([1, -1, *[1] * (rank - 2)])])
    picked = b.op("Equal", [b.op("Unsqueeze", [target, b.ints([1])]), labels])
    if at["ignore_index"] is not None:
        ignored = b.op("Equal", [target, b.em.const(at["ignore_index"], target.tensor_type.dtype)])
        kept = b.op("Unsqueeze", [b.op("Not", [ignored]), b.ints([1])])
        picked = b.op("And", [picked, kept])
    hot = b.op("Where", [picked, b.const(1, logp), b.const(0, logp)])  # (N, C, d...)
    weighted = hot
    if weight is not None:
        weighted = b.mul(hot, b.op("Reshape", [weight, b.ints([1, -1, *[1] * (rank - 2)])]))
    reduction = at["reduction"]
    if reduction == "none":
        factor = b.op("Unsqueeze", [ct, b.ints([1])])
    elif reduction == "sum":
        factor = ct
    else:  # mean: the sum over the total weight of the kept entries
        factor = b.op("Div", [ct, b.op("ReduceSum", [weighted], keepdims=0)])
    dlogp = b.neg(b.mul(weighted, factor))
    dweight = None
    if weight is not None:
        term = b.neg(logp)
        if reduction == "mean":  # d(S / W) / dw_c = (dS / dw_c - loss * dW / dw_c) / W
            term = b.op("Sub", [term, node.outputs[0]])
        dweight = _sum(b, b.mul(b.mul(hot, term), factor), _not_channel(rank))
    return dlogp, dweight


@vjp("NegativeLogLikelihoodLoss")
def _nll_loss(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    dlogp, dweight = _nll(b, node, _req(node, 0), cts[0])
    return [dlogp, None, dweight]


@vjp("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    logp = node.outputs[1]
    dlogp, dweight = _nll(b, node, logp, cts[0])
    dlogp = b.add(dlogp, cts[1])  # log_prob, the second output, read too
    assert dlogp is not None
    total = _sum(b, dlogp, [1], keep=True)
    return [b.op("Sub", [dlogp, b.mul(b.op("Exp", [logp]), total)]), None, dweight]


# --- Gated and rotary -----------------------------------------------------------------------------


@vjp("SwiGLU")
def _swiglu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # y = a * sigmoid(alpha a) * g: dA = ct g (s + alpha a s (1 - s)), dG = ct a s
    ct, a, g = _ct(cts), _req(node, 0), _req(node, 1)
    alpha = float(_attrs(node)["alpha"])
    scaled = a if alpha == 1 else b.mul(a, b.const(alpha, a))
    s = b.op("Sigmoid", [scaled])
    slope = b.op("Add", [s, b.mul(b.mul(scaled, s), b.op("Sub", [b.const(1, s), s]))])
    return [b.mul(b.mul(ct, g), slope), b.mul(ct, b.mul(a, s))]


@vjp("RotaryEmbedding")
def _rotary_embedding(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """A rotation of each feature pair by the cached angle: X's gradient is the rotation back
    (the same op with -sin). The caches' gradients are, per pair and summed over the heads,
    g1 x1 + g2 x2 (cos) and g2 x1 - g1 x2 (sin), scattered to position_ids when given."""
    ct, x, cos, sin, positions = _ct(cts), _req(node, 0), _req(node, 1), _req(node, 2), _in(node, 3)
    where = node.describe()
    at = _attrs(node)
    dx = b.op("RotaryEmbedding", [ct, cos, b.neg(sin), positions], **node.attrs)
    half = _dims(b, cos, -1)
    if not isinstance(half, list):
        raise GradientError(f"{where}: the gradient needs the caches' static last dim")
    rot = 2 * half[0]
    x1, x2 = _rotary_halves(b, x, rot, at, where)
    g1, g2 = _rotary_halves(b, ct, rot, at, where)
    dcos = _sum(b, b.op("Add", [b.mul(g1, x1), b.mul(g2, x2)]), [2])  # [B, S, R/2]
    dsin = _sum(b, b.op("Sub", [b.mul(g2, x1), b.mul(g1, x2)]), [2])
    if positions is not None:  # the caches' rows read at position_ids [B, S]
        at_rows = b.op("Unsqueeze", [positions, b.ints([-1])])
        dcos = b.op("ScatterND", [b.zeros_like(cos), at_rows, dcos], reduction="add")
        dsin = b.op("ScatterND", [b.zeros_like(sin), at_rows, dsin], reduction="add")
    return [dx, dcos, dsin, None]


def _rotary_halves(
    b: Builder, v: Value, rot: int, at: dict[str, Any], where: str
) -> tuple[Value, Value]:
    """The two halves (or the even and odd features, interleaved) of the first ``rot`` features
    of each head of RotaryEmbedding's X (or its cotangent), each [B, S, H, rot / 2]."""
    if b.rank(v, where) == 4:
        heads = b.op("Transpose", [v], perm=[0, 2, 1, 3])  # [B, S, H, D]
    else:
        heads = b.op("Reshape", [v, b.ints([0, 0, int(at["num_heads"]), -1])])
    last = b.ints([3])
    if at["interleaved"]:
        pairs = b.op("Slice", [heads, b.ints([0]), b.ints([rot]), last])
        pairs = b.op("Reshape", [pairs, b.ints([0, 0, 0, rot // 2, 2])])
        first, second = (b.op("Gather", [pairs, b.ints(k)], axis=4) for k in (0, 1))
        return first, second
    first = b.op("Slice", [heads, b.ints([0]), b.ints([rot // 2]), last])
    second = b.op("Slice", [heads, b.ints([rot // 2]), b.ints([rot]), last])
    return first, second


# --- Attention ----------------------------------------------------------------------------------


@vjp("Attention")
def _attention(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    """Through the probabilities P (an Attention of the same inputs giving them as its
    qk_matmul_output, mode 3, unless the node does already): Y = P @ V, P = softmax of the
    biased scores, biased = softcap(raw) + mask (where allowed), raw = scale * Q @ K^T; the
    key/value heads shared by groups of query heads (GQA) take the sum of their groups. Works
    on [B, Hkv, G, S, D] (4-D heads, grouped) with Einsum."""
    where = node.describe()
    q, mask, past_k = _req(node, 0), _in(node, 3), _in(node, 4)
    at = _attrs(node)
    ct_y, ct_pk, ct_pv, ct_qk = cts
    mode, cap = int(at["qk_matmul_output_mode"]), float(at["softcap"])
    packed = b.rank(q, where) == 3
    keys, values = node.outputs[1], node.outputs[2]  # present_key/value: [B, Hkv, T, D]
    kv_heads = _dims(b, keys, 1, 2)
    if mode == 3:
        probs = node.outputs[3]
    else:
        probs = b.ops("Attention", node.inputs, **{**node.attrs, "qk_matmul_output_mode": 3})[3]

    def grouped(x: Value) -> Value:  # [B, Hq, ...] as [B, Hkv, G, ...]
        return b.op("Reshape", [x, _vec(b, [0], kv_heads, [-1], _dims(b, x, 2))])

    def ungrouped(x: Value) -> Value:  # [B, Hkv, G, ...] as [B, Hq, ...]
        return b.op("Reshape", [x, _vec(b, [0, -1], _dims(b, x, 3))])

    q4 = _heads(b, q, at["q_num_heads"]) if packed else q
    q5, p5 = grouped(q4), grouped(probs)
    scale = _attention_scale(b, q4, at["scale"])
    vq = _like(b, values, q)
    dp = None
    ct5 = None
    if ct_y is not None:
        ct5 = grouped(_heads(b, ct_y, at["q_num_heads"]) if packed else ct_y)
        dp = ungrouped(b.op("Einsum", [ct5, vq], equation="bhgqv,bhkv->bhgqk"))
    if mode == 3:
        dp = b.add(dp, ct_qk)
    ds = None
    if dp is not None:
        ds = b.mul(probs, b.op("Sub", [dp, _sum(b, b.mul(dp, probs), [-1], keep=True)]))
    if mode == 2 and ct_qk is not None:  # the biased scores: -inf where a key is disallowed
        shut = b.op("IsInf", [node.outputs[3]])
        ds = b.add(ds, b.op("Where", [shut, b.const(0, ct_qk), ct_qk]))
    dmask = None
    if ds is not None and mask is not None and differentiable(mask):
        dmask = ds
        if _dims(b, mask, -1) != _dims(b, ds, -1):  # a short mask: the rest was disallowed
            dmask = b.op("Slice", [ds, b.ints([0]), _shape(b, mask, -1), b.ints([-1])])
        dmask = _like(b, b.sum_to(dmask, mask, where), mask)
    draw = ds
    if mode == 1:
        draw = b.add(draw, ct_qk)
    if cap > 0 and draw is not None:
        raw = b.mul(b.op("Einsum", [q5, keys], equation="bhgqd,bhkd->bhgqk"), scale)
        tanh = b.op("Tanh", [b.op("Div", [ungrouped(raw), b.const(cap, raw)])])
        draw = b.mul(draw, b.op("Sub", [b.const(1, tanh), b.mul(tanh, tanh)]))
    if mode == 0:
        draw = b.add(draw, ct_qk)
    dq = dkeys = None
    if draw is not None:
        draw5 = b.mul(grouped(draw), scale)
        dq = ungrouped(b.op("Einsum", [draw5, keys], equation="bhgqk,bhkd->bhgqd"))
        dq = _packed(b, dq) if packed else dq
        dkeys = b.op("Einsum", [draw5, q5], equation="bhgqk,bhgqd->bhkd")
    dkeys = b.add(dkeys, ct_pk)
    dvalues = None
    if ct5 is not None:
        dvalues = b.op("Einsum", [p5, ct5], equation="bhgqk,bhgqv->bhkv")
        dvalues = _like(b, dvalues, values)
    dvalues = b.add(dvalues, ct_pv)
    dk, dpast_k = _split_cache(b, dkeys, past_k)
    dv, dpast_v = _split_cache(b, dvalues, past_k)
    if packed:
        dk = None if dk is None else _packed(b, dk)
        dv = None if dv is None else _packed(b, dv)
    return [dq, dk, dv, dmask, dpast_k, dpast_v, None]


def _heads(b: Builder, x: Value, heads: int) -> Value:
    """[B, S, H*D] as [B, H, S, D]."""
    split = b.op("Reshape", [x, b.ints([0, 0, heads, -1])])
    return b.op("Transpose", [split], perm=[0, 2, 1, 3])


def _packed(b: Builder, x: Value) -> Value:
    """[B, H, S, D] as [B, S, H*D]."""
    moved = b.op("Transpose", [x], perm=[0, 2, 1, 3])
    return b.op("Reshape", [moved, b.ints([0, 0, -1])])


def _attention_scale(b: Builder, q4: Value, scale: float | None) -> Value:
    """The factor of Q @ K^T: ``scale``, else 1 / sqrt(head size), as Q's [B, H, S, D] has it."""
    if scale is not None:
        return b.const(scale, q4)
    size = _dims(b, q4, 3, 4)
    if isinstance(size, list):
        return b.const(1 / math.sqrt(size[0]), q4)
    root = b.op("Sqrt", [_like(b, b.op("Reshape", [size, b.ints([])]), q4)])
    return b.op("Reciprocal", [root])


def _split_cache(
    b: Builder, ct: Value | None, past: Value | None
) -> tuple[Value | None, Value | None]:
    """A present key/value's cotangent [B, H, past + S, D] as (the new part's, the past's)."""
    if ct is None or past is None:
        return ct, None
    length = _vec(b, _dims(b, past, 2, 3))
    axis = b.ints([2])
    old = b.op("Slice", [ct, b.ints([0]), length, axis])
    new = b.op("Slice", [ct, length, b.ints([np.iinfo(np.int64).max]), axis])
    return new, old
