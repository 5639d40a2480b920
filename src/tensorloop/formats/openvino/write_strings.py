"""Core string and sparse ops written as OpenVINO layers (StringTensorUnpack-15,
StringTensorPack-15, SparseFillEmptyRows-16, each the same-named layer); merged into
``write_ops.OP_EMITTERS``."""

from __future__ import annotations

from .write_net import Call, Emitter, NetBuilder, Tensor


def _same(type_: str, version: str) -> Emitter:
    """The same-named layer, with the core op's inputs in order and no attributes."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        return net.layer(type_, [call.arg(i) for i in range(len(call.ins))], call.outs, version)

    return emit


EMITTERS: dict[str, Emitter] = {
    "StringTensorUnpack": _same("StringTensorUnpack", "opset15"),
    "StringTensorPack": _same("StringTensorPack", "opset15"),
    "SparseFillEmptyRows": _same("SparseFillEmptyRows", "opset16"),
}
