"""A graph specialised to one input signature: concrete parameter types, re-inferred types,
and what they make constant (shapes, sizes, the arithmetic on them, the branches that the
values of guarded control inputs choose) folded away."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import TensorloopError
from ..ir.branch import If
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, static_type
from ..ir.loop import Loop
from ..ir.opdef import infer_types
from ..limits import nbytes
from ..reference.allocation import predicted
from ..tensor.types import Dim, TensorType, Type
from . import inline_constant_branches
from .fold_constants import fold_node

MAX_GUARDED_ELEMENTS = 8
"""A control input is guarded on its value only while it holds at most this many elements."""

SHAPE_OPERANDS: dict[str, frozenset[int]] = {
    "Reshape": frozenset({1}),
    "Expand": frozenset({1}),
    "ConstantOfShape": frozenset({0}),
    "Tile": frozenset({1}),
    "Range": frozenset({0, 1, 2}),
    "Slice": frozenset({1, 2, 3, 4}),
    "Pad": frozenset({1, 3}),
    "Unsqueeze": frozenset({1}),
    "Squeeze": frozenset({1}),
    "Resize": frozenset({1, 2, 3}),
    "TopK": frozenset({1}),
    "OneHot": frozenset({1}),
    "Split": frozenset({1}),
}
"""The operands of each op that decide its output's shape rather than its values."""


def signature(args: Sequence[Any]) -> tuple[Hashable, ...]:
    """What a plan depends on: each argument's dtype and shape (a sequence's, per element)."""
    return tuple(_signature(a) for a in args)


def _signature(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):
        return (value.dtype, value.shape)
    if isinstance(value, list):
        return ("seq", tuple(_signature(v) for v in value))
    return None if value is None else type(value).__name__


def control_inputs(graph: Graph) -> frozenset[int]:
    """The positions of ``graph``'s integer or bool inputs whose values decide control flow or
    shapes: what reaches, through any ops, an If's condition or a shape operand
    (``SHAPE_OPERANDS``), at any depth. A plan may guard on their values (a tracing JIT's
    guards, JAX's static arguments): it is then made for those values and used only for them."""
    return frozenset(
        k
        for k, param in enumerate(graph.inputs)
        if isinstance(param.type, TensorType)
        and (param.type.dtype.is_int or param.type.dtype.value == "bool")
        and _decides(param)
    )


def _decides(start: Value) -> bool:
    seen: set[int] = set()
    todo = [start]
    while todo:
        value = todo.pop()
        for use in value.uses:
            node = use.node
            if node.op == "If" and use.port == 0:
                return True
            if use.port in SHAPE_OPERANDS.get(node.op, ()):
                return True
            follow: list[Value] = list(node.outputs)
            if node.op == "If":  # a captured value: the branches' parameters read it
                follow += [If(node).then_branch.inputs[use.port - 1]]
                follow += [If(node).else_branch.inputs[use.port - 1]]
            for out in follow:
                if id(out) not in seen:
                    seen.add(id(out))
                    todo.append(out)
    return False


MAX_GUARDED_VARIANTS = 8
"""Plans made per signature for distinct values of the guarded control inputs; a model whose
control inputs take more values than this gets one unguarded plan for all further values."""


class SignatureContradictionError(TensorloopError):
    """An input signature breaks a declared static type (see ``_refine``); raised while
    planning, never by a run."""


class GenericShapesError(TensorloopError):
    """A graph cannot be typed with sizes left open (``specialize(generic=...)``): a declared
    static dim the rules do not confirm from them. Raised while planning; the caller plans per
    size instead."""


class Guards:
    """Which plan a call gets: one per input signature and, for the graph's control inputs
    (``control_inputs``), per value, up to ``MAX_GUARDED_VARIANTS`` values per signature.
    Shared by the threads running one executable."""

    def __init__(self, graph: Graph) -> None:
        self.control = control_inputs(graph)
        self._variants: dict[Hashable, set[Hashable]] = {}
        self._lock = threading.Lock()

    def key(self, args: Sequence[Any], guarded: bool = True) -> tuple[Hashable, dict[int, Any]]:
        """The plan key of ``args`` and the values its plan is made for (none unless
        ``guarded``, or once the signature has had its share of variants)."""
        sig = signature(args)
        values = {
            k: args[k]
            for k in (self.control if guarded else ())
            if isinstance(args[k], np.ndarray) and args[k].size <= MAX_GUARDED_ELEMENTS
        }
        if not values:
            return (sig, ()), values
        guard = tuple((k, v.dtype.str, v.shape, v.tobytes()) for k, v in sorted(values.items()))
        with self._lock:
            seen = self._variants.setdefault(sig, set())
            if guard not in seen:
                if len(seen) >= MAX_GUARDED_VARIANTS:
                    return (sig, ()), {}
                seen.add(guard)
        return (sig, guard), values


Sized = tuple[int, tuple[int, ...], Any, str]
"""(bytes, shape, dtype, where) of an output whose size comes from data."""


def specialize(
    graph: Graph,
    args: Sequence[Any],
    *,
    fold: bool = True,
    constants: Mapping[int, Any] | None = None,
    folded: list[Sized] | None = None,
    generic: Mapping[int, Iterable[int]] | None = None,
) -> Graph:
    """A copy of ``graph`` typed for ``args``; with ``fold``, constants folded too, and the
    inputs at the positions of ``constants`` read as those constants (a plan guarded on their
    values), If nodes whose condition that makes constant replaced by their branch.

    A type the rules cannot make static keeps the declared one. A loop body is re-typed with
    the static types of the loop's inputs only where that is a fixed point: each carried value's
    next type equals the type it started with (a carried shape may instead change from one
    iteration to the next; then the body keeps its declared types).

    ``folded`` learns the outputs folded away of ops whose output size comes from data
    (``allocation.predicted``): a run still checks them against its limits, as the reference
    checks them when it allocates them.

    ``generic`` leaves dims open: by input position, the axes typed with a symbol of their own
    (``len<k>_<axis>``) instead of the argument's size, so the copy serves every size there (a
    plan for sequences of any length). Types are then refined dim by dim (a dim the rules make
    static is made static, the others keep their symbols), and the dims a Shape picks that are
    static fold though others are open. A declared static dim that the rules leave open is a
    claim these inputs cannot confirm: a GenericShapesError, and the caller plans per size."""
    copy = graph.clone()
    open_axes = {k: frozenset(axes) for k, axes in (generic or {}).items()}
    for k, (param, arg) in enumerate(zip(copy.inputs, args, strict=True)):
        if isinstance(param.type, TensorType) and isinstance(arg, np.ndarray):
            dims: list[Dim] = list(arg.shape)
            for axis in open_axes.get(k, ()):
                dims[axis] = f"len{k}_{axis}"
            param.type = TensorType(param.type.dtype, tuple(dims))
    partial = bool(open_axes)
    if fold and constants:
        for k, value in constants.items():
            param = copy.inputs[k]
            if param.uses:
                anchor = copy.nodes[0] if copy.nodes else None
                const = Emitter(copy, anchor).const(value, param.tensor_type.dtype)
                for use in list(param.uses):
                    use.node.set_input(use.port, const)
    _retype(copy, partial)
    if fold:
        with np.errstate(all="ignore"):
            for _ in range(_MAX_ROUNDS):
                changed = _fold(copy, folded, partial)
                changed |= inline_constant_branches.run(copy).changed
                if not changed:
                    break
                _retype(copy, partial)
    return copy


MAX_PLAN_FOLDED_ELEMENTS = 1 << 24
"""A plan folds results this large (64 MiB of float32): weights an exporter slices and
concatenates at run time (dynamo's LSTMs) become the constants they are, laid out once. A
saved model keeps ``fold_constants.MAX_FOLDED_ELEMENTS``, to stay small."""

_MAX_ROUNDS = 32
"""Fold and inline rounds (each inlines a level of nested constant branches)."""


def _fold(graph: Graph, folded: list[Sized] | None, partial: bool = False) -> bool:
    """Fold every node whose inputs are constants (``fold_constants.fold_node``), in order,
    each first re-typed from its inputs: a shape computed from folded shapes then folds too."""
    changed = False
    for _, node in list(graph.walk()):
        if node.graph is None or node.op in ("Loop", "If"):
            continue
        _refine(node, partial)
        sized = largest_sized([node]) if folded is not None else None
        if (
            fold_node(node, max_elements=MAX_PLAN_FOLDED_ELEMENTS, partial_shapes=partial)
            is not None
        ):
            changed = True
            if sized is not None and folded is not None:
                folded.append(sized)
    return changed


def largest_sized(nodes: Iterable[Node]) -> Sized | None:
    """The largest static output among ``nodes`` of an op whose output size comes from data
    (``allocation.predicted``)."""
    largest = None
    for node in nodes:
        if not predicted(node.op):
            continue
        for k, out in enumerate(node.outputs):
            t = static_type(out)
            if t is not None:
                size = nbytes(t.static_shape, t.dtype)
                if largest is None or size > largest[0]:
                    largest = (size, t.static_shape, t.dtype, f"{node.describe()} output #{k}")
    return largest


def _refine(node: Node, partial: bool = False) -> None:
    """Type ``node``'s outputs from its inputs' (now more static) types. A declared static type
    that the inferred one contradicts is a claim these inputs break (a hand-typed text IR file
    saying ``f32[7,3]`` where the input's ``N`` is 3): a SignatureContradictionError, so the backend
    plans the graph as written and checks every value, as the reference does."""
    try:
        types = infer_types(node.op, node.inputs, node.attrs, node.name)
    except TensorloopError:
        return
    for out, t in zip(node.outputs, types, strict=True):
        if partial:
            _refine_dims(node, out, t)
        elif _more_static(t, out.type):
            out.type = t
        elif (
            isinstance(t, TensorType)
            and isinstance(out.type, TensorType)
            and t.is_static
            and out.type.is_static
            and t.static_shape != out.type.static_shape
        ):
            raise SignatureContradictionError(
                f"{node.describe()} output %{out.name}: these inputs make it {t}, "
                f"its type says {out.type}"
            )


def _refine_dims(node: Node, out: Value, t: Type) -> None:
    """``out`` typed dim by dim from the rules' ``t`` (a generic plan's refinement)."""
    old = out.type
    if not isinstance(t, TensorType) or not isinstance(old, TensorType) or t.dtype != old.dtype:
        return
    if t.shape is None:
        if old.shape is not None and any(isinstance(d, int) for d in old.shape):
            raise GenericShapesError(f"{node.describe()} output %{out.name}: rank left open")
        return
    if old.shape is None:
        out.type = t
        return
    if len(t.shape) != len(old.shape):
        raise SignatureContradictionError(
            f"{node.describe()} output %{out.name}: these inputs make it {t}, its type says {old}"
        )
    dims: list[Dim] = []
    for new, was in zip(t.shape, old.shape, strict=True):
        if isinstance(was, int) and isinstance(new, int) and new != was:
            raise SignatureContradictionError(
                f"{node.describe()} output %{out.name}: these inputs make it {t}, "
                f"its type says {old}"
            )
        if isinstance(was, int) and not isinstance(new, int):
            raise GenericShapesError(
                f"{node.describe()} output %{out.name}: its type says {old}, the open sizes "
                f"leave it {t}"
            )
        dims.append(new)
    out.type = TensorType(t.dtype, tuple(dims))


def _retype(graph: Graph, partial: bool = False) -> None:
    for node in graph.nodes:
        if node.op == "Loop":
            _retype_body(Loop(node), partial)
        elif node.op == "If":
            _retype_branches(node, partial)
        _refine(node, partial)  # what is wrong, the run reports, with the run's values


def _retype_body(loop: Loop, partial: bool = False) -> None:
    body = loop.body
    before = {v: v.type for v in _body_values(body)}
    given: list[tuple[Value, Type | None]] = [(c.param, _type(c.initial)) for c in loop.carried]
    for s in loop.sliced:
        t = _type(s.source)
        if (
            isinstance(t, TensorType)
            and t.shape is not None
            and -len(t.shape) <= s.spec.axis < len(t.shape)
        ):
            axis = s.spec.axis % len(t.shape)
            given.append((s.param, t.with_shape(t.shape[:axis] + t.shape[axis + 1 :])))
    given += [(inv.param, _type(inv.value)) for inv in loop.invariants]
    for param, t in given:
        if t is not None and (_more_static(t, param.type) or (partial and _as_static(t, param))):
            param.type = t
    _retype(body, partial)
    if any(c.next.type != c.param.type for c in loop.carried):
        for v, t in before.items():  # not a fixed point: the declared types stand
            v.type = t


def _as_static(t: Type, param: Value) -> bool:
    """Whether ``t`` types ``param`` at least as statically, dim by dim (a generic plan's body
    parameters: a state [1, 96] where the body says [?, 96])."""
    old = param.type
    if not isinstance(t, TensorType) or not isinstance(old, TensorType) or t.dtype != old.dtype:
        return False
    if old.shape is None:
        return t.shape is not None
    if t.shape is None or len(t.shape) != len(old.shape):
        return False
    return all(
        not isinstance(was, int) or new == was for new, was in zip(t.shape, old.shape, strict=True)
    )


def _retype_branches(node: Node, partial: bool = False) -> None:
    """Type each branch's parameters as the captured values are typed here, then its nodes."""
    view = If(node)
    for branch in (view.then_branch, view.else_branch):
        for param, value in zip(branch.inputs, view.captured, strict=True):
            t = _type(value)
            if t is not None and (
                _more_static(t, param.type) or (partial and _as_static(t, param))
            ):
                param.type = t
        _retype(branch, partial)


def _body_values(graph: Graph) -> list[Value]:
    values = list(graph.inputs)
    for _, node in graph.walk():
        values.extend(node.outputs)
        for sub in node.subgraphs.values():
            values.extend(sub.inputs)
    return values


def _type(value: Value | None) -> Type | None:
    return None if value is None else value.type


def _more_static(new: Type, old: Type) -> bool:
    return (
        isinstance(new, TensorType)
        and isinstance(old, TensorType)
        and new.dtype == old.dtype
        and new.is_static
        and not old.is_static
    )
