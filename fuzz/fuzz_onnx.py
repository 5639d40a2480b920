"""atheris harness for the ONNX loader (``python fuzz/fuzz_onnx.py CORPUS
-max_total_time=20``); any exception but a TensorloopError is a crash (fuzz/common.py)."""

from __future__ import annotations

from common import main

if __name__ == "__main__":
    main("onnx")
