"""OpenVINO elementwise, logical, unary, Clamp, SoftMax and Convert layers vs. the CPU plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset8  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    check,
    compile_cpu,
    const,
    edit_ir,
    rand_f32,
    record_layer_types,
    run_path,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402

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


@pytest.mark.parametrize(
    "build", [lambda p: opset1.softmax(p, 1), lambda p: opset8.softmax(p, -1)], ids=["v1", "v8"]
)
def test_softmax(build: Callable[[Any], Any], tmp_path: Path) -> None:
    check(build, rand_f32(2, 3, 4), tmp_path=tmp_path)


INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("to", [*INT_TYPES, "f16", "f32", "f64", "boolean"])
def test_convert_to_each_type(to: str, tmp_path: Path) -> None:
    # Out-of-range and negative-to-unsigned conversions are undefined, so none are made here.
    x = np.array([0.0, 1.7, 2.5, 3.9, 100.25, 127.0, 0.4], np.float32)
    if to[0] != "u":
        x = np.concatenate([x, np.array([-3.7, -0.5, -128.0], np.float32)])
    ints = np.array([0, 3, -2, 7], np.int32)
    flags = np.array([True, False])
    check(
        lambda a, b, c: [ops.convert(a, to), ops.convert(b, "f32"), ops.convert(c, to)],
        x,
        ints,
        flags,
        tmp_path=tmp_path,
    )


def test_weights_saved_as_f16_stay_constants(tmp_path: Path) -> None:
    # save_model's default stores f32 constants as f16 plus a decompressing Convert; folded, the
    # ReadValue init is still a constant (the variable's initial value).
    x = ops.parameter([2, 3], np.float32, name="x")
    init = ops.constant(np.full((2, 3), 0.25, np.float32))
    read = ops.read_value(init, "h", ov.Type.f32, [2, 3])
    h = ops.tanh(ops.add(ops.matmul(x, ops.constant(rand_f32(3, 3)), False, False), read))
    path = save_ir([h], [x], tmp_path, sinks=[ops.assign(h, "h")], compress=True)
    assert 'element_type="f16"' in path.read_text()
    ours = tl.load(path)
    assert "Cast" not in {n.op for n in ours.graph.nodes}
    np.testing.assert_array_equal(ours.state["h"], np.full((2, 3), 0.25, np.float32))
    request = compile_cpu(path).create_infer_request()
    for _ in range(2):
        feed = rand_f32(2, 3)
        (got,) = ours.run({"x": feed}).values()
        np.testing.assert_allclose(got, request.infer({"x": feed})[0], rtol=1e-6, atol=1e-6)


def test_convert_of_a_constant_is_folded(tmp_path: Path) -> None:
    x = ops.parameter([3], np.float32, name="x")
    path = save_ir([ops.add(x, ops.convert(const([1, 2, 3], np.int32), "f32"))], [x], tmp_path)
    model = tl.load(path)
    assert "Cast" not in {n.op for n in model.graph.nodes}
    run_path(path, {"x": rand_f32(3)})
