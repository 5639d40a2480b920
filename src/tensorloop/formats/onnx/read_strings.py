"""ONNX converters for the string ops: ai.onnx.ml LabelEncoder-1, with its one list of classes.

The other string ops, Cast, CastLike and the quantization ops keep their meaning across the
opsets tensorloop reads (newer ones only add types and attributes with backward-compatible
defaults), so they map to the same-named core ops; element-type attributes become DTypes on the
way in (``dtype_attrs`` in convert.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.graph import Value
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .convert import NodeContext, converter

ML_DOMAIN = "ai.onnx.ml"


@converter("LabelEncoder", since=1, domain=ML_DOMAIN)
def _label_encoder_1(ctx: NodeContext) -> Sequence[Value | None]:
    """Strings to their index in classes_strings (else default_int64), or int64 indices to
    the class at that index (else default_string)."""
    x = ctx.input(0)
    classes = tuple(ctx.attr("classes_strings", ()))
    indices = tuple(range(len(classes)))
    if not isinstance(x.type, TensorType) or x.type.dtype not in (DType.string, DType.int64):
        raise ctx.error(f"input #0: expected str or i64, got {x.type}")
    if x.type.dtype is DType.string:
        attrs = {
            "keys_strings": classes,
            "values_int64s": indices,
            "default_int64": ctx.attr("default_int64", -1),
        }
    else:
        attrs = {
            "keys_int64s": indices,
            "values_strings": classes,
            "default_string": ctx.attr("default_string", "_Unused"),
        }
    return [ctx.op1("LabelEncoder", [x], attrs)]


@converter("LabelEncoder", since=2, domain=ML_DOMAIN)
def _label_encoder(ctx: NodeContext) -> Sequence[Value | None]:
    return ctx.same_default()
