"""Issue #25: batch inference on Ray Data, records per second, tensorloop beside onnxruntime.

A synthetic data set of ``--records`` sequences of mixed lengths (uniform in ``--min-length``
to ``--max-length`` frames of the model's features, seeded) runs through a recurrent model of
the real corpus: ``torch/bigru_ctc_tagger_ts`` by default (a bidirectional GRU tagger exported
by torch.onnx, [batch, time, 40] -> log-probabilities and the final states;
``benchmarks/real/make_corpus.py`` makes it); ``--model`` takes others, and ``--outputs`` the
outputs to compute (``torch/lstm2_batch_first_ts`` with ``--outputs y``, its per-step outputs
only, is a model whose stacked runs pad).

First in this process, on one thread, without Ray: every record run exactly with a plan per
length (``GENERIC_AFTER`` out of reach), the same with the compiled backend's plans with open
dims, and stacked, ``--batch-size`` records a call. Then on a local Ray cluster
(``ray.init(num_cpus=N)``), as Ray Data jobs: ``Dataset.map_batches`` with a pool of actors, one
per worker, each with one CPU and one thread, ``--batch-size`` records a call.

Runners, each a job of its own:

- ``tl-exact``: ``tensorloop.ray.map_model(ds, model)``: every record runs alone (its outputs a
  single ``model.run`` of it, bit for bit), the compiled backend.
- ``tl-stack``: ``map_model(..., stack=True)``: the records of a batch stacked by length
  (padding only where no output sees it: for this bidirectional model, never, so records of
  equal length stack).
- ``ort-record``: onnxruntime in Ray Data as its documentation has it (a callable class that
  makes one ``InferenceSession`` per actor, ``intra_op_num_threads=1``), each record run alone.
- ``ort-stack``: the same, the records of a batch of equal length stacked into one run (what
  a user who must not pad a bidirectional model would write).
- ``ort-pad``: the same, all of a batch's records padded at the end to its longest and stacked,
  each output cut back to the record's length (right only where every output is computed step
  by step: ``--outputs y`` of a unidirectional LSTM).

For each runner and each worker count of ``--workers`` (1 up to the CPUs), the job runs
``--repeats`` times (each a fresh actor pool: the model load and the first plans are part of a
job) and the best wall time counts: records per second = records / seconds. Every runner's
outputs are checked against tensorloop's exact runs (``tl-exact``: the same bits as
``RecordRunner`` in this process; the others within rtol 1e-4, atol 1e-5) and the largest
difference is printed.

    .venv/bin/python benchmarks/batch.py --json /tmp/batch.json
    .venv/bin/python benchmarks/batch.py --model benchmarks/real/corpus/torch/lstm2_batch_first_ts \
        --outputs y --runners tl-exact,tl-stack,ort-record,ort-pad --json /tmp/batch_lstm.json
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table

CORPUS = Path(__file__).parent / "real" / "corpus"
Array = np.ndarray[Any, Any]


class OrtPredictor:
    """onnxruntime in Ray Data: one session per actor, one thread; each record alone
    (``mode="record"``), the batch's records of equal length stacked (``"stack"``), or all of
    the batch's records padded at the end to its longest and stacked, each output cut back on
    its time axis (``"pad"``: right only for outputs computed step by step)."""

    def __init__(
        self,
        model_bytes: bytes,
        column: str,
        mode: str,
        axes: dict[str, int | None],
        time_axes: dict[str, int | None],
        outputs: list[str],
    ) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            model_bytes, options, providers=["CPUExecutionProvider"]
        )
        self.input = self.session.get_inputs()[0].name
        self.outputs = outputs
        self.column = column
        self.mode = mode
        self.axes = axes  # each output's batch axis
        self.time_axes = time_axes  # each output's time axis, without the batch axis

    def __call__(self, batch: dict[str, Array]) -> dict[str, Array]:
        xs = [np.asarray(x) for x in batch[self.column]]
        results: list[dict[str, Array] | None] = [None] * len(xs)
        groups: dict[tuple[int, ...], list[int]] = {}
        for k, x in enumerate(xs):
            key = {"record": (k,), "stack": x.shape, "pad": ()}[self.mode]
            groups.setdefault(key, []).append(k)
        for members in groups.values():
            longest = max(len(xs[k]) for k in members)
            stacked = np.stack(
                [np.pad(xs[k], [(0, longest - len(xs[k])), (0, 0)]) for k in members]
            )
            got = self.session.run(self.outputs, {self.input: stacked})
            for j, k in enumerate(members):
                results[k] = {}
                for n, v in zip(self.outputs, got, strict=True):
                    axis = self.axes[n]
                    one = v if axis is None else np.take(v, j, axis=axis)
                    t = self.time_axes.get(n)
                    if self.mode == "pad" and t is not None:
                        one = np.take(one, np.arange(len(xs[k])), axis=t)
                    results[k][n] = one
        out: dict[str, Array] = {"id": np.asarray(batch["id"])}
        for name in self.outputs:
            column = np.empty(len(xs), dtype=object)
            for k, r in enumerate(results):
                column[k] = None if r is None else r[name]
            out[name] = column
        return out


def make_records(count: int, low: int, high: int, features: int, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(low, high + 1, size=count)
    return [
        {"id": k, "x": rng.standard_normal((int(n), features)).astype(np.float32)}
        for k, n in enumerate(lengths)
    ]


@click.command()
@click.option("--model", "model_dir", default=str(CORPUS / "torch" / "bigru_ctc_tagger_ts"))
@click.option("--records", "count", default=1024, show_default=True)
@click.option("--min-length", default=20, show_default=True)
@click.option("--max-length", default=200, show_default=True)
@click.option("--batch-size", default=32, show_default=True)
@click.option("--workers", default="1,2", show_default=True, help="worker counts, comma-separated")
@click.option("--repeats", default=2, show_default=True)
@click.option(
    "--runners",
    default="tl-exact,tl-stack,ort-record,ort-stack",
    show_default=True,
    help="of tl-exact, tl-stack, ort-record, ort-stack, ort-pad",
)
@click.option("--outputs", default=None, help="the outputs to compute, comma-separated (all)")
@click.option("--json", "json_path", default=None, help="write the results here")
def main(
    model_dir: str,
    count: int,
    min_length: int,
    max_length: int,
    batch_size: int,
    workers: str,
    repeats: int,
    runners: str,
    outputs: str | None,
    json_path: str | None,
) -> None:
    import ray
    import ray.data

    import tensorloop as tl
    import tensorloop.ray as tlray
    from tensorloop.batch import RecordRunner

    console = Console()
    path = Path(model_dir) / "model.onnx"
    if not path.is_file():
        raise click.ClickException(f"{path}: not found (benchmarks/real/make_corpus.py makes it)")
    model = tl.load(path)
    wanted = model.output_names if outputs is None else outputs.split(",")
    features = int(model.inputs[0].type.shape[-1])  # type: ignore[union-attr]
    recs = make_records(count, min_length, max_length, features, seed=0)
    counts = [int(w) for w in workers.split(",")]
    ray.init(
        num_cpus=max(counts),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    env = {"env_vars": tlray.thread_environment(1)}
    model_bytes = path.read_bytes()
    console.print(f"{count} records of {min_length}-{max_length} frames, {path.parent.name}")
    from tensorloop.backends import compiled

    tlray.limit_threads(1)
    inline: dict[str, float] = {}
    for label, after in (("a plan per length", 10**9), ("plans with open dims", None)):
        saved = compiled.GENERIC_AFTER
        if after is not None:
            compiled.GENERIC_AFTER = after
        try:
            t0 = time.perf_counter()
            runner = RecordRunner(tl.load(path), outputs=wanted)
            exact = runner.run([{"x": r["x"]} for r in recs])
            inline[label] = time.perf_counter() - t0
        finally:
            compiled.GENERIC_AFTER = saved
        console.print(f"in this process, 1 thread, exact, {label}: {inline[label]:.2f} s")
    axes = runner._output_axes({"x": recs[0]["x"][None]})
    stacker = RecordRunner(tl.load(path), outputs=wanted, stack=True)
    t0 = time.perf_counter()
    for start in range(0, count, batch_size):
        stacker.run([{"x": r["x"]} for r in recs[start : start + batch_size]])
    inline["stacked"] = time.perf_counter() - t0
    console.print(
        f"in this process, 1 thread, stacked, {batch_size} records a call: "
        f"{inline['stacked']:.2f} s ({stacker.stats})"
    )
    time_axes = {
        n: None if t is None else t - (axes[n] is not None and axes[n] < t)  # type: ignore[operator]
        for n, t in stacker.time_axes.items()
    }
    console.print(f"outputs {wanted}; stacked runs pad: {stacker.padding} {stacker.why_not_padded}")

    def job(name: str, n: int) -> Any:
        ds = ray.data.from_items(recs, override_num_blocks=max(8, 4 * n))
        if name.startswith("tl-"):
            return tlray.map_model(
                ds,
                model,
                workers=n,
                batch_size=batch_size,
                stack=name == "tl-stack",
                outputs=wanted,
            )
        return ds.map_batches(
            OrtPredictor,
            fn_constructor_args=(model_bytes, "x", name[4:], axes, time_axes, wanted),
            batch_size=batch_size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=n),
            num_cpus=1,
            runtime_env=env,
        )

    def check(name: str, rows: list[dict[str, Any]]) -> float:
        worst = 0.0
        assert len(rows) == count, (name, len(rows))
        for row in rows:
            want = exact[int(row["id"])].outputs
            assert want is not None and row.get("error") is None, (name, row.get("error"))
            for out, value in want.items():
                got = np.asarray(row[out])
                if name == "tl-exact":
                    assert np.array_equal(got, value), (name, out)
                else:
                    np.testing.assert_allclose(got, value, rtol=1e-4, atol=1e-5)
                worst = max(worst, float(np.max(np.abs(got - value))) if value.size else 0.0)
        return worst

    results: list[dict[str, Any]] = []
    for n in counts:
        for name in runners.split(","):
            times = []
            worst = 0.0
            for _ in range(repeats):
                start = time.perf_counter()
                rows = job(name, n).take_all()
                times.append(time.perf_counter() - start)
                worst = check(name, rows)
            best = min(times)
            results.append(
                {
                    "runner": name,
                    "workers": n,
                    "seconds": best,
                    "records_per_second": count / best,
                    "max_abs_diff": worst,
                    "all_seconds": times,
                }
            )
            console.print(f"{name} x{n}: {count / best:.1f} records/s ({best:.2f} s)")
    ray.shutdown()

    table = Table(title=f"records/s, {count} records, batch {batch_size}")
    table.add_column("runner")
    for n in counts:
        table.add_column(f"{n} worker(s)", justify="right")
    table.add_column("scaling", justify="right")
    table.add_column("vs ort-record", justify="right")
    table.add_column("max |diff|", justify="right")
    rate: Callable[[str, int], float] = lambda r, n: next(  # noqa: E731
        x["records_per_second"] for x in results if x["runner"] == r and x["workers"] == n
    )
    names = runners.split(",")
    for name in names:
        cells = [f"{rate(name, n):.1f}" for n in counts]
        scaling = f"{rate(name, counts[-1]) / rate(name, counts[0]):.2f}x"
        versus = (
            f"{rate(name, counts[-1]) / rate('ort-record', counts[-1]):.2f}x"
            if "ort-record" in names
            else "-"
        )  # at the most workers
        worst = max(x["max_abs_diff"] for x in results if x["runner"] == name)
        table.add_row(name, *cells, scaling, versus, f"{worst:.2g}")
    console.print(table)
    if json_path:
        Path(json_path).write_text(
            json.dumps(
                {"records": count, "cpus": os.cpu_count(), "inline": inline, "results": results},
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
