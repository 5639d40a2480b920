"""Lowerings of the neural-network ops: convolution, pooling, normalisation (see ``ops.py`` for
the rules every lowering follows).

Window geometry (output sizes, pads, ceil_mode) comes from ``ops.window``, the helper the
reference kernels use, so both agree on every attribute variant; the windows themselves are
``lax.conv_general_dilated`` and ``lax.reduce_window`` over the input padded as the reference
pads it (further at the end where ceil_mode runs the last window past the end pad), cut to the
reference's output size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir.graph import Node
from ...ops.common import normalize_axes
from ...ops.nn import stash_dtype, transpose_out_shape, window
from ...ops.quant import param_layout, quantized_type
from ...ops.window import Window
from ...reference.kernels import portable
from ...tensor.dtypes import DType, dtype
from ...tensor.types import TensorType, normalize_axis
from .lowering import JAX_DTYPES, JaxValue, LowerContext, UnlowerableError, lowers
from .ops import widen

Attrs = dict[str, Any]
Geometry = list[tuple[int, int, int]]
HIGHEST = lax.Precision.HIGHEST


def _dtype(x: JaxValue) -> Any:
    return jnp.asarray(x).dtype


def _per_channel(v: JaxValue, rank: int) -> JaxValue:
    """A length-C vector shaped to broadcast along axis 1 of a rank-``rank`` tensor."""
    return jnp.reshape(v, (-1, *[1] * (rank - 2)))


def _input_type(node: Node, i: int) -> TensorType:
    v = node.inputs[i]
    assert v is not None
    return v.tensor_type


def _used(node: Node, k: int) -> bool:
    """Whether output ``k`` of ``node`` is read (by a node or as a result of its graph)."""
    v = node.outputs[k]
    return bool(v.uses) or (node.graph is not None and v in node.graph.outputs)


# --- Window geometry ----------------------------------------------------------------------------


def _geometry(attrs: Attrs, kernel: Sequence[int], x: JaxValue) -> tuple[Window, Geometry]:
    """The reference's Window and (out, begin pad, end pad) per spatial axis of ``x``."""
    sizes = tuple(x.shape[2:])
    if x.ndim < 3 or len(kernel) != len(sizes):
        raise UnlowerableError(f"kernel {list(kernel)} does not fit X of shape {list(x.shape)}")
    win = window(attrs, [int(k) for k in kernel])
    return win, [win.along(i, n) for i, n in enumerate(sizes)]


def _pads(x: JaxValue, win: Window, geo: Geometry) -> list[tuple[int, int]]:
    """The spatial pads the reference's window view reads: the end pad grown to fit the last
    (ceil_mode) window."""
    out = []
    for i, (n, begin, end) in enumerate(geo):
        need = (n - 1) * win.strides[i] + win.span(i)
        out.append((begin, max(end, need - x.shape[2 + i] - begin)))
    return out


def _cut(y: JaxValue, geo: Geometry) -> JaxValue:
    """``y`` (N, C, *spatial) cut to the reference's output sizes."""
    return y[(slice(None), slice(None), *[slice(0, g[0]) for g in geo])]


def _pool(x: JaxValue, win: Window, geo: Geometry, fill: Any, op: Callable[..., Any]) -> JaxValue:
    """``op`` (lax.add or lax.max) over every window of ``x`` padded with ``fill``."""
    pads = _pads(x, win, geo)
    padded = jnp.pad(x, [(0, 0), (0, 0), *pads], constant_values=fill)
    y = lax.reduce_window(
        padded,
        jnp.asarray(fill, x.dtype),
        op,
        (1, 1, *win.kernel),
        (1, 1, *win.strides),
        "VALID",
        window_dilation=(1, 1, *win.dilations),
    )
    return _cut(y, geo)


def _kernel_of(attrs: Attrs, w: JaxValue) -> tuple[int, ...]:
    given = attrs.get("kernel_shape")
    k = tuple(w.shape[2:])
    if given is not None and tuple(int(v) for v in given) != k:
        raise UnlowerableError(
            f"kernel_shape {list(given)} does not match W of shape {list(w.shape)}"
        )
    return k


# --- Convolutions -------------------------------------------------------------------------------


def _conv(
    x: JaxValue,
    w: JaxValue,
    group: int,
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
) -> JaxValue:
    """N-D cross-correlation of (N, C, ...) by (M, C/group, ...)."""
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise UnlowerableError(
            f"X of {list(x.shape)} and W of {list(w.shape)} do not fit {group} groups"
        )
    return lax.conv_general_dilated(
        x,
        w,
        tuple(strides),
        list(pads),
        lhs_dilation=None if lhs_dilation is None else tuple(lhs_dilation),
        rhs_dilation=tuple(dilations),
        feature_group_count=group,
        precision=HIGHEST,
        preferred_element_type=x.dtype,
    )


def _biased(y: JaxValue, bias: JaxValue, dtype: Any) -> JaxValue:
    if bias is not None:
        y = y + _per_channel(widen(bias), y.ndim)
    return y.astype(dtype)


@lowers("Conv")
def _conv_op(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, weight: Any, bias: Any = None
) -> list[Any]:
    x, w = widen(data), widen(weight)
    win, geo = _geometry(attrs, _kernel_of(attrs, w), x)
    y = _conv(x, w, attrs["group"], win.strides, win.dilations, _pads(x, win, geo))
    return [_biased(_cut(y, geo), bias, _dtype(data))]


@lowers("ConvTranspose")
def _conv_transpose(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, weight: Any, bias: Any = None
) -> list[Any]:
    x, w = widen(data), widen(weight)
    k, group = _kernel_of(attrs, w), attrs["group"]
    sizes = tuple(x.shape[2:])
    if x.ndim < 3 or w.ndim != x.ndim or w.shape[0] != x.shape[1] or x.shape[1] % group:
        raise UnlowerableError(f"W of {list(w.shape)} does not fit X of {list(x.shape)}")
    geo = transpose_out_shape(attrs, k, sizes)
    win = window(attrs, k)
    c, mg, n = x.shape[1], w.shape[1], len(k)
    # W (C, M/g, k...) as the forward kernel (M, C/g, k...) flipped in space: a cross-correlation
    # of X dilated by the strides gives the full result; pads pick the crop (negative: cut).
    fw = w.reshape(group, c // group, mg, *k).swapaxes(1, 2).reshape(group * mg, c // group, *k)
    fw = jnp.flip(fw, tuple(range(2, 2 + n)))
    pads = [
        (win.span(i) - 1 - begin, out + begin - (sizes[i] - 1) * win.strides[i] - 1)
        for i, (out, begin, _) in enumerate(geo)
    ]
    y = _conv(x, fw, group, [1] * n, win.dilations, pads, lhs_dilation=win.strides)
    return [_biased(y, bias, _dtype(data))]


@lowers("CausalConvWithState")
def _causal_conv(
    ctx: LowerContext,
    node: Node,
    attrs: Attrs,
    data: Any,
    weight: Any,
    bias: Any = None,
    past: Any = None,
) -> list[Any]:
    b, c, length = data.shape
    k = weight.shape[2]
    if weight.shape != (c, 1, k) or k < 1:
        raise UnlowerableError(f"weight of shape {list(weight.shape)}: expected ({c}, 1, k)")
    state = jnp.zeros((b, c, k - 1), data.dtype) if past is None else past
    if state.shape != (b, c, k - 1):
        raise UnlowerableError(f"past_state of shape {list(state.shape)}: expected {[b, c, k - 1]}")
    prefixed = jnp.concatenate([state, data], axis=2)
    wide, ww = widen(prefixed), widen(weight)
    y = jnp.zeros(data.shape, wide.dtype)
    for j in range(k):  # one shifted multiply-add per tap, in the reference's order
        y = y + ctx.round_product(wide[:, :, j : j + length] * ww[:, :, j])
    if bias is not None:
        y = y + widen(bias)[:, None]
    y = y.astype(data.dtype)
    if attrs["activation"] in ("silu", "swish"):
        z = y.astype(jnp.float32) if data.dtype.itemsize < 4 else y
        y = (z / (1 + jnp.exp(-z))).astype(data.dtype)
    return [y, prefixed[:, :, prefixed.shape[2] - (k - 1) :]]


# --- Pooling ------------------------------------------------------------------------------------


def _pool_geometry(attrs: Attrs, x: JaxValue) -> tuple[Window, Geometry]:
    return _geometry(attrs, [int(v) for v in attrs["kernel_shape"]], x)


@lowers("AveragePool")
def _average_pool(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    win, geo = _pool_geometry(attrs, x)
    total = _pool(x, win, geo, 0, lax.add)
    # The divisors, as the reference counts them (static): per axis, the positions each window
    # reads from X (and its pads, with count_include_pad), never the extra ceil_mode ones.
    counts = np.ones(())
    for i, (out, begin, end) in enumerate(geo):
        size = x.shape[2 + i]
        need = (out - 1) * win.strides[i] + win.span(i)
        valid = np.zeros(max(begin + size + end, need))
        if attrs["count_include_pad"]:
            valid[: begin + size + end] = 1
        else:
            valid[begin : begin + size] = 1
        per = np.lib.stride_tricks.sliding_window_view(valid, win.span(i))[
            : (out - 1) * win.strides[i] + 1 : win.strides[i], :: win.dilations[i]
        ].sum(-1)
        counts = np.multiply.outer(counts, per)
    return [(total.astype(jnp.float64) / jnp.asarray(counts)).astype(_dtype(data))]


def _pow(x: JaxValue, p: int) -> JaxValue:
    return jnp.abs(x) ** p


@lowers("LpPool")
def _lp_pool(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    win, geo = _pool_geometry(attrs, x)
    p = attrs["p"]
    total = _pool(_pow(x, p), win, geo, 0, lax.add)
    return [(total ** (1.0 / p)).astype(_dtype(data))]


def _lowest(dt: Any) -> Any:
    return -np.inf if jnp.issubdtype(dt, jnp.floating) else np.iinfo(dt).min


def _first_max(
    a: tuple[JaxValue, JaxValue], b: tuple[JaxValue, JaxValue]
) -> tuple[JaxValue, JaxValue]:
    """np.argmax's pick of two (value, position) pairs: the larger value (NaN above all), the
    earlier position among equals."""
    (va, ia), (vb, ib) = a, b
    nan_a, nan_b = va != va, vb != vb
    take_a = (nan_a & (~nan_b | (ia < ib))) | (
        ~nan_a & ~nan_b & ((va > vb) | ((va == vb) & (ia < ib)))
    )
    return jnp.where(take_a, va, vb), jnp.where(take_a, ia, ib)


@lowers("MaxPool")
def _max_pool(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    win, geo = _pool_geometry(attrs, x)
    lowest = _lowest(x.dtype)
    if not _used(node, 1):
        y = _pool(x, win, geo, lowest, lax.max)
        return [y.astype(_dtype(data)), jnp.zeros(y.shape, jnp.int64)]
    # Indices: the row-major position in the padded input of each window's first maximum (as
    # np.argmax picks it), turned into the reference's index into X.
    pads = _pads(x, win, geo)
    padded = jnp.pad(x, [(0, 0), (0, 0), *pads], constant_values=lowest)
    spatial = padded.shape[2:]
    where = jnp.broadcast_to(
        jnp.arange(int(np.prod(spatial)), dtype=jnp.int64).reshape(spatial), padded.shape
    )
    y, pos = lax.reduce_window(
        (padded, where),
        (jnp.asarray(lowest, x.dtype), jnp.asarray(np.iinfo(np.int64).max, jnp.int64)),
        _first_max,
        (1, 1, *win.kernel),
        (1, 1, *win.strides),
        "VALID",
        window_dilation=(1, 1, *win.dilations),
    )
    y, pos = _cut(y, geo), _cut(pos, geo)
    n, sizes = len(spatial), x.shape[2:]
    coords = []
    for i in reversed(range(n)):
        coords.append(pos % spatial[i] - pads[i][0])
        pos = pos // spatial[i]
    coords.reverse()
    order = range(n) if not attrs["storage_order"] else range(n - 1, -1, -1)
    index = jnp.zeros(y.shape, jnp.int64)
    for i in order:
        index = index * sizes[i] + coords[i]
    plane = int(np.prod(sizes))
    channel = jnp.arange(x.shape[0] * x.shape[1], dtype=jnp.int64).reshape(
        x.shape[0], x.shape[1], *[1] * n
    )
    return [y.astype(_dtype(data)), index + channel * plane]


def _global_check(node: Node, attrs: Attrs) -> str | None:
    shape = _input_type(node, 0).shape
    if node.op == "GlobalMaxPool" and shape is not None and 0 in shape[2:]:
        return "the maximum of an empty window is the reference's error"
    return None


@lowers("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", check=_global_check)
def _global_pool(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    if x.ndim < 2:
        raise UnlowerableError(f"X of shape {list(x.shape)}: expected (N, C, ...)")
    axes = tuple(range(2, x.ndim))
    if node.op == "GlobalAveragePool":
        y = jnp.mean(x, axes, keepdims=True)
    elif node.op == "GlobalMaxPool":
        if any(x.shape[a] == 0 for a in axes):
            raise UnlowerableError("the maximum of an empty window")
        y = jnp.max(x, axes, keepdims=True) if axes else x
    else:
        p = attrs["p"]
        y = jnp.sum(_pow(x, p), axes, keepdims=True) ** (1.0 / p)
    return [y.astype(_dtype(data))]


# --- Normalizations -----------------------------------------------------------------------------


def _affine(ctx: LowerContext, y: JaxValue, scale: JaxValue, b: JaxValue | None) -> JaxValue:
    """y * scale + b, the product rounded on its own."""
    return portable.affine(y, scale, b, ctx.round_product)


@lowers("BatchNormalization")
def _batch_norm(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, scale: Any, b: Any, mean: Any, var: Any
) -> list[Any]:
    x = widen(data)
    rank = x.ndim
    mu, sigma2 = widen(mean), widen(var)
    running_mean, running_var = mean, var
    if attrs["training_mode"]:
        axes = tuple(i for i in range(rank) if i != 1)
        mu = jnp.mean(x, axes)
        centered = x - _per_channel(mu, rank)
        sigma2 = jnp.mean(ctx.round_product(centered * centered), axes)
        m = attrs["momentum"]
        running_mean = (
            ctx.round_product(widen(mean) * m) + ctx.round_product(mu * (1 - m))
        ).astype(mean.dtype)
        running_var = (
            ctx.round_product(widen(var) * m) + ctx.round_product(sigma2 * (1 - m))
        ).astype(var.dtype)
    y = (x - _per_channel(mu, rank)) / jnp.sqrt(_per_channel(sigma2, rank) + attrs["epsilon"])
    y = _affine(ctx, y, _per_channel(widen(scale), rank), _per_channel(widen(b), rank))
    return [y.astype(_dtype(data)), running_mean, running_var]


@lowers("InstanceNormalization")
def _instance_norm(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, scale: Any, b: Any
) -> list[Any]:
    x = widen(data)
    if x.ndim < 3:
        raise UnlowerableError(f"X of shape {list(x.shape)}: expected (N, C, D1, ...)")
    y = portable.instance_norm(x, scale, b, attrs["epsilon"], jnp, ctx.round_product)
    return [y.astype(_dtype(data))]


def _stash(x: JaxValue, attrs: Attrs) -> Any:
    """The type statistics are computed in (the reference's ``stash_dtype``)."""
    return stash_dtype(TensorType(dtype(_dtype(x)), None), attrs["stash_type"]).numpy


def _stash_check(node: Node, attrs: Attrs) -> str | None:
    if attrs["stash_type"] == 1 and _input_type(node, 0).dtype is DType.float64:
        # Float32 statistics of float64 data: the result is only as exact as the reference's
        # float32 summation order, which XLA does not follow.
        return "float64 data with float32 statistics (stash_type=1) must sum as NumPy does"
    return None


@lowers("LayerNormalization", check=_stash_check)
def _layer_norm(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, scale: Any, b: Any = None
) -> list[Any]:
    axis = normalize_axis(attrs["axis"], data.ndim, error=ValueError)
    stash = _stash(data, attrs)
    y, mean, inv = portable.layer_norm(
        data, scale, b, axis, attrs["epsilon"], stash, jnp, ctx.round_product
    )
    return [y, mean, inv]


@lowers("GroupNormalization", check=_stash_check)
def _group_norm(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, scale: Any, bias: Any
) -> list[Any]:
    g, c = attrs["num_groups"], data.shape[1]
    if c % g:
        raise UnlowerableError(f"X's {c} channels do not split into {g} groups")
    stash = _stash(data, attrs)
    y = portable.group_norm(data, scale, bias, g, attrs["epsilon"], stash, jnp, ctx.round_product)
    return [y]


@lowers("RMSNormalization", check=_stash_check)
def _rms_norm(ctx: LowerContext, node: Node, attrs: Attrs, data: Any, scale: Any) -> list[Any]:
    axis = normalize_axis(attrs["axis"], data.ndim, error=ValueError)
    stash = _stash(data, attrs)
    return [portable.rms_norm(data, scale, axis, attrs["epsilon"], stash, jnp, ctx.round_product)]


@lowers("LpNormalization")
def _lp_norm(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    axis = normalize_axis(attrs["axis"], x.ndim, error=ValueError)
    if attrs["p"] == 1:
        norm = jnp.sum(jnp.abs(x), axis, keepdims=True)
    else:
        norm = jnp.sqrt(jnp.sum(ctx.round_product(x * x), axis, keepdims=True))
    safe = jnp.where(norm == 0, jnp.ones((), x.dtype), norm)
    y = jnp.where(norm == 0, jnp.zeros((), x.dtype), x / safe)
    return [y.astype(_dtype(data))]


@lowers("MeanVarianceNormalization")
def _mean_variance_norm(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    axes = tuple(normalize_axes([int(a) for a in attrs["axes"]], x.ndim))
    y = portable.mean_variance_norm(x, axes, jnp, ctx.round_product)
    return [y.astype(_dtype(data))]


@lowers("LRN")
def _lrn(ctx: LowerContext, node: Node, attrs: Attrs, data: Any) -> list[Any]:
    x = widen(data)
    if x.ndim < 2:
        raise UnlowerableError(f"X of shape {list(x.shape)}: expected (N, C, ...)")
    size = attrs["size"]
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    ones = (1,) * x.ndim
    total = lax.reduce_window(
        ctx.round_product(x * x),
        jnp.zeros((), x.dtype),
        lax.add,
        (1, size, *ones[2:]),
        ones,
        [(0, 0), (before, after), *[(0, 0)] * (x.ndim - 2)],
    )
    alpha = np.asarray(attrs["alpha"] / size, x.dtype)
    scale = attrs["bias"] + ctx.round_product(alpha * total)
    return [(x / scale ** attrs["beta"]).astype(_dtype(data))]


# --- Dropout ------------------------------------------------------------------------------------


def _dropout_check(node: Node, attrs: Attrs) -> str | None:
    training = node.inputs[2] if len(node.inputs) > 2 else None
    ratio = node.inputs[1] if len(node.inputs) > 1 else None
    if training is None or training.constant is None or not bool(training.constant.reshape(())):
        return None
    rate = 0.5 if ratio is None or ratio.constant is None else float(ratio.constant.reshape(()))
    if ratio is not None and ratio.constant is None:
        return "training Dropout with a run-time ratio draws random numbers"
    if rate != 0:
        return "training Dropout draws random numbers (the compiled backend draws them)"
    return None


@lowers("Dropout", check=_dropout_check)
def _dropout(
    ctx: LowerContext, node: Node, attrs: Attrs, data: Any, ratio: Any = None, training: Any = None
) -> list[Any]:
    if training is not None:
        # Training with a nonzero ratio is random: the compiled backend runs (or rejects) it.
        rate = jnp.asarray(0.5) if ratio is None else jnp.reshape(ratio, ()).astype(jnp.float64)
        ctx.deopt_unless(~jnp.reshape(training, ()).astype(bool) | (rate == 0), node)
    return [data, jnp.ones(data.shape, bool)]


# --- Quantization -------------------------------------------------------------------------------

_SCALE_TYPES = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})


def _quant_check(node: Node, attrs: Attrs) -> str | None:
    for v in [*node.inputs, *node.outputs]:
        if v is not None and isinstance(v.type, TensorType) and v.type.dtype not in JAX_DTYPES:
            return f"element type {v.type.dtype} is not computed by XLA"
    if node.op == "QuantizeLinear":
        precision = attrs["precision"] or _input_type(node, 1).dtype
        if precision is DType.bfloat16 and _input_type(node, 0).dtype is DType.int32:
            return "int32 to bfloat16 rounds through float32 in the reference"
    return None


def _param(p: JaxValue, shape: tuple[int, ...], attrs: Attrs) -> JaxValue:
    """A scale or zero point shaped (blocks repeated) to broadcast over ``shape``."""
    kind, a = param_layout(p.shape, shape, attrs["axis"], attrs["block_size"])
    if kind == "tensor":
        return jnp.reshape(p, ())
    if kind == "axis":
        return jnp.reshape(p, [-1 if i == a else 1 for i in range(len(shape))])
    return jnp.take(jnp.repeat(p, attrs["block_size"], axis=a), jnp.arange(shape[a]), axis=a)


def _arithmetic(dt: DType) -> Any:
    """The NumPy type the reference divides in, for precision ``dt``."""
    if dt is DType.int32:
        return np.float64
    return dt.numpy


@lowers("QuantizeLinear", check=_quant_check)
def _quantize_linear(
    ctx: LowerContext, node: Node, attrs: Attrs, x: Any, scale: Any, zero: Any = None
) -> list[Any]:
    zt = None if zero is None else _input_type(node, 2).dtype
    to = quantized_type(zt, attrs["output_dtype"])
    if not to.is_int:
        raise UnlowerableError(f"quantizing to {to} is left to the compiled backend")
    dt = _arithmetic(attrs["precision"] or _input_type(node, 1).dtype)
    wide = jnp.float64 if dt == np.float64 else jnp.float32
    a = x.astype(dt).astype(wide)
    b = _param(scale, x.shape, attrs).astype(dt).astype(wide)
    ratio = (a / b).astype(dt).astype(jnp.float64)
    q = jnp.round(ratio)
    if zero is not None:
        q = q + _param(zero, x.shape, attrs).astype(jnp.float64)
    info = np.iinfo(to.numpy)
    q = jnp.clip(q, info.min, info.max)
    return [jnp.where(jnp.isnan(q), 0, q).astype(to.numpy)]


@lowers("DequantizeLinear", check=_quant_check)
def _dequantize_linear(
    ctx: LowerContext, node: Node, attrs: Attrs, x: Any, scale: Any, zero: Any = None
) -> list[Any]:
    out = (attrs["output_dtype"] or _input_type(node, 1).dtype).numpy
    shifted = x.astype(jnp.int64)
    if zero is not None:
        shifted = shifted - _param(zero, x.shape, attrs).astype(jnp.int64)
    wide = jnp.float64 if out == np.float64 else jnp.float32
    y = shifted.astype(wide) * _param(scale, x.shape, attrs).astype(wide)
    return [y.astype(out)]


# --- Attention helpers --------------------------------------------------------------------------


@lowers("SwiGLU")
def _swiglu(ctx: LowerContext, node: Node, attrs: Attrs, a: Any, b: Any) -> list[Any]:
    if a.shape != b.shape:
        raise UnlowerableError(f"A and B must have one shape, got {a.shape} and {b.shape}")
    wa, wb = widen(a), widen(b)
    gate = wa / (1 + jnp.exp((-attrs["alpha"]) * wa))
    return [(gate * wb).astype(a.dtype)]


def _split_heads(x: JaxValue, heads: int) -> JaxValue:
    b, s, hidden = x.shape
    if heads is None or heads <= 0 or hidden % heads:
        raise UnlowerableError(f"hidden size {hidden} is not a multiple of {heads} heads")
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


@lowers("RotaryEmbedding")
def _rotary_embedding(
    ctx: LowerContext, node: Node, attrs: Attrs, x: Any, cos: Any, sin: Any, positions: Any = None
) -> list[Any]:
    if x.ndim == 4:
        xs = x.transpose(0, 2, 1, 3)
    else:
        xs = _split_heads(x, attrs["num_heads"]).transpose(0, 2, 1, 3)
    rot = attrs["rotary_embedding_dim"] or xs.shape[3]
    if positions is not None:
        n = cos.shape[0]
        ctx.deopt_unless((positions >= -n) & (positions < n), node)  # NumPy's IndexError
        p = jnp.where(positions < 0, positions + n, positions)
        cos, sin = jnp.take(cos, p, axis=0), jnp.take(sin, p, axis=0)
    c, s = (widen(v)[:, :, None, :] for v in (cos, sin))
    if c.shape[-1] != rot // 2:
        raise UnlowerableError(f"the caches' last dim {c.shape[-1]} is not rotary dim / 2")
    head = widen(xs[..., :rot])
    if attrs["interleaved"]:
        x1, x2 = head[..., 0::2], head[..., 1::2]
    else:
        x1, x2 = head[..., : rot // 2], head[..., rot // 2 :]
    r = ctx.round_product
    turned = (r(x1 * c) - r(x2 * s), r(x1 * s) + r(x2 * c))
    if attrs["interleaved"]:
        joined = jnp.stack(turned, axis=-1).reshape(head.shape)
    else:
        joined = jnp.concatenate(turned, axis=-1)
    ys = jnp.concatenate([joined.astype(x.dtype), xs[..., rot:]], axis=-1)
    return [ys.transpose(0, 2, 1, 3) if x.ndim == 4 else ys.reshape(x.shape)]


def _attention_check(node: Node, attrs: Attrs) -> str | None:
    types = [_input_type(node, 0).dtype, attrs["softmax_precision"]]
    if any(t not in (None, DType.float32, DType.float64) for t in types):
        return "Attention in a narrow float rounds as NumPy's narrow matmul and softmax do"
    return None


def _grouped_matmul(a: JaxValue, b: JaxValue) -> JaxValue:
    """a [B, Hq, S, X] @ b [B, Hkv, X, Y] with each kv head shared by Hq / Hkv query heads."""
    bsz, hq = a.shape[:2]
    hkv = b.shape[1]
    if hkv <= 0 or hq % hkv:
        raise UnlowerableError(f"query heads ({hq}) are not a multiple of kv heads ({hkv})")
    g = a.reshape(bsz, hkv, hq // hkv, *a.shape[2:])
    y = jnp.matmul(g, b[:, :, None], precision=HIGHEST)
    return y.reshape(bsz, hq, *y.shape[3:])


@lowers("Attention", check=_attention_check)
def _attention(
    ctx: LowerContext,
    node: Node,
    attrs: Attrs,
    q: Any,
    k: Any,
    v: Any,
    mask: Any = None,
    past_k: Any = None,
    past_v: Any = None,
    nonpad: Any = None,
) -> list[Any]:
    packed = q.ndim == 3
    if packed:
        q4 = _split_heads(q, attrs["q_num_heads"])
        k4, v4 = (_split_heads(t, attrs["kv_num_heads"]) for t in (k, v))
    else:
        q4, k4, v4 = q, k, v
    present_k = k4 if past_k is None else jnp.concatenate([past_k, k4], axis=2)
    present_v = v4 if past_v is None else jnp.concatenate([past_v, v4], axis=2)
    ct = q.dtype
    sq, total = q4.shape[2], present_k.shape[2]
    scale = attrs["scale"]
    root = np.asarray(np.sqrt(1 / np.sqrt(q4.shape[3]) if scale is None else scale), ct)
    if past_k is not None:
        offset = jnp.full((1,), past_k.shape[2], jnp.int64)
    elif nonpad is not None:
        offset = nonpad.astype(jnp.int64) - sq
    else:
        offset = jnp.zeros((1,), jnp.int64)
    additive = jnp.zeros((1, 1, 1, 1), ct)
    allowed = jnp.ones((1, 1, 1, 1), bool)
    if mask is not None:
        short = total - mask.shape[-1]
        if short < 0:
            raise UnlowerableError(
                f"attn_mask's last dim {mask.shape[-1]} exceeds the {total} keys"
            )
        boolean = mask.dtype == jnp.bool_
        widths = [(0, 0)] * (mask.ndim - 1) + [(0, short)]
        padded = jnp.pad(
            mask if boolean else mask.astype(ct),
            widths,
            constant_values=False if boolean else -np.inf,
        )
        padded = padded.reshape((1,) * (4 - mask.ndim) + padded.shape)
        if boolean:
            allowed = padded
        else:
            additive = padded
    query = jnp.arange(sq, dtype=jnp.int64).reshape(1, 1, sq, 1) + offset.reshape(-1, 1, 1, 1)
    key = jnp.arange(total, dtype=jnp.int64).reshape(1, 1, 1, total)
    if attrs["is_causal"]:
        allowed = allowed & (key <= query)
    left, right = attrs["left_window_size"], attrs["right_window_size"]
    if left >= 0:
        allowed = allowed & (query - key <= left)
    if right >= 0:
        allowed = allowed & (key - query <= right)
    if nonpad is not None:
        allowed = allowed & (key < nonpad.astype(jnp.int64).reshape(-1, 1, 1, 1))
    blind = jnp.all(~allowed | jnp.isneginf(additive), axis=-1, keepdims=True)
    raw = _grouped_matmul(q4.astype(ct) * root, (present_k.astype(ct) * root).swapaxes(-1, -2))
    cap = attrs["softcap"]
    capped = cap * jnp.tanh(raw / np.asarray(cap, ct)) if cap > 0 else raw
    biased = jnp.where(allowed, capped + additive, -jnp.inf).astype(ct)
    precision = attrs["softmax_precision"]
    x = biased.astype(ct if precision is None else precision.numpy)
    top = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - jnp.where(jnp.isneginf(top), jnp.zeros((), x.dtype), top))
    den = jnp.sum(e, axis=-1, keepdims=True)
    probs = e / jnp.where(den == 0, jnp.ones((), x.dtype), den)
    weights = jnp.where(blind, jnp.zeros((), probs.dtype), probs).astype(ct)
    y = _grouped_matmul(weights, present_v.astype(ct)).astype(ct)
    if packed:
        b_, h_, s_, d_ = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(b_, s_, h_ * d_)
    qk = (raw, capped, biased, weights)[attrs["qk_matmul_output_mode"]]
    outs = [y, present_k, present_v, qk.astype(ct)]
    return outs[: len(node.outputs)]


__all__: list[str] = []
