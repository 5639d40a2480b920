"""Inputs the fuzzers found that broke a loader, kept as tests: each must now raise a
TensorloopError (or run), under the same law as the fuzz tests (``fuzz_law``).

Each file in ``tests/fuzz/crashes/`` is a bundle (``fuzz_seeds.bundle``) named
``<format>-<what>``; what it broke when found is in ``FOUND`` (the first exception and where,
or, for ONNX, the ``onnx.checker`` refusal of a model tensorloop loaded and ran).
"""

from __future__ import annotations

from pathlib import Path

import fuzz_mutations as fm
import pytest
from fuzz_seeds import MAIN_FILE, unbundle

CRASHES = Path(__file__).parent / "crashes"

FOUND = {
    "onnx-graph-name-not-utf8": "AttributeError in backends/compiled/__init__.py (protobuf "
    "hands on a body graph's name that is not UTF-8 as bytes)",
    "onnx-external-location-nul": "ValueError (embedded null byte) in formats/onnx/importer.py",
    "onnx-name-nul-compiled-warning": "RuntimeWarning: the compiled backend could not plan a "
    "graph named with a NUL (ValueError), falling back to the reference",
    "onnx-ssa-duplicate-producer": "loaded: two nodes produce one tensor name (not SSA)",
    "onnx-body-output-listed-twice": "loaded: a Loop body lists one output twice",
    "onnx-ir-version-unset": "loaded: ir_version 0 (unset)",
    "onnx-ir-version-too-new": "loaded: an ir_version newer than any that exists",
    "onnx-opset-too-new": "loaded: a default-domain opset newer than any that exists",
    "onnx-opset-too-old": "loaded: opset 1 (no Loop, no Mul of that signature)",
    "onnx-unknown-attribute": "loaded: an attribute the op does not define",
    "onnx-extra-node-input": "loaded: a node with more inputs than its schema allows",
    "onnx-negative-dim": "loaded: a Constant tensor with a negative dim",
    "onnx-output-without-type": "loaded: a graph output with no type (as onnxruntime does, "
    "tensorloop infers it; it must run)",
    "onnx-attribute-wrong-type": "loaded: an attribute of the wrong type",
    "onnx-declared-dim-contradicts": "loaded: a declared output dim contradicting inference "
    "(declared dims are hints; it must run to the computed shape)",
    "onnx-no-opset-import": "loaded: an ir_version 8 model naming no opsets (read as the newest)",
    "onnx-scan-axis-out-of-range": "FallbackWarning: the compiled backend handed a Scan whose "
    "input, of no declared rank, lacks the scan axis to the reference (it now fails there, as "
    "the reference does, handing nothing on)",
    "openvino-const-shape-overflow": "OverflowError in formats/openvino/reader.py (a Const "
    "shape of 2**64)",
    "text_ir-constant-without-value": "KeyError 'value' in ir/graph.py (a Constant whose "
    "attribute is renamed)",
    "text_ir-float-axis": "TypeError in ir/loop.py (Sliced(axis=1.5))",
    "text_ir-invalid-utf8": "UnicodeDecodeError in io.py (a .tl file that is not UTF-8)",
    "text_ir-stacked-dim-contradicts": "the compiled backend ran a Loop whose stacked output is "
    "declared f32[7,3] to a [3,3] result the reference refuses (declared static types are "
    "claims: every backend checks what the inputs may break)",
}


def test_every_crash_file_is_listed() -> None:
    assert sorted(p.name for p in CRASHES.iterdir()) == sorted(FOUND)


@pytest.mark.parametrize("name", sorted(FOUND))
def test_fuzz_regression(name: str) -> None:
    fmt = name.split("-", 1)[0]
    if fmt == "openvino":
        pytest.importorskip("openvino")
    files = unbundle(fmt, (CRASHES / name).read_bytes())
    outcome = fm.load_and_run(files, MAIN_FILE[fmt], backends=("compiled", "reference"))
    if fmt == "onnx" and outcome.stage != "load":
        refusal = fm.onnx_checker_refusal(files, MAIN_FILE[fmt])
        assert refusal is None, f"loaded a model the ONNX checker refuses ({refusal})"
