"""examples/finetune_gru.py, shortened: a PyTorch-exported GRU predictor, loaded, given a loss,
fine-tuned with Adam, then saved as ONNX and OpenVINO IR whose runtimes predict as tensorloop
does (the example asserts it, at float32 tolerances: rtol 1e-4, atol 1e-5)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "finetune_gru.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("finetune_gru", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for its dataclass
    spec.loader.exec_module(module)
    return module


def test_fine_tuning_lowers_the_loss_and_the_runtimes_agree(tmp_path: Path) -> None:
    example = load_example()
    result = example.main(epochs=3, out=tmp_path, verbose=False)
    assert len(result.losses) == 3
    assert result.losses[-1] < 0.8 * result.losses[0], result.losses
    before, after = result.validation
    assert after < 0.5 * before, result.validation
    assert len(result.changes) == 5  # the GRU's W, R and B and the head's weight and bias
    assert all(c > 1e-3 for c in result.changes.values()), result.changes  # each one trained
    assert set(result.differences) == {"onnxruntime", "openvino"}
    assert all(d <= 1e-4 for d in result.differences.values()), result.differences
    assert [p.name for p in result.files] == ["gru_finetuned.onnx", "gru_finetuned.xml"]
    assert all(p.is_file() for p in result.files)
