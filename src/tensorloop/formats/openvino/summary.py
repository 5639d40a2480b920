"""The summary of an OpenVINO IR file as written (``summarize(path)`` for ``.xml``): IR version,
opsets, producer, ports, layer counts, weights, and every TensorIterator, Loop and If with its
ports by role, read by this format's reader (``read_xml``, ``Weights``) before any conversion."""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as SafeET

from ...errors import FormatError, TensorloopError
from ...tensor.dtypes import dtype
from ...tensor.types import TensorType
from ..summary import LoopSummary, ModelSummary, Port
from .document import Net
from .reader import PRECISIONS, Weights, read_xml

_FLOATS = {"f16", "f32", "f64", "bf16"}


def summarize_file(path: Path) -> ModelSummary:
    """An OpenVINO IR file as written, parsed by the reader's ``read_xml``."""
    net = read_xml(path)
    summary = ModelSummary(
        path=str(path),
        format="OpenVINO IR",
        ir_version=str(net.version),
        producer=_producer(path),
        graph_name=net.name,
    )
    counts: Counter[str] = Counter()
    opsets: Counter[str] = Counter()
    weights = Weights(path.with_suffix(".bin"))

    def walk(n: Net, depth: int) -> None:
        for layer in n.layers.values():
            counts[layer.type] += 1
            if layer.version:
                opsets[layer.version] += 1
            if layer.type == "Const":
                _count_const(layer, summary)
            loop = _loop(layer, n, depth, weights)
            if loop is not None:
                summary.loops.append(loop)
            for body in _bodies(layer):
                walk(body, depth + 1)

    walk(net, 0)
    summary.op_counts = dict(sorted(counts.items()))
    summary.opsets = {
        k: int(k[5:]) if k[5:].isdigit() else 0 for k in sorted(opsets) if k.startswith("opset")
    }
    producers = _producers(net)
    for layer in net.layers.values():
        if layer.type == "Parameter":
            names = layer.outputs[0].names if layer.outputs else ()
            summary.inputs.append(Port(names[0] if names else layer.name, _param_type(layer)))
        elif layer.type == "Result" and layer.inputs:
            src = producers.get((layer.id, layer.inputs[0].id))
            names = src.names if src is not None else ()
            port = layer.inputs[0]
            summary.outputs.append(Port(names[0] if names else layer.name, _port_type(port)))
    return summary


def _bodies(layer: Any) -> list[Any]:
    bodies = [layer.body] if layer.body is not None else []
    bodies += [b.body for b in (layer.then_branch, layer.else_branch) if b is not None]
    return bodies


def _producers(net: Any) -> dict[tuple[str, int], Any]:
    """The output port feeding each (layer, input port)."""
    out: dict[tuple[str, int], Any] = {}
    for e in net.edges:
        src = net.layers.get(e.from_layer)
        if src is None:
            continue
        port = next((p for p in src.outputs if p.id == e.from_port), None)
        if port is not None:
            out[(e.to_layer, e.to_port)] = port
    return out


def _size(net: Any) -> int:
    total = 0
    for layer in net.layers.values():
        if layer.type not in ("Parameter", "Result"):
            total += 1
        total += sum(_size(b) for b in _bodies(layer))
    return total


def _loop(layer: Any, net: Any, depth: int, weights: Weights) -> LoopSummary | None:
    if layer.type in ("TensorIterator", "Loop") and layer.body is not None:
        carried_targets = {to for _, to in layer.back_edges}
        sliced = [m for m in layer.input_map if m.axis is not None]
        carried = [
            m for m in layer.input_map if m.axis is None and m.internal_layer_id in carried_targets
        ]
        invariant = [
            m
            for m in layer.input_map
            if m.axis is None and m.internal_layer_id not in carried_targets
        ]
        stacked = [m for m in layer.output_map if m.axis is not None]
        if layer.type == "TensorIterator":
            origin = "OpenVINO TensorIterator"
            trip = "the sliced length"
            if sliced:
                m = sliced[0]
                port = next((p for p in layer.inputs if p.id == m.external_port_id), None)
                dims = port.dims if port is not None else None
                if dims is not None and m.axis is not None and -len(dims) <= m.axis < len(dims):
                    dim, part = dims[m.axis], abs(m.part_size or 1)
                    trip = f"{dim} (axis {m.axis})" if part == 1 else f"{dim}/{part}"
        else:
            origin = "OpenVINO Loop"
            producers = _producers(net)
            src = _const_of(net, producers, layer.id, 0)
            value = _const_value(src, weights) if src is not None else None
            if value is not None:
                trip = "none (until the condition)" if value < 0 else str(value)
            else:
                trip = "given at run time" if (layer.id, 0) in producers else "none"
            if "until" not in trip:
                trip += " or the condition"
        return LoopSummary(
            layer.type,
            layer.name,
            origin,
            depth,
            trip,
            carried=len(carried),
            sliced=len(sliced),
            invariant=len(invariant),
            stacked=len(stacked),
            body=_size(layer.body),
            detail=f"{layer.version}" if layer.version else "",
        )
    if layer.type == "If" and layer.then_branch is not None and layer.else_branch is not None:
        then, orelse = _size(layer.then_branch.body), _size(layer.else_branch.body)
        return LoopSummary(
            "If",
            layer.name,
            "OpenVINO If",
            depth,
            "",
            invariant=max(len(layer.inputs) - 1, 0),
            body=then + orelse,
            detail=f"then {then} nodes, else {orelse} nodes",
        )
    return None


def _const_of(net: Any, producers: dict[tuple[str, int], Any], layer_id: str, port: int) -> Any:
    for e in net.edges:
        if e.to_layer == layer_id and e.to_port == port:
            src = net.layers.get(e.from_layer)
            return src if src is not None and src.type == "Const" else None
    return None


def _const_value(layer: Any, weights: Weights) -> int | None:
    """A Const holding one i32 or i64, read from the .bin by the reader's ``Weights``; None for
    any other Const or one that cannot be read."""
    data = layer.data
    try:
        offset, size = int(data.get("offset", -1)), int(data.get("size", -1))
        kind = dtype(data.get("element_type", ""))
    except (TensorloopError, ValueError):
        return None
    if kind.value not in ("int64", "int32"):
        return None
    try:
        value = weights.read(offset, size, kind, (), f"Const '{layer.name}'")
    except FormatError:
        return None
    return int(value.reshape(-1)[0])


def _count_const(layer: Any, summary: ModelSummary) -> None:
    data = layer.data
    size = data.get("size", "0")
    summary.weight_bytes += int(size) if size.isdigit() else 0
    shape = data.get("shape", "")
    try:
        numel = math.prod(int(d) for d in shape.split(",") if d.strip()) if shape else 1
    except ValueError:
        numel = 0
    if data.get("element_type", "") in _FLOATS:
        summary.parameters += numel


def _param_type(layer: Any) -> str:
    data = layer.data
    elem = data.get("element_type", "?")
    with contextlib.suppress(TensorloopError):
        elem = dtype(elem).short
    shape = data.get("shape")
    if shape is None:
        return _port_type(layer.outputs[0]) if layer.outputs else elem
    dims = [d.strip() for d in shape.split(",") if d.strip()]
    dims = ["?" if d in ("-1", "?") or ".." in d else d for d in dims]
    return f"{elem}[{','.join(dims)}]"


def _port_type(port: Any) -> str:
    found = PRECISIONS.get(port.precision.upper()) if port.precision else None
    elem = found.short if found is not None else (port.precision or "?").lower()
    if port.dims is None:
        return f"{elem}[*]"
    return str(TensorType(found, port.dims)) if found is not None else f"{elem}{list(port.dims)}"


def _producer(path: Path) -> str:
    """``rt_info``'s runtime version and framework, read from the XML's last element (which
    ``read_xml`` does not keep). Only called once ``read_xml`` has accepted the file: its size,
    depth and entity checks have passed, and the same defusedxml protections apply here."""
    try:
        root = SafeET.parse(
            str(path), forbid_dtd=True, forbid_entities=True, forbid_external=True
        ).getroot()
    except Exception:
        return ""
    if root is None:
        return ""
    rt = root.find("rt_info")
    if rt is None:
        return ""
    version = rt.find("Runtime_version")
    framework = rt.find("conversion_parameters/framework")
    parts = []
    if framework is not None and framework.get("value"):
        parts.append(f"{framework.get('value')} via")
    parts.append("OpenVINO")
    if version is not None and version.get("value"):
        parts.append(str(version.get("value")))
    return " ".join(parts) if len(parts) > 1 else ""
