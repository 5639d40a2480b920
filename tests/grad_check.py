"""The gradient law's oracle: central finite differences in float64.

``check_op`` builds a one-node model, reduces each float output to a scalar against fixed
random weights (so the cotangents are not all ones), and compares ``tl.grad`` with central
differences; ``check_model`` does the same for a whole model. The suite's conftest runs every
model on every backend under the backend law, so one call checks them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import tensorloop as tl
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.reference.runtime import RunState, coerce_inputs
from tensorloop.tensor.types import TensorType

EPS = 1e-6


def numeric_grad(
    f: Any, inputs: Mapping[str, np.ndarray], name: str, eps: float = EPS
) -> np.ndarray:
    """d f(inputs) / d inputs[name] by central differences."""
    x = np.asarray(inputs[name], dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        out[idx] = (f({**inputs, name: hi}) - f({**inputs, name: lo})) / (2 * eps)
    return out


def reference_function(model: tl.Model, of: str) -> Any:
    """feeds -> sum of output ``of``, on the reference interpreter alone: finite differences
    run the model twice per input element, and the backend law (which the conftest applies to
    every ``Session.run``) is checked once, on the gradient model."""
    exe = model.prepared("reference")
    index = model.output_names.index(of)

    def f(feed: Mapping[str, Any]) -> float:
        args = coerce_inputs(model.graph, dict(feed))
        state = RunState(max_iterations=model.limits.max_iterations, limits=model.limits)
        return float(np.sum(exe.run(args, state)[index]))

    return f


def check_model(
    model: tl.Model,
    inputs: Mapping[str, Any],
    wrt: Sequence[str],
    of: str = "loss",
    *,
    rtol: float = 1e-5,
    atol: float = 1e-7,
    eps: float = EPS,
    **grad_options: Any,
) -> dict[str, np.ndarray]:
    """``tl.grad(model, of, wrt)`` run on ``inputs`` equals central differences of output
    ``of`` (summed); the gradients, by name."""
    grads = tl.grad(model, of=of, wrt=list(wrt), **grad_options)
    got = grads.run(dict(inputs))

    f = reference_function(model, of)

    for name in wrt:
        want = numeric_grad(f, inputs, name, eps)
        have = got[f"{name}.grad"]
        assert have.shape == want.shape, f"{name}: shape {have.shape} vs {want.shape}"
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=f"d{of}/d{name}")
    return {name: got[f"{name}.grad"] for name in wrt}


def op_model(
    op: str,
    inputs: Sequence[np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    *,
    constants: Mapping[int, np.ndarray] | None = None,
    seed: int = 0,
) -> tuple[tl.Model, dict[str, np.ndarray]]:
    """A model running ``op`` once on inputs ``x0, x1, ...`` (the positions in ``constants``
    are constants instead: axes, shapes, indices), whose output ``loss`` is the sum of each
    float output times fixed random weights; and its feeds."""
    g = Graph("grad_check")
    em = Emitter(g)
    constants = dict(constants or {})
    values: list[Any] = []
    feeds: dict[str, np.ndarray] = {}
    for k, x in enumerate(inputs):
        if k in constants:
            values.append(None if constants[k] is None else em.const(constants[k]))
            continue
        x = np.asarray(x)
        name = f"x{k}"
        values.append(g.add_input(name, _type(x)))
        feeds[name] = x
    outs = em.ops(op, values, dict(attrs or {}))
    rng = np.random.default_rng(seed)
    total = None
    for out in outs:
        t = out.type
        if not (isinstance(t, TensorType) and t.dtype.is_float):
            continue
        shape = _static_shape(op, out)
        w = em.const(rng.standard_normal(shape).astype(t.dtype.numpy))
        term = em.op("ReduceSum", [em.op("Mul", [out, w])], {"keepdims": 0})
        total = term if total is None else em.op("Add", [total, term])
    assert total is not None, f"{op} has no float output"
    g.outputs = [g.result_named(total, "loss")]
    return tl.Model(g), feeds


def _type(x: np.ndarray) -> TensorType:
    from tensorloop.tensor.dtypes import dtype

    return TensorType(dtype(x.dtype), x.shape)


def _static_shape(op: str, out: Any) -> Any:
    t = out.type
    if t.shape is not None and all(isinstance(d, int) for d in t.shape):
        return tuple(t.shape)
    raise AssertionError(f"{op}: output type {t} is not static; give static inputs")


def check_op(
    op: str,
    inputs: Sequence[np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    *,
    constants: Mapping[int, np.ndarray] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-7,
    eps: float = EPS,
) -> dict[str, np.ndarray]:
    """The gradient of ``op`` with respect to each float input that is not a constant equals
    central differences (inputs in float64 for the finite differences to mean anything)."""
    model, feeds = op_model(op, inputs, attrs, constants=constants)
    wrt = [name for name, x in feeds.items() if np.asarray(x).dtype.kind == "f"]
    return check_model(model, feeds, wrt, rtol=rtol, atol=atol, eps=eps)
