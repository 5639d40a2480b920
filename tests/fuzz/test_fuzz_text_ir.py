"""Mutation fuzzing of the text-IR parser: a scan and a while loop around a fori_loop, printed
by tensorloop, mutated in bytes, tokens and lines; every mutant loads and runs, or raises a
TensorloopError. Renaming an interior value keeps the meaning and must keep the outputs."""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_law import FUZZ_SETTINGS, check_one_mutant, seed_outcome
from fuzz_seeds import Seed, text_ir_seeds
from hypothesis import given, settings
from hypothesis import strategies as st

MAX_EXAMPLES = 200
SEEDS = text_ir_seeds()


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: s.name)
def test_text_ir_seed_runs(seed: Seed) -> None:
    assert seed_outcome(seed).stage == "ok", seed_outcome(seed).error


@settings(FUZZ_SETTINGS, max_examples=MAX_EXAMPLES)
@given(data=st.data())
def test_mutated_text_ir_models_raise_typed_errors_or_run(data: Any) -> None:
    check_one_mutant("text_ir", SEEDS, data)
