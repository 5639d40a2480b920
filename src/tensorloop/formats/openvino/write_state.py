"""Core variable ops written as OpenVINO state layers: ReadValue-6 and Assign-6, top level only;
a variable the model never assigns is a Const."""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import DType
from .write_net import Call, Emitter, NetBuilder, Tensor, shape_text


def _read_variable(net: NetBuilder, call: Call) -> list[Tensor]:
    name: str = call.attrs["variable"]
    if name in net.file.read_only:
        return [_read_only(net, name)]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    if name in net.file.assigned:
        raise call.error(
            f"reads variable '{name}' after assigning it; OpenVINO's ReadValue would see the "
            "value from before the run"
        )
    return [_read_value(net, name)]


def _read_only(net: NetBuilder, name: str) -> Tensor:
    """A variable the model never assigns, as a Const (in any net): what the ONNX writer makes
    an initializer. As state it would not run: OpenVINO's CPU plugin (2026.4) runs no ReadValue
    without an Assign, and with one, a MatMul whose weights come from a ReadValue with a
    constant initial value reads uninitialised memory (docs/openvino.md)."""
    key = (id(net), name)
    if key not in net.file.constants:
        net.file.constants[key] = net.const(net.file.root.variables[name].initial)
    return net.file.constants[key]


def _read_value(net: NetBuilder, name: str) -> Tensor:
    if name not in net.file.read_values:
        var = net.file.root.variables[name]
        t = var.type
        # OpenVINO starts a variable without an init input at zeros. Leaving the input out then
        # also dodges a CPU plugin bug: an i64 ReadValue with an init input fails to compile.
        init = [net.const(var.initial)] if np.any(var.initial) else []
        net.file.read_values[name] = net.op(
            "ReadValue",
            init,
            t,
            "opset6",
            variable_id=name,
            variable_type=t.dtype,
            variable_shape=shape_text(t),
        )
    return net.file.read_values[name]


def _assign(net: NetBuilder, call: Call) -> list[Tensor]:
    name: str = call.attrs["variable"]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    # OpenVINO learns a variable from its ReadValue, so one must exist.
    read = _read_value(net, name)
    net.file.assigned.add(name)
    value = call.arg(0)
    if value.value is not None:
        # OpenVINO's CPU plugin (2026.4) ignores an Assign of a constant: the variable keeps its
        # value. Selected by a condition on the variable itself, the constant is assigned.
        same = net.op("Equal", [read, read], read.type.with_dtype(DType.bool))
        value = net.op("Select", [same, value, value], value.type)
    net.add("Assign", [value], [], "opset6", variable_id=name)
    return []


EMITTERS: dict[str, Emitter] = {
    "ReadVariable": _read_variable,
    "Assign": _assign,
}
"""Emitters of this family, by core op name."""
