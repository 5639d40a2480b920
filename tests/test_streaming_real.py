"""The real corpus streamed (``benchmarks/real/corpus``): every model that can run chunk by chunk
gives, joined over its chunks, its own whole-sequence outputs bit for bit; every other recurrent
model is refused with the reason. The keras group is committed, the others made by
``benchmarks/real/make_corpus.py`` (skipped where absent)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl

CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "real" / "corpus"

STREAMS = {
    "keras/gru": {"features": 1},
    "keras/lstm_initial_state": {"chunk": 1},
    "keras/lstm_last": {"features": 1},
    "keras/lstm_sequences": {"features": 1},
    "keras/masked_lstm": {"padded": 1},
    "keras/simple_rnn": {"features": 1},
    "keras/stacked_lstm": {"features": 1},
    "torch/lstm2_batch_first_dynamo": {"x": 1},
    "torch/lstm2_batch_first_ts": {"x": 1},
    "torch/rnn_tanh2_h0_ts": {"x": 0},
    "torch/layernorm_lstm_ts": {"x": 0},
}
"""Each model that streams over time, with its sequence input and time axis."""

REFUSED = {
    "keras/bilstm_tagger": "sliced in reverse",
    "keras/conv_lstm1d": "is reduced by ReduceSum over its time axis",
    "keras/conv_gru_speech": "which mixes time steps",
    "keras/greedy_decoder": "slices nothing (a while loop, reading its data by index)",
    "torch/bigru_ctc_tagger_ts": "sliced in reverse",
    "torch/bilstm2_h0c0_ts": "sliced in reverse",
    "torch/conv_gru_speech_encoder_ts": "Conv '/conv/conv.2/Conv', which mixes time steps",
    "torch/greedy_seq2seq_decoder_ts": "can end loop '/Loop' early",
    "openvino/ov_bilstm2_h0c0": "sliced in reverse",
}
"""Recurrent models a stream cannot run, each with a part of the message that says why."""


def _model(name: str) -> tuple[tl.Model, dict[str, Any]]:
    folder = CORPUS / name
    if not (folder / "meta.json").is_file():
        pytest.skip(f"{name} is not in the corpus here (benchmarks/real/make_corpus.py makes it)")
    meta = json.loads((folder / "meta.json").read_text())
    return tl.load(folder / meta["file"]), dict(np.load(folder / "inputs.npz"))


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_real_model_streams_chunk_by_chunk_as_it_runs_whole(name: str) -> None:
    model, inputs = _model(name)
    stream = model.stream(chunk=3)
    assert stream.sequence_inputs == STREAMS[name]
    ((sequence, axis),) = stream.sequence_inputs.items()
    whole = model.run(inputs)
    length = inputs[sequence].shape[axis]
    pushed = []
    for start in range(0, length, 5):  # pushes of 5 steps, run in chunks of 3 and 2
        index = [slice(None)] * inputs[sequence].ndim
        index[axis] = slice(start, start + 5)
        pushed.append(stream.push(dict(inputs, **{sequence: inputs[sequence][tuple(index)]})))
    for out, (role, out_axis) in stream.output_roles.items():
        if role == "sequence":
            got = np.concatenate([p[out] for p in pushed], axis=out_axis)
        else:
            got = pushed[-1][out]
        np.testing.assert_array_equal(got, whole[out], err_msg=f"{name}: {out}")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_real_model_that_needs_the_whole_sequence_is_refused(name: str) -> None:
    model, _ = _model(name)
    with pytest.raises(tl.StreamingError, match=re.escape(REFUSED[name])):
        model.stream(chunk=3)


@pytest.mark.parametrize("name", ["shipped/silero_vad_v5", "shipped/silero_vad_v6"])
def test_silero_vad_streams_with_its_own_state(name: str) -> None:
    """The package's own loop: each 512-sample chunk after 64 samples of context, the state
    fed back, the same as the stream."""
    model, inputs = _model(name)
    stream = model.stream(state="auto", state_init={"state": np.zeros((2, 1, 128), np.float32)})
    assert [(s.name, s.next) for s in stream.states] == [("state", "stateN")]
    rng = np.random.default_rng(0)
    state = np.zeros((2, 1, 128), np.float32)
    for _ in range(4):
        chunk = (rng.standard_normal((1, 576)) * 0.1).astype(np.float32)
        got = stream.push({"input": chunk, "sr": inputs["sr"]})
        want = model.run({"input": chunk, "state": state, "sr": inputs["sr"]})
        np.testing.assert_array_equal(got["output"], want["output"])
        state = want["stateN"]
    np.testing.assert_array_equal(stream.state["state"], state)
