"""What the three atheris harnesses share: the bundle format of an input, and the check.

An input is a bundle (``tests/fuzz/fuzz_seeds.py``): the model's main file, then optionally a
separator and its side file (external data, an OpenVINO ``.bin``), so libFuzzer mutates both.
``make_corpus.py`` writes the seeds as bundles.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "fuzz"), str(ROOT / "tests")]

from fuzz_seeds import MAIN_FILE, bundle, unbundle  # noqa: E402

__all__ = ["bundle", "check", "main"]


def check(fmt: str, data: bytes) -> None:
    """Load the bundle and run it on the compiled and the reference backends: a
    TensorloopError, or a run whose outputs agree; anything else propagates (a finding)."""
    import fuzz_mutations as fm

    files = unbundle(fmt, data)
    fm.load_and_run(files, MAIN_FILE[fmt], backends=("compiled", "reference"), guard=False)


def main(fmt: str) -> None:
    import atheris

    with atheris.instrument_imports(include=["tensorloop"]):
        import tensorloop
        import tensorloop.formats.onnx
        import tensorloop.formats.openvino  # noqa: F401

    import warnings

    warnings.filterwarnings("error")  # as in the test suite: a warning is a finding
    warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)

    def one_input(data: bytes) -> None:
        check(fmt, data)

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
