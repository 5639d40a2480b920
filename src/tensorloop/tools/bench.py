"""Time one model on several runtimes in one process: first run, latency, throughput, memory."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import resource
import statistics
import time
import tracemalloc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TensorloopError
from ..limits import Limits
from .compare import (
    DEFAULT_RUNTIMES,
    TENSORLOOP_PREFIX,
    Runtime,
    load_or_skip,
    parse_runtimes,
    run_safely,
)
from .inputs import make_inputs

BASELINE = "onnxruntime"
"""Ratios are to this runtime's median, or to the first runtime's where it did not run."""

MEMORY_NOTE = {
    "VmHWM": "resident-set growth during load + first run (Linux VmHWM, reset before each "
    "load): Python and native allocations alike, but memory an earlier runtime freed and this "
    "one reused does not count",
    "ru_maxrss": "growth of the process's peak resident set during load + first run "
    "(getrusage ru_maxrss): zero for a runtime that stays below an earlier peak",
}
HANDOFFS_NOTE = (
    "parts of the model a tensorloop backend handed to another backend (a run's "
    "Outputs.handoffs; see tensorloop run --json): their time is the other backend's"
)
TRACED_NOTE = (
    "peak of Python and NumPy allocations during one warm run (tracemalloc): onnxruntime's and "
    "OpenVINO's own buffers are not seen"
)

_LAZY = (
    "tensorloop.formats.onnx",
    "tensorloop.formats.openvino",
    "tensorloop.reference.kernels",
    "tensorloop.backends.compiled",
    "tensorloop.backends.jax",
)


def import_ahead(runtimes: Iterable[str]) -> None:
    """Import what the runtimes import on first use (tensorloop's converters, kernels and
    backends, jax, onnxruntime, openvino), so that a first run times load + run, not imports."""
    names = list(runtimes)
    modules = []
    if any(n.startswith(TENSORLOOP_PREFIX) for n in names):
        modules += [p for p in _LAZY if p != "tensorloop.backends.jax"]
        if f"{TENSORLOOP_PREFIX}jax" in names and importlib.util.find_spec("jax") is not None:
            modules.append("tensorloop.backends.jax")
    for package in modules:
        pkg = importlib.import_module(package)
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{package}.{info.name}")
    for lib in ("onnxruntime", "openvino"):
        if lib in names and importlib.util.find_spec(lib) is not None:
            importlib.import_module(lib)


class Memory:
    """The resident-set high-water mark over a stretch of code, in bytes."""

    def __init__(self) -> None:
        self.method = "VmHWM"
        try:
            self._reset()
        except OSError:
            self.method = "ru_maxrss"

    @staticmethod
    def _reset() -> None:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current VmRSS

    @staticmethod
    def _status_kib(field_name: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        raise OSError(f"/proc/self/status has no {field_name}")

    def start(self) -> None:
        if self.method == "VmHWM":
            self._reset()
            self._before = self._status_kib("VmRSS")
        else:
            self._before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def stop(self) -> int:
        if self.method == "VmHWM":
            peak = self._status_kib("VmHWM")
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return max(0, peak - self._before) * 1024


@dataclass
class Timing:
    """One runtime's numbers; seconds throughout, bytes for memory."""

    runtime: str
    load_s: float
    first_run_s: float
    runs: int = 0
    median_s: float = 0.0
    p90_s: float = 0.0
    mean_s: float = 0.0
    ratio: float | None = None
    peak_rss_bytes: int | None = None
    traced_peak_bytes: int | None = None
    handoffs: int | None = None
    """For a tensorloop backend, how many distinct handoffs (``Handoff``) its runs made: parts
    of the model it handed to another backend, whose speed the numbers then measure."""

    @property
    def throughput(self) -> float:
        """Runs per second, one run after another."""
        return 1.0 / self.mean_s if self.mean_s > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "load_s": self.load_s,
            "first_run_s": self.first_run_s,
            "runs": self.runs,
            "median_s": self.median_s,
            "p90_s": self.p90_s,
            "mean_s": self.mean_s,
            "throughput_per_s": self.throughput,
            "ratio": self.ratio,
            "peak_rss_bytes": self.peak_rss_bytes,
            "traced_peak_bytes": self.traced_peak_bytes,
            "handoffs": self.handoffs,
        }


@dataclass
class Benchmark:
    """What ``bench`` measured."""

    model: str
    baseline: str
    seconds: float
    warmup: int
    memory_method: str
    timings: list[Timing]
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "baseline": self.baseline,
            "seconds": self.seconds,
            "warmup": self.warmup,
            "memory": {
                "peak_rss_bytes": MEMORY_NOTE[self.memory_method],
                "traced_peak_bytes": TRACED_NOTE,
            },
            "runtimes": [t.to_dict() for t in self.timings],
            "skipped": self.skipped,
            "failed": self.failed,
        }


def percentile(sorted_times: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) of sorted values, interpolated linearly."""
    if len(sorted_times) == 1:
        return sorted_times[0]
    pos = q * (len(sorted_times) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_times) - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (pos - lo)


def round_robin(
    runtimes: Sequence[Runtime], feeds: Mapping[str, Any], seconds: float, warmup: int
) -> dict[str, list[float]]:
    """``warmup`` untimed rounds, then timed rounds until each runtime has run for ``seconds``
    (at least once): every round runs each runtime not yet done once, in an order rotated by one
    per round, so that drift on the machine (clock, cache, other load) hits all alike."""
    for _ in range(warmup):
        for rt in runtimes:
            rt.run(feeds)
    times: dict[str, list[float]] = {rt.name: [] for rt in runtimes}
    spent = dict.fromkeys(times, 0.0)
    order = list(runtimes)
    r = 0
    while True:
        todo = [rt for rt in order if not times[rt.name] or spent[rt.name] < seconds]
        if not todo:
            return times
        k = r % len(todo)
        for rt in todo[k:] + todo[:k]:
            start = time.perf_counter()
            rt.run(feeds)
            elapsed = time.perf_counter() - start
            times[rt.name].append(elapsed)
            spent[rt.name] += elapsed
        r += 1


def bench(
    path: str | Path,
    runtimes: Iterable[str] = DEFAULT_RUNTIMES,
    inputs: Mapping[str, Any] = {},
    *,
    random: bool = False,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] = {},
    seconds: float = 1.0,
    warmup: int = 2,
    limits: Limits | None = None,
) -> Benchmark:
    """Load the model at ``path`` into each runtime and run it once (first-run latency and
    resident-set growth), then ``warmup`` rounds and ``seconds`` of timed runs per runtime,
    round-robin, all in this process (see ``round_robin``); finally the traced peak of one run
    each. Inputs as for ``compare``. A runtime that cannot load or run the model is skipped or
    failed with its reason."""
    names = parse_runtimes(runtimes)
    import_ahead(names)
    memory = Memory()
    loaded: list[Runtime] = []
    timings: dict[str, Timing] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    feeds: dict[str, Any] | None = None
    first_error: TensorloopError | None = None
    for name in names:
        memory.start()
        start = time.perf_counter()
        rt, error = load_or_skip(name, path, limits, skipped)
        first_error = first_error or error
        if rt is None:
            continue
        load_s = time.perf_counter() - start
        if feeds is None:  # the first runtime that loads declares the inputs
            feeds = make_inputs(rt.inputs, inputs, random=random, seed=seed, shapes=shapes)
        start = time.perf_counter()
        outs, status, reason = run_safely(rt, feeds)
        first = load_s + time.perf_counter() - start
        peak = memory.stop()
        if outs is None:
            (skipped if status == "skipped" else failed)[name] = reason
            continue
        loaded.append(rt)
        timings[name] = Timing(name, load_s, first, peak_rss_bytes=peak)
    if not loaded and first_error is not None and not failed:
        raise first_error
    if loaded:
        assert feeds is not None
        for name, times in round_robin(loaded, feeds, seconds, warmup).items():
            t = timings[name]
            ordered = sorted(times)
            t.runs = len(times)
            t.median_s = statistics.median(ordered)
            t.p90_s = percentile(ordered, 0.9)
            t.mean_s = statistics.fmean(ordered)
        for rt in loaded:
            tracemalloc.start()
            try:
                rt.run(feeds)
                timings[rt.name].traced_peak_bytes = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    for rt in loaded:
        if rt.handoffs is not None:
            timings[rt.name].handoffs = len(rt.handoffs)
    baseline = BASELINE if BASELINE in timings else next(iter(timings), "")
    for t in timings.values():
        base = timings[baseline].median_s
        t.ratio = t.median_s / base if base > 0 else None
    return Benchmark(
        str(path),
        baseline,
        seconds,
        warmup,
        memory.method,
        [timings[n] for n in names if n in timings],
        skipped,
        failed,
    )
