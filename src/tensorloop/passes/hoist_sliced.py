"""hoist_sliced_work: compute per-slice loop-body work once, over the whole sliced source."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, copy_node, static_type
from ..ir.loop import Loop, Sliced
from ..tensor.types import normalize_axis
from .base import Pass, PassResult, cannot_fail
from .hoist_invariants import is_pure

# Broadcasting elementwise ops (all in ``base.TOTAL``): each element of the op over whole
# sources is what the row-by-row op gives; ``cannot_fail`` judges each node besides.
ELEMENTWISE = frozenset(
    {"Add", "Sub", "Mul", "Max", "Min", "Where", "Neg", "Abs", "Relu", "Tanh", "Sigmoid"}
    | {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not"}
)


MAX_BATCHED_BYTES = 256 << 20
"""The largest result a batched node may have: batching holds the work of a whole sequence in
memory at once. It pays most where a slice's own work is small (an RNN with batch 1 to 16: one
NumPy call over the sequence instead of hundreds of tiny ones, interpreted one by one). A
batched MatMul makes the loop's own BLAS calls (one per row, for exact results), so where each
is large the gain is small (the 14 % once measured on the LSTM benchmark at T=64, B=64,
4H=4096, for 64 MB, was that of one GEMM over the sequence, which rounds differently); past
this size a long sequence would hold gigabytes, so the work stays a slice at a time."""


@dataclass(frozen=True)
class _Rows:
    """A body value that is row ``i`` of an outer value: ``take(outer, i, axis)`` (from the
    end if reverse), ``outer`` having static ``length`` rows on ``axis`` and rank ``rank``."""

    outer: Value
    axis: int
    reverse: bool
    length: int
    rank: int


class HoistSlicedWork(Pass):
    """Compute Loop-body work that reads one slice of a sliced source per iteration once in
    front of the Loop, over the whole source; the body receives the result as a new sliced
    input (same direction) in place of the work.

    A body node is batched when it is pure, has static input and output shapes, reads at least
    one row value (a slice parameter of a source of static shape; ``Gather(v, iteration, axis)``
    of an invariant ``v`` of static shape when the loop's trip bound is a constant no larger
    than ``v``'s length on ``axis``, the way ONNX exporters write ``X[t]``; or the result of a
    batched node) and otherwise only invariant parameters and body Constants (copied in front of
    the Loop), and is one of:

    * an elementwise op in ``ELEMENTWISE``, or a ``Cast``, that cannot fail
      (``base.cannot_fail``: static shapes, and no Cast from strings, which may fail to parse,
      nor from floats to integers): every row operand is a row of a rank-``r`` value on the
      same axis ``a`` with the same static length and direction, and every other operand has
      rank at most ``r - 1 - a``, so NumPy broadcasting aligns it to the dims after ``a`` both
      in the slice and in the whole; the result is a rank-``r`` value sliced on ``a``;
    * ``MatMul(x, W)`` with ``x`` a row of a rank-``r`` value ``X`` on axis ``a`` where
      ``r == 2`` and ``a == 0`` (a vector times a matrix) or ``a <= r - 3`` (a batch dim), and
      ``W`` a rank-2 operand; the result is sliced on ``a``. This takes the RNN input
      projection ``Gather(X, i) @ W`` out of the loop.

    The batched value has the source's length on the sliced axis, so the Loop's trip bounds do
    not change. It is computed over every row even when the Loop stops early or never runs;
    that costs work but cannot fail, as only nodes that cannot fail are batched (an op that may
    fail on some row, such as a Cast from strings, stays in the body even when the loop visits
    every row: the reference might stop first, at the iteration limit or another node's error,
    and report that).

    Results are bit for bit the loop's. Elementwise ops and Casts compute each element alone. A
    batched MatMul makes the products the loop makes, one BLAS call per row, with the same
    shapes and strides: one GEMM over the sequence (``X @ W``) would sum in another order and
    round differently, and so would NumPy over rows of another layout (a row strided, reversed
    or broadcast is handled by other BLAS kernels, or by NumPy's own loop). In the loop each row
    is a C-contiguous array (the reference's Loop copies each slice out C-contiguous, and an
    elementwise op over such rows gives a C-contiguous result), so the batch is made
    C-contiguous first, by a Gather of every index (a copy in row order, whatever the source's
    layout), and its rows multiplied as a stack:
    ``Squeeze(MatMul(Unsqueeze(Gather(X, 0..n-1), 1), W), 1)`` for vectors (a stack of 1-row
    matrices, each a vector-matrix product as the loop's 1-D row gives),
    ``MatMul(Gather(X, 0..n-1, a), W)`` for a batch dim (a stack of the loop's matrix
    products). Results then differ from the loop's in nothing but where the rows lie
    in memory, which BLAS kernels do not round by (checked over many shapes, float16 to
    float64, in tests/passes/test_hoist_sliced.py). The gain is the interpreter's per-row
    work, not a faster kernel. A node whose batched result would exceed ``MAX_BATCHED_BYTES``
    stays in the body. Nested bodies are rewritten first.
    """

    name = "hoist_sliced_work"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _batch_in(graph))


def _batch_in(graph: Graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            changed |= _batch_in(sub)
        if node.op == "Loop":
            changed |= _batch(graph, Loop(node))
    return changed


def _slice_rows(loop: Loop) -> dict[Value, _Rows]:
    rows: dict[Value, _Rows] = {}
    for s in loop.sliced:
        t = static_type(s.source)
        if s.source is None or t is None or t.shape is None or not t.shape:
            continue
        if not -len(t.shape) <= s.spec.axis < len(t.shape):
            continue  # running the loop reports it, as the reference does
        axis = normalize_axis(s.spec.axis, len(t.shape), "Loop")
        length = t.shape[axis]
        assert isinstance(length, int)
        rows[s.param] = _Rows(s.source, axis, s.spec.reverse, length, len(t.shape))
    return rows


def _indexed_rows(loop: Loop) -> dict[Value, _Rows]:
    """Body values ``Gather(invariant, iteration, axis)``: row ``i`` of the invariant, as if it
    were sliced, when the loop cannot run past the invariant's static length on that axis (so
    the index is always in range, as the reference would otherwise report)."""
    bound = loop.trip_bound
    if bound is None:
        return {}
    iteration = loop.iteration
    outer = {inv.param: inv.value for inv in loop.invariants}
    rows: dict[Value, _Rows] = {}
    for node in loop.body.nodes:
        if node.op != "Gather" or len(node.inputs) != 2 or node.inputs[1] is not iteration:
            continue
        data = node.inputs[0]
        source = outer.get(data) if data is not None else None
        t = static_type(source)
        if source is None or t is None or t.shape is None or not t.shape:
            continue
        axis = node.attrs.get("axis", 0)
        if not -len(t.shape) <= axis < len(t.shape):
            continue
        axis = normalize_axis(axis, len(t.shape), "Gather")
        length = t.shape[axis]
        assert isinstance(length, int)
        if bound <= length:
            rows[node.outputs[0]] = _Rows(source, axis, False, length, len(t.shape))
    return rows


def _batched_bytes(node: Node, rows: _Rows) -> int:
    """The size of ``node``'s result computed over all ``rows.length`` slices."""
    t = static_type(node.outputs[0])
    assert t is not None and t.shape is not None  # _batched_rows checked it
    count = rows.length
    for d in t.shape:
        count *= int(d)
    return count * t.dtype.numpy.itemsize


def _batched_rows(node: Node, rows: dict[Value, _Rows], plain: set[Value]) -> _Rows | None:
    """How ``node``'s result is laid out when computed over whole row values, or None if it
    cannot be batched."""
    if node.subgraphs or not is_pure(node) or len(node.outputs) != 1:
        return None
    if any(v is None or static_type(v) is None for v in [*node.inputs, *node.outputs]):
        return None
    if any(v not in rows and v not in plain for v in node.inputs if v is not None):
        return None
    operands = [rows[v] for v in node.inputs if v in rows]
    if not operands or len({(r.axis, r.reverse, r.length, r.rank) for r in operands}) != 1:
        return None
    first = operands[0]
    axis, rank = first.axis, first.rank
    if node.op == "MatMul":
        x, w = node.inputs
        wt = static_type(w)
        if x not in rows or w in rows or wt is None or wt.rank != 2 or not cannot_fail(node):
            return None
        if not ((rank == 2 and axis == 0) or axis <= rank - 3):
            return None
        return first
    if (node.op != "Cast" and node.op not in ELEMENTWISE) or not cannot_fail(node):
        return None
    for v in node.inputs:
        t = static_type(v)
        if v not in rows and (t is None or t.rank is None or t.rank > rank - 1 - axis):
            return None
    return first


def _batched_matmul(em: Emitter, node: Node, inputs: list[Value | None], x: _Rows) -> Value:
    """``node`` (``MatMul(x, W)``, ``x`` a row of ``inputs[0]``) over every row, as the loop
    computes each: the rows copied out C-contiguous in order (a Gather of every index), then
    multiplied as a stack of the loop's products (see ``HoistSlicedWork``)."""
    whole, w = inputs
    assert whole is not None and w is not None
    every = em.const(np.arange(x.length, dtype=np.int64))
    name, out = node.name, node.outputs[0].name
    rows = em.op("Gather", [whole, every], {"axis": x.axis}, output_name=f"{out}_rows")
    if x.rank > 2:  # a batch dim: the stack of the loop's matrix products, sliced on x.axis
        return em.node("MatMul", [rows, w], node.attrs, name=name, output_names=[out]).outputs[0]
    one = em.ints([1])
    lifted = em.op("Unsqueeze", [rows, one], output_name=f"{out}_stack")  # [n, 1, k]
    product = em.op("MatMul", [lifted, w], node.attrs, name=name, output_name=f"{out}_products")
    return em.node("Squeeze", [product, one], output_names=[out]).outputs[0]


def _batch(graph: Graph, loop: Loop) -> bool:
    body = loop.body
    roles = loop.inputs
    carried = [v for v in roles.carried if v is not None]
    sources = [v for v in roles.sources if v is not None]
    invariants = [v for v in roles.invariants if v is not None]
    if len(carried + sources + invariants) != len(roles.carried + roles.sources + roles.invariants):
        return False
    specs = [s.spec for s in loop.sliced]
    stacked = [s.spec for s in loop.stacked]
    outputs = loop.outputs
    k = 1 + loop.counts.carried + loop.counts.sliced
    indexed = _indexed_rows(loop)
    rows = {**_slice_rows(loop), **indexed}
    plain: set[Value] = {inv.param for inv in loop.invariants}
    batched: list[Node] = []
    for node in body.nodes:
        if node.op == "Constant" and not node.inputs:
            plain.update(node.outputs)
            continue
        r = _batched_rows(node, rows, plain)
        if r is not None and _batched_bytes(node, r) <= MAX_BATCHED_BYTES:
            batched.append(node)
            rows[node.outputs[0]] = r
    if not batched:
        return False

    # body value -> the outer value it stands for
    outer: dict[Value, Value] = {
        inv.param: inv.value for inv in loop.invariants if inv.value is not None
    }
    outer.update({s.param: s.source for s in loop.sliced if s.source is not None})
    outer.update({v: r.outer for v, r in indexed.items()})
    copied: list[Node] = []
    em = Emitter(graph, anchor=loop.node)
    for node in batched:
        for v in node.inputs:
            if v is not None and v not in outer and v.producer is not None:  # a Constant
                copied.append(v.producer)
                graph.insert_before(loop.node, copy_node(v.producer, outer))
        inputs = [None if v is None else outer[v] for v in node.inputs]
        x = node.inputs[0]
        if node.op == "MatMul" and x is not None:
            outer[node.outputs[0]] = _batched_matmul(em, node, inputs, rows[x])
            continue
        new = em.node(
            node.op,
            inputs,
            node.attrs,
            name=node.name,
            output_names=[o.name for o in node.outputs],
        )
        outer[node.outputs[0]] = new.outputs[0]

    gone = set(batched)
    new_sliced: list[tuple[Value, Sliced]] = []
    new_params: list[Value] = []
    for node in batched:
        out = node.outputs[0]
        if out in body.outputs or any(u.node not in gone for u in out.uses):
            name = out.name
            param = body.add_input(name, out.type)
            body.inputs.remove(param)
            body.replace(out, param)
            body.rename(param, name)
            new_params.append(param)
            r = rows[out]
            new_sliced.append((outer[out], Sliced(r.axis, r.reverse)))
    for node in reversed(batched):
        body.erase(node)
    for node in reversed(list(body.nodes)):
        if node in copied and not any(o.uses or o in body.outputs for o in node.outputs):
            body.erase(node)

    body.inputs[k:k] = new_params
    new_loop = Loop.build(
        em,
        body,
        max_trip_count=loop.trip_count,
        initial_condition=loop.condition,
        carried=carried,
        sliced=[(v, s) for v, s in zip(sources, specs, strict=True)] + new_sliced,
        invariants=invariants,
        stacked=stacked,
        name=loop.name,
    )
    for before, after in zip(outputs, new_loop.outputs, strict=True):
        graph.replace(before, after)
    graph.erase(loop.node)
    return True


hoist_sliced_work = HoistSlicedWork()
