"""Passes: named graph transformations returning PassResult(graph, changed), verified after."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..ir.graph import Graph, Node, Value
from ..ir.verify import verify
from ..tensor.dtypes import DType
from ..tensor.types import TensorType


@dataclass(frozen=True)
class PassResult:
    graph: Graph
    changed: bool


class Pass:
    """A named transformation; calling it runs ``run`` then the verifier."""

    name: ClassVar[str] = ""

    def run(self, graph: Graph) -> PassResult:
        raise NotImplementedError

    def __call__(self, graph: Graph) -> PassResult:
        result = self.run(graph)
        if result.changed:
            verify(result.graph)
        return result


def run_passes(graph: Graph, passes: list[Pass]) -> PassResult:
    """Run passes in order; ``changed`` if any of them changed the graph."""
    changed = False
    for p in passes:
        result = p(graph)
        graph, changed = result.graph, changed or result.changed
    return PassResult(graph, changed)


# -- which nodes cannot fail ------------------------------------------------------------------
TOTAL = frozenset(
    {"Add", "Sub", "Mul", "Neg", "Abs", "Relu", "Tanh", "Sigmoid", "Max", "Min", "Where"}
    | {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not"}
    | {"Identity", "MatMul", "Gemm", "Transpose", "Concat", "Shape", "Size", "Cast"}
    | {"Reshape", "Unsqueeze", "Squeeze", "Gather"}
)
"""Ops that cannot fail on inputs of the static shapes type inference checked, given the operand
checks of ``cannot_fail`` (IEEE faults give inf or NaN, integers wrap)."""


def cannot_fail(node: Node) -> bool:
    """True if running ``node`` cannot raise on any inputs of the types its graph was checked
    with, so a pass may run it where the reference would not (before a loop that runs zero times
    or stops early, over rows the loop never reaches) or drop it where the reference would run
    it for nothing: a Constant; an op in ``TOTAL`` with static input and output shapes (which
    type inference checked), whose shape and axes operands are constants, whose Gather indices
    are constants in range, and no Cast that may fail or differ by platform
    (``cast_is_total``). Anything else may fail: any other op, and a node holding a body (a Loop
    may pass the iteration limit, any body may hold a failing node)."""
    if node.subgraphs:
        return False
    if node.op == "Constant" and not node.inputs:
        return True
    if node.op not in TOTAL:
        return False
    if not all(_static(v) for v in [*node.inputs, *node.outputs]):
        return False
    operands = node.inputs[1:]
    if node.op in ("Reshape", "Unsqueeze", "Squeeze"):
        return all(v is None or v.constant is not None for v in operands)
    if node.op == "Cast":
        return cast_is_total(node)
    if node.op == "Gather":
        return _indices_in_range(node)
    return True


def cast_is_total(node: Node) -> bool:
    """True for a Cast that cannot fail and converts each element the same way on any platform
    and any batch: not from strings (a string that is no number fails to parse) and not from
    floats to integers (NaN, inf and out-of-range values convert as the platform does)."""
    src = node.inputs[0] if node.inputs else None
    if src is None or not isinstance(src.type, TensorType):
        return False
    out = node.outputs[0].type
    if not isinstance(out, TensorType):
        return False
    if src.type.dtype is DType.string:
        return out.dtype is DType.string
    return not (src.type.dtype.is_float and out.dtype.is_int)


def _static(v: Value | None) -> bool:
    return v is None or (isinstance(v.type, TensorType) and v.type.is_static)


def _indices_in_range(node: Node) -> bool:
    data, indices = node.inputs[0], node.inputs[1]
    if data is None or indices is None or not isinstance(data.type, TensorType):
        return False
    shape = data.type.shape
    idx: np.ndarray[Any, Any] | None = indices.constant
    if idx is None or shape is None or not shape:
        return False
    axis = int(node.attrs.get("axis", 0))
    if not -len(shape) <= axis < len(shape):
        return False
    n = shape[axis]
    assert isinstance(n, int)
    return idx.size == 0 or bool(idx.min() >= -n and idx.max() < n)
