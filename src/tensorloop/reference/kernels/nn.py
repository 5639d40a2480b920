"""Reference kernels for the nn ops: convolutions, pooling, normalizations, dropout and losses."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ...ops.common import normalize_axes
from ...ops.nn import Window, stash_dtype, transpose_out_shape, window
from ...tensor.dtypes import from_numpy
from ...tensor.numerics import widen
from ...tensor.types import TensorType
from ..registry import KernelContext, kernel
from . import portable
from .elementwise import Array, axis_in, fail, is_float

Geometry = list[tuple[int, int, int]]
"""Per spatial axis: (output size, pad at the begin, pad at the end)."""


def _checked(ctx: KernelContext, fn: Callable[..., Any], *args: Any) -> Any:
    """Call a shared geometry helper, its ValueError becoming this node's ExecutionError."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None


def _spatial(ctx: KernelContext, x: Array) -> tuple[int, ...]:
    if x.ndim < 3:
        raise fail(ctx, f"X of shape {list(x.shape)}: expected (N, C, D1, ...)")
    return tuple(x.shape[2:])


_WINDOW_ATTRS = ("strides", "dilations", "pads", "auto_pad", "ceil_mode")
"""The attributes ``window`` reads."""
_GEOMETRIES: dict[Any, tuple[Window, Geometry]] = {}
"""(Window, Geometry) by kernel, spatial sizes and window attributes: a model runs the same few
convolutions and pools again and again, and working their geometry out costs more than a
small one of them."""


def _geometry(ctx: KernelContext, kernel_shape: Sequence[int], x: Array) -> tuple[Window, Geometry]:
    sizes = _spatial(ctx, x)
    if len(kernel_shape) != len(sizes):
        raise fail(ctx, f"kernel {list(kernel_shape)} does not fit X of shape {list(x.shape)}")
    values = [ctx.attrs.get(a) for a in _WINDOW_ATTRS]
    key: Any = (
        tuple(kernel_shape),
        sizes,
        *(tuple(v) if isinstance(v, list) else v for v in values),
    )
    try:
        return _GEOMETRIES[key]
    except KeyError:
        pass
    except TypeError:  # an attribute that does not hash: worked out every time
        key = None
    win: Window = _checked(ctx, window, ctx.attrs, kernel_shape)
    found = win, [_checked(ctx, win.along, i, n) for i, n in enumerate(sizes)]
    if key is not None and len(_GEOMETRIES) < 1024:
        _GEOMETRIES[key] = found
    return found


def _kernel_of(ctx: KernelContext, w: Array) -> tuple[int, ...]:
    given = ctx.attr("kernel_shape")
    k = tuple(w.shape[2:]) if given is None else tuple(int(v) for v in given)
    if k != tuple(w.shape[2:]):
        raise fail(ctx, f"kernel_shape {list(k)} does not match W of shape {list(w.shape)}")
    return k


def _reach(win: Window, geo: Geometry) -> list[int]:
    """Per spatial axis, how far into the padded input the windows read."""
    return [(g[0] - 1) * win.strides[i] + win.span(i) for i, g in enumerate(geo)]


def _framed(x: Array, begins: Sequence[int], extents: Sequence[int], fill: Any) -> Array:
    """(N, C, *extents): at j along spatial axis i, x's entry j - begins[i], or ``fill`` where
    that is outside x (the pads, and past the end pads where ceil_mode reads on). ``x`` or a
    slice of it when no ``fill`` is needed; else one new buffer with only its borders filled
    (np.pad costs far more than the copy)."""
    sizes = x.shape[2:]
    if not any(begins) and all(e <= s for e, s in zip(extents, sizes, strict=True)):
        return x[(slice(None), slice(None), *(slice(0, e) for e in extents))]
    frame = np.empty((*x.shape[:2], *extents), x.dtype)
    every = (slice(None), slice(None))
    # where x lands in the frame, per axis: [lo, hi)
    spans = [(min(b, e), min(b + s, e)) for b, e, s in zip(begins, extents, sizes, strict=True)]
    frame[(*every, *(slice(lo, hi) for lo, hi in spans))] = x[
        (*every, *(slice(lo - b, hi - b) for (lo, hi), b in zip(spans, begins, strict=True)))
    ]
    for i, (lo, hi) in enumerate(spans):
        before = (*every, *[slice(None)] * i)
        frame[(*before, slice(0, lo))] = fill
        frame[(*before, slice(hi, None))] = fill
    return frame


def _strided(frame: Array, win: Window, geo: Geometry, lead: Sequence[int]) -> Array:
    """A view of ``frame`` (``lead`` axes, then the spatial ones, padded) shaped (*lead, *kernel,
    *out): at [..., tap, o] what kernel position ``tap`` reads in output window ``o``."""
    n = len(geo)
    steps = frame.strides[-n:]
    return as_strided(
        frame,
        (*lead, *win.kernel, *(g[0] for g in geo)),
        (
            *frame.strides[:-n],
            *(d * st for d, st in zip(win.dilations, steps, strict=True)),
            *(s * st for s, st in zip(win.strides, steps, strict=True)),
        ),
        writeable=False,
    )


def _windows(x: Array, win: Window, geo: Geometry, fill: Any) -> Array:
    """A (N, C, *out, *kernel) view of every window of ``x`` padded with ``fill``."""
    n = len(geo)
    frame = _framed(x, [g[1] for g in geo], _reach(win, geo), fill)
    view = _strided(frame, win, geo, x.shape[:2])
    return view.transpose(0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n))


def _check_groups(ctx: KernelContext, c: int, w: Array, group: int) -> None:
    """X's ``c`` channels and W (M, C/group, *kernel) fit ``group`` groups."""
    m, cg = w.shape[:2]
    if c != cg * group or m % group:
        raise fail(
            ctx,
            f"X has {c} channels and W of shape {list(w.shape)} takes {cg} per group for "
            f"{group} groups (and needs its {m} outputs divisible by {group})",
        )


def _contract(ctx: KernelContext, patches: Array, w: Array, group: int) -> Array:
    """im2col: patches (N, C, *out, *kernel) times W (M, C/group, *kernel) per group,
    as one batched matmul, giving (N, M, *out)."""
    n_, c = patches.shape[:2]
    m, cg = w.shape[:2]
    _check_groups(ctx, c, w, group)
    n = w.ndim - 2
    out = patches.shape[2 : 2 + n]
    grouped = patches.reshape(n_, group, cg, *patches.shape[2:])
    order = (1, 0, *range(3, 3 + n), 2, *range(3 + n, 3 + 2 * n))
    cols = grouped.transpose(order).reshape(group, -1, cg * int(np.prod(w.shape[2:])))
    filters = w.reshape(group, m // group, -1).transpose(0, 2, 1)
    y = np.matmul(cols, filters).reshape(group, n_, *out, m // group)
    back = (1, 0, 2 + n, *range(2, 2 + n))
    return np.asarray(y.transpose(back).reshape(n_, m, *out))


def _per_channel(v: Array, rank: int) -> Array:
    """A length-C vector shaped to broadcast along axis 1 of a rank-``rank`` tensor."""
    return v.reshape(-1, *[1] * (rank - 2))


COLUMN_BYTES = 1 << 20
"""How many bytes of columns ``_convolve`` copies at a time: a block of whole groups (one at
least), which stays in the cache for the matrix products that read it."""


FEW_POSITIONS = 16
"""A strided conv of several images with fewer output positions than this makes one product
per group over all the images' columns (``_products``)."""


SHIFTED_FROM = 16
"""At stride 1, a conv whose groups take at least this many input channels, and at least
twice as many as they give output channels, sums tap by tap its matrix products over the
frame as it lies, instead of copying columns (``_flattened``)."""


def _convolve(
    ctx: KernelContext,
    x: Array,
    w: Array,
    group: int,
    win: Window,
    geo: Geometry,
    bias: Array | None = None,
) -> Array:
    """The convolution of X (N, C, *in) by W (M, C/group, *kernel) in groups, plus ``bias``
    (one per output channel) if given: a new (N, M, *out) array in x's type.

    im2col: the windows of the padded X, one strided view of it, are copied into columns
    (N, group, C/group * taps, positions) and W's rows multiply them, one matrix product per
    image and group giving NCHW directly; the sums are in the BLAS's order, the bias added
    after them. Depthwise convs too: their products are matrix-vector ones, which the BLAS
    runs faster than NumPy adds the taps up one by one. A 1x1 kernel at stride 1 without pads
    takes X itself as its columns.

    At stride 1 the positions are those of the padded planes flattened (``_flattened``): each
    tap reads one contiguous run of them, so the columns copy long rows, or none is copied
    where the groups have many more inputs than outputs (SHIFTED_FROM): there each tap's
    product is summed, in row-major order of the taps."""
    n_, c = x.shape[:2]
    m, cg = w.shape[:2]
    _check_groups(ctx, c, w, group)
    out = tuple(g[0] for g in geo)
    if not n_ or not math.prod(out):  # no outputs: no images, or SAME over an empty axis
        return np.zeros((n_, m, *out), x.dtype)
    filters = w.reshape(group, m // group, cg * math.prod(win.kernel))
    begins, reach = [g[1] for g in geo], _reach(win, geo)
    if any(s != 1 for s in win.strides):
        frame = _framed(x, begins, reach, 0)
        grouped = frame.reshape(n_, group, cg, *frame.shape[2:])
        windows = _strided(grouped, win, geo, grouped.shape[:3])
        size = math.prod(out)
        y = np.empty((n_, m, *out), x.dtype)
        _products(filters, windows, size, y.reshape(n_, group, m // group, size), len(geo))
    elif not any(begins) and all(k == 1 for k in win.kernel) and reach == list(x.shape[2:]):
        columns = x.reshape(n_, group, cg, math.prod(out))
        y = np.matmul(filters, columns).reshape(n_, m, *out)
    else:
        frame = np.ascontiguousarray(_framed(x, begins, reach, 0))
        return _flattened(frame, filters, win, out, bias)
    if bias is not None:
        y += _per_channel(bias, y.ndim)
    return y


def _products(filters: Array, windows: Array, size: int, sums: Array, rank: int) -> None:
    """W's rows per group, ``filters`` (group, M/group, C/group * taps), times the columns
    that ``windows`` (N, group, C/group, *kernel, positions...; ``rank`` kernel axes) copy to,
    ``size`` positions each, into ``sums`` (N, group, M/group, size): a block of groups
    (COLUMN_BYTES) at a time, each copied into one buffer; or, for several images of fewer
    than FEW_POSITIONS positions, one product per group over all of them."""
    n_, group = windows.shape[:2]
    depth = filters.shape[2]
    if n_ > 1 and size < FEW_POSITIONS:
        # Many images of few positions each (a framed signal's strided transform): one
        # product per group over every image's columns, not one per image and group.
        order = (1, 2, *range(3, 3 + rank), 0, *range(3 + rank, windows.ndim))
        columns = np.ascontiguousarray(windows.transpose(order)).reshape(group, depth, -1)
        products = np.matmul(filters, columns).reshape(group, -1, n_, size)
        np.copyto(sums, products.transpose(2, 0, 1, 3))
        return
    per = min(group, max(1, COLUMN_BYTES // max(1, n_ * depth * size * windows.itemsize)))
    block = np.empty(n_ * per * depth * size, windows.dtype)
    for g0 in range(0, group, per):
        g1 = min(group, g0 + per)
        columns = block[: n_ * (g1 - g0) * depth * size].reshape(n_, g1 - g0, *windows.shape[2:])
        np.copyto(columns, windows[:, g0:g1])
        np.matmul(filters[g0:g1], columns.reshape(n_, g1 - g0, depth, size), out=sums[:, g0:g1])


def _flattened(
    frame: Array, filters: Array, win: Window, out: Sequence[int], bias: Array | None
) -> Array:
    """_convolve at stride 1 over ``frame``, the padded X (C-contiguous), its planes flattened:
    output o sits at position sum(o[i] * rows[i]) of a plane, rows[i] being a step along axis
    i, and each tap reads the run of positions from its offset on. The sums cover the run from
    the first output to the last, and so, between the outputs, the positions whose windows
    wrap around a row: no output takes them, and they are dropped."""
    n_, c = frame.shape[:2]
    group, mg = filters.shape[:2]
    cg, taps = c // group, math.prod(win.kernel)
    item, n = frame.itemsize, len(out)
    rows = [math.prod(frame.shape[3 + i :]) for i in range(n)]
    length = sum((o - 1) * r for o, r in zip(out, rows, strict=True)) + 1
    planes = frame.reshape(n_, group, cg, math.prod(frame.shape[2:]))
    sums = np.empty((n_, group, mg, length), frame.dtype)
    if taps > 1 and cg >= SHIFTED_FROM and 2 * mg <= cg:
        # Fewer outputs than inputs per group: rather than copy columns, multiply W's columns
        # of each tap by the run it reads (a matrix as it lies in the frame), tap by tap.
        per_tap = np.ascontiguousarray(filters.reshape(group, mg, cg, taps).transpose(3, 0, 1, 2))
        product = np.empty_like(sums)
        for t, tap in enumerate(np.ndindex(*win.kernel)):
            at = sum(i * d * r for i, d, r in zip(tap, win.dilations, rows, strict=True))
            run = planes[..., at : at + length]
            if t == 0:
                np.matmul(per_tap[t], run, out=sums)
            else:
                sums += np.matmul(per_tap[t], run, out=product)
    else:
        windows = as_strided(
            planes,
            (*planes.shape[:3], *win.kernel, length),
            (
                *planes.strides[:3],
                *(d * r * item for d, r in zip(win.dilations, rows, strict=True)),
                item,
            ),
            writeable=False,
        )
        _products(filters, windows, length, sums, len(win.kernel))
    shape = (n_, group * mg, *out)
    if length == math.prod(out):  # no position between the outputs
        y = sums.reshape(shape)
        if bias is not None:
            y += _per_channel(bias, y.ndim)
        return y
    step = sums.strides[0], length * item, *(r * item for r in rows)
    outputs = as_strided(sums, shape, step, writeable=False)
    y = np.empty(shape, sums.dtype)
    if bias is None:
        np.copyto(y, outputs)
    else:
        np.add(outputs, _per_channel(bias, y.ndim), out=y)
    return y


@kernel("Conv")
def conv(ctx: KernelContext, data: Any, weight: Any, bias: Any = None) -> Array:
    x, w = widen(data), widen(weight)
    win, geo = _geometry(ctx, _kernel_of(ctx, w), x)
    b = None if bias is None else widen(bias)
    y = _convolve(ctx, x, w, ctx.attr("group"), win, geo, b)
    return y.astype(np.asarray(data).dtype, copy=False)


def _shifted(q: Any, zero_point: Any, rank: int) -> Array:
    """Integers minus their zero point (a scalar, or one per output channel), exact in f64."""
    shifted: Array = np.asarray(q).astype(np.float64)
    if zero_point is not None:
        z = np.asarray(zero_point).astype(np.float64)
        shifted = shifted - (z.reshape(-1, *[1] * (rank - 1)) if z.size > 1 else z.reshape(()))
    return shifted


def _integer_conv(ctx: KernelContext, x: Any, x_zero: Any, w: Any, w_zero: Any) -> Array:
    """The exact integer accumulator of a quantized conv: products of 8-bit values are summed
    in f64, which is exact far beyond any realistic kernel size."""
    xs, ws = _shifted(x, x_zero, 1), _shifted(w, w_zero, np.ndim(w))
    win, geo = _geometry(ctx, _kernel_of(ctx, ws), xs)
    return _convolve(ctx, xs, ws, ctx.attr("group"), win, geo)


@kernel("ConvInteger")
def conv_integer(
    ctx: KernelContext, x: Any, w: Any, x_zero: Any = None, w_zero: Any = None
) -> Array:
    acc = _integer_conv(ctx, x, x_zero, w, w_zero)
    return acc.astype(np.int64).astype(np.int32)  # wraps past int32, like the int32 accumulator


@kernel("QLinearConv")
def qlinear_conv(
    ctx: KernelContext,
    x: Any,
    x_scale: Any,
    x_zero: Any,
    w: Any,
    w_scale: Any,
    w_zero: Any,
    y_scale: Any,
    y_zero: Any,
    bias: Any = None,
) -> Array:
    acc = _integer_conv(ctx, x, x_zero, w, w_zero)
    if bias is not None:
        acc = acc + _per_channel(np.asarray(bias).astype(np.float64), acc.ndim)
    # The requantization multiplier is a float32, as in the int32 -> float32 requantize step.
    ws = np.asarray(w_scale, np.float32)
    scale = np.float32(x_scale) * (ws.reshape(-1) if ws.size > 1 else ws.reshape(()))
    scale = scale / np.float32(y_scale)
    real = acc.astype(np.int64).astype(np.float32) * (
        _per_channel(scale, acc.ndim) if np.ndim(scale) else scale
    )
    out_type = np.asarray(y_zero).dtype
    info = np.iinfo(out_type)
    q = np.rint(real) + np.asarray(y_zero).astype(np.float32)
    return np.asarray(np.clip(q, info.min, info.max)).astype(out_type)


@kernel("DeformConv")
def deform_conv(
    ctx: KernelContext, data: Any, weight: Any, offset: Any, bias: Any = None, mask: Any = None
) -> Array:
    x, w, off = widen(data), widen(weight), widen(offset)
    k = _kernel_of(ctx, w)
    win, geo = _geometry(ctx, k, x)
    n_, c = x.shape[:2]
    sizes, out = x.shape[2:], [g[0] for g in geo]
    n, taps, og = len(k), int(np.prod(k)), ctx.attr("offset_group")
    want = (n_, og * taps * n, *out)
    if off.shape != want or c % og:
        raise fail(
            ctx,
            f"offset of shape {list(off.shape)}: expected {list(want)}, with X's {c} channels "
            f"divisible by offset_group {og}",
        )
    shifts = off.reshape(n_, og, taps, n, *out)
    # Per spatial axis, where each tap of each window reads with no offset: (taps, *out).
    tap = np.indices(k).reshape(n, taps)
    base = [
        (np.arange(o) * win.strides[i] - geo[i][1]).reshape(
            1, *[-1 if j == i else 1 for j in range(n)]
        )
        + (tap[i] * win.dilations[i]).reshape(taps, *[1] * n)
        for i, o in enumerate(out)
    ]
    pos = [base[i] + shifts[:, :, :, i] for i in range(n)]  # each (N, og, taps, *out)
    lows = [np.floor(p) for p in pos]
    grouped = x.reshape(n_, og, c // og, -1)
    sampled = np.zeros((n_, og, c // og, taps * int(np.prod(out))), x.dtype)
    # Without the pad, a sample off [0, size) on any axis reads 0 and one inside reads its
    # corners clamped onto X (the far corner of the last pixel is that pixel).
    padded = ctx.attr("bilinear_interpolation_pad") == 1
    usable = np.ones(pos[0].shape, bool)
    if not padded:
        for p, size in zip(pos, sizes, strict=True):
            usable &= (p >= 0) & (p < size)
    # Multilinear interpolation: add up the 2^n corners around each position.
    for corner in np.ndindex(*[2] * n):
        weight_ = np.ones_like(pos[0])
        flat = np.zeros(pos[0].shape, np.int64)
        inside = usable.copy()
        for i, bit in enumerate(corner):
            at = lows[i] + bit
            weight_ = weight_ * (1 - np.abs(pos[i] - at))
            if padded:
                inside &= (at >= 0) & (at < sizes[i])
            flat = flat * sizes[i] + np.clip(at, 0, sizes[i] - 1).astype(np.int64)
        index = flat.reshape(n_, og, 1, -1)
        picked = np.take_along_axis(
            grouped, np.broadcast_to(index, (*grouped.shape[:3], index.shape[-1])), -1
        )
        sampled += picked * np.where(inside, weight_, 0).reshape(n_, og, 1, -1)
    if mask is not None:
        sampled = sampled * widen(mask).reshape(n_, og, 1, -1)
    patches = sampled.reshape(n_, c, *k, *out)
    patches = patches.transpose(0, 1, *range(2 + n, 2 + 2 * n), *range(2, 2 + n))
    y = _contract(ctx, patches, w, ctx.attr("group"))
    if bias is not None:
        y = y + _per_channel(widen(bias), y.ndim)
    return y.astype(np.asarray(data).dtype)


def _crop(a: Array, begins: Sequence[int], sizes: Sequence[int]) -> Array:
    """a[:, :, begin:begin+size per spatial axis], reading zeros outside ``a``."""
    widths = [(0, 0), (0, 0)]
    for i, (b, s) in enumerate(zip(begins, sizes, strict=True)):
        widths.append((max(0, -b), max(0, b + s - a.shape[2 + i])))
    if any(lo or hi for lo, hi in widths):
        a = np.pad(a, widths)
    index = [
        slice(b + lo, b + lo + s) for b, s, (lo, _) in zip(begins, sizes, widths[2:], strict=True)
    ]
    return a[(slice(None), slice(None), *index)]


@kernel("ConvTranspose")
def conv_transpose(ctx: KernelContext, data: Any, weight: Any, bias: Any = None) -> Array:
    x, w = widen(data), widen(weight)
    sizes = _spatial(ctx, x)
    k, group = _kernel_of(ctx, w), ctx.attr("group")
    if w.ndim != x.ndim or w.shape[0] != x.shape[1] or x.shape[1] % group:
        raise fail(
            ctx,
            f"W of shape {list(w.shape)} must be (C, M/group, k...) for X of {list(x.shape)} "
            f"with {group} groups",
        )
    geo: Geometry = _checked(ctx, transpose_out_shape, ctx.attrs, k, sizes)
    win: Window = _checked(ctx, window, ctx.attrs, k)
    n_, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    # Each input position scatters its kernel-sized block, per group W's columns times X:
    # cols (N, M, *k, *in), NCHW straight from the matrix product.
    filters = w.reshape(group, cg, mg * math.prod(k)).transpose(0, 2, 1)
    cols = np.matmul(filters, x.reshape(n_, group, cg, math.prod(sizes)))
    cols = cols.reshape(n_, group * mg, *k, *sizes)
    # ... added into the full result at stride steps, one strided add per kernel tap; where
    # the blocks tile the result (a stride of the kernel's size), each tap's is just written.
    full = [(s - 1) * win.strides[i] + win.span(i) for i, s in enumerate(sizes)]
    tiled = all(d == 1 and st == t for d, st, t in zip(win.dilations, win.strides, k, strict=True))
    y = (np.empty if tiled else np.zeros)((n_, group * mg, *full), x.dtype)
    for tap in np.ndindex(*k):
        spots = tuple(
            slice(t * d, t * d + (s - 1) * st + 1, st)
            for t, d, s, st in zip(tap, win.dilations, sizes, win.strides, strict=True)
        )
        at, block = (slice(None), slice(None), *spots), cols[(slice(None), slice(None), *tap)]
        if tiled:
            y[at] = block
        else:
            y[at] += block
    y = _crop(y, [g[1] for g in geo], [g[0] for g in geo])
    if bias is not None:
        y = y + _per_channel(widen(bias), y.ndim)
    return np.ascontiguousarray(y).astype(np.asarray(data).dtype, copy=False)


# --- Pooling ------------------------------------------------------------------------------------


def _pool_windows(ctx: KernelContext, x: Array, fill: Any) -> tuple[Array, Window, Geometry]:
    win, geo = _geometry(ctx, [int(v) for v in ctx.attr("kernel_shape")], x)
    return _windows(x, win, geo, fill), win, geo


@kernel("AveragePool")
def average_pool(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    view, win, geo = _pool_windows(ctx, x, 0)
    total = view.sum(tuple(range(x.ndim, view.ndim)))
    # Divisors separate by axis: per axis, how many positions each window reads from X (or from
    # X and its pads with count_include_pad=1; never the extra ceil_mode positions).
    counts = np.ones(())
    for i, (out, begin, end) in enumerate(geo):
        size = x.shape[2 + i]
        need = (out - 1) * win.strides[i] + win.span(i)
        valid = np.zeros(max(begin + size + end, need))
        if ctx.attr("count_include_pad"):
            valid[: begin + size + end] = 1
        else:
            valid[begin : begin + size] = 1
        per = sliding_window_view(valid, win.span(i))[
            : (out - 1) * win.strides[i] + 1 : win.strides[i], :: win.dilations[i]
        ].sum(-1)
        counts = np.multiply.outer(counts, per)
    with np.errstate(all="ignore"):  # a window wholly in the pads averages nothing: NaN
        return np.asarray(total / counts).astype(np.asarray(data).dtype)


@kernel("LpPool")
def lp_pool(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    view, _, _ = _pool_windows(ctx, x, 0)
    p = ctx.attr("p")
    total = np.sum(np.abs(view) ** p, axis=tuple(range(x.ndim, view.ndim)))
    return np.asarray(total ** (1.0 / p)).astype(np.asarray(data).dtype)


@kernel("MaxPool")
def max_pool(ctx: KernelContext, data: Any) -> tuple[Array, Array]:
    x = widen(data)
    lowest = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
    view, win, geo = _pool_windows(ctx, x, lowest)
    n = x.ndim - 2
    flat = view.reshape(*view.shape[: 2 + n], -1)
    pick = np.argmax(flat, axis=-1)
    y = np.take_along_axis(flat, pick[..., None], -1)[..., 0]
    # Where each maximum sits in X: window start + tap * dilation, per spatial axis.
    taps = np.unravel_index(pick, win.kernel)
    sizes = x.shape[2:]
    order = range(n) if not ctx.attr("storage_order") else range(n - 1, -1, -1)
    index = np.zeros(pick.shape, np.int64)
    for i in order:
        start = np.arange(geo[i][0]) * win.strides[i] - geo[i][1]
        at = start.reshape(-1, *[1] * (n - 1 - i)) + taps[i] * win.dilations[i]
        index = index * sizes[i] + at
    plane = int(np.prod(sizes))
    channel = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[0], x.shape[1], *[1] * n)
    return y.astype(np.asarray(data).dtype), index + channel * plane


_GLOBAL: dict[str, Callable[[KernelContext, Array, tuple[int, ...]], Any]] = {
    "GlobalAveragePool": lambda ctx, x, axes: np.mean(x, axes, keepdims=True),
    "GlobalMaxPool": lambda ctx, x, axes: np.max(x, axes, keepdims=True),
    "GlobalLpPool": lambda ctx, x, axes: (
        np.sum(np.abs(x) ** ctx.attr("p"), axes, keepdims=True) ** (1.0 / ctx.attr("p"))
    ),
}


@kernel(*_GLOBAL)
def global_pool(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    if x.ndim < 2:
        raise fail(ctx, f"X of shape {list(x.shape)}: expected (N, C, ...)")
    axes = tuple(range(2, x.ndim))
    if ctx.node.op == "GlobalAveragePool" and any(x.shape[a] == 0 for a in axes):
        # the mean of nothing: NaN, as the spec's ReduceMean has it (NumPy would warn)
        return np.full(tuple(1 if a in axes else d for a, d in enumerate(x.shape)), np.nan).astype(
            np.asarray(data).dtype
        )
    y = _GLOBAL[ctx.node.op](ctx, x, axes)
    return np.asarray(y).astype(np.asarray(data).dtype)


@kernel("MaxUnpool")
def max_unpool(ctx: KernelContext, data: Any, indices: Any, output_shape: Any = None) -> Array:
    x, where = np.asarray(data), np.asarray(indices)
    if where.shape != x.shape:
        raise fail(ctx, f"I of shape {list(where.shape)} must match X of {list(x.shape)}")
    if output_shape is not None:
        shape = [int(v) for v in np.asarray(output_shape).reshape(-1)]
    else:
        kernel_shape = [int(v) for v in ctx.attr("kernel_shape")]
        win: Window = _checked(ctx, window, ctx.attrs, kernel_shape)
        n = len(kernel_shape)
        shape = [
            *x.shape[:2],
            *[
                (d - 1) * win.strides[i] + kernel_shape[i] - win.pads[i] - win.pads[i + n]
                for i, d in enumerate(_spatial(ctx, x))
            ],
        ]
    out = np.zeros(int(np.prod(shape)), x.dtype)
    if where.size and (where.min() < 0 or where.max() >= out.size):
        raise fail(ctx, f"an index in I is outside the output of shape {shape}")
    out[where.reshape(-1)] = x.reshape(-1)
    return out.reshape(shape)


# --- Normalizations -----------------------------------------------------------------------------
# Instance, Layer, Group, RMS and MeanVariance normalization compute portable's functions, which
# the JAX lowerings share.


@kernel("BatchNormalization")
def batch_norm(
    ctx: KernelContext, data: Any, scale: Any, b: Any, mean: Any, var: Any
) -> tuple[Array, Array, Array]:
    x = widen(data)
    stats = np.asarray(mean).dtype
    mu, sigma2 = widen(mean), widen(var)
    running_mean, running_var = np.asarray(mean), np.asarray(var)
    if ctx.attr("training_mode"):
        axes = tuple(i for i in range(x.ndim) if i != 1)
        mu, sigma2 = np.mean(x, axes), np.var(x, axes)
        momentum = ctx.attr("momentum")
        running_mean = (widen(mean) * momentum + mu * (1 - momentum)).astype(stats)
        running_var = (widen(var) * momentum + sigma2 * (1 - momentum)).astype(stats)
    eps = ctx.attr("epsilon")
    y = (x - _per_channel(mu, x.ndim)) / np.sqrt(_per_channel(sigma2, x.ndim) + eps)
    y = y * _per_channel(widen(scale), x.ndim) + _per_channel(widen(b), x.ndim)
    return y.astype(np.asarray(data).dtype), running_mean, running_var


@kernel("InstanceNormalization")
def instance_norm(ctx: KernelContext, data: Any, scale: Any, b: Any) -> Array:
    y: Array = portable.instance_norm(widen(data), scale, b, ctx.attr("epsilon"))
    return y.astype(np.asarray(data).dtype)


def _stash(ctx: KernelContext, data: Array) -> np.dtype[Any]:
    return stash_dtype(TensorType(from_numpy(data), None), ctx.attr("stash_type")).numpy


@kernel("LayerNormalization")
def layer_norm(
    ctx: KernelContext, data: Any, scale: Any, b: Any = None
) -> tuple[Array, Array, Array]:
    x = np.asarray(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    y, mean, inv = portable.layer_norm(x, scale, b, axis, ctx.attr("epsilon"), _stash(ctx, x))
    return y, mean, inv


@kernel("GroupNormalization")
def group_norm(ctx: KernelContext, data: Any, scale: Any, bias: Any) -> Array:
    x = np.asarray(data)
    g, c = ctx.attr("num_groups"), x.shape[1]
    if c % g:
        raise fail(ctx, f"X's {c} channels do not split into {g} groups")
    y: Array = portable.group_norm(x, scale, bias, g, ctx.attr("epsilon"), _stash(ctx, x))
    return y


@kernel("RMSNormalization")
def rms_norm(ctx: KernelContext, data: Any, scale: Any) -> Array:
    x, s = np.asarray(data), np.asarray(scale)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    y: Array = portable.rms_norm(x, s, axis, ctx.attr("epsilon"), _stash(ctx, x))
    return y


@kernel("LpNormalization")
def lp_norm(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    if ctx.attr("p") == 1:
        norm = np.sum(np.abs(x), axis, keepdims=True)
    else:
        norm = np.sqrt(np.sum(x * x, axis, keepdims=True))
    with np.errstate(all="ignore"):  # a zero norm gives 0 below, not NaN
        y = np.where(norm == 0, 0, x / norm)
    return y.astype(np.asarray(data).dtype)


@kernel("MeanVarianceNormalization")
def mean_variance_norm(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    axes = tuple(_checked(ctx, normalize_axes, [int(a) for a in ctx.attr("axes")], x.ndim))
    return np.asarray(portable.mean_variance_norm(x, axes)).astype(np.asarray(data).dtype)


@kernel("LRN")
def lrn(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    size = ctx.attr("size")
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    squares = np.pad(x * x, [(0, 0), (before, after), *[(0, 0)] * (x.ndim - 2)])
    total = sliding_window_view(squares, size, axis=1).sum(-1)
    scale = ctx.attr("bias") + ctx.attr("alpha") / size * total
    return np.asarray(x / scale ** ctx.attr("beta")).astype(np.asarray(data).dtype)


@kernel("Dropout")
def dropout(
    ctx: KernelContext, data: Any, ratio: Any = None, training_mode: Any = None
) -> tuple[Array, Array]:
    x = np.asarray(data)
    rate = 0.5 if ratio is None else float(np.asarray(ratio).astype(np.float64).reshape(()))
    training = training_mode is not None and bool(np.asarray(training_mode).reshape(()))
    if not training or rate == 0:
        return x, np.ones(x.shape, bool)
    if not 0 <= rate < 1:
        raise fail(ctx, f"ratio must be in [0, 1), got {rate}")
    seed = ctx.attr("seed")
    # A seed picks NumPy's classic Mersenne Twister, so a seeded mask is reproducible anywhere.
    draws = (
        np.random.default_rng().random(x.shape)
        if seed is None
        else (np.random.RandomState(seed).uniform(0, 1, x.shape))
    )
    keep = draws >= rate
    y = widen(x) * keep / (1 - rate)
    return y.astype(x.dtype), keep


# --- Losses -------------------------------------------------------------------------------------


def _nll(ctx: KernelContext, logp: Array, target: Any, weight: Any) -> Array:
    """NegativeLogLikelihoodLoss on the widened (N, C, d...) log-probabilities."""
    t = np.asarray(target).astype(np.int64)
    classes = logp.shape[1]
    if t.shape != (logp.shape[0], *logp.shape[2:]):
        raise fail(ctx, f"target of shape {list(t.shape)} does not fit input {list(logp.shape)}")
    ignore = ctx.attr("ignore_index")
    ignored = np.zeros(t.shape, bool) if ignore is None else t == ignore
    bad = ~ignored & ((t < 0) | (t >= classes))
    if bad.any():
        raise fail(ctx, f"target {int(t[bad][0])} is not a class index in [0, {classes})")
    safe = np.where(ignored, 0, t)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    w = np.ones(classes, logp.dtype) if weight is None else widen(weight)
    weights = np.where(ignored, 0, w[safe])
    loss = -picked * weights
    reduction = ctx.attr("reduction")
    if reduction == "none":
        return loss
    total = np.sum(loss, dtype=np.float64)
    if reduction == "sum":
        return np.asarray(total)
    with np.errstate(all="ignore"):  # all entries ignored: 0 / 0
        return np.asarray(total / np.sum(weights, dtype=np.float64))


@kernel("NegativeLogLikelihoodLoss")
def nll_loss(ctx: KernelContext, data: Any, target: Any, weight: Any = None) -> Array:
    return _nll(ctx, widen(data), target, weight).astype(np.asarray(data).dtype)


@kernel("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(
    ctx: KernelContext, scores: Any, labels: Any, weights: Any = None
) -> tuple[Array, Array]:
    x = widen(scores)
    if x.ndim < 2:
        raise fail(ctx, f"scores of shape {list(x.shape)}: expected (N, C, d1, ...)")
    shifted = x - np.max(x, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dt = np.asarray(scores).dtype
    return _nll(ctx, logp, labels, weights).astype(dt), logp.astype(dt)


@kernel("CausalConvWithState")
def causal_conv(
    ctx: KernelContext, data: Any, weight: Any, bias: Any = None, past: Any = None
) -> tuple[Array, Array]:
    x, w = np.asarray(data), np.asarray(weight)
    b, c, _ = x.shape
    k = w.shape[2]
    if w.shape != (c, 1, k) or k < 1:
        raise fail(ctx, f"weight of shape {list(w.shape)}: expected ({c}, 1, k) with k >= 1")
    state = np.zeros((b, c, k - 1), x.dtype) if past is None else np.asarray(past)
    if state.shape != (b, c, k - 1):
        raise fail(ctx, f"past_state of shape {list(state.shape)}: expected {[b, c, k - 1]}")
    prefixed = np.concatenate([state, x], axis=2)
    wide, length = widen(prefixed), x.shape[2]
    # Output t sees prefixed positions t .. t+k-1: one shifted multiply-add per tap.
    y = sum(
        (wide[:, :, j : j + length] * widen(w)[:, :, j] for j in range(k)),
        np.zeros(x.shape, wide.dtype),
    )
    if bias is not None:
        y = y + widen(bias)[:, None]
    y = y.astype(x.dtype)
    if ctx.attr("activation") in ("silu", "swish"):
        # The activation runs in float32 on the rounded convolution, as the ONNX function does.
        z = y.astype(np.float32) if x.dtype.itemsize < 4 else y
        with np.errstate(over="ignore"):
            y = (z / (1 + np.exp(-z))).astype(x.dtype)
    return y, prefixed[:, :, prefixed.shape[2] - (k - 1) :]
