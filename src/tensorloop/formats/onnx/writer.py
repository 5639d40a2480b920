"""``tl.save(model, "m.onnx")`` and ``to_onnx``: a tensorloop Model as an ONNX ModelProto.

Core ops carry ONNX's names, attributes and (newest) semantics, so each becomes the same-named
ONNX node (write_ops.py); the canonical Loop and If become ONNX's Loop and If
(write_control.py). Names are unique across the whole model (write_scope.py), so any body can
read any enclosing value by name. What no output depends on is left out (write_prune.py).
"""

from __future__ import annotations

import os
from typing import Any

import onnx
from onnx import helper

from ...errors import FormatError
from ...ir.graph import Graph, Node
from ...model import Model
from ...tensor.types import TensorType
from .write_control import write_if, write_loop
from .write_ops import DOMAIN_OPSETS, LARGE_CONSTANT, OP_WRITERS, domain_version, generic
from .write_prune import prune
from .write_scope import File, NodeWriter, Scope, emit_nodes, graph_outputs, value_info

__all__ = ["DOMAIN_OPSETS", "LARGE_CONSTANT", "OPSET", "to_onnx"]

OPSET = 26
"""The default ``ai.onnx`` opset: the newest that onnxruntime 1.31 runs."""

_WRITERS: dict[str, NodeWriter] = {**OP_WRITERS, "Loop": write_loop, "If": write_if}


def _write_node(scope: Scope, node: Node) -> None:
    _WRITERS.get(node.op, generic)(scope, node)


# -- entry points ---------------------------------------------------------------------------------
def to_onnx(model: Model, *, opset: int = OPSET) -> onnx.ModelProto:
    """``model`` as an ONNX model importing ``ai.onnx`` at ``opset``."""
    file = File(model, opset, _write_node)
    graph = model.graph
    scope = Scope(file, graph)
    inputs = [value_info(file.names[v], v.type, f"input '{v.name}'") for v in graph.inputs]
    emit_nodes(scope, graph)
    outputs = graph_outputs(scope, top=True)
    proto = helper.make_graph(
        scope.nodes, graph.name, inputs, outputs, initializer=file.initializers
    )
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, domain_version(file, d)) for d in sorted(file.domains)]
    model_proto = helper.make_model(
        proto,
        opset_imports=imports,
        ir_version=helper.find_min_ir_version_for(imports, ignore_unknown=True),
        producer_name="tensorloop",
    )
    prune(model_proto)
    _give_ranks(model_proto, graph)
    return model_proto


def _give_ranks(model: onnx.ModelProto, graph: Graph) -> None:
    """ONNX wants a rank on every model input and output: an output tensorloop types with an
    unknown rank takes the type onnx's shape inference finds, if it finds one."""
    for v in graph.inputs:
        if isinstance(v.type, TensorType) and v.type.shape is None:
            raise FormatError(f"input '{v.name}' is {v.type}: ONNX model inputs need a rank")
    unranked = [
        info
        for info, v in zip(model.graph.output, graph.outputs, strict=True)
        if isinstance(v.type, TensorType) and v.type.shape is None
    ]
    if not unranked:
        return
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        found = {i.name: i.type for i in [*inferred.graph.value_info, *inferred.graph.output]}
    except onnx.shape_inference.InferenceError:
        found = {}
    for info in unranked:
        t = found.get(info.name)
        if t is None or not t.tensor_type.HasField("shape"):
            raise FormatError(
                f"output '{info.name}' has unknown rank, and ONNX model outputs need one"
            )
        info.type.CopyFrom(t)


_PROTOBUF_LIMIT = 2**31 - 2**20
"""Protobuf cannot hold a message of 2 GiB; models near that keep their tensors outside."""


def save_file(model: Model, path: str | os.PathLike[str], **options: Any) -> None:
    """Write ``model`` as ONNX. Options: ``opset`` (default OPSET) and ``external_data``: keep
    the initializers in ``<file name>.data`` beside the model (chosen on its own for models
    protobuf cannot hold in one file)."""
    unknown = sorted(set(options) - {"opset", "external_data"})
    if unknown:
        listed = ", ".join(unknown)
        raise FormatError(
            f"{path}: unknown option(s) {listed}; saving ONNX takes opset and external_data"
        )
    try:
        proto = to_onnx(model, opset=int(options.get("opset", OPSET)))
    except FormatError as exc:
        raise FormatError(f"{path}: {exc}") from None
    external = bool(options.get("external_data", False))
    external = external or sum(t.ByteSize() for t in proto.graph.initializer) > _PROTOBUF_LIMIT
    onnx.save_model(
        proto,
        os.fspath(path),
        save_as_external_data=external,
        location=f"{os.path.basename(path)}.data",
        size_threshold=0,
    )
