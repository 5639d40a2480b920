"""The OpenVINO lowering of the canonical Loop and If: Loop-5 and If-8 with their bodies."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

from ...ir.branch import If
from ...ir.graph import Value
from ...ir.loop import Loop
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .write_net import (
    Call,
    Layer,
    NetBuilder,
    Tensor,
    binary,
    convert,
    dim_of,
    insert_unit,
    lower,
    reverse,
    scalar,
)


def _map_entry(parent: ET.Element, tag: str, external: int, layer: Layer, **extra: Any) -> None:
    attrs = {"external_port_id": str(external), "internal_layer_id": str(layer.id)}
    attrs.update({k: str(v) for k, v in extra.items()})
    ET.SubElement(parent, tag, attrs)


def _concat_axis(axis: int) -> dict[str, int]:
    return {"axis": axis, "start": 0, "end": -1, "stride": 1, "part_size": 1}


def emit_loop(net: NetBuilder, call: Call) -> list[Tensor]:
    """The canonical Loop as Loop-5: its sliced inputs keep a unit axis and its concatenated
    outputs join on an existing one, so the body squeezes the first and unsqueezes the second;
    reversed slicing and stacking reverse outside the loop."""
    loop, name = Loop(call.node), call.node.name or net.scope
    body = loop.body
    ins = loop.counts.split_inputs(call.ins)
    carried = [_present(t) for t in ins.carried]
    invariants = [_present(t) for t in ins.invariants]
    sources: list[Tensor] = []
    unit_axes: dict[Value, int] = {}  # each slice's parameter: the unit axis it keeps
    for j, (s, src) in enumerate(zip(loop.sliced, map(_present, ins.sources), strict=True)):
        rank = src.rank if src.rank is not None else _rank_plus_one(s.param)
        unit_axes[s.param] = call.normalize_axis(s.spec.axis, rank, f"sliced #{j} axis")
        sources.append(reverse(net, src, unit_axes[s.param]) if s.spec.reverse else src)
    axes = list(unit_axes.values())
    trip = _trip_count(
        net, ins.max_trip_count, [dim_of(net, s, a) for s, a in zip(sources, axes, strict=True)]
    )
    first = ins.initial_condition
    cond = first if first is not None else net.const(np.bool_(True))

    sub = NetBuilder(net.file)
    sub.scope = name  # for the layers written here; lower names the body's own after its nodes
    types = [_param_type(call, v) for v in body.inputs]
    params = [
        sub.parameter(insert_unit(t, unit_axes[v]) if v in unit_axes else t, v.name)
        for t, v in zip(types, body.inputs, strict=True)
    ]
    args = [
        sub.op("Squeeze", [prm, sub.ints([unit_axes[v]])], t) if v in unit_axes else prm
        for prm, t, v in zip(params, types, body.inputs, strict=True)
    ]
    results = loop.counts.split_results(lower(sub, body, args))
    sub.scope = name
    cond_result = sub.result(results.continue_condition)
    carried_results = [sub.result(y) for y in results.carried]
    stacked_results: list[tuple[Layer, int]] = []
    for j, (y, st) in enumerate(zip(results.per_iteration, loop.stacked, strict=True)):
        a = call.normalize_axis(st.spec.axis, _rank_plus_one(st.result), f"stacked #{j} axis")
        stacked_results.append(
            (sub.result(sub.op("Unsqueeze", [y, sub.ints([a])], insert_unit(y.type, a))), a)
        )

    layer = net.add(
        "Loop",
        [trip, cond, *carried, *sources, *invariants],
        call.outs,
        "opset5",
        name=name,
    )
    iteration, carried_params, slice_params, invariant_params = loop.counts.split_params(params)
    port_map, back_edges = ET.Element("port_map"), ET.Element("back_edges")
    external = iter(range(2, len(layer.inputs)))
    for prm, res in zip(carried_params, carried_results, strict=True):
        _map_entry(port_map, "input", next(external), prm.layer)
        ET.SubElement(
            back_edges, "edge", {"from-layer": str(res.id), "to-layer": str(prm.layer.id)}
        )
    for prm, a in zip(slice_params, axes, strict=True):
        _map_entry(port_map, "input", next(external), prm.layer, **_concat_axis(a))
    for prm in invariant_params:
        _map_entry(port_map, "input", next(external), prm.layer)
    outputs = iter(range(len(layer.inputs), len(layer.inputs) + len(layer.outputs)))
    for res in carried_results:
        _map_entry(port_map, "output", next(outputs), res)
    for res, a in stacked_results:
        _map_entry(port_map, "output", next(outputs), res, **_concat_axis(a))
    _map_entry(port_map, "input", -1, iteration.layer, purpose="current_iteration")
    _map_entry(port_map, "output", -1, cond_result, purpose="execution_condition")
    layer.maps += [port_map, back_edges]
    layer.bodies.append(sub.element("body"))
    finals, stacks = loop.counts.split_outputs([layer.out(i) for i in range(len(layer.outputs))])
    for j, ((_, a), st) in enumerate(zip(stacked_results, loop.stacked, strict=True)):
        if st.spec.reverse:
            stacks[j] = reverse(net, stacks[j], a)
    return [*finals, *stacks]


def _present(t: Tensor | None) -> Tensor:
    assert t is not None, "the verifier guarantees required inputs"
    return t


def _rank_plus_one(v: Value) -> int | None:
    """The rank of ``v`` with the loop's axis back in (a slice's source, a stack's result)."""
    t = v.type
    return None if not isinstance(t, TensorType) or t.rank is None else t.rank + 1


def _trip_count(net: NetBuilder, trip: Tensor | None, lengths: list[Tensor]) -> Tensor:
    """Loop-5's trip count: the least of max_trip_count and the sliced lengths. A negative
    max_trip_count means no trips in tensorloop but "unbounded" (-1) in OpenVINO: clamp it."""
    bounds = list(lengths)
    if trip is not None:
        t = scalar(net, convert(net, trip, DType.int64))
        bounds.insert(0, binary(net, "Maximum", t, net.ints(0), np.maximum))
    if not bounds:
        return net.ints(-1)
    acc = bounds[0]
    for b in bounds[1:]:
        acc = binary(net, "Minimum", acc, b, np.minimum)
    return acc


def _param_type(call: Call, v: Value) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise call.error(f"body parameter %{v.name} is {v.type}; OpenVINO IR holds tensors only")
    return v.type


def emit_if(net: NetBuilder, call: Call) -> list[Tensor]:
    view = If(call.node)
    layer = net.add(
        "If",
        [_present(t) for t in call.ins],
        call.outs,
        "opset8",
        name=view.name or net.scope,
    )
    # External ports: the condition is input 0, the captured values follow, outputs come after.
    for tag, branch in (("then", view.then_branch), ("else", view.else_branch)):
        sub = NetBuilder(net.file)
        params = [sub.parameter(_param_type(call, v), v.name) for v in branch.inputs]
        results = [sub.result(t) for t in lower(sub, branch, params)]
        port_map = ET.Element(f"{tag}_port_map")
        for i, p in enumerate(params):
            _map_entry(port_map, "input", 1 + i, p.layer)
        for j, res in enumerate(results):
            _map_entry(port_map, "output", len(layer.inputs) + j, res)
        layer.maps.append(port_map)
        layer.bodies.append(sub.element(f"{tag}_body"))
    return [layer.out(i) for i in range(len(layer.outputs))]
