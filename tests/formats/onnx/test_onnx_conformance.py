"""The ONNX backend node tests that the installed onnx generates, run through tensorloop.

Every case whose model holds a subgraph must pass. The other cases must pass too, except those
listed in ``onnx_node_expected_failures.txt`` with the reason; a listed case that starts to pass
fails here, so the list only ever shrinks. ``python scripts/onnx_conformance.py`` runs the same
cases and writes docs/conformance.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloop.formats.onnx.backend import (
    TensorloopBackend,
    case_ops,
    check_case,
    node_test_cases,
)

_LIST = Path(__file__).with_name("onnx_node_expected_failures.txt")


def _expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in _LIST.read_text(encoding="utf-8").splitlines():
        name, _, why = line.partition("#")
        if name.strip():
            out[name.strip()] = why.strip()
    return out


EXPECTED_FAILURES = _expected_failures()
CASES = node_test_cases()
HANDOFFS = {"test_training_dropout": "a training flag known at run time: jax deopts Dropout"}
"""Cases (by name prefix) where a backend hands nodes on by design (conftest's law)."""
PARAMS = [
    pytest.param(
        c,
        id=str(c.name),
        marks=[
            pytest.mark.handoff(why)
            for prefix, why in HANDOFFS.items()
            if str(c.name).startswith(prefix)
        ],
    )
    for c in CASES
]


def test_the_backend_api() -> None:
    assert TensorloopBackend.supports_device("CPU")
    assert not TensorloopBackend.supports_device("CUDA")
    assert len(CASES) > 1000


def test_expected_failures_name_real_cases() -> None:
    names = {str(c.name) for c in CASES}
    assert sorted(set(EXPECTED_FAILURES) - names) == []


def test_no_subgraph_case_is_expected_to_fail() -> None:
    nested = [str(c.name) for c in CASES if case_ops(c)[1] and str(c.name) in EXPECTED_FAILURES]
    assert nested == []


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", PARAMS)
def test_node_case(case: object) -> None:
    name = str(case.name)  # type: ignore[attr-defined]
    if name in EXPECTED_FAILURES:
        with pytest.raises(Exception):  # noqa: B017  (any failure; the list says why)
            check_case(case)
        return
    check_case(case)
