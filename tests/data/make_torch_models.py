"""Write the PyTorch-exported ONNX models that tests/test_onnx_exporters.py reads.

Needs torch (not a test dependency): ``pip install torch onnxscript`` then
``python tests/data/make_torch_models.py``. The models are committed, so the tests run without it.
"""

from __future__ import annotations

import io
from pathlib import Path

import onnx
import torch

HERE = Path(__file__).parent


class Encoder(torch.nn.Module):
    """A two-layer bidirectional LSTM feeding a GRU, batch first."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = torch.nn.GRU(32, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, (h, _) = self.lstm(x)
        z, _ = self.gru(y)
        return z, h


class Halving(torch.nn.Module):
    """A scripted for loop over a run-time count: TorchScript exports it as ONNX Loop."""

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x = x * 0.5 + torch.tanh(x)
        return x


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)
    enc = Encoder().eval()
    f = io.BytesIO()
    torch.onnx.export(enc, (x,), f, dynamo=False, opset_version=14, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "time"}})  # fmt: skip
    onnx.save(onnx.load_from_string(f.getvalue()), HERE / "torch_lstm_gru_torchscript.onnx")
    program = torch.onnx.export(enc, (x,), dynamo=True)
    onnx.save(program.model_proto, HERE / "torch_lstm_gru_dynamo.onnx")
    f = io.BytesIO()
    torch.onnx.export(torch.jit.script(Halving()), (torch.randn(4), torch.tensor(3)), f,
                      dynamo=False, opset_version=15, input_names=["x", "n"])  # fmt: skip
    onnx.save(onnx.load_from_string(f.getvalue()), HERE / "torch_scripted_loop.onnx")


if __name__ == "__main__":
    main()
