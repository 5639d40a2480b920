"""Reverse-mode differentiation of graphs: ``grad_graph`` (``tl.grad`` on a Model calls it).

The gradient graph is the model's graph with the backward pass appended: its outputs are the
model's outputs, then one ``<name>.grad`` per differentiated value. The rules live in
``rules_math.py``, ``rules_nn.py`` and ``rules_shape.py`` (one per op family) and
``control.py`` (Loop, If); ``core.py`` walks the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import GradientError
from ..ir.graph import Graph, Value
from ..passes import lower_sequences
from ..tensor.types import TensorType
from . import control, rules_math, rules_nn, rules_shape  # noqa: F401  (register the rules)
from .core import RULES, ZERO_GRADIENT, Builder, Options, backprop, differentiable

GRAD_SUFFIX = ".grad"


def grad_name(name: str) -> str:
    """The output name of the gradient with respect to ``name``."""
    return f"{name}{GRAD_SUFFIX}"


def _target(graph: Graph, name: str) -> list[Value]:
    """The values a gradient with respect to ``name`` sums over: a graph input, a variable
    (every read of it), or any other named value (an initializer's constant, say)."""
    reads = [
        node.outputs[0]
        for node in graph.nodes
        if node.op == "ReadVariable" and node.attrs.get("variable") == name
    ]
    if reads:
        return reads
    for v in graph.values():
        if v.name == name:
            if v.constant is not None and not v.uses and v not in graph.outputs:
                raise GradientError(
                    f"graph '{graph.name}': constant '{name}' is read by nothing (loading "
                    "folded it into other constants, or copied it into a loop body): load "
                    "the model with trainable=True to differentiate with respect to its "
                    "initializers"
                )
            return [v]
    for alias, real in graph.input_aliases.items():
        if alias == name:
            return _target(graph, real)
    known = ", ".join([v.name for v in graph.inputs] + list(graph.variables)) or "none"
    raise GradientError(
        f"graph '{graph.name}': no value named '{name}' to differentiate with respect to "
        f"(inputs and variables: {known})"
    )


def grad_graph(
    graph: Graph,
    of: str,
    wrt: Sequence[str],
    *,
    checkpoint: int | str | None = None,
    per_loop: Mapping[str, int | str | None] | None = None,
) -> Graph:
    """A copy of ``graph`` whose outputs are its own, then the gradient of the sum of output
    ``of`` with respect to each of ``wrt`` (``<name>.grad``, of the value's shape and dtype)."""
    g = graph.clone()
    if any(not isinstance(v.type, TensorType) for _, n in g.walk() for v in n.outputs):
        g = lower_sequences(g).graph  # sequences a loop grows become its stacked outputs
    loss = next((v for v in g.outputs if v.name == of), None)
    if loss is None:
        raise GradientError(
            f"graph '{graph.name}' has no output '{of}' (outputs: "
            f"{', '.join(v.name for v in g.outputs) or 'none'})"
        )
    if not differentiable(loss):
        raise GradientError(
            f"output '{of}' is typed {loss.type}: only a float output has a gradient"
        )
    targets = {name: _target(g, name) for name in wrt}
    for name, values in targets.items():
        bad = [v for v in values if not differentiable(v)]
        if bad:
            raise GradientError(
                f"'{name}' is typed {bad[0].type}: only float values have a gradient"
            )
    options = Options(checkpoint, dict(per_loop or {}))
    seed = Builder(g, options).ones_like(loss)
    flat = [v for values in targets.values() for v in values]
    cts = backprop(g, {loss: seed}, flat, options)
    b = Builder(g, options)
    outputs = list(g.outputs)
    k = 0
    for name, values in targets.items():
        total = None
        for ct in cts[k : k + len(values)]:
            total = b.add(total, ct)
        k += len(values)
        value = b.zeros_like(values[0]) if total is None else total
        if value.type != values[0].type:
            value = b.op("Reshape", [value, b.shape(values[0])], allowzero=1)
        if value in outputs or value.is_parameter or value.graph is not g:
            value = b.op("Identity", [value])  # one value, two results: each its own name
        outputs.append(g.result_named(value, grad_name(name)))
    g.outputs = outputs
    return g


__all__ = [
    "GRAD_SUFFIX",
    "RULES",
    "ZERO_GRADIENT",
    "GradientError",
    "Options",
    "grad_graph",
    "grad_name",
]
