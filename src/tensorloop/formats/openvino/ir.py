"""The OpenVINO IR document as read from XML: nets, layers, ports, edges and loop port maps."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...tensor.types import Dim


@dataclass(frozen=True)
class Port:
    id: int
    precision: str
    dims: tuple[Dim, ...] | None
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class PortMapEntry:
    """One ``port_map`` rule of a TensorIterator or Loop (strings as written; None if absent)."""

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
    from_layer: str
    from_port: int
    to_layer: str
    to_port: int


@dataclass
class Layer:
    id: str
    name: str
    type: str
    version: str
    data: dict[str, str]
    inputs: list[Port]
    outputs: list[Port]
    body: Net | None = None
    input_map: list[PortMapEntry] = field(default_factory=list)
    output_map: list[PortMapEntry] = field(default_factory=list)
    back_edges: list[tuple[str, str]] = field(default_factory=list)
    """(from Result layer id, to Parameter layer id) pairs of the body."""
    rt_names: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"layer {self.id} '{self.name}' ({self.type})"


@dataclass
class Net:
    name: str
    version: int
    layers: dict[str, Layer]
    edges: list[Edge]
