"""Issue #23: per-chunk latency of tensorloop streams beside onnxruntime and OpenVINO.

Recurrent models of the real corpus (``benchmarks/real/corpus``, see its README) run as streams,
one chunk per call, their state carried from call to call:

- Silero VAD v5 and v6 (``shipped/silero_vad_v5``, ``shipped/silero_vad_v6``) take and return
  their state (``state`` -> ``stateN``). A chunk is what the silero-vad package feeds: 512
  samples of 16 kHz audio after the 64 samples before them, ``sr`` 16000. tensorloop:
  ``m.stream(state="auto")``. onnxruntime: the same file, the state fed back. OpenVINO cannot
  read these files (an If whose branches have a rank it leaves open; the message is printed), so
  its anchor for v6 is the OpenVINO file the same wheel ships (``silero_vad_openvino_16k.onnx``,
  ``shipped/silero_vad_v6_openvino_16k``) made stateful by OpenVINO's ``MakeStateful``
  (``state`` -> ``stateN``); v5's wheel has no such file.
- LSTM and RNN exports (``torch/lstm2_batch_first_ts``, ``torch/rnn_tanh2_h0_ts``,
  ``keras/lstm_sequences``, ``keras/stacked_lstm``) at ``--chunks`` time steps per call (a
  speech frame is 10 ms: 1 is frame by frame, 16 a usual streaming chunk), the batch of the
  model's own ``inputs.npz``. tensorloop: ``m.stream(chunk=K)``. onnxruntime runs the stream's
  ``step_model()`` (its ``init_model()`` for the first state) saved as ONNX, the state fed back
  (``onnxruntime``, ``onnxruntime-1t``); and, as an ONNX user would write it by hand, the
  original file with each LSTM/GRU/RNN node's initial state made a graph input and its last
  state a graph output (``ort-op``, ``ort-op-1t``: onnxruntime's fused kernel; the first state
  is what the original graph computes for it, read from a copy that outputs it). OpenVINO reads
  the original file, fixes the time axis at K and the batch, applies ``LowLatency2`` (the
  initial state from the model's own subgraph, ``use_const_initializer=False``), and runs one
  infer request per stream, ``reset_state()`` at its start. Where that model does not compile
  (``rnn_tanh2_h0_ts``, whose initial state is its ``h0`` input), the reason is kept and
  LowLatency2 runs with a constant initial state instead, each variable set after a reset to
  what the original model computes for it on the first chunk; where LowLatency2 fails
  altogether, OpenVINO runs the step model with explicit state.

Checks: tensorloop's stream, joined over its chunks, must equal ``tl.load(path,
backend=B).run`` on the whole sequence exactly (np.array_equal; for Silero, a loop of runs
feeding the state), on the timed sequence, or on the model's own ``inputs.npz`` where its time
axis is fixed; every anchor's outputs, chunk by chunk over the timed sequence, must be within
rtol 1e-4, atol 1e-4 of tensorloop's. Mismatches are printed and kept in the table.

Timing: ``--warmup`` chunks through every runner, a reset, then ``--count`` chunks, the runners
round-robin in turns of ``--block`` consecutive chunks each (the order rotated by one per
turn) so that drift on the machine hits all alike. With ``--block 1`` every push follows
another runtime's; on this 2-core VM a push right after an OpenVINO or onnxruntime call is
1.9-2.7x slower than one after its own previous push (their worker threads and caches), which a
stream, whose chunks come one after another, does not pay: turns of 20 measure each runner as
a stream runs. Each push (a whole call: feeds in, outputs and next state out) is timed with
``time.perf_counter``; the first chunk after the reset (which makes the first state) is one of
them. p50 and p99 are of those times; ratios are to the anchor with the lowest p50 (its p50 and
its p99). Memory per stream: the bytes of the carried state, and tracemalloc's peak over one
warm push (Python and NumPy allocations only: onnxruntime's and OpenVINO's own buffers are not
seen). Targets (issue #23): a tensorloop p50 at most 0.5x the fastest anchor's, p99 at most 1x.

    .venv/bin/python benchmarks/stream.py --json /tmp/stream.json
"""

from __future__ import annotations

import json
import tempfile
import time
import tracemalloc
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
from tensorloop.errors import InputError
from tensorloop.tools.bench import import_ahead, percentile

CORPUS = Path(__file__).parent / "real" / "corpus"
RTOL, ATOL = 1e-4, 1e-4
VAD = ("shipped/silero_vad_v5", "shipped/silero_vad_v6")
VAD_OPENVINO = {"shipped/silero_vad_v6": "shipped/silero_vad_v6_openvino_16k"}
RECURRENT = (
    "torch/lstm2_batch_first_ts",
    "torch/rnn_tanh2_h0_ts",
    "keras/lstm_sequences",
    "keras/stacked_lstm",
)
VAD_CHUNK, VAD_CONTEXT, VAD_RATE = 512, 64, 16000
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}

Feeds = dict[str, np.ndarray]


@dataclass
class Entry:
    """One corpus model: its folder, meta.json and one call's feeds."""

    key: str
    folder: Path
    meta: dict[str, Any]
    feeds: Feeds

    @property
    def path(self) -> Path:
        return self.folder / str(self.meta["file"])

    @classmethod
    def read(cls, key: str) -> Entry | None:
        folder = CORPUS / key
        if not (folder / "meta.json").exists():
            return None
        meta = json.loads((folder / "meta.json").read_text())
        with np.load(folder / meta.get("inputs", "inputs.npz")) as f:
            feeds = {k: f[k] for k in f.files}
        return cls(key, folder, meta, feeds)


@dataclass
class Case:
    """One model at one chunk size: the sequence of chunks every runner is fed."""

    entry: Entry
    chunk: int | None  # time steps per call; None for Silero (one audio chunk per call)
    chunks: list[Feeds]
    sequence: dict[str, int] = field(default_factory=dict)  # sequence inputs, time axis

    @property
    def name(self) -> str:
        return self.entry.key if self.chunk is None else f"{self.entry.key} K={self.chunk}"


class Runner:
    """A stream in one runtime: ``reset()`` starts a sequence, ``push`` runs one chunk."""

    name: str
    note: str = ""

    def reset(self) -> None:
        raise NotImplementedError

    def push(self, feeds: Mapping[str, np.ndarray]) -> Feeds:
        raise NotImplementedError

    def state_bytes(self) -> int:
        raise NotImplementedError


# -- tensorloop ------------------------------------------------------------------------------
class TensorloopRunner(Runner):
    def __init__(self, case: Case, backend: str) -> None:
        self.name = f"tl-{backend}"
        self.model = tl.load(str(case.entry.path), backend=backend)
        if case.chunk is None:
            # Silero's state is f32[2, ?, 128]: its first value (zeros) is given, as the
            # package gives it; the stream cannot size the ``?`` from the inputs
            zeros = {"state": np.zeros_like(case.entry.feeds["state"])}
            self.stream = self.model.stream(state="auto", state_init=zeros, backend=backend)
        else:
            self.stream = self.model.stream(chunk=case.chunk, backend=backend)

    def reset(self) -> None:
        self.stream.reset()

    def push(self, feeds: Mapping[str, np.ndarray]) -> Feeds:
        return {k: np.asarray(v) for k, v in self.stream.push(feeds).items()}

    def state_bytes(self) -> int:
        return sum(a.nbytes for a in self.stream.state.values())


# -- onnxruntime -----------------------------------------------------------------------------
def ort_session(path: str | bytes, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


class ExplicitStateRunner(Runner):
    """A model with explicit state: each push feeds the state in and takes the next state out.
    ``init`` makes the first state from the first chunk's feeds; ``run`` is one call."""

    def __init__(
        self,
        name: str,
        run: Callable[[Feeds, list[str]], list[np.ndarray]],
        inputs: list[str],
        outputs: list[str],
        pairs: dict[str, str],
        init: Callable[[Feeds], Feeds],
        note: str = "",
    ) -> None:
        self.name, self.note = name, note
        self._run, self._init = run, init
        self._inputs = [n for n in inputs if n not in pairs]
        self._pairs = pairs
        self._fetch = outputs + list(pairs.values())
        self._n = len(outputs)
        self._outputs = outputs
        self.state: Feeds | None = None

    def reset(self) -> None:
        self.state = None

    def push(self, feeds: Mapping[str, np.ndarray]) -> Feeds:
        args = {n: feeds[n] for n in self._inputs}
        if self.state is None:
            self.state = self._init(args)
        values = self._run(args | self.state, self._fetch)
        self.state = dict(zip(self._pairs, values[self._n :], strict=True))
        return dict(zip(self._outputs, values[: self._n], strict=True))

    def state_bytes(self) -> int:
        return sum(a.nbytes for a in (self.state or {}).values())


def ort_runner(
    name: str,
    model: str | bytes,
    outputs: list[str],
    pairs: dict[str, str],
    init: Callable[[Feeds], Feeds],
    threads: int | None,
    note: str = "",
) -> Runner:
    sess = ort_session(model, threads)
    inputs = [i.name for i in sess.get_inputs()]
    return ExplicitStateRunner(
        name, lambda feeds, fetch: sess.run(fetch, feeds), inputs, outputs, pairs, init, note
    )


def step_files(stream: Any, folder: Path) -> tuple[str, str | None]:
    """The stream's step model and init model (None where it has no outputs) as ONNX files."""
    step = str(folder / "step.onnx")
    tl.save(stream.step_model(), step)
    init = stream.init_model()
    if not init.graph.outputs:
        return step, None
    path = str(folder / "init.onnx")
    tl.save(init, path)
    return step, path


def ort_init(path: str | None, names: list[str], zeros: Feeds) -> Callable[[Feeds], Feeds]:
    """The first state: ``zeros``, or the init model's outputs on the first chunk's feeds."""
    if path is None:
        return lambda feeds: {k: v.copy() for k, v in zeros.items()}
    sess = ort_session(path, 1)
    wanted = [i.name for i in sess.get_inputs()]

    def init(feeds: Feeds) -> Feeds:
        values = sess.run(names, {n: feeds[n] for n in wanted})
        return dict(zip(names, values, strict=True))

    return init


RECURRENT_OPS = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}


def fused_op_models(path: Path, sequence: Mapping[str, int]) -> tuple[bytes, bytes, dict]:
    """The original ONNX file with each LSTM/GRU/RNN node's initial state a graph input and its
    last state a graph output (the time axes of the sequence inputs made free), and a copy of
    the original that outputs what the graph computes for each initial state. Returns both and
    the pairs {state input: state output, ...} with the tensor each initial state came from."""
    import onnx

    model = onnx.load(str(path))
    g = model.graph
    for v in g.input:
        if v.name in sequence:
            v.type.tensor_type.shape.dim[sequence[v.name]].dim_param = "time"
    for v in g.output:
        v.type.tensor_type.ClearField("shape")
    del g.value_info[:]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    pairs: dict[str, str] = {}
    sources: dict[str, str] = {}
    for k, node in enumerate(n for n in g.node if n.op_type in RECURRENT_OPS):
        slots = RECURRENT_OPS[node.op_type]
        while len(node.output) < 1 + len(slots):
            node.output.append("")
        for j, slot in enumerate(slots):
            if len(node.input) <= slot or not node.input[slot]:
                raise RuntimeError(f"{node.op_type} node {node.name} has no initial state {slot}")
            state_in = f"{node.name or k}.state{j}"
            sources[state_in] = node.input[slot]
            node.input[slot] = state_in
            if not node.output[1 + j]:
                node.output[1 + j] = f"{node.name or k}.state{j}.out"
            pairs[state_in] = node.output[1 + j]
            g.input.append(
                onnx.helper.make_tensor_value_info(state_in, onnx.TensorProto.FLOAT, None)
            )
            g.output.append(
                onnx.helper.make_tensor_value_info(node.output[1 + j], onnx.TensorProto.FLOAT, None)
            )
    del probe.graph.output[:]
    for name in dict.fromkeys(sources.values()):
        probe.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    return (
        model.SerializeToString(),
        probe.SerializeToString(),
        {"pairs": pairs, "sources": sources},
    )


def fused_op_runner(name: str, case: Case, outputs: list[str], threads: int | None) -> Runner:
    model, probe, info = fused_op_models(case.entry.path, case.sequence)
    sess = ort_session(probe, 1)
    wanted = [i.name for i in sess.get_inputs()]
    sources: dict[str, str] = info["sources"]
    fetch = list(dict.fromkeys(sources.values()))

    def init(feeds: Feeds) -> Feeds:
        got = dict(zip(fetch, sess.run(fetch, {n: feeds[n] for n in wanted}), strict=True))
        return {state: got[src] for state, src in sources.items()}

    return ort_runner(name, model, outputs, info["pairs"], init, threads)


# -- OpenVINO --------------------------------------------------------------------------------
def port_name(port: Any, wanted: list[str] | None) -> str:
    """The port's name among ``wanted`` (OpenVINO may give a port several names, and
    ``get_any_name`` need not be the model's)."""
    names = port.get_names()
    if wanted is not None:
        for n in wanted:
            if n in names:
                return n
    return port.get_any_name()


def ov_read_failure(exc: BaseException) -> str:
    """What OpenVINO's ONNX front end says it could not convert, in a line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    summary = [ln for ln in lines if ln.startswith("-- Conversion is failed for")]
    reasons = [ln for ln in lines if "has to be known" in ln or ln.startswith("Unsupported")]
    if not summary:
        return first_line(exc)
    return "; ".join(dict.fromkeys([summary[0][3:], *(r[:160] for r in reasons[:2])]))


class OpenVinoStateful(Runner):
    """An OpenVINO model whose state lives in ReadValue/Assign variables."""

    def __init__(self, name: str, model: Any, outputs: list[str], note: str) -> None:
        import openvino as ov

        self.name, self.note = name, note
        compiled = ov.Core().compile_model(model, "CPU", OV_CONFIG)
        self.request = compiled.create_infer_request()
        self.inputs = [(port_name(p, None), p) for p in compiled.inputs]
        self.ports = [(p, port_name(p, outputs)) for p in compiled.outputs]
        self.ports = [(p, n) for p, n in self.ports if n in outputs]

    def reset(self) -> None:
        self.request.reset_state()

    def push(self, feeds: Mapping[str, np.ndarray]) -> Feeds:
        result = self.request.infer({p: feeds[n] for n, p in self.inputs})
        return {n: np.array(result[p], copy=True) for p, n in self.ports}

    def state_bytes(self) -> int:
        return sum(s.state.data.nbytes for s in self.request.query_state())


def ov_explicit(
    name: str,
    model: Any,
    outputs: list[str],
    pairs: dict[str, str],
    init: Callable[[Feeds], Feeds],
    note: str,
) -> Runner:
    import openvino as ov

    compiled = ov.Core().compile_model(model, "CPU", OV_CONFIG)
    request = compiled.create_infer_request()
    wanted = outputs + list(pairs.values())
    ports = {port_name(p, wanted): p for p in compiled.outputs}
    inputs = [port_name(p, None) for p in compiled.inputs]

    def run(feeds: Feeds, fetch: list[str]) -> list[np.ndarray]:
        result = request.infer(feeds)
        return [np.array(result[ports[n]], copy=True) for n in fetch]

    return ExplicitStateRunner(name, run, inputs, outputs, pairs, init, note)


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if "message" in ln or "Check" in ln or "failed" in ln.lower()]
    return f"{type(exc).__name__}: {(useful or lines or [''])[-1][:300]}"


SEQUENCE_OPS = {"LSTMSequence": 2, "GRUSequence": 1, "RNNSequence": 1}


class OpenVinoSeeded(OpenVinoStateful):
    """LowLatency2 with a constant (zero) initial state, each variable set after a reset to
    what the original model computes for that state on the first chunk (``probe``)."""

    def __init__(
        self, model: Any, probe: Any, variables: list[str], outputs: list[str], note: str
    ) -> None:
        import openvino as ov

        super().__init__("openvino", model, outputs, note)
        compiled = ov.Core().compile_model(probe, "CPU", OV_CONFIG)
        self.probe = compiled.create_infer_request()
        self.probe_inputs = [(port_name(p, None), p) for p in compiled.inputs]
        self.variables = variables
        self.fresh = True

    def reset(self) -> None:
        super().reset()
        self.fresh = True

    def push(self, feeds: Mapping[str, np.ndarray]) -> Feeds:
        if self.fresh:
            import openvino as ov

            result = self.probe.infer({p: feeds[n] for n, p in self.probe_inputs})
            first = dict(zip(self.variables, result.values(), strict=True))
            for state in self.request.query_state():
                state.state = ov.Tensor(np.ascontiguousarray(first[state.name]))
            self.fresh = False
        return super().push(feeds)


def ov_low_latency(case: Case, outputs: list[str], failed: dict[str, str]) -> Runner:
    """The original file at a fixed chunk and batch, LowLatency2 applied: its initial state
    from the model's own subgraph (``use_const_initializer=False``); where that fails, a
    constant initial state that each reset sets to the model's (``OpenVinoSeeded``)."""
    import openvino as ov
    from openvino.passes import LowLatency2, Manager

    assert case.chunk is not None
    original = ov.Core().read_model(str(case.entry.path))
    first = case.chunks[0]
    original.reshape({p: list(first[p.get_any_name()].shape) for p in original.inputs})

    def low_latency(const: bool) -> Any:
        model = original.clone()
        manager = Manager()
        manager.register_pass(LowLatency2(const))
        manager.run_passes(model)
        if not model.get_sinks():
            raise RuntimeError("LowLatency2 made no state (no TensorIterator, Loop, *Sequence)")
        return model

    try:
        model = low_latency(False)
        return OpenVinoStateful(
            "openvino", model, outputs, f"LowLatency2: {len(model.get_sinks())} variables"
        )
    except Exception as exc:
        failed["openvino LowLatency2(use_const_initializer=False)"] = ov_error(exc)
    model = low_latency(True)
    ops = [op for op in original.get_ordered_ops() if op.get_type_name() in SEQUENCE_OPS]
    results, variables = [], []
    for op in ops:
        for j in range(SEQUENCE_OPS[op.get_type_name()]):
            results.append(op.input_value(1 + j))
            variables.append(f"{op.get_friendly_name()}/variable_{j}")
    probe = ov.Model(results, original.get_parameters(), "initial_state")
    note = (
        f"LowLatency2(use_const_initializer=True): {len(model.get_sinks())} variables, set "
        "after each reset to the model's initial state"
    )
    return OpenVinoSeeded(model, probe, variables, outputs, note)


def ov_error(exc: BaseException) -> str:
    """An OpenVINO exception in a line: its check and its last line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    checks = [ln for ln in lines if ln.startswith("Check '")]
    return "; ".join(dict.fromkeys([*checks[-1:], *lines[-1:]]))[:300]


def ov_silero(case: Case, outputs: list[str], pairs: dict[str, str]) -> Runner:
    """OpenVINO for Silero, MakeStateful on ``state`` -> ``stateN``: the file itself, or where
    OpenVINO cannot read it, the OpenVINO file of the same wheel (``VAD_OPENVINO``)."""
    import openvino as ov
    from openvino._offline_transformations import apply_make_stateful_transformation

    try:
        model = ov.Core().read_model(str(case.entry.path))
        note = "MakeStateful"
    except Exception as exc:
        failure = ov_read_failure(exc)
        other = VAD_OPENVINO.get(case.entry.key)
        entry = Entry.read(other) if other else None
        if entry is None:
            raise RuntimeError(f"{failure}; no OpenVINO file of this model in the corpus") from exc
        model = ov.Core().read_model(str(entry.path))
        note = f"{other} (MakeStateful); OpenVINO cannot read {case.entry.key}: {failure}"
    apply_make_stateful_transformation(model, pairs)
    return OpenVinoStateful("openvino", model, outputs, note)


# -- the cases -------------------------------------------------------------------------------
def vad_case(entry: Entry, count: int, seed: int) -> Case:
    """Audio as the silero-vad package feeds it: chunks of 512 samples, each after the 64
    samples before it (zeros before the first)."""
    rng = np.random.default_rng(seed)
    n = count * VAD_CHUNK
    t = np.arange(n) / VAD_RATE
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t)  # loud and quiet stretches
    audio = (0.1 * envelope * rng.standard_normal(n)).astype(np.float32)
    audio = np.concatenate([np.zeros(VAD_CONTEXT, np.float32), audio])
    sr = np.array(VAD_RATE, np.int64)
    chunks = []
    for i in range(count):
        start = i * VAD_CHUNK
        window = audio[start : start + VAD_CONTEXT + VAD_CHUNK][None, :]
        chunks.append({"input": np.ascontiguousarray(window), "sr": sr})
    return Case(entry, None, chunks)


def recurrent_case(entry: Entry, chunk: int, count: int, seed: int) -> Case:
    """Random features in the shape of the model's own feeds, ``count`` chunks of ``chunk``
    time steps; the other inputs as the model's own feeds give them."""
    sequence = tl.load(str(entry.path)).stream(chunk=chunk).sequence_inputs
    rng = np.random.default_rng(seed)
    whole: Feeds = {}
    for name, value in entry.feeds.items():
        if name in sequence:
            shape = list(value.shape)
            shape[sequence[name]] = chunk * count
            whole[name] = rng.standard_normal(shape).astype(value.dtype)
    chunks = []
    for i in range(count):
        feeds = dict(entry.feeds)
        for name, axis in sequence.items():
            index = [slice(None)] * whole[name].ndim
            index[axis] = slice(i * chunk, (i + 1) * chunk)
            feeds[name] = np.ascontiguousarray(whole[name][tuple(index)])
        chunks.append(feeds)
    return Case(entry, chunk, chunks, sequence)


def make_runners(case: Case, backends: list[str], folder: Path) -> tuple[list[Runner], dict]:
    """tensorloop's streams and the anchors; failures by runner name."""
    failed: dict[str, str] = {}
    runners: list[Runner] = []
    for b in backends:
        try:
            runners.append(TensorloopRunner(case, b))
        except Exception as exc:
            failed[f"tl-{b}"] = first_line(exc)
    if not runners:
        return runners, failed
    stream = runners[0].stream  # type: ignore[attr-defined]
    outputs = list(stream.output_roles)
    if case.chunk is None:  # Silero: the file itself, explicit state
        first = case.entry.feeds
        pairs = {s.name: s.next for s in stream.states}
        zeros = {s.name: np.zeros_like(first[s.name]) for s in stream.states}
        for name, threads in (("onnxruntime", None), ("onnxruntime-1t", 1)):
            runners.append(
                ort_runner(
                    name, str(case.entry.path), outputs, pairs, ort_init(None, [], zeros), threads
                )
            )
        try:
            runners.append(ov_silero(case, outputs, pairs))
        except Exception as exc:
            failed["openvino"] = first_line(exc)
        return runners, failed
    step, init = step_files(stream, folder)
    pairs = {s.name: s.next for s in stream.states}
    names = list(pairs)
    for name, threads in (("onnxruntime", None), ("onnxruntime-1t", 1)):
        try:
            runners.append(
                ort_runner(
                    name, step, outputs, pairs, ort_init(init, names, {}), threads, "step model"
                )
            )
        except Exception as exc:
            failed[name] = first_line(exc)
    for name, threads in (("ort-op", None), ("ort-op-1t", 1)):
        try:
            runners.append(fused_op_runner(name, case, outputs, threads))
        except Exception as exc:
            failed[name] = first_line(exc)
    try:
        runners.append(ov_low_latency(case, outputs, failed))
    except Exception as exc:
        reason = ov_error(exc)
        failed["openvino LowLatency2"] = reason
        try:
            runners.append(
                ov_explicit(
                    "openvino",
                    step,
                    outputs,
                    pairs,
                    ort_init(init, names, {}),
                    f"step model, explicit state (LowLatency2 failed: {reason})",
                )
            )
        except Exception as exc2:
            failed["openvino"] = first_line(exc2)
    return runners, failed


# -- checks ----------------------------------------------------------------------------------
def differs(got: np.ndarray, want: np.ndarray) -> float | None:
    """None where equal, else the largest difference (inf for a shape or dtype mismatch)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"):
        return None
    return float(np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def check_exact(case: Case, runner: TensorloopRunner) -> str:
    """The stream joined over its chunks against one run on the whole sequence."""
    stream, model = runner.stream, runner.model
    roles = stream.output_roles
    if case.chunk is None:  # explicit state: a loop of runs feeding the state
        stream.reset()
        state = {s.name: np.zeros_like(case.entry.feeds[s.name]) for s in stream.states}
        for i, feeds in enumerate(case.chunks):
            got = stream.push(feeds)
            want = model.run(feeds | state)
            state = {s.name: np.asarray(want[s.next]) for s in stream.states}
            for name in got:
                d = differs(got[name], want[name])
                if d is not None:
                    return f"chunk {i}: {name} off by {d:.3g}"
        return "exact"
    whole = {
        n: np.concatenate([c[n] for c in case.chunks], axis=axis)
        for n, axis in case.sequence.items()
    }
    feeds = dict(case.entry.feeds) | whole
    where = f"{case.chunk * len(case.chunks)} steps"
    try:
        want = model.run(feeds)
    except InputError:  # the time axis is fixed: the model's own feeds
        feeds = dict(case.entry.feeds)
        length = {feeds[n].shape[a] for n, a in case.sequence.items()}.pop()
        where = f"its own {length} steps"
        want = model.run(feeds)
    stream.reset()
    length = {feeds[n].shape[a] for n, a in case.sequence.items()}.pop()
    pieces = []
    for start in range(0, length, case.chunk):
        piece = dict(feeds)
        for n, axis in case.sequence.items():
            index = [slice(None)] * feeds[n].ndim
            index[axis] = slice(start, start + case.chunk)
            piece[n] = feeds[n][tuple(index)]
        pieces.append({k: np.asarray(v) for k, v in stream.push(piece).items()})
    for name, (role, axis) in roles.items():
        if role == "sequence":
            got = np.concatenate([p[name] for p in pieces], axis=axis)
        else:
            got = pieces[-1][name]
        d = differs(got, want[name])
        if d is not None:
            return f"{name} off by {d:.3g} ({where})"
    return f"exact ({where})"


def check_close(got: list[Feeds], want: list[Feeds]) -> str:
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for name, wv in w.items():
            if name not in g:
                return f"no output {name}"
            gv = np.asarray(g[name])
            if gv.shape != wv.shape:
                return f"chunk {i}: {name} shape {list(gv.shape)}, want {list(wv.shape)}"
            gf, wf = gv.astype(np.float64), wv.astype(np.float64)
            if not np.allclose(gf, wf, rtol=RTOL, atol=ATOL):
                return f"chunk {i}: {name} off by {float(np.max(np.abs(gf - wf))):.3g}"
            worst = max(worst, float(np.max(np.abs(gf - wf))) if wf.size else 0.0)
    return f"ok ({worst:.1e})"


# -- measuring -------------------------------------------------------------------------------
@dataclass
class Row:
    case: str
    runner: str
    p50: float
    p99: float
    state_bytes: int
    traced_peak: int
    check: str
    note: str = ""
    ratio_p50: float | None = None
    ratio_p99: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def traced_peak(runner: Runner, feeds: Feeds) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    runner.push(feeds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def measure(
    case: Case, backends: list[str], warmup: int, console: Console, block: int = 1
) -> tuple[list, dict]:
    with tempfile.TemporaryDirectory() as folder:
        runners, failed = make_runners(case, backends, Path(folder))
        checks = {}
        for r in runners:
            if isinstance(r, TensorloopRunner):
                checks[r.name] = check_exact(case, r)
        for r in runners:
            r.reset()
        for feeds in case.chunks[:warmup]:
            for r in runners:
                r.push(feeds)
        for r in runners:
            r.reset()
        times: dict[str, list[float]] = {r.name: [] for r in runners}
        outs: dict[str, list[Feeds]] = {r.name: [] for r in runners}
        for turn, first in enumerate(range(0, len(case.chunks), block)):
            k = turn % len(runners)
            for r in runners[k:] + runners[:k]:
                for feeds in case.chunks[first : first + block]:
                    start = time.perf_counter()
                    out = r.push(feeds)
                    times[r.name].append(time.perf_counter() - start)
                    outs[r.name].append(out)
        reference = outs[runners[0].name] if runners and runners[0].name.startswith("tl-") else None
        rows = []
        for r in runners:
            ts = sorted(times[r.name])
            if r.name.startswith("tl-"):
                check = checks[r.name]
                if reference is not None and r is not runners[0]:
                    check += f"; vs {runners[0].name} {check_close(outs[r.name], reference)}"
            else:
                check = "-" if reference is None else check_close(outs[r.name], reference)
            rows.append(
                Row(
                    case.name,
                    r.name,
                    percentile(ts, 0.5),
                    percentile(ts, 0.99),
                    r.state_bytes(),
                    traced_peak(r, case.chunks[0]),
                    check,
                    r.note,
                )
            )
    anchors = [row for row in rows if not row.runner.startswith("tl-")]
    if anchors:
        best = min(anchors, key=lambda row: row.p50)
        for row in rows:
            row.ratio_p50 = row.p50 / best.p50
            row.ratio_p99 = row.p99 / best.p99
    for name, why in failed.items():
        console.print(f"[yellow]{case.name}: {name} failed: {why}[/yellow]")
    for row in rows:
        if (
            not (row.check.startswith("ok") or row.check.startswith("exact"))
            or "off by" in row.check
        ):
            console.print(f"[red]{case.name}: {row.runner} mismatch: {row.check}[/red]")
    return rows, failed


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def report(results: list[tuple[Case, list[Row], dict]], console: Console) -> dict[str, Any]:
    table = Table(title="per chunk, ms (ratios: to the anchor with the lowest p50)")
    for col in ("case", "runner"):
        table.add_column(col)
    for col in ("p50 ms", "p99 ms", "p50 ratio", "p99 ratio", "state B", "traced peak KiB"):
        table.add_column(col, justify="right")
    table.add_column("check")
    targets = []
    for case, rows, _ in results:
        anchors = [r for r in rows if not r.runner.startswith("tl-")]
        best = min(anchors, key=lambda r: r.p50).runner if anchors else None
        for i, row in enumerate(rows):
            runner = row.runner + (" *" if row.runner == best else "")
            table.add_row(
                case.name if i == 0 else "",
                runner,
                _ms(row.p50),
                _ms(row.p99),
                _ratio(row.ratio_p50),
                _ratio(row.ratio_p99),
                str(row.state_bytes),
                f"{row.traced_peak / 1024:.1f}",
                row.check,
                end_section=i == len(rows) - 1,
            )
            if row.runner.startswith("tl-") and row.ratio_p50 is not None:
                targets.append(
                    {
                        "case": case.name,
                        "runner": row.runner,
                        "anchor": best,
                        "p50_ratio": row.ratio_p50,
                        "p99_ratio": row.ratio_p99,
                        "p50_target": row.ratio_p50 <= 0.5,
                        "p99_target": (row.ratio_p99 or 0.0) <= 1.0,
                    }
                )
    console.print(table)
    console.print("* the fastest anchor (lowest p50); state B: bytes of the carried state")
    notes = {
        f"{case.name}: {row.runner}": row.note
        for case, rows, _ in results
        for row in rows
        if row.note
    }
    for k, v in notes.items():
        console.print(f"{k}: {v}")
    for case, _, failed in results:
        for k, v in failed.items():
            console.print(f"{case.name}: {k} failed: {v}")
    for backend in sorted({t["runner"] for t in targets}):
        mine = [t for t in targets if t["runner"] == backend]
        console.print(
            f"{backend}: p50 <= 0.5x the fastest anchor on {sum(t['p50_target'] for t in mine)} "
            f"of {len(mine)} cases, p99 <= 1x on {sum(t['p99_target'] for t in mine)} of "
            f"{len(mine)}"
        )
    return {"targets": targets, "notes": notes}


@click.command()
@click.option("--only", multiple=True, help="Models whose group/name contains this (repeatable).")
@click.option("--backends", default="compiled,jax", show_default=True)
@click.option("--chunks", default="1,16", show_default=True, help="Time steps per call.")
@click.option("--count", default=1000, show_default=True, help="Timed chunks per case.")
@click.option("--warmup", default=50, show_default=True, help="Untimed chunks first.")
@click.option(
    "--block", default=20, show_default=True, help="Consecutive chunks per runner per turn."
)
@click.option("--quick", is_flag=True, help="100 chunks, 10 warm-up, the compiled backend.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None)
def main(
    only: tuple[str, ...],
    backends: str,
    chunks: str,
    count: int,
    warmup: int,
    block: int,
    quick: bool,
    seed: int,
    json_path: str | None,
) -> None:
    warnings.simplefilter("ignore")
    console = Console(width=240)
    if quick:
        count, warmup, backends = 100, 10, "compiled"
    names = [b.strip() for b in backends.split(",") if b.strip()]
    sizes = [int(k) for k in chunks.split(",") if k.strip()]
    import_ahead(["onnxruntime", "openvino", *(f"tensorloop-{b}" for b in names)])
    started = time.perf_counter()
    cases: list[Case] = []
    for key in (*VAD, *RECURRENT):
        if only and not any(o in key for o in only):
            continue
        entry = Entry.read(key)
        if entry is None:
            console.print(f"[yellow]{key}: not in {CORPUS}; skipped (make_corpus.py)[/yellow]")
            continue
        if key in VAD:
            cases.append(vad_case(entry, count, seed))
        else:
            cases += [recurrent_case(entry, k, count, seed) for k in sizes]
    results = []
    for case in cases:
        rows, failed = measure(case, names, warmup, console, max(block, 1))
        console.print(
            f"{case.name}: "
            + ", ".join(f"{r.runner} {_ms(r.p50)}/{_ms(r.p99)}" for r in rows)
            + " ms (p50/p99)"
        )
        results.append((case, rows, failed))
    summary = report(results, console)
    console.print(f"total wall time {time.perf_counter() - started:.1f} s")
    if json_path:
        payload = {
            "count": count,
            "warmup": warmup,
            "block": block,
            "cases": [
                {"case": c.name, "rows": [r.to_dict() for r in rows], "failed": failed}
                for c, rows, failed in results
            ],
            **summary,
        }
        Path(json_path).write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
