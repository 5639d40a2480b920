"""The one Hypothesis test each fuzz file runs over its format's seeds (a shared body)."""

from __future__ import annotations

from typing import Any

import fuzz_mutations as fm
from fuzz_seeds import Seed
from hypothesis import HealthCheck, note, settings

FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Fixed, replayable examples: each file sets ``max_examples`` so the three take < 60 s."""


_SEED_OUTCOMES: dict[str, fm.Outcome] = {}


def seed_outcome(seed: Seed) -> fm.Outcome:
    """The seed's own load and run (every seed must run: they are the valid controls)."""
    if seed.name not in _SEED_OUTCOMES:
        _SEED_OUTCOMES[seed.name] = fm.load_and_run(seed.files, seed.main)
    return _SEED_OUTCOMES[seed.name]


def check_one_mutant(fmt: str, seeds: tuple[Seed, ...], data: Any) -> None:
    """Mutate a seed, then: a TensorloopError or a completed run (the suite's conftest runs
    every run on the reference backend too and requires the same outputs); an ONNX model that
    loads passes ``onnx.checker``'s full check (what the ONNX spec calls invalid, tensorloop
    refuses); a mutant that keeps the seed's meaning gives the seed's outputs."""
    c = fm.HypothesisChoices(data)
    seed = c.choice(seeds)
    mutant = fm.mutate(fmt, seed.files, seed.main, c)
    note(f"seed {seed.name}: {mutant.what}")
    outcome = fm.load_and_run(mutant.files, seed.main)
    note(f"outcome: {outcome.stage} {outcome.error!r}")
    if fmt == "onnx" and outcome.stage != "load":
        refusal = fm.onnx_checker_refusal(mutant.files, seed.main)
        assert refusal is None, f"loaded a model the ONNX checker refuses ({refusal})"
    if mutant.keeps_meaning:
        fm.assert_same_meaning(outcome, seed_outcome(seed), mutant.what)
