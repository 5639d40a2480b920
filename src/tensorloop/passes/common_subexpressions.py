"""eliminate_common_subexpressions: merge nodes that compute the same values, in each graph."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from ..errors import TensorloopError
from ..ir.graph import Graph, Node
from ..ir.opdef import get_opdef
from .base import Pass, PassResult
from .hoist_invariants import is_pure


class EliminateCommonSubexpressions(Pass):
    """Merge each node into the first earlier node of its graph with the same op, the same
    inputs (the same values, in the same order), equal attributes (defaults filled in;
    constants equal in dtype, shape and bytes) and equal output types; consumers and results
    read the first one's outputs, and results keep their names. Nodes holding bodies, with side
    effects, reading variables or drawing random numbers are never merged, nor nodes whose
    output and its twin are both results of the graph (merging them would only trade a node
    for an Identity). Each body is its own scope: a body node merges only with nodes of the
    same body.

    Exact, errors included: a merged node's readers get the very arrays its twin computed from
    the same inputs (layout and all), and where a merged node would have failed, its twin,
    earlier in the same graph and on the same inputs, fails first, on the reference as on the
    unrewritten graph.
    """

    name = "eliminate_common_subexpressions"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _merge_in(graph))


def _merge_in(graph: Graph) -> bool:
    changed = False
    first: dict[Hashable, Node] = {}
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            changed |= _merge_in(sub)
        key = node_key(node)
        if key is None:
            continue
        kept = first.setdefault(key, node)
        if kept is node or _both_results(graph, node, kept):
            continue
        for old, new in zip(node.outputs, kept.outputs, strict=True):
            # Graph.replace names a value after a result it stands for, and otherwise after
            # the value it replaces; the kept node is no new value, so it keeps its name then.
            was_result, name = old in graph.outputs, new.name
            graph.replace(old, new)
            if not was_result:
                graph.rename(new, name)
        graph.erase(node)
        changed = True
    return changed


def _both_results(graph: Graph, node: Node, kept: Node) -> bool:
    """True if an output of ``node`` and its twin in ``kept`` are both graph results: merging
    them would only trade ``node`` for an Identity that keeps the result's name."""
    results = set(graph.outputs)
    return any(
        a in results and b in results for a, b in zip(node.outputs, kept.outputs, strict=True)
    )


class _UnhashableError(Exception):
    pass


def _attr_key(value: Any) -> Hashable:
    if isinstance(value, np.ndarray | np.generic):
        data = np.asarray(value)
        return ("array", data.dtype.str, data.shape, data.tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_attr_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _attr_key(v)) for k, v in value.items())))
    if isinstance(value, float):
        return ("float", value.hex())  # tells 0.0 from -0.0; a NaN equals itself
    try:
        hash(value)
    except TypeError:
        raise _UnhashableError from None
    return (type(value).__qualname__, value)


def node_key(node: Node) -> Hashable | None:
    """What ``node`` computes, as a key equal for nodes that compute the same values; None if
    it may not be merged."""
    if node.subgraphs or not is_pure(node):
        return None
    try:
        attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
        key = tuple(sorted((k, _attr_key(v)) for k, v in attrs.items()))
        full = (node.op, tuple(node.inputs), key, tuple(o.type for o in node.outputs))
        hash(full)
    except (TensorloopError, _UnhashableError, TypeError):
        return None
    return full


eliminate_common_subexpressions = EliminateCommonSubexpressions()
