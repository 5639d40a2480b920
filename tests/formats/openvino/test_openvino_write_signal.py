"""Core ops written as OpenVINO layers (write_signal.py), run by OpenVINO's CPU plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino_layer_checks import written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)


@pytest.fixture
def _fresh_builder() -> None:
    tl.reset()


def _ph(name: str, like: Array, shape: tuple[int | str, ...] | None = None) -> Any:
    return tl.placeholder(like.dtype, like.shape if shape is None else shape, name=name)


def _rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def _ints(*values: int) -> Any:
    return tl.constant(np.array(values[0] if len(values) == 1 else values, np.int64))


# -- DFT ------------------------------------------------------------------------------------------
DFT_CASES = {
    # name: (input last dim, inverse, onesided, dft_length, axis)
    "complex": (2, 0, 0, None, -2),
    "real": (1, 0, 0, None, 1),
    "inverse": (2, 1, 0, None, 0),
    "cut": (2, 0, 0, 4, -2),
    "padded": (1, 1, 0, 9, -2),
    "rfft": (1, 0, 1, None, -2),
    "rfft-odd": (1, 0, 1, 5, 1),
    "rfft-axis0": (1, 0, 1, None, 0),
    "irfft": (2, 1, 1, None, -2),
    "irfft-length": (2, 1, 1, 7, -2),
    "irfft-axis0": (2, 1, 1, 6, 0),
}


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(DFT_CASES))
def test_writer_dft(name: str, tmp_path: Path) -> None:
    last, inverse, onesided, length, axis = DFT_CASES[name]
    x = _rand(4, 6, last)
    p = _ph("x", x)
    ins = [p, None if length is None else _ints(length), _ints(axis)]
    y = emit("DFT", ins, {"inverse": inverse, "onesided": onesided})
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-4, atol=1e-4)


# -- STFT -----------------------------------------------------------------------------------------
STFT_CASES = {
    # name: (signal length, frame_step, window length or None, frame_length or None)
    "window": (16, 4, 8, None),
    "both": (17, 3, 6, 6),
    "length-only": (12, 2, None, 5),
    "whole": (10, 1, None, None),
}


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(STFT_CASES))
def test_writer_stft(name: str, tmp_path: Path) -> None:
    size, step, window, length = STFT_CASES[name]
    x = _rand(2, size, 1)
    feeds = {"x": x}
    ins = [_ph("x", x), _ints(step), None, None if length is None else _ints(length)]
    if window is not None:
        w = np.hanning(window).astype(np.float32)
        ins[2], feeds["w"] = _ph("w", w), w
    y = emit("STFT", ins)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("case", ["complex", "two-sided"])
def test_writer_stft_refused(case: str, tmp_path: Path) -> None:
    x = _rand(1, 8, 2 if case == "complex" else 1)
    y = emit("STFT", [_ph("x", x), _ints(2), None, _ints(4)], {"onesided": int(case == "complex")})
    with pytest.raises(tl.FormatError, match="OpenVINO's STFT"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- Col2Im ---------------------------------------------------------------------------------------
COL2IM_CASES = {
    # name: (channels, image, block, attrs)
    "plain": (2, (4, 5), (2, 2), {}),
    "strided": (1, (6, 7), (3, 2), {"strides": [2, 1], "pads": [1, 0, 1, 1]}),
    "dilated": (3, (7, 6), (2, 3), {"dilations": [2, 1], "strides": [1, 2]}),
}


def _col2im_positions(image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]) -> int:
    pads = attrs.get("pads", [0] * 4)
    dil, strides = attrs.get("dilations", [1, 1]), attrs.get("strides", [1, 1])
    count = 1
    for d in range(2):
        span = image[d] + pads[d] + pads[d + 2] - dil[d] * (block[d] - 1) - 1
        count *= span // strides[d] + 1
    return count


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(COL2IM_CASES))
def test_writer_col2im(name: str, tmp_path: Path) -> None:
    c, image, block, attrs = COL2IM_CASES[name]
    x = _rand(2, c * block[0] * block[1], _col2im_positions(image, block, attrs))
    y = emit("Col2Im", [_ph("x", x), _ints(*image), _ints(*block)], attrs)
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_col2im_3d_refused(tmp_path: Path) -> None:
    x = _rand(1, 8, 8)
    y = emit("Col2Im", [_ph("x", x), _ints(3, 3, 3), _ints(2, 2, 2)])
    with pytest.raises(tl.FormatError, match="two spatial axes"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- normalisation --------------------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_writer_group_normalization(groups: int, tmp_path: Path) -> None:
    x, scale, bias = _rand(2, 6, 3, 4), _rand(6), _rand(6)
    p = _ph("x", x)
    attrs = {"num_groups": groups, "epsilon": 1e-3}
    outs = {"y": emit("GroupNormalization", [p, tl.constant(scale), tl.constant(bias)], attrs)}
    half = x.astype(np.float16)
    h = _ph("h", half)
    hs, hb = tl.constant(scale.astype(np.float16)), tl.constant(bias.astype(np.float16))
    outs["half"] = emit("GroupNormalization", [h, hs, hb], attrs)
    feeds = {"x": x, "h": half}
    written_runs_alike(tl.Model(outs), feeds, tmp_path, rtol=2e-3, atol=5e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_writer_rms_normalization(axis: int, tmp_path: Path) -> None:
    x = _rand(2, 3, 5)
    scale = _rand(*x.shape[axis:])
    p = _ph("x", x)
    attrs = {"axis": axis, "epsilon": 1e-4}
    outs = {"y": emit("RMSNormalization", [p, tl.constant(scale)], attrs)}
    half = x.astype(np.float16)
    h = _ph("h", half)
    outs["half"] = emit(
        "RMSNormalization", [h, tl.constant(scale.astype(np.float16))], {**attrs, "stash_type": 1}
    )
    written_runs_alike(tl.Model(outs), {"x": x, "h": half}, tmp_path, rtol=2e-3, atol=2e-3)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("p", "axis"), [(1, -1), (2, -1), (2, 0), (1, 1)])
def test_writer_lp_normalization(p: int, axis: int, tmp_path: Path) -> None:
    x = _rand(3, 4, 5)
    x[1, :, 2] = 0  # zero norms along axis 1
    x[2, 3, :] = 0  # and along the last axis
    x[:, 0, 0] = 0  # and along axis 0
    q = _ph("x", x)
    y = emit("LpNormalization", [q], {"p": p, "axis": axis})
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-5, atol=1e-6)


# -- casts, indices, one-hots ---------------------------------------------------------------------
@pytest.mark.usefixtures("_fresh_builder")
def test_writer_cast_like(tmp_path: Path) -> None:
    x = (_rand(3, 4) * 10).astype(np.float32)
    i = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    p, q = _ph("x", x), _ph("i", i)
    outs = {
        "to_int": emit("CastLike", [p, q]),
        "to_float": emit("CastLike", [q, p]),
        "to_half": emit("CastLike", [p, tl.constant(np.float16(0))]),
        "to_i64": emit("CastLike", [q, tl.constant(np.int64(0))]),
    }
    written_runs_alike(tl.Model(outs), {"x": x, "i": i}, tmp_path, rtol=1e-3, atol=1e-3)


TIES = np.array([[1, 0, 0, 3], [2, 2, 1, 1], [0, 0, 0, 0]], np.float32)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("last", [0, 1])
def test_writer_argmin(last: int, tmp_path: Path) -> None:
    x = _ph("x", TIES)
    outs = {
        f"a{axis}{keep}": emit(
            "ArgMin", [x], {"axis": axis, "keepdims": keep, "select_last_index": last}
        )
        for axis in (0, 1, -1)
        for keep in (0, 1)
    }
    ints = TIES.astype(np.int32)
    outs["ints"] = emit("ArgMin", [_ph("i", ints)], {"axis": 1, "select_last_index": last})
    written_runs_alike(tl.Model(outs), {"x": TIES, "i": ints}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_hardmax(tmp_path: Path) -> None:
    x = _ph("x", TIES)
    r = _rand(2, 3, 4)
    q = _ph("r", r)
    outs = {f"h{axis}": emit("Hardmax", [x], {"axis": axis}) for axis in (0, 1, -1)}
    outs |= {f"r{axis}": emit("Hardmax", [q], {"axis": axis}) for axis in (0, 1, 2)}
    written_runs_alike(tl.Model(outs), {"x": TIES, "r": r}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_writer_cumprod(exclusive: int, reverse: int, tmp_path: Path) -> None:
    x = (_rand(3, 5) + 1).astype(np.float32)
    i = np.arange(1, 16, dtype=np.int64).reshape(3, 5) % 4 - 1
    attrs = {"exclusive": exclusive, "reverse": reverse}
    p, q = _ph("x", x), _ph("i", i)
    outs = {
        "c1": emit("CumProd", [p, _ints(1)], attrs),
        "c0": emit("CumProd", [p, _ints(-2)], attrs),
        "ints": emit("CumProd", [q, tl.constant(np.int32(1))], attrs),
    }
    # The IR multiplies floats in f64 as the core op does; the CPU plugin runs f64 as f32.
    written_runs_alike(tl.Model(outs), {"x": x, "i": i}, tmp_path, rtol=1e-6, atol=0)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_cumprod_unknown_length_refused(tmp_path: Path) -> None:
    x = _rand(2, 3)
    y = emit("CumProd", [_ph("x", x, (2, "N")), _ints(1)])
    with pytest.raises(tl.FormatError, match="no CumProd"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dropout(tmp_path: Path) -> None:
    x = _rand(3, 4)
    p = _ph("x", x)
    y, mask = emit_node("Dropout", [p, tl.constant(np.float32(0.3))])
    off, off_mask = emit_node(
        "Dropout", [p, tl.constant(np.float32(0.5)), tl.constant(np.array(False))]
    )
    zero, _ = emit_node("Dropout", [p, tl.constant(np.float32(0)), tl.constant(np.array(True))])
    outs = {"y": y, "mask": mask, "off": off, "off_mask": off_mask, "zero": zero}
    written_runs_alike(tl.Model(outs), {"x": x}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dropout_training_refused(tmp_path: Path) -> None:
    x = _rand(3, 4)
    ins = [_ph("x", x), tl.constant(np.float32(0.5)), tl.constant(np.array(True))]
    y, _ = emit_node("Dropout", ins)
    with pytest.raises(tl.FormatError, match="no random dropout"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dft_unknown_dims(tmp_path: Path) -> None:
    """Unknown batch and signal lengths; the default axis (-2)."""
    x, c = _rand(3, 8, 1), _rand(2, 5, 2)
    p, q = _ph("x", x, ("N", "L", 1)), _ph("c", c, ("N", "L", 2))
    outs = {
        "rfft": emit("DFT", [p], {"onesided": 1}),
        "fft": emit("DFT", [q]),
        "ifft_n": emit("DFT", [q, _ints(6)], {"inverse": 1}),
        "irfft_n": emit("DFT", [q, _ints(6)], {"inverse": 1, "onesided": 1}),
    }
    written_runs_alike(tl.Model(outs), {"x": x, "c": c}, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dft_computed_length_refused(tmp_path: Path) -> None:
    c, n = _rand(2, 5, 2), np.array(6, np.int64)
    y = emit("DFT", [_ph("c", c), _ph("n", n)], {"inverse": 1, "onesided": 1})
    with pytest.raises(tl.FormatError, match="dft_length must be a constant"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_stft_unknown_length(tmp_path: Path) -> None:
    x = _rand(2, 20, 1)
    w = np.hamming(6).astype(np.float32)
    y = emit("STFT", [_ph("x", x, ("N", "L", 1)), _ints(3), tl.constant(w)])
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-4, atol=1e-4)
