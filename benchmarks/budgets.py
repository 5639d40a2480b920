"""Issue #26: run-wide budgets, on the hostile files of each class, tensorloop beside the anchors.

Each case of ``tests/data/hostile`` named below loads and runs in a subprocess of its own (so a
hang or a blow-up stays there) under a ``--cap`` seconds wall-clock limit and a ``--memory``
GiB address-space limit, on tensorloop (``tl.load`` and ``run`` on ``--backend``, the default
``Limits``, no timeout given) and on onnxruntime (``InferenceSession`` and ``run``). Printed per
case and runtime: what happened (the error's class, ``ok``, or ``killed`` at the cap) and the
seconds it took; with ``--json``, written there too.

    python benchmarks/budgets.py --cap 30
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "hostile"
CASES = {
    "onnx_loop_nested_billion.onnx": "three nested Loops of 1 000 trips (10^9 body runs)",
    "onnx_ok_loop_nested.onnx": "three nested Loops of 100 trips (a valid control)",
    "onnx_functions_doubling_64.onnx": "functions calling the one before twice, 64 deep",
    "onnx_ok_functions_nested.onnx": "functions nested a few deep (a valid control)",
    "onnx_regex_catastrophic.onnx": "RegexFullMatch '(a+)+$' on long runs of 'a' and a '!'",
    "onnx_loop_sequence_grows.onnx": "a sequence grown by 4 MiB a trip for 10^5 trips",
    "onnx_loop_doubling.onnx": "x = Concat(x, x) for 64 trips",
}

TENSORLOOP = """
import sys, numpy as np, tensorloop as tl
from tensorloop.errors import TensorloopError
try:
    m = tl.load(sys.argv[1], backend=sys.argv[2])
    feeds = {v.name: np.zeros([d if isinstance(d, int) else 2 for d in v.type.shape],
             v.type.dtype.numpy) for v in m.inputs}
    m.run(feeds)
    print("ok")
except TensorloopError as exc:
    print(type(exc).__name__)
"""

ONNXRUNTIME = """
import sys, numpy as np, onnxruntime as ort
try:
    s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
    kinds = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_}
    feeds = {i.name: np.zeros([d if isinstance(d, int) else 2 for d in i.shape],
             kinds.get(i.type, np.float32)) for i in s.get_inputs()}
    s.run(None, feeds)
    print("ok")
except Exception as exc:
    print(type(exc).__name__)
"""


def run(code: str, args: list[str], cap: float, memory: int) -> tuple[str, float]:
    cap_as = f"({memory << 30}, {memory << 30})"
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, {cap_as})\n"
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", limit + code, *args],
            capture_output=True,
            text=True,
            timeout=cap,
        )
    except subprocess.TimeoutExpired:
        return "killed", time.perf_counter() - started
    seconds = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    return (lines[-1] if lines else f"exit {done.returncode}"), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=30.0, help="seconds before a run is killed")
    parser.add_argument("--memory", type=int, default=4, help="GiB of address space")
    parser.add_argument("--backend", default="compiled")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results = []
    print(f"{'case':<34} {'tensorloop':>22} {'onnxruntime':>22}")
    for name, what in CASES.items():
        path = str(CORPUS / name)
        tl_out = run(TENSORLOOP, [path, args.backend], args.cap, args.memory)
        ort_out = run(ONNXRUNTIME, [path], args.cap, args.memory)
        results.append({"case": name, "what": what, "tensorloop": tl_out, "onnxruntime": ort_out})
        cells = [f"{o} {s:6.2f} s" for o, s in (tl_out, ort_out)]
        print(f"{name:<34} {cells[0]:>22} {cells[1]:>22}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
