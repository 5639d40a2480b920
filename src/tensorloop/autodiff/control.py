"""The gradients of Loop and If: a loop's backward is a loop over its iterations in reverse.

``prepare`` rebuilds a Loop on the path of a gradient so that it also stacks, every
iteration, its iteration number and its carried values as they enter the body (what the
backward reads; the trip count of a while loop is the number of rows). The rule then builds
the backward Loop: each of its iterations reads one forward iteration's stored values (last
first), recomputes that iteration's body and runs the body's backward pass
(``core.backprop`` on the body), carrying the carried values' cotangents back and summing the
invariants'. A sliced input's cotangent leaves as a stacked output, row for row.

With ``checkpoint`` set, the forward stores only the carried values at the start of every
k-th iteration (an extra loop of segments, ``_checkpoints``), and the backward recomputes each
segment's carried values from its checkpoint before running the segment backwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import GradientError
from ..ir.branch import If
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, clone_graph
from ..ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ..tensor.types import TensorType
from .checkpoint import checkpointed
from .core import Builder, Options, backprop, copy_into, differentiable, loop_roles, vjp, zero_or


@dataclass(frozen=True)
class Stored:
    """What a prepared Loop stacks for its backward: its own stacked outputs come first
    (``user`` of them), then the iteration numbers, then, unless ``checkpoint`` is set, one per
    carried value (a checkpointed loop keeps them every k-th trip instead: checkpoint.py)."""

    user: int
    checkpoint: int | str | None = None


def prepare(graph: Graph, node: Node, options: Options) -> Node:
    """``node``, rebuilt (in place in ``graph``) to store what its backward reads."""
    if node.op != "Loop" or node in options.stored:
        return node
    view = Loop(node)
    for c in view.carried:
        if _changes_shape(c.initial, c.next):
            raise GradientError(
                f"{node.describe()}: carried value %{c.param.name} changes shape from one "
                f"iteration to the next ({_type_of(c.initial)} at first, then "
                f"{_type_of(c.next)}); its gradient needs every iteration's value, which "
                "cannot be stacked"
            )
    body = clone_graph(view.body)
    checkpoint = None if node in options.store_all else options.for_loop(node.name)
    if checkpoint is not None and checkpoint != "sqrt" and not isinstance(checkpoint, int):
        raise GradientError(
            f"{node.describe()}: checkpoint must be None, an int k or 'sqrt', got {checkpoint!r}"
        )
    kept = 1 if checkpoint is not None else 1 + view.counts.carried
    body.outputs = [*body.outputs, *body.inputs[:kept]]
    attrs = dict(node.attrs)
    attrs["body"] = body
    attrs["stacked"] = (*attrs["stacked"], *[Stacked()] * kept)
    new = graph.add_node("Loop", list(node.inputs), attrs, name=node.name, before=node)
    for old, value in zip(node.outputs, new.outputs, strict=False):
        graph.replace(old, value)
    graph.erase(node)
    options.stored[new] = Stored(len(view.stacked), checkpoint)
    if node in options.store_all:
        options.store_all.add(new)
    return new


def _type_of(value: Value | None) -> str:
    return "none" if value is None else str(value.type)


def _changes_shape(initial: Value | None, next_: Value) -> bool:
    """Whether a carried value's types say its shape changes: a rank, or a known dim, that
    differs between its initial value and the body's next value."""
    a = None if initial is None else initial.type
    b = next_.type
    if not isinstance(a, TensorType) or not isinstance(b, TensorType):
        return False
    if a.shape is None or b.shape is None:
        return False
    if len(a.shape) != len(b.shape):
        return True
    pairs = zip(a.shape, b.shape, strict=True)
    return any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in pairs)


def _trips(b: Builder, iterations: Value) -> Value:
    """The number of trips the forward ran: the rows of its stored iteration numbers."""
    return b.op("Size", [iterations])


def _same_length(view: Loop) -> bool:
    """Whether every sliced source has exactly as many rows as the loop runs trips: no trip
    count, no condition that can stop it, sources of one static length (or just one)."""
    if view.trip_count is not None or view.can_stop_early:
        return False
    lengths = set()
    for s in view.sliced:
        t = s.source.tensor_type if s.source is not None else None
        if t is None or t.shape is None:
            return False
        lengths.add(t.shape[s.spec.axis % len(t.shape)])
    return len(lengths) <= 1


def _rows(b: Builder, source: Value, spec: Sliced, trips: Value) -> Value:
    """The rows of ``source`` that ``trips`` iterations read: the first ones, or the last ones
    for a reverse slice."""
    rank = b.rank(source, "a sliced input")
    axis = spec.axis % rank
    n = b.op("Reshape", [trips, b.ints([1])])
    if not spec.reverse:
        return b.op("Slice", [source, b.ints([0]), n, b.ints([axis])])
    length = b.op("Gather", [b.op("Shape", [source]), b.ints([axis])], axis=0)
    start = b.op("Sub", [length, n])
    return b.op("Slice", [source, start, b.ints([np.iinfo(np.int64).max]), b.ints([axis])])


def _pad_rows(b: Builder, rows: Value, source: Value, spec: Sliced) -> Value:
    """``rows`` (the cotangents of the rows read) padded with zeros to ``source``'s length."""
    rank = b.rank(source, "a sliced input")
    axis = spec.axis % rank
    have = b.op("Gather", [b.op("Shape", [rows]), b.ints([axis])], axis=0)
    want = b.op("Gather", [b.op("Shape", [source]), b.ints([axis])], axis=0)
    missing = b.op("Sub", [want, have])
    at = axis + rank if not spec.reverse else axis  # zeros after the rows, or before them
    pads = b.op("Concat", [b.ints([0] * at), missing, b.ints([0] * (2 * rank - at - 1))], axis=0)
    return b.op("Pad", [rows, pads])


@vjp("Loop")
def _loop(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    stored = b.options.stored.get(node)
    if stored is None:  # pragma: no cover - backprop prepares every Loop it differentiates
        raise GradientError(f"{node.describe()}: the loop was not prepared for its gradient")
    if stored.checkpoint is not None:
        trips = _trips(b, Loop(node).counts.split_outputs(node.outputs)[1][stored.user])
        return checkpointed(b, node, cts, trips, stored.checkpoint)
    view = Loop(node)
    n = view.counts.carried
    body = view.body
    finals, stacked_outs = view.counts.split_outputs(node.outputs)
    user = stacked_outs[: stored.user]
    iterations = stacked_outs[stored.user]
    carried_in = stacked_outs[stored.user + 1 :]
    final_cts = cts[:n]
    stacked_cts = cts[n : n + stored.user]
    results = view.counts.split_results(body.outputs)
    user_results = results.per_iteration[: stored.user]

    d_carried, d_sliced, d_inv, d_stacked = loop_roles(b, view, stacked_cts)

    # -- the backward body -----------------------------------------------------------------
    g = Graph(f"{body.name}_grad")
    g.add_input("j", ITERATION_TYPE)
    p_dc = [
        g.add_input(f"d_{view.carried[k].param.name}", view.carried[k].param.type)
        for k in d_carried
    ]
    p_acc = [
        g.add_input(f"acc_{view.invariants[k].param.name}", view.invariants[k].param.type)
        for k in d_inv
    ]
    p_it = g.add_input(body.inputs[0].name, ITERATION_TYPE)
    p_carried = [g.add_input(c.param.name, c.param.type) for c in view.carried]
    p_slices = [g.add_input(s.param.name, s.param.type) for s in view.sliced]
    p_dys = [g.add_input(f"d_{user_results[m].name}", user_results[m].type) for m in d_stacked]
    p_inv = [g.add_input(v.param.name, v.param.type) for v in view.invariants]
    mapping = copy_into(g, body, [p_it, *p_carried, *p_slices, *p_inv])
    gb = Builder(g, b.options)
    seeds: dict[Value, Value] = {}

    def seed(value: Value, ct: Value) -> None:
        key = mapping[value]
        seeds[key] = gb.add(seeds.get(key), ct)  # type: ignore[assignment]

    for k, p in zip(d_carried, p_dc, strict=True):
        seed(results.carried[k], p)
    for m, p in zip(d_stacked, p_dys, strict=True):
        seed(user_results[m], p)
    wanted = [mapping[view.carried[k].param] for k in d_carried]
    wanted += [mapping[view.sliced[k].param] for k in d_sliced]
    wanted += [mapping[view.invariants[k].param] for k in d_inv]
    grads = backprop(g, seeds, wanted, b.options)
    g_carried = grads[: len(d_carried)]
    g_sliced = grads[len(d_carried) : len(d_carried) + len(d_sliced)]
    g_inv = grads[len(d_carried) + len(d_sliced) :]
    true = Emitter(g).const(np.asarray(True))
    outs = [true]
    outs += [zero_or(gb, ct, wanted[i]) for i, ct in enumerate(g_carried)]
    for acc, ct in zip(p_acc, g_inv, strict=True):
        outs.append(acc if ct is None else gb.op("Add", [acc, ct]))
    base = len(d_carried)
    outs += [zero_or(gb, ct, wanted[base + i]) for i, ct in enumerate(g_sliced)]
    g.outputs = outs

    # -- the backward loop -----------------------------------------------------------------
    trips = _trips(b, iterations)
    same = _same_length(view)
    carried = [zero_or(b, final_cts[k], finals[k]) for k in d_carried]
    carried += [b.zeros_like(view.invariants[k].value) for k in d_inv]  # type: ignore[arg-type]
    sliced: list[tuple[Value, Sliced]] = [(iterations, Sliced(0, True))]
    sliced += [(c, Sliced(0, True)) for c in carried_in]
    sources = []
    for s in view.sliced:
        assert s.source is not None
        src = s.source if same else _rows(b, s.source, s.spec, trips)
        sources.append(src)
        sliced.append((src, Sliced(s.spec.axis, not s.spec.reverse)))
    for m in d_stacked:
        ct = stacked_cts[m]
        assert ct is not None
        spec = view.stacked[m].spec
        sliced.append((ct, Sliced(spec.axis, not spec.reverse)))
    invariants = [v.value for v in view.invariants]
    if any(v is None for v in invariants):  # pragma: no cover - a Loop's invariants are values
        raise GradientError(f"{node.describe()}: an invariant is missing")
    stacked = [Stacked(view.sliced[k].spec.axis, not view.sliced[k].spec.reverse) for k in d_sliced]
    back = Loop.build(
        b.em,
        g,
        carried=carried,
        sliced=sliced,
        invariants=invariants,  # type: ignore[arg-type]
        stacked=stacked,
        name=f"{node.name}_grad" if node.name else "",
    )
    outputs = back.node.outputs
    ins: list[Value | None] = [None] * len(node.inputs)
    first = 2  # max_trip_count, initial_condition
    for i, k in enumerate(d_carried):
        ins[first + k] = outputs[i]
    inv_base = first + n + len(view.sliced)
    for i, k in enumerate(d_inv):
        ins[inv_base + k] = outputs[len(d_carried) + i]
    finals_count = len(d_carried) + len(d_inv)
    for i, k in enumerate(d_sliced):
        rows = outputs[finals_count + i]
        s = view.sliced[k]
        assert s.source is not None
        ins[first + n + k] = rows if same else _pad_rows(b, rows, s.source, s.spec)
    del user, sources
    return ins


@vjp("If")
def _if(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    view = If(node)
    captured = view.captured
    d_cap = [k for k, v in enumerate(captured) if differentiable(v)]
    d_out = [k for k, ct in enumerate(cts) if ct is not None]
    branches = []
    for branch in (view.then_branch, view.else_branch):
        g = Graph(f"{branch.name}_grad")
        params = [g.add_input(p.name, p.type) for p in branch.inputs]
        d_params = [g.add_input(f"d_{node.outputs[k].name}", node.outputs[k].type) for k in d_out]
        mapping = copy_into(g, branch, params)
        gb = Builder(g, b.options)
        seeds: dict[Value, Value] = {}
        for k, p in zip(d_out, d_params, strict=True):
            key = mapping[branch.outputs[k]]
            seeds[key] = gb.add(seeds.get(key), p)  # type: ignore[assignment]
        wanted = [params[k] for k in d_cap]
        grads = backprop(g, seeds, wanted, b.options)
        g.outputs = [zero_or(gb, ct, w) for ct, w in zip(grads, wanted, strict=True)]
        branches.append(g)
    cond = view.condition
    assert cond is not None
    inputs = [*captured, *[cts[k] for k in d_out]]
    back = If.build(b.em, cond, branches[0], branches[1], inputs)  # type: ignore[arg-type]
    ins: list[Value | None] = [None] * len(node.inputs)
    for i, k in enumerate(d_cap):
        ins[1 + k] = back.outputs[i]
    return ins


__all__ = ["prepare"]
