"""Elementwise ops: broadcasting arithmetic, comparisons and logic, Where, Pow and unary maths."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.opdef import InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import TensorType, Type
from .common import broadcast_dims, elementwise, expect

Rule = Callable[[InferContext], list[Type]]

# name: (inputs, element kind every input must have, result is bool, meaning)
_TABLE: dict[str, tuple[int | tuple[int, None], str, bool, str]] = {
    "Add": (2, "numeric", False, "a + b, broadcast NumPy-style."),
    "Sub": (2, "numeric", False, "a - b, broadcast NumPy-style."),
    "Mul": (2, "numeric", False, "a * b, broadcast NumPy-style."),
    "Div": (2, "numeric", False, "a / b; integer division truncates toward zero, 0 divisors fail."),
    "Min": ((1, None), "numeric", False, "Least of all inputs (NaN wins), broadcast."),
    "Max": ((1, None), "numeric", False, "Greatest of all inputs (NaN wins), broadcast."),
    "Equal": (2, "any", True, "a == b as bool, broadcast."),
    "Less": (2, "numeric", True, "a < b as bool, broadcast."),
    "Greater": (2, "numeric", True, "a > b as bool, broadcast."),
    "LessOrEqual": (2, "numeric", True, "a <= b as bool, broadcast."),
    "GreaterOrEqual": (2, "numeric", True, "a >= b as bool, broadcast."),
    "And": (2, "bool", True, "Logical a and b, broadcast."),
    "Or": (2, "bool", True, "Logical a or b, broadcast."),
    "Xor": (2, "bool", True, "Logical a xor b, broadcast."),
    "Not": (1, "bool", True, "Logical not x."),
    "Neg": (1, "signed", False, "-x (integers wrap: -INT_MIN is INT_MIN)."),
    "Abs": (1, "numeric", False, "|x| (integers wrap: |INT_MIN| is INT_MIN)."),
    "Relu": (1, "signed", False, "max(x, 0)."),
    "Sqrt": (1, "float", False, "Square root; NaN below 0."),
    "Exp": (1, "float", False, "e ** x."),
    "Log": (1, "float", False, "Natural logarithm; -inf at 0, NaN below 0."),
    "Sigmoid": (1, "float", False, "1 / (1 + exp(-x))."),
    "Tanh": (1, "float", False, "Hyperbolic tangent."),
}


def _broadcasting(kind: str, to_bool: bool, doc: str) -> Rule:
    def rule(ctx: InferContext) -> list[Type]:
        for i in range(len(ctx)):
            expect(ctx, i, kind)
        return elementwise(ctx, result_dtype=DType.bool if to_bool else None)

    rule.__doc__ = doc
    return rule


for _name, (_inputs, _kind, _to_bool, _doc) in _TABLE.items():
    op(_name, inputs=_inputs)(_broadcasting(_kind, _to_bool, _doc))


@op("Pow", inputs=2)
def _pow(ctx: InferContext) -> list[Type]:
    """x ** y with x's element type (y's may differ); an integer 0 to a negative power fails."""
    x, y = expect(ctx, 0, "numeric"), expect(ctx, 1, "numeric")
    return [TensorType(x.dtype, broadcast_dims(ctx, [x.shape, y.shape]))]


@op("Where", inputs=3)
def _where(ctx: InferContext) -> list[Type]:
    """x where cond holds, else y; all three broadcast together."""
    shapes = [expect(ctx, 0, "bool").shape, ctx.tensor(1).shape, ctx.tensor(2).shape]
    return [TensorType(ctx.same_dtype(1, 2), broadcast_dims(ctx, shapes))]
