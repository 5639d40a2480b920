"""Core control flow written as OpenVINO layers: Loop as Loop-5 and If as If-8, with bodies."""

from __future__ import annotations

import numpy as np

from ...ir.branch import If
from ...ir.graph import Graph, Value
from ...ir.loop import Loop
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .document import Array, Branch, Layer, PortMapEntry
from .write_net import (
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    binary,
    convert,
    dim_of,
    insert_unit,
    lower,
    outputs_of,
    reverse,
    scalar,
)


def _entry(external: int, layer: Layer, axis: int | None = None) -> PortMapEntry:
    """A port map rule; one with an axis slices or concatenates a part of 1 per iteration."""
    if axis is None:
        return PortMapEntry(external, layer.id)
    return PortMapEntry(external, layer.id, axis=axis, start=0, end=-1, stride=1, part_size=1)


def _loop(net: NetBuilder, call: Call) -> list[Tensor]:
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

    sub = NetBuilder(net.file, f"{name}/body")
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
    known = {inv.param: t.value for inv, t in zip(loop.invariants, invariants, strict=True)}
    args = _constants_inside(sub, body.inputs, args, known)
    results = loop.counts.split_results(lower(sub, body, args))
    sub.scope = name
    cond_result = sub.result(results.continue_condition)
    carried_results = [sub.result(_own_buffer(sub, y)) for y in results.carried]
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
    external = iter(range(2, len(layer.inputs)))
    for prm, res in zip(carried_params, carried_results, strict=True):
        layer.input_map.append(_entry(next(external), prm.layer))
        layer.back_edges.append((res.id, prm.layer.id))
    for prm, a in zip(slice_params, axes, strict=True):
        layer.input_map.append(_entry(next(external), prm.layer, a))
    for prm in invariant_params:
        layer.input_map.append(_entry(next(external), prm.layer))
    layer.input_map.append(PortMapEntry(-1, iteration.layer.id, purpose="current_iteration"))
    outputs = iter(range(len(layer.inputs), len(layer.inputs) + len(layer.outputs)))
    for res in carried_results:
        layer.output_map.append(_entry(next(outputs), res))
    for res, a in stacked_results:
        layer.output_map.append(_entry(next(outputs), res, a))
    layer.output_map.append(PortMapEntry(-1, cond_result.id, purpose="execution_condition"))
    layer.body = sub.net
    finals, stacks = loop.counts.split_outputs(outputs_of(layer, call.outs))
    for j, ((_, a), st) in enumerate(zip(stacked_results, loop.stacked, strict=True)):
        if trip.value is None:
            # The CPU plugin (2026.4) gives a Loop that runs zero times by a trip count known
            # only at run time the stacked outputs of the request's previous run: cut them to
            # the trips (a no-op wherever it stacks as it should).
            stop = net.op(
                "Reshape", [trip, net.ints([1])], TensorType(DType.int64, (1,)), special_zero=False
            )
            cut = [stacks[j], net.ints([0]), stop, net.ints([1]), net.ints([a])]
            stacks[j] = net.op("Slice", cut, stacks[j].type, "opset8")
        if st.spec.reverse:
            stacks[j] = reverse(net, stacks[j], a)
    return [*finals, *stacks]


def _constants_inside(
    sub: NetBuilder, params: list[Value], args: list[Tensor], known: dict[Value, Array | None]
) -> list[Tensor]:
    """``args``, with each parameter whose outer value is a constant read as a Const of the
    body's own (the parameter stays, unread): the body's layers then see the constant and fold
    what they compute from it. The CPU plugin (2026.4) moves a constant into each body that
    reads it and packs a constant's weights once for every MatMul over it, transposed or not:
    the forward reads ``x @ w`` and the backward ``d @ w.T`` from one constant, and one of them
    multiplies by the wrong matrix (docs/openvino.md). Written in the bodies, the weights reach
    each MatMul as the bytes it multiplies by, untransposed."""
    out = []
    for v, arg in zip(params, args, strict=True):
        value = known.get(v)
        out.append(arg if value is None else sub.const(value))
    return out


def _own_buffer(sub: NetBuilder, y: Tensor) -> Tensor:
    """``y`` copied to a buffer of its own for its back edge. The CPU plugin (2026.4) computes
    elementwise layers in place, and a carried value computed in place from a slice's buffer
    (``slice + h``) comes back as the next iteration's slice: ``max(y, y)`` (``y | y`` for bool),
    which it neither folds nor runs in place, is ``y`` bit for bit (NaN and -0 included)."""
    if y.layer.type == "Parameter" or y.type.dtype == DType.string:
        return y
    if y.type.dtype == DType.bool:
        return sub.op("LogicalOr", [y, y], y.type)
    return sub.op("Maximum", [y, y], y.type)


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
    if trip is not None and trip.value is not None and int(trip.value) >= 2**31 - 1:
        # PyTorch's exporter writes 2**63 - 1 for "no bound": the CPU plugin (which counts trips
        # in int32) may size the stacked outputs for that many trips. Unbounded is the same loop.
        trip = None
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


def _if(net: NetBuilder, call: Call) -> list[Tensor]:
    view = If(call.node)
    layer = net.add(
        "If",
        [_present(t) for t in call.ins],
        call.outs,
        "opset8",
        name=view.name or net.scope,
    )
    layer.then_branch = _branch(net, call, view.then_branch, layer, "then")
    layer.else_branch = _branch(net, call, view.else_branch, layer, "else")
    return outputs_of(layer, call.outs)


def _branch(net: NetBuilder, call: Call, graph: Graph, layer: Layer, tag: str) -> Branch:
    """One branch of an If layer. External ports: the condition is input 0, the captured values
    follow, the outputs come after the inputs."""
    sub = NetBuilder(net.file, f"{layer.name}/{tag}_body")
    params = [sub.parameter(_param_type(call, v), v.name) for v in graph.inputs]
    known = {v: _present(t).value for v, t in zip(graph.inputs, call.ins[1:], strict=True)}
    args = _constants_inside(sub, graph.inputs, params, known)
    results = [sub.result(t) for t in lower(sub, graph, args)]
    return Branch(
        sub.net,
        [_entry(1 + i, p.layer) for i, p in enumerate(params)],
        [_entry(len(layer.inputs) + j, r) for j, r in enumerate(results)],
    )


EMITTERS: dict[str, Emitter] = {"Loop": _loop, "If": _if}
"""Emitters of this family, by core op name."""
