"""Core signal ops written as OpenVINO layers: DFT (as DFT, IDFT, RDFT or IRDFT) and STFT."""

from __future__ import annotations

import numpy as np

from ...ops.signal import dft_axis
from .write_net import Call, Emitter, NetBuilder, Tensor, const_int, dim_of, scalar


def _dft(net: NetBuilder, call: Call) -> list[Tensor]:
    """DFT along one axis as DFT/IDFT (complex in and out), RDFT (onesided forward, real in) or
    IRDFT (onesided inverse, real out); OpenVINO's complex tensors end in a dim of 2 as ours."""
    x, length, axis_in = call.arg(0), call.opt(1), call.opt(2)
    rank = x.rank
    if rank is None:
        raise call.error("DFT needs an input of known rank for OpenVINO IR")
    axis = -2 if axis_in is None else const_int(call, axis_in, "axis")
    try:
        a = dft_axis(axis, rank)
    except ValueError as exc:
        raise call.error(str(exc)) from None
    last = None if x.type.shape is None else x.type.shape[-1]
    if not isinstance(last, int):
        raise call.error("DFT needs the input's last dim (1 real, 2 complex) known")
    inverse, onesided = bool(call.attrs["inverse"]), bool(call.attrs["onesided"])
    ins = [net.ints([a])]
    if length is not None:
        # OpenVINO's CPU plugin cannot compile an IRDFT whose signal_size is computed.
        ins.append(net.ints([const_int(call, length, "dft_length")]))
    shape = x.type.shape
    assert shape is not None
    if onesided and not inverse:
        real = x.type.with_shape(shape[:-1])
        x = net.op("Squeeze", [x, net.ints([rank - 1])], real)
        return [net.op("RDFT", [x, *ins], call.out, "opset9")]
    if onesided:
        flat = call.out.with_shape(None if call.out.shape is None else call.out.shape[:-1])
        y = net.op("IRDFT", [x, *ins], flat, "opset9")
        return [net.op("Unsqueeze", [y, net.ints([rank - 1])], call.out)]
    if last == 1:  # real input: a zero imaginary part
        zeros = np.zeros(rank, np.int64)
        pads_end = zeros.copy()
        pads_end[-1] = 1
        x = net.op(
            "Pad",
            [x, net.const(zeros), net.const(pads_end), net.const(0, x.type.dtype)],
            x.type.with_shape((*shape[:-1], 2)),
            "opset12",
            pad_mode="constant",
        )
    return [net.op("IDFT" if inverse else "DFT", [x, *ins], call.out, "opset7")]


def _stft(net: NetBuilder, call: Call) -> list[Tensor]:
    """STFT of a real signal [B, L, 1], onesided, as STFT-15 over [B, L] (frames first)."""
    x, step, window, length = call.arg(0), call.arg(1), call.opt(2), call.opt(3)
    shape = x.type.shape
    if shape is None or shape[-1] != 1:
        raise call.error(
            "OpenVINO's STFT takes a real signal only: the input's last dim must be known as 1"
        )
    if not call.attrs["onesided"]:
        raise call.error("OpenVINO's STFT gives the one-sided spectrum only (onesided=1)")
    dt = x.type.dtype
    if length is None:
        length = dim_of(net, window, 0) if window is not None else dim_of(net, x, 1)
    frame_size = scalar(net, length)
    if window is None:
        if frame_size.value is None:
            raise call.error("STFT without a window needs a constant frame_length")
        window = net.const(np.ones(int(frame_size.value), dt.numpy))
    signal = net.op("Squeeze", [x, net.ints([2])], x.type.with_shape(shape[:-1]))
    ins = [signal, window, frame_size, scalar(net, step)]
    return [net.op("STFT", ins, call.out, "opset15", transpose_frames=False)]


EMITTERS: dict[str, Emitter] = {
    "DFT": _dft,
    "STFT": _stft,
}
"""Emitters of this family, by core op name."""
