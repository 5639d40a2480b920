"""Element types, Cast and CastLike against onnxruntime and the ONNX spec's tables."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import ml_dtypes
import numpy as np
import pytest
from dtype_oracle import ELEM, F8, Array, D, NotInOrtError, as_ort, assert_same, ort_node, strings
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from onnx_oracle import run_core
from tensorloop.errors import ExecutionError, GraphError
from tensorloop.formats.onnx.convert import ONNX_DTYPES
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.reference.kernels.quant import convert
from tensorloop.tensor.dtypes import DType, dtype, float_max, int_range

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
