"""OpenVINO state layers: ReadValue and Assign, as variables of the top-level graph."""

from __future__ import annotations

import numpy as np

from ...ir.emit import Emitter
from ...ir.graph import Graph, Node, Value
from ...ops.core import initialized_flag
from ...tensor.types import TensorType
from .convert import LayerContext, converter
from .inputs import has_input, type_of
from .reader import parse_shape


def _state_graph(ctx: LayerContext) -> Graph:
    if ctx.source.scope:
        raise ctx.error(
            f"{ctx.layer.type} inside a loop body is not supported: tensorloop keeps variables "
            "on the top-level graph only"
        )
    return ctx.em.graph


def _variable_id(ctx: LayerContext) -> str:
    name = ctx.attr("variable_id").strip()
    if not name:
        raise ctx.error("attribute 'variable_id' is empty")
    return name


def _nodes_of(graph: Graph, op: str, variable: str) -> list[Node]:
    return [n for n in graph.nodes if n.op == op and n.attrs.get("variable") == variable]


def _read(ctx: LayerContext, graph: Graph, name: str) -> Value:
    """ReadVariable of ``name`` placed before any Assign to it, so that it sees the value from
    before this run, as OpenVINO's ReadValue does, whichever layer the file lists first."""
    assigns = _nodes_of(graph, "Assign", name)
    em = Emitter(graph, anchor=assigns[0] if assigns else None, prefix=ctx.em.prefix)
    var_type = graph.variables[name].type
    return em.op("ReadVariable", [], {"variable": name, "type": var_type})


def _declared_type(ctx: LayerContext, init: Value | None) -> TensorType:
    """The variable's type: variable_type/variable_shape where static, else the init input's,
    else the output port's."""
    port = ctx.port_type(ctx.layer.outputs[0]) if ctx.layer.outputs else None
    init_t = type_of(ctx, init) if init is not None else None
    dtypes = [t.dtype for t in (init_t, port) if t is not None]
    type_text = ctx.attr("variable_type", "").strip().lower()
    if type_text not in ("", "dynamic", "undefined"):
        dtypes.insert(0, ctx.element_type("variable_type"))
    shape_text = ctx.attr("variable_shape", "...")
    shapes = [
        parse_shape(shape_text, ctx.where),
        *(t.shape for t in (init_t, port) if t is not None),
    ]
    static = [s for s in shapes if s is not None and all(isinstance(d, int) for d in s)]
    if not dtypes or not static:
        raise ctx.error(
            f"variable '{ctx.attr('variable_id')}' needs a static type: variable_type is "
            f"{type_text or 'absent'!r}, variable_shape {shape_text!r}"
        )
    declared = TensorType(dtypes[0], static[0])
    if init_t is not None and not declared.compatible(init_t):
        raise ctx.error(f"the init input is {init_t}, but the variable is {declared}")
    return declared


@converter("ReadValue")
def _read_value(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    graph, name = _state_graph(ctx), _variable_id(ctx)
    if _nodes_of(graph, "ReadVariable", name):
        raise ctx.error(f"variable '{name}' is read by a second ReadValue layer")
    init = ctx.input(0) if has_input(inputs, 0) else None
    declared = _declared_type(ctx, init)
    init_data = ctx.const(0) if init is not None else None
    existing = graph.variables.get(name)  # made by an Assign converted before this layer
    if existing is not None and not existing.type.compatible(declared):
        raise ctx.error(f"variable '{name}' is assigned {existing.type}, but read as {declared}")
    # A constant init is the variable's initial value, so a reset restores it; a computed one is
    # chosen at run time until the first Assign, tracked by a bool "initialized" variable.
    initial = (
        np.zeros(declared.static_shape, declared.dtype.numpy)
        if init_data is None
        else init_data.astype(declared.dtype.numpy).reshape(declared.static_shape)
    )
    graph.variables.pop(name, None)
    graph.add_variable(name, initial)
    value = _read(ctx, graph, name)
    if init is None or init_data is not None:
        return [value]
    flag = initialized_flag(name)
    if flag in graph.variables:
        raise ctx.error(f"variable name '{flag}' is taken; tensorloop needs it for '{name}'")
    graph.add_variable(flag, np.array(False))
    assigned = _read(ctx, graph, flag)
    if _nodes_of(graph, "Assign", name):
        ctx.em.ops("Assign", [ctx.em.const(np.array(True))], {"variable": flag})
    return [ctx.em.op("Where", [assigned, value, init])]


@converter("Assign")
def _assign(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    graph, name = _state_graph(ctx), _variable_id(ctx)
    x = ctx.input(0)
    t = type_of(ctx, x)
    var = graph.variables.get(name)
    if var is None:  # its ReadValue comes later; that layer fixes the initial value
        if not t.is_static:
            raise ctx.error(f"variable '{name}' needs a static shape, its Assign gets {t}")
        graph.add_variable(name, np.zeros(t.static_shape, t.dtype.numpy))
    elif not var.type.compatible(t):
        raise ctx.error(f"assigns {t} to variable '{name}', which holds {var.type}")
    ctx.em.ops("Assign", [x], {"variable": name})
    if initialized_flag(name) in graph.variables:
        ctx.em.ops("Assign", [ctx.em.const(np.array(True))], {"variable": initialized_flag(name)})
    # Assign passes its input through its output port, where it has one (tensorloop's writer
    # gives it none, as nothing reads it); a new value keeps the input's name.
    return [ctx.em.op("Identity", [x])] if ctx.layer.outputs else []
