"""Builder tensors and the tracing stack that records ops into graphs and captures outer values."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import GraphError
from ..ir.graph import Graph, Node, Value
from ..tensor.dtypes import DType, DTypeLike, dtype
from ..tensor.types import TensorType, Type


class Tensor:
    """A symbolic tensor of the builder: a handle on one IR value (an r-tensor)."""

    __slots__ = ("value",)
    __array_priority__ = 1000  # so `ndarray + Tensor` defers to Tensor.__radd__

    def __init__(self, value: Value) -> None:
        self.value = value

    @property
    def type(self) -> Type:
        return self.value.type

    @property
    def dtype(self) -> DType:
        return self.value.tensor_type.dtype

    @property
    def shape(self) -> tuple[int | str, ...] | None:
        return self.value.tensor_type.shape

    @property
    def ndim(self) -> int | None:
        return self.value.tensor_type.rank

    @property
    def name(self) -> str:
        return self.value.name

    def __repr__(self) -> str:
        return f"Tensor(%{self.value.name}: {self.value.type})"

    def __bool__(self) -> bool:
        raise GraphError(
            f"the truth value of symbolic tensor %{self.name} is not known while building; "
            "use tl.cond or tl.while_loop for data-dependent control flow"
        )

    # Arithmetic sugar; the op functions live in builder.ops.
    def __add__(self, other: Any) -> Tensor:
        return _binary("Add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _binary("Add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _binary("Sub", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _binary("Sub", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _binary("Mul", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _binary("Mul", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _binary("Div", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _binary("Div", other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _binary("Pow", self, other)

    def __matmul__(self, other: Any) -> Tensor:
        return _binary("MatMul", self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _binary("MatMul", other, self)

    def __neg__(self) -> Tensor:
        return emit("Neg", [self])

    def __lt__(self, other: Any) -> Tensor:
        return _binary("Less", self, other)

    def __le__(self, other: Any) -> Tensor:
        return _binary("LessOrEqual", self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _binary("Greater", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _binary("GreaterOrEqual", self, other)

    def __and__(self, other: Any) -> Tensor:
        return _binary("And", self, other)

    def __or__(self, other: Any) -> Tensor:
        return _binary("Or", self, other)

    def __invert__(self) -> Tensor:
        return emit("Not", [self])


TensorLike = Tensor | np.ndarray[Any, Any] | float | int | bool | Sequence[Any]


@dataclass
class Frame:
    """One graph being traced: the root graph or a loop/branch body under construction."""

    graph: Graph
    parent: Frame | None
    captures: dict[Value, Value] = field(default_factory=dict)
    """outer value -> the body parameter standing for it"""

    def capture(self, value: Value) -> Value:
        if value.graph is self.graph:
            return value
        if value in self.captures:
            return self.captures[value]
        if self.parent is None:
            raise GraphError(
                f"tensor %{value.name} belongs to a loop or branch body that has been closed; "
                "return it from the body to use it outside"
            )
        producer = value.producer
        if producer is not None and producer.op == "Constant":
            # Constants are copied into the body rather than passed in, so bodies stay foldable.
            node = self.graph.add_node("Constant", [], producer.attrs, output_names=[value.name])
            self.captures[value] = node.output
            return node.output
        outer = self.parent.capture(value)
        if outer in self.captures:
            return self.captures[outer]
        param = self.graph.add_input(value.name, value.type)
        self.captures[outer] = param
        return param


class _State(threading.local):
    def __init__(self) -> None:
        self.root = Frame(Graph("builder"), None)
        self.stack: list[Frame] = [self.root]
        # Builder-wide names of placeholders and persistent tensors -> the names users asked
        # for; models built later get the asked-for names back, so rebuilding a model works.
        self.requested: dict[str, str] = {}


_state = _State()


def current_frame() -> Frame:
    return _state.stack[-1]


def root_graph() -> Graph:
    return _state.root.graph


def reset() -> None:
    """Forget every tensor built so far in this thread (models already made keep their graphs)."""
    _state.root = Frame(Graph("builder"), None)
    _state.stack = [_state.root]
    _state.requested = {}


class TraceBody:
    """Context manager that makes a fresh body graph the target of emitted ops."""

    def __init__(self, name: str) -> None:
        parent = current_frame()
        graph = Graph(name)
        # One name space for the whole build, so a traced name means one value.
        graph.share_names(parent.graph)
        self.frame = Frame(graph, parent)

    def __enter__(self) -> Frame:
        _state.stack.append(self.frame)
        return self.frame

    def __exit__(self, *exc: object) -> None:
        popped = _state.stack.pop()
        assert popped is self.frame


def as_tensor(x: TensorLike, like: DType | None = None) -> Tensor:
    """A Tensor for ``x``; Python numbers take the element type ``like`` when given."""
    if isinstance(x, Tensor):
        return x
    if like is None or isinstance(x, np.ndarray):
        return constant(x)
    raw = np.asarray(x)
    converted = raw.astype(like.numpy)
    if raw.dtype.kind in "fc" and not like.is_float and not np.array_equal(raw, converted):
        raise GraphError(
            f"the Python value {x!r} does not fit element type {like} without loss; "
            f"cast the tensor first"
        )
    return constant(converted)


def constant(value: Any, dtype: DTypeLike | None = None, name: str = "") -> Tensor:
    """An immutable tensor. Python floats default to float32, ints to int64."""
    if dtype is not None:
        data = np.asarray(value, dtype=_dtype(dtype).numpy)
    elif isinstance(value, np.ndarray | np.generic):
        data = np.asarray(value)
    else:
        data = np.asarray(value)
        if data.dtype == np.float64:
            data = data.astype(np.float32)
        elif data.dtype.kind == "i":
            data = data.astype(np.int64)
    _dtype(data.dtype)  # reject unsupported element types early
    data = data.copy()
    data.setflags(write=False)
    frame = current_frame()
    node = frame.graph.add_node("Constant", [], {"value": data}, output_names=[name or "const"])
    return Tensor(node.output)


def _dtype(d: DTypeLike) -> DType:
    return dtype(d)


def placeholder(dtype: DTypeLike, shape: Sequence[int | str], name: str = "") -> Tensor:
    """A model input, fed at run time."""
    frame = current_frame()
    if frame.parent is not None:
        raise GraphError("tl.placeholder cannot be created inside a loop or branch body")
    value = frame.graph.add_input(name or "input", TensorType(_dtype(dtype), shape))
    _state.requested[value.name] = name or value.name
    return Tensor(value)


def requested_name(builder_name: str) -> str:
    """The name a placeholder or persistent tensor was created with."""
    return _state.requested.get(builder_name, builder_name)


def persistent_tensor(initial: Any, name: str = "", *, trainable: bool = False) -> Tensor:
    """A tensor whose value a session keeps across runs; ``tl.assign`` updates it."""
    data = np.asarray(initial)
    if data.dtype == np.float64 and not isinstance(initial, np.ndarray):
        data = data.astype(np.float32)
    root = root_graph()
    var_name = root.unique_name(name or "state")
    _state.requested[var_name] = name or var_name
    root.add_variable(var_name, data, trainable)
    node = root.add_node(
        "ReadVariable",
        [],
        {"variable": var_name, "type": TensorType(data.dtype, data.shape)},
        output_names=[var_name],
    )
    return Tensor(current_frame().capture(node.output))


def variable(initial: Any, name: str = "") -> Tensor:
    """A persistent, trainable tensor (model parameters)."""
    return persistent_tensor(initial, name, trainable=True)


def assign(target: Tensor, value: TensorLike) -> None:
    """Store ``value`` into the persistent tensor ``target`` when the model runs."""
    producer = target.value.producer
    if producer is None or producer.op != "ReadVariable" or producer.graph is not root_graph():
        raise GraphError(f"tl.assign: %{target.name} is not a persistent tensor")
    var: str = producer.attrs["variable"]
    v = as_tensor(value, like=target.dtype)
    expected = producer.attrs["type"]
    if not expected.compatible(v.type):
        raise GraphError(f"tl.assign to '{var}': expected {expected}, got {v.type}")
    emit_node("Assign", [v], {"variable": var})


def name(tensor: Tensor, new_name: str) -> Tensor:
    """Give ``tensor`` a name (to trace it, or to find it in the text IR); returns it."""
    value = tensor.value
    graph = value.graph
    if graph is None or value.name == new_name:
        return tensor
    if not graph.rename(value, new_name):
        raise GraphError(f"the name '{new_name}' is already taken in graph '{graph.name}'")
    return tensor


def emit_node(
    op: str, inputs: Sequence[Tensor | None], attrs: Mapping[str, Any] | None = None, name: str = ""
) -> list[Tensor]:
    """Add one node to the graph being traced, capturing outer inputs; returns its outputs."""
    frame = current_frame()
    values = [None if t is None else frame.capture(t.value) for t in inputs]
    node: Node = frame.graph.add_node(op, values, attrs or {}, name=name)
    return [Tensor(o) for o in node.outputs]


def emit(
    op: str, inputs: Sequence[Tensor | None], attrs: Mapping[str, Any] | None = None, name: str = ""
) -> Tensor:
    """Add a single-output node to the graph being traced; returns its output."""
    outs = emit_node(op, inputs, attrs, name)
    if len(outs) != 1:
        raise GraphError(f"{op}: expected one output, got {len(outs)}")
    return outs[0]


def _binary(op: str, a: Any, b: Any) -> Tensor:
    like = a.dtype if isinstance(a, Tensor) else b.dtype if isinstance(b, Tensor) else None
    return emit(op, [as_tensor(a, like), as_tensor(b, like)])
