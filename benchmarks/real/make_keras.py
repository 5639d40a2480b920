"""Make the Keras / TensorFlow group of the real-model corpus.

Each model is a Keras recurrent model or a ``tf.function`` with a ``tf.while_loop``, built with
random weights from a fixed seed and exported with tf2onnx the way users export them
(``tf2onnx.convert.from_keras`` / ``from_function``, tf2onnx's default opset). Every model gets
its own folder ``corpus/keras/<name>/`` with ``model.onnx``, ``meta.json``, ``inputs.npz`` (one
call's feeds by ONNX input name) and ``outputs.npz`` (TensorFlow's own outputs by ONNX output
name). onnxruntime is run on each export as a check that the outputs were named right.

This runs in its own environment, not the project's (TensorFlow pins numpy < 2):

    python3 -m venv /tmp/tfenv
    /tmp/tfenv/bin/pip install -r benchmarks/real/requirements-keras.txt
    /tmp/tfenv/bin/python benchmarks/real/make_keras.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported

import numpy as np
import onnx
import onnxruntime as ort
import tensorflow as tf
import tf2onnx

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus" / "keras"
SEED = 20240615
RTOL = 1e-4
ATOL = 1e-5

Array = np.ndarray[Any, Any]
layers = tf.keras.layers


@dataclass(frozen=True)
class Made:
    """One exported model with one call's feeds and TensorFlow's outputs, by ONNX name."""

    proto: onnx.ModelProto
    feeds: dict[str, Array]
    outputs: dict[str, Array]


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    calls: str
    build: Callable[[np.random.Generator], Made]


# --- exporting --------------------------------------------------------------------------------


def normal(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape).astype(np.float32)


def jitter_biases(variables: Sequence[tf.Variable], rng: np.random.Generator) -> None:
    """Fresh Keras layers start with zero biases (LSTM: forget gate one); a little noise, as after
    training, makes the export's bias layout matter."""
    for v in variables:
        if "bias" in v.name:
            v.assign_add(0.1 * rng.standard_normal(v.shape).astype(np.float32))


def _by_onnx_name(proto: onnx.ModelProto, values: Sequence[Any]) -> dict[str, Array]:
    """TensorFlow's outputs, in the order tf2onnx wrote the graph outputs, by their ONNX names."""
    names = [o.name for o in proto.graph.output]
    if len(names) != len(values):
        raise ValueError(f"{len(names)} ONNX outputs but TensorFlow gave {len(values)}")
    return {name: np.asarray(value) for name, value in zip(names, values, strict=True)}


def export_keras(model: tf.keras.Model, feeds: dict[str, Array]) -> Made:
    """Export ``model`` with its batch axis left open; its inputs are named as in ``feeds``."""
    jitter_biases(model.weights, np.random.default_rng(SEED + 1))
    signature = [
        tf.TensorSpec((None, *t.shape[1:]), t.dtype, name=t.name.split(":")[0])
        for t in model.inputs
    ]
    missing = {s.name for s in signature} - feeds.keys()
    if missing:
        raise ValueError(f"no feed for {sorted(missing)}")
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=signature)
    args = [tf.constant(feeds[s.name]) for s in signature]
    result = model(args if len(args) > 1 else args[0], training=False)
    return Made(proto, feeds, _by_onnx_name(proto, tf.nest.flatten(result)))


def export_function(fn: tf.types.experimental.GenericFunction, feeds: dict[str, Array]) -> Made:
    """Export a ``tf.function`` with an input signature whose specs are named as in ``feeds``."""
    signature = fn.input_signature
    proto, _ = tf2onnx.convert.from_function(fn, input_signature=signature)
    result = fn(*[tf.constant(feeds[s.name]) for s in signature])
    return Made(proto, feeds, _by_onnx_name(proto, tf.nest.flatten(result)))


# --- Keras recurrent layers -------------------------------------------------------------------


def lstm_last(rng: np.random.Generator) -> Made:
    x = layers.Input((50, 40), name="features")
    model = tf.keras.Model(x, layers.LSTM(64)(x))
    return export_keras(model, {"features": normal(rng, 1, 50, 40)})


def lstm_sequences(rng: np.random.Generator) -> Made:
    x = layers.Input((30, 16), name="features")
    model = tf.keras.Model(x, layers.LSTM(48, return_sequences=True)(x))
    return export_keras(model, {"features": normal(rng, 4, 30, 16)})


def gru(rng: np.random.Generator) -> Made:
    x = layers.Input((50, 40), name="features")
    model = tf.keras.Model(x, layers.GRU(64)(x))  # reset_after=True
    return export_keras(model, {"features": normal(rng, 4, 50, 40)})


def simple_rnn(rng: np.random.Generator) -> Made:
    x = layers.Input((40, 12), name="features")
    model = tf.keras.Model(x, layers.SimpleRNN(32)(x))
    return export_keras(model, {"features": normal(rng, 1, 40, 12)})


def bilstm_tagger(rng: np.random.Generator) -> Made:
    x = layers.Input((25, 32), name="embeddings")
    h = layers.Bidirectional(layers.LSTM(32, return_sequences=True))(x)
    tags = layers.Dense(9, activation="softmax")(h)
    return export_keras(tf.keras.Model(x, tags), {"embeddings": normal(rng, 4, 25, 32)})


def stacked_lstm(rng: np.random.Generator) -> Made:
    x = layers.Input((60, 24), name="features")
    h = layers.LSTM(64, return_sequences=True)(x)
    h = layers.LSTM(64)(h)
    scores = layers.Dense(10, activation="softmax")(h)
    return export_keras(tf.keras.Model(x, scores), {"features": normal(rng, 1, 60, 24)})


def masked_lstm(rng: np.random.Generator) -> Made:
    """Four sequences of 40, 31, 17 and 8 steps, zero-padded to 40 and masked."""
    x = layers.Input((40, 20), name="padded")
    h = layers.Masking(mask_value=0.0)(x)
    h = layers.LSTM(32)(h)
    model = tf.keras.Model(x, layers.Dense(5)(h))
    padded = normal(rng, 4, 40, 20)
    for row, length in enumerate((40, 31, 17, 8)):
        padded[row, length:] = 0.0
    return export_keras(model, {"padded": padded})


def conv_lstm1d(rng: np.random.Generator) -> Made:
    x = layers.Input((12, 32, 8), name="frames")
    h = layers.ConvLSTM1D(16, 3, padding="same")(x)
    return export_keras(tf.keras.Model(x, h), {"frames": normal(rng, 1, 12, 32, 8)})


def conv_gru_speech(rng: np.random.Generator) -> Made:
    """Log-mel frames -> two Conv1D (stride 2) -> GRU -> per-frame character posteriors."""
    x = layers.Input((None, 40), name="log_mel")
    h = layers.Conv1D(64, 5, strides=2, padding="same", activation="relu")(x)
    h = layers.Conv1D(64, 3, padding="same", activation="relu")(h)
    h = layers.GRU(96, return_sequences=True)(h)
    chars = layers.Dense(29, activation="softmax")(h)
    return export_keras(tf.keras.Model(x, chars), {"log_mel": normal(rng, 1, 100, 40)})


def lstm_initial_state(rng: np.random.Generator) -> Made:
    """A streaming LSTM: the state of the previous chunk comes in, the next one goes out."""
    x = layers.Input((20, 16), name="chunk")
    h0 = layers.Input((48,), name="h0")
    c0 = layers.Input((48,), name="c0")
    lstm = layers.LSTM(48, return_sequences=True, return_state=True)
    seq, h, c = lstm(x, initial_state=[h0, c0])
    model = tf.keras.Model([x, h0, c0], [seq, h, c])
    feeds = {
        "chunk": normal(rng, 4, 20, 16),
        "h0": np.tanh(normal(rng, 4, 48)),
        "c0": normal(rng, 4, 48),
    }
    return export_keras(model, feeds)


# --- TensorFlow while loops -------------------------------------------------------------------


def kepler_newton(rng: np.random.Generator) -> Made:
    """Newton's method for Kepler's equation E - e sin E = M, until every step is under 1e-5."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.float32, name="mean_anomaly"),
            tf.TensorSpec([None], tf.float32, name="eccentricity"),
        ]
    )
    def solve(m: tf.Tensor, e: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        def more(i: tf.Tensor, _: tf.Tensor, step: tf.Tensor) -> tf.Tensor:
            return tf.logical_and(i < 50, step > 1e-5)

        def newton(i: tf.Tensor, ecc: tf.Tensor, _: tf.Tensor) -> tuple[tf.Tensor, ...]:
            delta = (ecc - e * tf.sin(ecc) - m) / (1.0 - e * tf.cos(ecc))
            return i + 1, ecc - delta, tf.reduce_max(tf.abs(delta))

        start = m + e * tf.sin(m)
        i, ecc, _ = tf.while_loop(more, newton, (tf.constant(0), start, tf.constant(np.inf)))
        return ecc, i

    feeds = {
        "mean_anomaly": rng.uniform(0.0, 2 * np.pi, 256).astype(np.float32),
        "eccentricity": rng.uniform(0.0, 0.9, 256).astype(np.float32),
    }
    return export_function(solve, feeds)


def power_iteration(rng: np.random.Generator) -> Made:
    """The dominant eigenpair of a symmetric matrix, until the eigenvalue moves under 1e-5."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.float32, name="matrix"),
            tf.TensorSpec([None], tf.float32, name="start"),
        ]
    )
    def dominant(a: tf.Tensor, v0: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        def more(i: tf.Tensor, _v: tf.Tensor, lam: tf.Tensor, prev: tf.Tensor) -> tf.Tensor:
            return tf.logical_and(i < 500, tf.abs(lam - prev) > 1e-5 * tf.abs(lam))

        def step(i: tf.Tensor, v: tf.Tensor, lam: tf.Tensor, _: tf.Tensor) -> tuple[tf.Tensor, ...]:
            w = tf.linalg.matvec(a, v)
            w = w / tf.norm(w)
            return i + 1, w, tf.tensordot(w, tf.linalg.matvec(a, w), 1), lam

        v = v0 / tf.norm(v0)
        start = (tf.constant(0), v, tf.constant(0.0), tf.constant(np.inf, tf.float32))
        i, v, lam, _ = tf.while_loop(more, step, start)
        return lam, v, i

    b = normal(rng, 16, 16)
    feeds = {"matrix": (b @ b.T / 16).astype(np.float32), "start": normal(rng, 16)}
    return export_function(dominant, feeds)


class GreedyDecoder(tf.Module):
    """A GRU decoder that feeds back its argmax until every row has said EOS (or max_len)."""

    BOS, EOS = 0, 1
    VOCAB, EMBED, HIDDEN = 40, 32, 64

    def __init__(self) -> None:
        super().__init__()
        init = tf.keras.initializers.RandomNormal(stddev=0.5)
        self.embedding = tf.Variable(init((self.VOCAB, self.EMBED)), name="embedding")
        self.cell = layers.GRUCell(self.HIDDEN)
        self.cell.build((None, self.EMBED))
        jitter_biases(self.cell.weights, np.random.default_rng(SEED + 1))
        # A trained decoder says EOS sooner or later; a nudge on its logit stands in for that.
        bias = np.zeros(self.VOCAB, np.float32)
        bias[self.EOS] = 0.4
        self.project = layers.Dense(self.VOCAB, bias_initializer=tf.constant_initializer(bias))
        self.project.build((None, self.HIDDEN))

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, HIDDEN], tf.float32, name="encoder_state"),
            tf.TensorSpec([], tf.int32, name="max_len"),
        ]
    )
    def __call__(self, state: tf.Tensor, max_len: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        batch = tf.shape(state)[0]

        def more(i: tf.Tensor, _t: tf.Tensor, _h: tf.Tensor, done: tf.Tensor, _a: Any) -> tf.Tensor:
            return tf.logical_and(i < max_len, tf.logical_not(tf.reduce_all(done)))

        def step(
            i: tf.Tensor, token: tf.Tensor, h: tf.Tensor, done: tf.Tensor, out: tf.TensorArray
        ) -> tuple[Any, ...]:
            y, (h,) = self.cell(tf.gather(self.embedding, token), [h])
            token = tf.argmax(self.project(y), axis=-1, output_type=tf.int32)
            token = tf.where(done, self.EOS, token)
            return i + 1, token, h, tf.logical_or(done, token == self.EOS), out.write(i, token)

        start = (
            tf.constant(0),
            tf.fill([batch], self.BOS),
            state,
            tf.zeros([batch], tf.bool),
            tf.TensorArray(tf.int32, size=0, dynamic_size=True),
        )
        _, _, h, _, out = tf.while_loop(more, step, start)
        return tf.transpose(out.stack()), h


def greedy_decoder(rng: np.random.Generator) -> Made:
    decoder = GreedyDecoder()
    feeds = {"encoder_state": np.tanh(normal(rng, 4, 64)), "max_len": np.array(30, np.int32)}
    return export_function(decoder.__call__, feeds)


CASES = [
    Case("lstm_last", "Keras LSTM(64), last output", "batch 1, 50 steps of 40 features", lstm_last),
    Case(
        "lstm_sequences",
        "Keras LSTM(48, return_sequences=True)",
        "batch 4, 30 steps of 16 features",
        lstm_sequences,
    ),
    Case("gru", "Keras GRU(64), reset_after=True", "batch 4, 50 steps of 40 features", gru),
    Case("simple_rnn", "Keras SimpleRNN(32)", "batch 1, 40 steps of 12 features", simple_rnn),
    Case(
        "bilstm_tagger",
        "Keras Bidirectional(LSTM(32, return_sequences=True)) + Dense(9, softmax) sequence tagger",
        "batch 4, 25 steps of 32-d embeddings",
        bilstm_tagger,
    ),
    Case(
        "stacked_lstm",
        "Keras LSTM(64, return_sequences=True) -> LSTM(64) -> Dense(10, softmax) classifier",
        "batch 1, 60 steps of 24 features",
        stacked_lstm,
    ),
    Case(
        "masked_lstm",
        "Keras Masking(0.0) -> LSTM(32) -> Dense(5) over zero-padded sequences",
        "batch 4, 40 steps of 20 features, lengths 40, 31, 17, 8",
        masked_lstm,
    ),
    Case(
        "conv_lstm1d",
        "Keras ConvLSTM1D(16, kernel 3, same padding)",
        "batch 1, 12 frames of 32 positions x 8 channels",
        conv_lstm1d,
    ),
    Case(
        "conv_gru_speech",
        "Keras Conv1D(64, 5, stride 2) -> Conv1D(64, 3) -> GRU(96) -> Dense(29, softmax) "
        "speech-to-characters model",
        "batch 1, 100 frames of 40 log-mel features (time axis left open)",
        conv_gru_speech,
    ),
    Case(
        "lstm_initial_state",
        "Keras LSTM(48, return_sequences=True, return_state=True) with h0, c0 as inputs",
        "batch 4, 20 steps of 16 features, with h0 and c0 of 48",
        lstm_initial_state,
    ),
    Case(
        "kepler_newton",
        "tf.function: Newton's method on Kepler's equation in a tf.while_loop with a tolerance",
        "256 (mean anomaly, eccentricity) pairs (5 iterations)",
        kepler_newton,
    ),
    Case(
        "power_iteration",
        "tf.function: power iteration in a tf.while_loop until the eigenvalue settles",
        "one 16x16 symmetric matrix and a start vector (20 iterations)",
        power_iteration,
    ),
    Case(
        "greedy_decoder",
        "tf.function: GRUCell greedy decoder in a tf.while_loop with EOS early stop",
        "batch 4 encoder states of 64, max_len 30 (all rows end at step 9)",
        greedy_decoder,
    ),
]


# --- writing ----------------------------------------------------------------------------------


def op_types(graph: onnx.GraphProto) -> set[str]:
    """Every op type in ``graph`` and its subgraphs (Loop and If bodies)."""
    found: set[str] = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            subs = [*attr.graphs, attr.g] if attr.HasField("g") else list(attr.graphs)
            for sub in subs:
                found |= op_types(sub)
    return found


def check_onnxruntime(made: Made) -> float:
    """The largest gap between onnxruntime and TensorFlow; raise where they disagree."""
    session = ort.InferenceSession(
        made.proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    got = session.run(list(made.outputs), made.feeds)
    worst = 0.0
    for (name, want), value in zip(made.outputs.items(), got, strict=True):
        if want.shape != value.shape or not np.allclose(value, want, rtol=RTOL, atol=ATOL):
            raise AssertionError(f"onnxruntime disagrees with TensorFlow on {name!r}")
        if want.size:
            worst = max(worst, float(np.max(np.abs(value.astype(np.float64) - want))))
    return worst


def write(case: Case, made: Made, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    opset = next(o.version for o in made.proto.opset_import if o.domain in ("", "ai.onnx"))
    onnx.save(made.proto, folder / "model.onnx")
    np.savez(folder / "inputs.npz", **made.feeds)
    np.savez(folder / "outputs.npz", **made.outputs)
    meta = {
        "name": case.name,
        "group": "keras",
        "format": "onnx",
        "file": "model.onnx",
        "source": case.source,
        "package": "tensorflow",
        "version": tf.__version__,
        "licence": "Apache-2.0",
        "made_by": (f"tf2onnx {tf2onnx.__version__} from Keras {version('keras')} (opset {opset})"),
        "calls": case.calls,
        "inputs": "inputs.npz",
        "outputs": "outputs.npz",
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", metavar="NAME", help="make only these models")
    parser.add_argument("--out", type=Path, default=CORPUS, help="corpus folder (%(default)s)")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.only or c.name in args.only]
    unknown = set(args.only or ()) - {c.name for c in CASES}
    if unknown:
        parser.error(f"no such model: {', '.join(sorted(unknown))}")
    for case in chosen:
        tf.keras.backend.clear_session()
        tf.keras.utils.set_random_seed(SEED)
        made = case.build(np.random.default_rng(SEED))
        gap = check_onnxruntime(made)
        folder = args.out / case.name
        write(case, made, folder)
        size = (folder / "model.onnx").stat().st_size
        ops = ", ".join(sorted(op_types(made.proto.graph)))
        print(f"{case.name}: {size / 1024:.0f} KiB, onnxruntime within {gap:.1e}; ops: {ops}")


if __name__ == "__main__":
    main()
