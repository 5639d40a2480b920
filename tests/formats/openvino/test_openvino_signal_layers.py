"""OpenVINO signal-processing layers (read_signal.py) vs. the CPU plugin: DFT-7, IDFT-7, RDFT-9,
IRDFT-9, STFT-15 and ISTFT-16; and the core DFT and STFT written back (write_signal.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset16")

from openvino import opset7, opset9, opset15, opset16  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    Array,
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    const,
    ph,
    rand_f32,
    run_path,
    save_ir,
    tl_const,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402

RNG = np.random.default_rng(7)


TOL = {"rtol": 1e-4, "atol": 2e-5}


def _sizes(sizes: list[int] | None) -> Any:
    return None if sizes is None else const(sizes)


def _ours(build: Any, x: Array, axes: list[int], sizes: list[int] | None, tmp_path: Path) -> Array:
    p = ops.parameter(x.shape, x.dtype, name="x0")
    path = save_ir([build(p, const(axes), _sizes(sizes))], [p], tmp_path)
    return next(iter(tl.load(path).run({"x0": x}).values()))


def _check_keep_sizes(
    build: Any,
    x: Array,
    axes: list[int],
    sizes: list[int] | None,
    kept: list[int] | None,
    tmp_path: Path,
) -> Array:
    """check() of ``build(p, axes, sizes)``; where ``sizes`` holds -1 (which the CPU plugin's RDFT
    and IRDFT fail on, 2026.4: "cannot create std::vector larger than max_size()"), the plugin
    runs the layer with the lengths it stands for (``kept``) and ours runs the -1 one."""
    if sizes is None or -1 not in sizes:
        got = check(lambda p: build(p, const(axes), _sizes(sizes)), x, tmp_path=tmp_path, **TOL)
        return next(iter(got.values()))
    want = check(lambda p: build(p, const(axes), _sizes(kept)), x, tmp_path=tmp_path, **TOL)
    got = _ours(build, x, axes, sizes, tmp_path / "kept")
    np.testing.assert_allclose(got, next(iter(want.values())), **TOL)
    return got


# -- DFT / IDFT ------------------------------------------------------------------------------------
# shape (last dim 2), axes, signal_size
COMPLEX_CASES: list[tuple[tuple[int, ...], list[int], list[int] | None]] = [
    ((6, 2), [0], None),
    ((6, 2), [-1], [9]),
    ((3, 4, 5, 2), [-1], None),
    ((3, 4, 5, 2), [0, -1], None),
    ((3, 4, 5, 2), [1], [7]),
    ((3, 4, 5, 2), [-2, 0], [-1, 2]),
    ((2, 3, 4, 5, 2), [3, 1, 0], [4, -1, 3]),
    ((2, 3, 4, 5, 2), [-3, -4, -2, -1], [2, 5, -1, 8]),
]


@pytest.mark.parametrize("layer", ["DFT", "IDFT"])
@pytest.mark.parametrize("case", COMPLEX_CASES, ids=str)
def test_dft_and_idft(layer: str, case: Any, tmp_path: Path) -> None:
    shape, axes, sizes = case
    build = opset7.dft if layer == "DFT" else opset7.idft
    x = rand_f32(*shape)
    got = check(lambda p: build(p, const(axes), _sizes(sizes)), x, tmp_path=tmp_path, **TOL)
    # The semantics pinned independently of OpenVINO, by NumPy's n-d FFT.
    rank = len(shape) - 1
    norm = [a + rank if a < 0 else a for a in axes]
    s = (
        None
        if sizes is None
        else [shape[a] if n == -1 else n for a, n in zip(norm, sizes, strict=True)]
    )
    fft = np.fft.fftn if layer == "DFT" else np.fft.ifftn
    want = fft(x[..., 0] + 1j * x[..., 1], s=s, axes=norm)
    out = next(iter(got.values()))
    np.testing.assert_allclose(out[..., 0] + 1j * out[..., 1], want, rtol=1e-4, atol=1e-4)


def test_dft_on_unknown_shapes(tmp_path: Path) -> None:
    x = rand_f32(3, 4, 5, 2)
    check(lambda p: opset7.dft(p, const([1, -1])), x, tmp_path=tmp_path, dynamic=True, **TOL)
    check(
        lambda p: opset7.idft(p, const([0]), const([5])),
        x,
        tmp_path=tmp_path,
        dynamic=True,
        **TOL,
    )


def test_dft_reads_f16(tmp_path: Path) -> None:
    x = rand_f32(4, 6, 2).astype(np.float16)
    check(lambda p: opset7.dft(p, const([0, 1])), x, tmp_path=tmp_path, rtol=2e-2, atol=2e-2)


# -- RDFT / IRDFT ----------------------------------------------------------------------------------
# real shape, axes, signal_size (the CPU plugin rejects a size above the input's in RDFT)
REAL_CASES: list[tuple[tuple[int, ...], list[int], list[int] | None]] = [
    ((8,), [0], None),
    ((9,), [-1], [6]),
    ((3, 4, 5), [-1], None),
    ((3, 4, 5), [0, -1], None),
    ((3, 4, 6), [1, 2], [3, 5]),
    ((3, 4, 5), [2, 1], None),
    ((3, 4, 7), [-3, 1], [2, -1]),
    ((2, 3, 4, 6), [0, 3, 1], [-1, 4, 2]),
]


@pytest.mark.parametrize("case", REAL_CASES, ids=str)
def test_rdft(case: Any, tmp_path: Path) -> None:
    shape, axes, sizes = case
    x = rand_f32(*shape)
    norm = [a + len(shape) if a < 0 else a for a in axes]
    s = (
        None
        if sizes is None
        else [shape[a] if n == -1 else n for a, n in zip(norm, sizes, strict=True)]
    )
    out = _check_keep_sizes(opset9.rdft, x, axes, sizes, s, tmp_path)
    want = np.fft.rfftn(x, s=s, axes=norm)
    np.testing.assert_allclose(out[..., 0] + 1j * out[..., 1], want, rtol=1e-4, atol=1e-4)


# complex shape (last dim 2), axes, signal_size
IRDFT_CASES: list[tuple[tuple[int, ...], list[int], list[int] | None]] = [
    ((5, 2), [0], None),
    ((5, 2), [-1], [7]),
    ((3, 4, 5, 2), [-1], None),
    ((3, 4, 5, 2), [0, 2], None),
    ((3, 4, 5, 2), [1, 2], [3, 9]),
    ((3, 4, 5, 2), [2, 1], None),
    ((3, 4, 5, 2), [-2, -3], [3, -1]),
    ((2, 3, 4, 5, 2), [0, 3], [-1, 6]),
]
# The CPU plugin (2026.4) computes garbage (NaNs, 1e29) for these IRDFTs, which zero-pad an axis
# other than the last, or resize several: ours follow the spec and OpenVINO's reference
# implementation, checked with NumPy.
IRDFT_PADDED_CASES: list[tuple[tuple[int, ...], list[int], list[int] | None]] = [
    ((3, 4, 5, 2), [-2, -3], [6, -1]),
    ((3, 4, 5, 2), [0, 1], [5, 6]),
    ((3, 4, 5, 2), [2, 1], [6, 6]),
    ((2, 3, 4, 5, 2), [0, 3, 1], [-1, 3, 6]),
    ((2, 3, 4, 5, 2), [0, 3, 1], [-1, 3, 4]),
]


@pytest.mark.parametrize("case", IRDFT_CASES + IRDFT_PADDED_CASES, ids=str)
def test_irdft(case: Any, tmp_path: Path) -> None:
    shape, axes, sizes = case
    x = rand_f32(*shape)  # not Hermitian: the imaginary parts of DC and Nyquist bins are dropped
    rank = len(shape) - 1
    norm = [a + rank if a < 0 else a for a in axes]
    s = None
    if sizes is not None:
        s = [n if n != -1 else shape[a] for a, n in zip(norm[:-1], sizes[:-1], strict=True)]
        s.append(sizes[-1] if sizes[-1] != -1 else 2 * (shape[norm[-1]] - 1))
    if case in IRDFT_PADDED_CASES:
        out = _ours(opset9.irdft, x, axes, sizes, tmp_path)
    else:
        out = _check_keep_sizes(opset9.irdft, x, axes, sizes, s, tmp_path)
    want = np.fft.irfftn(x[..., 0] + 1j * x[..., 1], s=s, axes=norm)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_rdft_irdft_on_unknown_shapes(tmp_path: Path) -> None:
    check(
        lambda p: opset9.rdft(p, const([0, 1])),
        rand_f32(4, 6),
        tmp_path=tmp_path,
        dynamic=True,
        **TOL,
    )
    check(
        lambda p: opset9.irdft(p, const([1]), const([6])),
        rand_f32(3, 4, 2),
        tmp_path=tmp_path,
        dynamic=True,
        **TOL,
    )


# -- STFT ------------------------------------------------------------------------------------------
# signal shape, window length, frame_size, frame_step
STFT_CASES = [
    ((32,), 8, 8, 4),
    ((2, 40), 16, 16, 5),
    ((3, 33), 5, 9, 3),
    ((1, 48), 6, 12, 12),
    ((2, 20), 7, 7, 1),
]


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("case", STFT_CASES, ids=str)
def test_stft(case: Any, transpose: bool, tmp_path: Path) -> None:
    shape, window, size, step = case
    x, w = rand_f32(*shape), rand_f32(window)
    check(
        lambda p, q: opset15.stft(p, q, const(size), const(step), transpose),
        x,
        w,
        tmp_path=tmp_path,
        **TOL,
    )


def test_stft_int32_sizes_and_constant_window(tmp_path: Path) -> None:
    window = np.hanning(10).astype(np.float32)
    check(
        lambda p: opset15.stft(
            p, ops.constant(window), const(10, np.int32), const(3, np.int32), False
        ),
        rand_f32(2, 30),
        tmp_path=tmp_path,
        **TOL,
    )


# -- ISTFT -----------------------------------------------------------------------------------------
# batch (0: none), frames, window length, frame_size, frame_step
ISTFT_CASES = [
    (0, 7, 8, 8, 4),
    (2, 6, 16, 16, 4),
    (3, 5, 6, 9, 3),
    (1, 4, 5, 12, 6),
    (2, 9, 7, 7, 2),
]


def _istft_input(batch: int, frames: int, size: int) -> Array:
    bins = size // 2 + 1
    return rand_f32(*((batch,) if batch else ()), bins, frames, 2)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("case", ISTFT_CASES, ids=str)
def test_istft(case: Any, center: bool, normalized: bool, tmp_path: Path) -> None:
    batch, frames, window, size, step = case
    # A window well away from 0, so the division by its overlap-added square is well-conditioned.
    w = (np.abs(rand_f32(window)) + 0.5).astype(np.float32)
    check(
        lambda p, q: opset16.istft(p, q, const(size), const(step), center, normalized),
        _istft_input(batch, frames, size),
        w,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("length", [5, 20, 26, 31, 45])
@pytest.mark.parametrize("center", [False, True])
def test_istft_signal_length(length: int, center: bool, tmp_path: Path) -> None:
    w = np.hanning(8).astype(np.float32) + 0.1
    x = _istft_input(2, 7, 8)
    check(
        lambda p: opset16.istft(
            p, ops.constant(w), const(8), const(3), center, False, const(length)
        ),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("length", [0, -1])
def test_istft_non_positive_signal_length_is_the_default(length: int, tmp_path: Path) -> None:
    # OpenVINO's reference takes a signal_length <= 0 as absent; its CPU plugin crashes on it
    # (2026.4: "free(): invalid next size"), so the plugin runs the layer without one.
    w = np.hanning(8).astype(np.float32) + 0.1
    x = _istft_input(2, 7, 8)
    want = check(
        lambda p: opset16.istft(p, ops.constant(w), const(8), const(3), True, False),
        x,
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-4,
    )
    p = ops.parameter(x.shape, np.float32, name="x0")
    layer = opset16.istft(p, ops.constant(w), const(8), const(3), True, False, const(length))
    path = save_ir([layer], [p], tmp_path / "given")
    got = tl.load(path).run({"x0": x})
    np.testing.assert_allclose(
        next(iter(got.values())), next(iter(want.values())), rtol=1e-6, atol=1e-6
    )


def test_istft_signal_length_at_run_time(tmp_path: Path) -> None:
    w = np.hanning(8).astype(np.float32) + 0.1
    x = _istft_input(2, 7, 8)
    for length in (17, 40):
        check(
            lambda p, n: opset16.istft(p, ops.constant(w), const(8), const(2), True, True, n),
            x,
            np.array(length, np.int64),
            tmp_path=tmp_path,
            rtol=1e-4,
            atol=1e-4,
        )


def test_istft_zero_window_envelope(tmp_path: Path) -> None:
    # Zeros at the window's ends leave samples no frame covers: OpenVINO writes 0 there.
    w = np.array([0, 0.5, 1, 0.5, 0], np.float32)
    check(
        lambda p: opset16.istft(p, ops.constant(w), const(6), const(3), False, False),
        _istft_input(1, 5, 6),
        tmp_path=tmp_path,
        rtol=1e-4,
        atol=1e-4,
    )


def test_istft_inverts_stft(tmp_path: Path) -> None:
    x = rand_f32(2, 64)
    w = np.hanning(16).astype(np.float32) + 0.05
    p = ops.parameter(x.shape, np.float32, name="x0")
    spectrum = opset15.stft(p, ops.constant(w), const(16), const(4), True)
    back = opset16.istft(spectrum, ops.constant(w), const(16), const(4), False, False)
    got = run_path(save_ir([back], [p], tmp_path), {"x0": x}, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(next(iter(got.values())), x, rtol=1e-4, atol=1e-4)


# -- errors ----------------------------------------------------------------------------------------
def test_non_constant_axes_are_rejected(tmp_path: Path) -> None:
    p = ops.parameter([3, 4, 2], np.float32, name="x0")
    axes = ops.parameter([1], np.int64, name="axes")
    path = save_ir([opset7.dft(p, axes)], [p, axes], tmp_path)
    with pytest.raises(FormatError, match=r"axes\) must be a constant"):
        tl.load(path)


def test_bad_axes_are_rejected(tmp_path: Path) -> None:
    p = ops.parameter([3, 4, 2], np.float32, name="x0")
    path = save_ir([opset7.dft(p, const([0, 1]))], [p], tmp_path)
    # The axes constant [0, 1] is all the weights hold: make it repeat an axis.
    weights = path.with_suffix(".bin")
    assert np.frombuffer(weights.read_bytes(), np.int64).tolist() == [0, 1]
    weights.write_bytes(np.array([0, 0], np.int64).tobytes())
    with pytest.raises(FormatError, match="repeat an axis"):
        tl.load(path)


def test_stft_istft_on_unknown_shapes(tmp_path: Path) -> None:
    w = np.hanning(8).astype(np.float32) + 0.1
    check(
        lambda p: opset15.stft(p, ops.constant(w), const(8), const(3), True),
        rand_f32(2, 30),
        tmp_path=tmp_path,
        dynamic=True,
        **TOL,
    )
    for center in (False, True):
        check(
            lambda p, c=center: opset16.istft(p, ops.constant(w), const(8), const(3), c, True),
            _istft_input(2, 6, 8),
            tmp_path=tmp_path,
            dynamic=True,
            rtol=1e-4,
            atol=1e-4,
        )


# -- the writer: DFT and STFT ----------------------------------------------------------------------


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


WRITTEN_STFT_CASES = {
    # name: (signal length, frame_step, window length or None, frame_length or None)
    "window": (16, 4, 8, None),
    "both": (17, 3, 6, 6),
    "length-only": (12, 2, None, 5),
    "whole": (10, 1, None, None),
}


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(DFT_CASES))
def test_writer_dft(name: str, tmp_path: Path) -> None:
    last, inverse, onesided, length, axis = DFT_CASES[name]
    x = rand_f32(4, 6, last, rng=RNG)
    p = ph("x", x)
    ins = [p, None if length is None else tl_const(length), tl_const(axis)]
    y = emit("DFT", ins, {"inverse": inverse, "onesided": onesided})
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("name", sorted(WRITTEN_STFT_CASES))
def test_writer_stft(name: str, tmp_path: Path) -> None:
    size, step, window, length = WRITTEN_STFT_CASES[name]
    x = rand_f32(2, size, 1, rng=RNG)
    feeds = {"x": x}
    ins = [ph("x", x), tl_const(step), None, None if length is None else tl_const(length)]
    if window is not None:
        w = np.hanning(window).astype(np.float32)
        ins[2], feeds["w"] = ph("w", w), w
    y = emit("STFT", ins)
    written_runs_alike(tl.Model({"y": y}), feeds, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("case", ["complex", "two-sided"])
def test_writer_stft_refused(case: str, tmp_path: Path) -> None:
    x = rand_f32(1, 8, 2 if case == "complex" else 1, rng=RNG)
    y = emit(
        "STFT", [ph("x", x), tl_const(2), None, tl_const(4)], {"onesided": int(case == "complex")}
    )
    with pytest.raises(tl.FormatError, match="OpenVINO's STFT"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dft_unknown_dims(tmp_path: Path) -> None:
    """Unknown batch and signal lengths; the default axis (-2)."""
    x, c = rand_f32(3, 8, 1, rng=RNG), rand_f32(2, 5, 2, rng=RNG)
    p, q = ph("x", x, ("N", "L", 1)), ph("c", c, ("N", "L", 2))
    outs = {
        "rfft": emit("DFT", [p], {"onesided": 1}),
        "fft": emit("DFT", [q]),
        "ifft_n": emit("DFT", [q, tl_const(6)], {"inverse": 1}),
        "irfft_n": emit("DFT", [q, tl_const(6)], {"inverse": 1, "onesided": 1}),
    }
    written_runs_alike(tl.Model(outs), {"x": x, "c": c}, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_dft_computed_length_refused(tmp_path: Path) -> None:
    c, n = rand_f32(2, 5, 2, rng=RNG), np.array(6, np.int64)
    y = emit("DFT", [ph("c", c), ph("n", n)], {"inverse": 1, "onesided": 1})
    with pytest.raises(tl.FormatError, match="dft_length must be a constant"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_stft_unknown_length(tmp_path: Path) -> None:
    x = rand_f32(2, 20, 1, rng=RNG)
    w = np.hamming(6).astype(np.float32)
    y = emit("STFT", [ph("x", x, ("N", "L", 1)), tl_const(3), tl.constant(w)])
    written_runs_alike(tl.Model({"y": y}), {"x": x}, tmp_path, rtol=1e-4, atol=1e-4)
