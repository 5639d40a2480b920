"""Issue #11: every tensorloop backend beside onnxruntime and OpenVINO, round-robin, one command.

For each workload (``--case``, repeatable) the ONNX model is built with onnx.helper, every runner
(each name in ``tensorloop.backends.backend_names()`` selected by ``--backends``, onnxruntime CPU,
OpenVINO CPU f32) runs it once and its outputs are checked against onnxruntime
(np.allclose, rtol=atol=1e-4). Then ``--warmup`` and ``--repeats`` rounds follow; each round runs
every runner once, in an order rotated by one per round, so drift on the machine hits all alike.
The table gives the median of the timed run calls (time.perf_counter) and its ratio to
onnxruntime's median.

First run and peak memory come from a fresh subprocess per (workload, runner): after the imports
and building the case, it resets the kernel's resident-set high-water mark
(``/proc/self/clear_refs``) and notes VmRSS; then it loads the model file (tensorloop:
``tl.load(path, backend=...)``; onnxruntime: a new InferenceSession; OpenVINO: a new compiled
model), prepares it and runs it once.
"first run" is that wall time (tensorloop's lazily imported modules are imported before the
clock starts, as the other runtimes' libraries are); "peak RSS" is VmHWM minus the VmRSS noted
before, i.e. how far the process's resident set (Python and native allocations alike) grew
above where it stood.
Where clear_refs cannot be written, ``resource.getrusage`` ru_maxrss is used instead (then the
number is the growth of the peak over the process's peak before loading).

    .venv/bin/python benchmarks/compare.py --quick
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
import numpy as np
import onnx
import onnxruntime as ort
from loops import ATOL, RTOL, Case, Feed, Runner, _f32, _model, openvino_from_file, ov
from loops import CASES as OLD_CASES
from onnx import TensorProto, helper, numpy_helper
from rich.console import Console
from rich.table import Table

import tensorloop as tl
from tensorloop.backends import backend_names

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
LSTM_SIZES = {  # T, B, I = H
    "small": (1000, 1, 64),
    "medium": (256, 16, 256),
    "large": (64, 64, 1024),
}
WHILE_LIMIT = 2.2e8


def _vi(name: str, elem: int, shape: list[Any] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _lstm_weights(rng: np.random.Generator, inp: int, hid: int) -> tuple[np.ndarray, ...]:
    scale = 1.0 / np.sqrt(hid)
    return (
        _f32(rng, (4 * hid, inp), scale),
        _f32(rng, (4 * hid, hid), scale),
        _f32(rng, (8 * hid,), scale),
    )


def lstm_loop_case(size: str) -> Callable[[np.random.Generator], Case]:
    """An LSTM written out as an ONNX Loop whose body reads its step with Gather(X, i)."""
    seq, batch, hid = LSTM_SIZES[size]
    inp = hid

    def build(rng: np.random.Generator) -> Case:
        w, r, b = _lstm_weights(rng, inp, hid)
        mm = helper.make_node
        body = helper.make_graph(
            [
                mm("Gather", ["X", "i"], ["x_t"], axis=0),
                mm("MatMul", ["x_t", "WT"], ["xw"]),
                mm("MatMul", ["h_in", "RT"], ["hr"]),
                mm("Add", ["xw", "hr"], ["s"]),
                mm("Add", ["s", "bias"], ["gates"]),
                mm("Split", ["gates", "split4"], ["gi", "go", "gf", "gc"], axis=1),
                mm("Sigmoid", ["gi"], ["it"]),
                mm("Sigmoid", ["go"], ["ot"]),
                mm("Sigmoid", ["gf"], ["ft"]),
                mm("Tanh", ["gc"], ["ct"]),
                mm("Mul", ["ft", "c_in"], ["fc"]),
                mm("Mul", ["it", "ct"], ["ic"]),
                mm("Add", ["fc", "ic"], ["c_out"]),
                mm("Tanh", ["c_out"], ["tc"]),
                mm("Mul", ["ot", "tc"], ["h_out"]),
                mm("Identity", ["cond_in"], ["cond_out"]),
                mm("Identity", ["h_out"], ["y_t"]),
            ],
            "body",
            [
                _vi("i", INT64, []),
                _vi("cond_in", BOOL, []),
                _vi("h_in", FLOAT, [batch, hid]),
                _vi("c_in", FLOAT, [batch, hid]),
            ],
            [
                _vi("cond_out", BOOL, []),
                _vi("h_out", FLOAT, [batch, hid]),
                _vi("c_out", FLOAT, [batch, hid]),
                _vi("y_t", FLOAT, [batch, hid]),
            ],
        )
        inits = [
            numpy_helper.from_array(np.array(seq, np.int64), "M"),
            numpy_helper.from_array(np.array(True), "cond"),
            numpy_helper.from_array(np.ascontiguousarray(w.T), "WT"),
            numpy_helper.from_array(np.ascontiguousarray(r.T), "RT"),
            numpy_helper.from_array((b[: 4 * hid] + b[4 * hid :]).reshape(1, -1), "bias"),
            numpy_helper.from_array(np.array([hid] * 4, np.int64), "split4"),
            numpy_helper.from_array(np.zeros((batch, hid), np.float32), "h0"),
            numpy_helper.from_array(np.zeros((batch, hid), np.float32), "c0"),
        ]
        node = helper.make_node("Loop", ["M", "cond", "h0", "c0"], ["Y_h", "Y_c", "Y"], body=body)
        graph = helper.make_graph(
            [node],
            "lstm_loop",
            [_vi("X", FLOAT, [seq, batch, inp])],
            [
                _vi("Y_h", FLOAT, [batch, hid]),
                _vi("Y_c", FLOAT, [batch, hid]),
                _vi("Y", FLOAT, [seq, batch, hid]),
            ],
            inits,
        )
        return Case(
            f"lstm-loop-{size}",
            f"LSTM as Loop+Gather T={seq} B={batch} I=H={hid}",
            _model(graph),
            {"X": _f32(rng, (seq, batch, inp))},
        )

    return build


def lstm_op_case(size: str) -> Callable[[np.random.Generator], Case]:
    """The same LSTM as one ONNX LSTM op."""
    seq, batch, hid = LSTM_SIZES[size]
    inp = hid

    def build(rng: np.random.Generator) -> Case:
        w, r, b = _lstm_weights(rng, inp, hid)
        inits = [
            numpy_helper.from_array(w[None], "W"),
            numpy_helper.from_array(r[None], "R"),
            numpy_helper.from_array(b[None], "B"),
        ]
        node = helper.make_node(
            "LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=hid, direction="forward"
        )
        graph = helper.make_graph(
            [node],
            "lstm_op",
            [_vi("X", FLOAT, [seq, batch, inp])],
            [
                _vi("Y", FLOAT, [seq, 1, batch, hid]),
                _vi("Y_h", FLOAT, [1, batch, hid]),
                _vi("Y_c", FLOAT, [1, batch, hid]),
            ],
            inits,
        )
        return Case(
            f"lstm-op-{size}",
            f"LSTM op T={seq} B={batch} I=H={hid}",
            _model(graph),
            {"X": _f32(rng, (seq, batch, inp))},
        )

    return build


def while_case(rng: np.random.Generator) -> Case:
    """x = x * 1.0001 + 1; n += 1 while x < 2.2e8 (float32 x, no trip count: a pure while)."""
    mm = helper.make_node
    body = helper.make_graph(
        [
            mm("Mul", ["x_in", "k"], ["xk"]),
            mm("Add", ["xk", "one_f"], ["x_out"]),
            mm("Add", ["n_in", "one_i"], ["n_out"]),
            mm("Less", ["x_out", "limit"], ["cond_out"]),
        ],
        "body",
        [
            _vi("i", INT64, []),
            _vi("cond_in", BOOL, []),
            _vi("x_in", FLOAT, []),
            _vi("n_in", INT64, []),
        ],
        [_vi("cond_out", BOOL, []), _vi("x_out", FLOAT, []), _vi("n_out", INT64, [])],
    )
    inits = [
        numpy_helper.from_array(np.array(1.0001, np.float32), "k"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one_f"),
        numpy_helper.from_array(np.array(1, np.int64), "one_i"),
        numpy_helper.from_array(np.array(WHILE_LIMIT, np.float32), "limit"),
        numpy_helper.from_array(np.array(0, np.int64), "n0"),
    ]
    graph = helper.make_graph(
        [
            mm("Less", ["x0", "limit"], ["cond"]),
            mm("Loop", ["", "cond", "x0", "n0"], ["x", "n"], body=body),
        ],
        "while",
        [_vi("x0", FLOAT, [])],
        [_vi("x", FLOAT, []), _vi("n", INT64, [])],
        inits,
    )
    return Case(
        "while",
        f"while x < {WHILE_LIMIT:g}: x = x*1.0001 + 1 (f32), n += 1",
        _model(graph),
        {"x0": np.array(0.0, np.float32)},
    )


def nested_case(rng: np.random.Generator) -> Case:
    """A 100 x 100 nested Loop: v = v * a + b on a [16] float32 vector (a, b outer-scope)."""
    outer_trips, inner_trips, dim = 100, 100, 16
    mm = helper.make_node
    inner = helper.make_graph(
        [
            mm("Mul", ["v_in", "a"], ["va"]),
            mm("Add", ["va", "b"], ["v_out"]),
            mm("Identity", ["ic_in"], ["ic_out"]),
        ],
        "inner",
        [_vi("j", INT64, []), _vi("ic_in", BOOL, []), _vi("v_in", FLOAT, [dim])],
        [_vi("ic_out", BOOL, []), _vi("v_out", FLOAT, [dim])],
    )
    outer = helper.make_graph(
        [
            mm("Loop", ["N", "cond", "u_in"], ["w"], body=inner),
            mm("Sin", ["w"], ["u_out"]),
            mm("Identity", ["c_in"], ["c_out"]),
        ],
        "outer",
        [_vi("i", INT64, []), _vi("c_in", BOOL, []), _vi("u_in", FLOAT, [dim])],
        [_vi("c_out", BOOL, []), _vi("u_out", FLOAT, [dim])],
    )
    inits = [
        numpy_helper.from_array(np.array(outer_trips, np.int64), "M"),
        numpy_helper.from_array(np.array(inner_trips, np.int64), "N"),
        numpy_helper.from_array(np.array(True), "cond"),
        numpy_helper.from_array(rng.uniform(0.9, 0.99, dim).astype(np.float32), "a"),
        numpy_helper.from_array(_f32(rng, (dim,), 0.01), "b"),
    ]
    graph = helper.make_graph(
        [mm("Loop", ["M", "cond", "v0"], ["v"], body=outer)],
        "nested",
        [_vi("v0", FLOAT, [dim])],
        [_vi("v", FLOAT, [dim])],
        inits,
    )
    return Case(
        "nested",
        f"nested Loop {outer_trips} x {inner_trips}: v = v*a + b, v [{dim}] f32",
        _model(graph),
        {"v0": _f32(rng, (dim,))},
    )


def scan_sum_case(rng: np.random.Generator) -> Case:
    seq, dim = 1000, 64
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["y_t"]),
        ],
        "body",
        [_vi("acc_in", FLOAT, [dim]), _vi("x_t", FLOAT, [dim])],
        [_vi("acc_out", FLOAT, [dim]), _vi("y_t", FLOAT, [dim])],
    )
    node = helper.make_node("Scan", ["acc0", "X"], ["acc", "Y"], body=body, num_scan_inputs=1)
    graph = helper.make_graph(
        [node],
        "scan_sum",
        [_vi("acc0", FLOAT, [dim]), _vi("X", FLOAT, [seq, dim])],
        [_vi("acc", FLOAT, [dim]), _vi("Y", FLOAT, [seq, dim])],
    )
    return Case(
        "scan-sum",
        f"Scan running sum over X[{seq}, {dim}]",
        _model(graph),
        {"acc0": np.zeros(dim, np.float32), "X": _f32(rng, (seq, dim))},
    )


CASES: dict[str, Callable[[np.random.Generator], Case]] = {
    **{f"lstm-loop-{s}": lstm_loop_case(s) for s in LSTM_SIZES},
    **{f"lstm-op-{s}": lstm_op_case(s) for s in LSTM_SIZES},
    "while": while_case,
    "nested": nested_case,
    "scan-sum": scan_sum_case,
    "network": OLD_CASES["network"],
    # loops.py's cases, selectable by name, not run by default
    **{f"old-{k}": v for k, v in OLD_CASES.items() if k != "network"},
}
DEFAULT = [k for k in CASES if not k.startswith("old-")]
QUICK = [k for k in DEFAULT if not k.endswith(("-medium", "-large"))]
TOO_SLOW_FOR_REFERENCE = {k for k in CASES if k.endswith("-large")}


def build_case(key: str, seed: int) -> Case:
    """Each workload gets its own generator, so a subprocess rebuilds exactly the same one."""
    case = CASES[key](np.random.default_rng([seed, zlib.crc32(key.encode())]))
    case.name = key
    return case


# --- runners: make(case, path) loads, prepares and returns a run function ------------------------


COMPILE_S: dict[tuple[str, str], float] = {}
"""Seconds ``model.compile`` took per (workload, runner): planning for the compiled backend,
XLA's compile for jax; reported apart from the run times, which exclude it."""


def tensorloop_make(backend: str) -> Callable[[Case, Path], Runner]:
    def make(case: Case, path: Path) -> Runner:
        if case.tl_model is not None:  # the network case: a fresh Model of the network's graph
            model = tl.Model(case.tl_model.graph, backend=backend)
        else:
            model = tl.load(path, backend=backend)
        model.prepared(backend)
        if backend in ("compiled", "jax"):
            start = time.perf_counter()
            model.compile(case.feed, backend=backend)
            COMPILE_S[case.name, f"tl:{backend}"] = time.perf_counter() - start

        def run(feed: Feed) -> dict[str, np.ndarray]:
            return dict(model.run(feed, backend=backend))

        return run

    return make


ORT_SPIN = "0"
"""onnxruntime's intra-op threads spin after a run by default; on a 2-core machine they then
steal the cores from whichever runner comes next in the round (tensorloop's network case ran
38 ms alone and 55 ms interleaved with a spinning session). ``--ort-spin`` turns it back on."""


def onnxruntime_make(case: Case, path: Path) -> Runner:
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", ORT_SPIN)
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]

    def run(feed: Feed) -> dict[str, np.ndarray]:
        return dict(zip(names, sess.run(names, feed), strict=True))

    return run


openvino_make = openvino_from_file


def makers(backends: list[str]) -> dict[str, Callable[[Case, Path], Runner]]:
    out: dict[str, Callable[[Case, Path], Runner]] = {
        f"tl:{b}": tensorloop_make(b) for b in backends
    }
    out["onnxruntime"] = onnxruntime_make
    if ov is not None:
        out["openvino"] = openvino_make
    return out


def disagreement(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> str | None:
    for name, expected in reference.items():
        got = np.asarray(other[name])
        if got.shape != expected.shape:
            return f"output '{name}' shape {got.shape} vs {expected.shape}"
        if not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
            diff = float(np.max(np.abs(got.astype(np.float64) - expected)))
            return f"output '{name}' max abs diff {diff:.3g}"
    return None


# --- first run and peak memory, in a subprocess ---------------------------------------------------


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


LAZY_PACKAGES = (
    "tensorloop.formats.onnx",
    "tensorloop.formats.openvino",
    "tensorloop.reference.kernels",
    "tensorloop.backends.compiled",
    "tensorloop.backends.jax",
)
if importlib.util.find_spec("jax") is None:
    LAZY_PACKAGES = LAZY_PACKAGES[:-1]
"""Packages whose modules tensorloop imports on first use (converters, kernels, backends)."""


def child(key: str, runner: str, seed: int, path: Path) -> dict[str, Any]:
    case = build_case(key, seed)
    make = makers([runner[3:]] if runner.startswith("tl:") else [])[runner]
    if runner.startswith("tl:"):
        # Import what a load imports lazily before the clock starts, as onnxruntime's and
        # OpenVINO's libraries are imported before theirs: "first run" is load + plan + run,
        # not module import (which PYTHONDONTWRITEBYTECODE=1 makes a compile from source here).
        for package in LAZY_PACKAGES:
            for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
                importlib.import_module(f"{package}.{info.name}")
        tl.backends.base.get_backend(runner[3:])
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current VmRSS
        method, before = "VmHWM", _status_kib("VmRSS")
    except OSError:
        method, before = "ru_maxrss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    make(case, path)(case.feed)
    first = time.perf_counter() - start
    if method == "VmHWM":
        peak = _status_kib("VmHWM")
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"first_s": first, "peak_kib": peak - before, "method": method}


def first_run(key: str, runner: str, seed: int, path: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", f"{key},{runner},{path}", "--seed", str(seed)]
    if ORT_SPIN == "1":
        cmd.append("--ort-spin")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- the timed comparison -------------------------------------------------------------------------


def round_robin(runs: dict[str, Runner], feed: Feed, warmup: int, repeats: int) -> dict[str, float]:
    names = list(runs)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            runs[name](feed)
            elapsed = time.perf_counter() - start
            if r >= warmup:
                times[name].append(elapsed)
    return {n: statistics.median(t) for n, t in times.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 10 else f"{seconds * 1e3:.0f}"


@click.command()
@click.option(
    "--case",
    "cases",
    multiple=True,
    type=click.Choice(list(CASES)),
    help="Run only these workloads (repeatable; default: all but the old-* ones of loops.py).",
)
@click.option(
    "--backends",
    default=",".join(backend_names()),
    show_default=True,
    help="Comma-separated tensorloop backends (default: all of backend_names()).",
)
@click.option("--repeats", default=10, show_default=True, help="Timed round-robin rounds.")
@click.option("--warmup", default=2, show_default=True, help="Untimed rounds before timing.")
@click.option(
    "--quick",
    is_flag=True,
    help="Small workloads only, warmup 0 (the agreement-check run is untimed), repeats 3.",
)
@click.option("--all", "run_all", is_flag=True, help="Also run large workloads on 'reference'.")
@click.option("--no-first-run", is_flag=True, help="Skip the first-run / peak-memory subprocesses.")
@click.option(
    "--ort-spin",
    is_flag=True,
    help="Let onnxruntime's threads spin after a run (its default; off here, see ORT_SPIN).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for weights and inputs.")
@click.option("--child", "child_spec", hidden=True, default=None)
def main(
    cases: tuple[str, ...],
    backends: str,
    repeats: int,
    warmup: int,
    quick: bool,
    run_all: bool,
    no_first_run: bool,
    ort_spin: bool,
    seed: int,
    child_spec: str | None,
) -> None:
    """Median run time, first-run latency and peak RSS: tensorloop backends vs onnxruntime vs
    OpenVINO, round-robin in one process, outputs checked against onnxruntime first."""
    global ORT_SPIN
    ORT_SPIN = "1" if ort_spin else "0"
    if child_spec is not None:
        key, runner, path = child_spec.split(",", 2)
        print(json.dumps(child(key, runner, seed, Path(path))))
        return
    chosen = [b.strip() for b in backends.split(",") if b.strip()]
    unknown = sorted(set(chosen) - set(backend_names()))
    if unknown:
        raise click.BadParameter(
            f"unknown {unknown}; have {backend_names()}", param_hint="--backends"
        )
    if quick:
        warmup, repeats = 0, min(repeats, 3)
    if repeats < 1:
        raise click.BadParameter("must be at least 1", param_hint="--repeats")
    keys = list(cases) or (QUICK if quick else DEFAULT)
    console = Console(width=max(Console().width, 130))
    console.print(
        f"numpy {np.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
        f"openvino {ov.get_version() if ov else 'absent'}, "
        f"tensorloop {version('tensorloop')} backends {chosen}"
    )
    console.print(
        f"warmup {warmup}, repeats {repeats} (round-robin), seed {seed}, "
        f"onnxruntime allow_spinning={ORT_SPIN}"
    )
    table = Table(
        title="Median run time; first run (load + prepare + run, fresh process); peak RSS"
    )
    for col, just in (
        ("case", "left"),
        ("model", "left"),
        ("runner", "left"),
        ("median ms", "right"),
        ("/ ort", "right"),
        ("compile ms", "right"),
        ("first run ms", "right"),
        ("peak RSS MiB", "right"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    notes: list[str] = []
    methods: set[str] = set()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            case = build_case(key, seed)
            path = Path(tmp) / f"{key}.onnx"
            onnx.save(case.model, path)
            runs: dict[str, Runner] = {}
            skipped: list[str] = []
            for name, make in makers(chosen).items():
                if name == "tl:reference" and key in TOO_SLOW_FOR_REFERENCE and not run_all:
                    skipped.append(name)
                else:
                    runs[name] = make(case, path)
            outputs = {name: run(case.feed) for name, run in runs.items()}
            expected = outputs["onnxruntime"]
            for name, got in outputs.items():
                problem = disagreement(expected, got)
                if problem:
                    raise click.ClickException(
                        f"{key}: {name} disagrees with onnxruntime: {problem}"
                    )
            if key == "while":
                trips = ", ".join(
                    f"{n} {int(o['n'])} (x={float(o['x']):.6g})" for n, o in outputs.items()
                )
                notes.append(f"while trip counts: {trips}")
            medians = round_robin(runs, case.feed, warmup, repeats)
            for i, name in enumerate([*runs, *skipped]):
                label = (key, case.description) if i == 0 else ("", "")
                if name in skipped:
                    table.add_row(
                        *label, name, "skipped (reference too slow; use --all)", "", "", "", ""
                    )
                    continue
                fr = {} if no_first_run else first_run(key, name, seed, path)
                methods.add(fr.get("method", ""))
                table.add_row(
                    *label,
                    name,
                    _ms(medians[name]),
                    f"{medians[name] / medians['onnxruntime']:.2f}x",
                    _ms(COMPILE_S[key, name]) if (key, name) in COMPILE_S else "",
                    _ms(fr["first_s"]) if "first_s" in fr else fr.get("error", "-"),
                    f"{fr['peak_kib'] / 1024:.1f}" if "peak_kib" in fr else "-",
                )
            table.add_section()
    console.print(table)
    console.print(f"All outputs agree with onnxruntime (rtol {RTOL}, atol {ATOL}).")
    for note in notes:
        console.print(note)
    methods.discard("")
    console.print(
        "peak RSS: resident-set growth over the pre-load level "
        f"({', '.join(sorted(methods)) or '-'})"
    )
    console.print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
