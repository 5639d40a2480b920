"""Shared checks for the text IR tests: structural graph equality, round-trips, small graphs."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from tensorloop.ir.graph import Graph, Node, Value
from tensorloop.ir.loop import Sliced, Stacked
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import TensorType, Type

F32 = TensorType(DType.float32, [3])
I64 = TensorType(DType.int64, [])
BOOL = TensorType(DType.bool, [])


# -- structural equality -----------------------------------------------------------------------
def assert_same_attr(a: Any, b: Any) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray) and a.dtype == object:  # strings: bytes would be pointers
        assert (a.dtype, a.shape, a.tolist()) == (b.dtype, b.shape, b.tolist())
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    elif isinstance(a, Graph):
        assert_same_graph(a, b)
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_attr(x, y)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b)
    else:
        assert a == b


def assert_same_graph(a: Graph, b: Graph) -> None:
    """Same name, parameters, variables, nodes (ops, attrs, names, types, wiring) and results."""
    assert a.name == b.name
    index_a = {v: i for i, v in enumerate(a.values())}
    index_b = {v: i for i, v in enumerate(b.values())}

    def sig(values: list[Value], index: dict[Value, int]) -> list[tuple[str, Type, int]]:
        return [(v.name, v.type, index[v]) for v in values]

    def wires(values: list[Value | None], index: dict[Value, int]) -> list[int | None]:
        return [None if v is None else index[v] for v in values]

    assert sig(a.inputs, index_a) == sig(b.inputs, index_b)
    assert list(a.variables) == list(b.variables)
    for va, vb in zip(a.variables.values(), b.variables.values(), strict=True):
        assert va.trainable == vb.trainable
        assert_same_attr(va.initial, vb.initial)
    assert len(a.nodes) == len(b.nodes)
    for na, nb in zip(a.nodes, b.nodes, strict=True):
        assert (na.op, na.name, sorted(na.attrs)) == (nb.op, nb.name, sorted(nb.attrs))
        for key in na.attrs:
            assert_same_attr(na.attrs[key], nb.attrs[key])
        assert wires(na.inputs, index_a) == wires(nb.inputs, index_b)
        assert sig(na.outputs, index_a) == sig(nb.outputs, index_b)
    assert sig(a.outputs, index_a) == sig(b.outputs, index_b)


def roundtrip(graph: Graph) -> Graph:
    text = print_graph(graph)
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    assert_same_graph(graph, parsed)
    return parsed


def const(graph: Graph, value: Any, name: str = "c") -> Value:
    array = np.asarray(value)
    node = Node(
        "Constant",
        [],
        [TensorType(array.dtype, array.shape)],
        {"value": array},
        output_names=[name],
    )
    return graph.append(node).output


def loop_graph(depth: int, name: str = "main", *, body: bool = False) -> Graph:
    """A scan whose body is itself a scan, ``depth`` loops deep."""
    g = Graph(name)
    if body:
        g.add_input("i", I64)
    acc = g.add_input("acc", F32)
    xs = g.add_input("xs", TensorType(DType.float32, ["T"] * depth + [3]))
    results = [const(g, True, "cond")] if body else []
    if depth == 0:
        total = g.append(Node("Add", [acc, xs], [F32], output_names=["sum"])).output
        g.outputs = [*results, total, total]
        return g
    attrs = {
        "body": loop_graph(depth - 1, f"body{depth}", body=True),
        "num_carried": 1,
        "sliced": (Sliced(),),
        "stacked": (Stacked(),),
    }
    loop = Node(
        "Loop",
        [None, None, acc, xs],
        [F32, xs.type],
        attrs,
        name=f"loop{depth}",
        output_names=["total", "partial"],
    )
    g.outputs = [*results, *g.append(loop).outputs]
    return g


SPECIAL_FLOATS = [0.1, 1 / 3, -0.0, 0.0, math.nan, math.inf, -math.inf, 1e-40, 65504.0, 3e38, -2.5]
