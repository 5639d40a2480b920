"""OpenVINO beam-search and CTC layers (read_ctc.py) vs. the CPU plugin: GatherTree-1,
CTCGreedyDecoder-1, CTCGreedyDecoderSeqLen-6 and CTCLoss-4; where the plugin departs from the
spec (a GatherTree row of no steps, a CTCLoss row with an empty target), vs. the spec in NumPy."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset16")

from openvino import opset1, opset4, opset6  # noqa: E402
from openvino_layer_checks import check, const, save_ir, written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)


def _one_hot_scores(classes: Array, num_classes: int) -> Array:
    """Noisy scores whose ArgMax over a new last axis is ``classes``."""
    scores = RNG.uniform(-1.0, 0.0, (*classes.shape, num_classes)).astype(np.float32)
    np.put_along_axis(scores, classes[..., None], 1.0, axis=-1)
    return scores


def _run_spec_only(build: Any, arrays: list[Array], tmp_path: Path) -> dict[str, Array]:
    """tensorloop's run of ``build(params)`` where the CPU plugin cannot be compared: the spec
    decides; OpenVINO still runs what tensorloop writes to the same results."""
    params = [ops.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    built = build(*params)
    path = save_ir(built if isinstance(built, list) else [built], params, tmp_path)
    model = tl.load(path)
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    written = tmp_path / "written"
    written.mkdir()
    written_runs_alike(model, feeds, written)
    return dict(model.run(feeds))


# -- GatherTree ------------------------------------------------------------------------------------
def _gather_tree_spec(step: Array, parent: Array, max_len: Array, end: Any) -> Array:
    """GatherTree-1's pseudocode; a row of no steps (max_seq_len <= 0) is all end_token."""
    time, batch, width = step.shape
    out = np.full_like(step, end)
    for b, w in itertools.product(range(batch), range(width)):
        steps = min(time, int(max_len[b]))
        if steps <= 0:
            continue
        p = int(parent[steps - 1, b, w])
        out[steps - 1, b, w] = step[steps - 1, b, w]
        for t in reversed(range(steps - 1)):
            out[t, b, w] = step[t, b, p]
            p = int(parent[t, b, p])
        finished = False
        for t in range(steps):
            if finished:
                out[t, b, w] = end
            elif out[t, b, w] == end:
                finished = True
    return out


# (time, batch, beams), max_seq_len, end_token
GATHER_TREE_CASES = [
    ((1, 1, 1), [1], 0),
    ((4, 2, 3), [4, 4], 2),
    ((5, 3, 4), [5, 2, 1], 3),  # rows shorter than T
    ((5, 3, 4), [9, 3, 5], 1),  # a length beyond T counts as T
    ((6, 2, 2), [6, 6], 7),  # an end_token no step holds
    ((3, 4, 1), [1, 2, 3, 3], 0),
]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("case", GATHER_TREE_CASES, ids=str)
def test_gather_tree(dtype: Any, case: Any, tmp_path: Path) -> None:
    shape, max_len, end = case
    step = RNG.integers(0, 5, shape).astype(dtype)
    parent = RNG.integers(0, shape[2], shape).astype(dtype)
    got = check(
        lambda s, p: opset1.gather_tree(s, p, const(max_len, dtype), const(end, dtype)),
        step,
        parent,
        tmp_path=tmp_path,
    )
    want = _gather_tree_spec(step, parent, np.array(max_len), end)
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_gather_tree_with_lengths_and_end_token_as_inputs(tmp_path: Path) -> None:
    step = RNG.integers(0, 4, (5, 3, 3)).astype(np.int32)
    parent = RNG.integers(0, 3, (5, 3, 3)).astype(np.int32)
    lengths = np.array([2, 5, 4], np.int32)
    end = np.array(1, np.int32)
    got = check(opset1.gather_tree, step, parent, lengths, end, tmp_path=tmp_path, dynamic=True)
    want = _gather_tree_spec(step, parent, lengths, 1)
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_gather_tree_rows_without_steps_are_end_tokens(tmp_path: Path) -> None:
    # The CPU plugin (2026.4) leaves a row of max_seq_len <= 0 uninitialised; the spec fills
    # the whole output with end_token first.
    step = RNG.integers(0, 4, (4, 3, 2)).astype(np.int32)
    parent = RNG.integers(0, 2, (4, 3, 2)).astype(np.int32)
    lengths = np.array([0, 3, -2], np.int32)
    got = _run_spec_only(
        lambda s, p, n: opset1.gather_tree(s, p, n, const(9, np.int32)),
        [step, parent, lengths],
        tmp_path,
    )
    out = next(iter(got.values()))
    np.testing.assert_array_equal(out, _gather_tree_spec(step, parent, lengths, 9))
    assert (out[:, [0, 2]] == 9).all()


# -- CTCGreedyDecoder ------------------------------------------------------------------------------
def _greedy_spec(classes: Array, lengths: Array, blank: int, merge: bool) -> tuple[Array, Array]:
    """Greedy CTC decoding of ``classes [N, T]``: the emitted classes padded with -1, counts."""
    out = np.full(classes.shape, -1, np.int64)
    counts = np.zeros(classes.shape[0], np.int64)
    for n, row in enumerate(classes):
        previous, k = -1, 0
        for c in row[: max(int(lengths[n]), 0)]:
            if c != blank and not (merge and c == previous):
                out[n, k], k = c, k + 1
            previous = c
        counts[n] = k
    return out, counts


# classes [N, T] (the blank is the last of 4 classes), sequence_mask [N, T]
GREEDY_CLASSES = np.array(
    [
        [0, 0, 3, 0, 1, 1, 2],  # repeats, merged or split by a blank
        [3, 3, 3, 3, 3, 3, 3],  # all blanks
        [2, 2, 2, 2, 2, 2, 2],  # one repeated label
        [1, 3, 1, 1, 0, 3, 0],
    ]
)
GREEDY_MASK = np.array(
    [
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 0, 1, 1, 1],  # the row ends at the first zero
        [0, 1, 1, 1, 1, 1, 1],  # a row of no steps
    ],
    np.float32,
)


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("dynamic", [False, True])
def test_ctc_greedy_decoder(merge: bool, dynamic: bool, tmp_path: Path) -> None:
    data = _one_hot_scores(GREEDY_CLASSES, 4).transpose(1, 0, 2).copy()  # [T, N, C]
    mask = GREEDY_MASK.T.copy()
    got = check(
        lambda d, m: opset1.ctc_greedy_decoder(d, m, merge),
        data,
        mask,
        tmp_path=tmp_path,
        dynamic=dynamic,
    )
    out = next(iter(got.values()))
    assert out.shape == (4, 7, 1, 1) and out.dtype == np.float32
    lengths = np.argmin(np.c_[GREEDY_MASK, np.zeros(4)], axis=1)
    want, _ = _greedy_spec(GREEDY_CLASSES, lengths, 3, merge)
    np.testing.assert_array_equal(out[:, :, 0, 0], want)


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("shape", [(1, 1, 2), (5, 3, 6), (9, 2, 3)], ids=str)
def test_ctc_greedy_decoder_on_random_scores(
    merge: bool, shape: tuple[int, int, int], tmp_path: Path
) -> None:
    time, batch, _ = shape
    data = RNG.standard_normal(shape).astype(np.float32)
    mask = (np.arange(time)[:, None] < RNG.integers(0, time + 1, batch)).astype(np.float32)
    check(lambda d, m: opset1.ctc_greedy_decoder(d, m, merge), data, mask, tmp_path=tmp_path)


# -- CTCGreedyDecoderSeqLen ------------------------------------------------------------------------
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("types", [("i32", "i32"), ("i64", "i32"), ("i32", "i64"), ("i64", "i64")])
@pytest.mark.parametrize("blank", [None, 3, 0, [2], -1], ids=str)
def test_ctc_greedy_decoder_seq_len(
    merge: bool, types: tuple[str, str], blank: Any, tmp_path: Path
) -> None:
    data = _one_hot_scores(GREEDY_CLASSES, 4)  # [N, T, C]
    lengths = np.array([7, 4, 0, 5], np.int32)  # lengths of 0 and shorter than T
    blank_input = None if blank is None else const(blank, np.int32)

    def build(d: Any, n: Any) -> list[Any]:
        layer = opset6.ctc_greedy_decoder_seq_len(d, n, blank_input, merge, *types)
        return list(layer.outputs())

    got = list(check(build, data, lengths, tmp_path=tmp_path).values())
    # A blank_index no class equals (-1) makes no step a blank, as the spec reads.
    chosen = 3 if blank is None else int(np.reshape(blank, -1)[0])
    want, counts = _greedy_spec(GREEDY_CLASSES, lengths, chosen, merge)
    assert [g.dtype for g in got] == [np.dtype(f"int{t[1:]}") for t in types]
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], counts)


@pytest.mark.parametrize("length_type", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1, 1, 2), (3, 8, 5), (2, 5, 30)], ids=str)
def test_ctc_greedy_decoder_seq_len_on_random_scores(
    length_type: Any, shape: tuple[int, int, int], tmp_path: Path
) -> None:
    batch, time, _ = shape
    data = RNG.standard_normal(shape).astype(np.float32)
    lengths = RNG.integers(0, time + 1, batch).astype(length_type)
    blank = const(1, length_type)
    check(
        lambda d, n: list(opset6.ctc_greedy_decoder_seq_len(d, n, blank, True, "i64").outputs()),
        data,
        lengths,
        tmp_path=tmp_path / "blank",
        dynamic=True,
    )
    check(
        lambda d, n: list(opset6.ctc_greedy_decoder_seq_len(d, n, merge_repeated=False).outputs()),
        data,
        lengths,
        tmp_path=tmp_path / "default",
        dynamic=True,
    )


# -- CTCLoss ---------------------------------------------------------------------------------------
def _ctc_loss_spec(
    logits: Array,
    logit_length: Array,
    labels: Array,
    label_length: Array,
    blank: int,
    collapse: bool,
    merge: bool,
    unique: bool,
) -> Array:
    """CTCLoss-4 by its definition: -log of the summed probability of every path of each row's
    length that decodes to its preprocessed target (enumerated; small T and C only)."""
    shifted = logits.astype(np.float64) - logits.max(axis=2, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=2, keepdims=True)
    losses = []
    for n in range(logits.shape[0]):
        target = [int(v) for v in labels[n, : label_length[n]]]
        if collapse:
            target = [v for i, v in enumerate(target) if i == 0 or v != target[i - 1]]
        if unique:
            target = list(dict.fromkeys(target))
        total = 0.0
        for path in itertools.product(range(logits.shape[2]), repeat=int(logit_length[n])):
            merged = [v for i, v in enumerate(path) if not (merge and i > 0 and v == path[i - 1])]
            if [v for v in merged if v != blank] == target:
                total += float(np.prod([probs[n, t, c] for t, c in enumerate(path)]))
        losses.append(-np.log(total) if total > 0 else np.inf)
    return np.array(losses, logits.dtype)


CTC_LABELS = np.array([[1, 1, 2, 0, 0], [0, 2, 2, 2, 1], [2, 2, 2, 2, 2], [1, 0, 1, 0, 0]])
CTC_LABEL_LENGTH = np.array([3, 4, 2, 4])
CTC_LOGIT_LENGTH = np.array([5, 5, 3, 4])  # rows shorter than T


@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("unique", [False, True])
@pytest.mark.parametrize("blank", [None, 0])
def test_ctc_loss(collapse: bool, merge: bool, unique: bool, blank: Any, tmp_path: Path) -> None:
    logits = RNG.standard_normal((4, 5, 4)).astype(np.float32)
    labels = CTC_LABELS if blank is None else CTC_LABELS + 1  # no label is the blank
    blank_input = None if blank is None else const(blank, np.int32)
    logit_length, labels = CTC_LOGIT_LENGTH.astype(np.int32), labels.astype(np.int32)
    got = check(
        lambda lg, n, lb, m: opset4.ctc_loss(lg, n, lb, m, blank_input, collapse, merge, unique),
        logits,
        logit_length,
        labels,
        CTC_LABEL_LENGTH.astype(np.int32),
        tmp_path=tmp_path,
        rtol=1e-5,
        atol=1e-5,
    )
    chosen = 3 if blank is None else 0
    want = _ctc_loss_spec(
        logits, logit_length, labels, CTC_LABEL_LENGTH, chosen, collapse, merge, unique
    )
    np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-5)


FLAGS = [(False, True, False), (True, False, False), (False, False, True), (True, True, True)]
"""(preprocess_collapse_repeated, ctc_merge_repeated, unique)"""


@pytest.mark.parametrize("flags", FLAGS, ids=str)
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1, 1, 2), (3, 12, 6), (2, 30, 10)], ids=str)
def test_ctc_loss_on_random_inputs(
    flags: tuple[bool, bool, bool], index_type: Any, shape: Any, tmp_path: Path
) -> None:
    batch, time, classes = shape
    logits = RNG.standard_normal(shape).astype(np.float32) * 3
    logit_length = RNG.integers(1, time + 1, batch).astype(index_type)
    label_length = np.array([RNG.integers(1, n // 2 + 2) for n in logit_length], index_type)
    labels = RNG.integers(0, classes - 1, (batch, time)).astype(index_type)
    labels[:, 1::3] = labels[:, 0::3][:, : labels[:, 1::3].shape[1]]  # some repeats
    check(
        lambda lg, n, lb, m: opset4.ctc_loss(lg, n, lb, m, None, *flags),
        logits,
        logit_length,
        labels,
        label_length,
        tmp_path=tmp_path,
        dynamic=True,
        rtol=1e-4,
        atol=1e-4,
    )


def test_ctc_loss_of_an_infeasible_target_is_inf(tmp_path: Path) -> None:
    # Three equal labels take at least five steps when merging (blanks between them).
    logits = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    labels = np.array([[1, 1, 1, 0], [1, 1, 1, 0]], np.int64)
    got = check(
        lambda lg, lb: opset4.ctc_loss(lg, const([4, 4], np.int64), lb, const([3, 3], np.int64)),
        logits,
        labels,
        tmp_path=tmp_path,
    )
    assert np.isinf(next(iter(got.values()))).all()


@pytest.mark.parametrize("flags", FLAGS, ids=str)
def test_ctc_loss_of_empty_targets_follows_the_spec(
    flags: tuple[bool, bool, bool], tmp_path: Path
) -> None:
    # The CPU plugin (2026.4) crashes on an empty target (label_length 0); the spec's loss is
    # -log P(all blanks), and 0 for a row of no steps as well.
    logits = RNG.standard_normal((4, 4, 3)).astype(np.float32)
    logit_length = np.array([4, 2, 0, 3], np.int32)
    labels = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 0, 0]], np.int32)
    label_length = np.array([0, 0, 0, 2], np.int32)
    got = _run_spec_only(
        lambda lg, n, lb, m: opset4.ctc_loss(lg, n, lb, m, None, *flags),
        [logits, logit_length, labels, label_length],
        tmp_path,
    )
    want = _ctc_loss_spec(logits, logit_length, labels, label_length, 2, *flags)
    out = next(iter(got.values()))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert out[2] == 0


@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
def test_every_backend_runs_the_lowerings_alike(backend: str, tmp_path: Path) -> None:
    logits = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    lengths = np.array([5, 3], np.int32)
    labels = np.array([[1, 1, 2, 0, 0], [2, 0, 0, 0, 0]], np.int32)
    step = RNG.integers(0, 4, (5, 2, 3)).astype(np.int32)
    parent = RNG.integers(0, 3, (5, 2, 3)).astype(np.int32)
    arrays = [logits, lengths, labels, step, parent]
    params = [ops.parameter(a.shape, a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    lg, n, lb, st, pa = params
    outputs = [
        opset4.ctc_loss(lg, n, lb, const([2, 1], np.int32)),
        *opset6.ctc_greedy_decoder_seq_len(lg, n).outputs(),
        opset1.ctc_greedy_decoder(
            ops.transpose(lg, const([1, 0, 2])), const(np.ones((5, 2)), np.float32)
        ),
        opset1.gather_tree(st, pa, n, const(1, np.int32)),
    ]
    model = tl.load(save_ir(outputs, params, tmp_path))
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    want = model.run(feeds, backend="reference")
    got = model.run(feeds, backend=backend)
    for name in model.output_names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
