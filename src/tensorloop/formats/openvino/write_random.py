"""Core random ops written as OpenVINO layers: PhiloxUniform as RandomUniform-8, PhiloxMultinomial
as Multinomial-13, with their seeds, so OpenVINO draws the same words (docs/openvino.md says
where its CPU plugin converts them otherwise)."""

from __future__ import annotations

from .write_net import Call, Emitter, NetBuilder, Tensor


def _random_uniform(net: NetBuilder, call: Call) -> list[Tensor]:
    ins = [call.arg(0), call.arg(1), call.arg(2)]
    attrs = call.attrs
    layer = net.op(
        "RandomUniform",
        ins,
        call.out,
        "opset8",
        output_type=call.out.dtype,
        global_seed=attrs["global_seed"],
        op_seed=attrs["op_seed"],
        alignment=attrs["alignment"],
    )
    return [layer]


def _multinomial(net: NetBuilder, call: Call) -> list[Tensor]:
    attrs = call.attrs
    layer = net.op(
        "Multinomial",
        [call.arg(0), call.arg(1)],
        call.out,
        "opset13",
        convert_type=attrs["convert_type"],
        with_replacement=bool(attrs["with_replacement"]),
        log_probs=bool(attrs["log_probs"]),
        global_seed=attrs["global_seed"],
        op_seed=attrs["op_seed"],
    )
    return [layer]


EMITTERS: dict[str, Emitter] = {
    "PhiloxUniform": _random_uniform,
    "PhiloxMultinomial": _multinomial,
}
"""Emitters of this family, by core op name."""
