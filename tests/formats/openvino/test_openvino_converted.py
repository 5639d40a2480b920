"""Models OpenVINO's own converters wrote (``openvino.convert_model`` from TorchScript and from
ONNX exports of small PyTorch modules with loops, early breaks, data-dependent branches,
in-place writes and growing carried values), committed under tests/data/openvino_converted/ by
scripts/make_openvino_converted.py: tensorloop reads each and computes what torch computed and
what OpenVINO's CPU plugin computes. No torch needed here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import tensorloop as tl  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "openvino_converted"
Array = np.ndarray[Any, Any]

# Models with layer types tensorloop cannot read yet: name -> the missing layer types.
MISSING: dict[str, str] = {}


def _models() -> list[Any]:
    names = sorted(p.stem for p in DATA.glob("*.xml"))
    return [
        pytest.param(
            n,
            marks=pytest.mark.xfail(strict=True, reason=f"layer types not read yet: {MISSING[n]}"),
        )
        if n in MISSING
        else n
        for n in names
    ]


def _runs(name: str) -> list[tuple[dict[str, Array], list[Array]]]:
    data = np.load(DATA / f"{name}.npz")
    runs: dict[int, tuple[dict[str, Array], dict[int, Array]]] = {}
    for key in data.files:
        kind, j, rest = key.split(":", 2)
        feeds, outs = runs.setdefault(int(j), ({}, {}))
        if kind == "in":
            feeds[rest] = data[key]
        else:
            outs[int(rest)] = data[key]
    return [(feeds, [outs[k] for k in sorted(outs)]) for _, (feeds, outs) in sorted(runs.items())]


def test_every_model_is_committed_with_its_runs() -> None:
    names = {p.stem for p in DATA.glob("*.xml")}
    for stem in ("recurrence", "early_break", "branch", "growing", "loop_with_branch"):
        assert {f"{stem}_torch", f"{stem}_onnx"} <= names
    for name in names:
        assert (DATA / f"{name}.bin").is_file() and (DATA / f"{name}.npz").is_file()
        assert len(_runs(name)) >= 2


@pytest.mark.parametrize("name", _models())
def test_matches_torch_and_openvino(name: str) -> None:
    path = DATA / f"{name}.xml"
    model = tl.load(path)
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    for feeds, want in _runs(name):
        assert sorted(model.input_names) == sorted(feeds)
        ours = list(model.run(feeds).values())
        theirs = [np.asarray(v) for v in compiled(feeds).values()]
        assert len(ours) == len(want) == len(theirs)
        for k, (got, torch_out, ov_out) in enumerate(zip(ours, want, theirs, strict=True)):
            for other, who in ((torch_out, "torch"), (ov_out, "OpenVINO")):
                assert got.shape == other.shape, f"output {k} vs {who}"
                assert got.dtype == other.dtype, f"output {k} vs {who}"
                np.testing.assert_allclose(
                    got, other, rtol=1e-5, atol=1e-6, err_msg=f"output {k} vs {who}"
                )
