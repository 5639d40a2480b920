"""Models written by PyTorch's own ONNX exporters (tests/data/make_torch_models.py), run against
onnxruntime, then exported again and run in onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import tensorloop as tl
from tensorloop.formats.onnx.writer import to_onnx

DATA = Path(__file__).resolve().parents[2] / "data"
RNG = np.random.default_rng(5)


def _ort(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


CASES = {
    # batch and time differ from the export's example: the dims are dynamic
    "torch_lstm_gru_torchscript.onnx": lambda: {
        "x": RNG.standard_normal((2, 7, 8)).astype(np.float32)
    },
    "torch_lstm_gru_dynamo.onnx": lambda: {"x": RNG.standard_normal((3, 5, 8)).astype(np.float32)},
    "torch_scripted_loop.onnx": lambda: {
        "x": RNG.standard_normal(4).astype(np.float32),
        "n": np.array(6, np.int64),
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_exports_match_onnxruntime_and_round_trip(name: str) -> None:
    proto = onnx.load(DATA / name)
    feeds = CASES[name]()
    want = _ort(proto, feeds)
    model = tl.load(DATA / name)
    out = model.run(feeds)
    _same([out[n] for n in model.output_names], want)
    assert any(n.op == "Loop" for _, n in model.graph.walk())
    again = to_onnx(model)
    onnx.checker.check_model(again, full_check=True)
    _same(_ort(again, feeds), want)
