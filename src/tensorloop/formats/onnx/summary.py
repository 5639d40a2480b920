"""The summary of an ONNX file as written (``summarize(path)`` for ``.onnx``): versions, producer,
declared ports, op counts by domain, weights, and every Loop, Scan, If, SequenceMap and RNN op
with its ports by role, read from the proto before any conversion."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import onnx

from ...errors import FormatError
from ...tensor.dtypes import DType
from ..summary import LoopSummary, ModelSummary, Port
from .convert import ONNX_DTYPES, tensor_value
from .reader import parse_file

_RNN_CARRIED = {"LSTM": 2, "GRU": 1, "RNN": 1}


def summarize_file(path: Path) -> ModelSummary:
    """An ONNX file as written, parsed by the reader's ``parse_file`` (no version is refused:
    the summary shows what the file says)."""
    proto = parse_file(path)
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
        inputs=[Port(v.name, _type(v.type)) for v in g.input if v.name not in inits],
        outputs=[Port(v.name, _type(v.type)) for v in g.output],
    )
    counts: Counter[str] = Counter()
    types = {v.name: v.type for v in (*g.input, *g.value_info, *g.output)}
    constants: dict[str, Any] = {}
    _walk(g, 0, summary, counts, types, constants)
    summary.op_counts = dict(sorted(counts.items()))
    return summary


def _walk(
    g: Any,
    depth: int,
    summary: ModelSummary,
    counts: Counter[str],
    types: dict[str, Any],
    constants: dict[str, Any],
) -> None:
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
        loop = _loop(node, depth, types, constants, dict(subgraphs))
        if loop is not None:
            summary.loops.append(loop)
        for _, sub in subgraphs:
            _walk(sub, depth + 1, summary, counts, types, constants)


def _loop(
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
            value = _scalar(constants.get(trip_name))
            trip = str(value) if value is not None else f"%{trip_name} (at run time)"
            if cond_name or not _always_true(body):
                trip += " or the condition"
        carried = max(len(ins) - 2, 0)
        return LoopSummary(
            op,
            node.name,
            "ONNX Loop",
            depth,
            trip,
            carried=carried,
            invariant=len(_captures(body)),
            stacked=max(len(body.output) - 1 - carried, 0),
            body=_size(body),
        )
    if op == "Scan" and "body" in subs:
        body = subs["body"]
        n_scan = _int_attr(node, "num_scan_inputs", 0)
        carried = max(len(ins) - n_scan, 0)
        axes = _ints_attr(node, "scan_input_axes")
        first = ins[carried] if n_scan and carried < len(ins) else ""
        axis = axes[0] if axes else 0
        trip = f"the length of %{first} on axis {axis}" if first else "none"
        dim = _dim(types.get(first), axis)
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
            invariant=len(_captures(body)),
            stacked=max(len(node.output) - carried, 0),
            body=_size(body),
        )
    if op == "If" and "then_branch" in subs and "else_branch" in subs:
        then, orelse = subs["then_branch"], subs["else_branch"]
        captured = _captures(then) | _captures(orelse)
        return LoopSummary(
            op,
            node.name,
            "ONNX If",
            depth,
            "",
            invariant=len(captured),
            body=_size(then) + _size(orelse),
            detail=f"then {_size(then)} nodes, else {_size(orelse)} nodes",
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
            invariant=len(_captures(body)),
            stacked=len(node.output),
            body=_size(body),
        )
    if op in _RNN_CARRIED:
        direction = "forward"
        for a in node.attribute:
            if a.name == "direction":
                direction = a.s.decode()
        layout = _int_attr(node, "layout", 0)
        x = ins[0] if ins else ""
        dim = _dim(types.get(x), 1 if layout else 0)
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


def _int_attr(node: Any, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _ints_attr(node: Any, name: str) -> list[int]:
    for a in node.attribute:
        if a.name == name:
            return [int(i) for i in a.ints]
    return []


def _scalar(t: Any) -> int | None:
    """An integer tensor of one element as an int; None for any other (or unreadable) tensor."""
    if t is None:
        return None
    try:
        value = tensor_value(t, "")
    except FormatError:
        return None
    return int(value.reshape(-1)[0]) if value.size == 1 and value.dtype.kind in "iu" else None


def _always_true(body: Any) -> bool:
    """Whether the body's condition result is an input condition passed through or a constant
    true (a for loop written as a Loop)."""
    if not body.output:
        return True
    name = body.output[0].name
    if len(body.input) > 1 and name == body.input[1].name:
        return True
    for node in body.node:
        if name in node.output and node.op_type == "Identity" and len(body.input) > 1:
            return bool(node.input[0] == body.input[1].name)
        if name in node.output and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    try:
                        return bool(tensor_value(a.t, "").reshape(-1)[0])
                    except (FormatError, IndexError):
                        return False
    return False


def _captures(g: Any) -> set[str]:
    """Names ``g`` (and the bodies in it) read from enclosing scopes."""
    defined = {v.name for v in g.input} | {t.name for t in g.initializer}
    used: set[str] = set()
    for node in g.node:
        used |= {n for n in node.input if n}
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                used |= _captures(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    used |= _captures(sub)
        defined |= {n for n in node.output if n}
    used |= {v.name for v in g.output}
    return used - defined


def _size(g: Any) -> int:
    total = 0
    for node in g.node:
        total += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                total += _size(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                total += sum(_size(sub) for sub in a.graphs)
    return total


def _dim(tp: Any, axis: int) -> str | None:
    if tp is None or tp.WhichOneof("value") != "tensor_type":
        return None
    if not tp.tensor_type.HasField("shape") or axis >= len(tp.tensor_type.shape.dim):
        return None
    d = tp.tensor_type.shape.dim[axis]
    if d.HasField("dim_value"):
        return str(d.dim_value)
    return d.dim_param or None


def _elem(elem_type: int) -> str:
    found = ONNX_DTYPES.get(elem_type)
    if found is not None:
        return found.short
    try:
        return str(onnx.TensorProto.DataType.Name(elem_type)).lower()
    except ValueError:
        return f"type{elem_type}"


def _type(tp: Any) -> str:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        elem = _elem(tp.tensor_type.elem_type)
        if not tp.tensor_type.HasField("shape"):
            return f"{elem}[*]"
        dims = [
            str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
            for d in tp.tensor_type.shape.dim
        ]
        return f"{elem}[{','.join(dims)}]"
    if kind == "sequence_type":
        return f"seq<{_type(tp.sequence_type.elem_type)}>"
    if kind == "optional_type":
        return f"opt<{_type(tp.optional_type.elem_type)}>"
    return kind or "?"


def _count_tensor(t: Any, summary: ModelSummary) -> None:
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
