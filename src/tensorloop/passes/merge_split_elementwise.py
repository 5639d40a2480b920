"""merge_split_elementwise: one elementwise op over neighbouring pieces of a Split, not one each."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value
from ..tensor.types import TensorType, normalize_axis
from .base import Pass, PassResult
from .common_subexpressions import node_key

UNARY = frozenset(
    {"Sigmoid", "Tanh", "Relu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Softsign", "Softplus"}
    | {"Erf", "Sin", "Cos", "Floor", "Ceil", "Round", "Reciprocal", "Sign", "Not", "HardSigmoid"}
    | {"LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "HardSwish", "Gelu", "Mish"}
)
"""Ops that map each element to one element on their own: applied to a piece of a tensor, they
give exactly that piece of the op applied to the whole."""


class MergeSplitElementwise(Pass):
    """Where neighbouring outputs of a ``Split`` (static sizes) each feed only the same unary
    elementwise op (same attributes), split them as one piece, apply the op once, and split
    its result: an LSTM's three sigmoid gates become one sigmoid over three quarters of the
    gate tensor. Each element is computed by the same op on the same value, so results are
    identical; only the number of op calls falls. Bodies are rewritten too."""

    name = "merge_split_elementwise"

    def run(self, graph: Graph) -> PassResult:
        changed = False
        for g, node in list(graph.walk()):
            if node.op == "Split" and node.graph is g:
                changed |= _merge(g, node)
        return PassResult(graph, changed)


def _sizes(node: Node) -> tuple[int, list[int]] | None:
    """(axis, sizes) of a Split whose piece sizes are known before running, else None."""
    data = node.inputs[0]
    t = None if data is None else data.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    axis = node.attrs.get("axis", 0)
    if not -len(t.shape) <= axis < len(t.shape):
        return None
    axis = normalize_axis(axis, len(t.shape), "Split")
    sizes: list[int] = []
    for out in node.outputs:
        ot = out.type
        if not isinstance(ot, TensorType) or ot.shape is None or len(ot.shape) != len(t.shape):
            return None
        d = ot.shape[axis]
        if not isinstance(d, int):
            return None
        sizes.append(d)
    return axis, sizes


def _consumer_key(graph: Graph, value: Value) -> Hashable | None:
    """The key of the one unary op that alone reads ``value``, or None."""
    if value in graph.outputs or len(value.uses) != 1:
        return None
    user = value.uses[0].node
    if user.op not in UNARY or len(user.inputs) != 1 or len(user.outputs) != 1:
        return None
    key = node_key(user)
    return None if not isinstance(key, tuple) else (user.op, key[2])  # op and attributes


def _merge(graph: Graph, split: Node) -> bool:
    found = _sizes(split)
    if found is None or split.inputs[0] is None:
        return False
    axis, sizes = found
    keys = [_consumer_key(graph, out) for out in split.outputs]
    runs: list[list[int]] = []  # groups of neighbouring output indices
    for k, key in enumerate(keys):
        if runs and key is not None and keys[runs[-1][-1]] == key:
            runs[-1].append(k)
        else:
            runs.append([k])
    if all(len(r) == 1 for r in runs):
        return False
    em = Emitter(graph, anchor=split)
    merged = [sum(sizes[k] for k in r) for r in runs]
    pieces = em.node(
        "Split",
        [split.inputs[0], em.op("Constant", [], {"value": np.array(merged, np.int64)})],
        {"axis": axis},
        name=split.name,
    ).outputs
    for run, piece in zip(runs, pieces, strict=True):
        if len(run) == 1:
            graph.replace(split.outputs[run[0]], piece)
            continue
        users = [split.outputs[k].uses[0].node for k in run]
        first = users[0]
        whole = em.node(first.op, [piece], first.attrs, name=first.name).outputs[0]
        cut = em.op("Constant", [], {"value": np.array([sizes[k] for k in run], np.int64)})
        parts = em.node("Split", [whole, cut], {"axis": axis}).outputs
        for user, part in zip(users, parts, strict=True):
            graph.replace(user.outputs[0], part)
            graph.erase(user)
    graph.erase(split)
    return True


merge_split_elementwise = MergeSplitElementwise()
