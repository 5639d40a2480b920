"""lower_sequences: tensor sequences a loop appends to, or a straight line builds, as tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..ir.branch import If
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, constant_ints
from ..ir.loop import Carried, Invariant, Loop, SlicedInput, Stacked, StackedOutput
from ..ops.sequence import split_chunks
from ..tensor.dtypes import DType
from ..tensor.types import TensorType, normalize_axis
from .base import Pass, PassResult

_READS = frozenset({"ConcatFromSequence", "SequenceLength", "SequenceAt"})
_BUILDS = frozenset(
    {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence"}
)


class LowerSequences(Pass):
    """Rewrite tensor sequences into tensors where the results stay the same, so that formats
    without sequences (OpenVINO IR) can hold the model. Two patterns:

    - **A sequence a Loop appends to** (what PyTorch's exporter writes for ``ys.append(y)`` in a
      scripted loop): a carried value that starts as ``SequenceEmpty`` or ``SequenceConstruct``,
      whose body parameter is read only by one ``SequenceInsert`` at the end (no position, or
      position ``SequenceLength`` of it) and by ``SequenceLength`` (then ``iteration + k``), whose
      next value is that insert, and whose final value is read only by ``ConcatFromSequence``,
      ``SequenceLength`` and ``SequenceAt``. The appended tensor becomes a stacked output (axis
      0), the initial elements are put in front, and the readers become a move of the stacked
      axis (``new_axis=1``), a merge of it into ``axis`` (``new_axis=0``), its length and a
      ``Gather``. Stacking needs every element to have one shape, which the original does not
      always: it is done when the types prove it (static dims) or a ``new_axis=1`` reader
      demands it anyway. A sequence read only by ``ConcatFromSequence(new_axis=0)`` on one axis
      whose length may vary becomes a carried tensor that each iteration concatenates to (the
      first append, from an empty sequence, an ``If`` that takes the element as it is).
    - **A sequence built in straight-line code** from ``SequenceConstruct``, ``SplitToSequence``
      (static chunk lengths), ``SequenceInsert``/``SequenceErase`` at constant positions: its
      readers become the element tensors (``SequenceAt`` at a constant position), a constant
      length, and a ``Concat``.

    Concatenating an empty sequence is an error; the rewritten graph gives an empty tensor there
    instead (a loop that ran zero times), the one place its results differ. Anything else is
    left as it is, and a format that cannot hold sequences names the op it refuses.
    """

    name = "lower_sequences"

    def run(self, graph: Graph) -> PassResult:
        changed = False
        for g, node in list(graph.walk()):
            if node.op == "Loop" and node.graph is g:
                loop: Loop | None = Loop(node)
                while loop is not None:
                    loop = _rewrite_loop(g, loop)
                    changed |= loop is not None
        for g in _graphs(graph):
            changed |= _fold_straight_line(g)
            if changed:
                _erase_unused_builds(g)
        return PassResult(graph, changed)


def _graphs(graph: Graph) -> list[Graph]:
    found = [graph]
    for _, node in graph.walk():
        found += node.subgraphs.values()
    return found


# -- sequences a loop appends to --------------------------------------------------------------
def _initial_elements(value: Value | None) -> list[Value] | None:
    node = None if value is None else value.producer
    if node is None:
        return None
    if node.op == "SequenceEmpty":
        return []
    if node.op == "SequenceConstruct" and all(v is not None for v in node.inputs):
        return [v for v in node.inputs if v is not None]
    return None


def _append(loop: Loop, c: Carried) -> tuple[Node, list[Node]] | None:
    """The SequenceInsert that appends to ``c`` each iteration and the SequenceLength nodes
    reading ``c``'s parameter, if ``c`` is such a sequence."""
    ins = c.next.producer
    if ins is None or ins.op != "SequenceInsert" or ins.graph is not loop.body:
        return None
    if ins.inputs[0] is not c.param or ins.outputs[0].uses:
        return None
    if [x.next for x in loop.carried].count(c.next) != 1 or c.next in loop.body.outputs[:1]:
        return None
    if loop.counts.split_results(loop.body.outputs).per_iteration.count(c.next):
        return None
    lengths = [u.node for u in c.param.uses if u.node.op == "SequenceLength"]
    if any(u.node is not ins and u.node not in lengths for u in c.param.uses):
        return None
    if any(u.port != 0 for u in c.param.uses) or c.param in loop.body.outputs:
        return None
    if len(ins.inputs) > 2 and ins.inputs[2] is not None:
        position = ins.inputs[2].producer
        if position not in lengths or len(position.outputs[0].uses) != 1:
            return None
    return ins, lengths


def _element_types(elements: Sequence[Value]) -> list[TensorType] | None:
    types = [v.type for v in elements]
    if not all(isinstance(t, TensorType) and t.shape is not None for t in types):
        return None
    ts = [t for t in types if isinstance(t, TensorType)]
    if len({t.dtype for t in ts}) != 1 or len({len(t.shape or ()) for t in ts}) != 1:
        return None
    return ts


def _same_dim(types: Sequence[TensorType], axis: int) -> bool:
    dims = {(t.shape or ())[axis] for t in types}
    return len(dims) == 1 and isinstance(next(iter(dims)), int)


def _rewrite_loop(graph: Graph, loop: Loop) -> Loop | None:
    """The Loop that replaces ``loop`` with one sequence fewer, or None if none can go."""
    roles = _Roles.of(loop)
    if not _complete(roles):
        return None
    for c in roles.carried:
        elements = _initial_elements(c.initial)
        found = _append(loop, c)
        if elements is None or found is None or c.final in graph.outputs:
            continue
        reads = [u.node for u in c.final.uses]
        if any(r.op not in _READS or r.graph is not graph for r in reads):
            continue
        ins, lengths = found
        types = _element_types([*elements, ins.inputs[1]])  # type: ignore[list-item]
        if types is None:
            continue
        rank = len(types[0].shape or ())
        concats = [r for r in reads if r.op == "ConcatFromSequence"]
        axes = {_concat_axis(r, rank) for r in concats}
        if None in axes:
            continue
        stack = any(r.attrs.get("new_axis", 0) for r in concats) or all(
            _same_dim(types, a) for a in range(rank)
        )
        if not stack and len(concats) == len(reads) == 1 and not lengths and rank:
            # A concatenation whose pieces may differ in length: accumulate it instead.
            return _accumulate(graph, loop, roles, c, elements, ins, types[0], concats[0])
        if not stack and concats:
            stack = all(_same_dim(types, a) for a in range(rank) if a not in axes)
            stack = stack and all(_same_dim(types, a) for a in axes if a is not None)
        if not stack:
            continue
        return _stack(graph, loop, roles, c, elements, ins, lengths, reads, rank)
    return None


def _concat_axis(read: Node, rank: int) -> int | None:
    """Where a ConcatFromSequence reader joins the elements (in the element's rank when it
    concatenates, in rank + 1 when it stacks); None if that is out of range."""
    if read.op != "ConcatFromSequence":
        return -1
    new = int(read.attrs.get("new_axis", 0))
    if not new and rank == 0:
        return None
    try:
        return normalize_axis(int(read.attrs["axis"]), rank + new, "ConcatFromSequence")
    except Exception:
        return None


class _Roles(NamedTuple):
    """A Loop's roles, read before its body is edited (``Loop`` reads them from the body)."""

    carried: list[Carried]
    sliced: list[SlicedInput]
    invariants: list[Invariant]
    stacked: list[StackedOutput]

    @staticmethod
    def of(loop: Loop) -> _Roles:
        return _Roles(loop.carried, loop.sliced, loop.invariants, loop.stacked)


def _new_loop(
    graph: Graph,
    loop: Loop,
    roles: _Roles,
    c: Carried,
    *,
    carried: Sequence[Value],
    stacked: Sequence[Stacked],
) -> Loop:
    """Replace ``loop`` by one whose body (already edited) has lost ``c`` and gained
    ``carried`` initial values (last among the carried) and ``stacked`` outputs (at the end);
    the other outputs keep their consumers. The old node is left for the caller to erase."""
    kept = [x for x in roles.carried if x is not c]
    new = Loop.build(
        Emitter(graph, anchor=loop.node),
        loop.body,
        max_trip_count=loop.trip_count,
        initial_condition=loop.condition,
        carried=[_given(x.initial) for x in kept] + list(carried),
        sliced=[(_given(s.source), s.spec) for s in roles.sliced],
        invariants=[_given(v.value) for v in roles.invariants],
        stacked=[*(s.spec for s in roles.stacked), *stacked],
        name=loop.name,
    )
    finals, outputs = new.counts.split_outputs(new.outputs)
    old = [x.final for x in kept] + [s.output for s in roles.stacked]
    new_outputs = finals[: len(kept)] + outputs[: len(roles.stacked)]
    for before, after in zip(old, new_outputs, strict=True):
        graph.replace(before, after)
    return new


def _given(value: Value | None) -> Value:
    assert value is not None, "checked by _complete"
    return value


def _complete(roles: _Roles) -> bool:
    """Whether every carried, sliced and invariant input is given (a Loop node may omit
    none of them, but a rewrite should not assume it)."""
    return all(x.initial is not None for x in roles.carried) and all(
        v is not None
        for v in [*(s.source for s in roles.sliced), *(i.value for i in roles.invariants)]
    )


def _edit_body(loop: Loop, c: Carried, ins: Node, lengths: list[Node], k: int) -> None:
    """Drop ``c``'s parameter and result from the body; its lengths become iteration + k."""
    body = loop.body
    em = Emitter(body, anchor=ins)
    for node in lengths:
        count = em.op("Add", [loop.iteration, em.const(np.int64(k))])
        body.replace(node.outputs[0], count)
    body.outputs = [o for o in body.outputs if o is not c.next]
    body.erase(ins)
    for node in lengths:
        body.erase(node)
    body.inputs.remove(c.param)


def _stack(
    graph: Graph,
    loop: Loop,
    roles: _Roles,
    c: Carried,
    elements: list[Value],
    ins: Node,
    lengths: list[Node],
    reads: list[Node],
    rank: int,
) -> Loop:
    x = ins.inputs[1]
    assert x is not None
    _edit_body(loop, c, ins, lengths, len(elements))
    loop.body.outputs.append(x)
    new = _new_loop(graph, loop, roles, c, carried=[], stacked=[Stacked(0)])
    em = Emitter(graph, anchor=loop.node)
    whole = new.outputs[-1]
    if elements:
        first = [em.op("Unsqueeze", [e, em.ints([0])]) for e in elements]
        whole = em.op("Concat", [*first, whole], {"axis": 0})
    _replace_reads(graph, reads, whole, rank)
    graph.erase(loop.node)
    return new


def _replace_reads(graph: Graph, reads: list[Node], whole: Value, rank: int) -> None:
    """Point each reader of a sequence at ``whole``, its elements stacked on axis 0."""
    for read in reads:
        em = Emitter(graph, anchor=read)
        if read.op == "SequenceLength":
            out = em.op("Gather", [em.op("Shape", [whole]), em.const(np.int64(0))], {"axis": 0})
        elif read.op == "SequenceAt":
            position = em.op("Reshape", [read.inputs[1], em.ints([])])
            position = em.op("Cast", [position], {"to": DType.int64})
            out = em.op("Gather", [whole, position], {"axis": 0})
        else:
            axis = _concat_axis(read, rank)
            assert axis is not None
            out = _move_first_axis(em, whole, axis, rank + 1)
            if not read.attrs.get("new_axis", 0):
                out = _merge_axis(em, out, axis)
        graph.replace(read.outputs[0], out)
        graph.erase(read)


def _move_first_axis(em: Emitter, x: Value, axis: int, rank: int) -> Value:
    if axis == 0:
        return x
    perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
    return em.op("Transpose", [x], {"perm": tuple(perm)})


def _merge_axis(em: Emitter, x: Value, axis: int) -> Value:
    """``x`` with axes ``axis`` and ``axis + 1`` merged into one (row-major)."""
    parts = []
    if axis:
        parts.append(em.op("Shape", [x], {"start": 0, "end": axis}))
    length = em.op("Shape", [x], {"start": axis, "end": axis + 1})
    width = em.op("Shape", [x], {"start": axis + 1, "end": axis + 2})
    parts.append(em.op("Mul", [length, width]))
    parts.append(em.op("Shape", [x], {"start": axis + 2}))
    shape = em.op("Concat", parts, {"axis": 0})
    return em.op("Reshape", [x, shape], {"allowzero": 1})


def _accumulate(
    graph: Graph,
    loop: Loop,
    roles: _Roles,
    c: Carried,
    elements: list[Value],
    ins: Node,
    element: TensorType,
    read: Node,
) -> Loop:
    """Carry the concatenation of what ``c`` holds instead of ``c``; from an empty sequence
    the first iteration takes its element as it is (an If on the iteration)."""
    x = ins.inputs[1]
    assert x is not None
    rank = len(element.shape or ())
    axis = _concat_axis(read, rank)
    assert axis is not None
    body = loop.body
    acc = body.add_input("concatenated", TensorType(element.dtype, ["?"] * rank))
    body.inputs.remove(acc)
    # Parameters (iteration, *carried, ...) and results (condition, *carried, ...): the sum
    # goes last among the carried, once c's own parameter and result are gone.
    body.inputs.insert(len(roles.carried) + 1, acc)
    em = Emitter(body, anchor=ins)
    if elements:
        joined = em.op("Concat", [acc, x], {"axis": axis})
    else:
        first = em.op("Equal", [loop.iteration, em.const(np.int64(0))])
        then, other = Graph("first"), Graph("later")
        for branch in (then, other):
            a, y = (branch.add_input(v.name, v.type) for v in (acc, x))
            out = y if branch is then else branch.add_node("Concat", [a, y], {"axis": axis}).output
            branch.outputs = [branch.add_node("Identity", [out]).output]
        joined = If.build(em, first, then, other, [acc, x]).outputs[0]
    body.outputs.insert(len(roles.carried) + 1, joined)
    _edit_body(loop, c, ins, [], len(elements))
    pre = Emitter(graph, anchor=loop.node)
    if elements:
        initial = pre.op("Concat", elements, {"axis": axis})
    else:
        initial = pre.const(np.zeros([0] * rank, element.dtype.numpy))
    new = _new_loop(graph, loop, roles, c, carried=[initial], stacked=[])
    finals, _ = new.counts.split_outputs(new.outputs)
    graph.replace(read.outputs[0], finals[-1])
    graph.erase(read)
    graph.erase(loop.node)
    return new


# -- sequences built in straight-line code ----------------------------------------------------
def _fold_straight_line(graph: Graph) -> bool:
    known: dict[Value, list[Value] | None] = {}
    changed = False
    for node in list(graph.nodes):
        if node.op not in _READS or node.graph is not graph or node.inputs[0] is None:
            continue
        elements = _elements(graph, node.inputs[0], known)
        if elements is None:
            continue
        em = Emitter(graph, anchor=node)
        if node.op == "SequenceLength":
            out = em.const(np.int64(len(elements)))
        elif node.op == "SequenceAt":
            pos = constant_ints(node.inputs[1])
            n = len(elements)
            if pos is None or len(pos) != 1 or not -n <= pos[0] < n:
                continue
            out = elements[pos[0]]
        else:
            if not elements:
                continue
            axis = int(node.attrs["axis"])
            if node.attrs.get("new_axis", 0):
                elements = [em.op("Unsqueeze", [e, em.ints([axis])]) for e in elements]
            out = em.op("Concat", elements, {"axis": axis})
        graph.replace(node.outputs[0], out)
        graph.erase(node)
        changed = True
    return changed


def _elements(
    graph: Graph, value: Value, known: dict[Value, list[Value] | None]
) -> list[Value] | None:
    """The tensors a sequence built in ``graph`` holds, if its builders are all known."""
    if value in known:
        return known[value]
    node = value.producer
    found: list[Value] | None = None
    if node is None or node.graph is not graph or node.op not in _BUILDS:
        found = None
    elif node.op in ("SequenceEmpty", "SequenceConstruct"):
        found = [v for v in node.inputs if v is not None]
    elif node.op == "SplitToSequence":
        found = _split(graph, node)
    elif node.inputs[0] is not None:
        before = _elements(graph, node.inputs[0], known)
        found = None if before is None else _edit(node, before)
    known[value] = found
    return found


def _edit(node: Node, before: list[Value]) -> list[Value] | None:
    n, given = len(before), len(node.inputs) > (2 if node.op == "SequenceInsert" else 1)
    pos = constant_ints(node.inputs[-1]) if given else None
    if given and (pos is None or len(pos) != 1):
        return None
    if node.op == "SequenceInsert":
        at = n if pos is None else pos[0]
        x = node.inputs[1]
        if x is None or not -n <= at <= n:
            return None
        at += n if at < 0 else 0
        return [*before[:at], x, *before[at:]]
    at = -1 if pos is None else pos[0]
    if not -n <= at < n:
        return None
    at += n if at < 0 else 0
    return [*before[:at], *before[at + 1 :]]


def _split(graph: Graph, node: Node) -> list[Value] | None:
    x = node.inputs[0]
    t = None if x is None else x.type
    if x is None or not isinstance(t, TensorType) or t.shape is None or not t.shape:
        return None
    try:
        axis = normalize_axis(int(node.attrs.get("axis", 0)), len(t.shape), "SplitToSequence")
    except Exception:
        return None
    dim = t.shape[axis]
    split = node.inputs[1] if len(node.inputs) > 1 else None
    data = None if split is None else split.constant
    if not isinstance(dim, int) or (split is not None and data is None):
        return None
    try:
        sizes = split_chunks(dim, None if data is None else np.asarray(data))
    except ValueError:
        return None
    drop = sizes is None and not node.attrs.get("keepdims", 1)
    sizes = [1] * dim if sizes is None else sizes
    if not sizes:
        return []
    em = Emitter(graph, anchor=node)
    parts = em.ops("Split", [x, em.ints(sizes)], {"axis": axis}) if len(sizes) > 1 else [x]
    if drop:
        parts = [em.op("Squeeze", [p, em.ints([axis])]) for p in parts]
    return parts


def _erase_unused_builds(graph: Graph) -> None:
    for node in reversed(list(graph.nodes)):
        if node.op in _BUILDS and not any(o.uses or o in graph.outputs for o in node.outputs):
            graph.erase(node)


lower_sequences = LowerSequences()
