"""One host, many devices: ``RecordRunner(..., backend="jax", stack=True, devices=N)`` shards
each stacked run over N XLA devices along its batch axis (the host's CPU split into four, in a
process of its own: XLA splits it only before it starts), filling each run to a multiple of N;
every record's outputs agree with its exact run alone on the compiled backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install 'tensorloop[jax]'")

TESTS = Path(__file__).parent.parent

CHILD = """
import numpy as np
import jax
from batch_models import bilstm, records, tagger
from tensorloop.batch import RecordRunner
from tensorloop.backends.jax import XlaIsland

assert len(jax.devices()) == 4, jax.devices()
seen = []
run = XlaIsland.run


def spy(self, inputs, state):
    seen.extend(len(getattr(x, "sharding").device_set) for x in inputs if hasattr(x, "sharding"))
    return run(self, inputs, state)


XlaIsland.run = spy
for model, axis, name in ((tagger(final=False), 0, "x"), (bilstm(), 1, "X")):
    recs = records(5, [3, 4, 4, 6, 2, 4, 5, 3, 4], name=name)
    exact = RecordRunner(model, batch_axis=axis, backend="compiled").run(recs)
    runner = RecordRunner(model, batch_axis=axis, backend="jax", stack=True, devices=4)
    got = runner.run(recs)
    for a, b in zip(exact, got, strict=True):
        assert a.error is None and b.error is None, (a.error, b.error)
        for n in a.outputs:
            np.testing.assert_allclose(b.outputs[n], a.outputs[n], rtol=1e-5, atol=2e-6)
    stats = runner.stats
    assert stats.split == 0 and stats.stacked > 0, stats
    assert stats.filler > 0, stats  # runs filled to a multiple of the 4 devices
print(max(seen), "devices")
"""


def test_stacked_runs_shard_over_four_devices() -> None:
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
        "TENSORLOOP_JAX_CACHE": "off",
        "PYTHONPATH": os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=TESTS.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "4 devices"  # islands saw operands split over all four
