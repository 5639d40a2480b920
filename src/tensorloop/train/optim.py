"""Optimizers as optax defines them, each update rule written once over array-like operands.

A rule is plain arithmetic (``+ - * /``) and the three helpers below (``_sqrt``, ``_power``,
``_cast_like``), so the same function updates NumPy arrays (``Optimizer.update``) and builds the
update into a graph from builder tensors (``train_step``). Both compute the same bits: the
helpers' NumPy side computes what the op their graph side emits computes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..builder import ops
from ..builder.tracing import Tensor
from ..errors import InputError
from ..tensor.numerics import round_to

Operand = Any
"""A NumPy array (or scalar) or a builder ``Tensor``."""

COUNT = "count"
"""The optimizer state's step counter (int32, the steps taken so far), as optax's ``count``."""


def slot_name(param: str, slot: str) -> str:
    """The state key of ``param``'s ``slot`` (``"W/m"``)."""
    return f"{param}/{slot}"


def _sqrt(x: Operand) -> Operand:
    return ops.sqrt(x) if isinstance(x, Tensor) else np.sqrt(x)


def _power(base: float, exponent: Operand) -> Operand:
    """``base ** exponent`` in ``exponent``'s float type, as the Pow op computes it: in float64,
    rounded once."""
    if isinstance(exponent, Tensor):
        return ops.pow(base, exponent)
    e = np.asarray(exponent)
    real = np.power(np.asarray(base, e.dtype).astype(np.float64), e.astype(np.float64))
    return round_to(real, e.dtype)


def _cast_like(x: Operand, like: Operand) -> Operand:
    """``x`` in ``like``'s element type."""
    if isinstance(like, Tensor):
        return x if isinstance(x, Tensor) and x.dtype == like.dtype else ops.cast(x, like.dtype)
    return np.asarray(x).astype(np.asarray(like).dtype)


class Rule(Protocol):
    """One parameter's update: its gradient, its value, its slots (``{"m": ..., "v": ...}``)
    and the step being taken (1 for the first, in the parameter's float type) give the update
    to add to it and the new slots."""

    def __call__(
        self, grad: Operand, param: Operand, slots: Mapping[str, Operand], step: Operand
    ) -> tuple[Operand, dict[str, Operand]]: ...


@dataclass(frozen=True)
class Optimizer:
    """A gradient transformation (optax's ``init`` / ``update`` pair) of named parameters.

    The state holds one array per parameter and slot (``<param>/<slot>``, shaped as the
    parameter) and the step counter ``count``."""

    name: str
    slots: tuple[str, ...]
    rule: Rule

    def init(self, params: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
        """The state before the first step: every slot zero, ``count`` 0."""
        state = {COUNT: np.zeros((), np.int32)}
        for name, p in params.items():
            for slot in self.slots:
                state[slot_name(name, slot)] = np.zeros_like(np.asarray(p))
        return state

    def state_keys(self, params: Iterable[str]) -> list[str]:
        """The keys of the slots of ``params`` (``<param>/<slot>``), ``count`` left out."""
        return [slot_name(p, s) for p in params for s in self.slots]

    def transform(
        self,
        grads: Mapping[str, Operand],
        state: Mapping[str, Operand],
        params: Mapping[str, Operand],
    ) -> tuple[dict[str, Operand], dict[str, Operand]]:
        """``(updates, new_state)`` for operands of any kind (arrays or builder tensors): the
        one place the rule is applied, to each parameter in turn."""
        count = state[COUNT] + 1
        steps: dict[Any, Operand] = {}
        updates: dict[str, Operand] = {}
        new_state: dict[str, Operand] = {COUNT: count}
        for name, p in params.items():
            kind = p.dtype
            if kind not in steps:
                steps[kind] = _cast_like(count, p)
            slots = {s: state[slot_name(name, s)] for s in self.slots}
            updates[name], new_slots = self.rule(grads[name], p, slots, steps[kind])
            for slot in self.slots:
                new_state[slot_name(name, slot)] = new_slots[slot]
        return updates, new_state

    def update(
        self,
        grads: Mapping[str, np.ndarray[Any, Any]],
        state: Mapping[str, np.ndarray[Any, Any]],
        params: Mapping[str, np.ndarray[Any, Any]],
    ) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, np.ndarray[Any, Any]]]:
        """The updates to add to ``params`` (``apply_updates``) and the next state, on NumPy
        arrays."""
        arrays = {k: np.asarray(v) for k, v in params.items()}
        _require(self.name, "grads", grads, list(arrays))
        _require(self.name, "state", state, [*self.state_keys(arrays), COUNT])
        g = {k: np.asarray(grads[k]) for k in arrays}
        s = {k: np.asarray(v) for k, v in state.items()}
        updates, new_state = self.transform(g, s, arrays)
        return (
            {k: _cast_like(u, arrays[k]) for k, u in updates.items()},
            {k: _cast_like(v, s[k]) for k, v in new_state.items()},
        )

    @staticmethod
    def apply_updates(
        params: Mapping[str, Operand], updates: Mapping[str, Operand]
    ) -> dict[str, Operand]:
        """``apply_updates(params, updates)``."""
        return apply_updates(params, updates)


def _require(where: str, what: str, given: Mapping[str, Any], keys: Iterable[str]) -> None:
    missing = [repr(k) for k in keys if k not in given]
    if missing:
        raise InputError(f"{where}: the {what} lack {', '.join(missing)}")


def apply_updates(
    params: Mapping[str, Operand], updates: Mapping[str, Operand]
) -> dict[str, Operand]:
    """Each parameter plus its update, in the parameter's type (optax's ``apply_updates``)."""
    return {k: _cast_like(p + updates[k], p) for k, p in params.items()}


def sgd(learning_rate: float, momentum: float = 0.0, nesterov: bool = False) -> Optimizer:
    """optax's ``sgd``: ``-lr * g``; with ``momentum``, the trace ``t = g + momentum * t`` in
    place of ``g`` (``g + momentum * t`` after the trace's update when ``nesterov``)."""
    lr, mu = float(learning_rate), float(momentum)

    def rule(
        grad: Operand, param: Operand, slots: Mapping[str, Operand], step: Operand
    ) -> tuple[Operand, dict[str, Operand]]:
        if not mu:
            return -lr * grad, {}
        trace = grad + mu * slots["trace"]
        direction = grad + mu * trace if nesterov else trace
        return -lr * direction, {"trace": trace}

    return Optimizer("sgd", ("trace",) if mu else (), rule)


def _adam_rule(lr: float, b1: float, b2: float, eps: float, weight_decay: float | None) -> Rule:
    """optax's ``scale_by_adam``, then ``add_decayed_weights`` when ``weight_decay`` is given,
    then ``scale_by_learning_rate``."""

    def rule(
        grad: Operand, param: Operand, slots: Mapping[str, Operand], step: Operand
    ) -> tuple[Operand, dict[str, Operand]]:
        m = (1 - b1) * grad + b1 * slots["m"]
        v = (1 - b2) * (grad * grad) + b2 * slots["v"]
        m_hat = m / (1 - _power(b1, step))
        v_hat = v / (1 - _power(b2, step))
        update = m_hat / (_sqrt(v_hat) + eps)
        if weight_decay is not None:
            update = update + weight_decay * param
        return -lr * update, {"m": m, "v": v}

    return rule


def adam(learning_rate: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Optimizer:
    """optax's ``adam``: ``-lr * m̂ / (sqrt(v̂) + eps)``, the moments' bias corrected by
    ``1 - b**count``."""
    rule = _adam_rule(float(learning_rate), float(b1), float(b2), float(eps), None)
    return Optimizer("adam", ("m", "v"), rule)


def adamw(
    learning_rate: float,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 1e-2,
) -> Optimizer:
    """optax's ``adamw``: Adam's step plus the decoupled weight decay,
    ``-lr * (m̂ / (sqrt(v̂) + eps) + weight_decay * param)``."""
    rule = _adam_rule(float(learning_rate), float(b1), float(b2), float(eps), float(weight_decay))
    return Optimizer("adamw", ("m", "v"), rule)
