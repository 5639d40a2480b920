"""Helpers for the Loop semantics tests: hand-built Loop IR (Graph/add_node) and running it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked, TensorType, Value
from tensorloop.tensor.dtypes import DType

F32, F64, I64, BOOL = "float32", "float64", "int64", "bool"


# --------------------------------------------------------------------------------------------
# helpers for hand-built IR
# --------------------------------------------------------------------------------------------


def T(dtype: str, *shape: int | str) -> TensorType:
    return TensorType(dtype, shape)


def const(g: Graph, value: Any, dtype: str | None = None, name: str = "") -> Value:
    data = np.asarray(value, dtype=dtype)
    return g.add_node("Constant", [], {"value": data}, output_names=[name or "c"]).output


def op(g: Graph, name: str, *inputs: Value | None, out: str = "", **attrs: Any) -> Value:
    return g.add_node(name, list(inputs), attrs, output_names=[out] if out else None).output


def loop(
    g: Graph,
    body: Graph,
    *,
    trip: Value | None = None,
    cond: Value | None = None,
    carried: Sequence[Value] = (),
    sources: Sequence[Value] = (),
    sliced: Sequence[Sliced] = (),
    invariants: Sequence[Value] = (),
    stacked: Sequence[Stacked] = (),
    name: str = "",
) -> list[Value]:
    node = g.add_node(
        "Loop",
        [trip, cond, *carried, *sources, *invariants],
        {
            "body": body,
            "num_carried": len(carried),
            "sliced": tuple(sliced),
            "stacked": tuple(stacked),
        },
        name=name,
    )
    return node.outputs


def run(g: Graph, inputs: Any = (), **kw: Any) -> list[Any]:
    """Run ``g`` (verified by Model) and return its outputs in order."""
    model = tl.Model(g, **kw)
    res = model.run(inputs)
    return [res[n] for n in model.output_names]


def body_graph(name: str, *params: tuple[str, TensorType]) -> tuple[Graph, list[Value]]:
    b = Graph(name)
    return b, [b.add_input(n, t) for n, t in params]


def true_(g: Graph) -> Value:
    return const(g, True, BOOL, "true")


def as_f64(g: Graph, v: Value) -> Value:
    return op(g, "Cast", v, to=DType.float64)


def loop_nodes(graph: Graph) -> list[Any]:
    return [n for _, n in graph.walk() if n.op == "Loop"]
