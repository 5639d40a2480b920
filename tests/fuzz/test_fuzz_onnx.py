"""Mutation fuzzing of the ONNX loader: a Loop (carried value, scan output), a Scan and the Loop
with external data, mutated in their bytes and their protos (attributes, dims, ranks, dtypes,
edges, nodes, outputs, versions, trip counts, external-data locations); every mutant loads and
runs, or raises a TensorloopError. Renames and inserted Identities must keep the outputs."""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_law import FUZZ_SETTINGS, check_one_mutant, seed_outcome
from fuzz_seeds import Seed, onnx_seeds
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")
MAX_EXAMPLES = 200
SEEDS = onnx_seeds()


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: s.name)
def test_onnx_seed_runs(seed: Seed) -> None:
    assert seed_outcome(seed).stage == "ok", seed_outcome(seed).error


@settings(FUZZ_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data())
def test_mutated_onnx_models_raise_typed_errors_or_run(data: Any) -> None:
    check_one_mutant("onnx", SEEDS, data)
