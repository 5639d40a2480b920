"""OpenVINO layer test helpers: save IR, run it here and on the CPU plugin, compare outputs."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset3  # noqa: E402

import tensorloop as tl  # noqa: E402

RNG = np.random.default_rng(0)
Array = np.ndarray[Any, Any]


def rand_f32(*shape: int, rng: np.random.Generator = RNG) -> Array:
    """Standard normal f32 values from ``rng`` (a test module's own stream, where its tests count
    on it; this module's by default)."""
    return rng.standard_normal(shape).astype(np.float32)


def uniform_f32(lo: float, hi: float, *shape: int, rng: np.random.Generator = RNG) -> Array:
    """Uniform f32 values in [lo, hi) from ``rng``."""
    return rng.uniform(lo, hi, shape).astype(np.float32)


# -- core ops built by tensorloop's builder (the writer's tests) ---------------------------------
@pytest.fixture
def _fresh_builder() -> None:
    """A fresh builder: import it, and name it in ``pytest.mark.usefixtures``."""
    tl.reset()


def ph(name: str, like: Any, shape: tuple[int | str, ...] | None = None) -> Any:
    """A builder placeholder ``name`` of ``like``'s dtype, and its shape unless ``shape``."""
    return tl.placeholder(like.dtype, like.shape if shape is None else shape, name=name)


def tl_const(values: Any, dtype: Any = np.int64) -> Any:
    """A builder constant (``const`` is OpenVINO's)."""
    return tl.constant(np.array(values, dtype))


def save_ir(
    outputs: Sequence[Any],
    params: Sequence[Any],
    tmp_path: Path,
    sinks: Any = (),
    compress: bool = False,
) -> Path:
    results = [ops.result(o) for o in outputs]
    model = ov.Model(results, list(sinks), list(params), "m")
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=compress)
    return path


def compare_with_openvino(ours: dict[str, Array], compiled: Any, theirs: Any, **tol: float) -> None:
    assert len(ours) == len(compiled.outputs)
    for out in compiled.outputs:
        key = next(k for k in ours if k in out.get_names())
        got, want = ours[key], np.asarray(theirs[out])
        assert got.dtype == want.dtype, key
        assert got.shape == want.shape, key
        np.testing.assert_allclose(
            got, want, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-6), err_msg=key
        )


def compile_cpu(path: Path) -> Any:
    # Without the hint, CPUs with bf16 units run MatMul and friends in bf16.
    return ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def run_path(
    path: Path, feeds: dict[str, Array], write: bool = True, **tol: float
) -> dict[str, Array]:
    """tensorloop's run of the IR at ``path`` against the CPU plugin's; then (``write``) the
    model tensorloop read, written back as IR, run by both again (``written_runs_alike``)."""
    model = tl.load(path)
    ours = dict(model.run(feeds))
    compiled = compile_cpu(path)
    compare_with_openvino(ours, compiled, compiled(feeds), **tol)
    record_layer_types(path, "compared")
    if write:
        written = path.with_name(path.stem + "_written")
        written.mkdir(exist_ok=True)
        written_runs_alike(
            model, feeds, written, rtol=tol.get("rtol", 1e-5), atol=tol.get("atol", 1e-6)
        )
        record_layer_types(path, "written")
    return ours


COVERAGE_LOG = "TENSORLOOP_OV_COVERAGE"
"""Where ``record_layer_types`` appends (``scripts/openvino_coverage.py`` sets it)."""


def record_layer_types(path: Path, kind: str) -> None:
    """Note the layer types of the IR at ``path`` (bodies included), and each layer's attributes
    (those that are one short value: the modes are among them), as ``kind``: "read" (tensorloop
    loaded it), "compared" (read by tensorloop alike the CPU plugin) or "written" (and written
    back as IR the plugin runs alike, which tensorloop reads back alike)."""
    log = os.environ.get(COVERAGE_LOG)
    if log:
        layers: dict[str, list[Any]] = {}
        for layer in ElementTree.parse(path).getroot().iter("layer"):
            data = layer.find("data")
            attrs = {
                k: v for k, v in ({} if data is None else data.attrib).items()
                if len(v) <= 64 and "," not in v
            }  # fmt: skip
            entry = [layer.get("type", ""), attrs]
            layers[json.dumps(entry, sort_keys=True)] = entry
        types = sorted({t for t, _ in layers.values()})
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": kind, "types": types, "layers": list(layers.values())}))
            f.write("\n")


if os.environ.get(COVERAGE_LOG):
    # A coverage run notes every IR a test loads as read, refused modes never reaching the log.
    _load = tl.load

    def _logged_load(path: Any, **options: Any) -> tl.Model:
        model = _load(path, **options)
        if isinstance(path, str | os.PathLike) and str(path).endswith(".xml"):
            record_layer_types(Path(path), "read")
        return model

    tl.load = _logged_load


def check(
    build: Callable[..., Any],
    *arrays: Array,
    tmp_path: Path,
    dynamic: bool = False,
    write: bool = True,
    **tol: float,
) -> dict[str, Array]:
    """Parameters x0, x1, ... for ``arrays`` (every dim of x0 unknown if ``dynamic``); ``build``
    returns an output or a list of them."""
    params = [
        ops.parameter([-1] * a.ndim if dynamic and i == 0 else a.shape, a.dtype, name=f"x{i}")
        for i, a in enumerate(arrays)
    ]
    built = build(*params)
    outputs = built if isinstance(built, list) else [built]
    path = save_ir(outputs, params, tmp_path)
    return run_path(path, {f"x{i}": a for i, a in enumerate(arrays)}, write, **tol)


def written_runs_alike(
    model: tl.Model, feeds: dict[str, Array], tmp_path: Path, rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    """Save ``model`` as IR: OpenVINO's CPU plugin (f32, the inputs' shapes set where the IR's
    are dynamic) computes what tensorloop computes, same dtypes and shapes; and tensorloop reads
    its own IR back to the same results."""
    path = tmp_path / "w.xml"
    tl.save(model, path)
    core = ov.Core()
    read = core.read_model(path)
    if any(p.get_partial_shape().is_dynamic for p in read.inputs):
        read.reshape({name: list(value.shape) for name, value in feeds.items()})
    compiled = core.compile_model(read, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled(feeds)
    want = model.run(feeds)
    for port in compiled.outputs:
        name = port.get_any_name()
        theirs, ours = np.asarray(got[port]), np.asarray(want[name])
        assert theirs.dtype == ours.dtype, (name, theirs.dtype, ours.dtype)
        assert theirs.shape == ours.shape, (name, theirs.shape, ours.shape)
        np.testing.assert_allclose(theirs, ours, rtol=rtol, atol=atol, err_msg=name)
    again = tl.load(path).run(feeds)
    for name in model.output_names:
        np.testing.assert_allclose(again[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def const(values: Any, dtype: Any = np.int64) -> Any:
    return ops.constant(np.array(values, dtype=dtype))


def edit_ir(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times"
    path.write_text(text.replace(old, new))


# -- state ----------------------------------------------------------------------------------------


def stateful_ir(init: str, version: str, tmp_path: Path) -> Path:
    """out = state + x; then state <- out (v3, whose Assign must follow its ReadValue) or
    state <- 2 * x (v6; this Assign is converted before the ReadValue)."""
    x = ops.parameter([2, 3], np.float32, name="x")
    start = ops.constant(np.full((2, 3), 0.5, np.float32))
    value = start if init == "const" else ops.multiply(x, const(3.0, np.float32))
    if version == "v3":
        read = opset3.read_value(value, "s")
    elif init == "none":
        read = ops.read_value("s", ov.Type.f32, [2, 3])
    else:
        read = ops.read_value(value, "s", ov.Type.f32, [2, 3])
    out = ops.add(read, x)
    if version == "v3":
        assign = opset3.assign(out, "s")
    else:
        assign = ops.assign(ops.multiply(x, const(2.0, np.float32)), "s")
    return save_ir([out], [x], tmp_path, sinks=[assign])


# -- exact comparisons, string tensors included ---------------------------------------------
def _shown(value: Any) -> Any:
    """A tensorloop string as OpenVINO's Python API shows it: bytes that are not UTF-8 (which
    tensorloop keeps as lone surrogates) read as U+FFFD."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _assert_same(ours: Array, theirs: Array, name: str) -> None:
    if ours.dtype == object:
        assert theirs.dtype.kind == "U", (name, theirs.dtype)
        assert ours.shape == theirs.shape, (name, ours.shape, theirs.shape)
        assert [_shown(s) for s in ours.reshape(-1)] == theirs.reshape(-1).tolist(), name
        return
    assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


def _assert_equal(got: Any, want: Array, name: str) -> None:
    got = np.asarray(got)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), name
    assert got.tolist() == want.tolist(), name


def _ov_feed(value: Array) -> Array:
    """What OpenVINO's Python API takes for a tensor: str arrays instead of object arrays."""
    return value.astype(str) if value.dtype == object else value


def _runs_alike(model: tl.Model, path: Path, feeds: dict[str, Array]) -> dict[str, Array]:
    """tensorloop's run of ``model`` against the CPU plugin's run of the IR at ``path``: same
    dtypes, shapes and values."""
    ours = model.run(feeds)
    compiled = compile_cpu(path)
    theirs = compiled({k: _ov_feed(v) for k, v in feeds.items()})
    assert len(compiled.outputs) == len(model.output_names)
    for port in compiled.outputs:
        name = next(k for k in model.output_names if k in port.get_names())
        _assert_same(np.asarray(ours[name]), np.asarray(theirs[port]), name)
    return {k: np.asarray(v) for k, v in ours.items()}


def check_exactly(
    outputs: list[Any], params: list[Any], feeds: dict[str, Array], tmp_path: Path
) -> dict[str, Array]:
    """Save the OpenVINO model, read it, and compare with the CPU plugin, exactly (string tensors
    too); then write what tensorloop read as IR, and compare that on the plugin and read back by
    tensorloop."""
    path = save_ir(outputs, params, tmp_path)
    model = tl.load(path)
    ours = _runs_alike(model, path, feeds)
    record_layer_types(path, "compared")
    for backend in ("compiled", "jax"):
        with warnings.catch_warnings():
            # jax places string and run-time-shaped nodes on the compiled backend, up front
            warnings.simplefilter("ignore", tl.FallbackWarning)
            again = model.run(feeds, backend=backend)
        assert all(h.stage == "plan" and h.target == "compiled" for h in again.handoffs), (
            backend,
            again.handoffs,
        )
        for name, value in ours.items():
            _assert_equal(again[name], value, f"{backend} {name}")
    written = tmp_path / "written" / "w.xml"
    written.parent.mkdir()
    tl.save(model, written)
    _runs_alike(model, written, feeds)
    reread = tl.load(written).run(feeds)
    for name, value in ours.items():
        _assert_equal(reread[name], value, f"re-read {name}")
    record_layer_types(path, "written")
    return ours
