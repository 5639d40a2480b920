"""Core ops written as OpenVINO layers (write_signal.py), run by OpenVINO's CPU plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino_layer_checks import written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402

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
