"""A graph specialised to one input signature: concrete parameter types, re-inferred types,
and what they make constant (shapes, sizes, the arithmetic on them) folded away."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...errors import TensorloopError
from ...ir.graph import Graph
from ...ir.opdef import infer_types
from ...passes import fold_constants
from ...tensor.types import TensorType, Type


def signature(args: Sequence[Any]) -> tuple[Hashable, ...]:
    """What a plan depends on: each argument's dtype and shape (a sequence's, per element)."""
    return tuple(_signature(a) for a in args)


def _signature(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):
        return (value.dtype, value.shape)
    if isinstance(value, list):
        return ("seq", tuple(_signature(v) for v in value))
    return None if value is None else type(value).__name__


def specialize(graph: Graph, args: Sequence[Any], *, fold: bool = True) -> Graph:
    """A copy of ``graph`` typed for ``args``; with ``fold``, constants folded too.

    Types are re-inferred at the top level only: bodies keep their own types, as a loop's carried
    shapes may change from one iteration to the next. A type the rules cannot make static keeps
    the declared one."""
    copy = graph.clone()
    for param, arg in zip(copy.inputs, args, strict=True):
        if isinstance(param.type, TensorType) and isinstance(arg, np.ndarray):
            param.type = TensorType(param.type.dtype, arg.shape)
    for node in copy.nodes:
        try:
            types = infer_types(node.op, node.inputs, node.attrs, node.name)
        except TensorloopError:
            continue  # the run reports what is wrong, with the run's values
        for out, t in zip(node.outputs, types, strict=True):
            if _more_static(t, out.type):
                out.type = t
    if fold:
        with np.errstate(all="ignore"):
            copy = fold_constants.run(copy).graph
    return copy


def _more_static(new: Type, old: Type) -> bool:
    return (
        isinstance(new, TensorType)
        and isinstance(old, TensorType)
        and new.dtype == old.dtype
        and new.is_static
        and not old.is_static
    )
