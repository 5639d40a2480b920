"""Reverse mode on the canonical IR: a graph's backward pass, appended to the graph.

``backprop(graph, seeds, wanted)`` walks the nodes between ``wanted`` and ``seeds`` last first
and asks each op's vector-Jacobian rule (``rules.RULES``) for its inputs' cotangents, summing
the cotangents of a value read more than once. The rules add their nodes through a
``Builder``, which holds the helpers every rule shares (a scalar of a value's dtype, zeros of a
value's shape, a sum back to a broadcast input's shape). Loops and Ifs differentiate through
``control.py``, which calls ``backprop`` on their bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..errors import GradientError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value
from ..tensor.types import TensorType

Rule = Callable[["Builder", Node, list["Value | None"]], Sequence["Value | None"]]
"""A vector-Jacobian rule: the node, its outputs' cotangents (None: zero), and it returns one
cotangent per input (None: zero, or not differentiable)."""

RULES: dict[str, Rule] = {}


def vjp(*ops: str) -> Callable[[Rule], Rule]:
    """Register the vector-Jacobian rule of ``ops``."""

    def register(fn: Rule) -> Rule:
        for name in ops:
            if name in RULES:
                raise GradientError(f"a gradient rule for {name} is defined twice")
            RULES[name] = fn
        return fn

    return register


ZERO_GRADIENT = frozenset(
    {
        # outputs that are integers, booleans or piecewise constant: their gradient is zero
        "Shape", "Size", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Not",
        "And", "Or", "Xor", "IsNaN", "IsInf", "ArgMax", "ArgMin", "NonZero", "Floor", "Ceil",
        "Round", "Sign", "Range", "OneHot", "EyeLike", "ConstantOfShape", "Constant",
        "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
        "Multinomial", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
        "Hardmax", "Mod", "Unique", "TopK_indices", "HannWindow", "HammingWindow",
        "BlackmanWindow", "MelWeightMatrix", "StringConcat", "StringSplit", "RegexFullMatch",
        "StringNormalizer", "SequenceLength", "OptionalHasElement",
    }
)  # fmt: skip


def differentiable(value: Value | None) -> bool:
    """Whether ``value`` carries a gradient: a floating-point tensor."""
    t = None if value is None else value.type
    return isinstance(t, TensorType) and t.dtype.is_float


@dataclass
class Options:
    """How loops are differentiated: ``checkpoint`` is None (store every carried value: the
    fastest), an int ``k`` (store every k-th and recompute the rest) or ``"sqrt"`` (k chosen
    per run as the square root of the trip count); ``per_loop`` overrides it by loop name."""

    checkpoint: int | str | None = None
    per_loop: Mapping[str, int | str | None] = field(default_factory=dict)
    stored: dict[Node, Any] = field(default_factory=dict)
    """The Loops rebuilt to store what their backward reads (``control.prepare``), and how."""
    store_all: set[Node] = field(default_factory=set)
    """Loops that store every carried value whatever ``checkpoint`` says: the segment loops a
    checkpointed gradient recomputes."""

    def for_loop(self, name: str) -> int | str | None:
        return self.per_loop.get(name, self.checkpoint) if name else self.checkpoint


class Builder:
    """Where a backward pass adds its nodes (``em``, appended to the graph), and the helpers
    the rules share."""

    def __init__(self, graph: Graph, options: Options) -> None:
        self.graph = graph
        self.em = Emitter(graph)
        self.options = options
        self.needed: set[Value] | None = None
        """The values a cotangent is wanted for (those downstream of a wanted value), where
        known: a rule may skip the cotangent of an input outside it (a Loop does, for a
        sliced source or an invariant whose gradient nobody asked for)."""

    def wants(self, value: Value | None) -> bool:
        """Whether ``value``'s cotangent is asked for (or may be)."""
        return value is not None and (self.needed is None or value in self.needed)

    # -- nodes ---------------------------------------------------------------------------------
    def op(self, op: str, inputs: Sequence[Value | None], **attrs: Any) -> Value:
        return self.em.op(op, list(inputs), attrs)

    def ops(self, op: str, inputs: Sequence[Value | None], **attrs: Any) -> list[Value]:
        return self.em.ops(op, list(inputs), attrs)

    def const(self, value: Any, like: Value) -> Value:
        """A constant of ``like``'s dtype."""
        return self.em.const(np.asarray(value), like.tensor_type.dtype)

    def ints(self, values: Sequence[int] | int) -> Value:
        return self.em.ints(values)

    def add(self, a: Value | None, b: Value | None) -> Value | None:
        if a is None:
            return b
        if b is None:
            return a
        return self.op("Add", [a, b])

    def mul(self, a: Value, b: Value) -> Value:
        return self.op("Mul", [a, b])

    def neg(self, a: Value) -> Value:
        return self.op("Neg", [a])

    def zeros_like(self, x: Value) -> Value:
        """Zeros of ``x``'s shape and dtype (typed as ``x``, never NaN where ``x`` is)."""
        t = x.tensor_type
        never = self.em.const(np.asarray(False))
        return self.op("Where", [never, x, self.em.const(np.zeros((), t.dtype.numpy))])

    def ones_like(self, x: Value) -> Value:
        t = x.tensor_type
        always = self.em.const(np.asarray(True))
        return self.op("Where", [always, self.em.const(np.ones((), t.dtype.numpy)), x])

    def shape(self, x: Value) -> Value:
        """``x``'s shape as an int64 vector: a constant where its type is static (so what is
        shaped by it is typed static too), else read at run time."""
        t = x.type
        if isinstance(t, TensorType) and t.is_static:
            return self.ints(list(t.static_shape))
        return self.op("Shape", [x])

    def rank(self, x: Value, where: str) -> int:
        t = x.type
        if not isinstance(t, TensorType) or t.shape is None:
            raise GradientError(f"{where}: the gradient needs the rank of %{x.name}, unknown here")
        return len(t.shape)

    def sum_to(self, ct: Value, x: Value, where: str) -> Value:
        """``ct`` (of a result broadcast from ``x``) summed back to ``x``'s shape."""
        if ct.type == x.type:
            return ct
        out_rank, in_rank = self.rank(ct, where), self.rank(x, where)
        ct_shape = ct.tensor_type.shape
        x_shape = x.tensor_type.shape
        assert ct_shape is not None and x_shape is not None
        lead = out_rank - in_rank
        static_axes = list(range(lead))
        ambiguous = False
        for k, d in enumerate(x_shape):
            o = ct_shape[lead + k]
            if d == o:
                continue
            if d == 1:
                static_axes.append(lead + k)
            else:
                ambiguous = True  # a dim that may or may not be 1: decided at run time
        out = ct
        if ambiguous:
            out = self._sum_to_at_run_time(ct, x, lead)
        elif static_axes:
            out = self.op("ReduceSum", [ct, self.ints(static_axes)], keepdims=1)
        if out.type != x.type:
            out = self.op("Reshape", [out, self.shape(x)], allowzero=1)
        return out

    def _sum_to_at_run_time(self, ct: Value, x: Value, lead: int) -> Value:
        """Sum ``ct`` over its leading ``lead`` axes and every axis where ``x`` has 1 and ``ct``
        does not, with the axes found at run time."""
        ct_shape = self.op("Shape", [ct])
        x_shape = self.op("Shape", [x])
        if lead:
            ones = self.ints([1] * lead)
            x_shape = self.op("Concat", [ones, x_shape], axis=0)
        one = self.ints(1)
        sums = self.op(
            "And",
            [
                self.op("Equal", [x_shape, one]),
                self.op("Not", [self.op("Equal", [ct_shape, one])]),
            ],
        )
        axes = self.op("Reshape", [self.op("NonZero", [sums]), self.ints([-1])])
        return self.op("ReduceSum", [ct, axes], keepdims=1, noop_with_empty_axes=1)


def active_nodes(
    graph: Graph,
    wanted: Iterable[Value],
    seeds: Iterable[Value],
    reached_out: set[Value] | None = None,
) -> list[Node]:
    """The nodes of ``graph`` on a path from a ``wanted`` value to a ``seeds`` value, in order.
    A path through a sequence or optional value is refused (a GradientError naming the node):
    its gradient would be silently lost, where an integer result's is truly zero."""
    reached = {v for v in wanted if differentiable(v)}
    forward = []
    opaque = {}
    for node in graph.nodes:
        if any(v in reached for v in node.inputs if v is not None):
            forward.append(node)
            reached.update(o for o in node.outputs if differentiable(o))
            for o in node.outputs:
                if not isinstance(o.type, TensorType):
                    reached.add(o)
                    opaque[o] = node
    needed = set(seeds)
    active = []
    for node in reversed(forward):
        if any(o in needed for o in node.outputs):
            active.append(node)
            needed.update(v for v in node.inputs if v is not None)
    for value, node in opaque.items():
        if value in needed:
            raise GradientError(
                f"{node.describe()}: the gradient would flow through %{value.name}, a "
                f"{value.type}; gradients through sequences and optionals are not supported "
                "(a loop that appends to a sequence each step is differentiated once "
                "lower_sequences turns it into a stacked output)"
            )
    active.reverse()
    if reached_out is not None:
        reached_out.update(reached)
    return active


def backprop(
    graph: Graph,
    seeds: Mapping[Value, Value],
    wanted: Sequence[Value],
    options: Options,
) -> list[Value | None]:
    """Append to ``graph`` the backward pass from ``seeds`` (a value of ``graph`` and its
    cotangent) to ``wanted``; their cotangents, None where no path carries one."""
    from . import control

    reached: set[Value] = set()
    active = active_nodes(graph, wanted, seeds, reached)
    # Loops first record what their backward pass reads: the forward is rebuilt so, and the
    # seeds and wanted values it produced are its rebuilt outputs.
    rebuilt: dict[Value, Value] = {}
    prepared = []
    for node in active:
        new = control.prepare(graph, node, options)
        if new is not node:
            rebuilt.update(zip(node.outputs, new.outputs, strict=False))
        prepared.append(new)
    active = prepared
    seeds = {rebuilt.get(v, v): ct for v, ct in seeds.items()}
    wanted = [rebuilt.get(v, v) for v in wanted]
    builder = Builder(graph, options)
    builder.needed = reached | set(wanted)
    cts: dict[Value, Value] = dict(seeds)
    for node in reversed(active):
        outs = [cts.get(o) for o in node.outputs]
        if all(ct is None for ct in outs):
            continue
        if node.op in ZERO_GRADIENT:
            continue
        rule = RULES.get(node.op)
        if rule is None:
            raise GradientError(
                f"{node.describe()}: no gradient rule for {node.op} (see docs/gradients.md)"
            )
        ins = list(rule(builder, node, outs))
        if len(ins) < len(node.inputs):
            ins += [None] * (len(node.inputs) - len(ins))
        for value, ct in zip(node.inputs, ins, strict=False):
            if ct is None or value is None or not differentiable(value):
                continue
            cts[value] = builder.add(cts.get(value), ct)  # type: ignore[assignment]
    return [cts.get(w) for w in wanted]


class LoopRoles(NamedTuple):
    """Which of a Loop's roles its backward computes a cotangent for, by index: carried values
    (all that are float: their cotangents carry the chain), sliced sources and invariants that
    are float and asked for, stacked outputs that have a cotangent."""

    carried: list[int]
    sliced: list[int]
    invariants: list[int]
    stacked: list[int]


def loop_roles(b: Builder, view: Any, stacked_cts: Sequence[Value | None]) -> LoopRoles:
    """The roles of the Loop ``view`` (an ``ir.loop.Loop``) its backward differentiates."""
    return LoopRoles(
        [k for k, c in enumerate(view.carried) if differentiable(c.param)],
        [k for k, s in enumerate(view.sliced) if differentiable(s.param) and b.wants(s.source)],
        [k for k, v in enumerate(view.invariants) if differentiable(v.param) and b.wants(v.value)],
        [m for m, ct in enumerate(stacked_cts) if ct is not None],
    )


def zero_or(builder: Builder, ct: Value | None, like: Value) -> Value:
    return builder.zeros_like(like) if ct is None else ct


def copy_into(graph: Graph, source: Graph, params: Sequence[Value]) -> dict[Value, Value]:
    """Copy ``source``'s nodes to the end of ``graph``, its parameters read as ``params``; the
    mapping from ``source``'s values to the copies."""
    from ..ir.graph import copy_node

    mapping: dict[Value, Value] = dict(zip(source.inputs, params, strict=True))
    for node in source.nodes:
        graph.append(copy_node(node, mapping))
    return mapping


__all__ = [
    "RULES",
    "ZERO_GRADIENT",
    "Builder",
    "Options",
    "active_nodes",
    "backprop",
    "copy_into",
    "differentiable",
    "vjp",
    "zero_or",
]
