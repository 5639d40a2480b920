"""merge_split_elementwise: one elementwise op over neighbouring pieces of a Split, not one each."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, constant_ints
from ..ops.shape import slice_bounds
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

EXACT_READERS = frozenset(
    {"Add", "Sub", "Mul", "Div", "Max", "Min", "Neg", "Abs", "Relu", "Where", "Not"}
    | {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}
)
"""Elementwise ops each of whose results is one IEEE operation (or a choice) on the elements at
its place: the same bits whatever the memory layout of their operands, and a result laid out
row-major as theirs are."""


class MergeSplitElementwise(Pass):
    """Where neighbouring pieces of one tensor each feed only the same unary elementwise op
    (same attributes), take them as one piece, apply the op once, and split its result: an
    LSTM's three sigmoid gates become one sigmoid over three quarters of the gate tensor. The
    pieces are the outputs of a ``Split`` of static sizes of an axis of static size, or
    ``Slice``s of one value on one axis of static size with constant bounds and step 1 whose
    ranges meet end to start (in any order in the graph). Each element is computed by the same
    op on the same value, so results are identical bit for bit (checked for every op in
    ``UNARY``, float16 to float64, pieces contiguous or strided, in
    tests/passes/test_merge_split_elementwise.py); only the number of op calls falls.

    Each piece's result becomes a view of the merged result rather than an array of its own:
    one with gaps between its rows where the pieces cut an axis after one of more than one
    element. What reads it may round by layout (NumPy's MatMul takes other BLAS kernels for
    other strides), so such pieces merge only where their results are read by
    ``EXACT_READERS`` alone (and are no body's results, which go on to unknown readers). No
    node the pass adds or removes can fail: the ops in ``UNARY`` cannot on the types they
    accept (IEEE faults give inf or NaN), and the Splits and Slices cut axes of static size, as
    the pieces did. Bodies are rewritten too."""

    name = "merge_split_elementwise"

    def run(self, graph: Graph) -> PassResult:
        changed = False
        for g, node in list(graph.walk()):
            if node.op == "Split" and node.graph is g:
                changed |= _merge(g, node, g is graph)
        for g in [graph, *(sub for _, n in graph.walk() for sub in n.subgraphs.values())]:
            for value in list(g.values()):
                changed |= _merge_slices(g, value, g is graph)
        return PassResult(graph, changed)


def _sizes(node: Node) -> tuple[int, list[int]] | None:
    """(axis, sizes) of a Split whose piece sizes are known before running and cut an axis of
    static size, else None: a Split of an axis known only at run time may fail, and one with
    other sizes would report other sizes."""
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
    return (axis, sizes) if t.shape[axis] == sum(sizes) else None


def _consumer_key(graph: Graph, value: Value, axis: int, top: bool) -> Hashable | None:
    """The key of the one unary op that alone reads ``value`` (a piece cut on ``axis`` of a
    value of ``graph``, the top-level graph if ``top``), whose result its readers may as well
    read as a view of the merged result; or None."""
    if value in graph.outputs or len(value.uses) != 1:
        return None
    user = value.uses[0].node
    if user.op not in UNARY or len(user.inputs) != 1 or len(user.outputs) != 1:
        return None
    if not _read_alike(graph, value, user.outputs[0], axis, top):
        return None
    key = node_key(user)
    return None if not isinstance(key, tuple) else (user.op, key[2])  # op and attributes


def _read_alike(graph: Graph, piece: Value, result: Value, axis: int, top: bool) -> bool:
    """Whether what reads ``result`` (the unary op's result on ``piece``) gets the same bits
    from a view of the merged result: the view is C-contiguous as the result was (no dim before
    ``axis`` above 1), or it is read by ``EXACT_READERS`` alone and, but at the top level, is
    no result of its graph."""
    t = piece.type
    if isinstance(t, TensorType) and t.shape is not None and all(d == 1 for d in t.shape[:axis]):
        return True
    if result in graph.outputs and not top:
        return False
    return all(u.node.op in EXACT_READERS and not u.node.subgraphs for u in result.uses)


def _merge(graph: Graph, split: Node, top: bool) -> bool:
    found = _sizes(split)
    if found is None or split.inputs[0] is None:
        return False
    axis, sizes = found
    keys = [_consumer_key(graph, out, axis, top) for out in split.outputs]
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
    _erase_with_constants(graph, split)
    return True


def _slice_range(graph: Graph, node: Node, top: bool) -> tuple[int, int, int, Hashable] | None:
    """(axis, start, end, key) of a Slice with constant bounds and step 1 that takes part of one
    axis of static size (and the whole of any other axis it lists), whose output feeds one unary
    op alone (``_consumer_key``); else None."""
    if node.op != "Slice" or len(node.inputs) < 3 or node.inputs[0] is None:
        return None
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    starts, ends = constant_ints(node.inputs[1]), constant_ints(node.inputs[2])
    if starts is None or ends is None or len(starts) != len(ends):
        return None
    axes = list(range(len(starts))) if len(node.inputs) < 4 else constant_ints(node.inputs[3])
    steps = [1] * len(starts) if len(node.inputs) < 5 else constant_ints(node.inputs[4])
    if axes is None or steps is None or len(axes) != len(starts) or set(steps) != {1}:
        return None
    partial: list[tuple[int, int, int]] = []
    for a, start, end in zip(axes, starts, ends, strict=True):
        if not -len(t.shape) <= a < len(t.shape):
            return None
        axis = normalize_axis(a, len(t.shape), "Slice")
        dim = t.shape[axis]
        if not isinstance(dim, int):
            return None
        lo, hi, count = slice_bounds(dim, start, end, 1)
        if count == 0:
            return None
        if (lo, hi) != (0, dim):
            partial.append((axis, lo, hi))
    if len(partial) != 1:
        return None
    axis, lo, hi = partial[0]
    key = _consumer_key(graph, node.outputs[0], axis, top)
    return None if key is None else (axis, lo, hi, key)


def _merge_slices(graph: Graph, value: Value, top: bool) -> bool:
    groups: dict[tuple[int, Hashable], list[tuple[int, int, Node]]] = {}
    for use in value.uses:
        node = use.node
        found = _slice_range(graph, node, top) if use.port == 0 and node.graph is graph else None
        if found is not None:
            axis, lo, hi, key = found
            groups.setdefault((axis, key), []).append((lo, hi, node))
    changed = False
    for (axis, _), pieces in groups.items():
        pieces.sort(key=lambda p: (p[0], p[1]))
        run = [pieces[0]]
        for piece in [*pieces[1:], None]:
            if piece is not None and piece[0] == run[-1][1]:
                run.append(piece)
                continue
            if len(run) > 1:
                _merge_run(graph, value, axis, run)
                changed = True
            if piece is not None:
                run = [piece]
    return changed


def _merge_run(graph: Graph, value: Value, axis: int, run: list[tuple[int, int, Node]]) -> None:
    first = min((n for _, _, n in run), key=graph.nodes.index)
    em = Emitter(graph, anchor=first)

    def ints(*values: int) -> Value:
        return em.op("Constant", [], {"value": np.array(values, np.int64)})

    whole = em.op("Slice", [value, ints(run[0][0]), ints(run[-1][1]), ints(axis)])
    users = [n.outputs[0].uses[0].node for _, _, n in run]
    applied = em.node(users[0].op, [whole], users[0].attrs, name=users[0].name).outputs[0]
    sizes = ints(*(hi - lo for lo, hi, _ in run))
    parts = em.node("Split", [applied, sizes], {"axis": axis}).outputs
    for user, part in zip(users, parts, strict=True):
        graph.replace(user.outputs[0], part)
        graph.erase(user)
    for _, _, node in run:
        _erase_with_constants(graph, node)


def _erase_with_constants(graph: Graph, node: Node) -> None:
    """Erase ``node`` and the Constants that fed only it."""
    feeding = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    graph.erase(node)
    for producer in feeding:
        if producer.op == "Constant" and producer.graph is graph:
            out = producer.outputs[0]
            if not out.uses and out not in graph.outputs:
                graph.erase(producer)


merge_split_elementwise = MergeSplitElementwise()
