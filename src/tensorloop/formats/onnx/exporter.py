"""``tl.save(model, "m.onnx")`` and ``to_onnx``: a tensorloop Model as an ONNX ModelProto.

Core ops carry ONNX's names, attributes and (newest) semantics, so each becomes the same-named
ONNX node. The canonical Loop becomes an ONNX Loop: carried values are loop-carried, sliced
sources are read with a Gather at the iteration number inside the body (the trip count bounded
by their lengths outside), invariants are outer-scope names, and stacked results are scan
outputs, moved or reversed after the loop. Names are unique across the whole model, so any body
can read any enclosing value by name.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...errors import FormatError, TensorloopError
from ...io import saver
from ...ir.branch import If
from ...ir.graph import Graph, Node, Value
from ...ir.loop import Loop, result_types_for
from ...ir.opdef import get_opdef
from ...model import Model
from ...tensor.dtypes import DType
from ...tensor.types import (
    UNKNOWN,
    OptionalType,
    SequenceType,
    TensorType,
    Type,
    normalize_axis,
)

OPSET = 26
"""The default ``ai.onnx`` opset: the newest that onnxruntime 1.31 runs."""
DOMAIN_OPSETS = {"ai.onnx.ml": 5, "ai.onnx.preview": 1, "ai.onnx.preview.training": 1}
"""Other domains a core op may live in, imported only by models that use them."""
LARGE_CONSTANT = 16
"""Constants with at least this many elements become initializers; smaller ones stay nodes."""

_INT64_MIN = np.iinfo(np.int64).min
_I64 = TensorType(DType.int64, ())
_BOOL = TensorType(DType.bool, ())
_A = onnx.AttributeProto
_OPTIONAL = onnx.defs.OpSchema.FormalParameterOption.Optional
_KINDS = {
    getattr(onnx.defs.OpSchema.AttrType, k): int(getattr(_A, k))
    for k in _A.AttributeType.keys()  # noqa: SIM118 (a protobuf enum, not a dict)
    if k != "UNDEFINED"
}

Array = np.ndarray[Any, Any]


# -- types and tensors ----------------------------------------------------------------------------
def elem_type(dt: DType) -> int:
    """The TensorProto element type of a tensorloop element type."""
    try:
        return int(helper.np_dtype_to_tensor_dtype(dt.numpy))
    except (KeyError, ValueError, TypeError):
        raise FormatError(f"element type {dt} has no ONNX equivalent") from None


def type_proto(t: Type, where: str) -> onnx.TypeProto:
    """A tensorloop type as an ONNX TypeProto: symbolic dims are dim_params, ``?`` unnamed."""
    if isinstance(t, TensorType):
        shape = None if t.shape is None else [None if d == UNKNOWN else d for d in t.shape]
        return helper.make_tensor_type_proto(elem_type(t.dtype), shape)
    if isinstance(t, SequenceType):
        return helper.make_sequence_type_proto(type_proto(t.element, where))
    if isinstance(t, OptionalType):
        return helper.make_optional_type_proto(type_proto(t.element, where))
    raise FormatError(f"{where}: type {t} has no ONNX equivalent")


def _value_info(name: str, t: Type, where: str) -> onnx.ValueInfoProto:
    return helper.make_value_info(name, type_proto(t, where))


def _tensor(data: Array, name: str = "") -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(data), name)


def _describe(node: Node) -> str:
    first = f" (output %{node.outputs[0].name})" if node.outputs else ""
    return f"{node.describe()}{first}"


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


# -- the model being written ----------------------------------------------------------------------
def _fresh(hint: str, taken: set[str]) -> str:
    name, n = hint, 0
    while name in taken:
        n += 1
        name = f"{hint}_{n}"
    taken.add(name)
    return name


class _File:
    """State shared by every graph of one export: names, initializers, domains in use."""

    def __init__(self, model: Model, opset: int) -> None:
        self.root = model.graph
        self.opset = opset
        self.taken: set[str] = set()
        self.names: dict[Value, str] = {}
        """Every value's own ONNX name, unique across the model; the root keeps its names."""
        self.refs: dict[Value, str] = {}
        """Values read under another name: invariants, captures, read-only persistent tensors,
        constants kept as initializers but used in a body."""
        self.initializers: list[onnx.TensorProto] = []
        self.variables: dict[str, str] = {}
        self.domains: set[str] = set()
        self._node_names: set[str] = set()
        self._reserve(self.root)

    def unique(self, hint: str) -> str:
        """A value name no other value of the model has."""
        return _fresh(hint or "t", self.taken)

    def _reserve(self, graph: Graph) -> None:
        # The root first, so that its inputs and outputs keep exactly the names they have.
        for v in graph.values():
            self.names[v] = self.unique(v.name)
        for node in graph.nodes:
            for sub in node.subgraphs.values():
                self._reserve(sub)

    def ref(self, v: Value | None) -> str:
        """The name a node reads ``v`` by ("" for an omitted optional input)."""
        if v is None:
            return ""
        return self.refs.get(v) or self.names[v]

    def node_name(self, hint: str) -> str:
        """A node name no other node has, or "" for a node tensorloop left unnamed."""
        return _fresh(hint, self._node_names) if hint else ""

    def initializer(self, data: Array, name: str) -> str:
        self.initializers.append(_tensor(data, name))
        return name


@dataclass
class _Scope:
    """One ONNX graph being written: its nodes and the values its nodes produce."""

    file: _File
    graph: Graph
    prefix: str = ""
    """The tensorloop node being lowered: helper values are named after it."""
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    local: set[Value] = field(default_factory=set)
    """Values a node of this graph produces under their own names."""

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: Sequence[str] | int = 1,
        attrs: Mapping[str, Any] | None = None,
        *,
        domain: str = "",
        name: str = "",
    ) -> list[str]:
        """Add a node; ``outputs`` lists names or says how many fresh ones to make. Attribute
        values are AttributeProtos or what make_attribute takes."""
        if isinstance(outputs, int):
            hint = f"{self.prefix}/{op_type}" if self.prefix else op_type
            outputs = [self.file.unique(hint) for _ in range(outputs)]
        proto = helper.make_node(
            op_type, inputs, outputs, name=self.file.node_name(name), domain=domain or None
        )
        proto.attribute.extend(
            a if isinstance(a, onnx.AttributeProto) else helper.make_attribute(k, a)
            for k, a in (attrs or {}).items()
        )
        self.nodes.append(proto)
        return list(outputs)

    def op(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        return self.node(op_type, inputs, 1, attrs)[0]

    def const(self, value: Any, dtype: Any = None) -> str:
        return self.op("Constant", [], value=_tensor(np.asarray(value, dtype)))

    def ints(self, values: Sequence[int] | int) -> str:
        return self.const(values, np.int64)

    def scalar(self, name: str, t: Type, dtype: DType) -> str:
        """A one-element tensor as a scalar of ``dtype`` (Loop's M and cond are scalars)."""
        if not isinstance(t, TensorType) or t.rank != 0:
            name = self.op("Reshape", [name, self.ints([])])
        if not isinstance(t, TensorType) or t.dtype != dtype:
            name = self.op("Cast", [name], to=elem_type(dtype))
        return name

    def dim(self, name: str, t: Type, axis: int) -> int | str:
        """Dim ``axis`` of a tensor: an int when static, else an i64 scalar computed here."""
        if isinstance(t, TensorType) and t.shape is not None:
            d = t.shape[normalize_axis(axis, len(t.shape), name)]
            if isinstance(d, int):
                return d
        return self.op("Gather", [self.op("Shape", [name]), self.ints(axis)], axis=0)

    def dims(self, parts: Sequence[int | str]) -> str:
        """A 1-D i64 shape from ints and 1-element i64 tensors, constant runs folded."""
        pieces: list[str] = []
        run: list[int] = []
        for p in parts:
            if isinstance(p, int):
                run.append(p)
                continue
            if run:
                pieces.append(self.ints(run))
                run = []
            pieces.append(p)
        if run or not pieces:
            pieces.append(self.ints(run))
        return pieces[0] if len(pieces) == 1 else self.op("Concat", pieces, axis=0)


# -- graphs ---------------------------------------------------------------------------------------
def _emit_nodes(scope: _Scope, graph: Graph) -> None:
    for node in graph.nodes:
        scope.prefix = node.name or (node.outputs[0].name if node.outputs else node.op)
        _SPECIAL.get(node.op, _generic)(scope, node)
        scope.local.update(v for v in node.outputs if v not in scope.file.refs)


def _graph_outputs(scope: _Scope, top: bool) -> list[onnx.ValueInfoProto]:
    """The graph's results. ONNX wants each produced in its graph under a name of its own:
    an Identity gives one to a result read from outside or listed twice."""
    file, graph = scope.file, scope.graph
    seen: set[str] = set()
    infos = []
    for j, v in enumerate(graph.outputs):
        name = file.ref(v)
        # A body result that is one of its parameters gets a copy too: onnxruntime's Loop
        # otherwise hands out iteration_num already advanced to the next iteration.
        own = v not in file.refs and (v in scope.local or (top and v in graph.inputs))
        if name in seen:
            if top:
                raise FormatError(
                    f"output #{j} repeats %{v.name}; ONNX graph outputs need distinct names"
                )
            own = False
        if not own:
            # A value read under another name still has its own free: the result takes it.
            mine = file.names[v]
            target = mine if v in file.refs and mine not in seen else file.unique(mine)
            name = scope.node("Identity", [name], [target])[0]
        seen.add(name)
        infos.append(_value_info(name, v.type, f"graph '{graph.name}' result #{j}"))
    return infos


def _subgraph(
    file: _File,
    graph: Graph,
    inputs: Sequence[onnx.ValueInfoProto],
    prelude: Callable[[_Scope], None] | None = None,
) -> onnx.GraphProto:
    """``graph`` as an ONNX subgraph with formal ``inputs``; ``prelude`` first writes the nodes
    that compute parameters the formal inputs do not carry."""
    scope = _Scope(file, graph, prefix=graph.name)
    if prelude is not None:
        prelude(scope)
    _emit_nodes(scope, graph)
    outputs = _graph_outputs(scope, top=False)
    return helper.make_graph(scope.nodes, graph.name, list(inputs), outputs)


def _formal_inputs(file: _File, graph: Graph) -> list[onnx.ValueInfoProto]:
    return [
        _value_info(file.names[v], v.type, f"graph '{graph.name}' parameter %{v.name}")
        for v in graph.inputs
    ]


# -- op emitters ----------------------------------------------------------------------------------
def _schema(file: _File, node: Node) -> onnx.defs.OpSchema:
    for domain in ("", *DOMAIN_OPSETS):
        if not onnx.defs.has(node.op, domain):
            continue
        version = DOMAIN_OPSETS.get(domain, file.opset)
        try:
            return onnx.defs.get_schema(node.op, version, domain)
        except onnx.defs.SchemaError:
            since = min(
                s.since_version
                for s in onnx.defs.get_all_schemas_with_history()
                if s.name == node.op and s.domain == domain
            )
            raise FormatError(
                f"{_describe(node)}: ONNX has {node.op} from opset {since} of "
                f"{domain or 'ai.onnx'}, but the export targets opset {version} (pass opset=)"
            ) from None
    raise FormatError(f"{_describe(node)}: ONNX has no op '{node.op}'")


def _generic(scope: _Scope, node: Node) -> None:
    """A core op as the same-named ONNX op with its attributes."""
    file = scope.file
    schema = _schema(file, node)
    if schema.domain:
        file.domains.add(schema.domain)
    opdef = get_opdef(node.op)
    defaults = opdef.attrs
    given = node.attrs
    if getattr(schema, "has_function", False):
        # onnx's checker expands a function op's body without the defaults of the attributes
        # left out (MeanVarianceNormalization fails so): write every one the schema knows.
        resolved = opdef.resolve_attrs(node.attrs, node.describe())
        given = {k: v for k, v in resolved.items() if k in schema.attributes or k in given}
    attrs: dict[str, onnx.AttributeProto] = {}
    for key, value in given.items():
        if value is None:
            continue
        spec = schema.attributes.get(key)
        if spec is None:
            if key in defaults and _equal(value, defaults[key].default):
                continue  # a newer opset's attribute, at the value that means the older op
            raise FormatError(
                f"{_describe(node)}: attribute '{key}' = {value!r} does not exist in "
                f"{node.op}-{schema.since_version}"
            )
        attrs[key] = _attribute(file, node, key, value, _KINDS[spec.type])
    # Optional outputs nobody reads are left out: some ops (BatchNormalization) change mode
    # with the number of outputs listed.
    results = set(scope.graph.outputs)
    outs = []
    for j, v in enumerate(node.outputs):
        formal = schema.outputs[min(j, len(schema.outputs) - 1)] if schema.outputs else None
        unread = not v.uses and v not in results
        outs.append(
            "" if unread and formal is not None and formal.option == _OPTIONAL else file.names[v]
        )
    ins = [file.ref(v) for v in node.inputs]
    scope.node(node.op, _trim(ins), _trim(outs), attrs, domain=schema.domain, name=node.name)


def _trim(names: list[str]) -> list[str]:
    """Names without the trailing "" of optional inputs or outputs left out."""
    while names and not names[-1]:
        names.pop()
    return names


def _attribute(file: _File, node: Node, key: str, value: Any, kind: int) -> onnx.AttributeProto:
    """An attribute value as an AttributeProto of ONNX attribute type ``kind``."""
    where = f"{_describe(node)} attribute '{key}'"

    def item(x: Any) -> Any:
        if isinstance(x, Graph):
            return _subgraph(file, x, _formal_inputs(file, x))
        if isinstance(x, DType):
            return elem_type(x)
        if isinstance(x, Type):
            return type_proto(x, where)
        if isinstance(x, np.ndarray) or kind in (_A.TENSOR, _A.TENSORS):
            return _tensor(np.asarray(x))
        if kind in (_A.FLOAT, _A.FLOATS):
            return float(x)
        if kind in (_A.INT, _A.INTS):
            return int(x)
        return x

    listed = kind in (_A.INTS, _A.FLOATS, _A.STRINGS, _A.TENSORS, _A.GRAPHS, _A.TYPE_PROTOS)
    try:
        if listed:
            items = value if isinstance(value, tuple | list) else (value,)
            return helper.make_attribute(key, [item(x) for x in items], attr_type=kind)
        return helper.make_attribute(key, item(value), attr_type=kind)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"{where}: {value!r} cannot be written: {exc}") from None


def _constant(scope: _Scope, node: Node) -> None:
    file, v = scope.file, node.output
    data: Array = node.attrs["value"]
    if data.size >= LARGE_CONSTANT and v not in scope.graph.outputs:
        file.initializer(data, file.names[v])
        if scope.graph is not file.root:
            file.refs[v] = file.names[v]  # an outer-scope name inside a body
        return
    scope.node("Constant", [], [file.names[v]], {"value": _tensor(data)}, name=node.name)


def _read_variable(scope: _Scope, node: Node) -> None:
    file = scope.file
    name: str = node.attrs["variable"]
    if name not in file.variables:
        var = file.root.variables[name]
        file.variables[name] = file.initializer(var.initial, file.unique(name))
    file.refs[node.output] = file.variables[name]


def _assign(scope: _Scope, node: Node) -> None:
    raise FormatError(
        f"{_describe(node)}: assigns persistent tensor '{node.attrs['variable']}', but an ONNX "
        "model keeps no state between runs (persistent tensors that are only read are written "
        "as initializers)"
    )


def _check(scope: _Scope, node: Node) -> None:
    # ONNX has no assertion: the values pass through (docs/network.md says what that drops)
    for value, out in zip(node.inputs[1:], node.outputs, strict=True):
        scope.node("Identity", [scope.file.ref(value)], [scope.file.names[out]])


def _if(scope: _Scope, node: Node) -> None:
    file, view = scope.file, If(node)
    if not node.outputs:
        return  # ONNX's If must have outputs; one without them computes nothing
    attrs = {}
    for key, branch in (("then_branch", view.then_branch), ("else_branch", view.else_branch)):
        for param, outer in zip(branch.inputs, view.captured, strict=True):
            file.refs[param] = file.ref(outer)  # ONNX branches read captured values by name
        attrs[key] = _subgraph(file, branch, [])
    outs = [file.names[v] for v in view.outputs]
    scope.node("If", [file.ref(view.condition)], outs, attrs, name=node.name)


def _loop(scope: _Scope, node: Node) -> None:
    """The canonical Loop as an ONNX Loop (see the module docstring)."""
    file, loop = scope.file, Loop(node)
    body = loop.body
    where = _describe(node)
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
        _value_info(iteration, _I64, where),
        _value_info(file.unique(f"{body.name}_cond_in"), _BOOL, where),
        *(_value_info(file.names[c.param], c.param.type, where) for c in loop.carried),
    ]
    for inv in loop.invariants:
        file.refs[inv.param] = file.ref(inv.value)

    def gather_slices(sub: _Scope) -> None:
        backwards = ""
        for s in loop.sliced:
            index = iteration
            if s.spec.reverse:  # element len-1-i, which Gather reads as index -1-i
                backwards = backwards or sub.op("Sub", [sub.ints(-1), iteration])
                index = backwards
            src = file.ref(s.source)
            sub.node("Gather", [src, index], [file.names[s.param]], {"axis": s.spec.axis})
            sub.local.add(s.param)

    body_proto = _subgraph(file, body, inputs, gather_slices)

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

    def shape(self, scope: _Scope, j: int, raw: str) -> str:
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


_SPECIAL: dict[str, Callable[[_Scope, Node], None]] = {
    "Constant": _constant,
    "ReadVariable": _read_variable,
    "Assign": _assign,
    "Check": _check,
    "Loop": _loop,
    "If": _if,
}


# -- entry points ---------------------------------------------------------------------------------
def to_onnx(model: Model, *, opset: int = OPSET) -> onnx.ModelProto:
    """``model`` as an ONNX model importing ``ai.onnx`` at ``opset``."""
    file = _File(model, opset)
    graph = model.graph
    scope = _Scope(file, graph)
    inputs = [_value_info(file.names[v], v.type, f"input '{v.name}'") for v in graph.inputs]
    _emit_nodes(scope, graph)
    outputs = _graph_outputs(scope, top=True)
    proto = helper.make_graph(
        scope.nodes, graph.name, inputs, outputs, initializer=file.initializers
    )
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, DOMAIN_OPSETS[d]) for d in sorted(file.domains)]
    model_proto = helper.make_model(
        proto,
        opset_imports=imports,
        ir_version=helper.find_min_ir_version_for(imports, ignore_unknown=True),
        producer_name="tensorloop",
    )
    _give_ranks(model_proto, graph)
    return model_proto


def _give_ranks(model: onnx.ModelProto, graph: Graph) -> None:
    """ONNX wants a rank on every model input and output: an output tensorloop types with an
    unknown rank takes the type onnx's shape inference finds, if it finds one."""
    for v in graph.inputs:
        if isinstance(v.type, TensorType) and v.type.shape is None:
            raise FormatError(f"input '{v.name}' is {v.type}: ONNX model inputs need a rank")
    unranked = [
        info
        for info, v in zip(model.graph.output, graph.outputs, strict=True)
        if isinstance(v.type, TensorType) and v.type.shape is None
    ]
    if not unranked:
        return
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        found = {i.name: i.type for i in [*inferred.graph.value_info, *inferred.graph.output]}
    except onnx.shape_inference.InferenceError:
        found = {}
    for info in unranked:
        t = found.get(info.name)
        if t is None or not t.tensor_type.HasField("shape"):
            raise FormatError(
                f"output '{info.name}' has unknown rank, and ONNX model outputs need one"
            )
        info.type.CopyFrom(t)


_PROTOBUF_LIMIT = 2**31 - 2**20
"""Protobuf cannot hold a message of 2 GiB; models near that keep their tensors outside."""


@saver(".onnx")
def _save(model: Model, path: str | os.PathLike[str], **options: Any) -> None:
    """Write ``model`` as ONNX. Options: ``opset`` (default OPSET) and ``external_data``: keep
    the initializers in ``<file name>.data`` beside the model (chosen on its own for models
    protobuf cannot hold in one file)."""
    unknown = sorted(set(options) - {"opset", "external_data"})
    if unknown:
        listed = ", ".join(unknown)
        raise FormatError(
            f"{path}: unknown option(s) {listed}; saving ONNX takes opset and external_data"
        )
    try:
        proto = to_onnx(model, opset=int(options.get("opset", OPSET)))
    except FormatError as exc:
        raise FormatError(f"{path}: {exc}") from None
    external = bool(options.get("external_data", False))
    external = external or sum(t.ByteSize() for t in proto.graph.initializer) > _PROTOBUF_LIMIT
    onnx.save_model(
        proto,
        os.fspath(path),
        save_as_external_data=external,
        location=f"{os.path.basename(path)}.data",
        size_threshold=0,
    )
