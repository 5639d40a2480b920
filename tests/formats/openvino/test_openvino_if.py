"""OpenVINO If-8 layers (then/else bodies with their port maps) vs. the CPU plugin, If inside
loops and loops inside If, models OpenVINO converts from ONNX, the writer round trip, and the
tensor names (aliases) a Parameter's port carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto  # noqa: E402
from onnx import helper as oh  # noqa: E402
from openvino import opset8  # noqa: E402
from openvino_layer_checks import edit_ir, rand_f32, run_path, save_ir  # noqa: E402

import tensorloop as tl  # noqa: E402
from tensorloop.errors import FormatError  # noqa: E402
from tensorloop.formats.openvino.convert import input_aliases  # noqa: E402
from tensorloop.tensor.dtypes import DType  # noqa: E402
from tensorloop.tensor.types import TensorType  # noqa: E402

Array = np.ndarray[Any, Any]
F = TensorProto.FLOAT


def _if(cond: Any, inputs: list[Any], then_fn: Any, else_fn: Any) -> list[Any]:
    """An If-8 whose branches get parameters for the inputs they ask for: ``then_fn(params)``
    returns (results, used input indexes) -- a branch feeds only the ones it names."""
    node = opset8.if_op(cond)
    bodies = []
    for fn in (then_fn, else_fn):
        params = [opset8.parameter(x.get_partial_shape(), x.get_element_type()) for x in inputs]
        outs, used = fn(params)
        bodies.append(
            (ov.Model([opset8.result(o) for o in outs], [params[i] for i in used]), params, used)
        )
    (then_m, then_p, then_used), (else_m, else_p, else_used) = bodies
    node.set_then_body(then_m)
    node.set_else_body(else_m)
    for i, x in enumerate(inputs):
        t = then_p[i] if i in then_used else None
        e = else_p[i] if i in else_used else None
        if t is not None or e is not None:
            node.set_input(x.output(0) if hasattr(x, "output") else x, t, e)
    return [
        node.set_output(a, b)
        for a, b in zip(then_m.get_results(), else_m.get_results(), strict=True)
    ]


def _both(path: Path, feeds: dict[str, Array], cond: str = "c") -> None:
    for flag in (True, False):
        run_path(path, {**feeds, cond: np.array(flag)})


@pytest.mark.parametrize("dynamic", [False, True])
def test_unused_inputs_and_several_outputs(dynamic: bool, tmp_path: Path) -> None:
    shape = [-1, -1] if dynamic else [2, 3]
    c = opset8.parameter([], np.bool_, name="c")
    x = opset8.parameter(shape, np.float32, name="x")
    y = opset8.parameter(shape, np.float32, name="y")
    z = opset8.parameter([3], np.float32, name="z")
    outs = _if(
        c,
        [x, y, z],
        # then reads x and y; its second result is a body Parameter passed straight through.
        lambda p: ([opset8.multiply(p[0], p[1]), p[0]], [0, 1]),
        # else reads only z, and x.
        lambda p: ([opset8.add(p[0], p[2]), opset8.negative(p[0])], [0, 2]),
    )
    path = save_ir(outs, [c, x, y, z], tmp_path)
    _both(path, {"x": rand_f32(2, 3), "y": rand_f32(2, 3), "z": rand_f32(3)})


def test_branch_reading_nothing_and_integer_condition(tmp_path: Path) -> None:
    c = opset8.parameter([1], np.int32, name="c")
    x = opset8.parameter([4], np.float32, name="x")
    outs = _if(
        opset8.convert(c, "boolean").output(0),
        [x],
        lambda p: ([opset8.constant(np.arange(4, dtype=np.float32))], []),
        lambda p: ([opset8.relu(p[0])], [0]),
    )
    path = save_ir(outs, [c, x], tmp_path)
    for flag in (1, 0):
        run_path(path, {"c": np.array([flag], np.int32), "x": rand_f32(4)})


def test_outputs_of_unknown_rank(tmp_path: Path) -> None:
    c = opset8.parameter([], np.bool_, name="c")
    x = opset8.parameter([2, 3], np.float32, name="x")
    (out,) = _if(
        c,
        [x],
        lambda p: ([opset8.sigmoid(p[0])], [0]),
        lambda p: ([opset8.reshape(p[0], opset8.constant(np.array([6])), False)], [0]),
    )
    path = save_ir([out], [c, x], tmp_path)
    text = path.read_text()
    result_port = text[text.index('type="If"') :].split("<output>")[1].split("</output>")[0]
    assert "<dim>" not in result_port  # OpenVINO writes the output with no dims at all
    _unknown_rank_both(path, "x", lambda x: 1 / (1 + np.exp(-x)), lambda x: x.reshape(-1))


def _unknown_rank_both(path: Path, name: str, then_fn: Any, else_fn: Any) -> None:
    """The CPU plugin refuses an If output of dynamic rank: compare with numpy instead."""
    model = tl.load(path)
    assert model.outputs[0].type == TensorType(DType.float32, None)
    x = rand_f32(2, 3)
    for flag, fn in ((True, then_fn), (False, else_fn)):
        (got,) = model.run({"c": np.array(flag), name: x}).values()
        np.testing.assert_allclose(got, fn(x), rtol=1e-6)
        assert got.shape == fn(x).shape


def test_nested_ifs(tmp_path: Path) -> None:
    c = opset8.parameter([], np.bool_, name="c")
    d = opset8.parameter([], np.bool_, name="d")
    x = opset8.parameter([3], np.float32, name="x")

    def then(p: list[Any]) -> tuple[list[Any], list[int]]:
        inner = _if(
            p[1],
            [p[2]],
            lambda q: ([opset8.exp(q[0])], [0]),
            lambda q: ([opset8.abs(q[0])], [0]),
        )
        return inner, [1, 2]

    outs = _if(c, [c, d, x], then, lambda p: ([opset8.negative(p[2])], [2]))
    path = save_ir(outs, [c, d, x], tmp_path)
    for dv in (True, False):
        _both(path, {"d": np.array(dv), "x": rand_f32(3)})


def test_output_missing_in_one_branch_is_refused(tmp_path: Path) -> None:
    c = opset8.parameter([], np.bool_, name="c")
    x = opset8.parameter([2], np.float32, name="x")
    outs = _if(
        c, [x], lambda p: ([opset8.relu(p[0])], [0]), lambda p: ([opset8.negative(p[0])], [0])
    )
    path = save_ir(outs, [c, x], tmp_path)
    text = path.read_text()
    start, end = text.index("<then_port_map>"), text.index("</then_port_map>")
    entry = next(line for line in text[start:end].splitlines() if "<output " in line)
    path.write_text(text[:start] + text[start:end].replace(entry, "") + text[end:])
    with pytest.raises(FormatError, match="has no then_port_map output"):
        tl.load(path)


def test_unknown_layer_inside_a_branch_is_reported(tmp_path: Path) -> None:
    c = opset8.parameter([], np.bool_, name="c")
    x = opset8.parameter([2], np.float32, name="x")
    outs = _if(
        c, [x], lambda p: ([opset8.relu(p[0])], [0]), lambda p: ([opset8.negative(p[0])], [0])
    )
    path = save_ir(outs, [c, x], tmp_path)
    edit_ir(path, 'type="ReLU"', 'type="NoSuchOp"')
    with pytest.raises(FormatError, match="unsupported layer types: NoSuchOp"):
        tl.load(path)


# -- models OpenVINO converts from ONNX -------------------------------------------------------


def _onnx_to_ir(graph: Any, tmp_path: Path, name: str = "m") -> Path:
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    src = tmp_path / f"{name}.onnx"
    onnx.save(model, str(src))
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.convert_model(str(src)), str(path), compress_to_fp16=False)
    return path


def _branch(name: str, nodes: list[Any], outs: list[tuple[str, list[int] | None]]) -> Any:
    return oh.make_graph(nodes, name, [], [oh.make_tensor_value_info(n, F, s) for n, s in outs])


def test_onnx_if_capturing_outer_values(tmp_path: Path) -> None:
    then = _branch("then", [oh.make_node("Mul", ["x", "y"], ["t"])], [("t", [2, 3])])
    els = _branch("else", [oh.make_node("Sub", ["x", "x"], ["e"])], [("e", [2, 3])])
    graph = oh.make_graph(
        [oh.make_node("If", ["c"], ["out"], then_branch=then, else_branch=els)],
        "g",
        [
            oh.make_tensor_value_info("c", TensorProto.BOOL, []),
            oh.make_tensor_value_info("x", F, [2, 3]),
            oh.make_tensor_value_info("y", F, [2, 3]),
        ],
        [oh.make_tensor_value_info("out", F, [2, 3])],
    )
    path = _onnx_to_ir(graph, tmp_path)
    assert 'type="If"' in path.read_text()
    _both(path, {"x": rand_f32(2, 3), "y": rand_f32(2, 3)})


def _loop_body_with_if() -> Any:
    """A Loop body (i, cond, acc) -> (cond, acc'): acc' = acc*2 if sum(acc) > 0 else acc-x."""
    then = _branch("then", [oh.make_node("Add", ["acc", "acc"], ["t"])], [("t", None)])
    els = _branch("else", [oh.make_node("Sub", ["acc", "x"], ["e"])], [("e", None)])
    return oh.make_graph(
        [
            oh.make_node("ReduceSum", ["acc"], ["s"], keepdims=0),
            oh.make_node("Constant", [], ["zero"], value=oh.make_tensor("z", F, [], [0.0])),
            oh.make_node("Greater", ["s", "zero"], ["pos"]),
            oh.make_node("If", ["pos"], ["acc_out"], then_branch=then, else_branch=els),
            oh.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            oh.make_tensor_value_info("i", TensorProto.INT64, []),
            oh.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            oh.make_tensor_value_info("acc", F, [3]),
        ],
        [
            oh.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            oh.make_tensor_value_info("acc_out", F, [3]),
        ],
    )


def test_onnx_if_inside_a_loop(tmp_path: Path) -> None:
    graph = oh.make_graph(
        [oh.make_node("Loop", ["n", "", "x"], ["acc"], body=_loop_body_with_if())],
        "g",
        [
            oh.make_tensor_value_info("n", TensorProto.INT64, []),
            oh.make_tensor_value_info("x", F, [3]),
        ],
        [oh.make_tensor_value_info("acc", F, [3])],
    )
    path = _onnx_to_ir(graph, tmp_path)
    text = path.read_text()
    assert text.index('type="Loop"') < text.index('type="If"')
    for n in (0, 1, 5):
        for x in (rand_f32(3), np.array([1.0, -3.0, 0.5], np.float32)):
            run_path(path, {"n": np.array(n), "x": x})


def test_onnx_loop_inside_an_if(tmp_path: Path) -> None:
    loop = oh.make_node("Loop", ["n", "", "x"], ["looped"], body=_loop_body_with_if())
    then = _branch("then", [loop], [("looped", [3])])
    els = _branch("else", [oh.make_node("Neg", ["x"], ["e"])], [("e", [3])])
    graph = oh.make_graph(
        [oh.make_node("If", ["c"], ["out"], then_branch=then, else_branch=els)],
        "g",
        [
            oh.make_tensor_value_info("c", TensorProto.BOOL, []),
            oh.make_tensor_value_info("n", TensorProto.INT64, []),
            oh.make_tensor_value_info("x", F, [3]),
        ],
        [oh.make_tensor_value_info("out", F, [3])],
    )
    path = _onnx_to_ir(graph, tmp_path)
    text = path.read_text()
    assert text.index('type="If"') < text.index('type="Loop"')
    for n in (0, 4):
        _both(path, {"n": np.array(n), "x": rand_f32(3)})


def test_onnx_if_with_branch_outputs_of_different_rank(tmp_path: Path) -> None:
    then = _branch("then", [oh.make_node("Relu", ["x"], ["t"])], [("t", None)])
    shape = oh.make_node(
        "Constant", [], ["k"], value=oh.make_tensor("k", TensorProto.INT64, [1], [-1])
    )
    els = _branch("else", [shape, oh.make_node("Reshape", ["x", "k"], ["e"])], [("e", None)])
    graph = oh.make_graph(
        [oh.make_node("If", ["c"], ["out"], then_branch=then, else_branch=els)],
        "g",
        [
            oh.make_tensor_value_info("c", TensorProto.BOOL, []),
            oh.make_tensor_value_info("x", F, [2, 3]),
        ],
        [oh.make_tensor_value_info("out", F, None)],
    )
    path = _onnx_to_ir(graph, tmp_path)
    _unknown_rank_both(path, "x", lambda x: np.maximum(x, 0), lambda x: x.reshape(-1))


# -- the writer round trip ----------------------------------------------------------------------


def test_round_trip_through_openvino(tmp_path: Path) -> None:
    c = tl.placeholder("bool", (), name="c")
    x = tl.placeholder("float32", (2, 3), name="x")
    y = tl.placeholder("float32", (3,), name="y")
    a, b = tl.cond(c, lambda p, q: (p * q, p), lambda p, q: (p - 1.0, -p), x, y)
    model = tl.Model({"a": a, "b": b})
    path = tmp_path / "rt.xml"
    tl.save(model, path)
    again = tl.load(path)
    assert "If" in {n.op for n in again.graph.nodes}
    feeds = {"x": rand_f32(2, 3), "y": rand_f32(3)}
    for flag in (True, False):
        want = dict(model.run({**feeds, "c": np.array(flag)}))
        got = run_path(path, {**feeds, "c": np.array(flag)})
        assert set(got) == set(want)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
    # import -> export -> import keeps the meaning.
    path2 = tmp_path / "rt2.xml"
    tl.save(again, path2)
    for flag in (True, False):
        np.testing.assert_allclose(
            tl.load(path2).run({**feeds, "c": np.array(flag)})["a"],
            again.run({**feeds, "c": np.array(flag)})["a"],
        )


# -- tensor names: a Parameter's port carries several ---------------------------------------------


def _aliased_ir(tmp_path: Path) -> Path:
    graph = oh.make_graph(
        [
            oh.make_node("Identity", ["X"], ["Sum"]),
            oh.make_node("Identity", ["Sum"], ["Prod"]),
            oh.make_node("Add", ["Prod", "W"], ["Y"]),
        ],
        "g",
        [oh.make_tensor_value_info("X", F, [2]), oh.make_tensor_value_info("W", F, [2])],
        [oh.make_tensor_value_info("Y", F, [2])],
    )
    return _onnx_to_ir(graph, tmp_path, "aliased")


def test_input_keeps_its_framework_name_and_records_aliases(tmp_path: Path) -> None:
    path = _aliased_ir(tmp_path)
    assert 'names="Prod,Sum,X"' in path.read_text()  # sorted: the ONNX name is not first
    model = tl.load(path)
    assert model.input_names == ["X", "W"]
    assert input_aliases(model.graph) == {"Prod": "X", "Sum": "X"}
    compiled = ov.Core().compile_model(str(path), "CPU")
    assert compiled.input("Sum").get_any_name() in {"Prod", "Sum", "X"}  # OpenVINO takes any
    run_path(path, {"X": rand_f32(2), "W": rand_f32(2)})


def test_inputs_are_accepted_by_any_alias(tmp_path: Path) -> None:
    model = tl.load(_aliased_ir(tmp_path))
    x, w = rand_f32(2), rand_f32(2)
    want = model.run({"X": x, "W": w})["Y"]
    for alias in ("Sum", "Prod"):
        np.testing.assert_array_equal(model.run({alias: x, "W": w})["Y"], want)
    with pytest.raises(tl.InputError, match="input 'X' is given twice"):
        model.run({"X": x, "Sum": x, "W": w})


def test_a_convolution_in_a_branch_whose_data_rank_the_ir_leaves_open(tmp_path: Path) -> None:
    # As OpenVINO's converter writes a voice-activity model's branches: the body's parameter has
    # a dynamic rank, the convolution's spatial rank follows from its weights.
    x = opset8.parameter([1, 3, 10], np.float32, name="x")
    c = opset8.parameter([], np.bool_, name="c")
    node = opset8.if_op(c)
    weights = rand_f32(4, 3, 3)
    bodies = []
    for scale in (1.0, -1.0):
        p = opset8.parameter([1, 3, 10], np.float32)
        w = opset8.constant(weights * np.float32(scale))
        y = opset8.convolution(p, w, [1], [1], [1], [1])
        bodies.append((ov.Model([opset8.result(y)], [p]), p))
    (then_m, then_p), (else_m, else_p) = bodies
    node.set_then_body(then_m)
    node.set_else_body(else_m)
    node.set_input(x.output(0), then_p, else_p)
    out = node.set_output(then_m.get_results()[0], else_m.get_results()[0])
    path = save_ir([out], [x, c], tmp_path)
    # The saver writes the shapes it inferred; the branches' parameters, as a converter from
    # ONNX leaves them, of a rank known only at run time:
    text = path.read_text()
    outer = text.index('<data shape="1,3,10"') + 1
    path.write_text(
        text[:outer] + text[outer:].replace('<data shape="1,3,10"', '<data shape="..."')
    )
    _both(path, {"x": rand_f32(1, 3, 10)})
