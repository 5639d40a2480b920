"""Step models written out: ONNX with explicit state (onnxruntime), OpenVINO IR with
ReadValue/Assign (OpenVINO's query_state/reset_state), and both read back and streamed."""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from streaming_models import (
    Form,
    builder_forms,
    onnx_rnn,
    openvino_converted,
    rnn_proto,
    scan_proto,
)

ort = pytest.importorskip("onnxruntime")

Array = np.ndarray[Any, Any]
CUTS = [0, 2, 3, 7, 9]  # chunks of 2, 1, 4 and 2 steps


@cache
def forms() -> tuple[Form, ...]:
    return tuple(builder_forms())


def _chunks(form: Form, inputs: dict[str, Array]) -> list[dict[str, Array]]:
    out = []
    for a, b in pairwise(CUTS):
        index = [slice(None)] * inputs[form.sequence].ndim
        index[form.axis] = slice(a, b)
        out.append(dict(inputs, **{form.sequence: inputs[form.sequence][tuple(index)]}))
    return out


def _joined(form: Form, stream: tl.Stream, outs: list[dict[str, Array]]) -> dict[str, Array]:
    joined = {}
    for name, (role, axis) in stream.output_roles.items():
        if role == "sequence":
            joined[name] = np.concatenate([o[name] for o in outs], axis=axis)
        else:
            joined[name] = outs[-1][name]
    return joined


@pytest.mark.parametrize("index", range(9))
def test_the_onnx_step_runs_in_onnxruntime_as_the_whole_model(index: int, tmp_path: Path) -> None:
    form = forms()[index]
    inputs = form.inputs(np.random.default_rng(index), 9)
    stream = form.model.stream(chunk=4)
    path = tmp_path / "step.onnx"
    tl.save(stream.step_model(), path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    wanted = {i.name for i in session.get_inputs()}
    chunks = _chunks(form, inputs)
    init = stream.init_model()
    state = dict(init.run({n: chunks[0][n] for n in init.input_names}))
    outs = []
    for chunk in chunks:
        feed = {k: v for k, v in {**chunk, **state}.items() if k in wanted}
        got = dict(zip(names, session.run(None, feed), strict=True))
        outs.append(got)
        state = {s.name: got[s.next] for s in stream.states}
    whole = form.model.run(inputs)
    for name, value in _joined(form, stream, outs).items():
        np.testing.assert_allclose(value, whole[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # read back: the step model streams as the original
    back = tl.load(path).stream(state="auto")  # the names pair the state by themselves
    assert [(s.name, s.next) for s in back.states] == [(s.name, s.next) for s in stream.states]
    back.state = dict(init.run({n: chunks[0][n] for n in init.input_names}))
    again = [back.push({k: v for k, v in c.items() if k in wanted}) for c in chunks]
    fresh = form.model.stream(chunk=4)
    for chunk, got in zip(chunks, again, strict=True):
        want = fresh.push(chunk)
        for name in fresh.output_roles:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


ov = pytest.importorskip("openvino")


def _openvino_stream(
    path: Path, chunks: list[dict[str, Array]]
) -> tuple[Any, list[dict[str, Array]]]:
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    wanted = {p.get_any_name() for p in compiled.inputs}
    outs = []
    for chunk in chunks:
        result = request.infer({k: v for k, v in chunk.items() if k in wanted})
        outs.append({o.get_any_name(): np.array(result[o], copy=True) for o in compiled.outputs})
    return request, outs


@pytest.mark.parametrize("index", range(9))
def test_the_stateful_step_runs_in_openvino_as_the_whole_model(index: int, tmp_path: Path) -> None:
    form = forms()[index]
    inputs = form.inputs(np.random.default_rng(index + 10), 9)
    chunks = _chunks(form, inputs)
    stream = form.model.stream(chunk=4)
    stateful = stream.stateful_model(chunks[0])
    path = tmp_path / "step.xml"
    tl.save(stateful, path)
    request, outs = _openvino_stream(path, chunks)
    whole = form.model.run(inputs)
    joined = _joined(form, stream, outs)
    for name, value in joined.items():
        np.testing.assert_allclose(value, whole[name], rtol=1e-4, atol=1e-5, err_msg=name)
    states = {s.name for s in request.query_state()}
    assert {s.name for s in stream.states} <= states
    request.reset_state()  # a new sequence: the same first chunk, the same outputs
    first = request.infer(
        {
            k: v
            for k, v in chunks[0].items()
            if k in {p.get_any_name() for p in request.model_inputs}
        }
    )
    for o in request.model_outputs:
        np.testing.assert_allclose(first[o], outs[0][o.get_any_name()], rtol=1e-6, atol=1e-7)
    # read back: tensorloop streams the stateful model in its variables
    back = tl.load(path).stream()
    again = [
        back.push({k: v for k, v in c.items() if k in set(back.model.input_names)}) for c in chunks
    ]
    fresh = form.model.stream(chunk=4)
    for chunk, got in zip(chunks, again, strict=True):
        want = fresh.push(chunk)
        for name in fresh.output_roles:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    back.reset()
    np.testing.assert_array_equal(
        back.push({k: v for k, v in chunks[0].items() if k in set(back.model.input_names)})[
            next(iter(fresh.output_roles))
        ],
        again[0][next(iter(fresh.output_roles))],
    )


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("LSTMSequence", lambda: rnn_proto("LSTM", initial=False)),
        ("GRUSequence", lambda: rnn_proto("GRU", layout=0, initial=True)),
        ("TensorIterator", None),
    ],
)
def test_openvino_sequence_ops_and_tensor_iterators_stream(
    kind: str, make: Any, tmp_path: Path
) -> None:
    """IR that OpenVINO's own converter wrote (ONNX LSTM/GRU become *Sequence layers, Scan a
    TensorIterator) streams in tensorloop as the whole IR runs, in OpenVINO too."""
    proto = scan_proto() if make is None else make()
    model = openvino_converted(proto, tmp_path, kind)
    assert kind in (tmp_path / f"{kind}.xml").read_text()
    rng = np.random.default_rng(5)
    feeds = {
        v.name: rng.standard_normal(
            [9 if d in ("T", "?") or not isinstance(d, int) else d for d in v.type.shape]
        ).astype(np.float32)  # type: ignore[union-attr]
        for v in model.inputs
    }
    stream = model.stream(chunk=3)
    ((name, axis),) = stream.sequence_inputs.items()
    whole = model.run(feeds)
    outs = []
    for a in range(0, 9, 3):
        index = [slice(None)] * feeds[name].ndim
        index[axis] = slice(a, a + 3)
        outs.append(stream.push(dict(feeds, **{name: feeds[name][tuple(index)]})))
    for out, (role, ax) in stream.output_roles.items():
        got = np.concatenate([o[out] for o in outs], ax) if role == "sequence" else outs[-1][out]
        np.testing.assert_array_equal(got, whole[out], err_msg=out)


def test_the_rnn_forms_read_back_from_onnx_keep_streaming(tmp_path: Path) -> None:
    form = onnx_rnn("LSTM")
    tl.save(form.model, tmp_path / "m.onnx")
    again = tl.load(tmp_path / "m.onnx")
    assert again.stream(chunk=2).sequence_inputs == {"X": 0}


def test_an_openvino_sequence_typed_for_5_steps_streams_any_length(tmp_path: Path) -> None:
    """LSTMSequence over x: f32[2, 5, 3] with its sequence lengths computed from x's shape, as
    OpenVINO's converters write it: the reader writes the mask's time indices 0..4 out as a
    constant, and the stream counts each chunk's own (chunks of 2, and 9 steps at once)."""
    ops = pytest.importorskip("openvino.opset13")
    rng = np.random.default_rng(0)
    batch, steps, width, hidden = 2, 5, 3, 4
    x = ops.parameter([batch, steps, width], np.float32, name="x")
    h0 = ops.parameter([batch, 1, hidden], np.float32, name="h0")
    c0 = ops.parameter([batch, 1, hidden], np.float32, name="c0")
    length = ops.gather(
        ops.shape_of(x), ops.constant(np.array([1], np.int64)), ops.constant(np.int64(0))
    )
    lengths = ops.broadcast(
        ops.squeeze(length, ops.constant(np.array([0], np.int64))),
        ops.constant(np.array([batch], np.int64)),
    )

    def weights(*shape: int) -> Any:
        return ops.constant((rng.standard_normal(shape) * 0.5).astype(np.float32))

    seq = ops.lstm_sequence(
        x,
        h0,
        c0,
        lengths,
        weights(1, 4 * hidden, width),
        weights(1, 4 * hidden, hidden),
        weights(1, 4 * hidden),
        hidden,
        "forward",
    )
    ov.save_model(
        ov.Model([seq.output(0), seq.output(1)], [x, h0, c0]),
        str(tmp_path / "lstm.xml"),
        compress_to_fp16=False,
    )
    model = tl.load(tmp_path / "lstm.xml")
    feeds = {
        "x": rng.standard_normal((batch, steps, width)).astype(np.float32),
        "h0": rng.standard_normal((batch, 1, hidden)).astype(np.float32),
        "c0": rng.standard_normal((batch, 1, hidden)).astype(np.float32),
    }
    stream = model.stream(chunk=2)
    assert stream.sequence_inputs == {"x": 1}
    whole = model.run(feeds)
    outs = [stream.push(dict(feeds, x=feeds["x"][:, a : a + 2])) for a in range(0, steps, 2)]
    for name, (role, axis) in stream.output_roles.items():
        got = (
            np.concatenate([o[name] for o in outs], axis) if role == "sequence" else outs[-1][name]
        )
        np.testing.assert_array_equal(got, whole[name], err_msg=name)
    stream.reset()
    longer = stream.push(dict(feeds, x=rng.standard_normal((batch, 9, width)).astype(np.float32)))
    assert [v.shape for v in longer.values()] == [(batch, 1, 9, hidden), (batch, 1, hidden)]
