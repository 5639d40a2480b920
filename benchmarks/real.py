"""Issue #22: the real-model corpus on tensorloop's backends beside onnxruntime and OpenVINO.

Every model of ``benchmarks/real/corpus/*/*/`` (made by ``benchmarks/real/make_corpus.py`` and
``make_keras.py``; see ``benchmarks/real/README.md``) is loaded by each runner and run once on
the inputs its package or exporter feeds it (``inputs.npz``); its outputs are checked against
those of the model's own framework (``outputs.npz``: np.allclose, rtol 1e-4, atol 1e-5 plus
1e-5 of the largest magnitude). Then the runners run round-robin in this process
(``tensorloop.tools.bench.round_robin``: each round runs every runner once, the order rotated by
one per round) for ``--seconds`` each, after ``--warmup`` rounds.

Runners: each tensorloop backend of ``--backends`` (``tl.load(path, backend=...)``),
onnxruntime's CPU provider with its default threads and with one thread (ONNX files only), and
OpenVINO's CPU plugin (f32 inference precision, latency hint). The anchors are the fastest of
these three per model; a ratio is a backend's median over that anchor's (below 1: faster).

``--first-call`` adds, per runner, a fresh process that imports everything first, then times
loading the model and running it once, and the growth of its resident set's peak over that
(``tensorloop.tools.bench.Memory``). For the jax backend the process runs twice, the JAX
compilation cache (``TENSORLOOP_JAX_CACHE``) in a fresh folder: the second is the first call
with a warm cache.

    .venv/bin/python benchmarks/real.py --seconds 1 --first-call --json /tmp/real.json
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

import tensorloop as tl
from tensorloop.tools.bench import Memory, import_ahead, round_robin

CORPUS = Path(__file__).parent / "real" / "corpus"
ANCHORS = ("onnxruntime", "onnxruntime-1t", "openvino")
RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Model:
    """One corpus entry: its folder, its meta.json, one call's feeds and the framework's
    outputs."""

    folder: Path
    meta: dict[str, Any]
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]

    @property
    def name(self) -> str:
        return f"{self.meta['group']}/{self.meta['name']}"

    @property
    def path(self) -> Path:
        return self.folder / str(self.meta["file"])

    @classmethod
    def read(cls, folder: Path) -> Model:
        meta = json.loads((folder / "meta.json").read_text())
        with np.load(folder / meta.get("inputs", "inputs.npz")) as f:
            feeds = {k: f[k] for k in f.files}
        with np.load(folder / meta.get("outputs", "outputs.npz")) as f:
            expected = {k: f[k] for k in f.files}
        return cls(folder, meta, feeds, expected)


@dataclass
class Runner:
    name: str
    run: Callable[[Mapping[str, Any]], dict[str, np.ndarray]]


def corpus(only: tuple[str, ...]) -> list[Model]:
    folders = sorted(p.parent for p in CORPUS.glob("*/*/meta.json"))
    models = [Model.read(f) for f in folders]
    return [m for m in models if not only or any(o in m.name for o in only)]


def make_runner(name: str, model: Model) -> Runner:
    """Load ``model`` into runner ``name`` (a tensorloop backend or one of ``ANCHORS``)."""
    path = str(model.path)
    if name.startswith("onnxruntime"):
        import onnxruntime as ort

        if model.meta["format"] != "onnx":
            raise RuntimeError("onnxruntime reads ONNX files only")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if name == "onnxruntime-1t":
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
        sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return Runner(
            name, lambda feeds: dict(zip(names, sess.run(names, dict(feeds)), strict=True))
        )
    if name == "openvino":
        import openvino as ov

        config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
        compiled = ov.Core().compile_model(path, "CPU", config)
        request = compiled.create_infer_request()
        ports = [(p, p.get_any_name()) for p in compiled.outputs]
        inputs = [(p.get_any_name(), p) for p in compiled.inputs]

        def run_ov(feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
            result = request.infer({port: np.asarray(feeds[n]) for n, port in inputs})
            return {n: np.array(result[p], copy=True) for p, n in ports}

        return Runner(name, run_ov)
    loaded = tl.load(path, backend=name)
    return Runner(name, lambda feeds: dict(loaded.run(dict(feeds))))


def check(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray]) -> str:
    """ "ok", or what differs from the framework's outputs."""
    for key, w in want.items():
        if key not in got:
            return f"no output {key!r}"
        g = np.asarray(got[key])
        if g.shape != w.shape:
            return f"{key}: shape {list(g.shape)}, expected {list(w.shape)}"
        if w.dtype.kind in "fc":
            scale = float(np.nanmax(np.abs(w))) if w.size else 0.0
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            if not np.allclose(gf, wf, rtol=RTOL, atol=ATOL + 1e-5 * scale, equal_nan=True):
                return f"{key}: off by up to {float(np.nanmax(np.abs(gf - wf))):.3g}"
        elif not np.array_equal(g, w):
            return f"{key}: differs"
    return "ok"


@dataclass
class Row:
    model: str
    medians: dict[str, float] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    first_call: dict[str, float] = field(default_factory=dict)
    peak_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def anchor(self) -> str | None:
        present = [a for a in ANCHORS if a in self.medians]
        return min(present, key=lambda a: self.medians[a]) if present else None

    def ratio(self, runner: str) -> float | None:
        anchor = self.anchor
        if anchor is None or runner not in self.medians:
            return None
        return self.medians[runner] / self.medians[anchor]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "median_s": self.medians,
            "status": self.status,
            "first_call_s": self.first_call,
            "peak_bytes": self.peak_bytes,
            "anchor": self.anchor,
        }


def measure(model: Model, runners: list[str], seconds: float, warmup: int) -> Row:
    row = Row(model.name)
    loaded: list[Runner] = []
    for name in runners:
        try:
            runner = make_runner(name, model)
            row.status[name] = check(runner.run(model.feeds), model.expected)
        except Exception as exc:  # a runner that cannot run the model: said, not timed
            row.status[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            continue
        loaded.append(runner)
    timed = round_robin(loaded, model.feeds, seconds, warmup)
    row.medians = {name: statistics.median(times) for name, times in timed.items()}
    return row


def first_call(model: Model, runner: str, cache: str | None = None) -> tuple[float, int]:
    """Seconds to load ``model`` and run it once in a fresh process, and its peak's growth."""
    env = dict(os.environ)
    if cache is not None:
        env["TENSORLOOP_JAX_CACHE"] = cache
    cmd = [sys.executable, __file__, "--child", str(model.folder), runner]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), int(result["peak_bytes"])


def child(folder: str, runner: str) -> None:
    model = Model.read(Path(folder))
    import_ahead([runner if runner in ANCHORS else f"tensorloop-{runner}"])
    if runner.startswith("onnxruntime"):
        import onnxruntime  # noqa: F401
    memory = Memory()
    memory.start()
    start = time.perf_counter()
    make_runner(runner, model).run(model.feeds)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_bytes": memory.stop()}))


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else float("nan")


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3g}" if seconds < 1 else f"{seconds * 1e3:.0f}"


def report(rows: list[Row], backends: list[str], console: Console) -> dict[str, Any]:
    table = Table(title="per call, median ms (ratio: to the fastest anchor)")
    table.add_column("model")
    for a in ANCHORS:
        table.add_column(a, justify="right")
    for b in backends:
        table.add_column(b, justify="right")
        table.add_column(f"{b} ratio", justify="right")
    table.add_column("first call ms", justify="right")
    table.add_column("peak MiB", justify="right")
    table.add_column("outputs")
    for row in rows:
        cells = [row.model] + [_ms(row.medians.get(a)) for a in ANCHORS]
        for b in backends:
            r = row.ratio(b)
            cells += [_ms(row.medians.get(b)), "-" if r is None else f"{r:.2f}"]
        firsts = ", ".join(f"{k} {_ms(v)}" for k, v in row.first_call.items())
        peaks = ", ".join(f"{k} {v / 2**20:.0f}" for k, v in row.peak_bytes.items())
        bad = {k: v for k, v in row.status.items() if v != "ok"}
        cells += [
            firsts or "-",
            peaks or "-",
            "ok" if not bad else "; ".join(f"{k}: {v}" for k, v in bad.items()),
        ]
        table.add_row(*cells)
    console.print(table)
    summary: dict[str, Any] = {}
    for b in backends:
        ratios = [r for row in rows if (r := row.ratio(b)) is not None]
        worst = max(((row.ratio(b) or 0.0, row.model) for row in rows), default=(0.0, "-"))
        summary[b] = {
            "geomean": geomean(ratios),
            "slower": sum(r > 1 for r in ratios),
            "models": len(ratios),
            "worst": worst,
            "wrong": sum(row.status.get(b, "ok") != "ok" for row in rows),
        }
        console.print(
            f"{b}: geomean ratio {summary[b]['geomean']:.2f}x over {len(ratios)} models, "
            f"slower than the fastest anchor on {summary[b]['slower']}, worst {worst[0]:.2f}x "
            f"({worst[1]}), outputs not right on {summary[b]['wrong']}"
        )
    return summary


@click.command()
@click.option("--only", multiple=True, help="Models whose group/name contains this (repeatable).")
@click.option("--backends", default="compiled,jax", show_default=True)
@click.option("--seconds", default=1.0, show_default=True, help="Timed seconds per runner.")
@click.option("--warmup", default=2, show_default=True)
@click.option(
    "--first-call", "with_first", is_flag=True, help="Also first call in a fresh process."
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None)
@click.option("--child", "child_of", nargs=2, hidden=True, default=None)
def main(
    only: tuple[str, ...],
    backends: str,
    seconds: float,
    warmup: int,
    with_first: bool,
    json_path: str | None,
    child_of: tuple[str, str] | None,
) -> None:
    if child_of:  # a first call's fresh process (see ``first_call``)
        child(*child_of)
        return
    warnings.simplefilter("ignore")
    console = Console(width=240)
    names = [b.strip() for b in backends.split(",") if b.strip()]
    models = corpus(only)
    if not models:
        raise click.ClickException(f"no models in {CORPUS}: run benchmarks/real/make_corpus.py")
    import_ahead([*ANCHORS, *(f"tensorloop-{b}" for b in names)])
    rows = []
    for model in models:
        row = measure(model, [*ANCHORS, *names], seconds, warmup)
        if with_first:
            for runner in ["onnxruntime" if model.meta["format"] == "onnx" else "openvino", *names]:
                try:
                    if runner == "jax":
                        with tempfile.TemporaryDirectory() as cache:
                            first_call(model, runner, cache)  # fills the cache
                            row.first_call[runner], row.peak_bytes[runner] = first_call(
                                model, runner, cache
                            )
                    else:
                        row.first_call[runner], row.peak_bytes[runner] = first_call(model, runner)
                except Exception as exc:  # said in the table, not timed
                    row.status[f"{runner} first call"] = str(exc)[:120]
        console.print(
            f"{row.model}: "
            + ", ".join(f"{k} {_ms(v)} ms" for k, v in row.medians.items())
            + f"; anchor {row.anchor}"
        )
        rows.append(row)
    summary = report(rows, names, console)
    if json_path:
        payload = {"rows": [r.to_dict() for r in rows], "summary": summary}
        Path(json_path).write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
