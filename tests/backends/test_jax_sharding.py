"""One host, many devices: a batch sharded across JAX devices (``backends/jax/sharding.py``).

XLA splits the host's CPU into N devices only if told before JAX starts, so the sharded runs
happen in child processes with ``--xla_force_host_platform_device_count=4``; each child makes
its own checks (the ULP law of ``backend_agreement`` for the jax backend) and exits non-zero
on a failure. What needs one device only (a ``jax.Array`` input on every backend, the checks
of ``coerce_inputs`` and ``shard_batch``) runs here, under conftest's law across backends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.errors import InputError
from tensorloop.reference.runtime import coerce_inputs, host_values, is_device_array

jax = pytest.importorskip("jax")
sharding = pytest.importorskip("tensorloop.backends.jax.sharding")

TESTS = Path(__file__).resolve().parents[1]
CORPUS = TESTS.parent / "benchmarks" / "real" / "corpus" / "torch" / "bigru_ctc_tagger_ts"
DEVICES = 4

# What every child starts with: a spy on XlaIsland.run that keeps the shardings each island's
# operands and results had (before the backend gathers the results to NumPy), and the check
# that every island of a sharded run ran over all four devices, split along the batch.
_PRELUDE = """
import numpy as np
import jax
import tensorloop as tl
from backend_agreement import JAX_VS_REFERENCE, assert_same_outputs
from tensorloop.backends import jax as xla
from tensorloop.backends.jax.sharding import shard_batch

assert len(jax.devices()) == 4, jax.devices()
ISLANDS = []
_run = xla.XlaIsland.run


def spy(self, inputs, state):
    code, outs = _run(self, inputs, state)
    ISLANDS.append((self, [getattr(x, "sharding", None) for x in inputs],
                    [getattr(o, "sharding", None) for o in outs]))
    return code, outs


xla.XlaIsland.run = spy
COMPILES = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **_: COMPILES.append(event)
    if event == "/jax/core/compile/backend_compile_duration" else None
)


def check_sharded(model, inputs, axes):
    '''The run of ``inputs`` (those named in ``axes`` placed by shard_batch, the others left
    NumPy) agrees with the unsharded jax run and the reference, and every XLA island of it ran
    over the four devices, split along the batch.'''
    want = model.run(inputs, backend="jax")
    reference = model.run(inputs, backend="reference")
    ISLANDS.clear()
    placed = shard_batch({n: inputs[n] for n in axes}, axes)  # the others stay NumPy
    for name in axes:
        assert placed[name].sharding.num_devices == 4
        assert len(placed[name].addressable_shards) == 4
    got = model.run({**inputs, **placed}, backend="jax")
    assert not got.handoffs, got.handoffs
    for name, value in got.items():
        assert type(value) is np.ndarray, (name, type(value))
    assert_same_outputs(got, want, "sharded vs unsharded", backends=("jax", "jax"))
    assert_same_outputs(got, reference, "sharded vs reference", backends=JAX_VS_REFERENCE)
    assert ISLANDS, "no XLA island ran"
    for island, ins, outs in ISLANDS:
        sharded = [s for s in ins if s is not None and s.num_devices == 4 and s.spec]
        assert sharded, f"island got no operand split over the devices: {ins}"
        assert all(s is None or s.num_devices == 4 for s in ins), ins
        # XLA partitioned the island (GSPMD): its results are laid out over the four devices,
        # at least one of them split along the batch, none gathered onto one device.
        assert all(s is not None and s.num_devices == 4 for s in outs), outs
        assert any("batch" in tuple(s.spec) for s in outs), outs
        assert island.replicas, "the island kept no mesh"
        (mesh,) = island.replicas
        assert mesh.size == 4 and mesh.axis_names == ("batch",)
    # A second batch, placed anew, runs on the same programs (XLA compiles nothing new) and
    # agrees with the first.
    placed = shard_batch({n: inputs[n] for n in axes}, axes)
    COMPILES.clear()
    again = model.run({**inputs, **placed}, backend="jax")
    assert not COMPILES, COMPILES
    assert_same_outputs(again, got, "sharded again", backends=("jax", "jax"))
    return got
"""


def _child(code: str, timeout: float = 240) -> str:
    """Run ``code`` (after ``_PRELUDE``) in a process whose host CPU is four XLA devices."""
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={DEVICES}",
        "JAX_PLATFORMS": "cpu",
        "TENSORLOOP_JAX_CACHE": "off",
        "PYTHONPATH": os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _PRELUDE + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=TESTS.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_recurrent_model_runs_sharded_over_four_devices() -> None:
    """A GRU (tl.scan over axis 1 of [B, T, F], weights large enough to be the programs'
    operands, so replicated over the mesh) and a tanh RNN over [T, B, F] split along its axis
    -2; the GRU's h0 replicated (axis None) or split, the RNN's start left as NumPy (absent
    from the axes)."""
    _child("""
rng = np.random.default_rng(0)
B, T, F, H = 8, 6, 5, 32


def weights(*shape):
    return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)


tl.reset()
x = tl.placeholder("float32", ("B", "T", F), name="x")
h0 = tl.placeholder("float32", ("B", H), name="h0")
wx, wh = tl.constant(weights(F, 3 * H)), tl.constant(weights(H, 3 * H))


def gru(h, xt):
    zx, rx, nx = tl.split(tl.matmul(xt, wx), 3, axis=-1)
    zh, rh, nh = tl.split(tl.matmul(h, wh), 3, axis=-1)
    z, r = tl.sigmoid(zx + zh), tl.sigmoid(rx + rh)
    new = (1.0 - z) * tl.tanh(nx + r * nh) + z * h
    return new, new


last, hs = tl.scan(gru, h0, x, axis=1)
model = tl.Model({"last": last, "hs": hs})
inputs = {
    "x": rng.standard_normal((B, T, F)).astype(np.float32),
    "h0": rng.standard_normal((B, H)).astype(np.float32),
}
check_sharded(model, inputs, {"x": 0, "h0": None})
check_sharded(model, inputs, {"x": 0, "h0": 0})

tl.reset()
xs = tl.placeholder("float32", ("T", "B", F), name="xs")
start = tl.placeholder("float32", ("B", F), name="start")
w = tl.constant(weights(F, F))
final, ys = tl.scan(lambda h, xt: (tl.tanh(h * 0.5 + tl.matmul(xt, w)), h), start, xs)
rnn = tl.Model({"final": final, "ys": ys})
inputs = {
    "xs": rng.standard_normal((T, B, F)).astype(np.float32),
    "start": rng.standard_normal((B, F)).astype(np.float32),
}
check_sharded(rnn, inputs, {"xs": -2})
""")


@pytest.mark.skipif(
    not (CORPUS / "model.onnx").exists(), reason="the real corpus is not checked out"
)
def test_a_torch_exported_bigru_runs_sharded_over_four_devices() -> None:
    """nn.GRU(bidirectional) + Linear + log_softmax, exported by torch.onnx: its batch of 8
    sequences split 2 a device."""
    _child(f"""
model = tl.load({str(CORPUS / "model.onnx")!r})
inputs = dict(np.load({str(CORPUS / "inputs.npz")!r}))
check_sharded(model, inputs, {{"x": 0}})
""")


def test_shard_batch_refuses_a_batch_it_cannot_split() -> None:
    """A size the devices do not divide, an axis out of range, more devices than the host has:
    InputErrors naming the input, the axis, its size and the device count. The other cases:
    a negative axis, a sequence of devices, a count of devices, replicated inputs."""
    _child("""
from tensorloop.backends.jax.sharding import device_count
from tensorloop.errors import InputError

assert device_count() == 4
x = np.zeros((6, 3), np.float32)


def refused(*args, **kwargs):
    try:
        shard_batch(*args, **kwargs)
    except InputError as exc:
        return str(exc)
    raise AssertionError(f"no InputError for {args} {kwargs}")


message = refused({"x": x}, {"x": 0})
assert "input 'x'" in message and "axis 0" in message, message
assert "size 6" in message and "4 devices" in message, message
message = refused({"x": x}, {"x": 2})
assert "input 'x'" in message and "axis 2" in message and "[6, 3]" in message, message
assert "rank 2" in message and "4 devices" in message, message
assert "axis -3" in refused({"x": x}, {"x": -3})
message = refused({"x": x}, {"x": None}, devices=5)
assert "5 devices" in message and "has 4" in message, message
assert "no devices" in refused({"x": x}, {}, devices=[])
assert "twice" in refused({"x": x}, {}, devices=[jax.devices()[0]] * 2)

placed = shard_batch({"x": x, "w": np.ones(3, np.float32)}, {"x": 0, "other": 1}, devices=2)
assert placed["x"].sharding.num_devices == 2 and tuple(placed["x"].sharding.spec) == ("batch",)
assert [s.data.shape for s in placed["x"].addressable_shards] == [(3, 3), (3, 3)]
assert placed["w"].sharding.is_fully_replicated and placed["w"].sharding.num_devices == 2
chosen = jax.devices()[2:]
placed = shard_batch({"y": np.zeros((2, 4), np.int64)}, {"y": -1}, devices=chosen)
assert placed["y"].sharding.device_set == set(chosen)
assert tuple(placed["y"].sharding.spec) == (None, "batch")
np.testing.assert_array_equal(np.asarray(placed["y"]), np.zeros((2, 4), np.int64))
""")


def _model() -> tl.Model:
    """A small tanh RNN over [T, B, F] with an h0: a loop, a constant and two inputs."""
    tl.reset()
    xs = tl.placeholder("float32", ("T", "B", 3), name="xs")
    h0 = tl.placeholder("float32", ("B", 3), name="h0")
    w = tl.constant(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3))
    last, hs = tl.scan(lambda h, x: (tl.tanh(tl.matmul(h, w) + x), h), h0, xs)
    return tl.Model({"last": last, "hs": hs})


def _inputs() -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(1)
    return {
        "xs": rng.standard_normal((5, 4, 3)).astype(np.float32),
        "h0": rng.standard_normal((4, 3)).astype(np.float32),
    }


@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
def test_a_jax_array_input_gives_the_answer_of_its_numpy_array(backend: str) -> None:
    """Every backend takes a ``jax.Array`` (the NumPy ones as NumPy) and returns NumPy arrays
    equal to those of the NumPy input; conftest runs each on the other backends too."""
    model, inputs = _model(), _inputs()
    want = model.run(inputs, backend=backend)
    got = model.run({k: jax.numpy.asarray(v) for k, v in inputs.items()}, backend=backend)
    for name in want:
        assert type(got[name]) is np.ndarray
        np.testing.assert_array_equal(got[name], want[name], strict=True)
    placed = sharding.shard_batch(inputs, {"xs": 1, "h0": 0})  # the host's one device here
    for name, value in model.run(placed, backend=backend).items():
        np.testing.assert_array_equal(value, want[name], strict=True)


def test_coerce_inputs_checks_a_jax_array_and_keeps_it_on_its_device() -> None:
    model, inputs = _model(), _inputs()
    on_device = {k: jax.numpy.asarray(v) for k, v in inputs.items()}
    args = coerce_inputs(model.graph, on_device)
    assert [a is on_device[p.name] for a, p in zip(args, model.graph.inputs, strict=True)] == [
        True,
        True,
    ]
    assert all(is_device_array(a) for a in args)
    hosted = host_values([*args, [args[0]], None])
    assert all(type(a) is np.ndarray for a in hosted[:2])
    assert type(hosted[2][0]) is np.ndarray and hosted[3] is None
    wrong_dtype = {**on_device, "xs": jax.numpy.asarray(inputs["xs"], jax.numpy.float64)}
    with pytest.raises(InputError, match=r"input 'xs': expected f32\[T,B,3\], got float64"):
        coerce_inputs(model.graph, wrong_dtype)
    wrong_shape = {**on_device, "h0": jax.numpy.zeros((4, 2), jax.numpy.float32)}
    with pytest.raises(InputError, match=r"input 'h0': expected f32\[B,3\], got float32\[4, 2\]"):
        coerce_inputs(model.graph, wrong_shape)


def test_a_value_jax_traces_is_no_device_array() -> None:
    """A tracer has no data: ``is_device_array`` says no, and ``coerce_inputs`` refuses it as
    it refuses any value it cannot convert."""
    model = _model()
    seen: list[bool] = []

    def traced(x: Any) -> Any:
        seen.append(is_device_array(x))
        with pytest.raises(InputError, match="input 'xs': cannot convert"):
            coerce_inputs(model.graph, {"xs": x, "h0": np.zeros((4, 3), np.float32)})
        return x

    jax.jit(traced)(jax.numpy.zeros((5, 4, 3), jax.numpy.float32))
    assert seen == [False]
    assert not is_device_array(np.zeros(3)) and not is_device_array([1.0])


def test_shard_batch_on_this_host_refuses_what_it_cannot_place() -> None:
    """Asking for more devices than the host has, or an axis out of range, is an InputError
    (the four-device child checks a size the devices do not divide)."""
    count = sharding.device_count()
    assert count == len(jax.devices())
    x = np.zeros((4, 2), np.float32)
    with pytest.raises(InputError, match=rf"asked for {count + 1} devices, this host has {count}"):
        sharding.shard_batch({"x": x}, {"x": 0}, devices=count + 1)
    with pytest.raises(InputError, match=r"input 'x': batch axis 2 is out of range"):
        sharding.shard_batch({"x": x}, {"x": 2})
    with pytest.raises(InputError, match="asked for 0 devices"):
        sharding.shard_batch({"x": x}, {"x": 0}, devices=0)
