"""Recurrent layers for every frontend: LSTM, GRU and RNN cells as plain ops, sequences as Loops.

A frontend reads its layer's attributes into a :class:`Cell`, slices one direction's weights,
and calls :func:`run_direction`, which projects every step's input with one MatMul and runs the
cell over the time axis as one canonical Loop. Weight layouts follow OpenVINO and ONNX, which
agree: ``W [gates*hidden, input]``, ``R [gates*hidden, hidden]``, with the gates' row order
named by :attr:`Cell.order`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Value
from ..ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim

Array = np.ndarray[Any, Any]
ErrorFn = Callable[[str], Exception]
"""Makes the frontend's error, naming the layer, from a message."""


# -- activation functions ------------------------------------------------------------------------


def _scalar(em: Emitter, like: Value, value: float) -> Value:
    return em.const(np.asarray(value, like.tensor_type.dtype.numpy))


def _affine(em: Emitter, x: Value, alpha: float, beta: float) -> Value:
    return em.op("Add", [em.op("Mul", [x, _scalar(em, x, alpha)]), _scalar(em, x, beta)])


def _relu_plus(em: Emitter, x: Value, negative: Value) -> Value:
    """max(x, 0) + ``negative``: the functions below that only reshape x's negative side."""
    return em.op("Add", [em.op("Relu", [x]), negative])


def _leaky_relu(em: Emitter, x: Value, alpha: float, _: float) -> Value:
    negative = em.op("Min", [x, _scalar(em, x, 0.0)])
    return _relu_plus(em, x, em.op("Mul", [negative, _scalar(em, x, alpha)]))


def _elu(em: Emitter, x: Value, alpha: float, _: float) -> Value:
    # exp of min(x, 0) never overflows, and exp(0) - 1 is 0 where x >= 0.
    negative = em.op("Min", [x, _scalar(em, x, 0.0)])
    expm1 = em.op("Sub", [em.op("Exp", [negative]), _scalar(em, x, 1.0)])
    return _relu_plus(em, x, em.op("Mul", [expm1, _scalar(em, x, alpha)]))


def _softplus(em: Emitter, x: Value, _: float, __: float) -> Value:
    # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), which cannot overflow.
    tail = em.op("Exp", [em.op("Neg", [em.op("Abs", [x])])])
    return _relu_plus(em, x, em.op("Log", [em.op("Add", [tail, _scalar(em, x, 1.0)])]))


def _softsign(em: Emitter, x: Value, _: float, __: float) -> Value:
    return em.op("Div", [x, em.op("Add", [em.op("Abs", [x]), _scalar(em, x, 1.0)])])


def _thresholded_relu(em: Emitter, x: Value, alpha: float, _: float) -> Value:
    above = em.op("Greater", [x, _scalar(em, x, alpha)])
    return em.op("Where", [above, x, _scalar(em, x, 0.0)])


def _scaled_tanh(em: Emitter, x: Value, alpha: float, beta: float) -> Value:
    inner = em.op("Tanh", [em.op("Mul", [x, _scalar(em, x, beta)])])
    return em.op("Mul", [inner, _scalar(em, x, alpha)])


def _hard_sigmoid(em: Emitter, x: Value, alpha: float, beta: float) -> Value:
    line = _affine(em, x, alpha, beta)
    return em.op("Min", [em.op("Max", [line, _scalar(em, x, 0.0)]), _scalar(em, x, 1.0)])


def _unary(op: str) -> Callable[[Emitter, Value, float, float], Value]:
    return lambda em, x, _, __: em.op(op, [x])


@dataclass(frozen=True)
class _Function:
    build: Callable[[Emitter, Value, float, float], Value]
    defaults: tuple[float, ...]
    """Default alpha, then beta, for as many parameters as the function takes."""


# The ONNX list; the defaults are those of the same-named ONNX operators (Affine and ScaledTanh
# were experimental ONNX ops: alpha 1, beta 0 and alpha 1, beta 1).
FUNCTIONS: dict[str, _Function] = {
    "Relu": _Function(_unary("Relu"), ()),
    "Tanh": _Function(_unary("Tanh"), ()),
    "Sigmoid": _Function(_unary("Sigmoid"), ()),
    "Affine": _Function(_affine, (1.0, 0.0)),
    "LeakyRelu": _Function(_leaky_relu, (0.01,)),
    "ThresholdedRelu": _Function(_thresholded_relu, (1.0,)),
    "ScaledTanh": _Function(_scaled_tanh, (1.0, 1.0)),
    "HardSigmoid": _Function(_hard_sigmoid, (0.2, 0.5)),
    "Elu": _Function(_elu, (1.0,)),
    "Softsign": _Function(_softsign, ()),
    "Softplus": _Function(_softplus, ()),
}
_BY_LOWER = {name.lower(): name for name in FUNCTIONS}


@dataclass(frozen=True)
class Activation:
    """A gate's activation function with its parameters resolved."""

    name: str
    alpha: float = 0.0
    beta: float = 0.0

    def __call__(self, em: Emitter, x: Value) -> Value:
        return FUNCTIONS[self.name].build(em, x, self.alpha, self.beta)


def activations(
    names: Sequence[str],
    alphas: Sequence[float],
    betas: Sequence[float],
    allowed: Sequence[str],
    error: ErrorFn,
) -> tuple[Activation, ...]:
    """``names`` (any case) as Activations, each of ``allowed``.

    Each function takes its parameters from the front of what ``alphas`` and ``betas`` still
    hold, in the order of ``names``; functions without a parameter take none, and a function
    finding none left uses its default (onnxruntime reads the lists the same way).
    """
    alpha_it: Iterator[float] = iter(alphas)
    beta_it: Iterator[float] = iter(betas)
    out: list[Activation] = []
    for text in names:
        name = _BY_LOWER.get(text.strip().lower())
        if name is None or name not in allowed:
            raise error(f"activation {text!r} is not one of {', '.join(allowed)}")
        defaults = FUNCTIONS[name].defaults
        its = (alpha_it, beta_it)[: len(defaults)]
        params = [next(it, default) for it, default in zip(its, defaults, strict=True)]
        out.append(Activation(name, *params))
    return tuple(out)


# -- the cells -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One direction's step function as its layer's attributes fix it."""

    kind: Kind
    hidden: int
    activations: tuple[Activation, ...]
    """In the layer's order (LSTM: f, g, h; GRU: f, g; RNN: f)."""
    clip: float | None = None
    linear_before_reset: bool = False
    order: str = ""
    """The gates' row order in W, R and B; the kind's own (OpenVINO's) when empty."""
    input_forget: bool = False
    """LSTM: the forget gate is 1 - the input gate (onnxruntime's reading of 'couple')."""

    def gate(self, em: Emitter, pre: Value, activation: int) -> Value:
        """Activation ``activation`` of a gate's pre-activation, clipped to [-clip, clip] first."""
        if self.clip is not None:
            bound = np.asarray(self.clip, pre.tensor_type.dtype.numpy)
            pre = em.op("Max", [em.op("Min", [pre, em.const(bound)]), em.const(-bound)])
        return self.activations[activation](em, pre)

    def split(self, em: Emitter, pre: Value) -> dict[str, Value]:
        """``pre``'s last axis cut into its gates, by gate letter."""
        order = self.order or self.kind.gates
        parts = em.ops("Split", [pre], {"axis": -1, "num_outputs": len(order)})
        return dict(zip(order, parts, strict=True))

    @property
    def bias_rows(self) -> int:
        """Rows of the combined bias (GRU's linear_before_reset keeps h's recurrent one apart)."""
        return (len(self.kind.gates) + int(self.linear_before_reset)) * self.hidden


Prepare = Callable[
    [Emitter, Cell, Value, Value | None, Value | None], tuple[Value | None, list[Value]]
]
"""``(em, cell, R, B, P) -> (bias added to X·Wᵀ, loop-invariant recurrent operands)``.

``B`` is the combined bias, OpenVINO's: ``Wb + Rb`` per gate, except that GRU with
linear_before_reset keeps h's apart (``[Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]``); None for none.
``P`` is LSTM's peepholes ``[3*hidden]`` in ONNX's order i, o, f; None for none.
"""
Step = Callable[[Emitter, Cell, Value, list[Value], list[Value]], list[Value]]
"""``(em, cell, X·Wᵀ + bias, states, invariants) -> next states``; the first state is H."""


@dataclass(frozen=True)
class Kind:
    """What differs between LSTM, GRU and RNN; everything else is shared."""

    name: str
    gates: str
    """Gate letters in OpenVINO's row order."""
    states: tuple[str, ...]
    default_activations: tuple[str, ...]
    prepare: Prepare
    step: Step


def _lstm_recurrence(
    em: Emitter, cell: Cell, r: Value, b: Value | None, p: Value | None
) -> tuple[Value | None, list[Value]]:
    # B sums the input and recurrent biases, so it can ride along with X·Wᵀ.
    if p is None:
        return b, [r]
    return b, [r, *em.ops("Split", [p], {"axis": 0, "num_outputs": 3})]


def _lstm_step(
    em: Emitter, cell: Cell, xw: Value, states: list[Value], inv: list[Value]
) -> list[Value]:
    h, c = states
    r, *peepholes = inv  # P's i, o, f parts when the layer has peepholes
    gates = cell.split(em, em.op("Gemm", [h, r, xw], {"transB": 1}))  # H·Rᵀ + (X·Wᵀ + B)
    pre_i, pre_f, pre_o = gates["i"], gates["f"], gates["o"]
    if peepholes:
        pre_i = em.op("Add", [pre_i, em.op("Mul", [peepholes[0], c])])
        pre_f = em.op("Add", [pre_f, em.op("Mul", [peepholes[2], c])])
    i = cell.gate(em, pre_i, 0)
    f = em.op("Sub", [_scalar(em, i, 1.0), i]) if cell.input_forget else cell.gate(em, pre_f, 0)
    c_next = em.op("Add", [em.op("Mul", [f, c]), em.op("Mul", [i, cell.gate(em, gates["c"], 1)])])
    if peepholes:  # the output gate peeks at the new cell state
        pre_o = em.op("Add", [pre_o, em.op("Mul", [peepholes[1], c_next])])
    o = cell.gate(em, pre_o, 0)
    # The specs clip gate inputs only: h(Ct) sees the unclipped cell state.
    return [em.op("Mul", [o, cell.activations[2](em, c_next)]), c_next]


def _rnn_recurrence(
    em: Emitter, cell: Cell, r: Value, b: Value | None, p: Value | None
) -> tuple[Value | None, list[Value]]:
    return b, [r]


def _rnn_step(
    em: Emitter, cell: Cell, xw: Value, states: list[Value], inv: list[Value]
) -> list[Value]:
    return [cell.gate(em, em.op("Gemm", [states[0], inv[0], xw], {"transB": 1}), 0)]


def _gru_recurrence(
    em: Emitter, cell: Cell, r: Value, b: Value | None, p: Value | None
) -> tuple[Value | None, list[Value]]:
    n = cell.hidden
    if cell.linear_before_reset:
        # B = [Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]: Rbh sits inside the reset product, so it stays apart.
        if b is None:
            return None, [r]
        return rows(em, b, 0, 3 * n), [r, rows(em, b, 3 * n, 4 * n)]
    # h's recurrent product needs r (.) H first, so Rh multiplies apart from Rz and Rr.
    return b, [rows(em, r, 0, 2 * n), rows(em, r, 2 * n, 3 * n)]


def _gru_step(
    em: Emitter, cell: Cell, xw: Value, states: list[Value], inv: list[Value]
) -> list[Value]:
    (h,) = states
    x_gates = cell.split(em, xw)
    # inv[0] is all of R with linear_before_reset, else only Rz and Rr (see _gru_recurrence).
    h_r = em.op("Gemm", [h, inv[0]], {"transB": 1})
    parts = em.ops(
        "Split", [h_r], {"axis": -1, "num_outputs": 3 if cell.linear_before_reset else 2}
    )
    z = cell.gate(em, em.op("Add", [x_gates["z"], parts[0]]), 0)
    r = cell.gate(em, em.op("Add", [x_gates["r"], parts[1]]), 0)
    if cell.linear_before_reset:
        h_rh = parts[2] if len(inv) == 1 else em.op("Add", [parts[2], inv[1]])  # + Rbh if any
        recurrent = em.op("Mul", [r, h_rh])
    else:
        recurrent = em.op("Gemm", [em.op("Mul", [r, h]), inv[1]], {"transB": 1})
    candidate = cell.gate(em, em.op("Add", [x_gates["h"], recurrent]), 1)
    keep_new = em.op("Mul", [em.op("Sub", [_scalar(em, h, 1.0), z]), candidate])
    return [em.op("Add", [keep_new, em.op("Mul", [z, h])])]


LSTM = Kind("LSTM", "fico", ("h", "c"), ("Sigmoid", "Tanh", "Tanh"), _lstm_recurrence, _lstm_step)
GRU = Kind("GRU", "zrh", ("h",), ("Sigmoid", "Tanh"), _gru_recurrence, _gru_step)
RNN = Kind("RNN", "i", ("h",), ("Tanh",), _rnn_recurrence, _rnn_step)


def cell_step(
    em: Emitter,
    cell: Cell,
    x: Value,
    states: list[Value],
    w: Value,
    r: Value,
    b: Value | None,
    p: Value | None = None,
) -> list[Value]:
    """One step of ``cell`` on ``x [batch, input]``: the next states."""
    bias, invariants = cell.kind.prepare(em, cell, r, b, p)
    xw = em.op("Gemm", [x, w, bias], {"transB": 1})
    return cell.kind.step(em, cell, xw, states, invariants)


# -- sequences: one loop over the time axis per direction ----------------------------------------


@dataclass(frozen=True)
class Masks:
    """Which steps of which rows the sequence lengths let count."""

    valid: Value
    """bool [batch, seq]: step t of row b lies within that row's length."""
    nonempty: Value | None
    """bool [batch, 1]: the row has at least one valid step; None if every row is known to."""


def step_masks(
    em: Emitter, x: Value, time_axis: int, lengths: Value, known: Array | None
) -> Masks | None:
    """Per-step validity from the sequence lengths (``known`` if constant); None when every row
    is known to be full length, as converters commonly make it."""
    shape = x.tensor_type.shape
    steps: Dim = shape[time_axis] if shape is not None else UNKNOWN
    if known is not None and isinstance(steps, int) and bool(np.all(known >= steps)):
        return None
    if lengths.tensor_type.dtype != DType.int64:
        lengths = em.op("Cast", [lengths], {"to": DType.int64})
    if isinstance(steps, int):
        index = em.ints(list(range(steps)))
    else:
        count = em.op("Shape", [x], {"start": time_axis, "end": time_axis + 1})
        index = em.op("Range", [em.ints(0), em.op("Squeeze", [count, em.ints([0])]), em.ints(1)])
    valid = em.op(
        "Less",
        [em.op("Unsqueeze", [index, em.ints([0])]), em.op("Unsqueeze", [lengths, em.ints([1])])],
    )
    if known is not None and bool(np.all(known > 0)):
        return Masks(valid, None)
    nonempty = em.op("Unsqueeze", [em.op("Less", [em.ints(0), lengths]), em.ints([1])])
    return Masks(valid, nonempty)


def run_direction(
    em: Emitter,
    cell: Cell,
    x: Value,
    time_axis: int,
    weights: tuple[Value, Value, Value | None, Value | None],
    initial: list[Value],
    masks: Masks | None,
    reverse: bool,
    want_y: bool = True,
) -> tuple[Value | None, list[Value]]:
    """Run ``cell`` over ``x`` (rank 3, time on ``time_axis`` 0 or 1, batch on the other):
    ``(Y, final states)``, Y ``[*x's first two dims, hidden]`` (None unless ``want_y``).

    ``weights`` are this direction's ``(W, R, B, P)``, B the combined bias, B and P None when
    absent; ``initial`` its initial states ``[batch, hidden]``.
    """
    w, r, b, p = weights
    bias, invariants = cell.kind.prepare(em, cell, r, b, p)
    # One MatMul projects every step's input at once; the loop only slices it. Each step is a
    # matrix of the product's stack, so a step's rows round as they would in a run of any other
    # length: BLAS rounds a matrix's rows by how many there are (OpenBLAS's AVX2 kernels do), so
    # time must not be a matrix's row axis, or a stream's chunks would round otherwise than the
    # whole sequence. Batch-first, each (row, step) becomes a one-row matrix.
    wt = em.op("Transpose", [w], {"perm": [1, 0]})
    if time_axis == 0:
        xw = em.op("MatMul", [x, wt])
    else:
        rows = em.op("MatMul", [em.op("Unsqueeze", [x, em.ints([2])]), wt])
        xw = em.op("Squeeze", [rows, em.ints([2])])
    if bias is not None:
        xw = em.op("Add", [xw, bias])
    return _loop(em, cell, xw, time_axis, initial, invariants, masks, reverse, want_y)


def _loop(
    em: Emitter,
    cell: Cell,
    xw: Value,
    time_axis: int,
    initial: list[Value],
    invariants: list[Value],
    masks: Masks | None,
    reverse: bool,
    want_y: bool,
) -> tuple[Value | None, list[Value]]:
    """The Loop over ``time_axis`` of ``xw`` (the projected inputs plus bias).

    A reverse loop visits t = seq-1 .. 0. Steps at t >= length keep the state and emit zeros, so
    a reverse row first idles through its padding and then runs its valid prefix backwards: the
    same as reversing each row's prefix, running forward and reversing Y back.
    """
    kind = cell.kind
    name = "reverse" if reverse else "forward"
    body = Graph(f"{em.prefix}.{name}" if em.prefix else name)
    bem = Emitter(body, prefix=em.prefix)
    body.add_input("iteration", ITERATION_TYPE)
    states = [body.add_input(name, v.type) for name, v in zip(kind.states, initial, strict=True)]
    xw_type = xw.tensor_type
    shape = xw_type.shape  # None where X's rank is unknown
    step_shape = None if shape is None else shape[:time_axis] + shape[time_axis + 1 :]
    step_in = body.add_input("x_proj", xw_type.with_shape(step_shape))
    sources = [xw]
    slicing = [Sliced(time_axis, reverse)]
    valid: Value | None = None
    if masks is not None:
        valid_type = masks.valid.tensor_type
        valid_shape = None if valid_type.shape is None else valid_type.shape[:1]
        valid = body.add_input("valid", valid_type.with_shape(valid_shape))
        sources.append(masks.valid)
        slicing.append(Sliced(1, reverse))
    params = [body.add_input(f"w{k}", v.type) for k, v in enumerate(invariants)]

    new = kind.step(bem, cell, step_in, states, params)
    y = new[0]
    if valid is not None:
        keep = bem.op("Unsqueeze", [valid, bem.ints([1])])
        new = [bem.op("Where", [keep, v, old]) for v, old in zip(new, states, strict=True)]
        if want_y:
            y = bem.op("Where", [keep, y, _zero(bem, y)])
    body.set_outputs([bem.const(np.array(True)), *new, *([y] if want_y else [])])

    loop = Loop.build(
        em,
        body,
        carried=initial,
        sliced=list(zip(sources, slicing, strict=True)),
        invariants=invariants,
        stacked=[Stacked(time_axis, reverse)] if want_y else [],
    )
    outs = loop.outputs
    last = [c.final for c in loop.carried]
    if masks is not None and masks.nonempty is not None:
        # A row with no valid step reports a zero state, not its initial one, as OpenVINO and
        # onnxruntime do: its last output is the zero padding of Y.
        last = [em.op("Where", [masks.nonempty, s, _zero(em, s)]) for s in last]
    return (outs[-1] if want_y else None), last


def zero_if_no_steps(em: Emitter, x: Value, time_axis: int, states: list[Value]) -> list[Value]:
    """``states``, or zeros when ``x`` has no time steps: the empty-row rule of :func:`_loop` for
    a layer without sequence lengths (onnxruntime's LSTM does the same)."""
    shape = x.tensor_type.shape
    steps = shape[time_axis] if shape is not None else UNKNOWN
    if isinstance(steps, int) and steps > 0:
        return states
    count = em.op("Shape", [x], {"start": time_axis, "end": time_axis + 1})
    some = em.op("Less", [em.ints([0]), count])
    return [em.op("Where", [some, s, _zero(em, s)]) for s in states]


# -- helpers for the frontends -------------------------------------------------------------------


def stack(em: Emitter, per_direction: Sequence[Value], axis: int) -> Value:
    """Per-direction values joined on a new ``axis`` (num_directions)."""
    parts = [em.op("Unsqueeze", [v, em.ints([axis])]) for v in per_direction]
    return parts[0] if len(parts) == 1 else em.op("Concat", parts, {"axis": axis})


def direction(em: Emitter, v: Value, index: int, axis: int) -> Value:
    """One direction's slice of a per-direction input: ``axis`` (num_directions) dropped.

    Constant weights are sliced at run time rather than here, so the graph keeps one copy.
    """
    return em.op("Gather", [v, em.ints(index)], {"axis": axis})


def rows(em: Emitter, v: Value, start: int, stop: int) -> Value:
    """``v[start:stop]`` on axis 0."""
    return em.op("Slice", [v, em.ints([start]), em.ints([stop]), em.ints([0])])


def _zero(em: Emitter, like: Value) -> Value:
    return _scalar(em, like, 0.0)


def static_dims(value: Value, what: str, rank: int, error: ErrorFn) -> list[int | None]:
    """The static dims of a rank-``rank`` value (None where unknown)."""
    t = value.tensor_type
    if t.shape is None:
        return [None] * rank
    if len(t.shape) != rank:
        raise error(f"{what} is {t}, expected rank {rank}")
    return [d if isinstance(d, int) else None for d in t.shape]


def expect_dims(
    value: Value, what: str, want: Sequence[int | None], why: str, error: ErrorFn
) -> None:
    """Check ``value`` against the dims the layer's attributes imply (None: any)."""
    got = static_dims(value, what, len(want), error)
    if any(w is not None and g is not None and g != w for g, w in zip(got, want, strict=True)):
        shown = ",".join("?" if w is None else str(w) for w in want)
        raise error(f"{what} is {value.type}, expected [{shown}] ({why})")
