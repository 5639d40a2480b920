"""OpenVINO's LSTM, GRU and RNN layers: cells as plain ops, sequences as one Loop per direction."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.graph import Value
from .. import rnn
from ..rnn import GRU, LSTM, Cell, Kind
from .convert import LayerContext, converter

# OpenVINO lower-cases activation names before looking them up; the specs allow exactly these
# three. (OpenVINO's core also knows "hardsigmoid", but its CPU plugin rejects it in a cell.)
_ACTIVATIONS = ("Sigmoid", "Tanh", "Relu")
_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _convert_cell(ctx: LayerContext, inputs: list[Value | None], kind: Kind) -> list[Value]:
    """``X, *states, W, R, B`` (LSTMCell's B may be absent: zeros) to the next states."""
    cell = _read_cell(ctx, kind)
    n, w_at = len(kind.states), 1 + len(kind.states)
    x = ctx.input(0)
    (batch, width) = _dims(ctx, 0, "X", 2)
    rows = len(kind.gates) * cell.hidden
    for k, name in enumerate(kind.states):
        _expect(ctx, 1 + k, name.upper(), (batch, cell.hidden), cell)
    _expect(ctx, w_at, "W", (rows, width), cell)
    _expect(ctx, w_at + 1, "R", (rows, cell.hidden), cell)
    em = ctx.em
    if kind is LSTM and (len(inputs) <= w_at + 2 or inputs[w_at + 2] is None):
        b = em.const(np.zeros(cell.bias_rows, x.tensor_type.dtype.numpy))  # LSTMCell's is optional
    else:
        _expect(ctx, w_at + 2, "B", (cell.bias_rows,), cell)
        b = ctx.input(w_at + 2)
    _check_extra_inputs(ctx, kind, w_at + 3)
    states = [ctx.input(1 + k) for k in range(n)]
    return rnn.cell_step(em, cell, x, states, ctx.input(w_at), ctx.input(w_at + 1), b)


def _convert_sequence(ctx: LayerContext, kind: Kind) -> list[Value]:
    """``X, *initial_states, sequence_lengths, W, R, B`` to ``Y, *final_states``."""
    cell = _read_cell(ctx, kind)
    direction = ctx.choice_attr("direction", _DIRECTIONS)
    reverses = (False, True) if direction == "bidirectional" else (direction == "reverse",)
    n, w_at, dirs = len(kind.states), 2 + len(kind.states), len(reverses)
    rows = len(kind.gates) * cell.hidden
    batch, _, width = _dims(ctx, 0, "X", 3)
    for k, name in enumerate(kind.states):
        _expect(ctx, 1 + k, f"initial {name.upper()}", (batch, dirs, cell.hidden), cell)
    _expect(ctx, 1 + n, "sequence_lengths", (batch,), cell)
    _expect(ctx, w_at, "W", (dirs, rows, width), cell)
    _expect(ctx, w_at + 1, "R", (dirs, rows, cell.hidden), cell)
    _expect(ctx, w_at + 2, "B", (dirs, cell.bias_rows), cell)
    _check_extra_inputs(ctx, kind, w_at + 3)

    em, x = ctx.em, ctx.input(0)
    masks = rnn.step_masks(em, x, 1, ctx.input(1 + n), ctx.const(1 + n))
    ys: list[Value] = []
    finals: list[list[Value]] = [[] for _ in kind.states]
    for d, reverse in enumerate(reverses):
        w, r, b = (rnn.direction(em, ctx.input(w_at + i), d, 0) for i in range(3))
        initial = [rnn.direction(em, ctx.input(1 + k), d, 1) for k in range(n)]
        y, last = rnn.run_direction(em, cell, x, 1, (w, r, b, None), initial, masks, reverse)
        assert y is not None
        ys.append(y)
        for acc, s in zip(finals, last, strict=True):
            acc.append(s)
    return [rnn.stack(em, ys, 1), *(rnn.stack(em, f, 1) for f in finals)]


def _register(prefix: str, kind: Kind) -> None:
    converter(f"{prefix}Cell")(lambda ctx, inputs: _convert_cell(ctx, inputs, kind))
    converter(f"{prefix}Sequence")(lambda ctx, _: _convert_sequence(ctx, kind))


_register("LSTM", LSTM)
_register("GRU", GRU)
_register("RNN", rnn.RNN)


# -- attributes and input checks -------------------------------------------------------------------


def _read_cell(ctx: LayerContext, kind: Kind) -> Cell:
    hidden = ctx.int_attr("hidden_size")
    if hidden <= 0:
        raise ctx.error(f"attribute 'hidden_size' is {hidden}, expected a positive integer")
    default = ",".join(a.lower() for a in kind.default_activations)
    text = ctx.attr("activations", default)
    names = text.split(",")
    if len(names) != len(kind.default_activations):
        raise ctx.error(
            f"attribute 'activations' is {text!r}: expected {len(kind.default_activations)} "
            f"functions (default {default}), got {len(names)}"
        )
    # activations_alpha/beta only parameterise functions other than sigmoid, tanh and relu, so
    # a layer whose functions pass the check has nothing to read from them.
    functions = rnn.activations(names, (), (), _ACTIVATIONS, ctx.error)
    clip = ctx.float_attr("clip", 0.0)
    if not clip >= 0.0:  # also rejects NaN
        raise ctx.error(f"attribute 'clip' is {clip}, expected a positive number or 0 (no clip)")
    return Cell(
        kind,
        hidden,
        functions,
        None if clip == 0.0 or math.isinf(clip) else clip,
        kind is GRU and ctx.bool_attr("linear_before_reset", False),
    )


def _check_extra_inputs(ctx: LayerContext, kind: Kind, first_extra: int) -> None:
    """LSTMCell-1 and LSTMSequence-1 add peepholes P and two attributes; accept their defaults."""
    if kind is LSTM:
        if ctx.bool_attr("input_forget", False):
            raise ctx.error("attribute 'input_forget' is true; only false is supported")
        fmt = ctx.attr("weights_format", "fico").strip().lower()
        if fmt != "fico":
            raise ctx.error(f"attribute 'weights_format' is {fmt!r}, expected 'fico'")
        if ctx.num_inputs() == first_extra + 1:
            peepholes = ctx.const(first_extra)
            if peepholes is None or np.any(peepholes):
                raise ctx.error(
                    f"input #{first_extra} (peepholes P) must be a constant of zeros: "
                    "peephole connections are not supported"
                )
            return
    if ctx.num_inputs() > first_extra:
        raise ctx.error(f"has {ctx.num_inputs()} inputs, expected at most {first_extra}")


def _dims(ctx: LayerContext, index: int, what: str, rank: int) -> list[int | None]:
    return rnn.static_dims(ctx.input(index), f"input #{index} ({what})", rank, ctx.error)


def _expect(
    ctx: LayerContext, index: int, what: str, want: Sequence[int | None], cell: Cell
) -> None:
    lbr = ", linear_before_reset" if cell.linear_before_reset else ""
    why = f"hidden_size {cell.hidden}, {len(cell.kind.gates)} gates{lbr}"
    rnn.expect_dims(ctx.input(index), f"input #{index} ({what})", want, why, ctx.error)
