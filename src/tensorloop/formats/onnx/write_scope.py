"""The ONNX model being written: unique names, initializers, graph scopes and ONNX types."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...errors import FormatError
from ...ir.graph import Graph, Node, Value
from ...model import Model
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, OptionalType, SequenceType, TensorType, Type, normalize_axis

Array = np.ndarray[Any, Any]
NodeWriter = Callable[["Scope", Node], None]
"""Writes one tensorloop node into a scope as ONNX nodes."""


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


def value_info(name: str, t: Type, where: str) -> onnx.ValueInfoProto:
    return helper.make_value_info(name, type_proto(t, where))


def tensor_proto(data: Array, name: str = "") -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(data), name)


def describe(node: Node) -> str:
    first = f" (output %{node.outputs[0].name})" if node.outputs else ""
    return f"{node.describe()}{first}"


# -- the model being written ----------------------------------------------------------------------
def _fresh(hint: str, taken: set[str]) -> str:
    name, n = hint, 0
    while name in taken:
        n += 1
        name = f"{hint}_{n}"
    taken.add(name)
    return name


class File:
    """State shared by every graph of one written model: names, initializers, domains in use."""

    def __init__(self, model: Model, opset: int, write_node: NodeWriter) -> None:
        self.root = model.graph
        self.opset = opset
        self.write_node = write_node
        """Writes one node: the writer's op table (ops with bodies write them by subgraph)."""
        self.taken: set[str] = set()
        self.names: dict[Value, str] = {}
        """Every value's own ONNX name, unique across the model; the root keeps its names."""
        self.refs: dict[Value, str] = {}
        """Values read under another name: invariants, captures, read-only persistent tensors,
        constants kept as initializers but used in a body."""
        self.initializers: list[onnx.TensorProto] = []
        self.variables: dict[str, str] = {}
        self.domains: set[str] = set()
        self.domain_needs: dict[str, tuple[int, str]] = {}
        """Per other domain, the newest op version a node needs (and that op's name)."""
        self.domain_ceilings: dict[str, tuple[int, str]] = {}
        """Per other domain, the opset before one that retired an op written (and its name)."""
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
        self.initializers.append(tensor_proto(data, name))
        return name


@dataclass
class Scope:
    """One ONNX graph being written: its nodes and the values its nodes produce."""

    file: File
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
        return self.op("Constant", [], value=tensor_proto(np.asarray(value, dtype)))

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
def emit_nodes(scope: Scope, graph: Graph) -> None:
    for node in graph.nodes:
        scope.prefix = node.name or (node.outputs[0].name if node.outputs else node.op)
        scope.file.write_node(scope, node)
        scope.local.update(v for v in node.outputs if v not in scope.file.refs)


def graph_outputs(scope: Scope, top: bool) -> list[onnx.ValueInfoProto]:
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
        infos.append(value_info(name, v.type, f"graph '{graph.name}' result #{j}"))
    return infos


def subgraph(
    file: File,
    graph: Graph,
    inputs: Sequence[onnx.ValueInfoProto],
    prelude: Callable[[Scope], None] | None = None,
) -> onnx.GraphProto:
    """``graph`` as an ONNX subgraph with formal ``inputs``; ``prelude`` first writes the nodes
    that compute parameters the formal inputs do not carry."""
    scope = Scope(file, graph, prefix=graph.name)
    if prelude is not None:
        prelude(scope)
    emit_nodes(scope, graph)
    outputs = graph_outputs(scope, top=False)
    return helper.make_graph(scope.nodes, graph.name, list(inputs), outputs)


def formal_inputs(file: File, graph: Graph) -> list[onnx.ValueInfoProto]:
    return [
        value_info(file.names[v], v.type, f"graph '{graph.name}' parameter %{v.name}")
        for v in graph.inputs
    ]
