"""``tl.save(model, "m.xml")``: OpenVINO IR v11 (``m.xml`` + ``m.bin``), core ops and loops."""

from __future__ import annotations

import os
from typing import Any

from ...errors import FormatError
from ...ir.graph import Graph
from ...model import Model
from ...passes import lower_sequences
from ...tensor.types import SequenceType, TensorType
from .families import EMITTERS
from .write_net import IR_VERSION, Emitter, File, NetBuilder, Tensor, lower

__all__ = ["IR_VERSION", "write_openvino"]

_PLUMBING: dict[str, Emitter] = {
    "Constant": lambda net, call: [net.const(call.attrs["value"])],
    "Identity": lambda net, call: [call.arg(0)],  # no layer: the value passes straight through
    # OpenVINO has no assertion: the checked values pass through (docs/network.md)
    "Check": lambda net, call: [call.arg(i) for i in range(1, len(call.ins))],
}
"""The ops of no op family: a constant, and values that pass through without a layer."""

_EMITTERS: dict[str, Emitter] = {**EMITTERS, **_PLUMBING}
"""How each op is written (tests check that every one is covered)."""


def write_openvino(
    model: Model, path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None
) -> None:
    """Write ``model`` as OpenVINO IR: ``path`` (XML) and its weights (``.bin`` beside it)."""
    graph = _without_sequences(model.graph)
    top = NetBuilder(File(graph, _EMITTERS), graph.name, top=True)
    params: list[Tensor] = []
    for v in graph.inputs:
        if not isinstance(v.type, TensorType):
            raise FormatError(f"input '{v.name}' is {v.type}; OpenVINO IR holds tensors only")
        params.append(top.parameter(v.type, v.name))
        top.name_tensor(params[-1], v.name)
    outs = lower(top, graph, params)
    for v, t in zip(graph.outputs, outs, strict=True):
        if v.name in t.port.names:
            # An input passed through, or a value listed twice under one name: the Result reads
            # the named tensor, as OpenVINO's own IR does.
            top.result(t)
            continue
        if t.port.names:
            # The tensor already carries an input's or another output's name; a same-type Convert
            # gives this output a tensor of its own to name.
            top.scope = v.name
            t = _convert_copy(top, t)
        top.name_tensor(t, v.name)
        top.result(t)
    top.net.save(path, bin_path)


def _without_sequences(graph: Graph) -> Graph:
    """``graph``, or a copy with the sequences ``lower_sequences`` can prove to be tensors made
    tensors (IR has no sequences; what is left is refused by the op that makes it)."""
    if not any(isinstance(o.type, SequenceType) for _, n in graph.walk() for o in n.outputs):
        return graph
    return lower_sequences(graph.clone()).graph


def _convert_copy(net: NetBuilder, t: Tensor) -> Tensor:
    return net.op("Convert", [t], t.type, destination_type=t.type.dtype)


def save_file(model: Model, path: str | os.PathLike[str], **options: Any) -> None:
    unknown = sorted(set(options) - {"bin_path"})
    if unknown:
        listed = ", ".join(unknown)
        raise FormatError(f"{path}: unknown option(s) {listed}; saving OpenVINO IR takes bin_path")
    try:
        write_openvino(model, path, options.get("bin_path"))
    except FormatError as exc:
        raise FormatError(f"{path}: {exc}") from None
