"""ONNX converters: LSTM, GRU and RNN, as one canonical Loop per direction."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .. import rnn
from ..rnn import GRU, LSTM, RNN, Cell, Kind
from .convert import NodeContext, converter

# Each kind's gate order in the rows of W, R and B (ONNX calls LSTM's cell gate c).
_ORDER = {"LSTM": "iofc", "GRU": "zrh", "RNN": "i"}
_KINDS = {"LSTM": LSTM, "GRU": GRU, "RNN": RNN}
_REVERSES = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}
_DIRECTIONS = tuple(_REVERSES)
_FLOATS = (DType.float16, DType.bfloat16, DType.float32, DType.float64)
X, W, R, B, LENS, H0, C0, P = range(8)  # the node's inputs; C0 and P are LSTM's only


@converter("LSTM", "GRU", "RNN", since=7)
def _recurrent(ctx: NodeContext) -> list[Value | None]:
    """``X, W, R, B?, sequence_lens?, initial_h?, (initial_c?, P?)`` to ``Y?, Y_h?, (Y_c?)``."""
    kind = _KINDS[ctx.op_type]
    layout = ctx.attr("layout", 0)
    if layout not in (0, 1):
        raise ctx.error(f"attribute 'layout' is {layout}, expected 0 or 1")
    text = ctx.attr("direction", "forward")
    if text.strip().lower() not in _DIRECTIONS:
        raise ctx.error(f"attribute 'direction' is {text!r}, expected one of {_DIRECTIONS}")
    directions = _REVERSES[text.strip().lower()]
    cells = _read_cells(ctx, kind, len(directions))
    time_axis = layout  # X is [seq, batch, input] (layout 0) or [batch, seq, input]
    x = ctx.input(X, "X")
    _check_inputs(ctx, cells[0], time_axis, len(directions))

    em = ctx.em
    lengths = ctx.inputs[LENS] if ctx.has(LENS) else None
    masks = None
    if lengths is not None:
        masks = rnn.step_masks(em, x, time_axis, lengths, lengths.constant)
    state_inputs = (H0, C0)[: len(kind.states)]
    state_axis = layout  # initial_h/c are [dirs, batch, hidden] or [batch, dirs, hidden]
    ys: list[Value] = []
    finals: list[list[Value]] = [[] for _ in kind.states]
    for d, (cell, reverse) in enumerate(zip(cells, directions, strict=True)):
        w, r = (rnn.direction(em, ctx.input(i), d, 0) for i in (W, R))
        b = _combined_bias(ctx, cell, d) if ctx.has(B) else None
        p = rnn.direction(em, ctx.input(P), d, 0) if kind is LSTM and ctx.has(P) else None
        initial = [
            rnn.direction(em, ctx.input(i), d, state_axis) if ctx.has(i) else _zeros(ctx, cell)
            for i in state_inputs
        ]
        y, last = rnn.run_direction(
            em, cell, x, time_axis, (w, r, b, p), initial, masks, reverse, ctx.wants(0)
        )
        if y is not None:
            ys.append(y)
        if masks is None:
            last = rnn.zero_if_no_steps(em, x, time_axis, last)
        for acc, s in zip(finals, last, strict=True):
            acc.append(s)
    # Y is [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden]; the states as initial_h.
    outputs = [rnn.stack(em, ys, 1 + layout) if ys else None]
    outputs += [rnn.stack(em, f, state_axis) for f in finals]
    return [v if ctx.wants(k) else None for k, v in enumerate(outputs[: ctx.num_outputs])]


def _read_cells(ctx: NodeContext, kind: Kind, dirs: int) -> list[Cell]:
    """One Cell per direction: the attributes list each direction's activations in turn."""
    hidden = ctx.attr("hidden_size", None)
    if hidden is None:  # optional in the spec: R [dirs, gates*hidden, hidden] tells it
        hidden = rnn.static_dims(ctx.input(R, "R"), "input #2 (R)", 3, ctx.error)[2]
        if hidden is None:
            raise ctx.error("has no 'hidden_size' and R's last dim is not static")
    if hidden <= 0:
        raise ctx.error(f"attribute 'hidden_size' is {hidden}, expected a positive integer")
    count = len(kind.default_activations)
    names: Sequence[str] = ctx.attr("activations", kind.default_activations * dirs)
    if len(names) != count * dirs:
        raise ctx.error(
            f"attribute 'activations' lists {len(names)} functions, expected {count * dirs} "
            f"({count} per direction, {dirs} direction{'s' if dirs > 1 else ''})"
        )
    functions = rnn.activations(
        names,
        ctx.attr("activation_alpha", ()),
        ctx.attr("activation_beta", ()),
        tuple(rnn.FUNCTIONS),
        ctx.error,
    )
    clip = ctx.attr("clip", None)
    if clip is not None and not clip > 0.0:  # also rejects NaN
        raise ctx.error(f"attribute 'clip' is {clip}, expected a positive number")
    return [
        Cell(
            kind,
            hidden,
            functions[d * count : (d + 1) * count],
            None if clip is None or math.isinf(clip) else clip,
            kind is GRU and bool(ctx.attr("linear_before_reset", 0)),
            _ORDER[kind.name],
            kind is LSTM and bool(ctx.attr("input_forget", 0)),
        )
        for d in range(dirs)
    ]


def _check_inputs(ctx: NodeContext, cell: Cell, time_axis: int, dirs: int) -> None:
    """Every input's dtype and the dims that the attributes and X imply."""
    kind, hidden = cell.kind, cell.hidden
    rows = len(kind.gates) * hidden
    x = ctx.input(X, "X")
    for required, what in ((W, "W"), (R, "R")):
        ctx.input(required, what)
    dims = rnn.static_dims(x, "input #0 (X)", 3, ctx.error)
    batch, width = dims[1 - time_axis], dims[2]
    states = (batch, dirs, hidden) if time_axis else (dirs, batch, hidden)
    lbr = ", linear_before_reset" if cell.linear_before_reset else ""
    why = f"hidden_size {hidden}, {dirs} direction{'s' if dirs > 1 else ''}, layout {time_axis}"
    want: dict[int, tuple[str, tuple[int | None, ...]]] = {
        W: ("W", (dirs, rows, width)),
        R: ("R", (dirs, rows, hidden)),
        B: ("B", (dirs, 2 * rows)),
        LENS: ("sequence_lens", (batch,)),
        H0: ("initial_h", states),
    }
    if kind is LSTM:
        want |= {C0: ("initial_c", states), P: ("P", (dirs, 3 * hidden))}
    elif len(ctx.inputs) > H0 + 1:
        raise ctx.error(f"has {len(ctx.inputs)} inputs, expected at most {H0 + 1}")
    dt = x.tensor_type.dtype
    if dt not in _FLOATS:
        raise ctx.error(f"input #0 (X) is {x.type}, expected a floating-point tensor")
    for index, (what, shape) in want.items():
        if not ctx.has(index):
            continue
        v, label = ctx.input(index), f"input #{index} ({what})"
        allowed = (DType.int32, DType.int64) if index == LENS else (dt,)
        if v.tensor_type.dtype not in allowed:
            names = " or ".join(str(a) for a in allowed)
            raise ctx.error(f"{label} is {v.type}, expected element type {names}")
        rnn.expect_dims(v, label, shape, why + lbr, ctx.error)


def _combined_bias(ctx: NodeContext, cell: Cell, d: int) -> Value:
    """One direction's ``[Wb, Rb]`` as the shared cells take it: Wb + Rb, except that GRU with
    linear_before_reset keeps Rbh apart (``[Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]``)."""
    em, n = ctx.em, cell.hidden
    b = rnn.direction(em, ctx.input(B), d, 0)
    rows = len(cell.kind.gates) * n
    if not cell.linear_before_reset:
        return em.op("Add", [rnn.rows(em, b, 0, rows), rnn.rows(em, b, rows, 2 * rows)])
    zr = em.op("Add", [rnn.rows(em, b, 0, 2 * n), rnn.rows(em, b, 3 * n, 5 * n)])
    parts = [zr, rnn.rows(em, b, 2 * n, 3 * n), rnn.rows(em, b, 5 * n, 6 * n)]
    return em.op("Concat", parts, {"axis": 0})


def _zeros(ctx: NodeContext, cell: Cell) -> Value:
    """A zero initial state [batch, hidden] for a state the node leaves out."""
    em, x = ctx.em, ctx.input(X)
    dt = x.tensor_type.dtype.numpy
    shape = x.tensor_type.shape
    batch_axis = 1 - ctx.attr("layout", 0)
    batch = shape[batch_axis] if shape is not None else None
    if isinstance(batch, int):
        return em.const(np.zeros((batch, cell.hidden), dt))
    dims = em.op("Shape", [x], {"start": batch_axis, "end": batch_axis + 1})
    dims = em.op("Concat", [dims, em.ints([cell.hidden])], {"axis": 0})
    return em.op("ConstantOfShape", [dims], {"value": np.zeros(1, dt)})
