"""Attention ops: Attention, FlexAttention, LinearAttention, RotaryEmbedding and SwiGLU."""

from __future__ import annotations

from ..ir.graph import Graph
from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect

Heads = tuple[Dim, Dim, Dim, Dim]
"""A query, key or value seen as (batch, heads, sequence, head size)."""

ATTENTION_MODES = (0, 1, 2, 3)
LINEAR_RULES = ("linear", "gated", "delta", "gated_delta")


def dim_add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return b if a == 0 else a if b == 0 else UNKNOWN


def dim_mul(a: Dim, k: Dim) -> Dim:
    if isinstance(a, int) and isinstance(k, int):
        return a * k
    return a if k == 1 else k if a == 1 else UNKNOWN


def dim_div(ctx: InferContext, d: Dim, k: int, what: str) -> Dim:
    """``d / k`` for a packed ``heads * size`` dim; an error when ``k`` does not divide it."""
    if k <= 0:
        raise ctx.error(f"{what}: expected a positive head count, got {k}")
    if not isinstance(d, int):
        return d if k == 1 else UNKNOWN
    if d % k:
        raise ctx.error(f"{what}: hidden size {d} is not a multiple of {k} heads")
    return d // k


def same_dim(ctx: InferContext, what: str, *dims: Dim) -> Dim:
    """The one dim that several places must agree on; an error when two static ones differ."""
    static = {d for d in dims if isinstance(d, int)}
    if len(static) > 1:
        raise ctx.error(f"{what} disagree: {' vs '.join(str(d) for d in dims)}")
    if static:
        return static.pop()
    named = {d for d in dims if d != UNKNOWN}
    return named.pop() if len(named) == 1 else UNKNOWN


def as_heads(ctx: InferContext, index: int, rank: int, num_heads: int | None, what: str) -> Heads:
    """Input ``index`` (3-D packed [B, S, H*D] or 4-D [B, H, S, D]) as 4-D dims."""
    t = expect(ctx, index, "float")
    shape = t.shape if t.shape is not None else (UNKNOWN,) * rank
    if len(shape) != rank:
        raise ctx.error(f"input #{index} ({what}): expected a {rank}-D tensor, got {t}")
    if rank == 4:
        b, h, s, d = shape
        if num_heads is not None:
            h = same_dim(ctx, f"{what} heads (attribute vs input)", num_heads, h)
        return b, h, s, d
    if num_heads is None:
        raise ctx.error(f"input #{index} ({what}) is 3-D, so the head count attribute is required")
    b, s, hidden = shape
    return b, num_heads, s, dim_div(ctx, hidden, num_heads, f"input #{index} ({what})")


def check_groups(ctx: InferContext, q_heads: Dim, kv_heads: Dim) -> None:
    if (
        isinstance(q_heads, int)
        and isinstance(kv_heads, int)
        and (kv_heads == 0 or q_heads % kv_heads)
    ):
        raise ctx.error(
            f"query heads ({q_heads}) must be a multiple of key/value heads ({kv_heads})"
        )


def check_softmax_precision(ctx: InferContext) -> None:
    precision = ctx.attr("softmax_precision")
    if precision is not None and not precision.is_float:
        raise ctx.error(f"softmax_precision: expected a floating-point type, got {precision}")


_ATTENTION_ATTRS = {
    "is_causal": AttrSpec(int, 0),
    "kv_num_heads": AttrSpec(int, None),
    "q_num_heads": AttrSpec(int, None),
    "qk_matmul_output_mode": AttrSpec(int, 0),
    "scale": AttrSpec((float, int), None),
    "softcap": AttrSpec((float, int), 0.0),
    "softmax_precision": AttrSpec(DType, None),
    "left_window_size": AttrSpec(int, -1),
    "right_window_size": AttrSpec(int, -1),
}


@op("Attention", inputs=(3, 7), attrs=_ATTENTION_ATTRS)
def _attention(ctx: InferContext) -> list[Type]:
    """Scaled dot-product attention (ONNX Attention-25).

    Inputs ``(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?)``; outputs
    ``(Y, present_key, present_value, qk_matmul_output)``. Q, K, V are all 4-D
    ``[B, H, S, D]`` or all 3-D ``[B, S, H*D]`` (then ``q_num_heads``/``kv_num_heads`` say H).
    K and V are appended to the past cache; each query head ``h`` reads key/value head
    ``h // (Hq / Hkv)``. Scores are ``(Q*sqrt(scale)) @ (K*sqrt(scale))^T`` (scale defaults to
    ``1/sqrt(D)``), soft-capped as ``softcap * tanh(s / softcap)`` when ``softcap > 0``, then
    biased by the mask: a bool mask disallows False keys, a float mask is added; a last mask
    dim shorter than the key count is padded with disallowed keys. With ``offset`` = the past
    length, else ``nonpad_kv_seqlen[b] - Sq``, else 0, query ``i`` sees key ``j`` only if
    ``j <= i + offset`` (``is_causal``), ``i + offset - j <= left_window_size`` and
    ``j - i - offset <= right_window_size`` (each bound when ``>= 0``), and ``j <
    nonpad_kv_seqlen[b]``. Softmax runs in ``softmax_precision``; a row with no key allowed
    gives zeros. ``qk_matmul_output`` holds the raw scores (mode 0), the soft-capped scores
    (1), the biased scores (2) or the probabilities (3). As in ONNX's function body, every
    stage computes in (and rounds to) Q's type, the softmax in ``softmax_precision``.
    """
    q = ctx.tensor(0)
    rank = (
        q.rank
        if q.rank is not None
        else next((t.rank for t in (ctx.tensor(1), ctx.tensor(2)) if t.rank is not None), 4)
    )
    if rank not in (3, 4):
        raise ctx.error(f"input #0 (Q): expected a 3-D or 4-D tensor, got {q}")
    dt, v_dt = ctx.same_dtype(0, 1), expect(ctx, 2, "float").dtype
    qh, kvh = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    qb, hq, sq, d = as_heads(ctx, 0, rank, qh, "Q")
    kb, hkv, skv, dk = as_heads(ctx, 1, rank, kvh, "K")
    vb, hv, sv, dv = as_heads(ctx, 2, rank, kvh, "V")
    batch = same_dim(ctx, "batch sizes of Q, K, V", qb, kb, vb)
    hkv = same_dim(ctx, "head counts of K and V", hkv, hv)
    skv = same_dim(ctx, "sequence lengths of K and V", skv, sv)
    d = same_dim(ctx, "head sizes of Q and K", d, dk)
    check_groups(ctx, hq, hkv)
    if ctx.has(4) != ctx.has(5):
        raise ctx.error("past_key (#4) and past_value (#5) must be given together")
    if ctx.has(4) and ctx.has(6):
        raise ctx.error("nonpad_kv_seqlen (#6) cannot be combined with past_key/past_value")
    total = skv
    if ctx.has(4):
        pk, pv = expect(ctx, 4, "float", rank=4), expect(ctx, 5, "float", rank=4)
        if pk.dtype != dt or pv.dtype != v_dt:
            raise ctx.error(
                f"past_key/past_value: expected {dt}/{v_dt} like K/V, got {pk.dtype}/{pv.dtype}"
            )
        kshape, vshape = pk.shape or (UNKNOWN,) * 4, pv.shape or (UNKNOWN,) * 4
        batch = same_dim(ctx, "batch sizes of Q and the past cache", batch, kshape[0], vshape[0])
        hkv = same_dim(ctx, "head counts of K and the past cache", hkv, kshape[1], vshape[1])
        past = same_dim(ctx, "past lengths of past_key and past_value", kshape[2], vshape[2])
        d = same_dim(ctx, "head sizes of K and past_key", d, kshape[3])
        dv = same_dim(ctx, "head sizes of V and past_value", dv, vshape[3])
        total = dim_add(past, skv)
    if ctx.has(3):
        mask = ctx.tensor(3)
        if mask.rank is not None and not 1 <= mask.rank <= 4:
            raise ctx.error(f"input #3 (attn_mask): expected 1-D to 4-D, got {mask}")
    if ctx.has(6):
        expect(ctx, 6, "int", rank=1)
    if ctx.attr("qk_matmul_output_mode") not in ATTENTION_MODES:
        raise ctx.error(
            f"qk_matmul_output_mode: expected one of {ATTENTION_MODES}, "
            f"got {ctx.attr('qk_matmul_output_mode')}"
        )
    for side in ("left_window_size", "right_window_size"):
        if ctx.attr(side) < -1:
            raise ctx.error(f"{side}: expected -1 or a size >= 0, got {ctx.attr(side)}")
    check_softmax_precision(ctx)
    if rank == 3:
        y: list[Dim] = [batch, sq, dim_mul(hq, dv)]
    else:
        y = [batch, hq, sq, dv]
    return [
        TensorType(dt, y),
        TensorType(dt, [batch, hkv, total, d]),
        TensorType(v_dt, [batch, hkv, total, dv]),
        TensorType(dt, [batch, hq, sq, total]),
    ]


_FLEX_ATTRS = {
    "score_mod": AttrSpec(Graph, None, "closed graph (scores, *captured) -> scores"),
    "prob_mod": AttrSpec(Graph, None, "closed graph (probs, *captured) -> probs"),
    "scale": AttrSpec((float, int), None),
    "softmax_precision": AttrSpec(DType, None),
    "score_mod_captures": AttrSpec(int, 0, "how many captured inputs belong to score_mod"),
}


@op("FlexAttention", inputs=(3, None), attrs=_FLEX_ATTRS)
def _flex_attention(ctx: InferContext) -> list[Type]:
    """Scaled dot-product attention with optional modifier graphs (ONNX preview FlexAttention).

    Inputs ``(Q, K, V, *captured)``, all of Q, K, V 4-D ``[B, H, S, D]``; query head ``h``
    reads key/value head ``h // (Hq / Hkv)``::

        s = (Q @ K^T * scale).astype(p)   # p: softmax_precision, else f64 for f64, else f32
        s = score_mod(s, *captured[:score_mod_captures]) if score_mod else s
        w = softmax(s, axis=-1)
        w = prob_mod(w, *captured[score_mod_captures:]) if prob_mod else w
        Y = (w @ V.astype(p)).astype(Q.dtype)

    Each modifier must give back its input's element type p and shape.
    """
    q, _, _ = (expect(ctx, i, "float", rank=4) for i in range(3))
    ctx.same_dtype(0, 1, 2)
    qs, ks, vs = (ctx.tensor(i).shape or (UNKNOWN,) * 4 for i in range(3))
    batch = same_dim(ctx, "batch sizes of Q, K, V", qs[0], ks[0], vs[0])
    hkv = same_dim(ctx, "head counts of K and V", ks[1], vs[1])
    same_dim(ctx, "sequence lengths of K and V", ks[2], vs[2])
    same_dim(ctx, "head sizes of Q and K", qs[3], ks[3])
    check_groups(ctx, qs[1], hkv)
    check_softmax_precision(ctx)
    precision = ctx.attr("softmax_precision") or (
        DType.float64 if q.dtype is DType.float64 else DType.float32
    )
    captures = len(ctx) - 3
    split = ctx.attr("score_mod_captures")
    if not 0 <= split <= captures:
        raise ctx.error(f"score_mod_captures {split} is outside the {captures} captured inputs")
    for key, count in (("score_mod", split), ("prob_mod", captures - split)):
        graph = ctx.attr(key)
        if graph is None:
            if count:
                raise ctx.error(f"{count} captured inputs belong to the absent {key}")
            continue
        if len(graph.inputs) != 1 + count or len(graph.outputs) != 1:
            raise ctx.error(
                f"{key}: expected a graph of {1 + count} inputs and 1 output, got "
                f"{len(graph.inputs)} and {len(graph.outputs)}"
            )
        for role, t in (("input", graph.inputs[0].type), ("output", graph.outputs[0].type)):
            if not isinstance(t, TensorType) or t.dtype is not precision:
                raise ctx.error(f"{key}: its {role} must be a {precision} tensor, got {t}")
    return [TensorType(q.dtype, [batch, qs[1], qs[2], vs[3]])]


_LINEAR_ATTRS = {
    "chunk_size": AttrSpec(int, 64),
    "kv_num_heads": AttrSpec(int),
    "q_num_heads": AttrSpec(int),
    "scale": AttrSpec((float, int), 0.0),
    "update_rule": AttrSpec(str, "gated_delta"),
}


@op("LinearAttention", inputs=(3, 6), attrs=_LINEAR_ATTRS)
def _linear_attention(ctx: InferContext) -> list[Type]:
    """Recurrent linear attention (ONNX LinearAttention-27).

    Inputs ``(query [B,T,Hq*dk], key [B,T,Hkv*dk], value [B,T,Hkv*dv], past_state?
    [B,Hkv,dk,dv], decay? [B,T,Hkv*dk or Hkv], beta? [B,T,Hkv or 1])``; outputs ``(output
    [B,T,Hq*dv], present_state)``. From S = past_state (or zeros), for each step t, with
    ``g = exp(decay_t)`` for the gated rules and 1 otherwise::

        S = g * S
        v = beta_t * (v_t - S^T k_t)  if the rule is delta/gated_delta  else v_t
        S = S + outer(k_t, v)
        o_t = scale * q_t^T S          # query head h reads state h // (Hq / Hkv)

    ``scale`` 0 means ``1/sqrt(dk)``; present_state has past_state's type, else query's.
    """
    rule = ctx.attr("update_rule")
    if rule not in LINEAR_RULES:
        raise ctx.error(f"update_rule: expected one of {', '.join(LINEAR_RULES)}, got {rule!r}")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for index, name, needed in ((4, "decay", gated), (5, "beta", delta)):
        if ctx.has(index) != needed:
            verb = "requires" if needed else "forbids"
            raise ctx.error(f"update_rule {rule!r} {verb} input #{index} ({name})")
    dt = ctx.same_dtype(*[i for i in (0, 1, 2, 4, 5) if ctx.has(i)])
    hq, hkv = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    b, _, t, dk = as_heads(ctx, 0, 3, hq, "query")
    kb, _, kt, kdk = as_heads(ctx, 1, 3, hkv, "key")
    vb, _, vt, dv = as_heads(ctx, 2, 3, hkv, "value")
    check_groups(ctx, hq, hkv)
    b = same_dim(ctx, "batch sizes of query, key, value", b, kb, vb)
    t = same_dim(ctx, "sequence lengths of query, key, value", t, kt, vt)
    dk = same_dim(ctx, "key sizes of query and key", dk, kdk)
    state_dt = dt
    if ctx.has(3):
        past = expect(ctx, 3, "float", rank=4)
        if past.shape is not None:
            b = same_dim(ctx, "batch sizes of query and past_state", b, past.shape[0])
            same_dim(ctx, "key/value heads of past_state", hkv, past.shape[1])
            dk = same_dim(ctx, "key sizes of query and past_state", dk, past.shape[2])
            dv = same_dim(ctx, "value sizes of value and past_state", dv, past.shape[3])
        state_dt = past.dtype
    for index in (4, 5):
        if ctx.has(index):
            expect(ctx, index, "float", rank=3)
    return [
        TensorType(dt, [b, t, dim_mul(hq, dv)]),
        TensorType(state_dt, [b, hkv, dk, dv]),
    ]


_ROTARY_ATTRS = {
    "interleaved": AttrSpec(int, 0),
    "num_heads": AttrSpec(int, None),
    "rotary_embedding_dim": AttrSpec(int, 0),
}


@op("RotaryEmbedding", inputs=(3, 4), attrs=_ROTARY_ATTRS)
def _rotary_embedding(ctx: InferContext) -> list[Type]:
    """Rotary position embedding (ONNX RotaryEmbedding-23).

    Inputs ``(X, cos_cache, sin_cache, position_ids?)``; X is ``[B, H, S, D]`` or
    ``[B, S, H*D]`` (``num_heads`` says H). The first ``R = rotary_embedding_dim or D`` features
    of each head split into halves ``x1, x2`` (or even/odd features when ``interleaved``);
    with ``c, s = cos_cache[position_ids], sin_cache[position_ids]`` (the caches themselves,
    ``[B, S, R/2]``, without position_ids) they become ``x1*c - x2*s`` and ``x1*s + x2*c``
    in place; the other features pass through.
    """
    x = expect(ctx, 0, "float")
    dt = ctx.same_dtype(0, 1, 2)
    if x.rank is not None and x.rank not in (3, 4):
        raise ctx.error(f"input #0 (X): expected a 3-D or 4-D tensor, got {x}")
    heads = ctx.attr("num_heads")
    if x.rank == 3 and heads is None:
        raise ctx.error("input #0 (X) is 3-D, so the num_heads attribute is required")
    if x.shape is not None:
        if x.rank == 4:
            b, _, s, d = x.shape
        else:
            b, s, hidden = x.shape
            d = dim_div(ctx, hidden, heads, "input #0 (X)")
        rot = ctx.attr("rotary_embedding_dim") or d
        if isinstance(rot, int) and (rot % 2 or (isinstance(d, int) and rot > d)):
            raise ctx.error(f"rotary_embedding_dim {rot} must be even and at most head size {d}")
        cache_rank = 2 if ctx.has(3) else 3
        for i, name in ((1, "cos_cache"), (2, "sin_cache")):
            cache = expect(ctx, i, "float", rank=cache_rank)
            if cache.shape is not None and isinstance(rot, int):
                same_dim(ctx, f"{name} last dim and rotary dim / 2", cache.shape[-1], rot // 2)
                if cache_rank == 3:
                    same_dim(ctx, f"{name} batch and sequence dims vs X", cache.shape[0], b)
                    same_dim(ctx, f"{name} sequence dim vs X", cache.shape[1], s)
    if ctx.has(3):
        pos = expect(ctx, 3, "int", rank=2)
        if pos.dtype is not DType.int64:
            raise ctx.error(f"input #3 (position_ids): expected i64, got {pos}")
    return [TensorType(dt, x.shape)]


@op("SwiGLU", inputs=2, attrs={"alpha": AttrSpec((float, int), 1.0)})
def _swiglu(ctx: InferContext) -> list[Type]:
    """``A * sigmoid(alpha * A) * B`` (ONNX SwiGLU-28); A and B have one shape, no broadcasting."""
    a, b = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    dt = ctx.same_dtype(0, 1)
    if a.shape is None or b.shape is None:
        return [TensorType(dt, a.shape if b.shape is None else b.shape)]
    if len(a.shape) != len(b.shape) or any(
        isinstance(x, int) and isinstance(y, int) and x != y
        for x, y in zip(a.shape, b.shape, strict=False)
    ):
        raise ctx.error(f"A and B must have one shape, got {a} and {b}")
    dims = [same_dim(ctx, "dims of A and B", x, y) for x, y in zip(a.shape, b.shape, strict=True)]
    return [TensorType(dt, dims)]
