"""atheris harness for the text-IR loader (``python fuzz/fuzz_text_ir.py CORPUS
-max_total_time=20``); any exception but a TensorloopError is a crash (fuzz/common.py)."""

from __future__ import annotations

from common import main

if __name__ == "__main__":
    main("text_ir")
