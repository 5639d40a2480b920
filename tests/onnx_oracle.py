"""One-node models for the op tests: ONNX models run by tensorloop and by onnxruntime (the
oracle) and their outputs compared, and the same node run or typed straight through the IR."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from tensorloop.formats.onnx import load_onnx
from tensorloop.ir.graph import Graph, Value
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.types import TensorType, tensor_type_of

# rtol, atol by the name of an element type.
Tolerance = Mapping[str, tuple[float, float]]

ort.set_default_logger_severity(4)


def one_node(
    op: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    opset: int,
    outputs: int = 1,
    domain: str = "",
    domain_opset: int = 1,
    consts: Collection[int] = (),
    ir_version: int = 10,
) -> onnx.ModelProto:
    """A model of one ``op`` node fed by graph inputs x0, x1, ... (None: an input left out; the
    indices in ``consts`` become initializers) with outputs y0, y1, ..."""
    names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    params = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
        for i, (n, x) in enumerate(zip(names, inputs, strict=True))
        if x is not None and i not in consts
    ]
    inits = [
        numpy_helper.from_array(x, names[i])
        for i, x in enumerate(inputs)
        if x is not None and i in consts
    ]
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], op, params, [helper.make_empty_tensor_value_info(y) for y in outs], inits
    )
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, domain_opset))
    return helper.make_model(graph, opset_imports=imports, ir_version=ir_version)


def feeds(model: onnx.ModelProto, inputs: Sequence[np.ndarray | None]) -> dict[str, np.ndarray]:
    """The arrays of ``inputs`` that ``model`` takes as graph inputs x0, x1, ..., by name."""
    taken = {i.name for i in model.graph.input}
    return {f"x{i}": x for i, x in enumerate(inputs) if x is not None and f"x{i}" in taken}


def tensorloop_run(model: onnx.ModelProto, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    got = load_onnx(model).run(feeds(model, inputs))
    return [np.asarray(got[o.name]) for o in model.graph.output]


def ort_run(
    model: onnx.ModelProto, inputs: Sequence[np.ndarray | None], *, optimize: bool = True
) -> list[np.ndarray]:
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    return [np.asarray(y) for y in session.run(None, feeds(model, inputs))]


def is_float(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f" or dt == np.dtype(ml_dtypes.bfloat16)


def assert_close(
    got: np.ndarray, want: np.ndarray, tolerance: Tolerance, computed_in: str | None = None
) -> None:
    """Equal dtype and shape; floats equal up to the tolerance of the type ``want`` was computed
    in (its own unless named), other values exactly."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if is_float(want.dtype):
        rtol, atol = tolerance[computed_in or str(want.dtype)]
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol
        )
    else:
        np.testing.assert_array_equal(got, want)


def same_as_onnxruntime(
    op: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    opset: int,
    tolerance: Tolerance,
    outputs: int = 1,
    consts: Collection[int] = (),
) -> list[np.ndarray]:
    """Run ``op`` through tensorloop's ONNX import and onnxruntime; the outputs must agree.
    Returns tensorloop's."""
    model = one_node(op, inputs, attrs, opset=opset, outputs=outputs, consts=consts)
    got = tensorloop_run(model, inputs)
    for g, w in zip(got, ort_run(model, inputs), strict=True):
        assert_close(g, w, tolerance)
    return got


# -- the same node straight through the IR, without ONNX ---------------------------------------


def _value(g: Graph, i: int, x: Any) -> Value | None:
    """Input ``i``: None left out, a type a parameter, an array (or ("c", array)) a constant."""
    if x is None:
        return None
    if isinstance(x, tuple | np.ndarray):
        data = np.array(x[1] if isinstance(x, tuple) else x)
        data.setflags(write=False)
        return g.add_node("Constant", [], {"value": data}).output
    return g.add_input(f"x{i}", x)


def infer(
    op: str, inputs: Sequence[Any], attrs: Mapping[str, Any] | None = None, /, **more: Any
) -> list[str]:
    """The inferred output types of one ``op`` node (attributes ``attrs`` and ``more``) on types;
    arrays (or ("c", array)) become constants the rule can read, None an input left out."""
    g = Graph()
    values = [_value(g, i, x) for i, x in enumerate(inputs)]
    return [str(v.type) for v in g.add_node(op, values, {**(attrs or {}), **more}).outputs]


def run_core(
    op: str, inputs: Sequence[Any], attrs: Mapping[str, Any] | None = None, /, **more: Any
) -> list[np.ndarray]:
    """Run one ``op`` node (attributes ``attrs`` and ``more``) through the reference interpreter:
    arrays become parameters, ("c", array) constants, None an input left out. Every output must
    fit the type its rule inferred."""
    g = Graph()
    values: list[Value | None] = []
    args: list[np.ndarray] = []
    for i, x in enumerate(inputs):
        if x is None or isinstance(x, tuple):
            values.append(_value(g, i, x))
        else:
            values.append(g.add_input(f"x{i}", tensor_type_of(x)))
            args.append(x)
    node = g.add_node(op, values, {**(attrs or {}), **more})
    g.set_outputs(node.outputs)
    outs = list(Interpreter().run(g, args))
    for v, out in zip(node.outputs, outs, strict=True):
        assert isinstance(v.type, TensorType) and v.type.accepts(np.asarray(out)), (v.type, out)
    return outs
