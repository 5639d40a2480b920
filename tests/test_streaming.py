"""Streaming: a model run chunk by chunk gives what one run over the whole sequence gives."""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import cache
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorloop as tl
from loop_models import LoopSpec, build, loop_specs, make_inputs
from streaming_models import BATCH, HIDDEN, WIDTH, Form, builder_forms, counted_loop
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from tensorloop.passes.streaming import make_step
from tensorloop.tensor.types import TensorType

Array = np.ndarray[Any, Any]


@cache
def forms() -> tuple[Form, ...]:
    return tuple(builder_forms())


def _rows(x: Array, axis: int, start: int, stop: int) -> Array:
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def _pushed(form: Form, stream: tl.Stream, inputs: dict[str, Array], cuts: list[int]) -> list[Any]:
    """The outputs of pushing ``inputs`` cut at ``cuts`` (the sequence input's rows)."""
    bounds = [0, *cuts, inputs[form.sequence].shape[form.axis]]
    pushed = []
    for start, stop in pairwise(bounds):
        chunk = dict(inputs)
        chunk[form.sequence] = _rows(inputs[form.sequence], form.axis, start, stop)
        pushed.append((stop, stream.push(chunk)))
    return pushed


def _check_law(form: Form, stream: tl.Stream, inputs: dict[str, Array], cuts: list[int]) -> None:
    """The stream's sequence outputs joined are the whole run's, and after each push its
    read-outs are those of a whole run over the sequence so far."""
    whole = form.model.run(inputs)
    pushed = _pushed(form, stream, inputs, cuts)
    for name, (role, axis) in stream.output_roles.items():
        if role == "sequence":
            assert axis is not None
            joined = np.concatenate([out[name] for _, out in pushed], axis=axis)
            np.testing.assert_array_equal(joined, whole[name], err_msg=f"{form.name}: {name}")
        else:
            for stop, out in pushed:
                prefix = dict(inputs)
                prefix[form.sequence] = _rows(inputs[form.sequence], form.axis, 0, stop)
                want = form.model.run(prefix)[name]
                np.testing.assert_array_equal(
                    out[name], want, err_msg=f"{form.name}: {name}@{stop}"
                )


@settings(max_examples=60, deadline=None)
@given(
    form=st.integers(0, 8),
    length=st.integers(1, 11),
    chunk=st.integers(1, 5),
    data=st.data(),
    backend=st.sampled_from(["reference", "compiled"]),
)
def test_streamed_is_the_whole_run(
    form: int, length: int, chunk: int, data: st.DataObject, backend: str
) -> None:
    f = forms()[form]
    cuts = sorted(data.draw(st.sets(st.integers(1, length - 1), max_size=4)) if length > 1 else [])
    inputs = f.inputs(np.random.default_rng(length * 31 + chunk), length)
    stream = f.model.stream(chunk=chunk, backend=backend)
    _check_law(f, stream, inputs, list(cuts))


@pytest.mark.parametrize("index", range(9))
def test_every_form_streams_chunk_by_chunk(index: int) -> None:
    f = forms()[index]
    inputs = f.inputs(np.random.default_rng(index), 9)
    _check_law(f, f.model.stream(chunk=2), inputs, [1, 2, 5, 8])


@pytest.mark.parametrize("index", range(9))
def test_the_jax_backend_streams_within_its_ulp_law(index: int) -> None:
    pytest.importorskip("jax")
    from backend_agreement import assert_same_value

    f = forms()[index]
    inputs = f.inputs(np.random.default_rng(3), 7)
    whole = f.model.run(inputs, backend="reference")
    stream = f.model.stream(chunk=4, backend="jax")
    pushed = _pushed(f, stream, inputs, [4])
    for name, (role, axis) in stream.output_roles.items():
        if role == "sequence":
            got = np.concatenate([out[name] for _, out in pushed], axis=axis)
        else:
            got = pushed[-1][1][name]
        assert_same_value(got, whole[name], f"jax vs reference: streamed {name} of {f.name}")


def test_a_long_push_runs_in_chunks_of_the_stream_size(monkeypatch: pytest.MonkeyPatch) -> None:
    f = counted_loop(100)
    lengths: list[int] = []
    run = tl.Stream._run

    def seen(self: tl.Stream, args: dict[str, Any]) -> Any:
        lengths.append(args["x"].shape[0])
        return run(self, args)

    monkeypatch.setattr(tl.Stream, "_run", seen)
    stream = f.model.stream(chunk=4)
    out = stream.push(f.inputs(np.random.default_rng(0), 10))
    assert lengths == [4, 4, 2]
    assert out["hs"].shape == (10, WIDTH)


def test_a_trip_count_shorter_than_the_sequence_holds_across_chunks() -> None:
    f = counted_loop(5)
    inputs = f.inputs(np.random.default_rng(1), 12)
    stream = f.model.stream(chunk=3)
    out = [stream.push({"x": inputs["x"][k : k + 3]}) for k in range(0, 12, 3)]
    whole = f.model.run(inputs)
    assert [o["hs"].shape[0] for o in out] == [3, 2, 0, 0]
    np.testing.assert_array_equal(np.concatenate([o["hs"] for o in out]), whole["hs"])
    np.testing.assert_array_equal(out[-1]["h"], whole["h"])
    assert stream.state["counted.time"] == 5


# -- state -------------------------------------------------------------------------------------


def test_state_reads_sets_and_resets() -> None:
    f = forms()[0]
    inputs = f.inputs(np.random.default_rng(2), 6)
    stream = f.model.stream(chunk=2)
    assert stream.state == {}
    first = stream.push({"x": inputs["x"][:3], "h0": inputs["h0"]})
    (state,) = stream.states
    assert state.type == TensorType("float32", (BATCH, HIDDEN))
    np.testing.assert_array_equal(stream.state[state.name], first["last"])
    saved = stream.state
    second = stream.push({"x": inputs["x"][3:], "h0": inputs["h0"]})
    stream.state = saved  # rewind: the same chunk gives the same outputs
    again = stream.push({"x": inputs["x"][3:], "h0": inputs["h0"]})
    np.testing.assert_array_equal(again["ys"], second["ys"])
    stream.reset()
    assert stream.state == {}
    np.testing.assert_array_equal(
        stream.push({"x": inputs["x"][:3], "h0": inputs["h0"]})["ys"], first["ys"]
    )


def test_the_initial_state_comes_from_the_inputs_as_in_the_model() -> None:
    f = forms()[0]
    inputs = f.inputs(np.random.default_rng(4), 4)
    stream = f.model.stream(chunk=4)
    out = stream.push(inputs)
    other = dict(inputs, h0=inputs["h0"] + 1)
    stream.reset()
    assert not np.array_equal(stream.push(other)["ys"], out["ys"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"nope": np.zeros(2)}, "no state named 'nope'"),
        ({"scan.carried0": np.zeros((BATCH, HIDDEN), np.float64)}, "got an array of float64"),
        ({"scan.carried0": np.zeros((BATCH, 9), np.float32)}, "got shape [2, 9]"),
    ],
)
def test_a_bad_state_is_refused(value: dict[str, Array], message: str) -> None:
    stream = forms()[0].model.stream(chunk=2)
    with pytest.raises(tl.InputError, match=message.replace("[", r"\[")):
        stream.state = value


def test_bad_chunks_are_refused() -> None:
    f = forms()[0]
    with pytest.raises(tl.InputError, match="chunk must be at least 1"):
        f.model.stream(chunk=0)
    stream = f.model.stream(chunk=2)
    inputs = f.inputs(np.random.default_rng(0), 3)
    with pytest.raises(tl.InputError, match="at least one time step"):
        stream.push({"x": inputs["x"][:0], "h0": inputs["h0"]})
    with pytest.raises(tl.InputError, match="missing input"):
        stream.push({"x": inputs["x"]})
    with pytest.raises(tl.InputError, match="no input named 'y'"):
        stream.push({**inputs, "y": inputs["x"]})
    with pytest.raises(tl.InputError, match=r"input 'h0': expected f32\[2,4\], got float64"):
        stream.push({"x": inputs["x"], "h0": inputs["h0"].astype(np.float64)})
    lists = stream.push({"x": inputs["x"].tolist(), "h0": inputs["h0"].tolist()})  # converted
    assert lists["ys"].shape == (3, BATCH, HIDDEN)


def test_many_streams_of_one_model_from_many_threads() -> None:
    f = forms()[4]  # ONNX LSTM
    sequences = [f.inputs(np.random.default_rng(k), 8) for k in range(6)]
    want = [f.model.stream(chunk=3).push(s) for s in sequences]
    got: list[Any] = [None] * len(sequences)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            stream = f.model.stream(chunk=3)
            outs = [
                stream.push({**sequences[k], "X": sequences[k]["X"][a : a + 2]})
                for a in range(0, 8, 2)
            ]
            got[k] = {n: np.concatenate([o[n] for o in outs]) for n in ["Y_relu"]}
            got[k]["Y_h"] = outs[-1]["Y_h"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(sequences))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[k]["Y_relu"], w["Y_relu"])
        np.testing.assert_array_equal(got[k]["Y_h"], w["Y_h"])


def test_one_stream_pushed_from_many_threads_keeps_its_state_whole() -> None:
    f = forms()[3]  # ONNX Loop: the state after n one-step pushes of zeros is a fixed point
    stream = f.model.stream(chunk=1)
    h0 = np.zeros((BATCH, HIDDEN), np.float32)
    x = np.ones((1, BATCH, WIDTH), np.float32)
    threads = [
        threading.Thread(target=lambda: [stream.push({"x": x, "h0": h0}) for _ in range(5)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sequential = f.model.stream(chunk=1)
    for _ in range(20):
        out = sequential.push({"x": x, "h0": h0})
    np.testing.assert_array_equal(stream.state["loop.h_in"], out["hT"])


# -- what cannot be streamed -------------------------------------------------------------------


def _scan_model(reverse: bool = False, reduce_time: bool = False, attend: bool = False) -> Any:
    tl.reset()
    x = tl.placeholder("float32", ("T", 3), name="x")
    memory = tl.reduce_mean(x, 0) if attend else tl.constant(np.zeros(3, np.float32))

    def step(h: Any, xt: Any) -> Any:
        new = tl.tanh(h + xt + memory)
        return new, new

    init = tl.constant(np.zeros(3, np.float32))
    last, ys = tl.scan(step, init, x, reverse=reverse)
    out = tl.reduce_sum(ys, 0) if reduce_time else ys
    return tl.Model({"out": out, "last": last})


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (lambda: _scan_model(reverse=True), r"%x is sliced in reverse by loop 'scan'"),
        (
            lambda: _scan_model(reduce_time=True),
            r"cannot stream ReduceSum: %\w+ is reduced by ReduceSum over its time axis "
            r"\(output 'out'\)",
        ),
        (
            lambda: _scan_model(attend=True),
            r"ReduceMean .*over its time axis \(is read whole by every iteration of loop 'scan'",
        ),
    ],
)
def test_what_needs_the_whole_sequence_is_named(model: Any, message: str) -> None:
    with pytest.raises(tl.StreamingError, match=message):
        model().stream(chunk=2)


def test_a_while_loops_exit_cannot_be_streamed() -> None:
    tl.reset()
    x = tl.placeholder("float32", ("T", 3), name="x")

    def step(h: Any, xt: Any) -> Any:
        return tl.tanh(h + xt), h

    last, _ = tl.scan(step, tl.constant(np.zeros(3, np.float32)), x)
    g = tl.Model({"last": last}).graph
    loop = Loop(next(n for n in g.nodes if n.op == "Loop"))
    body = loop.body
    keep_going = Emitter(body).op("Less", [body.inputs[0], Emitter(body).ints(3)])
    body.outputs[0] = keep_going
    with pytest.raises(tl.StreamingError, match="can end loop 'scan' early"):
        tl.Model(g).stream(chunk=2)


def test_a_model_without_a_time_loop_says_how_to_stream_it() -> None:
    tl.reset()
    x = tl.placeholder("float32", (3,), name="x")
    with pytest.raises(
        tl.StreamingError, match=r"sequence=\{name: axis\}.*state=\{input: output\}"
    ):
        tl.Model({"y": x * 2.0}).stream(chunk=2)


def test_a_sequence_input_that_is_not_an_input_is_named() -> None:
    with pytest.raises(tl.StreamingError, match="has no input 'nope'"):
        forms()[0].model.stream(chunk=2, sequence={"nope": 0})


# -- explicit state ----------------------------------------------------------------------------


def _vad_like() -> tl.Model:
    """The voice-activity pattern: a model that takes ``state`` and returns ``stateN``."""
    tl.reset()
    chunk = tl.placeholder("float32", ("batch", 8), name="input")
    state = tl.placeholder("float32", (2, "batch", 4), name="state")
    w = tl.constant(_weights_pair()[0])
    u = tl.constant(_weights_pair()[1])
    h = tl.tanh(tl.matmul(chunk, w) + tl.matmul(state, u))
    prob = tl.sigmoid(tl.reduce_sum(h, -1))
    return tl.Model({"output": prob, "stateN": h}, inputs=[chunk, state])


def _weights_pair() -> tuple[Array, Array]:
    rng = np.random.default_rng(9)
    return (
        (rng.standard_normal((8, 4)) * 0.3).astype(np.float32),
        (rng.standard_normal((4, 4)) * 0.3).astype(np.float32),
    )


def test_state_pairs_by_name_and_type() -> None:
    model = _vad_like()
    stream = model.stream(state="auto")
    assert [(s.name, s.next) for s in stream.states] == [("state", "stateN")]
    rng = np.random.default_rng(0)
    chunks = [rng.standard_normal((3, 8)).astype(np.float32) for _ in range(4)]
    state = np.zeros((2, 3, 4), np.float32)  # zeros, its batch taken from the chunk
    for c in chunks:
        got = stream.push({"input": c})
        want = model.run({"input": c, "state": state})
        np.testing.assert_array_equal(got["output"], want["output"])
        state = want["stateN"]
    np.testing.assert_array_equal(stream.state["state"], state)
    assert list(got) == ["output"]


def test_explicit_pairs_and_their_errors() -> None:
    model = _vad_like()
    assert model.stream(state={"state": "stateN"}).states[0].next == "stateN"
    with pytest.raises(tl.StreamingError, match="no output 'nope'"):
        model.stream(state={"state": "nope"})
    with pytest.raises(tl.StreamingError, match=r"state input 'input' of model .* is f32"):
        model.stream(state={"input": "stateN"})
    tl.reset()
    x = tl.placeholder("float32", (3,), name="x")
    with pytest.raises(tl.StreamingError, match="no input and output whose names and types"):
        tl.Model({"y": x * 2.0}).stream(state="auto")


def test_explicit_state_with_a_symbolic_dim_of_no_input_needs_an_initial_value() -> None:
    tl.reset()
    x = tl.placeholder("float32", (3,), name="x")
    h = tl.placeholder("float32", ("n",), name="h")
    model = tl.Model({"y": x * 2.0, "h_out": h * 0.5}, inputs=[x, h])
    stream = model.stream(state="auto")
    with pytest.raises(tl.StreamingError, match=r"give it with state_init="):
        stream.push({"x": np.ones(3, np.float32)})
    stream = model.stream(state="auto", state_init={"h": np.ones(5, np.float32)})
    stream.push({"x": np.ones(3, np.float32)})
    np.testing.assert_array_equal(stream.state["h"], np.full(5, 0.5, np.float32))
    stream.reset()
    np.testing.assert_array_equal(stream.state["h"], np.ones(5, np.float32))


def test_a_model_with_persistent_tensors_streams_in_them() -> None:
    tl.reset()
    x = tl.placeholder("float32", (3,), name="x")
    total = tl.persistent_tensor(np.zeros(3, np.float32), name="total")
    tl.assign(total, total + x)
    model = tl.Model({"sum": total + x})
    stream = model.stream()
    assert [s.name for s in stream.states] == ["total"]
    outs = [stream.push({"x": np.full(3, k, np.float32)})["sum"] for k in range(1, 4)]
    np.testing.assert_array_equal(outs[-1], np.full(3, 6, np.float32))
    other = model.stream()  # its own state
    np.testing.assert_array_equal(other.push({"x": np.ones(3, np.float32)})["sum"], np.ones(3))
    stream.reset()
    np.testing.assert_array_equal(stream.state["total"], np.zeros(3, np.float32))


# -- the pass, in IR text ------------------------------------------------------------------------


def test_make_step_golden() -> None:
    g = Graph("rnn")
    x = g.add_input("x", TensorType("float32", ("T", 2)))
    body = Graph("body")
    body.add_input("i", ITERATION_TYPE)
    h = body.add_input("h", TensorType("float32", (2,)))
    xt = body.add_input("xt", TensorType("float32", (2,)))
    bem = Emitter(body)
    new = bem.op("Tanh", [bem.op("Add", [h, xt])], output_name="new")
    body.set_outputs([bem.const(np.array(True)), new, new])
    em = Emitter(g)
    zeros = em.const(np.zeros(2, np.float32), name="zeros")
    loop = Loop.build(
        em, body, carried=[zeros], sliced=[(x, Sliced(0))], stacked=[Stacked(0)], name="rnn"
    )
    g.set_outputs([g.result_named(loop.outputs[0], "h"), g.result_named(loop.outputs[1], "ys")])
    program = make_step(g)
    assert str(program.step) == GOLDEN_STEP
    assert str(program.init) == GOLDEN_INIT
    assert program.sequence == {"x": 0}
    assert program.outputs == {"h": ("readout", None), "ys": ("sequence", 0)}


GOLDEN_STEP = """\
graph @rnn(%x: f32[T,2], %rnn.h: f32[2]) {
  %h, %ys = Loop(carried=[%rnn.h], sliced=[%x]) {body = graph @body(\
%i: i64[], %h: f32[2], %xt: f32[2]) {
    %0 = Add(%h, %xt) : f32[2]
    %new = Tanh(%0) : f32[2]
    %1 = Constant() {value = dense<bool[]>[true]} : bool[]
    return %1, %new, %new
  }, sliced = [Sliced(axis=0, reverse=false)], \
stacked = [Stacked(axis=0, reverse=false)]} : f32[2], f32[?,2] loc("rnn")
  %rnn.h.next = Identity(%h) : f32[2]
  return %h, %ys, %rnn.h.next
}"""

GOLDEN_INIT = """\
graph @rnn.init() {
  %rnn.h = Constant() {value = dense<f32[2]>[0.0, 0.0]} : f32[2]
  return %rnn.h
}"""


def test_a_static_export_streams_at_any_chunk_length() -> None:
    """A model typed for a 5-step sequence (as static exports are), whose constant 0..4 is a
    feature permutation, not time steps: it streams in chunks of 2 and of 7."""
    tl.reset()
    x = tl.placeholder("float32", (5, 5), name="x")
    order = tl.constant(np.arange(5, dtype=np.int64))
    picked = tl.gather(x, order, axis=1)

    def step(h: Any, xt: Any) -> Any:
        new = tl.tanh(h * 0.5 + xt)
        return new, new

    last, ys = tl.scan(step, tl.constant(np.zeros(5, np.float32)), picked)
    model = tl.Model({"ys": ys, "last": last})
    rng = np.random.default_rng(0)
    for chunk, length in [(2, 5), (7, 9)]:
        xs = rng.standard_normal((length, 5)).astype(np.float32)
        stream = model.stream(chunk=chunk)
        out = stream.push({"x": xs})
        if length == 5:
            whole = model.run({"x": xs})
            np.testing.assert_array_equal(out["ys"], whole["ys"])
            np.testing.assert_array_equal(out["last"], whole["last"])
        else:  # longer than the declared sequence: as a loop over it by hand
            h = np.zeros(5, np.float32)
            for t in range(length):
                h = np.tanh(h * np.float32(0.5) + xs[t])
            np.testing.assert_array_equal(out["last"], h)
            assert out["ys"].shape == (9, 5)


@settings(max_examples=120, deadline=None)
@given(spec=loop_specs(), chunk=st.integers(1, 4), data=st.data())
def test_any_loop_streams_as_it_runs_whole_or_is_refused(
    spec: LoopSpec, chunk: int, data: st.DataObject
) -> None:
    """The law over random canonical loops (tests/loop_models.py): every trip count, condition,
    slice and stack axis, reverse or not. Where ``make_step`` takes the loop, the stream's
    outputs joined are the whole run's; where it refuses, it says why in a StreamingError."""
    lengths = {length for _, _, length in spec.sliced}
    assume(len(lengths) == 1 and lengths != {0})  # one sequence, as a stream's chunks are
    model = tl.Model(build(spec))
    inputs = make_inputs(spec)
    try:
        whole = model.run(inputs)
    except tl.TensorloopError:
        assume(False)  # a run that fails (the iteration limit) has no streamed twin
    try:
        stream = model.stream(chunk=chunk)
    except tl.StreamingError as exc:
        assert "cannot stream" in str(exc) or "no loop over a time axis" in str(exc)
        return
    (length,) = lengths
    cuts = sorted(data.draw(st.sets(st.integers(1, length - 1), max_size=3)) if length > 1 else [])
    bounds = [0, *cuts, length]
    pushed = []
    for start, stop in pairwise(bounds):
        chunk_inputs = dict(inputs)
        for name, axis in stream.sequence_inputs.items():
            chunk_inputs[name] = _rows(inputs[name], axis, start, stop)
        pushed.append(stream.push(chunk_inputs))
    for name, (role, axis) in stream.output_roles.items():
        if role == "sequence":
            assert axis is not None
            got = np.concatenate([p[name] for p in pushed], axis=axis)
        else:
            got = pushed[-1][name]
        np.testing.assert_array_equal(got, whole[name], err_msg=name, strict=True)


def _streamable(spec: LoopSpec) -> LoopSpec:
    """``spec`` made a loop over time: one sequence length, no condition, nothing reversed."""
    length = max([length for _, _, length in spec.sliced], default=0) or 4
    return replace(
        spec,
        sliced=tuple((axis, False, length) for axis, _, _ in spec.sliced) or ((0, False, length),),
        stacked=tuple((value, axis, False) for value, axis, _ in spec.stacked),
        init_cond=None,
        body_cond=("true",),
        max_iterations=None,
    )


@settings(max_examples=120, deadline=None)
@given(spec=loop_specs().map(_streamable), chunk=st.integers(1, 4), data=st.data())
def test_every_loop_over_time_streams(spec: LoopSpec, chunk: int, data: st.DataObject) -> None:
    """Random loops over time (any trip count, given or constant, any slice and stack axis,
    stacked iteration numbers) all stream, exactly."""
    test_any_loop_streams_as_it_runs_whole_or_is_refused.hypothesis.inner_test(  # type: ignore[attr-defined]
        spec, chunk, data
    )
    assert tl.Model(build(spec)).stream(chunk=chunk).states is not None


def test_streams_of_one_model_share_the_step_and_its_plans() -> None:
    f = forms()[4]
    one, two = f.model.stream(chunk=2), f.model.stream(chunk=3)
    assert one._step is two._step  # made once per way of streaming, planned once per shape
    assert f.model.stream(chunk=2, sequence={"X": 0})._step is not one._step
    vad = _vad_like()
    assert vad.stream(state="auto")._step is vad  # explicit state: the model is the step


def test_a_push_takes_an_input_by_any_of_its_names() -> None:
    f = forms()[0]
    model = tl.Model(f.model.graph.clone())
    model.graph.input_aliases = {"frames": "x"}  # as an OpenVINO port with two names
    inputs = f.inputs(np.random.default_rng(6), 5)
    by_alias = model.stream(chunk=2).push({"frames": inputs["x"], "h0": inputs["h0"]})
    by_name = model.stream(chunk=2).push(inputs)
    np.testing.assert_array_equal(by_alias["ys"], by_name["ys"])
    with pytest.raises(tl.InputError, match="given twice"):
        model.stream(chunk=2).push({**inputs, "frames": inputs["x"]})
