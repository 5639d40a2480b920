"""``tensorloop.ray`` on a local Ray cluster (2 CPUs, no network): a job's rows equal the
sequential runs of each record, bad records are error rows, and an actor killed mid-job is
restarted by Ray and loses nothing. Skipped where Ray Data is not installed."""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray Data is not installed: pip install 'tensorloop[ray]'")
pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install 'tensorloop[ray]'")

from ray import cloudpickle  # noqa: E402  (Ray vendors it)

import tensorloop as tl  # noqa: E402
import tensorloop.ray as tlray  # noqa: E402
from batch_models import WIDTH, bilstm, records, tagger  # noqa: E402
from tensorloop.batch import RecordRunner  # noqa: E402

# Ray warns of its own deprecated settings as it starts; the suite makes warnings errors.
pytestmark = pytest.mark.filterwarnings(r"ignore::DeprecationWarning:ray(\..*)?")

# The killing predictor below is defined here: Ray's workers cannot import this test module,
# so it travels by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"env_vars": {"RAY_DATA_DISABLE_PROGRESS_BARS": "1"}},
        )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    yield ray
    if started:
        ray.shutdown()


def dataset_of(recs: list[dict[str, Any]]) -> Any:
    return ray.data.from_items([{"id": k, **r} for k, r in enumerate(recs)])


def rows_by_id(ds: Any) -> dict[int, dict[str, Any]]:
    rows = ds.take_all()
    found = {int(r["id"]): r for r in rows}
    assert len(found) == len(rows)
    return found


def mixed_records() -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = records(11, [3, 9, 1, 14, 6, 6, 2, 11, 5, 8, 4, 7])
    recs[4] = {"x": np.zeros((6, WIDTH + 2), np.float32)}  # bad: 7 features, not 5
    return recs


def test_map_model_rows_equal_sequential_runs_and_errors_are_rows(cluster: Any) -> None:
    model = tagger()
    recs = mixed_records()
    out = tlray.map_model(dataset_of(recs), model, workers=2, batch_size=4)
    rows = rows_by_id(out)
    want = RecordRunner(model).run(recs)
    assert sorted(rows) == list(range(len(recs)))
    for k, expected in enumerate(want):
        row = rows[k]
        assert row["error"] == expected.error
        if expected.outputs is None:
            assert row["tags"] is None and row["last"] is None
            continue
        for name, value in expected.outputs.items():
            assert np.array_equal(np.asarray(row[name]), value), (k, name)
    assert rows[4]["error"].startswith("InputError: ") and "7" in rows[4]["error"]


def test_stacked_jobs_on_a_time_major_model(cluster: Any) -> None:
    model = bilstm()
    recs = records(12, [5, 5, 7, 3, 5, 7, 2], name="X")
    out = tlray.map_model(
        dataset_of(recs), model, workers=1, batch_size=8, stack=True, batch_axis=1
    )
    rows = rows_by_id(out)
    exact = RecordRunner(model, batch_axis=1).run(recs)
    for k, expected in enumerate(exact):
        assert rows[k]["error"] is None and expected.outputs is not None
        for name, value in expected.outputs.items():
            np.testing.assert_allclose(np.asarray(rows[k][name]), value, rtol=2e-6, atol=2e-6)


class DiesOnce(tlray.Predictor):
    """A predictor whose process dies (``os._exit``) the first time it meets record 5: the
    marker file says it already did."""

    def __init__(self, model: Any, *, marker: str, **options: Any) -> None:
        super().__init__(model, **options)
        self.marker = Path(marker)

    def __call__(self, batch: Any) -> Any:
        if 5 in batch["id"].tolist() and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            os._exit(1)
        return super().__call__(batch)


def test_an_actor_killed_mid_job_loses_nothing(cluster: Any, tmp_path: Path) -> None:
    model = tagger()
    recs = records(13, [4, 2, 7, 3, 3, 9, 1, 5, 6, 8])
    marker = tmp_path / "died"
    out = dataset_of(recs).map_batches(
        DiesOnce,
        fn_constructor_args=(model,),
        fn_constructor_kwargs={"marker": str(marker)},
        batch_size=2,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=2),
        num_cpus=1,
    )
    rows = rows_by_id(out)
    assert marker.exists(), "the actor never died: the test proved nothing"
    want = RecordRunner(model).run(recs)
    assert sorted(rows) == list(range(len(recs)))
    for k, expected in enumerate(want):
        assert rows[k]["error"] is None and expected.outputs is not None
        for name, value in expected.outputs.items():
            assert np.array_equal(np.asarray(rows[k][name]), value)


def test_options_fail_on_the_driver_not_on_a_worker(cluster: Any) -> None:
    ds = dataset_of(records(1, [3]))
    with pytest.raises(tl.InputError, match="no output nope"):
        tlray.map_model(ds, tagger(), outputs=["nope"])
    with pytest.raises(tl.FormatError, match="no such file"):
        tlray.map_model(ds, "/nonexistent/model.onnx")


def test_the_predictor_loads_a_path_bytes_or_a_model(tmp_path: Path) -> None:
    model = tagger()
    path = tmp_path / "tagger.tl"
    tl.save(model, path)
    batch = {"id": np.arange(2), "x": np.empty(2, dtype=object)}
    for k, rec in enumerate(records(2, [3, 4])):
        batch["x"][k] = rec["x"]
    answers = [
        tlray.Predictor(source, threads=1)(batch)
        for source in (model, path, str(path), path.read_bytes(), pickle.loads(pickle.dumps(model)))
    ]
    for answer in answers[1:]:
        for name in ("tags", "last"):
            for a, b in zip(answers[0][name], answer[name], strict=True):
                assert np.array_equal(a, b)


def test_worker_threads_are_limited() -> None:
    env = tlray.thread_environment(1, devices=4)
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1"
    assert "--xla_force_host_platform_device_count=4" in env["XLA_FLAGS"]
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert "--xla_cpu_multi_thread_eigen=false" not in tlray.thread_environment(2).get(
        "XLA_FLAGS", ""
    )
