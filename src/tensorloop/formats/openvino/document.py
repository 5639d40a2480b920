"""The OpenVINO IR document, read from or written to XML + .bin: nets, layers, ports, port maps."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...tensor.types import Dim

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Port:
    """A port of a layer; ids run on from the inputs through the outputs."""

    id: int
    precision: str
    dims: tuple[Dim, ...] | None
    """Static dims are ints, anything else is dynamic; None is an unknown rank."""
    names: tuple[str, ...] = ()
    """Tensor names of an output port: model inputs and outputs are found by these."""


@dataclass(frozen=True)
class PortMapEntry:
    """One ``port_map`` rule of a TensorIterator, Loop or If (None where absent)."""

    external_port_id: int
    internal_layer_id: str
    axis: int | None = None
    start: int | None = None
    end: int | None = None
    stride: int | None = None
    part_size: int | None = None
    purpose: str | None = None


@dataclass(frozen=True)
class Edge:
    """A connection from an output port of one layer to an input port of another."""

    from_layer: str
    from_port: int
    to_layer: str
    to_port: int


@dataclass
class Branch:
    """One branch of an If layer: ``<then_body>`` and its ``<then_port_map>`` (or else)."""

    body: Net
    input_map: list[PortMapEntry] = field(default_factory=list)
    output_map: list[PortMapEntry] = field(default_factory=list)


@dataclass
class Layer:
    """One ``<layer>``: its attributes (``data``) as text, its ports, and any bodies."""

    id: str
    name: str
    type: str
    version: str
    data: dict[str, str]
    inputs: list[Port]
    outputs: list[Port]
    body: Net | None = None
    """The body of a TensorIterator or Loop, with its port map and back edges."""
    input_map: list[PortMapEntry] = field(default_factory=list)
    output_map: list[PortMapEntry] = field(default_factory=list)
    back_edges: list[tuple[str, str]] = field(default_factory=list)
    """(from Result layer id, to Parameter layer id) pairs of the body."""
    then_branch: Branch | None = None
    else_branch: Branch | None = None
    value: Array | None = field(default=None, compare=False, repr=False)
    """A Const's data to write: serializing stores it in the .bin and adds ``offset`` and
    ``size`` to ``data``. None for a layer read from a file, whose ``data`` says where its
    bytes lie."""

    def describe(self) -> str:
        return f"layer {self.id} '{self.name}' ({self.type})"


@dataclass
class Net:
    """A model (or a body): layers by id, in the order they are written, and their edges."""

    name: str
    version: int
    layers: dict[str, Layer]
    edges: list[Edge]

    def serialize(self) -> tuple[bytes, bytes]:
        """This net as IR XML and its weights: each Const with a ``value`` stored once per
        distinct content, in the order the layers are written."""
        weights = _Weights()
        root = _net_element(self, "net", {"name": self.name, "version": str(self.version)}, weights)
        ET.indent(root, "\t")
        return ET.tostring(root, encoding="utf-8", xml_declaration=True), bytes(weights.data)

    def save(
        self, path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None
    ) -> None:
        """Write the XML to ``path`` and the weights to ``bin_path`` (``.bin`` beside it)."""
        xml, weights = self.serialize()
        Path(path).write_bytes(xml)
        Path(bin_path if bin_path is not None else Path(path).with_suffix(".bin")).write_bytes(
            weights
        )


# -- serialization --------------------------------------------------------------------------------
class _Weights:
    def __init__(self) -> None:
        self.data = bytearray()
        self._offsets: dict[bytes, int] = {}

    def store(self, value: Array) -> tuple[int, int]:
        if value.dtype == object:
            raw = _string_bytes(value)
        else:
            raw = np.ascontiguousarray(value).tobytes()
        # An empty constant is one byte of padding, as OpenVINO writes it: OpenVINO's reader
        # takes size="0" for a missing buffer and fails on it.
        raw = raw or b"\0"
        if raw not in self._offsets:  # identical constants (axes, zeros, ...) share their bytes
            self.data += bytes(-len(self.data) % 8)  # each constant aligned to 8 bytes
            self._offsets[raw] = len(self.data)
            self.data += raw
        return self._offsets[raw], len(raw)


def _string_bytes(value: Array) -> bytes:
    """A string tensor as OpenVINO stores it: an i32 count, count + 1 i32 byte offsets (the
    first 0), then the strings' UTF-8 bytes one after another."""
    encoded = [s.encode("utf-8", "surrogateescape") for s in value.reshape(-1).tolist()]
    ends = np.cumsum([0, *map(len, encoded)])
    head = np.array([len(encoded), *ends], dtype="<i4").tobytes()
    return head + b"".join(encoded)


def _net_element(net: Net, tag: str, attrs: dict[str, str], weights: _Weights) -> ET.Element:
    root = ET.Element(tag, attrs)
    layers = ET.SubElement(root, "layers")
    layers.extend(_layer_element(layer, weights) for layer in net.layers.values())
    edges = ET.SubElement(root, "edges")
    for e in net.edges:
        ET.SubElement(
            edges,
            "edge",
            {
                "from-layer": e.from_layer,
                "from-port": str(e.from_port),
                "to-layer": e.to_layer,
                "to-port": str(e.to_port),
            },
        )
    return root


def _layer_element(layer: Layer, weights: _Weights) -> ET.Element:
    el = ET.Element(
        "layer", {"id": layer.id, "name": layer.name, "type": layer.type, "version": layer.version}
    )
    data = dict(layer.data)
    if layer.value is not None:
        offset, size = weights.store(layer.value)
        data.update(offset=str(offset), size=str(size))
    if data:
        ET.SubElement(el, "data", data)
    # Port maps and back edges come before the ports, bodies after them, as OpenVINO writes.
    branches = (("then", layer.then_branch), ("else", layer.else_branch))
    if layer.body is not None:
        _port_map(ET.SubElement(el, "port_map"), layer.input_map, layer.output_map)
        back_edges = ET.SubElement(el, "back_edges")
        for frm, to in layer.back_edges:
            ET.SubElement(back_edges, "edge", {"from-layer": frm, "to-layer": to})
    for tag, branch in branches:
        if branch is not None:
            _port_map(ET.SubElement(el, f"{tag}_port_map"), branch.input_map, branch.output_map)
    for section, ports in (("input", layer.inputs), ("output", layer.outputs)):
        if ports:
            parent = ET.SubElement(el, section)
            for port in ports:
                _port_element(parent, port)
    if layer.body is not None:
        el.append(_net_element(layer.body, "body", {}, weights))
    for tag, branch in branches:
        if branch is not None:
            el.append(_net_element(branch.body, f"{tag}_body", {}, weights))
    return el


def _port_map(parent: ET.Element, inputs: list[PortMapEntry], outputs: list[PortMapEntry]) -> None:
    for tag, entries in (("input", inputs), ("output", outputs)):
        for e in entries:
            attrs = {
                "external_port_id": str(e.external_port_id),
                "internal_layer_id": e.internal_layer_id,
            }
            for key in ("axis", "start", "end", "stride", "part_size", "purpose"):
                value = getattr(e, key)
                if value is not None:
                    attrs[key] = str(value)
            ET.SubElement(parent, tag, attrs)


def _port_element(parent: ET.Element, port: Port) -> None:
    attrs = {"id": str(port.id), "precision": port.precision}
    if port.names:
        attrs["names"] = ",".join(n.replace(",", "\\,") for n in port.names)
    el = ET.SubElement(parent, "port", attrs)
    for d in port.dims or ():  # an unknown rank is written with no dims, as OpenVINO does
        ET.SubElement(el, "dim").text = str(d) if isinstance(d, int) else "-1"
