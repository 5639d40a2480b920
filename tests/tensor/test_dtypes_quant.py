"""Element types, Cast, quantization and string ops, against onnxruntime, the ONNX spec's tables
and the ONNX backend node tests."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from fractions import Fraction
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from onnx_oracle import one_node, ort_run, run_core
from tensorloop.backends.reference.kernels.quant import convert
from tensorloop.errors import ExecutionError, GraphError, UnsupportedOpError
from tensorloop.formats.onnx.convert import ONNX_DTYPES
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.tensor.dtypes import DType, dtype, float_max, int_range, string_array

D = DType
ELEM = {v: k for k, v in ONNX_DTYPES.items()}
F8 = (D.float8e4m3fn, D.float8e4m3fnuz, D.float8e5m2, D.float8e5m2fnuz)
# Types onnxruntime's Python API takes and returns; the rest travel as constants and float32.
ORT_IO = {D.bool, D.string, D.float16, D.float32, D.float64} | {
    d for d in D if d.is_int and d.bits >= 8
}
Array = np.ndarray[Any, Any]


def strings(*items: str) -> Array:
    return string_array(items)


# -- running one node in onnxruntime ---------------------------------------------------------
class NotInOrtError(Exception):
    """onnxruntime has no kernel for this op and type."""


def ort_node(
    op: str,
    inputs: Sequence[Array | None],
    attrs: dict[str, Any],
    out_types: Sequence[DType],
    opset: int = 25,
    domain: str = "",
) -> list[Array]:
    """One ONNX node run by onnxruntime. Inputs of types its Python API lacks are initializers;
    such outputs come back cast to float32 (exact for all of them)."""
    consts = [i for i, x in enumerate(inputs) if x is not None and dtype(x.dtype) not in ORT_IO]
    model = one_node(
        op,
        inputs,
        attrs,
        opset=opset,
        outputs=len(out_types),
        domain=domain,
        domain_opset=4,
        consts=consts,
        ir_version=11,
    )
    graph = model.graph
    del graph.output[:]
    for i, t in enumerate(out_types):
        name = f"y{i}"
        if t not in ORT_IO:
            graph.node.append(helper.make_node("Cast", [name], [name + "f"], to=TensorProto.FLOAT))
            name, t = name + "f", D.float32
        graph.output.append(helper.make_tensor_value_info(name, ELEM[t], None))
    try:
        return ort_run(model, inputs, optimize=False)
    except Exception as exc:
        if "NOT_IMPLEMENTED" in str(exc):
            raise NotInOrtError(str(exc)) from None
        raise


def as_ort(x: Array) -> Array:
    """What onnxruntime gives back for ``x``: types its Python API lacks as float32."""
    return x if dtype(x.dtype) in ORT_IO else convert(x, D.float32)


def assert_same(got: Array, want: Array, what: str = "") -> None:
    """Equal values, NaN matching NaN and the sign of zero counting."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype == object or want.dtype == object:
        assert got.tolist() == want.tolist(), what
        return
    if dtype(got.dtype).is_float:
        a, b = got.astype(np.float64), want.astype(np.float64)
        ok = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
        assert ok.all(), f"{what}\n got  {a.tolist()}\n want {b.tolist()}"
        return
    assert got.dtype == want.dtype and np.array_equal(got, want), f"{what}\n{got}\n{want}"


# -- element types ---------------------------------------------------------------------------
# name: (short, bits, is_float, is_int, is_signed)
TABLE = {
    D.bool: ("bool", 8, False, False, False),
    D.int4: ("i4", 4, False, True, True),
    D.uint4: ("u4", 4, False, True, False),
    D.int2: ("i2", 2, False, True, True),
    D.uint2: ("u2", 2, False, True, False),
    D.uint64: ("u64", 64, False, True, False),
    D.bfloat16: ("bf16", 16, True, False, True),
    D.float8e4m3fn: ("f8e4m3fn", 8, True, False, True),
    D.float8e4m3fnuz: ("f8e4m3fnuz", 8, True, False, True),
    D.float8e5m2: ("f8e5m2", 8, True, False, True),
    D.float8e5m2fnuz: ("f8e5m2fnuz", 8, True, False, True),
    D.float8e8m0: ("f8e8m0", 8, True, False, False),
    D.float4e2m1: ("f4e2m1", 4, True, False, True),
    D.string: ("str", 0, False, False, False),
}


@pytest.mark.parametrize("dt", list(D), ids=str)
def test_every_dtype_has_names_and_a_numpy_type(dt: DType) -> None:
    assert dtype(dt.value) is dt and dtype(dt.short) is dt and dtype(dt.numpy) is dt
    if dt in TABLE:
        assert (dt.short, dt.bits, dt.is_float, dt.is_int, dt.is_signed) == TABLE[dt]
    assert dt.is_numeric == (dt.is_float or dt.is_int)
    assert dt.is_numeric != (dt in (D.bool, D.string))
    if dt.is_int:
        lo, hi = int_range(dt)
        assert (lo, hi) == (int(ml_dtypes.iinfo(dt.numpy).min), int(ml_dtypes.iinfo(dt.numpy).max))


def test_onnx_element_types_map_both_ways() -> None:
    assert set(ONNX_DTYPES.values()) == set(D)
    for number, dt in ONNX_DTYPES.items():
        assert helper.tensor_dtype_to_np_dtype(number) == dt.numpy, dt


def test_numpy_text_arrays_are_refused_with_a_hint() -> None:
    with pytest.raises(GraphError, match="object arrays of str"):
        dtype(np.dtype("<U3"))


def test_new_constants_round_trip_through_the_text_ir() -> None:
    g = Graph()
    outs = [
        g.add_node("Constant", [], {"value": v}).output
        for v in (
            strings("", 'say "hi"\n', "中"),
            np.array([0.5, -448, np.nan], dtype=ml_dtypes.float8_e4m3fn),
            np.array([2.0**-127, 2.0**127], dtype=ml_dtypes.float8_e8m0fnu),
            np.array([-8, 7, 0], dtype=ml_dtypes.int4),
            np.array([-0.0, 6], dtype=ml_dtypes.float4_e2m1fn),
        )
    ]
    g.set_outputs(outs)
    text = print_graph(g)
    assert 'dense<str[3]>["", "say \\"hi\\"\\n", "中"]' in text
    assert "dense<f8e4m3fn[3]>[0.5, -448.0, nan]" in text
    assert "dense<i4[3]>[-8, 7, 0]" in text
    assert print_graph(parse_graph(text)) == text


# -- Cast --------------------------------------------------------------------------------------
SPECIALS = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 2.5, -2.5, 448.0, 460.0, 470.0, 500.0, 57344.0]
SPECIALS += [61440.0, 1e6, -1e6, 65504.0, 65520.0, 1e-7, 2**-10, 2**-17, 3e38, math.inf]
SPECIALS += [-math.inf, math.nan, 2**-149, 0.0625, 0.09375]


def cast_inputs(src: DType, dst: DType) -> Array:
    """Values of type ``src`` whose conversion to ``dst`` the spec defines (no NaN to int...)."""
    if src is D.string:
        if dst.is_float:
            return strings("1.5", "-2.25", "1e3", "+INF", "-inf", "NaN", "0", "3.14159", "1E-2")
        return strings("0", "1", "5", "100", " 7", *(["-1", "-5"] if dst.is_signed else []))
    if src is D.bool:
        return np.array([True, False])
    if src.is_int:
        lo, hi = int_range(src)
        values = sorted({lo, hi, 0, 1, hi // 2, lo // 2, min(hi, 100), max(lo, -100)})
        return np.array(values, dtype=object).astype(src.numpy)
    if dst.is_float or dst in (D.bool, D.string):
        values = SPECIALS
    elif dst.bits < 8:  # onnxruntime rounds to 4 and 2 bits where the rule truncates: whole only
        values = [float(v) for v in range(-9, 16)]
    else:  # truncation toward zero, within range
        values = [0, 1.5, 2.7, 100.9, 127, *([-1.5, -2.7, -128] if dst.is_signed else [0.2])]
    with np.errstate(all="ignore"):
        x = np.array(values, dtype=np.float64).astype(src.numpy)
    wide = x.astype(np.float64)
    if not (dst.is_float or dst in (D.bool, D.string)):
        x = x[np.isfinite(wide) & (wide == np.trunc(wide) if dst.bits < 8 else np.isfinite(wide))]
    return x


def ort_disagrees(x: Array, dst: DType, saturate: bool) -> Array:
    """Where onnxruntime departs from the spec: float8e5m2 without saturation turns finite values
    beyond its range into NaN (the spec's table says ±inf), and -0 float8 to bool is True."""
    with np.errstate(invalid="ignore"):
        wide = convert(x, D.float64) if dtype(x.dtype).is_numeric else np.zeros(x.shape)
    out = np.zeros(x.shape, dtype=bool)
    if dst is D.float8e5m2 and not saturate:
        out |= np.isfinite(wide) & (np.abs(wide) >= 61440)
    if dst is D.bool and dtype(x.dtype) in F8:
        out |= (wide == 0) & np.signbit(wide)
    return out


CAST_SOURCES = [d for d in D if d is not D.float8e8m0]
ORT_SOURCES = [d for d in CAST_SOURCES if d is not D.float4e2m1]  # no float4 Cast in onnxruntime


@pytest.mark.parametrize("src", ORT_SOURCES, ids=str)
def test_cast_matches_onnxruntime(src: DType) -> None:
    compared = 0
    for dst in CAST_SOURCES:
        for saturate in (True, False) if dst in F8 else (True,):
            x = cast_inputs(src, dst)
            attrs = {"to": ELEM[dst], "saturate": int(saturate)}
            try:
                (want,) = ort_node("Cast", [x], attrs, [dst])
            except NotInOrtError:
                continue
            keep = ~ort_disagrees(x, dst, saturate)
            (got,) = run_core("Cast", [x], {"to": dst, "saturate": int(saturate)})
            assert got.dtype == dst.numpy
            assert_same(as_ort(got)[keep], want[keep], f"{src} -> {dst} saturate={saturate}")
            compared += 1
    assert compared >= 10


@pytest.mark.parametrize("src", [D.float4e2m1, D.float8e8m0], ids=str)
def test_cast_from_narrow_floats_is_cast_from_their_exact_float32(src: DType) -> None:
    x = np.arange(2**src.bits, dtype=np.uint8).view(src.numpy)
    exact = convert(x, D.float32)
    for to in D:
        with np.errstate(all="ignore"):
            finite = np.isfinite(exact) if to.is_int else np.ones(x.shape, bool)
        assert_same(convert(x, to)[finite], convert(exact, to)[finite], str(to))


@pytest.mark.parametrize("to", F8, ids=str)
def test_cast_to_float8_follows_the_spec_tables(to: DType) -> None:
    x = np.array([0.0, -0.0, math.nan, math.inf, -math.inf, 1e9, -1e9], dtype=np.float32)
    top, fnuz = float_max(to), to.value.endswith("fnuz")
    saturated = [0.0, 0.0 if fnuz else -0.0, math.nan, top, -top, top, -top]
    assert_same(convert(x, to, saturate=True), np.array(saturated))
    big = math.inf if to is D.float8e5m2 else math.nan
    plain = [0.0, 0.0 if fnuz else -0.0, math.nan, big, -big, big, -big]
    assert_same(convert(x, to, saturate=False), np.array(plain))
    assert not convert(np.array([-0.0], dtype=to.numpy), D.bool)[0]


NARROW = [D.bfloat16, *F8, D.float4e2m1]


@cache
def finite_values(to: DType) -> tuple[Array, Array]:
    """Every finite value of ``to`` in increasing order (one zero), with its code."""
    codes = np.arange(2**to.bits, dtype=np.uint16 if to.bits == 16 else np.uint8)
    with np.errstate(invalid="ignore"):
        values = codes.view(to.numpy).astype(np.float64)
    keep = np.isfinite(values) & ~((values == 0) & np.signbit(values))
    order = np.argsort(values[keep], kind="stable")
    return values[keep][order], codes[keep][order]


def nearest_even(x: float, to: DType) -> float:
    """Round-to-nearest-even of ``x`` onto the finite values of ``to``, exactly (Fractions)."""
    values, codes = finite_values(to)
    i = int(np.searchsorted(values, x))
    near = [j for j in (i - 1, i) if 0 <= j < len(values)]
    dist = {j: abs(Fraction(float(values[j])) - Fraction(x)) for j in near}
    # Of two nearest, the even one has a zero last mantissa bit (bit 0 of the code).
    return float(values[min(near, key=lambda j: (dist[j], int(codes[j]) & 1))])


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(NARROW), st.floats(0, 1), st.integers(-3, 3), st.booleans())
def test_float64_rounds_once_to_narrow_floats(
    to: DType, where: float, nudge: int, negative: bool
) -> None:
    # Near the midpoint between two neighbours, nudged by a few float64 ulps: where float32
    # cannot tell the sides apart, rounding through it (as ml_dtypes does) breaks the tie wrongly.
    values, _ = finite_values(to)
    i = min(int(where * (len(values) - 1)), len(values) - 2)
    mid = (values[i] + values[i + 1]) / 2
    x = float(mid + nudge * np.spacing(mid)) * (-1 if negative else 1)
    got = float(convert(np.array([x]), to).astype(np.float64)[0])
    assert got == nearest_even(x, to), (to, x, got)


def test_float64_tie_breaking_beyond_float32_precision() -> None:
    x = np.array([1.0625 + 2**-40, 0.25 + 2**-40])  # just above ties, below float32 precision
    assert_same(convert(x, D.float8e4m3fn), np.array([1.125, 0.25]))
    assert_same(convert(x, D.float4e2m1), np.array([1.0, 0.5]))


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
def test_cast_to_float8e8m0_matches_onnxruntime(mode: str, saturate: int) -> None:
    tiny = [2**-127, 2**-128, 1.5 * 2**-127, 1e-45]
    huge = [3e38, 2**127, 1.5 * 2**127, math.inf, -math.inf, math.nan]
    x = np.array([0.0, -0.0, 1, 1.5, 1.25, 1.75, 3, 6, -2, 0.124, 1.1, *tiny, *huge], np.float32)
    attrs = {"to": ELEM[D.float8e8m0], "saturate": saturate, "round_mode": mode}
    (want,) = ort_node("Cast", [x], attrs, [D.float8e8m0])
    (got,) = run_core("Cast", [x], {"to": D.float8e8m0, "saturate": saturate, "round_mode": mode})
    assert_same(as_ort(got), want, f"{mode} saturate={saturate}")
    (back,) = run_core("Cast", [got], {"to": D.float16})
    assert_same(back, convert(as_ort(got), D.float16))


def test_cast_numbers_to_strings_matches_onnxruntime() -> None:
    floats = [0.1, 1e20, 1e-5, math.nan, math.inf, -math.inf, 3.0, -0.0, 123456789, 1 / 3]
    with np.errstate(over="ignore"):
        halves = np.array(floats, np.float16)
    for x in (
        np.array(floats, np.float32),
        halves,
        np.array(floats, np.float64),
        np.array([1, -5, 2**62, -(2**63)], np.int64),
        np.array([0, 255], np.uint8),
        np.array([True, False]),
    ):
        (want,) = ort_node("Cast", [x], {"to": TensorProto.STRING}, [D.string])
        (got,) = run_core("Cast", [x], {"to": D.string})
        assert_same(got, want, str(x.dtype))


def test_cast_unreadable_strings_fail() -> None:
    for text, to in [("abc", D.float32), ("", D.int64), ("inf", D.int32), ("1_0", D.float64)]:
        with pytest.raises(ExecutionError, match="cannot read"):
            run_core("Cast", [strings(text)], {"to": to})


def test_castlike_takes_the_type_of_its_second_input() -> None:
    x = np.array([1.7, -2.2, 1e6], np.float32)
    (got,) = run_core("CastLike", [x, np.zeros(0, ml_dtypes.float8_e4m3fn)], {"saturate": 0})
    assert_same(got, np.array([1.75, -2.25, math.nan]))
    (text,) = run_core("CastLike", [x, strings()])
    assert text.tolist() == ["1.7", "-2.2", "1000000"]
    with pytest.raises(GraphError, match="round_mode must be one of up, down, nearest"):
        run_core("CastLike", [x, x], {"round_mode": "odd"})


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


# -- string ops ----------------------------------------------------------------------------------
TEXT = strings("hello world !", "  a-b--c ", "x.y.z", "o-n--n  x-", "a")


SPLITS = [{}, {"delimiter": "-"}, {"delimiter": "."}, {"maxsplit": 1}]


@pytest.mark.parametrize("attrs", [*SPLITS, {"delimiter": "-", "maxsplit": 2}])
def test_string_split_matches_onnxruntime(attrs: dict[str, Any]) -> None:
    x = TEXT.reshape(5, 1)
    want = ort_node("StringSplit", [x], attrs, [D.string, D.int64], opset=20)
    for g, w in zip(run_core("StringSplit", [x], attrs), want, strict=True):
        assert_same(g, w)


def test_string_split_corner_cases() -> None:
    # Every whitespace character separates (onnxruntime splits at spaces only), and an empty
    # string is one empty part when a delimiter is given (onnxruntime: none), as in Python.
    parts, counts = run_core("StringSplit", [strings("tab\tsep\n x", "")])
    assert parts.tolist() == [["tab", "sep", "x"], ["", "", ""]] and counts.tolist() == [3, 0]
    parts, counts = run_core("StringSplit", [strings("", "a;b")], {"delimiter": ";"})
    assert parts.tolist() == [["", ""], ["a", "b"]] and counts.tolist() == [1, 2]
    parts, counts = run_core("StringSplit", [strings().reshape(0, 2)])
    assert parts.shape == (0, 2, 0) and counts.shape == (0, 2)


def test_string_concat_and_regex_match_onnxruntime() -> None:
    x, y = TEXT.reshape(5, 1), strings("?", "é中")
    (want,) = ort_node("StringConcat", [x, y], {}, [D.string], opset=20)
    assert_same(run_core("StringConcat", [x, y])[0], want)
    for pattern in [r"\w+ \w+ !", r"x\.\w\.[a-z]", r".*-{2}.*", "", r"(?i)HELLO.*", r"\s+a.*"]:
        attrs = {"pattern": pattern}
        (want,) = ort_node("RegexFullMatch", [TEXT], attrs, [D.bool], opset=20)
        assert_same(run_core("RegexFullMatch", [TEXT], attrs)[0], want, pattern)
    with pytest.raises(GraphError, match="not a valid regex"):
        run_core("RegexFullMatch", [TEXT], {"pattern": "(unclosed"})


@pytest.mark.parametrize(
    ("x", "attrs"),
    [
        (strings("Monday", "tuesday", "MONDAY", "Straße", "ǅ"), {"stopwords": ("monday", "ǆ")}),
        (strings("Monday", "tuesday", "Straße"),
         {"case_change_action": "UPPER", "is_case_sensitive": 1, "stopwords": ("Monday",)}),
        (strings("İx", "ABC").reshape(1, 2), {"case_change_action": "LOWER"}),
        (strings("ᾀß", "ﬁ ǰ", "ǆ"), {"case_change_action": "UPPER"}),
        (strings("a", "A").reshape(1, 2), {"stopwords": ("a",)}),
    ],
)  # fmt: skip
def test_string_normalizer_matches_onnxruntime(x: Array, attrs: dict[str, Any]) -> None:
    # onnxruntime needs an installed locale; tensorloop ignores ``locale`` and folds Unicode.
    (want,) = ort_node("StringNormalizer", [x], {**attrs, "locale": "C.UTF-8"}, [D.string])
    assert_same(run_core("StringNormalizer", [x], attrs)[0], want)


ML = "ai.onnx.ml"
LABEL_CASES = [
    (strings("a", "b", "zz", "c"), D.int64,
     {"keys_strings": ("a", "b", "c"), "values_int64s": (1, 2, 3)}),
    (np.array([[1, 5], [9, 2]], np.int64), D.string,
     {"keys_int64s": (1, 2), "values_strings": ("one", "two"), "default_string": "?"}),
    (np.array([1.5, math.nan, -0.0, 7], np.float32), D.float32,
     {"keys_floats": (1.5, math.nan, 0.0), "values_floats": (10.0, 20.0, 30.0)}),
    (np.array([3, 4], np.int64), D.float32,
     {"keys_int64s": (3,), "values_floats": (0.5,), "default_float": 9.0}),
]  # fmt: skip


@pytest.mark.parametrize(("x", "out", "attrs"), LABEL_CASES)
def test_label_encoder_matches_onnxruntime(x: Array, out: DType, attrs: dict[str, Any]) -> None:
    (want,) = ort_node("LabelEncoder", [x], attrs, [out], domain=ML)
    assert_same(run_core("LabelEncoder", [x], attrs)[0], want)


def test_label_encoder_repeated_keys_take_the_last_value() -> None:
    # The spec's rule; onnxruntime keeps the first.
    attrs = {"keys_strings": ("a", "b", "a"), "values_int64s": (1, 2, 3)}
    assert run_core("LabelEncoder", [strings("a", "b", "c")], attrs)[0].tolist() == [3, 2, -1]


def test_label_encoder_tensor_attributes() -> None:
    attrs = {
        "keys_tensor": np.array([1, 2], np.int32),
        "values_tensor": np.array([10, 20], np.int16),
        "default_tensor": np.array([-7], np.int16),
    }
    (got,) = run_core("LabelEncoder", [np.array([2, 3, 1], np.int32)], attrs)
    assert_same(got, np.array([20, -7, 10], np.int16))
    with pytest.raises(GraphError, match="input #0: expected i32 like the keys"):
        run_core("LabelEncoder", [np.array([2], np.int64)], attrs)
    with pytest.raises(GraphError, match="exactly one of keys_floats"):
        run_core("LabelEncoder", [np.array([2], np.int64)], {"values_int64s": (1,)})


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.arange(12, dtype=np.float32).reshape(3, 4), np.array([0, 3, 3], np.int64)),
        (np.arange(5, dtype=np.int64), np.array([[4], [1]], np.int64)),
        (strings("a", "b", "c").reshape(1, 3), np.array(2, np.int64)),
    ],
)
def test_array_feature_extractor_matches_onnxruntime(x: Array, y: Array) -> None:
    (want,) = ort_node("ArrayFeatureExtractor", [x, y], {}, [dtype(x.dtype)], domain=ML)
    assert_same(run_core("ArrayFeatureExtractor", [x, y])[0], want)


def test_binarizer() -> None:
    x = np.array([0.5, 1.0, 1.5, math.nan, -math.inf], np.float64)
    (got,) = run_core("Binarizer", [x], {"threshold": 1.0})
    assert_same(got, np.array([0, 0, 1, 0, 0], np.float64))


TFIDF = {
    "max_gram_length": 2,
    "min_gram_length": 1,
    "max_skip_count": 2,
    "ngram_counts": (0, 4),
    "ngram_indexes": (5, 1, 2, 3, 0, 4, 6),
    "pool_int64s": (2, 3, 5, 4, 5, 6, 7, 8, 6, 7),
}


TOKENS = np.array([2, 3, 5, 5, 6, 7, 8, 6, 7, 2], np.int64)
WEIGHTS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5)
WORDS = {
    "max_gram_length": 2, "min_gram_length": 1, "max_skip_count": 1, "mode": "TF",
    "ngram_counts": (0, 2), "ngram_indexes": (0, 1, 2, 3),
    "pool_strings": ("a", "c", "a", "b", "b", "a"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("x", "attrs"),
    [
        (np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32), {**TFIDF, "mode": "TF"}),
        (TOKENS, {**TFIDF, "mode": "IDF", "weights": WEIGHTS}),
        (TOKENS, {**TFIDF, "mode": "TFIDF", "weights": WEIGHTS, "min_gram_length": 2}),
        (strings("a", "b", "a", "c", "b", "a"), WORDS),
    ],
)
def test_tfidf_vectorizer_matches_onnxruntime(x: Array, attrs: dict[str, Any]) -> None:
    (want,) = ort_node("TfIdfVectorizer", [x], attrs, [D.float32], opset=9)
    assert_same(run_core("TfIdfVectorizer", [x], attrs)[0], want)


# -- the ONNX backend node tests -----------------------------------------------------------------
MINE = (
    "test_cast", "test_castlike", "test_quantizelinear", "test_dequantizelinear",
    "test_dynamicquantizelinear", "test_qlinearmatmul", "test_matmulinteger", "test_bitcast",
    "test_string", "test_strnormalizer", "test_regex", "test_tfidfvectorizer",
    "test_ai_onnx_ml_label_encoder", "test_ai_onnx_ml_binarizer",
    "test_ai_onnx_ml_array_feature_extractor",
)  # fmt: skip


@cache
def node_cases() -> dict[str, Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None) if c.name.startswith(MINE)}


def _array(x: Any) -> Any:
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x


def test_onnx_node_tests_of_these_ops_pass() -> None:
    from tensorloop.formats.onnx.backend import TensorloopBackend

    cases = node_cases()
    assert len(cases) >= 250
    failures = []
    for name, case in sorted(cases.items()):
        try:
            rep = TensorloopBackend.prepare(case.model)
            for inputs, outputs in case.data_sets:
                got = rep.run([_array(x) for x in inputs])
                for g, w in zip(got, outputs, strict=True):
                    assert_same(g, _array(w), name)
        except (AssertionError, GraphError, ExecutionError, UnsupportedOpError) as exc:
            failures.append(f"{name}: {str(exc)[:200]}")
    assert not failures, "\n".join(failures)
