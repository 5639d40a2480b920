"""The canonical Loop and If written as ONNX's Loop and If, with their bodies."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...errors import FormatError, TensorloopError
from ...ir.branch import If
from ...ir.graph import Node, Value
from ...ir.loop import Loop, result_types_for
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType, Type, normalize_axis
from .write_scope import Scope, describe, subgraph, value_info

_INT64_MIN = np.iinfo(np.int64).min
_I64 = TensorType(DType.int64, ())
_BOOL = TensorType(DType.bool, ())


def write_if(scope: Scope, node: Node) -> None:
    """The canonical If as an ONNX If whose branches read the captured values by name."""
    file, view = scope.file, If(node)
    if not node.outputs:
        return  # ONNX's If must have outputs; one without them computes nothing
    attrs = {}
    for key, branch in (("then_branch", view.then_branch), ("else_branch", view.else_branch)):
        for param, outer in zip(branch.inputs, view.captured, strict=True):
            file.refs[param] = file.ref(outer)  # ONNX branches read captured values by name
        attrs[key] = subgraph(file, branch, [])
    outs = [file.names[v] for v in view.outputs]
    scope.node("If", [file.ref(view.condition)], outs, attrs, name=node.name)


def write_loop(scope: Scope, node: Node) -> None:
    """The canonical Loop as an ONNX Loop: carried values are loop-carried, sliced sources are
    read with a Gather at the iteration number inside the body (the trip count bounded by their
    lengths outside), invariants are outer-scope names, and stacked results are scan outputs,
    moved or reversed after the loop."""
    file, loop = scope.file, Loop(node)
    body = loop.body
    where = describe(node)
    if not node.outputs:
        return  # ONNX's Loop must have outputs; one without them computes nothing

    # M: the least of max_trip_count and the sliced lengths, static ones folded.
    static: list[int] = []
    bounds: list[str] = []
    trip = loop.trip_count
    reuse: tuple[int, str] | None = None  # a constant trip count that can serve as M itself
    if trip is not None:
        data = trip.constant
        if data is not None and data.size == 1:
            static.append(int(data.reshape(())))
            if data.shape == () and data.dtype == np.int64:
                reuse = (static[-1], file.ref(trip))
        else:
            bounds.append(scope.scalar(file.ref(trip), trip.type, DType.int64))
    for s in loop.sliced:
        src = _present(s.source)
        d = scope.dim(file.ref(src), src.type, s.spec.axis)
        if isinstance(d, int):
            static.append(d)
        else:
            bounds.append(d)
    if static:
        low = min(static)
        bounds.append(reuse[1] if reuse is not None and reuse[0] == low else scope.ints(low))
    m = "" if not bounds else bounds[0] if len(bounds) == 1 else scope.op("Min", bounds)

    first, stop = loop.condition, loop.continue_condition.constant
    if first is not None:
        cond = scope.scalar(file.ref(first), first.type, DType.bool)
    elif stop is not None and stop.size == 1 and bool(stop.reshape(())):
        cond = ""
    else:
        # ONNX lets a Loop without `cond` ignore cond_out; with an explicit true it may not.
        cond = scope.const(True)

    # The body: (iteration_num, cond_in, *carried); slices are gathered at the iteration number
    # and invariants read by their outer names.
    iteration = file.names[loop.iteration]
    inputs = [
        value_info(iteration, _I64, where),
        value_info(file.unique(f"{body.name}_cond_in"), _BOOL, where),
        *(value_info(file.names[c.param], c.param.type, where) for c in loop.carried),
    ]
    for inv in loop.invariants:
        file.refs[inv.param] = file.ref(inv.value)

    def gather_slices(sub: Scope) -> None:
        backwards = ""
        for s in loop.sliced:
            index = iteration
            if s.spec.reverse:  # element len-1-i, which Gather reads as index -1-i
                backwards = backwards or sub.op("Sub", [sub.ints(-1), iteration])
                index = backwards
            src = file.ref(s.source)
            sub.node("Gather", [src, index], [file.names[s.param]], {"axis": s.spec.axis})
            sub.local.add(s.param)

    body_proto = subgraph(file, body, inputs, gather_slices)

    # Scan outputs stack on axis 0 in iteration order; each stacked result is then fixed up
    # for zero trips, reversed and moved to its axis, as it needs.
    maybe_zero = loop.static_trip_count in (None, 0)
    outs = [file.names[c.final] for c in loop.carried]
    steps: list[tuple[str, int, bool]] = []
    for j, st in enumerate(loop.stacked):
        t = st.result.type
        assert isinstance(t, TensorType), "the Loop type rule admits tensors only"
        if t.shape is None:
            if st.spec.axis != 0:
                raise FormatError(
                    f"{where}: stacked result #{j} has unknown rank, so its axis {st.spec.axis} "
                    "cannot be placed"
                )
            axis = 0
        else:
            axis = normalize_axis(st.spec.axis, len(t.shape) + 1, f"{where} stacked #{j}")
        fix = maybe_zero and not t.is_static
        plain = not fix and not st.spec.reverse and axis == 0
        outs.append(
            file.names[st.output] if plain else file.unique(f"{file.names[st.output]}_scan")
        )
        steps.append((outs[-1], axis, fix))
    carried = [file.ref(c.initial) for c in loop.carried]
    scope.node("Loop", [m, cond, *carried], outs, {"body": body_proto}, name=node.name)
    zero_trip: _ZeroTrip | None = None
    for j, (st, (raw, axis, fix)) in enumerate(zip(loop.stacked, steps, strict=True)):
        todo: list[tuple[str, list[str], dict[str, Any]]] = []
        if fix:
            zero_trip = zero_trip or _ZeroTrip(loop)
            target = zero_trip.shape(scope, j, raw)
            if target:
                todo.append(("Reshape", [target], {"allowzero": 1}))
        if st.spec.reverse:
            ends = scope.ints([_INT64_MIN])
            todo.append(("Slice", [scope.ints([-1]), ends, scope.ints([0]), scope.ints([-1])], {}))
        if axis != 0:
            rank = st.result.tensor_type.rank
            assert rank is not None
            todo.append(
                ("Transpose", [], {"perm": [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]})
            )
        final = file.names[st.output]
        if raw != final and not todo:
            todo.append(("Identity", [], {}))  # the zero-trip fix was not needed after all
        x = raw
        for n, (op_type, extra, attrs) in enumerate(todo):
            out = final if n == len(todo) - 1 else file.unique(raw)
            x = scope.node(op_type, [x, *extra], [out], attrs)[0]


class _ZeroTrip:
    """The dims tensorloop gives a Loop's stacked outputs after zero trips: the body's result
    types re-inferred from the shapes its parameters would have had, unknown dims 0.

    Here those shapes are only known at run time, so the body is re-typed with each unknown
    parameter dim a fresh symbol, and each symbol of a result type is read off the loop input
    that binds it. A dim that only concrete shapes would fix (a Concat of symbolic dims, say)
    stays unknown, and is 0 here.
    """

    def __init__(self, loop: Loop) -> None:
        body = loop.body
        used = {d for p in body.inputs for d in _dims(p.type) if isinstance(d, str)}
        fresh = (f"zero_trip{n}" for n in itertools.count())
        params: list[Type] = []
        for param in body.inputs:
            t = param.type
            if isinstance(t, TensorType) and t.shape is not None:
                dims = [
                    next(x for x in fresh if x not in used) if d == UNKNOWN else d for d in t.shape
                ]
                t = t.with_shape(dims)
            params.append(t)
        try:
            results = result_types_for(body, params)
        except TensorloopError:
            results = [v.type for v in body.outputs]
        self.results = loop.counts.split_results(results).per_iteration
        # Each symbol's source: the first parameter that has it, as the interpreter binds; a
        # slice's parameter lacks its source's sliced axis.
        _, carried, slices, invariants = loop.counts.split_params(params)
        feeds: list[tuple[Value | None, Type, int | None]] = [
            *((c.initial, t, None) for c, t in zip(loop.carried, carried, strict=True)),
            *((s.source, t, s.spec.axis) for s, t in zip(loop.sliced, slices, strict=True)),
            *((i.value, t, None) for i, t in zip(loop.invariants, invariants, strict=True)),
        ]
        self.sources: dict[str, tuple[Value, int]] = {}
        for value, t, axis in feeds:
            if not isinstance(t, TensorType) or t.shape is None:
                continue
            outer = _present(value)
            where = loop.node.describe()
            cut = None if axis is None else normalize_axis(axis, len(t.shape) + 1, where)
            for i, d in enumerate(t.shape):
                if isinstance(d, str) and d not in self.sources:
                    self.sources[d] = (outer, i if cut is None or i < cut else i + 1)

    def shape(self, scope: Scope, j: int, raw: str) -> str:
        """The shape stacked result ``j`` must have: that of scan output ``raw`` after one trip
        or more, tensorloop's after zero trips (onnxruntime would infer its own). "" when even
        the rank is unknown here: onnxruntime's guess is then as good as any."""
        t = self.results[j]
        if not isinstance(t, TensorType) or t.shape is None:
            return ""
        parts: list[int | str] = [0]
        for d in t.shape:
            if isinstance(d, int):
                parts.append(d)
            elif d in self.sources:
                outer, pos = self.sources[d]
                size = _dims(outer.type)[pos] if _dims(outer.type) else None
                if isinstance(size, int):
                    parts.append(size)
                else:
                    parts.append(scope.op("Shape", [scope.file.ref(outer)], start=pos, end=pos + 1))
            else:
                parts.append(0)
        count = scope.op("Shape", [raw], start=0, end=1)
        empty = scope.op("Equal", [count, scope.ints([0])])
        return scope.op("Where", [empty, scope.dims(parts), scope.op("Shape", [raw])])


def _dims(t: Type) -> tuple[int | str, ...]:
    return t.shape or () if isinstance(t, TensorType) else ()


def _present(v: Value | None) -> Value:
    assert v is not None, "the verifier guarantees required inputs"
    return v
