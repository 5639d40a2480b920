"""OpenVINO If (branch) layers read as core ops: one converter per layer type, at every opset
version OpenVINO's converters write. ``write_control.py`` writes them back.

If-8 has the condition on input port 0 and data on the ports after it; each branch body
(``<then_body>``, ``<else_body>``) has its own Parameters, fed through its port map
(``<then_port_map>``: ``input external_port_id -> internal_layer_id``), and its own Results,
mapped to the layer's output ports. A branch may leave any data input unused. The core If
passes the same captured values to both branches, so every data port becomes a parameter of
both branch graphs (unused where a branch does not read it), in port order.
"""

from __future__ import annotations

from ...ir.branch import If
from ...ir.graph import Graph, Value
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .convert import LayerContext, Source, convert_net, converter
from .document import Branch

__all__: list[str] = []


def _branch_graph(ctx: LayerContext, branch: Branch | None, tag: str) -> Graph:
    """A branch as a core graph taking one parameter per data input port (ports 1..n) and
    yielding one result per output port, in port order."""
    layer = ctx.layer
    if branch is None:
        raise ctx.error(f"has no <{tag}_body>")
    scope = f"{layer.describe()} {tag}_body"
    if ctx.source.scope:
        scope = f"{scope} in {ctx.source.scope}"
    inner = Source(ctx.source.path, ctx.source.weights, scope)
    graph, params, results = convert_net(branch.body, inner, f"{layer.name or 'If'}_{tag}")

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
