"""Core ops: Constant, Identity, Check, and the persistent-variable ops ReadVariable and Assign."""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import TensorType, Type, tensor_type_of


def initialized_flag(variable: str) -> str:
    """The name of the bool variable that says whether ``variable`` has been assigned since
    the last reset: a first value computed from the inputs is read until then (OpenVINO's
    ReadValue with an init input, a stream's stateful step)."""
    return f"{variable}/initialized"


@op("Constant", inputs=0, attrs={"value": AttrSpec(np.ndarray, doc="the data")})
def _constant(ctx: InferContext) -> list[Type]:
    """A tensor fixed when the graph is built."""
    return [tensor_type_of(ctx.attr("value"))]


@op("Identity")
def _identity(ctx: InferContext) -> list[Type]:
    """Its input, unchanged."""
    t = ctx.types[0]
    assert t is not None
    return [t]


@op("Check", inputs=(2, None), attrs={"message": AttrSpec(str)})
def _check(ctx: InferContext) -> list[Type]:
    """Its inputs after the first, unchanged, once the bool ``ok`` (the first input) holds
    everywhere; a run where it does not fails with ``message``. Frontends use it for the errors
    a format defines at run time, such as a TensorRT loop output shorter than the trip count."""
    ok = ctx.tensor(0)
    if ok.dtype != DType.bool:
        raise ctx.error(f"input #0 (ok) is {ok}, expected bool")
    return [ctx.tensor(i) for i in range(1, len(ctx))]


def _verify_variable(node: Node, where: str, root: Graph) -> list[str]:
    """A variable op names a variable of the top-level graph and reads or writes its type."""
    name = node.attrs.get("variable")
    var = root.variables.get(str(name))
    if var is None:
        return [f"{where}: no variable '{name}' in graph '{root.name}'"]
    actual = (
        node.outputs[0].type
        if node.op == "ReadVariable"
        else (node.inputs[0].type if node.inputs and node.inputs[0] is not None else None)
    )
    what = "reads" if node.op == "ReadVariable" else "assigns"
    if actual is None or not var.type.compatible(actual):
        return [f"{where}: {what} variable '{name}' as {actual}, it holds {var.type}"]
    return []


@op(
    "ReadVariable",
    inputs=0,
    attrs={"variable": AttrSpec(str), "type": AttrSpec(TensorType, doc="the variable's type")},
    verify=_verify_variable,
)
def _read_variable(ctx: InferContext) -> list[Type]:
    """The current value of a persistent variable of the top-level graph."""
    return [ctx.attr("type")]


@op("Assign", attrs={"variable": AttrSpec(str)}, verify=_verify_variable)
def _assign(ctx: InferContext) -> list[Type]:
    """Store its input into a persistent variable; later runs read the stored value."""
    ctx.tensor(0)
    return []
