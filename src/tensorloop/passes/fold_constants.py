"""fold_constants: evaluate nodes whose inputs are all known before running, once, at build time."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TensorloopError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value
from ..ops.random import RANDOM_OPS
from ..reference import evaluate
from ..tensor.types import TensorType, Type
from .base import Pass, PassResult
from .dead_code import has_side_effects

# Ops whose result is not a function of their inputs alone, or that hold bodies.
NOT_FOLDABLE = RANDOM_OPS | {"Constant", "Loop", "If", "ReadVariable", "Assign", "Dropout"}
MAX_FOLDED_ELEMENTS = 1 << 16  # larger results stay computed at run time, keeping models small


def _static_shape(node: Node) -> tuple[int, ...] | None:
    t = node.inputs[0].type if node.inputs and node.inputs[0] is not None else None
    if (
        isinstance(t, TensorType)
        and t.shape is not None
        and all(isinstance(d, int) for d in t.shape)
    ):
        return tuple(int(d) for d in t.shape)
    return None


def _static_size(t: Type) -> int | None:
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    if not all(isinstance(d, int) for d in t.shape):
        return None
    return math.prod(int(d) for d in t.shape)


def _shape_dims(node: Node | None) -> list[Any] | None:
    """The dims a Shape node gives (its ``start:end`` of its input's dims, static or not)."""
    if node is None or node.op != "Shape" or not node.inputs or node.inputs[0] is None:
        return None
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    return list(t.shape)[start:end]


Evaluator = Callable[[Node, Sequence[Any]], list[Any]]
"""``evaluate(node, inputs) -> outputs``: how folding computes a node (the reference kernels by
default; a backend's ``evaluate`` may stand in, as the boundary tests do)."""


_PICKING = frozenset({"Gather", "Slice", "Squeeze", "Unsqueeze", "Reshape", "Identity"})
"""Ops whose output elements are elements of their first input, picked or moved by the others."""


def _known_dims(node: Node, evaluator: Evaluator) -> np.ndarray[Any, Any] | None:
    """What a Shape node gives, or an op that picks elements of one (``_PICKING``: a Gather,
    a Slice, ... with constant operands), where the dims it picks are static though others are
    not (a length left open, a batch fixed): the op run on the positions of the dims tells
    which it picks."""
    if node.op == "Shape":
        dims = _shape_dims(node)
        if dims is None or not all(isinstance(d, int) for d in dims):
            return None
        return np.asarray(dims, np.int64)
    if node.op not in _PICKING or not node.inputs or node.inputs[0] is None:
        return None
    dims = _shape_dims(node.inputs[0].producer)
    rest = [None if v is None else v.constant for v in node.inputs[1:]]
    if dims is None or any(a is None for a, v in zip(rest, node.inputs[1:], strict=True) if v):
        return None
    try:
        (picked,) = evaluator(node, [np.arange(len(dims), dtype=np.int64), *rest])
    except TensorloopError:
        return None
    chosen = [dims[int(k)] for k in np.asarray(picked).reshape(-1)]
    if not all(isinstance(d, int) for d in chosen):
        return None
    return np.asarray(chosen, np.int64).reshape(np.shape(picked))


def folded_values(
    node: Node,
    evaluator: Evaluator = evaluate,
    max_elements: int = MAX_FOLDED_ELEMENTS,
    partial_shapes: bool = False,
) -> list[np.ndarray[Any, Any]] | None:
    """The outputs of ``node`` if they are known without running the graph, else None: all its
    inputs are constants (computed by ``evaluator``), or it is Shape/Size of a static shape;
    outputs of more than ``max_elements`` elements are left to run time. ``partial_shapes``
    (a plan typed with sizes left open, ``specialize(generic=...)``): also a Shape, or a Gather,
    Slice, ... of one, that picks only static dims of a shape with open ones."""
    if node.op in NOT_FOLDABLE or node.subgraphs or has_side_effects(node):
        return None
    sizes = [_static_size(o.type) for o in node.outputs]
    if any(n is None or n > max_elements for n in sizes):
        return None  # unknown or large results are left to run time (no blind allocation here)
    if node.op in ("Shape", "Size") and (shape := _static_shape(node)) is not None:
        if node.op == "Size":
            return [np.asarray(math.prod(shape), np.int64)]
        start, end = node.attrs.get("start", 0), node.attrs.get("end")
        return [np.asarray(shape[start:end], np.int64)]
    if partial_shapes and (known := _known_dims(node, evaluator)) is not None:
        return [known]
    args = [None if v is None else v.constant for v in node.inputs]
    if any(a is None for a, v in zip(args, node.inputs, strict=True) if v is not None):
        return None
    try:
        with np.errstate(all="ignore"):
            outs = evaluator(node, args)
    except TensorloopError:
        return None  # a failure is the run's to report, with the run's inputs
    return [np.asarray(o) for o in outs]


def fold_node(
    node: Node,
    evaluator: Evaluator = evaluate,
    max_elements: int = MAX_FOLDED_ELEMENTS,
    partial_shapes: bool = False,
) -> list[Value] | None:
    """Replace ``node`` by Constants of its outputs when they are known; the Constants' values
    (named as the outputs were), or None if the node stays."""
    values = folded_values(node, evaluator, max_elements, partial_shapes)
    graph = node.graph
    if values is None or graph is None:
        return None
    em = Emitter(graph, anchor=node)
    consts: list[Value] = []
    for out, data in zip(node.outputs, values, strict=True):
        # The kernel's own array, laid out in memory as running the node lays it out (a view
        # of a constant stays that view, its strides reversed, strided or broadcast as they
        # are): NumPy's MatMul rounds by layout, so a copy (strides made dense and positive)
        # could change the bits of what reads it. Read-only, as every constant; its inputs
        # were constants, read-only, so a view of them is.
        if data.flags.writeable:
            data.setflags(write=False)
        const = em.op("Constant", [], {"value": data})
        graph.replace(out, const)  # the constant takes the output's name, results keep theirs
        consts.append(const)
    graph.erase(node)
    return consts


class FoldConstants(Pass):
    """Evaluate every node whose inputs are constants (and Shape/Size of static shapes) with
    ``evaluator`` (the reference kernels unless another is given).

    Exact by construction with the reference kernels: a folded node's constant is the array
    the kernel gives on the same inputs, bit for bit and laid out in memory the same way (see
    ``fold_node``). A node whose evaluation fails is left to fail at run time, with the run's
    inputs and in the reference's order. Folding runs nodes the reference may never run (in an
    If branch not taken, a loop body that runs zero times): that changes nothing, as a node
    that succeeds is only replaced by its value and one that fails is left as it was."""

    name = "fold_constants"

    def __init__(self, evaluator: Evaluator = evaluate) -> None:
        self.evaluator = evaluator

    def run(self, graph: Graph) -> PassResult:
        changed = False
        for _, node in list(graph.walk()):
            changed |= fold_node(node, self.evaluator) is not None
        return PassResult(graph, changed)


fold_constants = FoldConstants()
