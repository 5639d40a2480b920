"""The attention ops agree with onnxruntime where it runs them, and keep their laws elsewhere."""

from __future__ import annotations

import itertools
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from onnx_oracle import assert_close, infer, one_node, ort_run, run_core, tensorloop_run
from tensorloop.errors import GraphError
from tensorloop.formats.onnx import load_onnx
from tensorloop.ir.graph import Graph
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.types import TensorType, tensor_type_of

FAST = settings(max_examples=25, deadline=None)
rng = np.random.default_rng(11)
B, SQ, SKV, D, DV, PAST = 2, 3, 5, 4, 6, 2


def qkv(packed: bool, hq: int, hkv: int, dt: Any = np.float32) -> list[np.ndarray]:
    if packed:
        shapes = [(B, SQ, hq * D), (B, SKV, hkv * D), (B, SKV, hkv * DV)]
    else:
        shapes = [(B, hq, SQ, D), (B, hkv, SKV, D), (B, hkv, SKV, DV)]
    return [rng.standard_normal(s).astype(dt) for s in shapes]


def mask_of(kind: str | None, hq: int, total: int, dt: Any = np.float32) -> np.ndarray | None:
    shapes = {"bool": (SQ, total), "bool4": (B, 1, SQ, total), "float3": (hq, SQ, total),
              "float4": (B, hq, SQ, total)}  # fmt: skip
    if kind is None:
        return None
    if kind.startswith("bool"):
        return rng.random(shapes[kind]) > 0.3
    return rng.standard_normal(shapes[kind]).astype(dt)


def attention(inputs: list[np.ndarray | None], **attrs: Any) -> list[np.ndarray]:
    return run_core("Attention", inputs, attrs)


# packed, (q heads, kv heads), past, causal, mask; the qk output mode and softcap vary with them.
CONFIGS = list(
    itertools.product(
        [False, True], [(2, 2), (4, 2), (3, 1)], [False, True], [0, 1],
        [None, "bool", "bool4", "float3", "float4"],
    )
)  # fmt: skip


@pytest.mark.parametrize(("index", "config"), list(enumerate(CONFIGS)))
def test_attention_matches_onnxruntime(index: int, config: tuple[Any, ...]) -> None:
    packed, (hq, hkv), past, causal, mask_kind = config
    q, k, v = qkv(packed, hq, hkv)
    pk = rng.standard_normal((B, hkv, PAST, D)).astype(np.float32) if past else None
    pv = rng.standard_normal((B, hkv, PAST, DV)).astype(np.float32) if past else None
    inputs = [q, k, v, mask_of(mask_kind, hq, SKV + PAST * past), pk, pv]
    attrs: dict[str, Any] = {"is_causal": causal, "qk_matmul_output_mode": index % 4}
    if index % 3 == 0:
        attrs["softcap"] = 2.5
    if index % 5 == 0:
        attrs["scale"] = 0.3
    if packed:
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    model = one_node("Attention", inputs, attrs, opset=23, outputs=4)
    got, want = tensorloop_run(model, inputs), ort_run(model, inputs)
    # onnxruntime writes the lowest finite float where the spec's bias (mode 2) is -inf.
    want[3] = np.where(want[3] < -1e30, -np.inf, want[3])
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, {"float32": (1e-5, 1e-5)})


@pytest.mark.parametrize(("causal", "heads"), [(0, (2, 2)), (1, (2, 2)), (1, (4, 2))])
def test_attention_nonpad_kv_seqlen_matches_onnxruntime(
    causal: int, heads: tuple[int, int]
) -> None:
    q, k, v = qkv(False, *heads)
    inputs = [q, k, v, None, None, None, np.array([3, 5], np.int64)]
    model = one_node("Attention", inputs, {"is_causal": causal}, opset=24, outputs=4)
    for g, w in zip(tensorloop_run(model, inputs), ort_run(model, inputs), strict=True):
        assert_close(g, w, {"float32": (1e-5, 1e-6)})


@pytest.mark.parametrize("precision", [None, TensorProto.FLOAT])
def test_attention_in_half_precision_matches_onnxruntime(precision: int | None) -> None:
    q, k, v = qkv(False, 4, 2, np.float16)
    inputs = [q, k, v, mask_of("float4", 4, SKV, np.float16)]
    attrs: dict[str, Any] = {"is_causal": 1, "qk_matmul_output_mode": 3}
    if precision is not None:
        attrs["softmax_precision"] = precision
    model = one_node("Attention", inputs, attrs, opset=23, outputs=4)
    for g, w in zip(tensorloop_run(model, inputs), ort_run(model, inputs), strict=True):
        assert w.dtype == np.float16
        assert_close(g, w, {"float16": (4e-3, 2e-3)})


def test_grouped_query_attention_is_attention_on_repeated_key_value_heads() -> None:
    q, k, v = qkv(False, 6, 2)
    mask = mask_of("float4", 6, SKV)
    grouped = attention([q, k, v, mask], is_causal=1)
    repeated = attention([q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1), mask], is_causal=1)
    np.testing.assert_allclose(grouped[0], repeated[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(grouped[3], repeated[3])


def test_packed_attention_is_attention_on_split_heads() -> None:
    q, k, v = qkv(True, 4, 2)

    def split(x: np.ndarray, heads: int) -> np.ndarray:
        return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3)

    y3, pk3, pv3, _ = attention([q, k, v], q_num_heads=4, kv_num_heads=2, softcap=3.0)
    y4, pk4, pv4, _ = attention([split(q, 4), split(k, 2), split(v, 2)], softcap=3.0)
    np.testing.assert_allclose(split(y3, 4), y4, rtol=1e-6)
    np.testing.assert_array_equal(pk3, pk4)
    np.testing.assert_array_equal(pv3, pv4)


def test_a_short_mask_leaves_the_last_keys_out() -> None:
    q, k, v = qkv(False, 2, 2)
    short_bool, short_float = mask_of("bool4", 2, SKV - 2), mask_of("float4", 2, SKV - 2)
    assert short_bool is not None and short_float is not None
    padded_bool = np.pad(short_bool, [(0, 0)] * 3 + [(0, 2)], constant_values=False)
    padded_float = np.pad(short_float, [(0, 0)] * 3 + [(0, 2)], constant_values=-np.inf)
    for short, full in ((short_bool, padded_bool), (short_float, padded_float)):
        np.testing.assert_array_equal(attention([q, k, v, short])[0], attention([q, k, v, full])[0])


@FAST
@given(st.integers(-1, 4), st.integers(-1, 4), st.integers(0, 1), st.integers(0, 3))
def test_windows_causality_and_the_cache_offset_are_one_bool_mask(
    left: int, right: int, causal: int, past: int
) -> None:
    q, k, v = qkv(False, 2, 2)
    pk = rng.standard_normal((B, 2, past, D)).astype(np.float32)
    pv = rng.standard_normal((B, 2, past, DV)).astype(np.float32)
    pos = np.arange(SQ)[:, None] + past
    key = np.arange(SKV + past)[None, :]
    allowed = np.ones((SQ, SKV + past), bool)
    if causal:
        allowed &= key <= pos
    if left >= 0:
        allowed &= pos - key <= left
    if right >= 0:
        allowed &= key - pos <= right
    windowed = attention([q, k, v, None, pk, pv], is_causal=causal, left_window_size=left,
                         right_window_size=right)  # fmt: skip
    masked = attention([q, k, v, allowed, pk, pv])
    np.testing.assert_array_equal(windowed[0], masked[0])
    blind = ~allowed.any(axis=1)
    assert np.all(windowed[0][:, :, blind] == 0)


def test_a_query_that_sees_no_key_outputs_zeros_not_nan() -> None:
    q, k, v = qkv(False, 2, 2)
    q[0, 0, 1] = np.inf
    mask = np.ones((SQ, SKV), bool)
    mask[1] = False
    y, _, _, probs = attention([q, k, v, mask], qk_matmul_output_mode=3)
    assert np.all(y[:, :, 1] == 0) and np.all(probs[:, :, 1] == 0)
    assert np.isfinite(y).all()


def test_attention_types() -> None:
    q, k, v = T("f32", ["B", 8, 12]), T("f32", ["B", "S", 6]), T("f32", ["B", "S", 4])
    heads = {"q_num_heads": 4, "kv_num_heads": 2}
    assert infer("Attention", [q, k, v], heads) == [
        "f32[B,8,8]", "f32[B,2,S,3]", "f32[B,2,S,2]", "f32[B,4,8,S]"
    ]  # fmt: skip
    q4, k4, v4 = T("bf16", [1, 4, 3, 8]), T("bf16", [1, 2, 5, 8]), T("f16", [1, 2, 5, 2])
    past_k, past_v = T("bf16", [1, 2, 7, 8]), T("f16", [1, 2, 7, 2])
    assert infer("Attention", [q4, k4, v4, None, past_k, past_v], {}) == [
        "bf16[1,4,3,2]", "bf16[1,2,12,8]", "f16[1,2,12,2]", "bf16[1,4,3,12]"
    ]  # fmt: skip


def T(dtype: str, shape: list[Any]) -> TensorType:
    return TensorType(dtype, shape)


@pytest.mark.parametrize(
    ("types", "attrs", "message"),
    [
        ([T("f32", [1, 3, 2, 4]), T("f32", [1, 2, 2, 4]), T("f32", [1, 2, 2, 4])], {},
         r"query heads \(3\) must be a multiple of key/value heads \(2\)"),
        ([T("f32", [1, 2, 12]), T("f32", [1, 2, 12]), T("f32", [1, 2, 12])], {},
         "3-D, so the head count attribute is required"),
        ([T("f32", [1, 2, 12]), T("f32", [1, 2, 12]), T("f32", [1, 2, 12])],
         {"q_num_heads": 5, "kv_num_heads": 1}, "hidden size 12 is not a multiple of 5 heads"),
        ([T("f32", [1, 2, 2, 4]), T("f32", [1, 2, 2, 3]), T("f32", [1, 2, 2, 4])], {},
         "head sizes of Q and K disagree: 4 vs 3"),
        ([T("f32", [1, 2, 2, 4]), T("f32", [1, 2, 2, 4]), T("f32", [1, 2, 2, 4]), None,
          T("f32", [1, 2, 1, 4])], {}, r"past_key \(#4\) and past_value \(#5\) must be given"),
        ([T("f32", [1, 2, 2, 4])] * 3, {"qk_matmul_output_mode": 4}, "qk_matmul_output_mode"),
        ([T("f32", [1, 2, 2, 4])] * 3, {"left_window_size": -2}, "left_window_size: expected"),
    ],
)  # fmt: skip
def test_attention_rejects_bad_input(
    types: list[TensorType | None], attrs: dict[str, Any], message: str
) -> None:
    g = Graph()
    values = [None if t is None else g.add_input(f"x{i}", t) for i, t in enumerate(types)]
    with pytest.raises(GraphError, match=message):
        g.add_node("Attention", values, attrs)


# -- FlexAttention --------------------------------------------------------------------------------


def add_graph(scores: TensorType, bias: TensorType) -> Graph:
    """A score_mod that adds a captured bias: (scores, bias) -> scores + bias."""
    g = Graph("add_bias")
    s, b = g.add_input("scores", scores), g.add_input("bias", bias)
    g.set_outputs(g.add_node("Add", [s, b]).outputs)
    return g


def test_flex_attention_without_modifiers_is_attention() -> None:
    q, k, v = qkv(False, 4, 2, np.float64)
    (y,) = run_core("FlexAttention", [q, k, v], {"scale": 0.4})
    np.testing.assert_allclose(y, attention([q, k, v], scale=0.4)[0], rtol=1e-12)


def test_flex_attention_score_mod_with_a_capture_is_a_float_mask() -> None:
    q, k, v = qkv(False, 4, 2)
    bias = rng.standard_normal((B, 4, SQ, SKV)).astype(np.float32)
    g = Graph()
    params = [
        g.add_input(n, tensor_type_of(x)) for n, x in zip("qkvb", (q, k, v, bias), strict=True)
    ]
    mod = add_graph(TensorType("f32", [B, 4, SQ, SKV]), tensor_type_of(bias))
    node = g.add_node("FlexAttention", params, {"score_mod": mod, "score_mod_captures": 1})
    g.set_outputs(node.outputs)
    (y,) = Interpreter().run(g, [q, k, v, bias])
    np.testing.assert_allclose(y, attention([q, k, v, bias])[0], rtol=1e-5, atol=1e-6)


def test_flex_attention_imports_modifiers_that_read_outer_values() -> None:
    q, k, v = qkv(False, 2, 2)
    bias = rng.standard_normal((SQ, SKV)).astype(np.float32)
    vi = helper.make_tensor_value_info
    score_mod = helper.make_graph(
        [helper.make_node("Add", ["s", "bias"], ["s_out"])], "score_mod",
        [vi("s", TensorProto.FLOAT, None)], [vi("s_out", TensorProto.FLOAT, None)],
    )  # fmt: skip
    prob_mod = helper.make_graph(
        [helper.make_node("Mul", ["p", "two"], ["p_out"])], "prob_mod",
        [vi("p", TensorProto.FLOAT, None)], [vi("p_out", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )  # fmt: skip
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview",
                            score_mod=score_mod, prob_mod=prob_mod)  # fmt: skip
    inputs = [vi(n, TensorProto.FLOAT, x.shape) for n, x in zip("qkv", (q, k, v), strict=True)]
    graph = helper.make_graph([node], "flex", [*inputs, vi("bias", TensorProto.FLOAT, bias.shape)],
                              [vi("y", TensorProto.FLOAT, None)])  # fmt: skip
    opsets = [helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    y = load_onnx(model).run({"q": q, "k": k, "v": v, "bias": bias})["y"]
    np.testing.assert_allclose(y, 2 * attention([q, k, v, bias])[0], rtol=1e-5, atol=1e-6)


def test_flex_attention_checks_its_modifiers() -> None:
    q = T("f32", [1, 2, 3, 4])
    one_input = Graph("negate")
    one_input.set_outputs(one_input.add_node("Neg", [one_input.add_input("s", q)]).outputs)
    with pytest.raises(GraphError, match="score_mod: expected a graph of 2 inputs and 1 output"):
        infer("FlexAttention", [q, q, q, T("f32", [])],
              {"score_mod": one_input, "score_mod_captures": 1})  # fmt: skip
    with pytest.raises(GraphError, match="1 captured inputs belong to the absent prob_mod"):
        infer("FlexAttention", [q, q, q, T("f32", [])], {})


# -- LinearAttention ------------------------------------------------------------------------------


def linear_inputs(rule: str, steps: int, hq: int = 4, hkv: int = 2, dk: int = 3, dv: int = 5):
    q = rng.standard_normal((B, steps, hq * dk)).astype(np.float32)
    k = rng.standard_normal((B, steps, hkv, dk))
    k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).reshape(B, steps, hkv * dk)
    v = rng.standard_normal((B, steps, hkv * dv)).astype(np.float32)
    decay = -np.abs(rng.standard_normal((B, steps, hkv * dk))).astype(np.float32) * 0.3
    beta = rng.random((B, steps, hkv)).astype(np.float32)
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    return [q, k.astype(np.float32), v, None, decay if gated else None, beta if delta else None]


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_resumes_from_its_state(rule: str) -> None:
    q, k, v, _, decay, beta = linear_inputs(rule, 6)
    attrs = {"update_rule": rule, "q_num_heads": 4, "kv_num_heads": 2}

    def part(lo: int, hi: int, state: np.ndarray | None) -> list[np.ndarray]:
        cut = [None if x is None else x[:, lo:hi] for x in (q, k, v)]
        extra = [None if x is None else x[:, lo:hi] for x in (decay, beta)]
        return run_core("LinearAttention", [*cut, state, *extra], attrs)

    whole, state = part(0, 6, None)
    first, middle = part(0, 2, None)
    second, end = part(2, 6, middle)
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(end, state, rtol=1e-5, atol=1e-6)


def test_linear_attention_is_unnormalized_causal_attention() -> None:
    q, k, v, *_ = linear_inputs("linear", 5, hq=2, hkv=2)
    attrs = {"update_rule": "linear", "q_num_heads": 2, "kv_num_heads": 2, "scale": 0.5}
    y, state = run_core("LinearAttention", [q, k, v], attrs)
    q4, k4, v4 = (x.reshape(B, 5, 2, -1).transpose(0, 2, 1, 3) for x in (q, k, v))
    scores = np.tril(q4 @ k4.swapaxes(-1, -2))
    want = 0.5 * scores @ v4
    want = want.transpose(0, 2, 1, 3).reshape(B, 5, -1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, k4.swapaxes(-1, -2) @ v4, rtol=1e-5, atol=1e-6)


def test_linear_attention_types_and_rules() -> None:
    q, kv = T("f16", ["B", "T", 12]), T("f16", ["B", "T", 6])
    attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "linear"}
    assert infer("LinearAttention", [q, kv, kv], attrs) == ["f16[B,T,12]", "f16[B,2,3,3]"]
    state = T("f32", ["B", 2, 3, 3])
    assert infer("LinearAttention", [q, kv, kv, state], attrs)[1] == "f32[B,2,3,3]"
    with pytest.raises(GraphError, match=r"update_rule 'gated' requires input #4 \(decay\)"):
        infer("LinearAttention", [q, kv, kv], {**attrs, "update_rule": "gated"})
    with pytest.raises(GraphError, match="update_rule: expected one of"):
        infer("LinearAttention", [q, kv, kv], {**attrs, "update_rule": "fast"})


# -- RotaryEmbedding and SwiGLU -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("packed", "interleaved", "rotary_dim", "positions"),
    list(itertools.product([False, True], [0, 1], [0, 4], [False, True])),
)
def test_rotary_embedding_matches_onnxruntime(
    packed: bool, interleaved: int, rotary_dim: int, positions: bool
) -> None:
    heads, seq, size = 3, 5, 8
    x = rng.standard_normal((B, seq, heads * size) if packed else (B, heads, seq, size))
    half = (rotary_dim or size) // 2
    cache_shape = (11, half) if positions else (B, seq, half)
    angles = rng.uniform(0, 6, cache_shape)
    pos = rng.integers(0, 11, (B, seq)) if positions else None
    inputs = [x.astype(np.float32), np.cos(angles).astype(np.float32),
              np.sin(angles).astype(np.float32), pos]  # fmt: skip
    attrs: dict[str, Any] = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    if packed:
        attrs["num_heads"] = heads
    model = one_node("RotaryEmbedding", inputs, attrs, opset=23)
    (got,), (want,) = tensorloop_run(model, inputs), ort_run(model, inputs)
    assert_close(got, want, {"float32": (1e-5, 1e-6)})


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_swiglu_is_swish_gated(dt: Any) -> None:
    a, b = (rng.standard_normal((3, 4)).astype(dt) for _ in range(2))
    (y,) = run_core("SwiGLU", [a, b], {"alpha": 1.5})
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    want = (wa / (1 + np.exp(-1.5 * wa)) * wb).astype(dt)
    assert y.dtype == np.dtype(dt)
    np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=1e-2)
    with pytest.raises(GraphError, match="A and B must have one shape"):
        infer("SwiGLU", [T("f32", [3, 4]), T("f32", [1, 4])], {})
