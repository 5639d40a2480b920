"""One-node harness for the core op tests: build an op's graph, infer its types, run its kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import settings

from tensorloop.ir.graph import Graph, Node
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.dtypes import dtype
from tensorloop.tensor.types import TensorType, tensor_type_of

FAST = settings(max_examples=60, deadline=None)
T = TensorType
I64_MAX = 2**63 - 1


class C:
    """An input fed by a Constant node, so that type rules can read its value."""

    def __init__(self, value: Any, dtype_: Any = np.int64) -> None:
        self.value = np.asarray(value, dtype_)


def dyn(x: np.ndarray) -> tuple[TensorType, np.ndarray]:
    """An array fed through a parameter of unknown dims, so only the kernel sees its shape."""
    return T(x.dtype, ["?"] * x.ndim), x


Input = np.ndarray | TensorType | C | tuple[TensorType, np.ndarray] | None


def build(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> Node:
    """A graph holding one ``op`` node; arrays and types become parameters, C values constants."""
    g = Graph()
    values = []
    for i, x in enumerate(inputs):
        if x is None:
            values.append(None)
        elif isinstance(x, C):
            values.append(g.add_node("Constant", [], {"value": x.value}).output)
        elif isinstance(x, tuple):
            values.append(g.add_input(f"x{i}", x[0]))
        else:
            values.append(
                g.add_input(f"x{i}", x if isinstance(x, TensorType) else tensor_type_of(x))
            )
    node = g.add_node(op, values, attrs or {})
    g.set_outputs(node.outputs)
    return node


def run(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
    """Run one ``op`` node; every output must fit the type its rule inferred."""
    node = build(op, inputs, attrs)
    assert node.graph is not None
    args = [
        x[1] if isinstance(x, tuple) else x for x in inputs if isinstance(x, np.ndarray | tuple)
    ]
    outs = Interpreter().run(node.graph, args)
    for value, out in zip(node.outputs, outs, strict=True):
        assert isinstance(value.type, TensorType) and value.type.accepts(out), (value.type, out)
    return outs


def run1(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> np.ndarray:
    (out,) = run(op, inputs, attrs)
    return out


def infer(op: str, inputs: Sequence[Input], attrs: dict[str, Any] | None = None) -> list[str]:
    return [str(v.type) for v in build(op, inputs, attrs).outputs]


def floating(dt: Any) -> bool:
    return dtype(dt).is_float


def rand(shape: Sequence[int], dt: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    npd = dtype(dt).numpy
    if floating(npd):
        return rng.normal(0, 3, shape).astype(npd)
    if npd.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0 if npd.kind == "u" else -9, 10, shape).astype(npd)


def close(got: np.ndarray, want: np.ndarray, dt: Any = None) -> None:
    """Equal dtype and shape, values equal up to the precision of the element type."""
    want = np.asarray(want).astype(got.dtype if dt is None else dtype(dt).numpy)
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol = {"f16": 2e-3, "bf16": 1e-2, "f32": 2e-6, "f64": 1e-12}.get(dtype(got.dtype).short, 0)
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol
    )


NUMERIC = ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8"]
PAIRS = [((2, 3), (3,)), ((1, 3), (2, 1)), ((0, 3), (1, 3)), ((), (4,))]
