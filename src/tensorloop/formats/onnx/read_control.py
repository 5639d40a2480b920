"""ONNX Loop, Scan and If, lowered to the canonical Loop and If (docs/loops.md has the mapping)."""

from __future__ import annotations

import numpy as np

from ...errors import FormatError
from ...ir.branch import If
from ...ir.emit import Emitter
from ...ir.graph import Graph, Value, copy_node
from ...ir.loop import CONDITION_TYPE, ITERATION_TYPE, Loop, Sliced, Stacked
from ...passes import eliminate_dead_code
from ...tensor.dtypes import DType
from ...tensor.types import OptionalType, TensorType, Type, normalize_axis
from .convert import NodeContext, converter

# Carried types widen when the body changes them (a growing tensor, say); a few rounds suffice,
# since each round can only turn dims into "?" or drop a rank.
_WIDEN_ROUNDS = 4


def _scalar(ctx: NodeContext, value: Value | None, what: str, kind: str) -> Value | None:
    """An optional control input as a scalar: exporters often write shape [1]."""
    if value is None:
        return None
    t = value.type
    if not isinstance(t, TensorType):
        raise ctx.error(f"{what} must be a tensor, got {t}")
    ok = t.dtype is DType.bool if kind == "bool" else t.dtype.is_int
    if not ok:
        raise ctx.error(f"{what}: expected a {kind} scalar, got {t}")
    if t.shape == ():
        return value
    if t.shape is not None and any(isinstance(d, int) and d != 1 for d in t.shape):
        raise ctx.error(f"{what}: expected a single element, got {t}")
    scalar = ctx.op1("Reshape", [value, ctx.ints([])])
    return scalar if kind == "bool" else ctx.op1("Cast", [scalar], {"to": DType.int64})


def _body_scalar(em: Emitter, value: Value, where: str) -> Value:
    """The body's condition result as a bool scalar."""
    t = value.type
    if not isinstance(t, TensorType) or t.dtype is not DType.bool:
        raise FormatError(f"{where}: the body's condition output must be bool, got {t}")
    return value if t.shape == () else em.op("Reshape", [value, em.ints([])])


def _through_identities(value: Value) -> Value:
    while value.producer is not None and value.producer.op == "Identity":
        value = value.producer.inputs[0]  # type: ignore[assignment]
    return value


def _settled_body(
    ctx: NodeContext,
    types: list[Type],
    *,
    first_param: int,
    first_result: int,
    count: int,
    label: str,
    results_hint: str = "",
    settle: str = "",
) -> tuple[Graph, list[Value]]:
    """Convert ``body`` with parameter ``types``, widening the ``count`` carried parameters from
    ``first_param`` to the join with the results that feed them (from ``first_result``) and
    converting again until every carried result fits its parameter."""
    for _ in range(_WIDEN_ROUNDS):
        body, captured = ctx.subgraph("body", types)
        need = first_result + count
        if len(body.outputs) < need:
            raise ctx.error(
                f"body yields {len(body.outputs)} results, expected at least {need}{results_hint}"
            )
        current = types[first_param : first_param + count]
        grown = [
            _widened(ctx, f"{label} #{j}", t, body.outputs[first_result + j].type)
            for j, t in enumerate(current)
        ]
        if grown == current:
            return body, captured
        types = [*types[:first_param], *grown, *types[first_param + count :]]
    raise ctx.error(f"{settle or label} types do not settle")


def _widened(ctx: NodeContext, what: str, param: Type, result: Type) -> Type:
    try:
        return param.join(result)
    except Exception:
        raise ctx.error(f"{what}: the body takes {param} but yields {result}") from None


@converter("Loop", since=1)
def _loop(ctx: NodeContext) -> list[Value]:
    """ONNX Loop: M and cond optional; cond_in becomes a carried value when the body reads it."""
    trip = _scalar(ctx, ctx.inputs[0] if ctx.inputs else None, "input M (trip count)", "int")
    cond = _scalar(ctx, ctx.inputs[1] if len(ctx.inputs) > 1 else None, "input cond", "bool")
    initial = [ctx.input(i, f"v_initial #{i - 2}") for i in range(2, len(ctx.inputs))]
    k = len(initial)
    body, captured = _settled_body(
        ctx,
        [ITERATION_TYPE, CONDITION_TYPE, *(v.type for v in initial)],
        first_param=2,
        first_result=1,
        count=k,
        label="loop-carried",
        results_hint=f" (cond_out and {k} loop-carried values)",
    )
    em = Emitter(body)
    cond_param = body.inputs[1]
    if _through_identities(body.outputs[0]) is cond_param:
        # cond_out = cond_in: the condition never changes, so only the initial one matters;
        # a constant continue_condition keeps the trip count static where M is.
        body.set_outputs([em.const(np.bool_(True)), *body.outputs[1:]])
        eliminate_dead_code(body)
    cond_out = _body_scalar(em, body.outputs[0], ctx.where)
    scans = body.outputs[1 + k :]
    for j, s in enumerate(scans):
        if not isinstance(s.type, TensorType):
            raise ctx.error(f"scan output #{j} must be a tensor, got {s.type}")
    uses_cond = bool(cond_param.uses)
    if uses_cond:
        carried = [cond if cond is not None else ctx.const(np.bool_(True)), *initial]
        body.set_outputs([cond_out, cond_out, *body.outputs[1 : 1 + k], *scans])
    else:
        body.inputs.remove(cond_param)
        carried = list(initial)
        body.set_outputs([cond_out, *body.outputs[1:]])
    inputs, attrs = Loop.operands(
        body,
        max_trip_count=trip,
        initial_condition=cond,
        carried=carried,
        invariants=captured,
        stacked=[Stacked(0) for _ in scans],
    )
    node_outs = ctx.op("Loop", inputs, attrs, num_outputs=len(carried) + len(scans))
    outs = list(node_outs[1:] if uses_cond else node_outs)
    # ONNX types a Loop output as the body yields it: an optional the body fills is its value.
    yielded = [body.outputs[-len(scans) - k + j].type for j in range(k)]
    for j, t in enumerate(yielded):
        if isinstance(outs[j].type, OptionalType) and not isinstance(t, OptionalType):
            outs[j] = ctx.op1("OptionalGetElement", [outs[j]])
    return outs


def _element_type(ctx: NodeContext, t: Type, axis: int, what: str) -> TensorType:
    """The type of one slice of ``t`` along ``axis``."""
    if not isinstance(t, TensorType):
        raise ctx.error(f"{what} must be a tensor, got {t}")
    if t.shape is None:
        return TensorType(t.dtype, None)
    a = normalize_axis(axis, len(t.shape), ctx.where)
    return TensorType(t.dtype, (*t.shape[:a], *t.shape[a + 1 :]))


def _axes(ctx: NodeContext, key: str, count: int) -> list[int]:
    values = list(ctx.attr(key, (0,) * count))
    if len(values) != count:
        raise ctx.error(f"attribute '{key}' has {len(values)} entries, expected {count}")
    return values


def _same_lengths(ctx: NodeContext, scanned: list[Value], axes: list[int]) -> list[Value]:
    """The scan inputs, once their scanned axes have one length: an error now where the lengths
    are known, else a run-time Check (a loop would otherwise stop at the shortest)."""
    if len(scanned) < 2:
        return scanned
    lengths: list[object] = []
    for j, (v, a) in enumerate(zip(scanned, axes, strict=True)):
        t = v.type
        if not isinstance(t, TensorType) or t.shape is None:
            lengths.append(None)
            continue
        lengths.append(t.shape[normalize_axis(a, len(t.shape), f"{ctx.where}: scan input #{j}")])
    static = [x for x in lengths if isinstance(x, int)]
    if len(set(static)) > 1:
        detail = ", ".join(f"#{j} has {x}" for j, x in enumerate(lengths) if isinstance(x, int))
        raise ctx.error(f"scan inputs must have one length on their scan axes; {detail}")
    if len(static) == len(scanned):
        return scanned
    sizes = [
        ctx.op1("Gather", [ctx.op1("Shape", [v]), ctx.ints(a)], {"axis": 0})
        for v, a in zip(scanned, axes, strict=True)
    ]
    ok = ctx.op1("Equal", [sizes[0], sizes[1]])
    for size in sizes[2:]:
        ok = ctx.op1("And", [ok, ctx.op1("Equal", [sizes[0], size])])
    names = ", ".join(f"#{j} '{v.name}'" for j, v in enumerate(scanned))
    message = (
        f"{ctx.where}: scan inputs {names} differ in length on their scan axes {axes}; "
        "a Scan needs one length"
    )
    return list(ctx.op("Check", [ok, *scanned], {"message": message}, num_outputs=len(scanned)))


def _scan_loop(
    ctx: NodeContext,
    states: list[Value],
    scanned: list[Value],
) -> list[Value]:
    """The canonical Loop of a Scan-9+ over ``states`` and ``scanned`` (no batch axis)."""
    m = len(scanned)
    in_axes = _axes(ctx, "scan_input_axes", m)
    in_dirs = _axes(ctx, "scan_input_directions", m)
    types: list[Type] = [
        *(v.type for v in states),
        *(_element_type(ctx, v.type, a, f"scan input #{j}") for j, (v, a) in
          enumerate(zip(scanned, in_axes, strict=True))),
    ]  # fmt: skip
    n = len(states)
    scanned = _same_lengths(ctx, scanned, in_axes)
    body, captured = _settled_body(
        ctx, types, first_param=0, first_result=0, count=n, label="state", settle="scan state"
    )
    scans = body.outputs[n:]
    out_axes = _axes(ctx, "scan_output_axes", len(scans))
    out_dirs = _axes(ctx, "scan_output_directions", len(scans))
    stacked = []
    for j, (s, a, d) in enumerate(zip(scans, out_axes, out_dirs, strict=True)):
        t = s.type
        if not isinstance(t, TensorType):
            raise ctx.error(f"scan output #{j} must be a tensor, got {t}")
        if t.shape is not None:
            a = normalize_axis(a, len(t.shape) + 1, f"{ctx.where}: scan_output_axes[{j}]")
        stacked.append(Stacked(a, bool(d)))
    iteration = body.add_input("iteration", ITERATION_TYPE)
    body.inputs.remove(iteration)
    body.inputs.insert(0, iteration)
    em = Emitter(body)
    always = em.const(np.bool_(True))
    body.set_outputs([always, *body.outputs])
    inputs, attrs = Loop.operands(
        body,
        carried=states,
        sliced=[
            (src, Sliced(a, bool(d))) for src, a, d in zip(scanned, in_axes, in_dirs, strict=True)
        ],
        invariants=captured,
        stacked=stacked,
    )
    return ctx.op("Loop", inputs, attrs, num_outputs=n + len(scans))


@converter("Scan", since=9)
def _scan(ctx: NodeContext) -> list[Value]:
    """ONNX Scan-9+: states carried, scan inputs sliced on their axes, scan outputs stacked."""
    m = int(ctx.attr("num_scan_inputs"))
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not 0 < m <= len(values):
        raise ctx.error(f"num_scan_inputs is {m}, the node has {len(values)} inputs")
    return _scan_loop(ctx, values[: len(values) - m], values[len(values) - m :])


@converter("Scan", since=8)
def _scan8(ctx: NodeContext) -> list[Value]:
    """ONNX Scan-8: a batch axis 0 on every input and output, and optional sequence_lens. It is
    a Loop over the batch whose body holds the Scan-9 Loop of one batch row."""
    if ctx.has(0):
        raise ctx.error(
            "Scan-8 with a sequence_lens input is not supported; re-export with opset 9 or later"
        )
    m = int(ctx.attr("num_scan_inputs"))
    values = [ctx.input(i) for i in range(1, len(ctx.inputs))]
    if not 0 < m <= len(values):
        raise ctx.error(f"num_scan_inputs is {m}, the node has {len(values)} inputs")
    if ctx.attr("directions", None) is not None:
        ctx.attrs["scan_input_directions"] = ctx.attrs.pop("directions")
    n = len(values) - m
    # The batch loop slices every input on axis 0; its body runs the per-row scan.
    outer = Graph("scan8_batch")
    params = [outer.add_input("iteration", ITERATION_TYPE)]
    params += [
        outer.add_input(f"in{j}", _element_type(ctx, v.type, 0, f"input #{j + 1}"))
        for j, v in enumerate(values)
    ]
    inner_scope = ctx.scope.nested(outer, "scan8")
    inner_ctx = NodeContext(
        ctx.node, ctx.opset, list(ctx.inputs), dict(ctx.attrs), Emitter(outer), inner_scope,
        ctx.where,
    )  # fmt: skip
    outs = _scan_loop(inner_ctx, params[1 : 1 + n], params[1 + n :])
    em = Emitter(outer)
    outer.set_outputs([em.const(np.bool_(True)), *outs])
    captured = inner_scope.captured
    inputs, attrs = Loop.operands(
        outer,
        sliced=[(v, Sliced(0)) for v in values],
        invariants=captured,
        stacked=[Stacked(0) for _ in outs],
    )
    return ctx.op("Loop", inputs, attrs, num_outputs=len(outs))


@converter("If", since=1)
def _if(ctx: NodeContext) -> list[Value]:
    """ONNX If: both branches read outer values by name; each becomes a captured input."""
    cond = _scalar(ctx, ctx.input(0, "cond"), "input cond", "bool")
    assert cond is not None
    known = cond.constant
    if known is not None:
        # The branch is known now: only it is converted (the other may not even type-check
        # for these inputs, as in ONNX's own function bodies), and its nodes are inlined.
        graph, caps = ctx.subgraph("then_branch" if bool(known) else "else_branch")
        mapping = dict(zip(graph.inputs, caps, strict=True))
        for node in graph.nodes:
            ctx.em.graph.append(copy_node(node, mapping))
        return [mapping[v] for v in graph.outputs]
    then_g, then_caps = ctx.subgraph("then_branch")
    else_g, else_caps = ctx.subgraph("else_branch")
    captured: list[Value] = []
    for v in [*then_caps, *else_caps]:
        if v not in captured:
            captured.append(v)
    for g, caps in ((then_g, then_caps), (else_g, else_caps)):
        by_outer = dict(zip(caps, g.inputs, strict=True))
        g.inputs = [by_outer[v] if v in by_outer else g.add_input(v.name, v.type) for v in captured]
    inputs, attrs = If.operands(cond, then_g, else_g, captured)
    return ctx.op("If", inputs, attrs, num_outputs=len(then_g.outputs))
