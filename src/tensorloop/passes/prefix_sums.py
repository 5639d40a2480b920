"""loop_prefix_sums: a running sum carried through a loop becomes one PrefixSum over its source."""

from __future__ import annotations

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, static_type
from ..ir.loop import Carried, Loop, SlicedInput
from ..ops.reduce import PREFIX_SUM_DTYPES
from ..tensor.types import normalize_axis
from .base import Pass, PassResult

INT64_MAX = np.iinfo(np.int64).max


class LoopPrefixSums(Pass):
    """Compute a carried running sum ``acc = acc + x[i]`` (``x`` a sliced source, ``acc`` and
    the slice of one static type) in front of the Loop as one ``PrefixSum`` over ``x`` with the
    initial value put first: its rows are the values ``acc`` takes, the stacked outputs that
    read them (after the add: inclusive; before: exclusive) are slices of it, and the final value
    is its last row. The Loop keeps computing everything else; its outputs that the sum replaces
    are left unread for ``eliminate_dead_loop_values``.

    Applies when nothing can stop the loop before the end of ``x``: no condition, no trip count
    or a constant one no smaller than ``x``'s static length, and every other sliced source of
    the same static length; ``acc`` and its next value are read by nothing but the add, the loop
    and stacked outputs on ``x``'s axis and direction; and the element type is one of
    ``PREFIX_SUM_DTYPES`` (float16, bfloat16, float32, float64 and the 8- to 64-bit integers).
    ``PrefixSum`` adds in the loop's order and in the loop's type, one rounding (or wrap) per
    step as the Add does, so the results are bit for bit the loop's: cancellation, overflow to
    inf, NaN, infinities and signed zeros included. (``CumSum``, which may accumulate floats in
    float64, is not used: it would differ.)
    """

    name = "loop_prefix_sums"

    def run(self, graph: Graph) -> PassResult:
        changed = False
        for g, node in list(graph.walk()):
            if node.op == "Loop" and node.graph is g:
                changed |= _rewrite(g, Loop(node))
        return PassResult(graph, changed)


def _copied(node: Node) -> bool:
    """An Identity whose output only the loop reads (as a result)."""
    return node.op == "Identity" and not node.outputs[0].uses


def _twin(node: Node, add: Node) -> bool:
    """Another Add of the same two values whose output only the loop reads (as a result): two
    results that are the same sum, which common-subexpression elimination leaves apart."""
    return (
        node.op == "Add"
        and node is not add
        and sorted(map(id, node.inputs)) == sorted(map(id, add.inputs))
        and not node.outputs[0].uses
    )


def _base(v: Value, add: Node | None = None) -> Value:
    """``v`` seen through Identities (and as ``add``'s output if it is its twin)."""
    while v.producer is not None and v.producer.op == "Identity" and v.producer.inputs[0]:
        v = v.producer.inputs[0]
    if add is not None and v.producer is not None and _twin(v.producer, add):
        return add.outputs[0]
    return v


def _runs_to_the_end(loop: Loop, length: int) -> bool:
    if loop.condition is not None or loop.continue_condition.constant is None:
        return False
    if not bool(np.asarray(loop.continue_condition.constant).reshape(-1)[0]):
        return False
    if loop.trip_count is not None:
        data = loop.trip_count.constant
        if data is None or data.size != 1 or int(data.reshape(-1)[0]) < length:
            return False
    for s in loop.sliced:
        t = static_type(s.source)
        if t is None or t.shape is None or not -len(t.shape) <= s.spec.axis < len(t.shape):
            return False
        if t.shape[s.spec.axis] != length:
            return False
    return True


def _running_sum(loop: Loop, c: Carried) -> SlicedInput | None:
    """The sliced input ``c`` adds each iteration, if ``c`` is such a running sum."""
    add = c.next.producer
    if add is None or add.op != "Add" or add.graph is not loop.body or len(add.inputs) != 2:
        return None
    if c.param not in add.inputs or add.inputs[0] is add.inputs[1]:
        return None
    other = add.inputs[1] if add.inputs[0] is c.param else add.inputs[0]
    sliced = next((s for s in loop.sliced if s.param is other), None)
    t = static_type(c.param)
    if sliced is None or t is None or t.dtype not in PREFIX_SUM_DTYPES:
        return None
    if any(static_type(v) != t for v in (c.initial, c.next, other)):
        return None
    if any(
        u.node is not add and not _copied(u.node) and not _twin(u.node, add) for u in c.param.uses
    ):
        return None
    if not all(_copied(u.node) for u in c.next.uses):
        return None
    carried_results = [x.next for x in loop.carried]
    if carried_results.count(c.next) != 1 or c.param in carried_results:
        return None
    return sliced


def _rewrite(graph: Graph, loop: Loop) -> bool:
    changed = False
    for c in loop.carried:
        sliced = _running_sum(loop, c)
        if sliced is None or c.initial is None or sliced.source is None:
            continue
        source = static_type(sliced.source)
        if source is None or source.shape is None:
            continue  # a source of dynamic shape (a slice of a static one can be static)
        axis = normalize_axis(sliced.spec.axis, len(source.shape), "Loop")
        length = source.shape[axis]
        if not isinstance(length, int) or not _runs_to_the_end(loop, length):
            continue
        reverse = sliced.spec.reverse
        add = c.next.producer
        stacked = [s for s in loop.stacked if _base(s.result, add) in (c.next, c.param)]
        rank = len(source.shape)
        if any(
            normalize_axis(s.spec.axis, rank, "Loop") != axis or s.spec.reverse != reverse
            for s in stacked
        ):
            continue
        em = Emitter(graph, anchor=loop.node)

        def ints(*values: int) -> Value:
            return em.op("Constant", [], {"value": np.array(values, np.int64)})  # noqa: B023

        first = em.op("Unsqueeze", [c.initial, ints(axis)])
        parts = [sliced.source, first] if reverse else [first, sliced.source]
        whole = em.op("Concat", parts, {"axis": axis})
        sums = em.op(
            "PrefixSum", [whole], {"axis": axis, "reverse": 1} if reverse else {"axis": axis}
        )
        # Row k of ``sums`` (counted from the end when reverse) is acc after k trips.
        after = (0, -1) if reverse else (1, INT64_MAX)
        before = (1, INT64_MAX) if reverse else (0, -1)
        for s in stacked:
            lo, hi = after if _base(s.result, add) is c.next else before
            rows = em.op("Slice", [sums, ints(lo), ints(hi), ints(axis)])
            graph.replace(s.output, rows)
        last = em.op("Gather", [sums, ints(0 if reverse else -1)], {"axis": axis})
        final = em.op("Squeeze", [last, ints(axis)])
        graph.replace(c.final, final)
        changed = True
    return changed


loop_prefix_sums = LoopPrefixSums()
