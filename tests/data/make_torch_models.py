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


class GreedyDecoder(torch.nn.Module):
    """A scripted greedy decoder: a while loop that appends each step's token and logits to a
    list, breaks on an end token, and stacks / concatenates the lists after the loop (what
    TorchScript exports as SequenceEmpty, SequenceInsert and ConcatFromSequence around a Loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.inp = torch.nn.Linear(4, 4)
        self.rec = torch.nn.Linear(4, 4)
        self.out = torch.nn.Linear(4, 6)

    def forward(self, h: torch.Tensor, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        token = torch.zeros(h.shape[0], dtype=torch.long)
        tokens: list[torch.Tensor] = []
        logits: list[torch.Tensor] = []
        for _ in range(max_len):
            h = torch.tanh(self.inp(self.embed(token)) + self.rec(h))
            y = self.out(h)
            token = y.argmax(-1)
            tokens.append(token)
            logits.append(y)
            if bool((token == 5).all()):
                break
        return torch.stack(tokens, 1), torch.cat(logits, 0)


def export_greedy_decoder() -> None:
    torch.manual_seed(0)
    f = io.BytesIO()
    decoder, args = torch.jit.script(GreedyDecoder().eval()), (torch.randn(2, 4), torch.tensor(7))
    torch.onnx.export(decoder, args, f, dynamo=False, opset_version=17,
                      input_names=["h", "max_len"], output_names=["tokens", "logits"],
                      dynamic_axes={"h": {0: "batch"}})  # fmt: skip
    onnx.save(onnx.load_from_string(f.getvalue()), HERE / "torch_greedy_decoder.onnx")


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
    export_greedy_decoder()


if __name__ == "__main__":
    main()
