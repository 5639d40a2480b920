"""A training step as one stateful model: forward, backward and the optimizer's update in a
graph whose weights and optimizer state are persistent variables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..autodiff import grad_graph, grad_name
from ..autodiff.core import copy_into
from ..builder.tracing import Tensor, TraceBody
from ..errors import GraphError
from ..ir.graph import Graph, Node, Value
from ..model import Model, Session
from ..tensor.types import TensorType
from .optim import COUNT, Optimizer, apply_updates


def _frozen(data: Any) -> np.ndarray[Any, Any]:
    array = np.array(data, copy=True)
    array.setflags(write=False)
    return array


def _is_float_constant(value: Value) -> bool:
    t = value.type
    return value.constant is not None and isinstance(t, TensorType) and t.dtype.is_float


def _default_weights(graph: Graph) -> list[str]:
    """Every top-level float Constant of more than one element."""
    return [
        n.output.name
        for n in graph.nodes
        if n.op == "Constant" and _is_float_constant(n.output) and n.attrs["value"].size > 1
    ]


def _weight(graph: Graph, name: str) -> Node:
    """The top-level float Constant named ``name``, or a GraphError saying why there is none."""
    where = f"model '{graph.name}'"
    value = graph.holder(name)
    if value is None:
        known = ", ".join(v.name for v in graph.values() if _is_float_constant(v)) or "none"
        raise GraphError(
            f"{where}: no top-level constant or variable named '{name}' (float constants: {known})"
        )
    if value.producer is None:
        raise GraphError(f"{where}: '{name}' is an input of the model, not a weight")
    if value.producer.op != "Constant":
        raise GraphError(f"{where}: '{name}' is computed by {value.producer.op}, not a constant")
    if not _is_float_constant(value):
        raise GraphError(
            f"{where}: constant '{name}' is typed {value.type}: only float constants can be trained"
        )
    return value.producer


def _to_variable(graph: Graph, node: Node) -> None:
    """Make the Constant ``node`` a trainable variable of its value's name, read in its place."""
    value = node.output
    var = graph.add_variable(value.name, node.attrs["value"], trainable=True)
    read = Node("ReadVariable", [], [var.type], {"variable": var.name, "type": var.type})
    graph.insert_before(node, read)
    graph.replace(value, read.output)
    graph.erase(node)


def weights_as_variables(model: Model, names: Sequence[str] | None = None) -> Model:
    """A copy of ``model`` whose weights, top-level float constants, are trainable persistent
    variables, each named as the constant's value and read where the constant was. ``names``
    chooses them (a name that is already a variable of the model stays one); by default every
    top-level float constant of more than one element. A name that is no such constant is a
    ``GraphError`` naming it."""
    graph = model.graph.clone()
    chosen = _default_weights(graph) if names is None else list(dict.fromkeys(names))
    nodes = [_weight(graph, name) for name in chosen if name not in graph.variables]
    for node in nodes:
        _to_variable(graph, node)
    return Model(graph, backend=model.backend, limits=model.limits)


def _read(graph: Graph, name: str) -> Value:
    """A new read of the variable ``name``."""
    var = graph.variables[name]
    node = graph.add_node(
        "ReadVariable", [], {"variable": name, "type": var.type}, output_names=[name]
    )
    return node.output


def _state_variable(graph: Graph, name: str, initial: np.ndarray[Any, Any]) -> Value:
    """A new non-trainable variable ``name`` holding ``initial``, read once."""
    if name in graph.variables:
        raise GraphError(
            f"model '{graph.name}': the optimizer's state '{name}' would replace a variable"
        )
    graph.add_variable(name, initial)
    return _read(graph, name)


def _param_names(model: Model, params: Sequence[str] | None) -> list[str]:
    graph = model.graph
    assigned = {n.attrs["variable"] for _, n in graph.walk() if n.op == "Assign"}
    if params is None:
        trainable = [v.name for v in graph.variables.values() if v.trainable]
        names = [n for n in trainable if n not in assigned] or _default_weights(graph)
    else:
        names = list(params)
    where = f"model '{graph.name}'"
    if not names:
        raise GraphError(f"{where}: nothing to train (no trainable variable or float constant)")
    twice = sorted({repr(n) for n in names if names.count(n) > 1})
    if twice:
        raise GraphError(f"{where}: parameter(s) {', '.join(twice)} listed twice")
    for name in names:
        if name in assigned:
            raise GraphError(
                f"{where}: variable '{name}' is assigned by the model itself, so it cannot be "
                "trained"
            )
    return names


def _build_update(
    graph: Graph,
    optimizer: Optimizer,
    params: Mapping[str, Value],
    grads: Mapping[str, Value],
    state: Mapping[str, Value],
) -> tuple[dict[str, Value], dict[str, Value]]:
    """The optimizer's update, traced from its rule with builder tensors and appended to
    ``graph``: the new parameters and the new state."""
    operands: list[Value] = []
    with TraceBody("update") as frame:

        def operand(value: Value) -> Tensor:
            operands.append(value)
            return Tensor(frame.graph.add_input(value.name, value.type))

        p = {k: operand(v) for k, v in params.items()}
        g = {k: operand(v) for k, v in grads.items()}
        s = {k: operand(v) for k, v in state.items()}
        updates, new_state = optimizer.transform(g, s, p)
        new_params = apply_updates(p, updates)
    mapping = copy_into(graph, frame.graph, operands)
    return (
        {k: mapping[t.value] for k, t in new_params.items()},
        {k: mapping[t.value] for k, t in new_state.items()},
    )


class TrainStep:
    """A model's training step: ``step(batch)`` runs ``model`` (forward, gradient, update and
    the assignments of the new weights and optimizer state) once in ``session``, whose
    persistent variables hold the weights and the state from step to step."""

    def __init__(
        self, source: Model, model: Model, loss: str, params: list[str], optimizer: Optimizer
    ) -> None:
        self.source = source
        """The model as given, its weights untrained."""
        self.model = model
        self.loss = loss
        self.names = params
        self.optimizer = optimizer
        self.session = Session(model)

    def step(self, batch: Mapping[str, Any] | Sequence[Any] = ()) -> float:
        """One optimisation step on ``batch`` (the model's inputs, by name or in order); returns
        the loss (summed, if it has several elements) computed before the update."""
        loss = np.asarray(self.session.run(batch)[self.loss])
        return float(loss.sum(dtype=np.float64))

    def params(self) -> dict[str, np.ndarray[Any, Any]]:
        """The current weights."""
        return {n: np.array(self.session.state[n]) for n in self.names}

    def state(self) -> dict[str, np.ndarray[Any, Any]]:
        """The optimizer's current state, keyed as ``optimizer.init`` keys it."""
        keys = [*self.optimizer.state_keys(self.names), COUNT]
        return {k: np.array(self.session.state[k]) for k in keys}

    def reset(self) -> None:
        """Back to the untrained weights and the optimizer's initial state."""
        self.session.reset()

    def trained_model(self) -> Model:
        """The given model with the current weights as Constants under their names (a weight
        that was a variable is one no more), ready for ``tl.save``."""
        return with_weights(self.source, self.params())


def with_weights(model: Model, values: Mapping[str, Any]) -> Model:
    """A copy of ``model`` whose weights ``values`` (by name: its variables, read where they
    were, or its top-level float constants) are constants holding those values, and no
    variables any more: what ``tl.save`` writes for onnxruntime and OpenVINO."""
    graph = model.graph.clone()
    for name, value in values.items():
        data = _frozen(value)
        if name not in graph.variables:
            node = _weight(graph, name)
            node.attrs["value"] = data
            continue
        del graph.variables[name]
        reads = [n for n in graph.nodes if n.op == "ReadVariable"]
        for read in [n for n in reads if n.attrs["variable"] == name]:
            const = Node("Constant", [], [read.output.type], {"value": data})
            graph.insert_before(read, const)
            graph.replace(read.output, const.output)
            graph.erase(read)
    return Model(graph, backend=model.backend, limits=model.limits)


def train_step(
    model: Model,
    *,
    loss: str,
    params: Sequence[str] | None = None,
    optimizer: Optimizer,
    checkpoint: int | str | None = None,
    per_loop: Mapping[str, int | str | None] | None = None,
) -> TrainStep:
    """The training step of ``model``: the gradient of output ``loss`` (summed) with respect to
    ``params`` and ``optimizer``'s update of them, in one stateful model.

    ``params`` names weights: the model's variables, or top-level float constants, made
    variables (``weights_as_variables``). By default: the model's trainable variables that it
    does not assign itself, or, if it has none, its top-level float constants of more than one
    element. ``checkpoint`` and ``per_loop`` choose how loops are differentiated (see
    ``Model.grad``)."""
    names = _param_names(model, params)
    source = weights_as_variables(model, names)
    graph = grad_graph(source.graph, loss, names, checkpoint=checkpoint, per_loop=per_loop)
    outputs = graph.outputs[: len(model.graph.outputs)]
    grads = {n: next(v for v in graph.outputs if v.name == grad_name(n)) for n in names}
    values = {n: graph.variables[n].initial for n in names}
    state = {k: _state_variable(graph, k, v) for k, v in optimizer.init(values).items()}
    reads = {n: _read(graph, n) for n in names}
    new_params, new_state = _build_update(graph, optimizer, reads, grads, state)
    for name, value in (*new_params.items(), *new_state.items()):
        graph.add_node("Assign", [value], {"variable": name})
    graph.outputs = outputs
    stateful = Model(graph, backend=model.backend, limits=model.limits)
    return TrainStep(model, stateful, loss, names, optimizer)
