"""Building an OpenVINO IR document: nets layer by layer, port handles, constant folding."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import FormatError, TensorloopError
from ...ir.graph import Graph, Node, Value
from ...ir.opdef import get_opdef
from ...ops.shape import INT64_MIN
from ...passes.dead_code import has_side_effects
from ...passes.fold_constants import MAX_FOLDED_ELEMENTS, NOT_FOLDABLE
from ...reference import evaluate
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, Dim, TensorType, normalize_axis, tensor_type_of
from .document import Array, Edge, Layer, Net, Port
from .reader import ELEMENT_TYPES, PRECISIONS

IR_VERSION = 11

# The reader's tables accept aliases; the first spelling of each type is the one OpenVINO writes.
_ELEMENT_NAMES = {dt: name for name, dt in reversed(ELEMENT_TYPES.items())}
_PRECISION_NAMES = {dt: name for name, dt in reversed(PRECISIONS.items())}
I64 = TensorType(DType.int64, ())


@dataclass(frozen=True, eq=False)
class Tensor:
    """An output port of a layer being written (where an edge starts), with its type."""

    layer: Layer
    index: int
    type: TensorType

    @property
    def port(self) -> Port:
        return self.layer.outputs[self.index]

    @property
    def value(self) -> Array | None:
        """A Const's data, which the helpers below fold."""
        return self.layer.value

    @property
    def rank(self) -> int | None:
        return self.type.rank


def outputs_of(layer: Layer, types: Sequence[TensorType]) -> list[Tensor]:
    return [Tensor(layer, j, t) for j, t in enumerate(types)]


class File:
    """State shared by every net of one save: the op table, layer names, variables."""

    def __init__(self, root: Graph, emitters: Mapping[str, Emitter]) -> None:
        self.root = root
        self.emitters = emitters
        """How each op is written: the writer's table of emitters."""
        self._names: set[str] = set()
        self.read_values: dict[str, Tensor] = {}
        self.assigned: set[str] = set()
        written = {n.attrs["variable"] for _, n in root.walk() if n.op == "Assign"}
        self.read_only = set(root.variables) - written
        """Variables the model reads and never assigns: written as constants."""
        self.constants: dict[tuple[int, str], Tensor] = {}
        """The Const of each read-only variable, by net (``id``) and name."""

    def unique(self, hint: str) -> str:
        name, n = hint, 0
        while name in self._names:
            n += 1
            name = f"{hint}_{n}"
        self._names.add(name)
        return name


def shape_text(t: TensorType, sep: str = ",") -> str:
    if t.shape is None:
        return "..."
    return sep.join(str(d) if isinstance(d, int) else "?" for d in t.shape)


def _data_text(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, DType):
        return _ov_name(_ELEMENT_NAMES, value)
    return str(value)


def _ov_name(table: dict[DType, str], dt: DType) -> str:
    try:
        return table[dt]
    except KeyError:
        raise FormatError(f"OpenVINO IR has no element type for {dt.value}") from None


def _port(port_id: int, t: TensorType) -> Port:
    return Port(port_id, _ov_name(_PRECISION_NAMES, t.dtype), t.shape)


class NetBuilder:
    """Adds layers to one net of the document (the model, or a Loop/If body), naming them after
    the node being lowered."""

    def __init__(self, file: File, name: str, top: bool = False) -> None:
        self.file = file
        self.top = top
        self.net = Net(name, IR_VERSION, {}, [])
        self.scope = "layer"
        """The node being lowered: its layers are named after it."""

    def add(
        self,
        type_: str,
        inputs: Sequence[Tensor],
        outputs: Sequence[TensorType],
        version: str = "opset1",
        name: str = "",
        **data: Any,
    ) -> Layer:
        layer = Layer(
            str(len(self.net.layers)),
            self.file.unique(name or f"{self.scope}/{type_}"),
            type_,
            version,
            {k: _data_text(v) for k, v in data.items()},
            [_port(i, t.type) for i, t in enumerate(inputs)],
            [_port(len(inputs) + j, t) for j, t in enumerate(outputs)],
        )
        for port, t in enumerate(inputs):
            self.net.edges.append(Edge(t.layer.id, t.port.id, layer.id, port))
        self.net.layers[layer.id] = layer
        return layer

    def layer(
        self,
        type_: str,
        inputs: Sequence[Tensor],
        outputs: Sequence[TensorType],
        version: str = "opset1",
        **data: Any,
    ) -> list[Tensor]:
        return outputs_of(self.add(type_, inputs, outputs, version, **data), outputs)

    def op(
        self,
        type_: str,
        inputs: Sequence[Tensor],
        output: TensorType,
        version: str = "opset1",
        **data: Any,
    ) -> Tensor:
        return self.layer(type_, inputs, [output], version, **data)[0]

    def const(self, value: Any, dtype: DType | None = None) -> Tensor:
        data = np.asarray(value, dtype=None if dtype is None else dtype.numpy)
        t = tensor_type_of(data)
        layer = self.add("Const", [], [t], element_type=t.dtype, shape=shape_text(t, ", "))
        layer.value = data  # serializing stores it in the .bin and adds offset and size
        return Tensor(layer, 0, t)

    def ints(self, values: Sequence[int] | int) -> Tensor:
        return self.const(np.asarray(values, dtype=np.int64))

    def parameter(self, t: TensorType, name: str) -> Tensor:
        layer = self.add("Parameter", [], [t], name=name, shape=shape_text(t), element_type=t.dtype)
        return Tensor(layer, 0, t)

    def result(self, t: Tensor) -> Layer:
        return self.add("Result", [t], [], name=f"{t.layer.name}/result")

    @staticmethod
    def name_tensor(t: Tensor, name: str) -> None:
        """Give the tensor of ``t``'s port another name (model inputs and outputs)."""
        port = t.port
        t.layer.outputs[t.index] = replace(port, names=(*port.names, name))


# -- small helpers that fold constants so the IR stays readable ------------------------------------
def convert(net: NetBuilder, t: Tensor, dtype: DType) -> Tensor:
    if t.type.dtype == dtype:
        return t
    if t.value is not None:
        return net.const(t.value.astype(dtype.numpy))
    return net.op("Convert", [t], t.type.with_dtype(dtype), destination_type=dtype)


def binary(net: NetBuilder, type_: str, a: Tensor, b: Tensor, fold: Callable[..., Any]) -> Tensor:
    if a.value is not None and b.value is not None:
        return net.const(np.asarray(fold(a.value, b.value), a.value.dtype))
    out = a.type.with_shape(broadcast(a.type.shape, b.type.shape))
    return net.op(type_, [a, b], out, auto_broadcast="numpy")


def broadcast(a: tuple[Dim, ...] | None, b: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(
        x if x == y or y == 1 else y if x == 1 else UNKNOWN for x, y in zip(pa, pb, strict=True)
    )


def scalar(net: NetBuilder, t: Tensor) -> Tensor:
    """A one-element tensor as a scalar (OpenVINO wants scalars where ONNX allows [1])."""
    if t.rank == 0:
        return t
    if t.value is not None:
        return net.const(t.value.reshape(()))
    return net.op("Reshape", [t, net.ints([])], t.type.with_shape(()), special_zero=False)


def shape_of(net: NetBuilder, t: Tensor) -> Tensor:
    return net.op(
        "ShapeOf",
        [t],
        TensorType(DType.int64, [UNKNOWN if t.rank is None else t.rank]),
        "opset3",
        output_type=DType.int64,
    )


def dim_of(net: NetBuilder, t: Tensor, axis: int) -> Tensor:
    """Dim ``axis`` of ``t`` as an i64 scalar."""
    d = None if t.type.shape is None else t.type.shape[axis]
    if isinstance(d, int):
        return net.ints(d)
    return gather(net, shape_of(net, t), net.ints(axis), 0, I64)


def gather(net: NetBuilder, data: Tensor, indices: Tensor, axis: int, out: TensorType) -> Tensor:
    return net.op("Gather", [data, indices, net.ints(axis)], out, "opset8", batch_dims=0)


def reverse(net: NetBuilder, t: Tensor, axis: int) -> Tensor:
    """``t`` reversed along ``axis``: a Slice with step -1, which every plugin runs."""
    minus_one = net.ints([-1])
    ins = [t, minus_one, net.ints([INT64_MIN]), minus_one, net.ints([axis])]
    return net.op("Slice", ins, t.type, "opset8")


def insert_unit(t: TensorType, axis: int) -> TensorType:
    if t.shape is None:
        return t
    return t.with_shape((*t.shape[:axis], 1, *t.shape[axis:]))


def all_axes(net: NetBuilder, t: Tensor) -> Tensor:
    """0..rank-1 of ``t``, computed in the IR when the rank is not known here."""
    if t.rank is not None:
        return net.ints(list(range(t.rank)))
    rank = scalar(net, shape_of(net, shape_of(net, t)))
    vector = TensorType(DType.int64, [UNKNOWN])
    return net.op(
        "Range", [net.ints(0), rank, net.ints(1)], vector, "opset4", output_type=DType.int64
    )


# -- lowering a graph ------------------------------------------------------------------------------
@dataclass
class Call:
    """What an emitter sees: the node, its lowered inputs, resolved attributes and output types."""

    node: Node
    ins: list[Tensor | None]
    attrs: dict[str, Any]
    outs: list[TensorType]

    @property
    def out(self) -> TensorType:
        return self.outs[0]

    def arg(self, index: int) -> Tensor:
        t = self.ins[index]
        assert t is not None, "the verifier guarantees required inputs"
        return t

    def opt(self, index: int) -> Tensor | None:
        return self.ins[index] if index < len(self.ins) else None

    def error(self, message: str) -> FormatError:
        return FormatError(f"{describe(self.node)}: {message}")

    def normalize_axis(self, axis: int, rank: int | None, what: str = "axis") -> int:
        """``axis`` normalized for ``rank``, which may be unknown for an axis counted from the
        start; the error names the node."""
        if rank is None:
            if axis >= 0:
                return axis
            raise self.error(f"{what} {axis} counts from the end of a tensor of unknown rank")
        return normalize_axis(axis, rank, what, error=self.error)


Emitter = Callable[["NetBuilder", "Call"], list["Tensor"]]
"""Writes one node into a net; the tensors of its outputs."""


# -- what the op families' emitters share ----------------------------------------------------------
def same_layer(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    """An op OpenVINO has, perhaps under another name, with the same inputs (the absent ones left
    out) and meaning; a callable in ``data`` works its attribute out from the call."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        ins = [t for t in call.ins if t is not None]
        attrs = {k: v(call) if callable(v) else v for k, v in data.items()}
        return net.layer(type_, ins, call.outs, version, **attrs)

    return emit


def broadcasting(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    """``same_layer`` for a layer that broadcasts its inputs NumPy-style."""
    return same_layer(type_, version, auto_broadcast="numpy", **data)


def attr(key: str) -> Callable[[Call], Any]:
    """A ``same_layer`` attribute that is the call's attribute ``key``."""
    return lambda call: call.attrs[key]


def broadcast_op(
    net: NetBuilder, type_: str, ins: list[Tensor], like: TensorType, **data: Any
) -> Tensor:
    """A NumPy-broadcasting binary layer (or a unary one) with ``like``'s element type."""
    shape = ins[0].type.shape
    for t in ins[1:]:
        shape = broadcast(shape, t.type.shape)
    out = like.with_shape(shape) if shape is not None else TensorType(like.dtype, None)
    extra = {"auto_broadcast": "numpy"} if len(ins) == 2 else {}
    return net.op(type_, ins, out, **extra, **data)


def const_int(call: Call, t: Tensor, what: str) -> int:
    """The one value of a constant input, which OpenVINO wants as an attribute or a constant."""
    if t.value is None or t.value.size != 1:
        raise call.error(f"{what} must be a constant scalar for OpenVINO IR")
    return int(t.value.reshape(-1)[0])


def float_only(call: Call, what: str = "") -> None:
    """Refuse a call whose first input is not floating-point: OpenVINO has no such layer."""
    dt = call.arg(0).type.dtype
    if not dt.is_float:
        raise call.error(f"OpenVINO has no {what or call.node.op} for {dt.value} here")


def ints_text(values: Sequence[int]) -> str:
    """A list attribute as the IR writes it."""
    return ",".join(str(v) for v in values)


def describe(node: Node) -> str:
    first = f" (output %{node.outputs[0].name})" if node.outputs else ""
    return f"{node.describe()}{first}"


def _tensor_type(node: Node, v: Value, role: str) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise FormatError(
            f"{describe(node)}: {role} %{v.name} is {v.type}; OpenVINO IR holds tensors only"
        )
    return v.type


def lower(net: NetBuilder, graph: Graph, args: Sequence[Tensor]) -> list[Tensor]:
    """Write ``graph``'s nodes into ``net`` with its parameters bound to ``args``; its results."""
    env: dict[Value, Tensor] = dict(zip(graph.inputs, args, strict=True))
    for node in graph.nodes:
        emitter = net.file.emitters.get(node.op)
        if emitter is None:
            raise FormatError(f"{describe(node)}: no OpenVINO lowering for op '{node.op}'")
        # Every value in env was checked to be a tensor where it was made.
        ins = [None if v is None else env[v] for v in node.inputs]
        outs = [_tensor_type(node, v, f"output #{j}") for j, v in enumerate(node.outputs)]
        folded = _folded(node, ins)
        if folded is not None:
            net.scope = node.name or (node.outputs[0].name if node.outputs else node.op)
            env.update(zip(node.outputs, [net.const(data) for data in folded], strict=True))
            continue
        attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
        net.scope = node.name or (node.outputs[0].name if node.outputs else node.op)
        lowered = emitter(net, Call(node, ins, attrs, outs))
        env.update(zip(node.outputs, lowered, strict=True))
    return [env[v] for v in graph.outputs]


def _folded(node: Node, ins: Sequence[Tensor | None]) -> list[Array] | None:
    """The outputs of a node whose inputs are all constants here, as tensorloop's reference
    kernels compute them (bit for bit what a run of the model gives), else None.

    The IR then holds the constant, not the ops on it: a gradient model reads its weights
    through Gather, Slice and Transpose (the forward's ``x @ w``, the backward's ``d @ w.T``),
    and OpenVINO's CPU plugin (2026.4), left to fold such chains itself, packs the weights of
    one constant once for every MatMul over it, transposed or not, so one of those MatMuls
    multiplies by the wrong matrix (docs/openvino.md). Only results no larger than the larger
    of MAX_FOLDED_ELEMENTS and the constants read are folded: the IR never grows by much."""
    if node.op in NOT_FOLDABLE or node.subgraphs or has_side_effects(node):
        return None
    present = [t for t in ins if t is not None]
    if not present or any(t.value is None for t in present):
        return None
    read = sum(int(np.asarray(t.value).size) for t in present)
    for v in node.outputs:
        t = v.type
        if not isinstance(t, TensorType) or t.shape is None:
            return None
        if not all(isinstance(d, int) for d in t.shape):
            return None
        if math.prod(int(d) for d in t.shape) > max(MAX_FOLDED_ELEMENTS, read):
            return None
    try:
        with np.errstate(all="ignore"):
            outs = evaluate(node, [None if t is None else t.value for t in ins])
    except TensorloopError:
        return None  # a failure is the run's to report, with the run's inputs
    values = [np.asarray(o) for o in outs]
    for v, data in zip(node.outputs, values, strict=True):
        t = v.type
        assert isinstance(t, TensorType)
        if data.dtype != t.dtype.numpy or data.shape != tuple(t.shape or ()):
            return None
    return values
