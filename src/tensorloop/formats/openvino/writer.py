"""``tl.save(model, "m.xml")``: OpenVINO IR v11 (``m.xml`` + ``m.bin``), core ops and loops."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import FormatError, GraphError
from ...io import saver
from ...ir.branch import If
from ...ir.graph import Graph, Node, Value
from ...ir.loop import Loop
from ...ir.opdef import get_opdef
from ...model import Model
from ...ops.shape import INT64_MAX, INT64_MIN, split_sizes
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, Dim, TensorType, normalize_axis, tensor_type_of
from .reader import ELEMENT_TYPES, PRECISIONS

IR_VERSION = 11

# The reader's tables accept aliases; the first spelling of each type is the one OpenVINO writes.
_ELEMENT_NAMES = {dt: name for name, dt in reversed(ELEMENT_TYPES.items())}
_PRECISION_NAMES = {dt: name for name, dt in reversed(PRECISIONS.items())}
_I64 = TensorType(DType.int64, ())

Array = np.ndarray[Any, Any]


# -- the document: layers, tensors (output ports), nets -------------------------------------------
@dataclass(eq=False)
class _Layer:
    id: int
    name: str
    type: str
    version: str
    data: dict[str, str]
    inputs: list[TensorType]
    outputs: list[TensorType]
    names: list[list[str]]
    """Tensor names per output port: model inputs and outputs are found by these."""
    maps: list[ET.Element] = field(default_factory=list)
    """Port maps and back edges, written before the ports as OpenVINO does."""
    bodies: list[ET.Element] = field(default_factory=list)

    def out(self, index: int = 0, value: Array | None = None) -> _Tensor:
        return _Tensor(self, index, self.outputs[index], value)

    def element(self) -> ET.Element:
        el = ET.Element(
            "layer",
            {"id": str(self.id), "name": self.name, "type": self.type, "version": self.version},
        )
        if self.data:
            ET.SubElement(el, "data", self.data)
        el.extend(self.maps)
        if self.inputs:  # port ids run on from the inputs through the outputs
            section = ET.SubElement(el, "input")
            for i, t in enumerate(self.inputs):
                _port(section, i, t, ())
        if self.outputs:
            section = ET.SubElement(el, "output")
            for j, (t, names) in enumerate(zip(self.outputs, self.names, strict=True)):
                _port(section, len(self.inputs) + j, t, names)
        el.extend(self.bodies)
        return el


def _port(parent: ET.Element, port_id: int, t: TensorType, names: Sequence[str]) -> None:
    attrs = {"id": str(port_id), "precision": _ov_name(_PRECISION_NAMES, t.dtype)}
    if names:
        attrs["names"] = ",".join(n.replace(",", "\\,") for n in names)
    port = ET.SubElement(parent, "port", attrs)
    for d in t.shape or ():  # an unknown rank is written with no dims, as OpenVINO does
        ET.SubElement(port, "dim").text = str(d) if isinstance(d, int) else "-1"


@dataclass(frozen=True, eq=False)
class _Tensor:
    """One output port of a layer: where an edge starts. ``value`` is a Const's data."""

    layer: _Layer
    index: int
    type: TensorType
    value: Array | None = None

    @property
    def port_id(self) -> int:
        return len(self.layer.inputs) + self.index

    @property
    def rank(self) -> int | None:
        return self.type.rank


class _File:
    """State shared by every net of one save: the weights, layer names, variables."""

    def __init__(self, root: Graph) -> None:
        self.root = root
        self.weights = bytearray()
        self._blobs: dict[bytes, int] = {}
        self._names: set[str] = set()
        self.read_values: dict[str, _Tensor] = {}
        self.assigned: set[str] = set()

    def unique(self, hint: str) -> str:
        name, n = hint, 0
        while name in self._names:
            n += 1
            name = f"{hint}_{n}"
        self._names.add(name)
        return name

    def store(self, data: Array) -> tuple[int, int]:
        raw = np.ascontiguousarray(data).tobytes()
        if raw not in self._blobs:  # identical constants (axes, zeros, ...) share their bytes
            self._blobs[raw] = len(self.weights)
            self.weights += raw
        return self._blobs[raw], len(raw)


def _shape_text(t: TensorType, sep: str = ",") -> str:
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


class _Net:
    """One OpenVINO net (the model, or a Loop/If body) being written, layer by layer."""

    def __init__(self, file: _File, top: bool = False) -> None:
        self.file = file
        self.top = top
        self.layers: list[_Layer] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.scope = "layer"
        """The node being lowered: its layers are named after it."""

    def add(
        self,
        type_: str,
        inputs: Sequence[_Tensor],
        outputs: Sequence[TensorType],
        version: str = "opset1",
        name: str = "",
        **data: Any,
    ) -> _Layer:
        layer = _Layer(
            len(self.layers),
            self.file.unique(name or f"{self.scope}/{type_}"),
            type_,
            version,
            {k: _data_text(v) for k, v in data.items()},
            [t.type for t in inputs],
            list(outputs),
            [[] for _ in outputs],
        )
        for port, t in enumerate(inputs):
            self.edges.append((t.layer.id, t.port_id, layer.id, port))
        self.layers.append(layer)
        return layer

    def layer(
        self,
        type_: str,
        inputs: Sequence[_Tensor],
        outputs: Sequence[TensorType],
        version: str = "opset1",
        **data: Any,
    ) -> list[_Tensor]:
        layer = self.add(type_, inputs, outputs, version, **data)
        return [layer.out(i) for i in range(len(outputs))]

    def op(
        self,
        type_: str,
        inputs: Sequence[_Tensor],
        output: TensorType,
        version: str = "opset1",
        **data: Any,
    ) -> _Tensor:
        return self.layer(type_, inputs, [output], version, **data)[0]

    def const(self, value: Any, dtype: DType | None = None) -> _Tensor:
        data = np.asarray(value, dtype=None if dtype is None else dtype.numpy)
        t = tensor_type_of(data)
        offset, size = self.file.store(data)
        layer = self.add(
            "Const",
            [],
            [t],
            element_type=t.dtype,
            shape=_shape_text(t, ", "),
            offset=offset,
            size=size,
        )
        return layer.out(0, data)

    def ints(self, values: Sequence[int] | int) -> _Tensor:
        return self.const(np.asarray(values, dtype=np.int64))

    def parameter(self, t: TensorType, name: str) -> _Tensor:
        layer = self.add(
            "Parameter", [], [t], name=name, shape=_shape_text(t), element_type=t.dtype
        )
        return layer.out()

    def result(self, t: _Tensor) -> _Layer:
        return self.add("Result", [t], [], name=f"{t.layer.name}/result")

    def element(self, tag: str, attrs: Mapping[str, str] | None = None) -> ET.Element:
        root = ET.Element(tag, dict(attrs or {}))
        layers = ET.SubElement(root, "layers")
        layers.extend(layer.element() for layer in self.layers)
        edges = ET.SubElement(root, "edges")
        for a, b, c, d in self.edges:
            ET.SubElement(
                edges,
                "edge",
                {"from-layer": str(a), "from-port": str(b), "to-layer": str(c), "to-port": str(d)},
            )
        return root


# -- small helpers that fold constants so the IR stays readable -----------------------------------
def _convert(net: _Net, t: _Tensor, dtype: DType) -> _Tensor:
    if t.type.dtype == dtype:
        return t
    if t.value is not None:
        return net.const(t.value.astype(dtype.numpy))
    return net.op("Convert", [t], t.type.with_dtype(dtype), destination_type=dtype)


def _binary(net: _Net, type_: str, a: _Tensor, b: _Tensor, fold: Callable[..., Any]) -> _Tensor:
    if a.value is not None and b.value is not None:
        return net.const(np.asarray(fold(a.value, b.value), a.value.dtype))
    out = a.type.with_shape(_broadcast(a.type.shape, b.type.shape))
    return net.op(type_, [a, b], out, auto_broadcast="numpy")


def _broadcast(a: tuple[Dim, ...] | None, b: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(
        x if x == y or y == 1 else y if x == 1 else UNKNOWN for x, y in zip(pa, pb, strict=True)
    )


def _scalar(net: _Net, t: _Tensor) -> _Tensor:
    """A one-element tensor as a scalar (OpenVINO wants scalars where ONNX allows [1])."""
    if t.rank == 0:
        return t
    if t.value is not None:
        return net.const(t.value.reshape(()))
    return net.op("Reshape", [t, net.ints([])], t.type.with_shape(()), special_zero=False)


def _shape_of(net: _Net, t: _Tensor) -> _Tensor:
    return net.op(
        "ShapeOf",
        [t],
        TensorType(DType.int64, [UNKNOWN if t.rank is None else t.rank]),
        "opset3",
        output_type=DType.int64,
    )


def _dim(net: _Net, t: _Tensor, axis: int) -> _Tensor:
    """Dim ``axis`` of ``t`` as an i64 scalar."""
    d = None if t.type.shape is None else t.type.shape[axis]
    if isinstance(d, int):
        return net.ints(d)
    return _gather(net, _shape_of(net, t), net.ints(axis), 0, _I64)


def _gather(net: _Net, data: _Tensor, indices: _Tensor, axis: int, out: TensorType) -> _Tensor:
    return net.op("Gather", [data, indices, net.ints(axis)], out, "opset8", batch_dims=0)


def _reverse(net: _Net, t: _Tensor, axis: int) -> _Tensor:
    """``t`` reversed along ``axis``: a Slice with step -1, which every plugin runs."""
    minus_one = net.ints([-1])
    ins = [t, minus_one, net.ints([INT64_MIN]), minus_one, net.ints([axis])]
    return net.op("Slice", ins, t.type, "opset8")


def _insert_unit(t: TensorType, axis: int) -> TensorType:
    if t.shape is None:
        return t
    return t.with_shape((*t.shape[:axis], 1, *t.shape[axis:]))


def _all_axes(net: _Net, t: _Tensor) -> _Tensor:
    """0..rank-1 of ``t``, computed in the IR when the rank is not known here."""
    if t.rank is not None:
        return net.ints(list(range(t.rank)))
    rank = _scalar(net, _shape_of(net, _shape_of(net, t)))
    vector = TensorType(DType.int64, [UNKNOWN])
    return net.op(
        "Range", [net.ints(0), rank, net.ints(1)], vector, "opset4", output_type=DType.int64
    )


def _norm_axis(call: _Call, axis: int, rank: int | None, what: str = "axis") -> int:
    """``axis`` normalized for ``rank``, which may be unknown for an axis counted from the
    start; the error names the node."""
    if rank is None:
        if axis >= 0:
            return axis
        raise call.error(f"{what} {axis} counts from the end of a tensor of unknown rank")
    try:
        return normalize_axis(axis, rank, what)
    except GraphError as exc:
        raise call.error(str(exc)) from None


# -- op emitters ----------------------------------------------------------------------------------
@dataclass
class _Call:
    """What an emitter sees: the node, its lowered inputs, resolved attributes and output types."""

    node: Node
    ins: list[_Tensor | None]
    attrs: dict[str, Any]
    outs: list[TensorType]

    @property
    def out(self) -> TensorType:
        return self.outs[0]

    def arg(self, index: int) -> _Tensor:
        t = self.ins[index]
        assert t is not None, "the verifier guarantees required inputs"
        return t

    def opt(self, index: int) -> _Tensor | None:
        return self.ins[index] if index < len(self.ins) else None

    def error(self, message: str) -> FormatError:
        return FormatError(f"{_describe(self.node)}: {message}")


Emitter = Callable[[_Net, _Call], list[_Tensor]]


def _describe(node: Node) -> str:
    first = f" (output %{node.outputs[0].name})" if node.outputs else ""
    return f"{node.describe()}{first}"


def _direct(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    """An op OpenVINO has, perhaps under another name, with the same inputs and meaning; a
    callable in ``data`` works its attribute out from the call."""

    def emit(net: _Net, call: _Call) -> list[_Tensor]:
        ins = [t for t in call.ins if t is not None]
        attrs = {k: v(call) if callable(v) else v for k, v in data.items()}
        return net.layer(type_, ins, call.outs, version, **attrs)

    return emit


def _broadcasting(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    return _direct(type_, version, auto_broadcast="numpy", **data)


def _variadic(type_: str) -> Emitter:
    """ONNX Min/Max take any number of inputs; OpenVINO's Minimum/Maximum take two."""

    def emit(net: _Net, call: _Call) -> list[_Tensor]:
        acc = call.arg(0)
        for x in call.ins[1:]:
            assert x is not None
            acc = net.op(
                type_,
                [acc, x],
                acc.type.with_shape(_broadcast(acc.type.shape, x.type.shape)),
                auto_broadcast="numpy",
            )
        return [acc]

    return emit


def _pow(net: _Net, call: _Call) -> list[_Tensor]:
    # OpenVINO's Power wants one element type; tensorloop's exponent may have another.
    x, y = call.arg(0), call.arg(1)
    if x.type.dtype.is_float or not y.type.dtype.is_float:
        y = _convert(net, y, x.type.dtype)
        return [net.op("Power", [x, y], call.out, auto_broadcast="numpy")]
    # An integer base to a float power is real arithmetic, truncated back, as tensorloop does.
    wide = [_convert(net, v, DType.float64) for v in (x, y)]
    real = net.op("Power", wide, call.out.with_dtype(DType.float64), auto_broadcast="numpy")
    return [_convert(net, real, x.type.dtype)]


def _gemm(net: _Net, call: _Call) -> list[_Tensor]:
    alpha, beta = float(call.attrs["alpha"]), float(call.attrs["beta"])
    dt = call.out.dtype
    # Integer Gemm with fractional factors scales in f64 and truncates back, as tensorloop does.
    work = dt if dt.is_float or (alpha.is_integer() and beta.is_integer()) else DType.float64
    y = net.op(
        "MatMul",
        [call.arg(0), call.arg(1)],
        call.out,
        transpose_a=bool(call.attrs["transA"]),
        transpose_b=bool(call.attrs["transB"]),
    )
    y = _convert(net, y, work)
    if alpha != 1:
        y = net.op("Multiply", [y, net.const(alpha, work)], y.type, auto_broadcast="numpy")
    c = call.opt(2)
    if c is not None:
        c = _convert(net, c, work)
        if beta != 1:
            c = net.op("Multiply", [c, net.const(beta, work)], c.type, auto_broadcast="numpy")
        y = net.op("Add", [y, c], y.type, auto_broadcast="numpy")
    return [_convert(net, y, dt)]


def _reduce(type_: str) -> Emitter:
    def emit(net: _Net, call: _Call) -> list[_Tensor]:
        x, axes = call.arg(0), call.opt(1)
        # ONNX reduces over all axes when none are listed; OpenVINO then reduces over none.
        if axes is None or (axes.value is not None and axes.value.size == 0):
            if call.attrs["noop_with_empty_axes"]:
                return [x]
            axes = _all_axes(net, x)
        return [net.op(type_, [x, axes], call.out, keep_dims=bool(call.attrs["keepdims"]))]

    return emit


def _argmax(net: _Net, call: _Call) -> list[_Tensor]:
    x = call.arg(0)
    axis = _norm_axis(call, call.attrs["axis"], x.rank)
    if call.attrs["select_last_index"]:
        x = _reverse(net, x, axis)
    kept = _insert_unit(call.out, axis) if not call.attrs["keepdims"] else call.out
    # A stable TopK keeps the first of equal values, which is ArgMax's tie rule.
    _, index = net.layer(
        "TopK",
        [x, net.ints(1)],
        [kept.with_dtype(x.type.dtype), kept],
        "opset11",
        axis=axis,
        mode="max",
        sort="value",
        index_element_type=DType.int64,
        stable=True,
    )
    if call.attrs["select_last_index"]:
        last = _binary(net, "Subtract", _dim(net, x, axis), net.ints(1), np.subtract)
        index = net.op("Subtract", [last, index], kept, auto_broadcast="numpy")
    if not call.attrs["keepdims"]:
        index = net.op("Squeeze", [index, net.ints([axis])], call.out)
    return [index]


def _topk(net: _Net, call: _Call) -> list[_Tensor]:
    x = call.arg(0)
    values, index = net.layer(
        "TopK",
        [x, _scalar(net, call.arg(1))],
        call.outs,
        "opset11",
        axis=_norm_axis(call, call.attrs["axis"], x.rank),
        mode="max" if call.attrs["largest"] else "min",
        sort="value" if call.attrs["sorted"] else "none",
        index_element_type=DType.int64,
        stable=True,  # equal values keep the lower index first, as the core op says
    )
    return [values, index]


def _cumsum(net: _Net, call: _Call) -> list[_Tensor]:
    flags = {k: bool(call.attrs[k]) for k in ("exclusive", "reverse")}
    return [net.op("CumSum", [call.arg(0), _scalar(net, call.arg(1))], call.out, "opset3", **flags)]


def _squeeze(net: _Net, call: _Call) -> list[_Tensor]:
    axes = call.opt(1)
    if axes is not None and axes.value is not None and axes.value.size == 0:
        axes = None  # both mean "every axis of size 1"
    ins = [call.arg(0)] if axes is None else [call.arg(0), axes]
    return [net.op("Squeeze", ins, call.out)]


def _transpose(net: _Net, call: _Call) -> list[_Tensor]:
    perm = call.attrs["perm"]
    # An empty order makes OpenVINO reverse the axes, ONNX's default, whatever the rank.
    order = net.ints([] if perm is None else list(perm))
    return [net.op("Transpose", [call.arg(0), order], call.out)]


def _split(net: _Net, call: _Call) -> list[_Tensor]:
    x, sizes = call.arg(0), call.opt(1)
    axis = _norm_axis(call, call.attrs["axis"], x.rank)
    if sizes is None:
        parts: int = call.attrs["num_outputs"]
        dim = None if x.type.shape is None else x.type.shape[axis]
        if isinstance(dim, int) and dim % parts == 0:
            return net.layer("Split", [x, net.ints(axis)], call.outs, num_splits=parts)
        if isinstance(dim, int):
            sizes = net.ints(split_sizes(dim, parts))
        else:  # ONNX's rule at run time: ceil(dim / parts) each, the rest (-1) last
            n = _dim(net, x, axis)
            total = _binary(net, "Add", n, net.ints(parts - 1), np.add)
            chunk = net.op(
                "Divide", [total, net.ints(parts)], _I64, auto_broadcast="numpy", m_pythondiv=False
            )
            vec = TensorType(DType.int64, [parts - 1])
            head = net.op("Broadcast", [chunk, net.ints([parts - 1])], vec, "opset3", mode="numpy")
            sizes = net.op("Concat", [head, net.ints([-1])], vec.with_shape([parts]), axis=0)
    return net.layer("VariadicSplit", [x, net.ints(axis), sizes], call.outs)


def _slice(net: _Net, call: _Call) -> list[_Tensor]:
    data, starts, ends = call.arg(0), call.arg(1), call.arg(2)
    axes, steps = call.opt(3), call.opt(4)
    if steps is None:  # OpenVINO's Slice needs steps: ones, as many as starts
        length = None if starts.type.shape is None else starts.type.shape[0]
        if isinstance(length, int):
            steps = net.const(np.ones(length, starts.type.dtype.numpy))
        else:
            one = net.const(1, starts.type.dtype)
            steps = net.op(
                "Broadcast", [one, _shape_of(net, starts)], starts.type, "opset3", mode="numpy"
            )
    ins = [data, starts, ends, steps] + ([] if axes is None else [axes])
    return [net.op("Slice", ins, call.out, "opset8")]


def _shape(net: _Net, call: _Call) -> list[_Tensor]:
    x = call.arg(0)
    start, end = call.attrs["start"], call.attrs["end"]
    full = _shape_of(net, x)
    if start == 0 and end is None:
        return [full]
    # Python's slice clamping is ONNX Slice's for step 1.
    stop = net.ints([INT64_MAX if end is None else end])
    ins = [full, net.ints([start]), stop, net.ints([1]), net.ints([0])]
    return [net.op("Slice", ins, call.out, "opset8")]


def _size(net: _Net, call: _Call) -> list[_Tensor]:
    dims = _shape_of(net, call.arg(0))
    return [net.op("ReduceProd", [dims, net.ints([0])], call.out, keep_dims=False)]


def _constant_of_shape(net: _Net, call: _Call) -> list[_Tensor]:
    fill = net.const(np.asarray(call.attrs["value"]).reshape(()))
    return [net.op("Broadcast", [fill, call.arg(0)], call.out, "opset3", mode="numpy")]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad(net: _Net, call: _Call) -> list[_Tensor]:
    x, pads, value, axes = call.arg(0), call.arg(1), call.opt(2), call.opt(3)
    mode: str = call.attrs["mode"]
    begins, ends = _pad_amounts(net, call, x, pads, axes)
    if mode == "wrap":
        return [_wrap(net, call, x, begins, ends)]
    ins = [x, begins, ends]
    if mode == "constant" and value is not None:  # OpenVINO rejects a pad value in other modes
        ins.append(_scalar(net, value))
    return [net.op("Pad", ins, call.out, "opset12", pad_mode=_PAD_MODES[mode])]


def _pad_amounts(
    net: _Net, call: _Call, x: _Tensor, pads: _Tensor, axes: _Tensor | None
) -> tuple[_Tensor, _Tensor]:
    """ONNX's pads [begins..., ends...] over ``axes`` as OpenVINO's begins and ends per axis."""
    if axes is None:
        if pads.value is not None:
            half = pads.value.size // 2
            return net.const(pads.value[:half]), net.const(pads.value[half:])
        vec = pads.type.with_shape([UNKNOWN])
        a, b = net.layer("Split", [pads, net.ints(0)], [vec, vec], num_splits=2)
        return a, b
    if axes.value is None or pads.value is None or x.rank is None:
        raise call.error("pads over listed axes need constant pads and axes and a known rank")
    begins, ends = np.zeros(x.rank, pads.value.dtype), np.zeros(x.rank, pads.value.dtype)
    listed = [_norm_axis(call, int(a), x.rank, "pad axis") for a in axes.value.reshape(-1)]
    begins[listed], ends[listed] = np.split(pads.value.reshape(-1), 2)
    return net.const(begins), net.const(ends)


def _wrap(net: _Net, call: _Call, x: _Tensor, begins: _Tensor, ends: _Tensor) -> _Tensor:
    """Pad mode "wrap" (OpenVINO has none): gather indices (-begin .. dim+end) mod dim per axis."""
    if begins.value is None or ends.value is None:
        raise call.error('pad mode "wrap" needs constant pads')
    vector = TensorType(DType.int64, [UNKNOWN])
    for axis, (b, e) in enumerate(zip(begins.value.tolist(), ends.value.tolist(), strict=True)):
        if b == 0 and e == 0:
            continue
        n = _dim(net, x, axis)
        if n.value is not None:
            indices = net.ints((np.arange(-b, int(n.value) + e) % max(int(n.value), 1)).tolist())
        else:
            stop = net.op("Add", [n, net.ints(e)], _I64, auto_broadcast="numpy")
            span = net.op(
                "Range",
                [net.ints(-b), stop, net.ints(1)],
                vector,
                "opset4",
                output_type=DType.int64,
            )
            indices = net.op("FloorMod", [span, n], vector, auto_broadcast="numpy")
        shape = x.type.shape
        d = shape[axis] if shape is not None else UNKNOWN
        grown = d + b + e if isinstance(d, int) else UNKNOWN
        out = (
            x.type
            if shape is None
            else x.type.with_shape((*shape[:axis], grown, *shape[axis + 1 :]))
        )
        x = _gather(net, x, indices, axis, out)
    return x


def _read_variable(net: _Net, call: _Call) -> list[_Tensor]:
    name: str = call.attrs["variable"]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    if name in net.file.assigned:
        raise call.error(
            f"reads variable '{name}' after assigning it; OpenVINO's ReadValue would see the "
            "value from before the run"
        )
    return [_read_value(net, name)]


def _read_value(net: _Net, name: str) -> _Tensor:
    if name not in net.file.read_values:
        var = net.file.root.variables[name]
        t = var.type
        # OpenVINO starts a variable without an init input at zeros. Leaving the input out then
        # also dodges a CPU plugin bug: an i64 ReadValue with an init input fails to compile.
        init = [net.const(var.initial)] if np.any(var.initial) else []
        net.file.read_values[name] = net.op(
            "ReadValue",
            init,
            t,
            "opset6",
            variable_id=name,
            variable_type=t.dtype,
            variable_shape=_shape_text(t),
        )
    return net.file.read_values[name]


def _assign(net: _Net, call: _Call) -> list[_Tensor]:
    name: str = call.attrs["variable"]
    if not net.top:
        raise call.error("OpenVINO keeps state only at the top level, not in a loop or branch")
    _read_value(net, name)  # OpenVINO learns a variable from its ReadValue, so one must exist
    net.file.assigned.add(name)
    net.add("Assign", [call.arg(0)], [], "opset6", variable_id=name)
    return []


# -- control flow ---------------------------------------------------------------------------------
def _map_entry(parent: ET.Element, tag: str, external: int, layer: _Layer, **extra: Any) -> None:
    attrs = {"external_port_id": str(external), "internal_layer_id": str(layer.id)}
    attrs.update({k: str(v) for k, v in extra.items()})
    ET.SubElement(parent, tag, attrs)


def _concat_axis(axis: int) -> dict[str, int]:
    return {"axis": axis, "start": 0, "end": -1, "stride": 1, "part_size": 1}


def _loop(net: _Net, call: _Call) -> list[_Tensor]:
    """The canonical Loop as Loop-5: its sliced inputs keep a unit axis and its concatenated
    outputs join on an existing one, so the body squeezes the first and unsqueezes the second;
    reversed slicing and stacking reverse outside the loop."""
    loop, name = Loop(call.node), call.node.name or net.scope
    body = loop.body
    ins = loop.counts.split_inputs(call.ins)
    carried = [_present(t) for t in ins.carried]
    invariants = [_present(t) for t in ins.invariants]
    sources: list[_Tensor] = []
    unit_axes: dict[Value, int] = {}  # each slice's parameter: the unit axis it keeps
    for j, (s, src) in enumerate(zip(loop.sliced, map(_present, ins.sources), strict=True)):
        rank = src.rank if src.rank is not None else _rank_plus_one(s.param)
        unit_axes[s.param] = _norm_axis(call, s.spec.axis, rank, f"sliced #{j} axis")
        sources.append(_reverse(net, src, unit_axes[s.param]) if s.spec.reverse else src)
    axes = list(unit_axes.values())
    trip = _trip_count(
        net, ins.max_trip_count, [_dim(net, s, a) for s, a in zip(sources, axes, strict=True)]
    )
    first = ins.initial_condition
    cond = first if first is not None else net.const(np.bool_(True))

    sub = _Net(net.file)
    sub.scope = name  # for the layers written here; _lower names the body's own after its nodes
    types = [_param_type(call, v) for v in body.inputs]
    params = [
        sub.parameter(_insert_unit(t, unit_axes[v]) if v in unit_axes else t, v.name)
        for t, v in zip(types, body.inputs, strict=True)
    ]
    args = [
        sub.op("Squeeze", [prm, sub.ints([unit_axes[v]])], t) if v in unit_axes else prm
        for prm, t, v in zip(params, types, body.inputs, strict=True)
    ]
    results = loop.counts.split_results(_lower(sub, body, args))
    sub.scope = name
    cond_result = sub.result(results.continue_condition)
    carried_results = [sub.result(y) for y in results.carried]
    stacked_results: list[tuple[_Layer, int]] = []
    for j, (y, st) in enumerate(zip(results.per_iteration, loop.stacked, strict=True)):
        a = _norm_axis(call, st.spec.axis, _rank_plus_one(st.result), f"stacked #{j} axis")
        stacked_results.append(
            (sub.result(sub.op("Unsqueeze", [y, sub.ints([a])], _insert_unit(y.type, a))), a)
        )

    layer = net.add(
        "Loop",
        [trip, cond, *carried, *sources, *invariants],
        call.outs,
        "opset5",
        name=name,
    )
    iteration, carried_params, slice_params, invariant_params = loop.counts.split_params(params)
    port_map, back_edges = ET.Element("port_map"), ET.Element("back_edges")
    external = iter(range(2, len(layer.inputs)))
    for prm, res in zip(carried_params, carried_results, strict=True):
        _map_entry(port_map, "input", next(external), prm.layer)
        ET.SubElement(
            back_edges, "edge", {"from-layer": str(res.id), "to-layer": str(prm.layer.id)}
        )
    for prm, a in zip(slice_params, axes, strict=True):
        _map_entry(port_map, "input", next(external), prm.layer, **_concat_axis(a))
    for prm in invariant_params:
        _map_entry(port_map, "input", next(external), prm.layer)
    outputs = iter(range(len(layer.inputs), len(layer.inputs) + len(layer.outputs)))
    for res in carried_results:
        _map_entry(port_map, "output", next(outputs), res)
    for res, a in stacked_results:
        _map_entry(port_map, "output", next(outputs), res, **_concat_axis(a))
    _map_entry(port_map, "input", -1, iteration.layer, purpose="current_iteration")
    _map_entry(port_map, "output", -1, cond_result, purpose="execution_condition")
    layer.maps += [port_map, back_edges]
    layer.bodies.append(sub.element("body"))
    finals, stacks = loop.counts.split_outputs([layer.out(i) for i in range(len(layer.outputs))])
    for j, ((_, a), st) in enumerate(zip(stacked_results, loop.stacked, strict=True)):
        if st.spec.reverse:
            stacks[j] = _reverse(net, stacks[j], a)
    return [*finals, *stacks]


def _present(t: _Tensor | None) -> _Tensor:
    assert t is not None, "the verifier guarantees required inputs"
    return t


def _rank_plus_one(v: Value) -> int | None:
    """The rank of ``v`` with the loop's axis back in (a slice's source, a stack's result)."""
    t = v.type
    return None if not isinstance(t, TensorType) or t.rank is None else t.rank + 1


def _trip_count(net: _Net, trip: _Tensor | None, lengths: list[_Tensor]) -> _Tensor:
    """Loop-5's trip count: the least of max_trip_count and the sliced lengths. A negative
    max_trip_count means no trips in tensorloop but "unbounded" (-1) in OpenVINO: clamp it."""
    bounds = list(lengths)
    if trip is not None:
        t = _scalar(net, _convert(net, trip, DType.int64))
        bounds.insert(0, _binary(net, "Maximum", t, net.ints(0), np.maximum))
    if not bounds:
        return net.ints(-1)
    acc = bounds[0]
    for b in bounds[1:]:
        acc = _binary(net, "Minimum", acc, b, np.minimum)
    return acc


def _param_type(call: _Call, v: Value) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise call.error(f"body parameter %{v.name} is {v.type}; OpenVINO IR holds tensors only")
    return v.type


def _if(net: _Net, call: _Call) -> list[_Tensor]:
    view = If(call.node)
    layer = net.add(
        "If",
        [_present(t) for t in call.ins],
        call.outs,
        "opset8",
        name=view.name or net.scope,
    )
    # External ports: the condition is input 0, the captured values follow, outputs come after.
    for tag, branch in (("then", view.then_branch), ("else", view.else_branch)):
        sub = _Net(net.file)
        params = [sub.parameter(_param_type(call, v), v.name) for v in branch.inputs]
        results = [sub.result(t) for t in _lower(sub, branch, params)]
        port_map = ET.Element(f"{tag}_port_map")
        for i, p in enumerate(params):
            _map_entry(port_map, "input", 1 + i, p.layer)
        for j, res in enumerate(results):
            _map_entry(port_map, "output", len(layer.inputs) + j, res)
        layer.maps.append(port_map)
        layer.bodies.append(sub.element(f"{tag}_body"))
    return [layer.out(i) for i in range(len(layer.outputs))]


def _attr(key: str) -> Callable[[_Call], Any]:
    return lambda call: call.attrs[key]


_BINARY = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Equal": "Equal", "Less": "Less",
    "Greater": "Greater", "LessOrEqual": "LessEqual", "GreaterOrEqual": "GreaterEqual",
    "And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor", "Where": "Select",
}  # fmt: skip
_RENAMED = {
    "Neg": "Negative", "Abs": "Abs", "Relu": "ReLU", "Sqrt": "Sqrt", "Exp": "Exp", "Log": "Log",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Not": "LogicalNot", "Unsqueeze": "Unsqueeze",
}  # fmt: skip

_EMITTERS: dict[str, Emitter] = {
    **{op: _broadcasting(ov) for op, ov in _BINARY.items()},
    **{op: _direct(ov) for op, ov in _RENAMED.items()},
    # ONNX integer division truncates; OpenVINO's floors unless told otherwise.
    "Div": _broadcasting("Divide", m_pythondiv=False),
    "Min": _variadic("Minimum"),
    "Max": _variadic("Maximum"),
    "Pow": _pow,
    "MatMul": _direct("MatMul", transpose_a=False, transpose_b=False),
    "Gemm": _gemm,
    **{op: _reduce(op) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")},
    "ArgMax": _argmax,
    "TopK": _topk,
    "CumSum": _cumsum,
    "Softmax": _direct("SoftMax", "opset8", axis=_attr("axis")),
    "Reshape": _direct("Reshape", special_zero=lambda call: not call.attrs["allowzero"]),
    "Transpose": _transpose,
    "Squeeze": _squeeze,
    "Concat": _direct("Concat", axis=_attr("axis")),
    "Split": _split,
    "Slice": _slice,
    "Gather": lambda net, call: [
        _gather(net, call.arg(0), call.arg(1), call.attrs["axis"], call.out)
    ],
    "Expand": _direct("Broadcast", "opset3", mode="bidirectional"),
    "Shape": _shape,
    "Size": _size,
    "ConstantOfShape": _constant_of_shape,
    "Range": _direct("Range", "opset4", output_type=lambda call: call.out.dtype),
    "Cast": _direct("Convert", destination_type=_attr("to")),
    "Pad": _pad,
    "Constant": lambda net, call: [net.const(call.attrs["value"])],
    "Identity": lambda net, call: [call.arg(0)],  # no layer: the value passes straight through
    # OpenVINO has no assertion: the checked values pass through (docs/network.md)
    "Check": lambda net, call: [call.arg(i) for i in range(1, len(call.ins))],
    "ReadVariable": _read_variable,
    "Assign": _assign,
    "Loop": _loop,
    "If": _if,
}


# -- graphs ---------------------------------------------------------------------------------------
def _tensor_type(node: Node, v: Value, role: str) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise FormatError(
            f"{_describe(node)}: {role} %{v.name} is {v.type}; OpenVINO IR holds tensors only"
        )
    return v.type


def _lower(net: _Net, graph: Graph, args: Sequence[_Tensor]) -> list[_Tensor]:
    """Write ``graph``'s nodes into ``net`` with its parameters bound to ``args``; its results."""
    env: dict[Value, _Tensor] = dict(zip(graph.inputs, args, strict=True))
    for node in graph.nodes:
        emitter = _EMITTERS.get(node.op)
        if emitter is None:
            raise FormatError(f"{_describe(node)}: no OpenVINO lowering for op '{node.op}'")
        # Every value in env was checked to be a tensor where it was made.
        ins = [None if v is None else env[v] for v in node.inputs]
        outs = [_tensor_type(node, v, f"output #{j}") for j, v in enumerate(node.outputs)]
        attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
        net.scope = node.name or (node.outputs[0].name if node.outputs else node.op)
        lowered = emitter(net, _Call(node, ins, attrs, outs))
        env.update(zip(node.outputs, lowered, strict=True))
    return [env[v] for v in graph.outputs]


def write_openvino(
    model: Model, path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None
) -> None:
    """Write ``model`` as OpenVINO IR: ``path`` (XML) and its weights (``.bin`` beside it)."""
    graph = model.graph
    file = _File(graph)
    net = _Net(file, top=True)
    params: list[_Tensor] = []
    for v in graph.inputs:
        if not isinstance(v.type, TensorType):
            raise FormatError(f"input '{v.name}' is {v.type}; OpenVINO IR holds tensors only")
        params.append(net.parameter(v.type, v.name))
        params[-1].layer.names[0].append(v.name)
    outs = _lower(net, graph, params)
    for v, t in zip(graph.outputs, outs, strict=True):
        if t.layer.names[t.index]:
            # The tensor already carries an input's or another output's name; a same-type Convert
            # gives this output a tensor of its own to name.
            net.scope = v.name
            t = _convert_copy(net, t)
        t.layer.names[t.index].append(v.name)
        net.result(t)
    root = net.element("net", {"name": graph.name, "version": str(IR_VERSION)})
    ET.indent(root, "\t")
    xml = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    Path(path).write_bytes(xml)
    Path(bin_path if bin_path is not None else Path(path).with_suffix(".bin")).write_bytes(
        bytes(file.weights)
    )


def _convert_copy(net: _Net, t: _Tensor) -> _Tensor:
    return net.op("Convert", [t], t.type, destination_type=t.type.dtype)


@saver(".xml")
def _save(model: Model, path: str | os.PathLike[str], **options: Any) -> None:
    unknown = sorted(set(options) - {"bin_path"})
    if unknown:
        listed = ", ".join(unknown)
        raise FormatError(f"{path}: unknown option(s) {listed}; saving OpenVINO IR takes bin_path")
    try:
        write_openvino(model, path, options.get("bin_path"))
    except FormatError as exc:
        raise FormatError(f"{path}: {exc}") from None
