"""OpenVINO control flow read as the canonical Loop and If: TensorIterator-1, Loop-5 and If-8.

Each follows its spec exactly.

Sliced inputs keep their axis in OpenVINO (a part of ``part_size`` elements), so the source is
first split along that axis into ``(n, part_size)`` and the canonical loop slices the ``n`` axis;
the body then sees ``part_size`` on the original axis, as the spec says. Concatenated outputs are
stacked on a new axis and merged back. Sub-ranges (``start``/``end``) and strides other than
``±part_size`` become a Gather of the chosen parts before the loop.

If-8 has the condition on input port 0 and data on the ports after it; each branch body
(``<then_body>``, ``<else_body>``) has its own Parameters, fed through its port map
(``<then_port_map>``: ``input external_port_id -> internal_layer_id``), and its own Results,
mapped to the layer's output ports. A branch may leave any data input unused. The core If
passes the same captured values to both branches, so every data port becomes a parameter of
both branch graphs (unused where a branch does not read it), in port order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.branch import If
from ...ir.emit import Emitter
from ...ir.graph import Graph, Value
from ...ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ...tensor.dtypes import DType
from ...tensor.types import TensorType, normalize_axis
from .convert import LayerContext, Source, convert_net, converter
from .document import Branch, Layer, Net, PortMapEntry

__all__: list[str] = []

INT64_MAX = np.iinfo(np.int64).max


@dataclass
class _Body:
    graph: Graph
    params: dict[str, Value]
    results: dict[str, Value]


def _convert_body(ctx: LayerContext, body: Net, tag: str, name: str) -> _Body:
    """A body of this layer (its ``tag``: "body", "then_body", "else_body") as a graph named
    ``name``, with its Parameters and Results by layer id; its errors name this layer."""
    scope = f"{ctx.layer.describe()} {tag}"
    if ctx.source.scope:
        scope = f"{scope} in {ctx.source.scope}"
    inner = Source(ctx.source.path, ctx.source.weights, scope)
    graph, params, results = convert_net(body, inner, name)
    return _Body(graph, params, results)


# -- TensorIterator and Loop -----------------------------------------------------------------------
def _external_input(ctx: LayerContext, entry: PortMapEntry) -> Value:
    for index, port in enumerate(ctx.layer.inputs):
        if port.id == entry.external_port_id:
            return ctx.input(index)
    raise ctx.error(f"port_map input external_port_id={entry.external_port_id} names no input port")


def _output_index(ctx: LayerContext, entry: PortMapEntry) -> int:
    for index, port in enumerate(ctx.layer.outputs):
        if port.id == entry.external_port_id:
            return index
    raise ctx.error(
        f"port_map output external_port_id={entry.external_port_id} names no output port"
    )


def _norm_axis(ctx: LayerContext, axis: int, rank: int | None, what: str) -> int:
    if rank is None:
        if axis < 0:
            raise ctx.error(f"{what}: negative axis {axis} needs a known rank")
        return axis
    return normalize_axis(axis, rank, what, error=ctx.error)


def _split_parts(
    ctx: LayerContext, em: Emitter, source: Value, entry: PortMapEntry, axis: int
) -> tuple[Value, bool]:
    """The source reshaped to ``[..., n, part, ...]``; True if the parts run in reverse."""
    t = source.tensor_type
    assert t.shape is not None
    part = entry.part_size if entry.part_size is not None else 1
    stride = entry.stride if entry.stride is not None else 1
    if part < 1 or stride == 0:
        raise ctx.error(
            f"port_map input {entry.external_port_id}: part_size={part} and "
            f"stride={stride} must be >= 1 and non-zero"
        )
    default_start, default_end = (0, -1) if stride > 0 else (-1, 0)
    start = default_start if entry.start is None else entry.start
    end = default_end if entry.end is None else entry.end
    # Parts start ``step`` elements apart: consecutive for |stride| <= part_size (as OpenVINO's
    # shape inference counts them), every |stride|-th element beyond (the spec's "step").
    step = max(abs(stride), part)
    length = t.shape[axis]
    whole = (start, end) == (default_start, default_end) and step == part
    if whole and (part == 1 or (isinstance(length, int) and length % part == 0)):
        # The whole axis in consecutive parts: a reshape, no copy of the selection needed.
        if part == 1:
            return em.op("Unsqueeze", [source, em.ints([axis + 1])]), stride < 0
        return _reshape_around(em, source, axis, [-1, part], 1), stride < 0
    if not isinstance(length, int):
        raise ctx.error(
            f"port_map input {entry.external_port_id}: start={start}, end={end}, "
            f"stride={stride} need a static length on axis {axis}, got {t}"
        )
    for key, value in (("start", start), ("end", end)):
        if not -length <= value < length:
            raise ctx.error(
                f"port_map input {entry.external_port_id}: {key}={value} is outside axis "
                f"{axis} of length {length} (expected {-length} to {length - 1})"
            )
    first = start + length if start < 0 else start
    last = end + length if end < 0 else end  # end is inclusive in TensorIterator
    if stride > 0:
        lows = list(range(first, last - part + 2, step))
    else:
        lows = [hi - part + 1 for hi in range(first, last + part - 2, -step)]
    if any(lo < 0 or lo + part > length for lo in lows):
        raise ctx.error(
            f"port_map input {entry.external_port_id}: start={start}, end={end} "
            f"select parts outside axis {axis} of length {length}"
        )
    index = np.asarray([[lo + k for k in range(part)] for lo in lows], np.int64).reshape(-1, part)
    return em.op("Gather", [source, em.const(index)], {"axis": axis}), False


def _lower(ctx: LayerContext, is_loop: bool) -> list[Value]:
    layer: Layer = ctx.layer
    em = ctx.em
    if layer.body is None:
        raise ctx.error("has no <body>")
    body = _convert_body(ctx, layer.body, "body", f"{layer.name or layer.type}_body")
    g = body.graph
    back = dict((to, frm) for frm, to in layer.back_edges)  # Parameter id -> Result id
    for frm, to in layer.back_edges:
        if frm not in body.results or to not in body.params:
            raise ctx.error(
                f"back edge from-layer={frm} to-layer={to} must join a Result to a "
                "Parameter of this layer's body"
            )
    purposes = {e.purpose for e in (*layer.input_map, *layer.output_map) if e.purpose}
    iteration_param = next(
        (e.internal_layer_id for e in layer.input_map if e.purpose == "current_iteration"), None
    )
    condition_result = next(
        (e.internal_layer_id for e in layer.output_map if e.purpose == "execution_condition"), None
    )
    if not is_loop and purposes:
        raise ctx.error(f"port_map purposes {sorted(purposes)} belong to Loop, not TensorIterator")
    for lid in filter(None, (iteration_param,)):
        if lid not in body.params:
            raise ctx.error(f"current_iteration names layer {lid}, not a body Parameter")
    if is_loop and condition_result is None:
        raise ctx.error(
            "the port_map has no output with purpose='execution_condition'; Loop-5 needs the "
            "body's condition Result (special_body_ports body_condition_output_idx)"
        )
    if condition_result is not None and condition_result not in body.results:
        raise ctx.error(f"execution_condition names layer {condition_result}, not a body Result")

    carried: list[tuple[Value, Value, Value]] = []  # (init, param, next)
    sliced: list[tuple[Value, Value, bool, int]] = []  # (prepared source, param, reverse, axis)
    invariants: list[tuple[Value, Value]] = []
    mapped: set[str] = set()
    for entry in layer.input_map:
        if entry.purpose == "current_iteration":
            mapped.add(entry.internal_layer_id)
            continue
        param = body.params.get(entry.internal_layer_id)
        if param is None:
            raise ctx.error(
                f"port_map input names internal_layer_id={entry.internal_layer_id}, "
                "not a Parameter of the body"
            )
        if entry.internal_layer_id in mapped:
            raise ctx.error(f"body Parameter {entry.internal_layer_id} is fed twice by port_map")
        mapped.add(entry.internal_layer_id)
        outer = _external_input(ctx, entry)
        if entry.axis is not None:
            rank = outer.tensor_type.rank
            if rank is None:
                raise ctx.error(f"sliced input {entry.external_port_id} needs a known rank")
            axis = _norm_axis(ctx, entry.axis, rank, f"port_map input {entry.external_port_id}")
            if not is_loop or any(
                x is not None for x in (entry.start, entry.end, entry.stride, entry.part_size)
            ):
                prepared, reverse = _split_parts(ctx, em, outer, entry, axis)
            else:
                prepared, reverse = em.op("Unsqueeze", [outer, em.ints([axis + 1])]), False
            sliced.append((prepared, param, reverse, axis))
        elif entry.internal_layer_id in back:
            carried.append((outer, param, body.results[back[entry.internal_layer_id]]))
        else:
            invariants.append((outer, param))
    sliced = _same_lengths(ctx, em, sliced)
    loose = [lid for lid in body.params if lid not in mapped]
    if loose:
        raise ctx.error(f"body Parameter(s) {', '.join(loose)} are fed by no port_map input")
    for to in back:
        if to not in mapped:
            raise ctx.error(f"back edge target {to} has no initial value in the port_map")

    # Outputs: last values of carried results are the carried finals; other last values ride
    # along as extra carried values; concatenated ones are stacked.
    body_em = Emitter(g)
    outputs: list[tuple[str, int]] = []  # per output port: ("carried" | "stacked", index)
    stacked: list[tuple[Value, Stacked]] = []  # (body result, how it is stacked)
    extra: list[tuple[Value, Value, Value]] = []
    carried_results = {id(nxt): j for j, (_, _, nxt) in enumerate(carried)}
    out_entries = sorted(
        (e for e in layer.output_map if e.purpose != "execution_condition"),
        key=lambda e: _output_index(ctx, e),
    )
    for entry in out_entries:
        result = body.results.get(entry.internal_layer_id)
        if result is None:
            raise ctx.error(
                f"port_map output names internal_layer_id={entry.internal_layer_id}, "
                "not a Result of the body"
            )
        if entry.axis is not None:
            rank = result.tensor_type.rank
            axis = _norm_axis(ctx, entry.axis, rank, f"port_map output {entry.external_port_id}")
            stacked.append((result, Stacked(axis, reverse=(entry.stride or 1) < 0)))
            outputs.append(("stacked", len(stacked) - 1))
        elif id(result) in carried_results:
            outputs.append(("carried", carried_results[id(result)]))
        else:
            rt = result.tensor_type
            if not rt.is_static:
                raise ctx.error(
                    f"last-value output {entry.external_port_id} of a non-carried "
                    f"Result needs a static shape, got {rt}"
                )
            init = em.const(np.zeros(rt.static_shape, rt.dtype.numpy))
            param = g.add_input(f"{result.name}_last", rt)
            extra.append((init, param, result))
            outputs.append(("carried", len(carried) + len(extra) - 1))
    all_carried = [*carried, *extra]

    # Control: trip count and condition (Loop-5), or the sliced length alone (TensorIterator).
    trip: Value | None = None
    first: Value | None = None
    if is_loop:
        trip = _trip_count(ctx, em)
        first = _scalar_bool(em, ctx.input(1)) if ctx.num_inputs() > 1 else None
        if first is not None and (data := first.constant) is not None and bool(data):
            first = None
    elif not sliced:
        trip = em.ints(1)  # TensorIterator without sliced inputs runs its body once
    cond = (
        _scalar_bool(body_em, body.results[condition_result])
        if condition_result
        else body_em.const(np.bool_(True))
    )

    # The canonical body: (iteration, *carried, *slices, *invariants).
    if iteration_param is not None:
        old = body.params[iteration_param]
        iteration = g.add_input("iteration", ITERATION_TYPE)
        head = Emitter(g, anchor=g.nodes[0] if g.nodes else None)
        cast = head.op("Cast", [iteration], {"to": old.tensor_type.dtype})
        if old.tensor_type.rank not in (0, None):
            cast = head.op("Reshape", [cast, head.ints(old.tensor_type.shape or [1])])  # type: ignore[arg-type]
        old.replace_all_uses_with(cast)
    else:
        iteration = g.add_input("iteration", ITERATION_TYPE)
    g.inputs = [
        iteration,
        *(p for _, p, _ in all_carried),
        *(p for _, p, _, _ in sliced),
        *(p for _, p in invariants),
    ]
    g.set_outputs([cond, *(n for _, _, n in all_carried), *(r for r, _ in stacked)])

    loop = Loop.build(
        em,
        g,
        max_trip_count=trip,
        initial_condition=first,
        carried=[i for i, _, _ in all_carried],
        sliced=[(s, Sliced(a, r)) for s, _, r, a in sliced],
        invariants=[v for v, _ in invariants],
        stacked=[st for _, st in stacked],
    )
    finals = [c.final for c in loop.carried]
    stacks = [s.output for s in loop.stacked]
    results: list[Value] = []
    for kind, j in outputs:
        if kind == "carried":
            results.append(finals[j])
            continue
        axis = stacked[j][1].axis
        # [..., n, part, ...] -> [..., n * part, ...]: the concatenation along the axis.
        results.append(_reshape_around(em, stacks[j], axis, [-1], 2))
    return results


def _same_lengths(
    ctx: LayerContext, em: Emitter, sliced: list[tuple[Value, Value, bool, int]]
) -> list[tuple[Value, Value, bool, int]]:
    """The sliced inputs (split into parts on their axes), once they have one number of parts:
    an error now where the counts are known, else a run-time Check (OpenVINO would run the
    shortest, or read past the end)."""
    if len(sliced) < 2:
        return sliced
    counts = [src.tensor_type.shape[axis] for src, _, _, axis in sliced]  # type: ignore[index]
    static = {c for c in counts if isinstance(c, int)}
    ports = [e.external_port_id for e in ctx.layer.input_map if e.axis is not None]
    if len(static) > 1:
        detail = ", ".join(
            f"port {p}: {c}" for p, c in zip(ports, counts, strict=False) if isinstance(c, int)
        )
        raise ctx.error(f"sliced inputs give different numbers of iterations ({detail})")
    if all(isinstance(c, int) for c in counts):
        return sliced
    sizes = [
        em.op("Gather", [em.op("Shape", [src]), em.ints(axis)], {"axis": 0})
        for src, _, _, axis in sliced
    ]
    ok = em.op("Equal", [sizes[0], sizes[1]])
    for size in sizes[2:]:
        ok = em.op("And", [ok, em.op("Equal", [sizes[0], size])])
    message = (
        f"{ctx.where}: the sliced inputs on ports {', '.join(map(str, ports))} give different "
        "numbers of iterations; they must slice to one length"
    )
    checked = em.ops("Check", [ok, *(src for src, _, _, _ in sliced)], {"message": message})
    return [(c, p, r, a) for c, (_, p, r, a) in zip(checked, sliced, strict=True)]


def _reshape_around(em: Emitter, x: Value, axis: int, middle: list[int], width: int) -> Value:
    """Reshape ``x`` replacing its dims ``axis .. axis+width-1`` by ``middle``, others kept."""
    shape = x.tensor_type.shape
    assert shape is not None
    head, tail = shape[:axis], shape[axis + width :]
    if all(isinstance(d, int) for d in (*head, *tail)):
        return em.op("Reshape", [x, em.ints([*head, *middle, *tail])])  # type: ignore[list-item]
    dims = em.op("Shape", [x])
    parts = [
        em.op("Slice", [dims, em.ints([0]), em.ints([axis])]),
        em.ints(middle),
        em.op("Slice", [dims, em.ints([axis + width]), em.ints([INT64_MAX])]),
    ]
    return em.op("Reshape", [x, em.op("Concat", parts, {"axis": 0})])


def _scalar_bool(em: Emitter, value: Value) -> Value:
    t = value.tensor_type
    if t.dtype != DType.bool:
        value = em.op("Cast", [value], {"to": DType.bool})
    if t.rank != 0:
        value = em.op("Reshape", [value, em.ints([])])
    return value


def _trip_count(ctx: LayerContext, em: Emitter) -> Value | None:
    """Loop-5's trip count as int64, or None: a negative count (the constant -1) means no bound."""
    value = ctx.input(0)
    data = ctx.const(0)
    if data is not None:
        if data.size != 1:
            raise ctx.error(f"trip count must hold one element, got shape {list(data.shape)}")
        count = int(data.reshape(()))
        return None if count < 0 else em.const(np.int64(count))
    t = value.tensor_type
    if not t.dtype.is_int:
        raise ctx.error(f"trip count must be an integer tensor, got {t}")
    if t.rank != 0:
        value = em.op("Reshape", [value, em.ints([])])
    if t.dtype != DType.int64:
        value = em.op("Cast", [value], {"to": DType.int64})
    negative = em.op("Less", [value, em.const(np.int64(0))])
    return em.op("Where", [negative, em.const(np.int64(INT64_MAX)), value])


@converter("TensorIterator")
def _tensor_iterator(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _lower(ctx, is_loop=False)


@converter("Loop")
def _loop(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _lower(ctx, is_loop=True)


# -- If --------------------------------------------------------------------------------------------
def _branch_graph(ctx: LayerContext, branch: Branch | None, tag: str) -> Graph:
    """A branch as a core graph taking one parameter per data input port (ports 1..n) and
    yielding one result per output port, in port order."""
    layer = ctx.layer
    if branch is None:
        raise ctx.error(f"has no <{tag}_body>")
    body = _convert_body(ctx, branch.body, f"{tag}_body", f"{layer.name or 'If'}_{tag}")
    graph, params, results = body.graph, body.params, body.results

    data_ports = [p.id for p in layer.inputs[1:]]
    fed: dict[int, Value] = {}  # external port id -> the branch parameter it feeds
    for entry in branch.input_map:
        param = params.get(entry.internal_layer_id)
        if param is None:
            raise ctx.error(
                f"{tag}_port_map input names internal_layer_id={entry.internal_layer_id}, "
                f"not a Parameter of the {tag}_body"
            )
        if entry.external_port_id not in data_ports:
            raise ctx.error(
                f"{tag}_port_map input external_port_id={entry.external_port_id} names no "
                "data input port (the condition, port "
                f"{layer.inputs[0].id if layer.inputs else 0}, cannot feed a body)"
            )
        first = fed.setdefault(entry.external_port_id, param)
        if first is not param:  # one port feeding two Parameters: both read the first
            graph.replace(param, first)
    loose = sorted(
        set(params) - {e.internal_layer_id for e in branch.input_map}, key=lambda s: (len(s), s)
    )
    if loose:
        raise ctx.error(
            f"{tag}_body Parameter(s) {', '.join(loose)} are fed by no {tag}_port_map input"
        )

    inputs: list[Value] = []
    for index, pid in enumerate(data_ports, start=1):
        outer = ctx.input(index)
        param = fed.get(pid)
        if param is None:  # this branch does not read the port
            param = graph.add_input(f"unused_{pid}", outer.type)
        elif not param.type.compatible(outer.type):
            raise ctx.error(
                f"{tag}_body Parameter for input port {pid} is {param.type}, "
                f"but the port receives {outer.type}"
            )
        inputs.append(param)
    graph.inputs = inputs

    outputs: list[Value] = []
    by_port = {e.external_port_id: e for e in branch.output_map}
    for port in layer.outputs:
        out_entry = by_port.pop(port.id, None)
        if out_entry is None:
            # OpenVINO itself refuses such a model ("node index is out of range"): the output
            # would have no value when this branch runs.
            raise ctx.error(
                f"output port {port.id} has no {tag}_port_map output: both branches must "
                "define every output"
            )
        result = results.get(out_entry.internal_layer_id)
        if result is None:
            raise ctx.error(
                f"{tag}_port_map output names internal_layer_id={out_entry.internal_layer_id}, "
                f"not a Result of the {tag}_body"
            )
        outputs.append(result)
    if by_port:
        raise ctx.error(
            f"{tag}_port_map output external_port_id(s) "
            f"{', '.join(map(str, sorted(by_port)))} name no output port"
        )
    graph.set_outputs(outputs)
    return graph


def _condition(ctx: LayerContext) -> Value:
    cond = ctx.input(0)
    t = cond.type
    if not isinstance(t, TensorType):
        raise ctx.error(f"the condition must be a tensor, got {t}")
    if t.shape is not None and any(isinstance(d, int) and d != 1 for d in t.shape):
        raise ctx.error(f"the condition must hold one element, got {t}")
    if t.dtype != DType.bool:
        cond = ctx.em.op("Cast", [cond], {"to": DType.bool})
    return cond


@converter("If")
def _if(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    if not ctx.layer.inputs:
        raise ctx.error("has no condition input")
    cond = _condition(ctx)
    then_graph = _branch_graph(ctx, ctx.layer.then_branch, "then")
    else_graph = _branch_graph(ctx, ctx.layer.else_branch, "else")
    captured = [ctx.input(i) for i in range(1, len(ctx.layer.inputs))]
    node = If.build(ctx.em, cond, then_graph, else_graph, captured, name=ctx.layer.name)
    return node.outputs
