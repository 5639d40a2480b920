"""OpenVINO elementwise layers (read_elementwise.py: arithmetic, logic, Select, Clamp, the unary
functions, rounding, bits, predicates and activations) vs. the CPU plugin, and the core ops
write_elementwise.py writes, run by the plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import (  # noqa: E402
    opset1,
    opset2,
    opset4,
    opset5,
    opset7,
    opset9,
    opset13,
    opset15,
    opset16,
)
from openvino_layer_checks import (  # noqa: E402
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    const,
    edit_ir,
    ph,
    rand_f32,
    record_layer_types,
    save_ir,
    uniform_f32,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402

RNG = np.random.default_rng(13)


# -- elementwise ----------------------------------------------------------------------------------

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": ops.add,
    "Subtract": ops.subtract,
    "Multiply": ops.multiply,
    "Divide": ops.divide,
    "Power": ops.power,
    "Maximum": ops.maximum,
    "Minimum": ops.minimum,
    "Equal": ops.equal,
    "NotEqual": ops.not_equal,
    "Less": ops.less,
    "Greater": ops.greater,
    "LessEqual": ops.less_equal,
    "GreaterEqual": ops.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_layers_broadcast_numpy_style(name: str, tmp_path: Path) -> None:
    a = np.abs(rand_f32(2, 3)) + 0.5  # Power wants a positive base
    b = np.array([1.5, a[0, 1], -0.5], np.float32)  # one tie for the comparisons
    check(BINARY[name], a, b, tmp_path=tmp_path, rtol=1e-5)


def test_logical_layers(tmp_path: Path) -> None:
    a = np.array([[True, False], [True, True]])
    b = np.array([True, False])
    check(
        lambda p, q: (
            [f(p, q) for f in (ops.logical_and, ops.logical_or, ops.logical_xor)]
            + [ops.logical_not(p)]
        ),
        a,
        b,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("fn", [ops.sigmoid, ops.tanh, ops.relu, ops.exp, ops.log, ops.sqrt])
def test_unary_layers(fn: Callable[[Any], Any], tmp_path: Path) -> None:
    x = rand_f32(3, 4)
    if fn in (ops.log, ops.sqrt):
        x = np.abs(x) + 0.1
    check(fn, x, tmp_path=tmp_path, rtol=2e-6)


def test_select_and_integer_arithmetic(tmp_path: Path) -> None:
    cond = np.array([[True, False, True]])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.array([-3, 4, -5], np.int32)
    check(
        lambda c, x, y: [
            ops.select(c, x, y),
            ops.add(x, y),
            ops.maximum(x, y),
            ops.power(x, const(2, np.int32)),
        ],
        cond,
        a,
        b,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("pythondiv", [True, False])
def test_divide_pythondiv_floors_signed_integers(
    dtype: Any, pythondiv: bool, tmp_path: Path
) -> None:
    signed = np.dtype(dtype).kind == "i"
    a = np.array([7, -7, 7, -7, 6, -6, 0], dtype) if signed else np.array([7, 9, 200], dtype)
    b = np.array([2, 2, -2, -2, 3, -3, 5], dtype) if signed else np.array([2, 4, 7], dtype)
    params = [ops.parameter(a.shape, dtype, name=n) for n in ("a", "b")]
    node = ops.divide(*params)
    path = save_ir([node], [*params], tmp_path)
    if pythondiv and signed:
        # The CPU plugin truncates whatever m_pythondiv says; the reference evaluator floors.
        out = [ov.Tensor(np.zeros_like(a))]
        assert node.evaluate(out, [ov.Tensor(a), ov.Tensor(b)])
        want = out[0].data.copy()
        np.testing.assert_array_equal(want, a // b)
    else:
        if not pythondiv:
            edit_ir(path, 'm_pythondiv="true"', 'm_pythondiv="false"')
        want = compile_cpu(path)({"a": a, "b": b})[0]
    (got,) = tl.load(path).run({"a": a, "b": b}).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [
        (np.float32, -0.5, 0.75),
        (np.int32, -1.5, 2.5),
        (np.int64, 1.2, 3.7),
        (np.uint8, 1.2, 1e9),
        (np.int32, -np.inf, 2.0),
    ],
)
def test_clamp(dtype: Any, lo: float, hi: float, tmp_path: Path) -> None:
    # min rounds up and max down for integers; the CPU plugin instead truncates min for u8, so
    # the reference evaluator is the judge.
    x = (rand_f32(4, 5) * 4).astype(dtype) if dtype != np.uint8 else np.arange(20, dtype=dtype)
    p = ops.parameter(x.shape, dtype, name="x")
    node = ops.clamp(p, lo, hi)
    out = [ov.Tensor(np.zeros_like(x))]
    assert node.evaluate(out, [ov.Tensor(x)])
    path = save_ir([node], [p], tmp_path)
    model = tl.load(path)
    (got,) = model.run({"x": x}).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, out[0].data)
    record_layer_types(path, "compared")
    if dtype != np.uint8:  # written back, the CPU plugin runs it as it runs its own
        (tmp_path / "written").mkdir()
        written_runs_alike(model, {"x": x}, tmp_path / "written")
        record_layer_types(path, "written")


# -- unary functions, rounding, activations, bits and predicates, read and written -----------------


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
}


BITWISE: dict[str, Callable[[Any, Any], Any]] = {
    "and": opset13.bitwise_and,
    "or": opset13.bitwise_or,
    "xor": opset13.bitwise_xor,
}


# core op, attributes, input domain
WRITTEN_UNARY: dict[str, tuple[str, dict[str, Any], tuple[float, float]]] = {
    "Sin": ("Sin", {}, (-4, 4)),
    "Cos": ("Cos", {}, (-4, 4)),
    "Tan": ("Tan", {}, (-1.4, 1.4)),
    "Asin": ("Asin", {}, (-0.99, 0.99)),
    "Acos": ("Acos", {}, (-0.99, 0.99)),
    "Atan": ("Atan", {}, (-5, 5)),
    "Sinh": ("Sinh", {}, (-3, 3)),
    "Cosh": ("Cosh", {}, (-3, 3)),
    "Asinh": ("Asinh", {}, (-5, 5)),
    "Acosh": ("Acosh", {}, (1.01, 5)),
    "Atanh": ("Atanh", {}, (-0.95, 0.95)),
    "Erf": ("Erf", {}, (-3, 3)),
    "Floor": ("Floor", {}, (-3, 3)),
    "Ceil": ("Ceil", {}, (-3, 3)),
    "Round": ("Round", {}, (-3, 3)),
    "Sign": ("Sign", {}, (-3, 3)),
    "Reciprocal": ("Reciprocal", {}, (0.5, 3)),
    "Softplus": ("Softplus", {}, (-8, 8)),
    "Softsign": ("Softsign", {}, (-8, 8)),
    "Elu": ("Elu", {"alpha": 0.7}, (-4, 4)),
    "Selu": ("Selu", {}, (-3, 3)),
    "Selu-custom": ("Selu", {"alpha": 1.5, "gamma": 0.8}, (-3, 3)),
    "Celu": ("Celu", {"alpha": 0.6}, (-3, 3)),
    "LeakyRelu": ("LeakyRelu", {"alpha": 0.15}, (-3, 3)),
    "ThresholdedRelu": ("ThresholdedRelu", {"alpha": 0.4}, (-3, 3)),
    "HardSigmoid": ("HardSigmoid", {}, (-5, 5)),
    "HardSigmoid-custom": ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, (-5, 5)),
    "HardSwish": ("HardSwish", {}, (-5, 5)),
    "Mish": ("Mish", {}, (-5, 5)),
    "Gelu": ("Gelu", {}, (-4, 4)),
    "Gelu-tanh": ("Gelu", {"approximate": "tanh"}, (-4, 4)),
    "Swish": ("Swish", {"alpha": 0.6}, (-5, 5)),
    "Shrink": ("Shrink", {"bias": 0.25, "lambd": 0.75}, (-2, 2)),
}


@pytest.mark.parametrize("shape", [(7,), (2, 3, 5)], ids=["1d", "3d"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_function_and_activation_layers(name: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    build, (lo, hi) = UNARY[name]
    check(build, uniform_f32(lo, hi, *shape, rng=RNG), tmp_path=tmp_path, rtol=2e-5, atol=2e-6)


def test_unary_layers_on_unknown_shapes(tmp_path: Path) -> None:
    x = uniform_f32(-0.9, 0.9, 3, 4, rng=RNG)
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
    x = np.concatenate(
        [halves, uniform_f32(-9, 9, 11, rng=RNG), np.array([1e7 + 1, -8388609.0], np.float32)]
    )
    check(lambda p: opset5.round(p, mode), x, tmp_path=tmp_path)


def test_float_only_layer_on_integers_is_a_format_error(tmp_path: Path) -> None:
    p = opset16.parameter([3], np.int32, name="x")
    path = save_ir([opset1.sin(p)], [p], tmp_path)
    with pytest.raises(tl.FormatError, match="Sin is read for floating-point inputs only"):
        tl.load(path)


def test_swish_with_a_computed_beta(tmp_path: Path) -> None:
    x = uniform_f32(-4, 4, 2, 6, rng=RNG)
    check(opset4.swish, x, np.array(0.4, np.float32), tmp_path=tmp_path, rtol=2e-5, atol=2e-6)


def test_selu_and_hard_sigmoid_with_computed_parameters(tmp_path: Path) -> None:
    # The CPU plugin runs them with constant parameters only: compare with NumPy.
    x = uniform_f32(-5, 5, 3, 4, rng=RNG)
    a, b = np.array(0.3, np.float32), np.array([1.2], np.float32)
    params = [
        opset16.parameter(v.shape, np.float32, name=n)
        for n, v in zip("xab", (x, a, b), strict=True)
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
    check(lambda p: opset1.prelu(p, opset16.constant(slope)), x, tmp_path=tmp_path)
    check(opset1.prelu, x, slope, tmp_path=tmp_path / "param")


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


@pytest.mark.parametrize("neg", [False, True])
@pytest.mark.parametrize("pos", [False, True])
def test_is_inf_is_nan_is_finite(neg: bool, pos: bool, tmp_path: Path) -> None:
    x = np.array([[np.inf, -np.inf, 1.0], [np.nan, 0.0, -3e38]], np.float32)
    attrs = {"detect_negative": neg, "detect_positive": pos}
    check(
        lambda p: [opset16.is_inf(p, attrs), opset16.is_nan(p), opset16.is_finite(p)],
        x,
        tmp_path=tmp_path,
    )


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(WRITTEN_UNARY))
def test_writer_unary_ops(name: str, tmp_path: Path) -> None:
    op, attrs, (lo, hi) = WRITTEN_UNARY[name]
    x = uniform_f32(lo, hi, 3, 5, rng=RNG)
    if op == "Round":
        x[0, :4] = [-2.5, -0.5, 0.5, 1.5]
    p, q = ph("x", x), ph("y", x, ("N", 5))
    outs = {"static": emit(op, [p], attrs), "dynamic": emit(op, [q], attrs)}
    written_runs_alike(tl.Model(outs), {"x": x, "y": x}, tmp_path, rtol=2e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_half_precision(tmp_path: Path) -> None:
    x = uniform_f32(-3, 3, 4, 5, rng=RNG).astype(np.float16)
    p = ph("x", x)
    outs = {
        "selu": emit("Selu", [p]),
        "hard_sigmoid": emit("HardSigmoid", [p]),
        "swish": emit("Swish", [p], {"alpha": 0.6}),
        "leaky": emit("LeakyRelu", [p], {"alpha": 0.15}),
        "mod": emit("Mod", [p, tl.constant(np.float16(0.75))]),
        "l2": emit("ReduceL2", [p, tl.constant(np.array([1]))]),
        "lse": emit("ReduceLogSumExp", [p, tl.constant(np.array([0]))]),
    }
    written_runs_alike(tl.Model(outs), {"x": x}, tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_predicates_and_integer_sign(tmp_path: Path) -> None:
    x = np.array([[np.inf, -np.inf, 1.0], [np.nan, 0.0, -3e38]], np.float32)
    i = np.array([[-4, 0, 9]], np.int32)
    p, q = ph("x", x), ph("i", i)
    outs = {"nan": emit("IsNaN", [p]), "sign": emit("Sign", [q])}
    for neg in (0, 1):
        for pos in (0, 1):
            attrs = {"detect_negative": neg, "detect_positive": pos}
            outs[f"inf{neg}{pos}"] = emit("IsInf", [p], attrs)
    written_runs_alike(tl.Model(outs), {"x": x, "i": i}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(
    ("x_shape", "slope_shape"),
    [
        ((2, 3, 4, 3), (3,)),
        ((2, 3, 4, 5), (5,)),
        ((2, 3, 4, 5), (4, 5)),
        ((2, 5), ()),
        ((6,), (6,)),
    ],
)
def test_writer_prelu(
    x_shape: tuple[int, ...], slope_shape: tuple[int, ...], tmp_path: Path
) -> None:
    x = rand_f32(*x_shape)
    slope = RNG.uniform(0.05, 0.9, slope_shape).astype(np.float32)
    p, s = ph("x", x), ph("s", slope)
    outs = {"const": emit("PRelu", [p, tl.constant(slope)]), "param": emit("PRelu", [p, s])}
    written_runs_alike(tl.Model(outs), {"x": x, "s": slope}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_writer_mod(dtype: Any, tmp_path: Path) -> None:
    a = np.array([[7, -7, 7, -7, 0, 5], [9, -9, 1, -1, 6, -6]], dtype)
    b = np.array([3, 3, -3, -3, 2, -5], dtype)
    if dtype is np.float32:
        a, b = a + np.float32(0.25), b * np.float32(1.5)
    p, q = ph("a", a), ph("b", b)
    outs = {f"mod{f}": emit("Mod", [p, q], {"fmod": f}) for f in (0, 1)}
    written_runs_alike(tl.Model(outs), {"a": a, "b": b}, tmp_path, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_writer_bitwise(dtype: Any, tmp_path: Path) -> None:
    a = np.array([[5, 12, 0, 127], [3, 64, 9, 100]], dtype)
    b = np.array([3, 10, 255 if dtype is np.uint8 else -1, 6], dtype)
    p, q = ph("a", a), ph("b", b)
    outs = {op: emit(op, [p, q]) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")}
    outs["not"] = emit("BitwiseNot", [p])
    written_runs_alike(tl.Model(outs), {"a": a, "b": b}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_writer_bit_shift(dtype: Any, tmp_path: Path) -> None:
    bits = np.dtype(dtype).itemsize * 8
    a = np.array([[1, 5, 100, 7], [3, 64, 9, 120]], dtype)
    if dtype is np.int32:
        a[1] = -a[1]
    in_range = np.array([0, 1, 3, bits - 1], dtype)
    # Run-time counts, some out of range: they shift everything out.
    counts = np.array([[2, bits, bits + 3, 1], [bits - 1, 0, bits * 2, 5]], dtype)
    p, q = ph("a", a), ph("b", counts)
    outs: dict[str, Any] = {}
    for d in ("LEFT", "RIGHT"):
        outs[f"const_{d}"] = emit("BitShift", [p, tl.constant(in_range)], {"direction": d})
        outs[f"param_{d}"] = emit("BitShift", [p, q], {"direction": d})
    written_runs_alike(tl.Model(outs), {"a": a, "b": counts}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_sum_mean_and_clip(tmp_path: Path) -> None:
    x, y, z = rand_f32(2, 3), rand_f32(3), rand_f32(1, 3)
    i = np.array([[-5, 0, 7], [3, 12, -1]], np.int32)
    p, q, r, k = ph("x", x), ph("y", y), ph("z", z), ph("i", i)
    lo, hi = tl.constant(np.float32(-0.5)), tl.constant(np.array([0.7], np.float32))
    outs = {
        "sum1": emit("Sum", [p]),
        "sum3": emit("Sum", [p, q, r]),
        "mean1": emit("Mean", [p]),
        "mean2": emit("Mean", [q, r]),
        "mean3": emit("Mean", [p, q, r]),
        "clip": emit("Clip", [p, lo, hi]),
        "clip_lo": emit("Clip", [p, lo]),
        "clip_hi": emit("Clip", [p, None, hi]),
        "clip_none": emit("Clip", [p]),
        "clip_int": emit("Clip", [k, tl.constant(np.int32(0)), tl.constant(np.int32(5))]),
    }
    written_runs_alike(tl.Model(outs), {"x": x, "y": y, "z": z, "i": i}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    i = np.array([[3, 4]], np.int32)
    outs = {"shrink": emit("Shrink", [ph("i", i)])}
    with pytest.raises(tl.FormatError, match="OpenVINO has no Shrink for int32"):
        tl.save(tl.Model(outs), tmp_path / "w.xml")


def test_read_write_read_round_trip(tmp_path: Path) -> None:
    """OpenVINO's layers, read, written back and run by OpenVINO again, give the same."""
    x = uniform_f32(-0.9, 0.9, 2, 3, 4, rng=RNG)
    i = np.array([[7, -7, 5, 12], [-9, 4, 1, 3]], np.int32)
    px, pi = (
        opset16.parameter(x.shape, np.float32, name="x"),
        opset16.parameter(i.shape, np.int32, name="i"),
    )
    outs = [
        opset4.atanh(px),
        opset7.gelu(px, "tanh"),
        opset1.prelu(px, opset16.constant(np.array([0.1, 0.2, 0.3], np.float32))),
        opset5.round(px, "half_away_from_zero"),
        opset4.reduce_l2(px, const([1, 2]), False),
        opset1.floor_mod(pi, const([3, -2, 5, 7], np.int32)),
        opset13.bitwise_xor(pi, const(6, np.int32)),
        opset16.is_finite(opset5.log_softmax(px, 1)),
    ]
    path = save_ir(outs, [px, pi], tmp_path)
    model = tl.load(path)
    feeds = {"x": x, "i": i}
    first = model.run(feeds)
    tl.save(model, tmp_path / "again.xml")
    compiled = compile_cpu(tmp_path / "again.xml")
    second = compiled(feeds)
    for port in compiled.outputs:
        name = port.get_any_name()
        np.testing.assert_allclose(np.asarray(second[port]), first[name], rtol=2e-5, atol=2e-6)
    again = tl.load(tmp_path / "again.xml").run(feeds)
    for name, value in first.items():
        np.testing.assert_allclose(again[name], value, rtol=2e-5, atol=2e-6)
