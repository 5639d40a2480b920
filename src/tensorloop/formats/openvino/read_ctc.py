"""OpenVINO beam-search and CTC layers read as core ops: GatherTree, the greedy decoders, CTCLoss.

One converter per layer type, at every opset version OpenVINO's converters write.

Read here: GatherTree-1, CTCGreedyDecoder-1, CTCGreedyDecoderSeqLen-6 and CTCLoss-4, each with
all of its attributes and index types, exactly as their specs define them.

GatherTree walks each beam's parents back in time: one ``Loop`` over the reversed time axis
carries the parent of every beam and gathers its step id; steps past ``min(max_seq_len, T)`` hold
``end_token``, and so does every step after the first ``end_token`` of a beam.

The greedy decoders are the ArgMax over classes, a mask of the steps that emit (within the
sequence, not blank, and, with merging, not the class of the step before), and a compaction of
the emitted classes to the front of each row (a stable ``TopK`` of the positions, the dropped
ones pushed behind), padded with -1. CTCGreedyDecoder's blank is the last class and a row ends
at its first zero in ``sequence_mask``.

CTCLoss preprocesses each row's labels (first occurrences only with ``unique``, runs collapsed
with ``preprocess_collapse_repeated``), compacts them, interleaves them with blanks and runs the
forward (alpha) recursion of Graves et al. in log space as one ``Loop`` over time, each row's
state frozen past its ``logit_length``. Without ``ctc_merge_repeated`` a label state cannot
repeat (each label takes exactly one step) and may follow an equal label without a blank
between them.

Where the CPU plugin departs from the specs, the specs decide (docs/openvino.md): a GatherTree
row whose ``max_seq_len`` is 0 or less is all ``end_token``, and a CTCLoss row with an empty
target costs -log P(all blanks), 0 when it has no steps either."""

from __future__ import annotations

import numpy as np

from ...ir.emit import Emitter
from ...ir.graph import Graph, Value
from ...ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .convert import LayerContext, converter
from .inputs import cast_to, has_input, scalar_input, type_of

__all__: list[str] = []

_I64 = DType.int64


def _input_of_rank(ctx: LayerContext, index: int, what: str, rank: int, kind: str) -> Value:
    """Input ``index``, checked to be of ``rank`` and of ``kind`` ("float", "int" or "number")."""
    value = ctx.input(index)
    t = type_of(ctx, value)
    ok = {"float": t.dtype.is_float, "int": t.dtype.is_int}.get(kind, t.dtype.is_numeric)
    if t.rank not in (None, rank) or not ok:
        raise ctx.error(f"input #{index} ({what}) must be a rank-{rank} {kind} tensor, got {t}")
    return value


def _dim(em: Emitter, x: Value, axis: int) -> Value:
    """Dim ``axis`` of ``x`` as an int64 scalar, a constant where it is static."""
    shape = x.tensor_type.shape
    if shape is not None and isinstance(shape[axis], int):
        return em.ints(int(shape[axis]))
    return em.op("Squeeze", [em.op("Shape", [x], {"start": axis, "end": axis + 1}), em.ints([0])])


def _positions(em: Emitter, x: Value, axis: int) -> Value:
    """0, 1, ... along dim ``axis`` of ``x`` (int64)."""
    shape = x.tensor_type.shape
    if shape is not None and isinstance(shape[axis], int):
        return em.ints(list(range(int(shape[axis]))))
    return em.op("Range", [em.ints(0), _dim(em, x, axis), em.ints(1)])


def _within(em: Emitter, positions: Value, lengths: Value) -> Value:
    """bool ``[len(lengths), len(positions)]``: position j lies below row n's length."""
    rows = em.op("Unsqueeze", [_i64(em, lengths), em.ints([1])])
    return em.op("Less", [positions, rows])


def _i64(em: Emitter, value: Value) -> Value:
    if value.tensor_type.dtype is _I64:
        return value
    return em.op("Cast", [value], {"to": _I64})


def _slice_type(value: Value, axis: int) -> TensorType:
    """The type of one slice of ``value`` along ``axis``, as a Loop body sees it."""
    t = value.tensor_type
    return t.with_shape(None if t.shape is None else t.shape[:axis] + t.shape[axis + 1 :])


def _scalar(em: Emitter, value: float, dt: DType) -> Value:
    return em.const(np.array(value, dtype=dt.numpy))


def _compact(em: Emitter, values: Value, keep: Value, fill: Value) -> tuple[Value, Value]:
    """The kept entries of each row of ``values [N, T]`` moved to its front in order, the rest
    ``fill``; and how many each row keeps (both int64)."""
    pos = _positions(em, values, 1)
    # Distinct keys: a kept entry its position, a dropped one its position + T; the k smallest
    # in ascending order put the kept ones first, each group in its original order.
    count = _dim(em, values, 1)
    key = em.op("Where", [keep, pos, em.op("Add", [pos, count])])
    k = em.op("Unsqueeze", [count, em.ints([0])])
    sorted_keys, order = em.ops("TopK", [key, k], {"axis": 1, "largest": 0, "sorted": 1})
    gathered = em.op("GatherElements", [values, order], {"axis": 1})
    out = em.op("Where", [em.op("Less", [sorted_keys, count]), gathered, fill])
    kept = em.op("ReduceSum", [em.op("Cast", [keep], {"to": _I64}), em.ints([1])], {"keepdims": 0})
    return out, kept


def _after_previous_by(em: Emitter, x: Value, shift: int) -> Value:
    """bool ``[N, S]``: entry s of ``x`` differs from entry s - ``shift`` (true for s < shift)."""
    previous = em.op("Pad", [x, em.ints([0, shift, 0, -shift])])
    differs = em.op("Not", [em.op("Equal", [x, previous])])
    first = em.op("Less", [_positions(em, x, 1), em.ints(shift)])
    return em.op("Or", [differs, first])


def _greedy_emits(em: Emitter, classes: Value, valid: Value, blank: Value, merge: bool) -> Value:
    """bool ``[N, T]``: the steps whose class a greedy CTC decoder emits."""
    keep = em.op("And", [valid, em.op("Not", [em.op("Equal", [classes, blank])])])
    if merge:
        keep = em.op("And", [keep, _after_previous_by(em, classes, 1)])
    return keep


# -- GatherTree ------------------------------------------------------------------------------------
@converter("GatherTree")
def _gather_tree(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    step_ids = _input_of_rank(ctx, 0, "step_ids", 3, "number")
    parents = cast_to(ctx, _input_of_rank(ctx, 1, "parent_idx", 3, "number"), _I64)
    max_len = _input_of_rank(ctx, 2, "max_seq_len", 1, "number")
    end = scalar_input(ctx, 3, "end_token")
    dt = type_of(ctx, step_ids).dtype
    if any(type_of(ctx, ctx.input(i)).dtype is not dt for i in range(1, 4)):
        raise ctx.error(f"all inputs must share step_ids' element type {dt.value}")
    # valid [T, B]: step t of batch b lies below min(max_seq_len[b], T).
    time = _positions(em, step_ids, 0)
    valid = em.op(
        "Less",
        [
            em.op("Unsqueeze", [time, em.ints([1])]),
            em.op("Unsqueeze", [_i64(em, max_len), em.ints([0])]),
        ],
    )

    # Each beam starts from itself at its last valid step.
    beams = em.op("Unsqueeze", [_positions(em, step_ids, 2), em.ints([0])])
    start = em.op("Expand", [beams, em.op("Shape", [step_ids], {"start": 1, "end": 3})])
    sliced = [(step_ids, Sliced(0, True)), (parents, Sliced(0, True)), (valid, Sliced(0, True))]
    body = Graph(f"{em.prefix}.backtrack" if em.prefix else "backtrack")
    bem = Emitter(body, prefix=em.prefix)
    body.add_input("iteration", ITERATION_TYPE)
    parent = body.add_input("parent", start.type)
    step_t, parents_t, valid_t = (
        body.add_input(name, _slice_type(v, 0))
        for name, (v, _) in zip(("step_ids", "parent_idx", "valid"), sliced, strict=True)
    )
    end_in = body.add_input("end_token", end.type)
    here = bem.op("Unsqueeze", [valid_t, bem.ints([1])])
    token = bem.op("GatherElements", [step_t, parent], {"axis": 1})
    up = bem.op("GatherElements", [parents_t, parent], {"axis": 1})
    body.set_outputs(
        [
            bem.const(np.array(True)),
            bem.op("Where", [here, up, parent]),
            bem.op("Where", [here, token, end_in]),
        ]
    )
    loop = Loop.build(
        em, body, carried=[start], sliced=sliced, invariants=[end], stacked=[Stacked(0, True)]
    )
    tokens = loop.outputs[-1]
    # Past a beam's first end_token (and past its length) every step is end_token.
    valid3 = em.op("Unsqueeze", [valid, em.ints([2])])
    ended = em.op("Cast", [em.op("And", [em.op("Equal", [tokens, end]), valid3])], {"to": _I64})
    before = em.op("CumSum", [ended, em.ints(0)], {"exclusive": 1})
    done = em.op("Or", [em.op("Greater", [before, em.ints(0)]), em.op("Not", [valid3])])
    return [em.op("Where", [done, end, tokens])]


def _last_class(em: Emitter, scores: Value) -> Value:
    """The index of the last class of ``scores`` [., ., C] (the default blank): C - 1, int64."""
    return em.op("Sub", [_dim(em, scores, 2), em.ints(1)])


def _blank_index(ctx: LayerContext, inputs: list[Value | None], index: int, scores: Value) -> Value:
    """The optional blank_index input ``index`` as an int64 scalar; absent, the last class."""
    if not has_input(inputs, index):
        return _last_class(ctx.em, scores)
    if not type_of(ctx, ctx.input(index)).dtype.is_int:
        raise ctx.error(
            f"input #{index} (blank_index) must hold an integer, got {ctx.input(index).type}"
        )
    return _i64(ctx.em, scalar_input(ctx, index, "blank_index"))


# -- greedy decoders -------------------------------------------------------------------------------
@converter("CTCGreedyDecoder")
def _ctc_greedy_decoder(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data = _input_of_rank(ctx, 0, "data", 3, "float")
    mask = _input_of_rank(ctx, 1, "sequence_mask", 2, "float")
    merge = ctx.bool_attr("ctc_merge_repeated", True)
    classes = em.op(
        "Transpose", [em.op("ArgMax", [data], {"axis": 2, "keepdims": 0})], {"perm": [1, 0]}
    )
    # A row ends at its first zero in the mask.
    zeros = em.op(
        "Cast", [em.op("Equal", [mask, _scalar(em, 0.0, type_of(ctx, mask).dtype)])], {"to": _I64}
    )
    seen = em.op("CumSum", [em.op("Transpose", [zeros], {"perm": [1, 0]}), em.ints(1)])
    valid = em.op("Equal", [seen, em.ints(0)])
    blank = _last_class(em, data)
    keep = _greedy_emits(em, classes, valid, blank, merge)
    decoded, _ = _compact(em, classes, keep, em.ints(-1))
    out = em.op("Cast", [decoded], {"to": type_of(ctx, data).dtype})
    return [em.op("Unsqueeze", [out, em.ints([2, 3])])]


@converter("CTCGreedyDecoderSeqLen")
def _ctc_greedy_decoder_seq_len(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data = _input_of_rank(ctx, 0, "data", 3, "float")
    lengths = _input_of_rank(ctx, 1, "sequence_length", 1, "int")
    merge = ctx.bool_attr("merge_repeated", True)
    index_type = ctx.element_type("classes_index_type", "i32")
    length_type = ctx.element_type("sequence_length_type", "i32")
    if index_type not in (DType.int32, _I64) or length_type not in (DType.int32, _I64):
        raise ctx.error(
            f"index types must be i32 or i64, got {index_type.value}, {length_type.value}"
        )
    blank = _blank_index(ctx, inputs, 2, data)
    classes = em.op("ArgMax", [data], {"axis": 2, "keepdims": 0})
    valid = _within(em, _positions(em, data, 1), lengths)
    keep = _greedy_emits(em, classes, valid, blank, merge)
    decoded, count = _compact(em, classes, keep, em.ints(-1))
    return [cast_to(ctx, decoded, index_type), cast_to(ctx, count, length_type)]


# -- CTCLoss ---------------------------------------------------------------------------------------
def _target_keep(em: Emitter, labels: Value, valid: Value, unique: bool, collapse: bool) -> Value:
    """bool ``[N, T]``: the labels the spec's preprocessing keeps."""
    if unique:
        # Drop a label that an earlier one of the row repeats.
        pos = _positions(em, labels, 1)
        earlier = em.op("Less", [pos, em.op("Unsqueeze", [pos, em.ints([1])])])  # [j, i]: i < j
        same = em.op(
            "Equal",
            [
                em.op("Unsqueeze", [labels, em.ints([2])]),
                em.op("Unsqueeze", [labels, em.ints([1])]),
            ],
        )
        repeats = em.op("Cast", [em.op("And", [same, earlier])], {"to": _I64})
        seen = em.op("ReduceSum", [repeats, em.ints([2])], {"keepdims": 0})
        return em.op("And", [valid, em.op("Equal", [seen, em.ints(0)])])
    if collapse:
        return em.op("And", [valid, _after_previous_by(em, labels, 1)])
    return valid


def _alpha_step(
    em: Emitter, alpha: Value, lp: Value, stay: Value | None, skip: Value, dt: DType
) -> Value:
    """One step of the forward recursion over the extended target's states."""
    never = _scalar(em, -np.inf, dt)
    held = alpha if stay is None else em.op("Where", [stay, alpha, never])
    moved = em.op("Pad", [alpha, em.ints([0, 1, 0, -1]), never])
    jumped = em.op("Where", [skip, em.op("Pad", [alpha, em.ints([0, 2, 0, -2]), never]), never])
    ways = [em.op("Unsqueeze", [v, em.ints([2])]) for v in (held, moved, jumped)]
    total = em.op(
        "ReduceLogSumExp", [em.op("Concat", ways, {"axis": 2}), em.ints([2])], {"keepdims": 0}
    )
    return em.op("Add", [total, lp])


@converter("CTCLoss")
def _ctc_loss(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    logits = _input_of_rank(ctx, 0, "logits", 3, "float")
    logit_length = _input_of_rank(ctx, 1, "logit_length", 1, "int")
    labels = _i64(em, _input_of_rank(ctx, 2, "labels", 2, "int"))
    label_length = _input_of_rank(ctx, 3, "label_length", 1, "int")
    collapse = ctx.bool_attr("preprocess_collapse_repeated", False)
    merge = ctx.bool_attr("ctc_merge_repeated", True)
    unique = ctx.bool_attr("unique", False)
    dt = type_of(ctx, logits).dtype
    blank = _blank_index(ctx, inputs, 4, logits)

    # The target: the kept labels first, then blanks; interleaved with blanks, one more at the
    # end: ext [N, 2T+1], of which the first 2 * count + 1 states are the row's.
    valid = _within(em, _positions(em, labels, 1), label_length)
    target, count = _compact(em, labels, _target_keep(em, labels, valid, unique, collapse), blank)
    pairs = em.op(
        "Pad", [em.op("Unsqueeze", [target, em.ints([2])]), em.ints([0, 0, 1, 0, 0, 0]), blank]
    )
    ext = em.op("Pad", [em.op("Reshape", [pairs, em.ints([0, -1])]), em.ints([0, 0, 0, 1]), blank])

    is_blank = em.op("Equal", [ext, blank])
    skip = em.op("Not", [is_blank])
    if merge:
        skip = em.op("And", [skip, _after_previous_by(em, ext, 2)])
    stay = None if merge else is_blank

    # lp [N, T, S]: each state's log-probability at each step.
    log_probs = em.op("LogSoftmax", [logits], {"axis": 2})
    across = em.op(
        "Concat",
        [em.ints([1]), em.op("Shape", [logits], {"start": 1, "end": 2}), em.ints([1])],
        {"axis": 0},
    )
    index = em.op("Expand", [em.op("Unsqueeze", [ext, em.ints([1])]), across])
    lp = em.op("GatherElements", [log_probs, index], {"axis": 2})
    steps = _within(em, _positions(em, logits, 1), logit_length)

    # Before step 0 all mass sits in state 0 (whose blank self-loop leads to states 0 and 1).
    states = _positions(em, ext, 1)
    start = em.op(
        "Where",
        [
            em.op("Equal", [em.op("Expand", [states, em.op("Shape", [ext])]), em.ints(0)]),
            _scalar(em, 0.0, dt),
            _scalar(em, -np.inf, dt),
        ],
    )
    body = Graph(f"{em.prefix}.forward" if em.prefix else "forward")
    bem = Emitter(body, prefix=em.prefix)
    body.add_input("iteration", ITERATION_TYPE)
    alpha = body.add_input("alpha", start.type)
    lp_t = body.add_input("lp", _slice_type(lp, 1))
    live = body.add_input("live", _slice_type(steps, 1))
    skip_in = body.add_input("skip", skip.type)
    stay_in = None if stay is None else body.add_input("stay", stay.type)
    new = _alpha_step(bem, alpha, lp_t, stay_in, skip_in, dt)
    here = bem.op("Unsqueeze", [live, bem.ints([1])])
    body.set_outputs([bem.const(np.array(True)), bem.op("Where", [here, new, alpha])])
    loop = Loop.build(
        em,
        body,
        carried=[start],
        sliced=[(lp, Sliced(1)), (steps, Sliced(1))],
        invariants=[skip] if stay is None else [skip, stay],
    )
    final = loop.outputs[0]

    # The paths end in the last state or, for a non-empty target, in its last label.
    last = em.op("Unsqueeze", [em.op("Mul", [count, em.ints(2)]), em.ints([1])])
    label = em.op("Max", [em.op("Sub", [last, em.ints(1)]), em.ints(0)])
    nonempty = em.op("Unsqueeze", [em.op("Greater", [count, em.ints(0)]), em.ints([1])])
    ends = [
        em.op("GatherElements", [final, last], {"axis": 1}),
        em.op(
            "Where",
            [
                nonempty,
                em.op("GatherElements", [final, label], {"axis": 1}),
                _scalar(em, -np.inf, dt),
            ],
        ),
    ]
    total = em.op(
        "ReduceLogSumExp", [em.op("Concat", ends, {"axis": 1}), em.ints([1])], {"keepdims": 0}
    )
    return [em.op("Neg", [total])]
