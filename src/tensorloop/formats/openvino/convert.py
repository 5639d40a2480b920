"""Lower an OpenVINO IR net to a tensorloop graph, one registered converter per layer type."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import FormatError, GraphError, TensorloopError, UnsupportedOpError
from ...ir.emit import Emitter
from ...ir.graph import Graph, Value
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .document import Layer, Net, Port
from .reader import ELEMENT_TYPES, PACKED_BITS, PRECISIONS, Weights, parse_shape


class UnsupportedLayerError(UnsupportedOpError, FormatError):
    """Layer types the reader cannot convert, all of a file's listed in one error (a
    FormatError too: the file is one tensorloop cannot read)."""


Converter = Callable[["LayerContext", list[Value | None]], list[Value]]
"""``fn(ctx, inputs) -> outputs``: inputs in port order (None for an unconnected optional port)."""

_CONVERTERS: dict[str, Converter] = {}
_MISSING: Any = object()


def converter(*layer_types: str) -> Callable[[Converter], Converter]:
    """Register ``fn`` as the converter of each OpenVINO layer type in ``layer_types``."""

    def register(fn: Converter) -> Converter:
        for t in layer_types:
            if t in _CONVERTERS:
                raise FormatError(f"OpenVINO layer type '{t}' has two converters")
            _CONVERTERS[t] = fn
        return fn

    return register


def known_layer_types() -> list[str]:
    return sorted({*_CONVERTERS, "Parameter", "Result", "Const"})


@dataclass
class Source:
    """Where errors point: the model file, and the chain of enclosing loop layers."""

    path: str
    weights: Weights
    scope: str = ""


class LayerContext:
    """What a converter sees: the layer, typed attribute access, and an emitter into the graph."""

    def __init__(self, layer: Layer, em: Emitter, source: Source) -> None:
        self.layer = layer
        self.em = em
        self.source = source
        self._inputs: list[Value | None] = []

    @property
    def where(self) -> str:
        scope = f" in {self.source.scope}" if self.source.scope else ""
        return f"{self.source.path}: {self.layer.describe()}{scope}"

    def error(self, message: str) -> FormatError:
        return FormatError(f"{self.where}: {message}")

    # -- attributes of <data> ------------------------------------------------------------------
    def attr(self, key: str, default: Any = _MISSING) -> str:
        if key in self.layer.data:
            return self.layer.data[key]
        if default is _MISSING:
            raise self.error(f"missing attribute '{key}'")
        return str(default)

    def has_attr(self, key: str) -> bool:
        return key in self.layer.data

    def int_attr(self, key: str, default: Any = _MISSING) -> int:
        text = self.attr(key, default)
        try:
            return int(text)
        except ValueError:
            raise self.error(f"attribute '{key}' is {text!r}, expected an integer") from None

    def float_attr(self, key: str, default: Any = _MISSING) -> float:
        text = self.attr(key, default)
        try:
            return float(text)
        except ValueError:
            raise self.error(f"attribute '{key}' is {text!r}, expected a number") from None

    def bool_attr(self, key: str, default: Any = _MISSING) -> bool:
        text = self.attr(key, default).strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise self.error(f"attribute '{key}' is {text!r}, expected true or false")

    def ints_attr(self, key: str, default: Any = _MISSING) -> list[int]:
        text = self.attr(key, default).strip()
        if not text:
            return []
        try:
            return [int(x) for x in text.split(",")]
        except ValueError:
            raise self.error(f"attribute '{key}' is {text!r}, expected integers") from None

    def choice_attr(self, key: str, choices: tuple[str, ...], default: Any = _MISSING) -> str:
        text = self.attr(key, default).strip().lower()
        if text not in choices:
            raise self.error(f"attribute '{key}' is {text!r}, expected one of {', '.join(choices)}")
        return text

    def element_type(self, key: str = "element_type", default: Any = _MISSING) -> DType:
        text = self.attr(key, default)
        try:
            return ELEMENT_TYPES[text.strip().lower()]
        except KeyError:
            raise self.error(f"attribute '{key}' is {text!r}: unsupported element type") from None

    # -- ports and inputs ------------------------------------------------------------------------
    def port_type(self, port: Port) -> TensorType:
        dt = PRECISIONS.get(port.precision.upper())
        if dt is None:
            raise self.error(f"port {port.id} has unsupported precision {port.precision!r}")
        return TensorType(dt, port.dims)

    def input(self, index: int) -> Value:
        """Input ``index``; a clear error when the port is missing or unconnected."""
        if index >= len(self._inputs) or self._inputs[index] is None:
            raise self.error(f"input port #{index} is required but not connected")
        value = self._inputs[index]
        assert value is not None
        return value

    def num_inputs(self) -> int:
        return len(self._inputs)

    def const(self, index: int) -> np.ndarray[Any, Any] | None:
        """The value of input ``index`` if a constant produces it."""
        return self.input(index).constant

    def const_input(self, index: int, what: str) -> np.ndarray[Any, Any]:
        data = self.const(index)
        if data is None:
            raise self.error(f"input #{index} ({what}) must be a constant")
        return data


def convert_model(net: Net, source: Source) -> Graph:
    """The top-level net as a graph: Parameters become inputs, Results outputs, in file order."""
    graph, params, results = convert_net(net, source, net.name)
    if not graph.outputs:
        raise FormatError(f"{source.path}: net '{net.name}' has no Result layer: no outputs")
    _name_results(graph, net, results)
    aliases: dict[str, str] = {}
    taken = {v.name for v in graph.inputs}
    for lid, value in params.items():
        port = net.layers[lid].outputs[0] if net.layers[lid].outputs else None
        for alias in port.names if port is not None else ():
            if alias != value.name and alias not in taken:
                aliases.setdefault(alias, value.name)
    graph.input_aliases = aliases
    return graph


def _name_results(graph: Graph, net: Net, results: dict[str, Value]) -> None:
    """Each output under the first tensor name of the port its Result reads, as OpenVINO's
    ``get_any_name`` reports it, even where the converted value is an input or another output
    (a layer output that passes an input through, or two ports that compute one value): an
    Identity then carries the name. A port read by two Results gives both the same name, as in
    OpenVINO."""
    names = {
        (e.to_layer, e.to_port): port.names
        for e in net.edges
        for port in net.layers[e.from_layer].outputs
        if port.id == e.from_port
    }
    graph.outputs = []
    for lid, value in ((lid, results[lid]) for lid in net.layers if lid in results):
        layer = net.layers[lid]
        wanted = names.get((lid, layer.inputs[0].id), ()) if layer.inputs else ()
        if wanted and value.name != wanted[0]:
            # Unless the name is an input's, or another output's: then it stays the value's own.
            with contextlib.suppress(GraphError):
                value = graph.result_named(value, wanted[0])
        graph.outputs.append(value)


def input_aliases(graph: Graph) -> dict[str, str]:
    """``{alias: input name}``: the other tensor names of a graph's inputs (``Graph.input_aliases``;
    empty but for graphs read from OpenVINO IR)."""
    return graph.input_aliases


def primary_name(layer: Layer, names: tuple[str, ...]) -> str:
    """The name a port's tensor goes by: the framework's own where the IR records it (a
    Parameter converted from ONNX or PyTorch keeps the framework's input name as its layer
    name, while ``names`` is sorted), else the first of ``names``, else the layer's name."""
    if layer.name in names or not names:
        return layer.name
    return names[0]


def convert_net(
    net: Net, source: Source, name: str
) -> tuple[Graph, dict[str, Value], dict[str, Value]]:
    """Convert a (sub)net; returns the graph and its Parameter and Result values by layer id."""
    unknown = sorted(
        {f"{lay.type} (layer {lay.id} '{lay.name}')" for lay in _all_layers(net)
         if lay.type not in _CONVERTERS and lay.type not in ("Parameter", "Result", "Const")}
    )  # fmt: skip
    if unknown:
        raise UnsupportedLayerError(f"{source.path}: unsupported layer types: {'; '.join(unknown)}")
    graph = Graph(name)
    em = Emitter(graph)
    produced: dict[tuple[str, int], Value] = {}
    params: dict[str, Value] = {}
    results: dict[str, Value] = {}
    incoming = _incoming_edges(net, source)
    for layer in _topological(net, source):
        ctx = LayerContext(layer, Emitter(graph, prefix=layer.name), source)
        ctx._inputs = [
            produced.get(incoming[(layer.id, p.id)]) if (layer.id, p.id) in incoming else None
            for p in layer.inputs
        ]
        for p, v in zip(layer.inputs, ctx._inputs, strict=True):
            if v is None and (layer.id, p.id) in incoming:
                src = incoming[(layer.id, p.id)]
                raise ctx.error(
                    f"input port {p.id} is fed by layer {src[0]} port {src[1]}, "
                    "which has no such output port"
                )
        outs = _convert_layer(ctx, layer, graph, em, params, results)
        if len(outs) != len(layer.outputs):
            raise ctx.error(
                f"converted to {len(outs)} outputs, the IR declares "
                f"{len(layer.outputs)} output ports"
            )
        for port, value in zip(layer.outputs, outs, strict=True):
            declared = ctx.port_type(port)
            # Loop layers are exempt: OpenVINO's own shape inference miscounts some spec-valid
            # port maps (|stride| > part_size), and tensorloop follows the spec.
            # A port with no <dim> is a scalar or of unknown rank: the IR cannot tell them apart.
            exempt = layer.type in ("TensorIterator", "Loop") or port.dims == ()
            if (
                isinstance(value.type, TensorType)
                and not exempt
                and not declared.compatible(value.type)
            ):
                raise ctx.error(
                    f"output port {port.id} is declared {declared}, but computes {value.type}"
                )
            _name_value(graph, value, port, layer)
            produced[(layer.id, port.id)] = value
    # Outputs in the file's Result order, as OpenVINO orders a model's outputs.
    graph.set_outputs([results[lid] for lid in net.layers if lid in results])
    return graph, params, results


def _convert_layer(
    ctx: LayerContext,
    layer: Layer,
    graph: Graph,
    em: Emitter,
    params: dict[str, Value],
    results: dict[str, Value],
) -> list[Value]:
    if layer.type == "Parameter":
        names = layer.outputs[0].names if layer.outputs else ()
        shape = parse_shape(ctx.attr("shape"), ctx.where)
        value = graph.add_input(primary_name(layer, names), TensorType(ctx.element_type(), shape))
        params[layer.id] = value
        return [value]
    if layer.type == "Result":
        results[layer.id] = ctx.input(0)
        return []
    if layer.type == "Const":
        dt = ctx.element_type()
        shape = parse_shape(ctx.attr("shape"), ctx.where)
        if shape is None or not all(isinstance(d, int) for d in shape):
            raise ctx.error(f"a Const needs a static shape, got {ctx.attr('shape')!r}")
        static = tuple(int(d) for d in shape)
        packed = ctx.attr("element_type").strip().lower() in PACKED_BITS
        data = ctx.source.weights.read(
            ctx.int_attr("offset"), ctx.int_attr("size"), dt, static, ctx.where, packed
        )
        return [em.const(data)]
    try:
        return _CONVERTERS[layer.type](ctx, ctx._inputs)
    except FormatError:
        raise
    except TensorloopError as exc:
        raise ctx.error(str(exc)) from None


def _name_value(graph: Graph, value: Value, port: Port, layer: Layer) -> None:
    """Give a converted value the IR's tensor name, so runs take and return those names."""
    if value.is_parameter or not port.names:
        return
    wanted = port.names[0]
    graph.rename(value, wanted)  # kept as it is if another value holds the name


def _all_layers(net: Net) -> list[Layer]:
    out: list[Layer] = []
    for layer in net.layers.values():
        out.append(layer)
        for body in (layer.body, *(b.body for b in (layer.then_branch, layer.else_branch) if b)):
            if body is not None:
                out += _all_layers(body)
    return out


def _incoming_edges(net: Net, source: Source) -> dict[tuple[str, int], tuple[str, int]]:
    incoming: dict[tuple[str, int], tuple[str, int]] = {}
    for e in net.edges:
        for lid, pid, ports, side in (
            (e.from_layer, e.from_port, "outputs", "from"),
            (e.to_layer, e.to_port, "inputs", "to"),
        ):
            layer = net.layers.get(lid)
            if layer is None:
                raise FormatError(
                    f"{source.path}: edge {e.from_layer}:{e.from_port} -> "
                    f"{e.to_layer}:{e.to_port} names missing {side}-layer {lid}"
                )
            if pid not in {p.id for p in getattr(layer, ports)}:
                raise FormatError(
                    f"{source.path}: edge {e.from_layer}:{e.from_port} -> "
                    f"{e.to_layer}:{e.to_port}: {layer.describe()} has no "
                    f"{ports[:-1]} port {pid}"
                )
        if (e.to_layer, e.to_port) in incoming:
            raise FormatError(
                f"{source.path}: layer {e.to_layer} input port {e.to_port} has two incoming edges"
            )
        incoming[(e.to_layer, e.to_port)] = (e.from_layer, e.from_port)
    return incoming


def _topological(net: Net, source: Source) -> list[Layer]:
    deps: dict[str, set[str]] = {lid: set() for lid in net.layers}
    for e in net.edges:
        deps[e.to_layer].add(e.from_layer)
    order: list[Layer] = []
    done: set[str] = set()
    ready = [lid for lid in net.layers if not deps[lid]]
    users: dict[str, list[str]] = {lid: [] for lid in net.layers}
    for lid, ds in deps.items():
        for d in ds:
            users[d].append(lid)
    while ready:
        lid = ready.pop(0)
        done.add(lid)
        order.append(net.layers[lid])
        for u in users[lid]:
            if u not in done and deps[u] <= done and u not in ready:
                ready.append(u)
    if len(order) != len(net.layers):
        stuck = sorted(set(net.layers) - done)
        raise FormatError(
            f"{source.path}: the edges form a cycle through layers {', '.join(stuck[:10])}"
        )
    return order
