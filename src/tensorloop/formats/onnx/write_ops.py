"""Writing each op: a core op as the same-named ONNX node, and the ops that differ."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from ...errors import FormatError
from ...ir.graph import Graph, Node, Value
from ...ir.opdef import get_opdef
from ...tensor.dtypes import DType
from ...tensor.types import TensorType, Type
from .write_scope import (
    Array,
    File,
    NodeWriter,
    Scope,
    describe,
    elem_type,
    formal_inputs,
    subgraph,
    tensor_proto,
    type_proto,
)

DOMAIN_OPSETS = {"ai.onnx.ml": 5, "ai.onnx.preview": 1, "ai.onnx.preview.training": 1}
"""Other domains a core op may live in, imported only by models that use them."""
LARGE_CONSTANT = 16
"""Constants with at least this many elements become initializers; smaller ones stay nodes."""

_A = onnx.AttributeProto
_OPTIONAL = onnx.defs.OpSchema.FormalParameterOption.Optional
_KINDS = {
    getattr(onnx.defs.OpSchema.AttrType, k): int(getattr(_A, k))
    for k in _A.AttributeType.keys()  # noqa: SIM118 (a protobuf enum, not a dict)
    if k != "UNDEFINED"
}


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def _schema(file: File, node: Node) -> onnx.defs.OpSchema:
    for domain in ("", *DOMAIN_OPSETS):
        if not onnx.defs.has(node.op, domain):
            continue
        version = DOMAIN_OPSETS.get(domain, file.opset)
        try:
            schema = onnx.defs.get_schema(node.op, version, domain)
        except onnx.defs.SchemaError:
            since = min(
                s.since_version
                for s in onnx.defs.get_all_schemas_with_history()
                if s.name == node.op and s.domain == domain
            )
            raise FormatError(
                f"{describe(node)}: ONNX has {node.op} from opset {since} of "
                f"{domain or 'ai.onnx'}, but the export targets opset {version} (pass opset=)"
            ) from None
        if domain:
            schema = _before_retired(file, node, schema)
            need = file.domain_needs.get(domain, (0, ""))
            if schema.since_version > need[0]:
                file.domain_needs[domain] = (schema.since_version, node.op)
        return schema
    raise FormatError(f"{describe(node)}: ONNX has no op '{node.op}'")


def _before_retired(file: File, node: Node, schema: onnx.defs.OpSchema) -> onnx.defs.OpSchema:
    """An op its domain's newest opset retired (TreeEnsembleRegressor and TreeEnsembleClassifier
    in ai.onnx.ml 5) is written as the opset before defines it; the file then imports that."""
    if not schema.deprecated:
        return schema
    last = schema.since_version - 1
    ceiling = file.domain_ceilings.get(schema.domain, (last + 1, ""))
    if last < ceiling[0]:
        file.domain_ceilings[schema.domain] = (last, node.op)
    return onnx.defs.get_schema(node.op, last, schema.domain)


def domain_version(file: File, domain: str) -> int:
    """The opset of ``domain`` the file imports: the newest, or the one before an op of the file
    was retired; FormatError if another op of the file needs a newer one."""
    ceiling, retired = file.domain_ceilings.get(domain, (DOMAIN_OPSETS[domain], ""))
    need, op = file.domain_needs.get(domain, (0, ""))
    if need > ceiling:
        raise FormatError(
            f"the model holds {retired}, which {domain} {ceiling + 1} retired, and {op}, which "
            f"{domain} has only from opset {need}: no one opset of {domain} holds both"
        )
    return ceiling


def generic(scope: Scope, node: Node, written: int | None = None) -> None:
    """A core op as the same-named ONNX op with its attributes (and only its first ``written``
    outputs, which the caller checked are all that is read)."""
    file = scope.file
    schema = _schema(file, node)
    if schema.domain:
        file.domains.add(schema.domain)
    opdef = get_opdef(node.op)
    defaults = opdef.attrs
    given = node.attrs
    if getattr(schema, "has_function", False):
        # onnx's checker expands a function op's body without the defaults of the attributes
        # left out (MeanVarianceNormalization fails so): write every one the schema knows.
        resolved = opdef.resolve_attrs(node.attrs, node.describe())
        given = {k: v for k, v in resolved.items() if k in schema.attributes or k in given}
    attrs: dict[str, onnx.AttributeProto] = {}
    for key, value in given.items():
        if value is None:
            continue
        spec = schema.attributes.get(key)
        if spec is None:
            if key in defaults and _equal(value, defaults[key].default):
                continue  # a newer opset's attribute, at the value that means the older op
            raise FormatError(
                f"{describe(node)}: attribute '{key}' = {value!r} does not exist in "
                f"{node.op}-{schema.since_version}"
            )
        attrs[key] = _attribute(file, node, key, value, _KINDS[spec.type])
    # Optional outputs nobody reads are left out: some ops (BatchNormalization) change mode
    # with the number of outputs listed.
    results = set(scope.graph.outputs)
    outs = []
    for j, v in enumerate(node.outputs[:written]):
        formal = schema.outputs[min(j, len(schema.outputs) - 1)] if schema.outputs else None
        unread = not v.uses and v not in results
        outs.append(
            "" if unread and formal is not None and formal.option == _OPTIONAL else file.names[v]
        )
    ins = _int64_indices(scope, node, schema, [file.ref(v) for v in node.inputs])
    scope.node(node.op, _trim(ins), _trim(outs), attrs, domain=schema.domain, name=node.name)


def _int64_indices(
    scope: Scope, node: Node, schema: onnx.defs.OpSchema, ins: list[str]
) -> list[str]:
    """``ins``, with the integer inputs ONNX takes in int64 only written in int64.

    Core ops take indices, shapes and axes in any integer type where ONNX wants int64 for some
    (ScatterND's and GatherND's indices, which the gradient of Gather writes with the indices
    it gathered by; Reshape's shape, ...), or one type for several inputs (Slice's starts and
    ends). The inputs of one ONNX type that no output shares, where the op does not take them
    as they are but takes int64, become int64: a constant written again, anything else cast."""
    if not schema.inputs:
        return ins
    allowed = {tc.type_param_str: set(tc.allowed_type_strs) for tc in schema.type_constraints}
    bound = {o.type_str for o in schema.outputs}
    groups: dict[str, list[tuple[int, Value, DType]]] = {}
    for j, v in enumerate(node.inputs):
        t = None if v is None else v.type
        if v is not None and isinstance(t, TensorType) and t.dtype.is_int:
            formal = schema.inputs[min(j, len(schema.inputs) - 1)]
            groups.setdefault(formal.type_str, []).append((j, v, t.dtype))
    for type_str, members in groups.items():
        takes = allowed.get(type_str, {type_str})
        if type_str in bound or "tensor(int64)" not in takes:
            continue
        dtypes = {dt for _, _, dt in members}
        if len(dtypes) == 1 and _type_str(dtypes.pop()) in takes:
            continue
        for j, v, dt in members:
            if dt == DType.int64:
                continue
            data = v.constant
            if data is not None:
                ins[j] = scope.const(data.astype(np.int64))
            else:
                ins[j] = scope.op("Cast", [ins[j]], to=onnx.TensorProto.INT64)
    return ins


def _type_str(dt: DType) -> str:
    """``dt`` as an ONNX type string: tensor(int32), tensor(float), ..."""
    return f"tensor({onnx.TensorProto.DataType.Name(elem_type(dt)).lower()})"


def _trim(names: list[str]) -> list[str]:
    """Names without the trailing "" of optional inputs or outputs left out."""
    while names and not names[-1]:
        names.pop()
    return names


def _attribute(file: File, node: Node, key: str, value: Any, kind: int) -> onnx.AttributeProto:
    """An attribute value as an AttributeProto of ONNX attribute type ``kind``."""
    where = f"{describe(node)} attribute '{key}'"

    def item(x: Any) -> Any:
        if isinstance(x, Graph):
            return subgraph(file, x, formal_inputs(file, x))
        if isinstance(x, DType):
            return elem_type(x)
        if isinstance(x, Type):
            return type_proto(x, where)
        if isinstance(x, np.ndarray) or kind in (_A.TENSOR, _A.TENSORS):
            return tensor_proto(np.asarray(x))
        if kind in (_A.FLOAT, _A.FLOATS):
            return float(x)
        if kind in (_A.INT, _A.INTS):
            return int(x)
        return x

    listed = kind in (_A.INTS, _A.FLOATS, _A.STRINGS, _A.TENSORS, _A.GRAPHS, _A.TYPE_PROTOS)
    try:
        if listed:
            items = value if isinstance(value, tuple | list) else (value,)
            return helper.make_attribute(key, [item(x) for x in items], attr_type=kind)
        return helper.make_attribute(key, item(value), attr_type=kind)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"{where}: {value!r} cannot be written: {exc}") from None


def _constant(scope: Scope, node: Node) -> None:
    file, v = scope.file, node.output
    data: Array = node.attrs["value"]
    if data.size >= LARGE_CONSTANT and v not in scope.graph.outputs:
        file.initializer(data, file.names[v])
        if scope.graph is not file.root:
            file.refs[v] = file.names[v]  # an outer-scope name inside a body
        return
    scope.node("Constant", [], [file.names[v]], {"value": tensor_proto(data)}, name=node.name)


def _read_variable(scope: Scope, node: Node) -> None:
    file = scope.file
    name: str = node.attrs["variable"]
    if name not in file.variables:
        var = file.root.variables[name]
        file.variables[name] = file.initializer(var.initial, file.unique(name))
    file.refs[node.output] = file.variables[name]


def _assign(scope: Scope, node: Node) -> None:
    raise FormatError(
        f"{describe(node)}: assigns persistent tensor '{node.attrs['variable']}', but an ONNX "
        "model keeps no state between runs (persistent tensors that are only read are written "
        "as initializers)"
    )


def _check(scope: Scope, node: Node) -> None:
    # ONNX has no assertion: the values pass through (docs/network.md says what that drops)
    for value, out in zip(node.inputs[1:], node.outputs, strict=True):
        scope.node("Identity", [scope.file.ref(value)], [scope.file.names[out]])


def _non_max_suppression(scope: Scope, node: Node) -> None:
    # The core op's defaults are ONNX's op; generic() refuses the other attributes' values.
    if len(node.inputs) > 5 and node.inputs[5] is not None:
        raise FormatError(
            f"{describe(node)}: Soft-NMS (input #5, soft_nms_sigma) has no ONNX equivalent"
        )
    results = set(scope.graph.outputs)
    read = [j for j, v in enumerate(node.outputs[1:], 1) if v.uses or v in results]
    if read:
        raise FormatError(
            f"{describe(node)}: ONNX's NonMaxSuppression gives the selected indices only; "
            f"output(s) {read} (selected scores, count) are read"
        )
    generic(scope, node, written=1)


OP_WRITERS: dict[str, NodeWriter] = {
    "Constant": _constant,
    "NonMaxSuppression": _non_max_suppression,
    "ReadVariable": _read_variable,
    "Assign": _assign,
    "Check": _check,
}
"""The ops not written by ``generic``, bar Loop and If (write_control.py)."""
