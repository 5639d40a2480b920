"""QuantizeLinear, DequantizeLinear, QLinearMatMul, MatMulInteger and BitCast vs. onnxruntime."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from dtype_oracle import ELEM, Array, D, as_ort, assert_same, ort_node

from onnx_oracle import run_core
from tensorloop.errors import GraphError
from tensorloop.formats.onnx.convert import ONNX_DTYPES
from tensorloop.reference.kernels.quant import convert
from tensorloop.tensor.dtypes import DType, int_range


# -- quantization ------------------------------------------------------------------------------
def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


QUANTIZE_CASES = [
    # x shape, scale shape, zero type (None: no zero point), attrs
    ((3, 4), (), D.uint8, {}),
    ((3, 4), (), None, {}),
    ((3, 4), (4,), D.int8, {"axis": 1}),
    ((2, 3, 4), (3,), D.int16, {"axis": -2}),
    ((3, 4), (), D.uint16, {}),
    ((4, 6), (4, 3), D.int4, {"axis": 1, "block_size": 2}),
    ((5, 4), (3, 4), D.uint4, {"axis": 0, "block_size": 2}),
    ((3, 4), (), D.float8e4m3fn, {}),
    ((3, 4), (4,), D.float8e5m2, {"axis": 1, "saturate": 0}),
    ((3, 4), (), None, {"output_dtype": ELEM[D.int4]}),
    ((3, 4), (), None, {"output_dtype": ELEM[D.int16], "precision": ELEM[D.float32]}),
]


@pytest.mark.parametrize(("shape", "scale_shape", "zero", "attrs"), QUANTIZE_CASES)
@pytest.mark.parametrize("scale_type", [D.float32, D.float16])
def test_quantize_and_dequantize_match_onnxruntime(
    shape: tuple[int, ...],
    scale_shape: tuple[int, ...],
    zero: DType | None,
    attrs: dict[str, Any],
    scale_type: DType,
) -> None:
    rng = _rng()
    x = (rng.standard_normal(shape) * 40).astype(scale_type.numpy)
    x.reshape(-1)[:3] = [0.5, 1.5, -2.5]  # ties, rounded to even
    scale = rng.uniform(0.05, 2, scale_shape).astype(scale_type.numpy)
    zp = None
    if zero is not None:  # onnxruntime refuses float8 zero points other than 0
        values = rng.integers(-2, 3, scale_shape) * (not zero.is_float) + (not zero.is_signed) * 2
        zp = convert(np.asarray(values, np.int64), zero)
    out = zero or (ONNX_DTYPES[attrs["output_dtype"]] if "output_dtype" in attrs else D.uint8)
    (want,) = ort_node("QuantizeLinear", [x, scale, zp], attrs, [out])
    mine = {
        k: ONNX_DTYPES[v] if k in ("output_dtype", "precision") else v for k, v in attrs.items()
    }
    (got,) = run_core("QuantizeLinear", [x, scale, zp], mine)
    assert got.dtype == out.numpy
    assert_same(as_ort(got), want, "QuantizeLinear")
    back_attrs = {k: v for k, v in attrs.items() if k in ("axis", "block_size")}
    (want,) = ort_node("DequantizeLinear", [got, scale, zp], back_attrs, [scale_type])
    (back,) = run_core("DequantizeLinear", [got, scale, zp], back_attrs)
    assert_same(back, want, "DequantizeLinear")


def test_quantize_divides_in_the_precision_given() -> None:
    # onnxruntime divides in float32 whatever ``precision`` says; the spec rounds the operands
    # to it and divides in it: -39.665863 / 0.5469957 is -72.5159 in float32, a tie in float16.
    x, scale = np.array([-39.665863, 3.0], np.float32), np.array(0.5469957, np.float32)
    attrs = {"output_dtype": D.int16}
    assert run_core("QuantizeLinear", [x, scale], attrs)[0].tolist() == [-73, 5]
    (got,) = run_core("QuantizeLinear", [x, scale], {**attrs, "precision": D.float16})
    assert got.tolist() == np.rint(x.astype(np.float16) / scale.astype(np.float16)).tolist()
    assert got.tolist() == [-72, 5]


def test_float_zero_points_follow_the_formula() -> None:
    # y = x / scale + zero point, and back, for float8 and float4 as for the integers.
    x, scale = np.array([1.0, -3.0, 100.0], np.float32), np.array(2.0, np.float32)
    zero = np.array(1.0, ml_dtypes.float8_e4m3fn)
    (q,) = run_core("QuantizeLinear", [x, scale, zero], {"saturate": 0})
    assert_same(q, np.array([1.5, -0.5, 52.0]))
    (back,) = run_core("DequantizeLinear", [q, scale, zero])
    assert_same(back, np.array([1.0, -3.0, 102.0], np.float32))
    zero4 = np.array([0.5], ml_dtypes.float4_e2m1fn)
    (q4,) = run_core("QuantizeLinear", [x, scale, zero4])
    assert_same(q4, np.array([1.0, -1.0, 6.0]))


def test_dequantize_output_dtype_sets_the_precision() -> None:
    x = np.array([-128, 5, 127], np.int8)
    scale = np.array(0.1, np.float32)
    attrs = {"output_dtype": ELEM[D.float16]}
    (want,) = ort_node("DequantizeLinear", [x, scale], attrs, [D.float16])
    (got,) = run_core("DequantizeLinear", [x, scale], {"output_dtype": D.float16})
    assert_same(got, want)


@pytest.mark.parametrize(
    "x",
    [
        np.array([[0.0, 2.5, -3.1], [7.7, 1e-3, -0.4]], np.float32),
        np.array([1.0, 2.0, 255.0], np.float32),
        np.array([-1.0, -7.3], np.float32),
        np.zeros((2, 2), np.float32),
    ],
)
def test_dynamic_quantize_linear_matches_onnxruntime(x: Array) -> None:
    want = ort_node("DynamicQuantizeLinear", [x], {}, [D.uint8, D.float32, D.uint8])
    got = run_core("DynamicQuantizeLinear", [x])
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)


@pytest.mark.parametrize("kind", [D.uint8, D.int8])
@pytest.mark.parametrize("scale_type", [D.float32, D.float16])
def test_qlinear_matmul_and_matmul_integer_match_onnxruntime(
    kind: DType, scale_type: DType
) -> None:
    # onnxruntime takes only per-tensor scales and zero points; the spec's per-row and
    # per-column ones are checked against the formula below.
    rng = _rng()
    lo, hi = int_range(kind)
    a = rng.integers(lo, hi + 1, (2, 3, 4)).astype(kind.numpy)
    b = rng.integers(lo, hi + 1, (4, 5)).astype(kind.numpy)
    scales = [np.array(s, scale_type.numpy) for s in (0.02, 0.03, 0.2)]
    zeros = [np.array(z, kind.numpy) for z in (3, 1, -2 if kind.is_signed else 7)]
    inputs = [a, scales[0], zeros[0], b, scales[1], zeros[1], scales[2], zeros[2]]
    (want,) = ort_node("QLinearMatMul", inputs, {}, [kind], opset=21)
    assert_same(run_core("QLinearMatMul", inputs)[0], want, "QLinearMatMul")
    pair = [a, b, zeros[0], zeros[1]]
    (want,) = ort_node("MatMulInteger", pair, {}, [D.int32], opset=21)
    assert_same(run_core("MatMulInteger", pair)[0], want, "MatMulInteger")


def test_qlinear_matmul_per_row_and_column_parameters() -> None:
    a = np.array([[[10, 20], [30, 40]]], np.uint8)
    b = np.array([[1, 2], [3, 200]], np.uint8)
    a_scale, a_zero = np.array([0.5, 0.25], np.float32), np.array([2, 4], np.uint8)
    b_scale, b_zero = np.array([0.5, 0.125], np.float32), np.array([1, 0], np.uint8)
    y_scale, y_zero = np.array(0.75, np.float32), np.array(5, np.uint8)
    inputs = [a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero]
    real = ((a - a_zero[:, None].astype(np.float64)) * a_scale[:, None]) @ ((b - b_zero) * b_scale)
    want = np.clip(np.rint(real / y_scale) + y_zero, 0, 255).astype(np.uint8)
    assert_same(run_core("QLinearMatMul", inputs)[0], want)


def test_matmul_integer_per_row_and_column_zero_points() -> None:
    # onnxruntime takes only scalar zero points for A; the spec also allows one per row.
    a = np.array([[1, 2], [3, 4], [5, 250]], np.uint8)
    b = np.array([[7, -8], [9, 10]], np.int8)
    a_zero, b_zero = np.array([1, 2, 3], np.uint8), np.array([0, -1], np.int8)
    (got,) = run_core("MatMulInteger", [a, b, a_zero, b_zero])
    want = (a.astype(np.int64) - a_zero[:, None]) @ (b.astype(np.int64) - b_zero)
    assert_same(got, want.astype(np.int32))


BIT_PAIRS = [
    (np.array([1.5, -2, math.nan], np.float32), D.int32),
    (np.array([-1, 7, 2**62], np.int64), D.float64),
    (np.array([200, 3], np.uint8), D.int8),
    (np.array([-1.5, 65504], np.float16), D.uint16),
]


@pytest.mark.parametrize(("x", "to"), BIT_PAIRS, ids=lambda v: str(getattr(v, "dtype", v)))
def test_bitcast_matches_onnxruntime(x: Array, to: DType) -> None:
    (want,) = ort_node("BitCast", [x], {"to": ELEM[to]}, [to], opset=26)
    (got,) = run_core("BitCast", [x], {"to": to})
    assert_same(got, want)


def test_bitcast_between_narrow_types_keeps_the_bits() -> None:
    x = np.arange(16, dtype=np.uint8).view(ml_dtypes.int4)
    (u4,) = run_core("BitCast", [x], {"to": D.uint4})
    assert u4.astype(np.int64).tolist() == list(range(16))
    (f4,) = run_core("BitCast", [u4], {"to": D.float4e2m1})
    assert f4.astype(np.float64).tolist()[7:10] == [6.0, -0.0, -0.5]
    (back,) = run_core("BitCast", [f4], {"to": D.int4})
    assert back.tobytes() == x.tobytes()
    (flags,) = run_core("BitCast", [np.array([0, 1, 2], np.uint8)], {"to": D.bool})
    assert flags.tolist() == [False, True, True]
    assert run_core("BitCast", [flags], {"to": D.uint8})[0].tolist() == [0, 1, 1]
    with pytest.raises(GraphError, match="f32 is 32 bits wide, the input i16"):
        run_core("BitCast", [np.zeros(2, np.int16)], {"to": D.float32})


def f32(*shape: int) -> Array:
    return np.ones(shape, np.float32)


def zeros(kind: Any, *shape: int) -> Array:
    return np.zeros(shape, kind)


QLINEAR = [zeros(np.uint8, 2, 3), f32(), zeros(np.uint8)]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "message"),
    [
        ("QuantizeLinear", [f32(3), f32(), zeros(np.int8)], {"output_dtype": D.uint8},
         "output_dtype u8 differs from the zero point's type i8"),
        ("QuantizeLinear", [f32(3), f32()], {"output_dtype": D.int32}, "cannot quantize to i32"),
        ("QuantizeLinear", [f32(2, 3), f32(2)], {},
         r"per-axis scale .* axis 1 \(3\), got dims \[2\]"),
        ("QuantizeLinear", [f32(2, 5), f32(2, 2)], {"block_size": 2},
         r"must have dims \[2, 3\], got \[2, 2\]"),
        ("DequantizeLinear", [zeros(np.int8, 3), f32(), zeros(np.uint8)], {},
         "must share one element type"),
        ("DequantizeLinear", [f32(3), f32()], {}, "input #0 \\(x\\): expected one of"),
        ("QLinearMatMul", [*QLINEAR, *QLINEAR, f32(), zeros(np.uint8)], {},
         r"inner dims do not match: u8\[2,3\] @ u8\[2,3\]"),
        ("QLinearMatMul", [*QLINEAR[:2], zeros(np.int8), *QLINEAR, f32(), zeros(np.uint8)], {},
         "inputs #0, #2 must share one element type, got u8, i8"),
    ],
)  # fmt: skip
def test_quantization_type_errors(
    op: str, inputs: list[Array], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(GraphError, match=message):
        run_core(op, inputs, attrs)
