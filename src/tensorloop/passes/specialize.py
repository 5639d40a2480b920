"""A graph specialised to one input signature: concrete parameter types, re-inferred types,
and what they make constant (shapes, sizes, the arithmetic on them) folded away."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..errors import TensorloopError
from ..ir.graph import Graph, Value
from ..ir.loop import Loop
from ..ir.opdef import infer_types
from ..tensor.types import TensorType, Type
from . import fold_constants


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

    A type the rules cannot make static keeps the declared one. A loop body is re-typed with
    the static types of the loop's inputs only where that is a fixed point: each carried value's
    next type equals the type it started with (a carried shape may instead change from one
    iteration to the next; then the body keeps its declared types)."""
    copy = graph.clone()
    for param, arg in zip(copy.inputs, args, strict=True):
        if isinstance(param.type, TensorType) and isinstance(arg, np.ndarray):
            param.type = TensorType(param.type.dtype, arg.shape)
    _retype(copy)
    if fold:
        with np.errstate(all="ignore"):
            copy = fold_constants.run(copy).graph
    return copy


def _retype(graph: Graph) -> None:
    for node in graph.nodes:
        if node.op == "Loop":
            _retype_body(Loop(node))
        try:
            types = infer_types(node.op, node.inputs, node.attrs, node.name)
        except TensorloopError:
            continue  # the run reports what is wrong, with the run's values
        for out, t in zip(node.outputs, types, strict=True):
            if _more_static(t, out.type):
                out.type = t


def _retype_body(loop: Loop) -> None:
    body = loop.body
    before = {v: v.type for v in _body_values(body)}
    given: list[tuple[Value, Type | None]] = [(c.param, _type(c.initial)) for c in loop.carried]
    for s in loop.sliced:
        t = _type(s.source)
        if (
            isinstance(t, TensorType)
            and t.shape is not None
            and -len(t.shape) <= s.spec.axis < len(t.shape)
        ):
            axis = s.spec.axis % len(t.shape)
            given.append((s.param, t.with_shape(t.shape[:axis] + t.shape[axis + 1 :])))
    given += [(inv.param, _type(inv.value)) for inv in loop.invariants]
    for param, t in given:
        if t is not None and _more_static(t, param.type):
            param.type = t
    _retype(body)
    if any(c.next.type != c.param.type for c in loop.carried):
        for v, t in before.items():  # not a fixed point: the declared types stand
            v.type = t


def _body_values(graph: Graph) -> list[Value]:
    values = list(graph.inputs)
    for _, node in graph.walk():
        values.extend(node.outputs)
        for sub in node.subgraphs.values():
            values.extend(sub.inputs)
    return values


def _type(value: Value | None) -> Type | None:
    return None if value is None else value.type


def _more_static(new: Type, old: Type) -> bool:
    return (
        isinstance(new, TensorType)
        and isinstance(old, TensorType)
        and new.dtype == old.dtype
        and new.is_static
        and not old.is_static
    )
