"""Write what examples/finetune_gru.py fine-tunes: a GRU predictor pretrained in PyTorch and
exported to ONNX (``data/gru_model.onnx``), and a small data set it has not seen
(``data/finetune_gru.npz``: ``waves [time + 1, count, 1]``, float32; a sequence's inputs are
its first ``time`` samples, its targets the last ``time``).

The predictor reads a sequence ``x [time, batch, 1]`` and predicts, at every step, the next
value (``pred [time, batch, 1]``): a GRU (hidden 16) and a linear head. It is pretrained here on
clean, slow sine waves (frequencies 0.3 to 0.6 rad/step); the data set to fine-tune on holds
faster, noisy ones (0.6 to 1.2 rad/step, amplitude 0.5 to 1.5, noise 0.05), on which the
pretrained predictor is poor.

Needs torch (not a test dependency): ``python examples/make_finetune_data.py``. The files are
committed, so the example and its test run without it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import onnx
import torch

DATA = Path(__file__).parent / "data"
STEPS, HIDDEN = 20, 16


class Predictor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(1, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.head(y)


def sines(
    rng: np.random.Generator, count: int, freq: tuple[float, float], amp: tuple[float, float],
    noise: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``count`` sine waves of STEPS + 1 samples, time first: inputs and next-step targets."""
    w = rng.uniform(*freq, size=count)
    a = rng.uniform(*amp, size=count)
    phase = rng.uniform(0, 2 * np.pi, size=count)
    t = np.arange(STEPS + 1)[:, None]
    waves = a * np.sin(w * t + phase) + noise * rng.standard_normal((STEPS + 1, count))
    waves = waves[..., None].astype(np.float32)
    return waves[:-1], waves[1:]


def pretrain(model: Predictor, rng: np.random.Generator) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(300):
        x, y = sines(rng, 64, (0.3, 0.6), (0.8, 1.2), 0.0)
        loss = torch.mean((model(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Predictor()
    pretrain(model, rng)
    model.eval()
    x, y = sines(rng, 320, (0.6, 1.2), (0.5, 1.5), 0.05)
    with torch.no_grad():
        before = float(torch.mean((model(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2))
    DATA.mkdir(exist_ok=True)
    f = io.BytesIO()
    axes = {0: "time", 1: "batch"}
    torch.onnx.export(model, (torch.from_numpy(x[:, :32]),), f, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["pred"],
                      dynamic_axes={"x": axes, "pred": axes})  # fmt: skip
    onnx.save(onnx.load_from_string(f.getvalue()), DATA / "gru_model.onnx")
    waves = np.concatenate([x, y[-1:]])
    np.savez_compressed(DATA / "finetune_gru.npz", waves=waves)
    print(f"pretrained predictor on the new data: mean squared error {before:.4f}")


if __name__ == "__main__":
    main()
