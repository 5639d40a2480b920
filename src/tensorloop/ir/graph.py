"""Graph, Node and Value: the mutable core of the IR, with use-lists and a small rewrite API."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..errors import GraphError
from ..tensor.types import TensorType, Type, tensor_type_of


class Use(NamedTuple):
    """One consumer of a Value: ``node.inputs[port] is value``."""

    node: Node
    port: int


class Value:
    """An SSA value: a graph parameter (no producer) or output ``index`` of ``producer``."""

    __slots__ = ("_uses", "graph", "index", "name", "producer", "type")

    def __init__(
        self,
        name: str,
        type: Type,
        *,
        producer: Node | None = None,
        index: int = 0,
        graph: Graph | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.producer = producer
        self.index = index
        self.graph = graph
        self._uses: list[Use] = []

    @property
    def uses(self) -> tuple[Use, ...]:
        return tuple(self._uses)

    @property
    def is_parameter(self) -> bool:
        return self.producer is None

    @property
    def constant(self) -> np.ndarray[Any, Any] | None:
        """The data, if a Constant node produces this value."""
        if self.producer is None or self.producer.op != "Constant":
            return None
        data: np.ndarray[Any, Any] = self.producer.attrs["value"]
        return data

    @property
    def tensor_type(self) -> TensorType:
        if not isinstance(self.type, TensorType):
            raise GraphError(f"value %{self.name} has type {self.type}, expected a tensor")
        return self.type

    def replace_all_uses_with(self, new: Value) -> None:
        """Point every consumer of this value, and every graph result slot holding it, at
        ``new``. Names do not move: ``Graph.replace`` is the rewrite that keeps them."""
        for use in list(self._uses):
            use.node.set_input(use.port, new)
        g = self.graph
        if g is not None and self in g.outputs:
            g.outputs = [new if o is self else o for o in g.outputs]

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


def static_type(value: Value | None) -> TensorType | None:
    """``value``'s type if it is a tensor of fully static shape, else None."""
    t = None if value is None else value.type
    return t if isinstance(t, TensorType) and t.is_static else None


def constant_ints(value: Value | None) -> list[int] | None:
    """The elements of ``value`` as ints, flattened, if a Constant node produces it."""
    data = None if value is None else value.constant
    return None if data is None else [int(x) for x in np.asarray(data).reshape(-1)]


class Node:
    """An operation: op name, inputs (None for an omitted optional input), outputs, attributes."""

    __slots__ = ("attrs", "graph", "inputs", "name", "op", "outputs")

    def __init__(
        self,
        op: str,
        inputs: Sequence[Value | None],
        output_types: Sequence[Type],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str = "",
        output_names: Sequence[str] | None = None,
    ) -> None:
        self.op = op
        self.name = name
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.graph: Graph | None = None
        self.inputs: list[Value | None] = []
        for v in inputs:
            self._append_input(v)
        names = list(output_names) if output_names is not None else [""] * len(output_types)
        if len(names) != len(output_types):
            raise GraphError(
                f"node {op}: {len(names)} output names for {len(output_types)} outputs"
            )
        self.outputs = [
            Value(n, t, producer=self, index=i)
            for i, (n, t) in enumerate(zip(names, output_types, strict=True))
        ]

    def _append_input(self, v: Value | None) -> None:
        if v is not None:
            v._uses.append(Use(self, len(self.inputs)))
        self.inputs.append(v)

    def set_input(self, index: int, value: Value | None) -> None:
        old = self.inputs[index]
        if old is not None:
            old._uses.remove(Use(self, index))
        if value is not None:
            value._uses.append(Use(self, index))
        self.inputs[index] = value

    def drop_inputs(self) -> None:
        for i in range(len(self.inputs)):
            self.set_input(i, None)

    @property
    def subgraphs(self) -> dict[str, Graph]:
        return {k: v for k, v in self.attrs.items() if isinstance(v, Graph)}

    @property
    def output(self) -> Value:
        if len(self.outputs) != 1:
            raise GraphError(f"{self.describe()} has {len(self.outputs)} outputs, not one")
        return self.outputs[0]

    def describe(self) -> str:
        return f"{self.op} '{self.name}'" if self.name else self.op

    def __repr__(self) -> str:
        return f"<Node {self.describe()}>"


@dataclass
class Variable:
    """A persistent tensor: read by ReadVariable, written by Assign, kept across runs."""

    name: str
    initial: np.ndarray[Any, Any]
    trainable: bool = False

    @property
    def type(self) -> TensorType:
        return tensor_type_of(self.initial)


class Graph:
    """A graph: parameters, nodes in topological order, results, and persistent variables."""

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        self.variables: dict[str, Variable] = {}
        self.input_aliases: dict[str, str] = {}
        """Other names an input answers to (``{alias: input name}``), as a port of an OpenVINO
        IR carries several tensor names and OpenVINO accepts any of them."""
        self._names: set[str] = set()
        self._counter = itertools.count()

    # -- construction -------------------------------------------------------------------------
    def unique_name(self, hint: str = "") -> str:
        if hint and hint not in self._names:
            self._names.add(hint)
            return hint
        base = hint or ""
        while True:
            candidate = f"{base}{'_' if base else ''}{next(self._counter)}"
            if candidate not in self._names:
                self._names.add(candidate)
                return candidate

    def share_names(self, other: Graph) -> None:
        """Draw value names from ``other``'s name space, so a name means one value in both."""
        self._names, self._counter = other._names, other._counter

    def rename(self, value: Value, name: str) -> bool:
        """Give ``value`` the name ``name`` if no other value of this graph holds it."""
        if value.name == name:
            return True
        if name in self._names:
            return False
        self._names.discard(value.name)
        self._names.add(name)
        value.name = name
        return True

    def _rename_away(self, value: Value) -> None:
        """Give ``value`` a fresh name, freeing the one it had."""
        fresh = self.unique_name(value.name)
        self._names.discard(value.name)
        value.name = fresh

    def holder(self, name: str) -> Value | None:
        """The parameter or node output of this graph named ``name``, if any."""
        if name not in self._names:
            return None
        return next((v for v in self.values() if v.name == name), None)

    def result_named(self, value: Value, name: str) -> Value:
        """The value to list as the graph result ``name``: ``value`` renamed, or an Identity of
        it where ``value`` cannot take the name (a parameter, or already a result). Results own
        their names: an interior value holding ``name`` gives it up."""
        if value.name == name:
            return value
        holder = self.holder(name)
        if holder is not None:
            if holder.is_parameter:
                raise GraphError(f"output name '{name}' is already the name of an input")
            if holder in self.outputs:
                raise GraphError(f"output name '{name}' is used twice")
            self._rename_away(holder)
        if value.is_parameter or value in self.outputs or value.graph is not self:
            return self.add_node("Identity", [value], output_names=[name]).output
        self.rename(value, name)
        return value

    def replace(self, old: Value, new: Value) -> None:
        """Make every consumer of ``old`` read ``new``. Names stay where users see them: a
        result keeps its name (``result_named``), and an interior ``new`` freshly made by the
        rewrite takes ``old``'s name, so traces and errors still find it."""
        slots = [k for k, o in enumerate(self.outputs) if o is old]
        name = old.name
        for use in list(old._uses):
            use.node.set_input(use.port, new)
        if old.graph is self and not old.is_parameter:
            self._rename_away(old)
        if slots:
            kept = self.result_named(new, name)
            self.outputs = [kept if k in slots else o for k, o in enumerate(self.outputs)]
        elif new.graph is self and not new.is_parameter and new not in self.outputs:
            self.rename(new, name)

    def add_input(self, name: str, type: Type) -> Value:
        value = Value(self.unique_name(name), type, graph=self)
        self.inputs.append(value)
        return value

    def add_variable(
        self, name: str, initial: np.ndarray[Any, Any], trainable: bool = False
    ) -> Variable:
        if name in self.variables:
            raise GraphError(f"graph '{self.name}' already has a variable '{name}'")
        var = Variable(name, np.array(initial), trainable)
        self.variables[name] = var
        return var

    def append(self, node: Node) -> Node:
        return self.insert(len(self.nodes), node)

    def insert(self, position: int, node: Node) -> Node:
        if node.graph is not None:
            raise GraphError(f"{node.describe()} already belongs to graph '{node.graph.name}'")
        node.graph = self
        for out in node.outputs:
            out.name = self.unique_name(out.name)
            out.graph = self
        self.nodes.insert(position, node)
        return node

    def insert_before(self, anchor: Node, node: Node) -> Node:
        return self.insert(self.nodes.index(anchor), node)

    def insert_after(self, anchor: Node, node: Node) -> Node:
        return self.insert(self.nodes.index(anchor) + 1, node)

    def add_node(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        *,
        name: str = "",
        output_names: Sequence[str] | None = None,
        output_types: Sequence[Type] | None = None,
        before: Node | None = None,
    ) -> Node:
        """Add a node at the end (or ``before`` another), typing its outputs with the op's
        inference rule unless types are given."""
        if output_types is None:
            from .opdef import infer_types

            output_types = infer_types(op, inputs, attrs or {}, name=name)
        node = Node(op, inputs, output_types, attrs, name=name, output_names=output_names)
        return self.append(node) if before is None else self.insert_before(before, node)

    def set_outputs(self, values: Iterable[Value]) -> None:
        self.outputs = list(values)

    # -- rewriting ---------------------------------------------------------------------------
    def erase(self, node: Node) -> None:
        """Remove a node whose outputs are unused; their names become free again."""
        for out in node.outputs:
            if out._uses or out in self.outputs:
                users = ", ".join(u.node.describe() for u in out._uses) or "a graph result"
                raise GraphError(f"cannot erase {node.describe()}: %{out.name} is used by {users}")
        node.drop_inputs()
        self.nodes.remove(node)
        node.graph = None
        self._names.difference_update(out.name for out in node.outputs)

    def clone(self) -> Graph:
        """A deep copy: new nodes and values, subgraphs cloned, constant data shared (immutable)."""
        return clone_graph(self)

    # -- queries -----------------------------------------------------------------------------
    def walk(self) -> Iterator[tuple[Graph, Node]]:
        """Every (graph, node) pair, nested subgraphs included, outer nodes first."""
        for node in self.nodes:
            yield self, node
            for sub in node.subgraphs.values():
                yield from sub.walk()

    def values(self) -> Iterator[Value]:
        yield from self.inputs
        for node in self.nodes:
            yield from node.outputs

    def find(self, name: str) -> Value:
        for v in self.values():
            if v.name == name:
                return v
        raise GraphError(f"graph '{self.name}' has no value %{name}")

    def __repr__(self) -> str:
        return f"<Graph '{self.name}': {len(self.inputs)} inputs, {len(self.nodes)} nodes>"

    def __str__(self) -> str:
        from .printer import print_graph

        return print_graph(self)


def upstream(
    roots: Iterable[Value], more: Callable[[Node], Iterable[Node]] | None = None
) -> set[Node]:
    """The nodes ``roots`` depend on (their producers, theirs, and so on), and with each node
    those ``more(node)`` names (with what they depend on)."""
    needed: set[Node] = set()
    stack = [v.producer for v in roots if v.producer is not None]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack += [v.producer for v in node.inputs if v is not None and v.producer is not None]
        if more is not None:
            stack += more(node)
    return needed


def clone_graph(graph: Graph, name: str | None = None) -> Graph:
    new = Graph(graph.name if name is None else name)
    mapping: dict[Value, Value] = {}
    for v in graph.inputs:
        mapping[v] = new.add_input(v.name, v.type)
    for var in graph.variables.values():
        new.variables[var.name] = Variable(var.name, var.initial, var.trainable)
    new.input_aliases = dict(graph.input_aliases)
    for node in graph.nodes:
        new.append(copy_node(node, mapping))
    new.outputs = [mapping[o] for o in graph.outputs]
    return new


def copy_node(
    node: Node, mapping: dict[Value, Value], output_names: Sequence[str] | None = None
) -> Node:
    """A detached copy of ``node`` reading ``mapping[input]``, subgraphs cloned; ``mapping``
    learns the copy's outputs."""
    attrs = {k: clone_graph(a) if isinstance(a, Graph) else a for k, a in node.attrs.items()}
    copy = Node(
        node.op,
        [None if v is None else mapping[v] for v in node.inputs],
        [o.type for o in node.outputs],
        attrs,
        name=node.name,
        output_names=[o.name for o in node.outputs] if output_names is None else output_names,
    )
    mapping.update(zip(node.outputs, copy.outputs, strict=True))
    return copy
