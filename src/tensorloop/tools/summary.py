"""``summarize(path)``: a model file as written (format, versions, producer, ports, op counts,
weights, and every loop and branch with its ports and body) before tensorloop lowers it."""

from __future__ import annotations

import contextlib
import math
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, TensorloopError
from ..ir.branch import If
from ..ir.graph import Graph
from ..ir.loop import Loop
from ..tensor.dtypes import DType, dtype
from ..tensor.types import TensorType


@dataclass(frozen=True)
class Port:
    """A model input or output: its name and type as the file declares it (``f32[batch,8]``)."""

    name: str
    type: str


@dataclass(frozen=True)
class LoopSummary:
    """One loop or branch of the file: ``op`` as the file names it, ``origin`` what it is (an
    ONNX Loop, an LSTM op that becomes a loop, an OpenVINO TensorIterator...), ``trip`` its trip
    bound in words, its ports by role, ``body`` the nodes of its body (bodies nested in it
    included; None for an op with no body in the file), ``depth`` how deeply it is nested."""

    op: str
    name: str
    origin: str
    depth: int
    trip: str
    carried: int = 0
    sliced: int = 0
    invariant: int = 0
    stacked: int = 0
    body: int | None = None
    detail: str = ""

    @property
    def is_branch(self) -> bool:
        return self.op == "If"

    def describe(self) -> str:
        """One line: ``Loop 'rnn' (ONNX Loop): trip ..., 1 carried, ...; body 12 nodes``."""
        head = f"{self.op} '{self.name}'" if self.name else self.op
        parts = [f"{head} ({self.origin})"] if self.origin != self.op else [head]
        if self.is_branch:
            tail = self.detail
        else:
            tail = (
                f"trip {self.trip}; {self.carried} carried, {self.sliced} sliced, "
                f"{self.invariant} invariant, {self.stacked} stacked"
            )
            if self.body is not None:
                tail += f"; body {self.body} nodes"
            if self.detail:
                tail += f"; {self.detail}"
        return f"{parts[0]}: {tail}"


@dataclass
class ModelSummary:
    """What a model file says about itself."""

    path: str
    format: str
    ir_version: str = ""
    opsets: dict[str, int] = field(default_factory=dict)
    producer: str = ""
    graph_name: str = ""
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    op_counts: dict[str, int] = field(default_factory=dict)
    parameters: int = 0
    weight_bytes: int = 0
    loops: list[LoopSummary] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["loops"] = [{**asdict(loop), "summary": loop.describe()} for loop in self.loops]
        return data


def summarize(path: str | os.PathLike[str]) -> ModelSummary:
    """The summary of the model file at ``path`` (``.onnx``, OpenVINO ``.xml``, text IR), read
    from the file itself; a FormatError if it cannot be read."""
    p = Path(path)
    if not p.is_file():
        raise FormatError(f"{path}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".onnx":
        return _onnx_summary(p)
    if suffix == ".xml":
        return _openvino_summary(p)
    from ..io import load

    model = load(p)
    summary = graph_summary(model.graph, str(p), "tensorloop text IR")
    return summary


# -- the canonical graph ----------------------------------------------------------------------
def graph_summary(graph: Graph, path: str = "", fmt: str = "tensorloop graph") -> ModelSummary:
    """A summary of a tensorloop graph (a text IR file, or any model's canonical graph)."""
    counts = Counter(n.op for _, n in graph.walk())
    params = weights = 0
    for _, node in graph.walk():
        if node.op == "Constant":
            value = np.asarray(node.attrs.get("value"))
            weights += value.nbytes
            if value.dtype.kind in "fc":
                params += value.size
    return ModelSummary(
        path=path,
        format=fmt,
        graph_name=graph.name,
        inputs=[Port(v.name, str(v.type)) for v in graph.inputs],
        outputs=[Port(v.name, str(v.type)) for v in graph.outputs],
        op_counts=dict(sorted(counts.items())),
        parameters=params,
        weight_bytes=weights,
        loops=list(graph_loops(graph)),
    )


def graph_loops(graph: Graph, depth: int = 0) -> Iterator[LoopSummary]:
    """Every Loop and If of ``graph`` by the Loop and If views, outer ones first."""
    for node in graph.nodes:
        if node.op == "Loop":
            loop = Loop(node)
            static = loop.static_trip_count
            if static is not None:
                trip = str(static)
            elif loop.trip_count is not None:
                trip = f"%{loop.trip_count.name}"
            elif loop.sliced:
                trip = "the sliced length"
            else:
                trip = "none (until the condition)"
            if static is None and loop.condition is not None and loop.trip_count is not None:
                trip += " or the condition"
            yield LoopSummary(
                "Loop",
                node.name,
                "Loop",
                depth,
                trip,
                carried=len(loop.carried),
                sliced=len(loop.sliced),
                invariant=len(loop.invariants),
                stacked=len(loop.stacked),
                body=_graph_size(loop.body),
            )
            yield from graph_loops(loop.body, depth + 1)
        elif node.op == "If":
            view = If(node)
            then, orelse = view.then_branch, view.else_branch
            yield LoopSummary(
                "If",
                node.name,
                "If",
                depth,
                "",
                invariant=len(view.captured),
                body=_graph_size(then) + _graph_size(orelse),
                detail=f"then {_graph_size(then)} nodes, else {_graph_size(orelse)} nodes",
            )
            yield from graph_loops(then, depth + 1)
            yield from graph_loops(orelse, depth + 1)
        else:
            for sub in node.subgraphs.values():
                yield from graph_loops(sub, depth + 1)


def _graph_size(graph: Graph) -> int:
    return sum(1 for _ in graph.walk())


# -- ONNX -------------------------------------------------------------------------------------
_RNN_CARRIED = {"LSTM": 2, "GRU": 1, "RNN": 1}


def _onnx_summary(path: Path) -> ModelSummary:
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise FormatError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from None
    g = proto.graph
    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in proto.opset_import}
    producer = " ".join(s for s in (proto.producer_name, proto.producer_version) if s)
    inits = {t.name for t in g.initializer}
    summary = ModelSummary(
        path=str(path),
        format="ONNX",
        ir_version=str(proto.ir_version),
        opsets=opsets,
        producer=producer,
        graph_name=g.name,
        inputs=[Port(v.name, _onnx_type(v.type)) for v in g.input if v.name not in inits],
        outputs=[Port(v.name, _onnx_type(v.type)) for v in g.output],
    )
    counts: Counter[str] = Counter()
    types = {v.name: v.type for v in (*g.input, *g.value_info, *g.output)}
    constants: dict[str, Any] = {}
    _onnx_walk(g, 0, summary, counts, types, constants)
    summary.op_counts = dict(sorted(counts.items()))
    return summary


def _onnx_walk(
    g: Any,
    depth: int,
    summary: ModelSummary,
    counts: Counter[str],
    types: dict[str, Any],
    constants: dict[str, Any],
) -> None:
    import onnx

    types = {**types, **{v.name: v.type for v in (*g.input, *g.value_info, *g.output)}}
    constants = dict(constants)
    for t in g.initializer:
        _count_tensor(t, summary)
        constants[t.name] = t
    for node in g.node:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        counts[op] += 1
        subgraphs = []
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and node.op_type == "Constant":
                _count_tensor(a.t, summary)
                constants[node.output[0]] = a.t
            elif a.type == onnx.AttributeProto.GRAPH:
                subgraphs.append((a.name, a.g))
            elif a.type == onnx.AttributeProto.GRAPHS:
                subgraphs += [(f"{a.name}[{k}]", sub) for k, sub in enumerate(a.graphs)]
        loop = _onnx_loop(node, depth, types, constants, dict(subgraphs))
        if loop is not None:
            summary.loops.append(loop)
        for _, sub in subgraphs:
            _onnx_walk(sub, depth + 1, summary, counts, types, constants)


def _onnx_loop(
    node: Any, depth: int, types: dict[str, Any], constants: dict[str, Any], subs: dict[str, Any]
) -> LoopSummary | None:
    ins = list(node.input)
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return None
    if op == "Loop" and "body" in subs:
        body = subs["body"]
        trip_name = ins[0] if ins else ""
        cond_name = ins[1] if len(ins) > 1 else ""
        if not trip_name:
            trip = "none (until the condition)"
        else:
            value = _onnx_scalar(constants.get(trip_name))
            trip = str(value) if value is not None else f"%{trip_name} (at run time)"
            if cond_name or not _onnx_always_true(body):
                trip += " or the condition"
        carried = max(len(ins) - 2, 0)
        return LoopSummary(
            op,
            node.name,
            "ONNX Loop",
            depth,
            trip,
            carried=carried,
            invariant=len(_onnx_captures(body)),
            stacked=max(len(body.output) - 1 - carried, 0),
            body=_onnx_size(body),
        )
    if op == "Scan" and "body" in subs:
        body = subs["body"]
        n_scan = _onnx_int_attr(node, "num_scan_inputs", 0)
        carried = max(len(ins) - n_scan, 0)
        axes = _onnx_ints_attr(node, "scan_input_axes")
        first = ins[carried] if n_scan and carried < len(ins) else ""
        axis = axes[0] if axes else 0
        trip = f"the length of %{first} on axis {axis}" if first else "none"
        dim = _onnx_dim(types.get(first), axis)
        if dim is not None:
            trip = f"{dim} (%{first} axis {axis})"
        return LoopSummary(
            op,
            node.name,
            "ONNX Scan",
            depth,
            trip,
            carried=carried,
            sliced=n_scan,
            invariant=len(_onnx_captures(body)),
            stacked=max(len(node.output) - carried, 0),
            body=_onnx_size(body),
        )
    if op == "If" and "then_branch" in subs and "else_branch" in subs:
        then, orelse = subs["then_branch"], subs["else_branch"]
        captured = _onnx_captures(then) | _onnx_captures(orelse)
        return LoopSummary(
            op,
            node.name,
            "ONNX If",
            depth,
            "",
            invariant=len(captured),
            body=_onnx_size(then) + _onnx_size(orelse),
            detail=f"then {_onnx_size(then)} nodes, else {_onnx_size(orelse)} nodes",
        )
    if op == "SequenceMap" and "body" in subs:
        body = subs["body"]
        return LoopSummary(
            op,
            node.name,
            "ONNX SequenceMap",
            depth,
            f"the length of %{ins[0]}" if ins else "none",
            sliced=len(ins),
            invariant=len(_onnx_captures(body)),
            stacked=len(node.output),
            body=_onnx_size(body),
        )
    if op in _RNN_CARRIED:
        direction = "forward"
        for a in node.attribute:
            if a.name == "direction":
                direction = a.s.decode()
        layout = _onnx_int_attr(node, "layout", 0)
        x = ins[0] if ins else ""
        dim = _onnx_dim(types.get(x), 1 if layout else 0)
        axis = 1 if layout else 0
        trip = f"{dim} (%{x} axis {axis})" if dim is not None else f"the length of %{x} axis {axis}"
        if len(ins) > 4 and ins[4]:
            trip += ", per sequence_lens"
        weights = sum(1 for name in ins[1:4] if name)
        outputs = list(node.output)
        loops = 2 if direction == "bidirectional" else 1
        return LoopSummary(
            op,
            node.name,
            f"ONNX {op}, lowered to {loops} loop{'s' if loops > 1 else ''}",
            depth,
            trip,
            carried=_RNN_CARRIED[op],
            sliced=1,
            invariant=weights,
            stacked=1 if outputs and outputs[0] else 0,
            detail=f"direction {direction}",
        )
    return None


def _onnx_int_attr(node: Any, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _onnx_ints_attr(node: Any, name: str) -> list[int]:
    for a in node.attribute:
        if a.name == name:
            return [int(i) for i in a.ints]
    return []


def _onnx_scalar(t: Any) -> int | None:
    if t is None or t.data_location == 1:
        return None
    from onnx import numpy_helper

    try:
        value = numpy_helper.to_array(t)
    except Exception:
        return None
    return int(value.reshape(-1)[0]) if value.size == 1 and value.dtype.kind in "iu" else None


def _onnx_always_true(body: Any) -> bool:
    """Whether the body's condition result is an input condition passed through or a constant
    true (a for loop written as a Loop)."""
    if not body.output:
        return True
    name = body.output[0].name
    if len(body.input) > 1 and name == body.input[1].name:
        return True
    from onnx import numpy_helper

    for node in body.node:
        if name in node.output and node.op_type == "Identity" and len(body.input) > 1:
            return bool(node.input[0] == body.input[1].name)
        if name in node.output and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    try:
                        return bool(numpy_helper.to_array(a.t).reshape(-1)[0])
                    except Exception:
                        return False
    return False


def _onnx_captures(g: Any) -> set[str]:
    """Names ``g`` (and the bodies in it) read from enclosing scopes."""
    import onnx

    defined = {v.name for v in g.input} | {t.name for t in g.initializer}
    used: set[str] = set()
    for node in g.node:
        used |= {n for n in node.input if n}
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                used |= _onnx_captures(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    used |= _onnx_captures(sub)
        defined |= {n for n in node.output if n}
    used |= {v.name for v in g.output}
    return used - defined


def _onnx_size(g: Any) -> int:
    import onnx

    total = 0
    for node in g.node:
        total += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                total += _onnx_size(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                total += sum(_onnx_size(sub) for sub in a.graphs)
    return total


def _onnx_dim(tp: Any, axis: int) -> str | None:
    if tp is None or tp.WhichOneof("value") != "tensor_type":
        return None
    if not tp.tensor_type.HasField("shape") or axis >= len(tp.tensor_type.shape.dim):
        return None
    d = tp.tensor_type.shape.dim[axis]
    if d.HasField("dim_value"):
        return str(d.dim_value)
    return d.dim_param or None


def _onnx_elem(elem_type: int) -> str:
    from ..formats.onnx.convert import ONNX_DTYPES

    found = ONNX_DTYPES.get(elem_type)
    if found is not None:
        return found.short
    import onnx

    try:
        return str(onnx.TensorProto.DataType.Name(elem_type)).lower()
    except ValueError:
        return f"type{elem_type}"


def _onnx_type(tp: Any) -> str:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        elem = _onnx_elem(tp.tensor_type.elem_type)
        if not tp.tensor_type.HasField("shape"):
            return f"{elem}[*]"
        dims = [
            str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
            for d in tp.tensor_type.shape.dim
        ]
        return f"{elem}[{','.join(dims)}]"
    if kind == "sequence_type":
        return f"seq<{_onnx_type(tp.sequence_type.elem_type)}>"
    if kind == "optional_type":
        return f"opt<{_onnx_type(tp.optional_type.elem_type)}>"
    return kind or "?"


def _count_tensor(t: Any, summary: ModelSummary) -> None:
    from ..formats.onnx.convert import ONNX_DTYPES

    numel = math.prod(int(d) for d in t.dims)
    found: DType | None = ONNX_DTYPES.get(t.data_type)
    size = 0
    if t.data_location == 1:  # external data: its length, or what its dims and type take
        for entry in t.external_data:
            if entry.key == "length":
                size = int(entry.value)
    if not size:
        if found is not None and found.value == "string":
            size = sum(len(s) for s in t.string_data)
        elif found is not None:
            size = (numel * found.itemsize) if found.itemsize else len(t.raw_data)
        else:
            size = len(t.raw_data)
    summary.weight_bytes += size
    if found is not None and found.is_float:
        summary.parameters += numel


# -- OpenVINO IR ------------------------------------------------------------------------------
_OV_FLOATS = {"f16", "f32", "f64", "bf16"}


def _openvino_summary(path: Path) -> ModelSummary:
    from ..formats.openvino.document import Net
    from ..formats.openvino.reader import read_xml

    net = read_xml(path)
    summary = ModelSummary(
        path=str(path),
        format="OpenVINO IR",
        ir_version=str(net.version),
        producer=_openvino_producer(path),
        graph_name=net.name,
    )
    counts: Counter[str] = Counter()
    opsets: Counter[str] = Counter()
    bin_path = path.with_suffix(".bin")

    def walk(n: Net, depth: int) -> None:
        for layer in n.layers.values():
            counts[layer.type] += 1
            if layer.version:
                opsets[layer.version] += 1
            if layer.type == "Const":
                _count_const(layer, summary)
            loop = _openvino_loop(layer, n, depth, bin_path)
            if loop is not None:
                summary.loops.append(loop)
            for body in _ov_bodies(layer):
                walk(body, depth + 1)

    walk(net, 0)
    summary.op_counts = dict(sorted(counts.items()))
    summary.opsets = {
        k: int(k[5:]) if k[5:].isdigit() else 0 for k in sorted(opsets) if k.startswith("opset")
    }
    producers = _ov_producers(net)
    for layer in net.layers.values():
        if layer.type == "Parameter":
            names = layer.outputs[0].names if layer.outputs else ()
            summary.inputs.append(Port(names[0] if names else layer.name, _ov_param_type(layer)))
        elif layer.type == "Result" and layer.inputs:
            src = producers.get((layer.id, layer.inputs[0].id))
            names = src.names if src is not None else ()
            port = layer.inputs[0]
            summary.outputs.append(Port(names[0] if names else layer.name, _ov_port_type(port)))
    return summary


def _ov_bodies(layer: Any) -> list[Any]:
    bodies = [layer.body] if layer.body is not None else []
    bodies += [b.body for b in (layer.then_branch, layer.else_branch) if b is not None]
    return bodies


def _ov_producers(net: Any) -> dict[tuple[str, int], Any]:
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


def _ov_size(net: Any) -> int:
    total = 0
    for layer in net.layers.values():
        if layer.type not in ("Parameter", "Result"):
            total += 1
        total += sum(_ov_size(b) for b in _ov_bodies(layer))
    return total


def _openvino_loop(layer: Any, net: Any, depth: int, bin_path: Path) -> LoopSummary | None:
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
            producers = _ov_producers(net)
            src = _const_of(net, producers, layer.id, 0)
            value = _const_value(src, bin_path) if src is not None else None
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
            body=_ov_size(layer.body),
            detail=f"{layer.version}" if layer.version else "",
        )
    if layer.type == "If" and layer.then_branch is not None and layer.else_branch is not None:
        then, orelse = _ov_size(layer.then_branch.body), _ov_size(layer.else_branch.body)
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


def _const_value(layer: Any, bin_path: Path) -> int | None:
    data = layer.data
    try:
        offset, size = int(data.get("offset", -1)), int(data.get("size", -1))
        kind = dtype(data.get("element_type", ""))
    except (TensorloopError, ValueError):
        return None
    if offset < 0 or size != kind.itemsize or kind.value not in ("int64", "int32"):
        return None
    try:
        with open(bin_path, "rb") as f:
            f.seek(offset)
            raw = f.read(size)
    except OSError:
        return None
    if len(raw) != size:
        return None
    return int(np.frombuffer(raw, kind.numpy)[0])


def _count_const(layer: Any, summary: ModelSummary) -> None:
    data = layer.data
    size = data.get("size", "0")
    summary.weight_bytes += int(size) if size.isdigit() else 0
    shape = data.get("shape", "")
    try:
        numel = math.prod(int(d) for d in shape.split(",") if d.strip()) if shape else 1
    except ValueError:
        numel = 0
    if data.get("element_type", "") in _OV_FLOATS:
        summary.parameters += numel


def _ov_param_type(layer: Any) -> str:
    data = layer.data
    elem = data.get("element_type", "?")
    with contextlib.suppress(TensorloopError):
        elem = dtype(elem).short
    shape = data.get("shape")
    if shape is None:
        return _ov_port_type(layer.outputs[0]) if layer.outputs else elem
    dims = [d.strip() for d in shape.split(",") if d.strip()]
    dims = ["?" if d in ("-1", "?") or ".." in d else d for d in dims]
    return f"{elem}[{','.join(dims)}]"


def _ov_port_type(port: Any) -> str:
    from ..formats.openvino.reader import PRECISIONS

    found = PRECISIONS.get(port.precision.upper()) if port.precision else None
    elem = found.short if found is not None else (port.precision or "?").lower()
    if port.dims is None:
        return f"{elem}[*]"
    return str(TensorType(found, port.dims)) if found is not None else f"{elem}{list(port.dims)}"


def _openvino_producer(path: Path) -> str:
    """``rt_info``'s runtime version and framework, read from the XML's last element."""
    import defusedxml.ElementTree as SafeET

    try:
        root = SafeET.parse(str(path), forbid_dtd=True, forbid_entities=True).getroot()
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


__all__ = ["LoopSummary", "ModelSummary", "Port", "graph_loops", "graph_summary", "summarize"]
