"""ONNX converters for the maths ops' old opsets: Clip's bounds as attributes."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from .convert import NodeContext, converter


@converter("Clip", until=11)
def _clip_old(ctx: NodeContext) -> list[Value]:
    """Clip before opset 11: the bounds are the float attributes min and max (absent: none)."""
    x = ctx.input(0)
    dt = x.tensor_type.dtype.numpy
    bounds = [ctx.attr(key, None) for key in ("min", "max")]
    inputs = [None if b is None else ctx.const(np.asarray(b, dt)) for b in bounds]
    return [ctx.op1("Clip", [x, *inputs])]
