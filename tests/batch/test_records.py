"""``tensorloop.batch.RecordRunner``: records of mixed lengths run exactly as each alone
(bit for bit, the default), stacked within float rounding of that with padding only where it
cannot change an output, every fault an error row of its own record, safe from many threads."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from batch_models import (
    WIDTH,
    bilstm,
    records,
    run_alone,
    tagger,
    unbatched_scan,
)
from tensorloop.batch import (
    RecordRunner,
    bucket_length,
    output_batch_axes,
    stacked_count,
)
from tensorloop.errors import InputError

MODELS = {
    "tagger": (tagger, {}),
    "tagger_steps": (lambda: tagger(final=False), {}),
    "bilstm": (bilstm, {"batch_axis": 1}),
}
_built: dict[str, tl.Model] = {}


def model_of(name: str) -> tuple[tl.Model, dict[str, Any]]:
    make, options = MODELS[name]
    if name not in _built:
        _built[name] = make()
    return _built[name], options


def assert_exact(runner: RecordRunner, recs: list[dict[str, Any]], backend: str | None) -> None:
    results = runner.run(recs)
    assert runner._out_axes is not None
    for rec, got in zip(recs, results, strict=True):
        assert got.error is None, got.error
        assert got.outputs is not None
        want = run_alone(runner.model, rec, runner.axes, runner._out_axes, backend)
        assert got.outputs.keys() == want.keys()
        for name, value in want.items():
            assert got.outputs[name].shape == value.shape, name
            assert np.array_equal(got.outputs[name], value), name


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(sorted(MODELS)),
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    backend=st.sampled_from(["compiled", "reference"]),
    seed=st.integers(0, 2**16),
)
def test_each_record_is_exactly_a_run_of_it_alone(
    name: str, lengths: list[int], backend: str, seed: int
) -> None:
    model, options = model_of(name)
    runner = RecordRunner(model, backend=backend, **options)
    assert_exact(runner, records(seed, lengths, name=model.input_names[0]), backend)
    assert runner.stats.runs == len(lengths) and runner.stats.stacked == 0


def test_a_model_without_a_batch_axis_takes_whole_records() -> None:
    model = unbatched_scan()
    recs = records(3, [4, 1, 6], name="xs")
    for k, rec in enumerate(recs):
        rec["k"] = np.float32(0.5 + k)
    runner = RecordRunner(model, batch_axis=None)
    results = runner.run(recs)
    for rec, got in zip(recs, results, strict=True):
        want = model.run(rec)
        assert got.outputs is not None
        for n in want:
            assert np.array_equal(got.outputs[n], want[n])
    with pytest.raises(InputError, match="needs a batch axis"):
        RecordRunner(model, batch_axis=None, stack=True)


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(sorted(MODELS)),
    lengths=st.lists(st.integers(1, 14), min_size=1, max_size=10),
    max_stack=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_stacked_records_agree_with_exact_runs(
    name: str, lengths: list[int], max_stack: int, seed: int
) -> None:
    """Stacked: each record's outputs, cut back to its length, within float rounding (BLAS
    sums a stack's rows in another order) of its run alone."""
    model, options = model_of(name)
    runner = RecordRunner(model, stack=True, max_stack=max_stack, **options)
    recs = records(seed, lengths, name=model.input_names[0])
    results = runner.run(recs)
    assert runner._out_axes is not None
    for rec, got in zip(recs, results, strict=True):
        assert got.error is None and got.outputs is not None, got.error
        want = run_alone(model, rec, runner.axes, runner._out_axes)
        for n, value in want.items():
            assert got.outputs[n].shape == value.shape, n
            np.testing.assert_allclose(got.outputs[n], value, rtol=2e-6, atol=2e-6)
    stats = runner.stats
    assert stats.records == len(lengths) and stats.split == 0
    if not runner.padding:
        assert stats.padded_steps == 0


def test_padding_only_where_no_output_sees_it() -> None:
    steps, _ = model_of("tagger_steps")
    assert RecordRunner(steps, stack=True).padding
    full, _ = model_of("tagger")
    runner = RecordRunner(full, stack=True)
    assert not runner.padding
    assert "output 'last' is the final state of a loop" in runner.why_not_padded
    lstm, options = model_of("bilstm")
    runner = RecordRunner(lstm, stack=True, **options)
    assert not runner.padding and "reverse" in runner.why_not_padded

    runner = RecordRunner(steps, stack=True, max_stack=8)
    runner.run(records(1, [5, 6, 7, 8, 9]))  # buckets 6, 6, 8, 8, 12
    assert runner.stats.padded_steps == 1 + 0 + 1 + 0  # 9 is alone in its bucket:
    assert runner.stats.stacked == 4  # it runs alone, at its own length


def test_a_model_that_masks_by_its_length_input_is_padded() -> None:
    """An ONNX bidirectional LSTM with ``sequence_lens``: the runner fills it with each record's
    length, so records of different lengths pad into one stacked run, and each record's
    outputs (cut back on the time axis found from two lengths) agree with its run alone."""
    model = bilstm(lengths=True)
    recs = records(4, [3, 5, 6, 2, 6, 4], name="X")
    exact = RecordRunner(model, batch_axis=1, length_input="sequence_lens")
    stacked = RecordRunner(model, batch_axis=1, length_input="sequence_lens", stack=True)
    want, got = exact.run(recs), stacked.run(recs)
    assert stacked.padding and stacked.time_axes == {"Y": 0, "Y_h": None}
    assert stacked.stats.padded_steps > 0 and stacked.stats.split == 0
    for rec, w, g in zip(recs, want, got, strict=True):
        assert w.outputs is not None and g.outputs is not None, (w.error, g.error)
        alone = model.run(
            {"X": rec["X"][:, None], "sequence_lens": np.array([len(rec["X"])], np.int32)}
        )
        assert np.array_equal(w.outputs["Y"], alone["Y"][:, :, 0])  # exact: the run alone
        for name in ("Y", "Y_h"):
            assert g.outputs[name].shape == w.outputs[name].shape
            np.testing.assert_allclose(g.outputs[name], w.outputs[name], rtol=2e-6, atol=2e-6)
    with pytest.raises(InputError, match="length_input 'lens' is no input"):
        RecordRunner(model, batch_axis=1, length_input="lens")


def test_bucket_lengths_and_stack_sizes() -> None:
    assert [bucket_length(n, "auto") for n in range(1, 14)] == [
        1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 16,
    ]  # fmt: skip
    for n in range(1, 3000):
        b = bucket_length(n, "auto")
        assert n <= b <= max(n * 3 // 2, 2)
    assert bucket_length(7, [4, 10, 20]) == 10
    assert bucket_length(21, [4, 10, 20]) == 21  # beyond the last: its own length
    assert stacked_count(5, 32) == 6
    assert stacked_count(5, 4) == 5  # more records than max_stack never shrink
    assert stacked_count(3, 32, multiple=4) == 4
    assert stacked_count(9, 32, multiple=4) == 12


def test_bad_records_are_error_rows_and_the_rest_run() -> None:
    model, _ = model_of("tagger")
    good = records(5, [4, 6, 3])
    recs: list[dict[str, Any]] = [
        good[0],
        {"x": np.zeros((4, WIDTH + 1), np.float32)},  # wrong feature size
        {"x": np.array(["a", "b"])},  # strings for floats
        {},  # the input missing
        {"x": [[1.0, 2.0], [3.0]]},  # ragged lists: no array
        good[1],
        {"x": np.zeros((0, WIDTH), np.float32)},  # an empty sequence: runs, zero steps
        good[2],
    ]
    for stack in (False, True):
        runner = RecordRunner(model, stack=stack)
        results = runner.run(recs)
        errors = [r.error for r in results]
        assert errors[1] is not None and "input 'x'" in errors[1] and "6" in errors[1]
        assert errors[1].startswith("InputError: ")
        assert errors[2] is not None and errors[2].startswith("InputError: ")
        assert errors[3] == "InputError: input 'x' (column 'x') is missing"
        assert errors[4] is not None
        assert errors[4].startswith("InputError: input 'x' (column 'x'): not an array (ValueError")
        for k in (0, 5, 7):
            assert errors[k] is None
            want = run_alone(model, recs[k], runner.axes, runner._out_axes or {})
            got = results[k].outputs
            assert got is not None
            np.testing.assert_allclose(got["tags"], want["tags"], rtol=2e-6, atol=2e-6)
        assert runner.stats.errors == sum(e is not None for e in errors)


def test_a_stacked_run_that_fails_splits_and_each_record_answers_for_itself() -> None:
    """Lengths 9, 10, 11 pad to 12 and stack; a loop limit of 10 iterations fails the stack,
    so each record runs alone: 9 and 10 run, 11 is its own LoopLimitError."""
    model, _ = model_of("tagger_steps")
    limited = tl.Model(model.graph, limits=tl.Limits(max_iterations=10))
    runner = RecordRunner(limited, stack=True)
    results = runner.run(records(2, [9, 10, 11]))
    assert runner.stats.split == 1
    assert [r.error is None for r in results] == [True, True, False]
    assert results[2].error is not None and results[2].error.startswith("LoopLimitError: ")


@pytest.mark.handoff(reason="a while loop the compiled plan hands to the reference interpreter")
def test_a_record_that_never_ends_times_out_alone() -> None:
    """A while loop that halves ``x`` until it is below ``eps``: a zero ``eps`` never ends on a
    positive x. Each record has its own timeout; the others run."""
    tl.reset()
    x = tl.placeholder("float32", (), name="x")
    eps = tl.placeholder("float32", (), name="eps")
    out = tl.while_loop(lambda v: tl.greater(v, eps), lambda v: v * 0.5 + eps * 0.0, x)
    model = tl.Model({"y": out}, name="halving")
    runner = RecordRunner(model, batch_axis=None, timeout=0.3)
    results = runner.run(
        [
            {"x": np.float32(8.0), "eps": np.float32(1.0)},
            {"x": np.float32(1.0), "eps": np.float32(-1.0)},  # never below -1: never ends
            {"x": np.float32(3.0), "eps": np.float32(0.5)},
        ]
    )
    assert results[0].outputs is not None and results[0].outputs["y"] == np.float32(1.0)
    assert results[1].error is not None and results[1].error.startswith("RunTimeoutError: ")
    assert results[2].outputs is not None and results[2].outputs["y"] == np.float32(0.375)


def test_columns_in_and_out() -> None:
    model, _ = model_of("tagger")
    recs = records(8, [3, 5])
    batch = {
        "id": np.array([10, 11]),
        "features": np.array([recs[0]["x"], recs[1]["x"], None], dtype=object)[:2],
    }
    runner = RecordRunner(model, columns={"x": "features"})
    out = runner.run_batch(batch)
    assert list(out) == ["id", "tags", "last", "error"]
    assert out["id"].tolist() == [10, 11] and out["error"].tolist() == [None, None]
    assert out["tags"].dtype == object and out["tags"][1].shape == (5, 3)
    with pytest.raises(InputError, match="would be overwritten"):
        RecordRunner(model, columns={"x": "features"}).run_batch({**batch, "tags": batch["id"]})
    with pytest.raises(InputError, match="different lengths"):
        runner.run_batch({"id": np.arange(3), "features": batch["features"]})
    with pytest.raises(InputError, match="columns name no input"):
        RecordRunner(model, columns={"y": "features"})
    with pytest.raises(InputError, match="no output nope"):
        RecordRunner(model, outputs=["nope"])


def test_output_batch_axes_follow_the_types() -> None:
    lstm, _ = model_of("bilstm")
    x = np.zeros((4, 1, WIDTH), np.float32)
    assert output_batch_axes(lstm, {"X": x}, {"X": 1}, ["Y", "Y_h"]) == {"Y": 2, "Y_h": 1}


def test_many_threads_get_the_sequential_answers() -> None:
    """One runner, many threads at once: each thread's records get exactly what a
    sequential run gives (per-run state is the run's own)."""
    model, _ = model_of("tagger")
    runner = RecordRunner(model, backend="compiled")
    batches = [records(seed, [2 + seed % 5, 7, 3 + seed % 3]) for seed in range(8)]
    want = [runner.run(b) for b in batches]
    got: list[Any] = [None] * len(batches)

    def work(k: int) -> None:
        got[k] = runner.run(batches[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w, g in zip(want, got, strict=True):
        for a, b in zip(w, g, strict=True):
            assert a.outputs is not None and b.outputs is not None
            for n in a.outputs:
                assert np.array_equal(a.outputs[n], b.outputs[n])
