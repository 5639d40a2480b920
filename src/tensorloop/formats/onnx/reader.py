"""Read an ONNX file or ModelProto into a tensorloop Graph: scopes, subgraphs, initializers,
functions (each node through its converter, convert.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.inliner

from ...errors import (
    FormatError,
    ResourceLimitError,
    TensorloopError,
    UnsupportedOpError,
    refuse_special_file,
)
from ...ir.emit import Emitter
from ...ir.graph import Graph, Value
from ...ir.opdef import get_opdef
from ...limits import DEFAULT_LIMITS, Limits
from ...passes.fold_constants import fold_node
from ...tensor.types import OptionalType, SequenceType, TensorType, Type
from .context import ConversionScope, NodeContext, Source
from .convert import (
    attribute_value,
    dtype_attrs,
    find_converter,
    onnx_dtype,
    tensor_value,
    value_info_type,
)

ONNX_DOMAINS = ("", "ai.onnx")
# Domains whose ops, when no converter is registered, map to the same-named core op.
_CORE_DOMAINS = (*ONNX_DOMAINS, "ai.onnx.ml", "ai.onnx.preview.training")
MAX_EXTERNAL_BYTES = 1 << 34  # 16 GiB: an external tensor claiming more is refused


def read_model(model: onnx.ModelProto | str | os.PathLike[str]) -> tuple[onnx.ModelProto, Source]:
    """Parse a model file (or take a proto) and check its versions; external data is read on
    demand, bounds-checked."""
    if isinstance(model, onnx.ModelProto):
        proto, label, base = model, f"<ONNX model '{model.graph.name}'>", None
    else:
        label, base = str(model), str(Path(model).resolve().parent)
        proto = parse_file(model)
    _check_versions(proto, label)
    _check_text(proto, label)
    opsets: dict[str, int] = {}
    for imp in proto.opset_import:
        opsets["" if imp.domain == "ai.onnx" else imp.domain] = int(imp.version)
    if not proto.opset_import:
        opsets[""] = onnx.defs.onnx_opset_version()
    return proto, Source(label, base, opsets)


def _check_text(message: Any, label: str, path: str = "") -> None:
    """Every string field of ``message``, at any depth, is text: protobuf hands on a proto2
    string that is not UTF-8 as ``bytes`` (a name, a domain, a doc string), which no reader
    expects. A FormatError naming the file and the field's path instead."""
    for field, value in message.ListFields():
        # protobuf 5.28 on has is_repeated (7 dropped label); older ones have only label
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:
            repeated = field.label == field.LABEL_REPEATED
        for k, item in enumerate(value if repeated else [value]):
            at = f"{path}.{field.name}".lstrip(".") + (f"[{k}]" if repeated else "")
            if field.type == field.TYPE_STRING and not isinstance(item, str):
                raise FormatError(f"{label}: {at} is not UTF-8 text ({item[:40]!r})")
            if field.type == field.TYPE_MESSAGE:
                _check_text(item, label, at)


def parse_file(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """The ModelProto in the file at ``path``, its external data left where it is; a FormatError
    naming the file if it is missing, empty or not a model. Nothing else is checked."""
    label = str(path)
    refuse_special_file(path, label)  # a FIFO or a device: refused, not read (it may block)
    if Path(path).is_file() and Path(path).stat().st_size == 0:
        raise FormatError(f"{label}: the file is empty (0 bytes), not an ONNX model")
    try:
        return onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise FormatError(f"{label}: no such file") from None
    except Exception as exc:
        raise FormatError(f"{label}: not a readable ONNX model ({exc})") from None


def parse_model_bytes(data: bytes, label: str) -> onnx.ModelProto:
    """The ModelProto serialized in ``data`` (a file's bytes: external data cannot be found
    from them); a FormatError naming ``label`` if they are empty or not a model."""
    if not data:
        raise FormatError(f"{label}: empty (0 bytes), not an ONNX model")
    try:
        return onnx.load_model_from_string(data)
    except Exception as exc:
        raise FormatError(f"{label}: not a readable ONNX model ({exc})") from None


def check_schema(node: onnx.NodeProto, domain: str, opset: int, where: str) -> None:
    """What the ONNX spec calls a malformed node, refused before it is read: an attribute its
    operator does not define or of another type, more inputs or outputs than the operator takes
    (as ``onnx.checker`` checks a node; its whole-model check also wants declared shapes, which
    the spec leaves optional, so it is not used). Ops without a schema are left to their
    converter."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return
    defined = schema.attributes
    for a in node.attribute:
        spec = defined.get(a.name)
        if spec is None:
            raise FormatError(
                f"{where}: attribute '{a.name}' is not one {node.op_type}-{schema.since_version} "
                f"defines ({', '.join(sorted(defined)) or 'it has none'})"
            )
        expected = int(spec.type)  # type: ignore[call-overload]  # a pybind11 enum
        if a.type != expected:
            raise FormatError(
                f"{where}: attribute '{a.name}' is "
                f"{onnx.AttributeProto.AttributeType.Name(a.type)}, expected "
                f"{onnx.AttributeProto.AttributeType.Name(expected)}"
            )
    for kind, count, low, high in (
        ("inputs", len(node.input), schema.min_input, schema.max_input),
        ("outputs", len(node.output), schema.min_output, schema.max_output),
    ):
        if not low <= count <= high:
            bound = f"{low}" if low == high else f"{low} to {high}"
            raise FormatError(
                f"{where}: {node.op_type}-{schema.since_version} takes {bound} {kind}, got {count}"
            )


def _check_versions(proto: onnx.ModelProto, label: str) -> None:
    """Refuse an IR version or a default-domain opset that no ONNX release defines: what such a
    file means is unknown, and reading it as an older version would be a guess."""
    known_ir = int(onnx.IR_VERSION)
    if not 1 <= proto.ir_version <= known_ir:
        raise FormatError(
            f"{label}: ir_version {proto.ir_version} is not one ONNX defines; "
            f"tensorloop reads ir_version 1 to {known_ir}"
        )
    if proto.ir_version < 3 and proto.opset_import:
        raise FormatError(
            f"{label}: ir_version {proto.ir_version} predates opset imports (IR version 3), yet "
            "the model lists them"
        )
    if proto.ir_version >= 3 and not proto.opset_import:
        raise FormatError(
            f"{label}: ir_version {proto.ir_version} models name the opsets they use "
            "(opset_import), and this one names none: which version of each op it means is unknown"
        )
    newest = onnx.defs.onnx_opset_version()
    seen: set[str] = set()
    for imp in proto.opset_import:
        domain = "" if imp.domain == "ai.onnx" else imp.domain
        if domain in seen:
            raise FormatError(f"{label}: opset_import lists domain '{imp.domain}' twice")
        seen.add(domain)
        if domain == "" and not 1 <= imp.version <= newest:
            raise FormatError(
                f"{label}: opset_import of the default domain is version {imp.version}; "
                f"ONNX defines versions 1 to {newest}"
            )


def read_graph(proto: onnx.ModelProto, source: Source, limits: Limits = DEFAULT_LIMITS) -> Graph:
    """The model's main graph as a tensorloop Graph (functions inlined, subgraphs closed);
    ``limits.max_nodes`` bounds the inlined graph, checked before inlining."""
    proto = _inline_functions(proto, source, limits)
    _check_supported(proto, source)
    g = proto.graph
    graph = Graph(g.name or "main")
    scope = Scope(graph, None, source, g.name or "main")
    initialized = {t.name for t in g.initializer} | {t.name for t in g.sparse_initializer}
    _check_unique(g, source.label, g.name or "main")
    for vi in g.input:
        if vi.name in initialized:
            continue  # an input with an initializer default is read as that constant
        where = f"{source.label}: graph input '{vi.name}'"
        input_type = value_info_type(vi, where)
        if input_type is None:
            raise FormatError(f"{where}: its element type is not declared")
        scope.bind(vi.name, graph.add_input(vi.name, input_type))
    scope.convert_body(g)
    outputs = [scope.result(vi) for vi in g.output]
    graph.set_outputs(outputs)
    return graph


class Scope:
    """One ONNX graph being converted (its nodes' ConversionScope): its names, and the enclosing
    scope for outer references."""

    def __init__(
        self, graph: Graph, parent: ConversionScope | None, source: Source, path: str
    ) -> None:
        self.graph = graph
        self.parent = parent
        self.source = source
        self.path = path
        self.env: dict[str, Value] = {}
        self.defined: set[str] = set()
        self.captures: list[tuple[Value, Value]] = []
        self.em = Emitter(graph)

    def bind(self, name: str, value: Value, where: str = "") -> None:
        """Name ``value``; each name is defined once in a graph (ONNX graphs are SSA)."""
        if name in self.defined:
            raise FormatError(
                f"{where or self.source.label}: value '{name}' is defined twice in graph "
                f"'{self.path}' (names must be unique)"
            )
        self.defined.add(name)
        self.env[name] = value

    def lookup(self, name: str, where: str) -> Value:
        """The value named ``name``; one from an enclosing graph becomes a parameter of this one
        (a constant is copied in instead, so type rules still see its value)."""
        if name in self.env:
            return self.env[name]
        if self.parent is None:
            raise FormatError(f"{where}: input '{name}' is not produced by any earlier node")
        outer = self.parent.lookup(name, where)
        data = outer.constant
        if data is not None:
            local = self.em.op("Constant", [], {"value": data}, output_name=name)
        else:
            local = self.graph.add_input(name, outer.type)
            self.captures.append((outer, local))
        self.env[name] = local
        return local

    def where(self, node: onnx.NodeProto, index: int) -> str:
        label = f"'{node.name}'" if node.name else f"#{index}"
        return f"{self.source.label}: node {label} ({node.op_type}) in graph '{self.path}'"

    def convert_body(self, g: onnx.GraphProto) -> None:
        for t in g.initializer:
            data = self._tensor(t, f"initializer '{t.name}'")
            if self.parent is None and self.source.trainable and data.dtype.kind == "f":
                self.bind(t.name, self._variable(t.name, data))
                continue
            self.bind(t.name, self._constant(t.name, data))
        for sp in g.sparse_initializer:
            where = f"{self.source.label}: sparse initializer '{sp.values.name}'"
            data = attribute_value(onnx.helper.make_attribute("v", sp), where)
            self.bind(sp.values.name, self._constant(sp.values.name, data))
        for index, node in enumerate(g.node):
            self.convert_node(node, index)

    def result(self, vi: onnx.ValueInfoProto) -> Value:
        """Graph output ``vi``: its value, renamed (through an Identity if it must keep another
        name) and checked against the declared element type."""
        where = f"{self.source.label}: output '{vi.name}' of graph '{self.path}'"
        value = self.lookup(vi.name, where)
        declared = value_info_type(vi, where, required=False)
        if declared is not None and not _agrees(declared, value.type):
            raise FormatError(f"{where}: declared {declared}, computed {value.type}")
        if value.name != vi.name or value.graph is not self.graph or value.is_parameter:
            value = self.em.op("Identity", [value], output_name=vi.name)
        return value

    def _tensor(self, t: onnx.TensorProto, what: str) -> np.ndarray[Any, Any]:
        where = f"{self.source.label}: {what}"
        if t.data_location == onnx.TensorProto.EXTERNAL:
            return external_tensor(t, self.source, where)
        return tensor_value(t, where)

    def _constant(self, name: str, data: np.ndarray[Any, Any]) -> Value:
        return self.em.op("Constant", [], {"value": data}, output_name=name)

    def _variable(self, name: str, data: np.ndarray[Any, Any]) -> Value:
        """A trainable variable holding ``data``, read under the initializer's name."""
        var = self.graph.add_variable(name, data, trainable=True)
        attrs = {"variable": name, "type": var.type}
        return self.em.op("ReadVariable", [], attrs, output_name=name)

    def convert_node(self, node: onnx.NodeProto, index: int) -> None:
        where = self.where(node, index)
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = self.source.opsets.get(domain)
        if opset is None:
            raise FormatError(f"{where}: domain '{domain}' is not in the model's opset imports")
        if domain in _CORE_DOMAINS:
            check_schema(node, domain, opset, where)
        inputs = [self.lookup(n, where) if n else None for n in node.input]
        while inputs and inputs[-1] is None:
            inputs.pop()
        attrs: dict[str, Any] = {}
        for a in node.attribute:
            if a.ref_attr_name:
                raise FormatError(f"{where}: attribute '{a.name}' refers to a function attribute")
            attrs[a.name] = attribute_value(a, where)
        if domain in _CORE_DOMAINS:
            attrs = dtype_attrs(node.op_type, attrs, where)
        em = Emitter(self.graph, prefix=node.name)
        ctx = NodeContext(node, opset, inputs, attrs, em, self, where)
        fn = find_converter(domain, node.op_type, opset)
        start = len(self.graph.nodes)
        try:
            outs = list(fn(ctx) if fn is not None else ctx.same_default())
        except FormatError:
            raise
        except TensorloopError as exc:
            raise FormatError(f"{where}: {exc}") from None
        # What is known before running is computed now, so that shape computations become
        # constants the type rules of later nodes can read (Shape -> Gather -> Reshape).
        for made in list(self.graph.nodes[start:]):
            consts = fold_node(made)
            if consts is not None:
                swap = dict(zip(made.outputs, consts, strict=True))
                outs = [swap.get(v, v) if v is not None else None for v in outs]
        if len(outs) < len(node.output):
            raise FormatError(
                f"{where}: converted to {len(outs)} outputs, the node names {len(node.output)}"
            )
        for name, value in zip(node.output, outs, strict=False):
            if not name:
                continue
            if value is None:
                raise FormatError(f"{where}: output '{name}' is not produced")
            if name in self.defined:
                raise FormatError(
                    f"{where}: output '{name}' is already defined in graph '{self.path}' "
                    "(names must be unique)"
                )
            if value.producer is not None and value.graph is self.graph:
                self.graph.rename(value, name)
            self.bind(name, value, where)

    def nested(self, graph: Graph, label: str) -> Scope:
        return Scope(graph, self, self.source, f"{self.path}/{label}")

    @property
    def captured(self) -> list[Value]:
        return [outer for outer, _ in self.captures]

    def convert_subgraph(
        self,
        proto: onnx.GraphProto,
        ctx: NodeContext,
        key: str,
        param_types: Sequence[Type | None] | None,
    ) -> tuple[Graph, list[Value]]:
        """A graph attribute as a closed Graph plus the outer values its extra parameters take."""
        graph = Graph(proto.name or key)
        child = self.nested(graph, f"{ctx.node.name or ctx.op_type}.{key}")
        types = list(param_types or [])
        if param_types is not None and len(types) != len(proto.input):
            raise ctx.error(
                f"{key} takes {len(proto.input)} inputs, expected {len(types)} "
                f"(declared: {', '.join(vi.name for vi in proto.input) or 'none'})"
            )
        for i, vi in enumerate(proto.input):
            where = f"{ctx.where}: {key} input #{i} '{vi.name}'"
            declared = value_info_type(vi, where, required=False)
            given = types[i] if i < len(types) else None
            if given is not None and declared is not None and not _agrees(declared, given):
                raise FormatError(f"{where}: declared {declared}, the node passes {given}")
            t = given if given is not None else declared
            if t is None:
                raise FormatError(f"{where}: no type is declared and none can be inferred")
            child.bind(vi.name, graph.add_input(vi.name, t))
        _check_unique(proto, ctx.where, key)
        child.convert_body(proto)
        graph.set_outputs([child.result(vi) for vi in proto.output])
        return graph, child.captured


def _check_unique(g: onnx.GraphProto, label: str, path: str) -> None:
    """A graph lists each input and each output name once."""
    for what, items in (("input", g.input), ("output", g.output)):
        names = [vi.name for vi in items]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise FormatError(
                f"{label}: graph '{path}' lists {what}(s) {', '.join(map(repr, twice))} more "
                f"than once; each {what} must be named once"
            )


def _agrees(declared: Type, actual: Type) -> bool:
    """Element types agree. Declared shapes, rank included, are hints exporters get loose, and
    onnxruntime runs to the computed shape (ddddocr 1.6.1's common.onnx declares its
    [steps, 1, classes] output as [1, seqlen])."""
    if isinstance(declared, TensorType) and isinstance(actual, TensorType):
        return declared.dtype == actual.dtype
    if isinstance(declared, SequenceType) and isinstance(actual, SequenceType):
        return _agrees(declared.element, actual.element)
    if isinstance(declared, OptionalType) and isinstance(actual, OptionalType):
        return _agrees(declared.element, actual.element)
    return False


def external_tensor(t: onnx.TensorProto, source: Source, where: str) -> np.ndarray[Any, Any]:
    """Read an external-data tensor, confined to the model's folder and to the file's bounds."""
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    if source.base_dir is None:
        raise FormatError(
            f"{where}: the data of '{t.name}' is in external file '{location}'; "
            "load the model from its path so the file can be found"
        )
    base = Path(source.base_dir)
    parts = re.split(r"[\\/]", location)
    if not location or Path(location).is_absolute() or ".." in parts or ":" in parts[0]:
        raise FormatError(
            f"{where}: external data location '{location}' of '{t.name}' leaves the model "
            "folder: it must be a relative path inside it (no '..', no absolute path)"
        )
    path = (base / location).resolve()  # follows symlinks: one that leaves the folder is refused
    if base.resolve() not in path.parents:
        raise FormatError(
            f"{where}: external data location '{location}' of '{t.name}' leaves the model "
            f"folder {base}: it resolves to {path}"
        )
    refuse_special_file(path, f"{where}: external data file '{location}'")
    if not path.is_file():
        raise FormatError(f"{where}: external data file '{location}' does not exist")
    dt = onnx_dtype(t.data_type, where)
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FormatError(f"{where}: tensor '{t.name}' has negative dims {dims}")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise FormatError(
            f"{where}: external data offset/length of '{t.name}' are not integers"
        ) from None
    size = path.stat().st_size
    want = _packed_bytes(dt.numpy, count)
    if length is None:
        length = want
    if length != want or want > MAX_EXTERNAL_BYTES:
        raise FormatError(
            f"{where}: tensor '{t.name}' of {dt}{dims} needs {want} bytes, "
            f"its external data entry gives {length}"
        )
    if offset < 0 or offset + length > size:
        raise FormatError(
            f"{where}: tensor '{t.name}' reads bytes {offset}..{offset + length} of "
            f"'{location}', which holds {size}"
        )
    raw = onnx.TensorProto()
    raw.CopyFrom(t)
    del raw.external_data[:]
    raw.data_location = onnx.TensorProto.DEFAULT
    with open(path, "rb") as f:
        f.seek(offset)
        raw.raw_data = f.read(length)
    return tensor_value(raw, where)


def _packed_bytes(np_dtype: np.dtype[Any], count: int) -> int:
    bits = getattr(np_dtype, "itemsize", 1) * 8
    name = np_dtype.name
    if name in ("int4", "uint4", "float4_e2m1fn"):
        bits = 4
    elif name in ("int2", "uint2"):
        bits = 2
    return (count * bits + 7) // 8


# -- functions --------------------------------------------------------------------------------


def _walk_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for node in graph.node:
        yield node
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from _walk_nodes(sub)


def _native(domain: str, op_type: str, opset: int) -> bool:
    """True if tensorloop converts this op itself (a converter, or a same-named core op)."""
    if find_converter(domain, op_type, opset) is not None:
        return True
    if domain not in _CORE_DOMAINS:
        return False
    try:
        get_opdef(op_type)
    except UnsupportedOpError:
        return False
    return True


def _schema_function(domain: str, op_type: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:
        return False
    # onnx's type stubs lack these two properties of OpSchema
    return bool(
        getattr(schema, "has_function", False)
        or getattr(schema, "has_context_dependent_function", False)
    )


FunctionKey = tuple[str, str, str]
"""A model-local function as onnx's inliner matches a call to it: (domain, name, overload),
the domain ``ai.onnx`` read as ``""``."""
_SIZE_CAP = 1 << 256
"""Predicted sizes saturate here (reported as more than 2**256), so the arithmetic on a hostile
call tree stays on small ints."""


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def _callee_key(node: onnx.NodeProto) -> FunctionKey:
    return (_domain(node.domain), node.op_type, node.overload)


def _function_key(function: onnx.FunctionProto) -> FunctionKey:
    return (_domain(function.domain), function.name, function.overload)


def _attribute_graphs(a: onnx.AttributeProto) -> list[onnx.GraphProto]:
    """The graphs an attribute holds, as onnx's inliner finds them (whatever its type says)."""
    return [a.g, *a.graphs] if a.HasField("g") else list(a.graphs)


def _describe_function(key: FunctionKey) -> str:
    domain, name, overload = key
    return f"function '{name}' (domain '{domain}'{f', overload {overload!r}' if overload else ''})"


def _size_text(n: int) -> str:
    return "more than 2**256" if n >= _SIZE_CAP else str(n)


class Expansion:
    """What a function's body (or the main graph) becomes once model-local functions are
    inlined: ``nodes`` nodes, plus ``uses[a]`` copies of the graphs a call binds to its
    attribute ``a`` (onnx's inliner copies a graph-valued attribute wherever the body refers to
    it); ``calls[key]``: copies of function ``key`` it inlines directly (for messages)."""

    __slots__ = ("calls", "nodes", "uses")

    def __init__(self) -> None:
        self.nodes = 0
        self.uses: dict[str, int] = {}
        self.calls: dict[FunctionKey, int] = {}


def _inlined_functions(proto: onnx.ModelProto) -> dict[FunctionKey, onnx.FunctionProto]:
    """The model-local functions ``onnx.inliner.inline_local_functions`` inlines: those whose
    opset imports agree with the model's (the others stay as calls)."""
    model_opsets: dict[str, int] = {}
    for imp in proto.opset_import:
        model_opsets.setdefault(_domain(imp.domain), imp.version)
    return {
        _function_key(f): f
        for f in proto.functions
        if all(model_opsets.get(_domain(i.domain), i.version) == i.version for i in f.opset_import)
    }


def _callees(
    nodes: Iterable[onnx.NodeProto], functions: dict[FunctionKey, onnx.FunctionProto]
) -> list[FunctionKey]:
    """The functions called anywhere in ``nodes``, bodies included, in order of first call."""
    found: dict[FunctionKey, None] = {}
    stack = [nodes]
    while stack:
        for node in stack.pop():
            key = _callee_key(node)
            if key in functions:
                found[key] = None
            stack += [g.node for a in node.attribute for g in _attribute_graphs(a)]
    return list(found)


def expand(
    nodes: Iterable[onnx.NodeProto],
    functions: dict[FunctionKey, onnx.FunctionProto],
    sizes: dict[FunctionKey, Expansion],
) -> Expansion:
    """The ``Expansion`` of ``nodes`` (a graph's or a function's), given those of the functions
    they call (``sizes``): a plain op is one node and its bodies; a call is its function's
    nodes and, for each graph it passes as attribute ``a``, that graph's nodes ``uses[a]``
    times. Walked without recursion, each node once."""
    out = Expansion()
    stack: list[tuple[Iterable[onnx.NodeProto], int]] = [(nodes, 1)]
    while stack:
        body, times = stack.pop()
        for node in body:
            key = _callee_key(node)
            if key not in functions:
                out.nodes = min(out.nodes + times, _SIZE_CAP)
                for a in node.attribute:
                    if a.ref_attr_name:  # bound to the graph (or value) the call passes
                        out.uses[a.ref_attr_name] = min(
                            out.uses.get(a.ref_attr_name, 0) + times, _SIZE_CAP
                        )
                    else:
                        stack += [(g.node, times) for g in _attribute_graphs(a)]
                continue
            callee = sizes[key]
            out.nodes = min(out.nodes + times * callee.nodes, _SIZE_CAP)
            out.calls[key] = min(out.calls.get(key, 0) + times, _SIZE_CAP)
            bound = {a.name: a for a in node.attribute}
            for name, uses in callee.uses.items():
                a = bound.get(name)
                if a is None:
                    continue  # onnx's inliner drops a reference the call does not bind
                copies = min(times * uses, _SIZE_CAP)
                if a.ref_attr_name:
                    out.uses[a.ref_attr_name] = min(
                        out.uses.get(a.ref_attr_name, 0) + copies, _SIZE_CAP
                    )
                else:
                    stack += [(g.node, copies) for g in _attribute_graphs(a)]
    return out


def function_sizes(
    proto: onnx.ModelProto, label: str
) -> tuple[dict[FunctionKey, onnx.FunctionProto], dict[FunctionKey, Expansion]]:
    """The model-local functions onnx's inliner will inline, and the ``Expansion`` of each
    that the main graph reaches, callees first (an iterative depth-first walk, each function
    walked once); a function that calls itself, directly or through others, is a FormatError
    naming the cycle."""
    functions = _inlined_functions(proto)
    sizes: dict[FunctionKey, Expansion] = {}
    if not functions:
        return functions, sizes
    for root in _callees(proto.graph.node, functions):
        if root in sizes:
            continue
        path, on_path = [root], {root}
        stack = [iter(_callees(functions[root].node, functions))]
        while stack:
            key = next(stack[-1], None)
            if key is None:
                done = path.pop()
                on_path.discard(done)
                stack.pop()
                sizes[done] = expand(functions[done].node, functions, sizes)
            elif key in on_path:
                cycle = " -> ".join(f"'{k[1]}'" for k in (*path[path.index(key) :], key))
                raise FormatError(
                    f"{label}: cannot inline model-local functions: {_describe_function(key)} "
                    f"calls itself ({cycle}); model-local functions must not be recursive"
                )
            elif key not in sizes:
                path.append(key)
                on_path.add(key)
                stack.append(iter(_callees(functions[key].node, functions)))
    return functions, sizes


def _check_inlined_size(proto: onnx.ModelProto, label: str, limits: Limits) -> None:
    """Refuse, before onnx's inliner builds it, a model whose main graph would hold more than
    ``limits.max_nodes`` nodes once model-local functions are inlined (functions that call
    each other twice, 64 deep, make 2**64), naming the chain of functions that grows it."""
    functions, sizes = function_sizes(proto, label)
    main = expand(proto.graph.node, functions, sizes)
    if main.nodes <= limits.max_nodes:
        return
    limit = f"more than the limit of {limits.max_nodes} (Limits.max_nodes)"
    graph = f"graph '{proto.graph.name}'"
    if not main.calls:
        raise ResourceLimitError(
            f"{label}: {graph} holds {main.nodes} nodes, bodies included, {limit}"
        )
    chain: list[tuple[FunctionKey, int]] = []  # (function, copies its caller makes)
    calls = main.calls
    while calls:  # follow the largest callee down: no function calls itself, so this ends
        key = max(calls, key=lambda k: calls[k] * sizes[k].nodes)
        chain.append((key, calls[key]))
        calls = sizes[key].calls
    (first, copies) = chain[0]
    text = f"{_describe_function(first)} expands to {_size_text(sizes[first].nodes)} nodes"
    for i, (key, times) in enumerate(chain[1:4], 1):
        caller = chain[i - 1][0]
        text += " " if i == 1 else f", '{caller[1]}' to {_size_text(sizes[caller].nodes)} "
        text += f"through '{key[1]}' x{_size_text(times)}"
    raise ResourceLimitError(
        f"{label}: inlining its model-local functions would make {_size_text(main.nodes)} "
        f"nodes, {limit}: {text}{', ...' if len(chain) > 4 else ''} (a chain of {len(chain)} "
        f"function(s); {graph} calls '{first[1]}' x{_size_text(copies)})"
    )


def _inline_functions(
    proto: onnx.ModelProto, source: Source, limits: Limits = DEFAULT_LIMITS
) -> onnx.ModelProto:
    """Inline model-local functions, then schema functions of ops tensorloop has no kernel for
    (ONNX defines many ops as functions of simpler ones). Each step is bounded by
    ``limits.max_nodes``: the first checked on the predicted size before it runs."""
    _check_inlined_size(proto, source.label, limits)
    if proto.functions:
        try:
            proto = onnx.inliner.inline_local_functions(proto)
        except Exception as exc:
            raise FormatError(
                f"{source.label}: cannot inline model-local functions: {exc}"
            ) from None
    wanted: set[tuple[str, str]] = set()
    for node in _walk_nodes(proto.graph):
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = source.opsets.get(domain, 0)
        if not _native(domain, node.op_type, opset) and _schema_function(
            domain, node.op_type, opset
        ):
            wanted.add((node.domain, node.op_type))
    if not wanted:
        return proto
    try:
        inlined: onnx.ModelProto = onnx.inliner.inline_selected_functions(
            proto, sorted(wanted), inline_schema_functions=True
        )
    except Exception:  # a context-dependent body that could not be built stays unsupported
        return proto
    count = sum(1 for _ in _walk_nodes(inlined.graph))  # ONNX's own bodies: a bounded growth
    if count > limits.max_nodes:
        ops = ", ".join(f"{d + '.' if d else ''}{op}" for d, op in sorted(wanted))
        raise ResourceLimitError(
            f"{source.label}: inlining the ONNX function bodies of {ops} (ops tensorloop has no "
            f"kernel for) makes {count} nodes, more than the limit of {limits.max_nodes} "
            "(Limits.max_nodes)"
        )
    return inlined


def _check_supported(proto: onnx.ModelProto, source: Source) -> None:
    """List every op the model uses that tensorloop cannot convert, all at once."""
    missing: dict[str, list[str]] = {}
    for node in _walk_nodes(proto.graph):
        domain = "" if node.domain == "ai.onnx" else node.domain
        opset = source.opsets.get(domain)
        if opset is None:
            continue  # reported with the node
        if not _native(domain, node.op_type, opset):
            key = f"{domain + '.' if domain else ''}{node.op_type}-{opset}"
            missing.setdefault(key, []).append(node.name or "<unnamed>")
    if missing:
        detail = "; ".join(
            f"{k} (node{'s' if len(v) > 1 else ''} {', '.join(v[:3])}{', ...' * (len(v) > 3)})"
            for k, v in sorted(missing.items())
        )
        raise UnsupportedOpError(f"{source.label}: unsupported ONNX ops: {detail}")
