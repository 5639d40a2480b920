"""The ONNX backend node tests of the Cast, quantization and string ops all pass."""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import numpy as np
import onnx
from dtype_oracle import assert_same
from onnx import numpy_helper

from tensorloop.errors import ExecutionError, GraphError, UnsupportedOpError

# -- the ONNX backend node tests -----------------------------------------------------------------
MINE = (
    "test_cast", "test_castlike", "test_quantizelinear", "test_dequantizelinear",
    "test_dynamicquantizelinear", "test_qlinearmatmul", "test_matmulinteger", "test_bitcast",
    "test_string", "test_strnormalizer", "test_regex", "test_tfidfvectorizer",
    "test_ai_onnx_ml_label_encoder", "test_ai_onnx_ml_binarizer",
    "test_ai_onnx_ml_array_feature_extractor",
)  # fmt: skip


@cache
def node_cases() -> dict[str, Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None) if c.name.startswith(MINE)}


def _array(x: Any) -> Any:
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x


def test_onnx_node_tests_of_these_ops_pass() -> None:
    from tensorloop.formats.onnx.backend import TensorloopBackend

    cases = node_cases()
    assert len(cases) >= 250
    failures = []
    for name, case in sorted(cases.items()):
        try:
            rep = TensorloopBackend.prepare(case.model)
            for inputs, outputs in case.data_sets:
                got = rep.run([_array(x) for x in inputs])
                for g, w in zip(got, outputs, strict=True):
                    assert_same(g, _array(w), name)
        except (AssertionError, GraphError, ExecutionError, UnsupportedOpError) as exc:
            failures.append(f"{name}: {str(exc)[:200]}")
    assert not failures, "\n".join(failures)
