"""Write the PyTorch autograd oracle that tests/autodiff/test_grad_torch.py reads.

Three float64 models, each exported to ONNX with the TorchScript exporter and a scalar output
``loss`` computed inside the exported module: a GRU (h0 an input), a two-layer bidirectional
LSTM (h0 and c0 inputs) and a scripted ``for`` loop over a run-time count (an ONNX Loop). Next
to each ``torch_grads/<name>.onnx`` an ``<name>.npz`` holds:

- ``input:<name>``: the feeds;
- ``grad:<name>``: torch's gradient of ``loss`` w.r.t. each float input and each float
  initializer, the weights as the ONNX file holds them: a GRU's/LSTM's ``W``, ``R`` and ``B``
  are torch's ``weight_ih``, ``weight_hh`` and biases with the gates reordered (ONNX LSTM
  ``i,o,f,c`` from torch's ``i,f,g,o``; ONNX GRU ``z,r,h`` from torch's ``r,z,n``), the
  directions stacked and ``B = [Wb, Rb]``; the same permutation applied to torch's parameter
  gradients gives their gradients (checked here: the permuted torch weights must equal the
  initializers);
- ``initializers``: the names of those initializers; ``loss``: torch's loss.

Needs torch (not a test dependency): ``python tests/data/make_torch_grads.py``. The files are
committed, so the tests run without it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = Path(__file__).parent / "torch_grads"

Tensors = dict[str, torch.Tensor]
ToOnnx = Callable[[Tensors], np.ndarray]
"""From the module's named parameters (values or gradients) to one ONNX initializer."""


def loss_of(*terms: torch.Tensor) -> torch.Tensor:
    """sum(0.5 t^2 + 0.3 t) over the terms: a cotangent that differs element by element."""
    total = (terms[0] * (0.5 * terms[0] + 0.3)).sum()
    for t in terms[1:]:
        total = total + (t * (0.5 * t + 0.3)).sum()
    return total


class GRULoss(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(5, 7)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = self.gru(x, h0)
        return loss_of(y, h), y


class LSTMLoss(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 3, num_layers=2, bidirectional=True)

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y, (h, c) = self.lstm(x, (h0, c0))
        return loss_of(y, h, c), y


class LoopLoss(torch.nn.Module):
    """h <- tanh(h W^T + b) * scale + 0.5 h, n times (n an input): TorchScript exports it as an
    ONNX Loop whose body reads the weights from the outer graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = torch.nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        h = x
        for _ in range(n):
            h = torch.tanh(self.lin(h)) * self.scale + h * 0.5
        return (h * (0.5 * h + 0.3)).sum(), h


# -- torch parameters as ONNX initializers -------------------------------------------------------


def gates(w: torch.Tensor, order: list[int]) -> torch.Tensor:
    """``w``'s row blocks (one per gate) in ``order``."""
    blocks = w.chunk(len(order), dim=0)
    return torch.cat([blocks[k] for k in order], dim=0)


LSTM_ORDER = [0, 3, 1, 2]  # ONNX i, o, f, c from torch i, f, g, o
GRU_ORDER = [1, 0, 2]  # ONNX z, r, h from torch r, z, n


def rnn_initializers(prefix: str, layers: int, dirs: int, order: list[int]) -> list[ToOnnx]:
    """Per layer, the ONNX W, R and B of torch's ``<prefix>.weight_ih_l<k>[_reverse]`` etc."""

    def stacked(layer: int, make: Callable[[Tensors, str], torch.Tensor]) -> ToOnnx:
        suffixes = [f"_l{layer}", f"_l{layer}_reverse"][:dirs]
        return lambda p: torch.stack([make(p, s) for s in suffixes]).detach().numpy()

    out: list[ToOnnx] = []
    for k in range(layers):
        out.append(stacked(k, lambda p, s: gates(p[f"{prefix}.weight_ih{s}"], order)))
        out.append(stacked(k, lambda p, s: gates(p[f"{prefix}.weight_hh{s}"], order)))
        out.append(
            stacked(
                k,
                lambda p, s: torch.cat(
                    [
                        gates(p[f"{prefix}.bias_ih{s}"], order),
                        gates(p[f"{prefix}.bias_hh{s}"], order),
                    ]
                ),
            )
        )
    return out


def match_initializers(
    proto: onnx.ModelProto, params: Tensors, candidates: list[ToOnnx]
) -> dict[str, ToOnnx]:
    """Each float initializer of ``proto`` with the candidate that rebuilds it from ``params``
    exactly (an initializer no candidate rebuilds is an error: the mapping would be a guess)."""
    found: dict[str, ToOnnx] = {}
    for init in proto.graph.initializer:
        value = numpy_helper.to_array(init)
        if value.dtype.kind != "f":
            continue
        hits = [
            c
            for c in candidates
            if (got := c(params)).shape == value.shape and np.array_equal(got, value)
        ]
        if len(hits) != 1:
            raise AssertionError(f"{init.name} {value.shape}: {len(hits)} torch parameters match")
        found[init.name] = hits[0]
    missing = len(candidates) - len(found)
    if missing:
        raise AssertionError(f"{missing} torch parameter(s) are not initializers of the ONNX file")
    return found


def export(
    module: torch.nn.Module | torch.jit.ScriptModule, args: tuple, names: list[str]
) -> onnx.ModelProto:
    f = io.BytesIO()
    torch.onnx.export(module, args, f, dynamo=False, opset_version=17, input_names=names,
                      output_names=["loss", "y"])  # fmt: skip
    return onnx.load_from_string(f.getvalue())


def write(
    name: str,
    module: torch.nn.Module,
    exported: torch.nn.Module | torch.jit.ScriptModule,
    feeds: Tensors,
    extra: tuple = (),
    candidates: list[ToOnnx] | None = None,
) -> None:
    """Export ``exported`` (``module`` or its script), compute torch's gradients of the loss
    and save both."""
    proto = export(
        exported, (*feeds.values(), *extra), [*feeds, *(f"n{k}" for k in range(len(extra)))]
    )
    params = dict(module.named_parameters())
    with torch.no_grad():
        mapping = match_initializers(proto, params, candidates or [])
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in feeds.items()}
    loss, _ = module(*leaves.values(), *extra)
    loss.backward()
    grads = {k: p.grad for k, p in params.items()}
    record: dict[str, np.ndarray] = {"loss": loss.detach().numpy()}
    record["initializers"] = np.array(list(mapping), dtype=np.str_)
    for k, v in leaves.items():
        record[f"input:{k}"] = v.detach().numpy()
        record[f"grad:{k}"] = v.grad.numpy()
    for init, to_onnx in mapping.items():
        record[f"grad:{init}"] = to_onnx(grads)
    for k, v in zip([f"n{k}" for k in range(len(extra))], extra, strict=True):
        record[f"input:{k}"] = v.numpy()
    HERE.mkdir(exist_ok=True)
    onnx.save(proto, HERE / f"{name}.onnx")
    np.savez_compressed(HERE / f"{name}.npz", **record)
    print(f"{name}: loss {loss.item():.6f}, initializers {list(mapping)}")


def main() -> None:
    # The exporter types a sum of 0-d tensors by the default dtype: float64, or the loss would
    # be computed in float32.
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    gru = GRULoss().double().eval()
    feeds = {"x": torch.randn(4, 2, 5), "h0": torch.randn(1, 2, 7)}
    write("gru", gru, gru, feeds, candidates=rnn_initializers("gru", 1, 1, GRU_ORDER))

    lstm = LSTMLoss().double().eval()
    feeds = {
        "x": torch.randn(4, 2, 3),
        "h0": torch.randn(4, 2, 3),
        "c0": torch.randn(4, 2, 3),
    }
    write("lstm", lstm, lstm, feeds, candidates=rnn_initializers("lstm", 2, 2, LSTM_ORDER))

    loop = LoopLoss().double().eval()
    feeds = {"x": torch.randn(2, 4)}
    linear = [
        lambda p: p["lin.weight"].detach().numpy(),  # Gemm(h, W, transB=1) in the Loop's body
        lambda p: p["lin.bias"].detach().numpy(),
        lambda p: p["scale"].detach().numpy(),
    ]
    write("loop", loop, torch.jit.script(loop), feeds, (torch.tensor(3),), linear)


if __name__ == "__main__":
    main()
