"""tensorloop as an ``onnx.backend.base.Backend``, and a runner for ONNX's backend node tests."""

from __future__ import annotations

import re
import signal
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from ...backends.base import DEFAULT_BACKEND
from ...errors import TensorloopError
from ...model import Model
from . import load_onnx
from .convert import tensor_value


class TensorloopRep(BackendRep):
    """A prepared model: runs inputs given by position (or by name) through the interpreter."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        outs = self.model.run(inputs if isinstance(inputs, dict) else list(inputs))
        return tuple(outs[name] for name in self.model.output_names)


class TensorloopBackend(Backend):
    """The ONNX backend API over tensorloop (CPU only); ``backend=`` picks tensorloop's."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TensorloopRep:
        return TensorloopRep(load_onnx(model, **kwargs))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper().startswith("CPU")


prepare = TensorloopBackend.prepare
run_model = TensorloopBackend.run_model
supports_device = TensorloopBackend.supports_device


# -- the node-test conformance run ----------------------------------------------------------------

SUBGRAPH_OPS = frozenset({"Loop", "Scan", "If", "SequenceMap"})


@dataclass(frozen=True)
class CaseResult:
    """One ONNX backend node test: its ops, whether it holds a subgraph, and what happened."""

    name: str
    ops: tuple[str, ...]
    has_subgraph: bool
    passed: bool
    error: str
    seconds: float


def node_test_cases(pattern: str = "") -> list[Any]:
    """The node test cases the installed onnx generates, optionally filtered by a regex."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    rx = re.compile(pattern) if pattern else None
    return sorted((c for c in cases if rx is None or rx.search(c.name)), key=lambda c: str(c.name))


def _graph_ops(graph: onnx.GraphProto) -> Iterator[tuple[str, bool]]:
    """(op type, whether it sits in a subgraph) for every node, subgraphs included."""
    for node in graph.node:
        yield node.op_type, False
        for a in node.attribute:
            subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
            for sub in subs:
                for op_type, _ in _graph_ops(sub):
                    yield op_type, True


def case_ops(case: Any) -> tuple[tuple[str, ...], bool]:
    found = list(_graph_ops(case.model.graph))
    ops = tuple(sorted({o for o, _ in found}))
    return ops, any(nested for _, nested in found) or bool(SUBGRAPH_OPS & set(ops))


class CaseTimeoutError(Exception):
    pass


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeoutError(f"took longer than {seconds} s")

    if not hasattr(signal, "SIGALRM"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_case(case: Any, backend: str = DEFAULT_BACKEND) -> None:
    """Run one node test case on ``backend``; raises on a wrong answer or an error."""
    from onnx.backend.test.runner import Runner

    rep = TensorloopBackend.prepare(case.model, backend=backend)
    for inputs, expected in case.data_sets:
        with np.errstate(all="ignore"):
            got = rep.run([_array(x) for x in inputs])
        expected = [_array(x) for x in expected]
        _assert_similar(Runner, list(expected), list(got), case.rtol, case.atol)


def _array(x: Any) -> Any:
    """A test datum as tensorloop holds it: TensorProtos (used for types NumPy lacks) decoded."""
    if isinstance(x, onnx.TensorProto):
        return tensor_value(x, "node test data")
    return x


def _assert_similar(
    runner: Any, ref: Sequence[Any], out: Sequence[Any], rtol: float, atol: float
) -> None:
    if len(ref) != len(out):
        raise AssertionError(f"expected {len(ref)} outputs, got {len(out)}")
    for i, (r, o) in enumerate(zip(ref, out, strict=True)):
        if r is None or o is None:
            if (r is None) != (o is None):
                raise AssertionError(f"output {i}: expected {r!r}, got {o!r}")
            continue
        if isinstance(r, list | tuple) or isinstance(o, list | tuple):
            # A sequence, compared element by element: onnx's runner fails on 0-d elements.
            if not (isinstance(r, list | tuple) and isinstance(o, list | tuple)):
                raise AssertionError(f"output {i}: expected {type(r).__name__}, got {o!r}")
            _assert_similar(runner, list(r), list(o), rtol, atol)
            continue
        runner.assert_similar_outputs([r], [o], rtol, atol)


def run_case(case: Any, timeout: int = 120, backend: str = DEFAULT_BACKEND) -> CaseResult:
    ops, nested = case_ops(case)
    start = time.perf_counter()
    try:
        with _time_limit(timeout):
            check_case(case, backend)
        passed, error = True, ""
    except (TensorloopError, AssertionError, CaseTimeoutError) as exc:
        passed, error = False, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a crash is a failure to report, not to hide
        passed, error = False, f"crash {type(exc).__name__}: {exc}"
    return CaseResult(str(case.name), ops, nested, passed, error, time.perf_counter() - start)
