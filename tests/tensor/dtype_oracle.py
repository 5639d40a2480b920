"""Shared helpers for the dtype, Cast, quantization and string op tests: one node in onnxruntime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from onnx_oracle import one_node, ort_run
from tensorloop.formats.onnx.convert import ONNX_DTYPES
from tensorloop.reference.kernels.quant import convert
from tensorloop.tensor.dtypes import DType, dtype, string_array

D = DType
ELEM = {v: k for k, v in ONNX_DTYPES.items()}
F8 = (D.float8e4m3fn, D.float8e4m3fnuz, D.float8e5m2, D.float8e5m2fnuz)
# Types onnxruntime's Python API takes and returns; the rest travel as constants and float32.
ORT_IO = {D.bool, D.string, D.float16, D.float32, D.float64} | {
    d for d in D if d.is_int and d.bits >= 8
}
Array = np.ndarray[Any, Any]


def strings(*items: str) -> Array:
    return string_array(items)


# -- running one node in onnxruntime ---------------------------------------------------------
class NotInOrtError(Exception):
    """onnxruntime has no kernel for this op and type."""


def ort_node(
    op: str,
    inputs: Sequence[Array | None],
    attrs: dict[str, Any],
    out_types: Sequence[DType],
    opset: int = 25,
    domain: str = "",
) -> list[Array]:
    """One ONNX node run by onnxruntime. Inputs of types its Python API lacks are initializers;
    such outputs come back cast to float32 (exact for all of them)."""
    consts = [i for i, x in enumerate(inputs) if x is not None and dtype(x.dtype) not in ORT_IO]
    model = one_node(
        op,
        inputs,
        attrs,
        opset=opset,
        outputs=len(out_types),
        domain=domain,
        domain_opset=4,
        consts=consts,
        ir_version=11,
    )
    graph = model.graph
    del graph.output[:]
    for i, t in enumerate(out_types):
        name = f"y{i}"
        if t not in ORT_IO:
            graph.node.append(helper.make_node("Cast", [name], [name + "f"], to=TensorProto.FLOAT))
            name, t = name + "f", D.float32
        graph.output.append(helper.make_tensor_value_info(name, ELEM[t], None))
    try:
        return ort_run(model, inputs, optimize=False)
    except Exception as exc:
        if "NOT_IMPLEMENTED" in str(exc):
            raise NotInOrtError(str(exc)) from None
        raise


def as_ort(x: Array) -> Array:
    """What onnxruntime gives back for ``x``: types its Python API lacks as float32."""
    return x if dtype(x.dtype) in ORT_IO else convert(x, D.float32)


def assert_same(got: Array, want: Array, what: str = "") -> None:
    """Equal values, NaN matching NaN and the sign of zero counting."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype == object or want.dtype == object:
        assert got.tolist() == want.tolist(), what
        return
    if dtype(got.dtype).is_float:
        a, b = got.astype(np.float64), want.astype(np.float64)
        ok = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
        assert ok.all(), f"{what}\n got  {a.tolist()}\n want {b.tolist()}"
        return
    assert got.dtype == want.dtype and np.array_equal(got, want), f"{what}\n{got}\n{want}"
