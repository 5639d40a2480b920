"""The canonical Loop: its meaning, a typed view over its nodes and its one constructor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from ..errors import GraphError
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type, normalize_axis
from .emit import Emitter
from .graph import Graph, Node, Value
from .opdef import AttrSpec, InferContext, Roles, op

ITERATION_TYPE = TensorType(DType.int64, ())
CONDITION_TYPE = TensorType(DType.bool, ())

T = TypeVar("T")


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


@dataclass(frozen=True)
class Carried:
    """A carried value: its initial value, the body parameter and result, the final output."""

    initial: Value | None
    param: Value
    next: Value
    final: Value


@dataclass(frozen=True)
class SlicedInput:
    """A source sliced along ``spec.axis``; the body sees one slice as ``param``."""

    source: Value | None
    param: Value
    spec: Sliced


@dataclass(frozen=True)
class Invariant:
    """A value every iteration reads unchanged (what the body captured)."""

    value: Value | None
    param: Value


@dataclass(frozen=True)
class StackedOutput:
    """A per-iteration body ``result`` stacked along ``spec.axis`` into ``output``."""

    result: Value
    output: Value
    spec: Stacked


class LoopInputs(NamedTuple, Generic[T]):
    """A Loop node's inputs (or their run-time values) by role."""

    max_trip_count: T
    initial_condition: T
    carried: list[T]
    sources: list[T]
    invariants: list[T]


class BodyResults(NamedTuple, Generic[T]):
    """A Loop body's results (or their run-time values) by role."""

    continue_condition: T
    carried: list[T]
    per_iteration: list[T]


@dataclass(frozen=True)
class LoopCounts:
    """How many values each role holds; splits any flat list of inputs, parameters, results
    or outputs by role, so no other code counts positions."""

    carried: int
    sliced: int
    invariant: int
    stacked: int

    @staticmethod
    def of(num_inputs: int, attrs: Mapping[str, Any]) -> LoopCounts:
        k = int(attrs.get("num_carried", 0))
        s = len(attrs.get("sliced", ()))
        return LoopCounts(k, s, num_inputs - 2 - k - s, len(attrs.get("stacked", ())))

    def split_inputs(self, values: Sequence[T]) -> LoopInputs[T]:
        k, s = 2 + self.carried, 2 + self.carried + self.sliced
        return LoopInputs(
            values[0], values[1], list(values[2:k]), list(values[k:s]), list(values[s:])
        )

    def split_params(self, values: Sequence[T]) -> tuple[T, list[T], list[T], list[T]]:
        """(iteration, carried, slices, invariants)"""
        k, s = 1 + self.carried, 1 + self.carried + self.sliced
        return values[0], list(values[1:k]), list(values[k:s]), list(values[s:])

    def split_results(self, values: Sequence[T]) -> BodyResults[T]:
        k = 1 + self.carried
        return BodyResults(values[0], list(values[1:k]), list(values[k:]))

    def split_outputs(self, values: Sequence[T]) -> tuple[list[T], list[T]]:
        """(final carried values, stacked outputs)"""
        return list(values[: self.carried]), list(values[self.carried :])

    def mismatch(self, num_inputs: int, body: Graph) -> str | None:
        """Why inputs and body cannot form this loop, or None if their counts fit."""
        if self.invariant < 0:
            return (
                f"{num_inputs} inputs cannot hold the two control inputs, "
                f"{self.carried} carried and {self.sliced} sliced values"
            )
        params = 1 + self.carried + self.sliced + self.invariant
        results = 1 + self.carried + self.stacked
        if len(body.inputs) == params and len(body.outputs) == results:
            return None
        return (
            f"body has {len(body.inputs)} parameters and {len(body.outputs)} results, expected "
            f"{params} (iteration, {self.carried} carried, {self.sliced} sliced, "
            f"{self.invariant} invariant) and {results} (continue_condition, "
            f"{self.carried} carried, {self.stacked} stacked)"
        )


class Loop:
    """The one loop every other loop form lowers to, as a typed view over a ``Loop`` node.

    Inputs: ``max_trip_count?`` (integer scalar), ``initial_condition?`` (bool scalar), then
    ``carried*``, ``sliced*`` and ``invariant*`` values. The body is a closed graph with
    parameters ``(iteration, *carried, *slices, *invariants)`` and results
    ``(continue_condition, *carried_next, *per_iteration)``. Outputs: the final carried values,
    then each per-iteration result stacked on a new axis. Its meaning, exactly as the reference
    backend runs it::

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

    Build one with ``Loop.build``; read one with ``Loop(node)``: ``.carried``, ``.sliced``,
    ``.invariants`` and ``.stacked`` list the roles with their values, body ports and records.
    """

    __slots__ = ("counts", "node")

    def __init__(self, node: Node) -> None:
        if node.op != "Loop":
            raise GraphError(f"{node.describe()} is not a Loop")
        self.node = node
        self.counts = LoopCounts.of(len(node.inputs), node.attrs)

    # -- the node ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.node.name

    @property
    def body(self) -> Graph:
        body: Graph = self.node.attrs["body"]
        return body

    @property
    def inputs(self) -> LoopInputs[Value | None]:
        return self.counts.split_inputs(self.node.inputs)

    @property
    def trip_count(self) -> Value | None:
        """The ``max_trip_count`` input, if given."""
        return self.node.inputs[0]

    @property
    def condition(self) -> Value | None:
        """The ``initial_condition`` input, if given."""
        return self.node.inputs[1]

    @property
    def iteration(self) -> Value:
        """The body parameter that counts iterations from 0."""
        return self.body.inputs[0]

    @property
    def continue_condition(self) -> Value:
        """The body result that decides whether another iteration runs."""
        return self.body.outputs[0]

    @property
    def carried(self) -> list[Carried]:
        _, params, _, _ = self.counts.split_params(self.body.inputs)
        results = self.counts.split_results(self.body.outputs).carried
        finals, _ = self.counts.split_outputs(self.node.outputs)
        return [
            Carried(*parts)
            for parts in zip(self.inputs.carried, params, results, finals, strict=True)
        ]

    @property
    def sliced(self) -> list[SlicedInput]:
        _, _, params, _ = self.counts.split_params(self.body.inputs)
        specs: tuple[Sliced, ...] = self.node.attrs.get("sliced", ())
        return [
            SlicedInput(*parts) for parts in zip(self.inputs.sources, params, specs, strict=True)
        ]

    @property
    def invariants(self) -> list[Invariant]:
        _, _, _, params = self.counts.split_params(self.body.inputs)
        return [Invariant(*parts) for parts in zip(self.inputs.invariants, params, strict=True)]

    @property
    def stacked(self) -> list[StackedOutput]:
        results = self.counts.split_results(self.body.outputs).per_iteration
        _, outputs = self.counts.split_outputs(self.node.outputs)
        specs: tuple[Stacked, ...] = self.node.attrs.get("stacked", ())
        return [StackedOutput(*parts) for parts in zip(results, outputs, specs, strict=True)]

    @property
    def outputs(self) -> list[Value]:
        """The node's outputs: the final carried values, then the stacked outputs."""
        return list(self.node.outputs)

    # -- facts about its trips: every backend and pass reads them here ------------------------
    @property
    def always_continues(self) -> bool:
        """The body's ``continue_condition`` is a constant true: no iteration ends the loop."""
        return true_constant(self.continue_condition)

    @property
    def always_starts(self) -> bool:
        """The loop has no ``initial_condition`` or a constant true one."""
        return self.condition is None or true_constant(self.condition)

    @property
    def can_stop_early(self) -> bool:
        """Whether a condition may end the loop before its bounds do: an ``initial_condition``
        that is not a constant true, or a ``continue_condition`` that is not."""
        return not (self.always_starts and self.always_continues)

    @property
    def constant_trip_count(self) -> int | None:
        """The ``max_trip_count`` a one-element Constant gives (a negative one counts as 0);
        None when there is none or only the run knows it (``trip_count_is_dynamic``)."""
        return constant_trip_count(self.trip_count)

    @property
    def trip_count_is_dynamic(self) -> bool:
        """A ``max_trip_count`` is given whose value only the run knows."""
        return self.trip_count is not None and self.constant_trip_count is None

    @property
    def static_lengths(self) -> list[int] | None:
        """Each sliced source's length along its axis (one per source, in order), when the
        static types know them all; None if some is known only at run time."""
        return static_lengths(self.node.inputs, self.node.attrs)

    def bound_given(self, lengths: Iterable[int]) -> int | None:
        """The most times the loop can run once its sliced sources' ``lengths`` (one per
        source, as at trace or run time) are known: the least of them and the constant trip
        count. A condition, or a trip count known only at run time, may stop it sooner; None
        when nothing else bounds it."""
        return least_bound(self.constant_trip_count, lengths)

    def trips_given(self, lengths: Iterable[int]) -> int | None:
        """How many times the loop runs once its sliced sources' ``lengths`` are known, when
        only its bounds can stop it: None if a condition may stop it early
        (``can_stop_early``), its trip count is known only at run time, or nothing bounds it."""
        if self.can_stop_early or self.trip_count_is_dynamic:
            return None
        return self.bound_given(lengths)

    @property
    def static_trip_count(self) -> int | None:
        """How many times the loop runs, if known without running it (see loop_trip_count)."""
        return loop_trip_count(self.node.inputs, self.node.attrs)

    @property
    def trip_bound(self) -> int | None:
        """The most times the loop can run, if known without running it (loop_trip_bound)."""
        return loop_trip_bound(self.node.inputs, self.node.attrs)

    # -- construction ------------------------------------------------------------------------
    @staticmethod
    def operands(
        body: Graph,
        *,
        max_trip_count: T | None = None,
        initial_condition: T | None = None,
        carried: Sequence[T] = (),
        sliced: Sequence[tuple[T, Sliced]] = (),
        invariants: Sequence[T] = (),
        stacked: Sequence[Stacked] = (),
    ) -> tuple[list[T | None], dict[str, Any]]:
        """The flat inputs and attributes of a Loop node with these roles; ``Loop.build`` adds
        the node, and the builder (whose operands are tensors, not values) calls this."""
        inputs: list[T | None] = [max_trip_count, initial_condition, *carried]
        inputs += [src for src, _ in sliced]
        inputs += invariants
        attrs = {
            "body": body,
            "num_carried": len(carried),
            "sliced": tuple(spec for _, spec in sliced),
            "stacked": tuple(stacked),
        }
        return inputs, attrs

    @staticmethod
    def build(
        em: Emitter,
        body: Graph,
        *,
        max_trip_count: Value | None = None,
        initial_condition: Value | None = None,
        carried: Sequence[Value] = (),
        sliced: Sequence[tuple[Value, Sliced]] = (),
        invariants: Sequence[Value] = (),
        stacked: Sequence[Stacked] = (),
        name: str = "",
    ) -> Loop:
        """Add a typed Loop node where ``em`` adds nodes. The body's parameters are
        ``(iteration, *carried, *slices, *invariants)`` and its results
        ``(continue_condition, *carried_next, *per_iteration)``, one per ``stacked`` record."""
        inputs, attrs = Loop.operands(
            body,
            max_trip_count=max_trip_count,
            initial_condition=initial_condition,
            carried=carried,
            sliced=sliced,
            invariants=invariants,
            stacked=stacked,
        )
        return Loop(em.node("Loop", inputs, attrs, name=name))

    def __repr__(self) -> str:
        c = self.counts
        return (
            f"<Loop {self.name!r}: {c.carried} carried, {c.sliced} sliced, "
            f"{c.invariant} invariant, {c.stacked} stacked>"
        )


def true_constant(value: Value | None) -> bool:
    """Whether a one-element Constant gives ``value`` and it is true."""
    data = None if value is None else value.constant
    return data is not None and data.size == 1 and bool(data.reshape(-1)[0])


def fixed_runs(graph: Graph, known: dict[int, int] | None = None) -> int:
    """The loop iterations that running ``graph`` once makes for certain, at every depth: for
    each Loop node of ``graph`` itself (not inside an If's branch, which may not run) that only
    its bounds can stop and whose trips the static types give, its trips times one more than
    its body's own. Python ints: nested trips multiply without overflow. ``known`` caches the
    answer per graph (by id) across calls."""
    known = {} if known is None else known
    found = known.get(id(graph))
    if found is not None:
        return found
    total = 0
    for node in graph.nodes:
        if node.op != "Loop":
            continue
        view = Loop(node)
        lengths = view.static_lengths
        trips = None if lengths is None else view.trips_given(lengths)
        if trips:
            total += trips * (1 + fixed_runs(view.body, known))
    known[id(graph)] = total
    return total


def constant_trip_count(trip: Value | None) -> int | None:
    """The value of a ``max_trip_count`` input that a one-element Constant gives, at least 0;
    None for no trip count or one known only at run time."""
    data = None if trip is None else trip.constant
    if data is None or data.size != 1:
        return None
    return max(int(data.reshape(-1)[0]), 0)


def least_bound(trip_count: int | None, lengths: Iterable[int]) -> int | None:
    """The most trips of a loop with this constant trip count (None: none, or one only the run
    knows) and these sliced lengths: the least of them; None if there are none."""
    bounds = [*([] if trip_count is None else [trip_count]), *lengths]
    return min(bounds) if bounds else None


def static_lengths(inputs: Sequence[Value | None], attrs: Mapping[str, Any]) -> list[int] | None:
    """The lengths along their axes of the sliced sources of a Loop with these inputs, when
    their static types know them all; None if some is known only at run time (or its axis is
    out of range, which running reports)."""
    lengths: list[int] = []
    sources = LoopCounts.of(len(inputs), attrs).split_inputs(inputs).sources
    for src, s in zip(sources, attrs.get("sliced", ()), strict=True):
        t = None if src is None else src.type
        if (
            not isinstance(t, TensorType)
            or t.shape is None
            or not -len(t.shape) <= s.axis < len(t.shape)
        ):
            return None
        d = t.shape[normalize_axis(s.axis, len(t.shape), "Loop")]
        if not isinstance(d, int):
            return None
        lengths.append(d)
    return lengths


def loop_trip_count(inputs: Sequence[Value | None], attrs: Mapping[str, Any]) -> int | None:
    """How many times a Loop with these inputs runs, if that is known without running it: it
    has no ``initial_condition`` (a given one, even a constant true one, leaves the count to
    the run here, as inferred types have it), its ``continue_condition`` is a constant true,
    and its bounds are constants or static sliced lengths."""
    body: Graph = attrs["body"]
    if inputs[1] is not None or not body.outputs or not true_constant(body.outputs[0]):
        return None
    trip = inputs[0]
    if trip is not None and trip.constant is None:
        return None
    return loop_trip_bound(inputs, attrs)


def loop_trip_bound(inputs: Sequence[Value | None], attrs: Mapping[str, Any]) -> int | None:
    """The most times a Loop with these inputs can run, if known without running it: the least
    of its constant trip count and its static sliced lengths (a condition may stop it sooner).
    None when some bound is only known at run time, or there is none."""
    trip = inputs[0]
    count = constant_trip_count(trip)
    if trip is not None and count is None:
        return None
    lengths = static_lengths(inputs, attrs)
    return None if lengths is None else least_bound(count, lengths)


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


# -- the op: type rule, structure checks and text-IR roles -----------------------------------
_LOOP_ATTRS = {
    "body": AttrSpec(Graph, doc="closed body graph"),
    "num_carried": AttrSpec(int, 0, "how many carried values follow the two control inputs"),
    "sliced": AttrSpec(tuple, (), "one Sliced per sliced source"),
    "stacked": AttrSpec(tuple, (), "one Stacked per per-iteration body result"),
}


def _split_roles(inputs: Sequence[T], attrs: Mapping[str, Any]) -> dict[str, Any]:
    parts = LoopCounts.of(len(inputs), attrs).split_inputs(inputs)
    return {
        "max_trip_count": parts.max_trip_count,
        "initial_condition": parts.initial_condition,
        "carried": parts.carried,
        "sliced": parts.sources,
        "invariants": parts.invariants,
    }


def _join_roles(roles: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    carried = list(roles.get("carried", []))
    inputs = [roles.get("max_trip_count"), roles.get("initial_condition"), *carried]
    inputs += [*roles.get("sliced", []), *roles.get("invariants", [])]
    return inputs, {"num_carried": len(carried)}


_LOOP_ROLES = Roles(
    singles=("max_trip_count", "initial_condition"),
    lists=("carried", "sliced", "invariants"),
    split=_split_roles,
    join=_join_roles,
    derived=frozenset({"num_carried"}),
)


def _verify_loop(node: Node, where: str, root: Graph) -> list[str]:
    sliced = node.attrs.get("sliced", ())
    stacked = node.attrs.get("stacked", ())
    if not all(isinstance(s, Sliced) for s in sliced) or not all(
        isinstance(s, Stacked) for s in stacked
    ):
        return [f"{where}: 'sliced' must hold Sliced records and 'stacked' Stacked records"]
    loop = Loop(node)
    problem = loop.counts.mismatch(len(node.inputs), loop.body)
    if problem:
        return [f"{where}: {problem}"]
    problems: list[str] = []

    def expect(what: str, expected: Type, actual: Type | None) -> None:
        if actual is None or not expected.compatible(actual):
            problems.append(f"{what}: expected {expected}, got {actual if actual else 'nothing'}")

    trip, cond = loop.trip_count, loop.condition
    if trip is not None and not (
        isinstance(trip.type, TensorType) and trip.type.dtype.is_int and trip.type.rank in (0, None)
    ):
        problems.append(f"{where}: max_trip_count: expected an integer scalar, got {trip.type}")
    if cond is not None:
        expect(f"{where}: initial_condition", CONDITION_TYPE, cond.type)
    expect(f"{where}: body parameter 'iteration'", ITERATION_TYPE, loop.iteration.type)
    expect(
        f"{where}: body result 'continue_condition'",
        CONDITION_TYPE,
        loop.continue_condition.type,
    )
    name = f"loop '{node.name}'" if node.name else "loop"
    for c, carried in enumerate(loop.carried):
        init, param, nxt = carried.initial, carried.param.type, carried.next.type
        if init is None or not param.compatible(init.type):
            problems.append(
                f"carried #{c} of {name}: initial value is "
                f"{init.type if init else 'missing'}, body parameter expects {param}"
            )
        if not param.compatible(nxt):
            problems.append(f"carried #{c} of {name}: body yields {nxt}, expected {param}")
    for c, s in enumerate(loop.sliced):
        src = s.source
        if src is None or not isinstance(src.type, TensorType):
            problems.append(f"sliced #{c} of {name}: source must be a tensor")
            continue
        if src.type.shape is None:
            continue
        try:
            a = normalize_axis(s.spec.axis, len(src.type.shape), f"sliced #{c} of {name}")
        except GraphError as exc:
            problems.append(f"{exc} (source {src.type})")
            continue
        expect(
            f"sliced #{c} of {name}: body parameter",
            TensorType(src.type.dtype, src.type.shape[:a] + src.type.shape[a + 1 :]),
            s.param.type,
        )
    for c, inv in enumerate(loop.invariants):
        param = inv.param.type
        if inv.value is None or not param.compatible(inv.value.type):
            problems.append(
                f"invariant #{c} of {name}: value is "
                f"{inv.value.type if inv.value else 'missing'}, body parameter expects {param}"
            )
    return problems


@op("Loop", inputs=(2, None), attrs=_LOOP_ATTRS, verify=_verify_loop, roles=_LOOP_ROLES)
def _infer_loop(ctx: InferContext) -> list[Type]:
    """The canonical loop; its meaning is the docstring of ``tensorloop.ir.loop.Loop``."""
    body: Graph = ctx.attr("body")
    counts = LoopCounts.of(len(ctx), ctx.attrs)
    problem = counts.mismatch(len(ctx), body)
    if problem:
        raise ctx.error(problem)
    trips = loop_trip_count(ctx.values, ctx.attrs)
    length: Dim = UNKNOWN if trips is None else trips
    _, carried, _, _ = counts.split_params(body.inputs)
    out: list[Type] = [p.type for p in carried]
    per_iteration = counts.split_results(body.outputs).per_iteration
    for j, (y, st) in enumerate(zip(per_iteration, ctx.attr("stacked"), strict=True)):
        t = y.type
        if not isinstance(t, TensorType):
            raise ctx.error(f"per-iteration result #{j} is {t}, expected a tensor")
        if t.shape is None:
            out.append(TensorType(t.dtype, None))
            continue
        axis = normalize_axis(st.axis, len(t.shape) + 1, f"{ctx.where} stacked #{j}")
        out.append(TensorType(t.dtype, (*t.shape[:axis], length, *t.shape[axis:])))
    return out
