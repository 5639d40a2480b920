"""The neural-network ops' gradient rules (rules_nn.py) against central differences: each
case runs the op once on small float64 inputs, through ``grad_check.check_op``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from grad_check import check_op
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.tensor.dtypes import dtype
from tensorloop.tensor.types import TensorType


def _normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _positive(*shape: int, seed: int = 0) -> np.ndarray:
    return np.abs(_normal(*shape, seed=seed)) + 0.5


# --- Gemm, softmax ------------------------------------------------------------------------------


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (4,), (3, 1), (3, 4)])
def test_gemm(trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None) -> None:
    a = _normal(*((2, 3) if trans_a else (3, 2)), seed=1)
    b = _normal(*((4, 2) if trans_b else (2, 4)), seed=2)
    inputs = [a, b] if c_shape is None else [a, b, _normal(*c_shape, seed=3)]
    check_op("Gemm", inputs, {"transA": trans_a, "transB": trans_b, "alpha": 0.7, "beta": 1.3})


def test_gemm_default_attributes() -> None:
    check_op("Gemm", [_normal(2, 3), _normal(3, 2, seed=1), _normal(2, seed=2)])


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
def test_softmax(op: str, axis: int) -> None:
    check_op(op, [_normal(2, 3, 4)], {"axis": axis})


# --- Convolutions -------------------------------------------------------------------------------

CONV_1D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 2, 7), (3, 2, 3), {}),
    ((2, 2, 7), (3, 2, 3), {"strides": [2]}),
    ((1, 2, 8), (3, 2, 2), {"strides": [3]}),
    ((1, 2, 7), (2, 2, 3), {"pads": [1, 2]}),
    ((1, 2, 9), (2, 2, 3), {"dilations": [2], "strides": [2], "pads": [2, 0]}),
    ((1, 4, 6), (6, 2, 3), {"group": 2, "pads": [1, 1]}),
    ((1, 3, 6), (3, 1, 2), {"group": 3, "strides": [2]}),
    ((1, 2, 7), (2, 2, 3), {"auto_pad": "SAME_UPPER", "strides": [2]}),
    ((1, 2, 6), (2, 2, 4), {"auto_pad": "SAME_LOWER"}),
    ((1, 2, 7), (2, 2, 3), {"auto_pad": "VALID", "strides": [2]}),
    ((1, 2, 5), (2, 2, 3), {"pads": [3, 3], "strides": [2]}),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CONV_1D)
def test_conv_1d(x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    check_op("Conv", [_normal(*x_shape), _normal(*w_shape, seed=1)], attrs)


CONV_2D: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((1, 2, 4, 5), (2, 2, 3, 2), {}),
    ((1, 2, 5, 6), (3, 2, 2, 3), {"strides": [2, 1], "pads": [1, 0, 0, 1]}),
    ((1, 4, 5, 5), (4, 2, 3, 2), {"group": 2, "dilations": [1, 2], "strides": [2, 2]}),
    ((2, 2, 4, 4), (2, 1, 2, 2), {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 2, 5, 4), (2, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 1, 5, 5), (2, 1, 2, 2), {"dilations": [2, 2], "pads": [0, 1, 2, 0]}),
    ((1, 2, 3, 3), (2, 2, 1, 1), {}),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CONV_2D)
def test_conv_2d(x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    check_op("Conv", [_normal(*x_shape), _normal(*w_shape, seed=1)], attrs)


def test_conv_bias_and_kernel_shape() -> None:
    x, w, bias = _normal(1, 2, 5, 4), _normal(4, 1, 2, 2, seed=1), _normal(4, seed=2)
    check_op("Conv", [x, w, bias], {"group": 2, "kernel_shape": [2, 2], "strides": [2, 1]})


def test_conv_3d() -> None:
    x, w = _normal(1, 2, 3, 4, 3), _normal(2, 1, 2, 2, 2, seed=1)
    check_op("Conv", [x, w], {"group": 2, "pads": [1, 0, 0, 0, 1, 1], "strides": [1, 2, 1]})


def _grad_model(op: str, x_type: TensorType, w: np.ndarray, attrs: dict[str, Any]) -> tl.Model:
    """The gradient model of sum(op(x, w) * 1) with x of a type that may have symbolic dims."""
    g = Graph("dynamic")
    em = Emitter(g)
    x = g.add_input("x", x_type)
    y = em.op(op, [x, em.const(w)], attrs)
    loss = em.op("ReduceSum", [em.op("Mul", [y, y])], {"keepdims": 0})
    g.outputs = [g.result_named(loss, "loss")]
    return tl.grad(tl.Model(g), of="loss", wrt=["x"])


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("Conv", {"strides": [2, 1], "pads": [1, 0, 0, 1], "dilations": [1, 2]}),
        ("Conv", {"strides": [3, 2], "group": 2}),
        ("ConvTranspose", {"strides": [2, 1], "pads": [1, 0, 0, 1], "group": 2}),
        ("ConvTranspose", {"strides": [2, 2], "output_padding": [1, 1]}),
    ],
)
def test_conv_with_dynamic_spatial_sizes(op: str, attrs: dict[str, Any]) -> None:
    x = _normal(1, 2, 7, 6)
    w = _normal(2, 1 if attrs.get("group") == 2 else 2, 3, 2, seed=1)
    dynamic = _grad_model(op, TensorType(np.float64, (1, 2, "h", "w")), w, attrs)
    static = _grad_model(op, TensorType(np.float64, x.shape), w, attrs)
    got, want = dynamic.run({"x": x})["x.grad"], static.run({"x": x})["x.grad"]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CONV_TRANSPOSE: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((1, 2, 4), (2, 3, 3), {}),
    ((2, 2, 3), (2, 2, 3), {"strides": [2]}),
    ((1, 2, 4), (2, 2, 3), {"strides": [2], "pads": [1, 2], "output_padding": [1]}),
    ((1, 2, 3), (2, 2, 2), {"strides": [3], "output_padding": [2], "pads": [0, 1]}),
    ((1, 4, 3), (4, 1, 3), {"group": 2, "dilations": [2], "strides": [2]}),
    ((1, 2, 3), (2, 2, 3), {"strides": [2], "output_shape": [9]}),
    ((1, 2, 3), (2, 2, 3), {"strides": [2], "output_shape": [4]}),
    ((1, 2, 4), (2, 2, 3), {"strides": [2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 4), (2, 2, 3), {"strides": [2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 3, 3), (2, 3, 2, 3), {"strides": [2, 1], "pads": [1, 0, 0, 1]}),
    ((1, 2, 2, 3), (2, 2, 2, 2), {"strides": [2, 2], "output_padding": [1, 0], "group": 2}),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CONV_TRANSPOSE)
def test_conv_transpose(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    check_op("ConvTranspose", [_normal(*x_shape), _normal(*w_shape, seed=1)], attrs)


def test_conv_transpose_bias() -> None:
    x, w, bias = _normal(1, 2, 3), _normal(2, 4, 2, seed=1), _normal(4, seed=2)
    check_op("ConvTranspose", [x, w, bias], {"strides": [2]})


# --- Pooling ------------------------------------------------------------------------------------

POOLS: list[tuple[tuple[int, ...], dict[str, Any]]] = [
    ((1, 2, 5, 5), {"kernel_shape": [2, 2]}),
    ((1, 2, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((2, 1, 5, 4), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ((1, 2, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    (
        (1, 2, 6, 5),
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    ),
    ((1, 1, 6, 6), {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [1, 2]}),
    ((1, 2, 5, 4), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 5, 4), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 7), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
]


@pytest.mark.parametrize(("x_shape", "attrs"), POOLS)
def test_max_pool(x_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    check_op("MaxPool", [_normal(*x_shape)], attrs)


def test_max_pool_column_major_indices() -> None:
    check_op("MaxPool", [_normal(1, 2, 4, 5)], {"kernel_shape": [2, 3], "storage_order": 1})


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize(("x_shape", "attrs"), POOLS)
def test_average_pool(
    x_shape: tuple[int, ...], attrs: dict[str, Any], count_include_pad: int
) -> None:
    check_op("AveragePool", [_normal(*x_shape)], {**attrs, "count_include_pad": count_include_pad})


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(p: int) -> None:
    attrs = {"kernel_shape": [2, 2], "strides": [2, 1], "pads": [1, 0, 0, 1], "p": p}
    check_op("LpPool", [_normal(1, 2, 4, 3)], attrs)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 3, 3)])
def test_global_pools(op: str, shape: tuple[int, ...]) -> None:
    check_op(op, [_normal(*shape)])


def test_global_lp_pool_p3() -> None:
    check_op("GlobalLpPool", [_normal(1, 2, 3, 2)], {"p": 3})


def test_global_max_pool_splits_ties() -> None:
    x = np.array([[[1.0, 3.0, 3.0, 2.0]]])
    model = _single_input_model("GlobalMaxPool", x.shape)
    grads = tl.grad(model, of="loss", wrt=["x"]).run({"x": x})
    np.testing.assert_allclose(grads["x.grad"], [[[0.0, 0.5, 0.5, 0.0]]])


def _single_input_model(op: str, shape: tuple[int, ...], **attrs: Any) -> tl.Model:
    g = Graph("single")
    em = Emitter(g)
    x = g.add_input("x", TensorType(np.float64, shape))
    loss = em.op("ReduceSum", [em.op(op, [x], attrs)], {"keepdims": 0})
    g.outputs = [g.result_named(loss, "loss")]
    return tl.Model(g)


# --- Normalizations -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (1, 3, 2, 2)])
def test_batch_norm_inference(shape: tuple[int, ...]) -> None:
    c = shape[1]
    inputs = [_normal(*shape), _normal(c, seed=1), _normal(c, seed=2), _normal(c, seed=3)]
    check_op("BatchNormalization", [*inputs, _positive(c, seed=4)], {"epsilon": 1e-3})


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4)])
def test_batch_norm_training(shape: tuple[int, ...]) -> None:
    c = shape[1]
    inputs = [_normal(*shape), _normal(c, seed=1), _normal(c, seed=2), _normal(c, seed=3)]
    attrs = {"training_mode": 1, "momentum": 0.8}
    check_op("BatchNormalization", [*inputs, _positive(c, seed=4)], attrs)


@pytest.mark.parametrize(
    ("shape", "axis", "scale_shape", "bias"),
    [
        ((2, 3, 4), -1, (4,), True),
        ((2, 3, 4), 1, (3, 4), True),
        ((2, 3, 4), 1, (1, 4), False),
        ((2, 3, 4), 0, (3, 4), True),
        ((3, 5), -1, (5,), False),
    ],
)
def test_layer_norm(
    shape: tuple[int, ...], axis: int, scale_shape: tuple[int, ...], bias: bool
) -> None:
    # stash_type 0: the statistics in float64 too, for the finite differences to mean anything
    inputs = [_normal(*shape), _normal(*scale_shape, seed=1)]
    if bias:
        inputs.append(_normal(*scale_shape, seed=2))
    check_op("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3, "stash_type": 0})


@pytest.mark.parametrize(
    ("shape", "groups"), [((2, 4, 3), 2), ((1, 6, 2, 2), 3), ((2, 4), 4), ((1, 4, 3), 1)]
)
def test_group_norm(shape: tuple[int, ...], groups: int) -> None:
    c = shape[1]
    inputs = [_normal(*shape), _normal(c, seed=1), _normal(c, seed=2)]
    check_op("GroupNormalization", inputs, {"num_groups": groups, "stash_type": 0})


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 3, 3)])
def test_instance_norm(shape: tuple[int, ...]) -> None:
    c = shape[1]
    inputs = [_normal(*shape), _normal(c, seed=1), _normal(c, seed=2)]
    check_op("InstanceNormalization", inputs, {"epsilon": 1e-3})


@pytest.mark.parametrize(
    ("shape", "axis", "scale_shape"),
    [((2, 3, 4), -1, (4,)), ((2, 3, 4), 1, (3, 4)), ((2, 3, 4), 1, (4,)), ((3, 5), 0, (3, 5))],
)
def test_rms_norm(shape: tuple[int, ...], axis: int, scale_shape: tuple[int, ...]) -> None:
    inputs = [_normal(*shape), _normal(*scale_shape, seed=1)]
    check_op("RMSNormalization", inputs, {"axis": axis, "stash_type": 0})


# --- Dropout ------------------------------------------------------------------------------------


def test_dropout_without_training_mode() -> None:
    check_op("Dropout", [_normal(2, 3), np.array(0.3)], constants={1: np.array(0.3)})


@pytest.mark.parametrize("training", [False, True])
def test_dropout_with_training_mode(training: bool) -> None:
    inputs = [_normal(3, 4), np.array(0.4), np.array(training)]
    constants = {1: np.array(0.4), 2: np.array(training)}
    check_op("Dropout", inputs, {"seed": 3}, constants=constants)


@pytest.mark.parametrize("training", [False, True])
def test_dropout_ratio_gradient(training: bool) -> None:
    inputs = [_normal(3, 4), np.array(0.4), np.array(training)]
    check_op("Dropout", inputs, {"seed": 3}, constants={2: np.array(training)})


# --- Einsum -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("ij,jk", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
        ("ij->ji", [(2, 3)]),
        ("ij->i", [(2, 3)]),
        ("ij->", [(2, 3)]),
        ("i,j->ij", [(2,), (3,)]),
        ("ij,ij->", [(2, 3), (2, 3)]),
        ("ij,ij->ij", [(1, 3), (2, 3)]),
        ("ijk,k->j", [(2, 3, 2), (2,)]),
        ("ii,ij->j", [(3, 3), (3, 2)]),
        ("ii->", [(3, 3)]),
        ("ii->i", [(3, 3)]),
        ("iji->ij", [(2, 3, 2)]),
        ("ii,ij", [(1, 1), (3, 2)]),
        ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
        ("...ij,...jk->...ik", [(1, 2, 3), (2, 3, 2)]),
        ("i...j,j->i...", [(2, 2, 3, 3), (3,)]),
        ("...i,...i", [(2, 3), (1, 3)]),
        ("bhqd,bhkd->bhqk", [(1, 2, 2, 3), (1, 2, 3, 3)]),
    ],
)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    inputs = [_normal(*s, seed=k) for k, s in enumerate(shapes)]
    check_op("Einsum", inputs, {"equation": equation})


def test_einsum_diagonal_of_dynamic_size() -> None:
    g = Graph("trace")
    em = Emitter(g)
    x = g.add_input("x", TensorType(np.float64, ("n", "n")))
    y = em.op("Einsum", [x], {"equation": "ii->"})
    g.outputs = [g.result_named(y, "loss")]
    grads = tl.grad(tl.Model(g), of="loss", wrt=["x"]).run({"x": _normal(3, 3)})
    np.testing.assert_allclose(grads["x.grad"], np.eye(3))


# --- Losses -------------------------------------------------------------------------------------

LOSS_CASES: list[tuple[tuple[int, ...], str, bool, int | None]] = [
    ((3, 4), "mean", False, None),
    ((3, 4), "sum", True, None),
    ((3, 4), "none", True, None),
    ((3, 4), "mean", True, 2),
    ((2, 3, 2), "mean", True, None),
    ((2, 3, 2), "none", False, 1),
    ((2, 3, 2, 2), "sum", False, -1),
]


def _loss_inputs(
    shape: tuple[int, ...], weights: bool, ignore: int | None
) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
    rng = np.random.default_rng(5)
    target = rng.integers(0, shape[1], (shape[0], *shape[2:])).astype(np.int64)
    if ignore is not None:
        target.reshape(-1)[0] = ignore
    inputs = [_normal(*shape), target]
    if weights:
        inputs.append(_positive(shape[1], seed=6))
    return inputs, {1: target}


@pytest.mark.parametrize(("shape", "reduction", "weights", "ignore"), LOSS_CASES)
def test_softmax_cross_entropy_loss(
    shape: tuple[int, ...], reduction: str, weights: bool, ignore: int | None
) -> None:
    inputs, constants = _loss_inputs(shape, weights, ignore)
    attrs: dict[str, Any] = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check_op("SoftmaxCrossEntropyLoss", inputs, attrs, constants=constants)


@pytest.mark.parametrize(("shape", "reduction", "weights", "ignore"), LOSS_CASES)
def test_negative_log_likelihood_loss(
    shape: tuple[int, ...], reduction: str, weights: bool, ignore: int | None
) -> None:
    inputs, constants = _loss_inputs(shape, weights, ignore)
    attrs: dict[str, Any] = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check_op("NegativeLogLikelihoodLoss", inputs, attrs, constants=constants)


def test_loss_with_int32_targets() -> None:
    inputs, _ = _loss_inputs((3, 4), True, None)
    target = inputs[1].astype(np.int32)
    check_op("SoftmaxCrossEntropyLoss", [inputs[0], target, inputs[2]], constants={1: target})


# --- SwiGLU -------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_swiglu(alpha: float) -> None:
    check_op("SwiGLU", [_normal(2, 3), _normal(2, 3, seed=1)], {"alpha": alpha})


# --- Symbolic dims and narrow types ---------------------------------------------------------------


def _grads(
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any],
    shapes: list[tuple[Any, ...]] | None = None,
) -> dict[str, np.ndarray]:
    """The gradients of sum(op(inputs)[0] ** 2) with respect to every input, the inputs typed
    with ``shapes`` (symbolic dims allowed) or their own shapes."""
    g = Graph("grads")
    em = Emitter(g)
    values = [
        g.add_input(f"x{k}", TensorType(dtype(x.dtype), x.shape if shapes is None else shapes[k]))
        for k, x in enumerate(inputs)
    ]
    y = em.ops(op, values, attrs)[0]
    loss = em.op("ReduceSum", [em.op("Mul", [y, y])], {"keepdims": 0})
    g.outputs = [g.result_named(loss, "loss")]
    wrt = [f"x{k}" for k, x in enumerate(inputs) if x.dtype.kind == "f"]
    got = tl.grad(tl.Model(g), of="loss", wrt=wrt).run({f"x{k}": x for k, x in enumerate(inputs)})
    return {name: got[f"{name}.grad"] for name in wrt}


DYNAMIC: list[tuple[str, list[np.ndarray], dict[str, Any], list[tuple[Any, ...]]]] = [
    (
        "LayerNormalization",
        [_normal(2, 3, 4), _normal(3, 4, seed=1), _normal(4, seed=2)],
        {"axis": 1, "stash_type": 0},
        [("n", "c", "d"), ("c", "d"), ("d",)],
    ),
    (
        "RMSNormalization",
        [_normal(2, 3, 4), _normal(4, seed=1)],
        {"axis": 1, "stash_type": 0},
        [("n", "c", "d"), ("d",)],
    ),
    (
        "GroupNormalization",
        [_normal(2, 4, 3), _normal(4, seed=1), _normal(4, seed=2)],
        {"num_groups": 2, "stash_type": 0},
        [("n", "c", "d"), ("c",), ("c",)],
    ),
    (
        "InstanceNormalization",
        [_normal(2, 3, 4), _normal(3, seed=1), _normal(3, seed=2)],
        {},
        [("n", "c", "d"), ("c",), ("c",)],
    ),
    (
        "BatchNormalization",
        [_normal(2, 3, 4), *[_normal(3, seed=k) for k in (1, 2, 3)], _positive(3, seed=4)],
        {"training_mode": 1},
        [("n", "c", "d"), ("c",), ("c",), ("c",), ("c",)],
    ),
    ("GlobalAveragePool", [_normal(2, 3, 4, 2)], {}, [("n", "c", "h", "w")]),
    ("GlobalMaxPool", [_normal(2, 3, 4, 2)], {}, [("n", "c", "h", "w")]),
    ("MaxPool", [_normal(2, 3, 5, 4)], {"kernel_shape": [2, 2]}, [("n", "c", 5, 4)]),
    ("AveragePool", [_normal(2, 3, 5, 4)], {"kernel_shape": [2, 2]}, [("n", "c", 5, 4)]),
    ("Softmax", [_normal(2, 3, 4)], {"axis": 1}, [("n", "c", "d")]),
    (
        "Conv",
        # positive: no cancellation for the backends' summation orders to disagree on
        [_positive(2, 4, 5, 6), _positive(4, 2, 3, 2, seed=1), _positive(4, seed=2)],
        {"group": 2, "strides": [2, 1], "pads": [1, 0, 0, 1]},
        [("n", 4, "h", "w"), (4, 2, 3, 2), (4,)],
    ),
    (
        "ConvTranspose",
        [_positive(2, 4, 3, 2), _positive(4, 1, 3, 2, seed=1), _positive(2, seed=2)],
        {"group": 2, "strides": [2, 3], "pads": [1, 0, 0, 1], "output_padding": [1, 2]},
        [("n", 4, "h", "w"), (4, 1, 3, 2), (2,)],
    ),
    (
        "SoftmaxCrossEntropyLoss",
        [_normal(3, 4, 2), np.array([[0, 1], [3, 2], [1, 1]]), _positive(4, seed=1)],
        {"ignore_index": 2},
        [("n", "c", "d"), ("n", "d"), ("c",)],
    ),
    (
        "Einsum",
        [_normal(2, 3), _normal(3, 3)],
        {"equation": "ij,jj->ij"},
        [("n", "m"), ("m", "m")],
    ),
]


@pytest.mark.parametrize(("op", "inputs", "attrs", "shapes"), DYNAMIC)
def test_symbolic_dims_give_the_static_gradients(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any], shapes: list[tuple[Any, ...]]
) -> None:
    want = _grads(op, inputs, attrs)
    got = _grads(op, inputs, attrs, shapes)
    for name, grad in got.items():
        np.testing.assert_allclose(grad, want[name], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("LayerNormalization", [_normal(2, 3, 4), _normal(4, seed=1), _normal(4, seed=2)], {}),
        ("RMSNormalization", [_normal(2, 3, 4), _normal(4, seed=1)], {}),
        (
            "GroupNormalization",
            [_normal(2, 4, 3), _normal(4, seed=1), _normal(4, seed=2)],
            {"num_groups": 2},
        ),
    ],
)
def test_float16_statistics_in_float32(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any]
) -> None:
    want = _grads(op, inputs, {**attrs, "stash_type": 0})
    got = _grads(op, [x.astype(np.float16) for x in inputs], attrs)
    for name, grad in got.items():
        assert grad.dtype == np.float16
        np.testing.assert_allclose(grad.astype(np.float64), want[name], rtol=2e-2, atol=2e-2)


def test_batch_norm_statistics_of_another_type() -> None:
    x, scale, bias, mean = (_normal(2, 3, 4), *[_normal(3, seed=k) for k in (1, 2, 3)])
    var = _positive(3, seed=4)
    want = _grads("BatchNormalization", [x, scale, bias, mean, var], {})
    narrow = [v.astype(np.float32) for v in (x, scale, bias)]
    got = _grads("BatchNormalization", [*narrow, mean, var], {})
    for name, grad in got.items():
        np.testing.assert_allclose(grad, want[name], rtol=1e-5, atol=1e-5)
    assert got["x3"].dtype == np.float64 and got["x0"].dtype == np.float32


# --- RotaryEmbedding ----------------------------------------------------------------------------


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize(
    ("x_shape", "attrs", "positions"),
    [
        ((1, 2, 3, 4), {}, False),
        ((2, 3, 8), {"num_heads": 2}, False),
        ((1, 2, 3, 6), {"rotary_embedding_dim": 4}, False),
        ((2, 1, 3, 4), {}, True),
        ((1, 3, 12), {"num_heads": 2, "rotary_embedding_dim": 4}, True),
    ],
)
def test_rotary_embedding(
    x_shape: tuple[int, ...], attrs: dict[str, Any], positions: bool, interleaved: int
) -> None:
    batch, seq = x_shape[0], x_shape[2] if len(x_shape) == 4 else x_shape[1]
    head = x_shape[3] if len(x_shape) == 4 else x_shape[2] // attrs["num_heads"]
    half = (attrs.get("rotary_embedding_dim") or head) // 2
    cache = (5, half) if positions else (batch, seq, half)
    inputs = [_normal(*x_shape), _normal(*cache, seed=1), _normal(*cache, seed=2)]
    constants = None
    if positions:
        ids = np.random.default_rng(3).integers(0, 5, (batch, seq)).astype(np.int64)
        ids.reshape(-1)[:2] = 4  # a row read twice
        inputs.append(ids)
        constants = {3: ids}
    check_op("RotaryEmbedding", inputs, {**attrs, "interleaved": interleaved}, constants=constants)


# --- Attention ----------------------------------------------------------------------------------


def _attention_case(
    packed: bool, hq: int, hkv: int, sq: int = 3, skv: int = 4, d: int = 2
) -> tuple[list[np.ndarray], dict[str, Any]]:
    if packed:
        shapes = [(2, sq, hq * d), (2, skv, hkv * d), (2, skv, hkv * d)]
        attrs: dict[str, Any] = {"q_num_heads": hq, "kv_num_heads": hkv}
    else:
        shapes, attrs = [(2, hq, sq, d), (2, hkv, skv, d), (2, hkv, skv, d)], {}
    return [_normal(*s, seed=k) for k, s in enumerate(shapes)], attrs


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize(("hq", "hkv"), [(1, 1), (2, 1), (4, 2)])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention(packed: bool, hq: int, hkv: int, mode: int) -> None:
    inputs, attrs = _attention_case(packed, hq, hkv)
    check_op("Attention", inputs, {**attrs, "qk_matmul_output_mode": mode})


@pytest.mark.parametrize(
    "attrs",
    [
        {"is_causal": 1},
        {"scale": 0.3},
        {"softcap": 2.0},
        {"softcap": 1.5, "qk_matmul_output_mode": 0},
        {"softcap": 1.5, "qk_matmul_output_mode": 2},
        {"softcap": 1.5, "qk_matmul_output_mode": 1, "is_causal": 1},
        {"left_window_size": 1, "right_window_size": 0},
    ],
)
def test_attention_variants(attrs: dict[str, Any]) -> None:
    inputs, _ = _attention_case(False, 2, 1)
    check_op("Attention", inputs, attrs)


@pytest.mark.parametrize(
    ("mask_shape", "mode"),
    [((3, 4), 2), ((2, 1, 3, 4), 3), ((4,), 2), ((3, 3), 3)],  # (3, 3): the last key disallowed
)
def test_attention_float_mask(mask_shape: tuple[int, ...], mode: int) -> None:
    # (mode 2 gives -inf scores, and a NaN loss, where a key is disallowed)
    inputs, _ = _attention_case(False, 2, 1)
    attrs = {"qk_matmul_output_mode": mode, "softcap": 3.0}
    check_op("Attention", [*inputs, _normal(*mask_shape, seed=7)], attrs)


def test_attention_bool_mask_and_past_cache() -> None:
    q, k, v = _attention_case(False, 2, 1, sq=2, skv=2)[0]
    mask = np.array([[True, False, True, True], [True, True, False, True]])
    past_k, past_v = _normal(2, 1, 2, 2, seed=8), _normal(2, 1, 2, 2, seed=9)
    check_op(
        "Attention",
        [q, k, v, mask, past_k, past_v],
        {"is_causal": 1, "qk_matmul_output_mode": 3},
        constants={3: mask},
    )


def test_attention_packed_past_cache() -> None:
    q, k, v = _attention_case(True, 2, 1, sq=2, skv=2)[0]
    past_k, past_v = _normal(2, 1, 3, 2, seed=8), _normal(2, 1, 3, 2, seed=9)
    attrs = {"q_num_heads": 2, "kv_num_heads": 1}
    check_op("Attention", [q, k, v, None, past_k, past_v], attrs, constants={3: None})


def test_attention_nonpad_lengths_and_a_blind_row() -> None:
    q, k, v = _attention_case(False, 1, 1, sq=2, skv=3)[0]
    lengths = np.array([2, 0], np.int64)  # the second batch sees no key: zeros out
    check_op(
        "Attention",
        [q, k, v, None, None, None, lengths],
        constants={3: None, 4: None, 5: None, 6: lengths},
    )


def test_attention_value_of_another_type() -> None:
    q, k, v = _attention_case(False, 2, 1)[0]
    want = _grads("Attention", [q, k, v], {})
    got = _grads("Attention", [q, k, v.astype(np.float32)], {})
    assert got["x2"].dtype == np.float32
    for name, grad in got.items():
        np.testing.assert_allclose(grad, want[name], rtol=1e-4, atol=1e-5)
