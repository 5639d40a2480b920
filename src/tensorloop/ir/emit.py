"""Emitter: a terse way for frontends and passes to add typed nodes to a graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import GraphError
from ..tensor.dtypes import DTypeLike, dtype
from .graph import Graph, Node, Value


class Emitter:
    """Adds nodes to ``graph`` (appended, or before ``anchor``), typing them as they are made."""

    def __init__(self, graph: Graph, anchor: Node | None = None, prefix: str = "") -> None:
        self.graph = graph
        self.anchor = anchor
        self.prefix = prefix

    def node(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
        output_names: Sequence[str] | None = None,
    ) -> Node:
        return self.graph.add_node(
            op,
            inputs,
            attrs,
            name=name or self.prefix,
            output_names=output_names,
            before=self.anchor,
        )

    def ops(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
        output_names: Sequence[str] | None = None,
    ) -> list[Value]:
        return self.node(op, inputs, attrs, name, output_names).outputs

    def op(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
        output_name: str = "",
    ) -> Value:
        outs = self.ops(op, inputs, attrs, name, [output_name] if output_name else None)
        if len(outs) != 1:
            raise GraphError(f"{op}: expected one output, got {len(outs)}")
        return outs[0]

    def const(self, value: Any, dtype_: DTypeLike | None = None, name: str = "") -> Value:
        data = np.asarray(value, dtype=None if dtype_ is None else dtype(dtype_).numpy)
        data = np.array(data, copy=True)
        data.setflags(write=False)
        return self.op("Constant", [], {"value": data}, output_name=name)

    def ints(self, values: Sequence[int] | int) -> Value:
        """An int64 constant: a vector for a sequence, a scalar for an int."""
        return self.const(np.asarray(values, dtype=np.int64))
