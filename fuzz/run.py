"""Run each atheris harness for a fixed time on its seed corpus; exit 1 if any found a crash.

``python fuzz/run.py [--seconds 20] [--out DIR]``: the corpora grow in ``DIR/corpus/<format>``
and a crashing input is kept as ``DIR/<format>-crash-<hash>`` (turn it into a regression test
in ``tests/fuzz/test_fuzz_regressions.py``). The harnesses run one after another.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from make_corpus import make_corpus

HERE = Path(__file__).resolve().parent
FORMATS = ("onnx", "openvino", "text_ir")


def run(fmt: str, corpus: Path, out: Path, seconds: int) -> int:
    cmd = [
        sys.executable,
        str(HERE / f"fuzz_{fmt}.py"),
        str(corpus),
        f"-max_total_time={seconds}",
        "-timeout=15",  # one input: load and two runs, with MAX_ITERATIONS trips at most
        "-rss_limit_mb=3072",
        "-max_len=65536",
        f"-artifact_prefix={out}/{fmt}-",
        "-print_final_stats=1",
    ]
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=False, cwd=HERE.parent).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=20, help="fuzzing time per harness")
    parser.add_argument("--out", type=Path, default=None, help="corpora and crashes (a temp dir)")
    parser.add_argument("formats", nargs="*", choices=[*FORMATS, []], default=[])
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="tensorloop-fuzz-"))
    corpora = make_corpus(out / "corpus")
    formats = args.formats or list(FORMATS)
    failed = [fmt for fmt in formats if run(fmt, corpora[fmt], out, args.seconds) != 0]
    if failed:
        print(f"fuzz: crashes in {', '.join(failed)}; inputs kept in {out}", file=sys.stderr)
        return 1
    print(f"fuzz: no crash in {args.seconds} s per harness ({', '.join(formats)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
