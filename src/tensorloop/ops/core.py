"""Core ops: Constant, Identity, and the persistent-variable ops ReadVariable and Assign."""

from __future__ import annotations

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.types import TensorType, Type, tensor_type_of


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


@op(
    "ReadVariable",
    inputs=0,
    attrs={"variable": AttrSpec(str), "type": AttrSpec(TensorType, doc="the variable's type")},
)
def _read_variable(ctx: InferContext) -> list[Type]:
    """The current value of a persistent variable of the top-level graph."""
    return [ctx.attr("type")]


@op("Assign", attrs={"variable": AttrSpec(str)})
def _assign(ctx: InferContext) -> list[Type]:
    """Store its input into a persistent variable; later runs read the stored value."""
    ctx.tensor(0)
    return []
