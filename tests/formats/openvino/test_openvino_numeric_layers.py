"""OpenVINO Inverse, FakeConvert and BinaryConvolution layers (ov_numeric.py) vs. the CPU plugin,
and the spec where the plugin strays from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset16")

from openvino import opset1, opset13, opset14  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    check,
    compile_cpu,
    edit_ir,
    rand_f32,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(14)


@pytest.fixture
def _fresh_builder() -> None:
    tl.reset()


# -- Inverse ---------------------------------------------------------------------------------
def _invertible(*shape: int) -> Array:
    return rand_f32(*shape) + 3 * np.eye(shape[-1], dtype=np.float32)


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 3, 5, 5)])
def test_inverse(shape: tuple[int, ...], adjoint: bool, tmp_path: Path) -> None:
    check(lambda x: opset14.inverse(x, adjoint), _invertible(*shape), tmp_path=tmp_path, rtol=1e-4)


def test_inverse_dynamic_and_half(tmp_path: Path) -> None:
    check(lambda x: opset14.inverse(x), _invertible(3, 4, 4), tmp_path=tmp_path, dynamic=True)
    half = _invertible(2, 3, 3).astype(np.float16)
    check(lambda x: opset14.inverse(x, True), half, tmp_path=tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
def test_inverse_runs_on_every_backend_and_onnx_refuses_it(backend: str, tmp_path: Path) -> None:
    x = _invertible(2, 3, 3)
    model = tl.Model({"y": emit("Inverse", [tl.placeholder(np.float32, x.shape, name="x")])})
    got = model.run({"x": x}, backend=backend)["y"]
    np.testing.assert_allclose(got, np.linalg.inv(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    with pytest.raises(FormatError, match="ONNX has no op 'Inverse'"):
        tl.save(model, tmp_path / "m.onnx")


def test_inverse_of_a_singular_matrix_is_nan(tmp_path: Path) -> None:
    x = np.stack([np.eye(3), [[1, 2, 3], [2, 4, 6], [0, 0, 1]], np.zeros((3, 3))])
    got = check(lambda p: opset14.inverse(p), x.astype(np.float32), tmp_path=tmp_path, write=False)
    (value,) = got.values()
    np.testing.assert_array_equal(value[0], np.eye(3))
    assert np.isnan(value[1:]).all()


# -- FakeConvert -----------------------------------------------------------------------------
def _fake_convert_spec(x: Array, scale: Any, shift: Any, to: str) -> Array:
    """The spec's formula, through f16 as OpenVINO converts, saturating, NaN kept."""
    narrow = ml_dtypes.float8_e4m3fn if to == "f8e4m3" else ml_dtypes.float8_e5m2
    limit = float(ml_dtypes.finfo(narrow).max)
    y = x * scale - (0 if shift is None else shift)
    with np.errstate(over="ignore"):
        h = np.clip(y.astype(np.float16), -limit, limit)
    back = h.astype(narrow).astype(x.dtype)
    return ((back + (0 if shift is None else shift)) / scale).astype(x.dtype)


def _wide_range(*shape: int) -> Array:
    x = RNG.standard_normal(shape) * np.exp(RNG.uniform(-14, 12, shape))
    return x.astype(np.float32)


@pytest.mark.parametrize("to", ["f8e4m3", "f8e5m2"])
@pytest.mark.parametrize(
    ("shape", "scale_shape", "shifted"),
    [((64,), (), False), ((4, 33), (), True), ((2, 3, 20), (3, 1), True), ((3, 50), (50,), False)],
)
def test_fake_convert(
    shape: tuple[int, ...], scale_shape: tuple[int, ...], shifted: bool, to: str, tmp_path: Path
) -> None:
    x = _wide_range(*shape)
    x.reshape(-1)[:4] = [np.inf, -np.inf, 1e6, -0.0]
    scale = RNG.uniform(0.5, 4, scale_shape).astype(np.float32)
    shift = RNG.uniform(-2, 2, scale_shape).astype(np.float32) if shifted else None

    def build(p: Any) -> Any:
        extra = opset13.constant(shift) if shift is not None else None
        return opset13.fake_convert(p, opset13.constant(scale), extra, to)

    (got,) = check(build, x, tmp_path=tmp_path).values()
    np.testing.assert_array_equal(got, _fake_convert_spec(x, scale, shift, to))


@pytest.mark.parametrize("to", ["f8e4m3", "f8e5m2"])
def test_fake_convert_rounds_f32_through_f16_and_half_data(to: str, tmp_path: Path) -> None:
    # -0.21089685 is 0.2109375 in f16, halfway between two f8e4m3 values: it rounds to even.
    x = np.concatenate([[-0.21089685, 1.5255692e-05], _wide_range(300)]).astype(np.float32)
    one = opset13.constant(np.float32(1))
    (got,) = check(lambda p: opset13.fake_convert(p, one, None, to), x, tmp_path=tmp_path).values()
    np.testing.assert_array_equal(got, _fake_convert_spec(x, np.float32(1), None, to))
    # With the f32 hint the plugin computes f16 data's scale and shift in f32, the spec in f16:
    # a scale and shift that round nothing keep the two alike.
    half = np.clip(_wide_range(5, 40), -6e4, 6e4).astype(np.float16)
    scale, shift = np.float16(0.5), np.float16(0)

    def build(p: Any) -> Any:
        return opset13.fake_convert(p, opset13.constant(scale), opset13.constant(shift), to)

    (got,) = check(build, half, tmp_path=tmp_path, rtol=1e-3).values()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, _fake_convert_spec(half, scale, shift, to))


def test_fake_convert_keeps_nan_where_the_cpu_plugin_gives_minus_max(tmp_path: Path) -> None:
    x = np.array([np.nan, 1.0], np.float32)
    p = opset13.parameter([2], np.float32, name="x0")
    path = save_ir([opset13.fake_convert(p, opset13.constant(np.float32(1)))], [p], tmp_path)
    (ours,) = tl.load(path).run({"x0": x}).values()
    assert np.isnan(ours[0]) and ours[1] == 1.0
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    assert theirs[0] == -448.0  # the plugin's answer for NaN; the spec's Convert keeps NaN


@pytest.mark.parametrize("to", ["f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("source", [np.float32, np.float16])
def test_convert_to_float8_and_back(source: Any, to: str, tmp_path: Path) -> None:
    """Convert to f8 rounds wider floats through f16 and does not saturate: NaN (f8e4m3) or inf
    (f8e5m2) beyond the largest value."""
    x = np.clip(_wide_range(400), -6e4, 6e4).astype(source)
    x[:3] = [-0.21089685, 1000.0, -65000.0]
    target = ov.Type.f8e4m3 if to == "f8e4m3" else ov.Type.f8e5m2

    def build(p: Any) -> Any:
        return opset13.convert(opset13.convert(p, target), source)

    (got,) = check(build, x, tmp_path=tmp_path).values()
    narrow = ml_dtypes.float8_e4m3fn if to == "f8e4m3" else ml_dtypes.float8_e5m2
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).astype(narrow).astype(source)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[2]) if to == "f8e4m3" else got[2] == -np.inf
    assert np.isnan(got[1]) == (to == "f8e4m3")


def test_float8_constants_read_and_write(tmp_path: Path) -> None:
    w = RNG.standard_normal((3, 4)).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    weights = opset13.constant(w, dtype=ov.Type.f8e4m3)

    def build(p: Any) -> Any:
        return opset13.multiply(p, opset13.convert(weights, np.float32))

    check(build, rand_f32(3, 4), tmp_path=tmp_path)
    assert 'element_type="f8e4m3" shape="3, 4"' in (tmp_path / "m.xml").read_text()


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("to", ["float8e4m3fn", "float8e5m2"])
def test_writer_cast_to_float8(to: str, saturate: int, tmp_path: Path) -> None:
    x = np.clip(_wide_range(3, 50), -6e4, 6e4).astype(np.float16)
    x[0, :3] = [1000.0, -60000.0, 0.1]
    p = tl.placeholder(np.float16, x.shape, name="x")
    narrow = emit("Cast", [p], {"to": tl.dtype(to), "saturate": saturate})
    model = tl.Model({"y": emit("Cast", [narrow], {"to": tl.dtype("float16")})})
    written_runs_alike(model, {"x": x}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_refuses_casting_f32_to_float8(tmp_path: Path) -> None:
    p = tl.placeholder(np.float32, (3,), name="x")
    model = tl.Model({"y": emit("Cast", [p], {"to": tl.dtype("float8e4m3fn")})})
    with pytest.raises(FormatError, match="through f16, rounding twice: cast to float16 first"):
        tl.save(model, tmp_path / "m.xml")


# -- BinaryConvolution -----------------------------------------------------------------------
def _palindromic_bits(*shape: int) -> Array:
    """Random 0/1 weights whose every packed byte reads the same from either end: the CPU plugin
    takes a byte's bits low to high, the IR (and OpenVINO's reference) high to low."""
    count = int(np.prod(shape))
    half = RNG.integers(0, 2, ((count + 7) // 8, 4))
    bits = np.concatenate([half, half[:, ::-1]], axis=1).reshape(-1)[:count]
    return bits.reshape(shape).astype(np.uint8)


def _binary_conv_spec(
    x: Array,
    w: Array,
    strides: list[int],
    begin: list[int],
    end: list[int],
    dil: list[int],
    pv: float,
) -> Array:
    """The spec's xnor-popcount, 2 * popcount(xnor) - bits, of the input bits x > 0 padded with
    pad_value's bit (1 for 1, else 0)."""
    bits = np.pad(
        x > 0, [(0, 0), (0, 0), *zip(begin, end, strict=True)], constant_values=bool(pv == 1)
    )
    m, _, *kernel = w.shape
    n = bits.shape[0]
    out_dims = [
        (bits.shape[2 + i] - (kernel[i] - 1) * dil[i] - 1) // strides[i] + 1
        for i in range(len(kernel))
    ]
    out = np.zeros((n, m, *out_dims), np.float32)
    for index in np.ndindex(*out_dims):
        window = tuple(
            slice(o * s, o * s + (k - 1) * d + 1, d)
            for o, s, k, d in zip(index, strides, kernel, dil, strict=True)
        )
        patch = bits[(slice(None), slice(None), *window)]  # n, c, k...
        same = patch[:, None] == w.astype(bool)[None]  # n, m, c, k...
        popcount = same.reshape(n, m, -1).sum(-1)
        out[(slice(None), slice(None), *index)] = 2 * popcount - same[0, 0].size
    return out


BINARY_CASES = [
    # (input shape, out channels, kernel, strides, pads_begin, pads_end, dilations, pad_value)
    ((1, 8, 5, 5), 4, (3, 3), [1, 1], [1, 1], [1, 1], [1, 1], 1.0),
    ((2, 16, 6, 7), 3, (3, 2), [2, 1], [0, 1], [2, 0], [1, 2], -1.0),
    ((1, 8, 6, 6), 2, (1, 1), [1, 1], [0, 0], [0, 0], [1, 1], 0.0),
    ((1, 24, 7, 9), 5, (3, 3), [2, 3], [2, 0], [1, 2], [2, 1], 0.5),
    ((3, 8, 4, 4), 2, (2, 2), [1, 1], [1, 0], [0, 1], [1, 1], 2.0),
]


@pytest.mark.parametrize("zero_one", [True, False], ids=["bits", "floats"])
@pytest.mark.parametrize("case", range(len(BINARY_CASES)))
def test_binary_convolution(case: int, zero_one: bool, tmp_path: Path) -> None:
    shape, m, kernel, strides, begin, end, dil, pv = BINARY_CASES[case]
    x = rand_f32(*shape)
    if zero_one:
        x = (x > 0).astype(np.float32)
    w = _palindromic_bits(m, shape[1], *kernel)

    def build(p: Any) -> Any:
        weights = ops.constant(w, dtype=ov.Type.u1)
        mode = "xnor-popcount"
        return opset1.binary_convolution(p, weights, strides, begin, end, dil, mode, pv)

    (got,) = check(build, x, tmp_path=tmp_path).values()
    np.testing.assert_array_equal(got, _binary_conv_spec(x, w, strides, begin, end, dil, pv))


@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower", "valid"])
def test_binary_convolution_auto_pad(auto_pad: str, tmp_path: Path) -> None:
    x = rand_f32(1, 8, 5, 6)
    w = _palindromic_bits(3, 8, 3, 2)

    def build(p: Any) -> Any:
        weights = ops.constant(w, dtype=ov.Type.u1)
        return opset1.binary_convolution(
            p, weights, [2, 2], [0, 0], [0, 0], [1, 1], "xnor-popcount", 1.0, auto_pad
        )

    check(build, x, tmp_path=tmp_path)


def test_binary_convolution_follows_the_spec_bit_order(tmp_path: Path) -> None:
    """Any weights and channel counts: the IR's bits are read high to low, as OpenVINO writes
    and its reference reads them (the CPU plugin reads them low to high)."""
    x = rand_f32(2, 3, 5, 5)
    w = RNG.integers(0, 2, (4, 3, 3, 3)).astype(np.uint8)
    w[0, 0, 0, :2] = [1, 0]  # not a palindrome
    p = ops.parameter(x.shape, np.float32, name="x0")
    layer = opset1.binary_convolution(
        p, ops.constant(w, dtype=ov.Type.u1), [1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    assert 'element_type="u1" shape="4, 3, 3, 3" offset="0" size="14"' in path.read_text()
    (ours,) = tl.load(path).run({"x0": x}).values()
    want = _binary_conv_spec(x, w, [1, 1], [1, 1], [1, 1], [1, 1], 0)
    np.testing.assert_array_equal(ours, want)
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    assert not np.array_equal(theirs, want)


def test_binary_convolution_pads_zero_bits_for_pad_value_0(tmp_path: Path) -> None:
    """The spec's pad value 0 is a 0 bit, counted as -1 in the window; the CPU plugin leaves
    the padding out of the count (a zero-padded convolution of the ±1 values)."""
    x = rand_f32(1, 8, 4, 4)
    w = _palindromic_bits(2, 8, 3, 3)
    p = ops.parameter(x.shape, np.float32, name="x0")
    layer = opset1.binary_convolution(
        p, ops.constant(w, dtype=ov.Type.u1), [1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    (ours,) = tl.load(path).run({"x0": x}).values()
    np.testing.assert_array_equal(ours, _binary_conv_spec(x, w, [1, 1], [1, 1], [1, 1], [1, 1], 0))
    (theirs,) = compile_cpu(path)({"x0": x}).values()
    signs, kernel = np.where(x > 0, 1.0, -1.0), np.where(w == 1, 1.0, -1.0)
    padded = np.pad(signs, [(0, 0), (0, 0), (1, 1), (1, 1)])
    zero_padded = np.zeros_like(ours)
    for i, j in np.ndindex(4, 4):
        patch = padded[0, :, i : i + 3, j : j + 3]
        zero_padded[0, :, i, j] = (patch[None] * kernel).reshape(2, -1).sum(-1)
    np.testing.assert_array_equal(theirs, zero_padded)


def test_a_u1_constant_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    p = ops.parameter([1, 8, 3, 3], np.float32, name="x0")
    weights = ops.constant(np.ones((2, 8, 1, 1), np.uint8), dtype=ov.Type.u1)
    layer = opset1.binary_convolution(
        p, weights, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0
    )
    path = save_ir([layer], [p], tmp_path)
    edit_ir(path, 'offset="0" size="2"', 'offset="0" size="3"')
    with pytest.raises(FormatError, match=r"size=3 bytes does not match .* u1 \(1 bit\) = 2 bytes"):
        tl.load(path)
