"""OpenVINO ReadValue/Assign state across runs, and the errors bad layers and attributes raise."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset3, opset8  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    compile_cpu,
    const,
    edit_ir,
    rand_f32,
    record_layer_types,
    run_path,
    save_ir,
    stateful_ir,
)

import tensorloop as tl  # noqa: E402


@pytest.mark.parametrize(
    ("init", "version"),
    [("const", "v6"), ("computed", "v6"), ("none", "v6"), ("const", "v3"), ("computed", "v3")],
)
def test_read_value_assign_keep_state_across_runs(init: str, version: str, tmp_path: Path) -> None:
    path = stateful_ir(init, version, tmp_path)
    ours = tl.load(path)
    request = compile_cpu(path).create_infer_request()
    feeds = [rand_f32(2, 3) for _ in range(3)]
    for step, x in enumerate([*feeds, *feeds]):
        if step == 3:  # both start over from the initial state
            ours.reset_state()
            request.reset_state()
        (got,) = ours.run({"x": x}).values()
        want = request.infer({"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"run {step}")
    assert "s" in ours.state
    record_layer_types(path, "compared")
    # Written back as IR: the CPU plugin and tensorloop keep the same state over the same runs.
    written = tmp_path / "written.xml"
    ours.reset_state()
    tl.save(ours, written)
    again, request = tl.load(written), compile_cpu(written).create_infer_request()
    for step, x in enumerate(feeds):
        (want,) = ours.run({"x": x}).values()
        (got,) = again.run({"x": x}).values()
        theirs = request.infer({"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"re-read run {step}")
        np.testing.assert_allclose(theirs, want, rtol=1e-6, atol=1e-6, err_msg=f"written {step}")
    record_layer_types(path, "written")


def test_assign_output_passes_its_input_through(tmp_path: Path) -> None:
    # OpenVINO's CPU plugin crashes on a model that reads an Assign's output, so the spec decides.
    x = ops.parameter([3], np.float32, name="x")
    read = ops.read_value(ops.constant(np.ones(3, np.float32)), "v", ov.Type.f32, [3])
    assign = ops.assign(ops.add(read, x), "v")
    path = save_ir([ops.multiply(assign, x)], [x], tmp_path, sinks=[assign])
    ours = tl.load(path)
    x1, x2 = rand_f32(3), rand_f32(3)
    (first,) = ours.run({"x": x1}).values()
    np.testing.assert_allclose(first, (1 + x1) * x1, rtol=1e-6)
    np.testing.assert_allclose(ours.state["v"], 1 + x1)
    (second,) = ours.run({"x": x2}).values()
    np.testing.assert_allclose(second, (1 + x1 + x2) * x2, rtol=1e-6)


# -- errors ---------------------------------------------------------------------------------------


def _layer_error(path: Path, layer_type: str, *fragments: str) -> None:
    found = re.search(rf'<layer id="(\d+)" name="([^"]+)" type="{layer_type}"', path.read_text())
    assert found
    lid, name = found.groups()
    with pytest.raises(tl.FormatError) as info:
        tl.load(path)
    message = str(info.value)
    assert f"m.xml: layer {lid} '{name}' ({layer_type})" in message
    for fragment in fragments:
        assert fragment in message, message


# (a layer on x: f32[2, 6], the attribute to spoil, its bad value, words the message must hold)
BAD_ATTRIBUTES = [
    (lambda p: ops.reshape(p, const([12]), True), "special_zero", "maybe", "true or false"),
    (lambda p: ops.convert(p, "i32"), "destination_type", "q7", "unsupported element type"),
    (lambda p: ops.clamp(p, 0.0, 1.0), "max", "-1", "min <= max"),
    (lambda p: ops.clamp(p, 0.0, 1.0), "min", "low", "expected a number"),
    (lambda p: ops.strided_slice(p, const([0]), const([1]), const([1]), [0], [0]),
     "begin_mask", "2", "0s and 1s"),
    (lambda p: ops.strided_slice(p, const([0]), const([1]), const([1]), [0], [0]),
     "end_mask", "x", "expected integers"),
    (lambda p: ops.add(p, p), "auto_broadcast", "pdpd", "expected one of numpy, none"),
    (lambda p: opset8.gather(p, const([0]), const(1), 0), "batch_dims", "3",
     "expected at most axis"),
    (lambda p: ops.split(p, const(1), 3), "num_splits", "0", "expected at least 1"),
    (lambda p: opset3.broadcast(p, const([2, 6]), None, "NUMPY"), "mode", "pdpd", "bidirectional"),
    (lambda p: ops.reduce_sum(p, const([0]), True), "keep_dims", "yes", "true or false"),
    (lambda p: opset3.shape_of(p, "i32"), "output_type", "f32", "expected i32 or i64"),
    (lambda p: opset1.softmax(p, 1), "axis", "-1", "non-negative"),
    (lambda p: ops.matmul(p, p, False, True), "transpose_a", "2", "true or false"),
    (lambda p: ops.concat([p, p], 0), "axis", "first", "expected an integer"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "key", "bad", "words"), BAD_ATTRIBUTES, ids=[f"{c[1]}={c[2]}" for c in BAD_ATTRIBUTES]
)
def test_bad_attributes_name_layer_and_attribute(
    build: Callable[[Any], Any], key: str, bad: str, words: str, tmp_path: Path
) -> None:
    x = ops.parameter([2, 6], np.float32, name="x")
    path = save_ir([build(x)], [x], tmp_path)
    layer = re.compile(rf'(type="(\w+)" version="\w+">\s*<data [^>]*\b{key}=")[^"]*"')
    found = layer.search(path.read_text())
    assert found, key
    path.write_text(layer.sub(rf'\g<1>{bad}"', path.read_text(), count=1))
    _layer_error(path, found.group(2), f"'{key}'", bad, words)


def test_auto_broadcast_none_needs_equal_shapes(tmp_path: Path) -> None:
    a = ops.parameter([2, 3], np.float32, name="a")
    b = ops.parameter([3], np.float32, name="b")
    path = save_ir([ops.add(a, b)], [a, b], tmp_path)
    edit_ir(path, 'auto_broadcast="numpy"', 'auto_broadcast="none"')
    _layer_error(path, "Add", "auto_broadcast is 'none'", "f32[2,3] vs f32[3]")
    same = ops.parameter([2, 3], np.float32, name="b")
    path = save_ir([ops.multiply(a, same)], [a, same], tmp_path)
    edit_ir(path, 'auto_broadcast="numpy"', 'auto_broadcast="none"')
    run_path(path, {"a": rand_f32(2, 3), "b": rand_f32(2, 3)})


def test_non_constant_inputs_that_must_be_constant(tmp_path: Path) -> None:
    x = ops.parameter([2, 3], np.float32, name="x")
    order = ops.parameter([2], np.int64, name="order")
    path = save_ir([ops.transpose(x, order)], [x, order], tmp_path)
    _layer_error(path, "Transpose", "input #1 (order) must be a constant")


def test_read_value_errors(tmp_path: Path) -> None:
    path = stateful_ir("const", "v6", tmp_path)
    edit_ir(path, 'variable_type="f32"', 'variable_type="i32"')
    _layer_error(path, "ReadValue", "the init input is f32[2,3], but the variable is i32[2,3]")
    path = stateful_ir("none", "v6", tmp_path)
    edit_ir(path, 'variable_shape="2,3"', 'variable_shape="?,3"')
    text = path.read_text()
    path.write_text(re.sub(r"(type=\"ReadValue\"[\s\S]*?<dim>)2(</dim>)", r"\g<1>-1\2", text))
    _layer_error(path, "ReadValue", "variable 's' needs a static type", "'?,3'")


def test_read_value_inside_a_loop_body_is_refused(tmp_path: Path) -> None:
    X = ops.parameter([3, 2], np.float32, name="X")
    xi = ops.parameter([1, 2], np.float32, name="xi")
    read = ops.read_value(ops.constant(np.zeros((1, 2), np.float32)), "v", ov.Type.f32, [1, 2])
    total = ops.add(read, xi)
    r = ops.result(total)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r], [ops.assign(total, "v")], [xi], "body"))
    ti.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 0)
    path = save_ir([ti.get_concatenated_slices(r.output(0), 0, 1, 1, -1, 0)], [X], tmp_path)
    _layer_error(path, "ReadValue", "(TensorIterator) body", "inside a loop body")
