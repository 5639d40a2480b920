"""Training: optimizers (optax's, each rule written once for arrays and graphs) and the
training step as one stateful model (``train_step``)."""

from __future__ import annotations

from .optim import COUNT, Optimizer, Rule, adam, adamw, apply_updates, sgd, slot_name
from .step import TrainStep, train_step, weights_as_variables, with_weights

__all__ = [
    "COUNT",
    "Optimizer",
    "Rule",
    "TrainStep",
    "adam",
    "adamw",
    "apply_updates",
    "sgd",
    "slot_name",
    "train_step",
    "weights_as_variables",
    "with_weights",
]
