"""OpenVINO elementwise, activation, bitwise, logical and reduction layers (ov_math.py) vs. the CPU
plugin, and the core ops write_math.py writes, run by OpenVINO."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset16")

from openvino import opset1, opset2, opset4, opset5, opset7, opset9, opset13, opset15  # noqa: E402
from openvino_layer_checks import check, const, rand_f32, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(13)


def _uniform(lo: float, hi: float, *shape: int) -> Array:
    return RNG.uniform(lo, hi, shape).astype(np.float32)


# -- unary functions ------------------------------------------------------------------------------
# layer builder, input domain
UNARY: dict[str, tuple[Callable[[Any], Any], tuple[float, float]]] = {
    "Sin": (opset1.sin, (-4, 4)),
    "Cos": (opset1.cos, (-4, 4)),
    "Tan": (opset1.tan, (-1.4, 1.4)),
    "Asin": (opset1.asin, (-0.99, 0.99)),
    "Acos": (opset1.acos, (-0.99, 0.99)),
    "Atan": (opset1.atan, (-5, 5)),
    "Sinh": (opset1.sinh, (-3, 3)),
    "Cosh": (opset1.cosh, (-3, 3)),
    "Asinh": (opset4.asinh, (-5, 5)),
    "Acosh": (opset4.acosh, (1.01, 5)),
    "Atanh": (opset4.atanh, (-0.95, 0.95)),
    "Erf": (opset1.erf, (-3, 3)),
    "Ceiling": (opset1.ceiling, (-3, 3)),
    "Floor": (opset1.floor, (-3, 3)),
    "Sign": (opset1.sign, (-3, 3)),
    "SoftPlus": (opset4.softplus, (-8, 8)),
    "SoftSign": (opset9.softsign, (-8, 8)),
    "Mish": (opset4.mish, (-5, 5)),
    "HSwish": (opset4.hswish, (-5, 5)),
    "HSigmoid": (opset5.hsigmoid, (-5, 5)),
    "Gelu-2": (opset2.gelu, (-4, 4)),
    "Gelu-7-erf": (lambda x: opset7.gelu(x, "erf"), (-4, 4)),
    "Gelu-7-tanh": (lambda x: opset7.gelu(x, "tanh"), (-4, 4)),
    "Elu": (lambda x: opset1.elu(x, 0.7), (-4, 4)),
    "Swish": (opset4.swish, (-5, 5)),
    "Swish-beta": (lambda x: opset4.swish(x, const(0.6, np.float32)), (-5, 5)),
    "Selu": (
        lambda x: opset1.selu(x, const([1.6], np.float32), const([1.05], np.float32)),
        (-3, 3),
    ),
    "HardSigmoid": (
        lambda x: opset1.hard_sigmoid(x, const(0.3, np.float32), const(0.4, np.float32)),
        (-5, 5),
    ),
    "LogSoftmax": (lambda x: opset5.log_softmax(x, -1), (-5, 5)),
    "LogSoftmax-0": (lambda x: opset5.log_softmax(x, 0), (-5, 5)),
}


@pytest.mark.parametrize("shape", [(7,), (2, 3, 5)], ids=["1d", "3d"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_layers(name: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    build, (lo, hi) = UNARY[name]
    check(build, _uniform(lo, hi, *shape), tmp_path=tmp_path, rtol=2e-5, atol=2e-6)


def test_unary_layers_on_unknown_shapes(tmp_path: Path) -> None:
    x = _uniform(-0.9, 0.9, 3, 4)
    check(
        lambda p: [opset1.sin(p), opset4.atanh(p), opset4.mish(p), opset7.gelu(p, "tanh")],
        x,
        tmp_path=tmp_path,
        dynamic=True,
        rtol=2e-5,
        atol=2e-6,
    )


def test_rounding_layers_on_integers_are_the_identity(tmp_path: Path) -> None:
    x = np.array([[-3, 0, 7], [5, -1, 2]], np.int32)
    check(
        lambda p: [
            opset1.ceiling(p),
            opset1.floor(p),
            opset5.round(p, "half_to_even"),
            opset5.round(p, "half_away_from_zero"),
            opset1.sign(p),
        ],
        x,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("mode", ["half_to_even", "half_away_from_zero"])
def test_round_modes(mode: str, tmp_path: Path) -> None:
    halves = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0], np.float32)
    x = np.concatenate([halves, _uniform(-9, 9, 11), np.float32([1e7 + 1, -8388609.0])])
    check(lambda p: opset5.round(p, mode), x, tmp_path=tmp_path)


def test_float_only_layer_on_integers_is_a_format_error(tmp_path: Path) -> None:
    p = ops.parameter([3], np.int32, name="x")
    path = save_ir([opset1.sin(p)], [p], tmp_path)
    with pytest.raises(tl.FormatError, match="Sin is read for floating-point inputs only"):
        tl.load(path)


def test_swish_with_a_computed_beta(tmp_path: Path) -> None:
    x = _uniform(-4, 4, 2, 6)
    check(opset4.swish, x, np.array(0.4, np.float32), tmp_path=tmp_path, rtol=2e-5, atol=2e-6)


def test_selu_and_hard_sigmoid_with_computed_parameters(tmp_path: Path) -> None:
    # The CPU plugin runs them with constant parameters only: compare with NumPy.
    x, a, b = _uniform(-5, 5, 3, 4), np.float32(0.3), np.array([1.2], np.float32)
    params = [
        ops.parameter(v.shape, np.float32, name=n) for n, v in zip("xab", (x, a, b), strict=True)
    ]
    outs = [opset1.hard_sigmoid(*params[:2], params[1]), opset1.selu(*params)]
    path = save_ir(outs, params, tmp_path)
    hard, selu = tl.load(path).run({"x": x, "a": a, "b": b}).values()
    np.testing.assert_allclose(hard, np.clip(a * x + a, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(selu, b * np.where(x > 0, x, a * np.expm1(x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("x_shape", "slope_shape"),
    [
        ((2, 3, 4, 5), (3,)),  # per channel
        ((2, 3, 4, 3), (3,)),  # per channel although the last axis matches too
        ((2, 3, 4, 5), (5,)),  # NumPy-style: the last axis
        ((2, 3, 4, 5), (1,)),
        ((2, 3, 4, 5), (4, 5)),
        ((2, 3), (3,)),
        ((6,), (6,)),
        ((6,), ()),
    ],
)
def test_prelu_slope_shapes(
    x_shape: tuple[int, ...], slope_shape: tuple[int, ...], tmp_path: Path
) -> None:
    x = rand_f32(*x_shape)
    slope = RNG.uniform(0.05, 0.9, slope_shape).astype(np.float32)
    check(lambda p: opset1.prelu(p, ops.constant(slope)), x, tmp_path=tmp_path)
    check(opset1.prelu, x, slope, tmp_path=tmp_path / "param")


# -- binary arithmetic, logic and bits -----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_floor_mod_mod_and_squared_difference(dtype: Any, tmp_path: Path) -> None:
    a = np.array([[7, -7, 7, -7, 0, 5], [9, -9, 1, -1, 6, -6]], dtype)
    b = np.array([3, 3, -3, -3, 2, -5], dtype)
    if dtype is np.float32:
        a = a + np.float32(0.25)
        b = b * np.float32(1.5)
    check(
        lambda p, q: [opset1.floor_mod(p, q), opset1.mod(p, q), opset1.squared_difference(p, q)],
        a,
        b,
        tmp_path=tmp_path,
        rtol=1e-6,
        atol=1e-5,
    )


BITWISE: dict[str, Callable[[Any, Any], Any]] = {
    "and": opset13.bitwise_and,
    "or": opset13.bitwise_or,
    "xor": opset13.bitwise_xor,
}


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8, np.int64])
def test_bitwise_layers(dtype: Any, tmp_path: Path) -> None:
    if dtype is np.bool_:
        a = np.array([[True, False], [True, True]])
        b = np.array([True, False])
    else:
        a = np.array([[5, 12, 0, 127], [3, 64, 9, 100]], dtype)
        b = np.array([3, 10, 255 if dtype is np.uint8 else -1, 6], dtype)
    check(
        lambda p, q: [f(p, q) for f in BITWISE.values()] + [opset13.bitwise_not(p)],
        a,
        b,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_bit_shifts(dtype: Any, tmp_path: Path) -> None:
    bits = np.dtype(dtype).itemsize * 8
    a = np.array([[1, 5, 100, 7], [3, 64, 9, 120]], dtype)
    if dtype is not np.uint8:
        a[1] = -a[1]
    # The CPU plugin computes i64 in 32 bits: keep the results within them.
    b = np.array([0, 1, 3, min(bits, 32) - 8], dtype)
    check(
        lambda p, q: [opset15.bitwise_left_shift(p, q), opset15.bitwise_right_shift(p, q)],
        a,
        b,
        tmp_path=tmp_path,
    )


# -- reductions and predicates -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("axes", "keep"),
    # The CPU plugin refuses to compile empty axes without keep_dims.
    [([1], False), ([1], True), ([0, -1], False), ([0, -1], True), ([], True), (2, False)],
)
def test_norm_and_logical_reductions(axes: Any, keep: bool, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4)
    flags = x > 0.2
    check(
        lambda p, q: [
            opset4.reduce_l1(p, const(axes), keep),
            opset4.reduce_l2(p, const(axes), keep),
            opset1.reduce_logical_and(q, const(axes), keep),
            opset1.reduce_logical_or(q, const(axes), keep),
        ],
        x,
        flags,
        tmp_path=tmp_path,
        rtol=2e-6,
    )


@pytest.mark.parametrize("neg", [False, True])
@pytest.mark.parametrize("pos", [False, True])
def test_is_inf_is_nan_is_finite(neg: bool, pos: bool, tmp_path: Path) -> None:
    x = np.array([[np.inf, -np.inf, 1.0], [np.nan, 0.0, -3e38]], np.float32)
    attrs = {"detect_negative": neg, "detect_positive": pos}
    check(
        lambda p: [ops.is_inf(p, attrs), ops.is_nan(p), ops.is_finite(p)],
        x,
        tmp_path=tmp_path,
    )


# -- writer ---------------------------------------------------------------------------------------
