"""OpenVINO element-type and quantisation layers (read_quant.py: Convert, ConvertLike,
ConvertPromoteTypes, FakeQuantize, FakeConvert) vs. the CPU plugin and, where the plugin strays
from it, the spec; and the core Cast, CastLike, QuantizeLinear and DequantizeLinear written back
(write_quant.py), run by the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset13, opset14, opset16  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    const,
    ph,
    rand_f32,
    record_layer_types,
    run_path,
    save_ir,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402
from tensorloop.tensor.dtypes import DType  # noqa: E402

RNG = np.random.default_rng(7)


# -- ConvertPromoteTypes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "scalar", "unsafe"),
    [
        (np.float32, np.float16, False, False),
        (np.int8, np.uint8, False, True),
        (np.int32, np.uint8, False, False),
        (np.int64, np.int8, True, False),
        (np.int32, np.float32, False, True),
        (np.int16, np.float32, False, False),
        (np.uint16, np.int32, False, False),
        (np.uint32, np.int16, False, True),
        (np.bool_, np.int64, False, False),
        (np.int64, np.uint64, False, True),
        (np.int64, np.float16, True, True),
        (np.int8, np.int64, True, True),
        (np.float64, np.int32, False, False),
    ],
)
def test_convert_promote_types(a: Any, b: Any, scalar: bool, unsafe: bool, tmp_path: Path) -> None:
    x0 = (RNG.integers(0, 5, (2, 3))).astype(a)
    x1 = np.array(3, dtype=b) if scalar else (RNG.integers(0, 5, (2, 3))).astype(b)
    outs = check(
        lambda p, q: [
            ops.reshape(o, const([-1]), False)  # a layer of its own, not the input passed on
            for o in opset14.convert_promote_types(p, q, unsafe, scalar).outputs()
        ],
        x0,
        x1,
        tmp_path=tmp_path,
    )
    assert len(outs) == 2


# -- the writer: CastLike --------------------------------------------------------------------------


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_cast_like(tmp_path: Path) -> None:
    x = (rand_f32(3, 4, rng=RNG) * 10).astype(np.float32)
    i = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    p, q = ph("x", x), ph("i", i)
    outs = {
        "to_int": emit("CastLike", [p, q]),
        "to_float": emit("CastLike", [q, p]),
        "to_half": emit("CastLike", [p, tl.constant(np.float16(0))]),
        "to_i64": emit("CastLike", [q, tl.constant(np.int64(0))]),
    }
    written_runs_alike(tl.Model(outs), {"x": x, "i": i}, tmp_path, rtol=1e-3, atol=1e-3)


# -- the writer: QuantizeLinear and DequantizeLinear -----------------------------------------------
def _quant_params(zero_type: Any, per_axis: bool, scale_type: Any) -> tuple[Array, Array | None]:
    n = 3 if per_axis else 1
    scale = RNG.uniform(0.02, 0.3, n).astype(scale_type)
    zero = None
    if zero_type is not None:
        info = np.iinfo(zero_type)
        zero = RNG.integers(max(info.min, -20), min(info.max, 20), n, endpoint=True)
        zero = zero.astype(zero_type)
    if not per_axis:
        scale = scale.reshape(())
        zero = None if zero is None else zero.reshape(())
    return scale, zero


DEQUANT_CASES = {
    # name: (x dtype, has zero point, per axis, output dtype)
    "u8": (np.uint8, False, False, None),
    "u8-zero": (np.uint8, True, False, None),
    "i8-axis": (np.int8, True, True, None),
    "i16-axis": (np.int16, True, True, None),
    "u16": (np.uint16, True, False, None),
    "i8-f16-out": (np.int8, True, True, "float16"),
}


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_quantize_linear_refused(tmp_path: Path) -> None:
    """OpenVINO's CPU Divide is not correctly rounded: QuantizeLinear is refused."""
    x = rand_f32(2, 3, rng=RNG)
    y = emit("QuantizeLinear", [ph("x", x), tl.constant(np.float32(0.1))], {})
    with pytest.raises(FormatError, match="QuantizeLinear is not written"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(DEQUANT_CASES))
def test_writer_dequantize_linear(name: str, tmp_path: Path) -> None:
    x_type, has_zero, per_axis, out = DEQUANT_CASES[name]
    scale, zero = _quant_params(x_type if has_zero else None, per_axis, np.float32)
    info = np.iinfo(x_type)
    x = RNG.integers(info.min, info.max, (2, 3, 4), endpoint=True).astype(x_type)
    ins = [ph("x", x), ph("scale", scale)] + ([] if zero is None else [tl.constant(zero)])
    attrs: dict[str, Any] = {"axis": -2}
    if out is not None:
        attrs["output_dtype"] = DType(out)
    y = emit("DequantizeLinear", ins, attrs)
    feeds = {"x": x, "scale": scale}
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-6, atol=0)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("case", ["blocked", "int32"])
def test_writer_dequantize_linear_refused(case: str, tmp_path: Path) -> None:
    q = np.arange(8, dtype=np.int32 if case == "int32" else np.int8).reshape(2, 4)
    scale = np.full((2, 2) if case == "blocked" else (), 0.1, np.float32)
    attrs: dict[str, Any] = {"axis": 1, "block_size": 2} if case == "blocked" else {}
    y = emit("DequantizeLinear", [ph("q", q), tl.constant(scale)], attrs)
    match = "blocked" if case == "blocked" else "dequantizing i32"
    with pytest.raises(FormatError, match=match):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- ConvertLike -----------------------------------------------------------------------------------
@pytest.mark.parametrize("to", [np.int32, np.float16, np.int64, np.bool_])
def test_convert_like(to: Any, tmp_path: Path) -> None:
    x = np.array([[1.7, -2.2, 0.0], [3.9, 100.4, -0.6]], np.float32)
    like = opset16.constant(np.zeros(2, to))
    folded = opset1.convert_like(opset16.constant(x * 2), like)
    check(lambda p: [opset1.convert_like(p, like), folded], x, tmp_path=tmp_path)


# -- FakeQuantize ----------------------------------------------------------------------------------
@pytest.mark.parametrize("levels", [2, 16, 256])
def test_fake_quantize(levels: int, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4) * 2
    lo = np.array([-1.0, -0.5, 0.2], np.float32).reshape(1, 3, 1)
    hi = np.array([1.0, 1.5, 0.3], np.float32).reshape(1, 3, 1)
    check(
        lambda x: ops.fake_quantize(
            x,
            ops.constant(lo),
            ops.constant(hi),
            const(-2.0, np.float32),
            const(3.0, np.float32),
            levels,
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-5,
    )


def test_fake_quantize_reversed_scalar_range(tmp_path: Path) -> None:
    # Below min(low, high) gives output_low, above the max output_high, as the spec says.
    x = np.linspace(-1, 1, 21).astype(np.float32)
    f = ops.constant
    check(
        lambda x: ops.fake_quantize(
            x, f(np.float32(0.2)), f(np.float32(-0.3)), f(np.float32(-2)), f(np.float32(3)), 16
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-6,
    )


# -- Convert ---------------------------------------------------------------------------------------
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


# -- FakeConvert, and Convert and Cast to f8 -------------------------------------------------------
# The CPU plugin converts to f8 two ways, chosen by the CPU it runs on. With AVX512-FP16 (Intel
# since Sapphire Rapids) oneDNN's conversion rounds as the spec does. Without it (any AVX2 CPU, and
# AVX-512 ones such as AMD's Zen 4) it converts f32 through ov::float16(float), whose subnormal
# branch doubles a value that rounds up to a power of two below 2**-14: 1.5255692e-05 becomes 2**-15
# as f8e5m2, where the spec (and ml_dtypes) give 2**-16, f8e5m2's smallest subnormal
# (docs/openvino.md). So tensorloop is checked against the spec everywhere, and against the plugin
# only where its answer does not depend on the CPU: results that are 0, not finite, or at least the
# target's smallest normal. ONEDNN_MAX_CPU_ISA=AVX2 (or AVX512_CORE_BF16) shows the other path on a
# CPU with AVX512-FP16.
NARROW = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


def _fake_convert_spec(x: Array, scale: Any, shift: Any, to: str) -> Array:
    """The spec's formula, through f16 as OpenVINO converts, saturating, NaN kept."""
    narrow = NARROW[to]
    limit = float(ml_dtypes.finfo(narrow).max)
    y = x * scale - (0 if shift is None else shift)
    with np.errstate(over="ignore"):
        h = np.clip(y.astype(np.float16), -limit, limit)
    back = h.astype(narrow).astype(x.dtype)
    return ((back + (0 if shift is None else shift)) / scale).astype(x.dtype)


def _cpu_independent(y: Array, to: str) -> Array:
    """Where the CPU plugin's conversion of ``y`` to ``to`` does not depend on the CPU: 0, not
    finite, or clear of the subnormal range (f16's lies below it); the rest are compared with the
    spec only."""
    magnitude = np.abs(np.asarray(y, np.float64))
    tiny = float(ml_dtypes.finfo(NARROW[to]).smallest_normal)
    return (magnitude == 0) | ~np.isfinite(magnitude) | (magnitude >= tiny * 1.0625)


def _agrees_with_the_plugin(
    path: Path, feeds: dict[str, Array], ours: Array, where: Array, **tol: float
) -> None:
    """The CPU plugin's run of the IR at ``path`` gives ``ours``, same dtype and shape, where
    ``where`` holds."""
    (theirs,) = compile_cpu(path)(feeds).values()
    theirs = np.asarray(theirs)
    assert theirs.dtype == ours.dtype and theirs.shape == ours.shape, (theirs.dtype, theirs.shape)
    # a third of wide-range random data is clear of the subnormal range whatever the draw
    assert where.shape == ours.shape and where.mean() > 1 / 3, "too little left to compare"
    np.testing.assert_allclose(
        ours[where], theirs[where], rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-6)
    )


def _written_agrees(
    model: tl.Model, feeds: dict[str, Array], where: Array, folder: Path, **tol: float
) -> None:
    """``written_runs_alike`` for one output, the plugin compared only where ``where`` holds:
    ``model`` written as IR runs on the plugin as on tensorloop, and tensorloop reads it back to
    the same result everywhere."""
    folder.mkdir(exist_ok=True)
    path = folder / "w.xml"
    tl.save(model, path)
    (ours,) = model.run(feeds).values()
    _agrees_with_the_plugin(path, feeds, ours, where, **tol)
    (again,) = tl.load(path).run(feeds).values()
    np.testing.assert_array_equal(again, ours)


def _check_narrow(build: Any, x: Array, where: Array, tmp_path: Path, **tol: float) -> Array:
    """``check`` for one input and one output, with the plugin compared only ``where`` (see
    above): tensorloop's run of the IR ``build`` makes, against the CPU plugin's, then written back
    as IR."""
    p = opset16.parameter(x.shape, x.dtype, name="x0")
    path = save_ir([build(p)], [p], tmp_path)
    feeds = {"x0": x}
    model = tl.load(path)
    (ours,) = model.run(feeds).values()
    _agrees_with_the_plugin(path, feeds, ours, where, **tol)
    record_layer_types(path, "compared")
    _written_agrees(model, feeds, where, tmp_path / "m_written", **tol)
    record_layer_types(path, "written")
    return np.asarray(ours)


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

    where = _cpu_independent(x * scale - (0 if shift is None else shift), to)
    got = _check_narrow(build, x, where, tmp_path)
    np.testing.assert_array_equal(got, _fake_convert_spec(x, scale, shift, to))


@pytest.mark.parametrize("to", ["f8e4m3", "f8e5m2"])
def test_fake_convert_rounds_f32_through_f16_and_half_data(to: str, tmp_path: Path) -> None:
    # -0.21089685 is 0.2109375 in f16, halfway between two f8e4m3 values: it rounds to even.
    # 1.5255692e-05 is 2**-16 in f16 and f8e5m2 (0 in f8e4m3); CPUs without AVX512-FP16 give
    # 2**-15 for it (see above), so the plugin is not asked about it.
    x = np.concatenate([[-0.21089685, 1.5255692e-05], _wide_range(300)]).astype(np.float32)
    one = opset13.constant(np.float32(1))
    where = _cpu_independent(x, to)
    assert not where[1]
    got = _check_narrow(lambda p: opset13.fake_convert(p, one, None, to), x, where, tmp_path)
    np.testing.assert_array_equal(got, _fake_convert_spec(x, np.float32(1), None, to))
    assert got[0] == -0.21875 and got[1] == (2.0**-16 if to == "f8e5m2" else 0.0)
    # With the f32 hint the plugin computes f16 data's scale and shift in f32, the spec in f16:
    # a scale and shift that round nothing keep the two alike.
    half = np.clip(_wide_range(5, 40), -6e4, 6e4).astype(np.float16)
    scale, shift = np.float16(0.5), np.float16(0)

    def build(p: Any) -> Any:
        return opset13.fake_convert(p, opset13.constant(scale), opset13.constant(shift), to)

    where = _cpu_independent(half * scale - shift, to)
    got = _check_narrow(build, half, where, tmp_path, rtol=1e-3)
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

    got = _check_narrow(build, x, _cpu_independent(x, to), tmp_path)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).astype(NARROW[to]).astype(source)
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
    where = _cpu_independent(x, "f8e4m3" if to == "float8e4m3fn" else "f8e5m2")
    _written_agrees(model, {"x": x}, where, tmp_path)
    (got,) = model.run({"x": x}).values()
    kind = ml_dtypes.float8_e4m3fn if to == "float8e4m3fn" else ml_dtypes.float8_e5m2
    limit = float(ml_dtypes.finfo(kind).max)
    with np.errstate(over="ignore", invalid="ignore"):
        held = np.clip(x, -limit, limit) if saturate else x
        want = held.astype(kind).astype(np.float16)
    np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_refuses_casting_f32_to_float8(tmp_path: Path) -> None:
    p = tl.placeholder(np.float32, (3,), name="x")
    model = tl.Model({"y": emit("Cast", [p], {"to": tl.dtype("float8e4m3fn")})})
    with pytest.raises(FormatError, match="through f16, rounding twice: cast to float16 first"):
        tl.save(model, tmp_path / "m.xml")
