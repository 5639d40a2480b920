"""A checkpointed Loop gradient: the carried values are stored every k-th iteration only.

The trips ``0..T-1`` fall into ``S = ceil(T / k)`` segments of ``k`` (the last may be
shorter). A checkpoint loop runs the forward again, segment by segment, keeping the carried
values each segment starts from (``S`` of them, not ``T``). The backward is a loop over the
segments, last first: each recomputes its segment as a loop of at most ``k`` trips that starts
from its checkpoint (``segment_loop``) and runs that loop's backward, storing every carried
value of those ``k`` trips only. Memory: ``S + k`` carried values instead of ``T`` (with
``k = ceil(sqrt(T))``: about ``2 sqrt(T)``); time: about one forward more.

Each segment is a Loop of its own, its iteration numbers offset by the segment's start, its
sliced sources and stacked cotangents the segment's rows; so its gradient is the ordinary
store-everything gradient (``control._loop``), and the segment cotangents of the sliced
sources are added into whole-length buffers where their rows belong.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value
from ..ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ..tensor.dtypes import DType
from .core import Builder, backprop, copy_into, loop_roles, zero_or


def _scalar(b: Builder, value: Value) -> Value:
    return b.op("Reshape", [value, b.ints([1])])


def _param(g: Graph, prefix: str, like: Value) -> Value:
    return g.add_input(f"{prefix}{like.name}", like.type)


def segment_size(b: Builder, trips: Value, option: int | str) -> Value:
    """``k``: the option's int, or ``max(1, ceil(sqrt(T)))`` for ``"sqrt"``."""
    if isinstance(option, int):
        return b.ints(max(1, option))
    t = b.op("Cast", [trips], to=DType.float64)  # exact for any trip count an array holds
    root = b.op("Ceil", [b.op("Sqrt", [t])])
    return b.op("Max", [b.op("Cast", [root], to=DType.int64), b.ints(1)])


def _bounds(b: Builder, s: Value, k: Value, trips: Value) -> tuple[Value, Value]:
    """Segment ``s``'s first trip and its number of trips."""
    base = b.op("Mul", [s, k])
    n = b.op("Min", [k, b.op("Sub", [trips, base])])
    return base, n


def _rows(b: Builder, x: Value, axis: int, first: Value, count: Value, last_first: bool) -> Value:
    """Rows ``first .. first+count-1`` of ``x`` on ``axis``, counted from the end when
    ``last_first`` (the rows a reverse slice or stack gives those trips)."""
    rank = b.rank(x, "a checkpointed loop")
    axis %= rank
    if last_first:
        length = b.op("Gather", [b.op("Shape", [x]), b.ints([axis])], axis=0)
        end = b.op("Sub", [length, _scalar(b, first)])
        start = b.op("Sub", [end, _scalar(b, count)])
    else:
        start = _scalar(b, first)
        end = b.op("Add", [start, _scalar(b, count)])
    return b.op("Slice", [x, start, end, b.ints([axis])])


def _place(b: Builder, rows: Value, like: Value, axis: int, start: Value) -> Value:
    """``rows`` padded with zeros to ``like``'s shape, its first row at ``start`` on ``axis``."""
    rank = b.rank(like, "a checkpointed loop")
    axis %= rank
    have = b.op("Gather", [b.op("Shape", [rows]), b.ints([axis])], axis=0)
    want = b.op("Gather", [b.op("Shape", [like]), b.ints([axis])], axis=0)
    before = _scalar(b, start)
    after = b.op("Sub", [b.op("Sub", [want, have]), before])
    zeros = b.ints([0] * rank)
    begins = b.op("ScatterElements", [zeros, b.ints([axis]), before], axis=0)
    ends = b.op("ScatterElements", [zeros, b.ints([axis]), after], axis=0)
    return b.op("Pad", [rows, b.op("Concat", [begins, ends], axis=0)])


def _first_row(b: Builder, like: Value, axis: int, first: Value, count: Value, rev: bool) -> Value:
    """Where rows ``first ..`` (counted from the end when ``rev``) start on ``axis``."""
    if not rev:
        return first
    length = b.op("Gather", [b.op("Shape", [like]), b.ints([axis % b.rank(like, "")])], axis=0)
    return b.op("Sub", [b.op("Sub", [b.op("Squeeze", [length, b.ints([0])]), first]), count])


def segment_body(view: Loop, stacked: bool) -> Graph:
    """The body of a segment loop: ``view``'s body with its iteration number offset by the
    segment's first trip (one more invariant), always going on (the segment's trip count
    stops it), its stacked results kept only if ``stacked``."""
    body = view.body
    g = Graph(f"{body.name}_segment")
    j = g.add_input("j", ITERATION_TYPE)
    carried = [g.add_input(c.param.name, c.param.type) for c in view.carried]
    slices = [g.add_input(s.param.name, s.param.type) for s in view.sliced]
    invariants = [g.add_input(v.param.name, v.param.type) for v in view.invariants]
    base = g.add_input("segment_start", ITERATION_TYPE)
    em = Emitter(g)
    i = em.op("Add", [j, base])
    mapping = copy_into(g, body, [i, *carried, *slices, *invariants])
    results = view.counts.split_results(body.outputs)
    outs = [em.const(np.asarray(True)), *(mapping[v] for v in results.carried)]
    if stacked:
        outs += [mapping[v] for v in results.per_iteration]
    g.outputs = outs
    return g


def checkpointed(
    b: Builder, node: Node, cts: list[Value | None], trips: Value, option: int | str
) -> list[Value | None]:
    """The cotangents of ``node``'s inputs (see the module's docstring)."""
    view = Loop(node)
    n_carried = view.counts.carried
    finals, stacked_outs = view.counts.split_outputs(node.outputs)
    final_cts = cts[:n_carried]
    stacked_cts = cts[n_carried : n_carried + len(view.stacked)]
    k = segment_size(b, trips, option)
    segments = b.op("Div", [b.op("Sub", [b.op("Add", [trips, k]), b.ints(1)]), k])
    initial = [c.initial for c in view.carried]
    assert all(v is not None for v in initial)

    # -- the checkpoint loop: the carried values each segment starts from ---------------------
    g = Graph(f"{view.body.name}_checkpoints")
    s = g.add_input("s", ITERATION_TYPE)
    c_params = [g.add_input(c.param.name, c.param.type) for c in view.carried]
    t_param = g.add_input("trips", ITERATION_TYPE)
    k_param = g.add_input("k", ITERATION_TYPE)
    src_params = [g.add_input(f"src{j}", x.source.type) for j, x in enumerate(view.sliced)]  # type: ignore[union-attr]
    inv_params = [g.add_input(v.param.name, v.param.type) for v in view.invariants]
    gb = Builder(g, b.options)
    base, n = _bounds(gb, s, k_param, t_param)
    inner = segment_loop(gb, view, c_params, src_params, inv_params, base, n, stacked=False)
    g.outputs = [Emitter(g).const(np.asarray(True)), *inner.node.outputs[:n_carried], *c_params]
    sources = [x.source for x in view.sliced]
    invariants = [v.value for v in view.invariants]
    keep = Loop.build(
        b.em,
        g,
        max_trip_count=segments,
        carried=initial,  # type: ignore[arg-type]
        invariants=[trips, k, *sources, *invariants],  # type: ignore[list-item]
        stacked=[Stacked() for _ in view.carried],
    )
    checkpoints = keep.node.outputs[n_carried:]

    # -- the backward: segments last first ------------------------------------------------------
    d_carried, d_sliced, d_inv, d_stacked = loop_roles(b, view, stacked_cts)

    g = Graph(f"{view.body.name}_segments_grad")
    j = g.add_input("j", ITERATION_TYPE)
    p_dc = [_param(g, "d_", view.carried[i].param) for i in d_carried]
    p_acc = [_param(g, "acc_", view.invariants[i].param) for i in d_inv]
    p_dsrc = [g.add_input(f"d_src{i}", view.sliced[i].source.type) for i in d_sliced]  # type: ignore[union-attr]
    p_ckpt = [g.add_input(c.param.name, c.param.type) for c in view.carried]
    t_param = g.add_input("trips", ITERATION_TYPE)
    k_param = g.add_input("k", ITERATION_TYPE)
    s_param = g.add_input("segments", ITERATION_TYPE)
    src_params = [g.add_input(f"src{i}", x.source.type) for i, x in enumerate(view.sliced)]  # type: ignore[union-attr]
    inv_params = [g.add_input(v.param.name, v.param.type) for v in view.invariants]
    dy_params = [g.add_input(f"d_{stacked_outs[m].name}", stacked_outs[m].type) for m in d_stacked]
    gb = Builder(g, b.options)
    seg = gb.op("Sub", [gb.op("Sub", [s_param, gb.ints(1)]), j])
    base, n = _bounds(gb, seg, k_param, t_param)
    inner = segment_loop(gb, view, p_ckpt, src_params, inv_params, base, n, stacked=True)
    b.options.store_all.add(inner.node)
    seeds: dict[Value, Value] = {}
    inner_finals, inner_stacked = inner.counts.split_outputs(inner.node.outputs)
    for i, p in zip(d_carried, p_dc, strict=True):
        seeds[inner_finals[i]] = p
    for m, p in zip(d_stacked, dy_params, strict=True):
        spec = view.stacked[m].spec
        rows = _rows(gb, p, spec.axis, base, n, spec.reverse)
        seeds[inner_stacked[m]] = rows
    slice_rows = [inner.node.inputs[2 + n_carried + i] for i in range(len(view.sliced))]
    wanted = [p_ckpt[i] for i in d_carried]
    wanted += [slice_rows[i] for i in d_sliced]  # type: ignore[misc]
    wanted += [inv_params[i] for i in d_inv]
    grads = backprop(g, seeds, wanted, b.options)
    g_c = grads[: len(d_carried)]
    g_s = grads[len(d_carried) : len(d_carried) + len(d_sliced)]
    g_v = grads[len(d_carried) + len(d_sliced) :]
    outs: list[Value] = [Emitter(g).const(np.asarray(True))]
    outs += [zero_or(gb, ct, p_ckpt[i]) for ct, i in zip(g_c, d_carried, strict=True)]
    outs += [acc if ct is None else gb.add(acc, ct) for acc, ct in zip(p_acc, g_v, strict=True)]  # type: ignore[misc]
    for acc, ct, i in zip(p_dsrc, g_s, d_sliced, strict=True):
        if ct is None:
            outs.append(acc)
            continue
        how = view.sliced[i].spec
        src = src_params[i]
        start = _first_row(gb, src, how.axis, base, n, how.reverse)
        outs.append(gb.op("Add", [acc, _place(gb, ct, src, how.axis, start)]))
    g.outputs = outs

    carried = [zero_or(b, final_cts[i], finals[i]) for i in d_carried]
    carried += [b.zeros_like(view.invariants[i].value) for i in d_inv]  # type: ignore[arg-type]
    carried += [b.zeros_like(view.sliced[i].source) for i in d_sliced]  # type: ignore[arg-type]
    dys = [stacked_cts[m] for m in d_stacked]
    back = Loop.build(
        b.em,
        g,
        max_trip_count=segments,  # a loop with no carried value has no checkpoints to count
        carried=carried,
        sliced=[(c, Sliced(0, True)) for c in checkpoints],
        invariants=[trips, k, segments, *sources, *invariants, *dys],  # type: ignore[list-item]
        name=f"{node.name}_grad" if node.name else "",
    )
    outputs = back.node.outputs
    ins: list[Value | None] = [None] * len(node.inputs)
    for pos, i in enumerate(d_carried):
        ins[2 + i] = outputs[pos]
    for pos, i in enumerate(d_inv):
        ins[2 + n_carried + len(view.sliced) + i] = outputs[len(d_carried) + pos]
    for pos, i in enumerate(d_sliced):
        ins[2 + n_carried + i] = outputs[len(d_carried) + len(d_inv) + pos]
    return ins


def segment_loop(
    b: Builder,
    view: Loop,
    carried: Sequence[Value],
    sources: Sequence[Value],
    invariants: Sequence[Value],
    base: Value,
    n: Value,
    stacked: bool,
) -> Loop:
    """The loop of the trips ``base .. base+n-1`` of ``view``, from ``carried``, reading
    ``sources`` and ``invariants`` (the enclosing body's copies of ``view``'s); its stacked
    results kept only if ``stacked``."""
    sliced = [
        (_rows(b, src, x.spec.axis, base, n, x.spec.reverse), x.spec)
        for src, x in zip(sources, view.sliced, strict=True)
    ]
    return Loop.build(
        b.em,
        segment_body(view, stacked),
        max_trip_count=n,
        carried=list(carried),
        sliced=sliced,
        invariants=[*invariants, base],
        stacked=[st.spec for st in view.stacked] if stacked else [],
    )


__all__ = ["checkpointed", "segment_loop", "segment_size"]
