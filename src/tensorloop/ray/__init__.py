"""Batch inference of tensorloop models on Ray Data (``pip install 'tensorloop[ray]'``).

``map_model(dataset, model, ...)`` runs a model over every row of a ``ray.data.Dataset`` on a
pool of actors, each with the model loaded once; ``Predictor`` is the callable class it hands
to ``Dataset.map_batches``, for a pipeline that calls that itself::

    import ray.data
    import tensorloop.ray

    ds = ray.data.read_parquet("clips.parquet")      # a column per model input, one row a record
    out = tensorloop.ray.map_model(ds, "tagger.onnx", workers=4, batch_size=64)
    out.write_parquet("tags/")                       # the outputs, an ``error`` column, the rest

A row is a record: each model input without its batch axis (``tensorloop.batch``), of any
length; its outputs come back as columns, each record's own, with ``error`` None, or None
outputs and the error's message where the record failed: a bad record never fails the job.
Each actor limits NumPy's, BLAS's and XLA's threads to ``threads`` (one by default), so N
actors on N cores do not oversubscribe them. Ray restarts an actor that dies and retries its
batches (its defaults for ``map_batches`` actors), so a job loses no record to a crash.

The model travels to the actors as its bytes (``Model`` pickles as text IR with its arrays
beside it, its backend and its ``Limits``): it is loaded on the driver, where a bad file fails
at once, then shipped through Ray's object store, so the nodes need no copy of the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..backends.base import Backend
from ..batch import RecordRunner
from ..errors import BackendError
from ..io import load
from ..limits import Limits
from ..model import Model

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The environment variables that size NumPy's BLAS thread pools in a new process."""


def require_ray() -> Any:
    """The ``ray`` module with Ray Data, or a BackendError saying how to install it."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise BackendError("tensorloop.ray needs Ray Data: pip install 'tensorloop[ray]'") from None
    return ray


def load_model(
    model: Model | str | os.PathLike[str] | bytes,
    *,
    backend: str | Backend | None = None,
    limits: Limits | None = None,
) -> Model:
    """``model`` as a Model: a Model as it is (with ``backend`` and ``limits`` if given), a
    path loaded by ``tl.load``, bytes (an ONNX or text IR file's) read as that file."""
    options: dict[str, Any] = {}
    if backend is not None:
        options["backend"] = backend
    if limits is not None:
        options["limits"] = limits
    if isinstance(model, Model):
        if not options:
            return model
        return Model(
            model.graph,
            backend=options.get("backend", model.backend),
            limits=options.get("limits", model.limits),
        )
    return load(model, **options)


def thread_environment(threads: int, devices: int | None = None) -> dict[str, str]:
    """The environment a worker process starts with to use ``threads`` threads (BLAS, OpenMP,
    XLA's CPU client) and, for ``devices``, to split XLA's host platform into that many."""
    env = {name: str(threads) for name in THREAD_VARIABLES}
    flags = os.environ.get("XLA_FLAGS", "").split()
    if threads == 1:
        flags += ["--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1"]
    if devices is not None:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    return env


def limit_threads(threads: int) -> None:
    """Size this process's BLAS and OpenMP pools to ``threads`` now (threadpoolctl), for a
    process that loaded NumPy before its environment could say so."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the environment variables stand alone
        return
    threadpool_limits(limits=threads)


class Predictor:
    """A callable class for ``Dataset.map_batches(Predictor, fn_constructor_kwargs=...,
    batch_format="numpy")``: loads ``model`` once per actor (a Model, a path or bytes) and runs
    each batch with a ``tensorloop.batch.RecordRunner`` (``runner_options``: ``batch_axis``,
    ``stack``, ``buckets``, ``max_stack``, ``columns``, ``outputs``, ``timeout``, ...).
    ``threads`` sizes the actor's thread pools."""

    def __init__(
        self,
        model: Model | str | os.PathLike[str] | bytes,
        *,
        backend: str | Backend | None = None,
        limits: Limits | None = None,
        threads: int | None = 1,
        **runner_options: Any,
    ) -> None:
        if threads is not None:
            limit_threads(threads)
        self.model = load_model(model, backend=backend, limits=limits)
        self.runner = RecordRunner(self.model, **runner_options)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        return self.runner.run_batch(batch)


def map_model(
    dataset: Any,
    model: Model | str | os.PathLike[str] | bytes,
    *,
    workers: int | tuple[int, int] = 1,
    batch_size: int = 64,
    num_cpus: float = 1,
    threads: int = 1,
    backend: str | Backend | None = None,
    limits: Limits | None = None,
    devices: int | None = None,
    ray_remote_args: Mapping[str, Any] | None = None,
    **runner_options: Any,
) -> Any:
    """``dataset`` (a ``ray.data.Dataset``, one row a record) mapped through ``model`` on
    ``workers`` actors (a number, or a (min, max) pool Ray scales between), ``batch_size``
    records a call, each actor reserving ``num_cpus`` CPUs and running ``threads`` threads.
    ``runner_options`` go to ``tensorloop.batch.RecordRunner`` (``stack=True`` to run a
    batch's records together; ``timeout`` seconds per record; ``columns``; ``outputs``; ...);
    ``devices``: on the jax backend, shard each stacked run over this many XLA devices, the
    host's CPU split into them. The model is loaded here and checked with the options, then
    shipped to the actors as its bytes. Returns the mapped (lazy) Dataset."""
    ray = require_ray()
    loaded = load_model(model, backend=backend, limits=limits)
    RecordRunner(loaded, devices=None, **runner_options)  # options fail here, not on a worker
    if devices is not None:
        runner_options["devices"] = devices
    remote = dict(ray_remote_args or {})
    runtime_env = dict(remote.pop("runtime_env", None) or {})
    env_vars = thread_environment(threads, devices) | dict(runtime_env.get("env_vars", {}))
    runtime_env["env_vars"] = env_vars
    size = workers if isinstance(workers, tuple) else (workers, workers)
    return dataset.map_batches(
        Predictor,
        fn_constructor_args=(loaded,),
        fn_constructor_kwargs={"threads": threads, **runner_options},
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(min_size=size[0], max_size=size[1]),
        num_cpus=num_cpus,
        runtime_env=runtime_env,
        **remote,
    )


__all__ = [
    "THREAD_VARIABLES",
    "Predictor",
    "limit_threads",
    "load_model",
    "map_model",
    "require_ray",
    "thread_environment",
]
