"""Mutation fuzzing of the OpenVINO IR loader: a TensorIterator and a Loop-5 that OpenVINO
itself saved, mutated in their bytes and their XML (data attributes, dims, ports, edges, port
maps, back edges, layers, Const offsets); every mutant loads and runs, or raises a
TensorloopError. Reordering layers or edges keeps the meaning and must keep the outputs."""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_law import FUZZ_SETTINGS, check_one_mutant, seed_outcome
from fuzz_seeds import Seed, openvino_seeds
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("openvino")
MAX_EXAMPLES = 200
SEEDS = openvino_seeds()


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: s.name)
def test_openvino_seed_runs(seed: Seed) -> None:
    assert seed_outcome(seed).stage == "ok", seed_outcome(seed).error


@settings(FUZZ_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data())
def test_mutated_openvino_models_raise_typed_errors_or_run(data: Any) -> None:
    check_one_mutant("openvino", SEEDS, data)
