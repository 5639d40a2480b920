"""Write the seed corpora of the atheris harnesses: ``python fuzz/make_corpus.py OUT`` makes
``OUT/onnx``, ``OUT/openvino`` and ``OUT/text_ir``, one bundle per seed model."""

from __future__ import annotations

import sys
from pathlib import Path

from common import bundle


def make_corpus(out: Path) -> dict[str, Path]:
    import fuzz_seeds

    folders = {}
    every = fuzz_seeds.all_seeds()
    every["onnx"] += fuzz_seeds.regex_seeds()  # RE2 patterns for the harness to mutate
    every["onnx"] += fuzz_seeds.function_seeds()  # nested model-local functions
    every["onnx"] += fuzz_seeds.budget_seeds()  # nested loops, growing values (run budgets)
    for fmt, seeds in every.items():
        folder = out / fmt
        folder.mkdir(parents=True, exist_ok=True)
        for seed in seeds:
            (folder / seed.name).write_bytes(bundle(fmt, seed.files))
        folders[fmt] = folder
    return folders


if __name__ == "__main__":
    for fmt, folder in make_corpus(Path(sys.argv[1])).items():
        print(f"{fmt}: {folder}")
