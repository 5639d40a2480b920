"""What a converter works with: NodeContext, the ConversionScope it runs in, the model Source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import onnx

from ...errors import FormatError
from ...ir.emit import Emitter
from ...ir.graph import Graph, Value
from ...tensor.types import Type

_MISSING: Any = object()


@dataclass
class Source:
    """Where the model came from, for error messages and external data."""

    label: str
    base_dir: str | None
    opsets: dict[str, int]
    external_cache: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    trainable: bool = False
    """The main graph's float initializers become trainable variables (``tl.load(...,
    trainable=True)``): read at run time, so nothing folds them into other constants or copies
    them into loop bodies, and gradients and training see them by their names."""


class ConversionScope(Protocol):
    """The ONNX graph a node is converted in, as a NodeContext sees it (``reader.Scope``)."""

    @property
    def source(self) -> Source:
        """The model being read."""
        ...

    @property
    def path(self) -> str:
        """Where the graph sits in the model, for messages (``main/<node>.body``)."""
        ...

    def lookup(self, name: str, where: str) -> Value:
        """The value named ``name``; one from an enclosing graph becomes a captured input."""
        ...

    def nested(self, graph: Graph, label: str) -> ConversionScope:
        """A scope for ``graph``, built inside this one (``path/label``), capturing from it."""
        ...

    @property
    def captured(self) -> list[Value]:
        """The outer values this scope's graph captured, in parameter order."""
        ...

    def convert_subgraph(
        self,
        proto: onnx.GraphProto,
        ctx: NodeContext,
        key: str,
        param_types: Sequence[Type | None] | None,
    ) -> tuple[Graph, list[Value]]:
        """A graph attribute as a closed Graph plus the outer values its extra parameters take."""
        ...


@dataclass
class NodeContext:
    """What a converter sees: the node, its opset, its inputs as Values, and an emitter."""

    node: onnx.NodeProto
    opset: int
    inputs: list[Value | None]
    attrs: dict[str, Any]
    em: Emitter
    scope: ConversionScope
    where: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def num_outputs(self) -> int:
        """How many outputs the node lists (trailing optional ones may be left off)."""
        return len(self.node.output)

    def wants(self, index: int) -> bool:
        """True if the node names output ``index`` (an optional output it may skip)."""
        return index < len(self.node.output) and bool(self.node.output[index])

    def error(self, message: str) -> FormatError:
        return FormatError(f"{self.where}: {message}")

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input(self, index: int, what: str = "") -> Value:
        """Input ``index``; a clear error when the node leaves it out."""
        if not self.has(index):
            label = f" ({what})" if what else ""
            raise self.error(f"input #{index}{label} is required")
        v = self.inputs[index]
        assert v is not None
        return v

    def const_input(self, index: int, what: str = "") -> np.ndarray[Any, Any]:
        """The value of input ``index``, which must be a constant (initializer or Constant)."""
        data = self.input(index, what).constant
        if data is None:
            label = f" ({what})" if what else ""
            raise self.error(f"input #{index}{label} must be a constant")
        return data

    def attr(self, key: str, default: Any = _MISSING) -> Any:
        if key in self.attrs:
            return self.attrs[key]
        if default is _MISSING:
            raise self.error(f"missing required attribute '{key}'")
        return default

    def op(
        self,
        op_type: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        num_outputs: int = 1,
    ) -> list[Value]:
        """Add core op ``op_type``; returns its outputs."""
        outs = self.em.ops(op_type, list(inputs), dict(attrs or {}))
        if len(outs) != num_outputs:
            raise self.error(f"core op {op_type} gave {len(outs)} outputs, expected {num_outputs}")
        return outs

    def op1(
        self, op_type: str, inputs: Sequence[Value | None], attrs: Mapping[str, Any] | None = None
    ) -> Value:
        return self.op(op_type, inputs, attrs)[0]

    def const(self, value: Any, dtype_: Any = None) -> Value:
        return self.em.const(value, dtype_)

    def ints(self, values: Sequence[int] | int) -> Value:
        return self.em.ints(values)

    def subgraph(
        self, key: str, param_types: Sequence[Type | None] | None = None
    ) -> tuple[Graph, list[Value]]:
        """Convert graph attribute ``key`` into a closed Graph.

        ``param_types`` overrides the types of the subgraph's formal inputs (None keeps the
        declared one). Values the subgraph reads from enclosing scopes become extra trailing
        parameters; the outer Values to pass for them are returned beside the graph.
        """
        proto = self.attr(key)
        if not isinstance(proto, onnx.GraphProto):
            raise self.error(f"attribute '{key}' must be a graph")
        return self.scope.convert_subgraph(proto, self, key, param_types)

    def same_default(self) -> list[Value]:
        """The node as the same-named core op with its attributes (what no converter means).

        The core op makes all its outputs; the node may name fewer (trailing optional ones).
        """
        outs = self.em.ops(self.op_type, list(self.inputs), dict(self.attrs))
        if len(outs) < self.num_outputs:
            raise self.error(
                f"core op {self.op_type} gave {len(outs)} outputs, the node names "
                f"{self.num_outputs}"
            )
        return outs
