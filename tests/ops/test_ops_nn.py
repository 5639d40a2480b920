"""The nn ops and the reductions agree with onnxruntime on one-node models, and keep their laws."""

from __future__ import annotations

from functools import partial
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_oracle import assert_close, infer, one_node, run_core, tensorloop_run
from onnx_oracle import same_as_onnxruntime as oracle_same
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.ir.graph import Graph
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.types import TensorType

FAST = settings(max_examples=40, deadline=None)
ORT_OPSET = 22
RNG = np.random.default_rng(11)
# rtol, atol by element type.
TOLERANCE = {
    "float16": (3e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-12),
}
same_as_onnxruntime = partial(oracle_same, opset=ORT_OPSET, tolerance=TOLERANCE)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# --- Convolutions -------------------------------------------------------------------------------

CONV_CASES = [
    ((1, 3, 7), (4, 3, 3), {}),
    ((2, 4, 6, 7), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 2, 9, 8), (3, 2, 3, 3), {"dilations": [2, 3], "pads": [2, 0, 1, 3]}),
    ((1, 2, 9, 8), (3, 2, 3, 2), {"strides": [2, 3], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 8, 9), (3, 2, 2, 4), {"strides": [3, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 8, 9), (3, 2, 3, 3), {"strides": [2, 2], "auto_pad": "VALID"}),
    ((1, 4, 5, 6, 4), (4, 1, 2, 3, 2), {"group": 4, "pads": [1, 0, 1, 0, 1, 1]}),
]


@pytest.mark.parametrize(("xs", "ws", "attrs"), CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_matches_onnxruntime(
    xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any], bias: bool
) -> None:
    b = randn(ws[0]) if bias else None
    same_as_onnxruntime("Conv", [randn(*xs), randn(*ws), b], attrs)


def test_conv_in_narrow_and_wide_floats() -> None:
    x, w = randn(1, 2, 6, 6), randn(3, 2, 3, 3)
    want = run_core("Conv", [x, w], pads=(1, 1, 1, 1))[0]
    for dt in (np.float16, ml_dtypes.bfloat16, np.float64):
        (got,) = run_core("Conv", [x.astype(dt), w.astype(dt)], pads=(1, 1, 1, 1))
        assert got.dtype == np.dtype(dt)
        assert_close(
            got.astype(np.float32),
            want,
            TOLERANCE,
            "float32" if dt == np.float64 else str(np.dtype(dt)),
        )


@pytest.mark.parametrize(
    ("xs", "ws", "attrs"),
    [
        ((1, 2, 4), (2, 3, 3), {"strides": [2]}),
        ((2, 2, 3, 4), (2, 2, 3, 3), {"strides": [3, 2], "output_padding": [1, 1]}),
        ((1, 4, 3, 3), (4, 1, 2, 2), {"group": 2, "pads": [1, 0, 0, 1], "dilations": [2, 1]}),
        ((1, 1, 3, 4), (1, 2, 3, 3), {"strides": [2, 2], "output_shape": [8, 9]}),
        ((1, 1, 3, 4), (1, 2, 3, 3), {"strides": [2, 3], "auto_pad": "SAME_UPPER"}),
        ((1, 1, 3, 4), (1, 2, 3, 2), {"strides": [2, 3], "auto_pad": "SAME_LOWER"}),
        ((1, 2, 2, 3, 2), (2, 1, 2, 2, 2), {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 0, 1]}),
    ],
)
def test_conv_transpose_matches_onnxruntime(
    xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    bias = randn(ws[1] * attrs.get("group", 1))
    same_as_onnxruntime("ConvTranspose", [randn(*xs), randn(*ws), bias], attrs)


def test_conv_integer_and_qlinear_conv_match_onnxruntime() -> None:
    x = RNG.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    w = RNG.integers(0, 256, (3, 2, 3, 3)).astype(np.uint8)
    attrs = {"pads": [1, 1, 0, 0], "strides": [1, 2]}
    same_as_onnxruntime("ConvInteger", [x, w, np.array(7, np.uint8), np.array(3, np.uint8)], attrs)
    same_as_onnxruntime("ConvInteger", [x, w], attrs, opset=10)
    wq = RNG.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    inputs = [
        x,
        np.array(0.05, np.float32),
        np.array(9, np.uint8),
        wq,
        np.array([0.01, 0.02, 0.005], np.float32),
        np.zeros(3, np.int8),
        np.array(0.9, np.float32),
        np.array(120, np.uint8),
        RNG.integers(-500, 500, 3).astype(np.int32),
    ]
    # onnxruntime 1.32's u8 by s8 kernel is off by up to 30 on this CPU (docs/onnx.md), so the
    # oracle is the exact integer convolution, requantized in float64.
    (got,) = tensorloop_run(one_node("QLinearConv", inputs, attrs, opset=10), inputs)
    xp = np.pad(x.astype(np.int64) - 9, ((0, 0), (0, 0), (1, 0), (1, 0)))
    acc = np.zeros((1, 3, 4, 2), np.int64)
    for i in range(4):
        for j in range(2):
            window = xp[0, :, i : i + 3, 2 * j : 2 * j + 3]
            acc[0, :, i, j] = (window[None] * wq.astype(np.int64)).sum(axis=(1, 2, 3))
    acc += inputs[8].astype(np.int64)[None, :, None, None]
    scale = 0.05 * inputs[4].astype(np.float64)[None, :, None, None] / np.float32(0.9)
    want = np.clip(np.rint(acc * scale) + 120, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, want)


def test_deform_conv_matches_onnxruntime() -> None:
    x, w = randn(2, 4, 6, 5), randn(6, 2, 3, 2)
    attrs = {"group": 2, "offset_group": 2, "pads": [1, 0, 1, 1], "strides": [1, 2]}
    out = (6, 3)  # (6 + 2 - 3) / 1 + 1, (5 + 1 - 2) // 2 + 1
    offset = (2 * RNG.standard_normal((2, 2 * 6 * 2, *out))).astype(np.float32)
    mask = RNG.uniform(0, 1, (2, 2 * 6, *out)).astype(np.float32)
    same_as_onnxruntime("DeformConv", [x, w, offset, randn(6), mask], attrs)


@FAST
@given(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 4),
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
)
def test_conv_with_a_1x1_kernel_is_a_matmul(n: int, c: int, m: int, spatial: list[int]) -> None:
    x, w = randn(n, c, *spatial), randn(m, c, *[1] * len(spatial))
    (y,) = run_core("Conv", [x, w])
    np.testing.assert_allclose(
        y, np.einsum("nc...,mc->nm...", x, w[(...,) + (0,) * len(spatial)]), rtol=1e-5, atol=1e-5
    )


@FAST
@given(st.integers(1, 3), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2))
def test_grouped_conv_is_the_concat_of_per_group_convs(
    groups: int, cg: int, mg: int, stride: int
) -> None:
    x, w = randn(2, groups * cg, 5, 6), randn(groups * mg, cg, 2, 3)
    attrs = {"strides": (stride, 1), "pads": (1, 0, 0, 1)}
    (y,) = run_core("Conv", [x, w], group=groups, **attrs)
    parts = [
        run_core("Conv", [x[:, g * cg : (g + 1) * cg], w[g * mg : (g + 1) * mg]], **attrs)[0]
        for g in range(groups)
    ]
    np.testing.assert_allclose(y, np.concatenate(parts, axis=1), rtol=1e-5, atol=1e-5)


@FAST
@given(
    st.lists(st.integers(3, 7), min_size=1, max_size=2),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(0, 1),
)
def test_conv_transpose_is_the_adjoint_of_conv(
    sizes: list[int], stride: int, dilation: int, pad: int
) -> None:
    n = len(sizes)
    x, w = randn(1, 2, *sizes, dtype=np.float64), randn(3, 2, *[2] * n, dtype=np.float64)
    attrs = {"strides": (stride,) * n, "dilations": (dilation,) * n, "pads": (pad,) * 2 * n}
    (y,) = run_core("Conv", [x, w], **attrs)
    probe = randn(*y.shape, dtype=np.float64)
    # The input positions past the last window: output_padding gives them back (as zeros).
    rest = tuple((d + 2 * pad - dilation - 1) % stride for d in sizes)
    (back,) = run_core("ConvTranspose", [probe, w], output_padding=rest, **attrs)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, probe), np.vdot(x, back), rtol=1e-9, atol=1e-9)


def test_deform_conv_without_offsets_is_conv_and_mask_scales_it() -> None:
    x, w = randn(1, 2, 5, 5), randn(3, 2, 3, 3)
    (conv,) = run_core("Conv", [x, w], pads=(1, 1, 1, 1))
    zero = np.zeros((1, 18, 5, 5), np.float32)
    (y,) = run_core("DeformConv", [x, w, zero], pads=(1, 1, 1, 1))
    np.testing.assert_allclose(y, conv, rtol=1e-5, atol=1e-5)
    half = np.full((1, 9, 5, 5), 0.5, np.float32)
    (y,) = run_core("DeformConv", [x, w, zero, None, half], pads=(1, 1, 1, 1))
    np.testing.assert_allclose(y, conv / 2, rtol=1e-5, atol=1e-5)


# --- Pooling ------------------------------------------------------------------------------------

POOL_CASES = [
    ((1, 2, 9), {"kernel_shape": [3], "strides": [2]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 3]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 1, 8, 8), {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 1, 6, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 1, 6, 7), {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((2, 1, 5, 4, 6), {"kernel_shape": [2, 2, 3], "strides": [1, 2, 2], "ceil_mode": 1}),
]


@pytest.mark.parametrize(("shape", "attrs"), POOL_CASES)
def test_pools_match_onnxruntime(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    x = randn(*shape)
    for include in (0, 1):
        same_as_onnxruntime("AveragePool", [x], {**attrs, "count_include_pad": include})
    same_as_onnxruntime("MaxPool", [x], attrs, outputs=2)
    same_as_onnxruntime("LpPool", [x], {**attrs, "p": 3})


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.float16, np.float64])
def test_max_pool_element_types_and_column_major_indices(dt: Any) -> None:
    x = RNG.integers(0, 100, (2, 2, 5, 6)).astype(dt)
    attrs = {"kernel_shape": [2, 3], "pads": [1, 1, 0, 1], "storage_order": 1}
    same_as_onnxruntime("MaxPool", [x], attrs, outputs=2)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
def test_global_pools_match_onnxruntime(op: str) -> None:
    for x in (randn(2, 3, 4, 5), randn(2, 3, 4)):
        if op != "GlobalLpPool":
            same_as_onnxruntime(op, [x])
            continue
        # onnxruntime has only GlobalLpPool-2, before the opsets tensorloop reads: compare with
        # LpPool over the whole spatial extent.
        (y,) = run_core(op, [x], p=3)
        (whole,) = run_core("LpPool", [x], kernel_shape=x.shape[2:], p=3)
        np.testing.assert_allclose(y, whole, rtol=1e-6)


@FAST
@given(st.integers(1, 3), st.integers(1, 3), st.integers(4, 8), st.integers(0, 1))
def test_max_pool_indices_point_at_the_maxima(k: int, s: int, size: int, order: int) -> None:
    x = randn(2, 3, size, size + 1)
    y, idx = run_core("MaxPool", [x], kernel_shape=(k, k), strides=(s, s), storage_order=order)
    plane, at = np.divmod(idx, size * (size + 1))
    h, w = np.divmod(at, size + 1) if order == 0 else np.divmod(at, size)[::-1]
    np.testing.assert_array_equal(x.reshape(-1, size, size + 1)[plane, h, w], y)


@FAST
@given(st.integers(1, 3), st.integers(4, 8))
def test_pooling_an_unpooled_tensor_gives_it_back(k: int, size: int) -> None:
    x = np.abs(randn(2, 3, size, size + 1)) + 0.1
    attrs = {"kernel_shape": (k, k), "strides": (k, k)}
    y, idx = run_core("MaxPool", [x], **attrs)
    (up,) = run_core("MaxUnpool", [y, idx, np.array(x.shape, np.int64)], **attrs)
    assert up.shape == x.shape
    np.testing.assert_array_equal(run_core("MaxPool", [up], **attrs)[0], y)


def test_max_unpool_matches_onnxruntime() -> None:
    x = randn(1, 2, 6, 6)
    y, idx = run_core("MaxPool", [x], kernel_shape=(2, 2), strides=(2, 2))
    same_as_onnxruntime("MaxUnpool", [y, idx], {"kernel_shape": [2, 2], "strides": [2, 2]})
    shape = np.array([1, 2, 7, 7], np.int64)
    same_as_onnxruntime("MaxUnpool", [y, idx, shape], {"kernel_shape": [2, 2], "strides": [2, 2]})


@FAST
@given(st.integers(1, 3), st.integers(1, 2), st.integers(0, 1), st.integers(1, 2))
def test_average_pool_with_pads_counted_is_a_depthwise_conv(
    k: int, s: int, pad: int, d: int
) -> None:
    x = randn(1, 3, 6, 5)
    attrs = {"strides": (s, s), "pads": (pad,) * 4, "dilations": (d, d)}
    (avg,) = run_core("AveragePool", [x], kernel_shape=(k, k), count_include_pad=1, **attrs)
    box = np.full((3, 1, k, k), 1 / (k * k), np.float32)
    (conv,) = run_core("Conv", [x, box], group=3, **attrs)
    np.testing.assert_allclose(avg, conv, rtol=1e-5, atol=1e-6)


# --- Normalizations -----------------------------------------------------------------------------


@pytest.mark.parametrize("training", [0, 1])
def test_batch_norm_matches_onnxruntime(training: int) -> None:
    x = randn(3, 4, 5, 2)
    params = [randn(4), randn(4), randn(4), RNG.uniform(0.5, 2, 4).astype(np.float32)]
    attrs = {"training_mode": training, "epsilon": 1e-3, "momentum": 0.7}
    same_as_onnxruntime("BatchNormalization", [x, *params], attrs, outputs=3 if training else 1)


def test_batch_norm_outputs_pass_statistics_through_in_inference() -> None:
    x, mean, var = randn(2, 3, 4), randn(3), RNG.uniform(1, 2, 3).astype(np.float32)
    _, rm, rv = run_core("BatchNormalization", [x, randn(3), randn(3), mean, var])
    np.testing.assert_array_equal(rm, mean)
    np.testing.assert_array_equal(rv, var)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm_matches_onnxruntime(dt: Any, axis: int) -> None:
    x = randn(3, 4, 5, dtype=dt)
    tail = x.shape[axis % 3 :]
    scale, b = randn(*tail, dtype=dt), randn(*tail, dtype=dt)
    y, mean, inv = same_as_onnxruntime(
        "LayerNormalization", [x, scale, b], {"axis": axis}, opset=17, outputs=3
    )
    assert mean.dtype == inv.dtype == np.float32
    want = ((x.astype(np.float32) - mean) * inv).astype(dt).astype(np.float32) * scale + b
    np.testing.assert_allclose(y.astype(np.float32), want.astype(dt), rtol=3e-3, atol=3e-3)


def test_other_normalizations_match_onnxruntime() -> None:
    x = randn(2, 6, 4, 3)
    same_as_onnxruntime("InstanceNormalization", [x, randn(6), randn(6)], {"epsilon": 0.01})
    same_as_onnxruntime("GroupNormalization", [x, randn(6), randn(6)], {"num_groups": 3}, opset=21)
    same_as_onnxruntime("RMSNormalization", [x, randn(4, 3)], {"axis": 2}, opset=23)
    for p in (1, 2):
        same_as_onnxruntime(
            "LpNormalization",
            [
                x,
            ],
            {"p": p, "axis": 1},
        )
    same_as_onnxruntime("MeanVarianceNormalization", [x], {"axes": [0, 1]})
    for size in (1, 3, 5):  # onnxruntime takes odd sizes only
        same_as_onnxruntime("LRN", [x], {"size": size, "alpha": 0.01, "beta": 0.5, "bias": 2.0})


def test_lp_normalization_of_zeros_is_zero() -> None:
    (y,) = run_core("LpNormalization", [np.zeros((2, 3), np.float32)])
    np.testing.assert_array_equal(y, 0)


# --- Dropout ------------------------------------------------------------------------------------


def test_dropout_in_inference_is_the_identity_with_a_full_mask() -> None:
    x = randn(4, 5)
    y, mask = run_core("Dropout", [x, np.array(0.7, np.float32)])
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == bool and mask.all()


@FAST
@given(st.floats(0.05, 0.9), st.integers(0, 2**31))
def test_dropout_in_training_keeps_one_minus_ratio_scaled(ratio: float, seed: int) -> None:
    x = randn(100, 50) + 3
    inputs = [x, np.array(ratio, np.float32), np.array(True)]
    y, mask = run_core("Dropout", inputs, seed=seed)
    assert abs(mask.mean() - (1 - ratio)) < 0.05
    np.testing.assert_allclose(y, np.where(mask, x / np.float32(1 - ratio), 0), rtol=1e-6)
    again, _ = run_core("Dropout", inputs, seed=seed)
    np.testing.assert_array_equal(again, y)


# --- Losses -------------------------------------------------------------------------------------

LOSS_SHAPES = [((5, 4), (5,)), ((3, 4, 2), (3, 2)), ((2, 3, 2, 3), (2, 2, 3))]


@pytest.mark.parametrize(("xs", "ts"), LOSS_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_match_onnxruntime(
    xs: tuple[int, ...], ts: tuple[int, ...], reduction: str, weighted: bool
) -> None:
    x = randn(*xs)
    target = RNG.integers(0, xs[1], ts).astype(np.int64)
    target.reshape(-1)[0] = 1
    weight = RNG.uniform(0.2, 2, xs[1]).astype(np.float32) if weighted else None
    for ignore in ({}, {"ignore_index": 1}):
        attrs = {"reduction": reduction, **ignore}
        same_as_onnxruntime("NegativeLogLikelihoodLoss", [x, target, weight], attrs)
        same_as_onnxruntime("SoftmaxCrossEntropyLoss", [x, target, weight], attrs, outputs=2)


def test_an_ignored_target_may_lie_outside_the_classes() -> None:
    x, target = randn(3, 4), np.array([0, -100, 3], np.int32)
    (loss,) = run_core("NegativeLogLikelihoodLoss", [x, target], ignore_index=-100)
    np.testing.assert_allclose(loss, -(x[0, 0] + x[2, 3]) / 2, rtol=1e-6)
    with pytest.raises(ExecutionError, match=r"target -100 is not a class index in \[0, 4\)"):
        run_core("NegativeLogLikelihoodLoss", [x, target])


# --- CausalConvWithState ------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["none", "silu"])
def test_causal_conv_is_a_left_padded_depthwise_conv(activation: str) -> None:
    x, w, b = randn(2, 3, 7), randn(3, 1, 4), randn(3)
    y, state = run_core("CausalConvWithState", [x, w, b], activation=activation)
    padded = np.concatenate([np.zeros((2, 3, 3), np.float32), x], axis=2)
    (conv,) = run_core("Conv", [padded, w, b], group=3)
    if activation == "silu":
        conv = conv / (1 + np.exp(-conv))
    np.testing.assert_allclose(y, conv, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state, x[:, :, -3:])


@FAST
@given(st.integers(1, 5), st.integers(1, 8), st.integers(0, 8))
def test_causal_conv_in_chunks_equals_one_pass(k: int, first: int, second: int) -> None:
    x, w = randn(2, 3, first + second), randn(3, 1, k)
    whole, end = run_core("CausalConvWithState", [x, w])
    head, state = run_core("CausalConvWithState", [x[:, :, :first], w])
    tail, state = run_core("CausalConvWithState", [x[:, :, first:], w, None, state])
    np.testing.assert_allclose(np.concatenate([head, tail], 2), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state, end)


# --- Reductions ---------------------------------------------------------------------------------

NEW_REDUCTIONS = [
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceProd",
    "ReduceSumSquare",
]


@pytest.mark.parametrize("op", NEW_REDUCTIONS)
@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "int64"])
def test_reductions_match_onnxruntime(op: str, dt: str) -> None:
    if "Log" in op and dt.startswith("int"):
        return
    x = (
        RNG.uniform(0.5, 3, (3, 4, 2)).astype(dt)
        if dt.startswith("f")
        else (RNG.integers(-3, 4, (3, 4, 2)).astype(dt))
    )
    for axes, keep in (([1], 1), ([0, -1], 0), (None, 1), (None, 0)):
        inputs = [x, None if axes is None else np.array(axes, np.int64)]
        same_as_onnxruntime(op, inputs, {"keepdims": keep})
    same_as_onnxruntime(op, [x, np.zeros(0, np.int64)], {"noop_with_empty_axes": 1})


def test_reductions_of_an_empty_set_give_their_identity() -> None:
    x = np.zeros((2, 0, 3), np.float32)
    want = {"ReduceL1": 0, "ReduceL2": 0, "ReduceSumSquare": 0, "ReduceProd": 1}
    want |= {"ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}
    for op, value in want.items():
        (y,) = run_core(op, [x, np.array([1], np.int64)], keepdims=0)
        assert y.shape == (2, 3)
        np.testing.assert_array_equal(y, value)


@FAST
@given(st.lists(st.floats(-30, 30, width=32), min_size=1, max_size=12))
def test_log_sum_exp_is_log_of_sum_of_exp_without_overflow(values: list[float]) -> None:
    x = np.array(values, np.float64)
    (y,) = run_core("ReduceLogSumExp", [x + 1000], keepdims=0)
    np.testing.assert_allclose(y, np.log(np.sum(np.exp(x))) + 1000, rtol=1e-12)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extremes_match_onnxruntime_on_ties(op: str, last: int) -> None:
    x = RNG.integers(0, 3, (4, 5, 3)).astype(np.float32)
    for axis, keep in ((0, 1), (1, 0), (-1, 1)):
        attrs = {"axis": axis, "keepdims": keep, "select_last_index": last}
        same_as_onnxruntime(op, [x], attrs, opset=13)


# --- Older opsets ------------------------------------------------------------------------------


def test_reductions_with_an_axes_attribute_in_older_opsets() -> None:
    x = randn(3, 4, 5)
    same_as_onnxruntime("ReduceSum", [x], {"axes": [0, 2], "keepdims": 0}, opset=11)
    same_as_onnxruntime("ReduceSum", [x], {}, opset=11)
    for op in [*NEW_REDUCTIONS[:2], "ReduceMean", "ReduceMax"]:
        same_as_onnxruntime(op, [np.abs(x) + 1], {"axes": [-1]}, opset=13)


def test_older_dropout_batch_norm_and_norms() -> None:
    x = randn(2, 4, 3, 3)
    same_as_onnxruntime("Dropout", [x], {"ratio": 0.3}, opset=7)
    # onnxruntime leaves the mask of Dropout-7..11 all zero; every entry is kept, so (as from
    # opset 12 on) it is all ones: float before opset 10, bool after.
    for opset, dt in ((7, np.float32), (10, np.bool_)):
        y, mask = tensorloop_run(
            one_node("Dropout", [x], {"ratio": 0.3}, opset=opset, outputs=2), [x]
        )
        np.testing.assert_array_equal(y, x)
        assert mask.dtype == dt and (mask == 1).all()
    per_activation = [
        randn(4, 3, 3),
        randn(4, 3, 3),
        randn(4, 3, 3),
        np.ones((4, 3, 3), np.float32),
    ]
    same_as_onnxruntime("BatchNormalization", [x, *per_activation], {"spatial": 0}, opset=7)
    same_as_onnxruntime(
        "BatchNormalization", [x, randn(4), randn(4), randn(4), np.ones(4, np.float32)], {}, opset=9
    )
    same_as_onnxruntime("GroupNormalization", [x, randn(2), randn(2)], {"num_groups": 2}, opset=18)
    same_as_onnxruntime("LpPool", [x], {"kernel_shape": [2, 2], "p": 3}, opset=11)


# --- Type rules ---------------------------------------------------------------------------------


T = TensorType


def test_type_rules_give_the_output_shapes() -> None:
    x = T("f32", ["N", 4, 9, 8])
    assert infer("Conv", [x, T("f32", [6, 2, 3, 3])], group=2, strides=(2, 2)) == ["f32[N,6,4,3]"]
    assert infer("Conv", [T("f32", ["N", 4, "H", 8]), T("f32", [6, 4, 3, 3])]) == ["f32[N,6,?,6]"]
    assert infer("ConvTranspose", [x, T("f32", [4, 3, 3, 3])], strides=(2, 2)) == ["f32[N,3,19,17]"]
    assert infer("MaxPool", [x], kernel_shape=(3, 3), ceil_mode=1, strides=(2, 2)) == [
        "f32[N,4,4,4]",
        "i64[N,4,4,4]",
    ]
    assert infer("GlobalLpPool", [x]) == ["f32[N,4,1,1]"]
    assert infer("LayerNormalization", [T("f16", [2, 3, 4]), T("f16", [4])]) == [
        "f16[2,3,4]",
        "f32[2,3,1]",
        "f32[2,3,1]",
    ]
    assert infer("SoftmaxCrossEntropyLoss", [T("f32", [5, 3, 2]), T("i64", [5, 2])]) == [
        "f32[]",
        "f32[5,3,2]",
    ]
    loss = infer("NegativeLogLikelihoodLoss", [T("f32", [5, 3]), T("i32", [5])], reduction="none")
    assert loss == ["f32[5]"]
    assert infer("CausalConvWithState", [T("f32", ["B", 3, "L"]), T("f32", [3, 1, 4])]) == [
        "f32[B,3,L]",
        "f32[B,3,3]",
    ]
    assert infer("ReduceLogSumExp", [x], keepdims=0) == ["f32[]"]
    assert infer("ArgMin", [x], axis=1, keepdims=0) == ["i64[N,9,8]"]


@pytest.mark.parametrize(
    ("op", "types", "attrs", "message"),
    [
        ("Conv", [T("f32", [1, 4, 5, 5]), T("f32", [2, 3, 3, 3])], {}, "X has 4 channels but W"),
        ("Conv", [T("f32", [1, 4, 5, 5]), T("f32", [2, 4, 3, 3])], {"strides": (1,)}, "strides"),
        ("Conv", [T("f32", [1, 4, 2, 2]), T("f32", [2, 4, 3, 3])], {}, "the window spans 3"),
        ("Conv", [T("i32", [1, 4, 5, 5]), T("i32", [2, 4, 3, 3])], {}, "floating-point"),
        (
            "MaxPool",
            [T("f32", [1, 4, 5, 5])],
            {"kernel_shape": (2, 2), "auto_pad": "X"},
            "auto_pad",
        ),
        ("AveragePool", [T("f32", [4, 5])], {"kernel_shape": (2,)}, "at least one spatial"),
        ("LpNormalization", [T("f32", [4, 5])], {"p": 3}, "p must be 1 or 2"),
        (
            "GroupNormalization",
            [T("f32", [2, 5, 3]), T("f32", [5]), T("f32", [5])],
            {"num_groups": 2},
            "do not split",
        ),
        ("NegativeLogLikelihoodLoss", [T("f32", [5, 3]), T("i64", [4])], {}, "expected 5, got 4"),
        (
            "SoftmaxCrossEntropyLoss",
            [T("f32", [5, 3]), T("i64", [5])],
            {"reduction": "max"},
            "reduction",
        ),
        (
            "CausalConvWithState",
            [T("f32", [1, 3, 5]), T("f32", [3, 1, 2])],
            {"activation": "relu"},
            "activation",
        ),
        ("ReduceLogSum", [T("i32", [3])], {}, "floating-point"),
    ],
)
def test_type_rules_reject_bad_nodes(
    op: str, types: list[TensorType], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(GraphError, match=message) as info:
        infer(op, types, **attrs)
    assert op in str(info.value)


def test_kernels_check_what_only_running_shows() -> None:
    g = Graph()
    x = g.add_input("x", T("f32", ["N", "C", "H", "W"]))
    w = g.add_input("w", T("f32", ["M", "C", 3, 3]))
    node = g.add_node("Conv", [x, w], {"group": 2})
    g.set_outputs(node.outputs)
    with pytest.raises(ExecutionError, match="X has 4 channels and W"):
        Interpreter().run(g, [randn(1, 4, 5, 5), randn(2, 4, 3, 3)])
