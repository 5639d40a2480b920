"""One host, many devices: a batch split across the host's JAX devices along its batch axis.

``shard_batch`` places each input of a stacked batch on a one-dimensional mesh of devices
(its one axis named ``BATCH_AXIS``), split along the input's batch axis, or replicated on every
device where it has none (weights, a shared initial state). Run on the jax backend, a model
given such inputs runs sharded: each XLA island whose operands are sharded is compiled for
their sharding and partitioned by XLA (GSPMD) over the mesh, and its results stay sharded for
the islands after it; what the host computes, and the results the run returns, are NumPy
arrays (gathered from the devices). Other backends take the arrays as NumPy arrays::

    from tensorloop.backends.jax.sharding import shard_batch

    inputs = shard_batch({"x": xs, "h0": h0}, {"x": 0, "h0": None})  # xs: [B, T, F]
    outputs = model.run(inputs, backend="jax")

A batch axis must split evenly: its size a multiple of the number of devices (pad the batch
otherwise). On a CPU-only host, XLA offers as many devices as
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` asks for, set before JAX starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ...errors import InputError

BATCH_AXIS = "batch"
"""The name of the mesh axis a batch is split along."""


def device_count() -> int:
    """How many devices JAX has on this host (of its default platform): ``len(jax.devices())``."""
    return len(jax.devices())


def shard_batch(
    arrays: Mapping[str, Any],
    axes: Mapping[str, int | None],
    devices: int | Sequence[jax.Device] | None = None,
) -> dict[str, jax.Array]:
    """``arrays`` (NumPy arrays, or anything ``np.asarray`` takes, by input name) placed on a
    mesh of ``devices``, each split along its batch axis ``axes[name]`` (negative counts from
    the end) into equal shards, one per device, or replicated on every device where that is
    None or the name is not in ``axes`` (names of ``axes`` with no array are left alone: one
    mapping may serve all of a model's inputs, some of them given otherwise).

    ``devices``: the first ``devices`` of ``jax.devices()`` (an int), those devices (a
    sequence), or all of them (None). An ``InputError`` names the input, the axis, its size and
    the number of devices where a batch axis is out of range or its size is no multiple of the
    number of devices, and says how many devices there are where more are asked for."""
    mesh = _mesh(devices)
    count = mesh.size
    placed: dict[str, jax.Array] = {}
    for name, value in arrays.items():
        array = value if isinstance(value, jax.Array) else np.asarray(value)
        axis = axes.get(name)
        if axis is None:
            spec = PartitionSpec()  # type: ignore[no-untyped-call]
        else:
            rank = array.ndim
            if not -rank <= axis < rank:
                raise InputError(
                    f"shard_batch: input '{name}': batch axis {axis} is out of range for its "
                    f"shape {list(array.shape)} (rank {rank}), to split over {count} devices"
                )
            axis %= rank
            size = int(array.shape[axis])
            if size % count:
                raise InputError(
                    f"shard_batch: input '{name}': batch axis {axis} has size {size}, which "
                    f"{count} devices do not divide evenly; give a batch whose size is a "
                    f"multiple of {count} (pad it) or fewer devices"
                )
            spec = PartitionSpec(*([None] * axis), BATCH_AXIS)  # type: ignore[no-untyped-call]
        placed[name] = jax.device_put(array, NamedSharding(mesh, spec))
    return placed


def _mesh(devices: int | Sequence[jax.Device] | None) -> Mesh:
    """The one-axis mesh of ``devices`` (see ``shard_batch``)."""
    available = jax.devices()
    if devices is None:
        chosen = list(available)
    elif isinstance(devices, int | np.integer):
        wanted = int(devices)
        if not 1 <= wanted <= len(available):
            raise InputError(
                f"shard_batch: asked for {wanted} devices, this host has "
                f"{len(available)} ({available[0].platform}); ask for 1 to {len(available)}"
            )
        chosen = list(available[:wanted])
    else:
        chosen = list(devices)
        if not chosen:
            raise InputError("shard_batch: asked for no devices; give at least one")
        if len(set(chosen)) != len(chosen):
            raise InputError(
                f"shard_batch: a device is given twice in {chosen}; give each device once"
            )
    return Mesh(np.array(chosen), (BATCH_AXIS,))


__all__ = ["BATCH_AXIS", "device_count", "shard_batch"]
