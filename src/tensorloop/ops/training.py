"""Training ops (ONNX ai.onnx.preview.training): the Adagrad, Adam and Momentum optimizer steps."""

from __future__ import annotations

from collections.abc import Mapping

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import TensorType, Type
from .common import expect

MOMENTUM_MODES = ("standard", "nesterov")

# name: (input kinds per optimized tensor, output kinds, attributes, meaning)
OPTIMIZERS: dict[str, tuple[str, str, Mapping[str, AttrSpec], str]] = {
    "Adagrad": (
        "XGH",
        "XH",
        {
            "decay_factor": AttrSpec((float, int), 0.0),
            "epsilon": AttrSpec((float, int), 1e-6),
            "norm_coefficient": AttrSpec((float, int), 0.0),
        },
        """
        r = R / (1 + T * decay_factor)
        g = norm_coefficient * X + G
        H_new = H + g * g
        X_new = X - r * g / (sqrt(H_new) + epsilon)
        """,
    ),
    "Adam": (
        "XGVH",
        "XVH",
        {
            "alpha": AttrSpec((float, int), 0.9),
            "beta": AttrSpec((float, int), 0.999),
            "epsilon": AttrSpec((float, int), 1e-6),
            "norm_coefficient": AttrSpec((float, int), 0.0),
            "norm_coefficient_post": AttrSpec((float, int), 0.0),
        },
        """
        g = norm_coefficient * X + G
        V_new = alpha * V + (1 - alpha) * g
        H_new = beta * H + (1 - beta) * g * g
        r = R * sqrt(1 - beta**T) / (1 - alpha**T) if T > 0 else R
        X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon))
        """,
    ),
    "Momentum": (
        "XGV",
        "XV",
        {
            "alpha": AttrSpec((float, int)),
            "beta": AttrSpec((float, int)),
            "mode": AttrSpec(str),
            "norm_coefficient": AttrSpec((float, int)),
        },
        """
        g = norm_coefficient * X + G
        V_new = alpha * V + (beta if T > 0 else 1) * g
        X_new = X - R * V_new                 # mode "standard"
        X_new = X - R * (g + alpha * V_new)   # mode "nesterov"
        """,
    ),
}


def _optimizer_rule(name: str) -> None:
    kinds, outs, attrs, meaning = OPTIMIZERS[name]

    def rule(ctx: InferContext) -> list[Type]:
        expect(ctx, 0, "float", rank=0)
        step = expect(ctx, 1, "int", rank=0)
        if step.dtype is not DType.int64:
            raise ctx.error(f"input #1 (T): expected an i64 scalar, got {step}")
        if name == "Momentum" and ctx.attr("mode") not in MOMENTUM_MODES:
            raise ctx.error(f"mode: expected one of {MOMENTUM_MODES}, got {ctx.attr('mode')!r}")
        groups = len(ctx) - 2
        if groups == 0 or groups % len(kinds):
            raise ctx.error(
                f"expected R, T and {len(kinds)} inputs ({', '.join(kinds)}) per optimized "
                f"tensor, got {groups} after R and T"
            )
        n = groups // len(kinds)
        types: dict[str, list[TensorType]] = {}
        for k, kind in enumerate(kinds):
            types[kind] = [expect(ctx, 2 + k * n + i, "float") for i in range(n)]
        for i in range(n):
            ctx.same_dtype(0, *(2 + k * n + i for k in range(len(kinds))))
            if not all(types[kinds[0]][i].compatible(types[kind][i]) for kind in kinds):
                raise ctx.error(
                    f"tensor #{i}: {', '.join(kinds)} must share one shape, got "
                    + ", ".join(str(types[kind][i]) for kind in kinds)
                )
        return [t for kind in outs for t in types[kind]]

    rule.__doc__ = (
        f"One {name} step (ONNX ai.onnx.preview.training {name}-1) on n tensors.\n\n"
        f"Inputs ``(R, T, {', '.join(k + '_1..n' for k in kinds)})``, outputs "
        f"``({', '.join(k + '_new_1..n' for k in outs)})``; for each tensor::\n" + meaning.rstrip()
    )
    op(name, inputs=(3, None), attrs=attrs)(rule)


for _name in OPTIMIZERS:
    _optimizer_rule(_name)
