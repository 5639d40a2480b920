"""Fine-tune a GRU predictor exported from PyTorch, then deploy it to onnxruntime and OpenVINO.

``data/gru_model.onnx`` (written by ``make_finetune_data.py``) predicts the next value of a
sine wave at every step; it was pretrained on slow, clean waves. Here it is

1. loaded with ``tl.load(..., trainable=True)`` (its GRU becomes one canonical Loop, its
   initializers trainable variables under their names),
2. given a loss: an input ``target`` and the mean squared error of ``pred`` against it, added
   with an ``Emitter``,
3. fine-tuned with Adam (``train.train_step``) on ``data/finetune_gru.npz``, faster and noisy
   waves, in mini-batches, its weights trainable variables of one stateful training model,
4. saved with its trained weights, without the loss, as ONNX and as OpenVINO IR, and each file
   run in its own runtime, whose predictions must equal tensorloop's.

Run: ``python examples/finetune_gru.py [--epochs N] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tensorloop as tl
from tensorloop import train
from tensorloop.ir.emit import Emitter

DATA = Path(__file__).parent / "data"
EPOCHS, BATCH, LEARNING_RATE, VALIDATION = 20, 32, 0.02, 64
ADAM_EPS = 1e-5
"""Adam's step is lr * m / (sqrt(v) + eps): with optax's eps 1e-8, a float32 gradient entry
near zero (some are ~3e-8 here) takes a step of about lr decided by its rounding error, which
differs from one summation order (backend) to another; 1e-5 keeps such steps small."""
RTOL, ATOL = 1e-4, 1e-5
"""float32 through 20 recurrent steps, computed in another order by each runtime."""

Array = np.ndarray[Any, Any]


@dataclass
class Result:
    losses: list[float]
    """The mean training loss of each epoch."""
    validation: tuple[float, float]
    """The validation loss before and after fine-tuning."""
    changes: dict[str, float]
    """The largest change of each weight."""
    differences: dict[str, float]
    """The largest difference of each runtime's predictions from tensorloop's."""
    files: list[Path]


def with_loss(predictor: tl.Model) -> tl.Model:
    """``predictor`` with an input ``target`` (like ``pred``) and an output ``loss``, the mean
    squared error of ``pred``."""
    graph = predictor.graph.clone()
    (pred,) = graph.outputs
    target = graph.add_input("target", pred.type)
    em = Emitter(graph)
    error = em.op("Sub", [pred, target])
    loss = em.op("ReduceMean", [em.op("Mul", [error, error])], {"keepdims": 0})
    graph.outputs = [pred, graph.result_named(loss, "loss")]
    return tl.Model(graph, backend=predictor.backend, limits=predictor.limits)


def mse(model: tl.Model, x: Array, y: Array) -> float:
    return float(np.mean((model.run({"x": x})["pred"] - y) ** 2))


def run_onnxruntime(path: Path, x: Array) -> Array:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["pred"], {"x": x})[0])


def run_openvino(path: Path, x: Array) -> Array:
    import openvino as ov

    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled.create_infer_request().infer({"x": x})
    return np.asarray(result[compiled.output("pred")])


def main(
    epochs: int = EPOCHS, out: Path | str | None = None, seed: int = 0, verbose: bool = True
) -> Result:
    say = print if verbose else (lambda *_: None)
    waves = np.load(DATA / "finetune_gru.npz")["waves"]  # [time + 1, count, 1]
    x, y = waves[:-1], waves[1:]
    x_val, y_val, x, y = x[:, :VALIDATION], y[:, :VALIDATION], x[:, VALIDATION:], y[:, VALIDATION:]

    # trainable=True: the initializers are variables under their names, read at run time
    predictor = tl.load(DATA / "gru_model.onnx", trainable=True)
    names = list(predictor.graph.variables)
    step = train.train_step(
        with_loss(predictor),
        loss="loss",
        params=names,
        optimizer=train.adam(LEARNING_RATE, eps=ADAM_EPS),
    )
    before = mse(predictor, x_val, y_val)
    say(f"{len(names)} weights; {x.shape[1]} sequences of {x.shape[0]} steps")
    say(f"validation mean squared error before fine-tuning: {before:.4f}")

    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(epochs):
        order = rng.permutation(x.shape[1])
        batches = [order[k : k + BATCH] for k in range(0, len(order) - BATCH + 1, BATCH)]
        losses.append(
            float(np.mean([step.step({"x": x[:, b], "target": y[:, b]}) for b in batches]))
        )
        say(f"epoch {epoch + 1:2d}: loss {losses[-1]:.4f}")

    trained_weights = step.params()
    trained = train.with_weights(predictor, trained_weights)
    changes = {
        n: float(np.max(np.abs(w - predictor.graph.variables[n].initial)))
        for n, w in trained_weights.items()
    }
    after = mse(trained, x_val, y_val)
    say(f"validation mean squared error after fine-tuning: {after:.4f}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out) if out is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = [folder / "gru_finetuned.onnx", folder / "gru_finetuned.xml"]
        for path in files:
            tl.save(trained, path)
        ours = trained.run({"x": x_val})["pred"]
        differences = {}
        for runtime, path, run in [
            ("onnxruntime", files[0], run_onnxruntime),
            ("openvino", files[1], run_openvino),
        ]:
            theirs = run(path, x_val)
            np.testing.assert_allclose(theirs, ours, rtol=RTOL, atol=ATOL, err_msg=runtime)
            differences[runtime] = float(np.max(np.abs(theirs - ours)))
            say(f"{runtime} runs {path.name}: largest difference {differences[runtime]:.2g}")
    return Result(losses, (before, after), changes, differences, files if out is not None else [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--out", type=Path, default=None, help="keep the saved models here")
    args = parser.parse_args()
    main(args.epochs, args.out)
