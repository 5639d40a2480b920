"""Run-time helpers the generated code calls: stacked-output buffers, branch conditions, the
generic kernel call and the signal that hands a run back to the reference interpreter."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import ExecutionError
from ...ir.graph import Graph, Node, static_type
from ...ir.opdef import get_opdef
from ...ops.random import RANDOM_OPS
from ...reference.allocation import check_outputs
from ...reference.interpreter import Interpreter, call_kernel, conform, invoke
from ...reference.registry import KernelContext, get_kernel
from ...reference.runtime import RunState, buffers_of

Array = np.ndarray[Any, Any]

STACK_START_BYTES = 1 << 26
"""A stacked output starts with room for the loop's trip bound, or for this many bytes when the
bound is unknown or larger; it doubles when a loop outruns it."""


class Deoptimize(Exception):  # noqa: N818  (a signal, not an error a user sees)
    """Raised by generated code on a case it does not plan for (a stacked result changing shape,
    an index out of range, shapes NumPy refuses): the executable reruns the whole call on the
    reference interpreter, whose answer (or error) is the one the user gets, and records the
    handoff (``where``: the node, ``why``: the case). The only exception a plan hands on."""

    def __init__(self, where: str = "", why: str = "a case the plan does not cover") -> None:
        super().__init__(f"{where}: {why}" if where else why)
        self.where = where
        self.why = why

    @classmethod
    def on_data(cls, where: str, error: Exception) -> Deoptimize:
        """``where`` failed on run-time data with ``error`` (NumPy's): the reference says how."""
        return cls(where, f"failed on run-time data ({type(error).__name__}: {error})")


def stack_start(state: RunState, y: Any, bound: int, where: str) -> tuple[Array, tuple[int, ...]]:
    """A buffer for a loop's stacked result, shaped after its first per-iteration value."""
    y = np.asarray(y)
    return stack_alloc(state, bound, y.shape, y.dtype, where), y.shape


def stack_alloc(
    state: RunState, bound: int, shape: tuple[int, ...], dtype: np.dtype[Any], where: str
) -> Array:
    """A buffer for a stacked result of static per-iteration ``shape``: room for ``bound`` rows
    (at least one), or for STACK_START_BYTES when the bound is larger, and never for more than
    the run's ``max_stacked_bytes`` has left (counted against it)."""
    row = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    fits = max(16, STACK_START_BYTES // max(row, 1))
    rows = max(1, min(bound, fits))
    if row:
        rows = min(rows, (state.limits.max_stacked_bytes - state.stacked_bytes) // row)
    state.add_stacked(rows * row, where)
    state.reserve(rows * row, where)
    return np.empty((rows, *shape), dtype)


def stack_grow(state: RunState, buffer: Array, where: str) -> Array:
    """``buffer`` with twice the rows, the filled ones kept; as many as ``max_stacked_bytes``
    allows, and ``ResourceLimitError`` when not one more row fits."""
    n = len(buffer)
    row = buffer.nbytes // n if n else int(np.prod(buffer.shape[1:])) * buffer.itemsize
    rows = max(2 * n, 1)
    if row:
        rows = min(rows, n + (state.limits.max_stacked_bytes - state.stacked_bytes) // row)
    if rows == n:
        state.add_stacked(row, where)  # raises: the next row does not fit
    state.add_stacked((rows - n) * row, where)
    state.reserve((rows - n) * row, where)
    grown = np.empty((rows, *buffer.shape[1:]), buffer.dtype)
    grown[:n] = buffer
    return grown


def let_go(state: RunState, *buffers: Array | None) -> None:
    """A loop's stacked ``buffers`` (None: never started) leave the run's live bytes."""
    state.release(sum(b.nbytes for b in buffers if b is not None))


def carry(state: RunState, held: int, values: tuple[Any, ...], where: str) -> int:
    """The bytes of a loop's carried ``values`` whose size the plan does not know, counted in
    place of the ``held`` bytes of the previous trip's (each buffer once); a
    ``ResourceLimitError`` where they would pass ``Limits.max_run_bytes``."""
    seen: dict[int, int] = {}
    for value in values:
        for root in buffers_of(value):
            seen[id(root)] = int(root.nbytes)
    size = sum(seen.values())
    state.release(held)
    state.reserve(size, where)
    return size


def now() -> float:
    """The clock a run's deadline is on."""
    return time.monotonic()


def guard(node: Node) -> Callable[[RunState, Sequence[Any]], None]:
    """The check the generated code runs before ``node`` (an op whose output size comes from
    its inputs' data): its output must fit the run's limits."""
    attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())

    def check(state: RunState, inputs: Sequence[Any]) -> None:
        check_outputs(state, node, attrs, inputs)

    return check


def stack_finish(buffer: Array, n: int, axis: int, reverse: bool) -> Array:
    """The first ``n`` rows of ``buffer`` as the stacked output: reversed for a reverse output,
    the new axis moved to ``axis`` (negative counts from the end of the stacked rank)."""
    out = buffer[:n]
    if reverse:
        out = out[::-1]
    if axis < 0:
        axis += out.ndim
    if axis != 0:
        out = np.moveaxis(out, 0, axis)
    if reverse or axis != 0:
        out = np.ascontiguousarray(out)
    return out


def truth(cond: Any, where: str = "If") -> bool:
    """An If's condition as a bool; anything but one element is handed to the reference."""
    c = np.asarray(cond)
    if c.size != 1:
        raise Deoptimize(where, f"its condition holds {c.size} elements")
    return bool(c.reshape(()))


def generic_call(node: Node, *, stateful: bool) -> Callable[..., Any]:
    """A call of ``node``'s reference kernel with attributes resolved now (``invoke``: outputs
    conformed to their types, errors named as the reference names them). A ``stateful`` call
    (variables or bodies) takes the run's state first; the others share one context, as they
    never touch it. One output is returned as it is, several as a tuple, none as None."""
    fn = get_kernel(node.op)
    attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())

    def unpack(outs: list[Any]) -> Any:
        return outs[0] if len(outs) == 1 else (tuple(outs) if outs else None)

    if stateful:

        def call_with_state(state: RunState, *inputs: Any) -> Any:
            runner = Interpreter(state=state).run_graph
            return unpack(invoke(fn, KernelContext(node, attrs, runner, state), inputs))

        return call_with_state

    ctx = KernelContext(node, attrs, _no_bodies, RunState())
    out = static_type(node.outputs[0]) if len(node.outputs) == 1 else None
    if out is None:

        def call(*inputs: Any) -> Any:
            return unpack(invoke(fn, ctx, inputs))

        return call

    # One output of a type known here: an array of exactly that dtype and shape is what
    # conforming it gives back, so that check is all the call does before returning it.
    dtype, shape = out.dtype.numpy, out.static_shape

    def call_static(*inputs: Any) -> Any:
        result = call_kernel(fn, ctx, inputs)
        if type(result) is np.ndarray and result.dtype == dtype and result.shape == shape:
            return result
        return conform(node, 0, result)

    return call_static


def _no_bodies(graph: Graph, args: Sequence[Any]) -> list[Any]:
    raise ExecutionError(f"graph '{graph.name}' run from a kernel planned as body-free")


def needs_state(node: Node) -> bool:
    """Whether ``node``'s kernel reads the run's state: variables, random streams, or bodies
    it runs."""
    return node.op in ("ReadVariable", "Assign") or node.op in RANDOM_OPS or bool(node.subgraphs)
