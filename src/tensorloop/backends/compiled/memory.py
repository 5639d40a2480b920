"""Buffers for a loop body: which values are views of which, how long each buffer lives, and
which values an op may write in place (``out=``) into a buffer allocated once per loop.

Views are planned with the nGraph tensor model (``tensor/layout``): a fresh result has a
row-major ``Layout``; Slice, Split, Gather of one index, Squeeze, Unsqueeze, Transpose, Reshape
and Identity give the ``Layout`` of a view of their input's buffer (a Reshape the layout cannot
express without copying makes a fresh buffer instead). So every value knows the buffers it may
read from (its *roots*); any other op is taken to return something that may alias any of its
inputs, so the roots of its inputs live as long as its result.

A buffer is live from the node that fills it to the last use of any value reading it. A value
whose buffer escapes the iteration (a carried value, read again by the next iteration, or the
continue condition) or is read by nothing but escaping values is never pooled; a stacked result
is read at the end of its iteration, when it is copied into the stacked output. Values with
disjoint live ranges and the same shape and dtype share one buffer, reused every iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import TensorloopError
from ...ir.graph import Graph, Node, Value, constant_ints, static_type
from ...ops.shape import reshape_dims, slice_bounds
from ...tensor.layout import Layout
from ...tensor.types import TensorType

VIEW_OPS = frozenset(
    {"Slice", "Split", "Gather", "Squeeze", "Unsqueeze", "Transpose", "Reshape", "Identity"}
)


def static_shape(v: Value | None) -> tuple[int, ...] | None:
    t = static_type(v)
    return None if t is None else t.static_shape


@dataclass
class BufferPlan:
    """``buffers[v]``: the buffer value ``v`` is written into; ``allocations``: each buffer's
    name, shape and dtype, allocated once before the loop; ``layouts``: the planned layout of
    each value of static shape (views included)."""

    buffers: dict[Value, str] = field(default_factory=dict)
    allocations: list[tuple[str, tuple[int, ...], np.dtype[Any]]] = field(default_factory=list)
    layouts: dict[Value, Layout] = field(default_factory=dict)
    views: set[Value] = field(default_factory=set)
    """Values planned as views of their (first) input's buffer."""


def plan_in_place(graph: Graph, writable: Callable[[Node], bool]) -> dict[Value, Value]:
    """Outputs of ``graph``'s nodes that may be written into one of their own inputs: an input of
    the output's static shape and dtype that a known-fresh op made, whose buffer nothing reads
    after this node (through views or otherwise) and that is no result. Elementwise ops only
    (``writable``): each element is read before it is written."""
    _, roots, last = _analyse(graph)
    reuse: dict[Value, Value] = {}
    for k, node in enumerate(graph.nodes):
        if len(node.outputs) != 1 or not writable(node):
            continue
        out = node.outputs[0]
        shape = static_shape(out)
        if not shape:
            continue
        for v in node.inputs:
            producer = None if v is None else v.producer
            if (
                v is not None
                and producer is not None
                and producer.op in FRESH_OPS
                and roots.get(v) == frozenset({v})
                and last.get(v) == k
                and static_shape(v) == shape
                and v.type == out.type
                and sum(1 for w in node.inputs if w is v) == 1
            ):
                reuse[out] = v
                roots[out] = frozenset({v})
                break
    return reuse


def _analyse(
    graph: Graph,
) -> tuple[BufferPlan, dict[Value, frozenset[Value]], dict[Value, int]]:
    """The layouts and views of ``graph``'s values, each value's roots, and the position of the
    last read of each root."""
    plan = BufferPlan()
    roots: dict[Value, frozenset[Value]] = {p: frozenset() for p in graph.inputs}
    position: dict[Node, int] = {}
    for k, node in enumerate(graph.nodes):
        position[node] = k
        _layouts(node, plan)
        for out in node.outputs:
            roots[out] = _roots(node, out, roots, plan.views)
    return plan, roots, _last_reads(graph, roots, position)


def _last_reads(
    graph: Graph, roots: dict[Value, frozenset[Value]], position: dict[Node, int]
) -> dict[Value, int]:
    """For each buffer root, the position of the last node reading a value rooted in it (the
    graph's results count as read after every node)."""
    end = len(graph.nodes)
    last: dict[Value, int] = {}
    for v, rs in roots.items():
        uses = [position[u.node] for u in v.uses if u.node in position]
        if v in graph.outputs:
            uses.append(end)
        for r in rs:
            last[r] = max([last.get(r, -1), *uses])
    return last


def plan_buffers(
    body: Graph,
    escaping_results: int,
    writable: Callable[[Node], bool],
    fresh_name: Callable[[str], str],
) -> BufferPlan:
    """Pool the outputs of ``body``'s nodes that ``writable`` says can be written in place; the
    first ``escaping_results`` results of ``body`` outlive the iteration."""
    plan, roots, last = _analyse(body)
    escaping: set[Value] = set()
    for v in body.outputs[:escaping_results]:
        escaping |= roots.get(v, frozenset())

    free: dict[tuple[tuple[int, ...], np.dtype[Any]], list[str]] = {}
    busy: list[tuple[int, tuple[tuple[int, ...], np.dtype[Any]], str]] = []
    for k, node in enumerate(body.nodes):
        still = []
        for until, key, name in busy:
            if until < k:
                free.setdefault(key, []).append(name)
            else:
                still.append((until, key, name))
        busy = still
        if not writable(node) or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        shape = static_shape(out)
        if shape is None or not shape or out in escaping or out not in last:
            continue
        assert isinstance(out.type, TensorType)
        key = (shape, out.type.dtype.numpy)
        names = free.get(key)
        if names:
            name = names.pop()
        else:
            name = fresh_name("buf")
            plan.allocations.append((name, shape, key[1]))
        plan.buffers[out] = name
        busy.append((last[out], key, name))
    return plan


def _roots(
    node: Node, out: Value, roots: dict[Value, frozenset[Value]], views: set[Value]
) -> frozenset[Value]:
    inputs = [v for v in node.inputs if v is not None]
    if node.op == "Constant":
        return frozenset()
    if out in views:
        return roots.get(inputs[0], frozenset())
    own = frozenset({out})
    if node.op in VIEW_OPS or node.subgraphs or not _known_fresh(node):
        for v in inputs:
            own |= roots.get(v, frozenset())
    return own


def _known_fresh(node: Node) -> bool:
    """Whether ``node``'s result is a new array that shares no memory with its inputs."""
    return node.op in FRESH_OPS


FRESH_OPS = frozenset(
    {"Add", "Sub", "Mul", "Div", "Min", "Max", "Neg", "Abs", "Sqrt", "Exp", "Log", "Tanh"}
    | {"Sigmoid", "Relu", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}
    | {"And", "Or", "Xor", "Not", "MatMul", "Gemm", "Where", "Concat"}
)
"""Ops whose compiled form always returns a new array (inline templates or their kernels)."""


def _layouts(node: Node, plan: BufferPlan) -> None:
    """The planned layout of each output of ``node`` with a static shape; a view op's output
    the layout can express over its input's buffer is a view."""
    src = node.inputs[0] if node.inputs else None
    base = plan.layouts.get(src) if src is not None else None
    for k, out in enumerate(node.outputs):
        shape = static_shape(out)
        if shape is None:
            continue
        view = None
        if base is not None and node.op in VIEW_OPS:
            try:
                view = _view(node, k, base, shape)
            except (TensorloopError, ValueError, IndexError):
                view = None
        if view is None or view.shape != shape:
            plan.layouts[out] = Layout.row_major(shape)
        else:
            plan.layouts[out] = view
            plan.views.add(out)


def _view(node: Node, k: int, base: Layout, shape: tuple[int, ...]) -> Layout | None:
    op, attrs, rank = node.op, node.attrs, base.rank
    if op == "Identity":
        return base
    if op == "Transpose":
        perm = attrs.get("perm")
        return base.transpose(None if perm is None else list(perm))
    if op == "Reshape":
        target = constant_ints(node.inputs[1])
        if target is None:
            return None
        dims = reshape_dims(base.shape, target, bool(attrs.get("allowzero", 0)))
        return base.reshape([int(d) for d in dims])
    if op == "Squeeze":
        axes = constant_ints(node.inputs[1]) if len(node.inputs) > 1 else None
        return base.squeeze(axes)
    if op == "Unsqueeze":
        axes = constant_ints(node.inputs[1])
        return None if axes is None else base.unsqueeze(axes)
    if op == "Gather":
        idx = node.inputs[1]
        if idx is None or static_shape(idx) != ():
            return None
        axis = attrs.get("axis", 0)
        return base.index(axis + rank if axis < 0 else axis, 0)  # the index is a run-time value
    if op == "Slice":
        starts, ends = constant_ints(node.inputs[1]), constant_ints(node.inputs[2])
        axes = constant_ints(node.inputs[3]) if len(node.inputs) > 3 else None
        steps = constant_ints(node.inputs[4]) if len(node.inputs) > 4 else None
        if starts is None or ends is None:
            return None
        axes = list(range(len(starts))) if axes is None else axes
        steps = [1] * len(starts) if steps is None else steps
        bounds = [
            slice_bounds(base.shape[a], s, e, st)
            for a, s, e, st in zip(axes, starts, ends, steps, strict=True)
        ]
        return base.slice(
            [lo for lo, _, _ in bounds],
            [None if hi < 0 else hi for _, hi, _ in bounds],
            steps,
            axes,
        )
    if op == "Split":
        axis = attrs.get("axis", 0)
        axis = axis + rank if axis < 0 else axis
        start = 0
        for out in node.outputs[:k]:
            prior = static_shape(out)
            if prior is None:
                return None
            start += prior[axis]
        return base.slice([start], [start + shape[axis]], [1], [axis])
    return None
