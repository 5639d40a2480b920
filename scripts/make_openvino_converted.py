"""Make tests/data/openvino_converted/: small PyTorch modules with loops, early breaks, data-
dependent branches, in-place writes and growing carried values, converted by OpenVINO's own
converters (``openvino.convert_model`` from TorchScript, and from an ONNX export where torch can
export the model) and saved with ``openvino.save_model``. Beside each ``NAME.xml``/``NAME.bin``
lies ``NAME.npz``: the example inputs (``in:NAME``) and torch's outputs (``out:K``).

Run with torch installed: ``.venv/bin/python scripts/make_openvino_converted.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import torch
from torch import Tensor, nn

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "openvino_converted"


class Recurrence(nn.Module):
    """A loop over the rows, carrying h and writing each step into ys in place."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-0.5, 0.5, 4))

    def forward(self, xs: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        ys = torch.zeros_like(xs)
        for t in range(xs.shape[0]):
            h = torch.tanh(h * self.w + xs[t])
            ys[t] = h
        return h, ys


class EarlyBreak(nn.Module):
    """Halve until the norm falls under a bound, at most ``steps`` times, breaking early."""

    def forward(self, x: Tensor, steps: Tensor) -> tuple[Tensor, Tensor]:
        count = torch.zeros((), dtype=torch.int64)
        for _ in range(int(steps)):
            if bool(x.abs().sum() < 1.0):
                break
            x = x * 0.5
            count = count + 1
        return x, count


class Branch(nn.Module):
    """A branch on data: different arithmetic per sign of the sum."""

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        if bool(x.sum() > 0):  # noqa: SIM108  (an if statement, as models are written)
            out = x * y + 1.0
        else:
            out = torch.relu(x - y)
        return out


class Growing(nn.Module):
    """A carried value that doubles its length each trip."""

    def forward(self, x: Tensor, n: Tensor) -> Tensor:
        y = x
        for _ in range(int(n)):
            y = torch.cat([y, y * 0.5])
        return y


class LoopWithBranch(nn.Module):
    """A branch inside a loop: accumulate or decay per step by the sign of the row."""

    def forward(self, xs: Tensor) -> Tensor:
        acc = torch.zeros(xs.shape[1])
        for t in range(xs.shape[0]):
            row = xs[t]
            if bool(row.sum() > 0):  # noqa: SIM108
                acc = acc + row
            else:
                acc = acc * 0.5
        return acc


class BranchWithLoop(nn.Module):
    """A loop inside one branch of a data-dependent branch."""

    def forward(self, x: Tensor, n: Tensor) -> Tensor:
        if bool(x.sum() > 0):
            for _ in range(int(n)):
                x = x * 0.5 + 1.0
        else:
            x = -x
        return x


Inputs = dict[str, Tensor]


def _cases() -> list[tuple[str, nn.Module, list[Inputs]]]:
    """Each module with a few input sets: the first converts it, all are recorded. Where the
    module branches on data, the sets take each branch."""
    g = torch.Generator().manual_seed(0)

    def r(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g)

    return [
        ("recurrence", Recurrence(), [{"xs": r(5, 4), "h": r(4)}, {"xs": r(2, 4), "h": r(4)}]),
        ("early_break", EarlyBreak(), [
            {"x": r(6) * 4, "steps": torch.tensor(10)},  # breaks after a few halvings
            {"x": r(6) * 40, "steps": torch.tensor(2)},  # runs out of steps first
            {"x": r(6) * 0.01, "steps": torch.tensor(5)},  # breaks at once
        ]),
        ("branch", Branch(), [
            {"x": r(2, 3).abs(), "y": r(2, 3)},
            {"x": -r(2, 3).abs(), "y": r(2, 3)},
        ]),
        ("growing", Growing(), [
            {"x": r(3), "n": torch.tensor(3)},
            {"x": r(3), "n": torch.tensor(0)},
        ]),
        ("loop_with_branch", LoopWithBranch(), [{"xs": r(6, 3)}, {"xs": r(1, 3)}]),
        ("branch_with_loop", BranchWithLoop(), [
            {"x": r(4).abs(), "n": torch.tensor(3)},
            {"x": -r(4).abs(), "n": torch.tensor(3)},
        ]),
    ]  # fmt: skip


def _save(name: str, model: Any, runs: list[tuple[Inputs, list[Tensor]]]) -> None:
    """The IR, and ``NAME.npz`` holding ``in:J:NAME`` and ``out:J:K`` for each run J."""
    path = OUT / f"{name}.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    arrays: dict[str, Any] = {}
    for j, (inputs, outputs) in enumerate(runs):
        arrays |= {f"in:{j}:{k}": v.numpy() for k, v in inputs.items()}
        arrays |= {f"out:{j}:{i}": o.detach().numpy() for i, o in enumerate(outputs)}
    np.savez(OUT / f"{name}.npz", **arrays)
    print(f"{path.name}: {path.stat().st_size} + {path.with_suffix('.bin').stat().st_size} bytes")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, module, input_sets in _cases():
        module.eval()
        scripted = torch.jit.script(module)
        runs = []
        for inputs in input_sets:
            with torch.no_grad():
                outs = scripted(*inputs.values())
            runs.append((inputs, list(outs) if isinstance(outs, tuple) else [outs]))
        inputs = input_sets[0]
        example = tuple(inputs.values())
        model = ov.convert_model(scripted, example_input=example)
        for port, key in zip(model.inputs, inputs, strict=True):
            port.get_tensor().set_names({key})
        _save(f"{name}_torch", model, runs)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                onnx_path = Path(tmp) / f"{name}.onnx"
                torch.onnx.export(
                    scripted, example, str(onnx_path), input_names=list(inputs),
                    dynamic_axes={k: list(range(v.dim())) for k, v in inputs.items()},
                    dynamo=False, opset_version=17,
                )  # fmt: skip
                _save(f"{name}_onnx", ov.convert_model(str(onnx_path)), runs)
        except Exception as exc:
            print(f"{name}: no ONNX export ({type(exc).__name__}: {str(exc)[:120]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
