"""ONNX converters: DFT before opset 20, and the preview-domain FlexAttention with its subgraphs."""

from __future__ import annotations

from ...ir.graph import Value
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, Dim, TensorType
from .convert import NodeContext, converter, onnx_dtype

PREVIEW_DOMAIN = "ai.onnx.preview"


@converter("DFT", since=17, until=20)
def _dft_17(ctx: NodeContext) -> list[Value]:
    """DFT-17: ``axis`` was an attribute (default 1), not the third input (default -2)."""
    attrs = {k: v for k, v in ctx.attrs.items() if k != "axis"}
    length = ctx.inputs[1] if ctx.has(1) else None
    axis = ctx.ints(int(ctx.attr("axis", 1)))
    return [ctx.op1("DFT", [ctx.input(0, "input"), length, axis], attrs)]


@converter("FlexAttention", domain=PREVIEW_DOMAIN)
def _flex_attention(ctx: NodeContext) -> list[Value]:
    """FlexAttention-1: score_mod/prob_mod become closed graphs over [B, Hq, L, S] scores in
    the softmax precision; values they read from outside become trailing inputs."""
    q, k, v = (ctx.input(i, name) for i, name in enumerate(("Q", "K", "V")))
    attrs = {k: v for k, v in ctx.attrs.items() if k not in ("score_mod", "prob_mod")}
    precision = ctx.attr("softmax_precision", None)
    if precision is not None:
        precision = attrs["softmax_precision"] = onnx_dtype(
            precision, f"{ctx.where}: attribute 'softmax_precision'"
        )
    qt, kt = q.tensor_type, k.tensor_type
    if precision is None:
        precision = DType.float64 if qt.dtype is DType.float64 else DType.float32
    dims: list[Dim] = [UNKNOWN] * 4
    if qt.shape is not None and len(qt.shape) == 4:
        dims[:3] = qt.shape[:3]
    if kt.shape is not None and len(kt.shape) == 4:
        dims[3] = kt.shape[2]
    scores = TensorType(precision, dims)
    captured: list[Value] = []
    for key in ("score_mod", "prob_mod"):
        if key in ctx.attrs:
            attrs[key], outer = ctx.subgraph(key, [scores])
            captured += outer
            if key == "score_mod":
                attrs["score_mod_captures"] = len(outer)
    return [ctx.op1("FlexAttention", [q, k, v, *captured], attrs)]
