"""The ONNX converter registry: one function per (op type, first opset it applies to).

An ONNX node whose op type has no registered converter becomes the core op of the same name
with the same attributes: the core op set follows the newest ONNX semantics. A converter is
registered for an op that needs more than that: an older opset's attributes moved to inputs
(``since``), a lowering to several core ops, or a subgraph. The converters live in one
``read_<family>.py`` module per family of core ops (``READ_FAMILIES``, the one list of them);
Constant, which every family's models hold, is converted here.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ...errors import FormatError
from ...ir.graph import Value
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, Dim, OptionalType, SequenceType, TensorType, Type
from .context import NodeContext as NodeContext  # re-exported: the converters import it here

Converter = Callable[[NodeContext], Sequence[Value | None]]
"""``fn(ctx) -> outputs``: one Value per ONNX output of the node (None for one left unnamed)."""

DEFAULT_DOMAIN = ""
_CONVERTERS: dict[tuple[str, str], list[tuple[int, int | None, Converter]]] = {}


def converter(
    *op_types: str, since: int = 1, until: int | None = None, domain: str = DEFAULT_DOMAIN
) -> Callable[[Converter], Converter]:
    """Register ``fn`` for ``op_types`` in models whose opset of ``domain`` is in [since, until).

    Of the registered functions whose range holds the model's opset, the one with the greatest
    ``since`` converts the node; with none, it becomes the same-named core op. An adapter for
    old opsets only (an attribute that later became an input) gives ``until``.
    """

    def register(fn: Converter) -> Converter:
        for t in op_types:
            entries = _CONVERTERS.setdefault((domain, t), [])
            if any(s == since for s, _, _ in entries):
                raise FormatError(f"ONNX op {t} (since opset {since}) has two converters")
            entries.append((since, until, fn))
            entries.sort(key=lambda e: e[0])
        return fn

    return register


def find_converter(domain: str, op_type: str, opset: int) -> Converter | None:
    _load_converters()
    best: Converter | None = None
    for since, until, fn in _CONVERTERS.get((domain, op_type), []):
        if since <= opset and (until is None or opset < until):
            best = fn
    return best


READ_FAMILIES = (
    "read_control",  # Loop, Scan, If
    "read_image",  # Upsample, Resize <= 10, RoiAlign, GridSample
    "read_indexing",  # Scatter, TopK
    "read_math",  # Clip
    "read_nn",  # BatchNormalization, Dropout, GroupNormalization, FlexAttention
    "read_random",  # RandomUniform/Normal(Like), Bernoulli, Multinomial: named for their stream
    "read_reduce",  # Reduce* with attribute axes, Softmax/LogSoftmax/Hardmax
    "read_rnn",  # LSTM, GRU, RNN
    "read_sequence",  # SequenceMap
    "read_shape",  # Squeeze, Unsqueeze, Split, Slice, Pad
    "read_signal",  # DFT
    "read_strings",  # ai.onnx.ml LabelEncoder
)
"""The modules of this package that register converters, imported on first use. The other ops
(elementwise, linalg, quantization, casts, detection...) need none: each is its same-named core
op."""


_LOADED: list[bool] = []


def _load_converters() -> None:
    if _LOADED:  # looked up for every node: the imports once
        return
    for name in READ_FAMILIES:
        importlib.import_module(f"{__package__}.{name}")
    _LOADED.append(True)


_P = onnx.TensorProto
ONNX_DTYPES: dict[int, DType] = {
    _P.FLOAT: DType.float32, _P.UINT8: DType.uint8, _P.INT8: DType.int8,
    _P.UINT16: DType.uint16, _P.INT16: DType.int16, _P.INT32: DType.int32,
    _P.INT64: DType.int64, _P.STRING: DType.string, _P.BOOL: DType.bool,
    _P.FLOAT16: DType.float16, _P.DOUBLE: DType.float64, _P.UINT32: DType.uint32,
    _P.UINT64: DType.uint64, _P.BFLOAT16: DType.bfloat16,
    _P.FLOAT8E4M3FN: DType.float8e4m3fn, _P.FLOAT8E4M3FNUZ: DType.float8e4m3fnuz,
    _P.FLOAT8E5M2: DType.float8e5m2, _P.FLOAT8E5M2FNUZ: DType.float8e5m2fnuz,
    _P.UINT4: DType.uint4, _P.INT4: DType.int4, _P.FLOAT4E2M1: DType.float4e2m1,
    _P.FLOAT8E8M0: DType.float8e8m0, _P.UINT2: DType.uint2, _P.INT2: DType.int2,
}  # fmt: skip
"""The ONNX TensorProto element types tensorloop reads, by number (COMPLEX*, FLOAT6* are not)."""


def onnx_dtype(elem_type: int, where: str) -> DType:
    """The DType of ONNX element type number ``elem_type``; a FormatError names the others."""
    found = ONNX_DTYPES.get(elem_type)
    if found is not None:
        return found
    if elem_type in _P.DataType.values() and elem_type != _P.UNDEFINED:
        name = _P.DataType.Name(elem_type)
        raise FormatError(f"{where}: ONNX element type {name} is not supported")
    raise FormatError(f"{where}: unknown ONNX element type {elem_type}")


def dtype_attrs(op_type: str, attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """ONNX names element types by TensorProto number; a core op whose attribute schema wants a
    DType (Cast's ``to``, say) gets the DType."""
    from ...errors import UnsupportedOpError
    from ...ir.opdef import get_opdef

    try:
        specs = get_opdef(op_type).attrs
    except UnsupportedOpError:
        return attrs
    out = dict(attrs)
    for key, value in attrs.items():
        spec = specs.get(key)
        if spec is not None and spec.kind is DType and isinstance(value, int):
            if value == _P.UNDEFINED and spec.default is None:  # ONNX's way to leave it unset
                del out[key]
            else:
                out[key] = onnx_dtype(value, f"{where}: attribute '{key}'")
    return out


def attribute_value(attr: onnx.AttributeProto, where: str) -> Any:
    """An ONNX attribute as a Python value: int, float, str, ndarray, GraphProto or a tuple."""
    A = onnx.AttributeProto
    t = attr.type
    if t == A.INT:
        return int(attr.i)
    if t == A.FLOAT:
        return float(attr.f)
    if t == A.STRING:
        return attr.s.decode("utf-8", errors="replace")
    if t == A.TENSOR:
        return tensor_value(attr.t, where)
    if t == A.SPARSE_TENSOR:
        return _sparse_value(attr.sparse_tensor, where)
    if t == A.GRAPH:
        return attr.g
    if t == A.INTS:
        return tuple(int(x) for x in attr.ints)
    if t == A.FLOATS:
        return tuple(float(x) for x in attr.floats)
    if t == A.STRINGS:
        return tuple(s.decode("utf-8", errors="replace") for s in attr.strings)
    if t == A.TENSORS:
        return tuple(tensor_value(x, where) for x in attr.tensors)
    if t == A.GRAPHS:
        return tuple(attr.graphs)
    if t == A.TYPE_PROTO:
        return type_from_proto(attr.tp, f"{where}: attribute '{attr.name}'")
    raise FormatError(f"{where}: attribute '{attr.name}' has unsupported type {t}")


def tensor_value(
    proto: onnx.TensorProto, where: str, base_dir: str | None = None
) -> np.ndarray[Any, Any]:
    """A TensorProto's data as a read-only array of its tensorloop element type."""
    if proto.data_location == onnx.TensorProto.EXTERNAL:
        raise FormatError(
            f"{where}: tensor '{proto.name}' keeps its data in an external file; load the model "
            "from its path so the data can be found"
        )
    onnx_dtype(proto.data_type, f"{where}: tensor '{proto.name}'")
    if any(d < 0 for d in proto.dims):
        raise FormatError(
            f"{where}: tensor '{proto.name}' has dims {list(proto.dims)}; a tensor's dims are "
            "sizes >= 0"
        )
    try:
        arr = numpy_helper.to_array(proto, base_dir or "")
    except Exception as exc:
        raise FormatError(f"{where}: tensor '{proto.name}' cannot be read: {exc}") from None
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr


def _sparse_value(proto: onnx.SparseTensorProto, where: str) -> np.ndarray[Any, Any]:
    values = tensor_value(proto.values, where)
    indices = numpy_helper.to_array(proto.indices).astype(np.int64)
    dims = tuple(int(d) for d in proto.dims)
    dense = np.zeros(dims, dtype=values.dtype)
    flat = dense.reshape(-1)
    if indices.ndim == 2:  # [NNZ, rank] coordinates
        indices = np.ravel_multi_index(tuple(indices.T), dims) if indices.size else indices[:, 0]
    if indices.size and (indices.min() < 0 or indices.max() >= flat.size):
        raise FormatError(f"{where}: sparse tensor index out of range for shape {list(dims)}")
    flat[indices.reshape(-1)] = values.reshape(-1)
    dense.setflags(write=False)
    return dense


def value_info_type(vi: onnx.ValueInfoProto, where: str, required: bool = True) -> Type | None:
    if not vi.HasField("type"):
        if required:
            raise FormatError(f"{where}: no type is declared")
        return None
    return type_from_proto(vi.type, where)


def type_from_proto(tp: onnx.TypeProto, where: str) -> Type | None:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        tt = tp.tensor_type
        if tt.elem_type == 0:
            return None
        shape: list[Dim] | None = None
        if tt.HasField("shape"):
            shape = []
            for i, d in enumerate(tt.shape.dim):
                which = d.WhichOneof("value")
                if which == "dim_value" and d.dim_value < -1:
                    raise FormatError(
                        f"{where}: dim #{i} is {d.dim_value}, expected a size >= 0 "
                        "(or -1 or a name for a dynamic dim)"
                    )
                if which == "dim_value" and d.dim_value >= 0:
                    shape.append(int(d.dim_value))
                elif which == "dim_param" and d.dim_param:
                    # exporters write names like "Loopx.4_dim_0"; symbols are word characters
                    shape.append(re.sub(r"\W", "_", d.dim_param))
                else:
                    shape.append(UNKNOWN)
        return TensorType(onnx_dtype(tt.elem_type, where), shape)
    if kind == "sequence_type":
        elem = type_from_proto(tp.sequence_type.elem_type, where)
        return None if elem is None else SequenceType(elem)
    if kind == "optional_type":
        elem = type_from_proto(tp.optional_type.elem_type, where)
        return None if elem is None else OptionalType(elem)
    if kind is None:
        return None
    raise FormatError(f"{where}: {kind.replace('_', ' ')} values are not supported")


# -- Constant -------------------------------------------------------------------------------------
_CONSTANT_FORMS = {
    "value_float": np.float32,
    "value_floats": np.float32,
    "value_int": np.int64,
    "value_ints": np.int64,
    "value_string": object,
    "value_strings": object,
}


@converter("Constant", since=1)
def _constant(ctx: NodeContext) -> list[Value]:
    """Constant: exactly one of value, sparse_value or the value_* shorthands."""
    if len(ctx.attrs) != 1:
        raise ctx.error(
            f"expected exactly one value attribute, got {', '.join(sorted(ctx.attrs)) or 'none'}"
        )
    key, value = next(iter(ctx.attrs.items()))
    if key in ("value", "sparse_value"):
        data = np.asarray(value)
    elif key in _CONSTANT_FORMS:
        data = np.array(value, dtype=_CONSTANT_FORMS[key])
    else:
        raise ctx.error(f"unknown attribute '{key}'")
    return [ctx.const(data)]
