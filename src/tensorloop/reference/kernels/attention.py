"""Reference kernels for the attention ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.graph import Graph
from ...tensor.dtypes import DType
from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import fail

Array = np.ndarray[Any, Any]


def float_or_double(x: Array) -> np.dtype[Any]:
    """f64 for an f64 array, else f32: FlexAttention's default softmax precision."""
    return np.dtype(np.float64 if x.dtype == np.float64 else np.float32)


def split_heads(x: Array, heads: int) -> Array:
    """[B, S, H*D] -> [B, H, S, D]."""
    b, s, hidden = x.shape
    if heads <= 0 or hidden % heads:
        raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def merge_heads(x: Array) -> Array:
    """[B, H, S, D] -> [B, S, H*D]."""
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def grouped(ctx: KernelContext, x: Array, kv_heads: int) -> Array:
    """[B, Hq, ...] -> [B, Hkv, Hq/Hkv, ...]: query head h reads key/value head h // group."""
    if kv_heads <= 0 or x.shape[1] % kv_heads:
        raise fail(ctx, f"query heads ({x.shape[1]}) are not a multiple of kv heads ({kv_heads})")
    return x.reshape(x.shape[0], kv_heads, x.shape[1] // kv_heads, *x.shape[2:])


def grouped_scores(ctx: KernelContext, q: Array, k: Array) -> Array:
    """q @ k^T per query head, with k's heads shared by groups of query heads: [B,Hq,Sq,Skv]."""
    s = grouped(ctx, q, k.shape[1]) @ k[:, :, None].swapaxes(-1, -2)
    return s.reshape(q.shape[0], q.shape[1], q.shape[2], k.shape[2]).astype(q.dtype)


def grouped_values(ctx: KernelContext, p: Array, v: Array) -> Array:
    """p @ v per query head, v's heads shared like k's: [B,Hq,Sq,Dv]."""
    y = grouped(ctx, p, v.shape[1]) @ v[:, :, None]
    return y.reshape(p.shape[0], p.shape[1], p.shape[2], v.shape[3]).astype(p.dtype)


def softmax(x: Array) -> Array:
    """Softmax over the last axis in ``x``'s type; a row of only -inf gives zeros, not NaN."""
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(top), 0, top))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)  # type: ignore[no-any-return]


def attention_bias(
    ctx: KernelContext,
    mask: Array | None,
    offset: Array,
    nonpad: Array | None,
    total: int,
    sq: int,
    ct: np.dtype[Any],
) -> tuple[Array, Array]:
    """The keys each query may see (bool) and the float mask added to its scores, both 4-D and
    broadcastable to [B, Hq, Sq, total]."""
    additive: Array = np.zeros((1, 1, 1, 1), ct)
    allowed: Array = np.ones((1, 1, 1, 1), bool)
    if mask is not None:
        short = total - mask.shape[-1]
        if short < 0:
            raise fail(ctx, f"attn_mask's last dim {mask.shape[-1]} exceeds the {total} keys")
        boolean = mask.dtype == np.bool_
        values = mask if boolean else mask.astype(ct)
        widths = [(0, 0)] * (mask.ndim - 1) + [(0, short)]
        padded = np.pad(values, widths, constant_values=False if boolean else -np.inf)
        padded = padded.reshape((1,) * (4 - mask.ndim) + padded.shape)
        if boolean:
            allowed = padded
        else:
            additive = padded
    query = np.arange(sq).reshape(1, 1, sq, 1) + offset.reshape(-1, 1, 1, 1)
    key = np.arange(total).reshape(1, 1, 1, total)
    if ctx.attr("is_causal"):
        allowed = allowed & (key <= query)
    left, right = ctx.attr("left_window_size"), ctx.attr("right_window_size")
    if left >= 0:
        allowed = allowed & (query - key <= left)
    if right >= 0:
        allowed = allowed & (key - query <= right)
    if nonpad is not None:
        allowed = allowed & (key < nonpad.reshape(-1, 1, 1, 1))
    return allowed, additive


@kernel("Attention")
def attention(
    ctx: KernelContext,
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None = None,
    past_k: Array | None = None,
    past_v: Array | None = None,
    nonpad: Array | None = None,
) -> tuple[Array, Array, Array, Array]:
    packed = q.ndim == 3
    if packed:
        q4 = split_heads(q, ctx.attr("q_num_heads"))
        k4, v4 = (split_heads(x, ctx.attr("kv_num_heads")) for x in (k, v))
    else:
        q4, k4, v4 = q, k, v
    present_k = k4 if past_k is None else np.concatenate([past_k, k4], axis=2)
    present_v = v4 if past_v is None else np.concatenate([past_v, v4], axis=2)
    # ONNX defines Attention as a graph of ops on Q's type, so each stage rounds to it, as
    # there; only the softmax may run in another precision.
    ct = q.dtype
    sq, total = q4.shape[2], present_k.shape[2]
    scale = ctx.attr("scale")
    root = ct.type(np.sqrt(1 / np.sqrt(q4.shape[3]) if scale is None else scale))
    if past_k is not None:
        offset = np.array([past_k.shape[2]])
    elif nonpad is not None:
        offset = nonpad.astype(np.int64) - sq
    else:
        offset = np.zeros(1, np.int64)
    allowed, additive = attention_bias(ctx, mask, offset, nonpad, total, sq, ct)
    # A query with no key to see (every key disallowed or masked with -inf) outputs zeros.
    blind = np.all(~allowed | np.isneginf(additive), axis=-1, keepdims=True)
    precision = ctx.attr("softmax_precision")
    cap = ctx.attr("softcap")
    with np.errstate(all="ignore"):  # inf and NaN scores are IEEE results, not faults
        raw = grouped_scores(ctx, q4.astype(ct) * root, present_k.astype(ct) * root)
        capped = cap * np.tanh(raw / cap) if cap > 0 else raw
        biased = np.where(allowed, capped + additive, -np.inf)
        probs = softmax(biased.astype(ct if precision is None else precision.numpy))
        weights = np.where(blind, 0, probs).astype(ct)
        y = grouped_values(ctx, weights, present_v.astype(ct))
    mode = ctx.attr("qk_matmul_output_mode")
    qk = (raw, capped, biased, weights)[mode]
    return merge_heads(y) if packed else y, present_k, present_v, qk.astype(ct)


@kernel("FlexAttention")
def flex_attention(ctx: KernelContext, q: Array, k: Array, v: Array, *captured: Array) -> Array:
    precision: DType | None = ctx.attr("softmax_precision")
    pt = precision.numpy if precision is not None else float_or_double(q)
    scale = ctx.attr("scale")
    root = q.dtype.type(np.sqrt(1 / np.sqrt(q.shape[3]) if scale is None else scale))
    split = ctx.attr("score_mod_captures")
    with np.errstate(all="ignore"):  # inf and NaN scores are IEEE results, not faults
        scores = grouped_scores(ctx, q * root, k * root).astype(pt)
        scores = modified(ctx, "score_mod", scores, captured[:split])
        probs = modified(ctx, "prob_mod", softmax(scores), captured[split:])
        return grouped_values(ctx, probs, v.astype(pt)).astype(q.dtype)


def modified(ctx: KernelContext, key: str, x: Array, captured: tuple[Array, ...]) -> Array:
    """``x`` passed through modifier graph ``key`` (if any), which must keep its type."""
    graph: Graph | None = ctx.attr(key)
    if graph is None:
        return x
    (out,) = ctx.run_graph(graph, [x, *captured])
    out = np.asarray(out)
    if out.shape != x.shape or out.dtype != x.dtype:
        raise fail(
            ctx,
            f"{key} must keep its input's type {x.dtype}{list(x.shape)}, "
            f"gave {out.dtype}{list(out.shape)}",
        )
    return out


@kernel("LinearAttention")
def linear_attention(
    ctx: KernelContext,
    query: Array,
    key: Array,
    value: Array,
    past: Array | None = None,
    decay: Array | None = None,
    beta: Array | None = None,
) -> tuple[Array, Array]:
    hq, hkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    q, k, v = split_heads(query, hq), split_heads(key, hkv), split_heads(value, hkv)
    b, _, steps, dk = q.shape
    dv = v.shape[3]
    ct = np.dtype(np.float32)
    state = np.zeros((b, hkv, dk, dv), ct) if past is None else past.astype(ct)
    if state.shape != (b, hkv, dk, dv):
        raise fail(ctx, f"past_state is {list(state.shape)}, expected {[b, hkv, dk, dv]}")
    gate = None if decay is None else np.exp(per_head(ctx, "decay", decay, hkv, dk).astype(ct))
    rate = None if beta is None else per_head(ctx, "beta", beta, hkv, 1).astype(ct)
    scale = ctx.attr("scale") or 1 / np.sqrt(dk)
    q, k, v = (x.astype(ct) for x in (q, k, v))
    out = np.empty((b, hq, steps, dv), ct)
    # The recurrence is sequential in time; every step is vectorized over batch and heads.
    for t in range(steps):
        if gate is not None:
            state = state * gate[:, :, t, :, None]
        update = v[:, :, t]
        if rate is not None:
            recalled = np.einsum("bhkv,bhk->bhv", state, k[:, :, t])
            update = rate[:, :, t] * (update - recalled)
        state = state + k[:, :, t, :, None] * update[:, :, None, :]
        read = grouped(ctx, q[:, :, t], hkv)
        out[:, :, t] = scale * np.einsum("bhgk,bhkv->bhgv", read, state).reshape(b, hq, dv)
    state_type = query.dtype if past is None else past.dtype
    return merge_heads(out).astype(query.dtype), state.astype(state_type)


def per_head(ctx: KernelContext, name: str, x: Array, heads: int, size: int) -> Array:
    """decay/beta [B, T, H*size or H or 1] as [B, H or 1, T, size or 1]."""
    b, t, last = x.shape
    if last == heads * size:
        return split_heads(x, heads)
    if last in (heads, 1):
        return x.reshape(b, t, last, 1).transpose(0, 2, 1, 3)
    raise fail(ctx, f"{name}'s last dim {last} is none of {heads * size}, {heads}, 1")


@kernel("RotaryEmbedding")
def rotary_embedding(
    ctx: KernelContext, x: Array, cos: Array, sin: Array, positions: Array | None = None
) -> Array:
    # Work on [B, S, H, D] so the caches ([B, S, R/2]) broadcast over heads.
    if x.ndim == 4:
        xs = x.transpose(0, 2, 1, 3)
    else:
        xs = split_heads(x, ctx.attr("num_heads")).transpose(0, 2, 1, 3)
    rot = ctx.attr("rotary_embedding_dim") or xs.shape[3]
    if positions is not None:
        cos, sin = cos[positions], sin[positions]
    c, s = (widen(a)[:, :, None, :] for a in (cos, sin))
    if c.shape[-1] != rot // 2:
        raise fail(ctx, f"the caches' last dim {c.shape[-1]} is not rotary dim / 2 = {rot // 2}")
    head = widen(xs[..., :rot])
    interleaved = ctx.attr("interleaved")
    x1, x2 = (head[..., 0::2], head[..., 1::2]) if interleaved else np.split(head, 2, axis=-1)
    turned = (x1 * c - x2 * s, x1 * s + x2 * c)
    joined = (
        np.stack(turned, axis=-1).reshape(head.shape)
        if interleaved
        else np.concatenate(turned, axis=-1)
    )
    ys = np.concatenate([joined.astype(x.dtype), xs[..., rot:]], axis=-1)
    return ys.transpose(0, 2, 1, 3) if x.ndim == 4 else ys.reshape(x.shape)


@kernel("SwiGLU")
def swiglu(ctx: KernelContext, a: Array, b: Array) -> Array:
    if a.shape != b.shape:
        raise fail(ctx, f"A and B must have one shape, got {list(a.shape)} and {list(b.shape)}")
    wa, wb = widen(a), widen(b)
    with np.errstate(over="ignore"):
        gate = wa / (1 + np.exp(-ctx.attr("alpha") * wa))
    return np.asarray(gate * wb).astype(a.dtype)
