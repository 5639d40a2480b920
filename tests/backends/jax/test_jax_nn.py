"""The jax backend's lowerings of the neural-network ops (backends/jax/ops_nn.py): each agrees
with the reference kernel over attribute variants, dtypes and edge cases, and runs on XLA (not
on the compiled backend) for typical models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tensorloop as tl
from backend_agreement import JAX_VS_REFERENCE, assert_same_outputs
from ops_harness import C as Constant
from ops_harness import build
from tensorloop.ir.graph import Graph
from tensorloop.tensor.types import tensor_type_of

BF16 = np.dtype(ml_dtypes.bfloat16)


def C(value: Any) -> Constant:
    """An input fed by a Constant node, of the value's own dtype."""
    return Constant(value, np.asarray(value).dtype)


def _model(op: str, inputs: Sequence[Any], attrs: dict[str, Any], outputs: int | None) -> tl.Model:
    node = build(
        op, [x if x is None or isinstance(x, Constant) else np.asarray(x) for x in inputs], attrs
    )
    assert node.graph is not None
    node.graph.set_outputs(node.outputs[:outputs])
    return tl.Model(node.graph)


def on_xla(dt: Any, stash: int) -> bool:
    """Float32 statistics of float64 data are left to the compiled backend."""
    return not (stash == 1 and np.dtype(dt) == np.float64)


def agree(
    op: str,
    inputs: Sequence[Any],
    attrs: dict[str, Any] | None = None,
    *,
    outputs: int | None = None,
    on_xla: bool = True,
) -> dict[str, Any]:
    """Run one ``op`` node on jax and on the reference: same outputs; the node placed on XLA."""
    model = _model(op, inputs, attrs or {}, outputs)
    args = [np.asarray(x) for x in inputs if x is not None and not isinstance(x, Constant)]
    if on_xla:
        placed = [p for p in model.placement(args) if p.op == op]
        assert [p.device for p in placed] == ["xla"], placed
    want = model.run(args, backend="reference")
    got = model.run(args, backend="jax")
    assert_same_outputs(got, want, op, backends=JAX_VS_REFERENCE)
    return dict(want)


def rand(shape: Sequence[int], dt: Any = np.float32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dt)
    return rng.normal(0, 2, shape).astype(dt)


FLOATS = [np.float32, np.float64, np.float16, BF16]

# --- Conv / ConvTranspose -----------------------------------------------------------------------

CONV_CASES = [
    ((1, 2, 7), (3, 2, 3), {}),
    ((2, 4, 6, 5), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 2, 6, 6), (4, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 7, 6), (4, 2, 2, 3), {"auto_pad": "SAME_LOWER", "dilations": [2, 1]}),
    ((1, 2, 7, 6), (4, 2, 3, 3), {"auto_pad": "VALID", "strides": [3, 2]}),
    ((1, 3, 4, 5, 4), (3, 1, 2, 3, 2), {"group": 3, "pads": [1, 0, 1, 0, 2, 1]}),
    ((0, 2, 5, 5), (3, 2, 3, 3), {"kernel_shape": [3, 3]}),
]


@pytest.mark.parametrize(("xs", "ws", "attrs"), CONV_CASES)
def test_conv(xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any]) -> None:
    agree("Conv", [rand(xs), rand(ws, seed=1)], attrs)
    agree("Conv", [rand(xs), rand(ws, seed=1), rand(ws[:1], seed=2)], attrs)


@pytest.mark.parametrize("dt", FLOATS)
def test_conv_dtypes(dt: Any) -> None:
    agree("Conv", [rand((1, 2, 5, 5), dt), rand((3, 2, 3, 3), dt, 1), rand((3,), dt, 2)])


TRANSPOSE_CASES = [
    ((1, 2, 5), (2, 3, 3), {}),
    ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [3, 2], "pads": [1, 0, 2, 1]}),
    ((1, 4, 3, 3), (4, 1, 2, 2), {"group": 2, "strides": [2, 2], "output_padding": [1, 0]}),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"output_shape": [10, 8], "strides": [3, 2]}),
    ((1, 2, 3, 3), (2, 2, 1, 1), {"auto_pad": "SAME_UPPER", "strides": [3, 3]}),
    ((1, 2, 3, 3, 2), (2, 2, 2, 2, 2), {"dilations": [2, 1, 1], "strides": [1, 2, 1]}),
]


@pytest.mark.parametrize(("xs", "ws", "attrs"), TRANSPOSE_CASES)
def test_conv_transpose(xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any]) -> None:
    m = ws[1] * attrs.get("group", 1)
    agree("ConvTranspose", [rand(xs), rand(ws, seed=1), rand((m,), seed=2)], attrs)


def test_causal_conv() -> None:
    x, w = rand((2, 3, 5)), rand((3, 1, 3), seed=1)
    agree("CausalConvWithState", [x, w], {}, outputs=2)
    for act in ("silu", "none"):
        agree(
            "CausalConvWithState",
            [x, w, rand((3,), seed=2), rand((2, 3, 2), seed=3)],
            {"activation": act},
        )
    agree("CausalConvWithState", [rand((1, 2, 4), np.float16), rand((2, 1, 1), np.float16)])


# --- Pooling ------------------------------------------------------------------------------------

POOL_CASES: list[dict[str, Any]] = [
    {"kernel_shape": [3]},
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "pads": [0, 0, 2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]},
]


def _pool_input(attrs: dict[str, Any], dt: Any = np.float32) -> np.ndarray:
    n = len(attrs["kernel_shape"])
    return rand((2, 3, *[6, 5, 4][:n]), dt)


@pytest.mark.parametrize("attrs", POOL_CASES)
def test_pools(attrs: dict[str, Any]) -> None:
    x = _pool_input(attrs)
    for include in (0, 1):
        agree("AveragePool", [x], {**attrs, "count_include_pad": include})
    agree("LpPool", [x], {**attrs, "p": 3})
    for order in (0, 1):
        agree("MaxPool", [x], {**attrs, "storage_order": order})
    agree("MaxPool", [x], attrs, outputs=1)


@pytest.mark.parametrize("dt", [*FLOATS, np.int8, np.uint8])
def test_max_pool_dtypes_ties_and_nan(dt: Any) -> None:
    attrs = {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1], "strides": [1, 2]}
    x = np.array([[[[1, 1, 2], [2, 0, 2], [0, 0, 1]]]]).astype(dt)
    agree("MaxPool", [x], attrs)
    if np.dtype(dt).kind == "f" or dt == BF16:
        x = x.copy()
        x[0, 0, 1, 1] = np.nan
        agree("MaxPool", [x], attrs)
    else:  # windows all at the lowest value, pads included: the index of the first pad
        low = np.full((1, 1, 3, 3), np.iinfo(dt).min, dt)
        agree("MaxPool", [low], attrs)
        agree("AveragePool", [x.astype(np.float32)], attrs)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (1, 2, 3, 2, 2)])
def test_global_pools(op: str, shape: tuple[int, ...]) -> None:
    agree(op, [rand(shape)])
    agree(op, [rand(shape, np.float16)])


def test_global_max_pool_of_nothing_stays_on_compiled() -> None:
    with pytest.raises(tl.errors.TensorloopError):
        agree("GlobalMaxPool", [np.zeros((1, 2, 0), np.float32)], on_xla=False)


# --- Normalizations -----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
def test_batch_norm(dt: Any) -> None:
    x = rand((2, 3, 4, 2), dt)
    scale, b, mean = rand((3,), dt, 1), rand((3,), dt, 2), rand((3,), dt, 3)
    var = np.abs(rand((3,), dt, 4))
    agree("BatchNormalization", [x, scale, b, mean, var], {"epsilon": 1e-3}, outputs=1)
    agree("BatchNormalization", [x, scale, b, mean, var], {"training_mode": 1, "momentum": 0.8})


def test_batch_norm_mixed_types() -> None:
    x = rand((2, 3), np.float32)
    stats = [rand((3,), np.float64, 3), np.abs(rand((3,), np.float64, 4))]
    agree("BatchNormalization", [x, rand((3,)), rand((3,)), *stats])


@pytest.mark.parametrize("dt", FLOATS)
def test_instance_and_group_norm(dt: Any) -> None:
    x = rand((2, 4, 3, 2), dt)
    agree("InstanceNormalization", [x, rand((4,), dt, 1), rand((4,), dt, 2)])
    for g, stash in ((2, 1), (4, 0), (1, 1)):
        attrs = {"num_groups": g, "stash_type": stash, "epsilon": 1e-2}
        inputs = [x, rand((4,), dt, 1), rand((4,), dt, 2)]
        agree("GroupNormalization", inputs, attrs, on_xla=on_xla(dt, stash))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize(("axis", "stash"), [(-1, 1), (1, 0), (0, 1), (-2, 0)])
def test_layer_and_rms_norm(dt: Any, axis: int, stash: int) -> None:
    x = rand((2, 3, 4), dt)
    tail = x.shape[axis % 3 :]
    attrs = {"axis": axis, "stash_type": stash}
    xla = on_xla(dt, stash)
    agree("LayerNormalization", [x, rand(tail, dt, 1), rand(tail, dt, 2)], attrs, on_xla=xla)
    agree("LayerNormalization", [x, rand(tail, dt, 1)], attrs, outputs=1, on_xla=xla)
    agree("RMSNormalization", [x, rand(tail, dt, 1)], attrs, on_xla=xla)
    agree("RMSNormalization", [x, rand(tail, np.float32, 1)], attrs, on_xla=xla)


@pytest.mark.parametrize("dt", FLOATS)
def test_lp_mvn_lrn(dt: Any) -> None:
    x = rand((2, 5, 3, 2), dt)
    x[0, :, 0, 0] = 0  # a zero norm gives zeros
    every = np.dtype(dt) == np.float32  # all variants in float32, one of each in the others
    for p, axis in [(1, 1), (2, -1), (2, 0), (1, -1)][: 4 if every else 2]:
        agree("LpNormalization", [x], {"p": p, "axis": axis})
    for axes in ([0, 2, 3], [-1], [1, 2])[: 3 if every else 1]:
        agree("MeanVarianceNormalization", [x], {"axes": axes})
    for size in (1, 2, 3, 4)[: 4 if every else 1]:
        agree("LRN", [x], {"size": size, "alpha": 0.01, "beta": 0.6, "bias": 2.0})


@pytest.mark.handoff("Dropout in training deopts at run time")
def test_dropout() -> None:
    x = rand((3, 4))
    agree("Dropout", [x], outputs=2)
    agree("Dropout", [x, C(np.float32(0.3)), C(np.bool_(False))])
    agree("Dropout", [x, C(np.float32(0.0)), C(np.bool_(True))])
    agree("Dropout", [x, np.float32(0.0), np.bool_(True)])
    agree("Dropout", [x, np.float32(0.5), np.bool_(False)])
    # Training with a nonzero ratio is random: the compiled backend runs it.
    model = _model("Dropout", [x, C(np.float32(0.5)), C(np.bool_(True))], {"seed": 3}, None)
    assert [p.device for p in model.placement([x]) if p.op == "Dropout"] == ["compiled"]
    agree("Dropout", [x, np.float32(0.5), np.bool_(True)], {"seed": 3})  # deopts at run time
    with pytest.raises(tl.errors.TensorloopError):
        agree("Dropout", [x, np.float32(1.5), np.bool_(True)])


# --- Quantization -------------------------------------------------------------------------------


@pytest.mark.parametrize("to", [np.uint8, np.int8, np.int16, np.uint16])
@pytest.mark.parametrize("sdt", [np.float32, np.float16, BF16])
def test_quantize_dequantize(to: Any, sdt: Any) -> None:
    x = rand((2, 6, 4), sdt) * 40
    x[0, 0, :3] = [np.inf, -np.inf, 0.5]
    x[0, 1, :2] = [2.5, -1.5]  # ties round to even
    scale = np.abs(rand((), sdt, 1)) + 0.2
    zero = rand((), to, 2)
    agree("QuantizeLinear", [x, scale, zero])
    agree("QuantizeLinear", [x, np.abs(rand((6,), sdt, 3)) + 0.1, rand((6,), to, 4)], {"axis": 1})
    blocked = np.abs(rand((2, 2, 4), sdt, 5)) + 0.1
    agree("QuantizeLinear", [x, blocked, rand((2, 2, 4), to, 6)], {"axis": -2, "block_size": 4})
    q = rand((2, 6, 4), to)
    agree("DequantizeLinear", [q, scale, zero])
    agree("DequantizeLinear", [q, scale])
    agree("DequantizeLinear", [q, np.abs(rand((4,), sdt, 3)), rand((4,), to, 4)], {"axis": 2})
    agree("DequantizeLinear", [q, blocked, rand((2, 2, 4), to, 6)], {"axis": 1, "block_size": 4})


def test_quantize_variants() -> None:
    x = rand((3, 4)) * 100
    agree("QuantizeLinear", [x, np.float32(0.7)])  # uint8 by default
    agree("QuantizeLinear", [x, np.float32(0.7)], {"output_dtype": tl.DType.int8})
    agree("QuantizeLinear", [x, np.float32(0.3), np.int8(3)], {"precision": tl.DType.float16})
    xi = rand((3, 4), np.int32) * 1000
    agree("QuantizeLinear", [xi, np.float32(7.0), np.int16(1)])
    agree("QuantizeLinear", [xi, np.float32(7.0), np.int16(1)], {"precision": tl.DType.int32})
    agree("DequantizeLinear", [xi, np.float32(0.1), np.int32(-5)])
    agree(
        "DequantizeLinear",
        [rand((3, 4), np.int8), np.float16(0.1)],
        {"output_dtype": tl.DType.float32},
    )


def test_float8_quantization_stays_on_compiled() -> None:
    x = rand((3, 4))
    zero = np.zeros((), ml_dtypes.float8_e4m3fn)
    model = _model("QuantizeLinear", [x, np.float32(0.5), zero], {}, None)
    placed = [p for p in model.placement([x, np.float32(0.5), zero]) if p.op == "QuantizeLinear"]
    assert [p.device for p in placed] == ["compiled"]


# --- Attention helpers --------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
def test_swiglu(dt: Any) -> None:
    a, b = rand((2, 5), dt), rand((2, 5), dt, 1)
    agree("SwiGLU", [a, b])
    agree("SwiGLU", [a, b], {"alpha": 1.702})


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_rotary_embedding(interleaved: int, dt: Any) -> None:
    x4 = rand((2, 3, 4, 8), dt)
    cos, sin = rand((2, 4, 4), dt, 1), rand((2, 4, 4), dt, 2)
    agree("RotaryEmbedding", [x4, cos, sin], {"interleaved": interleaved})
    x3 = rand((2, 4, 3 * 8), dt)
    attrs = {"interleaved": interleaved, "num_heads": 3, "rotary_embedding_dim": 4}
    cache = rand((6, 2), dt, 3), rand((6, 2), dt, 4)
    positions = np.array([[0, 1, 2, 3], [5, -1, 4, 0]], np.int64)
    agree("RotaryEmbedding", [x3, *cache, positions], attrs)
    with pytest.raises(tl.errors.TensorloopError):
        agree("RotaryEmbedding", [x3, *cache, positions + 6], attrs)


def test_typical_model_runs_on_xla() -> None:
    """A small conv net: every node on XLA."""
    g = Graph()
    x = g.add_input("x", tensor_type_of(rand((1, 3, 8, 8))))
    w = g.add_node("Constant", [], {"value": rand((4, 3, 3, 3), seed=1)}).output
    b = g.add_node("Constant", [], {"value": rand((4,), seed=2)}).output
    y = g.add_node("Conv", [x, w, b], {"pads": [1, 1, 1, 1]}).output
    stats = [
        g.add_node("Constant", [], {"value": np.abs(rand((4,), seed=k))}).output for k in range(4)
    ]
    y = g.add_node("BatchNormalization", [y, *stats], {}).outputs[0]
    y = g.add_node("Relu", [y], {}).output
    y = g.add_node("MaxPool", [y], {"kernel_shape": [2, 2], "strides": [2, 2]}).outputs[0]
    y = g.add_node("GlobalAveragePool", [y], {}).output
    g.set_outputs([y])
    model = tl.Model(g)
    args = [rand((1, 3, 8, 8), seed=5)]
    placed = model.placement(args)
    assert all(p.device == "xla" for p in placed), placed
    got, want = model.run(args, backend="jax"), model.run(args, backend="reference")
    assert_same_outputs(got, want, "jax vs reference")


ATTENTION_CASES: list[dict[str, Any]] = [
    {},
    {"is_causal": 1, "scale": 0.3},
    {"softcap": 2.0, "qk_matmul_output_mode": 1},
    {"left_window_size": 1, "right_window_size": 0, "qk_matmul_output_mode": 3},
    {"softmax_precision": tl.DType.float64, "qk_matmul_output_mode": 2},
]


@pytest.mark.parametrize("attrs", ATTENTION_CASES)
def test_attention(attrs: dict[str, Any]) -> None:
    q, k, v = rand((2, 4, 3, 8)), rand((2, 2, 5, 8), seed=1), rand((2, 2, 5, 6), seed=2)
    agree("Attention", [q, k, v], attrs)
    mask = rand((3, 4), seed=3)
    past = rand((2, 2, 2, 8), seed=4), rand((2, 2, 2, 6), seed=5)
    agree("Attention", [q, k, v, mask, *past], attrs)
    bool_mask = rand((2, 1, 3, 5), seed=6) > 0
    agree("Attention", [q, k, v, bool_mask, None, None, np.array([5, 3])], attrs)
    packed = [rand((2, 3, 16)), rand((2, 5, 8), seed=1), rand((2, 5, 8), seed=2)]
    agree("Attention", packed, {**attrs, "q_num_heads": 4, "kv_num_heads": 2})
