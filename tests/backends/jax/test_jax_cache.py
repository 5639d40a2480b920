"""Issue #22: XLA programs are kept on disk between processes (JAX's persistent compilation
cache), so a second process running the same model does not compile it again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

_CHILD = """
import json, sys, time
import numpy as np
import tensorloop as tl
x = tl.placeholder("float32", (64,), name="x")
h, hs = tl.scan(lambda h, r: (tl.tanh(h * 0.5 + r), h), tl.constant(np.float32(0)), x)
model = tl.Model({"h": h, "hs": hs})
start = time.perf_counter()
out = model.run({"x": np.linspace(-1, 1, 64, dtype=np.float32)}, backend="jax")
print(json.dumps({"seconds": time.perf_counter() - start, "h": float(out["h"])}))
"""


def _run(cache: str | None, home: Path | None = None) -> dict[str, float]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("TENSORLOOP_JAX_CACHE", None)
    if cache is not None:
        env["TENSORLOOP_JAX_CACHE"] = cache
    if home is not None:
        env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _entries(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*") if p.is_file() and not p.name.endswith("-atime")}


def test_a_second_process_reads_the_compiled_programs_from_the_cache(tmp_path: Path) -> None:
    first = _run(str(tmp_path))
    written = _entries(tmp_path)
    assert written, "the first process kept no compiled program"
    second = _run(str(tmp_path))
    assert _entries(tmp_path) == written  # nothing compiled anew, so nothing new kept
    assert second["h"] == first["h"]


def test_the_cache_is_in_the_home_folder_by_default_and_can_be_turned_off(
    tmp_path: Path,
) -> None:
    default = tmp_path / ".cache" / "tensorloop" / "jax"
    _run("off", home=tmp_path)
    assert not default.exists()
    _run(None, home=tmp_path)
    assert _entries(default)
