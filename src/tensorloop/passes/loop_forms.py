"""Loops that exporters write as while loops or index reads, rewritten to the canonical roles.

Converters of while loops (tf2onnx's ``tf.while_loop``, ONNX ``Loop`` bodies written by hand or
by ``torch.onnx``) say "for each time step" in the words of a while loop: a counter carried from
0 and a condition ``counter + 1 < N`` on a length carried unchanged, weights carried unchanged,
and each step's input read by ``Gather(x, counter)``. These rewrites give such a loop the roles
the canonical Loop has for them, each without changing what the loop computes:

- ``pass_through_invariants``: a carried value the body passes on unchanged is an invariant (its
  final value is its initial one);
- ``count_while_loops``: a loop whose condition is a counter from 0 below a bound counts
  ``max(bound, 1)`` trips (the first runs whatever the bound) with no condition; its body reads
  the iteration number where it read the counter as an index;
- ``slice_indexed_reads``: an invariant read only as ``Gather(x, iteration)`` on one axis is a
  sliced input. That is the same while the loop runs within ``x``'s length; beyond it the read
  fails where the slice stops the loop, so the caller (``make_step``) checks the trip count.
"""

from __future__ import annotations

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value
from ..ir.loop import Loop, Sliced
from ..tensor.types import TensorType, normalize_axis
from .loop_rewrite import loop_roles, rebuild_roles


def _top_loops(graph: Graph) -> list[Loop]:
    return [Loop(n) for n in list(graph.nodes) if n.op == "Loop"]


def _passed_on(param: Value, nxt: Value) -> bool:
    """Whether the body result ``nxt`` is its parameter ``param`` unchanged."""
    while nxt is not param and nxt.producer is not None and nxt.producer.op == "Identity":
        nxt = nxt.producer.inputs[0]  # type: ignore[assignment]
    return nxt is param


def pass_through_invariants(graph: Graph) -> bool:
    """Make each carried value of a top-level loop that its body passes on unchanged an
    invariant; returns whether any loop changed."""
    changed = False
    for loop in _top_loops(graph):
        roles = loop_roles(loop)
        through = [c for c in roles.carried if _passed_on(c[1], c[2])]
        if not through:
            continue
        roles.carried = [c for c in roles.carried if c not in through]
        roles.invariants = [(c[0], c[1]) for c in through] + roles.invariants
        dropped = {c[3]: c[0] for c in through if c[3] is not None}
        rebuild_roles(graph, loop, roles, dropped)
        changed = True
    return changed


def _int_constant(v: Value | None) -> int | None:
    data = None if v is None else v.constant
    if data is None or data.size != 1 or data.dtype.kind not in "iu":
        return None
    return int(data.reshape(-1)[0])


def _through_casts(v: Value) -> Value:
    while v.producer is not None and v.producer.op in ("Cast", "Identity"):
        nxt = v.producer.inputs[0]
        assert nxt is not None
        v = nxt
    return v


def _counter(loop: Loop) -> tuple[int, Value] | None:
    """The carried counter and the bound of a loop whose continue condition is
    ``counter_next < bound`` (casts aside): the counter's index among the carried values,
    carried from the constant 0 by ``+ 1``, and the bound, an invariant's outer value."""
    cond = loop.continue_condition.producer
    if cond is None or cond.op != "Less":
        return None
    left, right = (_through_casts(v) for v in cond.inputs if v is not None)
    outer = {i.param: i.value for i in loop.invariants}
    bound = outer.get(right)
    if bound is None:
        return None
    for k, c in enumerate(loop.carried):
        step = c.next.producer
        if c.next is not left or step is None or step.op != "Add":
            continue
        a, b = step.inputs
        if c.param not in (a, b) or _int_constant(c.initial) != 0:
            continue
        one = b if a is c.param else a
        if _int_constant(one) == 1 and isinstance(c.param.type, TensorType):
            return k, bound
    return None


def count_while_loops(graph: Graph) -> bool:
    """Give each top-level while loop that counts from 0 below a bound (run from a constant
    true condition) the trip count ``max(bound, 1)`` and no condition; its body reads the
    iteration number where it gathered by the counter. Call ``pass_through_invariants``
    first: the bound must be an invariant. Returns whether any loop changed."""
    changed = False
    for loop in _top_loops(graph):
        if loop.trip_count is not None or not loop.always_starts or loop.always_continues:
            continue
        found = _counter(loop)
        if found is None:
            continue
        k, bound = found
        counter = loop.carried[k].param
        for use in list(counter.uses):
            if use.node.op == "Gather" and use.port == 1:
                use.node.set_input(1, loop.iteration)
        roles = loop_roles(loop)
        em = Emitter(graph, anchor=loop.node)
        fixed = _int_constant(bound)
        if fixed is not None:
            roles.trip = em.ints(max(fixed, 1))
        else:
            trips = bound
            if trips.tensor_type.dtype != loop.iteration.tensor_type.dtype:
                trips = em.op("Cast", [trips], {"to": loop.iteration.tensor_type.dtype})
            roles.trip = em.op("Max", [trips, em.ints(1)])
        roles.condition = None
        roles.continue_condition = Emitter(loop.body).const(np.array(True))
        rebuild_roles(graph, loop, roles, {})
        changed = True
    return changed


def slice_indexed_reads(graph: Graph) -> dict[Node, str]:
    """Make each top-level loop that reads an invariant only by ``Gather(x, iteration)`` on
    one axis slice it instead. Returns the loops rewritten, each with the name of a value it
    now slices (the caller checks that their trip counts are within those lengths)."""
    rewritten: dict[Node, str] = {}
    for loop in _top_loops(graph):
        picks: dict[Value, int] = {}
        for inv in loop.invariants:
            rank = None if not isinstance(inv.param.type, TensorType) else inv.param.type.rank
            uses = inv.param.uses
            gathers = [u.node for u in uses if u.node.op == "Gather" and u.port == 0]
            if rank is None or not uses or len(gathers) != len(uses):
                continue
            if any(g.inputs[1] is not loop.iteration for g in gathers):
                continue
            axes = {normalize_axis(g.attrs.get("axis", 0), rank) for g in gathers}
            if len(axes) == 1:
                picks[inv.param] = axes.pop()
        if not picks:
            continue
        roles = loop_roles(loop)
        name = next(v.name for v, p in roles.invariants if p in picks)
        body = loop.body
        for value, param in [i for i in roles.invariants if i[1] in picks]:
            axis = picks[param]
            t = param.tensor_type
            assert t.shape is not None
            row = Value(
                body.unique_name(param.name),
                t.with_shape(t.shape[:axis] + t.shape[axis + 1 :]),
                graph=body,
            )
            for use in list(param.uses):
                gather = use.node
                body.replace(gather.outputs[0], row)
                body.erase(gather)
            roles.sliced.append((value, Sliced(axis), row))
        roles.invariants = [i for i in roles.invariants if i[1] not in picks]
        new = rebuild_roles(graph, loop, roles, {})
        rewritten[new.node] = name
    return rewritten


__all__ = ["count_while_loops", "pass_through_invariants", "slice_indexed_reads"]
