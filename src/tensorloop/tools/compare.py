"""Run one model on several runtimes (tensorloop's backends, onnxruntime, OpenVINO) and compare."""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import backend_names
from ..errors import BackendError, InputError, TensorloopError, UnsupportedOpError
from ..io import load
from ..limits import Limits
from .inputs import InputSpec, Shape, dims_text, input_specs_of, make_inputs

TENSORLOOP_PREFIX = "tensorloop-"
DEFAULT_RUNTIMES = (
    "tensorloop-reference",
    "tensorloop-compiled",
    "tensorloop-jax",
    "onnxruntime",
    "openvino",
)
"""What ``compare`` and ``bench`` run when not told: the first is the one the others are held to."""

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5


def runtime_names() -> list[str]:
    """Every runtime name ``load_runtime`` knows: ``tensorloop-<backend>`` per backend, then
    ``onnxruntime`` and ``openvino``."""
    return [f"{TENSORLOOP_PREFIX}{b}" for b in backend_names()] + ["onnxruntime", "openvino"]


_SHORT = {"ort": "onnxruntime", "ov": "openvino"}


def parse_runtimes(spec: str | Iterable[str]) -> list[str]:
    """Runtime names from ``"a,b,c"`` (or a list); a bare backend name (``compiled``) stands for
    ``tensorloop-compiled``, ``ort`` and ``ov`` for onnxruntime and OpenVINO."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    known = runtime_names()
    out: list[str] = []
    for raw in (s.strip() for s in items):
        if not raw:
            continue
        name = _SHORT.get(raw, raw)
        if name not in known and f"{TENSORLOOP_PREFIX}{name}" in known:
            name = f"{TENSORLOOP_PREFIX}{name}"
        if name not in known:
            raise InputError(f"unknown runtime '{raw}'; known: {', '.join(known)}")
        if name not in out:
            out.append(name)
    if not out:
        raise InputError("no runtime named")
    return out


# --- runtimes -------------------------------------------------------------------------------------


class RuntimeUnavailableError(TensorloopError):
    """A runtime cannot load (or cannot run) a model at all; it is skipped, not failed."""


@dataclass
class Runtime:
    """A model loaded into one runtime: ``run(feeds)`` returns its outputs in order,
    ``outputs[i]`` the names output i carries (none, for an unnamed OpenVINO port)."""

    name: str
    inputs: list[InputSpec]
    outputs: list[tuple[str, ...]]
    run: Callable[[Mapping[str, Any]], list[Any]]
    load_seconds: float = 0.0
    handoffs: set[Any] | None = None
    """For a tensorloop backend, the distinct handoffs its runs made so far (``Handoff``: what
    it handed to another backend); None for other runtimes."""

    def output_label(self, index: int) -> str:
        names = self.outputs[index]
        return names[0] if names else f"#{index}"


def _route(runtime: str, specs: Sequence[InputSpec], feeds: Mapping[str, Any]) -> list[Any]:
    """``feeds`` (keyed by any name of an input) in the order of ``specs``; by position where
    no name matches and the counts agree."""
    values: list[Any] = []
    for i, spec in enumerate(specs):
        hit = next((feeds[n] for n in spec.names if n in feeds), None)
        if hit is None:
            if len(feeds) != len(specs):
                raise InputError(
                    f"{runtime}: no value for input '{spec.name}' among {', '.join(feeds)}"
                )
            hit = list(feeds.values())[i]
        values.append(hit)
    return values


def _tensorloop(backend: str, path: Path, limits: Limits | None) -> Runtime:
    start = time.perf_counter()
    model = load(path, limits=limits or Limits(), backend=backend)
    model.prepared(backend)
    specs = input_specs_of(model)
    handoffs: set[Any] = set()

    def run(feeds: Mapping[str, Any]) -> list[Any]:
        outs = model.run(dict(zip(model.input_names, _route(name, specs, feeds), strict=True)))
        handoffs.update(outs.handoffs)
        return [outs[n] for n in model.output_names]

    name = f"{TENSORLOOP_PREFIX}{backend}"
    outputs: list[tuple[str, ...]] = [(n,) for n in model.output_names]
    return Runtime(name, specs, outputs, run, time.perf_counter() - start, handoffs)


_ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
}


def _onnxruntime(path: Path) -> Runtime:
    if path.suffix.lower() != ".onnx":
        raise RuntimeUnavailableError("onnxruntime reads .onnx files only")
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:
        raise RuntimeUnavailableError("onnxruntime is not installed") from None
    start = time.perf_counter()
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: no warnings about unused initializers
    # Spinning intra-op threads would steal the cores from the runtime timed next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise RuntimeUnavailableError(_one_line(exc)) from None
    specs: list[InputSpec] = []
    for i in sess.get_inputs():
        dt = _ORT_TYPES.get(i.type)
        shape = tuple(d if isinstance(d, int) else (d or "?") for d in i.shape)
        specs.append(InputSpec((i.name,), None if dt is None else np.dtype(dt), shape))
    out_names = [o.name for o in sess.get_outputs()]

    def run(feeds: Mapping[str, Any]) -> list[Any]:
        values = _route("onnxruntime", specs, feeds)
        return list(sess.run(out_names, {s.name: v for s, v in zip(specs, values, strict=True)}))

    return Runtime(
        "onnxruntime", specs, [(n,) for n in out_names], run, time.perf_counter() - start
    )


_OV_CORE: list[Any] = []


def _openvino(path: Path) -> Runtime:
    if path.suffix.lower() not in (".onnx", ".xml"):
        raise RuntimeUnavailableError("OpenVINO reads .onnx and .xml files here")
    try:
        ov = importlib.import_module("openvino")
    except ImportError:
        raise RuntimeUnavailableError("openvino is not installed") from None
    start = time.perf_counter()
    if not _OV_CORE:
        _OV_CORE.append(ov.Core())
    try:
        compiled = _OV_CORE[0].compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    except Exception as exc:
        raise RuntimeUnavailableError(_one_line(exc)) from None
    request = compiled.create_infer_request()
    specs: list[InputSpec] = []
    for port in compiled.inputs:
        names = tuple(sorted(port.get_names()))
        try:
            dt: np.dtype[Any] | None = np.dtype(port.get_element_type().to_dtype())
        except Exception:
            dt = None
        pshape = port.get_partial_shape()
        shape: Shape = None
        if pshape.rank.is_static:
            shape = tuple(d.get_length() if d.is_static else "?" for d in pshape)
        specs.append(InputSpec(names or (f"#{len(specs)}",), dt, shape))
    ports = list(compiled.outputs)

    def run(feeds: Mapping[str, Any]) -> list[Any]:
        values = _route("openvino", specs, feeds)
        result = request.infer({i: np.asarray(v, order="C") for i, v in enumerate(values)})
        # The request owns the buffers it returns and reuses them on the next run.
        return [np.array(result[p], copy=True) for p in ports]

    outputs = [tuple(sorted(p.get_names())) for p in ports]
    return Runtime("openvino", specs, outputs, run, time.perf_counter() - start)


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line: OpenVINO's source locations and failed checks left
    out, as they precede the sentence that says what is wrong."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Exception from ", "Check '"))] or lines
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def load_runtime(name: str, path: str | Path, *, limits: Limits | None = None) -> Runtime:
    """Load the model at ``path`` into runtime ``name`` (see ``runtime_names``); raises
    ``RuntimeUnavailableError`` with the reason when it cannot. tensorloop's errors about the model
    itself (a malformed file) propagate."""
    p = Path(path)
    if name == "onnxruntime":
        return _onnxruntime(p)
    if name == "openvino":
        return _openvino(p)
    if not name.startswith(TENSORLOOP_PREFIX):
        raise BackendError(f"unknown runtime '{name}'; known: {', '.join(runtime_names())}")
    backend = name[len(TENSORLOOP_PREFIX) :]
    try:
        return _tensorloop(backend, p, limits)
    except (UnsupportedOpError, BackendError) as exc:
        raise RuntimeUnavailableError(_one_line(exc)) from None
    except ImportError as exc:
        raise RuntimeUnavailableError(f"{exc.name or 'a module'} is not installed") from None


def load_or_skip(
    name: str, path: str | Path, limits: Limits | None, skipped: dict[str, str]
) -> tuple[Runtime | None, TensorloopError | None]:
    """``load_runtime``, or None with the reason in ``skipped``; the error too where tensorloop
    cannot read the file, for the caller to raise when no runtime loads it."""
    try:
        return load_runtime(name, path, limits=limits), None
    except RuntimeUnavailableError as exc:
        skipped[name] = str(exc)
        return None, None
    except TensorloopError as exc:
        skipped[name] = _one_line(exc)
        return None, exc


def run_safely(runtime: Runtime, feeds: Mapping[str, Any]) -> tuple[list[Any] | None, str, str]:
    """``(outputs, "", "")`` or ``(None, "skipped"|"failed", reason)``: tensorloop backends
    that lack an op are skipped; any other error of a run is a failure."""
    try:
        return runtime.run(feeds), "", ""
    except (UnsupportedOpError, BackendError) as exc:
        return None, "skipped", _one_line(exc)
    except InputError as exc:
        return None, "failed", _one_line(exc)
    except Exception as exc:
        return None, "failed", f"{type(exc).__name__}: {_one_line(exc)}"


# --- comparing outputs ----------------------------------------------------------------------------


def _describe(value: Any) -> tuple[str, str]:
    """(dtype, shape) as text for any output: a tensor, a sequence of them, or None."""
    if value is None:
        return "none", "-"
    if isinstance(value, list | tuple):
        return "sequence", f"len {len(value)}"
    arr = np.asarray(value)
    return str(arr.dtype), dims_text(arr.shape)


@dataclass
class OutputDiff:
    """One output of one runtime against the reference runtime's."""

    output: str
    runtime: str
    matched_as: str
    dtype: str
    shape: str
    expected_dtype: str
    expected_shape: str
    max_abs: float | None = None
    max_rel: float | None = None
    problem: str | None = None
    within: bool = True

    def to_dict(self) -> dict[str, Any]:
        """As JSON wants it; an infinite difference (NaN against a number, a number against 0
        relatively) is the string ``"inf"``."""

        def num(x: float | None) -> float | str | None:
            return x if x is None or math.isfinite(x) else str(x)

        return {
            "output": self.output,
            "runtime": self.runtime,
            "matched_as": self.matched_as,
            "dtype": self.dtype,
            "shape": self.shape,
            "expected_dtype": self.expected_dtype,
            "expected_shape": self.expected_shape,
            "max_abs": num(self.max_abs),
            "max_rel": num(self.max_rel),
            "problem": self.problem,
            "within_tolerance": self.within,
        }


def difference(
    got: Any, expected: Any, rtol: float, atol: float
) -> tuple[float | None, float | None, str | None, bool]:
    """``(max_abs, max_rel, problem, within)`` of ``got`` against ``expected``: a tensor,
    a sequence of tensors, or None. ``within`` is numpy's allclose (NaN where both are NaN is
    equal); the relative difference is ``|got - expected| / |expected|`` (inf where expected is
    0 and got is not)."""
    if got is None or expected is None:
        same = got is None and expected is None
        return None, None, None if same else "one is None, the other is not", same
    if isinstance(expected, list | tuple) or isinstance(got, list | tuple):
        if not (isinstance(expected, list | tuple) and isinstance(got, list | tuple)):
            return None, None, "a sequence against a tensor", False
        if len(got) != len(expected):
            return None, None, f"sequence length {len(got)}, expected {len(expected)}", False
        worst_abs: float | None = None
        worst_rel: float | None = None
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            a, r, problem, ok = difference(g, e, rtol, atol)
            if problem:
                return a, r, f"element {i}: {problem}", False
            worst_abs = a if worst_abs is None or (a is not None and a > worst_abs) else worst_abs
            worst_rel = r if worst_rel is None or (r is not None and r > worst_rel) else worst_rel
            if not ok:
                return worst_abs, worst_rel, None, False
        return worst_abs, worst_rel, None, True
    g, e = np.asarray(got), np.asarray(expected)
    problems = []
    if g.dtype != e.dtype:
        problems.append(f"dtype {g.dtype}, expected {e.dtype}")
    if g.shape != e.shape:
        problems.append(f"shape {dims_text(g.shape)}, expected {dims_text(e.shape)}")
        return None, None, "; ".join(problems), False
    numeric = all(x.dtype.kind in "biuf" for x in (g, e))
    if not numeric:
        same = bool(np.array_equal(g, e))
        return None, None, "; ".join(problems) or (None if same else "values differ"), same
    if g.size == 0:
        return 0.0, 0.0, "; ".join(problems) or None, not problems
    gf, ef = g.astype(np.float64).reshape(-1), e.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        both_nan = np.isnan(gf) & np.isnan(ef)
        diff = np.abs(gf - ef)
        diff[both_nan] = 0.0
        diff[(gf == ef) & ~both_nan] = 0.0  # inf against the same inf
        diff[np.isnan(diff)] = np.inf  # NaN against a number
        rel = np.where(diff == 0, 0.0, diff / np.abs(ef))
        ok = bool(np.all((diff == 0) | (diff <= atol + rtol * np.abs(ef))))
    return float(diff.max()), float(rel.max()), "; ".join(problems) or None, ok and not problems


@dataclass
class Comparison:
    """What ``compare`` found: every runtime's outputs against the reference runtime's."""

    model: str
    reference: str
    rtol: float
    atol: float
    ran: list[str]
    skipped: dict[str, str]
    failed: dict[str, str]
    diffs: list[OutputDiff]
    inputs: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """At least two runtimes ran, none failed, and every output of every runtime is within
        tolerance."""
        return len(self.ran) >= 2 and not self.failed and all(d.within for d in self.diffs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "reference": self.reference,
            "rtol": self.rtol,
            "atol": self.atol,
            "ok": self.ok,
            "inputs": {n: {"dtype": d, "shape": s} for n, (d, s) in self.inputs.items()},
            "ran": self.ran,
            "skipped": self.skipped,
            "failed": self.failed,
            "outputs": [d.to_dict() for d in self.diffs],
        }


def match_outputs(reference: Runtime, other: Runtime) -> list[tuple[int | None, str]]:
    """For each reference output, the index of ``other``'s output holding it and how it was
    found: by any of the names the output carries, else by position when both have as many
    outputs (an OpenVINO port converted from a torch model may carry no name at all)."""
    by_name = {n: i for i, names in enumerate(other.outputs) for n in names}
    taken = set()
    found: list[int | None] = []
    for names in reference.outputs:
        idx = next((by_name[n] for n in names if n in by_name), None)
        found.append(idx)
        if idx is not None:
            taken.add(idx)
    out: list[tuple[int | None, str]] = []
    for i, idx in enumerate(found):
        if idx is not None:
            out.append((idx, other.output_label(idx)))
        elif len(other.outputs) == len(reference.outputs) and i not in taken:
            out.append((i, f"{other.output_label(i)} (by position)"))
        else:
            out.append((None, "missing"))
    return out


def compare_outputs(
    reference: Runtime,
    expected: list[Any],
    other: Runtime,
    got: list[Any],
    rtol: float,
    atol: float,
) -> list[OutputDiff]:
    """One ``OutputDiff`` per reference output."""
    diffs = []
    for i, (idx, how) in enumerate(match_outputs(reference, other)):
        exp_dtype, exp_shape = _describe(expected[i])
        label = reference.output_label(i)
        if idx is None:
            diffs.append(
                OutputDiff(label, other.name, how, "-", "-", exp_dtype, exp_shape, None, None,
                           f"{other.name} has no output '{label}'", False)
            )  # fmt: skip
            continue
        dtype, shape = _describe(got[idx])
        a, r, problem, ok = difference(got[idx], expected[i], rtol, atol)
        diffs.append(
            OutputDiff(label, other.name, how, dtype, shape, exp_dtype, exp_shape, a, r,
                       problem, ok)
        )  # fmt: skip
    return diffs


def compare(
    path: str | Path,
    runtimes: Iterable[str] = DEFAULT_RUNTIMES,
    inputs: Mapping[str, Any] = {},
    *,
    random: bool = False,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] = {},
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    limits: Limits | None = None,
) -> Comparison:
    """Run the model at ``path`` on each runtime with the same inputs (``inputs``, and with
    ``random`` random data for the rest, see ``make_inputs``) and hold every output to the first
    runtime that ran: ``|got - expected| <= atol + rtol * |expected|`` everywhere."""
    names = parse_runtimes(runtimes)
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    results: list[tuple[Runtime, list[Any]]] = []
    feeds: dict[str, Any] | None = None
    first_error: TensorloopError | None = None
    for name in names:
        rt, error = load_or_skip(name, path, limits, skipped)
        first_error = first_error or error
        if rt is None:
            continue
        if feeds is None:  # the first runtime that loads the model declares its inputs
            feeds = make_inputs(rt.inputs, inputs, random=random, seed=seed, shapes=shapes)
        outs, status, reason = run_safely(rt, feeds)
        if outs is not None:
            results.append((rt, outs))
        elif status == "skipped":
            skipped[name] = reason
        else:
            failed[name] = reason
    if feeds is None:
        if first_error is not None:
            raise first_error
        reasons = "; ".join(f"{n}: {r}" for n, r in skipped.items())
        raise RuntimeUnavailableError(f"{path}: no runtime can load it ({reasons})")
    ran = [rt.name for rt, _ in results]
    diffs: list[OutputDiff] = []
    reference = ran[0] if ran else ""
    if results:
        ref_rt, expected = results[0]
        for rt, got in results[1:]:
            diffs += compare_outputs(ref_rt, expected, rt, got, rtol, atol)
    return Comparison(
        str(path),
        reference,
        rtol,
        atol,
        ran,
        {n: skipped[n] for n in names if n in skipped},
        failed,
        diffs,
        {n: _describe(v) for n, v in feeds.items()},
    )
