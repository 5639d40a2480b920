"""The canonical Loop and If: their attributes, structure checks and type rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .graph import Graph, Node, Value
from .opdef import AttrSpec, InferContext, op

ITERATION_TYPE = TensorType(DType.int64, ())
CONDITION_TYPE = TensorType(DType.bool, ())


@dataclass(frozen=True)
class Sliced:
    """How a sliced source feeds the body: element ``i`` on ``axis`` (from the end if reverse)."""

    axis: int = 0
    reverse: bool = False


@dataclass(frozen=True)
class Stacked:
    """How a per-iteration result leaves: stacked on a new ``axis``, last first if reverse."""

    axis: int = 0
    reverse: bool = False


def normalize_axis(axis: int, rank: int, where: str) -> int:
    """``axis`` in [-rank, rank) mapped to [0, rank); a GraphError naming ``where`` otherwise."""
    from ..errors import GraphError

    if not -rank <= axis < rank:
        raise GraphError(f"{where}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


@dataclass(frozen=True)
class LoopLayout:
    """Where each role sits among a Loop node's inputs, outputs and body ports."""

    num_carried: int
    num_sliced: int
    num_invariant: int
    num_stacked: int

    @staticmethod
    def of(node: Node) -> LoopLayout:
        return LoopLayout.from_parts(len(node.inputs), node.attrs)

    @staticmethod
    def from_parts(num_inputs: int, attrs: dict[str, Any]) -> LoopLayout:
        k = int(attrs.get("num_carried", 0))
        s = len(attrs.get("sliced", ()))
        return LoopLayout(k, s, num_inputs - 2 - k - s, len(attrs.get("stacked", ())))

    def mismatch(self, num_inputs: int, body: Graph) -> str | None:
        """Why inputs and body cannot form this loop, or None if their counts fit."""
        if self.num_invariant < 0:
            return (
                f"{num_inputs} inputs cannot hold the two control inputs, "
                f"{self.num_carried} carried and {self.num_sliced} sliced values"
            )
        params = 1 + self.num_carried + self.num_sliced + self.num_invariant
        results = 1 + self.num_carried + self.num_stacked
        if len(body.inputs) == params and len(body.outputs) == results:
            return None
        return (
            f"body has {len(body.inputs)} parameters and {len(body.outputs)} results, expected "
            f"{params} (iteration, {self.num_carried} carried, {self.num_sliced} sliced, "
            f"{self.num_invariant} invariant) and {results} (continue_condition, "
            f"{self.num_carried} carried, {self.num_stacked} stacked)"
        )

    # node inputs: max_trip_count, initial_condition, carried*, sliced*, invariant*
    def carried_inputs(self) -> range:
        return range(2, 2 + self.num_carried)

    def sliced_inputs(self) -> range:
        return range(2 + self.num_carried, 2 + self.num_carried + self.num_sliced)

    def invariant_inputs(self) -> range:
        start = 2 + self.num_carried + self.num_sliced
        return range(start, start + self.num_invariant)

    # body params: iteration, carried*, slices*, invariants*
    def carried_params(self) -> range:
        return range(1, 1 + self.num_carried)

    def slice_params(self) -> range:
        return range(1 + self.num_carried, 1 + self.num_carried + self.num_sliced)

    def invariant_params(self) -> range:
        start = 1 + self.num_carried + self.num_sliced
        return range(start, start + self.num_invariant)

    # body results: continue_condition, carried_next*, per_iteration*
    def carried_results(self) -> range:
        return range(1, 1 + self.num_carried)

    def per_iteration_results(self) -> range:
        return range(1 + self.num_carried, 1 + self.num_carried + self.num_stacked)


_LOOP_ATTRS = {
    "body": AttrSpec(Graph, doc="closed body graph"),
    "num_carried": AttrSpec(int, 0, "how many carried values follow the two control inputs"),
    "sliced": AttrSpec(tuple, (), "one Sliced per sliced source"),
    "stacked": AttrSpec(tuple, (), "one Stacked per per-iteration body result"),
}


@op("Loop", inputs=(2, None), attrs=_LOOP_ATTRS)
def _infer_loop(ctx: InferContext) -> list[Type]:
    """The one loop every other loop form lowers to.

    Inputs: ``max_trip_count?`` (integer scalar), ``initial_condition?`` (bool scalar), then
    ``carried*``, ``sliced*`` and ``invariant*`` values. The body is a closed graph with
    parameters ``(iteration, *carried, *slices, *invariants)`` and results
    ``(continue_condition, *carried_next, *per_iteration)``. Outputs: the final carried values,
    then each per-iteration result stacked on a new axis. Its meaning, exactly as the reference
    interpreter runs it::

        def loop(max_trip_count, initial_condition, carried, sources, invariants):
            bounds = [max_trip_count] if max_trip_count is not None else []
            bounds += [src.shape[s.axis] for src, s in zip(sources, sliced)]
            cond = True if initial_condition is None else bool(initial_condition)
            i, per_iteration = 0, [[] for _ in stacked]
            while all(i < b for b in bounds) and cond:
                slices = [take(src, len_axis - 1 - i if s.reverse else i, s.axis)
                          for src, s in zip(sources, sliced)]
                cond, *carried, *ys = body(i, *carried, *slices, *invariants)
                for acc, y in zip(per_iteration, ys):
                    acc.append(y)
                i += 1
                if i > max_iterations: raise LoopLimitError
            outputs = [stack(acc[::-1] if st.reverse else acc, axis=st.axis)
                       for acc, st in zip(per_iteration, stacked)]
            return *carried, *outputs

    With zero trips the carried outputs are the initial values and each stacked output has
    length 0 on its new axis, its other dims taken from the body's (inferred) result type.
    """
    body: Graph = ctx.attr("body")
    layout = LoopLayout.from_parts(len(ctx), ctx.attrs)
    problem = layout.mismatch(len(ctx), body)
    if problem:
        raise ctx.error(problem)
    trips = loop_trip_count(ctx.values, ctx.attrs)
    length: Dim = UNKNOWN if trips is None else trips
    out: list[Type] = [body.inputs[p].type for p in layout.carried_params()]
    for r, st in zip(layout.per_iteration_results(), ctx.attr("stacked"), strict=True):
        t = body.outputs[r].type
        if not isinstance(t, TensorType):
            raise ctx.error(
                f"per-iteration result #{r - 1 - layout.num_carried} is {t}, expected a tensor"
            )
        if t.shape is None:
            out.append(TensorType(t.dtype, None))
            continue
        axis = normalize_axis(st.axis, len(t.shape) + 1, f"{ctx.where} stacked #{r}")
        out.append(TensorType(t.dtype, (*t.shape[:axis], length, *t.shape[axis:])))
    return out


def result_types_for(body: Graph, param_types: Sequence[Type]) -> list[Type]:
    """The types ``body`` yields when its parameters have ``param_types`` (say, the concrete
    shapes of one run): its nodes re-typed in order, subgraphs left as they are."""
    scratch = Graph(body.name)
    mapping: dict[Value, Value] = {
        p: scratch.add_input(p.name, t) for p, t in zip(body.inputs, param_types, strict=True)
    }
    for node in body.nodes:
        inputs = [None if v is None else mapping[v] for v in node.inputs]
        copy = scratch.add_node(node.op, inputs, node.attrs, name=node.name)
        mapping.update(zip(node.outputs, copy.outputs, strict=True))
    return [mapping[v].type if v in mapping else v.type for v in body.outputs]


def loop_trip_count(inputs: Sequence[Value | None], attrs: Mapping[str, Any]) -> int | None:
    """How many times a Loop with these inputs runs, if that is known without running it: no
    condition can stop it, and its bounds are constants or static sliced lengths."""
    body: Graph = attrs["body"]
    cond = body.outputs[0].constant if body.outputs else None
    if inputs[1] is not None or cond is None or cond.size != 1 or not bool(cond.reshape(())):
        return None
    bounds: list[int] = []
    trip = inputs[0]
    if trip is not None:
        data = trip.constant
        if data is None:
            return None
        bounds.append(max(int(data.reshape(-1)[0]), 0))
    layout = LoopLayout.from_parts(len(inputs), dict(attrs))
    for i, s in zip(layout.sliced_inputs(), attrs.get("sliced", ()), strict=True):
        src = inputs[i]
        t = None if src is None else src.type
        if not isinstance(t, TensorType) or t.shape is None:
            return None
        d = t.shape[normalize_axis(s.axis, len(t.shape), "Loop")]
        if not isinstance(d, int):
            return None
        bounds.append(d)
    return min(bounds) if bounds else None


_IF_ATTRS = {
    "then_branch": AttrSpec(Graph, doc="closed graph run when cond is true"),
    "else_branch": AttrSpec(Graph, doc="closed graph run when cond is false"),
}


@op("If", inputs=(1, None), attrs=_IF_ATTRS)
def _infer_if(ctx: InferContext) -> list[Type]:
    """Run one of two closed branches.

    Inputs ``(cond, *captured)``; both branches take ``captured`` as parameters and yield the
    same number of results, which are the node's outputs::

        def if_(cond, *captured):
            return then_branch(*captured) if bool(cond) else else_branch(*captured)
    """
    then_b: Graph = ctx.attr("then_branch")
    else_b: Graph = ctx.attr("else_branch")
    if len(then_b.outputs) != len(else_b.outputs):
        raise ctx.error(
            f"then_branch yields {len(then_b.outputs)} results, "
            f"else_branch yields {len(else_b.outputs)}"
        )
    out: list[Type] = []
    for i, (a, b) in enumerate(zip(then_b.outputs, else_b.outputs, strict=True)):
        try:
            out.append(a.type.join(b.type))
        except Exception:
            raise ctx.error(
                f"output #{i}: then_branch yields {a.type}, else_branch yields {b.type}"
            ) from None
    return out
